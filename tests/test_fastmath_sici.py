"""Accuracy, special values and vectorization of corejax.compiler.fastmath_sici (float32 Si and
Ci through float64), against scipy.special.sici in float64 (what corejax evaluates today), in
the manner of tests/test_fastmath.py: every 2**12-th float32 bit pattern at two offsets plus
300,000 random patterns, both signs, all exponents, nan/inf/zero."""
import math
import re

import numpy as np
import pytest
import scipy.special
from numba import njit

from _fastmath_check import (X32, check_exact_values, check_special_values, check_ulps,
                             evaluate, loop_llvm, ulp_errors)
from corejax.compiler.fastmath_sici import ULP_BOUNDS, _sici_abs_f64, ci_f32, si_f32

# Ci is checked in ulps except where x (|x| >= 1) is within CI_ZERO_DISTANCE of one of Ci's
# zeros (distance estimated as |Ci(x) / Ci'(x)| = |Ci(x) x / cos x| from SciPy's values); there
# the absolute error is checked instead: within half a float32 ulp of the result (its rounding)
# plus CI_ZERO_ABS_ERROR / max(1, |x|) (Ci's envelope is 1/x). Near the first zero, 0.6165...,
# relative accuracy is checked separately below.
CI_ZERO_DISTANCE = 1e-6
CI_ZERO_ABS_ERROR = 2e-15


def reference(x):
    """scipy.special.sici in float64 with JAX's Ci(-inf) = nan."""
    with np.errstate(all="ignore"):                  # (signalling nan patterns)
        d = np.asarray(x, np.float32).astype(np.float64)
        si, ci = scipy.special.sici(d)
    return si, np.where(d == -np.inf, np.nan, ci)


def test_si_ulp_bound_whole_range():
    si_ref, _ = reference(X32)
    y = evaluate(si_f32, X32)
    approx = check_exact_values(si_f32, X32, y, si_ref)
    worst = check_ulps(si_f32, X32, y, si_ref, approx, ULP_BOUNDS[si_f32])
    assert worst > 0.4                  # the check measures something (rounding alone: ~0.5)


def _near_ci_zero(x, ci_ref):
    with np.errstate(all="ignore"):
        d = np.abs(np.asarray(x, np.float64))
        distance = np.abs(ci_ref * d / np.cos(d))
    return (d >= 1) & np.isfinite(d) & (distance < CI_ZERO_DISTANCE)


def test_ci_ulp_bound_whole_range_and_absolute_error_near_zeros():
    _, ci_ref = reference(X32)
    y = evaluate(ci_f32, X32)
    approx = check_exact_values(ci_f32, X32, y, ci_ref)
    near = approx & _near_ci_zero(X32, ci_ref)
    assert near.sum() < 20                     # the exclusion is small
    worst = check_ulps(ci_f32, X32, y, ci_ref, approx & ~near, ULP_BOUNDS[ci_f32])
    assert worst > 0.4
    check_absolute_near_zeros(X32[near], y[near], ci_ref[near])


def check_absolute_near_zeros(x, y, ref):
    """|y - ref| within half a float32 ulp of y (its rounding; denormal results have big ones)
    plus CI_ZERO_ABS_ERROR / max(1, |x|)."""
    y = y.astype(np.float64)
    half_ulp = np.spacing(np.abs(y).astype(np.float32)).astype(np.float64) / 2
    err = (np.abs(y - ref) - half_ulp) * np.maximum(1.0, np.abs(x.astype(np.float64)))
    assert (err <= CI_ZERO_ABS_ERROR).all(), (x, err)


def test_ci_absolute_error_next_to_zeros():
    """The 2001 floats nearest each of Ci's 15 zeros in (1, 50): within CI_ZERO_ABS_ERROR / x
    plus half a float32 ulp of SciPy (absolute), and within the ulp bound of it (relative)."""
    zeros = []
    grid = np.linspace(1.0, 50.0, 200_001)
    with np.errstate(all="ignore"):
        c = scipy.special.sici(grid)[1]
    for i in np.nonzero(np.sign(c[:-1]) != np.sign(c[1:]))[0]:
        lo, hi = grid[i], grid[i + 1]
        for _ in range(60):                    # bisection to float64 accuracy
            mid = 0.5 * (lo + hi)
            if np.sign(scipy.special.sici(mid)[1]) == np.sign(scipy.special.sici(lo)[1]):
                lo = mid
            else:
                hi = mid
        zeros.append(lo)
    assert len(zeros) == 15 and abs(zeros[0] - 3.384180422551186) < 1e-12
    for z in zeros:
        center = np.float32(z).view(np.int32)
        x = (center + np.arange(-1000, 1001, dtype=np.int32)).view(np.float32)
        _, ref = reference(x)
        y = evaluate(ci_f32, x)
        check_absolute_near_zeros(x, y, ref)
        assert ulp_errors(y, ref).max() <= ULP_BOUNDS[ci_f32], z


