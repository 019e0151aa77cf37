"""Statistics: average, quantile / percentile / median (and their NaN-ignoring forms), cov,
corrcoef, bincount and the histograms. Composed of lax only (sorts, gathers, scatter-adds)."""
from __future__ import annotations

import builtins
import operator

import numpy as np

from corejax import core, dtypes, lax
from corejax.core import get_aval
from corejax.lax import indexing, sorting
from corejax.numpy import _reductions as red
from corejax.numpy._core import (asarray, canonicalize_axes, check_arraylike,
                                 promote_dtypes_inexact)
from corejax.numpy._ufuncs import isnan, where

__all__ = []


def _strong(x):
    return lax.convert_element_type(x, get_aval(x).dtype)


# --- average ---------------------------------------------------------------------------------

def average(a, axis=None, weights=None, returned=False, keepdims=False):
    """The (weighted) mean along `axis`; with returned=True also the sum of the weights.
    Weights either match a's shape or a's shape along the given axes."""
    check_arraylike("average", a)
    a = asarray(a)
    shape = get_aval(a).shape
    axes = canonicalize_axes(axis, len(shape))
    if weights is None:
        avg = red.mean(a, axis, keepdims=keepdims)
        count = int(np.prod([shape[i] for i in axes], dtype=np.int64))
        scale = lax.full(get_aval(avg).shape, count, get_aval(avg).dtype)
    else:
        check_arraylike("average", a, weights)
        a, weights = (_strong(x) for x in promote_dtypes_inexact(a, weights))
        w_shape = get_aval(weights).shape
        if w_shape != shape:
            if axis is None:
                raise ValueError("Axis must be specified when shapes of a and weights differ.")
            if w_shape != tuple(shape[i] for i in sorted(axes)):
                raise ValueError("Shape of weights must be consistent with shape of a along "
                                 "specified axis.")
            weights = lax.broadcast_in_dim(weights, shape, tuple(sorted(axes)))
        scale = red.sum(weights, axes, keepdims=keepdims)
        avg = lax.div(red.sum(lax.mul(a, weights), axes, keepdims=keepdims), scale)
    if returned:
        from corejax.numpy._core import broadcast_to_shape
        return avg, broadcast_to_shape(scale, get_aval(avg).shape)
    return avg


# --- quantiles -------------------------------------------------------------------------------

_METHODS = ("linear", "lower", "higher", "midpoint", "nearest", "inverted_cdf")


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False,
             *, weights=None):
    """The q-th quantiles (q in [0, 1], a scalar or 1-D) along `axis`: methods 'linear',
    'lower', 'higher', 'midpoint', 'nearest' (ties to the lower) and 'inverted_cdf' (which
    alone takes weights). A NaN in a slice makes its quantiles NaN."""
    return _quantile("quantile", a, q, axis, out, method, keepdims, weights, ignore_nan=False)


def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=False, *, weights=None):
    """quantile of the non-NaN elements (NaN where a slice has none)."""
    return _quantile("nanquantile", a, q, axis, out, method, keepdims, weights, ignore_nan=True)


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, *, weights=None):
    """quantile with q in percent."""
    check_arraylike("percentile", a, q)
    q = lax.div(*promote_dtypes_inexact(q, 100.0))
    return quantile(a, q, axis, out, overwrite_input, method, keepdims, weights=weights)


def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                  keepdims=False, *, weights=None):
    check_arraylike("nanpercentile", a, q)
    q = lax.div(*promote_dtypes_inexact(q, 100.0))
    return nanquantile(a, q, axis, out, overwrite_input, method, keepdims, weights=weights)


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """The middle value along `axis` (the mean of the two middle values for an even count)."""
    return quantile(a, 0.5, axis, out, overwrite_input, "midpoint", keepdims)


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    return nanquantile(a, 0.5, axis, out, overwrite_input, "midpoint", keepdims)


def _gather_last(x, idx):
    """x[..., idx[j, ...]] for index arrays with a leading quantile axis."""
    nq = get_aval(idx).shape[0]
    xb = lax.broadcast_in_dim(x, (nq,) + get_aval(x).shape, tuple(range(1, get_aval(x).ndim + 1)))
    return lax.squeeze(indexing.take_along_axis(xb, lax.expand_dims(idx, (get_aval(idx).ndim,)),
                                                get_aval(xb).ndim - 1), (get_aval(xb).ndim - 1,))


