"""Vectorizable elementwise math for generated Numba kernels.

Why this exists: the registry build of llvmlite has no SVML, so ``math.exp`` (and every other
transcendental) inside a Numba loop is a scalar libm call that stops LLVM from vectorizing the
loop. The functions here are plain arithmetic, selects, bit casts, table loads and LLVM
intrinsics that have vector forms (rint, floor, fabs, fma), so a loop that calls them vectorizes.

What there is (``FAST_UNARY``, ``FAST_BINARY``; accuracy in ``ULP_BOUNDS``):
- float32: exp, exp2, expm1, log, log2, log10, log1p, tanh, logistic, softplus (log(1 + e**x),
  a composite, not a lax primitive), erf, erfc, erfcx, sin, cos, tan, sinh, cosh, asinh, cbrt,
  atan, asin, acos, atanh, acosh, digamma, lgamma, bessel_i0e, bessel_i1e, ndtri (the last
  twelve computed in float64); pow and atan2, the Hurwitz zeta and polygamma (binary, in
  float64).
- float64: exp, expm1, log, log1p, tanh, logistic, softplus.
- Beside these tables, float32 Ei and E1 (fastmath_expint), Si and Ci (fastmath_sici) and
  Dawson's integral (fastmath_dawsn), which compiler/host_special.py's loops run for the
  host-evaluated special functions.
- Everything else (float64 erf/erfc/sin/cos/log2/log10/pow/tan/atan/lgamma/...) has no entry:
  the code generator falls back to ``math.*`` (scalar, correct, slow).

How generated kernels use them::

    from corejax.compiler.fastmath import exp_f32      # fastmath.import_line(exp_f32)
    @numba.njit(cache=True, error_model="numpy")
    def kernel(x, out):
        for i in range(x.size):
            out[i] = exp_f32(x[i])

``lookup(name, dtype)`` returns the function for a lax primitive name and dtype (or None) and
``import_line(*functions)`` the source line that brings them into a generated module. The
functions live in ``fastmath_f32`` and ``fastmath_f64``, their building blocks (bit casts, LLVM
intrinsics, Horner) in ``fastmath_ops``; kernels import them from here.

Each function is its own dispatcher, ``njit(cache=True, error_model="numpy", fastmath=False,
forceinline=True)``. The flags are all set explicitly because Numba lets a callee inherit unset
flags from its first caller: with ``fastmath=False`` pinned, a ``fastmath=True`` caller cannot
make LLVM drop our nan/inf selects or reassociate the Cody-Waite reduction. ``forceinline`` marks
the compiled function ``alwaysinline`` for LLVM, which inlines it into the caller's loop before
vectorizing (without it LLVM's cost model declines the larger ones, log1p and erf, and the loop
stays scalar). ``error_model="numpy"`` keeps float division free of the ZeroDivisionError branch
that would also block vectorization; callers should use it too, for the same reason. Inlining
happens in LLVM, not in Numba's IR, so each function is typed and compiled once per process (and
loaded from Numba's disk cache after that), not once per kernel.

Vector width: on AVX-512 hosts LLVM prefers 256-bit vectors (``<8 x float>``). Compiling with
the host's CPU features plus ``-prefer-256-bit`` (``NUMBA_CPU_FEATURES``, a process-wide choice
for the compiler to make) gives 512-bit ones and 1.3-1.5x the throughput; see
bench/bench_fastmath.py --wide. fma and fmuladd are single instructions on any x86 since
Haswell and on ARMv8; a host without FMA would get scalar libm fma calls in erfc, exp2 and pow.

Conventions (tests/test_fastmath.py measures and asserts all of them):
- Arguments are converted to the function's dtype first, results have that dtype.
- Denormal inputs and outputs are computed, not flushed (no FTZ/DAZ is set anywhere).
- Special values follow C99 Annex F: exp(-inf)=0, exp(+inf)=inf, overflow -> inf, underflow -> 0
  (through the denormals, with one rounding), log(0)=-inf, log(x<0)=nan, log(inf)=inf,
  tanh(+-inf)=+-1, erf(+-inf)=+-1, sin(+-inf)=nan, nan in -> nan out, f(+-0)=+-0 for odd
  functions, and C99's table of pow special cases.
- Accuracy bounds, in units in the last place of the result's dtype, are in ``ULP_BOUNDS``.

Algorithms are the classical published ones, implemented here from their descriptions:
Cody-Waite range reduction for exp (k = rint(x/ln2), r = x - k*ln2 with ln2 split in a short
exact high part and a low part), 2^k built from the exponent bits, the exponent/mantissa split
of log around sqrt(2) (float64: log(1+f) = 2 atanh(f/(2+f))), Tang-style reconstruction for
expm1, erfc(x) = exp(-x^2)*erfcx(x) with the square carried in two floats through fma, and a
Payne-Hanek-style table reduction for sin/cos (described at its table). Every float32 polynomial
was fitted for this file: a minimax fit of the stated function on the stated interval, minimizing
the maximum *relative* error by Lawson's iteratively reweighted least squares over 4000 Chebyshev
nodes (float64, numpy), then rounded to float32 one coefficient at a time, lowest power first,
refitting the remaining ones after each rounding. Coefficients are listed highest power first
(Horner order).
"""
import numpy as np

