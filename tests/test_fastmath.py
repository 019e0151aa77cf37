"""Accuracy, special values, vectorization and disk caching of corejax.compiler.fastmath.

Accuracy is measured in ulps of the result's format against a reference with more precision
(float64 for float32 functions, 80-bit long double for float64 ones), over every 2**12-th float32
bit pattern (every 2**45-th float64 one), twice: at offset 0, which hits +-0, +-inf, powers of
two and the denormal boundary, and at an odd offset; plus 300,000 random bit patterns. The
sweep covers positive and negative, normal and denormal inputs, and nan/inf.
"""
import math
import os
import re
import subprocess
import sys

import numpy as np
import pytest
from numba import njit

from _fastmath_check import (X32, X64, check_against, check_special_values, evaluate,
                             evaluate2, fn_dtype, loop_llvm, ulp_errors)
from corejax.compiler import fastmath as fm
from corejax.lax.elementwise import _erf_inv_np


def _logistic_ref(x):
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


_erf = np.frompyfunc(math.erf, 1, 1)
_erfc = np.frompyfunc(math.erfc, 1, 1)


def _logistic_ref_long(x):
    x = x.astype(np.longdouble)
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


def _scipy_special(name):
    import scipy.special
    return getattr(scipy.special, name)


def _digamma_ref(x):
    """SciPy's digamma, with JAX's nan at every pole (SciPy: -inf / inf at -0 / +0)."""
    import scipy.special
    with np.errstate(all="ignore"):
        out = scipy.special.digamma(x)
    return np.where((x <= 0) & (x == np.floor(x)), np.nan, out)


def _ndtri_ref(x):
    """SciPy's ndtri (float64, within 6e-16 relative of mpmath's quantile), with JAX's special
    values spelled out: -inf at +-0, inf at 1, +0 at 1/2, nan outside [0, 1] (SciPy agrees)."""
    import scipy.special
    with np.errstate(all="ignore"):
        out = scipy.special.ndtri(x)
    out = np.where((x >= 0) & (x <= 1), out, np.nan)
    out = np.where(x == 0, -np.inf, np.where(x == 1, np.inf, out))
    return np.where(x == 0.5, 0.0, out)


def _lgamma_ref(x):
    """SciPy's gammaln, with JAX's inf at -inf."""
    import scipy.special
    with np.errstate(all="ignore"):
        out = scipy.special.gammaln(x)
    return np.where(x == -np.inf, np.inf, out)


def _long(fn):
    return lambda x: fn(x.astype(np.longdouble))


REFERENCES_F32 = {
    fm.exp_f32: np.exp,
    fm.exp2_f32: np.exp2,
    fm.expm1_f32: np.expm1,
    fm.log_f32: np.log,
    fm.log2_f32: np.log2,
    fm.log10_f32: np.log10,
    fm.log1p_f32: np.log1p,
    fm.tanh_f32: np.tanh,
    fm.logistic_f32: _logistic_ref,
    fm.softplus_f32: lambda x: np.logaddexp(x, 0.0),
    fm.erf_f32: lambda x: _erf(x).astype(np.float64),
    fm.erfc_f32: lambda x: _erfc(x).astype(np.float64),
    fm.erfcx_f32: lambda x: _scipy_special("erfcx")(x),
    fm.erf_inv_f32: lambda x: _erf_inv_np(x.astype(np.float64)),
    fm.sin_f32: np.sin,
    fm.cos_f32: np.cos,
    fm.sinh_f32: np.sinh,
    fm.cosh_f32: np.cosh,
    fm.asinh_f32: np.arcsinh,
    fm.cbrt_f32: np.cbrt,
    fm.tan_f32: np.tan,
    fm.atan_f32: np.arctan,
    fm.asin_f32: np.arcsin,
    fm.acos_f32: np.arccos,
    fm.atanh_f32: np.arctanh,
    fm.acosh_f32: np.arccosh,
    fm.digamma_f32: lambda x: _digamma_ref(x),
    fm.bessel_i0e_f32: lambda x: _scipy_special("i0e")(x),
    # (odd: -0 at -0, as JAX's; SciPy gives +0)
    fm.bessel_i1e_f32: lambda x: np.copysign(_scipy_special("i1e")(x), x),
    fm.ndtri_f32: _ndtri_ref,
    fm.lgamma_f32: _lgamma_ref,
}


