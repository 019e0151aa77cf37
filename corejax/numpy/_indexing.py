"""NumPy indexing (`x[idx]`), functional updates (`x.at[idx].set(v)`), take and take_along_axis.

An index is first put in canonical form: one entry per array dimension (Ellipsis expanded,
lists made arrays, boolean masks made integer arrays), plus Nones. Then:

- Static integers and slices select a box of the array: one `slice` (strided) and one `rev`.
  A traced scalar integer becomes a `dynamic_slice`. Updates of a box are a
  `dynamic_update_slice` (unit strides) or a `pad` and `select` (strided).
- Integer-array indices (with the scalar integers among them, as in NumPy) become one gather
  or scatter over the box the slices select. The broadcast index arrays form the gather's batch
  dimensions, placed where the first of them stands if they are adjacent, else first.

Out-of-bound integers follow JAX, not NumPy: reads clamp (`mode='fill'` fills instead),
updates are dropped (`mode='clip'` clamps instead); negative indices count from the end.
"""
from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np

from corejax import dtypes, lax
from corejax.array import Array
from corejax.core import Tracer, get_aval
from corejax.errors import NonConcreteBooleanIndexError
from corejax.lax.indexing import (GatherDimensionNumbers, GatherScatterMode,
                                  ScatterDimensionNumbers, gather, scatter, scatter_add,
                                  scatter_max, scatter_min, scatter_mul)
from corejax.numpy._core import asarray, broadcast_to_shape, canonicalize_axis

__all__ = ["NonConcreteBooleanIndexError", "unravel_index", "ravel_multi_index", "ix_",
           "indices", "diag_indices", "tril_indices", "triu_indices", "put", "put_along_axis"]

_SCALAR_INT = (int, np.integer)


class _Entry(NamedTuple):
    kind: str   # 'none', 'slice', 'int' (static), 'scalar' (0-d array), 'array' (ndim >= 1)
    value: object
    dim: int    # the array dimension it indexes (-1 for 'none')


def _is_bool_array(i) -> bool:
    return isinstance(i, (np.ndarray, Array, Tracer)) and get_aval(i).dtype == np.bool_


def _dims_consumed(i) -> int:
    if i is None or i is Ellipsis:
        return 0
    return get_aval(i).ndim if _is_bool_array(i) else 1


def normalize_index(idx, ndim: int) -> tuple:
    """The index as a tuple without Ellipsis: one entry per array dimension (a boolean mask
    covering as many as its rank), plus Nones."""
    if not isinstance(idx, tuple):
        idx = (idx,)
    ellipses = [k for k, i in enumerate(idx) if i is Ellipsis]
    if len(ellipses) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    consumed = sum(_dims_consumed(i) for i in idx)
    if consumed > ndim:
        raise IndexError(f"Too many indices for array: {consumed} non-None/Ellipsis indices for "
                         f"dim {ndim}.")
    fill = (slice(None),) * (ndim - consumed)
    if ellipses:
        pos = ellipses[0]
        return idx[:pos] + fill + idx[pos + 1:]
    return idx + fill


def _convert_entry(i, position):
    """Python sequences become arrays; anything that is not an index is rejected."""
    if i is None or i is Ellipsis or isinstance(i, slice):
        return i
    if isinstance(i, (bool, np.bool_)):
        raise TypeError("JAX arrays do not support boolean scalar indices; use a boolean array "
                        "or jnp.where.")
    if isinstance(i, _SCALAR_INT):
        return int(i)
    if isinstance(i, (list, tuple)):
        if any(isinstance(x, (Array, Tracer)) for x in _flatten(i)):
            i = asarray(i)
        else:
            i = np.asarray(i)
            if i.size == 0:
                i = i.astype(np.intp)
    elif isinstance(i, np.generic):
        i = np.asarray(i)
    if not isinstance(i, (np.ndarray, Array, Tracer)):
        raise TypeError(f"Indexing with {type(i).__name__} is not supported: use integers, "
                        f"slices, None, Ellipsis, or integer or boolean arrays. Got {i!r} at "
                        f"position {position}.")
    dt = get_aval(i).dtype
    if dt.kind not in "iub":
        raise TypeError(f"Indexer must have integer or boolean type, got indexer with type "
                        f"{dt.name} at position {position}, indexer value {i!r}.")
    if dt == np.bool_ and get_aval(i).ndim == 0:
        raise TypeError("JAX arrays do not support boolean scalar indices; use a boolean array "
                        "or jnp.where.")
    return i


