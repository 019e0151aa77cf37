"""The von Mises distribution (jax.scipy.stats.vonmises) on [-pi, pi] with concentration
`kappa`."""
from __future__ import annotations

import math as _math

import corejax.numpy as _jnp
from corejax.scipy import special as _special
from corejax.scipy.stats._util import promote_args_inexact as _promote

__all__ = ["logpdf", "pdf"]


def logpdf(x, kappa):
    x, kappa = _promote(x, kappa)
    # kappa cos x - log(2 pi I0(kappa)), with I0 scaled: no overflow for large kappa
    value = kappa * (_jnp.cos(x) - 1) - _jnp.log(2 * _math.pi * _special.i0e(kappa))
    return _jnp.where(kappa > 0, value, _jnp.nan)


def pdf(x, kappa):
    return _jnp.exp(logpdf(x, kappa))