# float64 functions against long double (64-bit mantissa on x86-64 Linux).
REFERENCES_F64 = {
    fm.exp_f64: _long(np.exp),
    fm.expm1_f64: _long(np.expm1),
    fm.log_f64: _long(np.log),
    fm.log1p_f64: _long(np.log1p),
    fm.tanh_f64: _long(np.tanh),
    fm.logistic_f64: _logistic_ref_long,
    fm.softplus_f64: lambda x: np.logaddexp(x.astype(np.longdouble), np.longdouble(0)),
}


@pytest.mark.parametrize("fn", list(REFERENCES_F32) + list(REFERENCES_F64),
                         ids=lambda f: f.__name__)
def test_ulp_bound_over_whole_range(fn):
    if fn_dtype(fn) == np.float64:
        if np.finfo(np.longdouble).nmant < 63:
            pytest.skip("needs an 80-bit long double for the float64 reference")
        x, reference = X64, REFERENCES_F64[fn]
    else:
        x, reference = X32, REFERENCES_F32[fn]
    with np.errstate(all="ignore"):
        ref = reference(x.astype(np.float64))
    max_err = check_against(fn, x, ref, fm.ULP_BOUNDS[fn])
    print(f"{fn.__name__}: max {max_err:.3f} ulp (bound {fm.ULP_BOUNDS[fn]})")


def _pow_inputs():
    rng = np.random.default_rng(1)
    n = 150_000
    bases = np.concatenate([X32[::8], rng.uniform(0, 4, n).astype(np.float32),
                            -rng.uniform(0, 4, n).astype(np.float32)])
    bases = rng.permutation(bases)
    exponents = np.concatenate([
        rng.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32).view(np.float32),
        rng.uniform(-60, 60, n).astype(np.float32),
        rng.integers(-40, 40, n).astype(np.float32)])
    exponents = np.resize(rng.permutation(exponents), bases.size)
    specials = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0, np.inf, -np.inf,
                         np.nan, 1e-45, -1e-45, 3.4e38], np.float32)
    sx, sy = np.meshgrid(specials, specials)
    return np.concatenate([bases, sx.ravel()]), np.concatenate([exponents, sy.ravel()])


def test_pow_f32_ulp_bound_and_special_cases():
    x, y = _pow_inputs()
    with np.errstate(all="ignore"):
        ref = np.power(x.astype(np.float64), y.astype(np.float64))
    got = evaluate2(fm.pow_f32, x, y)
    nan_ref = np.isnan(ref)
    assert np.array_equal(nan_ref, np.isnan(got)), (x[nan_ref != np.isnan(got)][:5],
                                                    y[nan_ref != np.isnan(got)][:5])
    exact = np.isinf(ref) | (ref == 0)
    bad = exact & ((got != ref) | (np.signbit(got) != np.signbit(ref)))
    assert not bad.any(), (x[bad][:5], y[bad][:5], got[bad][:5])
    err = ulp_errors(got[~nan_ref & ~exact], ref[~nan_ref & ~exact])
    print(f"pow_f32: max {err.max():.3f} ulp (bound {fm.ULP_BOUNDS[fm.pow_f32]})")
    assert err.max() <= fm.ULP_BOUNDS[fm.pow_f32]


@pytest.mark.parametrize("fn", [fm.sin_f32, fm.cos_f32, fm.tan_f32], ids=lambda f: f.__name__)
def test_sin_cos_tan_next_to_multiples_of_half_pi(fn):
    """The float32 values closest to k*pi/2 (and their neighbours), where reduction cancels."""
    k = np.arange(1, 400_001, dtype=np.float64)
    nearest = (k * (np.pi / 2)).astype(np.float32)
    x = np.concatenate([nearest, np.nextafter(nearest, np.float32(0)),
                        np.nextafter(nearest, np.float32(np.inf))])
    x = np.concatenate([x, -x, np.float32(2.0) ** np.arange(-149, 128, dtype=np.float32)])
    check_against(fn, x, REFERENCES_F32[fn](x.astype(np.float64)), fm.ULP_BOUNDS[fn])


def test_digamma_next_to_its_positive_zero():
    # psi's terms cancel near x0 = 1.4616...: every float32 within 2^-8 of it, against SciPy
    # (checked there against mpmath, as were the floats next to psi's first four negative
    # zeros: 0.50 ulp worst)
    import scipy.special
    x0 = np.float32(1.4616321).view(np.int32)
    x = np.arange(x0 - 40000, x0 + 40000, dtype=np.int32).view(np.float32)
    check_against(fm.digamma_f32, x, scipy.special.digamma(x.astype(np.float64)),
                  fm.ULP_BOUNDS[fm.digamma_f32])


