"""Sorting: the variadic `sort` primitive (keys plus operands that ride along), and the
functions built on it: sort_key_val, top_k, and the permutations behind argsort.

Differentiation needs no gather: a tangent rides along with its primal as one more sorted
operand, and the transpose sorts the cotangent back by the sorting permutation.
"""
from __future__ import annotations

import numpy as np

from corejax import dtypes
from corejax.core import Primitive, ShapedArray, get_aval
from corejax.transforms import ad, batching
from corejax.transforms.ad import Zero, is_undefined_primal
from corejax.lax._factories import shape_str
from corejax.lax.total_order import total_order_key

__all__ = []

sort_p = Primitive("sort")
sort_p.multiple_results = True


def _permutation(keys, dimension, is_stable):
    if len(keys) == 1:
        return np.argsort(keys[0], axis=dimension, kind="stable" if is_stable else "quicksort")
    moved = [np.moveaxis(k, dimension, -1) for k in keys]
    # np.lexsort sorts by its last key first.
    perm = np.lexsort(moved[::-1], axis=-1)
    return np.moveaxis(perm, -1, dimension)


def _sort_impl(*operands, dimension, is_stable, num_keys):
    perm = _permutation(operands[:num_keys], dimension, is_stable)
    return [np.take_along_axis(op, perm, axis=dimension) for op in operands]


def _sort_abstract(*operands, dimension, is_stable, num_keys):
    if not operands:
        raise TypeError("sort requires at least one operand.")
    shape = operands[0].shape
    for op in operands:
        if op.shape != shape:
            raise TypeError(f"sort operands must all have the same shape, got "
                            f"{', '.join(shape_str(o.shape) for o in operands)}.")
    if not 0 <= dimension < len(shape):
        raise ValueError(f"sort dimension {dimension} is out of bounds for operands of rank "
                         f"{len(shape)}.")
    if not 1 <= num_keys <= len(operands):
        raise ValueError(f"sort num_keys={num_keys} must be between 1 and the number of "
                         f"operands {len(operands)}.")
    return [ShapedArray(o.shape, o.dtype, o.weak_type) for o in operands]


sort_p.def_impl(_sort_impl)
sort_p.def_abstract_eval(_sort_abstract)
sort_p.weak_type_rule = lambda *ops, **params: [dtypes.is_weakly_typed(o) for o in ops]


def _sort_jvp(primals, tangents, dimension, is_stable, num_keys):
    params = dict(dimension=dimension, is_stable=is_stable, num_keys=num_keys)
    outs = sort_p.bind(*primals, **params)
    nonzero = [i for i, t in enumerate(tangents) if type(t) is not Zero]
    if not nonzero:
        return outs, [Zero(get_aval(p).to_tangent_aval()) for p in primals]
    # A separate sort, so the primal outputs above do not depend on the tangents.
    keys = primals[:num_keys]
    sorted_t = sort_p.bind(*keys, *[tangents[i] for i in nonzero], **params)[num_keys:]
    by_index = dict(zip(nonzero, sorted_t))
    return outs, [by_index.get(i, Zero(get_aval(p).to_tangent_aval()))
                  for i, p in enumerate(primals)]


def _sort_transpose(cts, *operands, dimension, is_stable, num_keys):
    keys = operands[:num_keys]
    if any(is_undefined_primal(k) for k in keys):
        raise ValueError("sort is not linear in its keys: cannot transpose.")
    shape = get_aval(keys[0]).shape
    iota = broadcasted_iota(np.int32, shape, dimension)
    perm = sort_p.bind(*keys, iota, dimension=dimension, is_stable=is_stable,
                       num_keys=num_keys)[-1]
    out = []
    for op, ct in zip(operands, cts):
        if not is_undefined_primal(op) or type(ct) is Zero:
            out.append(None)
            continue
        # Sorting by the permutation puts each cotangent back where its operand came from.
        out.append(sort_p.bind(perm, ct, dimension=dimension, is_stable=True, num_keys=1)[1])
    return out


def _sort_batch(vals, dims, dimension, is_stable, num_keys):
    size = next(get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not None)
    vals = [batching.bdim_at_front(v, d, size) for v, d in zip(vals, dims)]
    outs = sort_p.bind(*vals, dimension=dimension + 1, is_stable=is_stable, num_keys=num_keys)
    return outs, [0] * len(outs)


ad.primitive_jvps[sort_p] = _sort_jvp
ad.primitive_transposes[sort_p] = _sort_transpose
batching.primitive_batchers[sort_p] = _sort_batch
# No compiled lowering: the compiler runs sort as a host step with its NumPy impl.


