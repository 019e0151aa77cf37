"""More elementwise jnp functions: logarithms in other bases, hypot, ldexp / frexp, gcd / lcm,
logaddexp2, NaN-ignoring fmax / fmin, modf, spacing, bit counts, the array-API aliases and the
real-input complex helpers (imag, angle, isreal, ...). Composed of lax only."""
from __future__ import annotations

import math

import numpy as np

from corejax import dtypes, lax
from corejax.core import get_aval
from corejax.custom_derivatives import custom_jvp
from corejax.numpy._core import (asarray, check_arraylike, promote_and_broadcast,
                                 promote_dtypes_inexact)
from corejax.numpy._eager_fusion import fuse_eagerly
from corejax.numpy._ufuncs import (_broadcast_all, arccos, arccosh, arcsin, arcsinh, arctan,
                                   arctan2, arctanh, invert, isnan, isposinf, left_shift,
                                   right_shift, signbit, trunc, where)

__all__ = []

acos, acosh, asin, asinh, atan, atanh, atan2 = (arccos, arccosh, arcsin, arcsinh, arctan, arctanh,
                                               arctan2)
bitwise_invert, bitwise_left_shift, bitwise_right_shift = invert, left_shift, right_shift


def _strong_inexact(name, *args):
    """The operands promoted to an inexact dtype, strongly typed (JAX's log2 / ldexp / frexp /
    spacing of Python scalars are float32, not weak)."""
    check_arraylike(name, *args)
    out = promote_dtypes_inexact(*promote_and_broadcast(*args))
    return [lax.convert_element_type(a, get_aval(a).dtype) for a in out]


def _const(value, dt):
    return lax.full((), value, dt, weak_type=True)


@fuse_eagerly(1)
def log2(x, /):
    """Base-2 logarithm, as log(x) / log(2); float32 and float64 as log(x) times 1 / log(2)
    (rounded to x's dtype), the product XLA turns JAX's division by the constant into."""
    (x,) = _strong_inexact("log2", x)
    dt = get_aval(x).dtype
    if dt in (np.float32, np.float64):
        return lax.mul(lax.log(x), _const(1 / math.log(2), dt))
    return lax.div(lax.log(x), lax.log(_const(2, dt)))


@fuse_eagerly(1)
def log10(x, /):
    """Base-10 logarithm, as log(x) times 1 / log(10) (rounded to x's dtype), as JAX computes
    it."""
    (x,) = _strong_inexact("log10", x)
    return lax.mul(lax.log(x), _const(1 / math.log(10), get_aval(x).dtype))


@fuse_eagerly(2)
def hypot(x1, x2, /):
    """sqrt(x1**2 + x2**2) without overflow: the larger magnitude times sqrt(1 + ratio**2);
    infinite if either input is (even when the other is NaN)."""
    check_arraylike("hypot", x1, x2)
    x1, x2 = promote_dtypes_inexact(*promote_and_broadcast(x1, x2))
    dt = get_aval(x1).dtype
    a1, a2 = lax.abs(x1), lax.abs(x2)
    big, small = lax.max(a1, a2), lax.min(a1, a2)
    zero = _const(0, dt)
    safe_big = where(lax.eq(big, zero), _const(1, dt), big)
    ratio = lax.div(small, safe_big)
    # at big == 0, ratio is 0 and out = big: its derivative is max's (1/2 to each at a tie)
    out = lax.mul(big, lax.sqrt(lax.add(_const(1, dt), lax.mul(ratio, ratio))))
    inf = lax.bitwise_or(isposinf(a1), isposinf(a2))
    return where(inf, _const(np.inf, dt), out)