def _flatten(seq):
    for x in seq:
        if isinstance(x, (list, tuple)):
            yield from _flatten(x)
        else:
            yield x


def _concrete_mask(mask) -> np.ndarray:
    if isinstance(mask, Tracer):
        value = mask.to_concrete_value()
        if value is None:
            raise NonConcreteBooleanIndexError(mask.aval)
        return np.asarray(value)
    return np.asarray(mask)


def _canonical_entries(idx, shape) -> list[_Entry]:
    if isinstance(idx, list):
        multi = any(i is None or i is Ellipsis or isinstance(i, (slice, list, tuple, Array,
                                                                 Tracer, np.ndarray))
                    for i in idx)
        fix = ("`arr[tuple(seq)]` instead of `arr[seq]`" if multi else "`arr[array(seq)]` "
               "instead of `arr[seq]` (x[jnp.array([0, 2])] gathers elements 0 and 2)")
        raise TypeError("Using a non-tuple sequence for multidimensional indexing is not "
                        f"allowed; use {fix}.")
    raw = idx if isinstance(idx, tuple) else (idx,)
    raw = tuple(_convert_entry(i, k) for k, i in enumerate(raw))
    entries, dim = [], 0
    for i in normalize_index(raw, len(shape)):
        if i is None:
            entries.append(_Entry("none", None, -1))
        elif isinstance(i, slice):
            entries.append(_Entry("slice", i, dim))
            dim += 1
        elif isinstance(i, int):
            entries.append(_Entry("int", i, dim))
            dim += 1
        elif _is_bool_array(i):
            mask = _concrete_mask(i)
            covered = shape[dim:dim + mask.ndim]
            if mask.shape != covered:
                raise IndexError(f"boolean index did not match shape of indexed array in index "
                                 f"{dim}: got {mask.shape}, expected {covered}")
            for k, positions in enumerate(np.nonzero(mask)):
                entries.append(_Entry("array", positions, dim + k))
            dim += mask.ndim
        elif isinstance(i, np.ndarray) and i.ndim == 0:
            entries.append(_Entry("int", int(i), dim))
            dim += 1
        else:
            entries.append(_Entry("scalar" if get_aval(i).ndim == 0 else "array", i, dim))
            dim += 1
    return entries


# --- boxes: what static slices and integers select -------------------------------------------

class _Box(NamedTuple):
    start: int      # the lowest selected position
    count: int
    stride: int
    reverse: bool   # whether the index walks the positions downwards


def _slice_box(s: slice, n: int) -> _Box:
    for name in ("start", "stop", "step"):
        v = getattr(s, name)
        if isinstance(v, Tracer):
            raise IndexError(
                f"Array slice indices must have static start/stop/step to be used with NumPy "
                f"indexing syntax; found a traced {name} {v!r}. To index a statically sized array "
                f"at a dynamic position, try lax.dynamic_slice or lax.dynamic_slice_in_dim.")
    start, stop, step = slice(*(None if v is None else int(v)
                                for v in (s.start, s.stop, s.step))).indices(n)
    positions = range(start, stop, step)
    if not positions:
        return _Box(0, 0, 1, False)
    if step > 0:
        return _Box(positions[0], len(positions), step, False)
    return _Box(positions[-1], len(positions), -step, True)


def _full_box(n: int) -> _Box:
    return _Box(0, n, 1, False)


def _box_limits(box: _Box) -> int:
    return box.start + (box.count - 1) * box.stride + 1 if box.count else box.start


def _box_get(x, boxes):
    out = lax.slice(x, [b.start for b in boxes], [_box_limits(b) for b in boxes],
                    [b.stride for b in boxes])
    reversed_dims = tuple(d for d, b in enumerate(boxes) if b.reverse and b.count > 1)
    return lax.rev(out, reversed_dims) if reversed_dims else out


def _box_is_everything(boxes, shape) -> bool:
    return all(b == _full_box(n) for b, n in zip(boxes, shape))


_COMBINE = {"add": lax.add, "mul": lax.mul, "min": lax.min, "max": lax.max}


