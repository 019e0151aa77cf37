"""The normal distribution truncated to [a, b] (standardized bounds), jax.scipy.stats.truncnorm.

The normalizer Phi(b) - Phi(a) is formed in log space on the side of the mean where it does
not cancel (through the upper-tail functions when both bounds are above 0), so that bounds far
out in a tail keep their precision."""
from __future__ import annotations

import corejax.numpy as _jnp
from corejax.scipy import special as _special
from corejax.scipy.stats import norm as _norm
from corejax.scipy.stats._util import promote_args_inexact as _promote

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def _log_diff(log_hi, log_lo):
    """log(exp(log_hi) - exp(log_lo)) for log_hi >= log_lo."""
    return log_hi + _jnp.log1p(-_jnp.exp(log_lo - log_hi))


def _log_mass(lo, hi):
    """log(Phi(hi) - Phi(lo)) for lo <= hi."""
    upper_side = lo > 0
    lower = _log_diff(_special.log_ndtr(hi), _special.log_ndtr(lo))
    upper = _log_diff(_special.log_ndtr(-lo), _special.log_ndtr(-hi))
    return _jnp.where(upper_side, upper, lower)


def _standardize(x, a, b, loc, scale):
    x, a, b, loc, scale = _promote(x, a, b, loc, scale)
    return (x - loc) / scale, a, b, scale


def logpdf(x, a, b, loc=0, scale=1):
    z, a, b, scale = _standardize(x, a, b, loc, scale)
    value = _norm.logpdf(z) - _log_mass(a, b) - _jnp.log(scale)
    return _jnp.where((z < a) | (z > b), -_jnp.inf, value)


def pdf(x, a, b, loc=0, scale=1):
    return _jnp.exp(logpdf(x, a, b, loc, scale))


def _log_cdf_and_sf(x, a, b, loc, scale):
    """(log cdf, log sf), each taken as log1p(-other) where the other is below 1/2 (so that a
    value next to 1 keeps the precision of its small complement)."""
    z, a, b, _ = _standardize(x, a, b, loc, scale)
    # Outside (a, b) the result is a constant; the branches below are evaluated at a point
    # strictly inside instead, so that their (discarded) derivatives stay finite there.
    outside = (z <= a) | (z >= b)
    middle = _jnp.where(_jnp.isfinite(a) & _jnp.isfinite(b), (a + b) / 2,
                        _jnp.where(_jnp.isfinite(a), a + 1,
                                   _jnp.where(_jnp.isfinite(b), b - 1, _jnp.zeros_like(z))))
    inside = _jnp.where(outside, middle, z)
    log_total = _log_mass(a, b)
    direct_cdf = _log_mass(a, inside) - log_total
    direct_sf = _log_mass(inside, b) - log_total
    half = -0.6931471805599453
    # log1p(-exp(v)) only where v < log(1/2); elsewhere at log(1/2), whose derivative is finite
    log_cdf = _jnp.where(direct_sf < half,
                         _jnp.log1p(-_jnp.exp(_jnp.minimum(direct_sf, half))), direct_cdf)
    log_sf = _jnp.where(direct_cdf < half,
                        _jnp.log1p(-_jnp.exp(_jnp.minimum(direct_cdf, half))), direct_sf)
    log_cdf = _jnp.where(z <= a, -_jnp.inf, _jnp.where(z >= b, 0, log_cdf))
    log_sf = _jnp.where(z <= a, 0, _jnp.where(z >= b, -_jnp.inf, log_sf))
    return log_cdf, log_sf


def logcdf(x, a, b, loc=0, scale=1):
    return _log_cdf_and_sf(x, a, b, loc, scale)[0]


def cdf(x, a, b, loc=0, scale=1):
    return _jnp.exp(logcdf(x, a, b, loc, scale))


def logsf(x, a, b, loc=0, scale=1):
    return _log_cdf_and_sf(x, a, b, loc, scale)[1]


def sf(x, a, b, loc=0, scale=1):
    return _jnp.exp(logsf(x, a, b, loc, scale))
