"""Shape manipulation: reshape, transpose, axes moves, joins and splits, tiling, padding."""
from __future__ import annotations

import builtins
import operator

import numpy as np

from corejax import core, dtypes, lax
from corejax.core import get_aval
from corejax.numpy._core import (asarray, broadcast_shapes, broadcast_to_shape,
                                 canonicalize_axes, canonicalize_axis, check_arraylike,
                                 concrete_int, promote_dtypes)

__all__ = []


def _shape_arg(shape, what="shape") -> tuple:
    if isinstance(shape, (int, np.integer)) or (hasattr(shape, "shape") and
                                                 get_aval(shape).ndim == 0):
        shape = (shape,)
    try:
        return tuple(concrete_int(s, what) for s in shape)
    except TypeError:   # (a traced entry too: JAX's TypeError, not a ConcretizationTypeError)
        raise TypeError(f"Shapes must be 1D sequences of concrete values of integer type, got "
                        f"{shape!r}.") from None


def reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    """Reshapes `a`; one dimension may be -1 and is inferred."""
    if shape is None:
        shape = newshape
    if order != "C":
        raise NotImplementedError("jnp.reshape supports only order='C'.")
    a = asarray(a)
    aval = get_aval(a)
    shape = _shape_arg(shape)
    if shape.count(-1) > 1:
        raise ValueError("can only specify one unknown dimension")
    if -1 in shape:
        known = int(np.prod([s for s in shape if s != -1], dtype=np.int64))
        if known == 0 or aval.size % known:
            raise TypeError(f"cannot reshape array of shape {aval.shape} (size {aval.size}) into "
                            f"shape {shape}")
        shape = tuple(aval.size // known if s == -1 else s for s in shape)
    if int(np.prod(shape, dtype=np.int64)) != aval.size:
        raise TypeError(f"cannot reshape array of shape {aval.shape} (size {aval.size}) into "
                        f"shape {shape} (size {int(np.prod(shape, dtype=np.int64))})")
    return lax.reshape(a, shape)


def ravel(a, order="C"):
    return reshape(a, (-1,), order)


def transpose(a, axes=None):
    a = asarray(a)
    ndim = get_aval(a).ndim
    if axes is None:
        axes = tuple(range(ndim - 1, -1, -1))
    else:
        if len(axes) != ndim:
            raise ValueError(f"axes don't match array: got {len(axes)} axes for an array of "
                             f"dimension {ndim}")
        axes = canonicalize_axes(tuple(axes), ndim)
    return lax.transpose(a, axes)


def matrix_transpose(x, /):
    x = asarray(x)
    ndim = get_aval(x).ndim
    if ndim < 2:
        raise ValueError(f"matrix_transpose requires at least 2 dimensions, got {ndim}")
    return lax.transpose(x, tuple(range(ndim - 2)) + (ndim - 1, ndim - 2))


def swapaxes(a, axis1, axis2):
    a = asarray(a)
    ndim = get_aval(a).ndim
    perm = list(range(ndim))
    i, j = canonicalize_axis(axis1, ndim), canonicalize_axis(axis2, ndim)
    perm[i], perm[j] = perm[j], perm[i]
    return lax.transpose(a, perm)


def moveaxis(a, source, destination):
    a = asarray(a)
    ndim = get_aval(a).ndim
    src = canonicalize_axes(source if isinstance(source, (tuple, list)) else (source,), ndim)
    dst = canonicalize_axes(destination if isinstance(destination, (tuple, list))
                            else (destination,), ndim)
    if len(src) != len(dst):
        raise ValueError("`source` and `destination` arguments must have the same number of "
                         "elements")
    perm = [i for i in range(ndim) if i not in src]
    for d, s in sorted(zip(dst, src)):
        perm.insert(d, s)
    return lax.transpose(a, perm)


def expand_dims(a, axis):
    a = asarray(a)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    return lax.expand_dims(a, tuple(axes))


def squeeze(a, axis=None):
    a = asarray(a)
    aval = get_aval(a)
    if axis is None:
        axes = tuple(i for i, n in enumerate(aval.shape) if n == 1)
    else:
        axes = canonicalize_axes(axis, aval.ndim)
        for ax in axes:
            if aval.shape[ax] != 1:
                raise ValueError(f"cannot select an axis to squeeze out which has size not equal "
                                 f"to one, got shape={aval.shape} and dimensions={axes}")
    return lax.squeeze(a, axes)


def broadcast_to(array, shape):
    return broadcast_to_shape(asarray(array), _shape_arg(shape))


def broadcast_arrays(*args):
    arrs = [asarray(a) for a in args]
    shape = broadcast_shapes(*[get_aval(a).shape for a in arrs])
    return [broadcast_to_shape(a, shape) for a in arrs]


def atleast_1d(*arys):
    out = [reshape(a, (1,)) if get_aval(asarray(a)).ndim == 0 else asarray(a) for a in arys]
    return out[0] if len(out) == 1 else out


def atleast_2d(*arys):
    out = []
    for a in arys:
        a = asarray(a)
        nd = get_aval(a).ndim
        out.append(reshape(a, (1,) * (2 - nd) + get_aval(a).shape) if nd < 2 else a)
    return out[0] if len(out) == 1 else out


def atleast_3d(*arys):
    out = []
    for a in arys:
        a = asarray(a)
        shape = get_aval(a).shape
        if len(shape) == 0:
            a = reshape(a, (1, 1, 1))
        elif len(shape) == 1:
            a = reshape(a, (1, shape[0], 1))
        elif len(shape) == 2:
            a = reshape(a, shape + (1,))
        out.append(a)
    return out[0] if len(out) == 1 else out


def concatenate(arrays, axis=0, dtype=None):
    if not isinstance(arrays, (list, tuple)) and get_aval(asarray(arrays)).ndim:
        arrays = list(asarray(arrays))
    arrays = list(arrays)
    if not arrays:
        raise ValueError("Need at least one array to concatenate.")
    arrs = promote_dtypes(*arrays)
    if dtype is not None:
        arrs = [lax.convert_element_type(a, dtypes.canonicalize_dtype(dtype)) for a in arrs]
    if axis is None:
        arrs = [ravel(a) for a in arrs]
        axis = 0
    ndim = get_aval(arrs[0]).ndim
    if ndim == 0:
        raise ValueError("Zero-dimensional arrays cannot be concatenated.")
    for a in arrs:
        if get_aval(a).ndim != ndim:
            raise TypeError("Cannot concatenate arrays with different numbers of dimensions: got "
                            f"{', '.join(str(get_aval(x).shape) for x in arrs)}.")
    return lax.concatenate(arrs, canonicalize_axis(axis, ndim))


concat = concatenate


def stack(arrays, axis=0, dtype=None):
    arrays = list(arrays)
    if not arrays:
        raise ValueError("Need at least one array to stack.")
    arrs = [asarray(a) for a in arrays]
    shapes = {get_aval(a).shape for a in arrs}
    if len(shapes) != 1:
        raise ValueError(f"All input arrays must have the same shape, got "
                         f"{[get_aval(a).shape for a in arrs]}")
    ndim = get_aval(arrs[0]).ndim + 1
    axis = canonicalize_axis(axis, ndim)
    return concatenate([lax.expand_dims(a, (axis,)) for a in arrs], axis, dtype)


def vstack(tup, dtype=None):
    return concatenate([atleast_2d(a) for a in tup], 0, dtype)


def hstack(tup, dtype=None):
    arrs = [atleast_1d(a) for a in tup]
    return concatenate(arrs, 0 if get_aval(arrs[0]).ndim == 1 else 1, dtype)


def dstack(tup, dtype=None):
    return concatenate([atleast_3d(a) for a in tup], 2, dtype)


def column_stack(tup):
    arrs = [asarray(a) for a in tup]
    arrs = [reshape(a, (-1, 1)) if get_aval(a).ndim < 2 else a for a in arrs]
    return concatenate(arrs, 1)


def _split(name, ary, indices_or_sections, axis, strict):
    ary = asarray(ary)
    aval = get_aval(ary)
    axis = canonicalize_axis(axis, aval.ndim)
    n = aval.shape[axis]
    if isinstance(indices_or_sections, (int, np.integer)) or (
            hasattr(indices_or_sections, "shape") and np.ndim(indices_or_sections) == 0):
        sections = concrete_int(indices_or_sections, "indices_or_sections")
        if sections <= 0:
            raise ValueError("number sections must be larger than 0.")
        if strict and n % sections:
            raise ValueError("array split does not result in an equal division")
        base, extra = divmod(n, sections)
        sizes = [base + 1] * extra + [base] * (sections - extra)
        bounds = np.cumsum([0] + sizes)
    else:
        idx = [concrete_int(i, "indices_or_sections") for i in indices_or_sections]
        bounds = [0] + [builtins.min(builtins.max(i if i >= 0 else i + n, 0), n) for i in idx] + [n]
    return [lax.slice_in_dim(ary, int(lo), builtins.max(int(lo), int(hi)), 1, axis)
            for lo, hi in zip(bounds[:-1], bounds[1:])]


def split(ary, indices_or_sections, axis=0):
    return _split("split", ary, indices_or_sections, axis, strict=True)


def array_split(ary, indices_or_sections, axis=0):
    return _split("array_split", ary, indices_or_sections, axis, strict=False)


def hsplit(ary, indices_or_sections):
    return split(ary, indices_or_sections, 1 if get_aval(asarray(ary)).ndim > 1 else 0)


def vsplit(ary, indices_or_sections):
    return split(ary, indices_or_sections, 0)


def tile(A, reps):
    A = asarray(A)
    reps = (reps,) if isinstance(reps, (int, np.integer)) else tuple(reps)
    reps = tuple(concrete_int(r, "reps") for r in reps)
    aval = get_aval(A)
    nd = builtins.max(len(reps), aval.ndim)
    reps = (1,) * (nd - len(reps)) + reps
    shape = (1,) * (nd - aval.ndim) + aval.shape
    A = lax.reshape(A, shape)
    # Broadcast to (r0, s0, r1, s1, ...) then merge pairs.
    bshape = tuple(x for r, s in zip(reps, shape) for x in (r, s))
    out = lax.broadcast_in_dim(A, bshape, tuple(range(1, 2 * nd, 2)))
    return lax.reshape(out, tuple(r * s for r, s in zip(reps, shape)))


def repeat(a, repeats, axis=None, *, total_repeat_length=None):
    """Repeats elements of `a`; `repeats` is an int or an array broadcastable to the axis'
    length. Under jit, array repeats need a static `total_repeat_length` (extra slots repeat
    the last element; a shorter total drops the tail)."""
    check_arraylike("repeat", a, repeats)
    a = asarray(a)
    if axis is None:
        a = ravel(a)
        axis = 0
    aval = get_aval(a)
    axis = canonicalize_axis(axis, aval.ndim)
    n = aval.shape[axis]
    r = _static_scalar(repeats)
    if r is not None:
        if r < 0:
            raise TypeError(f"jnp.repeat: repeats must be nonnegative, got {r}.")
        shape = aval.shape
        expanded = lax.broadcast_in_dim(a, shape[:axis + 1] + (r,) + shape[axis + 1:],
                                        tuple(i if i <= axis else i + 1 for i in range(len(shape))))
        out = lax.reshape(expanded, shape[:axis] + (n * r,) + shape[axis + 1:])
        if total_repeat_length is None or total_repeat_length == n * r:
            return out
        return _fit_length(out, axis, operator.index(total_repeat_length))
    repeats = broadcast_to_shape(asarray(repeats), (n,))
    if total_repeat_length is None:
        counts = core.concrete_or_error(
            np.asarray, repeats, "When jit-compiling jnp.repeat, the total number of repeats "
            "must be static. To fix this, either specify a static value for `repeats`, or pass a "
            "static value to `total_repeat_length`.")
        total = int(counts.sum())
    else:
        total = operator.index(total_repeat_length)
    # Block k starts at the exclusive cumulative sum of repeats; marking each start and
    # summing the marks gives, at every output slot, the index of the block it belongs to.
    ends = lax.cumsum(repeats, 0)
    starts = lax.sub(ends, repeats)
    marks = lax.full((total,), 0, get_aval(repeats).dtype).at[starts].add(
        lax.full((n,), 1, get_aval(repeats).dtype), mode="drop")
    block = lax.sub(lax.cumsum(marks, 0), lax.full((), 1, get_aval(marks).dtype))
    block = lax.clamp(lax.full((), 0, get_aval(block).dtype), block,
                      lax.full((), builtins.max(n - 1, 0), get_aval(block).dtype))
    from corejax.lax import indexing
    return indexing.take(a, block, axis=axis, mode="clip")


def _static_scalar(x):
    """The Python int of a concrete rank-0 integer, else None (arrays, traced values)."""
    if np.ndim(x) != 0 if not hasattr(x, "aval") else get_aval(x).ndim != 0:
        return None
    try:
        return core.concrete_or_error(lambda v: operator.index(np.asarray(v)[()]), x)
    except core.ConcretizationTypeError:
        return None


def _fit_length(x, axis, length):
    """`x` cut to `length` along axis, or padded by repeating its last slice."""
    n = get_aval(x).shape[axis]
    if length <= n:
        return lax.slice_in_dim(x, 0, length, 1, axis)
    last = lax.slice_in_dim(x, n - 1, n, 1, axis)
    return lax.concatenate([x, repeat(last, length - n, axis)], axis)


def flip(m, axis=None):
    m = asarray(m)
    return lax.rev(m, canonicalize_axes(axis, get_aval(m).ndim))


def fliplr(m):
    return flip(m, 1)


def flipud(m):
    return flip(m, 0)


def roll(a, shift, axis=None):
    a = asarray(a)
    if axis is None:
        return reshape(roll(ravel(a), shift, 0), get_aval(a).shape)
    shifts = shift if isinstance(shift, (tuple, list)) else (shift,)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    if len(shifts) == 1:
        shifts = shifts * len(axes)
    for s, ax in zip(shifts, axes):
        ax = canonicalize_axis(ax, get_aval(a).ndim)
        n = get_aval(a).shape[ax]
        if n == 0:
            continue
        s = concrete_int(s, "shift") % n
        if s:
            a = lax.concatenate([lax.slice_in_dim(a, n - s, n, 1, ax),
                                 lax.slice_in_dim(a, 0, n - s, 1, ax)], ax)
    return a


def pad(array, pad_width, mode="constant", *, constant_values=0):
    array = asarray(array)
    aval = get_aval(array)
    pw = np.broadcast_to(np.asarray(pad_width, dtype=np.int64).reshape(-1, 2)
                         if np.ndim(pad_width) else np.asarray([[pad_width, pad_width]]),
                         (aval.ndim, 2)) if aval.ndim else np.zeros((0, 2), np.int64)
    if (pw < 0).any():
        raise ValueError(f"index can't contain negative values, got pad_width={pad_width}")
    if mode == "constant":
        cv = np.broadcast_to(np.asarray(constant_values), (aval.ndim, 2)) \
            if np.ndim(constant_values) else None
        if cv is None:
            value = lax.convert_element_type(asarray(constant_values), aval.dtype)
            return lax.pad(array, value, [(int(lo), int(hi), 0) for lo, hi in pw])
        for ax in range(aval.ndim):
            cfg = [(0, 0, 0)] * aval.ndim
            for side in (0, 1):
                cfg[ax] = (int(pw[ax][0]), 0, 0) if side == 0 else (0, int(pw[ax][1]), 0)
                value = lax.convert_element_type(asarray(cv[ax][side]), aval.dtype)
                array = lax.pad(array, value, cfg)
        return array
    for ax in range(aval.ndim):
        lo, hi = int(pw[ax][0]), int(pw[ax][1])
        if lo == 0 and hi == 0:
            continue
        n = get_aval(array).shape[ax]
        parts = []
        if mode == "edge":
            if n == 0:
                raise ValueError("can't extend empty axis using modes other than 'constant'")
            first, last = lax.slice_in_dim(array, 0, 1, 1, ax), lax.slice_in_dim(array, n - 1, n,
                                                                               1, ax)
            parts = [repeat(first, lo, ax)] * (lo > 0) + [array] + [repeat(last, hi, ax)] * (hi > 0)
        elif mode in ("reflect", "symmetric", "wrap"):
            idx = np.arange(-lo, n + hi)
            if mode == "wrap":
                idx = idx % n
            else:
                period = 2 * n - 2 if mode == "reflect" else 2 * n
                if period == 0:
                    idx = np.zeros_like(idx)
                else:
                    idx = idx % period
                    idx = np.where(idx >= n, period - idx - (0 if mode == "reflect" else 1), idx)
            parts = [lax.slice_in_dim(array, int(i), int(i) + 1, 1, ax) for i in idx]
        else:
            raise NotImplementedError(f"jnp.pad mode {mode!r} is not supported; supported modes "
                                      "are 'constant', 'edge', 'reflect', 'symmetric', 'wrap'.")
        array = lax.concatenate(parts, ax)
    return array


def _tri_mask(N, M, k):
    rows = lax.broadcasted_iota(np.int32, (N, M), 0)
    cols = lax.broadcasted_iota(np.int32, (N, M), 1)
    return lax.ge(lax.add(rows, lax.full((), k, np.int32)), cols)


def tril(m, k=0):
    m = asarray(m)
    shape = get_aval(m).shape
    N, M = shape[-2:]
    mask = lax.broadcast_in_dim(_tri_mask(N, M, k), shape, (len(shape) - 2, len(shape) - 1))
    return lax.select(mask, m, lax.full(shape, 0, get_aval(m).dtype))


def triu(m, k=0):
    m = asarray(m)
    shape = get_aval(m).shape
    N, M = shape[-2:]
    mask = lax.broadcast_in_dim(_tri_mask(N, M, k - 1), shape, (len(shape) - 2, len(shape) - 1))
    return lax.select(mask, lax.full(shape, 0, get_aval(m).dtype), m)


def diagonal(a, offset=0, axis1=0, axis2=1):
    a = asarray(a)
    aval = get_aval(a)
    a = moveaxis(a, (axis1, axis2), (-2, -1))
    shape = get_aval(a).shape
    N, M = shape[-2:]
    mask = lax.eq(lax.add(lax.broadcasted_iota(np.int32, (N, M), 0),
                          lax.full((), offset, np.int32)),
                  lax.broadcasted_iota(np.int32, (N, M), 1))
    mask = lax.broadcast_in_dim(mask, shape, (len(shape) - 2, len(shape) - 1))
    zero = lax.full(shape, 0, aval.dtype)
    summed = lax.reduce_sum(lax.select(mask, a, zero), (len(shape) - 1,)) if offset >= 0 else \
        lax.reduce_sum(lax.select(mask, a, zero), (len(shape) - 2,))
    n = builtins.max(0, builtins.min(N, M - offset) if offset >= 0 else builtins.min(N + offset, M))
    start = 0 if offset >= 0 else -offset
    if offset >= 0:
        return lax.slice_in_dim(summed, start, start + n, 1, len(shape) - 2)
    return lax.slice_in_dim(summed, 0, n, 1, len(shape) - 2)


def diag(v, k=0):
    v = asarray(v)
    aval = get_aval(v)
    if aval.ndim == 1:
        n = aval.shape[0] + builtins.abs(k)
        rows = lax.broadcasted_iota(np.int32, (n, n), 0)
        cols = lax.broadcasted_iota(np.int32, (n, n), 1)
        mask = lax.eq(lax.add(rows, lax.full((), k, np.int32)), cols)
        # entry (r, c) on the diagonal holds v[min(r, c)]: v shifted by |k| along the longer
        # of the two
        padded = lax.pad(v, lax.full((), 0, aval.dtype), [(builtins.abs(k), 0, 0)])
        src = lax.broadcast_in_dim(padded, (n, n), (1,) if k >= 0 else (0,))
        return lax.select(mask, src, lax.full((n, n), 0, aval.dtype))
    if aval.ndim == 2:
        return diagonal(v, k)
    raise ValueError("diag input must be 1d or 2d")


def trace(a, offset=0, axis1=0, axis2=1, dtype=None):
    from corejax.numpy._reductions import sum
    return sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    arrs = [ravel(asarray(x)) for x in xi]
    n = len(arrs)
    shape = [get_aval(a).shape[0] for a in arrs]
    if indexing == "xy" and n >= 2:
        shape[0], shape[1] = shape[1], shape[0]
    out = []
    for i, a in enumerate(arrs):
        dim = i
        if indexing == "xy" and n >= 2 and i < 2:
            dim = 1 - i
        if sparse:
            s = [1] * n
            s[dim] = get_aval(a).shape[0]
            out.append(lax.reshape(a, s))
        else:
            out.append(lax.broadcast_in_dim(a, tuple(shape), (dim,)))
    return out


def shape(a):
    return get_aval(asarray(a)).shape


def ndim(a):
    return get_aval(asarray(a)).ndim


def size(a, axis=None):
    s = get_aval(asarray(a)).shape
    return int(np.prod(s, dtype=np.int64)) if axis is None else s[axis]
