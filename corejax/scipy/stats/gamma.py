"""The gamma distribution (jax.scipy.stats.gamma) with shape `a`, supported on x >= loc."""
from __future__ import annotations

import corejax.numpy as _jnp
from corejax.scipy import special as _special
from corejax.scipy.stats._util import promote_args_inexact as _promote

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def logpdf(x, a, loc=0, scale=1):
    x, a, loc, scale = _promote(x, a, loc, scale)
    y = (x - loc) / scale
    log_linear = _special.xlogy(a - 1, y) - y
    log_probs = log_linear - _special.gammaln(a) - _jnp.log(scale)
    return _jnp.where(x < loc, -_jnp.inf, log_probs)


def pdf(x, a, loc=0, scale=1):
    return _jnp.exp(logpdf(x, a, loc, scale))


def _standardized(x, a, loc, scale):
    x, a, loc, scale = _promote(x, a, loc, scale)
    return _jnp.maximum((x - loc) / scale, 0), a


def cdf(x, a, loc=0, scale=1):
    y, a = _standardized(x, a, loc, scale)
    return _special.gammainc(a, y)


def logcdf(x, a, loc=0, scale=1):
    return _jnp.log(cdf(x, a, loc, scale))


def sf(x, a, loc=0, scale=1):
    y, a = _standardized(x, a, loc, scale)
    return _special.gammaincc(a, y)


def logsf(x, a, loc=0, scale=1):
    return _jnp.log(sf(x, a, loc, scale))
