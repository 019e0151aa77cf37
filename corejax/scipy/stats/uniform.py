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
    upper = loc + scale
    # Strongly typed even for Python scalars, as JAX's; NaN anywhere gives 0, as in JAX.
    z = ((x - loc) / scale).astype(x.dtype)
    inside = _jnp.where((x >= loc) & (x <= upper), z, 0)
    return _jnp.where(x < loc, 0, _jnp.where(x > upper, 1, inside))


def ppf(q, loc=0, scale=1):
    q, loc, scale = _promote(q, loc, scale)
    return _jnp.where(_jnp.isnan(q) | (q < 0) | (q > 1), _jnp.nan, loc + scale * q)
