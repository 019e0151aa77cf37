"""Elementwise primitives: math functions, arithmetic, comparisons, bitwise ops, select and
dtype conversion. Each definition is followed by its differentiation rule; abstract eval,
batching and lowering come from the factories in `_factories`."""
from __future__ import annotations

import builtins
import math

import numpy as np

from corejax import core, dtypes
from corejax.array import Array
from corejax.core import Primitive, ShapedArray, get_aval
from corejax.compiler import registry
from corejax.transforms import ad, batching
from corejax.transforms.ad import Zero, defjvp, defjvp_zero, deflinear, is_undefined_primal
from corejax.lax._precision import check_accuracy
from corejax.lax._narrow import to_narrow
from corejax.lax._factories import (ANY, BOOL_OR_INT, FLOATING, INTEGRAL, NUMERIC, bool_result,
                                    naryop, unop)

__all__ = []  # the public functions are re-exported by corejax.lax


# --- operand preparation ---------------------------------------------------------------------

def _prepare(*args, name="op"):
    """lax operands: Python scalars take the dtype of the array operands, and rank-0 operands
    broadcast to the others' shape. Python scalars alone keep their own dtypes, which must agree
    (lax.add(1, 1.0) is a TypeError; jnp.add promotes)."""
    if type(args[0]) is Array and all(type(a) is Array and a._value.shape == args[0]._value.shape
                                       for a in args):
        return args
    ref = next((a for a in args if type(a) not in (int, float, complex, bool)), None)
    if ref is None:
        own = [dtypes.result_type_and_weakness(a)[0] for a in args]
        if len(set(own)) > 1:
            raise TypeError(
                f"lax.{name} requires arguments to have the same dtypes, got "
                f"{', '.join(np.dtype(d).name for d in own)}. (Tip: jnp.{name} is a similar "
                "function that does automatic type promotion on inputs).")
        return [full((), a, own[0], True) for a in args]
    ref_aval = get_aval(ref)
    out = [full((), a, ref_aval.dtype, True) if type(a) in (int, float, complex, bool) else a
           for a in args]
    shapes = {get_aval(a).shape for a in out}
    if len(shapes) > 1:
        target = builtins.max(shapes, key=len)
        out = [broadcast_in_dim(a, target, ()) if get_aval(a).shape == () else a for a in out]
    return out


def full_like(x, fill_value, dtype=None, shape=None, sharding=None):
    """An array like `x` (its shape, dtype and weak type unless given) filled with
    `fill_value` (lax.full_like)."""
    aval = get_aval(x)
    weak = aval.weak_type if dtype is None else False
    return full(aval.shape if shape is None else shape, fill_value,
                aval.dtype if dtype is None else dtype, weak_type=weak)


def full(shape, fill_value, dtype=None, weak_type: bool = False):
    """An array of `shape` filled with `fill_value` (lax.full)."""
    from corejax.lax.structural import broadcast_in_dim as _bid
    dt = dtypes.canonicalize_dtype(dtype) if dtype is not None else None
    shape = tuple(map(int, shape))
    if shape and builtins.min(shape) < 0:
        raise TypeError(f"lax.full shape must have every element be nonnegative, got {shape}.")
    if isinstance(fill_value, core.Tracer):
        val = fill_value if dt is None else convert_element_type(fill_value, dt, weak_type)
        return val if shape == () else _bid(val, shape, ())
    if dt is None:
        dt, weak_type = dtypes.result_type_and_weakness(fill_value)
    if shape == () or core._trace_state.dynamic_level == 0:
        # Outside staging a constant is just data, no primitive to run: small ones are filled
        # (cheaper than NumPy's broadcast_to), large ones are a broadcast view.
        if len(shape) <= 1 and (not shape or shape[0] <= 4096):
            return Array(np.full(shape, fill_value, dt), weak_type)
        return Array(np.broadcast_to(np.asarray(fill_value, dt), shape), weak_type)
    return _bid(Array(np.asarray(fill_value, dt), weak_type), shape, ())


def broadcast_in_dim(x, shape, dims):
    from corejax.lax.structural import broadcast_in_dim as _bid
    return _bid(x, shape, dims)


def _check_eager_dtypes(prim: Primitive, *args):
    """Eager binds skip abstract evaluation, which rejects dtypes the primitive does not
    accept: it runs here for eager operands that are not floats (lax.logistic(int32) is a
    TypeError eagerly as under jit; traced operands get it from their trace)."""
    x = args[0]
    if type(x) is Array and x._value.dtype.kind == "f" or isinstance(x, core.Tracer):
        return
    prim.abstract_eval(*map(get_aval, args))


def _unary(prim: Primitive):
    def fn(x):
        _check_eager_dtypes(prim, x)
        return prim.bind(x)
    fn.__name__ = prim.name
    fn.__doc__ = f"Elementwise {prim.name} (lax.{prim.name})."
    return fn


def _unary_with_accuracy(prim: Primitive):
    """A transcendental function taking JAX's `accuracy=` (validated; CPU kernels have one
    implementation each, so it changes nothing, as in JAX)."""
    def fn(x, accuracy=None):
        check_accuracy(accuracy)
        _check_eager_dtypes(prim, x)
        return prim.bind(x)
    fn.__name__ = prim.name
    fn.__doc__ = f"Elementwise {prim.name} (lax.{prim.name})."
    return fn


def _binary(prim: Primitive):
    def fn(x, y):
        x, y = _prepare(x, y, name=prim.name)
        _check_eager_dtypes(prim, x, y)
        return prim.bind(x, y)
    fn.__name__ = prim.name
    fn.__doc__ = f"Elementwise {prim.name} (lax.{prim.name})."
    return fn


def _math(name):
    return lambda ctx, x: ctx.math(name, x)


# --- numpy references for functions NumPy lacks ----------------------------------------------


def _erf_taylor(x):
    """erf by its Maclaurin series; accurate to ~1e-13 relative for |x| < 3."""
    x2 = x * x
    term = x.copy()
    total = x.copy()
    n_terms = 64 if x.size and np.max(np.abs(x)) > 1.5 else 30
    for n in range(1, n_terms):
        term = term * (-x2) / n
        total = total + term / (2 * n + 1)
    return total * (2 / np.sqrt(np.pi))