def _quantile(name, a, q, axis, out, method, keepdims, weights, ignore_nan):
    if out is not None:
        raise NotImplementedError(f"The 'out' argument to jnp.{name} is not supported.")
    if method not in _METHODS:
        raise ValueError("method can only be 'linear', 'lower', 'higher', 'midpoint', "
                         "'nearest' or 'inverted_cdf'")
    if weights is not None and method != "inverted_cdf":
        raise NotImplementedError(f"{method} doesn't support weights. Only method "
                                  "'inverted_cdf' supports weights.")
    check_arraylike(name, a, q)
    a, q = (_strong(x) for x in promote_dtypes_inexact(a, q))
    if get_aval(q).ndim > 1:
        raise ValueError(f"q must be have rank <= 1, got shape {get_aval(q).shape}")
    shape = get_aval(a).shape
    axes = canonicalize_axes(axis, len(shape))
    if weights is not None:
        weights = _quantile_weights(asarray(weights), shape, axis, axes, get_aval(a).dtype)
    # the reduced axes, moved last and merged into one
    kept = [i for i in range(len(shape)) if i not in axes]
    batch = tuple(shape[i] for i in kept)
    n = int(np.prod([shape[i] for i in axes], dtype=np.int64))
    merge = lambda x: lax.reshape(lax.transpose(x, kept + list(axes)), batch + (n,))
    a = merge(a)
    dt = get_aval(a).dtype
    last = len(batch)
    scalar_q = get_aval(q).ndim == 0
    qs = lax.reshape(q, (1,) if scalar_q else get_aval(q).shape)
    nq = get_aval(qs).shape[0]
    q_b = lax.broadcast_in_dim(qs, (nq,) + batch, (0,))
    if method == "inverted_cdf":
        w = None if weights is None else merge(weights)
        result = _quantile_weighted(a, w, q_b, ignore_nan, last, dt)
    else:
        result = _quantile_sorted(a, q_b, method, ignore_nan, last, dt)
    if not ignore_nan:
        any_nan = lax.reduce_or(isnan(a), (last,))
        result = where(lax.broadcast_in_dim(any_nan, (nq,) + batch, tuple(range(1, last + 1))),
                       lax.full((), np.nan, dt), result)
    if keepdims:
        full_shape = tuple(1 if i in axes else shape[i] for i in range(len(shape)))
        result = lax.reshape(result, (nq,) + full_shape)
    return lax.squeeze(result, (0,)) if scalar_q else result


def _quantile_sorted(a, q_b, method, ignore_nan, last, dt):
    """Quantiles from the sorted values (NaN sorts last): positions q * (count - 1)."""
    batch = get_aval(a).shape[:last]
    n = get_aval(a).shape[last]
    nq = get_aval(q_b).shape[0]
    s = sorting.sort(a, last)
    if ignore_nan:
        count = lax.reduce_sum(lax.convert_element_type(lax.bitwise_not(isnan(a)), dt), (last,))
        count = lax.broadcast_in_dim(count, (nq,) + batch, tuple(range(1, last + 1)))
    else:
        count = lax.full((nq,) + batch, n, dt)
    top = lax.sub(count, lax.full((), 1, dt))
    pos = lax.clamp(lax.full((), 0, dt), lax.mul(q_b, top), lax.max(top, lax.full((), 0, dt)))
    low, high = lax.floor(pos), lax.ceil(pos)
    high_weight = lax.sub(pos, low)
    low_weight = lax.sub(lax.full((), 1, dt), high_weight)
    to_index = lambda p: lax.convert_element_type(p, np.int32)
    low_value, high_value = _gather_last(s, to_index(low)), _gather_last(s, to_index(high))
    if method == "linear":
        return lax.add(lax.mul(low_value, low_weight), lax.mul(high_value, high_weight))
    if method == "lower":
        return low_value
    if method == "higher":
        return high_value
    if method == "midpoint":
        return lax.mul(lax.add(low_value, high_value), lax.full((), 0.5, dt))
    return where(lax.le(high_weight, lax.full((), 0.5, dt)), low_value, high_value)


def _quantile_weighted(a, w, q_b, ignore_nan, last, dt):
    """inverted_cdf: the first sorted value whose cumulative weight reaches q times the total
    (unit weights without `weights`)."""
    batch = get_aval(a).shape[:last]
    n = get_aval(a).shape[last]
    nq = get_aval(q_b).shape[0]
    if w is None:
        w = lax.full(get_aval(a).shape, 1, dt)
    if ignore_nan:
        w = where(isnan(a), lax.full((), 0, dt), w)
    s, w = sorting.sort((a, w), last, True, 1)
    cum = lax.cumsum(w, last)
    total = lax.index_in_dim(cum, n - 1, last, keepdims=True)
    target = lax.mul(q_b, lax.broadcast_in_dim(lax.squeeze(total, (last,)), (nq,) + batch,
                                               tuple(range(1, last + 1))))
    cum_b = lax.broadcast_in_dim(cum, (nq,) + batch + (n,), tuple(range(1, last + 2)))
    below = lax.lt(cum_b, lax.broadcast_in_dim(target, (nq,) + batch + (n,),
                                              tuple(range(last + 1))))
    idx = lax.reduce_sum(lax.convert_element_type(below, np.int32), (last + 1,))
    return _gather_last(s, lax.min(idx, lax.full((), n - 1, np.int32)))


