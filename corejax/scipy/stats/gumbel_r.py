"""The right-skewed Gumbel distribution (jax.scipy.stats.gumbel_r): NaN where scale <= 0."""
from __future__ import annotations

import corejax.numpy as _jnp
from corejax.scipy import special as _special
from corejax.scipy.stats._util import promote_args_inexact as _promote

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"]


def _z(x, loc, scale):
    x, loc, scale = _promote(x, loc, scale)
    return (x - loc) / scale, scale


def _valid(scale, value):
    return _jnp.where(scale > 0, value, _jnp.nan)


def logpdf(x, loc=0, scale=1):
    z, scale = _z(x, loc, scale)
    # -log(scale) as xlogy(-1, scale), as in JAX: there the integer -1's float0 tangent reaches
    # xlogy's derivative rule, so derivatives through scale raise TypeError; here likewise.
    return _valid(scale, _special.xlogy(-1, scale) - (z + _jnp.exp(-z)))


def pdf(x, loc=0, scale=1):
    return _jnp.exp(logpdf(x, loc, scale))


def logcdf(x, loc=0, scale=1):
    z, scale = _z(x, loc, scale)
    return _valid(scale, -_jnp.exp(-z))


def cdf(x, loc=0, scale=1):
    return _jnp.exp(logcdf(x, loc, scale))


def sf(x, loc=0, scale=1):
    x, loc, scale = _promote(x, loc, scale)
    return _valid(scale, 1 - _jnp.exp(-_jnp.exp((loc - x) / scale)))


def logsf(x, loc=0, scale=1):
    from corejax.nn import log1mexp as _log1mexp  # corejax.nn imports corejax.scipy
    x, loc, scale = _promote(x, loc, scale)
    return _valid(scale, _log1mexp(_jnp.exp((loc - x) / scale)))


def ppf(p, loc=0, scale=1):
    p, loc, scale = _promote(p, loc, scale)
    # -log(p) as xlogy(-1, p), as in JAX (derivatives through p raise TypeError there too)
    value = loc - scale * _jnp.log(_special.xlogy(-1, p))
    return _jnp.where((p > 0) & (p < 1), value, _jnp.nan)
