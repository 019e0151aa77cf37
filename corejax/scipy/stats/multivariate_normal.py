"""The multivariate normal distribution (jax.scipy.stats.multivariate_normal): the last axis of
x and mean is the event; cov is a scalar variance or an (n, n) covariance matrix (batched over
leading axes), factored by Cholesky."""
from __future__ import annotations

import math as _math

import corejax.numpy as _jnp
from corejax.core import get_aval as _get_aval
from corejax.lax import linalg as _linalg
from corejax.scipy.stats._util import promote_args_inexact as _promote

__all__ = ["logpdf", "pdf"]


def logpdf(x, mean, cov, allow_singular=None):
    if allow_singular is not None:
        raise NotImplementedError("allow_singular argument of multivariate_normal.logpdf")
    x, mean, cov = _promote(x, mean, cov)
    mean_shape, cov_shape = _get_aval(mean).shape, _get_aval(cov).shape
    if not mean_shape:
        return -0.5 * _jnp.square(x - mean) / cov - 0.5 * (_math.log(2 * _math.pi)
                                                            + _jnp.log(cov))
    n = mean_shape[-1]
    if not cov_shape:
        y = x - mean
        return (-0.5 * _jnp.einsum("...i,...i->...", y, y) / cov
                - n / 2 * (_math.log(2 * _math.pi) + _jnp.log(cov)))
    if len(cov_shape) < 2 or cov_shape[-2:] != (n, n):
        raise ValueError("multivariate_normal.logpdf got incompatible shapes")
    factor = _linalg.cholesky(cov)
    y = x - mean
    batch = _jnp.broadcast_shapes(_get_aval(y).shape[:-1], cov_shape[:-2])
    factor = _jnp.broadcast_to(factor, batch + (n, n))
    y = _jnp.broadcast_to(y, batch + (n,))
    z = _linalg.triangular_solve(factor, y[..., None], left_side=True, lower=True)[..., 0]
    log_det = _jnp.sum(_jnp.log(_jnp.diagonal(factor, axis1=-2, axis2=-1)), axis=-1)
    return (-0.5 * _jnp.einsum("...i,...i->...", z, z) - n / 2 * _math.log(2 * _math.pi)
            - log_det)


def pdf(x, mean, cov):
    return _jnp.exp(logpdf(x, mean, cov))
