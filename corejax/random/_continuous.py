"""Continuous distributions that transform normal / uniform / exponential draws: cauchy,
lognormal, pareto, rayleigh, wald, weibull_min, maxwell, double_sided_maxwell, triangular,
multivariate_normal and orthogonal. Each is JAX's construction with JAX's arithmetic, so the
same key gives the same sample."""
from __future__ import annotations

import operator

import numpy as np

from corejax import core, dtypes, lax
from corejax import numpy as jnp
from corejax.api import jit
from corejax.numpy._core import promote_dtypes_inexact
from corejax.random._basic import (_sample_float, _check_all_safe_to_cast, _check_broadcast_shapes,
                                   _check_shape, _dtype, _exponential, _float_dtype, _normal,
                                   _rademacher, _uniform, _unit)
from corejax.random._keys import _shape, _single_key, _split_n


def _cauchy(words, shape, dt):
    u = _uniform(words, shape, dt, np.finfo(dt).eps, 1.0)
    return lax.tan(lax.mul(np.array(np.pi, dt), lax.sub(u, np.array(0.5, dt))))


_cauchy_jit = jit(_cauchy, static_argnums=(1, 2))


def cauchy(key, shape=(), dtype=None):
    """Standard Cauchy floats."""
    words, _ = _single_key("cauchy", key)
    dt = _float_dtype("cauchy", dtype)
    return _cauchy_jit(words, _shape("cauchy", shape), dt)


def _lognormal(words, sigma, shape, dt):
    sigma = lax.convert_element_type(sigma, dt)
    return lax.exp(_normal(words, shape, dt) * sigma)


_lognormal_jit = jit(_lognormal, static_argnums=(2, 3))


def lognormal(key, sigma=np.float32(1), shape=None, dtype=None):
    """exp(sigma * standard normal) floats."""
    words, _ = _single_key("lognormal", key)
    dt = _dtype("lognormal", dtype, dtypes.default_float_dtype, "fc", "a float or complex")
    shape = _check_broadcast_shapes("lognormal", shape, sigma)
    _check_all_safe_to_cast("lognormal", dt, sigma)
    return _lognormal_jit(words, sigma, shape, dt)


def _pareto(words, b, shape, dt):
    b = lax.convert_element_type(b, dt)
    return lax.exp(_exponential(words, shape, dt) / b)


_pareto_jit = jit(_pareto, static_argnums=(2, 3))


def pareto(key, b, shape=None, dtype=None):
    """Pareto(b) floats >= 1 (density b / x^(b + 1))."""
    return _sample_float("pareto", _pareto_jit, key, (b,), shape, dtype)


def _rayleigh(words, scale, shape, dt):
    u = _unit(words, shape, dt)
    scale = jnp.broadcast_to(lax.convert_element_type(scale, dt), shape)
    return lax.mul(scale, lax.sqrt(lax.mul(lax.log(u), np.array(-2, dt))))


_rayleigh_jit = jit(_rayleigh, static_argnums=(2, 3))


def rayleigh(key, scale, shape=None, dtype=None):
    """Rayleigh(scale) floats."""
    return _sample_float("rayleigh", _rayleigh_jit, key, (scale,), shape, dtype)


def _wald(words, mean, shape, dt):
    k1, k2 = _split_n(words, 2)
    mean = jnp.broadcast_to(lax.convert_element_type(mean, dt), shape)
    v = _normal(k1, shape, dt)
    z = _unit(k2, shape, dt)
    # Michael, Schucany and Haas: the smaller root of the chi-square(1) quadratic, or its
    # reflection mean^2 / x.
    y = lax.integer_pow(v, 2)
    y_sq = lax.integer_pow(y, 2)
    mean_sq = lax.integer_pow(mean, 2)
    sqrt_term = lax.sqrt(4 * mean * y + mean_sq * y_sq)
    x = mean + mean_sq * y / 2 - mean / 2 * sqrt_term
    return lax.select(lax.le(z, mean / (mean + x)), x, mean_sq / x)


_wald_jit = jit(_wald, static_argnums=(2, 3))


def wald(key, mean, shape=None, dtype=None):
    """Wald (inverse Gaussian) floats with the given mean and unit shape parameter."""
    return _sample_float("wald", _wald_jit, key, (mean,), shape, dtype)


def _weibull_min(words, scale, concentration, shape, dt):
    u = _uniform(words, shape, dt, 0, 1)
    # The inverse of the Weibull CDF.
    return jnp.power(-jnp.log1p(-u), 1.0 / concentration) * scale


_weibull_min_jit = jit(_weibull_min, static_argnums=(3, 4))


def weibull_min(key, scale, concentration, shape=(), dtype=None):
    """Weibull floats with the given scale and concentration."""
    words, _ = _single_key("weibull_min", key)
    dt = _float_dtype("weibull_min", dtype)
    return _weibull_min_jit(words, scale, concentration, _shape("weibull_min", shape), dt)


def _maxwell(words, shape, dt):
    # The length of a standard normal 3-vector.
    return jnp.linalg.norm(_normal(words, tuple(shape) + (3,), dt), axis=-1)


_maxwell_jit = jit(_maxwell, static_argnums=(1, 2))


def maxwell(key, shape=(), dtype=None):
    """One-sided Maxwell floats (density proportional to x^2 exp(-x^2 / 2))."""
    words, _ = _single_key("maxwell", key)
    dt = _float_dtype("maxwell", dtype)
    return _maxwell_jit(words, _shape("maxwell", shape), dt)