def _lgamma_near_one_or_two(x, a):
    """lgamma(a + t), a = 1 or 2, t = x - a (exact) small, from its Taylor series:
    lgamma(1 + t) = -gamma t + sum_k>=2 (-1)^k zeta(k) t^k / k, and lgamma(2 + t) the same with
    1 - gamma and zeta(k) - 1. For |t| < 0.01 the terms past k = 12 are below 1e-20 of the sum;
    float64 carries the rest to ~1e-16 relative (no cancellation: t^k / k shrinks fast)."""
    import scipy.special
    t = x.astype(np.float64) - a
    total = np.zeros_like(t)
    for k in range(16, 1, -1):
        c = scipy.special.zetac(k) if a == 2 else scipy.special.zeta(k)
        total = total * t + (-1.0) ** k * c / k
    lead = 1.0 - np.euler_gamma if a == 2 else -np.euler_gamma
    return t * (lead + t * total) + 0.0       # (+0 at t = 0, as lgamma(1) = lgamma(2) = +0)


# lgamma's zeros below -2 (two in each (-n-1, -n), n = 2..9, from mpmath; below -10 no float32
# is close enough to a zero for its value to be small), rounded to float32.
_LGAMMA_NEGATIVE_ZEROS = (-2.4570247, -2.7476826, -3.1435809, -3.9552943, -4.0393618, -4.9915446,
                          -5.0082182, -5.9986075, -6.0013853, -6.9998015, -7.0001983,
                          -7.9999752, -8.0000248, -8.9999972, -9.0000028, -9.9999997)


def _float32_window(center, half_width):
    bits = np.array([center], np.float32).view(np.int32)[0]
    return np.arange(bits - half_width, bits + half_width + 1, dtype=np.int32).view(np.float32)


def test_lgamma_next_to_its_zeros():
    # The 40,001 float32s nearest each zero. Next to 1 and 2 the reference is lgamma's Taylor
    # series (SciPy's gammaln is off by up to 2.4e-9 relative there, 0.024 ulp of float32);
    # next to the negative zeros it is SciPy's gammaln, accurate there in absolute terms (within
    # 1.8e-15 of mpmath at 50 digits, 0.007 ulp of float32). Against mpmath, lgamma_f32 is 0.50
    # ulp at most next to all of them.
    for a in (1, 2):
        x = _float32_window(a, 20_000)
        check_against(fm.lgamma_f32, x, _lgamma_near_one_or_two(x, a),
                      fm.ULP_BOUNDS[fm.lgamma_f32])
    x = np.concatenate([_float32_window(z, 20_000) for z in _LGAMMA_NEGATIVE_ZEROS])
    check_against(fm.lgamma_f32, x, _lgamma_ref(x.astype(np.float64)),
                  fm.ULP_BOUNDS[fm.lgamma_f32])


def test_ndtri_next_to_one_half_below_one_and_at_denormals():
    # The whole-range sweep has only 279 points in [0.49, 0.51] (x small, from q = p - 1/2) and 8
    # in [1 - 2^-10, 1) (x up to 5.3, from 1 - p); here every 3rd float32 of the first, every
    # float32 of the second and every 64th positive denormal (x down to -14.12): 0.50006,
    # 0.49997 and 0.50010 ulp worst. (Every float32 in [0, 1], once: 0.50014 ulp worst.)
    lo, hi = np.float32(0.49).view(np.int32), np.float32(0.51).view(np.int32)
    near_half = np.arange(lo, hi + 1, 3, dtype=np.int32).view(np.float32)
    below_one = np.arange(np.float32(1 - 2 ** -10).view(np.int32),
                          np.float32(1.0).view(np.int32), dtype=np.int32).view(np.float32)
    denormals = np.arange(1, 2 ** 23, 64, dtype=np.int32).view(np.float32)
    for x in (near_half, below_one, denormals):
        check_against(fm.ndtri_f32, x, _ndtri_ref(x.astype(np.float64)),
                      fm.ULP_BOUNDS[fm.ndtri_f32])
    # odd symmetry where 1 - p is a float32 (p >= 1/2): x(1 - p) = -x(p) exactly
    p = below_one
    assert np.array_equal(evaluate(fm.ndtri_f32, (1 - p).astype(np.float32)),
                          -evaluate(fm.ndtri_f32, p))


def test_every_table_entry_has_a_reference_and_bound():
    for fn in list(fm.FAST_UNARY.values()) + list(fm.FAST_BINARY.values()):
        assert fn in fm.ULP_BOUNDS
        assert fn in REFERENCES_F32 or fn in REFERENCES_F64 or fn in (
            fm.pow_f32, fm.atan2_f32, fm.zeta_f32, fm.polygamma_f32)