def _box_update(x, boxes, values, op: str):
    """`x` with the box replaced by `values` (op 'set') or combined with them; `values` has
    the box's shape, in index order."""
    if any(b.count == 0 for b in boxes):
        return x
    reversed_dims = tuple(d for d, b in enumerate(boxes) if b.reverse and b.count > 1)
    if reversed_dims:
        values = lax.rev(values, reversed_dims)
    if op != "set":
        values = _COMBINE[op](_box_get(x, [b._replace(reverse=False) for b in boxes]), values)
    if all(b.stride == 1 for b in boxes):
        return lax.dynamic_update_slice(x, values, [b.start for b in boxes])
    aval = get_aval(x)
    config = [(b.start, n - _box_limits(b), b.stride - 1) for b, n in zip(boxes, aval.shape)]
    mask = lax.pad(lax.full(get_aval(values).shape, True, np.bool_), False, config)
    return lax.select(mask, lax.pad(values, lax.full((), 0, aval.dtype), config), x)


def _int_box(k: int, n: int, dim: int, clip: bool) -> _Box | None:
    """The box of static integer `k` on a dimension of size `n`; None if it is out of bounds
    and not clipped (reads always clip)."""
    if k < 0:
        k += n
    if not 0 <= k < n:
        if not clip:
            return None
        if n == 0:
            raise IndexError(f"index {k} is out of bounds for axis {dim} with size 0")
        k = min(max(k, 0), n - 1)
    return _Box(k, 1, 1, False)


def _result_shape(entries, dim_sizes, batch_shape=()) -> tuple:
    """NumPy's result shape: one dimension per slice and None, the advanced indices' broadcast
    shape where the first of them stands if they are adjacent, else first."""
    advanced = [k for k, e in enumerate(entries) if e.kind in ("int", "scalar", "array")]
    adjacent = advanced == list(range(advanced[0], advanced[0] + len(advanced))) \
        if advanced else True
    shape = [] if adjacent else list(batch_shape)
    for k, e in enumerate(entries):
        if e.kind == "none":
            shape.append(1)
        elif e.kind == "slice":
            shape.append(dim_sizes[e.dim])
        elif adjacent and k == advanced[0]:
            shape.extend(batch_shape)
    return tuple(shape)


# --- gather plans ----------------------------------------------------------------------------

class _GatherPlan(NamedTuple):
    indices: object
    dnums: GatherDimensionNumbers
    slice_sizes: tuple
    out_shape: tuple     # the gather's output shape (NumPy's result shape without the Nones)
    result_shape: tuple  # NumPy's result shape


def _index_arrays(advanced, shape):
    """The advanced entries as one integer array: broadcast shape + (len(advanced),), with
    negative indices counted from the end."""
    idx_dtype = dtypes.default_int_dtype()
    shapes = [np.shape(e.value) if e.kind == "int" else get_aval(e.value).shape for e in advanced]
    try:
        batch = np.broadcast_shapes(*shapes)
    except ValueError:
        raise IndexError(f"shape mismatch: indexing arrays could not be broadcast together with "
                         f"shapes {' '.join(map(str, shapes))}") from None
    if all(isinstance(e.value, (int, np.ndarray)) for e in advanced):
        cols = []
        for e in advanced:
            v = np.asarray(e.value).astype(np.int64)
            cols.append(np.broadcast_to(np.where(v < 0, v + shape[e.dim], v), batch))
        return asarray(np.stack(cols, -1).astype(idx_dtype)), batch
    cols = []
    for e in advanced:
        v = lax.convert_element_type(asarray(e.value), idx_dtype)
        v = lax.select(lax.lt(v, lax.full((), 0, idx_dtype)),
                       lax.add(v, lax.full((), shape[e.dim], idx_dtype)), v)
        v = broadcast_to_shape(v, batch)
        cols.append(lax.reshape(v, batch + (1,)))
    return lax.concatenate(cols, len(batch)), batch


