"""Gather and scatter: XLA's general indexing primitives, each followed by all of its rules.

`gather` reads one window of `slice_sizes` per index vector (the last axis of `indices`);
`scatter` (set, add, mul, min, max) combines one window of `updates` per index vector into the
operand. Dimension numbers follow XLA/JAX exactly, including the batching dimensions that
vmap uses to keep a batched gather/scatter one primitive. Out-of-bound windows follow
`GatherScatterMode`: CLIP clamps the window start into range, FILL_OR_DROP fills a gathered
window (drops a scattered one) if any part of it is out of range, PROMISE_IN_BOUNDS leaves
it to the implementation, which here clamps gathers and drops scatters, as XLA does.

None of these primitives has a compiler lowering: the compiler runs their NumPy impls as host
steps between compiled kernels.

The jnp layer's entry points (`advanced_getitem`, `scatter_update`, `take`,
`take_along_axis`) live at the end; the NumPy indexing semantics behind them are in
corejax/numpy/_indexing.py.
"""
from __future__ import annotations

import enum
from typing import NamedTuple

import numpy as np

from corejax import dtypes
from corejax.core import Primitive, ShapedArray, get_aval
from corejax.transforms import ad, batching
from corejax.transforms.ad import Zero, is_undefined_primal
from corejax.lax._factories import shape_str

__all__ = ["GatherDimensionNumbers", "ScatterDimensionNumbers", "GatherScatterMode", "gather",
           "scatter", "scatter_add", "scatter_sub", "scatter_mul", "scatter_min", "scatter_max",
           "batched_dynamic_slice", "batched_dynamic_update_slice", "advanced_getitem",
           "scatter_update", "take", "take_along_axis"]


class GatherDimensionNumbers(NamedTuple):
    """How a gather's output, operand and indices dimensions relate (XLA's GatherDimensionNumbers).

    offset_dims: output dimensions holding the window (the operand dimensions not collapsed
      and not batching, in order); the other output dimensions are the indices' batch dims.
    collapsed_slice_dims: operand dimensions whose window size 1 is dropped from the output.
    start_index_map: for each component of an index vector, the operand dimension it starts.
    operand_batching_dims / start_indices_batching_dims: paired operand and indices dimensions
      along which element b of the indices reads only element b of the operand.
    """
    offset_dims: tuple
    collapsed_slice_dims: tuple
    start_index_map: tuple
    operand_batching_dims: tuple = ()
    start_indices_batching_dims: tuple = ()


class ScatterDimensionNumbers(NamedTuple):
    """How a scatter's updates, operand and indices dimensions relate (XLA's
    ScatterDimensionNumbers): the mirror image of GatherDimensionNumbers."""
    update_window_dims: tuple
    inserted_window_dims: tuple
    scatter_dims_to_operand_dims: tuple
    operand_batching_dims: tuple = ()
    scatter_indices_batching_dims: tuple = ()


class GatherScatterMode(enum.Enum):
    """What a gather or scatter does with a window that is not fully inside the operand."""
    CLIP = enum.auto()
    FILL_OR_DROP = enum.auto()
    PROMISE_IN_BOUNDS = enum.auto()

    @staticmethod
    def from_any(s) -> "GatherScatterMode":
        if isinstance(s, GatherScatterMode):
            return s
        if s == "clip":
            return GatherScatterMode.CLIP
        if s is None or s == "fill" or s == "drop":
            return GatherScatterMode.FILL_OR_DROP
        if s == "promise_in_bounds":
            return GatherScatterMode.PROMISE_IN_BOUNDS
        raise ValueError(f'Unknown gather mode "{s}": expected one of "clip", "fill", "drop", '
                         f'"promise_in_bounds" or a GatherScatterMode.')

    def __str__(self):
        return f"GatherScatterMode.{self.name}"


def _aval(x):
    return x.aval if is_undefined_primal(x) else get_aval(x)


def _ints(xs) -> tuple:
    return tuple(int(x) for x in xs)


# --- shared NumPy machinery ------------------------------------------------------------------

def _window_starts(operand_shape, indices, start_dims, operand_batching_dims,
                   indices_batching_dims, window, check_bounds):
    """The start of every window in operand coordinates, shape `batch + (operand rank,)`,
    clamped into range; and, if `check_bounds`, which windows were fully in range before."""
    batch = indices.shape[:-1]
    starts = np.zeros(batch + (len(operand_shape),), np.int64)
    for k, d in enumerate(start_dims):
        starts[..., d] = indices[..., k]
    for od, idim in zip(operand_batching_dims, indices_batching_dims):
        coord = np.arange(batch[idim]).reshape([-1 if a == idim else 1 for a in range(len(batch))])
        starts[..., od] = coord
    upper = np.asarray(operand_shape, np.int64) - np.asarray(window, np.int64)
    valid = None
    if check_bounds:
        valid = np.all((starts >= 0) & (starts <= upper), axis=-1)
    return np.clip(starts, 0, upper), valid


