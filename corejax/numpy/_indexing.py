"""NumPy indexing (`x[idx]`) and functional updates (`x.at[idx].set(v)`).

Basic indices (integers, slices, None, Ellipsis) become static slices, reversals and
reshapes; a traced integer becomes a dynamic_slice. Integer-array and boolean-mask indices
go through the gather/scatter primitives (corejax.lax.indexing).
"""
from __future__ import annotations

import numpy as np

from corejax import core, dtypes, lax
from corejax.array import Array
from corejax.core import Tracer, get_aval
from corejax.numpy._core import asarray

__all__ = []

_SCALAR_INT = (int, np.integer)


def _is_advanced(i) -> bool:
    if i is None or i is Ellipsis or isinstance(i, slice) or isinstance(i, (bool, np.bool_)):
        return False
    if isinstance(i, _SCALAR_INT):
        return False
    if isinstance(i, (list, tuple)):
        return True
    if isinstance(i, (Array, Tracer, np.ndarray)):
        return get_aval(i).ndim > 0 or get_aval(i).dtype == np.bool_
    raise TypeError(f"Indexing with {type(i).__name__} is not supported; use integers, slices, "
                    f"None, Ellipsis, or integer/boolean arrays. Got {i!r}.")


def _dims_consumed(i) -> int:
    if i is None or i is Ellipsis:
        return 0
    if isinstance(i, (np.ndarray, Array, Tracer)) and get_aval(i).dtype == np.bool_:
        return get_aval(i).ndim
    return 1


def normalize_index(idx, ndim: int) -> tuple:
    """The index as a tuple without Ellipsis: one entry per array dimension, plus Nones."""
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


def getitem(arr, idx):
    arr = asarray(arr)
    aval = get_aval(arr)
    raw = idx if isinstance(idx, tuple) else (idx,)
    if any(_is_advanced(i) for i in raw):
        from corejax.lax import indexing as lax_indexing
        return lax_indexing.advanced_getitem(arr, idx)
    idx = normalize_index(idx, aval.ndim)
    out = arr
    dim = 0  # the dimension of `out` that the next index applies to
    squeeze_dims = []
    for i in idx:
        if i is None:
            out = lax.expand_dims(out, (dim,))
            dim += 1
            continue
        n = get_aval(out).shape[dim]
        if isinstance(i, slice):
            out = _slice_dim(out, dim, i, n)
            dim += 1
        elif isinstance(i, (bool, np.bool_)):
            raise TypeError("Boolean scalar indices are not supported; use jnp.where.")
        elif isinstance(i, _SCALAR_INT):
            k = int(i)
            if not -n <= k < n:
                raise IndexError(f"index {k} is out of bounds for axis {dim} with size {n}")
            k %= n
            out = lax.slice_in_dim(out, k, k + 1, 1, dim)
            squeeze_dims.append(dim)
            dim += 1
        else:  # a scalar integer array, possibly traced
            i = asarray(i)
            if get_aval(i).dtype.kind not in "iu":
                raise IndexError(f"Indexing with a non-integer array of dtype {get_aval(i).dtype} "
                                 "is not supported.")
            k = _wrap_negative(i, n)
            starts = [lax.full((), 0, get_aval(k).dtype)] * get_aval(out).ndim
            starts[dim] = k
            sizes = list(get_aval(out).shape)
            sizes[dim] = 1
            out = lax.dynamic_slice(out, starts, sizes)
            squeeze_dims.append(dim)
            dim += 1
    return lax.squeeze(out, tuple(squeeze_dims)) if squeeze_dims else out


def _wrap_negative(i, n):
    dt = get_aval(i).dtype
    if dt.kind == "u":
        return i
    return lax.select(lax.lt(i, lax.full((), 0, dt)), lax.add(i, lax.full((), n, dt)), i)


def _slice_dim(x, dim, s: slice, n: int):
    for name in ("start", "stop", "step"):
        v = getattr(s, name)
        if isinstance(v, Tracer):
            raise IndexError(
                f"Array slice indices must have static start/stop/step to be used with NumPy "
                f"indexing syntax; found a traced {name} {v!r}. To index a statically sized array "
                f"at a dynamic position, try lax.dynamic_slice or lax.dynamic_slice_in_dim.")
    start, stop, step = slice(*(None if v is None else int(v) for v in (s.start, s.stop, s.step))
                              ).indices(n)
    if step > 0:
        if start >= stop:
            return lax.slice_in_dim(x, 0, 0, 1, dim)
        return lax.slice_in_dim(x, start, stop, step, dim)
    positions = range(start, stop, step)
    if not positions:
        return lax.slice_in_dim(x, 0, 0, 1, dim)
    first, last = positions[0], positions[-1]
    flipped = lax.rev(x, (dim,))
    return lax.slice_in_dim(flipped, n - 1 - first, n - last, -step, dim)


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
    __slots__ = ("array", "index")

    def __init__(self, array, index):
        self.array, self.index = array, index

    def get(self, *, indices_are_sorted=False, unique_indices=False, mode=None, fill_value=None):
        if mode is None or mode in ("clip", "promise_in_bounds"):
            return getitem(self.array, self.index)
        from corejax.lax import indexing as lax_indexing
        return lax_indexing.advanced_getitem(self.array, self.index, mode=mode,
                                             fill_value=fill_value)

    def set(self, values, **kw):
        return _update(self.array, self.index, values, "set", **kw)

    def add(self, values, **kw):
        return _update(self.array, self.index, values, "add", **kw)

    def subtract(self, values, **kw):
        from corejax.numpy._ufuncs import negative
        return _update(self.array, self.index, negative(values), "add", **kw)

    def multiply(self, values, **kw):
        return _update(self.array, self.index, values, "mul", **kw)

    mul = multiply

    def divide(self, values, **kw):
        from corejax.numpy._ufuncs import reciprocal
        return _update(self.array, self.index, reciprocal(values), "mul", **kw)

    def power(self, values, **kw):
        return _update(self.array, self.index, values, "pow", **kw)

    def min(self, values, **kw):
        return _update(self.array, self.index, values, "min", **kw)

    def max(self, values, **kw):
        return _update(self.array, self.index, values, "max", **kw)

    def apply(self, func, **kw):
        current = self.get()
        return _update(self.array, self.index, func(current), "set", **kw)


def _update(arr, idx, values, op, indices_are_sorted=False, unique_indices=False, mode=None):
    from corejax.lax import indexing as lax_indexing
    arr = asarray(arr)
    return lax_indexing.scatter_update(arr, idx, values, op, mode=mode)
