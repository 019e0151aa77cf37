"""Vectorizable elementwise math for generated Numba kernels.

Why this exists: the registry build of llvmlite has no SVML, so ``math.exp`` (and every other
transcendental) inside a Numba loop is a scalar libm call that stops LLVM from vectorizing the
loop. The functions here are plain arithmetic, selects, bit casts, table loads and LLVM
intrinsics that have vector forms (rint, floor, fabs, fma), so a loop that calls them vectorizes.

What there is (``FAST_UNARY``, ``FAST_BINARY``; accuracy in ``ULP_BOUNDS``):
- float32: exp, exp2, expm1, log, log2, log10, log1p, tanh, logistic, softplus (log(1 + e**x),
  a composite, not a lax primitive), erf, erfc, sin, cos, sinh, cosh, asinh; pow (binary,
  computed in float64).
- float64: exp, expm1, log, log1p, tanh, logistic, softplus.
- Everything else (float64 erf/erfc/sin/cos/log2/log10/pow, tan, atan, ...) has no entry:
  the code generator falls back to ``math.*`` (scalar, correct, slow).

How generated kernels use them::

    from corejax.compiler.fastmath import exp_f32      # fastmath.import_line(exp_f32)
    @numba.njit(cache=True, error_model="numpy")
    def kernel(x, out):
        for i in range(x.size):
            out[i] = exp_f32(x[i])

``lookup(name, dtype)`` returns the function for a lax primitive name and dtype (or None) and
``import_line(*functions)`` the source line that brings them into a generated module.

Each function is its own dispatcher, ``njit(cache=True, error_model="numpy", fastmath=False,
forceinline=True)``. The flags are all set explicitly because Numba lets a callee inherit unset
flags from its first caller: with ``fastmath=False`` pinned, a ``fastmath=True`` caller cannot
make LLVM drop our nan/inf selects or reassociate the Cody-Waite reduction. ``forceinline`` marks
the compiled function ``alwaysinline`` for LLVM, which inlines it into the caller's loop before
vectorizing (without it LLVM's cost model declines the larger ones, log1p and erf, and the loop
stays scalar). ``error_model="numpy"`` keeps float division free of the ZeroDivisionError branch
that would also block vectorization; callers should use it too, for the same reason. Inlining
happens in LLVM, not in Numba's IR, so each function is typed and compiled once per process (and
loaded from Numba's disk cache after that), not once per kernel.

Vector width: on AVX-512 hosts LLVM prefers 256-bit vectors (``<8 x float>``). Compiling with
the host's CPU features plus ``-prefer-256-bit`` (``NUMBA_CPU_FEATURES``, a process-wide choice
for the compiler to make) gives 512-bit ones and 1.3-1.5x the throughput; see
bench/bench_fastmath.py --wide. fma and fmuladd are single instructions on any x86 since
Haswell and on ARMv8; a host without FMA would get scalar libm fma calls in erfc, exp2 and pow.

Conventions (tests/test_fastmath.py measures and asserts all of them):
- Arguments are converted to the function's dtype first, results have that dtype.
- Denormal inputs and outputs are computed, not flushed (no FTZ/DAZ is set anywhere).
- Special values follow C99 Annex F: exp(-inf)=0, exp(+inf)=inf, overflow -> inf, underflow -> 0
  (through the denormals, with one rounding), log(0)=-inf, log(x<0)=nan, log(inf)=inf,
  tanh(+-inf)=+-1, erf(+-inf)=+-1, sin(+-inf)=nan, nan in -> nan out, f(+-0)=+-0 for odd
  functions, and C99's table of pow special cases.
- Accuracy bounds, in units in the last place of the result's dtype, are in ``ULP_BOUNDS``.

Algorithms are the classical published ones, implemented here from their descriptions:
Cody-Waite range reduction for exp (k = rint(x/ln2), r = x - k*ln2 with ln2 split in a short
exact high part and a low part), 2^k built from the exponent bits, the exponent/mantissa split
of log around sqrt(2) (float64: log(1+f) = 2 atanh(f/(2+f))), Tang-style reconstruction for
expm1, erfc(x) = exp(-x^2)*erfcx(x) with the square carried in two floats through fma, and a
Payne-Hanek-style table reduction for sin/cos (described at its table). Every float32 polynomial
was fitted for this file: a minimax fit of the stated function on the stated interval, minimizing
the maximum *relative* error by Lawson's iteratively reweighted least squares over 4000 Chebyshev
nodes (float64, numpy), then rounded to float32 one coefficient at a time, lowest power first,
refitting the remaining ones after each rounding. Coefficients are listed highest power first
(Horner order).
"""
import math

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from corejax.lax.elementwise import GILES_ERF_INV_CENTRAL, GILES_ERF_INV_TAIL

MODULE = __name__

_jit = njit(cache=True, error_model="numpy", fastmath=False, forceinline=True)

f32 = np.float32
f64 = np.float64


# ---------------------------------------------------------------------------------------------
# Bit casts and LLVM intrinsics (each lowers to one instruction with a vector form)

def _as_int_width(builder, value, width):
    if value.type.width > width:
        return builder.trunc(value, ir.IntType(width))
    if value.type.width < width:
        return builder.sext(value, ir.IntType(width))
    return value