def _zeta_negative_ref(s, q):
    """zeta(s, q) for integral s and negative non-integral q (|q| < 60): the negative terms
    summed exactly (math.fsum of their float64 values), plus SciPy's zeta at q's fractional
    part."""
    import scipy.special
    f = q - math.floor(q)
    terms = [(q + k) ** -s for k in range(int(round(f - q)))]
    return math.fsum(terms + [float(scipy.special.zeta(s, f))])


def test_zeta_f32_ulp_bound_and_special_values():
    import scipy.special
    rng = np.random.default_rng(3)
    # s from just above 1 (s - 1 down to 2^-23) to 1e4, q from 2^-40 to 2^40
    s = np.concatenate([1 + np.float32(2.0) ** -np.arange(1, 24), np.linspace(1.01, 200, 300),
                        rng.uniform(1, 30, 200), [2, 3, 4, 10, 60, 100, 1e3, 1e4]])
    q = np.concatenate([np.float32(2.0) ** np.arange(-40, 40, 0.5), np.linspace(0.01, 20, 300),
                        rng.uniform(0, 10, 200)])
    S, Q = (v.astype(np.float32).ravel() for v in np.meshgrid(s, q))
    got = evaluate2(fm.zeta_f32, S, Q)
    with np.errstate(all="ignore"):
        ref = scipy.special.zeta(S.astype(np.float64), Q.astype(np.float64))
    ref = np.where(ref > 3.5e38, np.inf, ref)
    keep = ref > 0          # (SciPy's zero where float64 underflows: float32's too)
    err = ulp_errors(got[keep], ref[keep])
    assert err.max() <= fm.ULP_BOUNDS[fm.zeta_f32], (S[keep][err.argmax()], Q[keep][err.argmax()])
    assert np.array_equal(got[~keep], np.zeros(int((~keep).sum()), np.float32))
    # q < 0 (integral s): against the exactly summed negative terms
    s = np.float32([2, 3, 4, 5, 6, 7, 10, 21])
    q = -rng.uniform(0, 50, 120).astype(np.float32)
    q = q[q != np.floor(q)]
    S, Q = (v.ravel() for v in np.meshgrid(s, q))
    got = evaluate2(fm.zeta_f32, S, Q)
    ref = np.array([_zeta_negative_ref(float(a), float(b)) for a, b in zip(S, Q)])
    ref = np.where(np.abs(ref) > 3.5e38, np.copysign(np.inf, ref), ref)
    assert ulp_errors(got, ref).max() <= fm.ULP_BOUNDS[fm.zeta_f32]
    # odd s at f = 1/2: the two sums at 1/2 cancel exactly, the value is the small third
    assert evaluate2(fm.zeta_f32, np.float32([5.0]), np.float32([-3.5]))[0] == np.float32(
        math.fsum([(-3.5 + k) ** -5 for k in range(4)] + [float(scipy.special.zeta(5, 0.5))]))
    # special values, as lax.zeta's scalar kernel (and JAX): s = 1 -> inf; s < 1, nan, inf ->
    # nan; a pole (q = 0, -1, ...) -> inf for even integral s, else nan; q < 0 -> nan unless s
    # is integral
    cases = [(1.0, 0.5, np.inf), (1.0, -2.0, np.inf), (0.5, 1.0, np.nan), (np.nan, 1.0, np.nan),
             (2.0, np.nan, np.nan), (np.inf, 1.0, np.nan), (2.0, np.inf, np.nan),
             (2.0, -np.inf, np.inf), (2.0, 0.0, np.inf), (2.0, -0.0, np.inf),
             (4.0, -3.0, np.inf), (3.0, 0.0, np.nan), (2.5, -1.0, np.nan), (2.5, -0.5, np.nan),
             (2.0, 1e-30, np.inf), (3.0, 3e38, 0.0), (1e30, 1.0, 1.0), (1e30, 0.5, np.inf),
             (1e30, 2.0, 0.0)]
    s, q, want = (np.array(c, np.float32) for c in zip(*cases))
    got = evaluate2(fm.zeta_f32, s, q)
    assert np.array_equal(got, want, equal_nan=True), list(zip(s, q, got, want))


