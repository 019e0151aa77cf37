"""float32 Dawson integral F(x) = exp(-x^2) int_0^x exp(t^2) dt (``dawsn_f32``), computed in
float64 (see corejax.compiler.fastmath for why this is written as plain arithmetic and selects:
no branch or loop depends on the value, so a loop calling it vectorizes)."""
from corejax.compiler.fastmath_ops import _HALF64, _horner, _jit, f32, f64

# float32 Dawson integral through float64 (SciPy's dawsn in float64 rounded once to float32,
# what corejax evaluated on the host before). F is odd, F(+-0) = +-0, F(+-inf) = +-0 (SciPy's
# signs, also at -0 and -inf), nan -> nan; F(x) ~ x for tiny x (denormals included) and
# F(x) ~ 1/(2x) for large x (up to 3.4e38, where the result is a float32 denormal). With d the
# float64 value of the float32 argument and t = d^2 (exact enough: no overflow or underflow in
# float64 for any float32):
# - |d| < 4: F(d) = d P(t) / Q(t), a rational of degree 10/11 in t in [0, 16] with
#   P(0) = Q(0) = 1 exactly (so F(tiny) = d exactly, and F(+-0) = +-0).
# - |d| >= 4: F(d) = P(c) / (2 d Q(c)), c = 16 / t - 1/2 in [-1/2, 1/2]: 2 d F(d) as a rational
#   of degree 8/8 in c (the asymptotic series 1 + 1/(2 d^2) + 3/(4 d^4) + ... diverges; the
#   rational is fitted, with P = Q = 1 at c = -1/2, i.e. at d = inf). At +-inf: t = inf,
#   c = -1/2, the denominator is +-inf and F = +-0; nan propagates.
# Both rationals are evaluated and the numerator and denominator selected, so there is one
# division for the result plus the one for 16 / t (two in all, no table loads).
# Fits (tools/fits/fit_dawsn.py): references from mpmath at 50 digits,
# F = sqrt(pi)/2 e^(-x^2) erfi(x) (a product, no cancellation); Sanathanan-Koerner
# (linearized least squares for relative error, weights 1 / (F Q_previous)) then Lawson
# reweighting toward minimax over 100 Chebyshev nodes of each interval (in t, and in u = 1/x^2
# in [0, 1/16]), in mpmath, converted exactly to the evaluation variables and rounded to
# float64. Relative error of the float64 coefficients (mpmath, 601 points): 4.7e-17 (|x| < 4),
# 7.3e-15 (|x| >= 4; the coefficients partly cancel, ~30x, which limits this piece: far below
# what float32 can see, 1.2e-7 ulp).
# Measured against scipy.special.dawsn (float64), tests/test_fastmath_dawsn.py's sweep (every
# 4096th float32 bit pattern at two offsets plus 300,000 random ones, both signs): max
# 0.4999990 ulp, nan/inf/zero exact with SciPy's signs; over every 16th positive float32 in
# [2^-20, 2^20) (21M inputs): max 0.5000001 ulp (above 0.5 only where SciPy's value lies
# within float64 error of a float32 rounding midpoint); on 1M standard-normal inputs
# bit-identical to SciPy rounded to float32.
# ULP_BOUNDS leaves 0.01 ulp for the float64 error of both sides, so a 1-ulp mistake fails.
_SPLIT64 = f64(16.0)                       # t = x^2 at the split |x| = 4
# F(x) / x = P(t) / Q(t), t = x^2 < 16 (highest power first)
_DAWSN_SMALL_NUM = (8.270317570210879e-13, 4.9034818263030394e-11, 1.9860698068676165e-09,
                    4.285418914109733e-08, 1.302045369925056e-06, 8.83539006096248e-06,
                    0.0003753201236854193, -0.00021577126590116173, 0.04165344395675746,
                    -0.07512552485353027, 1.0)
_DAWSN_SMALL_DEN = (1.6415898326185449e-12, 9.978916941281506e-11, 3.680465039001978e-09,
                    9.776745167019256e-08, 1.9989456088418837e-06, 3.223344673965822e-05,
                    0.00041143893492264275, 0.004107067166497726, 0.031128759440559532,
                    0.1693475384988084, 0.5915411418131385, 1.0)
# 2 x F(x) = P(c) / Q(c), c = 16 / x^2 - 1/2, |x| >= 4 (highest power first)
_DAWSN_LARGE_NUM = (0.0017810078431477407, -0.08683659955216905, 0.6292046599418627,
                    -1.6979243916309061, 2.423287614140783, -2.045551461438545,
                    1.110385892294357, -0.3583678877974453, 0.07249334641812501)
_DAWSN_LARGE_DEN = (0.0036461704607177654, -0.1031584919491509, 0.6706021120912601,
                    -1.74692036691789, 2.449953450102986, -2.048796606943304,
                    1.104257323221857, -0.35500463555934214, 0.07132209687619012)


@_jit
def dawsn_f32(x):
    """Dawson's integral F(x) = exp(-x^2) int_0^x exp(t^2) dt for float32 (<= 0.51 ulp: SciPy's
    float64 value correctly rounded); odd, F(+-0) = +-0, F(+-inf) = +-0, nan for nan."""
    d = f64(f32(x))
    t = d * d
    ps = _horner(t, _DAWSN_SMALL_NUM)
    qs = _horner(t, _DAWSN_SMALL_DEN)
    c = _SPLIT64 / t - _HALF64                 # (inf at 0, -1/2 at inf: unused / harmless)
    pl = _horner(c, _DAWSN_LARGE_NUM)
    ql = _horner(c, _DAWSN_LARGE_DEN)
    small = t < _SPLIT64                       # (false for nan: nan from the large piece)
    num = d * ps if small else _HALF64 * pl
    den = qs if small else d * ql
    return f32(num / den)


ULP_BOUNDS = {dawsn_f32: 0.51}