@fuse_eagerly(2)
def ldexp(x1, x2, /):
    """x1 * 2**x2 for an integer x2, exact: the power of two is built from its exponent bits
    (in three factors, so that results near the overflow / underflow limits are right)."""
    check_arraylike("ldexp", x1, x2)
    x2 = asarray(x2)
    if get_aval(x2).dtype.kind not in "iub":
        raise ValueError(f"ldexp not supported for input types ({get_aval(asarray(x1)).dtype!r}, "
                         f"{get_aval(x2).dtype!r}): the exponent must be an integer array.")
    (x1,) = _strong_inexact("ldexp", x1)
    x1, x2 = _broadcast_all(x1, lax.convert_element_type(x2, np.int32))
    dt = get_aval(x1).dtype
    info = np.finfo(dt)
    emax, emin = info.maxexp - 1, info.minexp
    k = lax.clamp(lax.full((), 3 * emin, np.int32), x2, lax.full((), 3 * emax, np.int32))
    first = lax.div(k, lax.full((), 3, np.int32))
    second = lax.div(lax.sub(k, first), lax.full((), 2, np.int32))
    third = lax.sub(lax.sub(k, first), second)
    for part in (first, second, third):
        x1 = lax.mul(x1, _pow2(part, dt))
    return x1


def _pow2(k, dt):
    """2**k as dtype `dt`, for k within the normal exponent range."""
    info = np.finfo(dt)
    bits_dt = np.dtype(f"i{dt.itemsize}")
    biased = lax.convert_element_type(lax.add(k, lax.full((), info.maxexp - 1, np.int32)),
                                      bits_dt)
    return lax.bitcast_convert_type(lax.shift_left(biased, lax.full((), info.nmant, bits_dt)),
                                    dt)


@fuse_eagerly(1)
def frexp(x, /):
    """(mantissa, exponent) with x == mantissa * 2**exponent and 0.5 <= |mantissa| < 1; zeros,
    infinities and NaN give (x, 0). Subnormals are scaled into the normal range first."""
    (x,) = _strong_inexact("frexp", x)
    dt = get_aval(x).dtype
    info = np.finfo(dt)
    bits_dt = np.dtype(f"i{dt.itemsize}")
    subnormal = lax.lt(lax.abs(x), _const(info.smallest_normal, dt))
    scaled = where(subnormal, lax.mul(x, _pow2(lax.full((), info.nmant + 1, np.int32), dt)), x)
    bits = lax.bitcast_convert_type(scaled, bits_dt)
    exp_mask = (1 << info.nexp) - 1
    biased = lax.bitwise_and(lax.shift_right_logical(bits, lax.full((), info.nmant, bits_dt)),
                             lax.full((), exp_mask, bits_dt))
    exponent = lax.sub(lax.convert_element_type(biased, np.int32),
                       lax.full((), info.maxexp - 2, np.int32))
    exponent = where(subnormal, lax.sub(exponent, lax.full((), info.nmant + 1, np.int32)),
                     exponent)
    cleared = lax.bitwise_and(bits, lax.full((), ~(exp_mask << info.nmant), bits_dt))
    half_exp = lax.full((), (info.maxexp - 2) << info.nmant, bits_dt)
    mantissa = lax.bitcast_convert_type(lax.bitwise_or(cleared, half_exp), dt)
    special = lax.bitwise_or(lax.eq(x, _const(0, dt)), lax.bitwise_not(lax.is_finite(x)))
    return (where(special, x, mantissa),
            where(special, lax.full((), 0, np.int32), exponent))


def _integer_operands(name, x1, x2):
    check_arraylike(name, x1, x2)
    x1, x2 = promote_and_broadcast(x1, x2)
    if get_aval(x1).dtype.kind not in "iu":
        raise ValueError(f"Arguments to jax.numpy.{name} must be integers.")
    return x1, x2


@fuse_eagerly(2)
def gcd(x1, x2):
    """Greatest common divisor of |x1| and |x2| (Euclid's algorithm in a while loop)."""
    from corejax.lax import while_loop
    x1, x2 = _integer_operands("gcd", x1, x2)
    dt = get_aval(x1).dtype
    zero = _const(0, dt)
    a, b = (x if dt.kind == "u" else lax.abs(x) for x in (x1, x2))

    def cond(ab):
        return lax.reduce_or(lax.ne(ab[1], lax.full_like(ab[1], 0)),
                             tuple(range(get_aval(ab[1]).ndim)))

    def body(ab):
        a, b = ab
        nonzero = lax.ne(b, zero)
        safe_b = where(nonzero, b, _const(1, dt))
        return where(nonzero, b, a), where(nonzero, lax.rem(a, safe_b), zero)

    return while_loop(cond, body, (a, b))[0]


