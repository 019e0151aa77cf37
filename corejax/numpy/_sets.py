"""Set routines: unique (and the array API's unique_all / unique_counts / unique_inverse /
unique_values), isin, setdiff1d, union1d, intersect1d, setxor1d. All are built on one stable
sort; under jit the output length must be given as `size` (shorter results are padded with
fill_value)."""
from __future__ import annotations

import operator
from typing import NamedTuple

import numpy as np

from corejax import core, dtypes, lax
from corejax.core import get_aval
from corejax.lax import indexing, sorting
from corejax.numpy._core import asarray, canonicalize_axis, check_arraylike, promote_dtypes
from corejax.numpy._ufuncs import isnan, where

__all__ = []

_IDX = np.int32


class _UniqueAllResult(NamedTuple):
    values: object
    indices: object
    inverse_indices: object
    counts: object


class _UniqueCountsResult(NamedTuple):
    values: object
    counts: object


class _UniqueInverseResult(NamedTuple):
    values: object
    inverse_indices: object


def _flat(x):
    x = asarray(x)
    return lax.reshape(x, (get_aval(x).size,))


def _same(a, b, equal_nan):
    """a == b elementwise, NaN equal to NaN when equal_nan."""
    eq = lax.eq(a, b)
    if equal_nan and dtypes.is_inexact(get_aval(a).dtype):
        eq = lax.bitwise_or(eq, lax.bitwise_and(isnan(a), isnan(b)))
    return eq


def _starts(sorted_rows, equal_nan):
    """True where a sorted row differs from the one before it (always True for the first).
    sorted_rows: a list of (n,) columns."""
    n = get_aval(sorted_rows[0]).shape[0]
    if n == 0:
        return lax.full((0,), True, np.bool_)
    same = None
    for col in sorted_rows:
        eq = _same(lax.slice_in_dim(col, 1, n, 1, 0), lax.slice_in_dim(col, 0, n - 1, 1, 0),
                   equal_nan)
        same = eq if same is None else lax.bitwise_and(same, eq)
    return lax.concatenate([lax.full((1,), True, np.bool_), lax.bitwise_not(same)], 0)


def _static_size(mask, size, what):
    """`size`, or the number of True entries of a concrete mask."""
    if size is not None:
        return core.concrete_or_error(operator.index, size, f"The size argument of {what} must "
                                      "be static")
    value = core.concrete_or_error(
        np.asarray, mask, f"The error arose for the first argument of {what}. To make "
        f"{what} compatible with JIT and other transforms, you can specify a concrete value for "
        "the size argument, which will determine the output size.")
    return int(value.sum())


def _compact(mask, size):
    """The positions of the first `size` True entries of a 1-D mask, and which of them exist."""
    from corejax.numpy._reductions import nonzero
    (pos,) = nonzero(mask, size=size, fill_value=0)
    count = lax.reduce_sum(lax.convert_element_type(mask, _IDX), (0,))
    return lax.convert_element_type(pos, _IDX), lax.lt(lax.iota(_IDX, size), count)


