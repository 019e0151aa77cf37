"""Fits for corejax/compiler/fastmath_sici.py. Chebyshev interpolation (n+1 Chebyshev nodes of the
first kind, near-minimax) of mpmath references at 40 digits, converted exactly (mpmath) to the
monomial basis of the stated variable, rounded to float64. Errors measured on 2001 points per
piece in mpmath with the float64 coefficients (Horner in mpmath)."""
import mpmath as mp

from _fitting import horner_mp
mp.mp.dps = 40
PI2 = mp.pi / 2

def f_aux(x):
    return mp.ci(x) * mp.sin(x) - (mp.si(x) - PI2) * mp.cos(x)

def g_aux(x):
    return -mp.ci(x) * mp.cos(x) - (mp.si(x) - PI2) * mp.sin(x)

def cheb_T(n):
    T = [[1], [0, 1]]
    for k in range(2, n + 1):
        a = [0] + [2 * c for c in T[k - 1]]
        b = T[k - 2] + [0] * (len(a) - len(T[k - 2]))
        T.append([p - q for p, q in zip(a, b)])
    return T

def cheb_fit(fun, n):
    """monomial coefficients (mp, lowest first) in s in [-1,1] of the interpolant of fun(s)."""
    nodes = [mp.cos(mp.pi * (k + mp.mpf(1) / 2) / (n + 1)) for k in range(n + 1)]
    vals = [fun(s) for s in nodes]
    c = []
    for j in range(n + 1):
        c.append(2 * mp.fsum(v * mp.cos(mp.pi * j * (k + mp.mpf(1) / 2) / (n + 1))
                             for k, v in enumerate(vals)) / (n + 1))
    c[0] /= 2
    T = cheb_T(n)
    mono = [mp.mpf(0)] * (n + 1)
    for j in range(n + 1):
        for i, t in enumerate(T[j]):
            mono[i] += c[j] * t
    return mono

def rescale(mono, a, b):
    """coefficients in variable v where s = a*v + b."""
    n = len(mono) - 1
    out = [mp.mpf(0)] * (n + 1)
    for i, m in enumerate(mono):
        # m * (a v + b)^i
        for j in range(i + 1):
            out[j] += m * mp.binomial(i, j) * a ** j * b ** (i - j)
    return out

def report(name, coeffs, fun, var_of_s, nchk=401, relative=True):
    worst = 0
    for k in range(nchk):
        s = -1 + 2 * mp.mpf(k) / (nchk - 1)
        v = var_of_s(s)
        ref = fun(s)
        got = horner_mp(v, coeffs)
        e = abs(got - ref) / (abs(ref) if relative else 1)
        worst = max(worst, e)
    return worst

out = {}
# 1. small x: Si(x) = x * S(t), t = x^2 in [0, 16]; Ci(x) = gamma + log x + t * C(t)
def S_of_t(t):
    x = mp.sqrt(t)
    return mp.si(x) / x if t != 0 else mp.mpf(1)
def C_of_t(t):
    x = mp.sqrt(t)
    return (mp.ci(x) - mp.euler - mp.log(x)) / t if t != 0 else mp.mpf(-1) / 4
for name, fun, n in [("SI_SMALL", S_of_t, 13), ("CI_SMALL", C_of_t, 13)]:
    mono_s = cheb_fit(lambda s: fun(8 + 8 * s), n)
    mono_t = rescale(mono_s, mp.mpf(1) / 8, mp.mpf(-1))      # s = t/8 - 1
    coeffs = [float(c) for c in reversed(mono_t)]
    err = report(name, coeffs, lambda s: fun(8 + 8 * s), lambda s: 8 + 8 * s)
    print(name, n, "max rel err %.2e" % err)
    out[name] = coeffs

