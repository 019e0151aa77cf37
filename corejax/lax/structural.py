"""Layout primitives: broadcast, reshape, transpose, squeeze, rev, slice, pad, concatenate,
iota and dynamic (traced-offset) slicing. Each is followed by all of its rules."""
from __future__ import annotations

import builtins
import operator

import numpy as np

from corejax import dtypes
from corejax.core import Primitive, ShapedArray, get_aval
from corejax.compiler import registry
from corejax.transforms import ad, batching
from corejax.transforms.ad import Zero, deflinear, is_undefined_primal
from corejax.lax._factories import NUMERIC, check_dtype, shape_str

__all__ = []


def _aval(x):
    return x.aval if is_undefined_primal(x) else get_aval(x)


def _canon_axes(axes, ndim, name):
    out = []
    for a in axes:
        a = operator.index(a)
        if not -ndim <= a < ndim:
            raise ValueError(f"{name}: axis {a} is out of bounds for array of dimension {ndim}.")
        out.append(a % ndim)
    return tuple(out)


def _zeros_like(x):
    return ad.zeros_like_aval(_aval(x))


def _define(name, impl, abstract_eval, weak_from_operand=True):
    prim = Primitive(name)
    prim.def_impl(impl)
    prim.def_abstract_eval(abstract_eval)
    if weak_from_operand:
        prim.weak_type_rule = lambda x, *rest, **params: dtypes.is_weakly_typed(x)
    return prim


# --- broadcast_in_dim ------------------------------------------------------------------------

def _broadcast_in_dim_impl(x, shape, broadcast_dimensions):
    try:
        expanded = [1] * len(shape)
        for src, dst in enumerate(broadcast_dimensions):
            expanded[dst] = x.shape[src]
        return np.broadcast_to(x.reshape(expanded), shape)
    except (ValueError, IndexError):
        # eager binds skip abstract evaluation: report NumPy's failure as lax's TypeError
        _broadcast_in_dim_abstract(ShapedArray(x.shape, x.dtype), shape, broadcast_dimensions)
        raise


def _broadcast_in_dim_abstract(x, shape, broadcast_dimensions):
    if any(d < 0 for d in shape):
        raise TypeError(f"broadcast_in_dim shape must have every element be nonnegative, got "
                        f"{shape_str(shape)}.")
    if len(broadcast_dimensions) != x.ndim:
        raise TypeError(f"broadcast_in_dim broadcast_dimensions must have length equal to the "
                        f"operand ndim {x.ndim}, got {broadcast_dimensions}.")
    if any(not 0 <= d < len(shape) for d in broadcast_dimensions) or \
            list(broadcast_dimensions) != sorted(set(broadcast_dimensions)):
        raise TypeError(f"broadcast_in_dim broadcast_dimensions must be strictly increasing and "
                        f"within the output rank {len(shape)}, got {broadcast_dimensions}.")
    for src, dst in enumerate(broadcast_dimensions):
        if x.shape[src] not in (1, shape[dst]):
            raise TypeError(f"broadcast_in_dim operand dimension sizes must either be 1, or be "
                            f"equal to their corresponding dimensions in the target broadcast "
                            f"shape; got operand of shape {shape_str(x.shape)}, target broadcast "
                            f"shape {shape_str(shape)}, broadcast_dimensions "
                            f"{broadcast_dimensions}.")
    return ShapedArray(shape, x.dtype, x.weak_type)


broadcast_in_dim_p = _define("broadcast_in_dim", _broadcast_in_dim_impl, _broadcast_in_dim_abstract)
registry.def_kernel(broadcast_in_dim_p, ("layout",))


def _broadcast_in_dim_transpose(ct, x, shape, broadcast_dimensions):
    if type(ct) is Zero:
        return [None]
    aval = x.aval
    unit = tuple(dst for src, dst in enumerate(broadcast_dimensions)
                 if aval.shape[src] == 1 and shape[dst] != 1)
    summed = tuple(i for i in range(len(shape)) if i not in broadcast_dimensions)
    out = reduce_sum(ct, summed + unit) if summed or unit else ct
    return [reshape(out, aval.shape)]