# Ci next to its first zero x0: Taylor series in t = x - x0, Ci(x0 + t) = sum_n c_n t^n, with
# c_n = h^(n-1)(x0) / n! for h(x) = Ci'(x) = cos(x) / x, and x h(x) = cos x, so (Leibniz)
# x0 h^(m)(x0) = cos^(m)(x0) - m h^(m-1)(x0). x0 to 1e-32 (two float64 parts) from mpmath.
X0_HI, X0_LO = 0.6165054856207163, -4.209920321433186e-17


def _ci_near_first_zero(x):
    x0 = X0_HI
    h = [math.cos(x0) / x0]
    for m in range(1, 16):
        cos_m = math.cos(x0 + m * math.pi / 2)
        h.append((cos_m - m * h[m - 1]) / x0)
    c = [h[n - 1] / math.factorial(n) for n in range(1, 17)]     # c_1 .. c_16
    t = (np.asarray(x, np.float64) - X0_HI) - X0_LO
    acc = np.zeros_like(t)
    for cn in reversed(c):
        acc = (acc + cn) * t
    return acc


def test_ci_relative_accuracy_next_to_first_zero():
    center = np.float32(X0_HI).view(np.int32)
    x = (center + np.arange(-20_000, 20_001, dtype=np.int32)).view(np.float32)
    ref = _ci_near_first_zero(x)
    _, sp = reference(x)
    assert np.abs(ref - sp).max() < 1e-15                         # the series is right
    y = evaluate(ci_f32, x)
    assert ulp_errors(y, ref).max() <= ULP_BOUNDS[ci_f32]
    assert not (y == 0).any()
    # The float64 value before rounding is relatively accurate too (gamma + log x + x^2 C(x^2)
    # alone cancels to 1e-9 relative here: the float32 result could not tell).
    internal = np.empty(x.size)
    _ci_internal(x, internal)
    assert (np.abs(internal - ref) / np.abs(ref)).max() < 1e-14


@njit(error_model="numpy")
def _ci_internal(x, out):
    for i in range(x.size):
        out[i] = _sici_abs_f64(abs(x[i]))[1]


SPECIAL = [
    (si_f32, [(0.0, 0.0), (-0.0, 0.0), (np.inf, np.float32(np.pi / 2)),
              (-np.inf, -np.float32(np.pi / 2)), (np.nan, np.nan), (1e-45, 1e-45),
              (-1e-45, -1e-45), (3.4028235e38, np.float32(np.pi / 2)),
              (-3.4028235e38, -np.float32(np.pi / 2)), (1.0, 0.94608307), (4.0, 1.7582031)]),
    (ci_f32, [(0.0, -np.inf), (-0.0, -np.inf), (np.inf, 0.0), (-np.inf, np.nan),
              (np.nan, np.nan), (1.0, 0.33740392), (-1.0, 0.33740392), (4.0, -0.1409817),
              (1e-45, np.float32(np.euler_gamma + math.log(1.401298464324817e-45)))]),
]


@pytest.mark.parametrize("fn,cases", SPECIAL, ids=lambda v: getattr(v, "__name__", ""))
def test_special_values(fn, cases):
    x = np.array([c[0] for c in cases], np.float32)
    want = np.array([c[1] for c in cases], np.float32)
    check_special_values(fn, x, want)
    # and SciPy agrees with the table
    ref = np.array(reference(x)[0 if fn is si_f32 else 1], np.float32)
    assert np.array_equal(ref, want, equal_nan=True)


@pytest.mark.parametrize("fn", [si_f32, ci_f32], ids=lambda f: f.__name__)
def test_scalar_call_equals_loop(fn):
    x = np.concatenate([X32[::997], np.array([0.0, -0.0, np.inf, -np.inf, np.nan], np.float32)])
    loop = evaluate(fn, x)
    scalar = np.array([fn(v) for v in x], np.float32)
    assert np.array_equal(scalar.view(np.uint32)[~np.isnan(loop)],
                          loop.view(np.uint32)[~np.isnan(loop)])
    assert np.array_equal(np.isnan(scalar), np.isnan(loop))


@pytest.mark.parametrize("fn", [si_f32, ci_f32], ids=lambda f: f.__name__)
def test_loops_calling_it_vectorize(fn):
    llvm = loop_llvm(fn)
    widths = {int(w) for w in re.findall(r"<(\d+) x double>", llvm)}
    assert widths and max(widths) >= 2, f"{fn.__name__}: no <N x double> in the loop's IR"