def _bitcast_intrinsic(name, doc, from_type, to_type, to_llvm):
    """An @intrinsic reinterpreting the bits of one scalar as another (an integer argument of
    any width is truncated or sign-extended to the width of to_type first)."""
    def typer(typingctx, value):
        if isinstance(from_type, type):
            if not isinstance(value, from_type):
                return None
        elif value != from_type:
            return None

        def codegen(context, builder, sig, args):
            arg = args[0]
            if isinstance(arg.type, ir.IntType):
                arg = _as_int_width(builder, arg, to_type.bitwidth)
            return builder.bitcast(arg, to_llvm)
        return to_type(value), codegen
    typer.__name__ = typer.__qualname__ = name
    typer.__doc__ = doc
    return intrinsic(prefer_literal=False)(typer)


f32_as_i32 = _bitcast_intrinsic("f32_as_i32", "The IEEE bits of a float32 as an int32.",
                                types.float32, types.int32, ir.IntType(32))
f64_as_i64 = _bitcast_intrinsic("f64_as_i64", "The IEEE bits of a float64 as an int64.",
                                types.float64, types.int64, ir.IntType(64))
i32_as_f32 = _bitcast_intrinsic("i32_as_f32", "The float32 whose bits are an integer's low 32.",
                                types.Integer, types.float32, ir.FloatType())
i64_as_f64 = _bitcast_intrinsic("i64_as_f64", "The float64 whose bits are an integer's low 64.",
                                types.Integer, types.float64, ir.DoubleType())


def _llvm_float_intrinsic(llvm_name, arity):
    def typer(typingctx, *args):
        if len(args) != arity or args[0] not in (types.float32, types.float64):
            return None
        if any(a != args[0] for a in args):
            return None

        def codegen(context, builder, sig, llvm_args):
            ty = llvm_args[0].type
            suffix = "f32" if ty == ir.FloatType() else "f64"
            fnty = ir.FunctionType(ty, [ty] * arity)
            fn = cgutils.get_or_insert_function(builder.module, fnty, f"{llvm_name}.{suffix}")
            return builder.call(fn, llvm_args)
        return args[0](*args), codegen
    return typer


@intrinsic
def _rint(typingctx, x):
    """Round to nearest even (llvm.rint: vroundps/vrndscaleps)."""
    return _llvm_float_intrinsic("llvm.rint", 1)(typingctx, x)


@intrinsic
def _fma(typingctx, a, b, c):
    """a*b + c with one rounding (llvm.fma). Used where the exactness matters, not for speed."""
    return _llvm_float_intrinsic("llvm.fma", 3)(typingctx, a, b, c)


@intrinsic
def _mul_add(typingctx, a, b, c):
    """a*b + c, fused where the target has FMA (llvm.fmuladd), two operations elsewhere."""
    return _llvm_float_intrinsic("llvm.fmuladd", 3)(typingctx, a, b, c)


@_jit
def _horner(x, coeffs):
    # LLVM fully unrolls this constant-trip loop, then vectorizes the caller's loop (the tests
    # check the IR for vector types).
    acc = coeffs[0]
    for i in range(1, len(coeffs)):
        acc = _mul_add(acc, x, coeffs[i])
    return acc


def _coeffs32(*values):
    return tuple(f32(v) for v in values)


# ---------------------------------------------------------------------------------------------
# float32 constants

_ZERO, _HALF, _ONE, _TWO = f32(0.0), f32(0.5), f32(1.0), f32(2.0)
_INF = f32(np.inf)
_NAN = f32(np.nan)
_LOG2E = f32(1.4426950408889634)
_LN2_HI = f32(0.693359375)          # 9 significant bits: k * _LN2_HI is exact for |k| < 2^15
_LN2_LO = f32(-2.1219444e-4)         # ln 2 - _LN2_HI, rounded
_LN2 = f32(0.6931472)                # ln 2 rounded, and the rest:
_LN2_TAIL = f32(-1.9046542e-09)
_SQRT_HALF_BITS = 0x3F3504F3         # float32 bits of 0.70710677 (sqrt(1/2) rounded)
_TWO23 = f32(8388608.0)
_MIN_NORMAL = f32(1.1754944e-38)

# exp(r) = 1 + r + r^2 * P(r) on |r| <= ln2/2 (max relative error of the fit 3.1e-9 = 0.05*2^-24)
_EXP_P = _coeffs32(0.0013821446, 0.008368662, 0.041668255, 0.16666521, 0.49999994)
# expm1(r) = r + r^2/2 + r^3 * Q(r) on |r| <= ln2/2 (fit error 4.3e-10 relative)
_EXPM1_Q = _coeffs32(0.00019760987, 0.0013932313, 0.008333547, 0.041666493, 0.16666666)
# log1p(f) = f - f^2/2 + f^3 * R(f) on sqrt(1/2)-1 <= f <= sqrt(2)-1 (fit error 5.8e-9 relative)
_LOG_R = _coeffs32(-0.07636439, 0.12762217, -0.1315961, 0.1420158, -0.16623409, 0.20001242,
                   -0.2500082, 0.3333333)
# tanh(x) = x + x^3 * T(x^2) on |x| <= 0.625 (fit error 4.5e-9 relative)
_TANH_T = _coeffs32(-0.005692296, 0.020628167, -0.053736515, 0.13331406, -0.3333328)
_TANH_SMALL = f32(0.625)
# erf(x) = x + x * E(x^2) on |x| <= 0.875 (fit error 1.4e-8 relative)
_ERF_E = _coeffs32(-0.000603366, 0.005001376, -0.026772043, 0.112819605, -0.37612507, 0.12837915)
_ERF_SMALL = f32(0.875)
# erfcx(a) = exp(a^2) erfc(a): on 0.5 <= a < 2 a polynomial in (a - 1.25) (fit error 3.3e-9
# relative), on a >= 2 (up to 10.1, past which erfc underflows) a polynomial in 1/a (fit error
# 1.8e-10 relative). Both degree 10, so one Horner pass over selected coefficients serves both.
_ERFCX_NEAR = _coeffs32(6.221128e-05, -0.00019004059, 0.00046942494, -0.0013118447, 0.0035545279,
                        -0.009084506, 0.022011057, -0.05021807, 0.10679561, -0.20882188,
                        0.36782292)
