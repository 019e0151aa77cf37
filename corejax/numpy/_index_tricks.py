"""Index tricks: r_, c_, mgrid, ogrid, s_, index_exp, and the index helpers fill_diagonal,
diag_indices_from, tril_indices_from, triu_indices_from and mask_indices."""
from __future__ import annotations

import builtins
import operator

import numpy as np

from corejax import core, lax
from corejax.core import get_aval
from corejax.numpy._core import asarray, check_arraylike, promote_dtypes
from corejax.numpy._creation import arange, linspace, ones
from corejax.numpy._indexing import diag_indices, tril_indices, triu_indices
from corejax.numpy._shape import concatenate, meshgrid, reshape, stack, transpose

__all__ = []

s_ = np.s_
index_exp = np.index_exp


def _slice_values(s: slice):
    """The values a slice stands for in mgrid / ogrid / r_: arange(start, stop, step), or
    linspace(start, stop, n) for an imaginary step n*j (stop included)."""
    start = 0 if s.start is None else s.start
    step = 1 if s.step is None else s.step
    if s.stop is None:
        raise ValueError("a slice in an index trick needs a stop value")
    start, stop, step = (core.concrete_or_error(
        lambda v: v, v, "slice bounds in jnp.mgrid / ogrid / r_ must be static")
        for v in (start, s.stop, step))
    if isinstance(step, complex) or np.iscomplexobj(step):
        return linspace(start, stop, int(builtins.abs(step)), endpoint=True)
    return arange(start, stop, step)


class _Grid:
    """mgrid (dense) and ogrid (sparse): `grid[a:b:c, ...]` gives coordinate arrays."""

    def __init__(self, sparse: bool, name: str):
        self.sparse, self.name = sparse, name

    def __getitem__(self, key):
        if isinstance(key, slice):
            return _slice_values(key)
        if not isinstance(key, tuple):
            raise TypeError(f"'{type(key).__name__}' object is not iterable: jnp.{self.name} "
                            f"takes slices, e.g. jnp.{self.name}[0:3, 0:4]")
        axes = promote_dtypes(*[_slice_values(k) for k in key])
        if not axes:
            return asarray(np.zeros((0,), np.int32))
        grids = meshgrid(*axes, indexing="ij", sparse=self.sparse)
        return list(grids) if self.sparse else stack(grids, 0)

    def __repr__(self):
        return f"jnp.{self.name}"


mgrid = _Grid(False, "mgrid")
ogrid = _Grid(True, "ogrid")


class _Concatenator:
    """r_ and c_: concatenate slices, scalars and arrays along an axis. A leading string sets
    the axis, the minimum rank and where a lower-rank item's own axes go ("axis,ndmin,trans1d"),
    or 'r' / 'c' for a row / column matrix."""

    def __init__(self, axis, ndmin, trans1d, name):
        self.axis, self.ndmin, self.trans1d, self.name = axis, ndmin, trans1d, name

    def __getitem__(self, key):
        items = key if isinstance(key, tuple) else (key,)
        axis, ndmin, trans1d, matrix = self.axis, self.ndmin, self.trans1d, None
        if items and isinstance(items[0], str):
            directive, items = items[0], items[1:]
            if directive in ("r", "c"):
                matrix = directive
            else:
                axis, ndmin, trans1d = self._parse(directive, ndmin, trans1d)
        if not items:
            raise IndexError(f"jnp.{self.name} needs at least one item to concatenate")
        arrays = []
        for item in items:
            if isinstance(item, str):
                raise ValueError(f"jnp.{self.name}: a directive string must come first, got "
                                 f"{item!r}")
            if isinstance(item, slice):
                arr = _slice_values(item)
                if ndmin > 1:
                    arr = _at_least(arr, ndmin, -1)
                    if trans1d != -1:
                        arr = _swap_last(arr, trans1d)
            else:
                arr = _at_least(asarray(item), ndmin, trans1d)
            arrays.append(arr)
        out = concatenate(promote_dtypes(*arrays), axis)
        if matrix is not None:
            out = reshape(out, (1, -1)) if get_aval(out).ndim < 2 else out
            if matrix == "c":
                out = transpose(out)
        return out

    def _parse(self, directive, ndmin, trans1d):
        try:
            parts = [int(p) for p in directive.split(",")]
        except ValueError:
            raise ValueError(f"jnp.{self.name}: unknown directive {directive!r}; use 'r', 'c' or "
                             "'axis[,ndmin[,trans1d]]'") from None
        if len(parts) > 3:
            raise ValueError(f"jnp.{self.name}: the directive {directive!r} has more than three "
                             "entries")
        axis = parts[0]
        ndmin = parts[1] if len(parts) > 1 else ndmin
        trans1d = parts[2] if len(parts) > 2 else trans1d
        return axis, ndmin, trans1d

    def __len__(self):
        return 0

    def __repr__(self):
        return f"jnp.{self.name}"


