"""float32 functions of corejax.compiler.fastmath (its docstring: algorithms, conventions,
accuracy)."""
import math

import numpy as np

from corejax.lax.elementwise import GILES_ERF_INV_CENTRAL, GILES_ERF_INV_TAIL
from corejax.compiler.fastmath_ops import (_HALF64, _INF64, _NAN64, _ONE64, _coeffs32, _fma,
                                          _horner, _jit, _mul_add, _rint, f32, f32_as_i32, f64,
                                          f64_as_i64, i32_as_f32, i64_as_f64)


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
# erf's own piece: erfcx(a) on 0.875 <= a <= 4 as a polynomial in (a - 2.4375), fitted to
# minimize the largest error of exp(-a^2) * erfcx(a) = erfc(a) (that is, of erf) rather than the
# relative one: 1.2e-9 absolute, 0.02 ulp of erf. Past 4 erf rounds to +-1.
_ERF_MID = _coeffs32(-3.8070022128522396e-05, -9.2989212134853e-05, -0.00019932449504267424,
                     0.0002391189627815038, -0.0006874895771034062, 0.002806270495057106,
                     -0.00863877683877945, 0.026484370231628418, -0.0775647684931755,
                     0.21555235981941223)
_ERF_MID_CENTER = f32(2.4375)
_ERF_ONE = f32(4.0)
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
def _reduce_ln2_f32(x):
    """(kf, r) with x = kf ln2 + r, kf = rint(x / ln2) and |r| <= ln2/2 (Cody-Waite: kf * _LN2_HI
    exact, so r has the rounding of its last subtraction only) for |x| < 2^15 ln2."""
    kf = _rint(x * _LOG2E)
    return kf, x - kf * _LN2_HI - kf * _LN2_LO


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
    kf, r = _reduce_ln2_f32(xc)
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
    kf, r = _reduce_ln2_f32(xc)
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
    a2 = a * a
    small = a + a * a2 * _horner(a2, _TANH_T)
    # tanh(a) = 1 - 2/(e^{2a} + 1); past a = 9.01 it rounds to 1, so clamping at 10 is exact.
    # e^{2a} is 2^k (1 + r + r^2 P(r)) summed plainly: exp_f32's exact split of 1 + r would
    # change no error bound here (an error in e reaches the result scaled by 2/(e + 1) and
    # rounds away in 1 - q: the worst case over every float32 stays 1.34 ulp) and cost 3
    # operations of about 25.
    ac = a if a < f32(10.0) else f32(10.0)
    t = ac + ac
    kf, r = _reduce_ln2_f32(t)
    e = (_ONE + r + r * r * _horner(r, _EXP_P)) * i32_as_f32(
        (np.int32(kf) + np.int32(127)) << np.int32(23))
    large = _ONE - _TWO / (e + _ONE)
    # NaN fails the comparison and takes the polynomial, which keeps it; the sign is x's
    # (tanh is odd: -0 stays -0).
    return _with_sign_of(large if a >= _TANH_SMALL else small, x)


# sinh(x) = x + x^3 * S(x^2) on |x| < 1: Taylor's coefficients 1/3!, 1/5!, ..., 1/13! (the
# next term, x^15/15!, is below 2^-40 relative there)
_SINH_S = _coeffs32(1 / 6227020800, 1 / 39916800, 1 / 362880, 1 / 5040, 1 / 120, 1 / 6)
_ASINH_BIG = f32(1.8446743e19)       # sqrt of the largest float32: a * a overflows above


@_jit
def _exp_half_f32(a):
    """e**a / 2 for a >= 0 (nan passes through; <= 1 ulp): exp_f32 with the exponent one
    lower, so that it is finite up to sinh's and cosh's overflow threshold (89.4159...)."""
    ac = f32(90.0) if not a < f32(90.0) else a
    kf, r = _reduce_ln2_f32(ac)
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
    """The error function for float32 (<= 2 ulp): below 0.875 an odd polynomial, above it
    1 - exp(-a^2) erfcx(a) with erfcx a polynomial fitted for erf's absolute error. exp(-a^2) for
    a^2 in [0.76, 16] needs neither exp's clamps nor its denormal scaling: 2^kf is one exponent
    field; a^2 is used rounded (at most 0.16 ulp of erf, at a = 1). Measured: 1.05 ulp
    worst over 4M points of [0.8, 4.2] (the piece below 0.875 included), half the time of the
    erfc-based form this replaced."""
    x = f32(x)
    a = abs(x)
    x2 = x * x
    small = x + x * _horner(x2, _ERF_E)
    ac = _ERF_ONE if a > _ERF_ONE else a          # keeps nan
    s = ac * ac
    kf, r = _reduce_ln2_f32(-s)                   # kf in [-24, -1]
    e = _exp_poly_f32(r) * i32_as_f32((np.int32(kf) + 127) << 23)
    large = _fma(-e, _horner(ac - _ERF_MID_CENTER, _ERF_MID), _ONE)
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



