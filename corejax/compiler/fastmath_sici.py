"""float32 sine and cosine integrals, Si(x) = int_0^x sin(t)/t dt and Ci(x) = gamma + log x +
int_0^x (cos(t) - 1)/t dt, computed in float64 (see corejax.compiler.fastmath for why these are
written as plain arithmetic, selects and vectorizable intrinsics)."""
from corejax.compiler.fastmath_f32 import _HALF_PI64, _half_pi_reduce_f32
from corejax.compiler.fastmath_f64 import _COS_TAYLOR, _SIN_TAYLOR, log_f64
from corejax.compiler.fastmath_ops import (_INF64, _NAN64, _ONE64, _ZERO64, _horner, _jit, f32,
                                          f64)

# float32 Si and Ci, through float64 (SciPy's sici in float64 rounded once to float32, what
# corejax evaluated on the host before; special values: Si(+-0) = +0 (SciPy's, also at -0),
# Si(+-inf) = +-pi/2, Ci(+-0) = -inf, Ci(x < 0) = Ci(|x|) (SciPy's real part), Ci(+inf) = 0,
# Ci(-inf) = nan, nan -> nan). With a = |x|:
# - a < 4: Si(a) = a S(a^2) and Ci(a) = gamma + log a + a^2 C(a^2) (the power series of
#   A&S 5.2.14/5.2.16, economized), S and C of degree 13 in t = a^2 on [0, 16] (S(0) = 1 and
#   C(0) = -1/4 exactly, so Si(tiny) = x). Within 2^-6 of Ci's first zero x0 = 0.61650548562...
#   the three terms cancel (to 1.2e-9 relative next to x0, invisible in float32 but not
#   relatively accurate), so there Ci is its Taylor series in z = (a - x0_hi) - x0_lo (x0 in two
#   float64 parts; a - x0_hi is exact), z Z(z), Z of degree 9: 4.8e-16 relative at the 40,001
#   floats nearest x0.
# - a >= 4: Si(a) = pi/2 - f(a) cos a - g(a) sin a and Ci(a) = f(a) sin a - g(a) cos a with the
#   auxiliary functions of A&S 5.2.6-9 (f ~ 1/a, g ~ 1/a^2, smooth, not oscillating; Stieltjes
#   functions of 1/a^2, f(a) = int_0^inf e^(-at) / (1 + t^2) dt), as rational functions of
#   v = 16 / a^2 in [0, 1]: a f(a) = PF(v) / QF(v), a^2 g(a) = PG(v) / QG(v), degree 10/10 each
#   (one rational for all a >= 4; a table of 32 piecewise polynomials did as well but its
#   gathered coefficient loads took 5x longer). sin a and cos a come from fastmath_f32's
#   Payne-Hanek reduction (a = n pi/2 + r, r in float64 to float64 relative accuracy for every
#   float32, up to 3.4e38) and the Taylor polynomials of sin and cos on |r| <= pi/4
#   (fastmath_f64's _SIN_TAYLOR/_COS_TAYLOR). Near Ci's zeros beyond 4 the two products cancel;
#   their error is ~1e-16 / a absolute, as is SciPy's.
# Every piece is evaluated and one is selected: no branch depends on the value, and the loop
# vectorizes.
# Fits (tools/fits/fit_sici.py), references from mpmath at 40-60
# digits (si, ci; f = Ci sin - (Si - pi/2) cos, g = -Ci cos - (Si - pi/2) sin): S and C by
# Chebyshev interpolation at 14 Chebyshev nodes of the first kind in t on [0, 16] (near-minimax),
# converted exactly to monomials in t in mpmath, rounded to float64; the rationals by
# Sanathanan-Koerner (linearized least squares for relative error, weights 1 / (F Q_previous))
# then Lawson reweighting toward minimax, over 120 Chebyshev nodes in u = 1/a^2 in [0, 1/16],
# in mpmath at 60 digits (QF(0) = QG(0) = 1); Z is mpmath's Taylor series of ci at x0 (from
# findroot). Errors of the float64 coefficients, relative, measured in mpmath on 401 (S, C, Z)
# or 1001 (rationals) points: S 1.9e-16, C 8.7e-17, f 3.0e-17, g 1.1e-16, Z 6.8e-17.
# Measured against scipy.special.sici (tests/test_fastmath_sici.py's 2.4M inputs, and every
# 16th positive float32 bit pattern): Si and Ci are SciPy's value correctly rounded, max
# 0.50000 ulp, including the floats next to Ci's zeros (first zero: against the test's Taylor
# reference; the 2001 floats nearest each zero in (1, 50): against SciPy). ULP_BOUNDS leaves
# 0.001 ulp for the float64 error of both sides.
_EULER64 = f64(0.5772156649015329)
_SMALL64 = f64(4.0)
_SIXTEEN64 = f64(16.0)
_ZERO_RADIUS64 = f64(2.0 ** -6)
# Si(a) = a S(a^2), a < 4
_SI_SMALL = (-2.9907402958571085e-30, 2.5586741038776308e-27, -1.6812273284061518e-24,
             9.320336054279483e-22, -4.3266486544730093e-19, 1.6537983712670603e-16,
             -5.098109153657433e-14, 1.235311064366854e-11, -2.2774643986763955e-09,
             3.061924358220652e-07, -2.8344671201814057e-05, 0.0016666666666666668,
             -0.05555555555555555, 1.0)