def _window_index(shape, starts, window):
    """Indexes the windows of an array of `shape`: returns `(perm, index)` such that
    `transpose(a, perm)[index]` has shape `(n,) + windows of the indexed dims + full dims`.

    Dimensions whose window is the whole dimension become plain slices, so only the others
    carry index arrays (dimension 0 always does, so that each window gets its own slot).
    `starts` has shape `(n, rank)` and is already in range; rank must be at least 1."""
    indexed = [d for d in range(len(shape)) if window[d] != shape[d]] or [0]
    full = [d for d in range(len(shape)) if d not in indexed]
    k = len(indexed)
    index = []
    for j, d in enumerate(indexed):
        offsets = np.arange(window[d]).reshape([1] + [-1 if a == j else 1 for a in range(k)])
        index.append(starts[:, d].reshape((-1,) + (1,) * k) + offsets)
    return indexed + full, tuple(index) + (slice(None),) * len(full)


def _default_fill(dtype):
    dtype = np.dtype(dtype)
    if dtype.kind in "fc":
        return np.nan
    if dtype.kind == "i":
        return np.iinfo(dtype).min
    if dtype.kind == "u":
        return np.iinfo(dtype).max
    return True


# --- gather ----------------------------------------------------------------------------------

def _gather_impl(operand, indices, *, dimension_numbers, slice_sizes, mode, fill_value,
                 unique_indices, indices_are_sorted):
    dn = dimension_numbers
    batch = indices.shape[:-1]
    if operand.ndim == 0:  # every window is the scalar itself
        return np.array(np.broadcast_to(operand, batch))
    starts, valid = _window_starts(operand.shape, indices, dn.start_index_map,
                                   dn.operand_batching_dims, dn.start_indices_batching_dims,
                                   slice_sizes, mode is GatherScatterMode.FILL_OR_DROP)
    n = int(np.prod(batch, dtype=np.int64))
    perm, index = _window_index(operand.shape, starts.reshape(n, operand.ndim), slice_sizes)
    windows = np.transpose(operand, perm)[index]
    windows = np.transpose(windows, [0] + [1 + perm.index(d) for d in range(operand.ndim)])
    if valid is not None and not valid.all():
        fill = np.asarray(_default_fill(operand.dtype) if fill_value is None else fill_value,
                          operand.dtype)
        windows = np.where(valid.reshape((n,) + (1,) * operand.ndim), windows, fill)
    dropped = set(dn.collapsed_slice_dims) | set(dn.operand_batching_dims)
    kept = tuple(s for d, s in enumerate(slice_sizes) if d not in dropped)
    out = windows.reshape(batch + kept)
    rank = len(batch) + len(kept)
    batch_positions = [p for p in range(rank) if p not in dn.offset_dims]
    perm_out = [len(batch) + dn.offset_dims.index(p) if p in dn.offset_dims
                else batch_positions.index(p) for p in range(rank)]
    return np.array(np.transpose(out, perm_out), order="C").astype(operand.dtype, copy=False)


def _check_sorted_dims(op, name, dims, bound, what):
    if list(dims) != sorted(set(dims)):
        raise TypeError(f"{op} {name} must be sorted and have no repeated entries, got {dims}.")
    for d in dims:
        if not 0 <= d < bound:
            raise TypeError(f"{op} {name} must be in the range [0, {bound}) of the {what} "
                            f"dimensions, got {dims}.")


def _check_batching_dims(op, operand, indices, operand_dims, indices_dims, names):
    if len(operand_dims) != len(indices_dims):
        raise TypeError(f"{op} {names[0]} {operand_dims} and {names[1]} {indices_dims} must "
                        f"have the same length.")
    batch_rank = indices.ndim - 1
    if len(set(indices_dims)) != len(indices_dims) or \
            any(not 0 <= d < batch_rank for d in indices_dims):
        raise TypeError(f"{op} {names[1]} must be distinct dimensions of the indices other "
                        f"than the last (index vector) one, got {indices_dims} for indices of "
                        f"shape {shape_str(indices.shape)}.")
    for od, idim in zip(operand_dims, indices_dims):
        if operand.shape[od] != indices.shape[idim]:
            raise TypeError(f"{op} batching dimensions must have equal sizes: operand dimension "
                            f"{od} of shape {shape_str(operand.shape)} and indices dimension "
                            f"{idim} of shape {shape_str(indices.shape)}.")


def _check_indices(op, indices, start_dims, operand, map_name):
    if indices.dtype.kind not in "iu":
        raise TypeError(f"{op} indices must have an integer type, got {indices.dtype.name}.")
    if indices.ndim == 0:
        raise TypeError(f"{op} indices must have rank >= 1 (the index vector is the last "
                        f"dimension), got a scalar.")
    if len(start_dims) != indices.shape[-1]:
        raise TypeError(f"{op} has {len(start_dims)} elements in {map_name} and the index "
                        f"vector (last dimension) of indices of shape {shape_str(indices.shape)} "
                        f"has {indices.shape[-1]}; these must be equal.")
    if len(set(start_dims)) != len(start_dims) or \
            any(not 0 <= d < operand.ndim for d in start_dims):
        raise TypeError(f"{op} {map_name} must hold distinct operand dimensions in [0, "
                        f"{operand.ndim}), got {start_dims}.")