def _broadcast_in_dim_batch(vals, dims, shape, broadcast_dimensions):
    (x,), (d,) = vals, dims
    x = batching.moveaxis(x, d, 0)
    size = get_aval(x).shape[0]
    return broadcast_in_dim(x, (size,) + tuple(shape),
                            (0,) + tuple(b + 1 for b in broadcast_dimensions)), 0


deflinear(broadcast_in_dim_p, _broadcast_in_dim_transpose)
batching.primitive_batchers[broadcast_in_dim_p] = _broadcast_in_dim_batch


def broadcast_in_dim(x, shape, broadcast_dimensions):
    shape, dims = tuple(int(s) for s in shape), tuple(int(d) for d in broadcast_dimensions)
    aval = get_aval(x)
    if aval.shape == shape and dims == tuple(range(len(shape))):
        return x
    return broadcast_in_dim_p.bind(x, shape=shape, broadcast_dimensions=dims)


def broadcast(x, sizes):
    """Adds leading dimensions of `sizes` (lax.broadcast)."""
    aval = get_aval(x)
    n = len(sizes)
    return broadcast_in_dim(x, tuple(sizes) + aval.shape, tuple(range(n, n + aval.ndim)))


# --- reshape ---------------------------------------------------------------------------------

def _reshape_abstract(x, new_sizes, dimensions):
    if int(np.prod(new_sizes, dtype=np.int64)) != x.size:
        raise TypeError(f"reshape total size must be unchanged, got new_sizes "
                        f"{shape_str(new_sizes)} for shape {shape_str(x.shape)}.")
    return ShapedArray(new_sizes, x.dtype, x.weak_type)


def _reshape_impl(x, new_sizes, dimensions):
    if dimensions is not None:
        x = np.transpose(x, dimensions)
    return x.reshape(new_sizes)


reshape_p = _define("reshape", _reshape_impl, _reshape_abstract)
registry.def_kernel(reshape_p, ("layout",))


def _reshape_transpose(ct, x, new_sizes, dimensions):
    if type(ct) is Zero:
        return [None]
    assert dimensions is None
    return [reshape(ct, x.aval.shape)]


def _reshape_batch(vals, dims, new_sizes, dimensions):
    (x,), (d,) = vals, dims
    x = batching.moveaxis(x, d, 0)
    return reshape(x, (get_aval(x).shape[0],) + tuple(new_sizes)), 0


deflinear(reshape_p, _reshape_transpose)
batching.primitive_batchers[reshape_p] = _reshape_batch


def reshape(x, new_sizes, dimensions=None):
    new_sizes = tuple(int(s) for s in new_sizes)
    if dimensions is not None:
        x = transpose(x, dimensions)
    if get_aval(x).shape == new_sizes:
        return x
    return reshape_p.bind(x, new_sizes=new_sizes, dimensions=None)


# --- transpose -------------------------------------------------------------------------------

def _transpose_abstract(x, permutation):
    if sorted(permutation) != list(range(x.ndim)):
        raise TypeError(f"transpose permutation isn't a permutation of operand dimensions, got "
                        f"permutation {permutation} for operand shape {shape_str(x.shape)}.")
    return ShapedArray(tuple(x.shape[p] for p in permutation), x.dtype, x.weak_type)


transpose_p = _define("transpose", lambda x, permutation: np.transpose(x, permutation),
                      _transpose_abstract)
registry.def_kernel(transpose_p, ("layout",))


def _transpose_transpose(ct, x, permutation):
    if type(ct) is Zero:
        return [None]
    return [transpose(ct, tuple(np.argsort(permutation)))]


def _transpose_batch(vals, dims, permutation):
    (x,), (d,) = vals, dims
    perm = (d,) + tuple(p if p < d else p + 1 for p in permutation)
    return transpose(x, perm), 0