_ERFCX_FAR = _coeffs32(0.66437566, -2.0292683, 2.4562554, -1.2068659, -0.23877405, 0.53199,
                       -0.02463225, -0.27872828, -0.00028095528, 0.5642028, -2.6779253e-07)
_ERFC_TAIL = f32(0.5)
_LOG10E = f32(0.4342945)              # 1/ln 10 rounded, and the rest:
_LOG10E_TAIL = f32(-1.010305e-08)
_LOG2E_TAIL = f32(1.925963e-08)        # 1/ln 2 - _LOG2E
_LOG10_2_HI = f32(0.301025390625)    # 12 significant bits: e * hi exact for any exponent e
_LOG10_2_LO = f32(4.605039e-06)
_ERF_INV_CENTRAL = _coeffs32(*GILES_ERF_INV_CENTRAL)
_ERF_INV_TAIL = _coeffs32(*GILES_ERF_INV_TAIL)


# ---------------------------------------------------------------------------------------------
# float32: exponentials

@_jit
def _scale_pow2_f32(p, kf):
    """p * 2^k for integral kf in [-252, 254], p in [0.5, 2]: two exact power-of-two factors, so
    a result in the denormal range is rounded once and an overflow gives inf."""
    k = np.int32(kf)
    k_half = k >> 1
    s1 = i32_as_f32((k_half + 127) << 23)
    s2 = i32_as_f32((k - k_half + 127) << 23)
    return p * s1 * s2


@_jit
def _exp_poly_f32(r):
    """e**r for |r| <= ln2/2 as 1 + r + r^2 P(r), with 1 + r split exactly (two operations) so
    that only the last addition rounds at full size: max error 0.98 -> 0.6 ulp."""
    one_r = _ONE + r
    return one_r + (((_ONE - one_r) + r) + r * r * _horner(r, _EXP_P))


@_jit
def exp_f32(x):
    """e**x for float32 (<= 1 ulp)."""
    x = f32(x)
    # Clamp to where exp already overflows / underflows to zero; nan passes through the clamp
    # as 89 and is restored at the end (the integer path must not see nan).
    xc = f32(89.0) if not x < f32(89.0) else x
    xc = f32(-104.0) if xc < f32(-104.0) else xc
    kf = _rint(xc * _LOG2E)
    r = xc - kf * _LN2_HI - kf * _LN2_LO
    y = _scale_pow2_f32(_exp_poly_f32(r), kf)
    return y if x == x else x


@_jit
def exp2_f32(x):
    """2**x for float32 (<= 1 ulp)."""
    x = f32(x)
    xc = f32(129.0) if not x < f32(129.0) else x
    xc = f32(-151.0) if xc < f32(-151.0) else xc
    kf = _rint(xc)
    # r * ln2 needs more than float32: ln2 in two parts, the frac part being exact.
    frac = xc - kf
    r = _fma(frac, _LN2, frac * _LN2_TAIL)
    y = _scale_pow2_f32(_exp_poly_f32(r), kf)
    return y if x == x else x


@_jit
def expm1_f32(x):
    """e**x - 1 for float32, accurate near 0 (<= 2 ulp)."""
    x = f32(x)
    # Below -17.5, e**x < half an ulp of -1; above 88.5 the result is exp(x) (or inf).
    xc = f32(89.0) if not x < f32(89.0) else x
    xc = f32(-17.5) if xc < f32(-17.5) else xc
    kf = _rint(xc * _LOG2E)
    r = xc - kf * _LN2_HI - kf * _LN2_LO
    em1 = r + r * (r * (_HALF + r * _horner(r, _EXPM1_Q)))       # expm1(r)
    # e**x - 1 = 2^k expm1(r) + (2^k - 1); 2^k - 1 is exact for -25 <= k <= 24.
    k_small = f32(24.0) if kf > f32(24.0) else kf
    s = i32_as_f32((np.int32(k_small) + 127) << 23)
    y_small = s * em1 + (s - _ONE)
    y_large = _scale_pow2_f32(em1 + _ONE, kf)                    # the -1 is below rounding
    y = y_large if kf > f32(24.0) else y_small
    return x if (x == _ZERO or x != x) else y


# ---------------------------------------------------------------------------------------------
# float32: logarithms

@_jit
def _log_split_f32(x):
    """For finite x > 0 (denormals included): (e, f) with x = 2^e * (1 + f), sqrt(1/2) <= 1+f <
    sqrt(2); e is returned as a float32."""
    denormal = x < _MIN_NORMAL
    xs = x * _TWO23 if denormal else x
    ix = f32_as_i32(xs) - _SQRT_HALF_BITS
    e = f32(ix >> 23) - (f32(23.0) if denormal else _ZERO)
    m = i32_as_f32((ix & 0x7FFFFF) + _SQRT_HALF_BITS)
    return e, m - _ONE


@_jit
def _log1p_small_f32(f):
    """log1p(f) - f for sqrt(1/2)-1 <= f <= sqrt(2)-1 (the correction to add to f)."""
    f2 = f * f
    return f * f2 * _horner(f, _LOG_R) - _HALF * f2


@_jit
def _log_special_f32(x, y):
    # Finite positive x keeps y; 0 -> -inf, negative -> nan, +inf -> inf, nan -> nan.
    if x > _ZERO and x < _INF:
        return y
    if x == _ZERO:
        return -_INF
    return x if x > _ZERO else _NAN


