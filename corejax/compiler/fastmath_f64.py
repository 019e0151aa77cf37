"""float64 functions of corejax.compiler.fastmath, and the float32 ones computed in float64
(pow, atanh, acosh, digamma, lgamma, bessel_i0e, bessel_i1e, ndtri)."""
import math

import numpy as np

from corejax.compiler.fastmath_f32 import (_HALF, _INF, _NAN, _ONE, _PI64, _ZERO, _ratio_one_plus,
                                          _with_sign_of)
from corejax.compiler.fastmath_ops import (_HALF64, _INF64, _NAN64, _ONE64, _TWO64, _ZERO64,
                                          _horner, _jit, _rint, f32, f64, f64_as_i64,
                                          i64_as_f64)


# float64. Same algorithms, longer polynomials (fitted as above, but with the least-squares
# residuals computed in 120-bit mpmath arithmetic so that the fit itself is not limited by
# float64; coefficients are the float64 roundings). Functions not here fall back to math.*.

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
# float32 inverse hyperbolic functions, through float64's log1p: its argument is formed exactly
# or to float64 rounding, so the float32 result is rounded once from a value good to ~1e-15.

@_jit
def atanh_f32(x):
    """atanh for float32 (<= 1 ulp): log1p(2x / (1 - x)) / 2; +-1 gives +-inf, |x| > 1 nan."""
    d = f64(f32(x))
    return f32(_HALF64 * log1p_f64((d + d) / (_ONE64 - d)))


@_jit
def acosh_f32(x):
    """acosh for float32 (<= 1 ulp): log1p((x - 1) + sqrt((x - 1)(x + 1))), each step exact or
    rounded once in float64; x < 1 gives nan."""
    d = f64(f32(x))
    t = d - _ONE64
    y = f32(log1p_f64(t + np.sqrt(t * (d + _ONE64))))
    return y if d >= _ONE64 else _NAN          # below -1 the square root is real: nan here


# float32 digamma, through float64: reflection below 1/2 (psi(x) = psi(1 - x) - pi / tan(pi x),
# tan(pi x) from x's exact distance r to the nearest integer: sin / cos of pi |r| up to pi/4,
# of pi (1/2 - |r|) beyond), six steps of psi(y) = psi(y + 1) - 1/y below 6 summed as one
# fraction p/q (one division), then Stirling's series at z >= 6: psi(z) = log z - 1/(2z) -
# sum_k B_2k / (2k z^2k), its first seven terms (the next is below 2e-13 at z = 6). No branch
# depends on the value: LLVM vectorizes the loop.
_DIGAMMA_S = (-1.0 / 12.0, 691.0 / 32760.0, -1.0 / 132.0, 1.0 / 240.0, -1.0 / 252.0,
              1.0 / 120.0, -1.0 / 12.0)        # -B_2k / (2k), highest power of 1/z^2 first
# sin and cos of s in [0, pi/4] to float64 accuracy for the reflection (near psi's negative
# zeros its two terms cancel, so pi / tan(pi x) needs every digit): Taylor's coefficients,
# s^19 / 19! and s^18 / 18! (the first terms left out) below 1e-19 there.
# Next to psi's positive zero x0 = 1.46163214496836... the sum above cancels to about 4e-15;
# there psi is its Taylor series in t = x - x0 (x0 in two parts, t exact to rounding), its
# coefficients psi^(n)(x0) / n! computed with mpmath (the first left out is below 4e-15 t at
# |t| < 2^-9).
_DIGAMMA_ROOT_HI = f64(1.4616321449683622)
_DIGAMMA_ROOT_LO = f64(9.549995429965697e-17)
_DIGAMMA_AT_ROOT = (0.10782405069126237, -0.16394270544240652, 0.258499760955651,
                    -0.4427631689835921, 0.9676722454476212)
_SIN_TAYLOR = tuple((-1.0) ** k / math.factorial(2 * k + 1) for k in range(8, 0, -1))
_COS_TAYLOR = tuple((-1.0) ** k / math.factorial(2 * k) for k in range(8, 0, -1))