deflinear(transpose_p, _transpose_transpose)
batching.primitive_batchers[transpose_p] = _transpose_batch


def transpose(x, permutation):
    permutation = tuple(int(p) for p in permutation)
    if permutation == tuple(range(len(permutation))) and get_aval(x).ndim == len(permutation):
        return x
    return transpose_p.bind(x, permutation=permutation)


# --- squeeze / expand_dims -------------------------------------------------------------------

def _squeeze_abstract(x, dimensions):
    for d in dimensions:
        if x.shape[d] != 1:
            raise ValueError(f"cannot select an axis to squeeze out which has size not equal to "
                             f"one, got shape={shape_str(x.shape)} and dimensions={dimensions}.")
    shape = tuple(s for i, s in enumerate(x.shape) if i not in dimensions)
    return ShapedArray(shape, x.dtype, x.weak_type)


squeeze_p = _define("squeeze", lambda x, dimensions: np.squeeze(x, axis=dimensions),
                    _squeeze_abstract)
registry.def_kernel(squeeze_p, ("layout",))


def _squeeze_batch(vals, dims, dimensions):
    (x,), (d,) = vals, dims
    x = batching.moveaxis(x, d, 0)
    return squeeze(x, tuple(a + 1 for a in dimensions)), 0


deflinear(squeeze_p, lambda ct, x, dimensions: [None if type(ct) is Zero
                                               else reshape(ct, x.aval.shape)])
batching.primitive_batchers[squeeze_p] = _squeeze_batch


def squeeze(x, dimensions):
    dims = tuple(sorted(_canon_axes(dimensions, get_aval(x).ndim, "squeeze")))
    if not dims:
        return x
    return squeeze_p.bind(x, dimensions=dims)


def expand_dims(x, dimensions):
    aval = get_aval(x)
    ndim = aval.ndim + len(dimensions)
    dims = sorted(_canon_axes(dimensions, ndim, "expand_dims"))
    shape = list(aval.shape)
    for d in dims:
        shape.insert(d, 1)
    return reshape(x, shape)


# --- rev -------------------------------------------------------------------------------------

rev_p = _define("rev", lambda x, dimensions: np.flip(x, dimensions),
                lambda x, dimensions: ShapedArray(x.shape, x.dtype, x.weak_type))
registry.def_kernel(rev_p, ("layout",))
deflinear(rev_p, lambda ct, x, dimensions: [None if type(ct) is Zero else rev(ct, dimensions)])
batching.primitive_batchers[rev_p] = lambda vals, dims, dimensions: (
    rev(vals[0], tuple(a + (a >= dims[0]) for a in dimensions)), dims[0])


def rev(x, dimensions):
    dims = _canon_axes(dimensions, get_aval(x).ndim, "rev")
    return rev_p.bind(x, dimensions=dims) if dims else x


# --- slice -----------------------------------------------------------------------------------

def _slice_impl(x, start_indices, limit_indices, strides):
    strides = strides or (1,) * x.ndim
    return x[tuple(builtins.slice(s, l, st) for s, l, st in zip(start_indices, limit_indices, strides))]


