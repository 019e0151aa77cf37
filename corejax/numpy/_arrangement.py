"""Rearranging arrays: rot90, rollaxis, permute_dims, unstack, dsplit, block, diagflat,
trim_zeros, resize, append, delete, insert, copy and astype. Composed of lax only."""
from __future__ import annotations

import builtins
import operator

import numpy as np

from corejax import core, dtypes, lax
from corejax.core import get_aval
from corejax.array import Array, place_new
from corejax.numpy._core import asarray, broadcast_to_shape, canonicalize_axis, check_arraylike
from corejax.numpy._shape import concatenate, flip, moveaxis, ravel, reshape, split, transpose

__all__ = []


def copy(a, order=None):
    """A copy of `a` (arrays are immutable: the same values as a new array)."""
    check_arraylike("copy", a)
    out = asarray(a)
    if isinstance(out, core.Tracer):
        return out
    return place_new(Array(np.array(out), out.weak_type), like=out)


def astype(x, dtype, /, *, copy=False, device=None):
    """`x` converted to `dtype` (the default float dtype when dtype is None)."""
    check_arraylike("astype", x)
    dtypes.check_user_dtype_supported(dtype, "astype")
    x = asarray(x)
    dt = dtypes.canonicalize_dtype(dtype) if dtype is not None else dtypes.default_float_dtype()
    from corejax.lax._complex import astype_real
    return lax.convert_element_type(astype_real(x, dt), dt)


def rot90(m, k=1, axes=(0, 1)):
    """Rotates `m` by 90 degrees k times in the plane of `axes` (from the first toward the
    second)."""
    check_arraylike("rot90", m)
    m = asarray(m)
    ndim = get_aval(m).ndim
    if ndim < 2:
        raise ValueError(f"rot90 requires its first argument to have ndim at least two, but got "
                         f"first argument of shape {get_aval(m).shape}, which has ndim {ndim}")
    if len(axes) != 2:
        raise ValueError(f"len(axes) must be 2, got {axes}")
    ax0, ax1 = (canonicalize_axis(a, ndim) for a in axes)
    if ax0 == ax1:
        raise ValueError(f"Axes must be different, got axes={tuple(axes)}")
    k = operator.index(k) % 4
    if k == 0:
        return m
    if k == 2:
        return flip(flip(m, ax0), ax1)
    perm = list(range(ndim))
    perm[ax0], perm[ax1] = perm[ax1], perm[ax0]
    if k == 1:
        return transpose(flip(m, ax1), perm)
    return flip(transpose(m, perm), ax1)


def rollaxis(a, axis, start=0):
    """Moves `axis` to just before position `start` (NumPy's older moveaxis)."""
    check_arraylike("rollaxis", a)
    a = asarray(a)
    ndim = get_aval(a).ndim
    axis = canonicalize_axis(axis, ndim)
    if not -ndim <= start <= ndim:
        raise ValueError(f"start={start} must satisfy {-ndim} <= start <= {ndim}")
    start = start + ndim if start < 0 else start
    if axis < start:
        start -= 1
    return moveaxis(a, axis, start)


def permute_dims(a, /, axes):
    check_arraylike("permute_dims", a)
    return transpose(a, axes)


def unstack(x, /, *, axis=0):
    """The slices of `x` along `axis`, as a tuple."""
    check_arraylike("unstack", x)
    x = asarray(x)
    aval = get_aval(x)
    if aval.ndim == 0:
        raise ValueError("Unstack requires arrays with rank > 0, however a scalar array was "
                         "passed.")
    axis = canonicalize_axis(axis, aval.ndim)
    return tuple(lax.index_in_dim(x, i, axis, keepdims=False) for i in range(aval.shape[axis]))


def dsplit(ary, indices_or_sections):
    """Splits along the third axis (the array must have at least three dimensions)."""
    ary = asarray(ary)
    if get_aval(ary).ndim < 3:
        raise IndexError(f"dsplit only works on arrays of 3 or more dimensions, got shape "
                         f"{get_aval(ary).shape}.")
    return split(ary, indices_or_sections, axis=2)


def block(arrays):
    """Assembles an array from nested lists of blocks: the innermost lists are joined along
    the last axis, each enclosing level along the axis before."""
    if not isinstance(arrays, list):
        return asarray(arrays)
    depth = _block_depth(arrays)
    leaves = [asarray(x) for x in _block_leaves(arrays)]
    ndim = builtins.max([depth] + [get_aval(x).ndim for x in leaves])
    return _block(arrays, depth, ndim)


def _block_depth(arrays):
    if not isinstance(arrays, list):
        return 0
    if not arrays:
        raise ValueError("Lists cannot be empty in jnp.block.")
    depths = {_block_depth(x) for x in arrays}
    if len(depths) != 1:
        raise ValueError("Mismatched list depths in jax.numpy.block")
    return 1 + depths.pop()