@_jit
def log_f32(x):
    """Natural logarithm for float32 (<= 1 ulp)."""
    x = f32(x)
    e, f = _log_split_f32(x)
    y = (f + (_log1p_small_f32(f) + e * _LN2_LO)) + e * _LN2_HI
    return _log_special_f32(x, y)


@_jit
def _scaled_log1p_f32(f, scale, scale_tail):
    """log1p(f) * (scale + scale_tail) as hi + lo: f*scale, the largest term, is kept exact
    through fma so that only the final sum rounds at full size."""
    hi = f * scale
    lo = _fma(f, scale, -hi) + (f * scale_tail + _log1p_small_f32(f) * scale)
    return hi, lo


@_jit
def log2_f32(x):
    """Base-2 logarithm for float32 (<= 1.5 ulp); exact for powers of two."""
    x = f32(x)
    e, f = _log_split_f32(x)
    hi, lo = _scaled_log1p_f32(f, _LOG2E, _LOG2E_TAIL)
    y = e + (hi + lo)
    return _log_special_f32(x, y)


@_jit
def log10_f32(x):
    """Base-10 logarithm for float32 (<= 1.5 ulp)."""
    x = f32(x)
    e, f = _log_split_f32(x)
    hi, lo = _scaled_log1p_f32(f, _LOG10E, _LOG10E_TAIL)
    y = e * _LOG10_2_HI + (hi + (lo + e * _LOG10_2_LO))
    return _log_special_f32(x, y)


@_jit
def log1p_f32(x):
    """log(1 + x) for float32, accurate near 0 (<= 2 ulp)."""
    x = f32(x)
    u = _ONE + x
    # Two-sum: c is the exact rounding error of 1 + x, fed back into the mantissa below.
    ub = u - x
    c = (x - (u - ub)) + (_ONE - ub)
    e, f = _log_split_f32(u if u < _INF else _ONE)
    # Past e = 64 (where |c| <= 1) the correction is far below the result's ulp; capping e keeps
    # 2^-e a normal float32.
    e_capped = f32(64.0) if e > f32(64.0) else e
    f = f + c * i32_as_f32((127 - np.int32(e_capped)) << 23)
    y = (f + (_log1p_small_f32(f) + e * _LN2_LO)) + e * _LN2_HI
    if x > f32(-1.0) and x < _INF:
        return x if x == _ZERO else y
    if x == f32(-1.0):
        return -_INF
    return x if x > _ZERO else _NAN


@_jit
def erf_inv_f32(x):
    """The inverse error function for float32 as XLA computes it: Giles' single-precision
    polynomials in w = -log1p(-x^2) (coefficients in lax.elementwise), both evaluated and one
    selected so the loop stays branch-free; +-inf at +-1, nan beyond."""
    x = f32(x)
    w = -log1p_f32(-x * x)
    central = _horner(w - f32(2.5), _ERF_INV_CENTRAL)
    tail = _horner(f32(np.sqrt(w)) - f32(3.0), _ERF_INV_TAIL)
    p = central if w < f32(5.0) else tail
    return x * _INF if abs(x) == _ONE else p * x


# ---------------------------------------------------------------------------------------------
# float32: exp-based compositions

@_jit
def tanh_f32(x):
    """Hyperbolic tangent for float32 (<= 2 ulp)."""
    x = f32(x)
    a = abs(x)
    small = x + x * (x * x) * _horner(x * x, _TANH_T)
    # tanh(a) = 1 - 2/(e^{2a} + 1); past a = 9.01 it rounds to 1, so clamping at 10 is exact
    # (NaN too: it is returned as given below). e^{2a} is exp_f32's own computation, without
    # its clamps and NaN path, and 2^k (k <= 29) one factor: the same bits, 14% less time.
    ac = a if a < f32(10.0) else f32(10.0)
    t = ac + ac
    kf = _rint(t * _LOG2E)
    r = t - kf * _LN2_HI - kf * _LN2_LO
    e = _exp_poly_f32(r) * i32_as_f32((np.int32(kf) + np.int32(127)) << np.int32(23))
    large = _ONE - _TWO / (e + _ONE)
    large = large if x > _ZERO else -large
    y = small if a < _TANH_SMALL else large
    return y if a > _ZERO else x               # tanh(-0) = -0; NaN as given


# sinh(x) = x + x^3 * S(x^2) on |x| < 1: Taylor's coefficients 1/3!, 1/5!, ..., 1/13! (the
# next term, x^15/15!, is below 2^-40 relative there)
_SINH_S = _coeffs32(1 / 6227020800, 1 / 39916800, 1 / 362880, 1 / 5040, 1 / 120, 1 / 6)
_ASINH_BIG = f32(1.8446743e19)       # sqrt of the largest float32: a * a overflows above


@_jit
def _exp_half_f32(a):
    """e**a / 2 for a >= 0 (nan passes through; <= 1 ulp): exp_f32 with the exponent one
    lower, so that it is finite up to sinh's and cosh's overflow threshold (89.4159...)."""
    ac = f32(90.0) if not a < f32(90.0) else a
    kf = _rint(ac * _LOG2E)
    r = ac - kf * _LN2_HI - kf * _LN2_LO
    y = _scale_pow2_f32(_exp_poly_f32(r), kf - _ONE)
    return y if a == a else a


@_jit
def _with_sign_of(y, x):
    """y (>= 0 or nan) with x's sign bit."""
    return i32_as_f32(f32_as_i32(y) | (f32_as_i32(x) & np.int32(-2147483648)))


