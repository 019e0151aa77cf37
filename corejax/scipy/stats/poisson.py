"""The Poisson distribution (jax.scipy.stats.poisson) with rate mu."""
from __future__ import annotations

import math as _math

from corejax.core import get_aval as _get_aval
import corejax.numpy as _jnp
from corejax.scipy import special as _special
from corejax.scipy.stats._util import promote_args_inexact as _promote

__all__ = ["logpmf", "pmf", "cdf", "entropy"]


def logpmf(k, mu, loc=0):
    k, mu, loc = _promote(k, mu, loc)
    y = k - loc
    log_probs = _special.xlogy(y, mu) - _special.gammaln(y + 1) - mu
    return _jnp.where((y < 0) | (y != _jnp.round(y)), -_jnp.inf, log_probs)


def pmf(k, mu, loc=0):
    return _jnp.exp(logpmf(k, mu, loc))


def cdf(k, mu, loc=0):
    k, mu, loc = _promote(k, mu, loc)
    y = _jnp.floor(k - loc)
    return _jnp.where(y < 0, 0, _special.gammaincc(_jnp.maximum(y, 0) + 1, mu))


# Rates up to _SUMMED: -sum_k p_k log p_k over k < _TERMS (the tail beyond is below 1e-30);
# above: the asymptotic expansion 1/2 log(2 pi e mu) - 1/(12 mu) - 1/(24 mu^2) - 19/(360 mu^3)
# (next term below 1e-8 there).
_SUMMED = 200.0
_TERMS = 420


def entropy(mu, loc=0):
    """The entropy of the distribution (it does not depend on loc)."""
    mu, loc = _promote(mu, loc)
    mu = mu + _jnp.zeros_like(loc)
    dtype = _get_aval(mu).dtype
    k = _jnp.arange(_TERMS, dtype=dtype).reshape((_TERMS,) + (1,) * mu.ndim)
    small = _jnp.minimum(mu, _SUMMED)
    log_p = _special.xlogy(k, small) - _special.gammaln(k + 1) - small
    terms = _jnp.where(log_p > -_jnp.inf, -_jnp.exp(log_p) * log_p, 0)
    summed = _jnp.sum(terms, axis=0)
    big = _jnp.maximum(mu, _SUMMED)
    inv = 1 / big
    asymptotic = (0.5 * _jnp.log(2 * _math.pi * _math.e * big)
                  - inv * (1 / 12 + inv * (1 / 24 + inv * (19 / 360))))
    value = _jnp.where(mu <= _SUMMED, summed, asymptotic)
    return _jnp.where(mu < 0, _jnp.nan, value)

