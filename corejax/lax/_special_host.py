"""Special-function primitives behind jax.scipy.special's less common functions (Dawson's
integral, the Fresnel and sine/cosine integrals, Owen's T, Spence's function, the exponential
integrals, the confluent and Gauss hypergeometric functions, Bessel functions of the first kind
of integer order).

They evaluate through SciPy's special functions in float64, rounded once, with JAX's
conventions at special points applied on top (on float32, Ei, E1, Si, Ci and Dawson's integral
run compiled kernels of corejax's own with the same conventions: compiler/host_special.py),
and have no compiled lowering: under jit each runs as a host step between fused kernels
(corejax/compiler/registry.py).
"""
from __future__ import annotations

import math

import numpy as np

from corejax.core import get_aval
from corejax.lax._factories import naryop, unop
from corejax.lax.elementwise import (_const, _one, add, cos, div, eq, exp, full, log, mul, neg,
                                     select, sin, sub)
from corejax.lax.special import _unsupported
from corejax.transforms.ad import defjvp

__all__ = []

_FLOAT = ("floating",)


def _scipy(fn, float32_kernel=None):
    """An eager implementation from a float64 function of float64 arrays, rounded once; with
    `float32_kernel` (a name in compiler/host_special.FUNCTIONS), float32 operands run that
    compiled kernel instead (the same value to within its ulp bound, 30x faster), split over
    the free cores as eager elementwise kernels are. SciPy's loops release the GIL too: on
    operands of one shape a large call is cut into parts that run on the free cores
    (compiler/eager_kernels.call_host_split), each part computed as the whole would compute
    it. A jit program runs this impl as a host step: eager and jit give one value."""
    def rounded(*args, **params):
        wide = [np.asarray(a, np.float64) for a in args]
        with np.errstate(all="ignore"):
            out = fn(*wide, **params)
        return np.asarray(out, np.float64).astype(args[0].dtype)

    def impl(*args, **params):
        if float32_kernel is not None and args[0].dtype == np.float32:
            from corejax.compiler import host_special
            return host_special.evaluate(float32_kernel, args[0])
        from corejax.compiler import eager_kernels
        shape = np.shape(args[0])
        if math.prod(shape) < eager_kernels.SPLIT_MIN or any(np.shape(a) != shape
                                                            for a in args):
            return rounded(*args, **params)      # (never split: no parts to time or cut)
        out = np.empty(shape, args[0].dtype)
        key = (fn, tuple(sorted(params.items())), out.dtype)
        eager_kernels.call_host_split(key, lambda *part: rounded(*part, **params),
                                      [np.ravel(a) for a in args], out.reshape(-1))
        return out
    return impl



def _special():
    import scipy.special
    return scipy.special


def _filled(x, value):
    aval = get_aval(x)
    return full(aval.shape, value, aval.dtype, aval.weak_type)


def _host_unop(name, fn, float32_kernel=None):
    return unop(name, _scipy(fn, float32_kernel), _FLOAT)


def _host_naryop(name, arity, fn):
    prim = naryop(name, _scipy(fn), (_FLOAT,) * arity)
    checked = prim.abstract_eval

    def abstract_eval(*avals, **params):
        if len(avals) != arity:
            raise TypeError(f"{name} takes {arity} operands, got {len(avals)}.")
        return checked(*avals, **params)

    prim.def_abstract_eval(abstract_eval)
    return prim


# --- Dawson, Fresnel, sine and cosine integrals ----------------------------------------------------

def _dawsn(x):
    return _special().dawsn(x)


dawsn_p = _host_unop("dawsn", _dawsn, "dawsn")
defjvp(dawsn_p, lambda t, ans, x: mul(t, sub(_one(x), mul(mul(_const(x, 2), x), ans))))


def _fresnel(index):
    def fn(x):
        out = _special().fresnel(x)[index]
        # JAX: S(+-inf) = C(+-inf) = +-1/2
        return np.where(np.isinf(x), np.copysign(0.5, x), out)
    return fn


fresnel_s_p = _host_unop("fresnel_s", _fresnel(0))
fresnel_c_p = _host_unop("fresnel_c", _fresnel(1))


def _half_pi_square(x):
    return mul(_const(x, math.pi / 2), mul(x, x))


defjvp(fresnel_s_p, lambda t, ans, x: mul(t, sin(_half_pi_square(x))))
defjvp(fresnel_c_p, lambda t, ans, x: mul(t, cos(_half_pi_square(x))))


def _sici(index):
    def fn(x):
        si, ci = _special().sici(x)
        if index == 0:
            return si
        # Ci of a negative argument: SciPy's real part; JAX's Ci(-inf) is nan
        return np.where(x == -np.inf, np.nan, ci)
    return fn


sici_si_p = _host_unop("sici_si", _sici(0), "sici_si")
sici_ci_p = _host_unop("sici_ci", _sici(1), "sici_ci")


def _over_x(t, x, numerator, at_zero):
    """t * numerator / x, with `at_zero` where x == 0."""
    zero = eq(x, _filled(x, 0))
    safe = select(zero, _filled(x, 1), x)
    return mul(t, select(zero, _filled(x, at_zero), div(numerator, safe)))


defjvp(sici_si_p, lambda t, ans, x: _over_x(t, x, sin(x), 1.0))
defjvp(sici_ci_p, lambda t, ans, x: _over_x(t, x, cos(x), math.inf))


# --- Owen's T ------------------------------------------------------------------------------------

def _owens_t(h, a):
    return _special().owens_t(h, a)


owens_t_p = _host_naryop("owens_t", 2, _owens_t)