def _slice_abstract(x, start_indices, limit_indices, strides):
    strides = strides or (1,) * x.ndim
    if not (len(start_indices) == len(limit_indices) == len(strides) == x.ndim):
        raise TypeError(f"slice start_indices, limit_indices and strides must have length equal "
                        f"to the operand rank {x.ndim}.")
    for s, l, n in zip(start_indices, limit_indices, x.shape):
        if not 0 <= s <= l <= n:
            raise TypeError(f"slice indices out of bounds: start {start_indices}, limit "
                            f"{limit_indices} for operand shape {shape_str(x.shape)}.")
    shape = tuple((l - s + st - 1) // st for s, l, st in zip(start_indices, limit_indices, strides))
    return ShapedArray(shape, x.dtype, x.weak_type)


slice_p = _define("slice", _slice_impl, _slice_abstract)
registry.def_kernel(slice_p, ("layout",))


def _slice_transpose(ct, x, start_indices, limit_indices, strides):
    if type(ct) is Zero:
        return [None]
    shape = x.aval.shape
    strides = strides or (1,) * len(shape)
    out_shape = get_aval(ct).shape
    config = []
    for s, n, st, m in zip(start_indices, shape, strides, out_shape):
        hi = n - (s + (m - 1) * st + 1) if m else n - s
        config.append((s, hi, st - 1))
    return [pad(ct, _zero_scalar(ct), config)]


def _slice_batch(vals, dims, start_indices, limit_indices, strides):
    (x,), (d,) = vals, dims
    n = get_aval(x).shape[d]
    strides = strides or (1,) * len(start_indices)
    starts = start_indices[:d] + (0,) + start_indices[d:]
    limits = limit_indices[:d] + (n,) + limit_indices[d:]
    return slice(x, starts, limits, strides[:d] + (1,) + strides[d:]), d


deflinear(slice_p, _slice_transpose)
batching.primitive_batchers[slice_p] = _slice_batch


def slice(x, start_indices, limit_indices, strides=None):
    start_indices = tuple(int(s) for s in start_indices)
    limit_indices = tuple(int(s) for s in limit_indices)
    strides = None if strides is None or all(s == 1 for s in strides) else \
        tuple(int(s) for s in strides)
    aval = get_aval(x)
    if start_indices == (0,) * aval.ndim and limit_indices == aval.shape and strides is None:
        return x
    return slice_p.bind(x, start_indices=start_indices, limit_indices=limit_indices,
                        strides=strides)


def slice_in_dim(x, start, limit, stride=1, axis=0):
    aval = get_aval(x)
    starts, limits, strides = [0] * aval.ndim, list(aval.shape), [1] * aval.ndim
    starts[axis], limits[axis], strides[axis] = start, limit, stride
    return slice(x, starts, limits, strides)


def index_in_dim(x, index, axis=0, keepdims=True):
    out = slice_in_dim(x, index, index + 1, 1, axis)
    return out if keepdims else squeeze(out, (axis,))


# --- pad -------------------------------------------------------------------------------------

def _pad_impl(x, padding_value, padding_config):
    # Interior padding and non-negative edges first, then crop the negative edges.
    shape = [lo_pos + hi_pos + (n - 1) * (interior + 1) + 1 if n else lo_pos + hi_pos
             for n, (lo_pos, hi_pos, interior) in
             zip(x.shape, [(max(lo, 0), max(hi, 0), it) for lo, hi, it in padding_config])]
    out = np.full(shape, padding_value, dtype=x.dtype)
    idx = tuple(np.s_[max(lo, 0): max(lo, 0) + (n - 1) * (it + 1) + 1: it + 1] if n else np.s_[0:0]
                for n, (lo, hi, it) in zip(x.shape, padding_config))
    out[idx] = x
    crop = tuple(np.s_[-min(lo, 0): out.shape[i] + min(hi, 0)]
                 for i, (lo, hi, _) in enumerate(padding_config))
    return out[crop]


def _pad_abstract(x, padding_value, padding_config):
    if padding_value.shape != ():
        raise TypeError("pad padding_value must be a scalar.")
    if padding_value.dtype != x.dtype:
        raise TypeError(f"pad operand and padding_value must have the same dtype, got "
                        f"{x.dtype} and {padding_value.dtype}.")
    if len(padding_config) != x.ndim:
        raise ValueError(f"pad padding_config has length {len(padding_config)}, expected the "
                         f"operand rank {x.ndim}.")
    shape = []
    for n, (lo, hi, interior) in zip(x.shape, padding_config):
        if interior < 0:
            raise ValueError(f"pad interior padding must be non-negative, got {interior}.")
        size = lo + hi + n + max(n - 1, 0) * interior
        if size < 0:
            raise ValueError(f"pad: dimension size after padding is negative: {padding_config}.")
        shape.append(size)
    return ShapedArray(tuple(shape), x.dtype, x.weak_type)


pad_p = _define("pad", _pad_impl, _pad_abstract)
registry.def_kernel(pad_p, ("layout",))


def _pad_transpose(ct, x, padding_value, padding_config):
    if type(ct) is Zero:
        return [None, None]
    t_op = None
    if is_undefined_primal(x):
        # Undo negative edge padding, then take the strided interior.
        unpad_cfg = [(-min(lo, 0), -min(hi, 0), 0) for lo, hi, _ in padding_config]
        widened = pad(ct, _zero_scalar(ct), unpad_cfg)
        starts = [max(lo, 0) for lo, _, _ in padding_config]
        shape = x.aval.shape
        limits = [s + (n - 1) * (it + 1) + 1 if n else s
                  for s, n, (_, _, it) in zip(starts, shape, padding_config)]
        t_op = slice(widened, starts, limits, [it + 1 for _, _, it in padding_config])
    t_pad = None
    if is_undefined_primal(padding_value):
        total = reduce_sum(ct, tuple(range(get_aval(ct).ndim)))
        from corejax.lax.elementwise import sub
        t_pad = total if t_op is None else sub(total, reduce_sum(t_op, tuple(range(len(
            padding_config)))))
    return [t_op, t_pad]


def _pad_batch(vals, dims, padding_config):
    x, pv = vals
    dx, dpv = dims
    if dpv is not None:
        from corejax.lax.elementwise import select
        size = get_aval(pv).shape[dpv]
        x = batching.bdim_at_front(x, dx, size)
        cfg = ((0, 0, 0),) + tuple(padding_config)
        xaval = get_aval(x)
        mask = pad(full(xaval.shape, True, np.bool_), full((), False, np.bool_), cfg)
        padded = pad(x, _zero_scalar(x), cfg)
        shape = get_aval(padded).shape
        pv_b = broadcast_in_dim(batching.moveaxis(pv, dpv, 0), shape, (0,))
        return select(mask, padded, pv_b), 0
    cfg = tuple(padding_config[:dx]) + ((0, 0, 0),) + tuple(padding_config[dx:])
    return pad(x, pv, cfg), dx


deflinear(pad_p, _pad_transpose)
batching.primitive_batchers[pad_p] = _pad_batch


def pad(x, padding_value, padding_config):
    cfg = tuple((int(lo), int(hi), int(it)) for lo, hi, it in padding_config)
    if type(padding_value) in (int, float, bool, complex):
        padding_value = full((), padding_value, get_aval(x).dtype)
    return pad_p.bind(x, padding_value, padding_config=cfg)


def _zero_scalar(x):
    return full((), 0, get_aval(x).dtype)


# --- concatenate -----------------------------------------------------------------------------

def _concatenate_abstract(*xs, dimension):
    if not xs:
        raise ValueError("concatenate requires at least one operand.")
    x0 = xs[0]
    if not 0 <= dimension < x0.ndim:
        raise ValueError(f"concatenate dimension out of bounds: dimension {dimension} for "
                         f"shapes {', '.join(shape_str(x.shape) for x in xs)}.")
    for x in xs:
        if x.ndim != x0.ndim or any(a != b for i, (a, b) in enumerate(zip(x.shape, x0.shape))
                                    if i != dimension):
            raise TypeError(f"Cannot concatenate arrays with shapes that differ in dimensions "
                            f"other than the one being concatenated: concatenating along "
                            f"dimension {dimension} for shapes "
                            f"{', '.join(shape_str(x.shape) for x in xs)}.")
        if x.dtype != x0.dtype:
            raise TypeError(f"concatenate requires operands of the same dtype, got "
                            f"{', '.join(x.dtype.name for x in xs)}.")
    shape = list(x0.shape)
    shape[dimension] = sum(x.shape[dimension] for x in xs)
    return ShapedArray(shape, x0.dtype, all(x.weak_type for x in xs))


def _concatenate_impl(*xs, dimension):
    # Always a C array of its own (np.concatenate alone lays F-ordered operands out in F
    # order): the compiled loops' BLAS calls rely on knowing it (compiler/loops._c_step).
    xs = [np.asarray(x) for x in xs]
    shape = list(xs[0].shape)
    shape[dimension] = sum(x.shape[dimension] for x in xs)
    return np.concatenate(xs, axis=dimension, out=np.empty(shape, xs[0].dtype))


concatenate_p = Primitive("concatenate")
registry.def_kernel(concatenate_p, ("layout",))
concatenate_p.def_impl(_concatenate_impl)
concatenate_p.def_abstract_eval(_concatenate_abstract)


def _concatenate_transpose(ct, *xs, dimension):
    if type(ct) is Zero:
        return [None] * len(xs)
    outs, offset = [], 0
    for x in xs:
        n = _aval(x).shape[dimension]
        outs.append(slice_in_dim(ct, offset, offset + n, 1, dimension)
                    if is_undefined_primal(x) else None)
        offset += n
    return outs


def _concatenate_batch(vals, dims, dimension):
    size = next(get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not None)
    vals = [batching.bdim_at_front(v, d, size) for v, d in zip(vals, dims)]
    return concatenate(vals, dimension + 1), 0


deflinear(concatenate_p, _concatenate_transpose)
batching.primitive_batchers[concatenate_p] = _concatenate_batch


def concatenate(operands, dimension):
    operands = list(operands)
    if len(operands) == 1:
        return operands[0]
    return concatenate_p.bind(*operands, dimension=int(dimension))


# --- split: the inverse of concatenate -------------------------------------------------------

split_p = Primitive("split")
split_p.multiple_results = True


def _split_impl(x, *, sizes, axis):
    return np.split(x, np.cumsum(sizes[:-1]), axis=axis)


def _split_abstract(x, *, sizes, axis):
    if not 0 <= axis < x.ndim:
        raise ValueError(f"split: axis {axis} is out of bounds for an operand of rank {x.ndim}.")
    if any(s < 0 for s in sizes):
        raise ValueError(f"Sizes passed to split must be nonnegative, got {list(sizes)}")
    if sum(sizes) != x.shape[axis]:
        raise ValueError(f"Sum of sizes {sum(sizes)} must be equal to dimension {axis} of the "
                         f"operand shape {list(x.shape)}")
    return [ShapedArray(x.shape[:axis] + (n,) + x.shape[axis + 1:], x.dtype, x.weak_type)
            for n in sizes]


def _split_jvp(primals, tangents, *, sizes, axis):
    outs = split_p.bind(*primals, sizes=sizes, axis=axis)
    if type(tangents[0]) is Zero:
        return outs, [Zero(get_aval(o).to_tangent_aval()) for o in outs]
    return outs, split_p.bind(tangents[0], sizes=sizes, axis=axis)


def _split_transpose(cts, x, *, sizes, axis):
    if all(type(ct) is Zero for ct in cts):
        return [None]
    return [concatenate([ad.instantiate_zeros(ct) for ct in cts], axis)]


split_p.def_impl(_split_impl)
split_p.def_abstract_eval(_split_abstract)
split_p.weak_type_rule = lambda x, **params: [dtypes.is_weakly_typed(x)] * len(params["sizes"])
ad.primitive_jvps[split_p] = _split_jvp
ad.primitive_transposes[split_p] = _split_transpose
registry.def_kernel(split_p, ("layout",))   # NumPy views in the executor; gathers in loops
batching.primitive_batchers[split_p] = lambda vals, dims, *, sizes, axis: (
    split_p.bind(batching.moveaxis(vals[0], dims[0], 0), sizes=sizes, axis=axis + 1),
    [0] * len(sizes))


def split(operand, sizes, axis: int = 0):
    """`operand` cut along `axis` into consecutive pieces of the given sizes (a list)."""
    if type(operand) in (bool, int, float, complex):
        operand = full((), operand, dtypes.python_scalar_dtype(operand), weak_type=True)
    ndim = get_aval(operand).ndim
    if not -ndim <= operator.index(axis) < ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    sizes = tuple(operator.index(s) for s in sizes)
    return split_p.bind(operand, sizes=sizes, axis=operator.index(axis) % ndim)


# --- iota ------------------------------------------------------------------------------------

def _iota_impl(dtype, shape, dimension):
    idx = np.arange(shape[dimension], dtype=dtype)
    expanded = [1] * len(shape)
    expanded[dimension] = shape[dimension]
    return np.broadcast_to(idx.reshape(expanded), shape)


iota_p = Primitive("iota")
registry.def_kernel(iota_p, ("layout",))
iota_p.def_impl(_iota_impl)
iota_p.def_abstract_eval(lambda dtype, shape, dimension: ShapedArray(shape, dtype))
iota_p.weak_type_rule = lambda **params: False
ad.defjvp_zero(iota_p)


def iota(dtype, size: int):
    return broadcasted_iota(dtype, (size,), 0)


def broadcasted_iota(dtype, shape, dimension):
    dtype = dtypes.canonicalize_dtype(dtype)
    check_dtype("iota", ShapedArray((), dtype), NUMERIC)
    return iota_p.bind(dtype=dtype, shape=tuple(int(s) for s in shape), dimension=int(dimension))


# --- dynamic_slice / dynamic_update_slice ----------------------------------------------------

def _clamped_starts(starts, operand_shape, sizes):
    return tuple(int(np.clip(int(s), 0, n - k)) for s, n, k in zip(starts, operand_shape, sizes))


def _dynamic_slice_impl(x, *starts, slice_sizes):
    st = _clamped_starts(starts, x.shape, slice_sizes)
    return x[tuple(np.s_[s:s + k] for s, k in zip(st, slice_sizes))]


def _dynamic_slice_abstract(x, *starts, slice_sizes):
    if len(starts) != x.ndim or len(slice_sizes) != x.ndim:
        raise TypeError(f"dynamic_slice needs one start index and one slice size per operand "
                        f"dimension ({x.ndim}), got {len(starts)} and {len(slice_sizes)}.")
    for s in starts:
        if s.shape != () or s.dtype.kind not in "iu":
            raise TypeError(f"dynamic_slice start indices must be scalar integers, got "
                            f"{s.str_short()}.")
    for k, n in zip(slice_sizes, x.shape):
        if not 0 <= k <= n:
            raise TypeError(f"dynamic_slice slice_sizes {slice_sizes} must be within the operand "
                            f"shape {shape_str(x.shape)}.")
    return ShapedArray(slice_sizes, x.dtype, x.weak_type)


dynamic_slice_p = _define("dynamic_slice", _dynamic_slice_impl, _dynamic_slice_abstract)
registry.def_kernel(dynamic_slice_p, ("layout",))


def _dynamic_slice_transpose(ct, x, *starts, slice_sizes):
    if type(ct) is Zero:
        return [None] * (1 + len(starts))
    zeros = ad.zeros_like_aval(x.aval)
    return [dynamic_update_slice(zeros, ct, starts)] + [None] * len(starts)


deflinear(dynamic_slice_p, _dynamic_slice_transpose, linear_args=(0,))


def dynamic_slice(x, start_indices, slice_sizes):
    starts = [_index_scalar(s) for s in start_indices]
    return dynamic_slice_p.bind(x, *starts, slice_sizes=tuple(int(k) for k in slice_sizes))


def _dynamic_update_slice_impl(x, update, *starts):
    st = _clamped_starts(starts, x.shape, update.shape)
    out = x.copy()
    out[tuple(np.s_[s:s + k] for s, k in zip(st, update.shape))] = update
    return out


def _dynamic_update_slice_abstract(x, update, *starts):
    if update.ndim != x.ndim or any(u > n for u, n in zip(update.shape, x.shape)):
        raise TypeError(f"dynamic_update_slice update shape {shape_str(update.shape)} must fit "
                        f"in the operand shape {shape_str(x.shape)}.")
    if update.dtype != x.dtype:
        raise TypeError(f"dynamic_update_slice update dtype {update.dtype} must match the "
                        f"operand dtype {x.dtype}.")
    if len(starts) != x.ndim:
        raise TypeError(f"dynamic_update_slice needs {x.ndim} start indices, got {len(starts)}.")
    return ShapedArray(x.shape, x.dtype, x.weak_type)


dynamic_update_slice_p = _define("dynamic_update_slice", _dynamic_update_slice_impl,
                                 _dynamic_update_slice_abstract)
registry.def_kernel(dynamic_update_slice_p, ("layout",))


def _dynamic_update_slice_transpose(ct, x, update, *starts):
    if type(ct) is Zero:
        return [None] * (2 + len(starts))
    upd_aval = _aval(update)
    ct_x = dynamic_update_slice(ct, ad.zeros_like_aval(upd_aval), starts) \
        if is_undefined_primal(x) else None
    ct_u = dynamic_slice(ct, starts, upd_aval.shape) if is_undefined_primal(update) else None
    return [ct_x, ct_u] + [None] * len(starts)


deflinear(dynamic_update_slice_p, _dynamic_update_slice_transpose, linear_args=(0, 1))


def dynamic_update_slice(x, update, start_indices):
    starts = [_index_scalar(s) for s in start_indices]
    return dynamic_update_slice_p.bind(x, update, *starts)


def dynamic_slice_in_dim(operand, start_index, slice_size, axis=0):
    shape = get_aval(operand).shape
    starts = [0] * len(shape)
    starts[axis] = start_index
    sizes = list(shape)
    sizes[axis] = slice_size
    return dynamic_slice(operand, starts, sizes)


def dynamic_update_slice_in_dim(operand, update, start_index, axis):
    starts = [0] * get_aval(operand).ndim
    starts[axis] = start_index
    return dynamic_update_slice(operand, update, starts)


def dynamic_index_in_dim(operand, index, axis=0, keepdims=True):
    out = dynamic_slice_in_dim(operand, index, 1, axis)
    return out if keepdims else squeeze(out, (axis,))


def _index_scalar(s):
    if type(s) is int or isinstance(s, np.integer):
        return full((), int(s), dtypes.default_int_dtype())
    aval = get_aval(s)
    if aval.dtype.kind not in "iu":
        raise TypeError(f"index must be an integer, got dtype {aval.dtype}.")
    return s


def _dynamic_slice_batch(vals, dims, slice_sizes):
    x, *starts = vals
    dx, *dstarts = dims
    if all(d is None for d in dstarts):
        x = batching.moveaxis(x, dx, 0)
        n = get_aval(x).shape[0]
        zero = full((), 0, get_aval(starts[0]).dtype if starts else np.int32)
        return dynamic_slice_p.bind(x, zero, *starts, slice_sizes=(n,) + tuple(slice_sizes)), 0
    from corejax.lax.indexing import batched_dynamic_slice
    return batched_dynamic_slice(vals, dims, slice_sizes), 0


def _dynamic_update_slice_batch(vals, dims):
    x, update, *starts = vals
    dx, du, *dstarts = dims
    size = next(get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not None)
    if all(d is None for d in dstarts):
        x = batching.bdim_at_front(x, dx, size)
        update = batching.bdim_at_front(update, du, size)
        zero = full((), 0, get_aval(starts[0]).dtype if starts else np.int32)
        return dynamic_update_slice_p.bind(x, update, zero, *starts), 0
    from corejax.lax.indexing import batched_dynamic_update_slice
    return batched_dynamic_update_slice(vals, dims), 0


batching.primitive_batchers[dynamic_slice_p] = _dynamic_slice_batch
batching.primitive_batchers[dynamic_update_slice_p] = _dynamic_update_slice_batch


from corejax.lax.elementwise import full  # noqa: E402  (full builds on broadcast_in_dim)
from corejax.lax.reductions import reduce_sum  # noqa: E402