from corejax.compiler.fastmath_f32 import (  # noqa: F401 (kernels import them from here)
    acos_f32, asin_f32, asinh_f32, atan2_f32, atan_f32, cbrt_f32, cos_f32, cosh_f32, erf_f32,
    erf_inv_f32, erfc_f32, erfcx_f32, exp2_f32, exp_f32, expm1_f32, log10_f32, log1p_f32,
    log2_f32, log_f32, logistic_f32, sin_f32, sinh_f32, softplus_f32, tan_f32, tanh_f32)
from corejax.compiler.fastmath_f64 import (  # noqa: F401
    acosh_f32, atanh_f32, bessel_i0e_f32, bessel_i1e_f32, digamma_f32, exp_f64, expm1_f64,
    lgamma_f32, log1p_f64, log_f64, logistic_f64, ndtri_f32, polygamma_f32, pow_f32, softplus_f64,
    tanh_f64, zeta_f32)

MODULE = __name__


# Tables for the code generator

FAST_UNARY = {
    ("exp", "float32"): exp_f32,
    ("exp2", "float32"): exp2_f32,
    ("expm1", "float32"): expm1_f32,
    ("log", "float32"): log_f32,
    ("log2", "float32"): log2_f32,
    ("log10", "float32"): log10_f32,
    ("log1p", "float32"): log1p_f32,
    ("tanh", "float32"): tanh_f32,
    ("logistic", "float32"): logistic_f32,
    ("softplus", "float32"): softplus_f32,
    ("erf", "float32"): erf_f32,
    ("erfc", "float32"): erfc_f32,
    ("erfcx", "float32"): erfcx_f32,
    ("erf_inv", "float32"): erf_inv_f32,
    ("sin", "float32"): sin_f32,
    ("cos", "float32"): cos_f32,
    ("sinh", "float32"): sinh_f32,
    ("cosh", "float32"): cosh_f32,
    ("asinh", "float32"): asinh_f32,
    ("cbrt", "float32"): cbrt_f32,
    ("tan", "float32"): tan_f32,
    ("atan", "float32"): atan_f32,
    ("asin", "float32"): asin_f32,
    ("acos", "float32"): acos_f32,
    ("atanh", "float32"): atanh_f32,
    ("acosh", "float32"): acosh_f32,
    ("digamma", "float32"): digamma_f32,
    ("lgamma", "float32"): lgamma_f32,
    ("bessel_i0e", "float32"): bessel_i0e_f32,
    ("bessel_i1e", "float32"): bessel_i1e_f32,
    ("ndtri", "float32"): ndtri_f32,
    ("exp", "float64"): exp_f64,
    ("expm1", "float64"): expm1_f64,
    ("log", "float64"): log_f64,
    ("log1p", "float64"): log1p_f64,
    ("tanh", "float64"): tanh_f64,
    ("logistic", "float64"): logistic_f64,
    ("softplus", "float64"): softplus_f64,
}