def _gather_plan(entries, shape) -> _GatherPlan:
    """A gather of `shape` (the box the slices select) doing the advanced part of the index."""
    advanced = [e for e in entries if e.kind in ("int", "scalar", "array")]
    indices, batch = _index_arrays(advanced, shape)
    adv_dims = [e.dim for e in advanced]
    rest = [d for d in range(len(shape)) if d not in adv_dims]
    positions = [k for k, e in enumerate(entries) if e.kind in ("int", "scalar", "array")]
    adjacent = positions == list(range(positions[0], positions[0] + len(positions)))
    before = sum(d < adv_dims[0] for d in rest) if adjacent else 0
    offset_dims = tuple(range(before)) + tuple(range(before + len(batch),
                                                     len(batch) + len(rest)))
    out_shape = tuple(shape[d] for d in rest[:before]) + batch + \
        tuple(shape[d] for d in rest[before:])
    dnums = GatherDimensionNumbers(offset_dims=offset_dims, collapsed_slice_dims=tuple(adv_dims),
                                   start_index_map=tuple(adv_dims))
    if any(shape[d] == 0 for d in adv_dims) and int(np.prod(batch)):
        d = next(d for d in adv_dims if shape[d] == 0)
        raise IndexError(f"index is out of bounds for axis {d} with size 0")
    slice_sizes = tuple(min(n, 1) if d in adv_dims else n for d, n in enumerate(shape))
    return _GatherPlan(indices, dnums, slice_sizes, out_shape,
                       _result_shape(entries, shape, batch))


def _read_mode(mode) -> GatherScatterMode:
    """jnp reads promise in-bound indices by default, which clamps."""
    return GatherScatterMode.PROMISE_IN_BOUNDS if mode is None else \
        GatherScatterMode.from_any(mode)


# --- x[idx] ----------------------------------------------------------------------------------

def getitem(arr, idx, mode=None, fill_value=None, unique_indices=False,
            indices_are_sorted=False):
    """`arr[idx]` (and `arr.at[idx].get(...)`) with NumPy's indexing rules and JAX's handling of
    out-of-bound integers."""
    arr = asarray(arr)
    shape = get_aval(arr).shape
    entries = _canonical_entries(idx, shape)
    mode = _read_mode(mode)
    fill = mode is GatherScatterMode.FILL_OR_DROP
    if not any(e.kind == "array" or (fill and e.kind in ("int", "scalar")) for e in entries):
        return _basic_getitem(arr, entries, shape)
    boxes = [_slice_box(e.value, shape[e.dim]) if e.kind == "slice" else None for e in entries]
    dim_boxes = [_full_box(n) for n in shape]
    for e, b in zip(entries, boxes):
        if b is not None:
            dim_boxes[e.dim] = b
    sub = _box_get(arr, dim_boxes)
    plan = _gather_plan(entries, get_aval(sub).shape)
    out = gather(sub, plan.indices, plan.dnums, plan.slice_sizes, mode=mode,
                 fill_value=fill_value, unique_indices=unique_indices,
                 indices_are_sorted=indices_are_sorted)
    return lax.reshape(out, plan.result_shape)


def _basic_getitem(arr, entries, shape):
    boxes = [_full_box(n) for n in shape]
    dynamic = {}
    for e in entries:
        if e.kind == "slice":
            boxes[e.dim] = _slice_box(e.value, shape[e.dim])
        elif e.kind == "int":
            boxes[e.dim] = _int_box(e.value, shape[e.dim], e.dim, clip=True)
        elif e.kind == "scalar":
            dynamic[e.dim] = e.value
    out = _box_get(arr, boxes)
    if dynamic:
        out = _dynamic_index(out, dynamic)
    sizes = [b.count for b in boxes]
    return lax.reshape(out, _result_shape(entries, sizes))


def _dynamic_index(x, dynamic):
    """A size-1 dynamic_slice at each traced scalar index (clamped, as reads are)."""
    aval = get_aval(x)
    idx_dtype = dtypes.default_int_dtype()
    starts, sizes = [], list(aval.shape)
    for d, n in enumerate(aval.shape):
        if d in dynamic:
            i = asarray(dynamic[d])
            if get_aval(i).dtype.kind == "i":
                i = _wrap_negative(lax.convert_element_type(i, idx_dtype), n)
            starts.append(i)
            sizes[d] = 1
        else:
            starts.append(0)
    return lax.dynamic_slice(x, starts, sizes)


def _wrap_negative(i, n):
    dt = get_aval(i).dtype
    return lax.select(lax.lt(i, lax.full((), 0, dt)), lax.add(i, lax.full((), n, dt)), i)


# --- x.at[idx].op(values) --------------------------------------------------------------------

_SCATTERS = {"set": scatter, "add": scatter_add, "mul": scatter_mul, "min": scatter_min,
             "max": scatter_max}


