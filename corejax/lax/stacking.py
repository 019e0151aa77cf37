"""stack, unstack and tile as primitives (JAX 0.10's stack_p, unstack_p, tile_p), each the
other's transpose: stack's cotangent is unstacked, unstack's stacked, and tile's cotangent is
summed over its repetitions."""
from __future__ import annotations

import operator

import numpy as np

from corejax import dtypes
from corejax.core import Primitive, ShapedArray, get_aval
from corejax.transforms import ad, batching
from corejax.transforms.ad import Zero, instantiate_zeros, is_undefined_primal

__all__ = ["stack", "unstack", "tile", "stack_p", "unstack_p", "tile_p"]


def _operand(x):
    if type(x) in (bool, int, float, complex):
        from corejax.lax.elementwise import convert_element_type
        return convert_element_type(x, dtypes.python_scalar_dtype(x), weak_type=True)
    return x


def _axis(axis, ndim: int) -> int:
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    return axis % ndim


# --- stack -------------------------------------------------------------------------------------

stack_p = Primitive("stack")


def _stack_abstract(*avals, axis):
    return ShapedArray(avals[0].shape[:axis] + (len(avals),) + avals[0].shape[axis:],
                       avals[0].dtype, all(a.weak_type for a in avals))


def _stack_jvp(primals, tangents, *, axis):
    out = stack_p.bind(*primals, axis=axis)
    if all(type(t) is Zero for t in tangents):
        return out, Zero(get_aval(out).to_tangent_aval())
    return out, stack_p.bind(*map(instantiate_zeros, tangents), axis=axis)


def _stack_transpose(ct, *operands, axis):
    if type(ct) is Zero:
        return [None] * len(operands)
    pieces = unstack_p.bind(ct, axis=axis)
    return [p if is_undefined_primal(x) else None for p, x in zip(pieces, operands)]


def _stack_batch(vals, dims, *, axis):
    size = next(get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not None)
    vals = [batching.bdim_at_front(v, d, size) for v, d in zip(vals, dims)]
    return stack_p.bind(*vals, axis=axis + 1), 0


stack_p.def_impl(lambda *xs, axis: np.stack(xs, axis=axis))
stack_p.def_abstract_eval(_stack_abstract)
stack_p.weak_type_rule = lambda *xs, **params: all(dtypes.is_weakly_typed(x) for x in xs)
ad.primitive_jvps[stack_p] = _stack_jvp
ad.primitive_transposes[stack_p] = _stack_transpose
batching.primitive_batchers[stack_p] = _stack_batch


def stack(operands, axis: int = 0):
    """The operands (same shape and dtype) stacked along a new `axis`."""
    operands = [_operand(x) for x in operands]
    avals = [get_aval(x) for x in operands]
    if not avals:
        raise IndexError("list index out of range: lax.stack needs at least one operand")
    if len({a.dtype for a in avals}) > 1:
        raise TypeError(f"lax.stack requires arguments to have the same dtypes, got "
                        f"{', '.join(a.dtype.name for a in avals)}.")
    if len({a.ndim for a in avals}) > 1:
        raise ValueError(f"Cannot stack arrays with different numbers of dimensions: got "
                         f"{', '.join(str(a.shape) for a in avals)}.")
    if len({a.shape for a in avals}) > 1:
        raise ValueError(f"All input arrays must have the same shape. Got "
                         f"{', '.join(str(a.shape) for a in avals)}.")
    return stack_p.bind(*operands, axis=_axis(axis, avals[0].ndim + 1))


# --- unstack -----------------------------------------------------------------------------------

unstack_p = Primitive("unstack")
unstack_p.multiple_results = True


def _unstack_abstract(x, *, axis):
    piece = ShapedArray(x.shape[:axis] + x.shape[axis + 1:], x.dtype, x.weak_type)
    return [piece] * x.shape[axis]


def _unstack_jvp(primals, tangents, *, axis):
    outs = unstack_p.bind(*primals, axis=axis)
    if type(tangents[0]) is Zero:
        return outs, [Zero(get_aval(o).to_tangent_aval()) for o in outs]
    return outs, unstack_p.bind(tangents[0], axis=axis)


def _unstack_transpose(cts, x, *, axis):
    if all(type(ct) is Zero for ct in cts):
        return [None]
    return [stack_p.bind(*map(instantiate_zeros, cts), axis=axis)]


unstack_p.def_impl(lambda x, *, axis: list(np.moveaxis(x, axis, 0)))
unstack_p.def_abstract_eval(_unstack_abstract)
unstack_p.weak_type_rule = lambda x, *, axis: [dtypes.is_weakly_typed(x)] * get_aval(x).shape[axis]
ad.primitive_jvps[unstack_p] = _unstack_jvp
ad.primitive_transposes[unstack_p] = _unstack_transpose
batching.primitive_batchers[unstack_p] = lambda vals, dims, *, axis: (
    unstack_p.bind(batching.moveaxis(vals[0], dims[0], 0), axis=axis + 1),
    [0] * get_aval(vals[0]).shape[axis + (dims[0] <= axis)])


def unstack(x, axis: int = 0):
    """The slices of `x` along `axis`, as a tuple."""
    x = _operand(x)
    return tuple(unstack_p.bind(x, axis=_axis(axis, get_aval(x).ndim)))


# --- tile --------------------------------------------------------------------------------------

tile_p = Primitive("tile")


def _tile_abstract(x, *, reps):
    if any(r < 0 for r in reps):
        raise ValueError(f"tile: repetitions must be nonnegative, got {reps}.")
    return ShapedArray(tuple(r * d for r, d in zip(reps, x.shape)), x.dtype, x.weak_type)


def _tile_transpose(ct, x, *, reps):
    if type(ct) is Zero:
        return [None]
    from corejax.lax.reductions import reduce_sum
    from corejax.lax.structural import reshape
    shape = x.aval.shape
    split = tuple(v for pair in zip(reps, shape) for v in pair)
    return [reduce_sum(reshape(ct, split), tuple(range(0, 2 * len(shape), 2)))]


def _tile_batch(vals, dims, *, reps):
    return tile_p.bind(batching.moveaxis(vals[0], dims[0], 0), reps=(1,) + reps), 0


tile_p.def_impl(lambda x, *, reps: np.tile(x, reps))
tile_p.def_abstract_eval(_tile_abstract)
ad.deflinear(tile_p, _tile_transpose)
batching.primitive_batchers[tile_p] = _tile_batch


def tile(operand, reps):
    """`operand` repeated reps[i] times along each axis i."""
    operand = _operand(operand)
    shape = get_aval(operand).shape
    reps = tuple(operator.index(r) for r in reps)
    if len(reps) != len(shape):
        raise TypeError(f"reps length must be equal to the ndim of x, got len(reps)={len(reps)} "
                        f"and x.ndim={len(shape)}.")
    return tile_p.bind(operand, reps=reps)

