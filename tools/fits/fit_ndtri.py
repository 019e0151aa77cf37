"""Fits the coefficients of corejax.compiler.fastmath_f64.ndtri_f32.

Run: python3 fit_ndtri.py   (any Python 3 with numpy and mpmath; made with CPython 3.11.7,
numpy 2.4.6, mpmath 1.3.0; 7-12 s). Prints the constants in fastmath_f64.py's form
and each fit's measured maximum relative error.

Reference: Phi^-1(p) from mpmath at 50 digits, by Newton's method on Phi(x) = erfc(-x/sqrt 2)/2
from an asymptotic start, iterated until the step is below 1e-40 relative.

Two rational approximations, each P/Q with Q's constant term 1, fitted to minimize the maximum
relative error over Chebyshev nodes of its interval:
- central, |q| <= 7/16 with q = p - 1/2: x = q * P(t)/Q(t), t = q^2 in [0, (7/16)^2];
- tail, p' = min(p, 1 - p) < 1/16: |x| = P(u)/Q(u), u = r - 1.66, r = sqrt(-log p') in
  [1.66, 10.2] (r >= 2 sqrt(log 2) = 1.6651 there; r = 10.163 at p' = 2^-149, float32's
  smallest denormal).
Fitting method: linearized least squares (Loeb / Sanathanan-Koerner: minimize
sum w_i ((P(t_i) - f_i Q(t_i)) / (f_i Q_prev(t_i)))^2, Q_prev the previous iterate's
denominator) with Lawson's reweighting w_i <- w_i |e_i| (e_i the relative error), in a Chebyshev
basis on the interval, converted to monomials in the evaluation variable; the iterate with the
smallest maximum error (measured with the float64 monomial coefficients, evaluated by Horner in
float64) is kept. Each fit is then checked on 4000 random points of its interval against fresh
mpmath values, and Q is checked to have no zero on the interval.
"""

import mpmath as mp
import numpy as np

from _fitting import chebyshev_nodes, fmt, horner

mp.mp.dps = 50
_SQRT2 = mp.sqrt(2)
_SQRT2PI = mp.sqrt(2 * mp.pi)

CENTRAL_BOUND = 0.4375
TAIL_R = (1.66, 10.2)
TAIL_SHIFT = 1.66
DEGREES = {"central": (5, 5), "tail": (5, 5)}


def ndtri_lower(p):
    """Phi^-1(p) for mpf p in (0, 1/2], to ~45 digits."""
    p = mp.mpf(p)
    # start: x ~ -sqrt(2 L - log(2 pi L)), L = -log p (from the asymptotic expansion); at p
    # near 1/2 the start sqrt(2 pi) (p - 1/2) instead.
    L = -mp.log(p)
    if p > mp.mpf("0.3"):
        x = _SQRT2PI * (p - mp.mpf("0.5"))
    else:
        x = -mp.sqrt(2 * L - mp.log(2 * mp.pi * L))
    for _ in range(60):
        F = mp.erfc(-x / _SQRT2) / 2
        dens = mp.exp(-x * x / 2) / _SQRT2PI
        step = (F - p) / dens
        # damp the first steps far in the tail (Phi is very convex there)
        if abs(step) > 0.5:
            step = mp.sign(step) * mp.mpf("0.5")
        x -= step
        if abs(step) < mp.mpf("1e-40") * (abs(x) + mp.mpf("1e-40")):
            return x
    raise RuntimeError(f"Newton did not converge at p={p}")


def central_f(t):
    """x / q at q = -sqrt(t) (x/q is even in q)."""
    q = mp.sqrt(mp.mpf(t))
    if q == 0:
        return float(_SQRT2PI)
    return float(ndtri_lower(mp.mpf("0.5") - q) / (-q))


def tail_f(r):
    """|x| at p' = exp(-r^2)."""
    return float(-ndtri_lower(mp.exp(-mp.mpf(r) ** 2)))


def rel_error(P, Q, t, f, shift):
    u = t - shift
    return (horner(u, P) / horner(u, Q) - f) / f


def fit_rational(t, f, m, n, shift, iterations=200):
    """(P, Q, max relative error): P of degree m, Q of degree n in u = t - shift, highest power
    first, Q's constant term 1."""
    a, b = float(t.min()), float(t.max())
    s = (2 * t - (a + b)) / (b - a)
    T = np.polynomial.chebyshev.chebvander(s, max(m, n))
    to_s = np.polynomial.Polynomial([(2 * shift - (a + b)) / (b - a), 2 / (b - a)])  # s(u)
    w = np.full_like(t, 1.0 / t.size)
    q_prev = np.ones_like(t)
    best = None
    for _ in range(iterations):
        scale = np.sqrt(w) / (np.abs(f) * np.abs(q_prev))
        A = np.hstack([T[:, :m + 1], -f[:, None] * T[:, 1:n + 1]]) * scale[:, None]
        sol = np.linalg.lstsq(A, f * scale, rcond=None)[0]
        pc, qc = sol[:m + 1], np.concatenate([[1.0], sol[m + 1:]])
        Pu = np.polynomial.Polynomial(np.polynomial.chebyshev.cheb2poly(pc))(to_s).coef
        Qu = np.polynomial.Polynomial(np.polynomial.chebyshev.cheb2poly(qc))(to_s).coef
        Pu, Qu = Pu / Qu[0], Qu / Qu[0]
        P = tuple(float(v) for v in Pu[::-1])
        Q = tuple(float(v) for v in Qu[::-1])
        e = rel_error(P, Q, t, f, shift)
        err = float(np.abs(e).max())
        if best is None or err < best[2]:
            best = (P, Q, err)
        q_prev = np.polynomial.chebyshev.chebval(s, qc)
        w = w * np.abs(e)
        w /= w.sum()
    return best


def check(name, P, Q, lo, hi, fn, shift, n=4000):
    rng = np.random.default_rng(1)
    t = np.sort(rng.uniform(lo, hi, n))
    t[0], t[-1] = lo, hi
    f = np.array([fn(v) for v in t])
    err = float(np.abs(rel_error(P, Q, t, f, shift)).max())
    dense = np.linspace(lo, hi, 200001) - shift
    qmin = float(horner(dense, Q).min())
    assert qmin > 0, f"{name}: Q has a zero on the interval"
    return err, qmin


def main():
    out = {}
    lo, hi = 0.0, CENTRAL_BOUND ** 2
    t = chebyshev_nodes(lo, hi, 2000)
    f = np.array([central_f(v) for v in t])
    P, Q, err = fit_rational(t, f, *DEGREES["central"], 0.0)
    err2, qmin = check("central", P, Q, lo, hi, central_f, 0.0)
    print(f"# central: fit {err:.2e} on the nodes, {err2:.2e} on random points, min Q {qmin:.3f}")
    out["_NDTRI_CENTRAL_P"], out["_NDTRI_CENTRAL_Q"] = P, Q

    lo, hi = TAIL_R
    r = chebyshev_nodes(lo, hi, 2000)
    f = np.array([tail_f(v) for v in r])
    P, Q, err = fit_rational(r, f, *DEGREES["tail"], TAIL_SHIFT)
    err2, qmin = check("tail", P, Q, lo, hi, tail_f, TAIL_SHIFT)
    print(f"# tail: fit {err:.2e} on the nodes, {err2:.2e} on random points, min Q {qmin:.3f}")
    out["_NDTRI_TAIL_P"], out["_NDTRI_TAIL_Q"] = P, Q
    for k, v in out.items():
        print(fmt(k, v))
    return out


if __name__ == "__main__":
    main()