def _gather_abstract(operand, indices, *, dimension_numbers, slice_sizes, mode, fill_value,
                     unique_indices, indices_are_sorted):
    dn = dimension_numbers
    _check_indices("gather", indices, dn.start_index_map, operand, "start_index_map")
    _check_sorted_dims("gather", "collapsed_slice_dims", dn.collapsed_slice_dims, operand.ndim,
                       "operand")
    _check_sorted_dims("gather", "operand_batching_dims", dn.operand_batching_dims,
                       operand.ndim, "operand")
    _check_batching_dims("gather", operand, indices, dn.operand_batching_dims,
                         dn.start_indices_batching_dims,
                         ("operand_batching_dims", "start_indices_batching_dims"))
    if set(dn.collapsed_slice_dims) & set(dn.operand_batching_dims):
        raise TypeError(f"gather collapsed_slice_dims {dn.collapsed_slice_dims} and "
                        f"operand_batching_dims {dn.operand_batching_dims} must be disjoint.")
    if len(slice_sizes) != operand.ndim:
        raise TypeError(f"gather slice_sizes must have one entry per operand dimension: got "
                        f"slice_sizes {slice_sizes} for operand of shape "
                        f"{shape_str(operand.shape)}.")
    for i, (s, n) in enumerate(zip(slice_sizes, operand.shape)):
        if not 0 <= s <= n:
            raise TypeError(f"Slice size at index {i} in gather op is out of range, must be "
                            f"within [0, {n} + 1), got {s} (operand shape "
                            f"{shape_str(operand.shape)}, slice_sizes {slice_sizes}).")
    for d in dn.collapsed_slice_dims + dn.operand_batching_dims:
        if slice_sizes[d] > 1:
            raise TypeError(f"gather can only collapse (or batch over) slice dims of size <= 1, "
                            f"but slice_sizes[{d}] = {slice_sizes[d]} (slice_sizes "
                            f"{slice_sizes}).")
    kept = tuple(s for d, s in enumerate(slice_sizes)
                 if d not in dn.collapsed_slice_dims and d not in dn.operand_batching_dims)
    batch = indices.shape[:-1]
    rank = len(batch) + len(kept)
    if len(dn.offset_dims) != len(kept):
        raise TypeError(f"gather offset_dims {dn.offset_dims} must have one entry per operand "
                        f"dimension that is neither collapsed nor batching ({len(kept)} for "
                        f"operand of shape {shape_str(operand.shape)}, collapsed_slice_dims "
                        f"{dn.collapsed_slice_dims}, operand_batching_dims "
                        f"{dn.operand_batching_dims}).")
    _check_sorted_dims("gather", "offset_dims", dn.offset_dims, rank, "output")
    shape, b, w = [], iter(batch), iter(kept)
    for p in range(rank):
        shape.append(next(w) if p in dn.offset_dims else next(b))
    return ShapedArray(tuple(shape), operand.dtype, operand.weak_type)


gather_p = Primitive("gather")
gather_p.def_impl(_gather_impl)
gather_p.def_abstract_eval(_gather_abstract)
gather_p.weak_type_rule = lambda operand, *args, **params: dtypes.is_weakly_typed(operand)


def _transpose_mode(mode, of_gather: bool) -> GatherScatterMode:
    """The mode of the scatter (gather) transposing a gather (scatter) of `mode`, so that
    derivatives follow this implementation's reading of PROMISE_IN_BOUNDS: gathers clamp,
    scatters drop."""
    if mode is GatherScatterMode.PROMISE_IN_BOUNDS:
        return GatherScatterMode.CLIP if of_gather else GatherScatterMode.FILL_OR_DROP
    return mode


def _gather_to_scatter_dnums(dn: GatherDimensionNumbers) -> ScatterDimensionNumbers:
    return ScatterDimensionNumbers(
        update_window_dims=dn.offset_dims, inserted_window_dims=dn.collapsed_slice_dims,
        scatter_dims_to_operand_dims=dn.start_index_map,
        operand_batching_dims=dn.operand_batching_dims,
        scatter_indices_batching_dims=dn.start_indices_batching_dims)


def _scatter_to_gather(dn: ScatterDimensionNumbers, operand_shape, updates_shape):
    """The gather that reads back, from an operand-shaped array, the elements each update
    of a scatter with `dn` addresses: its dimension numbers and slice sizes."""
    gdn = GatherDimensionNumbers(
        offset_dims=dn.update_window_dims, collapsed_slice_dims=dn.inserted_window_dims,
        start_index_map=dn.scatter_dims_to_operand_dims,
        operand_batching_dims=dn.operand_batching_dims,
        start_indices_batching_dims=dn.scatter_indices_batching_dims)
    return gdn, _scatter_window(dn, len(operand_shape), updates_shape)


def _scatter_update_perm(dn: ScatterDimensionNumbers, updates_ndim) -> list:
    """The updates' dimensions with the scatter (batch) dimensions first, then the window's:
    so transposed, each update window's elements are contiguous, in its window's order."""
    return [d for d in range(updates_ndim) if d not in dn.update_window_dims] + \
        list(dn.update_window_dims)


def _window_offsets(shape, window) -> np.ndarray:
    """Flat offsets in a C-ordered array of `shape` of a window's elements, relative to the
    window's start, in the window's row-major order."""
    n = int(np.prod(shape, dtype=np.int64))
    return np.arange(n).reshape(shape)[tuple(slice(0, k) for k in window)].reshape(-1)