def _quantile_weights(weights, shape, axis, axes, dt):
    w_shape = get_aval(weights).shape
    if w_shape == shape:
        return lax.convert_element_type(weights, dt)
    if axis is None:
        raise ValueError("Weights shape must match 'a' shape when axis is None.")
    if len(axes) == 1 and w_shape == (shape[axes[0]],):
        return lax.broadcast_in_dim(lax.convert_element_type(weights, dt), shape, axes)
    raise ValueError(f"Weights shape {w_shape} must match 'a' shape {shape} or the length of "
                     f"the reduced axis.")


# --- covariance ------------------------------------------------------------------------------

def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None,
        dtype=None):
    """The covariance matrix of the variables in the rows of m (columns if rowvar=False),
    with optional integer frequency weights and observation weights."""
    check_arraylike("cov", m)
    m = asarray(m)
    if get_aval(m).ndim > 2:
        raise ValueError("m has more than 2 dimensions")
    x = _observations(m, rowvar, dtype)
    if y is not None:
        check_arraylike("cov", m, y)
        y = asarray(y)
        if get_aval(y).ndim > 2:
            raise ValueError("y has more than 2 dimensions")
        x = lax.concatenate([x, _observations(y, rowvar, dtype)], 0)
    if ddof is None:
        ddof = 0 if bias else 1
    n_obs = get_aval(x).shape[1]
    dt = get_aval(x).dtype
    w = None
    if fweights is not None:
        fweights = asarray(fweights)
        if get_aval(fweights).ndim > 1:
            raise RuntimeError("cannot handle multidimensional fweights")
        if get_aval(fweights).shape[0] != n_obs:
            raise RuntimeError("incompatible numbers of samples and fweights")
        if get_aval(fweights).dtype.kind not in "iu":
            raise TypeError("fweights must be integer.")
        w = lax.convert_element_type(fweights, dt)
    if aweights is not None:
        aweights = asarray(aweights)
        if get_aval(aweights).ndim > 1:
            raise RuntimeError("cannot handle multidimensional aweights")
        if get_aval(aweights).shape[0] != n_obs:
            raise RuntimeError("incompatible numbers of samples and aweights")
        aw = lax.convert_element_type(aweights, dt)
        w = aw if w is None else lax.mul(w, aw)
    avg, w_sum = average(x, axis=1, weights=w, returned=True)
    w_sum = lax.index_in_dim(w_sum, 0, 0, keepdims=False)
    if w is None:
        fact = lax.full((), n_obs - ddof, dt)
    elif ddof == 0:
        fact = w_sum
    elif aweights is None:
        fact = lax.sub(w_sum, lax.full((), ddof, dt))
    else:
        fact = lax.sub(w_sum, lax.div(lax.mul(lax.full((), ddof, dt),
                                              red.sum(lax.mul(w, aw))), w_sum))
    centered = lax.sub(x, lax.broadcast_in_dim(avg, get_aval(x).shape, (0,)))
    weighted = centered if w is None else lax.mul(
        centered, lax.broadcast_in_dim(w, get_aval(x).shape, (1,)))
    c = lax.dot_general(centered, weighted, (((1,), (1,)), ((), ())))
    c = lax.div(c, fact)
    return lax.reshape(c, tuple(d for d in get_aval(c).shape if d != 1))


def _observations(v, rowvar, dtype):
    """v as a 2-D (variables, observations) float array."""
    if dtype is not None:
        v = lax.convert_element_type(v, dtypes.canonicalize_dtype(dtype))
    (v,) = promote_dtypes_inexact(v)
    v = _strong(v)
    if get_aval(v).ndim < 2:
        v = lax.reshape(v, (1,) + get_aval(v).shape)
    if not rowvar and get_aval(v).shape[0] != 1:
        v = lax.transpose(v, (1, 0))
    return v


