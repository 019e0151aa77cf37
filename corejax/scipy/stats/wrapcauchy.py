"""The wrapped Cauchy distribution (jax.scipy.stats.wrapcauchy) on [0, 2 pi], 0 < c < 1."""
from __future__ import annotations

import math as _math

import corejax.numpy as _jnp
from corejax.scipy.stats._util import promote_args_inexact as _promote

__all__ = ["logpdf", "pdf"]


def logpdf(x, c):
    x, c = _promote(x, c)
    value = (_jnp.log1p(-c * c) - _math.log(2 * _math.pi)
             - _jnp.log1p(c * c - 2 * c * _jnp.cos(x)))
    inside = _jnp.where((x < 0) | (x > 2 * _math.pi), -_jnp.inf, value)
    return _jnp.where((c <= 0) | (c >= 1), _jnp.nan, inside)


def pdf(x, c):
    return _jnp.exp(logpdf(x, c))
