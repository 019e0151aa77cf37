"""Reductions that ignore NaN: nansum, nanprod, nanmax, nanmin, nanmean, nanvar, nanstd,
nanargmax, nanargmin, nancumsum and nancumprod. (nanmedian, nanquantile and nanpercentile
live with the quantiles in _statistics.)"""
from __future__ import annotations

import numpy as np

from corejax import dtypes, lax
from corejax.core import get_aval
from corejax.numpy import _reductions as red
from corejax.numpy._core import asarray, canonicalize_axes, check_arraylike
from corejax.numpy._eager_fusion import nan_to_zero_sum
from corejax.numpy._ufuncs import isnan, where as _select  # `where` is also a parameter

__all__ = []


def _replace_nan(a, value):
    """`a` with NaNs replaced by `value` (integers and booleans have none)."""
    a = asarray(a)
    if not dtypes.is_inexact(get_aval(a).dtype):
        return a
    return _select(isnan(a), lax.full((), value, get_aval(a).dtype), a)


def _has_nan(a):
    return dtypes.is_inexact(get_aval(asarray(a)).dtype)


def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """Sum treating NaN as zero."""
    check_arraylike("nansum", a)
    if axis is None and dtype is None and out is None and initial is None and where is None:
        # (eagerly, on a large float array: one pass, no NaN-free copy, the same bits)
        total = nan_to_zero_sum(a, keepdims)
        if total is not None:
            return total
    return red.sum(_replace_nan(a, 0), axis, dtype, out, keepdims, initial, where)


def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """Product treating NaN as one."""
    check_arraylike("nanprod", a)
    return red.prod(_replace_nan(a, 1), axis, dtype, out, keepdims, initial, where)


def _nan_extremum(name, reduce, fill):
    def fn(a, axis=None, out=None, keepdims=False, initial=None, where=None):
        check_arraylike(name, a)
        a = asarray(a)
        out_ = reduce(_replace_nan(a, fill), axis, out=out, keepdims=keepdims, initial=initial,
                      where=where)
        if not _has_nan(a):
            return out_
        all_nan = red.all(isnan(a), axis, keepdims=keepdims)
        return _select(all_nan, lax.full((), np.nan, get_aval(out_).dtype), out_)
    fn.__name__ = name
    fn.__doc__ = f"jnp.{name}: the reduction ignoring NaN (NaN where a slice is all NaN)."
    return fn


nanmax = _nan_extremum("nanmax", red.max, -np.inf)
nanmin = _nan_extremum("nanmin", red.min, np.inf)


def _non_nan_count(a, axis, keepdims, where, dt):
    valid = lax.bitwise_not(isnan(a)) if _has_nan(a) else lax.full(get_aval(a).shape, True,
                                                                  np.bool_)
    return red.sum(valid, axis, dtype=dt, keepdims=keepdims, where=where)


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, where=None):
    """Mean of the non-NaN elements (NaN where there are none)."""
    check_arraylike("nanmean", a)
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.nanmean is not supported.")
    a = asarray(a)
    dt = dtypes.canonicalize_dtype(dtype) if dtype is not None else (
        get_aval(a).dtype if dtypes.is_inexact(get_aval(a).dtype)
        else dtypes.default_float_dtype())
    total = nansum(a, axis, dtype=dt, keepdims=keepdims, where=where)
    return lax.div(total, _non_nan_count(a, axis, keepdims, where, dt))


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, mean=None):
    """Variance of the non-NaN elements, dividing by their count minus ddof (NaN when that is
    not positive)."""
    check_arraylike("nanvar", a)
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.nanvar is not supported.")
    a = asarray(a)
    dt = dtypes.canonicalize_dtype(dtype) if dtype is not None else (
        get_aval(a).dtype if dtypes.is_inexact(get_aval(a).dtype)
        else dtypes.default_float_dtype())
    a = lax.convert_element_type(a, dt)
    axes = canonicalize_axes(axis, get_aval(a).ndim)
    if mean is None:
        mean = nanmean(a, axes, keepdims=True, where=where)
    else:
        mean = lax.convert_element_type(asarray(mean), dt)
        if get_aval(mean).ndim != get_aval(a).ndim:
            mean = lax.expand_dims(mean, axes) if get_aval(mean).ndim else mean
    from corejax.numpy._core import broadcast_to_shape
    # NaN inputs (not NaNs the centering makes, as inf - inf) count as zero; replaced before
    # squaring, so that their (zero) cotangent meets no NaN
    centered = lax.sub(a, broadcast_to_shape(mean, get_aval(a).shape))
    if _has_nan(a):
        centered = _select(isnan(a), lax.full((), 0, dt), centered)
    total = red.sum(lax.mul(centered, centered), axes, keepdims=keepdims, where=where)
    count = _non_nan_count(a, axes, keepdims, where, dt)
    normalizer = lax.sub(count, lax.full((), ddof, dt))
    positive = lax.gt(normalizer, lax.full((), 0, dt))
    return _select(positive, lax.div(total, normalizer),
                              lax.full((), np.nan, dt))


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, mean=None):
    """Standard deviation of the non-NaN elements (the square root of nanvar)."""
    return lax.sqrt(nanvar(a, axis, dtype, out, ddof, keepdims, where=where, mean=mean))


def _nan_arg(name, arg, fill):
    def fn(a, axis=None, out=None, keepdims=None):
        check_arraylike(name, a)
        a = asarray(a)
        keep = bool(keepdims)
        idx = arg(_replace_nan(a, fill), axis, keepdims=keep)
        if not _has_nan(a):
            return idx
        all_nan = red.all(isnan(a), axis, keepdims=keep)
        return _select(all_nan, lax.full((), -1, get_aval(idx).dtype), idx)
    fn.__name__ = name
    fn.__doc__ = f"jnp.{name}: the index ignoring NaN (-1 where a slice is all NaN)."
    return fn


nanargmax = _nan_arg("nanargmax", red.argmax, -np.inf)
nanargmin = _nan_arg("nanargmin", red.argmin, np.inf)


def nancumsum(a, axis=None, dtype=None, out=None):
    """Cumulative sum treating NaN as zero."""
    check_arraylike("nancumsum", a)
    return red.cumsum(_replace_nan(a, 0), axis, dtype, out)


def nancumprod(a, axis=None, dtype=None, out=None):
    """Cumulative product treating NaN as one."""
    check_arraylike("nancumprod", a)
    return red.cumprod(_replace_nan(a, 1), axis, dtype, out)