def test_polygamma_f32_ulp_bound_and_special_values():
    import scipy.special
    n = np.float32([1, 2, 3, 4, 5, 8, 12, 20])
    x = np.concatenate([np.float32(2.0) ** np.arange(-20, 30, 0.25),
                        np.linspace(0.01, 30, 500)]).astype(np.float32)
    N, X = (v.ravel() for v in np.meshgrid(n, x))
    got = evaluate2(fm.polygamma_f32, N, X)
    with np.errstate(all="ignore"):
        ref = scipy.special.polygamma(N.astype(int), X.astype(np.float64))
    ref = np.where(np.abs(ref) > 3.5e38, np.copysign(np.inf, ref), ref)
    keep = ref != 0
    assert ulp_errors(got[keep], ref[keep]).max() <= fm.ULP_BOUNDS[fm.polygamma_f32]
    assert np.array_equal(got[~keep], ref[~keep].astype(np.float32))
    # negative x: (-1)^(n+1) n! zeta(n + 1, x), the zeta summed exactly as above
    x = -np.random.default_rng(4).uniform(0, 20, 60).astype(np.float32)
    N, X = (v.ravel() for v in np.meshgrid(n[:5], x))
    got = evaluate2(fm.polygamma_f32, N, X)
    ref = np.array([(-1.0) ** (k + 1) * math.factorial(int(k)) *
                    _zeta_negative_ref(float(k) + 1, float(v)) for k, v in zip(N, X)])
    assert ulp_errors(got, ref).max() <= fm.ULP_BOUNDS[fm.polygamma_f32]
    # n = 0 is digamma; n not a non-negative integer, nan; the poles as zeta's
    x = np.float32([0.3, -2.5, 7.0])
    assert np.array_equal(evaluate2(fm.polygamma_f32, np.zeros(3, np.float32), x),
                          evaluate(fm.digamma_f32, x))
    cases = [(1.5, 2.0, np.nan), (-1.0, 2.0, np.nan), (np.nan, 2.0, np.nan), (1.0, np.nan, np.nan),
             (1.0, 0.0, np.inf), (1.0, -3.0, np.inf), (2.0, 0.0, np.nan), (3.0, -1.0, np.inf),
             (1.0, np.inf, np.nan), (200.0, 0.5, -np.inf)]
    n, x, want = (np.array(c, np.float32) for c in zip(*cases))
    got = evaluate2(fm.polygamma_f32, n, x)
    assert np.array_equal(got, want, equal_nan=True), list(zip(n, x, got, want))


@pytest.mark.parametrize("fn", [fm.zeta_f32, fm.polygamma_f32], ids=["zeta", "polygamma"])
def test_loops_calling_zeta_vectorize(fn):
    llvm = loop_llvm(fn, arity=2)
    assert re.search(r"<\d+ x double>", llvm)


def test_atan2_f32_ulp_bound_and_special_cases():
    # every quadrant, ratios from denormal to huge, and C99's table: signed zeros, infinities
    rng = np.random.default_rng(2)
    n = 200_000
    y = np.concatenate([X32[::4], rng.standard_normal(n).astype(np.float32)])
    x = np.resize(rng.permutation(np.concatenate(
        [X32[::4], rng.standard_normal(n).astype(np.float32)])), y.size)
    specials = np.array([0.0, -0.0, 1.0, -1.0, 1e-45, -1e-45, 3.4e38, -3.4e38, np.inf, -np.inf,
                         np.nan], np.float32)
    sy, sx = np.meshgrid(specials, specials)
    y, x = np.concatenate([y, sy.ravel()]), np.concatenate([x, sx.ravel()])
    with np.errstate(invalid="ignore"):
        ref = np.arctan2(y.astype(np.float64), x.astype(np.float64))
    got = evaluate2(fm.atan2_f32, y, x)
    nan_ref = np.isnan(ref)
    assert np.array_equal(nan_ref, np.isnan(got))
    exact = np.zeros(y.size, bool)     # C99's table: the float32 of the exact result
    exact[-sx.size:] = True
    exact &= ~nan_ref
    bad = exact & ((got != ref.astype(np.float32)) | (np.signbit(got) != np.signbit(ref)))
    assert not bad.any(), (y[bad][:5], x[bad][:5], got[bad][:5])
    err = ulp_errors(got[~nan_ref], ref[~nan_ref])
    print(f"atan2_f32: max {err.max():.3f} ulp (bound {fm.ULP_BOUNDS[fm.atan2_f32]})")
    assert err.max() <= fm.ULP_BOUNDS[fm.atan2_f32]
    llvm = loop_llvm(fm.atan2_f32, arity=2)
    assert re.search(r"<\d+ x (float|double)>", llvm)