def _erfc_continued_fraction(x):
    """erfc by its continued fraction, for x >= 3 (evaluated from the tail)."""
    f = x.copy()
    for k in range(80, 0, -1):
        f = x + (k / 2) / f
    return np.exp(-x * x) / (np.sqrt(np.pi) * f)


def _erf_and_erfc(x):
    """Vectorized erf and erfc in float64: series below |x| = 3, continued fraction above.
    Relative error: erf ~1e-13; erfc ~4e-9 near |x| = 3, better elsewhere."""
    x = np.asarray(x, np.float64)
    erf = np.empty_like(x)
    erfc = np.empty_like(x)
    small = np.abs(x) < 3.0
    small |= np.isnan(x)
    if small.any():
        e = _erf_taylor(x[small])
        erf[small], erfc[small] = e, 1.0 - e
    if (~small).any():
        xl = x[~small]
        c = _erfc_continued_fraction(np.abs(xl))
        erf[~small] = np.sign(xl) * (1.0 - c)
        erfc[~small] = np.where(xl > 0, c, 2.0 - c)
    return erf, erfc


def _erf_np(x):
    return _erf_and_erfc(x)[0].astype(x.dtype)


def _erfc_np(x):
    return _erf_and_erfc(x)[1].astype(x.dtype)


def _lgamma_np(x):
    from scipy.special import gammaln  # inf at the poles, where math.lgamma raises
    wide = x.astype(np.float64)
    return np.where(wide == -np.inf, np.inf, gammaln(wide)).astype(x.dtype)


# M. Giles, "Approximating the erfinv function" (GPU Computing Gems, 2011): single-precision
# polynomials in w = -log(1 - x^2), for w < 5 in (w - 2.5) and beyond in (sqrt(w) - 3), highest
# degree first. XLA computes float32 erf_inv with exactly these; float64 refines them by Newton.
GILES_ERF_INV_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                         0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
GILES_ERF_INV_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
                      0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def _giles_erf_inv(y):
    """Giles' approximation in y's precision; |y| = 1 gives +-inf and |y| > 1 nan."""
    dt = y.dtype.type
    with np.errstate(all="ignore"):
        w = -np.log1p(-y * y)
        central = w < dt(5.0)
        t = np.where(central, w - dt(2.5), np.sqrt(w) - dt(3.0))
        p = np.zeros_like(y)
        for c_c, c_t in zip(GILES_ERF_INV_CENTRAL, GILES_ERF_INV_TAIL):
            p = p * t + np.where(central, dt(c_c), dt(c_t))
        return np.where(np.abs(y) == 1, y * dt(np.inf), p * y)


def _erf_inv_np(x):
    """Inverse error function. float32 (and narrower): Giles' polynomials in float32, as XLA
    computes it (so random.normal's last bits follow JAX's); float64: that start refined by two
    Newton steps on erf."""
    x = np.asarray(x)
    if x.dtype.itemsize < 8:
        return _giles_erf_inv(x.astype(np.float32)).astype(x.dtype)
    y = x.astype(np.float64)
    r = _giles_erf_inv(y)
    with np.errstate(all="ignore"):
        for _ in range(2):
            finite = np.isfinite(r)
            rf = np.where(finite, r, 0.0)
            step = (_erf_and_erfc(rf)[0] - y) / (2 / np.sqrt(np.pi) * np.exp(-rf * rf))
            r = np.where(finite, rf - step, r)
    return np.where(np.abs(y) > 1, np.nan, r)


def _fma_np(a, b, c):
    """a*b + c rounded once. float32 (and the narrow floats, widened to it): the float64 product
    is exact and TwoSum gives the sum's exact error e; rounding the float64 sum to odd (moving
    an even one toward e) keeps it on the right side of every float32 midpoint, so the final
    conversion rounds once. float64: llvm.fma through a compiled loop."""
    if a.dtype == np.float64:
        from corejax.compiler.kernel_lib import fma_arrays
        a, b, c = np.broadcast_arrays(a, b, c)
        out = np.empty(a.shape, np.float64)
        fma_arrays(np.ascontiguousarray(a).ravel(), np.ascontiguousarray(b).ravel(),
                   np.ascontiguousarray(c).ravel(), out.reshape(-1))
        return out
    p = a.astype(np.float64) * b.astype(np.float64)
    c = c.astype(np.float64)
    s = p + c
    c_part = s - p
    e = (p - (s - c_part)) + (c - c_part)
    inexact_even = np.isfinite(s) & (e != 0) & (s.view(np.uint64) & 1 == 0)
    s = np.where(inexact_even, np.nextafter(s, np.copysign(np.inf, e)), s)
    return s.astype(a.dtype)


def _round_impl(x, rounding_method=1):
    if rounding_method == 1:
        return np.round(x)
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t).astype(x.dtype)


def _int_div(x, y):
    kind = dtypes.kind_of(x.dtype)
    if kind in "fc":
        return np.true_divide(x, y).astype(x.dtype, copy=False)
    safe = np.where(y == 0, 1, y)
    q = np.trunc(np.true_divide(x, safe)) if x.dtype.itemsize < 8 else _trunc_div(x, safe)
    return np.where(y == 0, -1 if kind == "i" else dtypes.iinfo(x.dtype).max,
                    q).astype(x.dtype)


def _trunc_div(x, y):
    q = np.floor_divide(x, y)
    fix = (np.remainder(x, y) != 0) & ((x < 0) != (y < 0))
    return q + fix


def _shift_right_logical(x, y):
    nbits = x.dtype.itemsize * 8
    ux = x.view(np.dtype(f"u{x.dtype.itemsize}"))
    out = np.where(y >= nbits, 0, ux >> np.minimum(y, nbits - 1).astype(ux.dtype))
    return out.astype(ux.dtype).view(x.dtype)