@_jit
def sinh_f32(x):
    """Hyperbolic sine for float32 (<= 2 ulp): x + x^3 S(x^2) below 1 in magnitude, else
    h - 1/(4h) with h = e**|x| / 2 (no cancellation to speak of there: 1/(4h^2) <= 0.14)."""
    x = f32(x)
    a = abs(x)
    t = x * x
    small = x + x * (t * _horner(t, _SINH_S))
    h = _exp_half_f32(a)
    large = _with_sign_of(h - f32(0.25) / h, x)
    return small if a < _ONE else large


@_jit
def cosh_f32(x):
    """Hyperbolic cosine for float32 (<= 1.5 ulp): h + 1/(4h) with h = e**|x| / 2 (two
    positive terms; 1/(4h) is below h's rounding past |x| = 9)."""
    h = _exp_half_f32(abs(f32(x)))
    return h + f32(0.25) / h


@_jit
def asinh_f32(x):
    """Inverse hyperbolic sine for float32 (<= 2 ulp), as XLA's expansion: with a = |x|,
    log1p(a + a^2 / (1 + sqrt(1 + a^2))), or log(a) + log(2) where a^2 would overflow (here
    log1p(a) + log(2): 1 + a rounds to a there), with x's sign."""
    x = f32(x)
    a = abs(x)
    big = a >= _ASINH_BIG
    t = a * a
    s = a if big else a + t / (_ONE + math.sqrt(_ONE + t))
    y = log1p_f32(s) + (_LN2 if big else _ZERO)
    return _with_sign_of(y, x)


@_jit
def _ratio_one_plus(n, e, one):
    """n / (one + e) for 0 <= e <= 1 with the rounding of one + e and of the quotient corrected
    (one fma residual step), so that the error of e is the only one of size."""
    d = one + e
    d_err = (one - d) + e                           # one + e = d + d_err exactly
    y = n / d
    return y + (_fma(-y, d, n) - y * d_err) / d


@_jit
def logistic_f32(x):
    """The logistic sigmoid 1/(1 + e**-x) for float32 (<= 2 ulp), without overflow."""
    x = f32(x)
    e = exp_f32(-abs(x))
    return _ratio_one_plus(_ONE if x >= _ZERO else e, e, _ONE)


@_jit
def softplus_f32(x):
    """log(1 + e**x) for float32 (<= 2 ulp) as max(x, 0) + log1p(e**-|x|), without overflow."""
    x = f32(x)
    pos = x if x > _ZERO else _ZERO
    return pos + log1p_f32(exp_f32(-abs(x)))


# ---------------------------------------------------------------------------------------------
# float32: error function

@_jit
def _erfc_tail_f32(a):
    """erfc(a) for a >= 0.5 (a may be +inf or nan): exp(-a^2) * erfcx(a)."""
    ac = f32(10.5) if a > f32(10.5) else a      # erfc underflows to 0 at 10.06
    near = ac < _TWO
    t = ac - f32(1.25) if near else _ONE / ac
    acc = _ERFCX_NEAR[0] if near else _ERFCX_FAR[0]
    for i in range(1, len(_ERFCX_NEAR)):
        acc = _mul_add(acc, t, _ERFCX_NEAR[i] if near else _ERFCX_FAR[i])
    # a^2 = hi + lo exactly; exp(-hi - lo) = exp(-hi) * (1 - lo) to float32 precision. On the
    # far piece erfcx is nearly proportional to t = 1/a, so the rounding of 1/a, whose relative
    # size is fma(-a, t, 1), is put back as a factor (1 + that).
    hi = ac * ac
    lo = _fma(ac, ac, -hi)
    recip_residual = _ZERO if near else _fma(-ac, t, _ONE)
    return exp_f32(-hi) * (acc + acc * (recip_residual - lo))


@_jit
def erf_f32(x):
    """The error function for float32 (<= 2 ulp)."""
    x = f32(x)
    a = abs(x)
    x2 = x * x
    small = x + x * _horner(x2, _ERF_E)
    ac = f32(4.0) if a > f32(4.0) else a          # erf(4) rounds to 1; keeps nan
    large = _ONE - _erfc_tail_f32(_ERFC_TAIL if ac < _ERFC_TAIL else ac)
    large = large if x > _ZERO else -large
    return small if a < _ERF_SMALL else large


@_jit
def erfc_f32(x):
    """The complementary error function 1 - erf(x) for float32 (<= 4 ulp), accurate in the tail
    (denormal results included)."""
    x = f32(x)
    a = abs(x)
    x2 = x * x
    near_zero = _ONE - (x + x * _horner(x2, _ERF_E))
    tail = _erfc_tail_f32(_ERFC_TAIL if a < _ERFC_TAIL else a)
    tail = tail if x > _ZERO else _TWO - tail
    return near_zero if a < _ERFC_TAIL else tail


# ---------------------------------------------------------------------------------------------
# float32: sine and cosine, over the whole float32 range
#
# Payne-Hanek-style reduction without big-integer work at run time: a finite float32 is exactly
# M * 2^E with an integer M < 2^24, so |x| * 2/pi = M * G_E + 4 * (integer), where
# G_E = (2^E * 2/pi) mod 4 depends on the exponent alone. G_E is tabulated for all 254 exponents
# as four float64 chunks of 29 significant bits, so each M * chunk is exact and reducing the
# first one mod 4 is exact too; their sum gives the quadrant and the remainder with float64
# relative accuracy even next to multiples of pi/2. The table is built at import from the bits
# of 2/pi (floor(2/pi * 2^320), computed with mpmath). Kernels are float64 polynomials on
# |r| <= pi/4 (fit error 5.2e-12 relative for sin, 1.2e-13 for cos): the float32 result is
# rounded once from a value good to about 1e-11.

