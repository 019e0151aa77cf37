"""The gamma distribution (jax.scipy.stats.gamma) with shape `a`, supported on x >= loc."""
from __future__ import annotations

import corejax.numpy as _jnp
from corejax import lax as _lax
from corejax.scipy import special as _special
from corejax.scipy.stats._util import promote_args_inexact as _promote

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def logpdf(x, a, loc=0, scale=1):
    x, a, loc, scale = _promote(x, a, loc, scale)
    # Off the support (and at NaN x) the density is computed at y = 1, so that neither its
    # value nor its derivatives leak NaN through the where that discards it.
    inside = x >= loc
    y = _jnp.where(inside, (x - loc) / scale, 1)
    log_linear = _special.xlogy(a - 1, y) - y
    log_probs = log_linear - (_special.gammaln(a) + _jnp.log(scale))
    return _jnp.where(inside, log_probs, -_jnp.inf)


def pdf(x, a, loc=0, scale=1):
    return _jnp.exp(logpdf(x, a, loc, scale))


def _clamped(x, a, loc, scale):
    x, a, loc, scale = _promote(x, a, loc, scale)
    return _lax.clamp(0.0, (x - loc) / scale, _jnp.inf), a


def cdf(x, a, loc=0, scale=1):
    y, a = _clamped(x, a, loc, scale)
    return _special.gammainc(a, y)


def logcdf(x, a, loc=0, scale=1):
    return _jnp.log(cdf(x, a, loc, scale))


def sf(x, a, loc=0, scale=1):
    x, a, loc, scale = _promote(x, a, loc, scale)
    y = (x - loc) / scale
    return _jnp.where(y < 0, 1, _special.gammaincc(a, y))


def logsf(x, a, loc=0, scale=1):
    return _jnp.log(sf(x, a, loc, scale))
