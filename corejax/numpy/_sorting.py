"""Sorting: jnp.sort, argsort, and the functions built on them."""
from __future__ import annotations

import operator

import numpy as np

from corejax import dtypes, lax
from corejax.core import get_aval
from corejax.lax import sorting
from corejax.numpy._core import asarray, canonicalize_axis

__all__ = []


def _flat_axis(a, axis):
    a = asarray(a)
    if axis is None:
        return lax.reshape(a, (get_aval(a).size,)), 0
    return a, canonicalize_axis(axis, get_aval(a).ndim)


def sort(a, axis=-1, *, kind=None, order=None, stable=True, descending=False):
    """A sorted copy of `a` along `axis` (flattened when axis is None)."""
    if order is not None:
        raise TypeError("jnp.sort does not support the 'order' argument (no structured dtypes).")
    a, axis = _flat_axis(a, axis)
    if descending:
        return lax.rev(sorting.sort(lax.rev(a, (axis,)), axis, stable), (axis,))
    return sorting.sort(a, axis, stable)


def argsort(a, axis=-1, *, kind=None, order=None, stable=True, descending=False):
    """The indices that sort `a` along `axis`; stable ties keep their original order."""
    if order is not None:
        raise TypeError("jnp.argsort does not support the 'order' argument.")
    a, axis = _flat_axis(a, axis)
    return sorting.argsort(a, axis, stable, descending)


def _moved_last(a, axis):
    from corejax.numpy._shape import moveaxis
    a = asarray(a)
    axis = canonicalize_axis(axis, get_aval(a).ndim)
    return moveaxis(a, axis, -1), axis


def _kth(kth, n):
    return canonicalize_axis(operator.index(kth), n)


def partition(a, kth, axis=-1):
    """The kth smallest element of each slice along `axis` at position kth, the smaller ones
    before it (ascending) and the larger ones after it (descending), as JAX orders them."""
    from corejax.numpy._shape import moveaxis
    a, axis = _moved_last(a, axis)
    n = get_aval(a).shape[-1]
    kth = _kth(kth, n)
    bottom = lax.neg(sorting.top_k(lax.neg(a), kth + 1)[0]) if get_aval(a).dtype.kind != "u" \
        else lax.slice_in_dim(sorting.sort(a, get_aval(a).ndim - 1), 0, kth + 1, 1, -1)
    top = sorting.top_k(a, n - kth - 1)[0]
    out = lax.concatenate([bottom, top], get_aval(a).ndim - 1)
    return moveaxis(out, -1, axis)


def argpartition(a, kth, axis=-1):
    """Indices that partition `a` along `axis` (see partition): the kth+1 smallest first in
    ascending order, then the other indices in increasing index order."""
    from corejax.numpy._shape import moveaxis
    a, axis = _moved_last(a, axis)
    n = get_aval(a).shape[-1]
    kth = _kth(kth, n)
    last = get_aval(a).ndim - 1
    bottom = sorting.argsort(a, last, True)
    bottom = lax.slice_in_dim(bottom, 0, kth + 1, 1, last)
    # the rest in index order: a stable descending sort of a 1/0 "not in the bottom" mask
    rest = lax.full(get_aval(a).shape, 1, np.int32)
    from corejax.numpy._indexing import put_along_axis
    rest = put_along_axis(rest, bottom, 0, last, inplace=False)
    top = lax.slice_in_dim(sorting.argsort(rest, last, True, descending=True), 0, n - kth - 1, 1,
                           last)
    out = lax.concatenate([bottom, lax.convert_element_type(top, get_aval(bottom).dtype)], last)
    return moveaxis(out, -1, axis)


def lexsort(keys, axis=-1):
    """Indices that sort by several keys, the last key primary (stable)."""
    keys = tuple(keys) if not hasattr(keys, "shape") else tuple(keys[i] for i in range(len(keys)))
    if len(keys) == 0:
        raise TypeError("need sequence of keys with len > 0 in lexsort")
    keys = [asarray(k) for k in keys]
    if len({get_aval(k).shape for k in keys}) != 1:
        raise ValueError("all keys need to be the same shape")
    shape = get_aval(keys[0]).shape
    if not shape:
        return lax.full((), 0, dtypes.default_int_dtype())
    axis = canonicalize_axis(axis, len(shape))
    iota = lax.broadcasted_iota(dtypes.default_int_dtype(), shape, axis)
    return sorting.sort(tuple(keys[::-1]) + (iota,), axis, True, len(keys))[-1]


_SEARCH_METHODS = ("compare_all", "scan", "scan_unrolled", "sort")


def _sorts_before(x, y):
    """x < y in sort order: NaN after every number (and -0 equal to +0)."""
    from corejax.numpy._ufuncs import isnan
    if get_aval(x).dtype.kind != "f":
        return lax.lt(x, y)
    return lax.bitwise_or(lax.lt(x, y), lax.bitwise_and(isnan(y), lax.bitwise_not(isnan(x))))