def _window_bases(shape, batch, batching) -> np.ndarray:
    """Each window's flat offset from its batching dimensions: `batching` pairs (operand dim,
    indices batch dim), along which a window sits at its own coordinate in the batch."""
    n = int(np.prod(batch, dtype=np.int64))
    strides = [int(np.prod(shape[d + 1:], dtype=np.int64)) for d in range(len(shape))]
    coords = np.indices(batch).reshape(len(batch), -1) if batch else np.zeros((0, 1), int)
    return sum((coords[idim] * strides[od] for od, idim in batching), np.zeros(n, np.int64))


def _scatter_window(dn: ScatterDimensionNumbers, rank, updates_shape) -> tuple:
    sizes = iter(updates_shape[d] for d in dn.update_window_dims)
    return tuple(1 if d in dn.inserted_window_dims or d in dn.operand_batching_dims
                 else next(sizes) for d in range(rank))


def _gather_jvp(primals, tangents, *, fill_value, **params):
    operand, indices = primals
    out = gather_p.bind(operand, indices, fill_value=fill_value, **params)
    if type(tangents[0]) is Zero:
        return out, Zero(get_aval(out).to_tangent_aval())
    # Filled (out-of-bound) windows are constants: their tangent is zero, whatever the fill.
    return out, gather_p.bind(tangents[0], indices, fill_value=0, **params)


def _gather_transpose(ct, operand, indices, *, dimension_numbers, slice_sizes, mode,
                      fill_value, unique_indices, indices_are_sorted):
    if type(ct) is Zero or not is_undefined_primal(operand):
        return [None, None]
    aval = operand.aval
    zeros = full(aval.shape, 0, aval.dtype)
    return [scatter_add_p.bind(zeros, indices, ct,
                               dimension_numbers=_gather_to_scatter_dnums(dimension_numbers),
                               indices_are_sorted=indices_are_sorted,
                               unique_indices=unique_indices,
                               mode=_transpose_mode(mode, of_gather=True)), None]


def _shift(dims, k=1) -> tuple:
    return tuple(d + k for d in dims)


def _gather_batch(vals, dims, *, dimension_numbers, slice_sizes, **params):
    (operand, indices), (od, idd) = vals, dims
    dn = dimension_numbers
    if idd is None:
        # The batch axis is one more (whole) window dimension, placed first in the output.
        operand = batching.moveaxis(operand, od, 0)
        size = get_aval(operand).shape[0]
        new = GatherDimensionNumbers(
            offset_dims=(0,) + _shift(dn.offset_dims),
            collapsed_slice_dims=_shift(dn.collapsed_slice_dims),
            start_index_map=_shift(dn.start_index_map),
            operand_batching_dims=_shift(dn.operand_batching_dims),
            start_indices_batching_dims=dn.start_indices_batching_dims)
        return gather_p.bind(operand, indices, dimension_numbers=new,
                             slice_sizes=(size,) + tuple(slice_sizes), **params), 0
    indices = batching.moveaxis(indices, idd, 0)
    if od is None:
        # A leading batch dimension of the indices is the output's first batch dimension.
        new = dn._replace(offset_dims=_shift(dn.offset_dims),
                          start_indices_batching_dims=_shift(dn.start_indices_batching_dims))
        return gather_p.bind(operand, indices, dimension_numbers=new,
                             slice_sizes=tuple(slice_sizes), **params), 0
    operand = batching.moveaxis(operand, od, 0)
    new = GatherDimensionNumbers(
        offset_dims=_shift(dn.offset_dims),
        collapsed_slice_dims=_shift(dn.collapsed_slice_dims),
        start_index_map=_shift(dn.start_index_map),
        operand_batching_dims=(0,) + _shift(dn.operand_batching_dims),
        start_indices_batching_dims=(0,) + _shift(dn.start_indices_batching_dims))
    return gather_p.bind(operand, indices, dimension_numbers=new,
                         slice_sizes=(1,) + tuple(slice_sizes), **params), 0


ad.primitive_jvps[gather_p] = _gather_jvp
ad.primitive_transposes[gather_p] = _gather_transpose
batching.primitive_batchers[gather_p] = _gather_batch


def gather(operand, start_indices, dimension_numbers: GatherDimensionNumbers, slice_sizes, *,
           unique_indices: bool = False, indices_are_sorted: bool = False, mode=None,
           fill_value=None):
    """lax.gather: one window of `slice_sizes` per index vector of `start_indices` (whose last
    dimension is the index vector). `mode` None means FILL_OR_DROP, as in JAX; `fill_value`
    (for FILL_OR_DROP) defaults to NaN, the dtype's minimum (signed), maximum (unsigned) or
    True."""
    dn = GatherDimensionNumbers(*(_ints(f) for f in dimension_numbers))
    if fill_value is not None:
        fill_value = np.asarray(fill_value).item()
    params = dict(dimension_numbers=dn, slice_sizes=_ints(slice_sizes),
                  mode=GatherScatterMode.from_any(mode), fill_value=fill_value,
                  unique_indices=bool(unique_indices), indices_are_sorted=bool(indices_are_sorted))
    _gather_abstract(get_aval(operand), get_aval(start_indices), **params)
    return gather_p.bind(operand, start_indices, **params)


# --- scatter family --------------------------------------------------------------------------

def _scatter_set(view, index, updates):
    view[index] = updates  # with repeated indices the last update wins


