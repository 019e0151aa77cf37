"""Throughput of corejax.compiler.fastmath against math.* in Numba loops and against NumPy.

    python bench/bench_fastmath.py [--n 1048576] [--repeats 31]

Prints milliseconds per call (median of the repeats, after a warm-up call) and ratios; >1 in a
"x faster" column means the fastmath loop wins. No assertions: benchmarks are not tests.
"""
import argparse
import math
import os
import sys
import time

import numpy as np
from numba import njit

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


def libm(name):
    fn = getattr(math, name)

    @njit(error_model="numpy")
    def scalar(v):
        return np.float32(fn(v))
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


# name -> (fastmath function, math.* name or None, NumPy (x, out) or None, input range)
FUNCTIONS = {
    "exp": (fm.exp_f32, "exp", lambda x, o: np.exp(x, out=o), (-80, 80)),
    "exp2": (fm.exp2_f32, "exp2", lambda x, o: np.exp2(x, out=o), (-120, 120)),
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
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1 << 20)
    parser.add_argument("--repeats", type=int, default=31)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    reps = args.repeats

    x = rng.standard_normal(args.n).astype(np.float32)
    out = np.empty_like(x)
    print(f"fused selu over {args.n} float32 (median of {reps}, ms)")
    libm_ms = median_ms(selu_libm, x, out, repeats=reps)
    numpy_ms = median_ms(selu_numpy, x, out, repeats=reps)
    print(f"{'variant':<28}{'ms':>9}{'vs libm':>10}{'vs NumPy':>10}")
    for name, fn in [("Numba + math.exp", selu_libm), ("Numba + fastmath exp_f32", selu_fast_exp),
                     ("Numba + fastmath expm1_f32", selu_fast_expm1), ("NumPy", selu_numpy)]:
        ms = median_ms(fn, x, out, repeats=reps)
        print(f"{name:<28}{ms:9.3f}{libm_ms / ms:9.2f}x{numpy_ms / ms:9.2f}x")

    print(f"\nper function over {args.n} float32 (median of {reps}, ms; 'x faster' = other/fastmath)")
    print(f"{'function':<10}{'fastmath':>10}{'math.*':>10}{'NumPy':>10}"
          f"{'vs math.*':>12}{'vs NumPy':>11}")
    for name, (fast, math_name, numpy_fn, (lo, hi)) in FUNCTIONS.items():
        x = rng.uniform(lo, hi, args.n).astype(np.float32)
        out = np.empty_like(x)
        fast_ms = median_ms(elementwise(fast), x, out, repeats=reps)
        cells = [f"{fast_ms:10.3f}"]
        ratios = []
        for other in (elementwise(libm(math_name)) if math_name and hasattr(math, math_name)
                      else None, numpy_fn):
            if other is None:
                cells.append(f"{'n/a':>10}")
                ratios.append(f"{'':>11}")
            else:
                ms = median_ms(other, x, out, repeats=reps)
                cells.append(f"{ms:10.3f}")
                ratios.append(f"{ms / fast_ms:10.2f}x")
        print(f"{name:<10}{''.join(cells)}  {ratios[0]}{ratios[1]}")


if __name__ == "__main__":
    main()
