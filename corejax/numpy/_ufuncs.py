"""Elementwise jnp functions: dtype promotion and broadcasting, then lax."""
from __future__ import annotations

import numpy as np

import operator

from corejax import dtypes, lax
from corejax.core import get_aval
from corejax.custom_derivatives import custom_jvp
from corejax.array import Array
from corejax.numpy._core import (asarray, check_arraylike, promote_and_broadcast,
                                 promote_dtypes, promote_dtypes_inexact, plain_binary,
                                 plain_select)
from corejax.numpy._eager_fusion import fuse_eagerly

__all__ = []

# an Array of these dtypes is its own promote_dtypes_inexact
_INEXACT = frozenset(map(np.dtype, (np.float16, np.float32, np.float64, np.complex64,
                                    np.complex128)))


def _unary_inexact(lax_fn, name):
    def fn(x, /):
        if type(x) is not Array or x._value.dtype not in _INEXACT:
            check_arraylike(name, x)
            (x,) = promote_dtypes_inexact(x)
        return lax_fn(x)
    fn.__name__ = name
    fn.__doc__ = f"Elementwise {name}; integer inputs are promoted to the default float dtype."
    return fn


def _unary(lax_fn, name):
    def fn(x, /):
        check_arraylike(name, x)
        return lax_fn(asarray(x))
    fn.__name__ = name
    fn.__doc__ = f"Elementwise {name}."
    return fn


def _binary(lax_fn, name, inexact=False, prim=None):
    """A jnp binary function; `prim`: the lax primitive it computes for the operands
    numpy/_core.plain_binary takes."""
    def fn(x, y, /):
        if prim is not None:
            out = plain_binary(prim, x, y)
            if out is not None:
                return out
        check_arraylike(name, x, y)
        x, y = promote_and_broadcast(x, y)
        if inexact:
            x, y = promote_dtypes_inexact(x, y)
        return lax_fn(x, y)
    fn.__name__ = name
    fn.__doc__ = f"Elementwise {name}, with NumPy broadcasting and JAX type promotion."
    return fn


exp = _unary_inexact(lax.exp, "exp")
exp2 = _unary_inexact(lax.exp2, "exp2")
log = _unary_inexact(lax.log, "log")
log1p = _unary_inexact(lax.log1p, "log1p")
expm1 = _unary_inexact(lax.expm1, "expm1")
tanh = _unary_inexact(lax.tanh, "tanh")
sin = _unary_inexact(lax.sin, "sin")
cos = _unary_inexact(lax.cos, "cos")
tan = _unary_inexact(lax.tan, "tan")
arcsin = _unary_inexact(lax.asin, "arcsin")
arccos = _unary_inexact(lax.acos, "arccos")
arctan = _unary_inexact(lax.atan, "arctan")
sinh = _unary_inexact(lax.sinh, "sinh")
cosh = _unary_inexact(lax.cosh, "cosh")
arcsinh = _unary_inexact(lax.asinh, "arcsinh")
arccosh = _unary_inexact(lax.acosh, "arccosh")
arctanh = _unary_inexact(lax.atanh, "arctanh")
sqrt = _unary_inexact(lax.sqrt, "sqrt")
cbrt = _unary_inexact(lax.cbrt, "cbrt")
negative = _unary(lax.neg, "negative")
absolute = _unary(lambda x: x if dtypes.kind_of(get_aval(x).dtype) in "bu" else lax.abs(x),
                  "absolute")
abs = absolute
sign = _unary(lambda x: lax.sign(x) if get_aval(x).dtype != np.bool_ else x, "sign")
arctan2 = _binary(lax.atan2, "arctan2", inexact=True)
add = _binary(lambda x, y: lax.bitwise_or(x, y) if get_aval(x).dtype == np.bool_
              else lax.add(x, y), "add", prim=lax.add_p)
