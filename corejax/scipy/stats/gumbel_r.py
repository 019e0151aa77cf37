"""The right-skewed Gumbel distribution (jax.scipy.stats.gumbel_r)."""
from __future__ import annotations

import corejax.numpy as _jnp
from corejax.scipy.stats._util import promote_args_inexact as _promote

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"]


def _z(x, loc, scale):
    x, loc, scale = _promote(x, loc, scale)
    return (x - loc) / scale, scale


def logpdf(x, loc=0, scale=1):
    z, scale = _z(x, loc, scale)
    return -(z + _jnp.exp(-z)) - _jnp.log(scale)


def pdf(x, loc=0, scale=1):
    return _jnp.exp(logpdf(x, loc, scale))


def logcdf(x, loc=0, scale=1):
    z, _ = _z(x, loc, scale)
    return -_jnp.exp(-z)


def cdf(x, loc=0, scale=1):
    return _jnp.exp(logcdf(x, loc, scale))


def sf(x, loc=0, scale=1):
    return -_jnp.expm1(logcdf(x, loc, scale))


def logsf(x, loc=0, scale=1):
    return _jnp.log(sf(x, loc, scale))


def ppf(p, loc=0, scale=1):
    p, loc, scale = _promote(p, loc, scale)
    value = loc - scale * _jnp.log(-_jnp.log(p))
    return _jnp.where((p < 0) | (p > 1), _jnp.nan, value)