def sort(operand, dimension: int = -1, is_stable: bool = True, num_keys: int = 1):
    """Sorts `operand` (an array, or a sequence sorted together by its first `num_keys`)."""
    single = not isinstance(operand, (tuple, list))
    operands = [operand] if single else list(operand)
    ndim = get_aval(operands[0]).ndim
    if not -ndim <= dimension < ndim:
        raise ValueError(f"sort dimension {dimension} is out of bounds for rank {ndim}.")
    outs = sort_p.bind(*operands, dimension=dimension % ndim, is_stable=bool(is_stable),
                       num_keys=int(num_keys))
    return outs[0] if single else tuple(outs)


def sort_key_val(keys, values, dimension: int = -1, is_stable: bool = True):
    """Sorts `keys` along `dimension` and permutes `values` the same way."""
    return sort((keys, values), dimension, is_stable, 1)


def _descending_key(x):
    """A key whose ascending order is `x`'s descending order, without overflow."""
    dt = get_aval(x).dtype
    if dt.kind in "iu":
        return bitwise_not(x)
    if dt == np.bool_:
        return bitwise_not(x)
    return neg(x)


top_k_p = Primitive("top_k")
top_k_p.multiple_results = True


def _top_k_impl(operand, *, k, axis):
    # descending in the total order (NaN first, +0.0 before -0.0), ties by position
    order = np.argsort(~total_order_key(operand), axis=axis, kind="stable")
    indices = np.take(order, np.arange(k), axis=axis)
    return [np.take_along_axis(operand, indices, axis=axis), indices.astype(np.int32)]


def _top_k_abstract(operand, *, k, axis):
    if not 0 <= axis < operand.ndim:
        raise ValueError(f"top_k: axis {axis} is out of bounds for an operand of rank "
                         f"{operand.ndim}.")
    if not 0 <= k <= operand.shape[axis]:
        raise ValueError(f"top_k: k={k} must be between 0 and the size of axis {axis}, "
                         f"{operand.shape[axis]}.")
    shape = operand.shape[:axis] + (k,) + operand.shape[axis + 1:]
    return [ShapedArray(shape, operand.dtype, operand.weak_type), ShapedArray(shape, np.int32)]


def _top_k_jvp(primals, tangents, *, k, axis):
    (operand,), (t,) = primals, tangents
    values, indices = top_k_p.bind(operand, k=k, axis=axis)
    if type(t) is Zero:
        return [values, indices], [Zero(get_aval(values).to_tangent_aval()),
                                   Zero(get_aval(indices).to_tangent_aval())]
    # the tangent rides along with the sort that orders the operand as the impl does
    moved = sort_p.bind(bitwise_not(_total_order_key(operand)), t, dimension=axis,
                        is_stable=True, num_keys=1)[1]
    return [values, indices], [slice_in_dim(moved, 0, k, 1, axis),
                               Zero(get_aval(indices).to_tangent_aval())]


def _top_k_batch(vals, dims, *, k, axis):
    operand = batching.moveaxis(vals[0], dims[0], 0)
    return top_k_p.bind(operand, k=k, axis=axis + 1), [0, 0]


top_k_p.def_impl(_top_k_impl)
top_k_p.def_abstract_eval(_top_k_abstract)
top_k_p.weak_type_rule = lambda operand, **params: [dtypes.is_weakly_typed(operand), False]
ad.primitive_jvps[top_k_p] = _top_k_jvp
batching.primitive_batchers[top_k_p] = _top_k_batch


def _total_order_key(x):
    """total_order_key (total_order.py) in lax operations."""
    dt = get_aval(x).dtype
    if dt.kind != "f":
        return x
    signed = np.dtype(f"int{dt.itemsize * 8}")
    bits = bitcast_convert_type(x, signed)
    flipped = bitwise_xor(bits, full_like(bits, np.iinfo(signed).max))
    return select(lt(bits, full_like(bits, 0)), flipped, bits)


def top_k(operand, k: int, *, axis: int = -1):
    """The `k` largest entries along `axis` (the last by default) and their indices (ties:
    lower index first; NaNs last)."""
    aval = get_aval(operand)
    k = int(k)
    if not -aval.ndim <= axis < aval.ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {aval.ndim}")
    axis %= aval.ndim
    if not 0 <= k <= aval.shape[axis]:
        raise ValueError(f"top_k: k={k} must be between 0 and the last dimension size "
                         f"{aval.shape[axis]}.")
    return top_k_p.bind(operand, k=k, axis=axis)


def argsort(operand, dimension: int = -1, is_stable: bool = True, descending: bool = False):
    aval = get_aval(operand)
    dim = dimension % aval.ndim
    iota = broadcasted_iota(dtypes.default_int_dtype(), aval.shape, dim)
    key = _descending_key(operand) if descending else operand
    return sort_p.bind(key, iota, dimension=dim, is_stable=bool(is_stable), num_keys=1)[1]


from corejax.lax.elementwise import (  # noqa: E402
    bitcast_convert_type, bitwise_not, bitwise_xor, full_like, lt, neg, select)
from corejax.lax.structural import broadcasted_iota, slice_in_dim  # noqa: E402