def _fill(values, valid, fill):
    """values where valid, else fill (broadcast over trailing dimensions)."""
    shape = get_aval(values).shape
    valid = lax.broadcast_in_dim(valid, shape, (0,))
    fill = lax.convert_element_type(asarray(fill), get_aval(values).dtype,
                                    weak_type=get_aval(values).weak_type)
    return where(valid, values, fill)


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *,
           equal_nan=True, size=None, fill_value=None, sorted=True):
    """The sorted unique elements of `ar` (or unique slices along `axis`), optionally with the
    index of each one's first occurrence, the inverse indices and the counts. With `size`, the
    result has exactly that length: missing values are fill_value (default: the smallest
    unique value), missing indices the first one's, missing counts 0."""
    check_arraylike("unique", ar)
    ar = asarray(ar)
    if axis is None:
        shape = get_aval(ar).shape
        rows = lax.reshape(ar, (get_aval(ar).size, 1))
        moved_shape = None
    else:
        axis = canonicalize_axis(axis, get_aval(ar).ndim)
        from corejax.numpy._shape import moveaxis
        moved = moveaxis(ar, axis, 0)
        moved_shape = get_aval(moved).shape
        rows = lax.reshape(moved, (moved_shape[0], int(np.prod(moved_shape[1:], dtype=np.int64))))
    n, m = get_aval(rows).shape
    columns = [lax.index_in_dim(rows, j, 1, keepdims=False) for j in range(m)]
    iota = lax.iota(_IDX, n)
    *sorted_cols, perm = sorting.sort(tuple(columns) + (iota,), 0, True, m) if m else (iota,)
    starts = _starts(sorted_cols, equal_nan) if m else lax.full((n,), True, np.bool_)
    k = _static_size(starts, size, "jnp.unique()")
    pos, valid = _compact(starts, k)
    if n == 0:
        values = lax.full((k, m), 0, get_aval(rows).dtype)
    else:
        values = indexing.take(rows, indexing.take(perm, pos), axis=0)
        if fill_value is None:
            fill_value = lax.index_in_dim(values, 0, 0, keepdims=False) if k else 0
        values = _fill(values, valid, fill_value)
    if axis is None:
        out_values = lax.reshape(values, (k,))
    else:
        from corejax.numpy._shape import moveaxis
        out_values = moveaxis(lax.reshape(values, (k,) + moved_shape[1:]), 0, axis)
    if not (return_index or return_inverse or return_counts):
        return out_values
    out = [out_values]
    ranks = lax.sub(lax.cumsum(lax.convert_element_type(starts, _IDX), 0),
                    lax.full((), 1, _IDX))
    if return_index:
        first = indexing.take(perm, pos) if n else lax.full((k,), 0, _IDX)
        out.append(where(valid, first, lax.index_in_dim(first, 0, 0, False)) if k else first)
    if return_inverse:
        inverse = lax.full((n,), 0, _IDX).at[perm].set(ranks, unique_indices=True) if n else \
            lax.full((0,), 0, _IDX)
        out.append(lax.reshape(inverse, shape) if axis is None else inverse)
    if return_counts:
        out.append(lax.full((k,), 0, _IDX).at[ranks].add(lax.full((n,), 1, _IDX), mode="drop")
                   if n else lax.full((k,), 0, _IDX))
    return tuple(out)


def unique_values(x, /, *, size=None, fill_value=None):
    """The unique values of x (NaNs kept distinct, as the array API specifies)."""
    return unique(x, equal_nan=False, size=size, fill_value=fill_value)


def unique_counts(x, /, *, size=None, fill_value=None):
    values, counts = unique(x, return_counts=True, equal_nan=False, size=size,
                            fill_value=fill_value)
    return _UniqueCountsResult(values, counts)


def unique_inverse(x, /, *, size=None, fill_value=None):
    values, inverse = unique(x, return_inverse=True, equal_nan=False, size=size,
                             fill_value=fill_value)
    return _UniqueInverseResult(values, inverse)


def unique_all(x, /, *, size=None, fill_value=None):
    values, indices, inverse, counts = unique(x, True, True, True, equal_nan=False, size=size,
                                              fill_value=fill_value)
    return _UniqueAllResult(values, indices, inverse, counts)


_ISIN_METHODS = ("compare_all", "binary_search", "sort", "auto")


def isin(element, test_elements, assume_unique=False, invert=False, *, method="auto"):
    """Whether each element is among test_elements (compared after promotion; NaN matches
    nothing). Methods: 'compare_all' (every pair), 'binary_search' (searchsorted in the sorted
    test elements), 'sort' (one sort of both), 'auto' (compare_all for small inputs)."""
    if method not in _ISIN_METHODS:
        raise ValueError(f"method={method!r} is not implemented; options are 'compare_all', "
                         "'binary_search', 'sort', and 'auto'")
    check_arraylike("isin", element, test_elements)
    element, test_elements = promote_dtypes(element, test_elements)
    shape = get_aval(element).shape
    e, t = _flat(element), _flat(test_elements)
    ne, nt = get_aval(e).shape[0], get_aval(t).shape[0]
    if method == "auto":
        method = "compare_all" if ne * nt <= (1 << 16) else "binary_search"
    if nt == 0:
        found = lax.full((ne,), False, np.bool_)
    elif method == "compare_all":
        eq = lax.eq(lax.broadcast_in_dim(e, (ne, nt), (0,)), lax.broadcast_in_dim(t, (ne, nt),
                                                                                  (1,)))
        found = lax.reduce_or(eq, (1,))
    elif method == "binary_search":
        from corejax.numpy._sorting import searchsorted
        st = sorting.sort(t, 0)
        i = lax.min(searchsorted(st, e), lax.full((), nt - 1, get_aval(
            searchsorted(st, e)).dtype))
        found = lax.eq(indexing.take(st, i), e)
    else:
        found = _isin_by_sorting(e, t)
    if invert:
        found = lax.bitwise_not(found)
    return lax.reshape(found, shape)


