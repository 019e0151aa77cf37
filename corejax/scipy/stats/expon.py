"""The exponential distribution (jax.scipy.stats.expon), supported on x >= loc."""
from __future__ import annotations

import corejax.numpy as _jnp
from corejax.scipy.stats._util import promote_args_inexact as _promote

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"]


def logpdf(x, loc=0, scale=1):
    x, loc, scale = _promote(x, loc, scale)
    log_probs = -(x - loc) / scale - _jnp.log(scale)
    return _jnp.where(x < loc, -_jnp.inf, log_probs)


def pdf(x, loc=0, scale=1):
    return _jnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    x, loc, scale = _promote(x, loc, scale)
    return _jnp.where(x < loc, 0, -_jnp.expm1(-(x - loc) / scale))


def logcdf(x, loc=0, scale=1):
    x, loc, scale = _promote(x, loc, scale)
    return _jnp.where(x < loc, -_jnp.inf, _jnp.log1p(-_jnp.exp(-(x - loc) / scale)))


def sf(x, loc=0, scale=1):
    x, loc, scale = _promote(x, loc, scale)
    return _jnp.where(x < loc, 1, _jnp.exp(-(x - loc) / scale))


def logsf(x, loc=0, scale=1):
    x, loc, scale = _promote(x, loc, scale)
    return _jnp.where(x < loc, 0, -(x - loc) / scale)


def ppf(q, loc=0, scale=1):
    q, loc, scale = _promote(q, loc, scale)
    return _jnp.where((q < 0) | (q > 1), _jnp.nan, loc - scale * _jnp.log1p(-q))