@fuse_eagerly(2)
def lcm(x1, x2):
    """Least common multiple of |x1| and |x2|; 0 if either is 0."""
    x1, x2 = _integer_operands("lcm", x1, x2)
    dt = get_aval(x1).dtype
    d = gcd(x1, x2)
    zero = _const(0, dt)
    safe_d = where(lax.eq(d, zero), _const(1, dt), d)
    out = lax.mul(lax.div(x1, safe_d), x2)
    out = out if dt.kind == "u" else lax.abs(out)
    return where(lax.eq(d, zero), zero, out)


@fuse_eagerly(2)
def logaddexp2(x1, x2, /):
    """log2(2**x1 + 2**x2), without overflow."""
    check_arraylike("logaddexp2", x1, x2)
    x1, x2 = promote_dtypes_inexact(*promote_and_broadcast(x1, x2))
    return _logaddexp2(x1, x2)


@custom_jvp
def _logaddexp2(x, y):
    dt = get_aval(x).dtype
    amax = lax.max(x, y)
    delta = lax.sub(x, y)
    tail = lax.mul(_const(1 / math.log(2), dt), lax.log1p(lax.exp2(lax.neg(lax.abs(delta)))))
    return lax.select(isnan(delta), lax.add(x, y), lax.add(amax, tail))


@_logaddexp2.defjvp
def _logaddexp2_jvp(primals, tangents):
    # d/dx = 2**(x - out): smooth everywhere (1/2 each at a tie); +inf is replaced by 0 so
    # that inf - inf gives no NaN
    (x, y), (tx, ty) = primals, tangents
    out = _logaddexp2(x, y)
    finite = lambda v: lax.select(isposinf(v), lax.full_like(v, 0), v)
    share = lambda v: lax.exp2(lax.sub(finite(v), finite(out)))
    return out, lax.add(lax.mul(tx, share(x)), lax.mul(ty, share(y)))


def fabs(x, /):
    """|x| as a float (integers are promoted)."""
    check_arraylike("fabs", x)
    (x,) = promote_dtypes_inexact(x)
    return lax.abs(x)


@fuse_eagerly(2)
def fmax(x1, x2):
    """Elementwise maximum that ignores NaN (NaN only where both are NaN)."""
    check_arraylike("fmax", x1, x2)
    x1, x2 = promote_and_broadcast(x1, x2)
    return where(lax.bitwise_or(lax.gt(x1, x2), isnan(x2)), x1, x2)


@fuse_eagerly(2)
def fmin(x1, x2):
    """Elementwise minimum that ignores NaN (NaN only where both are NaN)."""
    check_arraylike("fmin", x1, x2)
    x1, x2 = promote_and_broadcast(x1, x2)
    return where(lax.bitwise_or(lax.lt(x1, x2), isnan(x2)), x1, x2)


@fuse_eagerly(1)
def modf(x, /, out=None):
    """(fractional part, integral part), both with the sign of x."""
    check_arraylike("modf", x)
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.modf is not supported.")
    (x,) = promote_dtypes_inexact(x)
    whole = trunc(x)
    return lax.sub(x, whole), whole


@fuse_eagerly(1)
def spacing(x, /):
    """The distance from x to the next representable value away from zero."""
    (x,) = _strong_inexact("spacing", x)
    dt = get_aval(x).dtype
    inf = _const(np.inf, dt)
    toward = where(signbit(x), lax.neg(inf), inf)  # -0 steps toward -inf
    return lax.sub(lax.nextafter(x, toward), x)