subtract = _binary(lax.sub, "subtract", prim=lax.sub_p)
multiply = _binary(lambda x, y: lax.bitwise_and(x, y) if get_aval(x).dtype == np.bool_
                   else lax.mul(x, y), "multiply", prim=lax.mul_p)
maximum = _binary(lambda x, y: lax.bitwise_or(x, y) if get_aval(x).dtype == np.bool_
                  else lax.max(x, y), "maximum", prim=lax.max_p)
minimum = _binary(lambda x, y: lax.bitwise_and(x, y) if get_aval(x).dtype == np.bool_
                  else lax.min(x, y), "minimum", prim=lax.min_p)
nextafter = _binary(lax.nextafter, "nextafter", inexact=True)
equal = _binary(lax.eq, "equal", prim=lax.eq_p)
not_equal = _binary(lax.ne, "not_equal", prim=lax.ne_p)


def _lexicographic(compare):
    """jnp's order on complex numbers (lax's comparisons refuse them): by real part, then by
    imaginary part, as JAX's jnp.less & co. do."""
    def fn(x, y):
        if get_aval(x).dtype.kind != "c":
            return compare(x, y)
        xr, yr = lax.real(x), lax.real(y)
        tie = lax.bitwise_and(lax.eq(xr, yr), compare(lax.imag(x), lax.imag(y)))
        return lax.bitwise_or(lax.bitwise_and(lax.ne(xr, yr), compare(xr, yr)), tie)
    return fn


less = _binary(_lexicographic(lax.lt), "less", prim=lax.lt_p)
less_equal = _binary(_lexicographic(lax.le), "less_equal", prim=lax.le_p)
greater = _binary(_lexicographic(lax.gt), "greater", prim=lax.gt_p)
greater_equal = _binary(_lexicographic(lax.ge), "greater_equal", prim=lax.ge_p)
bitwise_and = _binary(lax.bitwise_and, "bitwise_and")
bitwise_or = _binary(lax.bitwise_or, "bitwise_or")
bitwise_xor = _binary(lax.bitwise_xor, "bitwise_xor")
left_shift = _binary(lax.shift_left, "left_shift")


def _right_shift(x, y):
    if dtypes.kind_of(get_aval(x).dtype) == "u":
        return lax.shift_right_logical(x, y)
    return lax.shift_right_arithmetic(x, y)


right_shift = _binary(_right_shift, "right_shift")
bitwise_not = invert = _unary(lax.bitwise_not, "invert")


def _logical(lax_fn, name):
    def fn(x, y, /):
        x, y = promote_and_broadcast(asarray(x) != 0 if get_aval(asarray(x)).dtype != np.bool_
                                     else x,
                                     asarray(y) != 0 if get_aval(asarray(y)).dtype != np.bool_
                                     else y)
        return lax_fn(x, y)
    fn.__name__ = name
    return fuse_eagerly(2)(fn)


logical_and = _logical(lax.bitwise_and, "logical_and")
logical_or = _logical(lax.bitwise_or, "logical_or")
logical_xor = _logical(lax.bitwise_xor, "logical_xor")


@fuse_eagerly(1)
def logical_not(x, /):
    x = asarray(x)
    dt = get_aval(x).dtype
    return lax.bitwise_not(x if dt == np.bool_ else lax.ne(x, _weak_const(0, dt)))


# XLA's algebraic simplifier computes A / broadcast(B) as A * broadcast(1 / B) for float16/32/64
# (not bfloat16 or complex), so JAX's quotients by a broadcast divisor (x / scalar, x / row sums)
# round that way; these do too. (reciprocal_dtypes is shared with mean and var.)
reciprocal_dtypes = frozenset(map(np.dtype, (np.float16, np.float32, np.float64)))