def update(arr, idx, values, op, mode=None, indices_are_sorted=False, unique_indices=False):
    """`arr.at[idx].<op>(values)` for op in set/add/mul/min/max/pow. Repeated indices all apply
    (set: one of them wins); out-of-bound updates are dropped unless `mode='clip'`."""
    arr = asarray(arr)
    if op == "pow":
        from corejax.numpy._ufuncs import power
        current = getitem(arr, idx, unique_indices=unique_indices,
                          indices_are_sorted=indices_are_sorted)
        return update(arr, idx, power(current, values), "set", mode, indices_are_sorted,
                      unique_indices)
    if op not in _SCATTERS:
        raise ValueError(f"Unknown update operation {op!r}: expected one of "
                         f"{', '.join(_SCATTERS)} or 'pow'.")
    aval = get_aval(arr)
    values = _cast_values(values, aval.dtype, aval.weak_type)
    shape = aval.shape
    entries = _canonical_entries(idx, shape)
    mode = GatherScatterMode.from_any(mode)
    boxes = [_full_box(n) for n in shape]
    for e in entries:
        if e.kind == "slice":
            boxes[e.dim] = _slice_box(e.value, shape[e.dim])
    if not any(e.kind in ("scalar", "array") for e in entries):
        for e in entries:
            if e.kind == "int":
                box = _int_box(e.value, shape[e.dim], e.dim, clip=mode is GatherScatterMode.CLIP)
                if box is None:
                    return arr  # an out-of-bound update is dropped
                boxes[e.dim] = box
        sizes = [b.count for b in boxes]
        values = _fit_values(values, _result_shape(entries, sizes))
        return _box_update(arr, boxes, lax.reshape(values, sizes), op)
    whole = _box_is_everything(boxes, shape)
    sub = arr if whole else _box_get(arr, boxes)
    plan = _gather_plan(entries, get_aval(sub).shape)
    values = lax.reshape(_fit_values(values, plan.result_shape), plan.out_shape)
    dn = plan.dnums
    sdn = ScatterDimensionNumbers(update_window_dims=dn.offset_dims,
                                  inserted_window_dims=dn.collapsed_slice_dims,
                                  scatter_dims_to_operand_dims=dn.start_index_map)
    new_sub = _SCATTERS[op](sub, plan.indices, values, sdn, mode=mode,
                            indices_are_sorted=indices_are_sorted, unique_indices=unique_indices)
    return new_sub if whole else _box_update(arr, boxes, new_sub, "set")


def _cast_values(values, dtype, weak_type=False):
    """The update values in the array's dtype and weak type (as JAX converts them: so the
    gradient of a weakly typed update value is weakly typed again)."""
    values = asarray(values)
    if get_aval(values).dtype != dtype and dtypes.result_type(values, dtype) != dtype:
        warnings.warn(f"scatter inputs have incompatible types: cannot safely cast value from "
                      f"dtype={get_aval(values).dtype} to dtype={dtype}. In future JAX releases "
                      f"this will result in an error.", FutureWarning, stacklevel=4)
    return lax.convert_element_type(values, dtype, weak_type=weak_type)


def _fit_values(values, shape):
    """`values` broadcast to the indexed shape (leading unit dimensions beyond it dropped, as
    NumPy allows)."""
    vshape = get_aval(values).shape
    extra = len(vshape) - len(shape)
    if extra > 0 and all(s == 1 for s in vshape[:extra]):
        values = lax.reshape(values, vshape[extra:])
    return broadcast_to_shape(values, shape)


# --- take / take_along_axis ------------------------------------------------------------------

def _check_integer_indices(name, indices):
    if get_aval(indices).dtype.kind not in "iu":
        raise TypeError(f"{name} requires integer indices, got dtype "
                        f"{get_aval(indices).dtype.name}.")