def corrcoef(x, y=None, rowvar=True, dtype=None):
    """Pearson correlation coefficients: the covariance matrix normalized by the standard
    deviations, clipped to [-1, 1]."""
    check_arraylike("corrcoef", x)
    c = cov(x, y, rowvar, dtype=dtype)
    if get_aval(c).ndim == 0:
        return lax.div(c, c)
    d = lax.sqrt(_diagonal(c))
    n = get_aval(d).shape[0]
    c = lax.div(c, lax.broadcast_in_dim(d, (n, n), (0,)))
    c = lax.div(c, lax.broadcast_in_dim(d, (n, n), (1,)))
    dt = get_aval(c).dtype
    return lax.clamp(lax.full((), -1, dt), c, lax.full((), 1, dt))


def _diagonal(c):
    from corejax.numpy._shape import diagonal
    return diagonal(c)


# --- counting --------------------------------------------------------------------------------

def bincount(x, weights=None, minlength=0, *, length=None, out_sharding=None):
    """Counts (or sums of weights) of each non-negative integer in x (negative values count as
    0); under jit, `length` fixes the output size (larger values are dropped)."""
    check_arraylike("bincount", x)
    x = asarray(x)
    if get_aval(x).dtype.kind not in "iub":
        raise TypeError(f"x argument to bincount must have an integer type; got "
                        f"{get_aval(x).dtype.name}")
    if get_aval(x).ndim != 1:
        raise ValueError("only 1-dimensional input supported.")
    minlength = core.concrete_or_error(operator.index, minlength,
                                       "The error occurred because of argument 'minlength' of "
                                       "jnp.bincount.")
    if length is None:
        value = core.concrete_or_error(
            np.asarray, x, "The error occurred because of argument 'x' of jnp.bincount. To "
            "avoid this error, pass a static `length` argument.")
        length = builtins.max(minlength, int(value.max()) + 1 if value.size else 0)
    else:
        length = core.concrete_or_error(operator.index, length,
                                        "The error occurred because of argument 'length' of "
                                        "jnp.bincount.")
    idx_dt = dtypes.default_int_dtype()
    x = lax.convert_element_type(x, idx_dt)
    x = lax.max(x, lax.full_like(x, 0))
    if weights is None:
        values = lax.full(get_aval(x).shape, 1, idx_dt)
    else:
        check_arraylike("bincount", x, weights)
        values = asarray(weights)
        values = _strong(lax.broadcast_in_dim(values, get_aval(x).shape, ()) if
                         get_aval(values).ndim == 0 else values)
    out = lax.full((length,), 0, get_aval(values).dtype)
    if length == 0 or get_aval(x).shape[0] == 0:
        return out
    return out.at[x].add(values, mode="drop")


def histogram_bin_edges(a, bins=10, range=None, weights=None):
    """The bin edges histogram uses: `bins` + 1 evenly spaced edges over `range` (default the
    data's min and max, widened by 0.5 each side if equal), or `bins` itself if an array."""
    check_arraylike("histogram_bin_edges", a)
    if isinstance(bins, (list, tuple)):
        check_arraylike("histogram_bin_edges", a, bins)
    (a,) = promote_dtypes_inexact(a)
    dt = get_aval(a).dtype
    if not isinstance(bins, (int, np.integer)):
        edges = asarray(bins)
        if get_aval(edges).ndim == 1:
            return _strong(lax.convert_element_type(edges, dt))
        if get_aval(edges).ndim > 1:
            raise ValueError(f"`bins` must be an int or a 1-D array of edges, got shape "
                             f"{get_aval(edges).shape}")
    bins = core.concrete_or_error(operator.index, bins, "The error occurred because of argument "
                                  "'bins' of jnp.histogram: an int number of bins must be static")
    if bins < 1:
        raise ValueError(f"`bins` must be positive, when an integer, got {bins}")
    if range is None:
        lo, hi = red.min(a), red.max(a)
    else:
        if len(range) != 2:
            raise ValueError(f"range must be a (min, max) pair, got {range!r}")
        lo, hi = (lax.convert_element_type(asarray(r), dt) for r in range)
    same = lax.eq(lo, hi)
    half = lax.full((), 0.5, dt)
    lo = where(same, lax.sub(lo, half), lo)
    hi = where(same, lax.add(hi, half), hi)
    from corejax.numpy._creation import linspace
    return _strong(linspace(lo, hi, bins + 1, dtype=dt))


def _bin_index(x, edges):
    """1 + the bin of each x (0 below, len(edges) above); x equal to the last edge belongs to the
    last bin."""
    from corejax.numpy._sorting import searchsorted
    n_edges = get_aval(edges).shape[0]
    idx = searchsorted(edges, x, side="right")
    at_end = lax.eq(x, lax.index_in_dim(edges, n_edges - 1, 0, keepdims=False))
    return where(at_end, lax.full((), n_edges - 1, get_aval(idx).dtype), idx)