_TWO_OVER_PI_BITS = int("a2f9836e4e441529fc2757d1f534ddc0db6295993c439041fe5163abdebbc561b7246e3a"
                        "424dd2e0", 16)
_TWO_OVER_PI_FRAC_BITS = 320


def _half_pi_reduction_table():
    rows = []
    for exponent in range(-149, 105):
        shift = _TWO_OVER_PI_FRAC_BITS - exponent          # 2^E * 2/pi = BITS / 2^shift
        rest = _TWO_OVER_PI_BITS % (1 << (shift + 2))      # mod 4
        row = []
        for _ in range(4):
            drop = max(rest.bit_length() - 29, 0)
            chunk = (rest >> drop) << drop
            row.append(math.ldexp(chunk, -shift))          # exact: 29 significant bits
            rest -= chunk
        rows.append(row)
    return np.array(rows, dtype=np.float64)


_HALF_PI_TABLE = _half_pi_reduction_table()
_HALF_PI64 = f64(1.5707963267948966)
# sin(r) = r + r^3 * S(r^2), cos(r) = 1 - r^2/2 + r^4 * C(r^2) on |r| <= pi/4
_SIN_S64 = (2.7180456731777546e-06, -0.00019839304314027238, 0.008333329280123288,
            -0.1666666664058342)
_COS_C64 = (-2.7205033030969625e-07, 2.4799451364331372e-05, -0.0013888883466419534,
            0.041666666619094836)


@_jit
def _sin_quadrant_f32(ax, quadrant_offset):
    """sin(|x| + offset*pi/2) in float64 for finite float32 ax >= 0; nan for inf/nan."""
    bits = f32_as_i32(ax)
    biased = bits >> 23
    mantissa = bits & 0x7FFFFF
    normal = biased > 0
    m = f64(mantissa | 0x800000) if normal else f64(mantissa)
    row = biased - 1 if normal else biased * 0
    row = 253 if row > 253 else row                   # inf/nan: any row, result replaced below
    p1 = m * _HALF_PI_TABLE[row, 0]
    p1 = p1 - f64(4.0) * np.floor(p1 * f64(0.25))
    p2 = m * _HALF_PI_TABLE[row, 1]
    n = _rint(p1 + p2)
    t = ((p1 - n) + p2) + (m * _HALF_PI_TABLE[row, 2] + m * _HALF_PI_TABLE[row, 3])
    r = t * _HALF_PI64
    r2 = r * r
    sin_r = r + r * r2 * _horner(r2, _SIN_S64)
    cos_r = _ONE64 - _HALF64 * r2 + r2 * r2 * _horner(r2, _COS_C64)
    quadrant = (np.int64(n) + quadrant_offset) & 3
    y = cos_r if (quadrant & 1) == 1 else sin_r
    y = -y if quadrant >= 2 else y
    return y if ax < _INF else _NAN64


@_jit
def sin_f32(x):
    """Sine for float32 (<= 1 ulp), accurate over the whole float32 range."""
    x = f32(x)
    y = f32(_sin_quadrant_f32(abs(x), 0))
    return -y if x < _ZERO else (x if x == _ZERO else y)


@_jit
def cos_f32(x):
    """Cosine for float32 (<= 1 ulp), accurate over the whole float32 range."""
    x = f32(x)
    return f32(_sin_quadrant_f32(abs(x), 1))


# ---------------------------------------------------------------------------------------------
# float64. Same algorithms, longer polynomials (fitted as above, but with the least-squares
# residuals computed in 120-bit mpmath arithmetic so that the fit itself is not limited by
# float64; coefficients are the float64 roundings). Functions not here fall back to math.*.

_ZERO64, _HALF64, _ONE64, _TWO64 = f64(0.0), f64(0.5), f64(1.0), f64(2.0)
_INF64 = f64(np.inf)
_NAN64 = f64(np.nan)
_LOG2E64 = f64(1.4426950408889634)
_LN2_HI64 = f64(0.6931471803691238)  # ln 2 truncated to 32 bits: k * hi is exact for |k| < 2^21
_LN2_LO64 = f64(1.9082149292705877e-10)
_SQRT_HALF_BITS64 = 0x3FE6A09E667F3BCD
_TWO52 = f64(4503599627370496.0)
_MIN_NORMAL64 = f64(2.2250738585072014e-308)

# exp(r) = 1 + r + r^2 * P(r) on |r| <= ln2/2 (fit error 1.1e-17 relative)
_EXP_P64 = (2.5000077508960032e-08, 2.763025044936786e-07, 2.755758633499844e-06,
            2.4801493092719673e-05, 0.00019841269506604375, 0.0013888888943636504,
            0.008333333333494461, 0.041666666666530135, 0.16666666666666413, 0.5000000000000011)
# expm1(r) = r + r^2/2 + r^3 * Q(r) on |r| <= ln2/2 (fit error 1.5e-18 relative)
_EXPM1_Q64 = (2.087893619801095e-09, 2.51086892267223e-08, 2.755738697370444e-07,
              2.7557245286094205e-06, 2.4801587198291627e-05, 0.00019841269884950742,
              0.001388888888894264, 0.008333333333322156, 0.04166666666666658,
              0.16666666666666677)
# log(1+f) = 2 atanh(s), s = f/(2+f): 2 atanh(s) = 2s + s * z * R(z), z = s^2 <= 0.0295
# (fit error of z*R(z) 1.4e-18 absolute)
_LOG_R64 = (0.1479626924744942, 0.15314020243265303, 0.18183565444841843, 0.2222219855297632,
            0.285714287425712, 0.39999999999413915, 0.6666666666666735)


