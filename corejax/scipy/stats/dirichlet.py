"""The Dirichlet distribution (jax.scipy.stats.dirichlet). Components run along the first axis
of x: x.shape[0] is len(alpha), or len(alpha) - 1 with the last component implied."""
from __future__ import annotations

import corejax.numpy as _jnp
from corejax.core import get_aval as _get_aval
from corejax.scipy import special as _special
from corejax.scipy.stats._util import promote_args_inexact as _promote

__all__ = ["logpdf", "pdf"]


def logpdf(x, alpha):
    x, alpha = _promote(x, alpha)
    x_shape, alpha_shape = _get_aval(x).shape, _get_aval(alpha).shape
    if len(alpha_shape) != 1:
        raise ValueError(f"`alpha` must be one-dimensional; got alpha.shape={alpha_shape}")
    if not x_shape or x_shape[0] not in (alpha_shape[0], alpha_shape[0] - 1):
        raise ValueError("`x` must have either the same number of entries as `alpha` or one "
                         f"entry fewer; got x.shape={x_shape}, alpha.shape={alpha_shape}")
    if x_shape[0] != alpha_shape[0]:
        x = _jnp.concatenate([x, 1 - _jnp.sum(x, axis=0, keepdims=True)], axis=0)
    alpha = alpha.reshape(alpha_shape + (1,) * (len(x_shape) - 1))
    normalizer = _jnp.sum(_special.gammaln(alpha), axis=0) - _special.gammaln(
        _jnp.sum(alpha, axis=0))
    log_probs = _jnp.sum(_special.xlogy(alpha - 1, x), axis=0) - normalizer
    eps = _jnp.finfo(_get_aval(x).dtype).eps
    on_simplex = (_jnp.all(x >= 0, axis=0) & _jnp.all(x <= 1, axis=0)
                  & (_jnp.abs(_jnp.sum(x, axis=0) - 1) <= 8 * eps))
    return _jnp.where(on_simplex, log_probs, -_jnp.inf)


def pdf(x, alpha):
    return _jnp.exp(logpdf(x, alpha))
