"""Fits the float32 polynomials of corejax.compiler.fastmath_f32's erf_f32 (_ERF_MID) and
erfcx_f32 (_ERFCX_SMALL, _ERFCX_LARGE).

Run: python tools/fits/fit_erf.py   (numpy and scipy; a few seconds). Prints each fit's maximum
error in float64 and after rounding the coefficients to float32, and the coefficients, highest
power first.

Method (as fastmath.py's docstring describes): minimax by Lawson's iteratively reweighted least
squares over 4000 Chebyshev nodes of the interval, in float64 against scipy.special.erfcx; then
the coefficients are rounded to float32 one at a time, lowest power first, the remaining ones
refitted after each rounding.
- erf's piece: erfcx(a) on [0.875, 4] in (a - 2.4375), degree 9, minimizing the largest
  exp(-a^2) |P(a) - erfcx(a)|, the absolute error of erfc and so of erf.
- erfcx below 2: erfcx(a) on [0, 2] in (a - 1), degree 12, relative error.
- erfcx from 2 on: a erfcx(a) = 1/sqrt(pi) + t P(t), t = 1/a in [0, 1/2], degree 12, relative
  error, with the constant term held at 1/sqrt(pi) (the kernel carries it in two floats).
"""
import numpy as np
from scipy.special import erfcx


def chebyshev_nodes(lo, hi, n=4000):
    k = np.arange(n)
    return 0.5 * (lo + hi) + 0.5 * (hi - lo) * np.cos(np.pi * (k + 0.5) / n)


def lawson(t, f, weight, deg, fixed, iters=400):
    """Coefficients (lowest power first) minimizing max |weight * (P(t) - f)|, with the powers
    in `fixed` held at their given values; and that maximum."""
    free = [j for j in range(deg + 1) if j not in fixed]
    rhs = f - sum(c * t ** j for j, c in fixed.items())
    basis = np.stack([t ** j for j in free], axis=1)
    w = np.full(len(t), 1.0 / len(t))
    best = None
    for _ in range(iters):
        s = np.sqrt(w) * weight
        c, *_ = np.linalg.lstsq(basis * s[:, None], rhs * s, rcond=None)
        err = np.abs((basis @ c - rhs) * weight)
        if best is None or err.max() < best[0]:
            best = (err.max(), c)
        w = w * err
        w /= w.sum()
    full = dict(fixed)
    full.update(zip(free, best[1]))
    return np.array([full[j] for j in range(deg + 1)]), best[0]


def fit(name, t, f, weight, deg, fixed=None):
    fixed = dict(fixed or {})
    _, err64 = lawson(t, f, weight, deg, fixed)
    for j in range(deg + 1):
        if j in fixed:
            continue
        c, _ = lawson(t, f, weight, deg, fixed)
        fixed[j] = float(np.float32(c[j]))
    c = np.array([fixed[j] for j in range(deg + 1)])
    err32 = np.abs((np.polyval(c[::-1], t) - f) * weight).max()
    print(f"{name}: fit error {err64:.3g}, after float32 rounding {err32:.3g}")
    print("   ", ", ".join(repr(float(np.float32(x))) for x in c[::-1]))


a = chebyshev_nodes(0.875, 4.0)
fit("_ERF_MID (absolute error of erf)", a - 2.4375, erfcx(a), np.exp(-a * a), 9)
a = chebyshev_nodes(0.0, 2.0)
fit("_ERFCX_SMALL and _ERFCX_SMALL_0 (relative)", a - 1.0, erfcx(a), 1 / erfcx(a), 12)
t = chebyshev_nodes(0.0, 0.5)
g = np.where(t > 0, erfcx(1 / np.maximum(t, 1e-300)) / np.maximum(t, 1e-300), 1 / np.sqrt(np.pi))
fit("_ERFCX_LARGE (relative; the last, 1/sqrt(pi), is _RSQRT_PI_HI + _RSQRT_PI_LO)", t, g, 1 / g,
    12, fixed={0: 1 / np.sqrt(np.pi)})