def true_divide(x, y, /):
    out = plain_binary(lax.div_p, x, y, times=lax.mul_p)   # (a broadcast divisor: below)
    if out is not None:
        return out
    check_arraylike("true_divide", x, y)
    x, y = promote_dtypes_inexact(*promote_dtypes(x, y))
    y_aval = get_aval(y)
    if y_aval.dtype in reciprocal_dtypes and _is_broadcast(y_aval.shape, get_aval(x).shape):
        return lax.mul(*promote_and_broadcast(x, lax.div(lax.full_like(y, 1), y)))
    return lax.div(*promote_and_broadcast(x, y))


def _is_broadcast(shape, other):
    """Whether an operand of `shape` is broadcast against one of `other` (False if the two
    do not broadcast: the division then raises its usual error)."""
    try:
        return np.broadcast_shapes(shape, other) != tuple(shape)
    except ValueError:
        return False


divide = true_divide


@fuse_eagerly(2)
def floor_divide(x, y, /):
    check_arraylike("floor_divide", x, y)
    x, y = promote_and_broadcast(x, y)
    dt = get_aval(x).dtype
    if dtypes.kind_of(dt) in "iu":
        q = lax.div(x, y)
        if dtypes.kind_of(dt) == "u":
            return q
        # lax.div truncates; floor differs when the signs differ and the division is inexact
        # (signs as JAX compares them: x // 0 is -2 for x > 0, since x rem 0 is x)
        zero = _weak_const(0, dt)
        fix = lax.bitwise_and(lax.ne(lax.rem(x, y), zero), lax.ne(lax.sign(x), lax.sign(y)))
        return lax.select(fix, lax.sub(q, _weak_const(1, dt)), q)
    if dt == np.bool_:
        raise TypeError("floor_divide does not accept dtype bool.")
    return _float_floor_divide(x, y, dt)


def _float_floor_divide(x, y, dt):
    """CPython's float divmod, as JAX's: (x - x mod y) / y, one less where the remainder's sign
    differs from y's, rounded (floor(x / y) differs when x / y rounds up to an integer)."""
    zero = _weak_const(0, dt)
    mod = lax.rem(x, y)
    q = lax.div(lax.select(lax.eq(y, zero), x, lax.sub(x, mod)), y)
    fix = lax.bitwise_and(lax.ne(mod, zero), lax.ne(lax.sign(y), lax.sign(mod)))
    return lax.round(lax.select(fix, lax.sub(q, _weak_const(1, dt)), q))


@fuse_eagerly(2)
def remainder(x, y, /):
    check_arraylike("remainder", x, y)
    x, y = promote_and_broadcast(x, y)
    dt = get_aval(x).dtype
    zero = _weak_const(0, dt)
    if dtypes.kind_of(dt) in "iu":  # an integer x mod 0 is 0, as JAX's (it divides by 1)
        y = lax.select(lax.eq(y, zero), lax.full_like(y, 1), y)
    r = lax.rem(x, y)
    if dtypes.kind_of(dt) == "u":
        return r
    fix = lax.bitwise_and(lax.ne(r, zero), lax.ne(lax.lt(r, zero), lax.lt(y, zero)))
    return lax.select(fix, lax.add(r, y), r)


mod = remainder


def fmod(x, y, /):
    x, y = promote_and_broadcast(x, y)
    return lax.rem(x, y)


@fuse_eagerly(2)
def divmod(x, y, /):
    return floor_divide(x, y), remainder(x, y)


def power(x, y, /):
    check_arraylike("power", x, y)
    if isinstance(y, (int, np.integer)) and not isinstance(y, bool):
        return lax.integer_pow(asarray(x), int(y))
    x, y = promote_and_broadcast(x, y)
    dt = get_aval(x).dtype
    if dtypes.kind_of(dt) in "iub":
        return _integer_power(x, y)
    return lax.pow(x, y)