def _shift_right_arithmetic(x, y):
    nbits = x.dtype.itemsize * 8
    sx = x.view(np.dtype(f"i{x.dtype.itemsize}"))
    out = sx >> np.minimum(y, nbits - 1).astype(sx.dtype)
    return out.astype(sx.dtype).view(x.dtype)


def _shift_left(x, y):
    nbits = x.dtype.itemsize * 8
    out = np.left_shift(x, np.minimum(y, nbits - 1).astype(x.dtype))
    return np.where(y >= nbits, 0, out).astype(x.dtype)


def _logistic_np(x):
    return (1 / (1 + np.exp(-x))).astype(x.dtype)


# --- unary math ------------------------------------------------------------------------------

neg_p = unop("neg", np.negative, NUMERIC, lambda ctx, x: f"(-{x})")
deflinear(neg_p, lambda ct, x: [neg(ct)])

# The identity, materialized: a fresh C array holding the operand's values (JAX's copy
# primitive, which its jnp.copy stages; corejax's jnp.copy is the identity on traced values, so
# this one is not exported as lax.copy_p). The compiler binds it where a loop reads a constant
# better laid out otherwise (compiler/scan_sums.scan_layouts): fused after a transpose, it
# writes the transposed array once.
copy_p = unop("copy", lambda x: np.array(x, copy=True, order="C"), ANY, lambda ctx, x: x)
deflinear(copy_p, lambda ct, x: [copy_p.bind(ct)])

def _sign_impl(x):
    # lax.sign keeps a zero's sign (XLA's, and the kernels'); np.sign(-0.0) is +0.0.
    out = np.sign(x)
    return np.where(x == 0, x, out) if x.dtype.kind == "f" else out


sign_p = unop("sign", _sign_impl, NUMERIC, _math("sign"))
defjvp_zero(sign_p)

floor_p = unop("floor", np.floor, ("floating",), _math("floor"))
defjvp_zero(floor_p)

ceil_p = unop("ceil", np.ceil, ("floating",), _math("ceil"))
defjvp_zero(ceil_p)

round_p = unop("round", _round_impl, ("floating",),
               lambda ctx, x, rounding_method=1: ctx.math(
                   "round_even" if rounding_method == 1 else "round_away", x))
defjvp_zero(round_p)

def _weak_if_all_weak(prim):
    """A bool-valued primitive whose result is weak when every operand is (JAX's comparisons
    and is_finite: `jnp.arange(3) == 1.0` and `jnp.isfinite(1.5)` are weak bools)."""
    strong_rule = prim.abstract_eval

    def abstract_eval(*avals, **params):
        return strong_rule(*avals, **params).update(
            weak_type=builtins.all(a.weak_type for a in avals))

    prim.def_abstract_eval(abstract_eval)
    prim.weak_type_rule = lambda *args, **params: builtins.all(
        dtypes.is_weakly_typed(a) for a in args)
    return prim


is_finite_p = _weak_if_all_weak(unop("is_finite", np.isfinite, ("floating",), _math("isfinite"),
                                     result_dtype=bool_result))
defjvp_zero(is_finite_p)

exp_p = unop("exp", np.exp, FLOATING, _math("exp"), quiet=True, transcendental=True)
defjvp(exp_p, lambda t, ans, x: mul(t, ans))

exp2_p = unop("exp2", np.exp2, FLOATING, _math("exp2"), quiet=True, transcendental=True)
defjvp(exp2_p, lambda t, ans, x: mul(t, mul(ans, full((), math.log(2), ans.dtype))))

log_p = unop("log", np.log, FLOATING, _math("log"), quiet=True, transcendental=True)
defjvp(log_p, lambda t, ans, x: div(t, x))

log1p_p = unop("log1p", np.log1p, FLOATING, _math("log1p"), quiet=True, transcendental=True)
defjvp(log1p_p, lambda t, ans, x: div(t, add(x, _one(x))))

expm1_p = unop("expm1", np.expm1, FLOATING, _math("expm1"), quiet=True, transcendental=True)
defjvp(expm1_p, lambda t, ans, x: mul(t, add(ans, _one(ans))))

tanh_p = unop("tanh", np.tanh, FLOATING, _math("tanh"), transcendental=True)
defjvp(tanh_p, lambda t, ans, x: mul(t, sub(_one(ans), mul(ans, ans))))

logistic_p = unop("logistic", _logistic_np, FLOATING, _math("logistic"), quiet=True, transcendental=True)
_logistic_wide = logistic_p.impl


def _logistic_impl(x):
    if not dtypes.is_narrow(x.dtype):
        return _logistic_wide(x)
    # XLA expands logistic into 1 / (1 + exp(-x)) before widening bfloat16 / float8 operands,
    # so each of the three steps rounds to the narrow type
    one = np.ones_like(x)
    return div_p.impl(one, add_p.impl(one, exp_p.impl(neg_p.impl(x))))


logistic_p.def_impl(_logistic_impl)
defjvp(logistic_p, lambda t, ans, x: mul(t, mul(ans, sub(_one(ans), ans))))

sin_p = unop("sin", np.sin, FLOATING, _math("sin"), transcendental=True)
defjvp(sin_p, lambda t, ans, x: mul(t, cos(x)))

cos_p = unop("cos", np.cos, FLOATING, _math("cos"), transcendental=True)
defjvp(cos_p, lambda t, ans, x: neg(mul(t, sin(x))))

tan_p = unop("tan", np.tan, FLOATING, _math("tan"), transcendental=True)
defjvp(tan_p, lambda t, ans, x: mul(t, add(_one(ans), mul(ans, ans))))

asin_p = unop("asin", np.arcsin, FLOATING, _math("asin"), quiet=True, transcendental=True)
defjvp(asin_p, lambda t, ans, x: mul(t, rsqrt(sub(_one(x), mul(x, x)))))

acos_p = unop("acos", np.arccos, FLOATING, _math("acos"), quiet=True, transcendental=True)
defjvp(acos_p, lambda t, ans, x: neg(mul(t, rsqrt(sub(_one(x), mul(x, x))))))

