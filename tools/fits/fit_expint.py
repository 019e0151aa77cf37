"""Fits for corejax/compiler/fastmath_expint.py (run with python3: mpmath + numpy).

g(a) = a e^a E1(a) and h(x) = x e^-x Ei(x) on the bins [2^k (1 + j/S), 2^k (1 + (j+1)/S)),
k = 0..6, j = 0..S-1, each a degree-D polynomial in u = a 2^-k - c_j (c_j the bin's center
in mantissa units): Chebyshev interpolation at D+1 Chebyshev nodes with 40-digit mpmath
values, converted to monomials in u in mpmath, rounded to float64. Then errors measured by
float64 Horner at 3000 points per bin against mpmath. Also Ei's Taylor series at its zero.
The committed table is `python3 tools/fits/fit_expint.py 2 11` (two bins per octave, degree
11), written to tables_S2_D11.py in the current directory."""
import sys
import mpmath as mp
import numpy as np

mp.mp.dps = 40
S = int(sys.argv[1]) if len(sys.argv) > 1 else 2
D = int(sys.argv[2]) if len(sys.argv) > 2 else 12
KMAX = 7

def g(a):
    a = mp.mpf(a)
    return a * mp.exp(a) * mp.e1(a)

def h(x):
    x = mp.mpf(x)
    return x * mp.exp(-x) * mp.ei(x)

def cheb_fit(f, lo, hi, center, deg):
    n = deg + 1
    hw = (hi - lo) / 2
    mid = (hi + lo) / 2
    nodes = [mp.cos(mp.pi * (i + mp.mpf(1) / 2) / n) for i in range(n)]
    vals = [f(mid + hw * t) for t in nodes]
    c = []
    for j in range(n):
        s = mp.fsum(vals[i] * mp.cos(mp.pi * j * (i + mp.mpf(1) / 2) / n) for i in range(n))
        c.append(s * 2 / n)
    c[0] /= 2
    # sum c_j T_j(t), t = (x - mid)/hw; x = center*2^k... we want monomials in u = (x - mid)/scale
    # build polynomial in t: T_j via recurrence as coefficient lists
    T = [[mp.mpf(1)], [mp.mpf(0), mp.mpf(1)]]
    for j in range(2, n):
        a = [mp.mpf(0)] + [2 * v for v in T[j - 1]]
        b = T[j - 2] + [mp.mpf(0)] * (len(a) - len(T[j - 2]))
        T.append([x - y for x, y in zip(a, b)])
    poly_t = [mp.mpf(0)] * n
    for j in range(n):
        for i, v in enumerate(T[j]):
            poly_t[i] += c[j] * v
    return poly_t, hw

def fit_all(f):
    rows = []
    errs = []
    for k in range(KMAX):
        for j in range(S):
            lo_m = 1 + mp.mpf(j) / S
            hi_m = 1 + mp.mpf(j + 1) / S
            cm = (lo_m + hi_m) / 2
            fk = lambda m, k=k: f(m * 2 ** k)
            poly_t, hw = cheb_fit(fk, lo_m, hi_m, cm, D)   # in t = (m - cm)/hw
            # u = m - cm = hw t -> coefficient of u^i is poly_t[i] / hw^i
            coeffs = [float(poly_t[i] / hw ** i) for i in range(D + 1)]
            rows.append(coeffs[::-1])                     # highest power first
            # error check
            us = np.linspace(float(lo_m - cm), float(hi_m - cm), 600)
            worst = 0.0
            for u in us:
                acc = coeffs[-1]
                for cc in coeffs[-2::-1]:
                    acc = acc * u + cc
                ref = fk(cm + mp.mpf(u))
                worst = max(worst, abs(float((acc - ref) / ref)))
            errs.append(worst)
    return rows, errs

def root_taylor(n_terms):
    x0 = mp.findroot(mp.ei, 0.37)
    hi = float(x0)
    lo = float(x0 - hi)
    # Ei^(n)(x0)/n!, n = 1..n_terms: derivatives of e^x / x
    cs = [mp.diff(lambda x: mp.exp(x) / x, x0, n - 1) / mp.factorial(n) for n in range(1, n_terms + 1)]
    return x0, hi, lo, [float(c) for c in cs][::-1]

if __name__ == "__main__":
    rows_g, eg = fit_all(g)
    rows_h, eh = fit_all(h)
    print("S", S, "D", D)
    print("E1 bins max rel err", max(eg), ["%.1e" % e for e in eg])
    print("Ei bins max rel err", max(eh), ["%.1e" % e for e in eh])
    np.set_printoptions(precision=17)
    with open(f"tables_S{S}_D{D}.py", "w") as fh:
        fh.write("E1_ROWS = " + repr(rows_g) + "\n")
        fh.write("EI_ROWS = " + repr(rows_h) + "\n")
    x0, hi, lo, cs = root_taylor(10)
    print("x0", x0, repr(hi), repr(lo))
    print("taylor", [repr(c) for c in cs])
