"""corejax's own float32 GEMM (corejax/compiler/sgemm.py) against np.matmul on NumPy's OpenBLAS,
one thread each, on the products of the MNIST models and a square one (asserts nothing).

    OPENBLAS_NUM_THREADS=1 python bench/bench_sgemm_kernel.py [--micro]

Each row: the product's shape and operand layouts (lhs^T / rhs^T: read transposed, as the
backward pass reads them), the medians of `sgemm.product` and np.matmul taken alternately, the
GFLOP/s of each, their ratio (below 1: corejax faster) and corejax's largest error relative to
the float64 product. Which OpenBLAS kernels run is printed first: with
OPENBLAS_CORETYPE=Haswell (as on the 2-core Zen 5 test machines) its AVX2 ones.

--micro also times the micro-kernel alone, on operands that stay in L1 (its peak).
"""
import argparse
import os
import time

import numpy as np
from numba import njit

from corejax.compiler import sgemm

SHAPES = [  # (m, k, n, lhs transposed, rhs transposed)
    (128, 784, 512, False, False), (128, 512, 512, False, False),
    (784, 128, 512, True, False), (128, 512, 784, False, True),
    (1024, 1024, 1024, False, False), (25088, 288, 64, False, False),
    (128, 512, 10, False, False), (512, 128, 10, True, False), (128, 10, 512, False, True)]


def _operands(rng, m, k, n, ta, tb):
    a = rng.standard_normal((k, m) if ta else (m, k), dtype=np.float32)
    b = rng.standard_normal((n, k) if tb else (k, n), dtype=np.float32)
    return (a.T if ta else a), (b.T if tb else b)


def compare(m, k, n, ta, tb, reps=15):
    """Medians of sgemm.product and np.matmul on one product, alternating; one line."""
    a, b = _operands(np.random.default_rng(0), m, k, n, ta, tb)
    c = np.empty((m, n), np.float32)
    sgemm.product(a, b, c)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    err = np.abs(c - ref).max() / np.abs(ref).max()
    ours, theirs = [], []
    for _ in range(reps):
        t = time.perf_counter()
        sgemm.product(a, b, c)
        ours.append(time.perf_counter() - t)
        t = time.perf_counter()
        np.matmul(a, b, out=c)
        theirs.append(time.perf_counter() - t)
    flop = 2.0 * m * k * n
    o, p = np.median(ours), np.median(theirs)
    name = f"{m}x{k}{'^T' if ta else ''} @ {k}x{n}{'^T' if tb else ''}"
    print(f"{name:26s} {o * 1e6:9.0f} {flop / o / 1e9:7.0f} {p * 1e6:11.0f} "
          f"{flop / p / 1e9:7.0f} {o / p:6.2f} {err:9.1e}")


@njit(cache=False)
def _micro_loop(a, b, c, kc, reps, tiles):
    for _ in range(reps):
        for t in range(tiles):
            sgemm._micro(a, t * kc * sgemm.MR, 1, sgemm.MR, b, 0, c, 0, sgemm.NR, kc,
                         sgemm.MR, sgemm.ADD, np.float32(1), np.float32(0))


def micro_peak(kc=256, tiles=8, reps=2000):
    """GFLOP/s of the micro-kernel alone on packed operands in L1 (median of 7)."""
    rng = np.random.default_rng(0)
    a = rng.random(kc * sgemm.MR * tiles, dtype=np.float32)
    b = rng.random(kc * sgemm.NR, dtype=np.float32)
    c = np.zeros(sgemm.MR * sgemm.NR, np.float32)
    _micro_loop(a, b, c, kc, 1, 1)
    times = []
    for _ in range(7):
        t = time.perf_counter()
        _micro_loop(a, b, c, kc, reps, tiles)
        times.append(time.perf_counter() - t)
    flop = 2.0 * sgemm.MR * sgemm.NR * kc * tiles * reps
    print(f"micro-kernel alone ({sgemm.MR} x {sgemm.NR} tile): "
          f"{flop / np.median(times) / 1e9:.0f} GFLOP/s on one core")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--micro", action="store_true", help="also time the micro-kernel alone")
    args = ap.parse_args()
    print(f"OpenBLAS kernels: OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE')}, "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}")
    if args.micro:
        micro_peak()
    print(f"{'product':26s} {'ours us':>9s} {'GFLOP/s':>7s} {'np.matmul us':>11s} {'GFLOP/s':>7s} "
          f"{'ratio':>6s} {'rel err':>9s}")
    for shape in SHAPES:
        compare(*shape)
