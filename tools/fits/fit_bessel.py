"""Fits the coefficients of corejax.compiler.fastmath_f64.bessel_i0e_f32 / bessel_i1e_f32.

Run: python3 tools/fits/fit_bessel.py [SPLIT NEAR_LENGTH FAR_LENGTH]   (any Python 3 with numpy and
mpmath; made with CPython 3.11.7, numpy 2.4.6, mpmath 1.3.0; 6-50 s on a shared 2-core
machine). Without arguments it makes the constants of fastmath_f64.py (split 8, 12 and 11
coefficients), printed in that file's form, each after a comment with its measured maximum
relative error.

With a = |x| the kernel computes, in float64,
- a <= SPLIT: e^-a I0(a) = E(r) 2^k P0(a^2) and e^-a I1(a) = E(r) 2^k a P1(a^2), where
  -a = k ln2 + r, |r| <= ln2/2;
- a > SPLIT: e^-a I_n(a) = Q_n(1/a) / sqrt(a).
References, from mpmath at 40 digits:
- P0, P1 on s = x^2 in [0, SPLIT^2]: I0(x) = 0F1(;1;s/4) and I1(x)/x = 0F1(;2;s/4)/2 (sums of
  positive terms, by mpmath's hypergeometric series);
- Q0, Q1 on u = 1/x in (0, 1/SPLIT]: sqrt(x) e^-x I_n(x) from mpmath's besseli;
- E: exp(r) on |r| <= ln2/2.

Each fit is a polynomial of the stated length minimizing the maximum relative error over
NODES Chebyshev nodes of its interval: Lawson's iteratively reweighted least squares
(w_i <- w_i |e_i|), in a Chebyshev basis of the interval, converted to monomials in the
evaluation variable; the iterate with the smallest maximum error (measured with the float64
monomial coefficients, evaluated by Horner in float64) is kept. P0, P1 and E keep their
constant term exact (1, 1/2 and 1): the other coefficients fit (f - c0)/v with weights v/f, so
that i0e(tiny) = 1 and i1e(2^-149) = 2^-150 (which rounds to 0) come out exactly. Each fit is
then checked on 4000 random points of its interval against fresh mpmath values, its error
measured both with the float64 Horner value and (the fit alone) with the float64 coefficients
evaluated in mpmath.
"""
import mpmath as mp
import numpy as np

from _fitting import chebyshev_nodes, fmt, horner, horner_mp

mp.mp.dps = 40

SPLIT = 8.0           # near: |x| <= SPLIT, far: |x| > SPLIT
LENGTH = 12           # P0, P1 (near)
FAR_LENGTH = 11       # Q0, Q1 (far)
EXP_LENGTH = 9        # exp(r) on |r| <= ln2/2
NODES = 3000
HALF_LN2 = float(mp.log(2) / 2)


def near_ref(order, s):
    """I0(x) or I1(x)/x at x = sqrt(s), and (value - constant term) / s."""
    s = mp.mpf(s)
    f = mp.hyp0f1(1, s / 4) if order == 0 else mp.hyp0f1(2, s / 4) / 2
    c0 = mp.mpf(1) if order == 0 else mp.mpf("0.5")
    return f, ((f - c0) / s if s else None)


def far_ref(order, u):
    """sqrt(x) e^-x I_n(x) at x = 1/u."""
    x = 1 / mp.mpf(u)
    return mp.sqrt(x) * mp.exp(-x) * mp.besseli(order, x)


def exp_ref(r):
    r = mp.mpf(r)
    f = mp.exp(r)
    return f, ((f - 1) / r if r else None)


def lawson(t, f, g, length, pin, iterations=300):
    """(coefficients highest power first, max relative error) of the polynomial of `length`
    coefficients in t that minimizes max |P(t)/f - 1| over t; with pin (a float), the constant
    term is pin and g = (f - pin)/t is fitted with weights t/f."""
    a, b = float(t.min()), float(t.max())
    s = (2 * t - (a + b)) / (b - a)
    if pin is None:
        T, target, base = np.polynomial.chebyshev.chebvander(s, length - 1), f, np.ones_like(t)
    else:
        T, target, base = np.polynomial.chebyshev.chebvander(s, length - 2), g, t
    w = np.full_like(t, 1.0 / t.size)
    best = None
    for _ in range(iterations):
        scale = np.sqrt(w) * base / np.abs(f)
        cc = np.linalg.lstsq(T * scale[:, None], target * scale, rcond=None)[0]
        mono = np.polynomial.Chebyshev(cc, domain=[a, b]).convert(
            kind=np.polynomial.Polynomial, domain=[a, b], window=[a, b]).coef
        coeffs = tuple(float(v) for v in mono[::-1]) + (() if pin is None else (float(pin),))
        e = horner(t, coeffs) / f - 1
        err = float(np.abs(e).max())
        if best is None or err < best[1]:
            best = (coeffs, err)
        w = w * np.abs(e)
        w /= w.sum()
    return best


def check(coeffs, lo, hi, ref, n=4000):
    """(max relative error of the float64 Horner value, of the float64 coefficients in mpmath)"""
    rng = np.random.default_rng(1)
    t = np.sort(rng.uniform(lo, hi, n))
    t[0], t[-1] = lo if lo else hi * 1e-9, hi
    f = [ref(v) for v in t]
    f64 = np.array([float(v) for v in f])
    err64 = float(np.abs(horner(t, coeffs) / f64 - 1).max())
    errmp = max(abs(horner_mp(mp.mpf(v), coeffs) / fv - 1) for v, fv in zip(t, f))
    return err64, float(errmp)


def fit(name, note, ref, lo, hi, length, pin):
    v = chebyshev_nodes(lo, hi, NODES)
    fg = [ref(p) for p in v]
    f = np.array([float(p[0]) for p in fg])
    g = None if pin is None else np.array([float(p[1]) for p in fg])
    coeffs, err = lawson(v, f, g, length, pin)
    e64, emp = check(coeffs, lo, hi, lambda p: ref(p)[0])
    print(f"# {note}: fit {err:.2g} on the nodes, {e64:.2g} ({emp:.2g} in exact arithmetic) at "
          f"4000 random points")
    print(fmt(name, coeffs))


def main():
    print(f"# SPLIT = {SPLIT!r}, lengths {LENGTH} (near), {FAR_LENGTH} (far), {EXP_LENGTH} (exp)")
    for order in (0, 1):
        fit(f"_I{order}_NEAR", f"I{order}{'(x)/x' if order else '(x)'} = P{order}(x^2), x <= {SPLIT:g}",
            lambda p, o=order: near_ref(o, p), 0.0, SPLIT * SPLIT, LENGTH, 1.0 if order == 0 else 0.5)
    for order in (0, 1):
        fit(f"_I{order}_FAR", f"sqrt(x) e^-x I{order}(x) = Q{order}(1/x), x > {SPLIT:g}",
            lambda p, o=order: (far_ref(o, p), None), 0.0, 1.0 / SPLIT, FAR_LENGTH, None)
    fit("_BESSEL_EXP", "exp(r) = E(r), |r| <= ln2/2", exp_ref, -HALF_LN2, HALF_LN2, EXP_LENGTH, 1.0)


if __name__ == "__main__":
    import sys
    if len(sys.argv) > 1:
        SPLIT, LENGTH, FAR_LENGTH = float(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    main()