_SCATTER_COMBINE = {"scatter": _scatter_set, "scatter-add": np.add.at,
                    "scatter-sub": np.subtract.at, "scatter-mul": np.multiply.at,
                    "scatter-min": np.minimum.at, "scatter-max": np.maximum.at}


def _make_scatter_impl(combine):
    def impl(operand, indices, updates, *, dimension_numbers, indices_are_sorted,
             unique_indices, mode):
        dn = dimension_numbers
        rank = operand.ndim
        batch = indices.shape[:-1]
        if rank == 0:  # every update combines into the scalar itself
            out = np.array(operand, copy=True).reshape(1)
            combine(out, (np.zeros(updates.size, np.intp),), updates.reshape(-1))
            return out.reshape(())
        window = _scatter_window(dn, rank, updates.shape)
        upd = np.transpose(updates, _scatter_update_perm(dn, updates.ndim))
        n = int(np.prod(batch, dtype=np.int64))
        upd = upd.reshape((n,) + window)
        starts, valid = _window_starts(operand.shape, indices, dn.scatter_dims_to_operand_dims,
                                       dn.operand_batching_dims,
                                       dn.scatter_indices_batching_dims, window,
                                       mode is not GatherScatterMode.CLIP)
        starts = starts.reshape(n, rank)
        if valid is not None and not valid.all():
            keep = valid.reshape(n)
            starts, upd = starts[keep], upd[keep]
        out = np.array(operand, copy=True)
        if starts.shape[0]:
            perm, index = _window_index(operand.shape, starts, window)
            combine(np.transpose(out, perm), index, np.transpose(upd, [0] + [1 + d for d in perm]))
        return out
    return impl


def _scatter_abstract(operand, indices, updates, *, dimension_numbers, indices_are_sorted,
                      unique_indices, mode, _name):
    dn = dimension_numbers
    _check_indices(_name, indices, dn.scatter_dims_to_operand_dims, operand,
                   "scatter_dims_to_operand_dims")
    if updates.dtype != operand.dtype:
        raise TypeError(f"{_name} requires the operand and updates to have the same dtype, got "
                        f"{operand.dtype.name} and {updates.dtype.name}.")
    _check_sorted_dims(_name, "update_window_dims", dn.update_window_dims, updates.ndim,
                       "updates")
    _check_sorted_dims(_name, "inserted_window_dims", dn.inserted_window_dims, operand.ndim,
                       "operand")
    _check_sorted_dims(_name, "operand_batching_dims", dn.operand_batching_dims, operand.ndim,
                       "operand")
    _check_batching_dims(_name, operand, indices, dn.operand_batching_dims,
                         dn.scatter_indices_batching_dims,
                         ("operand_batching_dims", "scatter_indices_batching_dims"))
    if len(dn.update_window_dims) + len(dn.inserted_window_dims) + \
            len(dn.operand_batching_dims) != operand.ndim or \
            set(dn.inserted_window_dims) & set(dn.operand_batching_dims):
        raise TypeError(f"{_name}: update_window_dims {dn.update_window_dims}, "
                        f"inserted_window_dims {dn.inserted_window_dims} and "
                        f"operand_batching_dims {dn.operand_batching_dims} must account for "
                        f"each dimension of the operand of shape {shape_str(operand.shape)} "
                        f"exactly once.")
    scatter_sizes = tuple(s for d, s in enumerate(updates.shape)
                          if d not in dn.update_window_dims)
    if scatter_sizes != indices.shape[:-1]:
        raise TypeError(f"{_name}: the updates' scatter dimensions {shape_str(scatter_sizes)} "
                        f"(updates of shape {shape_str(updates.shape)}, update_window_dims "
                        f"{dn.update_window_dims}) must equal the batch dimensions "
                        f"{shape_str(indices.shape[:-1])} of the indices of shape "
                        f"{shape_str(indices.shape)}.")
    window = _scatter_window(dn, operand.ndim, updates.shape)
    if any(w > n for w, n in zip(window, operand.shape)):
        raise TypeError(f"{_name}: the update window {shape_str(window)} does not fit in the "
                        f"operand of shape {shape_str(operand.shape)}.")
    return ShapedArray(operand.shape, operand.dtype, operand.weak_type)


def _scatter_batch(prim, vals, dims, *, dimension_numbers, **params):
    (operand, indices, updates), (od, idd, ud) = vals, dims
    dn = dimension_numbers
    size = next(get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not None)
    operand = batching.bdim_at_front(operand, od, size)
    updates = batching.bdim_at_front(updates, ud, size)
    if idd is None:
        # The batch axis is one more (whole) window dimension of every update.
        new = ScatterDimensionNumbers(
            update_window_dims=(0,) + _shift(dn.update_window_dims),
            inserted_window_dims=_shift(dn.inserted_window_dims),
            scatter_dims_to_operand_dims=_shift(dn.scatter_dims_to_operand_dims),
            operand_batching_dims=_shift(dn.operand_batching_dims),
            scatter_indices_batching_dims=dn.scatter_indices_batching_dims)
        return prim.bind(operand, indices, updates, dimension_numbers=new, **params), 0
    indices = batching.bdim_at_front(indices, idd, size)
    new = ScatterDimensionNumbers(
        update_window_dims=_shift(dn.update_window_dims),
        inserted_window_dims=_shift(dn.inserted_window_dims),
        scatter_dims_to_operand_dims=_shift(dn.scatter_dims_to_operand_dims),
        operand_batching_dims=(0,) + _shift(dn.operand_batching_dims),
        scatter_indices_batching_dims=(0,) + _shift(dn.scatter_indices_batching_dims))
    return prim.bind(operand, indices, updates, dimension_numbers=new, **params), 0