@fuse_eagerly(1)
def bitwise_count(x, /):
    """The number of 1 bits in |x|, as uint8."""
    check_arraylike("bitwise_count", x)
    x = asarray(x)
    dt = get_aval(x).dtype
    if dt == np.bool_:
        return lax.convert_element_type(x, np.uint8)
    if dt.kind != "i" and dt.kind != "u":
        raise TypeError(f"bitwise_count requires an integer or boolean input, got {dt.name}.")
    magnitude = lax.abs(x) if dt.kind == "i" else x
    return lax.convert_element_type(lax.population_count(magnitude), np.uint8)


@fuse_eagerly(1)
def i0(x):
    """The modified Bessel function of the first kind of order zero: its power series
    sum_k ((x/2)**2)**k / (k!)**2 (all terms positive) up to |x| = 20 (40 in float64), beyond
    that the asymptotic expansion e**|x| / sqrt(2 pi |x|) * (1 + 1/(8|x|) + 9/(2 (8|x|)**2) +
    ...). Its derivative is that of the expansions (i1, to a few ulp)."""
    check_arraylike("i0", x)
    (x,) = promote_dtypes_inexact(x)
    x = lax.convert_element_type(x, get_aval(x).dtype)
    dt = get_aval(x).dtype
    limit, series_terms, asymptotic_terms = _I0_PLAN[dt.itemsize >= 8]
    ax = lax.abs(x)
    small = lax.le(ax, _const(limit, dt))
    xs = where(small, ax, _const(0, dt))  # each branch sees only inputs it is accurate for
    q = lax.mul(lax.mul(xs, xs), _const(0.25, dt))
    term, series = lax.full_like(xs, 1), lax.full_like(xs, 1)
    for k in range(1, series_terms):
        term = lax.mul(term, lax.div(q, _const(k * k, dt)))
        series = lax.add(series, term)
    xl = where(small, _const(limit + 1, dt), ax)
    inv = lax.div(_const(1, dt), lax.mul(_const(8, dt), xl))
    tail, coeff = lax.full_like(xl, 1), lax.full_like(xl, 1)
    for k in range(1, asymptotic_terms):
        coeff = lax.mul(coeff, lax.mul(inv, _const((2 * k - 1) ** 2 / k, dt)))
        tail = lax.add(tail, coeff)
    # e**|x| split in two halves so that it overflows only where the result does
    half = lax.exp(lax.mul(xl, _const(0.5, dt)))
    asymptotic = lax.mul(lax.mul(half, lax.div(half, lax.sqrt(lax.mul(_const(2 * np.pi, dt),
                                                                         xl)))), tail)
    return where(small, series, asymptotic)


# (series limit, series terms, asymptotic terms): both truncation errors below the dtype's
# eps (measured against scipy.special.i0: <= 6 ulp in float32, <= 10 ulp in float64)
_I0_PLAN = {False: (20.0, 48, 12), True: (40.0, 100, 30)}


# --- complex parts and predicates -------------------------------------------------------------

def imag(val, /):
    """The imaginary part: zeros like a real or integer `val`."""
    check_arraylike("imag", val)
    val = asarray(val)
    if dtypes.is_complex(get_aval(val).dtype):
        return lax.imag(val)
    return lax.full_like(val, 0)


@fuse_eagerly(1)
def angle(z, deg=False):
    """The complex argument atan2(imag, real), in radians or degrees; real inputs give 0 for
    x >= +0 and pi for x < 0 or x == -0."""
    check_arraylike("angle", z)
    z = asarray(z)
    if dtypes.is_complex(get_aval(z).dtype):
        out = lax.atan2(lax.imag(z), lax.real(z))
    else:
        (z,) = _strong_inexact("angle", z)
        out = lax.atan2(lax.full_like(z, 0), z)
    if deg:
        out = lax.mul(out, _const(180 / np.pi, get_aval(out).dtype))
    return out


def iscomplex(x):
    """Whether each element has a nonzero imaginary part."""
    check_arraylike("iscomplex", x)
    x = asarray(x)
    if dtypes.is_complex(get_aval(x).dtype):
        return lax.ne(lax.imag(x), lax.full((), 0, dtypes.real_dtype(get_aval(x).dtype)))
    return lax.full(get_aval(x).shape, False, np.bool_)


