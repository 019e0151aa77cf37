"""Accuracy, special values and vectorization of corejax.compiler.fastmath_dawsn (float32 Dawson
integral through float64), against scipy.special.dawsn in float64 (what corejax evaluates
today), in the manner of tests/test_fastmath_expint.py: every 2**12-th float32 bit pattern at
two offsets plus 300,000 random patterns, both signs, all exponents, nan/inf/zero."""
import re

import numpy as np
import scipy.special

from _fastmath_check import X32, check_against, evaluate, loop_llvm, ulp_errors
from corejax.compiler.fastmath_dawsn import ULP_BOUNDS, dawsn_f32


def reference(x):
    """scipy.special.dawsn in float64 (odd: -0 at -0 and at -inf, as corejax returns today)."""
    with np.errstate(all="ignore"):                  # (signalling nan patterns)
        return scipy.special.dawsn(np.asarray(x, np.float32).astype(np.float64))


def test_ulp_bound_over_all_float32_ranges():
    x = X32
    ref = reference(x)
    # the sweep covers what it should: both signs, nan, +-inf, +-0, denormals, huge values
    assert np.isnan(x).any() and np.isinf(x).any() and (x == 0).any()
    assert (np.abs(x[np.isfinite(x)]) < np.finfo(np.float32).tiny).sum() > 1000
    assert (np.abs(x) > 1e30).sum() > 1000 and (x < 0).sum() > 1000
    worst = check_against(dawsn_f32, x, ref, ULP_BOUNDS[dawsn_f32])
    assert worst > 0.4                  # the check measures something (rounding alone: ~0.5)


def test_the_check_can_fail():
    # a result one ulp off breaks the bound: the harness is not vacuous
    x = np.array([0.5, 1.5, 7.0, 1e20], np.float32)
    y = evaluate(dawsn_f32, x)
    ref = reference(x)
    assert (ulp_errors(np.nextafter(y, np.float32(np.inf)), ref) > ULP_BOUNDS[dawsn_f32]).any()
    assert (ulp_errors(np.nextafter(y, np.float32(-np.inf)), ref) > ULP_BOUNDS[dawsn_f32]).any()


def test_dense_around_the_split_and_the_maximum():
    # the 20,001 floats nearest |x| = 4 (where the two rationals meet) and nearest F's maximum
    # (x = 0.9241388730...), both signs
    for centre in (4.0, 0.9241388730):
        c = np.float32(centre).view(np.int32)
        x = np.arange(c - 10_000, c + 10_001, dtype=np.int32).view(np.float32)
        x = np.concatenate([x, -x])
        check_against(dawsn_f32, x, reference(x), ULP_BOUNDS[dawsn_f32])


def test_tiny_and_huge_arguments():
    # F(x) = x (correctly rounded: x - 2x^3/3 + ...) for |x| < 2^-13, denormals included
    x = np.concatenate([np.arange(1, 5000, dtype=np.int32).view(np.float32),
                        np.geomspace(1e-38, 1e-4, 5000).astype(np.float32)])
    x = np.concatenate([x, -x])
    y = evaluate(dawsn_f32, x)
    tiny = np.abs(x) < 2 ** -13
    assert np.array_equal(y[tiny].view(np.uint32), x[tiny].view(np.uint32))
    check_against(dawsn_f32, x, reference(x), ULP_BOUNDS[dawsn_f32])
    # F(x) ~ 1/(2x) up to the largest float32 (results denormal past 4.25e37)
    x = np.geomspace(4.0, 3.4028235e38, 20_000).astype(np.float32)
    x = np.concatenate([x, -x, [np.float32(3.4028235e38), np.float32(-3.4028235e38)]])
    check_against(dawsn_f32, x, reference(x), ULP_BOUNDS[dawsn_f32])
    big = np.abs(x) > 1e20
    assert np.array_equal(evaluate(dawsn_f32, x[big]),
                          (0.5 / x[big].astype(np.float64)).astype(np.float32))


nan, inf = np.nan, np.inf
TINY = np.float32(1.4e-45)
HUGE = np.float32(3.4028235e38)
SPECIAL = [(0.0, 0.0), (-0.0, -0.0), (inf, 0.0), (-inf, -0.0), (nan, nan), (TINY, TINY),
           (-TINY, -TINY), (HUGE, np.float32(1.4693679e-39)), (-HUGE, np.float32(-1.4693679e-39)),
           (1.0, 0.5380795), (-1.0, -0.5380795), (0.9241388730, 0.54104424), (4.0, 0.129348),
           (10.0, 0.050253846), (1e30, 5e-31)]


def test_special_values():
    x = np.array([c[0] for c in SPECIAL], np.float32)
    want = np.array([c[1] for c in SPECIAL], np.float32)
    got = evaluate(dawsn_f32, x)
    same = ((got == want) & (np.signbit(got) == np.signbit(want))) | (np.isnan(got)
                                                                     & np.isnan(want))
    assert same.all(), f"at {x[~same]} got {got[~same]}, want {want[~same]}"
    # and SciPy (rounded to float32) agrees with the table, signs of zero included
    ref = reference(x).astype(np.float32)
    assert np.array_equal(ref.view(np.uint32)[~np.isnan(want)],
                          want.view(np.uint32)[~np.isnan(want)])
    assert np.array_equal(np.isnan(ref), np.isnan(want))


def test_scalar_call_equals_the_loop():
    x = np.concatenate([X32[::997], np.array([0.0, -0.0, inf, -inf, nan, 4.0, -4.0], np.float32)])
    loop = evaluate(dawsn_f32, x)
    scalar = np.array([dawsn_f32(v) for v in x], np.float32)
    ok = ~np.isnan(loop)
    assert np.array_equal(scalar.view(np.uint32)[ok], loop.view(np.uint32)[ok])
    assert np.array_equal(np.isnan(scalar), np.isnan(loop))


def test_loops_calling_it_vectorize():
    llvm = loop_llvm(dawsn_f32)
    widths = {int(w) for w in re.findall(r"<(\d+) x double>", llvm)}
    assert widths and max(widths) >= 2, "no <N x double> in the loop's IR"