atan_p = unop("atan", np.arctan, FLOATING, _math("atan"), transcendental=True)
defjvp(atan_p, lambda t, ans, x: div(t, add(_one(x), mul(x, x))))

sinh_p = unop("sinh", np.sinh, FLOATING, _math("sinh"), quiet=True, transcendental=True)
defjvp(sinh_p, lambda t, ans, x: mul(t, cosh(x)))

cosh_p = unop("cosh", np.cosh, FLOATING, _math("cosh"), quiet=True, transcendental=True)
defjvp(cosh_p, lambda t, ans, x: mul(t, sinh(x)))

asinh_p = unop("asinh", np.arcsinh, FLOATING, _math("asinh"), transcendental=True)
defjvp(asinh_p, lambda t, ans, x: mul(t, rsqrt(add(mul(x, x), _one(x)))))

acosh_p = unop("acosh", np.arccosh, FLOATING, _math("acosh"), quiet=True, transcendental=True)
defjvp(acosh_p, lambda t, ans, x: mul(t, rsqrt(mul(sub(x, _one(x)), add(x, _one(x))))))

atanh_p = unop("atanh", np.arctanh, FLOATING, _math("atanh"), quiet=True, transcendental=True)
defjvp(atanh_p, lambda t, ans, x: div(t, sub(_one(x), mul(x, x))))

# IEEE 754 rounds sqrt correctly in every format, so NumPy's float32 / float16 sqrt already has
# the bits of the float64 detour (its double rounding is innocuous: 53 >= 2 * 24 + 2), at a
# fraction of the cost (1M float32: the detour took 20-40x longer)
sqrt_p = unop("sqrt", np.sqrt, FLOATING, _math("sqrt"), quiet=True)
defjvp(sqrt_p, lambda t, ans, x: div(t, mul(_const(ans, 2), ans)))

rsqrt_p = unop("rsqrt", lambda x: (1 / np.sqrt(x)).astype(x.dtype), FLOATING, _math("rsqrt"),
               quiet=True, transcendental=True)
defjvp(rsqrt_p, lambda t, ans, x: mul(t, mul(_const(ans, -0.5), div(ans, x))))

cbrt_p = unop("cbrt", np.cbrt, ("floating",), _math("cbrt"), transcendental=True)
defjvp(cbrt_p, lambda t, ans, x: mul(t, div(ans, mul(_const(x, 3), x))))

erf_p = unop("erf", _erf_np, ("floating",), _math("erf"))
defjvp(erf_p, lambda t, ans, x: mul(t, mul(_const(x, 2 / math.sqrt(math.pi)), exp(neg(mul(x, x))))))

erfc_p = unop("erfc", _erfc_np, ("floating",), _math("erfc"))
defjvp(erfc_p, lambda t, ans, x: mul(t, mul(_const(x, -2 / math.sqrt(math.pi)),
                                               exp(neg(mul(x, x))))))

erf_inv_p = unop("erf_inv", _erf_inv_np, ("floating",), _math("erf_inv"), quiet=True)
defjvp(erf_inv_p, lambda t, ans, x: mul(t, mul(_const(x, math.sqrt(math.pi) / 2),
                                                  exp(mul(ans, ans)))))

lgamma_p = unop("lgamma", _lgamma_np, ("floating",), _math("lgamma"))


def _digamma(x):
    from corejax.lax.special import digamma  # lax/special.py builds on this module
    return digamma(x)


defjvp(lgamma_p, lambda t, ans, x: mul(t, _digamma(x)))

abs_p = unop("abs", np.abs, NUMERIC, _math("abs"))
_abs_strong_rule = abs_p.abstract_eval
# |x| of a complex x is real (complex64 -> float32), of the operand's weak type.
_ABS_REFUSES = tuple(map(np.dtype, ("int2", "int4", "uint2", "uint4")))


def _abs_abstract(x):
    if x.dtype in _ABS_REFUSES:
        raise TypeError(f"abs does not accept dtype {x.dtype.name}. Support for narrow-width "
                        "integers is platform-dependent and limited to a few specific "
                        "operations, e.g. basic arithmetic and type casting.")
    if x.dtype.kind == "c":
        return _abs_strong_rule(x).update(
            dtype=np.dtype(np.float32 if x.dtype == np.complex64 else np.float64))
    return _abs_strong_rule(x)


abs_p.def_abstract_eval(_abs_abstract)


def _abs_jvp(t, ans, x):
    if get_aval(x).dtype.kind == "c":
        from corejax.lax._complex import abs_jvp
        return abs_jvp(t, ans, x)
    # The derivative of |x| at 0 is taken as +1 (x >= 0 picks t), as JAX's is.
    return select(ge(x, _const(x, 0)), t, neg(t))


defjvp(abs_p, _abs_jvp)

not_p = unop("not", lambda x: np.logical_not(x) if x.dtype == np.bool_ else np.invert(x),
             BOOL_OR_INT, lambda ctx, x: ctx.math("not", x))
defjvp_zero(not_p)

population_count_p = unop("population_count",
                          lambda x: np.bitwise_count(x.view(f"u{x.dtype.itemsize}"))
                          .astype(x.dtype), INTEGRAL,
                          _math("popcount"))
defjvp_zero(population_count_p)


# integer_pow: x ** y for a static integer y, by repeated squaring as XLA expands it (x**4 is
# (x*x)*(x*x), x**-y is 1/x**y), so floats round as JAX's do; np.power rounds otherwise.
def _integer_pow_impl(x, y):
    if y < 0 and dtypes.is_integer(x.dtype):
        raise TypeError("Integers cannot be raised to negative integer powers.")
    if y == 0:
        return np.ones_like(x)
    with np.errstate(all="ignore"):
        acc, base, m = None, x, builtins.abs(y)
        while m:
            if m & 1:
                acc = base if acc is None else acc * base
            m >>= 1
            if m:
                base = base * base
        if y < 0:
            acc = x.dtype.type(1) / acc
        return np.asarray(acc, dtype=x.dtype)