SPECIAL = [
    (fm.exp_f32, [(np.inf, np.inf), (-np.inf, 0.0), (np.nan, np.nan), (0.0, 1.0), (-0.0, 1.0),
                  (88.8, np.inf), (-104.0, 0.0), (1e-45, 1.0)]),
    (fm.expm1_f32, [(np.inf, np.inf), (-np.inf, -1.0), (np.nan, np.nan), (-0.0, -0.0), (0.0, 0.0),
                    (1e-45, 1e-45), (-1e-45, -1e-45), (89.0, np.inf)]),
    (fm.log_f32, [(0.0, -np.inf), (-0.0, -np.inf), (-1e-45, np.nan), (-np.inf, np.nan),
                  (np.inf, np.inf), (np.nan, np.nan), (1.0, 0.0)]),
    (fm.erf_inv_f32, [(1.0, np.inf), (-1.0, -np.inf), (1.5, np.nan), (-np.inf, np.nan),
                       (np.nan, np.nan), (0.0, 0.0), (-0.0, -0.0)]),
    (fm.log1p_f32, [(-1.0, -np.inf), (-1.5, np.nan), (np.inf, np.inf), (np.nan, np.nan),
                    (-0.0, -0.0), (0.0, 0.0), (1e-45, 1e-45)]),
    (fm.log2_f32, [(2.0 ** -149, -149.0), (2.0 ** 127, 127.0), (0.0, -np.inf), (np.inf, np.inf)]),
    (fm.tanh_f32, [(np.inf, 1.0), (-np.inf, -1.0), (np.nan, np.nan), (-0.0, -0.0), (0.0, 0.0)]),
    (fm.logistic_f32, [(np.inf, 1.0), (-np.inf, 0.0), (np.nan, np.nan), (0.0, 0.5)]),
    (fm.softplus_f32, [(np.inf, np.inf), (-np.inf, 0.0), (np.nan, np.nan), (1e4, 1e4)]),
    (fm.erf_f32, [(np.inf, 1.0), (-np.inf, -1.0), (np.nan, np.nan), (-0.0, -0.0), (0.0, 0.0)]),
    (fm.erfc_f32, [(np.inf, 0.0), (-np.inf, 2.0), (np.nan, np.nan), (0.0, 1.0), (11.0, 0.0)]),
    (fm.erfcx_f32, [(np.inf, 0.0), (-np.inf, np.inf), (np.nan, np.nan), (0.0, 1.0), (-0.0, 1.0),
                    (-9.4, np.inf), (1e38, 5.6418967e-39), (3.4028235e38, 1.6580037e-39)]),
    (fm.sin_f32, [(np.inf, np.nan), (-np.inf, np.nan), (np.nan, np.nan), (-0.0, -0.0),
                  (1e-45, 1e-45)]),
    (fm.cos_f32, [(np.inf, np.nan), (np.nan, np.nan), (-0.0, 1.0), (1e-45, 1.0)]),
    (fm.tan_f32, [(np.inf, np.nan), (-np.inf, np.nan), (np.nan, np.nan), (-0.0, -0.0),
                  (0.0, 0.0), (1e-45, 1e-45), (-1e-45, -1e-45)]),
    (fm.atan_f32, [(np.inf, np.float32(np.pi / 2)), (-np.inf, -np.float32(np.pi / 2)),
                   (np.nan, np.nan), (-0.0, -0.0), (0.0, 0.0), (1e-45, 1e-45), (1.0,
                   np.float32(np.pi / 4)), (-3.4028235e38, -np.float32(np.pi / 2))]),
    (fm.asin_f32, [(1.0, np.float32(np.pi / 2)), (-1.0, -np.float32(np.pi / 2)),
                   (1.0000001, np.nan), (-np.inf, np.nan), (np.nan, np.nan), (-0.0, -0.0),
                   (0.0, 0.0), (1e-45, 1e-45)]),
    (fm.atanh_f32, [(1.0, np.inf), (-1.0, -np.inf), (1.0000001, np.nan), (-np.inf, np.nan),
                    (np.nan, np.nan), (-0.0, -0.0), (0.0, 0.0), (1e-45, 1e-45),
                    (-1e-45, -1e-45)]),
    (fm.digamma_f32, [(0.0, np.nan), (-0.0, np.nan), (-3.0, np.nan), (-8388608.0, np.nan),
                      (np.inf, np.inf), (-np.inf, np.nan), (np.nan, np.nan), (1.0, -0.5772157),
                      (2.0 ** -149, -np.inf), (-2.0 ** -149, np.inf)]),
    (fm.lgamma_f32, [(0.0, np.inf), (-0.0, np.inf), (-1.0, np.inf), (-8388608.0, np.inf),
                     (-3e38, np.inf), (np.inf, np.inf), (-np.inf, np.inf), (np.nan, np.nan),
                     (1.0, 0.0), (2.0, 0.0), (1e-40, 92.103409), (3e38, np.inf),
                     (-2.5, -0.056243718), (4e36, 3.3311742e38), (1e-45, 103.27893),
                     (-1e-45, 103.27893), (0.5, 0.5723649), (-0.5, 1.2655121)]),
    (fm.bessel_i0e_f32, [(0.0, 1.0), (-0.0, 1.0), (np.inf, 0.0), (-np.inf, 0.0),
                         (np.nan, np.nan), (1e-45, 1.0)]),
    (fm.bessel_i1e_f32, [(0.0, 0.0), (-0.0, -0.0), (np.inf, 0.0), (-np.inf, -0.0),
                         (np.nan, np.nan), (1e-45, 0.0)]),
    (fm.ndtri_f32, [(0.0, -np.inf), (-0.0, -np.inf), (1.0, np.inf), (0.5, 0.0), (-1e-45, np.nan),
                    (1.0000001, np.nan), (np.inf, np.nan), (-np.inf, np.nan), (np.nan, np.nan),
                    (1e-45, -14.121427), (0.99999994, 5.294704), (0.0625, -1.5341206)]),
    (fm.acosh_f32, [(1.0, 0.0), (0.99999994, np.nan), (-1.0, np.nan), (np.inf, np.inf),
                    (-np.inf, np.nan), (np.nan, np.nan), (3.4028235e38, 89.415985)]),
    (fm.acos_f32, [(1.0, 0.0), (-1.0, np.float32(np.pi)), (0.0, np.float32(np.pi / 2)),
                   (-0.0, np.float32(np.pi / 2)), (-1.0000001, np.nan), (np.inf, np.nan),
                   (np.nan, np.nan)]),
    (fm.sinh_f32, [(np.inf, np.inf), (-np.inf, -np.inf), (np.nan, np.nan), (-0.0, -0.0),
                   (0.0, 0.0), (1e-45, 1e-45), (-1e-45, -1e-45), (89.41, 3.3825267e38),
                   (89.42, np.inf), (-89.42, -np.inf)]),
    (fm.cosh_f32, [(np.inf, np.inf), (-np.inf, np.inf), (np.nan, np.nan), (-0.0, 1.0),
                   (0.0, 1.0), (1e-45, 1.0), (-89.41, 3.3825267e38), (89.42, np.inf)]),
    (fm.asinh_f32, [(np.inf, np.inf), (-np.inf, -np.inf), (np.nan, np.nan), (-0.0, -0.0),
                    (0.0, 0.0), (1e-45, 1e-45), (-1e-45, -1e-45),
                    (3.4028235e38, 89.415985), (-3.4028235e38, -89.415985)]),
    (fm.cbrt_f32, [(np.inf, np.inf), (-np.inf, -np.inf), (np.nan, np.nan), (-0.0, -0.0),
                   (0.0, 0.0), (8.0, 2.0), (-27.0, -3.0), (1e-45, 1.1190347e-15),
                   (-1e-45, -1.1190347e-15), (3.4028235e38, 6.9814636e12)]),
    (fm.exp_f64, [(np.inf, np.inf), (-np.inf, 0.0), (np.nan, np.nan), (709.8, np.inf),
                  (-746.0, 0.0), (5e-324, 1.0)]),
    (fm.expm1_f64, [(-np.inf, -1.0), (-0.0, -0.0), (5e-324, 5e-324), (-50.0, -1.0)]),
    (fm.log_f64, [(0.0, -np.inf), (-5e-324, np.nan), (np.inf, np.inf), (1.0, 0.0),
                  (np.nan, np.nan)]),
    (fm.log1p_f64, [(-1.0, -np.inf), (-2.0, np.nan), (-0.0, -0.0), (np.inf, np.inf)]),
    (fm.tanh_f64, [(np.inf, 1.0), (-np.inf, -1.0), (-0.0, -0.0), (np.nan, np.nan)]),
    (fm.logistic_f64, [(np.inf, 1.0), (-np.inf, 0.0), (np.nan, np.nan)]),
    (fm.softplus_f64, [(np.inf, np.inf), (-np.inf, 0.0), (np.nan, np.nan)]),
]