def histogram(a, bins=10, range=None, weights=None, density=None):
    """(counts, bin edges) of the flattened `a`; density=True normalizes the counts to a
    probability density."""
    check_arraylike("histogram", a)
    if isinstance(bins, (list, tuple)):
        check_arraylike("histogram", a, bins)
    (a,) = promote_dtypes_inexact(a)
    a = lax.reshape(_strong(a), (get_aval(a).size,))
    edges = histogram_bin_edges(a, bins, range)
    dt = get_aval(a).dtype
    if weights is None:
        w = lax.full(get_aval(a).shape, 1, dt)
    else:
        check_arraylike("histogram", a, weights)
        weights = asarray(weights)
        w = _strong(lax.convert_element_type(lax.reshape(weights, (get_aval(weights).size,)),
                                             dt))
    n_edges = get_aval(edges).shape[0]
    counts = lax.full((n_edges + 1,), 0, dt).at[_bin_index(a, edges)].add(w)
    counts = lax.slice_in_dim(counts, 1, n_edges, 1, 0)
    if density:
        widths = lax.sub(lax.slice_in_dim(edges, 1, n_edges, 1, 0),
                         lax.slice_in_dim(edges, 0, n_edges - 1, 1, 0))
        counts = lax.div(lax.div(counts, widths), red.sum(counts))
    return counts, edges


def histogramdd(sample, bins=10, range=None, weights=None, density=None):
    """(counts, [edges per dimension]) of N points in D dimensions (sample of shape (N, D)).
    Counts are integers without weights or density, else floats."""
    check_arraylike("histogramdd", sample)
    sample = asarray(sample)
    if get_aval(sample).ndim != 2:
        raise ValueError(f"histogramdd: sample must be of shape (N, D), got "
                         f"{get_aval(sample).shape}")
    n, d = get_aval(sample).shape
    bins_per_dim = [bins] * d if isinstance(bins, (int, np.integer)) else list(bins)
    if len(bins_per_dim) != d:
        raise ValueError(f"should be a bin for each dimension: got {len(bins_per_dim)} for "
                         f"{d} dimensions")
    ranges = [None] * d if range is None else list(range)
    if len(ranges) != d:
        raise ValueError(f"should be a range for each dimension: got {len(ranges)} for {d}")
    edges, flat_index, sizes = [], None, []
    idx_dt = dtypes.default_int_dtype()
    for k in builtins.range(d):
        column = lax.index_in_dim(sample, k, 1, keepdims=False)
        e = histogram_bin_edges(column, bins_per_dim[k], ranges[k])
        (col,) = promote_dtypes_inexact(column)
        idx = lax.convert_element_type(_bin_index(_strong(col), e), idx_dt)
        size = get_aval(e).shape[0] + 1
        flat_index = idx if flat_index is None else lax.add(
            lax.mul(flat_index, lax.full((), size, idx_dt)), idx)
        edges.append(e)
        sizes.append(size)
    if weights is None:
        values = lax.full((n,), 1, idx_dt)
    else:
        check_arraylike("histogramdd", sample, weights)
        values = _strong(asarray(weights))
    total = int(np.prod(sizes))
    counts = lax.full((total,), 0, get_aval(values).dtype).at[flat_index].add(values)
    counts = lax.reshape(counts, tuple(sizes))
    counts = lax.slice(counts, (1,) * d, tuple(s - 1 for s in sizes))
    if density:
        (counts,) = promote_dtypes_inexact(counts)
        counts = lax.div(counts, red.sum(counts))
        for k, e in enumerate(edges):
            m = get_aval(e).shape[0]
            width = lax.sub(lax.slice_in_dim(e, 1, m, 1, 0), lax.slice_in_dim(e, 0, m - 1, 1, 0))
            counts = lax.div(counts, lax.broadcast_in_dim(width, get_aval(counts).shape, (k,)))
    return counts, edges


def histogram2d(x, y, bins=10, range=None, weights=None, density=None):
    """(counts, x edges, y edges) of the points (x[i], y[i])."""
    check_arraylike("histogram2d", x, y)
    from corejax.numpy._shape import stack
    bins_xy = bins if isinstance(bins, (int, np.integer)) or (
        isinstance(bins, (list, tuple)) and len(bins) == 2) else [bins, bins]
    counts, (ex, ey) = histogramdd(stack([x, y], 1), bins_xy, range, weights, density)
    return counts, ex, ey