def searchsorted(a, v, side="left", sorter=None, *, method="scan"):
    """Where to insert `v` into the sorted 1-D `a` to keep it sorted: the first index i with
    a[i] >= v ('left') or a[i] > v ('right'), NaN sorting last. Methods: 'scan' (a binary
    search in a loop), 'scan_unrolled' (the same, unrolled), 'compare_all' (counts all
    comparisons) and 'sort' (one sort of a and v together)."""
    from corejax.numpy._core import check_arraylike, promote_dtypes
    if side not in ("left", "right"):
        raise ValueError(f"invalid argument side={side!r}, expected 'left' or 'right'")
    if method not in _SEARCH_METHODS:
        raise ValueError(f"invalid argument method={method!r}, expected one of "
                         f"{list(_SEARCH_METHODS)}")
    check_arraylike("searchsorted", a, v)
    a, v = asarray(a), asarray(v)
    if get_aval(a).ndim != 1:
        raise ValueError("a should be 1-dimensional")
    if sorter is not None:
        from corejax.lax import indexing
        a = indexing.take(a, asarray(sorter))
    a, v = promote_dtypes(a, v)
    a = lax.convert_element_type(a, get_aval(a).dtype)
    v = lax.convert_element_type(v, get_aval(v).dtype)
    n = get_aval(a).shape[0]
    idx_dt = dtypes.default_int_dtype()
    if n == 0:
        return lax.full(get_aval(v).shape, 0, idx_dt)
    # 'left': count a[i] < v; 'right': count a[i] <= v, i.e. not v < a[i]
    goes_before = (lambda ai, q: _sorts_before(ai, q)) if side == "left" else \
        (lambda ai, q: lax.bitwise_not(_sorts_before(q, ai)))
    if method == "compare_all":
        shape = get_aval(v).shape
        a_b = lax.broadcast_in_dim(a, shape + (n,), (len(shape),))
        v_b = lax.broadcast_in_dim(v, shape + (n,), tuple(range(len(shape))))
        return lax.reduce_sum(lax.convert_element_type(goes_before(a_b, v_b), idx_dt),
                              (len(shape),))
    if method == "sort":
        return _search_by_sorting(a, v, side, idx_dt)
    return _binary_search(a, v, goes_before, method == "scan_unrolled", idx_dt)


def _binary_search(a, v, goes_before, unrolled, idx_dt):
    from corejax.lax import fori_loop, indexing
    n = get_aval(a).shape[0]
    shape = get_aval(v).shape
    one = lax.full((), 1, idx_dt)

    def step(_, bounds):
        lo, hi = bounds
        mid = lax.div(lax.add(lo, hi), lax.full((), 2, idx_dt))
        probe = indexing.take(a, lax.min(mid, lax.full((), n - 1, idx_dt)))
        right = lax.bitwise_and(goes_before(probe, v), lax.lt(lo, hi))
        return lax.select(right, lax.add(mid, one), lo), lax.select(right, hi, mid)

    bounds = (lax.full(shape, 0, idx_dt), lax.full(shape, n, idx_dt))
    steps = int(np.ceil(np.log2(n + 1)))
    if unrolled:
        for i in range(steps):
            bounds = step(i, bounds)
    else:
        bounds = fori_loop(0, steps, step, bounds)
    return bounds[0]


def _search_by_sorting(a, v, side, idx_dt):
    """One stable sort of a and v together ('left': v first, so that v precedes equal elements
    of a): a query's sorted position minus its rank among the queries counts the elements of a
    before it."""
    flat_v = lax.reshape(v, (get_aval(v).size,))
    m, n = get_aval(flat_v).shape[0], get_aval(a).shape[0]
    joined = lax.concatenate([flat_v, a] if side == "left" else [a, flat_v], 0)
    order = sorting.argsort(joined, 0, True)
    position = _inverse_permutation(order, idx_dt)
    v_pos = lax.slice_in_dim(position, 0, m, 1, 0) if side == "left" else \
        lax.slice_in_dim(position, n, n + m, 1, 0)
    rank = _inverse_permutation(sorting.argsort(flat_v, 0, True), idx_dt)
    return lax.reshape(lax.sub(v_pos, rank), get_aval(v).shape)


def _inverse_permutation(perm, idx_dt):
    n = get_aval(perm).shape[0]
    return lax.full((n,), 0, idx_dt).at[perm].set(lax.iota(idx_dt, n), unique_indices=True)


def digitize(x, bins, right=False, *, method=None):
    """The index of the bin each x falls in: bins increasing or decreasing (1-D)."""
    from corejax.numpy._core import check_arraylike
    check_arraylike("digitize", x, bins)
    x, bins = asarray(x), asarray(bins)
    if get_aval(bins).ndim != 1:
        raise ValueError(f"digitize: bins must be a 1-dimensional array; got bins of shape "
                         f"{get_aval(bins).shape}")
    n = get_aval(bins).shape[0]
    if n == 0:
        return lax.full(get_aval(x).shape, 0, dtypes.default_int_dtype())
    side = "left" if right else "right"
    method = "scan" if method is None else method
    increasing = searchsorted(bins, x, side=side, method=method)
    decreasing = lax.sub(lax.full((), n, dtypes.default_int_dtype()),
                         searchsorted(lax.rev(bins, (0,)), x, side=side, method=method))
    rising = lax.ge(lax.index_in_dim(bins, n - 1, 0, False), lax.index_in_dim(bins, 0, 0, False))
    return lax.select(lax.broadcast_in_dim(rising, get_aval(increasing).shape, ()), increasing,
                      decreasing)
