"""The binomial distribution (jax.scipy.stats.binom) of n trials with success probability p."""
from __future__ import annotations

import corejax.numpy as _jnp
from corejax.scipy import special as _special
from corejax.scipy.stats._util import promote_args_inexact as _promote

__all__ = ["logpmf", "pmf"]


def logpmf(k, n, p, loc=0):
    k, n, p, loc = _promote(k, n, p, loc)
    y = k - loc
    log_comb = _special.gammaln(n + 1) - _special.gammaln(y + 1) - _special.gammaln(n - y + 1)
    log_probs = log_comb + _special.xlogy(y, p) + _special.xlog1py(n - y, -p)
    return _jnp.where((y < 0) | (y > n), -_jnp.inf, log_probs)


def pmf(k, n, p, loc=0):
    return _jnp.exp(logpmf(k, n, p, loc))
