"""Fits the coefficients of lgamma_f32 (corejax/compiler/fastmath_f64.py).

Run: python3 tools/fits/fit_lgamma.py   (any Python with numpy and mpmath;
a few seconds). Prints the coefficient tuples as they appear in fastmath_f64.py.

1. _LGAMMA_CORE: lgamma(2 + t) = t * Q(t) on |t| <= 1/2, Q a polynomial of degree 15 (16
   coefficients, one Horner chain), fitted for minimum maximum relative error of Q (= that of
   t * Q(t)) by Lawson's iteratively reweighted least squares over 4000 Chebyshev nodes. The
   references lgamma(2 + t) / t come from mpmath at 40 digits, held in long double; each
   least-squares step solves, in float64, for the correction to the current coefficients from
   the residuals computed in long double, so the fit is not limited by float64. The Chebyshev
   fit is converted to powers of t and rounded to float64.
2. _LGAMMA_STIRLING: B_2k / (2k (2k - 1)), k = 1..9, checked against mpmath's Bernoulli numbers.
"""
import mpmath as mp
import numpy as np
from numpy.polynomial import chebyshev as C

mp.mp.dps = 40
LD = np.longdouble
HALF_WIDTH = 0.5
N_NODES = 4000
N_COEFFS = 16


def core_fit():
    k = np.arange(N_NODES)
    u = np.cos((2 * k + 1) * np.pi / (2 * N_NODES)).astype(LD)   # no node at 0
    t_mp = [mp.mpf(float(ui)) * HALF_WIDTH for ui in u]          # u is exact in float64
    f_str = [mp.nstr(mp.loggamma(2 + t) / t, 30) for t in t_mp]
    f = np.array([LD(s) for s in f_str])
    V = C.chebvander(u, N_COEFFS - 1)                            # long double
    c = np.zeros(N_COEFFS, LD)
    w = np.full(N_NODES, 1.0 / N_NODES)
    best = (np.inf, None)
    for it in range(300):
        e = (V @ c - f) / f                                      # relative error, long double
        m = float(np.abs(e).max())
        if m < best[0]:
            best = (m, c.copy())
        sw = np.sqrt(w)
        A = (V / f[:, None]).astype(np.float64) * sw[:, None]
        delta, *_ = np.linalg.lstsq(A, -(e.astype(np.float64)) * sw, rcond=None)
        c = c + delta.astype(LD)
        e = (V @ c - f) / f
        w = w * np.abs(e.astype(np.float64))
        w = w / w.sum()
        w = np.maximum(w, 1e-30)
    c = best[1]
    # Chebyshev in u = t / HALF_WIDTH -> powers of t, then float64
    p = C.cheb2poly(c)
    p = p / LD(HALF_WIDTH) ** np.arange(N_COEFFS)
    p64 = p.astype(np.float64)
    # measured relative error of t*Q(t) with the float64 coefficients, on a fine grid vs mpmath
    tt = np.linspace(-0.5, 0.5, 2001)
    tt = tt[tt != 0]
    ref = np.array([LD(mp.nstr(mp.loggamma(2 + mp.mpf(float(x))) / mp.mpf(float(x)), 30))
                    for x in tt])
    val = np.polynomial.polynomial.polyval(tt.astype(LD), p64.astype(LD))
    err = float(np.abs((val - ref) / ref).max())
    return p64, best[0], err


def stirling():
    exact = [(1, 12), (-1, 360), (1, 1260), (-1, 1680), (1, 1188), (-691, 360360), (1, 156),
             (-3617, 122400), (43867, 244188)]
    for k, (a, b) in enumerate(exact, start=1):
        want = mp.bernoulli(2 * k) / (2 * k * (2 * k - 1))
        assert abs(mp.mpf(a) / b - want) < mp.mpf(10) ** -35, k
    return exact


if __name__ == "__main__":
    p64, fit_err, err = core_fit()
    print(f"# core fit: max relative error {fit_err:.3g} (long double coefficients), "
          f"{err:.3g} with the float64 ones")
    print("_LGAMMA_CORE =", tuple(float(v) for v in p64[::-1]))     # highest power first
    print("Stirling:", stirling())