integer_pow_p = unop("integer_pow", _integer_pow_impl, NUMERIC,
                     lambda ctx, x, y: ctx.math("integer_pow", x, y))


def _integer_pow_jvp(t, ans, x, y):
    if y == 0:
        return Zero(get_aval(t))
    return mul(t, mul(_const(x, y), integer_pow(x, y - 1)))


defjvp(integer_pow_p, _integer_pow_jvp)


# --- binary arithmetic -----------------------------------------------------------------------

add_p = naryop("add", np.add, (NUMERIC, NUMERIC), lambda ctx, x, y: f"({x} + {y})")
deflinear(add_p, lambda ct, x, y: [ct, ct])

sub_p = naryop("sub", np.subtract, (NUMERIC, NUMERIC), lambda ctx, x, y: f"({x} - {y})")
deflinear(sub_p, lambda ct, x, y: [ct, neg(ct) if type(ct) is not Zero else ct])

mul_p = naryop("mul", np.multiply, (NUMERIC, NUMERIC), lambda ctx, x, y: f"({x} * {y})")


def _mul_transpose(ct, x, y):
    if type(ct) is Zero:
        return [None, None]
    if is_undefined_primal(x):
        return [mul(ct, y), None]
    return [None, mul(x, ct)]


ad.defbilinear(mul_p, _mul_transpose)

div_p = naryop("div", _int_div, (NUMERIC, NUMERIC),
               lambda ctx, x, y: ctx.math("div", x, y), quiet=True)
defjvp(div_p, lambda t, ans, x, y: div(t, y),
       lambda t, ans, x, y: mul(neg(t), div(ans, y)))


def _div_transpose(ct, x, y):
    if is_undefined_primal(y):
        raise ValueError("div is not linear in its denominator: cannot transpose.")
    return [None if type(ct) is Zero else div(ct, y), None]


ad.primitive_transposes[div_p] = _div_transpose

_REAL = ("integer", "floating")
def _rem_impl(x, y):
    if dtypes.kind_of(x.dtype) in "iu":  # XLA's integer x rem 0 is x (NumPy's fmod says 0)
        return np.where(y == 0, x, np.fmod(x, np.where(y == 0, 1, y))).astype(x.dtype)
    return np.fmod(x, y)


rem_p = naryop("rem", _rem_impl, (_REAL, _REAL), lambda ctx, x, y: ctx.math("rem", x, y),
               quiet=True)
defjvp(rem_p, lambda t, ans, x, y: t,
       lambda t, ans, x, y: mul(neg(t), round(div(sub(x, ans), y))))

pow_p = naryop("pow", np.power, (FLOATING, FLOATING), lambda ctx, x, y: ctx.math("pow", x, y),
               quiet=True)


def _pow_jvp_x(t, ans, x, y):
    # y * x ** (y - 1), written so that y == 0 gives 0 rather than 0 * inf at x == 0. The
    # derivative in x is strongly typed (JAX converts the operands to their result dtype).
    x, y = _strong(x), _strong(y)
    safe = select(eq(y, _const(y, 0)), _filled(x, 1), pow(x, sub(y, _one(y))))
    return mul(t, mul(y, safe))


def _pow_jvp_y(t, ans, x, y):
    log_x = select(eq(x, _const(x, 0)), _filled(x, 0), log(x))
    return mul(t, mul(ans, log_x))


defjvp(pow_p, _pow_jvp_x, _pow_jvp_y)

def _max_impl(x, y):
    if x.dtype.kind != "f":
        return np.maximum(x, y)
    # XLA orders -0 below +0: max(0, -0) is 0 whichever comes first (np.maximum picks one)
    return np.where(x == y, np.where(np.signbit(x), y, x), np.maximum(x, y))


def _min_impl(x, y):
    if x.dtype.kind != "f":
        return np.minimum(x, y)
    return np.where(x == y, np.where(np.signbit(x), x, y), np.minimum(x, y))


max_p = naryop("max", _max_impl, (NUMERIC, NUMERIC), lambda ctx, x, y: ctx.math("max", x, y))
min_p = naryop("min", _min_impl, (NUMERIC, NUMERIC), lambda ctx, x, y: ctx.math("min", x, y))

# square: x * x (its own primitive, as in JAX: jaxprs print `square`)
square_p = unop("square", np.square, NUMERIC, lambda ctx, x: f"({x} * {x})")
defjvp(square_p, lambda t, ans, x: mul(t, mul(_const(x, 2), x)))

# a*b + c with one rounding, as XLA's CPU backend contracts a multiply feeding an add: where
# corejax must reproduce JAX's bits (random.uniform's scale and shift). Not a JAX primitive.
fma_p = naryop("fma", _fma_np, (("floating",),) * 3,
               lambda ctx, a, b, c: ctx.math("fma", a, b, c), quiet=True)
defjvp(fma_p, lambda t, ans, a, b, c: mul(t, b), lambda t, ans, a, b, c: mul(a, t),
       lambda t, ans, a, b, c: t)


# clamp(lo, x, hi) = min(max(x, lo), hi), NaNs propagating as in max / min; complex operands
# are ordered lexicographically (real part, then imaginary), as XLA's (and NumPy's) max / min
# order them. The derivative goes to x where lo < x < hi, to lo where x < lo < hi, to hi where
# hi < x; ties pass none (JAX's; like JAX's, it has no complex rule: gt refuses complex).
clamp_p = naryop("clamp", lambda lo, x, hi: np.minimum(np.maximum(x, lo), hi),
                 (ANY, ANY, ANY),
                 lambda ctx, lo, x, hi: ctx.math("min", ctx.math("max", x, lo), hi))
defjvp(clamp_p,
       lambda t, ans, lo, x, hi: select(bitwise_and(gt(lo, x), lt(lo, hi)), t, _filled(t, 0)),
       lambda t, ans, lo, x, hi: select(bitwise_and(gt(x, lo), lt(x, hi)), t, _filled(t, 0)),
       lambda t, ans, lo, x, hi: select(lt(hi, x), t, _filled(t, 0)))