def _integer_power(x, y):
    """x ** y for integer arrays by binary exponentiation over the bits of y."""
    dt = get_aval(x).dtype
    one = lax.full(get_aval(x).shape, 1, dt)
    acc, base, exp_ = one, x, y
    zero = lax.full((), 0, dt)
    for _ in range(dt.itemsize * 8):
        bit = lax.ne(lax.bitwise_and(exp_, lax.full((), 1, dt)), zero)
        acc = lax.select(bit, lax.mul(acc, base), acc)
        base = lax.mul(base, base)
        exp_ = lax.shift_right_logical(exp_, lax.full((), 1, dt))
    return acc


pow = power


def float_power(x, y, /):
    x, y = promote_dtypes_inexact(*promote_and_broadcast(x, y))
    return lax.pow(x, y)


def square(x, /):
    return lax.square(asarray(x))


def reciprocal(x, /):
    (x,) = promote_dtypes_inexact(x)
    return lax.integer_pow(x, -1)


def positive(x, /):
    return asarray(x)


def _rounding(lax_fn, name):
    def fn(x, /):
        x = asarray(x)
        if dtypes.kind_of(get_aval(x).dtype) in "iub":
            return x
        return lax_fn(x)
    fn.__name__ = name
    return fn


floor = _rounding(lax.floor, "floor")
ceil = _rounding(lax.ceil, "ceil")
trunc = fuse_eagerly(1)(_rounding(
    lambda x: lax.select(lax.lt(x, lax.full((), 0, get_aval(x).dtype)), lax.ceil(x),
                         lax.floor(x)), "trunc"))
fix = trunc


def rint(x, /):
    """Rounds half to even; integer and boolean inputs become (strong) floats, as in JAX."""
    check_arraylike("rint", x)
    x = asarray(x)
    dt = get_aval(x).dtype
    if dtypes.kind_of(dt) in "iub":
        return lax.convert_element_type(x, dtypes.default_float_dtype())
    return lax.round(x, 1)


@fuse_eagerly(1)
def round(a, decimals: int = 0, out=None):
    """Rounds half to even, like NumPy."""
    check_arraylike("round", a)
    decimals = operator.index(decimals)
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.round is not supported.")
    a = asarray(a)
    dt = get_aval(a).dtype
    if dtypes.kind_of(dt) in "iub":
        if decimals < 0:
            raise NotImplementedError("integer np.round not implemented for decimals < 0 "
                                      f"(got decimals={decimals}); convert the array to a float "
                                      "dtype first.")
        return a
    if decimals == 0:
        return lax.round(a, 1)
    factor = _weak_const(10.0 ** decimals, dt)
    return lax.div(lax.round(lax.mul(a, factor), 1), factor)


around = round


def _weak_const(value, dt):
    """A rank-0 constant that promotes like a Python scalar: the result of combining it with
    an array is weak only if the array is."""
    return lax.full((), value, dt, weak_type=True)


@fuse_eagerly(1)
def isfinite(x, /):
    x = asarray(x)
    if dtypes.kind_of(get_aval(x).dtype) in "iub":
        return lax.full(get_aval(x).shape, True, np.bool_)
    if get_aval(x).dtype.kind == "c":
        return lax.bitwise_and(lax.is_finite(lax.real(x)), lax.is_finite(lax.imag(x)))
    return lax.is_finite(x)


@fuse_eagerly(1)
def isinf(x, /):
    x = asarray(x)
    dt = get_aval(x).dtype
    if dtypes.kind_of(dt) in "iub":
        return lax.full(get_aval(x).shape, False, np.bool_)
    if dt.kind == "c":
        return lax.bitwise_or(isinf(lax.real(x)), isinf(lax.imag(x)))
    return lax.eq(lax.abs(x), lax.full((), np.inf, dt))


def isnan(x, /):
    x = asarray(x)
    return lax.ne(x, x)


def isposinf(x, /):
    return _isinf_signed(x, np.inf)


def isneginf(x, /):
    return _isinf_signed(x, -np.inf)


