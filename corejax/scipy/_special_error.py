"""jax.scipy.special: the normal distribution function and its relatives (ndtr, ndtri,
log_ndtr, erfcx, Dawson's integral, the Fresnel integrals, Owen's T function)."""
from __future__ import annotations

import math

import numpy as np

from corejax import lax
from corejax.core import get_aval
from corejax.custom_derivatives import custom_jvp
from corejax.lax import _special_host
from corejax.lax import special as lax_special
from corejax.numpy._core import promote_dtypes_inexact
from corejax.numpy._eager_fusion import fuse_eagerly
from corejax.scipy._special_gamma import promote_inexact_broadcast, strong
import corejax.numpy as jnp

__all__ = ["ndtr", "ndtri", "log_ndtr", "erfcx", "dawsn", "fresnel", "owens_t"]

_SQRT_HALF = 1 / math.sqrt(2)


def _float32_or_64(x, message_tail=", see docstring for supported types."):
    """`x` as a float32 / float64 array (strongly typed), or JAX's TypeError."""
    x = jnp.asarray(x)
    dt = np.dtype(get_aval(x).dtype)
    if dt not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise TypeError(f"x.dtype={dt.name} is not supported{message_tail}")
    return strong(x)


@fuse_eagerly(1)
def ndtr(x):
    """The standard normal distribution function Phi(x) (float32 / float64 only)."""
    x = _float32_or_64(x)
    w = x * _SQRT_HALF
    z = jnp.abs(w)
    central = 0.5 + 0.5 * lax.erf(w)
    tail = 0.5 * lax.erfc(z)
    return jnp.where(z < _SQRT_HALF, central, jnp.where(w > 0, 1 - tail, tail))


def ndtri(p):
    """The standard normal quantile Phi^-1(p) (float32 / float64 only)."""
    return lax_special.ndtri(_float32_or_64(p))


@custom_jvp
def _log_ndtr(x):
    # lower tail through erfcx (no underflow), upper tail through log1p of the small erfc
    z = -x * _SQRT_HALF
    lower = jnp.log(0.5 * lax_special.erfcx(jnp.maximum(z, 0))) - z * z
    upper = jnp.log1p(-0.5 * lax.erfc(jnp.maximum(-z, 0)))
    return jnp.where(z > 0, lower, upper)


@_log_ndtr.defjvp
def _log_ndtr_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    out = _log_ndtr(x)
    # d/dx log Phi(x) = phi(x) / Phi(x): sqrt(2 / pi) / erfcx(-x / sqrt 2) in the lower tail
    z = -x * _SQRT_HALF
    lower = math.sqrt(2 / math.pi) / lax_special.erfcx(jnp.maximum(z, 0))
    upper = jnp.exp(-0.5 * x * x - out) / math.sqrt(2 * math.pi)
    return out, t * jnp.where(z > 0, lower, upper)


def log_ndtr(x, series_order=3):
    """log Phi(x), accurate far into both tails (float32 / float64 only). `series_order` is
    validated as JAX does (0 ... 30); the value comes from erfcx, so it is not an asymptotic
    series that the order would truncate."""
    if not isinstance(series_order, int):
        raise TypeError("series_order must be a Python integer.")
    if series_order < 0:
        raise ValueError("series_order must be non-negative.")
    if series_order > 30:
        raise ValueError("series_order must be <= 30.")
    return _log_ndtr(_float32_or_64(x, "."))


def erfcx(x):
    """The scaled complementary error function exp(x^2) erfc(x)."""
    (x,) = promote_dtypes_inexact(x)
    return lax_special.erfcx(strong(x))


def dawsn(x):
    """Dawson's integral exp(-x^2) int_0^x exp(t^2) dt."""
    (x,) = promote_dtypes_inexact(x)
    return _special_host.dawsn(strong(x))


def fresnel(x):
    """The Fresnel integrals (S(x), C(x)) = int_0^x (sin, cos)(pi t^2 / 2) dt."""
    (x,) = promote_dtypes_inexact(x)
    return _special_host.fresnel(strong(x))


def owens_t(h, a):
    """Owen's T function T(h, a) (computed in float32 at least, as JAX does)."""
    h, a = promote_inexact_broadcast(h, a)
    if np.dtype(get_aval(h).dtype).itemsize < 4:
        h = lax.convert_element_type(h, np.float32)
        a = lax.convert_element_type(a, np.float32)
    return _special_host.owens_t(strong(h), strong(a))