def _scatter_primitive(name: str) -> Primitive:
    prim = Primitive(name)
    prim.def_impl(_make_scatter_impl(_SCATTER_COMBINE[name]))
    prim.def_abstract_eval(lambda *avals, **params: _scatter_abstract(*avals, _name=name,
                                                                       **params))
    prim.weak_type_rule = lambda operand, *args, **params: dtypes.is_weakly_typed(operand)
    batching.primitive_batchers[prim] = lambda vals, dims, **params: _scatter_batch(
        prim, vals, dims, **params)
    return prim


def _tangent_zero(out):
    return Zero(get_aval(out).to_tangent_aval())


def _zeros(aval):
    return full(aval.shape, 0, aval.dtype)


def _inexact(x) -> bool:
    return dtypes.is_inexact(get_aval(x).dtype)


# scatter-add: linear in the operand and the updates.

scatter_add_p = _scatter_primitive("scatter-add")


def _scatter_add_transpose(ct, operand, indices, updates, *, dimension_numbers,
                           indices_are_sorted, unique_indices, mode):
    if type(ct) is Zero:
        return [None, None, None]
    ct_operand = ct if is_undefined_primal(operand) else None
    ct_updates = None
    if is_undefined_primal(updates):
        gdn, slice_sizes = _scatter_to_gather(dimension_numbers, _aval(operand).shape,
                                              updates.aval.shape)
        ct_updates = gather_p.bind(ct, indices, dimension_numbers=gdn, slice_sizes=slice_sizes,
                                   mode=_transpose_mode(mode, of_gather=False), fill_value=0,
                                   unique_indices=unique_indices,
                                   indices_are_sorted=indices_are_sorted)
    return [ct_operand, None, ct_updates]


ad.deflinear(scatter_add_p, _scatter_add_transpose, linear_args=(0, 2))


# scatter-sub: operand minus the updates at the windows (repeated indices subtract again);
# linear in the operand and the updates.

scatter_sub_p = _scatter_primitive("scatter-sub")


def _scatter_sub_transpose(ct, operand, indices, updates, **params):
    ct_operand, _, ct_updates = _scatter_add_transpose(ct, operand, indices, updates, **params)
    return [ct_operand, None, None if ct_updates is None else neg(ct_updates)]


ad.deflinear(scatter_sub_p, _scatter_sub_transpose, linear_args=(0, 2))


# scatter (set): linear in (operand, updates) together when the indices are unique.

scatter_p = _scatter_primitive("scatter")


def _scatter_jvp(primals, tangents, **params):
    operand, indices, updates = primals
    g_operand, _, g_updates = tangents
    out = scatter_p.bind(operand, indices, updates, **params)
    if (type(g_operand) is Zero and type(g_updates) is Zero) or not _inexact(operand):
        return out, _tangent_zero(out)
    g_operand, g_updates = ad.instantiate_zeros(g_operand), ad.instantiate_zeros(g_updates)
    if params["unique_indices"]:
        return out, scatter_p.bind(g_operand, indices, g_updates, **params)
    # With repeated indices one update wins each element: find which by scattering a distinct
    # id per update the same way, then combine the winners' tangents with a scatter-add.
    dn = params["dimension_numbers"]
    op_aval, upd_aval = get_aval(operand), get_aval(updates)
    scatter_dims = tuple(d for d in range(upd_aval.ndim) if d not in dn.update_window_dims)
    scatter_shape = tuple(upd_aval.shape[d] for d in scatter_dims)
    id_dtype = dtypes.default_int_dtype()
    ids = add(iota(id_dtype, int(np.prod(scatter_shape, dtype=np.int64))),
              full((), 1, id_dtype))
    ids = broadcast_in_dim(reshape(ids, scatter_shape), upd_aval.shape, scatter_dims)
    scattered_ids = scatter_p.bind(full(op_aval.shape, 0, id_dtype), indices, ids, **params)
    gdn, slice_sizes = _scatter_to_gather(dn, op_aval.shape, upd_aval.shape)
    won = eq(ids, gather_p.bind(scattered_ids, indices, dimension_numbers=gdn,
                                slice_sizes=slice_sizes, fill_value=0,
                                mode=_transpose_mode(params["mode"], of_gather=False),
                                unique_indices=False,
                                indices_are_sorted=params["indices_are_sorted"]))
    kept = eq(scattered_ids, full((), 0, id_dtype))
    g_kept = select(kept, g_operand, _zeros(op_aval))
    g_won = select(won, g_updates, _zeros(upd_aval))
    return out, scatter_add_p.bind(g_kept, indices, g_won, **params)