def take(a, indices, axis=None, mode=None, fill_value=None, unique_indices=False,
         indices_are_sorted=False):
    """jnp.take: out-of-bound indices are filled (NaN, the most negative integer, the largest
    unsigned integer, True) by default; `mode='clip'` clamps, `mode='wrap'` wraps."""
    a, indices = asarray(a), asarray(indices)
    _check_integer_indices("take", indices)
    if axis is None:
        a = lax.reshape(a, (get_aval(a).size,))
        axis = 0
    axis = canonicalize_axis(axis, get_aval(a).ndim)
    n = get_aval(a).shape[axis]
    if mode is None or mode == "fill":
        gather_mode = GatherScatterMode.FILL_OR_DROP
    elif mode == "raise":
        raise NotImplementedError("The 'raise' mode to jnp.take is not supported.")
    elif mode == "wrap":
        from corejax.numpy._ufuncs import remainder
        indices = remainder(indices, n) if n else indices
        gather_mode = GatherScatterMode.PROMISE_IN_BOUNDS
    elif mode == "clip":  # negative indices clamp to 0, as in NumPy's and JAX's take
        from corejax.numpy._ufuncs import clip
        indices = clip(indices, 0, n - 1 if n else 0)
        gather_mode = GatherScatterMode.PROMISE_IN_BOUNDS
    elif mode in ("drop", "promise_in_bounds") or isinstance(mode, GatherScatterMode):
        gather_mode = GatherScatterMode.from_any(mode)
    else:
        raise ValueError(f"Invalid mode '{mode}' for np.take")
    if n == 0:
        if get_aval(indices).size:
            raise IndexError("Cannot do a non-empty jnp.take() from an empty axis.")
        a_shape = get_aval(a).shape
        return lax.full(a_shape[:axis] + get_aval(indices).shape + a_shape[axis + 1:], 0,
                        get_aval(a).dtype)
    return getitem(a, (slice(None),) * axis + (indices,), mode=gather_mode,
                   fill_value=fill_value, unique_indices=unique_indices,
                   indices_are_sorted=indices_are_sorted)


def take_along_axis(arr, indices, axis=-1, mode=None, fill_value=None):
    """jnp.take_along_axis: `indices` has `arr`'s rank and broadcasts with it except along
    `axis`; out-of-bound indices are filled by default, as in jnp.take."""
    arr, indices = asarray(arr), asarray(indices)
    _check_integer_indices("take_along_axis", indices)
    if axis is None:
        if get_aval(indices).ndim != 1:
            raise ValueError(f"when axis=None, `indices` must have a single dimension, got "
                             f"shape {get_aval(indices).shape}.")
        arr = lax.reshape(arr, (get_aval(arr).size,))
        axis = 0
    a_shape, i_shape = get_aval(arr).shape, get_aval(indices).shape
    if len(a_shape) != len(i_shape):
        raise ValueError(f"indices and arr must have the same number of dimensions; "
                         f"{len(i_shape)} vs. {len(a_shape)}")
    axis = canonicalize_axis(axis, len(a_shape))
    batch = []
    for d, (m, k) in enumerate(zip(a_shape, i_shape)):
        if d != axis:
            if m != k and 1 not in (m, k):
                raise ValueError(f"take_along_axis: arr of shape {a_shape} and indices of shape "
                                 f"{i_shape} do not broadcast along dimension {d}.")
            batch.append(max(m, k))

    def along(shape_axis):
        return tuple(batch[:axis]) + (shape_axis,) + tuple(batch[axis:])
    arr = broadcast_to_shape(arr, along(a_shape[axis]))
    idx_dtype = dtypes.default_int_dtype()
    indices = lax.convert_element_type(indices, idx_dtype)
    indices = _wrap_negative(broadcast_to_shape(indices, along(i_shape[axis])), a_shape[axis])
    others = tuple(d for d in range(len(a_shape)) if d != axis)
    dn = GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(axis,),
                                start_index_map=(axis,), operand_batching_dims=others,
                                start_indices_batching_dims=others)
    mode = GatherScatterMode.FILL_OR_DROP if mode is None else GatherScatterMode.from_any(mode)
    return gather(arr, lax.reshape(indices, get_aval(indices).shape + (1,)), dn,
                  (1,) * len(a_shape), mode=mode, fill_value=fill_value)



# --- index helpers ---------------------------------------------------------------------------

def unravel_index(indices, shape):
    """jnp.unravel_index: negative indices count from the end; out-of-bound ones are clipped."""
    from corejax.numpy._ufuncs import clip, floor_divide, remainder
    indices = asarray(indices)
    _check_integer_indices("unravel_index", indices)
    shape = tuple(int(n) for n in shape)
    strides = [int(np.prod(shape[k:], dtype=np.int64)) for k in range(len(shape) + 1)]
    total = strides[0]
    clipped = clip(indices, -total, total - 1) if total else indices
    return tuple(floor_divide(remainder(clipped, strides[k]), strides[k + 1])
                 for k in range(len(shape)))