@_jit
def _sin_cos_pi_distance(d):
    """(r, far, sn, cs) for the float64 value d of a float32: r = d - rint(d), exact in
    [-1/2, 1/2]; sn and cs the sine and cosine, to float64 accuracy, of pi |r| where |r| <= 1/4
    (far False), of pi (1/2 - |r|) beyond (far True): sin(pi |r|) is `cs if far else sn`, and
    cos(pi |r|) `sn if far else cs`."""
    r = d - _rint(d)
    ar = abs(r)
    far = ar > f64(0.25)
    s = _PI64 * ((_HALF64 - ar) if far else ar)
    s2 = s * s
    sn = s + s * (s2 * _horner(s2, _SIN_TAYLOR))
    cs = _ONE64 + s2 * _horner(s2, _COS_TAYLOR)
    return r, far, sn, cs

@_jit
def digamma_f32(x):
    """digamma (psi) for float32 (<= 1 ulp); nan at the poles (0, -1, -2, ...) and at -inf,
    inf at +inf."""
    d = f64(f32(x))
    r, far, sn, cs = _sin_cos_pi_distance(d)
    cot = _PI64 * (sn if far else cs) / (cs if far else sn)    # pi / tan(pi |r|)
    cot = -cot if r < f64(0.0) else cot
    reflect = d < _HALF64
    y = _ONE64 - d if reflect else d
    p = f64(0.0)
    q = _ONE64
    for k in range(6):                           # sum 1/(y + k) = p / q
        t = y + f64(k)
        p = p * t + q
        q = q * t
    small = y < f64(6.0)
    z = y + f64(6.0) if small else y
    iz = _ONE64 / z
    w = iz * iz
    psi = log_f64(z) - _HALF64 * iz + w * _horner(w, _DIGAMMA_S)
    psi = psi - p / q if small else psi
    psi = psi - cot if reflect else psi
    t = (d - _DIGAMMA_ROOT_HI) - _DIGAMMA_ROOT_LO
    psi = t * _horner(t, _DIGAMMA_AT_ROOT) if abs(t) < f64(2.0 ** -9) else psi
    pole = (d <= f64(0.0)) & (r == f64(0.0))
    return f32(_NAN64 if pole else psi)


# float32 log-gamma, through float64. Below 0 reflection, lgamma(x) = log(pi / |sin(pi x)|) -
# lgamma(y), y = 1 - x (|sin(pi x)| from x's exact distance r to the nearest integer, as in
# digamma_f32); else y = x. With n = rint(y) and t = y - n (exact, |t| <= 1/2), for n <= 7:
# lgamma(y) = lgamma(2 + t) + log P, P = (y - 1)(y - 2)...(y - n + 2) (five fixed steps with
# selects), or - log P with P = y (n = 1), y (y + 1) (n = 0); lgamma(2 + t) = t * Q(t), Q of
# degree 15 fitted as above for relative error (8.7e-16 with the float64 coefficients), so the
# zeros at 1 (t Q(t) - log y, log exact near 1) and 2 are exact and keep relative accuracy.
# Reflected, the two logs are one, log(pi / (|sin| P^+-1)) - lgamma(2 + t), both small near
# the first negative zeros (at -2.457: 0.255 each), so the result is accurate in absolute terms
# there (within 5.2e-16 of mpmath next to the five zeros above -4.5). Beyond n = 7 (y >= 7.5)
# Stirling's series, lgamma(y) = (y - 1/2)(log y - 1) + (log(2 pi) - 1) / 2 + sum_k B_2k /
# (2k (2k - 1) y^(2k - 1)), k <= 9 (the next term is below 4e-17 at 7.5). Poles (+-0, negative
# integers, -inf) give inf. No branch depends on the value: LLVM vectorizes the loop. Measured:
# 0.50 ulp over tests/test_fastmath.py's inputs and every 64th float32 bit pattern against SciPy,
# 0.50 ulp over the 40,001 floats nearest each of 1, 2 and the sixteen negative zeros above -10
# against mpmath.
_LGAMMA_CORE = (1.2980069430100085e-06, -2.5526884157378124e-06, 4.1784499708872555e-06,
                -9.222611640810803e-06, 2.0564427537266886e-05, -4.497284107887597e-05,
                9.94482044945148e-05, -0.00022314926603023196, 0.0005096703754206607,
                -0.0011927542610891573, 0.0028905102896773435, -0.007385551017811151,
                0.020580808428675018, -0.06735230105332617, 0.32246703342410754,
                0.4227843350984674)