def _balanced_select(t, x, y, pick_x):
    """The tangent share of `x` in max/min: 1 where x wins, 1/2 on ties, 0 elsewhere."""
    one, half, zero = (_filled(x, v) for v in (1, 0.5, 0))
    share = select(eq(x, y), half, select(pick_x, one, zero))
    return mul(t, share)


defjvp(max_p, lambda t, ans, x, y: _balanced_select(t, x, y, gt(x, y)),
       lambda t, ans, x, y: _balanced_select(t, y, x, gt(y, x)))
defjvp(min_p, lambda t, ans, x, y: _balanced_select(t, x, y, lt(x, y)),
       lambda t, ans, x, y: _balanced_select(t, y, x, lt(y, x)))

def _atan2_impl(x, y):
    if x.dtype.kind != "c":
        return np.arctan2(x, y)
    # NumPy has no complex arctan2; XLA defines atan2(x, y) = -i log((y + ix) / sqrt(x^2 + y^2))
    with np.errstate(all="ignore"):
        return (-1j * np.log((y + 1j * x) / np.sqrt(x * x + y * y))).astype(x.dtype)


# complex operands never reach the lowering: fused kernels are real-valued (compiler/fusion.py)
atan2_p = naryop("atan2", _atan2_impl, (FLOATING, FLOATING),
                 lambda ctx, x, y: ctx.math("atan2", x, y))
defjvp(atan2_p,
       lambda t, ans, x, y: mul(t, div(y, add(mul(x, x), mul(y, y)))),
       lambda t, ans, x, y: mul(neg(t), div(x, add(mul(x, x), mul(y, y)))))

nextafter_p = naryop("nextafter", np.nextafter, (("floating",), ("floating",)),
                     lambda ctx, x, y: ctx.math("nextafter", x, y))
defjvp_zero(nextafter_p)

# --- bitwise and logical ---------------------------------------------------------------------

and_p = naryop("and", np.bitwise_and, (BOOL_OR_INT, BOOL_OR_INT), lambda ctx, x, y: f"({x} & {y})")
or_p = naryop("or", np.bitwise_or, (BOOL_OR_INT, BOOL_OR_INT), lambda ctx, x, y: f"({x} | {y})")
xor_p = naryop("xor", np.bitwise_xor, (BOOL_OR_INT, BOOL_OR_INT), lambda ctx, x, y: f"({x} ^ {y})")
shift_left_p = naryop("shift_left", _shift_left, (INTEGRAL, INTEGRAL),
                      lambda ctx, x, y: ctx.math("shift_left", x, y))
shift_right_logical_p = naryop("shift_right_logical", _shift_right_logical, (INTEGRAL, INTEGRAL),
                               lambda ctx, x, y: ctx.math("shift_right_logical", x, y))
shift_right_arithmetic_p = naryop("shift_right_arithmetic", _shift_right_arithmetic,
                                  (INTEGRAL, INTEGRAL),
                                  lambda ctx, x, y: ctx.math("shift_right_arithmetic", x, y))
for _p in (and_p, or_p, xor_p, shift_left_p, shift_right_logical_p, shift_right_arithmetic_p):
    defjvp_zero(_p)

# --- comparisons -----------------------------------------------------------------------------

_ORDERED = ("bool", "integer", "floating")  # complex numbers have no order: lax.lt rejects them


def _compare(name, np_fn, op):
    accepted = _ORDERED if op in ("<", "<=", ">", ">=") else ANY
    prim = _weak_if_all_weak(naryop(name, np_fn, (accepted, accepted),
                                    lambda ctx, x, y: f"({x} {op} {y})", result_dtype=bool_result))
    defjvp_zero(prim)
    return prim


eq_p = _compare("eq", np.equal, "==")
ne_p = _compare("ne", np.not_equal, "!=")
lt_p = _compare("lt", np.less, "<")
le_p = _compare("le", np.less_equal, "<=")
gt_p = _compare("gt", np.greater, ">")
ge_p = _compare("ge", np.greater_equal, ">=")

# --- select_n --------------------------------------------------------------------------------

select_n_p = Primitive("select_n")


def _select_n_impl(which, *cases):
    # Eager calls get the checks of staged ones: a rule that passes here also stages.
    _select_n_abstract(*map(get_aval, (which, *cases)))
    if which.dtype == np.bool_:
        return np.where(which, cases[1], cases[0]) if len(cases) == 2 else cases[0]
    return np.choose(which, cases)


def _select_n_abstract(which, *cases):
    if not cases:
        raise TypeError("select_n requires at least one case.")
    if which.dtype != np.bool_ and which.dtype.kind not in "iu":
        raise TypeError(f"select_n requires a boolean or integer predicate, got {which.dtype}.")
    if which.dtype == np.bool_ and len(cases) > 2:
        raise TypeError("select_n with a boolean predicate accepts at most two cases.")
    c0 = cases[0]
    for c in cases[1:]:
        if c.shape != c0.shape or c.dtype != c0.dtype:
            raise TypeError(f"select_n cases must have the same shapes and dtypes, got "
                            f"{[c.str_short() for c in cases]}.")
    if which.shape not in ((), c0.shape):
        raise TypeError(f"select_n predicate shape {which.shape} must be scalar or equal to the "
                        f"case shape {c0.shape}.")
    return ShapedArray(c0.shape, c0.dtype, all(c.weak_type for c in cases))


select_n_p.def_impl(_select_n_impl)
select_n_p.def_abstract_eval(_select_n_abstract)
select_n_p.weak_type_rule = lambda which, *cases: all(dtypes.is_weakly_typed(c) for c in cases)


def _select_n_jvp(primals, tangents):
    which, *cases = primals
    out = select_n(which, *cases)
    ts = tangents[1:]
    if all(type(t) is Zero for t in ts):
        return out, Zero(get_aval(out).to_tangent_aval())
    return out, select_n(which, *[ad.instantiate_zeros(t) for t in ts])


