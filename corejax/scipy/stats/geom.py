"""The geometric distribution (jax.scipy.stats.geom): trials up to the first success."""
from __future__ import annotations

import corejax.numpy as _jnp
from corejax.scipy import special as _special
from corejax.scipy.stats._util import promote_args_inexact as _promote

__all__ = ["logpmf", "pmf"]


def logpmf(k, p, loc=0):
    k, p, loc = _promote(k, p, loc)
    y = k - loc
    log_probs = _special.xlog1py(y - 1, -p) + _jnp.log(p)
    return _jnp.where(y <= 0, -_jnp.inf, log_probs)


def pmf(k, p, loc=0):
    return _jnp.exp(logpmf(k, p, loc))
