"""Special-function primitives: digamma, polygamma, the incomplete gamma family (igamma,
igammac, igamma_grad_a, random_gamma_grad), the Hurwitz zeta function, the regularized
incomplete beta function, exponentially scaled modified Bessel functions of orders 0 and 1, and
five that jax.lax does not export: random_gamma_grad_da (random_gamma_grad's derivative in a)
and four that jax.scipy.special needs (zeta_ds, the derivative of zeta in its exponent; betaln;
erfcx; ndtri).

Each is elementwise over operands of one floating dtype, with its differentiation rule right
after its definition. Evaluation, eager and compiled alike, runs the float64 scalar algorithms
of `_special_kernels` (Numba): eagerly over whole arrays, under jit inlined into the fused CPU
kernels. The CUDA backend has no device versions of them: a fused group that contains one runs
on the host there.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.util
import math

from corejax.core import ShapedArray, get_aval
from corejax.lax._factories import check_dtype, naryop, unop
from corejax.lax.elementwise import (_const, _one, _prepare, add, div, eq, exp, full, lgamma,
                                     log, mul, neg, select, sign, sub)
from corejax.transforms.ad import defjvp

__all__ = []  # the public functions are re-exported by corejax.lax

_FLOAT = ("floating",)


def _eager(name, prim_name=None):
    """The eager implementation: the kernel over arrays (Numba is imported on first use).
    Eager calls skip abstract evaluation, so the dtype is checked here."""
    def impl(*args):
        for a in args:
            check_dtype(prim_name or name, ShapedArray(a.shape, a.dtype), _FLOAT)
        from corejax.lax import _special_kernels
        return _special_kernels.evaluate(name, *args)
    impl.__name__ = f"{name}_impl"
    return impl


@functools.lru_cache(maxsize=None)
def _kernels_digest() -> str:
    """A digest of _special_kernels' source. Generated kernels are cached on disk by their own
    source, and Numba does not notice when an inlined callee changes: naming the digest in the
    import line makes a changed kernel module a new kernel."""
    origin = importlib.util.find_spec("corejax.lax._special_kernels").origin
    with open(origin, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:16]


def _kernel_rule(name):
    """The elementwise lowering: the compiler's vectorizable function for the dtype where it
    has one (float32 digamma, zeta, polygamma, ...), else a call of the scalar kernel in
    float64, rounded once."""
    def rule(ctx, *operands):
        if ctx.backend != "cpu":
            raise NotImplementedError(f"{name} has no {ctx.backend} device kernel")
        fast = ctx.fast(name, *operands)    # a vectorizable kernel for this dtype, if any
        if fast is not None:
            return fast
        alias = f"special_{name}"
        ctx.imports.add(f"from corejax.lax._special_kernels import {name} as {alias}  "
                        f"# source {_kernels_digest()}")
        wide = ", ".join(f"np.float64({x})" for x in operands)
        return f"np.{ctx.out_dtype.name}({alias}({wide}))"
    rule.cpu_only = True  # the CUDA backend runs a group holding one on the host
    # eager calls run this rule's compiled loop too (compiler/eager_kernels: split over the
    # cores; the float32 kernel where fastmath has one, as jit)
    rule.eager_kernel = True
    return rule


def _special_unop(name):
    return unop(name, _eager(name), _FLOAT, _kernel_rule(name))


def _special_naryop(name, arity, kernel=None):
    """An elementwise primitive of `arity` operands evaluated by the scalar kernel `kernel`
    (by default the primitive's own name)."""
    prim = naryop(name, _eager(kernel or name, name), (_FLOAT,) * arity,
                  _kernel_rule(kernel or name))
    checked = prim.abstract_eval

    def abstract_eval(*avals, **params):
        if len(avals) != arity:
            raise TypeError(f"{name} takes {arity} operands, got {len(avals)}.")
        return checked(*avals, **params)

    prim.def_abstract_eval(abstract_eval)
    return prim


def _unsupported(error, message):
    def rule(t, ans, *primals):
        raise error(message)
    return rule


# --- digamma and polygamma ---------------------------------------------------------------------

digamma_p = _special_unop("digamma")
defjvp(digamma_p, lambda t, ans, x: mul(t, polygamma(_const(x, 1), x)))

polygamma_p = _special_naryop("polygamma", 2)
defjvp(polygamma_p,
       _unsupported(ValueError, "polygamma gradient with respect to m is not supported"),
       lambda t, ans, m, x: mul(t, polygamma(add(m, _one(m)), x)))


# --- incomplete gamma functions ----------------------------------------------------------------

def _gamma_density(a, x):
    """d/dx P(a, x) = x^(a-1) e^-x / Gamma(a)."""
    return exp(sub(sub(mul(sub(a, _one(a)), log(x)), x), lgamma(a)))


igamma_p = _special_naryop("igamma", 2)
defjvp(igamma_p,
       lambda t, ans, a, x: mul(t, igamma_grad_a(a, x)),
       lambda t, ans, a, x: mul(t, _gamma_density(a, x)))

igammac_p = _special_naryop("igammac", 2)
defjvp(igammac_p,
       lambda t, ans, a, x: neg(mul(t, igamma_grad_a(a, x))),
       lambda t, ans, a, x: neg(mul(t, _gamma_density(a, x))))

igamma_grad_a_p = _special_naryop("igamma_grad_a", 2)
defjvp(igamma_grad_a_p,
       *[_unsupported(NotImplementedError,
                      "Differentiation rule for 'igamma_grad_a' not implemented")] * 2)

random_gamma_grad_p = _special_naryop("random_gamma_grad", 2)


def _random_gamma_grad_jvp_x(t, ans, a, x):
    # ans = -(dP/da) / (dP/dx); d/dx (dP/da) = (dP/dx) (log x - digamma(a)) and
    # d/dx (dP/dx) = (dP/dx) ((a - 1) / x - 1).
    slope = add(sub(log(x), digamma(a)), mul(ans, sub(div(sub(a, _one(a)), x), _one(x))))
    return neg(mul(t, slope))


random_gamma_grad_da_p = _special_naryop("random_gamma_grad_da", 2)
defjvp(random_gamma_grad_da_p,
       *[_unsupported(NotImplementedError, "random_gamma_grad's derivatives beyond the second "
                                           "in a are not provided")] * 2)
defjvp(random_gamma_grad_p,
       lambda t, ans, a, x: mul(t, random_gamma_grad_da(a, x)),
       _random_gamma_grad_jvp_x)


# --- Hurwitz zeta -----------------------------------------------------------------------------

zeta_p = _special_naryop("zeta", 2)
defjvp(zeta_p,
       lambda t, ans, s, q: mul(t, zeta_ds(s, q)),
       lambda t, ans, s, q: mul(t, neg(mul(s, zeta(add(s, _one(s)), q)))))

zeta_ds_p = _special_naryop("zeta_ds", 2)
# d/dq zeta_s(s, q) = d/ds (-s zeta(s + 1, q)) = -zeta(s + 1, q) - s zeta_s(s + 1, q)
defjvp(zeta_ds_p,
       _unsupported(NotImplementedError, "zeta's second derivative in its exponent x is not "
                                         "provided"),
       lambda t, ans, s, q: neg(mul(t, add(zeta(add(s, _one(s)), q),
                                           mul(s, zeta_ds(add(s, _one(s)), q))))))


# --- regularized incomplete beta ------------------------------------------------------------

regularized_incomplete_beta_p = _special_naryop("regularized_incomplete_beta", 3, "betainc")


def _betainc_jvp_x(t, ans, a, b, x):
    one = _one(x)
    log_beta = sub(add(lgamma(a), lgamma(b)), lgamma(add(a, b)))
    log_density = sub(add(mul(sub(a, one), log(x)), mul(sub(b, one), log(sub(one, x)))),
                      log_beta)
    return mul(t, exp(log_density))


_betainc_ab = _unsupported(ValueError, "Betainc gradient with respect to a and b not supported.")
defjvp(regularized_incomplete_beta_p, _betainc_ab, _betainc_ab, _betainc_jvp_x)


# --- log B(a, b) (jax.scipy.special.betaln) ----------------------------------------------------

betaln_p = _special_naryop("betaln", 2)
defjvp(betaln_p,
       lambda t, ans, a, b: mul(t, sub(digamma(a), digamma(add(a, b)))),
       lambda t, ans, a, b: mul(t, sub(digamma(b), digamma(add(a, b)))))


# --- modified Bessel functions of orders 0 and 1, exponentially scaled ------------------------

bessel_i0e_p = _special_unop("bessel_i0e")
defjvp(bessel_i0e_p,
       lambda t, ans, x: mul(t, sub(bessel_i1e(x), mul(sign(x), ans))))

bessel_i1e_p = _special_unop("bessel_i1e")


def _bessel_i1e_jvp(t, ans, x):
    # i1e' = i0e - i1e (sign(x) + 1/x), whose limit at 0 is 1/2
    zero = eq(x, full(get_aval(x).shape, 0, get_aval(x).dtype))
    safe_x = select(zero, full(get_aval(x).shape, 1, get_aval(x).dtype), x)
    slope = sub(bessel_i0e(x), mul(ans, add(sign(x), div(_one(x), safe_x))))
    half = full(get_aval(x).shape, 0.5, get_aval(x).dtype, get_aval(x).weak_type)
    return mul(t, select(zero, half, slope))


defjvp(bessel_i1e_p, _bessel_i1e_jvp)


# --- erfcx and ndtri (jax.scipy.special) --------------------------------------------------------

erfcx_p = _special_unop("erfcx")
defjvp(erfcx_p, lambda t, ans, x: mul(t, sub(mul(mul(_const(x, 2), x), ans),
                                              _const(x, 2 / math.sqrt(math.pi)))))

ndtri_p = _special_unop("ndtri")
# d/dp Phi^-1(p) = 1 / phi(Phi^-1(p)) = sqrt(2 pi) exp(y^2 / 2)
defjvp(ndtri_p, lambda t, ans, p: mul(t, mul(_const(ans, math.sqrt(2 * math.pi)),
                                              exp(mul(_const(ans, 0.5), mul(ans, ans))))))


# --- public functions ------------------------------------------------------------------------

def digamma(x):
    """The digamma function psi(x) = d/dx log Gamma(x) (lax.digamma)."""
    return digamma_p.bind(x)


def polygamma(m, x):
    """The polygamma function psi^(m)(x), the m-th derivative of digamma; m is a
    non-negative integer held in a float (nan otherwise) (lax.polygamma)."""
    return polygamma_p.bind(*_prepare(m, x, name="polygamma"))


def igamma(a, x):
    """The regularized lower incomplete gamma function P(a, x) (lax.igamma)."""
    return igamma_p.bind(*_prepare(a, x, name="igamma"))


def igammac(a, x):
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x) (lax.igammac)."""
    return igammac_p.bind(*_prepare(a, x, name="igammac"))


def igamma_grad_a(a, x):
    """d/da P(a, x) (lax.igamma_grad_a)."""
    return igamma_grad_a_p.bind(*_prepare(a, x, name="igamma_grad_a"))


def random_gamma_grad(a, x):
    """How a Gamma(a) sample x moves with a: -(dP/da) / (dP/dx) (lax.random_gamma_grad)."""
    return random_gamma_grad_p.bind(*_prepare(a, x, name="random_gamma_grad"))


def random_gamma_grad_da(a, x):
    """d/da random_gamma_grad(a, x) (its derivative in a; not a jax.lax name)."""
    return random_gamma_grad_da_p.bind(a, x)


def zeta(x, q):
    """The Hurwitz zeta function sum_k (q + k)^-x (lax.zeta)."""
    return zeta_p.bind(*_prepare(x, q, name="zeta"))


def zeta_ds(x, q):
    """d/dx zeta(x, q) (the derivative of lax.zeta in its exponent; not a jax.lax name)."""
    return zeta_ds_p.bind(x, q)


def betaln(a, b):
    """log B(a, b) (the primitive behind jax.scipy.special.betaln)."""
    return betaln_p.bind(a, b)


def betainc(a, b, x):
    """The regularized incomplete beta function I_x(a, b) (lax.betainc)."""
    return regularized_incomplete_beta_p.bind(*_prepare(a, b, x, name="betainc"))


def bessel_i0e(x):
    """e^-|x| I0(x) (lax.bessel_i0e)."""
    return bessel_i0e_p.bind(x)


def bessel_i1e(x):
    """e^-|x| I1(x) (lax.bessel_i1e)."""
    return bessel_i1e_p.bind(x)


def erfcx(x):
    """exp(x^2) erfc(x) (the primitive behind jax.scipy.special.erfcx)."""
    return erfcx_p.bind(x)


def ndtri(p):
    """The standard normal quantile (the primitive behind jax.scipy.special.ndtri)."""
    return ndtri_p.bind(p)
