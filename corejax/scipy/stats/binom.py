"""The binomial distribution (jax.scipy.stats.binom) of n trials with success probability p."""
from __future__ import annotations

import corejax.numpy as _jnp
from corejax.scipy import special as _special
from corejax.scipy.stats._util import promote_args_inexact as _promote

__all__ = ["logpmf", "pmf"]


def logpmf(k, n, p, loc=0):
    k, n, p, loc = _promote(k, n, p, loc)
    y = k - loc
    log_comb = _special.gammaln(n + 1) - (_special.gammaln(y + 1) + _special.gammaln(n - y + 1))
    log_linear = _special.xlogy(y, p) + _special.xlog1py(n - y, -p)
    # No trials, or a certain outcome (p 0 or 1 at its end of the support): probability 1.
    certain = ((y == 0) & (n == 0)) | (log_linear == 0)
    log_probs = _jnp.where(certain, 0.0, log_comb + log_linear)
    # As in JAX the support is loc <= k < loc + n + 1, with no check that k - loc is whole.
    return _jnp.where((k >= loc) & (k < loc + n + 1), log_probs, -_jnp.inf)


def pmf(k, n, p, loc=0):
    return _jnp.exp(logpmf(k, n, p, loc))