def _isin_by_sorting(e, t):
    """Sort tests and elements together (tests first among equals): an element is found iff
    the first entry of its run of equal values is a test element."""
    from corejax.lax import associative_scan
    ne, nt = get_aval(e).shape[0], get_aval(t).shape[0]
    values = lax.concatenate([t, e], 0)
    is_elem = lax.concatenate([lax.full((nt,), 0, _IDX), lax.full((ne,), 1, _IDX)], 0)
    order = lax.iota(_IDX, nt + ne)
    s, flag, origin = sorting.sort((values, is_elem, order), 0, True, 2)
    n = nt + ne
    new_run = lax.concatenate([lax.full((1,), True, np.bool_), lax.ne(
        lax.slice_in_dim(s, 1, n, 1, 0), lax.slice_in_dim(s, 0, n - 1, 1, 0))], 0)
    run_start = associative_scan(lax.max, where(new_run, lax.iota(_IDX, n),
                                                lax.full((), 0, _IDX)))
    found_sorted = lax.eq(indexing.take(flag, run_start), lax.full((), 0, _IDX))
    found = lax.full((n,), False, np.bool_).at[origin].set(found_sorted, unique_indices=True)
    return lax.slice_in_dim(found, nt, n, 1, 0)


def _set_result(values, mask, size, fill_value, what, default_fill):
    k = _static_size(mask, size, what)
    pos, valid = _compact(mask, k)
    out = indexing.take(values, pos) if get_aval(values).shape[0] else lax.full(
        (k,), 0, get_aval(values).dtype)
    if fill_value is None:
        fill_value = default_fill(out, valid, k)
    return _fill(out, valid, fill_value) if k else out


def _zero_fill(out, valid, k):
    return 0


def _smallest_or_zero(out, valid, k):
    """The minimum of the result (NaN if it holds a NaN), or 0 for an empty result."""
    from corejax.numpy._reductions import min as _min
    dt = get_aval(out).dtype
    top = np.inf if dtypes.is_inexact(dt) else np.iinfo(dt).max
    smallest = _min(where(valid, out, lax.full((), top, dt)))
    return where(lax.index_in_dim(valid, 0, 0, keepdims=False), smallest, lax.full((), 0, dt))


def _sorted_with_starts(x, equal_nan=True):
    s = sorting.sort(x, 0)
    return s, _starts([s], equal_nan)


def setdiff1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    """The unique values of ar1 that are not in ar2, sorted (in ar1's order if assume_unique).
    Padding with `size` uses fill_value (default 0)."""
    check_arraylike("setdiff1d", ar1, ar2)
    ar1, ar2 = _flat(ar1), _flat(ar2)
    if assume_unique:
        values, keep = ar1, lax.full(get_aval(ar1).shape, True, np.bool_)
    else:
        values, keep = _sorted_with_starts(ar1)
    mask = lax.bitwise_and(keep, isin(values, ar2, invert=True))
    return _set_result(values, mask, size, fill_value, "jnp.setdiff1d()", _zero_fill)


def union1d(ar1, ar2, *, size=None, fill_value=None):
    """The sorted unique values in either array (padding: the smallest value)."""
    check_arraylike("union1d", ar1, ar2)
    ar1, ar2 = promote_dtypes(_flat(ar1), _flat(ar2))
    return unique(lax.concatenate([ar1, ar2], 0), size=size, fill_value=fill_value)