# erfcx(x) = exp(x^2) erfc(x). For a = |x| < 2 a polynomial in (a - 1), degree 12 (fit error
# 4.3e-9 relative); beyond, erfcx(a) = t (1/sqrt(pi) + t P(t)) with t = 1/a in (0, 1/2], P of
# degree 11 (fit error 8.5e-11 relative; the constant term is 1/sqrt(pi) exactly, carried in
# two floats, since for large a erfcx is that constant times t and the float32 rounding of the
# constant alone would cost half an ulp; t's own rounding is put back through fma(-a, t, 1)).
# Both pieces share one Horner pass over selected coefficients. Negative x: 2 exp(x^2) -
# erfcx(-x), with x^2 = hi + lo exactly; inf once exp(x^2) overflows (x < -9.38).
_ERFCX_SMALL = _coeffs32(1.873355904535856e-05, -6.231435691006482e-05, 0.00013101038348395377,
                         -0.00036107905907556415, 0.0010496495524421334,
                         -0.0027804209385067225, 0.006971378810703754, -0.016659142449498177,
                         0.03757188469171524, -0.07922718673944473, 0.15437160432338715,
                         -0.2732120156288147)
_ERFCX_SMALL_0 = f32(0.42758357524871826)
_ERFCX_LARGE = _coeffs32(5.073428630828857, -18.17344856262207, 28.24053192138672,
                         -24.035099029541016, 10.977676391601562, -1.4241803884506226,
                         -0.8724185228347778, -0.015796009451150894, 0.42397603392601013,
                         -2.443979428790044e-05, -0.28209447860717773, -7.586288264249674e-10)
_RSQRT_PI_HI = f32(0.564189612865448)           # 1/sqrt(pi) = hi + lo
_RSQRT_PI_LO = f32(-2.9317691385699618e-08)
_FLT_MAX = f32(3.4028234663852886e38)


@_jit
def erfcx_f32(x):
    """The scaled complementary error function exp(x^2) erfc(x) for float32 (<= 3 ulp)."""
    x = f32(x)
    a = abs(x)
    small = a < _TWO
    t = _ONE / a
    v = a - _ONE if small else t
    acc = _ERFCX_SMALL[0] if small else _ERFCX_LARGE[0]
    for i in range(1, len(_ERFCX_SMALL)):
        acc = _fma(acc, v, _ERFCX_SMALL[i] if small else _ERFCX_LARGE[i])
    residual = _fma(-(_FLT_MAX if a > _FLT_MAX else a), t, _ONE)     # 1 - a t; 0 at a = inf
    rest = _fma(_RSQRT_PI_HI, residual, _fma(acc, v, _RSQRT_PI_LO))
    large = _fma(t, _RSQRT_PI_HI, t * rest)
    pos = _fma(acc, v, _ERFCX_SMALL_0) if small else large
    hi = x * x
    lo = _fma(x, x, -hi)
    e = exp_f32(hi)
    neg = _INF if e == _INF else _TWO * (e + e * lo) - pos
    return neg if x < _ZERO else pos

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
def _half_pi_reduce_f32(ax):
    """(r, n) with |x| = n pi/2 + r, |r| <= pi/4, r in float64, for finite float32 ax >= 0
    (anything for inf/nan: callers replace the result)."""
    bits = f32_as_i32(ax)
    biased = bits >> 23
    mantissa = bits & 0x7FFFFF
    normal = biased > 0
    m = f64(mantissa | 0x800000) if normal else f64(mantissa)
    row = biased - 1 if normal else biased * 0
    row = 253 if row > 253 else row                   # inf/nan: any row
    p1 = m * _HALF_PI_TABLE[row, 0]
    p1 = p1 - f64(4.0) * np.floor(p1 * f64(0.25))
    p2 = m * _HALF_PI_TABLE[row, 1]
    n = _rint(p1 + p2)
    t = ((p1 - n) + p2) + (m * _HALF_PI_TABLE[row, 2] + m * _HALF_PI_TABLE[row, 3])
    return t * _HALF_PI64, np.int64(n)