# 2. x >= 4: x f(x) = F(v) / QF(v), x^2 g(x) = G(v) / QG(v), v = 16 / x^2 in [0, 1], degree 10/10:
# Sanathanan-Koerner / Loeb linearized least squares for relative error (weights 1/(F Q_prev)),
# then Lawson reweighting toward minimax, in mpmath at 60 digits over 120 Chebyshev nodes in u;
# error of the float64-rounded coefficients checked on 1001 equispaced points.
mp.mp.dps = 60
def F_u(u): return f_aux(1 / mp.sqrt(u)) / mp.sqrt(u) if u else mp.mpf(1)
def G_u(u): return g_aux(1 / mp.sqrt(u)) / u if u else mp.mpf(1)
def poly(c, u):  # lowest first
    acc = mp.mpf(0)
    for v in reversed(c):
        acc = acc * u + v
    return acc
def fit(fun, umax, m, n, N=120, iters=25):
    nodes = [umax / 2 * (1 - mp.cos(mp.pi * (k + mp.mpf(1) / 2) / N)) for k in range(N)]
    vals = [fun(u) for u in nodes]
    q = [mp.mpf(1)] + [mp.mpf(0)] * n
    lw = [mp.mpf(1)] * N
    best = None
    for it in range(iters):
        A = mp.matrix(N, m + 1 + n)
        b = mp.matrix(N, 1)
        for i, (u, F) in enumerate(zip(nodes, vals)):
            w = mp.sqrt(lw[i]) / (F * poly(q, u / umax))
            v = u / umax
            for j in range(m + 1):
                A[i, j] = w * v ** j
            for j in range(1, n + 1):
                A[i, m + j] = -w * F * v ** j
            b[i] = w * F
        sol, _ = mp.qr_solve(A, b)
        p = [sol[j] for j in range(m + 1)]
        q = [mp.mpf(1)] + [sol[m + j] for j in range(1, n + 1)]
        pr = [mp.mpf(float(v)) for v in p]
        qr = [mp.mpf(float(v)) for v in q]
        errs = [abs(poly(pr, u / umax) / poly(qr, u / umax) - F) / F for u, F in zip(nodes, vals)]
        e = max(errs)
        if best is None or e < best[0]:
            best = (e, pr, qr)
        if it >= 5:   # Lawson
            s = mp.fsum(lw[i] * errs[i] for i in range(N))
            lw = [lw[i] * errs[i] / s * N for i in range(N)]
    # check on a fine grid
    e, pr, qr = best
    worst = max(abs(poly(pr, u / umax) / poly(qr, u / umax) - fun(u)) / fun(u)
                for u in (umax * k / 1000 for k in range(1001)))
    return worst, [float(v) for v in pr], [float(v) for v in qr]

UMAX = mp.mpf(1) / 16
for name, fun in (("F", F_u), ("G", G_u)):
    w, p, q = fit(fun, UMAX, 10, 10)
    print(name, "rational 10/10 on v in [0, 1], max rel err %.2e" % w)
    out[name + "_NUM"] = list(reversed(p))
    out[name + "_DEN"] = list(reversed(q))
mp.mp.dps = 40

# 4. Taylor series of Ci at its first zero
x0 = mp.findroot(mp.ci, mp.mpf("0.6165"))
hi = float(x0)
lo = float(x0 - hi)
tay = mp.taylor(mp.ci, x0, 10)
print("X0", mp.nstr(x0, 30), repr(hi), repr(lo))
out["X0"] = (hi, lo)
out["CI_AT_ZERO"] = [float(c) for c in reversed(tay[1:])]   # t * poly(t), highest first
r = mp.mpf(1) / 64
worst = 0
for k in range(-200, 201):
    t = r * k / 200
    if t == 0:
        continue
    ref = mp.ci(x0 + t)
    got = t * horner_mp(t, out["CI_AT_ZERO"])
    worst = max(worst, abs(got - ref) / abs(ref))
print("CI_AT_ZERO |t|<=1/64 max rel err %.2e" % worst)

import json
with open("sici_coeffs.json", "w") as fh:     # (in the current directory)
    json.dump(out, fh)