def _block_leaves(arrays):
    if isinstance(arrays, list):
        for x in arrays:
            yield from _block_leaves(x)
    else:
        yield arrays


def _block(arrays, depth, ndim):
    if not isinstance(arrays, list):
        x = asarray(arrays)
        return reshape(x, (1,) * (ndim - get_aval(x).ndim) + get_aval(x).shape)
    parts = [_block(x, depth - 1, ndim) for x in arrays]
    return concatenate(parts, axis=ndim - depth)


def diagflat(v, k=0):
    """A 2-D array with the flattened `v` on its k-th diagonal."""
    check_arraylike("diagflat", v)
    from corejax.numpy._shape import diag
    return diag(ravel(asarray(v)), k)


def trim_zeros(filt, trim="fb", axis=None):
    """`filt` without its leading ('f') and / or trailing ('b') zeros along each of `axis`
    (all axes by default): the bounds come from the values, so `filt` must be concrete."""
    check_arraylike("trim_zeros", filt)
    filt = asarray(filt)
    value = core.concrete_or_error(np.asarray, filt, "Error arose in the `filt` argument of "
                                   "trim_zeros(): its output shape depends on its values")
    trim = trim.lower()
    aval = get_aval(filt)
    axes = range(aval.ndim) if axis is None else [
        canonicalize_axis(a, aval.ndim) for a in (axis if isinstance(axis, (list, tuple))
                                                  else (axis,))]
    nonzero = value != 0
    for ax in axes:
        other = tuple(i for i in range(aval.ndim) if i != ax)
        along = np.flatnonzero(nonzero.any(axis=other) if other else nonzero)
        if along.size == 0:
            return lax.slice_in_dim(filt, 0, 0, 1, ax)
        start = int(along[0]) if "f" in trim else 0
        stop = int(along[-1]) + 1 if "b" in trim else aval.shape[ax]
        filt = lax.slice_in_dim(filt, start, stop, 1, ax)
    return filt


