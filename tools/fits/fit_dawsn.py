"""Fits for corejax/compiler/fastmath_dawsn.py (Dawson's integral
F(x) = e^(-x^2) int_0^x e^(t^2) dt).
Reference: mpmath at 50 digits, F(x) = sqrt(pi)/2 e^(-x^2) erfi(x) (a product of positive factors,
no cancellation; mpmath has no dawsn). Two rationals, P = Q = 1 fixed at t = 0 and at u = 0:
- |x| < 4: F(x) / x = P(t) / Q(t), t = x^2 in [0, 16], degree 10/11, coefficients in t;
- |x| >= 4: 2 x F(x) = P(c) / Q(c), c = 16 / x^2 - 1/2 in [-1/2, 1/2], degree 8/8.
Method: Sanathanan-Koerner (linearized least squares for relative error, weights
1 / (F Q_previous)) with Lawson reweighting toward minimax (from the 5th of 20 iterations), in
mpmath over 100 Chebyshev nodes of the interval, keeping the iterate whose float64-rounded
coefficients have the smallest error at the nodes; that error is then measured (in mpmath, float64
coefficients) on 601 equispaced points. Run: python3 tools/fits/fit_dawsn.py (writes
dawsn_coeffs.json in the current directory and prints the coefficients, highest power first)."""
import json
import sys

import mpmath as mp

mp.mp.dps = 50
SQRT_PI_2 = mp.sqrt(mp.pi) / 2


def dawsn(x):
    x = mp.mpf(x)
    return SQRT_PI_2 * mp.exp(-x * x) * mp.erfi(x)


def poly(c, u):  # lowest power first
    acc = mp.mpf(0)
    for v in reversed(c):
        acc = acc * u + v
    return acc


def fit(fun, lo, hi, m, n, scale, shift, N=100, iters=20):
    """P/Q ~ fun on [lo, hi] in relative error, P(0) = Q(0) = 1 where fun(0) = 1 (lo = 0).
    Fitted in s = (u - lo) / (hi - lo) in [0, 1]; the returned float64 coefficients are in the
    variable w = u * scale - shift (exactly converted in mpmath, then rounded)."""
    width = hi - lo
    nodes = [lo + width / 2 * (1 - mp.cos(mp.pi * (k + mp.mpf(1) / 2) / N)) for k in range(N)]
    vals = [fun(u) for u in nodes]
    q = [mp.mpf(1)] + [mp.mpf(0)] * n
    lw = [mp.mpf(1)] * N
    best = None

    def to_w(c):
        # c in s = u / width (lo = 0): sum c_j (u / width)^j with u = (w + shift) / scale
        k = len(c) - 1
        out = [mp.mpf(0)] * (k + 1)
        a = 1 / (scale * width)     # s = a w + a shift
        b = shift * a
        for i, ci in enumerate(c):
            for j in range(i + 1):
                out[j] += ci * mp.binomial(i, j) * a ** j * b ** (i - j)
        return [mp.mpf(float(v)) for v in out]

    def ev(cw, u):
        return poly(cw, u * scale - shift)

    for it in range(iters):
        A = mp.matrix(N, m + n)
        b = mp.matrix(N, 1)
        for i, (u, F) in enumerate(zip(nodes, vals)):
            s = u / width
            w = mp.sqrt(lw[i]) / (F * poly(q, s))
            for j in range(1, m + 1):
                A[i, j - 1] = w * s ** j
            for j in range(1, n + 1):
                A[i, m + j - 1] = -w * F * s ** j
            b[i] = w * (F - 1)
        sol, _ = mp.qr_solve(A, b)
        p = [mp.mpf(1)] + [sol[j - 1] for j in range(1, m + 1)]
        q = [mp.mpf(1)] + [sol[m + j - 1] for j in range(1, n + 1)]
        pw, qw = to_w(p), to_w(q)
        errs = [abs(ev(pw, u) / ev(qw, u) - F) / F for u, F in zip(nodes, vals)]
        e = max(errs)
        if best is None or e < best[0]:
            best = (e, pw, qw)
        if it >= 4:
            total = mp.fsum(lw[i] * errs[i] for i in range(N))
            lw = [lw[i] * errs[i] / total * N for i in range(N)]
    _, pw, qw = best
    worst = max(abs(ev(pw, u) / ev(qw, u) - fun(u)) / fun(u)
                for u in (lo + width * k / 600 for k in range(601)))
    return worst, [float(v) for v in reversed(pw)], [float(v) for v in reversed(qw)]


def small(t):       # F(x) / x as a function of t = x^2
    return dawsn(mp.sqrt(t)) / mp.sqrt(t) if t else mp.mpf(1)


def large(u):       # 2 x F(x) as a function of u = 1 / x^2
    return 2 * dawsn(1 / mp.sqrt(u)) / mp.sqrt(u) if u else mp.mpf(1)


if __name__ == "__main__":
    which = sys.argv[1:] or ["small", "large"]
    out = {}
    if "small" in which:
        err, p, q = fit(small, mp.mpf(0), mp.mpf(16), 10, 11, mp.mpf(1), mp.mpf(0))
        print("small: F(x)/x = P(t)/Q(t), t in [0, 16], 10/11: max rel err %.2e" % err)
        out["DAWSN_SMALL_NUM"], out["DAWSN_SMALL_DEN"] = p, q
    if "large" in which:
        # c = 16 u - 1/2, u = 1 / x^2 in [0, 1/16]
        err, p, q = fit(large, mp.mpf(0), mp.mpf(1) / 16, 8, 8, mp.mpf(16), mp.mpf(1) / 2)
        print("large: 2xF(x) = P(c)/Q(c), c = 16/x^2 - 1/2, 8/8: max rel err %.2e" % err)
        out["DAWSN_LARGE_NUM"], out["DAWSN_LARGE_DEN"] = p, q
    for k, v in out.items():
        print(k, "=", tuple(v))
    name = "dawsn_coeffs.json" if len(which) == 2 else "dawsn_coeffs_%s.json" % which[0]
    with open(name, "w") as fh:     # (in the current directory)
        json.dump(out, fh, indent=1)
