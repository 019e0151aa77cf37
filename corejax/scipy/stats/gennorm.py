"""The generalized normal distribution (jax.scipy.stats.gennorm) with shape `beta`."""
from __future__ import annotations

import corejax.numpy as _jnp
from corejax.scipy import special as _special
from corejax.scipy.stats._util import promote_args_inexact as _promote

__all__ = ["logpdf", "pdf", "cdf"]


def logpdf(x, beta):
    x, beta = _promote(x, beta)
    return _jnp.log(0.5 * beta) - _special.gammaln(1 / beta) - _jnp.abs(x) ** beta


def pdf(x, beta):
    return _jnp.exp(logpdf(x, beta))


def cdf(x, beta):
    x, beta = _promote(x, beta)
    return 0.5 * (1 + _jnp.sign(x) * _special.gammainc(1 / beta, _jnp.abs(x) ** beta))