def isreal(x):
    """Whether each element has a zero imaginary part."""
    check_arraylike("isreal", x)
    x = asarray(x)
    if dtypes.is_complex(get_aval(x).dtype):
        return lax.eq(lax.imag(x), lax.full((), 0, dtypes.real_dtype(get_aval(x).dtype)))
    return lax.full(get_aval(x).shape, True, np.bool_, weak_type=get_aval(x).weak_type)


def sort_complex(a):
    """`a` sorted along its last axis (complex numbers by real, then imaginary part), as a
    complex array."""
    from corejax.numpy._sorting import sort
    check_arraylike("sort_complex", a)
    a = sort(asarray(a), axis=-1)
    return lax.convert_element_type(a, dtypes.complex_dtype(get_aval(a).dtype))


def _companion_roots(p):
    """The eigenvalues of the companion matrix of the coefficients p (p[0] != 0)."""
    from corejax.numpy import linalg
    n = get_aval(p).shape[0]
    if n < 2:
        return lax.full((0,), 0, dtypes.complex_dtype(get_aval(p).dtype))
    dt = get_aval(p).dtype
    first_row = lax.neg(lax.div(lax.slice_in_dim(p, 1, n), lax.broadcast_in_dim(
        lax.index_in_dim(p, 0, keepdims=False), (n - 1,), ())))
    below = asarray(np.eye(n - 2, n - 1), dt)  # the companion matrix's shifted identity
    return linalg.eigvals(lax.concatenate([lax.reshape(first_row, (1, n - 1)), below], 0))


def roots(p, *, strip_zeros=True):
    """The roots of the polynomial with coefficients p (highest degree first), complex.
    strip_zeros=True drops leading zero coefficients (which needs concrete values); with
    False the roots they stand for are NaN, and p may be traced."""
    check_arraylike("roots", p)
    p = asarray(p)
    if get_aval(p).ndim != 1:
        raise ValueError("Input must be a rank-1 array.")
    (p,) = promote_dtypes_inexact(p)
    n = get_aval(p).shape[0]
    if strip_zeros:
        from corejax import core
        values = core.concrete_or_error(np.asarray, p, "The error occurred in the jnp.roots() "
                                        "function. To use jnp.roots under jit, pass "
                                        "strip_zeros=False.")
        leading = int(np.argmax(values != 0)) if np.any(values != 0) else n
        return _companion_roots(lax.slice_in_dim(p, leading, n))
    if n < 2:
        return lax.full((0,), 0, dtypes.complex_dtype(get_aval(p).dtype))
    from corejax.numpy._reductions import argmin
    zero = lax.full_like(p, 0)
    is_zero = lax.eq(p, zero)
    leading = lax.convert_element_type(argmin(is_zero), np.int32)
    all_zero = lax.reduce_and(is_zero, (0,))
    leading = lax.select(all_zero, lax.full((), n, np.int32), leading)
    safe = lax.select(lax.broadcast_in_dim(all_zero, (n,), ()), lax.full_like(p, 1), p)
    # the leading zeros rolled to the end: p p, read from the first nonzero coefficient
    rolled = lax.dynamic_slice(lax.concatenate([safe, safe], 0), (leading,), (n,))
    found = _companion_roots(rolled)
    found = lax.sort_key_val(lax.eq(found, lax.full_like(found, 0)), found)[1]
    keep = lax.lt(lax.iota(np.int32, n - 1), lax.sub(lax.full((), n - 1, np.int32), leading))
    nan = lax.full_like(found, complex(np.nan, np.nan))
    return lax.select(keep, found, nan)


def iscomplexobj(x):
    """Whether x has a complex dtype (a Python bool)."""
    return dtypes.is_complex(_obj_dtype(x))


def isrealobj(x):
    return not iscomplexobj(x)


def _obj_dtype(x):
    if hasattr(x, "dtype"):
        return np.dtype(x.dtype)
    return np.asarray(x).dtype
