"""The Bernoulli distribution (jax.scipy.stats.bernoulli) with success probability p."""
from __future__ import annotations

import corejax.numpy as _jnp
from corejax.scipy import special as _special
from corejax.scipy.stats._util import promote_args_inexact as _promote

__all__ = ["logpmf", "pmf", "cdf", "ppf"]


def logpmf(k, p, loc=0):
    k, p, loc = _promote(k, p, loc)
    y = k - loc
    log_probs = _special.xlogy(y, p) + _special.xlog1py(1 - y, -p)
    return _jnp.where((y < 0) | (y > 1), -_jnp.inf, log_probs)


def pmf(k, p, loc=0):
    return _jnp.exp(logpmf(k, p, loc))


def cdf(k, p):
    k, p = _promote(k, p)
    return _jnp.where(k < 0, 0, _jnp.where(k < 1, 1 - p, 1))


def ppf(q, p):
    q, p = _promote(q, p)
    # 0 or 1 in the promoted dtype, strong unless both arguments were Python scalars (as JAX)
    level = _jnp.where(q <= 1 - p, _jnp.zeros_like(q), _jnp.ones_like(q))
    invalid = _jnp.isnan(q) | _jnp.isnan(p) | (p < 0) | (p > 1) | (q < 0) | (q > 1)
    return _jnp.where(invalid, _jnp.nan, level)