def ravel_multi_index(multi_index, dims, mode="raise", order="C"):
    """jnp.ravel_multi_index: mode 'raise' needs concrete indices; 'wrap' and 'clip' work
    under jit."""
    from corejax.numpy._ufuncs import clip, remainder
    from corejax import core
    if order not in ("C", "F"):
        raise ValueError(f"order must be 'C' or 'F', got {order!r}")
    dims = tuple(int(n) for n in dims)
    if len(multi_index) != len(dims):
        raise ValueError(f"parameter multi_index must be a sequence of length {len(dims)}, "
                         f"got {len(multi_index)}")
    multi_index = [asarray(i) for i in multi_index]
    for i in multi_index:
        _check_integer_indices("ravel_multi_index", i)
    if mode == "raise":
        for i, n in zip(multi_index, dims):
            value = core.concrete_or_error(
                np.asarray, i, "The error occurred because ravel_multi_index was jit-compiled "
                "with mode='raise'. Use mode='wrap' or mode='clip' instead.")
            if value.size and (value.min() < 0 or value.max() >= n):
                raise ValueError("invalid entry in coordinates array")
    elif mode == "wrap":
        multi_index = [remainder(i, n) for i, n in zip(multi_index, dims)]
    elif mode == "clip":
        multi_index = [clip(i, 0, n - 1) for i, n in zip(multi_index, dims)]
    else:
        raise ValueError(f"invalid mode={mode!r}. Expected 'raise', 'wrap', or 'clip'")
    order_dims = range(len(dims)) if order == "F" else range(len(dims) - 1, -1, -1)
    out, stride = None, 1
    for k in order_dims:
        term = multi_index[k] * stride
        out = term if out is None else out + term
        stride *= dims[k]
    return out


def ix_(*args):
    """jnp.ix_: 1-D integer sequences reshaped to index an open mesh."""
    n = len(args)
    out = []
    for k, a in enumerate(args):
        a = asarray(a)
        aval = get_aval(a)
        if aval.ndim != 1:
            raise ValueError(f"Arguments to jax.numpy.ix_ must be 1-dimensional, got shape "
                             f"{aval.shape}")
        if aval.dtype == np.bool_:
            raise TypeError("Boolean arguments to jax.numpy.ix_ are not supported")
        out.append(lax.reshape(a, (1,) * k + aval.shape + (1,) * (n - k - 1)))
    return tuple(out)


def indices(dimensions, dtype=None, sparse=False):
    """jnp.indices: the index grid of `dimensions` (stacked, or a tuple if `sparse`)."""
    dtype = dtypes.canonicalize_dtype(dtype or dtypes.default_int_dtype())
    dimensions = tuple(int(n) for n in dimensions)
    n = len(dimensions)
    grids = []
    for k, size in enumerate(dimensions):
        if sparse:
            shape = (1,) * k + (size,) + (1,) * (n - k - 1)
            grids.append(lax.broadcasted_iota(dtype, shape, k))
        else:
            grids.append(lax.broadcasted_iota(dtype, dimensions, k))
    if sparse:
        return tuple(grids)
    if not grids:
        return lax.full((0,), 0, dtype)
    return lax.concatenate([lax.reshape(g, (1,) + dimensions) for g in grids], 0)


def diag_indices(n, ndim=2):
    if n < 0:
        raise ValueError(f"n argument to diag_indices must be nonnegative, got {n}")
    if ndim < 0:
        raise ValueError(f"ndim argument to diag_indices must be nonnegative, got {ndim}")
    return (lax.iota(dtypes.default_int_dtype(), n),) * ndim


def tril_indices(n, k=0, m=None):
    return tuple(asarray(i.astype(dtypes.default_int_dtype())) for i in np.tril_indices(n, k, m))


def triu_indices(n, k=0, m=None):
    return tuple(asarray(i.astype(dtypes.default_int_dtype())) for i in np.triu_indices(n, k, m))


def _immutable(name, inplace):
    if inplace:
        raise ValueError(f"jax.numpy.{name} cannot modify arrays in-place, because JAX arrays are "
                         f"immutable. Pass inplace=False to instead return an updated array.")


