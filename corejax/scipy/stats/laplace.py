"""The Laplace (double exponential) distribution (jax.scipy.stats.laplace)."""
from __future__ import annotations

import math as _math

import corejax.numpy as _jnp
from corejax.scipy.stats._util import promote_args_inexact as _promote

__all__ = ["logpdf", "pdf", "cdf"]


def logpdf(x, loc=0, scale=1):
    x, loc, scale = _promote(x, loc, scale)
    return -(_math.log(2) + _jnp.log(scale) + _jnp.abs(x - loc) / scale)


def pdf(x, loc=0, scale=1):
    return _jnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    x, loc, scale = _promote(x, loc, scale)
    z = (x - loc) / scale
    half_tail = 0.5 * _jnp.exp(-_jnp.abs(z))
    return _jnp.where(z < 0, half_tail, 1 - half_tail)
