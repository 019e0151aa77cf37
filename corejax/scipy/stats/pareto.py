"""The Pareto distribution (jax.scipy.stats.pareto) with shape `b`, supported on
x >= loc + scale."""
from __future__ import annotations

import corejax.numpy as _jnp
from corejax.scipy.stats._util import promote_args_inexact as _promote

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"]


def logpdf(x, b, loc=0, scale=1):
    x, b, loc, scale = _promote(x, b, loc, scale)
    z = (x - loc) / scale
    log_probs = _jnp.log(b) - _jnp.log(scale) - (b + 1) * _jnp.log(z)
    return _jnp.where(z < 1, -_jnp.inf, log_probs)


def pdf(x, b, loc=0, scale=1):
    return _jnp.exp(logpdf(x, b, loc, scale))


def logsf(x, b, loc=0, scale=1):
    x, b, loc, scale = _promote(x, b, loc, scale)
    z = (x - loc) / scale
    return _jnp.where(z < 1, 0, -b * _jnp.log(z))


def sf(x, b, loc=0, scale=1):
    return _jnp.exp(logsf(x, b, loc, scale))


def cdf(x, b, loc=0, scale=1):
    return -_jnp.expm1(logsf(x, b, loc, scale))


def logcdf(x, b, loc=0, scale=1):
    return _jnp.log1p(-sf(x, b, loc, scale))


def ppf(q, b, loc=0, scale=1):
    q, b, loc, scale = _promote(q, b, loc, scale)
    value = loc + scale * _jnp.power(1 - q, -1 / b)
    return _jnp.where((q < 0) | (q > 1), _jnp.nan, value)