def _select_n_transpose(ct, which, *cases):
    if is_undefined_primal(which):
        raise ValueError("select_n is not linear in its predicate.")
    if type(ct) is Zero:
        return [None] + [None] * len(cases)
    zeros = ad.zeros_like_aval(get_aval(ct))
    outs = [None]
    for i, c in enumerate(cases):
        if is_undefined_primal(c):
            outs.append(select_n(which, *[ct if j == i else zeros for j in range(len(cases))]))
        else:
            outs.append(None)
    return outs


def _select_n_batch(vals, dims):
    which, *cases = vals
    wdim, *cdims = dims
    first = next(d for d in dims if d is not None)
    size = get_aval(vals[dims.index(first)]).shape[first]
    if wdim is None and get_aval(which).ndim == 0:
        if all(d == cdims[0] for d in cdims):
            return select_n(which, *cases), cdims[0]
        return select_n(which, *[batching.bdim_at_front(c, d, size) for c, d in
                                 zip(cases, cdims)]), 0
    cases = [batching.bdim_at_front(c, d, size) for c, d in zip(cases, cdims)]
    case_shape = get_aval(cases[0]).shape
    if wdim is None:
        which = broadcast_in_dim(which, case_shape, tuple(range(1, len(case_shape))))
    else:
        which = batching.moveaxis(which, wdim, 0)
        if get_aval(which).ndim == 1:
            which = broadcast_in_dim(which, case_shape, (0,))
    return select_n(which, *cases), 0


ad.primitive_jvps[select_n_p] = _select_n_jvp
ad.primitive_transposes[select_n_p] = _select_n_transpose
batching.primitive_batchers[select_n_p] = _select_n_batch
registry.def_elementwise(select_n_p, lambda ctx, which, *cases: ctx.select(which, *cases))

# --- dtype conversion ------------------------------------------------------------------------

convert_element_type_p = Primitive("convert_element_type")
_FLOAT4 = np.dtype("float4_e2m1fn")


def _convert_impl(x, new_dtype, weak_type=False):
    if x.dtype == new_dtype:
        return x
    if new_dtype == np.bool_:
        return x != 0
    src, dst = dtypes.kind_of(x.dtype), dtypes.kind_of(new_dtype)
    if src == "c" and dst != "c":
        x, src = x.real, "f"
    with np.errstate(all="ignore"):  # overflow to inf or NaN is the conversion's result
        if src == "f" and dst in "iu":
            # Float to integer conversion: truncate; NaN gives 0 and out-of-range values
            # saturate. Clipped in float64, where the integer bounds are exact.
            info = dtypes.iinfo(new_dtype)
            wide = np.nan_to_num(x.astype(np.float64), nan=0.0)
            if x.dtype == _FLOAT4:  # XLA reads float4_e2m1fn's largest magnitude, 6, as an
                wide = np.where(np.abs(wide) == 6, wide * np.inf, wide)   # overflow
            out = np.trunc(np.clip(wide, int(info.min), int(info.max))).astype(new_dtype)
            # a 64-bit maximum rounds up to 2**63 / 2**64 in float64, beyond the type's range
            return np.where(wide >= float(info.max), info.max, out).astype(new_dtype, copy=False)
        if not (dtypes.is_narrow(x.dtype) or dtypes.is_narrow(new_dtype)):
            return x.astype(new_dtype)
        if dtypes.is_narrow(x.dtype) and not (src in "iu" and dst in "iu"):
            x = x.astype(np.float32)  # exact: every narrow type's value is a float32
        if dtypes.is_narrow(new_dtype):
            return to_narrow(x, new_dtype)  # integers wrap around, floats round
        return x.astype(new_dtype)


def _convert_abstract(x, new_dtype, weak_type=False):
    return ShapedArray(x.shape, new_dtype, weak_type)


convert_element_type_p.def_impl(_convert_impl)
convert_element_type_p.def_abstract_eval(_convert_abstract)
convert_element_type_p.weak_type_rule = lambda x, new_dtype, weak_type=False: weak_type


def _convert_jvp(primals, tangents, new_dtype, weak_type=False):
    (x,), (t,) = primals, tangents
    out = convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)
    if type(t) is Zero or not dtypes.is_inexact(new_dtype) or \
            not dtypes.is_inexact(get_aval(x).dtype):
        return out, Zero(get_aval(out).to_tangent_aval())
    return out, convert_element_type_p.bind(t, new_dtype=new_dtype, weak_type=weak_type)


def _convert_transpose(ct, x, new_dtype, weak_type=False):
    if type(ct) is Zero:
        return [None]
    aval = x.aval
    return [convert_element_type_p.bind(ct, new_dtype=aval.dtype, weak_type=aval.weak_type)]


ad.primitive_jvps[convert_element_type_p] = _convert_jvp
ad.primitive_transposes[convert_element_type_p] = _convert_transpose
batching.defvectorized(convert_element_type_p)
registry.def_elementwise(convert_element_type_p,
                         lambda ctx, x, new_dtype, weak_type=False: ctx.cast(x, new_dtype))


def convert_element_type(x, new_dtype, weak_type: bool = False):
    """Casts `x` to `new_dtype` (canonicalized: 64-bit types narrow while x64 is off)."""
    new_dtype = dtypes.canonicalize_dtype(new_dtype)
    if type(x) in (int, float, complex, bool):
        from corejax.array import Array
        return Array(_convert_impl(np.asarray(x), new_dtype), weak_type)
    aval = get_aval(x)
    if aval.dtype == new_dtype and aval.weak_type == weak_type:
        return x
    if aval.dtype.kind == "c" and new_dtype.kind != "c":
        import warnings
        warnings.warn("Casting complex values to real discards the imaginary part",
                      np.exceptions.ComplexWarning, stacklevel=2)
    return convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)


bitcast_convert_type_p = Primitive("bitcast_convert_type")


def _bitcast_abstract(x, new_dtype):
    if x.dtype.itemsize != new_dtype.itemsize:
        raise TypeError(f"bitcast_convert_type between dtypes of different widths "
                        f"({x.dtype} -> {new_dtype}) is not supported.")
    return ShapedArray(x.shape, new_dtype, False)