def _scatter_transpose(ct, operand, indices, updates, *, dimension_numbers, indices_are_sorted,
                       unique_indices, mode):
    if not unique_indices:
        raise NotImplementedError("scatter transpose is only implemented where "
                                  "unique_indices=True")
    if type(ct) is Zero:
        return [None, None, None]
    upd_aval = _aval(updates)
    params = dict(dimension_numbers=dimension_numbers, indices_are_sorted=indices_are_sorted,
                  unique_indices=unique_indices, mode=mode)
    ct_operand = ct_updates = None
    if is_undefined_primal(operand):
        ct_operand = scatter_p.bind(ct, indices, _zeros(upd_aval), **params)
    if is_undefined_primal(updates):
        gdn, slice_sizes = _scatter_to_gather(dimension_numbers, _aval(operand).shape,
                                              upd_aval.shape)
        ct_updates = gather_p.bind(ct, indices, dimension_numbers=gdn, slice_sizes=slice_sizes,
                                   mode=_transpose_mode(mode, of_gather=False), fill_value=0,
                                   unique_indices=unique_indices,
                                   indices_are_sorted=indices_are_sorted)
    return [ct_operand, None, ct_updates]


ad.primitive_jvps[scatter_p] = _scatter_jvp
ad.primitive_transposes[scatter_p] = _scatter_transpose


# scatter-mul: linear in the operand (for fixed updates).

scatter_mul_p = _scatter_primitive("scatter-mul")


def _scatter_mul_jvp(primals, tangents, **params):
    operand, indices, updates = primals
    g_operand, _, g_updates = tangents
    out = scatter_mul_p.bind(operand, indices, updates, **params)
    if not _inexact(operand):
        return out, _tangent_zero(out)
    tangent = _tangent_zero(out)
    if type(g_operand) is not Zero:
        tangent = scatter_mul_p.bind(g_operand, indices, updates, **params)
    if type(g_updates) is not Zero:
        if not params["unique_indices"]:
            raise NotImplementedError("scatter_mul gradients are only implemented if "
                                      "`unique_indices=True`")
        scattered = scatter_add_p.bind(_zeros(get_aval(operand)), indices, g_updates, **params)
        tangent = ad.add_tangents(tangent, mul(operand, scattered))
    return out, tangent


def _scatter_mul_transpose(ct, operand, indices, updates, **params):
    if is_undefined_primal(updates):
        raise NotImplementedError("scatter_mul is linear only in its operand; its updates "
                                  "cannot be transposed.")
    if type(ct) is Zero:
        return [None, None, None]
    return [scatter_mul_p.bind(ct, indices, updates, **params), None, None]


ad.primitive_jvps[scatter_mul_p] = _scatter_mul_jvp
ad.primitive_transposes[scatter_mul_p] = _scatter_mul_transpose


# scatter-min / scatter-max: ties share the tangent equally, as for lax.min/max.

scatter_min_p = _scatter_primitive("scatter-min")
scatter_max_p = _scatter_primitive("scatter-max")


def _scatter_extremal_jvp(prim, primals, tangents, **params):
    operand, indices, updates = primals
    g_operand, _, g_updates = tangents
    out = prim.bind(operand, indices, updates, **params)
    if (type(g_operand) is Zero and type(g_updates) is Zero) or not _inexact(operand):
        return out, _tangent_zero(out)
    g_operand, g_updates = ad.instantiate_zeros(g_operand), ad.instantiate_zeros(g_updates)
    dn, mode = params["dimension_numbers"], params["mode"]
    op_aval, upd_aval = get_aval(operand), get_aval(updates)
    dt = op_aval.dtype
    gdn, slice_sizes = _scatter_to_gather(dn, op_aval.shape, upd_aval.shape)

    def read_back(x):
        return gather_p.bind(x, indices, dimension_numbers=gdn, slice_sizes=slice_sizes,
                             mode=_transpose_mode(mode, of_gather=False), fill_value=0, unique_indices=False,
                             indices_are_sorted=params["indices_are_sorted"])

    one = full((), 1, dt)
    # An update contributes where it equals the result and was not dropped out of bounds.
    landed = read_back(full(op_aval.shape, 1, dt))
    won = convert_element_type(eq(updates, read_back(out)), dt)
    won = mul(won, landed)
    kept = convert_element_type(eq(operand, out), dt)
    count = add(scatter_add_p.bind(_zeros(op_aval), indices, won, **params), kept)
    share = div(one, maximum(count, one))
    tangent = add(mul(mul(kept, share), g_operand),
                  scatter_add_p.bind(_zeros(op_aval), indices,
                                     mul(mul(won, read_back(share)), g_updates), **params))
    return out, tangent


ad.primitive_jvps[scatter_min_p] = lambda p, t, **kw: _scatter_extremal_jvp(scatter_min_p, p, t,
                                                                             **kw)
ad.primitive_jvps[scatter_max_p] = lambda p, t, **kw: _scatter_extremal_jvp(scatter_max_p, p, t,
                                                                             **kw)