@_jit
def _sin_poly64(r, r2):
    return r + r * r2 * _horner(r2, _SIN_S64)


@_jit
def _cos_poly64(r2):
    return _ONE64 - _HALF64 * r2 + r2 * r2 * _horner(r2, _COS_C64)


@_jit
def _sin_quadrant_f32(ax, quadrant_offset):
    """sin(|x| + offset*pi/2) in float64 for finite float32 ax >= 0; nan for inf/nan."""
    r, n = _half_pi_reduce_f32(ax)
    r2 = r * r
    quadrant = (n + quadrant_offset) & 3
    y = _cos_poly64(r2) if (quadrant & 1) == 1 else _sin_poly64(r, r2)
    y = -y if quadrant >= 2 else y
    return y if ax < _INF else _NAN64


@_jit
def _times_sign_of(y, x):
    """y negated where x's sign bit is set (an odd function's value at x from its value at |x|:
    f(-0) = -0), on the bits: as a select on x < 0 and x == 0 it took sin's loop twice as
    long."""
    return i32_as_f32(f32_as_i32(y) ^ (f32_as_i32(x) & np.int32(-2147483648)))


@_jit
def sin_f32(x):
    """Sine for float32 (<= 1 ulp), accurate over the whole float32 range."""
    x = f32(x)
    return _times_sign_of(f32(_sin_quadrant_f32(abs(x), 0)), x)


@_jit
def cos_f32(x):
    """Cosine for float32 (<= 1 ulp), accurate over the whole float32 range."""
    x = f32(x)
    return f32(_sin_quadrant_f32(abs(x), 1))


@_jit
def tan_f32(x):
    """Tangent for float32 (<= 1 ulp), accurate over the whole float32 range: sin(r) / cos(r)
    after the reduction above, or -cos(r) / sin(r) in odd quadrants, in float64."""
    x = f32(x)
    ax = abs(x)
    r, n = _half_pi_reduce_f32(ax)
    r2 = r * r
    s = _sin_poly64(r, r2)
    c = _cos_poly64(r2)
    odd = (n & 1) == 1
    y = f32((-c if odd else s) / (s if odd else c))
    return _times_sign_of(y if ax < _INF else _NAN, x)


# ---------------------------------------------------------------------------------------------
# float32: inverse trigonometric functions, in float64
#
# atan(a) for a >= 0 is b + atan(u) with one division choosing the interval: u = a on
# a <= tan(pi/8) (b = 0), u = (a - 1)/(a + 1) up to tan(3pi/8) (b = pi/4), u = -1/a above
# (b = pi/2), so |u| <= tan(pi/8). atan(u) = u + u^3 P(u^2) there, P of degree 5 (fit error
# 2.3e-11 relative). atan2(y, x) takes its u from |y| and |x| the same way (u = mn / mx or
# (mn - mx) / (mn + mx) with mn, mx the smaller and larger), asin and acos are atan2 of
# x and sqrt((1 - x)(1 + x)), which float64 computes exactly before the square root. Every
# step is float64 and the float32 result is rounded once.
_ATAN_P64 = (0.04744051755764318, -0.08476270338729291, 0.11044691732819036,
             -0.1428200776136351, 0.1999990390799407, -0.3333333249912697)
_TAN_PI_8 = f64(0.41421356237309503)
_TAN_3PI_8 = f64(2.414213562373095)
_PI64 = f64(3.141592653589793)
_PI_4_64 = f64(0.7853981633974483)


@_jit
def _atan_of_ratio64(num, den, base):
    """base + atan(num / den) for |num / den| <= tan(pi/8), in float64."""
    u = num / den
    u2 = u * u
    return base + (u + u * u2 * _horner(u2, _ATAN_P64))