# Ci(a) = gamma + log a + a^2 C(a^2), a < 4
_CI_SMALL = (1.03858402653376e-31, -9.471798171252819e-29, 6.713674997965497e-26,
             -4.043959757682934e-23, 2.055158333283775e-20, -8.677337160528376e-18,
             2.987173332453738e-15, -8.193389712650986e-13, 1.7397297489889678e-10,
             -2.755731922398588e-08, 3.1001984126984127e-06, -0.0002314814814814815,
             0.010416666666666666, -0.25)
# a f(a) = PF(v) / QF(v), a^2 g(a) = PG(v) / QG(v), v = 16 / a^2, a >= 4
_F_NUM = (47.84075933992099, 3688.394839704478, 40616.87766427082, 145566.2746454621,
          222080.06701062832, 163461.7206891656, 61680.909538851316, 12162.951559461866,
          1227.203005354165, 58.21655969495346, 1.0)
_F_DEN = (151.87896041678053, 5879.840779425841, 51562.18921006062, 165922.30581993438,
          239038.9368398723, 170381.25347040902, 63113.819234121336, 12311.958063265552,
          1234.4019503160814, 58.34155969495341, 1.0)
_G_NUM = (90.62811467514378, 9915.143956290654, 105086.60832657959, 343128.83501209004,
          467362.28540502297, 304316.4437231916, 101202.99466016283, 17577.508609380635,
          1564.2419946547427, 65.61789512855637, 0.9999999999999999)
_G_DEN = (1019.8512256656103, 26781.72424066959, 179802.0514038701, 467041.0199775928,
          559352.1095924812, 337690.6531002629, 107337.85329406035, 18143.50012603296,
          1588.520580328345, 65.9928951285559, 1.0)
# Ci(x0 + z) = z Z(z), |z| < 2^-6
_CI_AT_ZERO = (-12.607545614006199, 8.63624541323916, -5.989826727018245, 4.220314714391201,
               -3.0356772345272214, 2.244850355344172, -1.7214541989292569, 1.447169470772172,
               -1.542257855747529, 1.3234333479537534)
_X0_HI, _X0_LO = f64(0.6165054856207163), f64(-4.209920321433186e-17)


@_jit
def _sici_abs_f64(ax):
    """(Si(a), Ci(a)) in float64 for a float32 ax = a >= 0 (finite, not 0: callers replace the
    values at 0, inf and nan)."""
    a = f64(ax)
    t = a * a
    si_small = a * _horner(t, _SI_SMALL)
    ci_small = (_EULER64 + log_f64(a)) + t * _horner(t, _CI_SMALL)
    z = (a - _X0_HI) - _X0_LO
    ci_small = z * _horner(z, _CI_AT_ZERO) if abs(z) < _ZERO_RADIUS64 else ci_small
    # a >= 4: f and g
    ia = _ONE64 / a
    v = _SIXTEEN64 * (ia * ia)
    f = ia * (_horner(v, _F_NUM) / _horner(v, _F_DEN))
    g = (ia * ia) * (_horner(v, _G_NUM) / _horner(v, _G_DEN))
    # sin a, cos a: a = n pi/2 + r
    r, n = _half_pi_reduce_f32(ax)
    r2 = r * r
    sr = r + r * (r2 * _horner(r2, _SIN_TAYLOR))
    cr = _ONE64 + r2 * _horner(r2, _COS_TAYLOR)
    odd = (n & 1) == 1
    sn = cr if odd else sr
    cs = -sr if odd else cr
    neg = (n & 2) == 2
    sn = -sn if neg else sn
    cs = -cs if neg else cs
    small = a < _SMALL64
    si = si_small if small else (_HALF_PI64 - f * cs) - g * sn
    ci = ci_small if small else f * sn - g * cs
    return si, ci


@_jit
def si_f32(x):
    """Sine integral Si(x) for float32 (<= 0.501 ulp: SciPy's value correctly rounded), odd
    except Si(-0) = +0 (as SciPy); Si(+-inf) = +-pi/2 (rounded to float32), nan for nan."""
    x = f32(x)
    ax = abs(x)
    si, _ = _sici_abs_f64(ax)
    si = _HALF_PI64 if ax == f32(_INF64) else si
    si = _ZERO64 if ax == f32(0.0) else si
    si = _NAN64 if ax != ax else si
    return f32(-si if x < f32(0.0) else si)


@_jit
def ci_f32(x):
    """Cosine integral Ci(x) for float32 (<= 0.501 ulp, measured also next to its zeros);
    Ci(x) = Ci(|x|) for x < 0 (SciPy's real part), Ci(+-0) = -inf, Ci(+inf) = +0,
    Ci(-inf) = nan, nan for nan."""
    x = f32(x)
    ax = abs(x)
    _, ci = _sici_abs_f64(ax)
    ci = _ZERO64 if ax == f32(_INF64) else ci
    ci = -_INF64 if ax == f32(0.0) else ci
    ci = _NAN64 if (ax != ax) | (x == f32(-_INF64)) else ci
    return f32(ci)


ULP_BOUNDS = {si_f32: 0.501, ci_f32: 0.501}
