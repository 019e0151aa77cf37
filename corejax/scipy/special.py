"""Special functions: logsumexp, erf, erfc, erfinv, expit, logit, gammaln, xlogy."""
from __future__ import annotations

from corejax import lax
from corejax.core import get_aval
from corejax.custom_derivatives import custom_jvp
from corejax.numpy._core import canonicalize_axes, promote_dtypes_inexact
from corejax.numpy._eager_fusion import fuse_eagerly
import corejax.numpy as jnp

__all__ = ["logsumexp", "erf", "erfc", "erfinv", "expit", "logit", "gammaln", "xlogy", "xlog1py",
           "softmax", "log_softmax"]


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False, where=None):
    """log(sum(b * exp(a))) computed stably: the maximum is subtracted before exponentiating."""
    (a,) = promote_dtypes_inexact(a)
    aval = get_aval(a)
    axes = canonicalize_axes(axis, aval.ndim)
    if b is not None:
        a, b = promote_dtypes_inexact(a, b)
        b = jnp.broadcast_to(b, aval.shape)
        a = jnp.where(b != 0, a, -jnp.inf)
    # -inf as the max's initial value: empty and fully masked reductions give log(0) = -inf
    amax = jnp.max(a, axis=axes, keepdims=True, where=where, initial=-jnp.inf)
    amax = lax.stop_gradient(jnp.where(jnp.isfinite(amax), amax, jnp.zeros_like(amax)))
    # lax.sub, not jnp's: a weak `a` is not converted, so its gradient is strong as in JAX
    exp_a = jnp.exp(lax.sub(a, jnp.broadcast_to(amax, get_aval(a).shape)))
    if b is not None:
        exp_a = exp_a * b
    summed = jnp.sum(exp_a, axis=axes, keepdims=True, where=where)
    sign = jnp.sign(summed)
    out = jnp.log(jnp.abs(summed)) + amax
    if not keepdims:
        out = jnp.squeeze(out, axes)
        sign = jnp.squeeze(sign, axes)
    if return_sign:
        return out, sign
    if b is not None:
        out = jnp.where(sign < 0, jnp.nan, out)
    return out


def erf(x):
    (x,) = promote_dtypes_inexact(x)
    return lax.erf(x)


def erfc(x):
    (x,) = promote_dtypes_inexact(x)
    return lax.erfc(x)


def erfinv(x):
    (x,) = promote_dtypes_inexact(x)
    return lax.erf_inv(x)


def expit(x):
    (x,) = promote_dtypes_inexact(x)
    return lax.logistic(x)


@fuse_eagerly(1)
def logit(x):
    (x,) = promote_dtypes_inexact(x)
    return jnp.log(x / (1 - x))


def gammaln(x):
    (x,) = promote_dtypes_inexact(x)
    return lax.lgamma(x)


@custom_jvp
def xlogy(x, y):
    """x * log(y), defined as 0 where x == 0 (NaN still where y is NaN, as in JAX)."""
    x, y = promote_dtypes_inexact(x, y)
    computed = (x != 0) | jnp.isnan(y)
    safe_y = jnp.where(computed, y, jnp.ones_like(y))
    return jnp.where(computed, x * jnp.log(safe_y), jnp.zeros_like(x))


@xlogy.defjvp
def _xlogy_jvp(primals, tangents):
    x, y = primals
    tx, ty = tangents
    out = xlogy(x, y)
    return out, tx * jnp.log(y) + ty * x / y


@custom_jvp
def xlog1py(x, y):
    """x * log1p(y), defined as 0 where x == 0 (NaN still where y is NaN, as in JAX)."""
    x, y = promote_dtypes_inexact(x, y)
    computed = (x != 0) | jnp.isnan(y)
    safe_y = jnp.where(computed, y, jnp.zeros_like(y))
    return jnp.where(computed, x * jnp.log1p(safe_y), jnp.zeros_like(x))


@xlog1py.defjvp
def _xlog1py_jvp(primals, tangents):
    x, y = primals
    tx, ty = tangents
    return xlog1py(x, y), tx * jnp.log1p(y) + ty * x / (1 + y)


def softmax(x, /, *, axis=None):
    from corejax.nn import softmax as _softmax
    return _softmax(x, axis=axis)


def log_softmax(x, /, *, axis=None):
    from corejax.nn import log_softmax as _log_softmax
    return _log_softmax(x, axis=axis)


# The rest of jax.scipy.special, by theme.
from corejax.scipy._special_gamma import (  # noqa: E402
    bernoulli, beta, betainc, betaln, comb, digamma, factorial, gamma, gammainc, gammaincc,
    gammasgn, loggamma, multigammaln, poch, polygamma, zeta,
)
from corejax.scipy._special_error import (  # noqa: E402
    dawsn, erfcx, fresnel, log_ndtr, ndtr, ndtri, owens_t,
)
from corejax.scipy._special_complex import sph_harm_y, wofz  # noqa: E402
from corejax.scipy._special_misc import (  # noqa: E402
    bessel_jn, boxcox, boxcox1p, entr, exp1, expi, expn, hyp1f1, hyp2f1, i0, i0e, i1, i1e,
    kl_div, rel_entr, sici, spence,
)

__all__ += ["bernoulli", "beta", "betainc", "betaln", "comb", "digamma", "factorial", "gamma",
            "gammainc", "gammaincc", "gammasgn", "loggamma", "multigammaln", "poch", "polygamma",
            "zeta", "dawsn", "erfcx", "fresnel", "log_ndtr", "ndtr", "ndtri", "owens_t",
            "bessel_jn", "boxcox", "boxcox1p", "entr", "exp1", "expi", "expn", "hyp1f1",
            "hyp2f1", "i0", "i0e", "i1", "i1e", "kl_div", "rel_entr", "sici", "spence",
            "sph_harm_y", "wofz"]
