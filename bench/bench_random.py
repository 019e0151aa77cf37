"""Throughput of corejax.random.normal against NumPy's default_rng, float32 (and of
random.bits, the Threefry hash alone, for reference).

    python bench/bench_random.py [--n 10000000] [--repeats 5]

Prints millions of numbers per second (median of the repeats, after a warm-up call) for
corejax eager and jit (each threefry layout), NumPy's PCG64 standard_normal and, when it is
importable, JAX's normal (CPU), and the ratio to NumPy (>1 means faster than NumPy). No
assertions: benchmarks are not tests.
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import corejax  # noqa: E402
from corejax import random  # noqa: E402
from corejax.config import config  # noqa: E402


def _parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10 ** 7)
    parser.add_argument("--repeats", type=int, default=5)
    return parser.parse_args()


def median_seconds(fn, repeats):
    np.asarray(fn())  # warm-up: tracing, compilation, caches
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        np.asarray(fn())
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _jax_rows(n, repeats):
    """JAX's normal, eager and jitted, on its CPU backend (skipped when JAX is absent)."""
    try:
        import jax
    except ImportError as e:
        print(f"JAX: skipped ({e})", file=sys.stderr)
        return []
    cpu = jax.devices("cpu")[0]
    key = jax.device_put(jax.random.PRNGKey(0), cpu)
    jitted = jax.jit(lambda k: jax.random.normal(k, (n,)))
    return [(f"JAX {jax.__version__} normal eager",
             median_seconds(lambda: jax.random.normal(key, (n,)).block_until_ready(), repeats)),
            (f"JAX {jax.__version__} normal jit",
             median_seconds(lambda: jitted(key).block_until_ready(), repeats))]


def main():
    args = _parse_args()
    n, key = args.n, random.PRNGKey(0)
    rng = np.random.default_rng(0)
    rows = [("numpy default_rng standard_normal",
             median_seconds(lambda: rng.standard_normal(n, dtype=np.float32), args.repeats))]
    for partitionable in (False, True):
        config.update("threefry_partitionable", partitionable)
        layout = "partitionable" if partitionable else "default layout"
        rows.append((f"corejax normal eager ({layout})",
                     median_seconds(lambda: random.normal(key, (n,)), args.repeats)))
        jitted = corejax.jit(lambda k: random.normal(k, (n,)))
        rows.append((f"corejax normal jit ({layout})",
                     median_seconds(lambda: jitted(key), args.repeats)))
        rows.append((f"corejax bits uint32 eager ({layout})",
                     median_seconds(lambda: random.bits(key, (n,)), args.repeats)))
    config.update("threefry_partitionable", False)
    rows += _jax_rows(n, args.repeats)
    numpy_seconds = rows[0][1]
    print(f"normal float32, n={n:,}, median of {args.repeats}")
    print(f"{'':44s} {'ms':>9s} {'M numbers/s':>12s} {'vs numpy':>9s}")
    for name, seconds in rows:
        print(f"{name:44s} {seconds * 1e3:9.1f} {n / seconds / 1e6:12.1f} "
              f"{numpy_seconds / seconds:9.2f}")


if __name__ == "__main__":
    main()
