"""The normal distribution (jax.scipy.stats.norm)."""
from __future__ import annotations

import math as _math

import corejax.numpy as _jnp
from corejax.scipy import special as _special
from corejax.scipy.stats._util import promote_args_inexact as _promote

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf"]


def logpdf(x, loc=0, scale=1):
    """log of the normal density with mean `loc` and standard deviation `scale`."""
    x, loc, scale = _promote(x, loc, scale)
    scale_sq = scale * scale
    log_normalizer = _jnp.log(2 * _math.pi * scale_sq)
    quadratic = _jnp.square(x - loc) / scale_sq
    return (log_normalizer + quadratic) / -2


def pdf(x, loc=0, scale=1):
    return _jnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    x, loc, scale = _promote(x, loc, scale)
    return _special.ndtr((x - loc) / scale)


def logcdf(x, loc=0, scale=1):
    x, loc, scale = _promote(x, loc, scale)
    return _special.log_ndtr((x - loc) / scale)


def sf(x, loc=0, scale=1):
    """1 - cdf, computed as the cdf of the reflected point (accurate in the upper tail)."""
    x, loc, scale = _promote(x, loc, scale)
    return _special.ndtr((loc - x) / scale)


def logsf(x, loc=0, scale=1):
    x, loc, scale = _promote(x, loc, scale)
    return _special.log_ndtr((loc - x) / scale)


def ppf(q, loc=0, scale=1):
    """The quantile function (inverse of cdf)."""
    q, loc, scale = _promote(q, loc, scale)
    return _special.ndtri(q) * scale + loc


def isf(q, loc=0, scale=1):
    """The inverse of sf."""
    q, loc, scale = _promote(q, loc, scale)
    return ppf(1 - q, loc, scale)
