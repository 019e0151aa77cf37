"""The Cauchy distribution (jax.scipy.stats.cauchy)."""
from __future__ import annotations

import math as _math

import corejax.numpy as _jnp
from corejax.scipy.stats._util import promote_args_inexact as _promote

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf"]


def logpdf(x, loc=0, scale=1):
    x, loc, scale = _promote(x, loc, scale)
    z = (x - loc) / scale
    return -(_math.log(_math.pi) + _jnp.log(scale) + _jnp.log1p(z * z))


def pdf(x, loc=0, scale=1):
    return _jnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    x, loc, scale = _promote(x, loc, scale)
    return 0.5 + _jnp.arctan((x - loc) / scale) / _math.pi


def logcdf(x, loc=0, scale=1):
    return _jnp.log(cdf(x, loc, scale))


def sf(x, loc=0, scale=1):
    x, loc, scale = _promote(x, loc, scale)
    return 0.5 - _jnp.arctan((x - loc) / scale) / _math.pi


def logsf(x, loc=0, scale=1):
    return _jnp.log(sf(x, loc, scale))


def ppf(q, loc=0, scale=1):
    q, loc, scale = _promote(q, loc, scale)
    return loc + scale * _jnp.tan(_math.pi * (q - 0.5))


def isf(q, loc=0, scale=1):
    q, loc, scale = _promote(q, loc, scale)
    return loc + scale * _jnp.tan(_math.pi * (0.5 - q))