def resize(a, new_shape):
    """`a` flattened, repeated as often as needed and cut to fill `new_shape`."""
    check_arraylike("resize", a)
    a = ravel(asarray(a))
    new_shape = (new_shape,) if isinstance(new_shape, (int, np.integer)) else tuple(new_shape)
    size = int(np.prod(new_shape, dtype=np.int64))
    n = get_aval(a).shape[0]
    if n == 0 or size == 0:
        return lax.full(new_shape, 0, get_aval(a).dtype)
    reps = -(-size // n)
    tiled = reshape(lax.broadcast_in_dim(a, (reps, n), (1,)), (reps * n,))
    return reshape(lax.slice_in_dim(tiled, 0, size, 1, 0), new_shape)


def append(arr, values, axis=None):
    """`values` joined at the end of `arr` (both flattened when axis is None)."""
    check_arraylike("append", arr, values)
    if axis is None:
        return concatenate([ravel(arr), ravel(values)], 0)
    return concatenate([arr, values], axis)


def _axis_and_operand(arr, axis):
    arr = asarray(arr)
    if axis is None:
        return ravel(arr), 0
    return arr, canonicalize_axis(axis, get_aval(arr).ndim)


def delete(arr, obj, axis=None, *, assume_unique_indices=False):
    """`arr` without the entries `obj` (an int, a slice, an integer array or a boolean mask)
    along `axis`. Integer arrays must be concrete unless assume_unique_indices=True."""
    check_arraylike("delete", arr)
    if not isinstance(obj, slice):
        check_arraylike("delete", arr, obj)
    arr, axis = _axis_and_operand(arr, axis)
    n = get_aval(arr).shape[axis]
    if isinstance(obj, slice):
        drop = np.arange(n)[obj]
        keep = np.setdiff1d(np.arange(n), drop)
        return _take_static(arr, keep, axis)
    obj_aval = get_aval(asarray(obj))
    if obj_aval.dtype == np.bool_:
        mask = core.concrete_or_error(np.asarray, obj, "'obj' boolean mask of jnp.delete()")
        if mask.shape != (n,):
            raise ValueError(f"boolean array argument obj to delete must be one dimensional "
                             f"and match the axis length of {n}")
        return _take_static(arr, np.flatnonzero(~mask), axis)
    if obj_aval.dtype.kind not in "iu":
        raise TypeError(f"jnp.delete: obj must be an integer or boolean array, a slice or an "
                        f"int, got dtype {obj_aval.dtype.name}.")
    if assume_unique_indices:
        obj = ravel(asarray(obj))
        m = get_aval(obj).shape[0]
        idx_dt = dtypes.default_int_dtype()
        obj = lax.convert_element_type(obj, idx_dt)
        obj = lax.select(lax.lt(obj, lax.full_like(obj, 0)), lax.add(obj, lax.full_like(obj, n)),
                         obj)
        kept = lax.full((n,), True, np.bool_).at[obj].set(False, mode="drop")
        from corejax.numpy._reductions import nonzero
        (keep,) = nonzero(kept, size=n - m)
        from corejax.lax import indexing
        return indexing.take(arr, keep, axis=axis)
    idx = core.concrete_or_error(np.asarray, obj, "'obj' array argument of jnp.delete()")
    if idx.ndim == 0:
        i = int(idx)
        if not -n <= i < n:
            raise ValueError(f"axis {i} is out of bounds for array of dimension {n}")
        idx = np.array([i % n])
    idx = np.where(idx < 0, idx + n, idx)
    if ((idx < 0) | (idx >= n)).any():
        raise IndexError(f"jnp.delete: index out of bounds for axis of size {n}: {obj}")
    return _take_static(arr, np.setdiff1d(np.arange(n), idx), axis)


def _take_static(arr, keep, axis):
    """`arr` at the static positions `keep` along axis (slices where they are contiguous)."""
    keep = np.asarray(keep, dtype=np.int64)
    if keep.size and (np.diff(keep) == 1).all():
        return lax.slice_in_dim(arr, int(keep[0]), int(keep[-1]) + 1, 1, axis)
    from corejax.lax import indexing
    return indexing.take(arr, asarray(keep.astype(dtypes.default_int_dtype())), axis=axis)


def insert(arr, obj, values, axis=None):
    """`arr` with `values` inserted before the positions `obj` along `axis`. A scalar `obj`
    inserts `values` as a block; an array `obj` inserts one value per index. Indices may be
    traced (the output shape depends only on how many values are inserted)."""
    check_arraylike("insert", arr, values)
    if not isinstance(obj, slice):
        check_arraylike("insert", arr, obj, values)
    arr, axis = _axis_and_operand(arr, axis)
    aval = get_aval(arr)
    n = aval.shape[axis]
    values = asarray(values)
    if isinstance(obj, slice):
        obj = asarray(np.arange(n)[obj].astype(dtypes.default_int_dtype()))
    obj = asarray(obj)
    if get_aval(obj).dtype.kind not in "iu":
        raise TypeError(f"jnp.insert: index array argument obj must be of integer dtype, got "
                        f"{get_aval(obj).dtype.name}")
    idx_dt = dtypes.default_int_dtype()
    obj = lax.convert_element_type(obj, idx_dt)
    if get_aval(obj).ndim == 0:
        # a scalar index inserts a block: values' leading axis becomes `axis`
        vals_nd = builtins.max(get_aval(values).ndim, aval.ndim)
        values = reshape(values, (1,) * (vals_nd - get_aval(values).ndim) + get_aval(values).shape)
        values = moveaxis(values, 0, axis)
        m = get_aval(values).shape[axis]
        positions = lax.broadcast_in_dim(obj, (m,), ())
    else:
        positions = ravel(obj)
        m = get_aval(positions).shape[0]
    target = aval.shape[:axis] + (m,) + aval.shape[axis + 1:]
    values = broadcast_to_shape(lax.convert_element_type(values, aval.dtype,
                                                         weak_type=aval.weak_type), target)
    positions = lax.clamp(lax.full((), -n, idx_dt), positions, lax.full((), n, idx_dt))
    positions = lax.select(lax.lt(positions, lax.full_like(positions, 0)),
                           lax.add(positions, lax.full_like(positions, n)), positions)
    # inserted value k (in stable sorted order) lands at its index plus its rank; old element j
    # moves up by the number of indices <= j
    from corejax.lax import sorting
    order = sorting.argsort(positions, 0, True)
    from corejax.lax import indexing
    sorted_pos = indexing.take(positions, order)
    new_pos = lax.add(sorted_pos, lax.iota(idx_dt, m))
    values = indexing.take(values, order, axis=axis)
    old = lax.iota(idx_dt, n)
    shift = lax.reduce_sum(lax.convert_element_type(
        lax.le(lax.broadcast_in_dim(positions, (n, m), (1,)),
               lax.broadcast_in_dim(old, (n, m), (0,))), idx_dt), (1,))
    old_pos = lax.add(old, shift)
    out_shape = aval.shape[:axis] + (n + m,) + aval.shape[axis + 1:]
    out = lax.full(out_shape, 0, aval.dtype, weak_type=aval.weak_type)
    lead = (slice(None),) * axis
    out = out.at[lead + (old_pos,)].set(arr, unique_indices=True)
    return out.at[lead + (new_pos,)].set(values, unique_indices=True)