_LGAMMA_STIRLING = (43867.0 / 244188.0, -3617.0 / 122400.0, 1.0 / 156.0, -691.0 / 360360.0,
                    1.0 / 1188.0, -1.0 / 1680.0, 1.0 / 1260.0, -1.0 / 360.0, 1.0 / 12.0)
_HALF_LOG_2PI_M_HALF64 = f64(0.5 * math.log(2.0 * math.pi) - 0.5)
_LGAMMA_SHIFT_MAX = f64(7.0)


@_jit
def lgamma_f32(x):
    """log|Gamma(x)| for float32 (<= 1 ulp); inf at the poles (0, -0, -1, -2, ...), at +-inf
    and past 4.08e36."""
    d = f64(f32(x))
    r, far, sn, cs = _sin_cos_pi_distance(d)
    sin_pi = cs if far else sn                   # |sin(pi x)|
    reflect = d < _ZERO64
    y = _ONE64 - d if reflect else d             # exact unless |x| < 2^-29 (then harmless)
    n = _rint(y)
    t = y - n                                    # exact, in [-1/2, 1/2]
    big = n > _LGAMMA_SHIFT_MAX
    up = n < _TWO64
    p = y * (y + _ONE64) if n == _ZERO64 else y
    p = _ONE64 if n >= _TWO64 else p
    for k in range(1, 6):                        # (y - 1)...(y - n + 2) for 3 <= n <= 7
        p = p * (y - f64(k)) if (f64(k) + _TWO64 <= n) & (n <= _LGAMMA_SHIFT_MAX) else p
    iy = _ONE64 / y
    stirling = ((y - _HALF64) * (log_f64(y) - _ONE64) + _HALF_LOG_2PI_M_HALF64
                + iy * _horner(iy * iy, _LGAMMA_STIRLING))
    g = stirling if big else t * _horner(t, _LGAMMA_CORE)    # lgamma(y) = g +- log P
    num = p if up else _ONE64
    den = _ONE64 if up else p
    la = log_f64((_PI64 * num) / (sin_pi * den) if reflect else p)
    lg = la - g if reflect else (g - la if up else g + la)
    pole = (d <= _ZERO64) & ((r == _ZERO64) | (d == -_INF64))
    return f32(_INF64 if pole else lg)


# float32 exponentially scaled modified Bessel functions of order 0 and 1, through float64.
# With a = |x| <= 8: e^-a I0(a) = e^-a P0(a^2) and e^-a I1(a) = e^-a a P1(a^2), e^-a by exp's
# reduction written out (kf in [-12, 0]: no overflow or denormals to handle) and E(r) ~ e^r on
# |r| <= ln2/2. Beyond 8: e^-a I_n(a) = Q_n(1/a) / sqrt(a). Every polynomial was fitted for this
# file (fastmath.py's method; residuals from 40-digit mpmath: I0 = 0F1(;1;a^2/4),
# I1/a = 0F1(;2;a^2/4)/2, besseli; tools/fits/fit_bessel.py), the constant terms of P0, P1 and E
# held at 1, 1/2 and 1, so that i0e(tiny) = 1 and i1e(2^-149) = 2^-150 (which rounds to 0)
# exactly. Fit errors (relative): P0 7.8e-12, P1 1.5e-12, Q0 5.2e-12, Q1 5.9e-12,
# E 8.1e-13: the float64 value is within 8.7e-12, so the float32 result is the nearest float
# except within 1.5e-4 ulp of a tie: 0.50013 ulp (i0e) and 0.50009 ulp (i1e) worst against
# scipy.special.i0e / i1e over every float32 in [0, 200]. Both pieces are evaluated and one is
# selected: no branch depends on the value.
# I0(x) = P0(x^2), x <= 8
_I0_NEAR = (2.675091707295274e-22, 5.368618338259652e-20, 3.057521611512481e-17,
            9.301974524012292e-15, 2.4056107837049563e-12, 4.708900915895505e-10,
            6.781765587096394e-08, 6.781677377451878e-06, 0.0004340278076449661,
            0.015624999937394501, 0.25000000004195577, 1.0)