def _owens_t_dh(t, ans, h, a):
    # -phi(h) erf(a h / sqrt 2) / 2
    from corejax.lax.elementwise import erf
    phi = mul(_const(h, 1 / math.sqrt(2 * math.pi)), exp(mul(_const(h, -0.5), mul(h, h))))
    return neg(mul(t, mul(mul(_const(h, 0.5), phi),
                          erf(mul(mul(a, h), _const(h, 1 / math.sqrt(2)))))))


def _owens_t_da(t, ans, h, a):
    # exp(-h^2 (1 + a^2) / 2) / (2 pi (1 + a^2))
    one_a2 = add(_one(a), mul(a, a))
    return mul(t, div(exp(mul(_const(h, -0.5), mul(mul(h, h), one_a2))),
                      mul(_const(a, 2 * math.pi), one_a2)))


defjvp(owens_t_p, _owens_t_dh, _owens_t_da)


# --- Spence's function and the exponential integrals -----------------------------------------------

def _spence(x):
    return np.where(np.isinf(x), np.nan, _special().spence(x))


spence_p = _host_unop("spence", _spence)
# d/dx spence(x) = log(x) / (1 - x), whose limit at x = 1 is -1
defjvp(spence_p, lambda t, ans, x: mul(t, select(
    eq(x, _filled(x, 1)), _filled(x, -1),
    div(log(x), sub(_one(x), select(eq(x, _filled(x, 1)), _filled(x, 0), x))))))


def _expi(x):
    # JAX: nan at 0 and at both infinities
    return np.where((x == 0) | np.isinf(x), np.nan, _special().expi(x))


expi_p = _host_unop("expi", _expi, "expi")
defjvp(expi_p, lambda t, ans, x: mul(t, div(exp(x), x)))


def _exp1(x):
    return np.where(np.isinf(x), np.nan, _special().exp1(x))


exp1_p = _host_unop("exp1", _exp1, "exp1")
defjvp(exp1_p, lambda t, ans, x: neg(mul(t, div(exp(neg(x)), x))))


def _expn(n, x):
    valid = (n >= 0) & (n == np.floor(n))
    out = _special().expn(np.where(valid, n, 0).astype(np.int64), x)
    return np.where(valid & (x >= 0), out, np.nan)


expn_p = _host_naryop("expn", 2, _expn)


def _expn_dx(t, ans, n, x):
    # E_n' = -E_{n-1} for n >= 1; E_0(x) = e^-x / x, E_0' = -e^-x (1 + x) / x^2
    n_zero = eq(n, _filled(n, 0))
    previous = expn(select(n_zero, _filled(n, 1), sub(n, _filled(n, 1))), x)
    e0 = neg(div(mul(exp(neg(x)), add(_one(x), x)), mul(x, x)))
    return mul(t, select(n_zero, e0, neg(previous)))


defjvp(expn_p, _unsupported(ValueError, "expn gradient with respect to n is not supported"),
       _expn_dx)


# --- hypergeometric functions ----------------------------------------------------------------------

def _hyp1f1(a, b, x):
    return _special().hyp1f1(a, b, x)


hyp1f1_p = _host_naryop("hyp1f1", 3, _hyp1f1)
_hyp_params = "gradient with respect to the parameters a and b is not supported"
defjvp(hyp1f1_p, _unsupported(NotImplementedError, f"hyp1f1 {_hyp_params}"),
       _unsupported(NotImplementedError, f"hyp1f1 {_hyp_params}"),
       lambda t, ans, a, b, x: mul(t, mul(div(a, b), hyp1f1(add(a, _one(a)), add(b, _one(b)),
                                                              x))))


def _hyp2f1(a, b, c, x):
    return _special().hyp2f1(a, b, c, x)


hyp2f1_p = _host_naryop("hyp2f1", 4, _hyp2f1)
_hyp2_params = ("hyp2f1 gradient with respect to the parameters a, b and c is not supported")
defjvp(hyp2f1_p, *[_unsupported(NotImplementedError, _hyp2_params)] * 3,
       lambda t, ans, a, b, c, x: mul(t, mul(div(mul(a, b), c),
                                             hyp2f1(add(a, _one(a)), add(b, _one(b)),
                                                    add(c, _one(c)), x))))


# --- Bessel functions of the first kind ------------------------------------------------------------

def _bessel_jn(x, order):
    return _special().jv(order, x)


bessel_jn_p = unop("bessel_jn", _scipy(_bessel_jn), _FLOAT)


def _bessel_jn_jvp(t, ans, z, order):
    # J_n' = (J_{n-1} - J_{n+1}) / 2, and J_0' = -J_1
    after = bessel_jn(z, order + 1)
    if order == 0:
        return neg(mul(t, after))
    return mul(t, mul(_const(z, 0.5), sub(bessel_jn(z, order - 1), after)))


defjvp(bessel_jn_p, _bessel_jn_jvp)


# --- functions -----------------------------------------------------------------------------------

def dawsn(x):
    return dawsn_p.bind(x)


def fresnel(x):
    return fresnel_s_p.bind(x), fresnel_c_p.bind(x)


def sici(x):
    return sici_si_p.bind(x), sici_ci_p.bind(x)


def owens_t(h, a):
    return owens_t_p.bind(h, a)


def spence(x):
    return spence_p.bind(x)


def expi(x):
    return expi_p.bind(x)


def exp1(x):
    return exp1_p.bind(x)


def expn(n, x):
    return expn_p.bind(n, x)


def hyp1f1(a, b, x):
    return hyp1f1_p.bind(a, b, x)


def hyp2f1(a, b, c, x):
    return hyp2f1_p.bind(a, b, c, x)


def bessel_jn(z, order):
    return bessel_jn_p.bind(z, order=int(order))
