"""Throughput of corejax.compiler.fastmath against math.* in Numba loops and against NumPy.

    python bench/bench_fastmath.py [--n 1048576] [--repeats 31] [--wide]

Prints milliseconds per call (median of the repeats, after a warm-up call) and ratios; in the
"vs" columns >1 means the fastmath loop is faster. No assertions: benchmarks are not tests.

--wide lets LLVM use 512-bit vectors on AVX-512 hosts (by default it prefers 256-bit ones there):
it sets NUMBA_CPU_FEATURES to the host's features plus "-prefer-256-bit" before Numba is imported.
That is a process-wide compiler setting, so it is the compiler's to make, not fastmath's.
"""
import argparse
import math
import os
import sys
import time

import numpy as np


def _parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1 << 20)
    parser.add_argument("--repeats", type=int, default=31)
    parser.add_argument("--wide", action="store_true", help="allow 512-bit vectors")
    return parser.parse_args()


ARGS = _parse_args()
if ARGS.wide:
    import llvmlite.binding as llvm
    os.environ["NUMBA_CPU_FEATURES"] = llvm.get_host_cpu_features().flatten() + ",-prefer-256-bit"

from numba import njit  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from corejax.compiler import fastmath as fm  # noqa: E402

SELU_ALPHA = np.float32(1.6732632423543772)
SELU_SCALE = np.float32(1.0507009873554805)


def median_ms(fn, *args, repeats):
    fn(*args)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return 1e3 * float(np.median(times))


def elementwise(scalar_fn):
    @njit(error_model="numpy")
    def loop(x, out):
        for i in range(x.size):
            out[i] = scalar_fn(x[i])
    return loop


def libm(name, dtype):
    fn = getattr(math, name)
    cast = np.float32 if dtype == np.float32 else np.float64

    @njit(error_model="numpy")
    def scalar(v):
        return cast(fn(v))
    return scalar


@njit(error_model="numpy")
def selu_libm(x, out):
    for i in range(x.size):
        v = x[i]
        out[i] = SELU_SCALE * (v if v > 0 else SELU_ALPHA * (np.float32(math.exp(v)) - np.float32(1)))


@njit(error_model="numpy")
def selu_fast_exp(x, out):
    for i in range(x.size):
        v = x[i]
        out[i] = SELU_SCALE * (v if v > 0 else SELU_ALPHA * (fm.exp_f32(v) - np.float32(1)))


@njit(error_model="numpy")
def selu_fast_expm1(x, out):
    for i in range(x.size):
        v = x[i]
        out[i] = SELU_SCALE * (v if v > 0 else SELU_ALPHA * fm.expm1_f32(v))


def selu_numpy(x, out):
    np.multiply(SELU_SCALE, np.where(x > 0, x, SELU_ALPHA * np.expm1(x)), out=out)


def numpy_logistic(x, out):
    np.exp(-x, out=out)
    out += 1
    np.reciprocal(out, out=out)


@njit(error_model="numpy")
def pow_fast(x, y, out):
    for i in range(x.size):
        out[i] = fm.pow_f32(x[i], y[i])


@njit(error_model="numpy")
def pow_libm(x, y, out):
    for i in range(x.size):
        out[i] = np.float32(math.pow(x[i], y[i]))


def pow_numpy(x, y, out):
    np.power(x, y, out=out)