# I1(x)/x = P1(x^2), x <= 8
_I1_NEAR = (1.0833447183672276e-23, 2.5397772106774956e-21, 1.5152389125207691e-18,
            5.178021661156088e-16, 1.503030280052606e-13, 3.363640550175332e-11,
            5.6514454196665526e-09, 6.781680306915617e-07, 5.4253474066803626e-05,
            0.0026041666623008337, 0.06250000000340517, 0.5)
# sqrt(x) e^-x I0(x) = Q0(1/x), x > 8
_I0_FAR = (-7216.8154754101315, 3964.2389907136157, -884.1564209944314, 109.32855610906734,
           -7.768956962235615, 0.45397013015147897, 0.03470342146416713, 0.02937862480647389,
           0.028049346969377737, 0.04986778905414568, 0.3989422803993699)
# sqrt(x) e^-x I1(x) = Q1(1/x), x > 8
_I1_FAR = (7751.693964013055, -4280.670917483426, 959.0155467891627, -119.20218955304009,
           8.488819385822001, -0.5107284299013146, -0.04641515419631661, -0.04108441410143296,
           -0.04674961211208389, -0.14960335966785196, 0.3989422804037784)
# exp(r) = E(r), |r| <= ln2/2
_BESSEL_EXP = (2.4732956343318715e-05, 0.00019914665684969598, 0.001388915500819829,
               0.00833326878122222, 0.04166666453705502, 0.16666666873208583, 0.5000000000458049,
               0.9999999999830728, 1.0)
_BESSEL_SPLIT = f64(8.0)
_MINUS_LN2_64 = f64(-0.6931471805599453)


@_jit
def _bessel_ie_f64(a, near, far, order):
    """e^-a I_order(a) for a = |x| >= 0 (or nan) in float64, to 8.7e-12 relative; 0 at inf."""
    small = a <= _BESSEL_SPLIT
    s = a if small else _BESSEL_SPLIT                    # (nan -> the far piece)
    kf = _rint(s * -_LOG2E64)                            # e^-s = 2^kf e^r, kf in [-12, 0]
    r = kf * _MINUS_LN2_64 - s
    e = _horner(r, _BESSEL_EXP) * i64_as_f64((np.int64(kf) + 1023) << 52)
    e = e * s if order == 1 else e
    v_near = _horner(s * s, near) * e
    ir = _ONE64 / np.sqrt(a)                             # 0 at inf, nan at nan
    v_far = _horner(ir * ir, far) * ir
    return v_near if small else v_far


@_jit
def bessel_i0e_f32(x):
    """e^-|x| I0(x) for float32 (<= 1 ulp); 0 at +-inf."""
    return f32(_bessel_ie_f64(abs(f64(f32(x))), _I0_NEAR, _I0_FAR, 0))


@_jit
def bessel_i1e_f32(x):
    """e^-|x| I1(x) for float32 (<= 1 ulp), odd: +-0 at +-0 and at +-inf."""
    x = f32(x)
    return _with_sign_of(f32(_bessel_ie_f64(abs(f64(x)), _I1_NEAR, _I1_FAR, 1)), x)


