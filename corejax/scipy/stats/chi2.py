"""The chi-squared distribution (jax.scipy.stats.chi2): a gamma distribution of shape df / 2
and scale 2 (times `scale`)."""
from __future__ import annotations

import math as _math

import corejax.numpy as _jnp
from corejax import lax as _lax
from corejax.scipy import special as _special
from corejax.scipy.stats._util import promote_args_inexact as _promote

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def logpdf(x, df, loc=0, scale=1):
    x, df, loc, scale = _promote(x, df, loc, scale)
    y = (x - loc) / scale
    half_df = df / 2
    # (df/2 - 1) log y, not xlogy: JAX's value is NaN at y = 0 for df = 2, and off the support
    # the derivatives carry the NaN of log(y < 0) through the where, as JAX's do.
    kernel = (half_df - 1) * _jnp.log(y) - y / 2
    normalizer = _special.gammaln(half_df) + _math.log(2) * df / 2
    log_probs = -normalizer - _jnp.log(scale) + kernel
    return _jnp.where(x < loc, -_jnp.inf, log_probs)


def pdf(x, df, loc=0, scale=1):
    return _jnp.exp(logpdf(x, df, loc, scale))


def _half_clamped(x, df, loc, scale):
    x, df, loc, scale = _promote(x, df, loc, scale)
    return _lax.clamp(0.0, (x - loc) / (scale * 2), _jnp.inf), df / 2


def cdf(x, df, loc=0, scale=1):
    y, half_df = _half_clamped(x, df, loc, scale)
    return _special.gammainc(half_df, y)


def logcdf(x, df, loc=0, scale=1):
    return _jnp.log(cdf(x, df, loc, scale))


def sf(x, df, loc=0, scale=1):
    y, half_df = _half_clamped(x, df, loc, scale)
    return _special.gammaincc(half_df, y)


def logsf(x, df, loc=0, scale=1):
    return _jnp.log(sf(x, df, loc, scale))