@_jit
def _scale_pow2_f64(p, kf):
    """p * 2^k for integral kf in [-2044, 2046], p in [0.5, 2], with one rounding."""
    k = np.int64(kf)
    k_half = k >> 1
    s1 = i64_as_f64((k_half + 1023) << 52)
    s2 = i64_as_f64((k - k_half + 1023) << 52)
    return p * s1 * s2


@_jit
def _reduce_ln2_f64(xc):
    """(k, r, c) with xc = k*ln2 + r + c, |r| <= ln2/2, c the rounding error of r: at float64
    the rounding of r alone would cost up to half an ulp of the result."""
    kf = _rint(xc * _LOG2E64)
    r_hi = xc - kf * _LN2_HI64                       # exact
    r = r_hi - kf * _LN2_LO64
    c = (r_hi - r) - kf * _LN2_LO64
    return kf, r, c


@_jit
def exp_f64(x):
    """e**x for float64 (<= 1 ulp)."""
    x = f64(x)
    xc = f64(710.0) if not x < f64(710.0) else x
    xc = f64(-746.0) if xc < f64(-746.0) else xc
    kf, r, c = _reduce_ln2_f64(xc)
    # 1 + r + (c + r^2 P(r)) with 1 + r split exactly, so only the last addition rounds.
    one_r = _ONE64 + r
    one_r_err = (_ONE64 - one_r) + r
    p = one_r + (one_r_err + (c + r * r * _horner(r, _EXP_P64)))
    y = _scale_pow2_f64(p, kf)
    return y if x == x else x


@_jit
def expm1_f64(x):
    """e**x - 1 for float64, accurate near 0 (<= 1.5 ulp)."""
    x = f64(x)
    xc = f64(710.0) if not x < f64(710.0) else x
    xc = f64(-40.0) if xc < f64(-40.0) else xc     # e**-40 is below half an ulp of -1
    kf, r, c = _reduce_ln2_f64(xc)
    tail = c + r * (r * (_HALF64 + r * _horner(r, _EXPM1_Q64)))   # expm1(r + c) - r
    # e**x - 1 = (2^k - 1) + 2^k r + 2^k tail: the first two are exact and summed exactly
    # (two-sum), so the result rounds once at full size. 2^k - 1 is exact for -53 <= k <= 53.
    k_small = f64(53.0) if kf > f64(53.0) else kf
    s = i64_as_f64((np.int64(k_small) + 1023) << 52)
    a = s - _ONE64
    b = s * r
    hi = a + b
    b_part = hi - a
    lo = (a - (hi - b_part)) + (b - b_part)
    y_small = hi + (lo + s * tail)
    one_r = _ONE64 + r
    y_large = _scale_pow2_f64(one_r + (((_ONE64 - one_r) + r) + tail), kf)   # -1 is negligible
    y = y_large if kf > f64(53.0) else y_small
    return x if (x == _ZERO64 or x != x) else y


@_jit
def _log_split_f64(x):
    """For finite x > 0: (e, f) with x = 2^e * (1 + f), sqrt(1/2) <= 1+f < sqrt(2)."""
    denormal = x < _MIN_NORMAL64
    xs = x * _TWO52 if denormal else x
    ix = f64_as_i64(xs) - _SQRT_HALF_BITS64
    e = f64(ix >> 52) - (f64(52.0) if denormal else _ZERO64)
    m = i64_as_f64((ix & 0x000FFFFFFFFFFFFF) + _SQRT_HALF_BITS64)
    return e, m - _ONE64


@_jit
def _log_assemble_f64(e, f):
    """e*ln2 + log(1+f) for sqrt(1/2)-1 <= f <= sqrt(2)-1, with the large terms added last:
    log(1+f) = f - (f^2/2 - s*(f^2/2 + z*R(z))) since 2s = f - s*f."""
    s = f / (_TWO64 + f)
    z = s * s
    half_f2 = _HALF64 * f * f
    tail = s * (half_f2 + z * _horner(z, _LOG_R64)) + e * _LN2_LO64
    return (f - (half_f2 - tail)) + e * _LN2_HI64


@_jit
def log_f64(x):
    """Natural logarithm for float64 (<= 1 ulp)."""
    x = f64(x)
    e, f = _log_split_f64(x)
    y = _log_assemble_f64(e, f)
    if x > _ZERO64 and x < _INF64:
        return y
    if x == _ZERO64:
        return -_INF64
    return x if x > _ZERO64 else _NAN64


@_jit
def log1p_f64(x):
    """log(1 + x) for float64, accurate near 0 (<= 2 ulp)."""
    x = f64(x)
    u = _ONE64 + x
    ub = u - x
    c = (x - (u - ub)) + (_ONE64 - ub)
    e, f = _log_split_f64(u if u < _INF64 else _ONE64)
    e_capped = f64(600.0) if e > f64(600.0) else e
    f = f + c * i64_as_f64((1023 - np.int64(e_capped)) << 52)
    y = _log_assemble_f64(e, f)
    if x > f64(-1.0) and x < _INF64:
        return x if x == _ZERO64 else y
    if x == f64(-1.0):
        return -_INF64
    return x if x > _ZERO64 else _NAN64


@_jit
def tanh_f64(x):
    """Hyperbolic tangent for float64 (<= 3 ulp): q/(q + 2) with q = expm1(2|x|)."""
    x = f64(x)
    a = abs(x)
    ac = f64(20.0) if a > f64(20.0) else a     # tanh rounds to 1 past 19.1; keeps nan
    q = expm1_f64(ac + ac)
    t = q / (q + _TWO64)
    y = t if x > _ZERO64 else -t
    return x if x == _ZERO64 else y


