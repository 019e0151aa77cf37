"""The negative binomial distribution (jax.scipy.stats.nbinom): failures before the n-th
success, success probability p."""
from __future__ import annotations

import corejax.numpy as _jnp
from corejax.scipy import special as _special
from corejax.scipy.stats._util import promote_args_inexact as _promote

__all__ = ["logpmf", "pmf"]


def logpmf(k, n, p, loc=0):
    k, n, p, loc = _promote(k, n, p, loc)
    y = k - loc
    log_comb = _special.gammaln(n + y) - _special.gammaln(y + 1) - _special.gammaln(n)
    log_probs = log_comb + n * _jnp.log(p) + _special.xlog1py(y, -p)
    return _jnp.where(y < 0, -_jnp.inf, log_probs)


def pmf(k, n, p, loc=0):
    return _jnp.exp(logpmf(k, n, p, loc))