# name -> (fastmath function, math.* name or None, NumPy (x, out) or None, input range);
# a name ending in "f64" runs on float64 arrays.
FUNCTIONS = {
    "exp": (fm.exp_f32, "exp", lambda x, o: np.exp(x, out=o), (-80, 80)),
    "exp2": (fm.exp2_f32, None, lambda x, o: np.exp2(x, out=o), (-120, 120)),
    "expm1": (fm.expm1_f32, "expm1", lambda x, o: np.expm1(x, out=o), (-10, 10)),
    "log": (fm.log_f32, "log", lambda x, o: np.log(x, out=o), (1e-6, 1e6)),
    "log2": (fm.log2_f32, "log2", lambda x, o: np.log2(x, out=o), (1e-6, 1e6)),
    "log10": (fm.log10_f32, "log10", lambda x, o: np.log10(x, out=o), (1e-6, 1e6)),
    "log1p": (fm.log1p_f32, "log1p", lambda x, o: np.log1p(x, out=o), (-0.9, 10)),
    "tanh": (fm.tanh_f32, "tanh", lambda x, o: np.tanh(x, out=o), (-5, 5)),
    "logistic": (fm.logistic_f32, None, numpy_logistic, (-10, 10)),
    "softplus": (fm.softplus_f32, None, lambda x, o: np.logaddexp(x, np.float32(0), out=o),
                 (-10, 10)),
    "erf": (fm.erf_f32, "erf", None, (-4, 4)),
    "erfc": (fm.erfc_f32, "erfc", None, (-4, 9)),
    "sin": (fm.sin_f32, "sin", lambda x, o: np.sin(x, out=o), (-100, 100)),
    "cos": (fm.cos_f32, "cos", lambda x, o: np.cos(x, out=o), (-100, 100)),
    "exp f64": (fm.exp_f64, "exp", lambda x, o: np.exp(x, out=o), (-700, 700)),
    "expm1 f64": (fm.expm1_f64, "expm1", lambda x, o: np.expm1(x, out=o), (-10, 10)),
    "log f64": (fm.log_f64, "log", lambda x, o: np.log(x, out=o), (1e-6, 1e6)),
    "log1p f64": (fm.log1p_f64, "log1p", lambda x, o: np.log1p(x, out=o), (-0.9, 10)),
    "tanh f64": (fm.tanh_f64, "tanh", lambda x, o: np.tanh(x, out=o), (-5, 5)),
    "logistic f64": (fm.logistic_f64, None, numpy_logistic, (-10, 10)),
}


def row(name, fast_ms, others):
    cells = f"{name:<14}{fast_ms:10.3f}"
    ratios = ""
    for ms in others:
        cells += f"{'n/a':>10}" if ms is None else f"{ms:10.3f}"
        ratios += f"{'':>11}" if ms is None else f"{ms / fast_ms:10.2f}x"
    print(cells + "  " + ratios)


def main():
    args, reps = ARGS, ARGS.repeats
    rng = np.random.default_rng(0)
    print(f"vectors: {'512-bit allowed (--wide)' if args.wide else 'LLVM default width'}")

    x = rng.standard_normal(args.n).astype(np.float32)
    out = np.empty_like(x)
    print(f"\nfused selu over {args.n} float32 (median of {reps}, ms)")
    libm_ms = median_ms(selu_libm, x, out, repeats=reps)
    numpy_ms = median_ms(selu_numpy, x, out, repeats=reps)
    print(f"{'variant':<28}{'ms':>9}{'vs libm':>10}{'vs NumPy':>10}")
    for name, fn in [("Numba + math.exp", selu_libm), ("Numba + fastmath exp_f32", selu_fast_exp),
                     ("Numba + fastmath expm1_f32", selu_fast_expm1), ("NumPy", selu_numpy)]:
        ms = median_ms(fn, x, out, repeats=reps)
        print(f"{name:<28}{ms:9.3f}{libm_ms / ms:9.2f}x{numpy_ms / ms:9.2f}x")

    print(f"\nper function over {args.n} elements (median of {reps}, ms; vs = other / fastmath)")
    print(f"{'function':<14}{'fastmath':>10}{'math.*':>10}{'NumPy':>10}"
          f"{'vs math.*':>12}{'vs NumPy':>11}")
    for name, (fast, math_name, numpy_fn, (lo, hi)) in FUNCTIONS.items():
        dtype = np.float64 if name.endswith("f64") else np.float32
        x = rng.uniform(lo, hi, args.n).astype(dtype)
        out = np.empty_like(x)
        fast_ms = median_ms(elementwise(fast), x, out, repeats=reps)
        libm_ms = (median_ms(elementwise(libm(math_name, dtype)), x, out, repeats=reps)
                   if math_name else None)
        numpy_ms = median_ms(numpy_fn, x, out, repeats=reps) if numpy_fn else None
        row(name, fast_ms, [libm_ms, numpy_ms])

    x = rng.uniform(0, 4, args.n).astype(np.float32)
    y = rng.uniform(-8, 8, args.n).astype(np.float32)
    out = np.empty_like(x)
    fast_ms = median_ms(pow_fast, x, y, out, repeats=reps)
    row("pow", fast_ms, [median_ms(pow_libm, x, y, out, repeats=reps),
                         median_ms(pow_numpy, x, y, out, repeats=reps)])


if __name__ == "__main__":
    main()