@_jit
def logistic_f64(x):
    """The logistic sigmoid for float64 (<= 2 ulp), without overflow."""
    x = f64(x)
    e = exp_f64(-abs(x))
    return _ratio_one_plus(_ONE64 if x >= _ZERO64 else e, e, _ONE64)


@_jit
def softplus_f64(x):
    """log(1 + e**x) for float64 (<= 2 ulp), without overflow."""
    x = f64(x)
    pos = x if x > _ZERO64 else _ZERO64
    return pos + log1p_f64(exp_f64(-abs(x)))


# ---------------------------------------------------------------------------------------------
# float32 power, through float64: y*log(x) needs more than float32 carries (its absolute error
# becomes the result's relative error), and float64 gives it with room to spare.

@_jit
def pow_f32(x, y):
    """x**y for float32 (<= 1 ulp) with C99 pow's special cases: x**0 = 1 and 1**y = 1 even for
    nan, a finite negative base needs an integral exponent (else nan), odd integral exponents keep
    the base's sign (-0 and -inf included), 0**negative = inf, (+-1)**(+-inf) = 1."""
    x = f32(x)
    y = f32(y)
    yi = _rint(y)
    integral = yi == y
    odd = integral and _rint(y * _HALF) != y * _HALF
    ax = f64(abs(x))
    magnitude = f32(exp_f64(f64(y) * log_f64(ax)))
    if ax == _ONE64 and (y == _INF or y == -_INF):
        magnitude = _ONE
    result = -magnitude if (x < _ZERO or (x == _ZERO and _ONE / x < _ZERO)) and odd else magnitude
    if x < _ZERO and x > -_INF and not integral:
        result = _NAN
    if y == _ZERO or x == _ONE:
        result = _ONE
    return result


# ---------------------------------------------------------------------------------------------
# Tables for the code generator

FAST_UNARY = {
    ("exp", "float32"): exp_f32,
    ("exp2", "float32"): exp2_f32,
    ("expm1", "float32"): expm1_f32,
    ("log", "float32"): log_f32,
    ("log2", "float32"): log2_f32,
    ("log10", "float32"): log10_f32,
    ("log1p", "float32"): log1p_f32,
    ("tanh", "float32"): tanh_f32,
    ("logistic", "float32"): logistic_f32,
    ("softplus", "float32"): softplus_f32,
    ("erf", "float32"): erf_f32,
    ("erfc", "float32"): erfc_f32,
    ("erf_inv", "float32"): erf_inv_f32,
    ("sin", "float32"): sin_f32,
    ("cos", "float32"): cos_f32,
    ("sinh", "float32"): sinh_f32,
    ("cosh", "float32"): cosh_f32,
    ("asinh", "float32"): asinh_f32,
    ("exp", "float64"): exp_f64,
    ("expm1", "float64"): expm1_f64,
    ("log", "float64"): log_f64,
    ("log1p", "float64"): log1p_f64,
    ("tanh", "float64"): tanh_f64,
    ("logistic", "float64"): logistic_f64,
    ("softplus", "float64"): softplus_f64,
}

FAST_BINARY = {
    ("pow", "float32"): pow_f32,
}

# Maximum error in ulps of the result's dtype, asserted by tests/test_fastmath.py. Measured
# maxima: float32 unary functions over every 16th float32 bit pattern (2^28 inputs, all
# exponents, both signs): exp 0.79, exp2 0.83, expm1 1.47, log 0.84, log2 1.10, log10 1.14,
# log1p 1.32, tanh 1.32, logistic 1.45, softplus 1.70, erf 0.99, erfc 3.40, sin 0.50, cos 0.50,
# erf_inv 63.8 (XLA's algorithm: near +-1, x*x rounds before log1p; 6 ulp at the 99.9th percentile);
# pow_f32 0.50 on 600k (x, y) pairs; float64 on 5M random inputs plus the tests' bit-pattern
# grid, against 80-bit long double: exp 0.76, expm1 1.15, log 0.78, log1p 1.35, tanh 2.37,
# logistic 1.44, softplus 1.66; float32 sinh 1.53, cosh 1.12, asinh 1.58 over
# tests/test_fastmath.py's inputs (every 4096th bit pattern, twice, and 300,000 random ones).
ULP_BOUNDS = {
    exp_f32: 1, exp2_f32: 1, expm1_f32: 2, log_f32: 1, log2_f32: 1.5, log10_f32: 1.5, log1p_f32: 2,
    tanh_f32: 2, logistic_f32: 2, softplus_f32: 2, erf_f32: 2, erfc_f32: 4, erf_inv_f32: 64,
    pow_f32: 1,
    sin_f32: 1, cos_f32: 1, sinh_f32: 2, cosh_f32: 1.5, asinh_f32: 2,
    exp_f64: 1, expm1_f64: 1.5, log_f64: 1, log1p_f64: 2, tanh_f64: 3, logistic_f64: 2,
    softplus_f64: 2,
}


def lookup(name, dtype):
    """The fast function for primitive `name` (a lax name: 'exp', 'log1p', 'logistic', 'pow', ...)
    on `dtype` (a NumPy dtype or its name), or None where kernels should call math.* instead."""
    key = (name, np.dtype(dtype).name)
    return FAST_UNARY.get(key) or FAST_BINARY.get(key)


def import_line(*functions):
    """The source line a generated kernel module needs to call `functions` by their names."""
    names = ", ".join(sorted({fn.__name__ for fn in functions}))
    return f"from {MODULE} import {names}"