@pytest.mark.parametrize("fn,cases", SPECIAL, ids=lambda v: getattr(v, "__name__", ""))
def test_special_values(fn, cases):
    dtype = fn_dtype(fn)
    x = np.array([c[0] for c in cases], dtype)
    want = np.array([c[1] for c in cases], dtype)
    got = check_special_values(fn, x, want)
    # The scalar dispatcher agrees with the loop.
    for xi, gi in zip(x, got):
        scalar = fn(xi)
        assert (np.isnan(scalar) and np.isnan(gi)) or scalar == gi


@pytest.mark.parametrize("fn", list(fm.FAST_UNARY.values()), ids=lambda f: f.__name__)
def test_loops_calling_it_vectorize(fn):
    """The LLVM IR of an elementwise loop over the function has vector float operations, i.e.
    no scalar call blocks the loop vectorizer."""
    llvm = loop_llvm(fn)
    scalar = "double" if fn_dtype(fn) == np.float64 else "float"
    widths = {int(w) for w in re.findall(rf"<(\d+) x {scalar}>", llvm)}
    assert widths and max(widths) >= 2, f"{fn.__name__}: no <N x {scalar}> in the loop's IR"


def test_loops_calling_pow_vectorize():
    llvm = loop_llvm(fm.pow_f32, arity=2)
    assert re.search(r"<\d+ x (float|double)>", llvm)