@_jit
def atan_f32(x):
    """Arctangent for float32 (<= 1 ulp); atan(+-inf) = +-pi/2, +-0 and nan as given."""
    x = f32(x)
    a = f64(abs(x))
    mid = a > _TAN_PI_8
    big = a > _TAN_3PI_8
    num = -_ONE64 if big else (a - _ONE64 if mid else a)
    den = a if big else (a + _ONE64 if mid else _ONE64)
    base = _HALF_PI64 if big else (_PI_4_64 if mid else f64(0.0))
    y = f32(_atan_of_ratio64(num, den, base))      # a = inf: -1/inf = -0, pi/2 exactly
    return _with_sign_of(y, x) if a == a else x


@_jit
def _atan2_f64(y, x):
    """atan2 of float64 values (the quadrant and C99's special cases), y's sign applied."""
    ay, ax = abs(y), abs(x)
    both_inf = (ay == _INF64) & (ax == _INF64)
    ay = _ONE64 if both_inf else ay                 # atan2(+-inf, +-inf): the ratio 1
    ax = _ONE64 if both_inf else ax
    swap = ay > ax
    mn = ax if swap else ay
    mx = ay if swap else ax
    mid = mn > _TAN_PI_8 * mx
    num = mn - mx if mid else mn
    den = mn + mx if mid else mx
    den = _ONE64 if mx == f64(0.0) else den         # atan2(+-0, +-0): the angle 0 or pi
    t = _atan_of_ratio64(num, den, _PI_4_64 if mid else f64(0.0))
    t = _HALF_PI64 - t if swap else t
    t = _PI64 - t if f64_as_i64(x) < 0 else t       # x's sign bit: atan2(+-0, -0) = +-pi
    t = -t if f64_as_i64(y) < 0 else t
    return t if (x == x) & (y == y) else x + y


@_jit
def atan2_f32(y, x):
    """atan2 for float32 (<= 1 ulp), with C99's special cases (signed zeros, infinities)."""
    return f32(_atan2_f64(f64(f32(y)), f64(f32(x))))


@_jit
def asin_f32(x):
    """Arcsine for float32 (<= 1 ulp): atan2(x, sqrt((1 - x)(1 + x))); nan outside [-1, 1]."""
    d = f64(f32(x))
    return f32(_atan2_f64(d, np.sqrt((_ONE64 - d) * (_ONE64 + d))))


@_jit
def acos_f32(x):
    """Arccosine for float32 (<= 1 ulp): atan2(sqrt((1 - x)(1 + x)), x); nan outside [-1, 1]."""
    d = f64(f32(x))
    return f32(_atan2_f64(np.sqrt((_ONE64 - d) * (_ONE64 + d)), d))


# ---------------------------------------------------------------------------------------------
# float32: cube root, in float64
#
# r = a^(-1/3) by Newton-style steps needs no division: with e = 1 - a r^3, the exact root is
# r (1 - e)^(-1/3) = r (1 + e/3 + 2e^2/9 + ...), and keeping the series to e^2 makes each step
# cubically convergent. The first estimate comes from the exponent bits: for a > 0 the high 32 bits
# of a float64 are roughly 2^20 (log2(a) + 1023), so K - hi/3 are roughly those of a^(-1/3); K is
# 4/3 of the bits of 1.0 less the offset that minimizes the largest relative error over a in
# [1, 8) (3.4%). Two steps leave ~1e-16, so a r^2 rounded to float32 is within 0.501 ulp (checked
# over every positive float32 against a long-double reference). Denormal float32 inputs are
# normal float64 numbers: no scaling.
_CBRT_MAGIC = np.uint32(0x553EF0FE)
_CBRT_THIRD = f64(1.0 / 3.0)
_CBRT_TWO_NINTHS = f64(2.0 / 9.0)


@_jit
def cbrt_f32(x):
    """Cube root for float32 (<= 1 ulp); +-0, +-inf and nan as given."""
    x = f32(x)
    a = abs(f64(x))
    hi = np.uint32(f64_as_i64(a) >> 32)
    r = i64_as_f64(np.int64(_CBRT_MAGIC - hi // np.uint32(3)) << 32)
    for _ in range(2):
        e = _ONE64 - a * (r * r * r)
        r = r + r * e * _mul_add(e, _CBRT_TWO_NINTHS, _CBRT_THIRD)
    y = f32(a * (r * r))
    y = y if x > _ZERO else -y
    return y if (a > f64(0.0) and a < f64(np.inf)) else x
