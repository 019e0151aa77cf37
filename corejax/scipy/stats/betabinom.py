"""The beta-binomial distribution (jax.scipy.stats.betabinom)."""
from __future__ import annotations

import corejax.numpy as _jnp
from corejax.scipy import special as _special
from corejax.scipy.stats._util import promote_args_inexact as _promote

__all__ = ["logpmf", "pmf"]


def logpmf(k, n, a, b, loc=0):
    k, n, a, b, loc = _promote(k, n, a, b, loc)
    y = _jnp.floor(k - loc)
    log_comb = _special.gammaln(n + 1) - _special.gammaln(y + 1) - _special.gammaln(n - y + 1)
    log_probs = log_comb + _special.betaln(y + a, n - y + b) - _special.betaln(a, b)
    return _jnp.where((y < 0) | (y > n), -_jnp.inf, log_probs)


def pmf(k, n, a, b, loc=0):
    return _jnp.exp(logpmf(k, n, a, b, loc))