def _isinf_signed(x, inf):
    x = asarray(x)
    aval = get_aval(x)
    if dtypes.kind_of(aval.dtype) in "iub":
        return lax.full(aval.shape, False, np.bool_)
    return lax.eq(x, lax.full((), inf, aval.dtype))


@fuse_eagerly(1)
def signbit(x, /):
    x = asarray(x)
    dt = get_aval(x).dtype
    if dtypes.kind_of(dt) == "f":
        if dt.itemsize == 1:  # float8 / float6 / float4, as JAX's
            raise NotImplementedError("jax.numpy.signbit only supports 16, 32, and 64-bit "
                                      "types.")
        bits = lax.bitcast_convert_type(x, np.dtype(f"i{dt.itemsize}"))
        return lax.lt(bits, lax.full((), 0, bits.dtype))
    return lax.lt(x, lax.full((), 0, dt))


@fuse_eagerly(2)
def copysign(x, y, /):
    x, y = promote_dtypes_inexact(*promote_and_broadcast(x, y))
    return where(signbit(y), negative(absolute(x)), absolute(x))


@fuse_eagerly(2)
def logaddexp(x, y, /):
    x, y = promote_dtypes_inexact(*promote_and_broadcast(x, y))
    return _logaddexp(x, y)


@custom_jvp
def _logaddexp(x, y):
    amax = lax.max(x, y)
    if get_aval(x).dtype.kind == "c":
        # amax + log1p(e^(x + y - 2 amax)), its phase brought back into [-pi, pi)
        dt = get_aval(x).dtype
        out = lax.add(amax, lax.log1p(lax.exp(lax.sub(lax.add(x, y),
                                                       lax.mul(amax, lax.full((), 2, dt))))))
        return lax.complex(lax.real(out), _wrap_phase(lax.imag(out)))
    delta = lax.sub(x, y)
    return lax.select(isnan(delta), lax.add(x, y),
                      lax.add(amax, lax.log1p(lax.exp(lax.neg(lax.abs(delta))))))


def _wrap_phase(angle):
    """`angle` moved by a multiple of 2 pi into [-pi, pi)."""
    rdt = get_aval(angle).dtype
    pi, two_pi = lax.full((), np.pi, rdt), lax.full((), 2 * np.pi, rdt)
    r = lax.rem(lax.add(angle, pi), two_pi)
    r = lax.select(lax.lt(r, lax.full_like(r, 0)), lax.add(r, lax.full_like(r, 2 * np.pi)), r)
    return lax.sub(r, lax.full_like(r, np.pi))


@_logaddexp.defjvp
def _logaddexp_jvp(primals, tangents):
    # d/dx log(e^x + e^y) = e^(x - out): smooth everywhere, 1/2 each at x == y (the max/abs
    # form's derivative is not); +inf is replaced by 0 so that inf - inf gives no NaN.
    (x, y), (tx, ty) = primals, tangents
    out = _logaddexp(x, y)
    if get_aval(x).dtype.kind == "c":
        share = lambda v: lax.exp(lax.sub(v, out))  # noqa: E731
        return out, lax.add(lax.mul(tx, share(x)), lax.mul(ty, share(y)))
    finite = lambda v: lax.select(isposinf(v), lax.full_like(v, 0), v)
    share = lambda v: lax.exp(lax.sub(finite(v), finite(out)))
    return out, lax.add(lax.mul(tx, share(x)), lax.mul(ty, share(y)))


def where(condition, x=None, y=None, /):
    """Elementwise choice `x if condition else y`; the one-argument form is `nonzero`."""
    if x is None and y is None:
        from corejax.numpy._reductions import nonzero
        return nonzero(condition)
    if x is None or y is None:
        raise TypeError(f"where requires ndarray or scalar arguments, got NoneType at position "
                        f"{1 if x is None else 2}: pass both x and y, or neither (the "
                        "one-argument form is jnp.nonzero).")
    out = plain_select(condition, x, y)
    if out is not None:
        return out
    check_arraylike("where", condition, x, y)
    cond = asarray(condition)
    if get_aval(cond).dtype != np.bool_:
        cond = lax.ne(cond, lax.full((), 0, get_aval(cond).dtype))
    x, y = promote_dtypes(x, y)
    cond, x, y = _broadcast_all(cond, x, y)
    return lax.select(cond, x, y)


