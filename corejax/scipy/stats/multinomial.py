"""The multinomial distribution (jax.scipy.stats.multinomial): counts x (integers, summing to
n over all of x) of n trials with outcome probabilities p along the last axis."""
from __future__ import annotations

import numpy as _np

import corejax.numpy as _jnp
from corejax import dtypes as _dtypes
from corejax.scipy import special as _special
from corejax.scipy.stats._util import promote_args_inexact as _promote

__all__ = ["logpmf", "pmf"]


def logpmf(x, n, p):
    x_dtype = _dtypes.result_type_and_weakness(x)[0]
    n_dtype = _dtypes.result_type_and_weakness(n)[0]
    if not (_np.issubdtype(x_dtype, _np.integer) and _np.issubdtype(n_dtype, _np.integer)):
        raise ValueError("x and n must be of integer type; got "
                         f"x.dtype={_np.dtype(_dtypes.canonicalize_dtype(x_dtype)).name}, "
                         f"n.dtype={_np.dtype(_dtypes.canonicalize_dtype(n_dtype)).name}")
    total = _jnp.sum(x)
    x, n, p = _promote(x, n, p)
    log_probs = _special.gammaln(n + 1) + _jnp.sum(
        _special.xlogy(x, p) - _special.gammaln(x + 1), axis=-1)
    return _jnp.where(total == n, log_probs, -_jnp.inf)


def pmf(x, n, p):
    return _jnp.exp(logpmf(x, n, p))