def _scatter_fn(prim: Primitive, doc: str):
    def fn(operand, scatter_indices, updates, dimension_numbers: ScatterDimensionNumbers, *,
           indices_are_sorted: bool = False, unique_indices: bool = False, mode=None):
        dn = ScatterDimensionNumbers(*(_ints(f) for f in dimension_numbers))
        params = dict(dimension_numbers=dn, indices_are_sorted=bool(indices_are_sorted),
                      unique_indices=bool(unique_indices), mode=GatherScatterMode.from_any(mode))
        _scatter_abstract(get_aval(operand), get_aval(scatter_indices), get_aval(updates),
                          _name=prim.name, **params)
        return prim.bind(operand, scatter_indices, updates, **params)
    fn.__name__ = prim.name.replace("-", "_")
    fn.__doc__ = (f"lax.{fn.__name__}: {doc} `updates` into `operand` at the windows given by "
                  f"`scatter_indices` (index vector last). `mode` None means FILL_OR_DROP.")
    return fn


scatter = _scatter_fn(scatter_p, "writes")
scatter_add = _scatter_fn(scatter_add_p, "adds")
scatter_sub = _scatter_fn(scatter_sub_p, "subtracts")
scatter_mul = _scatter_fn(scatter_mul_p, "multiplies")
scatter_min = _scatter_fn(scatter_min_p, "takes the minimum with")
scatter_max = _scatter_fn(scatter_max_p, "takes the maximum with")


# --- batched dynamic_slice / dynamic_update_slice --------------------------------------------

def _stacked_starts(starts, start_dims, size):
    """The scalar start indices (each unbatched or batched along axis 0) as one `(size, n)`
    index array, the index vector last."""
    idx_dtype = dtypes.default_int_dtype()
    cols = []
    for s, d in zip(starts, start_dims):
        s = convert_element_type(s, idx_dtype)
        s = broadcast_in_dim(s, (size,), () if d is None else (0,))
        cols.append(reshape(s, (size, 1)))
    return concatenate(cols, 1)


def batched_dynamic_slice(vals, dims, slice_sizes):
    """dynamic_slice with batched start indices, as one clamping gather (batch axis first)."""
    x, *starts = vals
    dx, *dstarts = dims
    size = next(get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not None)
    indices = _stacked_starts(starts, dstarts, size)
    rank = len(slice_sizes)
    if dx is None:
        dn = GatherDimensionNumbers(offset_dims=tuple(range(1, rank + 1)),
                                    collapsed_slice_dims=(), start_index_map=tuple(range(rank)))
        sizes = tuple(slice_sizes)
    else:
        x = batching.moveaxis(x, dx, 0)
        dn = GatherDimensionNumbers(offset_dims=tuple(range(1, rank + 1)),
                                    collapsed_slice_dims=(),
                                    start_index_map=tuple(range(1, rank + 1)),
                                    operand_batching_dims=(0,), start_indices_batching_dims=(0,))
        sizes = (1,) + tuple(slice_sizes)
    return gather(x, indices, dn, sizes, mode=GatherScatterMode.CLIP)


def batched_dynamic_update_slice(vals, dims):
    """dynamic_update_slice with batched start indices, as one clamping scatter (batch first);
    each batch element writes only its own operand, so the indices are unique."""
    x, update, *starts = vals
    dx, du, *dstarts = dims
    size = next(get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not None)
    x = batching.bdim_at_front(x, dx, size)
    update = batching.bdim_at_front(update, du, size)
    indices = _stacked_starts(starts, dstarts, size)
    rank = get_aval(x).ndim - 1
    dn = ScatterDimensionNumbers(update_window_dims=tuple(range(1, rank + 1)),
                                 inserted_window_dims=(),
                                 scatter_dims_to_operand_dims=tuple(range(1, rank + 1)),
                                 operand_batching_dims=(0,), scatter_indices_batching_dims=(0,))
    return scatter(x, indices, update, dn, unique_indices=True, indices_are_sorted=True,
                   mode=GatherScatterMode.CLIP)


# --- entry points of the jnp layer (NumPy semantics in corejax/numpy/_indexing.py) -----------

def advanced_getitem(arr, idx, mode=None, fill_value=None):
    """`arr[idx]` for any NumPy index, as jnp does it (out-of-bound reads clamp by default)."""
    from corejax.numpy import _indexing
    return _indexing.getitem(arr, idx, mode=mode, fill_value=fill_value)


def scatter_update(arr, idx, values, op, mode=None, indices_are_sorted=False,
                   unique_indices=False):
    """`arr.at[idx].<op>(values)` for op in set/add/mul/min/max/pow (out-of-bound updates are
    dropped by default)."""
    from corejax.numpy import _indexing
    return _indexing.update(arr, idx, values, op, mode=mode,
                            indices_are_sorted=indices_are_sorted, unique_indices=unique_indices)


def take(a, indices, axis=None, mode=None, fill_value=None, unique_indices=False,
         indices_are_sorted=False):
    from corejax.numpy import _indexing
    return _indexing.take(a, indices, axis=axis, mode=mode, fill_value=fill_value,
                          unique_indices=unique_indices, indices_are_sorted=indices_are_sorted)


def take_along_axis(arr, indices, axis=-1, mode=None, fill_value=None):
    from corejax.numpy import _indexing
    return _indexing.take_along_axis(arr, indices, axis, mode=mode, fill_value=fill_value)


from corejax.lax.elementwise import (  # noqa: E402
    add, mul, div, eq, neg, select, full, convert_element_type)
from corejax.lax.elementwise import max as maximum  # noqa: E402
from corejax.lax.structural import (  # noqa: E402
    broadcast_in_dim, reshape, concatenate, iota)