def _double_sided_maxwell(words, loc, scale, shape, dt):
    params_shape = tuple(jnp.broadcast_shapes(np.shape(loc), np.shape(scale)))
    # As JAX: the parameters' shape is appended to `shape` (and is the shape when () is given).
    shape = (tuple(shape) or params_shape) + params_shape
    maxwell_key, sign_key = _split_n(words, 2)
    magnitudes = _maxwell(maxwell_key, shape, dt)
    signs = _rademacher(sign_key, shape, dt)
    return signs * magnitudes * scale + loc


_double_sided_maxwell_jit = jit(_double_sided_maxwell, static_argnums=(3, 4))


def double_sided_maxwell(key, loc, scale, shape=(), dtype=None):
    """Maxwell magnitudes with random signs, scaled by `scale` around `loc`."""
    words, _ = _single_key("double_sided_maxwell", key)
    dt = _float_dtype("double_sided_maxwell", dtype)
    shape = _shape("double_sided_maxwell", shape)
    return _double_sided_maxwell_jit(words, loc, scale, shape, dt)


def _triangular(words, left, mode, right, shape, dt):
    left, right, mode = (jnp.broadcast_to(lax.convert_element_type(x, dt), shape)
                         for x in (left, right, mode))
    fc = (mode - left) / (right - left)
    u = _unit(words, shape, dt)
    # The inverse CDF: the rising side below fc, the falling side above.
    out1 = left + lax.sqrt(u * (right - left) * (mode - left))
    out2 = right - lax.sqrt((1 - u) * (right - left) * (right - mode))
    return lax.select(u < fc, out1, out2)


_triangular_jit = jit(_triangular, static_argnums=(4, 5))


def triangular(key, left, mode, right, shape=None, dtype=None):
    """Triangular floats on [left, right] peaking at `mode`."""
    return _sample_float("triangular", _triangular_jit, key, (left, mode, right), shape, dtype)


# --- multivariate normal and random orthogonal matrices ------------------------------------------

def _multivariate_normal(words, mean, cov, shape, dt, method):
    if mean.ndim < 1:
        raise ValueError(f"multivariate_normal requires mean.ndim >= 1, got mean.ndim == "
                         f"{mean.ndim}")
    if cov.ndim < 2:
        raise ValueError(f"multivariate_normal requires cov.ndim >= 2, got cov.ndim == "
                         f"{cov.ndim}")
    n = mean.shape[-1]
    if cov.shape[-2:] != (n, n):
        raise ValueError(f"multivariate_normal requires cov.shape == (..., n, n) for n={n}, "
                         f"but got cov.shape == {cov.shape}.")
    if shape is None:
        shape = tuple(jnp.broadcast_shapes(mean.shape[:-1], cov.shape[:-2]))
    else:
        _check_shape("normal", shape, mean.shape[:-1], cov.shape[:-2])
    if method == "svd":
        u, s, _ = jnp.linalg.svd(cov)
        factor = u * jnp.sqrt(s[..., None, :])
    elif method == "eigh":
        w, v = jnp.linalg.eigh(cov)
        factor = v * jnp.sqrt(w[..., None, :])
    else:
        factor = jnp.linalg.cholesky(cov)
    samples = _normal(words, tuple(shape) + mean.shape[-1:], dt)
    return mean + jnp.einsum("...ij,...j->...i", factor, samples)


_multivariate_normal_jit = jit(_multivariate_normal, static_argnums=(3, 4, 5))


def multivariate_normal(key, mean, cov, shape=None, dtype=None, method="cholesky"):
    """Normal vectors with the given mean (..., n) and covariance (..., n, n); `method`
    factors the covariance ('cholesky', or 'eigh' / 'svd' for singular ones)."""
    words, _ = _single_key("multivariate_normal", key)
    mean, cov = promote_dtypes_inexact(mean, cov)
    if method not in {"svd", "eigh", "cholesky"}:
        raise ValueError("method must be one of {'svd', 'eigh', 'cholesky'}")
    dt = mean.dtype if dtype is None else _float_dtype("multivariate_normal", dtype)
    if not dtypes.is_float(dt):
        raise ValueError(f"dtype argument to `multivariate_normal` must be a float dtype, "
                         f"got {dt}")
    if shape is not None:
        shape = _shape("multivariate_normal", shape)
    return _multivariate_normal_jit(words, mean, cov, shape, dt, method)


def _orthogonal(words, n, m, shape, dt):
    z = _normal(words, (*shape, max(n, m), min(n, m)), dt)
    q, r = jnp.linalg.qr(z)
    # Haar measure: fix each column's sign by the sign of R's diagonal (Mezzadri).
    d = jnp.diagonal(r, axis1=-2, axis2=-1)
    x = q * jnp.expand_dims(jnp.sign(d), -2)
    return jnp.swapaxes(x, -1, -2) if n < m else x


_orthogonal_jit = jit(_orthogonal, static_argnums=(1, 2, 3, 4))


def orthogonal(key, n, shape=(), dtype=None, m=None):
    """Haar-random (n, m) matrices with orthonormal rows or columns (unitary for complex
    dtypes); shape is the batch shape."""
    m = n if m is None else m
    shape = _shape("orthogonal", shape)
    words, _ = _single_key("orthogonal", key)
    dt = dtypes.canonicalize_dtype(dtypes.default_float_dtype() if dtype is None else dtype)
    n = core.concrete_or_error(operator.index, n, "The error occurred in jax.random.orthogonal()")
    m = core.concrete_or_error(operator.index, m, "The error occurred in jax.random.orthogonal()")
    return _orthogonal_jit(words, n, m, shape, dt)