bitcast_convert_type_p.def_impl(lambda x, new_dtype: x.view(new_dtype))
bitcast_convert_type_p.def_abstract_eval(_bitcast_abstract)
bitcast_convert_type_p.weak_type_rule = lambda *a, **p: False
defjvp_zero(bitcast_convert_type_p)
batching.defvectorized(bitcast_convert_type_p)
registry.def_elementwise(bitcast_convert_type_p,
                         lambda ctx, x, new_dtype: ctx.bitcast(x, new_dtype))


def bitcast_convert_type(x, new_dtype):
    return bitcast_convert_type_p.bind(x, new_dtype=dtypes.canonicalize_dtype(new_dtype))


# --- public functions ------------------------------------------------------------------------

def _one(x):
    return _const(x, 1)


def _const(x, val):
    """A scalar `val` of x's dtype and weak type (so rules keep a weak type, as JAX's do)."""
    aval = get_aval(x)
    return full((), val, aval.dtype, weak_type=aval.weak_type)


def _strong(x):
    """`x` with its weak type dropped."""
    return convert_element_type(x, get_aval(x).dtype)


def _filled(x, val):
    """An array of x's shape, dtype and weak type filled with `val` (select's cases must
    match)."""
    aval = get_aval(x)
    return full(aval.shape, val, aval.dtype, weak_type=aval.weak_type)


neg, sign, floor, ceil, is_finite = map(_unary, (neg_p, sign_p, floor_p, ceil_p, is_finite_p))
exp, exp2, log, log1p, expm1, tanh, logistic = map(
    _unary_with_accuracy, (exp_p, exp2_p, log_p, log1p_p, expm1_p, tanh_p, logistic_p))
sin, cos, tan = map(_unary_with_accuracy, (sin_p, cos_p, tan_p))
asin, acos, atan = map(_unary, (asin_p, acos_p, atan_p))
sinh, cosh, asinh, acosh, atanh = map(_unary, (sinh_p, cosh_p, asinh_p, acosh_p, atanh_p))
sqrt, rsqrt, cbrt = map(_unary_with_accuracy, (sqrt_p, rsqrt_p, cbrt_p))
erf, erfc, erf_inv, lgamma, abs = map(_unary, (erf_p, erfc_p, erf_inv_p, lgamma_p, abs_p))
bitwise_not = _unary(not_p)
population_count = _unary(population_count_p)
add, sub, mul, div, rem, max, min, atan2, nextafter = map(
    _binary, (add_p, sub_p, mul_p, div_p, rem_p, max_p, min_p, atan2_p, nextafter_p))

_pow = _binary(pow_p)


def pow(x, y):
    """x ** y elementwise (lax.pow): x inexact; y of x's dtype or any integer dtype (an integer
    exponent is converted to x's dtype, so it has no derivative)."""
    if not isinstance(y, (int, float, complex)) and isinstance(x, (Array, core.Tracer)):
        y_dt, x_dt = get_aval(y).dtype, get_aval(x).dtype
        if dtypes.is_integer(y_dt) and dtypes.is_inexact(x_dt):
            y = convert_element_type(y, x_dt)
    return _pow(x, y)


bitwise_and, bitwise_or, bitwise_xor = map(_binary, (and_p, or_p, xor_p))
shift_left, shift_right_logical, shift_right_arithmetic = map(
    _binary, (shift_left_p, shift_right_logical_p, shift_right_arithmetic_p))
eq, ne, lt, le, gt, ge = map(_binary, (eq_p, ne_p, lt_p, le_p, gt_p, ge_p))


def round(x, rounding_method=0):
    """Rounds to integral values: 0 = away from zero (lax's default), 1 = to nearest even."""
    return round_p.bind(x, rounding_method=int(rounding_method))


def integer_pow(x, y: int):
    y = int(y)
    if y < 0 and dtypes.is_integer(get_aval(x).dtype):
        aval = get_aval(x)
        raise TypeError(f"Integers cannot be raised to negative powers, got "
                        f"integer_pow({aval.dtype.name}[{','.join(map(str, aval.shape))}], {y}); "
                        "convert the base to a float dtype first.")
    return integer_pow_p.bind(x, y=y)


square = _unary(square_p)


def reciprocal(x):
    return integer_pow(x, -1)


def select_n(which, *cases):
    return select_n_p.bind(which, *cases)


def select(pred, on_true, on_false):
    """`on_true` where `pred` else `on_false` (lax.select)."""
    return select_n_p.bind(pred, on_false, on_true)


def _fma(a, b, c):
    """a*b + c rounded once (corejax-internal; operands as for lax.add)."""
    a, b, c = _prepare(a, b, c, name="fma")
    _check_eager_dtypes(fma_p, a, b, c)
    return fma_p.bind(a, b, c)


def clamp(min_val, x, max_val):
    """min(max(x, min_val), max_val) (lax.clamp): min_val and max_val are scalars or of x's
    shape; the derivative goes to x where min_val < x < max_val, to min_val where
    x < min_val < max_val, to max_val where max_val < x (ties pass none)."""
    shape = get_aval(x).shape
    for bound in (min_val, max_val):
        bound_shape = get_aval(bound).shape
        if bound_shape not in ((), shape):
            raise TypeError(f"clamp requires min.shape == operand.shape or min.shape == (), got "
                            f"{bound_shape}.")
    lo, x, hi = _prepare(min_val, x, max_val, name="clamp")
    _check_eager_dtypes(clamp_p, lo, x, hi)
    return clamp_p.bind(lo, x, hi)


# --- stop_gradient ---------------------------------------------------------------------------

stop_gradient_p = unop("stop_gradient", lambda x: x, ANY, lambda ctx, x: x)
defjvp_zero(stop_gradient_p)


def stop_gradient(x):
    """The identity, but with zero derivative: no gradient flows through its output.
    Applies to every leaf of a pytree, like jax.lax.stop_gradient."""
    from corejax.tree_util import tree_map

    def leaf(v):
        if dtypes.is_inexact(get_aval(v).dtype):
            return stop_gradient_p.bind(v)
        return v

    return tree_map(leaf, x)
