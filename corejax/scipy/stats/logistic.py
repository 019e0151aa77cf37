"""The logistic distribution (jax.scipy.stats.logistic)."""
from __future__ import annotations

import corejax.numpy as _jnp
from corejax.scipy import special as _special
from corejax.scipy.stats._util import promote_args_inexact as _promote

__all__ = ["logpdf", "pdf", "cdf", "sf", "ppf", "isf"]


def logpdf(x, loc=0, scale=1):
    x, loc, scale = _promote(x, loc, scale)
    z = (x - loc) / scale
    # -z - 2 log(1 + e^-z), written with |z| so that neither tail overflows
    a = _jnp.abs(z)
    return -a - 2 * _jnp.log1p(_jnp.exp(-a)) - _jnp.log(scale)


def pdf(x, loc=0, scale=1):
    return _jnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    x, loc, scale = _promote(x, loc, scale)
    return _special.expit((x - loc) / scale)


def sf(x, loc=0, scale=1):
    x, loc, scale = _promote(x, loc, scale)
    return _special.expit((loc - x) / scale)


def ppf(x, loc=0, scale=1):
    x, loc, scale = _promote(x, loc, scale)
    return loc + scale * _special.logit(x)


def isf(x, loc=0, scale=1):
    x, loc, scale = _promote(x, loc, scale)
    return loc - scale * _special.logit(x)
