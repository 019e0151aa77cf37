"""Student's t distribution (jax.scipy.stats.t) with `df` degrees of freedom."""
from __future__ import annotations

import math as _math

import corejax.numpy as _jnp
from corejax.scipy import special as _special
from corejax.scipy.stats._util import promote_args_inexact as _promote

__all__ = ["logpdf", "pdf"]


def logpdf(x, df, loc=0, scale=1):
    x, df, loc, scale = _promote(x, df, loc, scale)
    z = (x - loc) / scale
    half_df = df / 2
    normalizer = (_special.gammaln(half_df) - _special.gammaln(half_df + 0.5)
                  + 0.5 * _jnp.log(df * _math.pi) + _jnp.log(scale))
    return -(normalizer + (half_df + 0.5) * _jnp.log1p(z * z / df))


def pdf(x, df, loc=0, scale=1):
    return _jnp.exp(logpdf(x, df, loc, scale))
