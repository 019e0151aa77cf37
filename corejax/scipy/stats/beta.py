"""The beta distribution (jax.scipy.stats.beta), supported on [loc, loc + scale]."""
from __future__ import annotations

import corejax.numpy as _jnp
from corejax.scipy import special as _special
from corejax.scipy.stats._util import promote_args_inexact as _promote

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def logpdf(x, a, b, loc=0, scale=1):
    x, a, b, loc, scale = _promote(x, a, b, loc, scale)
    y = (x - loc) / scale
    log_linear = _special.xlogy(a - 1, y) + _special.xlog1py(b - 1, -y)
    log_probs = log_linear - _special.betaln(a, b) - _jnp.log(scale)
    return _jnp.where((x < loc) | (x > loc + scale), -_jnp.inf, log_probs)


def pdf(x, a, b, loc=0, scale=1):
    return _jnp.exp(logpdf(x, a, b, loc, scale))


def _standardized(x, a, b, loc, scale):
    x, a, b, loc, scale = _promote(x, a, b, loc, scale)
    return _jnp.clip((x - loc) / scale, 0, 1), a, b


def cdf(x, a, b, loc=0, scale=1):
    y, a, b = _standardized(x, a, b, loc, scale)
    return _special.betainc(a, b, y)


def logcdf(x, a, b, loc=0, scale=1):
    return _jnp.log(cdf(x, a, b, loc, scale))


def sf(x, a, b, loc=0, scale=1):
    y, a, b = _standardized(x, a, b, loc, scale)
    return _special.betainc(b, a, 1 - y)


def logsf(x, a, b, loc=0, scale=1):
    return _jnp.log(sf(x, a, b, loc, scale))
