"""jax.scipy.special: the gamma function and its relatives (digamma, polygamma, the incomplete
gamma and beta functions, beta, Pochhammer's symbol, factorials, binomial coefficients, the
multivariate log-gamma, the Hurwitz zeta function, Bernoulli numbers)."""
from __future__ import annotations

import math
import operator
from fractions import Fraction

import numpy as np

from corejax import dtypes, lax
from corejax.core import get_aval
from corejax.lax import special as lax_special
from corejax.numpy._core import promote_dtypes_inexact
from corejax.numpy._eager_fusion import fuse_eagerly
import corejax.numpy as jnp

__all__ = ["digamma", "polygamma", "gammainc", "gammaincc", "gamma", "gammasgn", "loggamma",
           "beta", "betaln", "betainc", "poch", "factorial", "comb", "multigammaln", "zeta",
           "bernoulli"]


def promote_inexact_broadcast(*args):
    """The arguments promoted to their common inexact dtype and broadcast to one shape."""
    return jnp.broadcast_arrays(*promote_dtypes_inexact(*args))


def strong(x):
    """`x` without its weak type (where JAX's function returns a strongly typed result even
    for Python scalars)."""
    aval = get_aval(x)
    return lax.convert_element_type(x, aval.dtype) if aval.weak_type else x


def digamma(x):
    """The digamma function psi(x), the derivative of log Gamma."""
    (x,) = promote_dtypes_inexact(x)
    return lax.digamma(x)


def polygamma(n, x):
    """The n-th derivative of the digamma function; `n` must be of an integer dtype."""
    n_dtype = dtypes.result_type_and_weakness(n)[0]
    if not np.issubdtype(n_dtype, np.integer):
        raise ValueError(f"Argument `n` to polygamma must be of integer type. Got dtype "
                         f"{np.dtype(dtypes.canonicalize_dtype(n_dtype)).name}.")
    (x,) = promote_dtypes_inexact(x)
    aval = get_aval(x)
    n = lax.convert_element_type(n, aval.dtype, weak_type=aval.weak_type)
    n, x = jnp.broadcast_arrays(n, x)
    return lax.polygamma(n, x)


def gammainc(a, x):
    """The regularized lower incomplete gamma function P(a, x)."""
    return lax.igamma(*promote_inexact_broadcast(a, x))


def gammaincc(a, x):
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)."""
    return lax.igammac(*promote_inexact_broadcast(a, x))


@fuse_eagerly(1)
def gammasgn(x):
    """The sign of the gamma function: -1 or 1, -1 at -0, nan at the poles (0 excepted)."""
    (x,) = promote_dtypes_inexact(x)
    x = strong(x)
    one = jnp.ones_like(x)
    floor = jnp.floor(x)
    half = floor * 0.5                  # exact; its floor differs where floor(x) is odd (a
    odd = jnp.floor(half) != half       # remainder would be a libm fmod call: no vector loop)
    negative = jnp.where(odd, -one, one)
    out = jnp.where(x > 0, one,
                    jnp.where(x == 0, jnp.copysign(one, x),
                              jnp.where(x == floor, jnp.full_like(x, jnp.nan), negative)))
    return jnp.where(jnp.isnan(x), x, out)


@fuse_eagerly(1)
def gamma(x):
    """The gamma function, as gammasgn(x) * exp(gammaln(x))."""
    (x,) = promote_dtypes_inexact(x)
    x = strong(x)
    return gammasgn(x) * jnp.exp(lax.lgamma(x))


@fuse_eagerly(1)
def loggamma(x):
    """log Gamma(x) for real x > 0; nan elsewhere (the real branch of the complex log-gamma)."""
    (x,) = promote_dtypes_inexact(x)
    return jnp.where(x > 0, lax.lgamma(x), jnp.full_like(x, jnp.nan))


def betaln(a, b):
    """log B(a, b) = log Gamma(a) + log Gamma(b) - log Gamma(a + b) for a, b >= 0."""
    return lax_special.betaln(*promote_inexact_broadcast(a, b))


def beta(a, b):
    """The beta function B(a, b) = exp(betaln(a, b))."""
    a, b = promote_inexact_broadcast(a, b)
    return strong(jnp.exp(lax_special.betaln(a, b)))


def betainc(a, b, x):
    """The regularized incomplete beta function I_x(a, b)."""
    return lax.betainc(*promote_inexact_broadcast(a, b, x))


def poch(z, m):
    """Pochhammer's symbol (z)_m = Gamma(z + m) / Gamma(z); 1 where m == 0."""
    z, m = promote_inexact_broadcast(z, m)
    z, m = strong(z), strong(m)
    ratio = gamma(z + m) / gamma(z)
    return jnp.where(m == 0, jnp.ones_like(ratio), ratio)


def factorial(n, exact=False):
    """n! = Gamma(n + 1) for n >= 0, 0 for n < 0 (exact=True is not supported, as in JAX)."""
    if exact:
        raise NotImplementedError("factorial with exact=True")
    (n,) = promote_dtypes_inexact(n)
    return jnp.where(n < 0, jnp.zeros_like(n), jnp.exp(lax.lgamma(n + 1)))


def comb(N, k, *, repetition=False):
    """The number of combinations of N things taken k at a time, Gamma-based (0 where k > N,
    N < 0 or k < 0; with repetition, comb(N + k - 1, k))."""
    N, k = promote_inexact_broadcast(N, k)
    if repetition:
        N = N + k - 1
    one = jnp.ones_like(N)
    valid = (k <= N) & (N >= 0) & (k >= 0)
    value = jnp.exp(lax.lgamma(N + one) - lax.lgamma(k + one) - lax.lgamma(N - k + one))
    return jnp.where(valid, value, jnp.zeros_like(value))


def multigammaln(a, d):
    """The log of the multivariate gamma function of dimension `d` (a Python int)."""
    d = int(d)
    (a,) = promote_dtypes_inexact(a)
    a = strong(a)
    constant = d * (d - 1) / 4 * math.log(math.pi)
    terms = [lax.lgamma(a - j / 2) for j in range(d)]
    total = jnp.zeros_like(a) if not terms else terms[0]
    for t in terms[1:]:
        total = total + t
    return total + jnp.asarray(constant, get_aval(a).dtype)


def zeta(x, q=None):
    """The Hurwitz zeta function sum_k (q + k)^-x (x > 1); the Riemann zeta function (q
    omitted) is not implemented, as in JAX."""
    if q is None:
        raise NotImplementedError("Riemann zeta function not implemented; pass q != None to "
                                  "compute the Hurwitz Zeta function.")
    return lax.zeta(*promote_inexact_broadcast(x, q))


def bernoulli(n):
    """The Bernoulli numbers B_0 ... B_n (B_1 = -1/2) as an array of n + 1 floats."""
    n = operator.index(n)
    if n < 0:
        raise ValueError(f"n must be a non-negative integer, got {n}.")
    values, row = [], []
    for m in range(n + 1):
        row.append(Fraction(1, m + 1))
        for j in range(m, 0, -1):
            row[j - 1] = j * (row[j - 1] - row[j])
        values.append(row[0])
    if n >= 1:
        values[1] = Fraction(-1, 2)
    return jnp.asarray(np.array([float(v) for v in values]),
                       dtype=dtypes.default_float_dtype())