def test_lookup_and_import_line():
    assert fm.lookup("exp", np.float32) is fm.exp_f32
    assert fm.lookup("exp", "float32") is fm.exp_f32
    assert fm.lookup("logistic", np.dtype("float32")) is fm.logistic_f32
    assert fm.lookup("exp", "int32") is None
    assert fm.lookup("no_such_primitive", "float32") is None
    line = fm.import_line(fm.exp_f32, fm.log_f32, fm.exp_f32)
    assert line == "from corejax.compiler.fastmath import exp_f32, log_f32"
    namespace = {}
    exec(line, namespace)
    assert namespace["exp_f32"] is fm.exp_f32


def test_special_values_survive_fastmath_callers():
    @njit(fastmath=True, error_model="numpy")
    def kernel(x, out):
        for i in range(x.size):
            out[i] = fm.exp_f32(x[i]) + fm.log_f32(x[i])
    x = np.array([np.nan, np.inf, 0.0, -1.0, 1.0], np.float32)
    out = np.empty_like(x)
    kernel(x, out)
    assert np.isnan(out[0]) and out[1] == np.inf and out[2] == -np.inf and np.isnan(out[3])
    assert out[4] == np.float32(np.e)


GENERATED = '''
import numba
import numpy as np
{imports}

@numba.njit(cache=True, error_model="numpy")
def selu_kernel(x, out):
    for i in range(x.size):
        v = x[i]
        out[i] = np.float32(1.0507009873554805) * (
            v if v > 0 else np.float32(1.6732632423543772) * expm1_f32(v)) + sin_f32(v)
'''

LOADER = '''
import importlib.util, sys
import numpy as np
spec = importlib.util.spec_from_file_location("gen_selu_kernel", sys.argv[1])
module = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = module          # before exec_module, or the cache cannot be reloaded
spec.loader.exec_module(module)
x = np.linspace(-5, 5, 1001).astype(np.float32)
out = np.empty_like(x)
module.selu_kernel(x, out)
stats = module.selu_kernel.stats
print(len(stats.cache_hits), len(stats.cache_misses), repr(float(out[0])), repr(float(out[-1])))
'''


def test_generated_kernel_caches_across_processes(tmp_path):
    source = tmp_path / "gen_selu_kernel.py"
    source.write_text(GENERATED.format(imports=fm.import_line(fm.expm1_f32, fm.sin_f32)))
    loader = tmp_path / "loader.py"
    loader.write_text(LOADER)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    repo = os.path.dirname(os.path.dirname(os.path.abspath(fm.__file__)))
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(repo), env.get("PYTHONPATH", "")])
    runs = []
    for _ in range(2):
        done = subprocess.run([sys.executable, str(loader), str(source)], env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        runs.append(done.stdout.split())
    (hits0, misses0, *values0), (hits1, misses1, *values1) = runs
    assert (hits0, misses0) == ("0", "1")
    assert (hits1, misses1) == ("1", "0")
    assert values0 == values1
    want = 1.0507009873554805 * 1.6732632423543772 * math.expm1(-5.0) + math.sin(-5.0)
    assert abs(float(values0[0]) - want) <= 1e-6
    assert abs(float(values0[1]) - (1.0507009873554805 * 5.0 + math.sin(5.0))) <= 1e-6
