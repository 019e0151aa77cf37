"""The uniform distribution on [loc, loc + scale] (jax.scipy.stats.uniform)."""
from __future__ import annotations

import corejax.numpy as _jnp
from corejax.scipy.stats._util import promote_args_inexact as _promote

__all__ = ["logpdf", "pdf", "cdf", "ppf"]


def logpdf(x, loc=0, scale=1):
    x, loc, scale = _promote(x, loc, scale)
    log_probs = -_jnp.log(scale)
    return _jnp.where((x < loc) | (x > loc + scale), -_jnp.inf, log_probs)


def pdf(x, loc=0, scale=1):
    return _jnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    x, loc, scale = _promote(x, loc, scale)
    return _jnp.clip((x - loc) / scale, 0, 1)


def ppf(q, loc=0, scale=1):
    q, loc, scale = _promote(q, loc, scale)
    return _jnp.where((q < 0) | (q > 1), _jnp.nan, loc + q * scale)