def _at_least(arr, ndmin, trans1d):
    """`arr` with leading unit axes up to rank ndmin; then its own axes are moved to start at
    position trans1d (NumPy's rule for r_ / c_ items)."""
    nd = get_aval(arr).ndim
    if nd >= ndmin:
        return arr
    arr = reshape(arr, (1,) * (ndmin - nd) + get_aval(arr).shape)
    if trans1d == -1:
        return arr
    k2 = ndmin - nd
    k1 = trans1d + k2 + 1 if trans1d < 0 else trans1d
    axes = list(range(ndmin))
    return transpose(arr, axes[:k1] + axes[k2:] + axes[k1:k2])


def _swap_last(arr, axis):
    perm = list(range(get_aval(arr).ndim))
    perm[-1], perm[axis] = perm[axis], perm[-1]
    return transpose(arr, perm)


r_ = _Concatenator(0, 1, -1, "r_")
c_ = _Concatenator(-1, 2, 0, "c_")


def fill_diagonal(a, val, wrap=False, *, inplace=True):
    """`a` with its main diagonal set to `val` (cycled if shorter). Returns a new array:
    inplace=False is required."""
    if inplace:
        raise NotImplementedError("JAX arrays are immutable, must use inplace=False")
    if wrap:
        raise NotImplementedError("wrap=True is not implemented, must use wrap=False")
    check_arraylike("fill_diagonal", a, val)
    a = asarray(a)
    shape = get_aval(a).shape
    if len(shape) < 2:
        raise ValueError("array must be at least 2-d")
    if len(shape) > 2 and len(set(shape)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    n = builtins.min(shape)
    from corejax.numpy._arrangement import resize
    values = resize(lax.convert_element_type(asarray(val), get_aval(a).dtype), (n,))
    idx = lax.iota(np.int32, n)
    return a.at[(idx,) * len(shape)].set(values)


def diag_indices_from(arr):
    """The indices of the main diagonal of a square (all sides equal) array."""
    check_arraylike("diag_indices_from", arr)
    shape = get_aval(asarray(arr)).shape
    if len(shape) < 2:
        raise ValueError("input array must be at least 2-d")
    if len(set(shape)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    return diag_indices(shape[0], len(shape))


def _shape_2d(arr, name):
    shape = arr.shape if hasattr(arr, "shape") else np.shape(arr)
    if len(shape) != 2:
        raise ValueError("Only 2-D inputs are accepted")
    return shape


def tril_indices_from(arr, k=0):
    n, m = _shape_2d(arr, "tril_indices_from")
    return tril_indices(n, k, m)


def triu_indices_from(arr, k=0):
    n, m = _shape_2d(arr, "triu_indices_from")
    return triu_indices(n, k, m)


def mask_indices(n, mask_func, k=0, *, size=None):
    """The indices where mask_func(ones((n, n)), k) is non-zero (e.g. jnp.triu)."""
    from corejax.numpy._reductions import nonzero
    n = operator.index(n)
    return nonzero(mask_func(ones((n, n), np.int32), k), size=size)