def _broadcast_all(*arrs):
    from corejax.numpy._core import broadcast_shapes, broadcast_to_shape
    shape = broadcast_shapes(*[get_aval(a).shape for a in arrs])
    return [broadcast_to_shape(a, shape) for a in arrs]


@fuse_eagerly(3)
def clip(arr=None, /, min=None, max=None, *, a=None, a_min=None, a_max=None):
    """Clips values to [min, max] (either bound may be None)."""
    arr = a if arr is None else arr
    min = a_min if min is None else min
    max = a_max if max is None else max
    out = asarray(arr)
    if any(b is not None and np.dtype(getattr(b, "dtype", type(b))).kind == "c"
           for b in (out, min, max)):
        raise ValueError("Clip received a complex value either through the input or the min/max "
                         "keywords. Complex values have no ordering and cannot be clipped: take "
                         "their real or imaginary parts first (jnp.real / jnp.imag).")
    if min is not None:
        out = maximum(min, out)
    if max is not None:
        out = minimum(max, out)
    return out


@fuse_eagerly(2)
def heaviside(x, h0, /):
    x, h0 = promote_dtypes_inexact(*promote_and_broadcast(x, h0))
    zero = _weak_const(0, get_aval(x).dtype)
    return where(lax.lt(x, zero), zero, where(lax.gt(x, zero), _weak_const(1, get_aval(x).dtype),
                                              h0))


def deg2rad(x, /):
    check_arraylike("deg2rad", x)
    (x,) = promote_dtypes_inexact(x)
    return lax.mul(x, _weak_const(np.pi / 180, get_aval(x).dtype))


def rad2deg(x, /):
    check_arraylike("rad2deg", x)
    (x,) = promote_dtypes_inexact(x)
    return lax.mul(x, _weak_const(180 / np.pi, get_aval(x).dtype))


radians, degrees = deg2rad, rad2deg


@fuse_eagerly(1)
def sinc(x, /):
    (x,) = promote_dtypes_inexact(x)
    dt = get_aval(x).dtype
    pix = lax.mul(x, _weak_const(np.pi, dt))
    is_zero = lax.eq(x, _weak_const(0, dt))
    one = lax.full_like(x, 1)
    safe = lax.select(is_zero, one, pix)
    return lax.select(is_zero, one, lax.div(lax.sin(safe), safe))


@fuse_eagerly(1)
def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    x = asarray(x)
    dt = get_aval(x).dtype
    if dtypes.kind_of(dt) not in "fc":
        return x
    if dt.kind == "c":  # the real and imaginary parts separately
        parts = (nan_to_num(lax.real(x), copy, nan, posinf, neginf),
                 nan_to_num(lax.imag(x), copy, nan, posinf, neginf))
        return lax.complex(*parts)
    info = dtypes.finfo(dt)
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    x = where(isnan(x), lax.full((), nan, dt), x)
    x = where(isposinf(x), lax.full((), posinf, dt), x)
    return where(isneginf(x), lax.full((), neginf, dt), x)


def conjugate(x, /):
    """The complex conjugate; a real or integer array is returned as it is."""
    check_arraylike("conjugate", x)
    x = asarray(x)
    return lax.conj(x) if get_aval(x).dtype.kind == "c" else x


conj = conjugate


def real(x, /):
    """The real part; a real or integer array is returned as it is."""
    check_arraylike("real", x)
    x = asarray(x)
    return lax.real(x) if get_aval(x).dtype.kind == "c" else x
