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


def _summed_entropy(mu, terms, cutoff):
    """-sum_k p_k log p_k over k < terms, with p_k taken as 0 from k >= cutoff on."""
    dtype = _get_aval(mu).dtype
    k = _jnp.arange(terms, dtype=dtype).reshape((terms,) + (1,) * mu.ndim)
    p = _jnp.where(k < cutoff, pmf(k, mu), 0)
    return _jnp.sum(_special.entr(p), axis=0)


def entropy(mu, loc=0):
    """The entropy of the distribution (it does not depend on loc). As in JAX: a sum of 35
    terms for rates below 10, of 250 below 100, the asymptotic 1/2 log(2 pi e mu) - 1/(12 mu)
    above; derivatives through the sums are those of JAX's (forward mode gives NaN where a
    term is cut off: d/dp p log p is infinite at 0)."""
    mu, loc = _promote(mu, loc)
    mu = _jnp.broadcast_to(mu, _jnp.broadcast_shapes(_jnp.shape(mu), _jnp.shape(loc)))
    small = _summed_entropy(mu, 35, _jnp.ceil(mu + 20))
    medium = _summed_entropy(mu, 250, _jnp.ceil(mu + 10 * _jnp.sqrt(mu) + 20))
    large = 0.5 * _jnp.log(2 * _math.pi * _math.e * mu) - 1 / (12 * mu)
    value = _jnp.where(mu < 10, small, _jnp.where(mu < 100, medium, large))
    return _jnp.where(mu == 0, 0, value)