FAST_BINARY = {
    ("pow", "float32"): pow_f32,
    ("atan2", "float32"): atan2_f32,
    ("zeta", "float32"): zeta_f32,
    ("polygamma", "float32"): polygamma_f32,
}

# Maximum error in ulps of the result's dtype, asserted by tests/test_fastmath.py. Measured
# maxima: float32 unary functions over every 16th float32 bit pattern (2^28 inputs, all
# exponents, both signs): exp 0.79, exp2 0.83, expm1 1.47, log 0.84, log2 1.10, log10 1.14,
# log1p 1.32, tanh 1.34, logistic 1.45, softplus 1.70, erf 1.01, erfc 3.40, sin 0.50, cos 0.50,
# erf_inv 63.8 (XLA's algorithm: near +-1, x*x rounds before log1p; 6 ulp at the 99.9th
# percentile); pow_f32 0.50 on 600k (x, y) pairs; float64 on 5M random inputs plus the tests'
# bit-pattern grid, against 80-bit long double: exp 0.76, expm1 1.15, log 0.78, log1p 1.35,
# tanh 2.37, logistic 1.44, softplus 1.66; float32 cbrt 0.501 over every positive float32
# against long double; float32 digamma 0.50 on 5.2M inputs against SciPy's and next to five of
# its zeros against mpmath's; bessel_i0e / i1e 0.50013 / 0.50009 over every float32 in
# [0, 200] against SciPy's; ndtri 0.50014 over every float32 in [0, 1] against SciPy's; lgamma
# 0.50 over every 64th float32 bit pattern against SciPy's and next to 1, 2 and its sixteen
# negative zeros above -10 against mpmath's; erfcx 2.42 over the tests' inputs and 7M points of
# [-9.5, 3e38]; float32 sinh 1.53, cosh 1.12, asinh 1.58, tan / atan / asin / acos / atan2 /
# atanh / acosh 0.50 over tests/test_fastmath.py's inputs (every 4096th bit pattern, twice, and
# 300,000 random ones); zeta 0.500 over 634,000 (s, q >= 0) pairs against the scalar float64
# kernel and 0.500 over 2,600 with q < 0 against mpmath, polygamma 0.500 (n 0..30, x > 0).
ULP_BOUNDS = {
    exp_f32: 1, exp2_f32: 1, expm1_f32: 2, log_f32: 1, log2_f32: 1.5, log10_f32: 1.5, log1p_f32: 2,
    tanh_f32: 2, logistic_f32: 2, softplus_f32: 2, erf_f32: 2, erfc_f32: 4, erfcx_f32: 3,
    erf_inv_f32: 64,
    pow_f32: 1,
    sin_f32: 1, cos_f32: 1, tan_f32: 1, atan_f32: 1, atan2_f32: 1, asin_f32: 1, acos_f32: 1,
    atanh_f32: 1, acosh_f32: 1, digamma_f32: 1, bessel_i0e_f32: 1, bessel_i1e_f32: 1,
    ndtri_f32: 1, lgamma_f32: 1, zeta_f32: 1, polygamma_f32: 1,
    sinh_f32: 2, cosh_f32: 1.5, asinh_f32: 2, cbrt_f32: 1,
    exp_f64: 1, expm1_f64: 1.5, log_f64: 1, log1p_f64: 2, tanh_f64: 3, logistic_f64: 2,
    softplus_f64: 2,
}


def lookup(name, dtype):
    """The fast function for primitive `name` (a lax name: 'exp', 'log1p', 'logistic', 'pow', ...)
    on `dtype` (a NumPy dtype or its name), or None where kernels should call math.* instead."""
    key = (name, np.dtype(dtype).name)
    return FAST_UNARY.get(key) or FAST_BINARY.get(key)


def import_line(*functions):
    """The source line a generated kernel module needs to call `functions` by their names."""
    names = ", ".join(sorted({fn.__name__ for fn in functions}))
    return f"from {MODULE} import {names}"
