"""Accuracy, special values and vectorization of corejax.compiler.fastmath_expint (expi_f32,
exp1_f32), as tests/test_fastmath.py does for the other fastmath functions: ulps of float32
against SciPy in float64 over every 2**12-th float32 bit pattern (at offset 0 and at an odd
offset) plus 300,000 random patterns, with JAX's special values; relative accuracy next to
Ei's zero against an independent 64-bit-mantissa reference."""
import re

import numpy as np
import pytest
import scipy.special

from _fastmath_check import X32, check_against, evaluate, loop_llvm, ulp_errors
from corejax.compiler.fastmath_expint import ULP_BOUNDS, exp1_f32, expi_f32


def expi_ref(x):
    """SciPy's expi in float64, with JAX's nan at +-0 and +-inf."""
    with np.errstate(all="ignore"):
        d = np.asarray(x, np.float64)
        out = scipy.special.expi(d)
    return np.where((d == 0) | np.isinf(d), np.nan, out)


def exp1_ref(x):
    """SciPy's exp1 in float64: inf at +-0, nan below 0; JAX's nan at +-inf."""
    with np.errstate(all="ignore"):
        d = np.asarray(x, np.float64)
        out = scipy.special.exp1(d)
    out = np.where(d < 0, np.nan, out)
    return np.where(np.isinf(d), np.nan, np.where(d == 0, np.inf, out))


REFS = {expi_f32: expi_ref, exp1_f32: exp1_ref}


@pytest.mark.parametrize("fn", [expi_f32, exp1_f32], ids=lambda f: f.__name__)
def test_ulp_bound_over_all_float32_ranges(fn):
    check_against(fn, X32, REFS[fn](X32), ULP_BOUNDS[fn])


def test_the_check_can_fail():
    # a result off by one ulp somewhere breaks the 0.6 bound: the harness is not vacuous
    x = np.array([1.5, 2.5], np.float32)
    y = evaluate(expi_f32, x)
    ref = expi_ref(x)
    assert ulp_errors(np.nextafter(y, np.float32(np.inf)), ref).max() > ULP_BOUNDS[expi_f32]


def _ei_long(x):
    """Ei(x) = gamma + log x + sum_k x^k / (k k!) in long double (64-bit mantissa on x86: near
    the zero the cancellation leaves ~2e-20 absolute, within 6e-13 relative of mpmath over the
    floats below; the implementation uses a different form there, a Taylor series at x0)."""
    L = np.longdouble
    xl = np.asarray(x, np.float64).astype(L)
    total = np.zeros_like(xl)
    term = np.ones_like(xl)
    for k in range(1, 31):
        term = term * xl / L(k)
        total += term / L(k)
    return L("0.57721566490153286060651209008240243") + np.log(xl) + total


def test_expi_next_to_its_zero():
    if np.finfo(np.longdouble).nmant < 60:
        pytest.skip("needs an 80-bit long double for the reference")
    center = np.float32(0.37250741078136663).view(np.int32)
    x = np.arange(center - 20000, center + 20001, dtype=np.int32).view(np.float32)
    ref = _ei_long(x)
    y = evaluate(expi_f32, x)
    assert (np.sign(y) == np.sign(ref.astype(np.float64))).all()
    _, e = np.frexp(np.abs(ref.astype(np.float64)))
    err = np.abs(y.astype(np.longdouble) - ref) / np.ldexp(np.longdouble(1), e - 24)
    assert float(err.max()) <= ULP_BOUNDS[expi_f32]
    # SciPy's float64 expi is only within ~1.5e-9 relative there (mpmath), still < 0.51 ulp
    check_against(expi_f32, x, expi_ref(x), ULP_BOUNDS[expi_f32])


nan, inf = np.nan, np.inf
TINY = np.float32(1.4e-45)
HUGE = np.float32(3.4028235e38)
SPECIAL = {
    expi_f32: [(0.0, nan), (-0.0, nan), (inf, nan), (-inf, nan), (nan, nan),
               (HUGE, inf), (-HUGE, -0.0), (-1e30, -0.0), (-200.0, -0.0), (100.0, inf),
               (TINY, -102.70171), (-TINY, -102.70171), (1.0, 1.8951178), (-1.0, -0.21938394),
               (10.0, 2492.229)],
    exp1_f32: [(0.0, inf), (-0.0, inf), (inf, nan), (-inf, nan), (nan, nan), (-1.0, nan),
               (-TINY, nan), (HUGE, 0.0), (200.0, 0.0), (1e30, 0.0), (TINY, 102.70171),
               (1.0, 0.21938394), (10.0, 4.1569688e-06)],
}


@pytest.mark.parametrize("fn", [expi_f32, exp1_f32], ids=lambda f: f.__name__)
def test_special_values(fn):
    x = np.array([p[0] for p in SPECIAL[fn]], np.float32)
    want = np.array([p[1] for p in SPECIAL[fn]], np.float32)
    got = evaluate(fn, x)
    same = (got == want) & (np.signbit(got) == np.signbit(want)) | (np.isnan(got) & np.isnan(want))
    assert same.all(), f"{fn.__name__}: at {x[~same]} got {got[~same]}, want {want[~same]}"


def _neighbours(x, n=3):
    x = np.float32(x)
    up = [x]
    down = [x]
    for _ in range(n):
        up.append(np.nextafter(up[-1], np.float32(inf)))
        down.append(np.nextafter(down[-1], np.float32(-inf)))
    return np.array(down[::-1] + up[1:], np.float32)


def test_overflow_and_underflow_thresholds():
    # Ei overflows past 93.247; E1 goes through the denormals to 0 past 99.363; Ei(x < 0) to -0:
    # next to each threshold the result is SciPy's value rounded to float32, exactly
    with np.errstate(all="ignore"):
        for fn, ref, points in [(expi_f32, scipy.special.expi, [93.247185, 93.0, -88.0, -99.36337]),
                                (exp1_f32, scipy.special.exp1, [88.0, 99.36337, 87.33655])]:
            for p in points:
                x = np.concatenate([_neighbours(p * s, 4) for s in (0.999, 1.0, 1.001)])
                want = ref(x.astype(np.float64)).astype(np.float32)
                got = evaluate(fn, x)
                assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), (fn, x)
    assert evaluate(expi_f32, np.array([93.0], np.float32))[0] < inf
    assert evaluate(expi_f32, np.array([93.25], np.float32))[0] == inf
    assert evaluate(exp1_f32, np.array([99.4], np.float32))[0] == 0.0
    assert 0.0 < evaluate(exp1_f32, np.array([99.3], np.float32))[0] < np.finfo(np.float32).tiny


@pytest.mark.parametrize("fn", [expi_f32, exp1_f32], ids=lambda f: f.__name__)
def test_loops_calling_it_vectorize(fn):
    llvm = loop_llvm(fn)
    widths = {int(w) for w in re.findall(r"<(\d+) x double>", llvm)}
    assert widths and max(widths) >= 2, f"{fn.__name__}: no <N x double> in the loop's IR"


@pytest.mark.parametrize("fn", [expi_f32, exp1_f32], ids=lambda f: f.__name__)
def test_scalar_call_equals_the_loop(fn):
    x = X32[::2500]
    loop = evaluate(fn, x)
    scalar = np.array([fn(v) for v in x], np.float32)
    assert np.array_equal(loop.view(np.uint32), scalar.view(np.uint32))
