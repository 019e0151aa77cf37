"""The beta-binomial distribution (jax.scipy.stats.betabinom)."""
from __future__ import annotations

import corejax.numpy as _jnp
from corejax.scipy import special as _special
from corejax.scipy.stats._util import promote_args_inexact as _promote

__all__ = ["logpmf", "pmf"]


def logpmf(k, n, a, b, loc=0):
    k, n, a, b, loc = _promote(k, n, a, b, loc)
    y = _jnp.floor(k) - loc
    # log C(n, y) = -log(n + 1) - log B(n - y + 1, y + 1)
    log_comb = -(_jnp.log1p(n) + _special.betaln(n - y + 1, y + 1))
    log_probs = log_comb + (_special.betaln(y + a, n - y + b) - _special.betaln(a, b))
    log_probs = _jnp.where((y == 0) & (n == 0), 0.0, log_probs)
    # JAX's support test, which compares floor(k) - loc with -loc (not with 0)
    outside = (y < -loc) | (y > n) | (y + a <= 0)
    log_probs = _jnp.where(outside, -_jnp.inf, log_probs)
    return _jnp.where((n < 0) | (a <= 0) | (b <= 0), _jnp.nan, log_probs)


def pmf(k, n, a, b, loc=0):
    return _jnp.exp(logpmf(k, n, a, b, loc))
