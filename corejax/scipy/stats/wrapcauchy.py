"""The wrapped Cauchy distribution (jax.scipy.stats.wrapcauchy) on [0, 2 pi], 0 < c < 1."""
from __future__ import annotations

import math as _math

import corejax.numpy as _jnp
from corejax.scipy.stats._util import promote_args_inexact as _promote

__all__ = ["logpdf", "pdf"]


def logpdf(x, c):
    x, c = _promote(x, c)
    value = (_jnp.log(1 - c * c) - _math.log(2 * _math.pi)
             - _jnp.log(1 + c * c - 2 * c * _jnp.cos(x)))
    # -inf off [0, 2 pi], NaN x included (as in JAX); NaN for c outside (0, 1)
    inside = _jnp.where((x >= 0) & (x <= 2 * _math.pi), value, -_jnp.inf)
    return _jnp.where((c > 0) & (c < 1), inside, _jnp.nan)


def pdf(x, c):
    return _jnp.exp(logpdf(x, c))
