"""jax.scipy.special: entropies and divergences, Box-Cox transforms, modified Bessel functions
of orders 0 and 1, Bessel functions of the first kind, the exponential, sine/cosine and
dilogarithm integrals, and the hypergeometric functions 1F1 and 2F1."""
from __future__ import annotations

import operator

import numpy as np

from corejax import lax
from corejax.core import get_aval
from corejax.custom_derivatives import custom_jvp
from corejax.lax import _special_host
from corejax.numpy._core import promote_dtypes_inexact
from corejax.numpy._eager_fusion import fuse_eagerly
from corejax.scipy._special_gamma import promote_inexact_broadcast, strong
import corejax.numpy as jnp

__all__ = ["entr", "kl_div", "rel_entr", "boxcox", "boxcox1p", "i0", "i0e", "i1", "i1e",
           "bessel_jn", "expi", "exp1", "expn", "spence", "sici", "hyp1f1", "hyp2f1"]


def _xlogy(x, y):
    from corejax.scipy.special import xlogy
    return xlogy(x, y)


@custom_jvp
def _xlogx(x):
    return _xlogy(x, x)


@_xlogx.defjvp
def _xlogx_jvp(primals, tangents):
    # d/dx x log x = log x + 1: inf at 0 (xlogy's rule would give log 0 + 0 / 0 = NaN); a zero
    # tangent there still gives NaN in forward mode, as in JAX
    (x,), (t,) = primals, tangents
    return _xlogx(x), t * (jnp.log(x) + 1)


def entr(x):
    """-x log x for x > 0, 0 at 0, -inf for x < 0."""
    (x,) = promote_dtypes_inexact(x)
    return jnp.where(x < 0, jnp.full_like(x, -jnp.inf), -_xlogx(x))


@fuse_eagerly(2)
def rel_entr(p, q):
    """p log(p / q) for p, q > 0; 0 for p == 0 <= q; inf otherwise."""
    p, q = promote_inexact_broadcast(p, q)
    both_positive = (p > 0) & (q > 0)
    safe_p = jnp.where(both_positive, p, jnp.ones_like(p))
    safe_q = jnp.where(both_positive, q, jnp.ones_like(q))
    value = safe_p * (jnp.log(safe_p) - jnp.log(safe_q))
    other = jnp.where((p == 0) & (q >= 0), jnp.zeros_like(p), jnp.full_like(p, jnp.inf))
    return jnp.where(both_positive, value, other)


def kl_div(p, q):
    """rel_entr(p, q) - p + q."""
    p, q = promote_inexact_broadcast(p, q)
    return rel_entr(p, q) - p + q


def _boxcox_common(log_x, lmbda):
    zero = lmbda == 0
    safe = jnp.where(zero, jnp.ones_like(lmbda), lmbda)
    return jnp.where(zero, log_x, jnp.expm1(safe * log_x) / safe)


def boxcox(x, lmbda):
    """The Box-Cox transform (x^lmbda - 1) / lmbda, log(x) at lmbda == 0."""
    x, lmbda = promote_inexact_broadcast(x, lmbda)
    return _boxcox_common(jnp.log(x), lmbda)


def boxcox1p(x, lmbda):
    """The Box-Cox transform of 1 + x."""
    x, lmbda = promote_inexact_broadcast(x, lmbda)
    return _boxcox_common(jnp.log1p(x), lmbda)


def i0e(x):
    """e^-|x| I0(x)."""
    (x,) = promote_dtypes_inexact(x)
    return lax.bessel_i0e(x)


def i0(x):
    """The modified Bessel function of the first kind of order 0."""
    (x,) = promote_dtypes_inexact(x)
    return jnp.exp(jnp.abs(x)) * lax.bessel_i0e(x)


def i1e(x):
    """e^-|x| I1(x)."""
    (x,) = promote_dtypes_inexact(x)
    return lax.bessel_i1e(x)


def i1(x):
    """The modified Bessel function of the first kind of order 1."""
    (x,) = promote_dtypes_inexact(x)
    return jnp.exp(jnp.abs(x)) * lax.bessel_i1e(x)


def bessel_jn(z, *, v, n_iter=50):
    """Bessel functions of the first kind J_0(z) ... J_v(z), stacked on a new leading axis.
    `n_iter` (the iteration count of JAX's backward recurrence) is validated but unused: the
    values come from SciPy's jv."""
    v = operator.index(v)
    n_iter = operator.index(n_iter)
    if v < 0:
        raise ValueError(f"bessel_jn requires a non-negative order v, got {v}.")
    if n_iter < 1:
        raise ValueError(f"bessel_jn requires n_iter >= 1, got {n_iter}.")
    (z,) = promote_dtypes_inexact(z)
    z = strong(z)
    return jnp.stack([_special_host.bessel_jn(z, order) for order in range(v + 1)])


def expi(x):
    """The exponential integral Ei(x)."""
    (x,) = promote_dtypes_inexact(x)
    return _special_host.expi(strong(x))


def exp1(x):
    """The exponential integral E1(x) = int_1^inf e^(-x t) / t dt."""
    (x,) = promote_dtypes_inexact(x)
    return _special_host.exp1(strong(x))


def expn(n, x):
    """The generalized exponential integral E_n(x) (n a non-negative integer, else nan)."""
    n, x = promote_inexact_broadcast(n, x)
    return _special_host.expn(strong(n), strong(x))


def spence(x):
    """Spence's function (dilogarithm) int_1^x log(t) / (1 - t) dt (float32 / float64)."""
    x = jnp.asarray(x)
    dt = np.dtype(get_aval(x).dtype)
    if dt not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise TypeError(f"x.dtype={dt.name} is not supported, see docstring for supported "
                        "types.")
    return _special_host.spence(strong(x))


def sici(x):
    """The sine and cosine integrals (Si(x), Ci(x))."""
    (x,) = promote_dtypes_inexact(x)
    return _special_host.sici(strong(x))


def hyp1f1(a, b, x):
    """Kummer's confluent hypergeometric function 1F1(a; b; x)."""
    a, b, x = promote_inexact_broadcast(a, b, x)
    return _special_host.hyp1f1(strong(a), strong(b), strong(x))


def hyp2f1(a, b, c, x):
    """The Gauss hypergeometric function 2F1(a, b; c; x)."""
    a, b, c, x = promote_inexact_broadcast(a, b, c, x)
    return _special_host.hyp2f1(strong(a), strong(b), strong(c), strong(x))