# float32 ndtri (the standard normal quantile Phi^-1(p)), through float64: two rational
# approximations, each P/Q of degree 5/5 fitted for this file (relative-error minimax over 2000
# Chebyshev nodes: Loeb's linearized least squares with Lawson's reweighting, against mpmath's
# quantile; fit_ndtri.py). At |q| <= 7/16, q = p - 1/2 (exact), x = q * P(q^2) / Q(q^2) (fit
# error 7.0e-12 relative). Beyond, with p' = min(p, 1 - p) < 1/16 (1 - p exact),
# x = -+P(u) / Q(u), u = r - 1.66, r = sqrt(-log p') in [2 sqrt(log 2), 10.163] (the end is
# p' = 2^-149, the smallest denormal; fit error 8.4e-12). Both are evaluated, a numerator and a
# denominator selected, one division: no branch depends on the value. The float64 value is
# within 8.4e-12 relative, so the float32 result is the nearest float except within 1.4e-4 ulp of
# a tie: 0.50014 ulp worst against scipy.special.ndtri over every float32 in [0, 1].
_NDTRI_CENTRAL_P = (-17.67729190943452, 131.52577047679756, -196.69458150436665,
                    113.00336957415702, -27.958044507326253, 2.506628274648457)
_NDTRI_CENTRAL_Q = (-27.8206262371008, 102.24644064950817, -114.80051037516297, 55.55560722361159,
                    -12.200843577808378, 1.0)
_NDTRI_TAIL_P = (0.003939129464769424, 0.09984349860594059, 0.7971715023403608, 2.600545843596997,
                 3.5043188409446926, 1.5254707194180348)
_NDTRI_TAIL_Q = (4.808413444209536e-09, 0.002784915544230368, 0.0660122405085162,
                 0.46138239709781353, 1.187015396184902, 1.0)
_NDTRI_CENTRAL_BOUND = f64(0.4375)
_NDTRI_TAIL_SHIFT = f64(1.66)


@_jit
def ndtri_f32(p):
    """The standard normal quantile Phi^-1(p) for float32 (<= 1 ulp): -inf at +-0, inf at 1,
    nan below 0, above 1 and at nan, +0 at 1/2."""
    d = f64(f32(p))
    q = d - _HALF64                              # exact
    t = q * q
    lower = q < _ZERO64
    r = np.sqrt(-log_f64(d if lower else _ONE64 - d))
    u = r - _NDTRI_TAIL_SHIFT
    tail = _horner(u, _NDTRI_TAIL_P)
    inner = abs(q) <= _NDTRI_CENTRAL_BOUND
    num = q * _horner(t, _NDTRI_CENTRAL_P) if inner else (-tail if lower else tail)
    den = _horner(t, _NDTRI_CENTRAL_Q) if inner else _horner(u, _NDTRI_TAIL_Q)
    x = num / den
    x = -_INF64 if d == _ZERO64 else x
    x = _INF64 if d == _ONE64 else x
    return f32(x if (d >= _ZERO64) & (d <= _ONE64) else _NAN64)


# float32 Hurwitz zeta, zeta(s, q) = sum_k (q + k)^-s, through float64 (the lax.zeta primitive;
# special values as its scalar kernel: inf at s = 1; nan for s < 1, at nan and infinities; at
# a pole, q a non-positive integer, inf for even integral s, else nan; nan for q < 0 unless s is
# integral). `_hurwitz_f64` is the sum for q >= 0: four direct terms (q + k)^-s = exp(-s log(q +
# k)), then Euler-Maclaurin at w = q + 4, w^(1-s) / (s - 1) + w^-s / 2 + sum_j B_2j / (2j)!
# (s)_(2j-1) w^(1-s-2j), thirteen terms of it; relative error below 2e-12 against the scalar
# float64 kernel over s in (1, 1e4], q in [0, 2^40] (where the terms would diverge, at large s
# and small w, they are below 1e-20 of the first direct term). For q < 0 (integral s), with
# f = q - floor(q) and sigma = (-1)^s, the negative terms sum_j (f - j)^-s = sigma (zeta(s, 1 -
# f) - zeta(s, 1 - q)), so zeta(s, q) = zeta(s, f) + sigma zeta(s, 1 - f) - sigma zeta(s, 1 -
# q), three sums at non-negative arguments, the first two added first (for odd s they cancel
# exactly at f = 1/2, where the value is the small third). No branch depends on the value: every
# lane evaluates the three sums, so LLVM vectorizes the loop (a direct sum from a negative q
# would run 2^24 terms).
_ZETA_DIRECT = 4
_ZETA_EM = (0.08333333333333333, -0.001388888888888889, 3.306878306878307e-05,
            -8.267195767195768e-07, 2.08767569878681e-08, -5.284190138687493e-10,
            1.3382536530684679e-11, -3.3896802963225827e-13, 8.586062056277845e-15,
            -2.174868698558062e-16, 5.5090028283602295e-18, -1.3954464685812522e-19,
            3.534707039629467e-21)        # B_2j / (2j)!, j = 1 .. 13