def setxor1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    """The sorted values in exactly one of the arrays (padding: the smallest such value, or 0
    if there is none)."""
    check_arraylike("setxor1d", ar1, ar2)
    ar1, ar2 = promote_dtypes(_flat(ar1), _flat(ar2))
    # each array's duplicates are marked absent; sorting by (value, absent) puts the present
    # entries first in every run of equal values, so a value is in exactly one array iff its
    # run starts with a present entry not followed by another present one
    parts = [_sorted_with_starts(a) if not assume_unique else
             (a, lax.full(get_aval(a).shape, True, np.bool_)) for a in (ar1, ar2)]
    values = lax.concatenate([parts[0][0], parts[1][0]], 0)
    present = lax.concatenate([parts[0][1], parts[1][1]], 0)
    absent = lax.convert_element_type(lax.bitwise_not(present), _IDX)
    s, _, p = sorting.sort((values, absent, present), 0, True, 2)
    n = get_aval(s).shape[0]
    if n == 0:
        return _set_result(s, p, size, fill_value, "jnp.setxor1d()", _smallest_or_zero)
    true1 = lax.full((1,), True, np.bool_)
    differs = lax.ne(lax.slice_in_dim(s, 1, n, 1, 0), lax.slice_in_dim(s, 0, n - 1, 1, 0))
    starts_run = lax.concatenate([true1, differs], 0)
    next_absent = lax.concatenate([lax.bitwise_or(differs, lax.bitwise_not(
        lax.slice_in_dim(p, 1, n, 1, 0))), true1], 0)
    mask = lax.bitwise_and(p, lax.bitwise_and(starts_run, next_absent))
    return _set_result(s, mask, size, fill_value, "jnp.setxor1d()", _smallest_or_zero)


def intersect1d(ar1, ar2, assume_unique=False, return_indices=False, *, size=None,
                fill_value=None):
    """The sorted values in both arrays, optionally with the indices of their first
    occurrences in each (padding: values with fill_value, default the smallest common value
    or 0; indices with each array's length). Both arrays' values are sorted together (ar1's
    first among equals): a common value is a present entry of ar1 followed by an equal present
    entry of ar2 (with assume_unique every entry is present, as JAX and NumPy assume)."""
    check_arraylike("intersect1d", ar1, ar2)
    ar1, ar2 = promote_dtypes(_flat(ar1), _flat(ar2))
    n1, n2 = get_aval(ar1).shape[0], get_aval(ar2).shape[0]
    parts = []
    for a, offset in ((ar1, 0), (ar2, n1)):
        n = get_aval(a).shape[0]
        if assume_unique:
            parts.append((a, lax.full((n,), True, np.bool_), lax.iota(_IDX, n)))
            continue
        perm = sorting.argsort(a, 0, True) if n else lax.full((0,), 0, _IDX)
        s = indexing.take(a, perm) if n else a
        parts.append((s, _starts([s], False), lax.convert_element_type(perm, _IDX)))
    values = lax.concatenate([parts[0][0], parts[1][0]], 0)
    present = lax.concatenate([parts[0][1], parts[1][1]], 0)
    origin = lax.concatenate([parts[0][2], lax.add(parts[1][2], lax.full((), n1, _IDX))], 0)
    absent = lax.convert_element_type(lax.bitwise_not(present), _IDX)
    s, _, p, o = sorting.sort((values, absent, present, origin), 0, True, 2)
    n = n1 + n2
    if n < 2:
        return _intersection(s[:0], o[:0], o[:0], lax.full((0,), True, np.bool_), size,
                             fill_value, return_indices, n1, n2)
    head = lambda x: lax.slice_in_dim(x, 0, n - 1, 1, 0)
    tail = lambda x: lax.slice_in_dim(x, 1, n, 1, 0)
    mask = lax.bitwise_and(lax.eq(head(s), tail(s)),
                           lax.bitwise_and(head(p), tail(p)))
    return _intersection(head(s), head(o), lax.sub(tail(o), lax.full((), n1, _IDX)), mask,
                         size, fill_value, return_indices, n1, n2)


def _intersection(values, idx1, idx2, mask, size, fill_value, return_indices, n1, n2):
    out = _set_result(values, mask, size, fill_value, "jnp.intersect1d()", _smallest_or_zero)
    if not return_indices:
        return out
    k = get_aval(out).shape[0]
    pos, valid = _compact(mask, k)
    pick = lambda idx, fill: where(valid, indexing.take(idx, pos), lax.full((), fill, _IDX)) \
        if get_aval(idx).shape[0] else lax.full((k,), fill, _IDX)
    return out, pick(idx1, n1), pick(idx2, n2)