def put(a, ind, v, mode=None, *, inplace=True):
    """jnp.put (with inplace=False): values at flat indices; out-of-bound indices clip by
    default, or wrap; `v` is repeated to the number of indices, as in NumPy."""
    _immutable("put", inplace)
    from corejax.numpy._ufuncs import clip, remainder
    arr = asarray(a)
    ind = lax.reshape(asarray(ind), (get_aval(asarray(ind)).size,))
    v = asarray(v)
    v = lax.reshape(v, (get_aval(v).size,))
    size, count, nv = get_aval(arr).size, get_aval(ind).size, get_aval(v).size
    if not (size and count and nv):
        return arr
    if nv < count:
        v = lax.concatenate([v] * -(-count // nv), 0)
    v = lax.slice(v, (0,), (count,))
    if mode is None or mode == "clip":
        ind = clip(ind, 0, size - 1)
    elif mode == "wrap":
        ind = remainder(ind, size)
    elif mode == "raise":
        raise NotImplementedError("The 'raise' mode to jnp.put is not supported.")
    else:
        raise ValueError(f"mode should be one of 'wrap' or 'clip'; got mode={mode!r}")
    flat = update(lax.reshape(arr, (size,)), ind, v, "set",
                  mode=GatherScatterMode.PROMISE_IN_BOUNDS)
    return lax.reshape(flat, get_aval(arr).shape)


def put_along_axis(arr, indices, values, axis, inplace=True, mode=None):
    """jnp.put_along_axis (with inplace=False): the scatter matching take_along_axis."""
    _immutable("put_along_axis", inplace)
    arr, indices = asarray(arr), asarray(indices)
    _check_integer_indices("put_along_axis", indices)
    if axis is None:
        flat = put_along_axis(lax.reshape(arr, (get_aval(arr).size,)), indices, values, 0,
                              inplace=False, mode=mode)
        return lax.reshape(flat, get_aval(arr).shape)
    a_shape, i_shape = get_aval(arr).shape, get_aval(indices).shape
    if len(a_shape) != len(i_shape):
        raise ValueError(f"indices and arr must have the same number of dimensions; "
                         f"{len(i_shape)} vs. {len(a_shape)}")
    axis = canonicalize_axis(axis, len(a_shape))
    n = len(a_shape)
    index = tuple(indices if d == axis else
                  lax.broadcasted_iota(dtypes.default_int_dtype(),
                                       (1,) * d + (a_shape[d],) + (1,) * (n - d - 1), d)
                  for d in range(n))
    return update(arr, index, values, "set", mode=mode)


# --- .at[] -----------------------------------------------------------------------------------

class _IndexUpdateHelper:
    """`x.at[idx]` returns a reference whose methods return updated copies of `x`."""

    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def __getitem__(self, idx):
        return _IndexUpdateRef(self.array, idx)

    def __repr__(self):
        return f"_IndexUpdateHelper({self.array!r})"


class _IndexUpdateRef:
    """`x.at[idx]`: `get`, `set`, `add`, ... each take `indices_are_sorted`, `unique_indices`
    and `mode` ('promise_in_bounds' (default), 'clip', 'drop', 'fill'), as in JAX."""

    __slots__ = ("array", "index")

    def __init__(self, array, index):
        self.array, self.index = array, index

    def __repr__(self):
        return f"_IndexUpdateRef({self.array!r}, {self.index!r})"

    def get(self, *, indices_are_sorted=False, unique_indices=False, mode=None, fill_value=None):
        return getitem(self.array, self.index, mode=mode, fill_value=fill_value,
                       unique_indices=unique_indices, indices_are_sorted=indices_are_sorted)

    def set(self, values, **kw):
        return update(self.array, self.index, values, "set", **kw)

    def add(self, values, **kw):
        return update(self.array, self.index, values, "add", **kw)

    def subtract(self, values, **kw):
        from corejax.numpy._ufuncs import negative
        return update(self.array, self.index, negative(values), "add", **kw)

    def multiply(self, values, **kw):
        return update(self.array, self.index, values, "mul", **kw)

    mul = multiply

    def divide(self, values, **kw):
        from corejax.numpy._creation import ones_like
        from corejax.numpy._ufuncs import divide
        return divide(self.array, update(ones_like(self.array), self.index, values, "mul", **kw))

    def power(self, values, **kw):
        return update(self.array, self.index, values, "pow", **kw)

    def min(self, values, **kw):
        return update(self.array, self.index, values, "min", **kw)

    def max(self, values, **kw):
        return update(self.array, self.index, values, "max", **kw)

    def apply(self, func, **kw):
        return update(self.array, self.index, func(self.get()), "set", **kw)