@_jit
def _hurwitz_f64(s, q):
    """sum_k (q + k)^-s for s > 1 and q >= 0 (inf at q = 0), in float64 (see above)."""
    w = q + f64(_ZETA_DIRECT)
    wp = exp_f64(-s * log_f64(w))
    iw = _ONE64 / w
    iw2 = iw * iw
    fac = s * wp * iw
    tail = _ZERO64
    for j in range(len(_ZETA_EM)):
        tail += fac * _ZETA_EM[j]
        fac *= (s + f64(2 * j + 1)) * (s + f64(2 * j + 2)) * iw2
    total = tail + (w * wp / (s - _ONE64) + _HALF64 * wp)
    for k in range(_ZETA_DIRECT - 1, -1, -1):            # the smallest terms first
        total += exp_f64(-s * log_f64(q + f64(k)))
    return total


@_jit
def _zeta_f64(s, q):
    """zeta(s, q) in float64 for the float64 values s, q of float32s (see above)."""
    r = _rint(q)
    floor_q = r - _ONE64 if r > q else r
    integral_s = _rint(s) == s
    even_s = _rint(s * _HALF64) == s * _HALF64
    negative = q < _ZERO64
    f = q - floor_q                                      # exact: |q| < 2^24 when not integral
    one = _ONE64
    za = _hurwitz_f64(s, f if negative else q)
    zb = _hurwitz_f64(s, one - f if negative else one)
    zc = _hurwitz_f64(s, one - q if negative else one)
    pair = za + zb if even_s else za - zb
    v = (pair - zc if even_s else pair + zc) if negative else za
    v = _NAN64 if negative and not integral_s else v
    v = _NAN64 if (s < _ONE64) | (abs(q) == _INF64) | (abs(s) == _INF64) else v
    pole = (q <= _ZERO64) & (q == floor_q)
    v = (_INF64 if integral_s and even_s else _NAN64) if pole else v
    v = _NAN64 if (s != s) | (q != q) else v
    return _INF64 if s == _ONE64 else v


@_jit
def zeta_f32(s, q):
    """The Hurwitz zeta function zeta(s, q) for float32 (<= 1 ulp where q >= 0)."""
    return f32(_zeta_f64(f64(f32(s)), f64(f32(q))))


# n! for n = 0 .. 170, then inf (a table load vectorizes)
_FACTORIALS = np.array([float(math.factorial(k)) for k in range(171)] + [math.inf], np.float64)


@_jit
def polygamma_f32(n, x):
    """The polygamma function psi^(n)(x) = (-1)^(n+1) n! zeta(n + 1, x) for float32 (digamma at
    n = 0); nan unless n is a non-negative integer."""
    d = f64(f32(n))
    xd = f64(f32(x))
    valid = (d >= _ZERO64) & (_rint(d) == d)
    index = np.int64(min(max(d, _ZERO64), f64(171.0))) if valid else np.int64(0)
    sign = _ONE64 if _rint(d * _HALF64) != d * _HALF64 else -_ONE64
    v = sign * _FACTORIALS[index] * _zeta_f64(d + _ONE64, xd)
    v = f32(v if valid else _NAN64)
    return digamma_f32(x) if d == _ZERO64 else v
