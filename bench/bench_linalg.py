"""Linear algebra timings: corejax (eager and jit) against NumPy / SciPy and, when available,
JAX, on float32 inputs:

    cholesky 1000 x 1000, solve 1000 x 1000 (one right-hand side and 1000 of them),
    batched cholesky (256, 32, 32), svd 500 x 500 (singular values and full factors),
    rfft of 2^20 float32 values and fft of 2^20 complex64 values

    python bench/bench_linalg.py [--repeats 7]
    COREJAX_JAX_PYTHON=/work/jaxvenv/bin/python python bench/bench_linalg.py

Prints the median of the repeats (after a warm-up call) and the ratio to NumPy / SciPy
(> 1: faster than NumPy). JAX runs in a separate process, the interpreter named by
COREJAX_JAX_PYTHON (corejax never imports JAX). No assertions: benchmarks are not tests.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import scipy.linalg

# The cases are plain NumPy / SciPy and source text, so that the JAX process can import this
# module without corejax: (name, the reference, `fn(jnp, *arrays)` for corejax and JAX alike).


def _spd(rng, *shape):
    a = rng.standard_normal(shape).astype(np.float32)
    n = shape[-1]
    return (a @ np.swapaxes(a, -1, -2) / n + np.eye(n, dtype=np.float32)).astype(np.float32)


def _inputs(name, seed=0):
    rng = np.random.default_rng(seed)
    if name == "cholesky 1000x1000":
        return (_spd(rng, 1000, 1000),)
    if name == "cholesky batched 256x32x32":
        return (_spd(rng, 256, 32, 32),)
    if name == "solve 1000x1000, b (1000,)":
        return (rng.standard_normal((1000, 1000)).astype(np.float32),
                rng.standard_normal(1000).astype(np.float32))
    if name == "solve 1000x1000, b (1000, 1000)":
        return (rng.standard_normal((1000, 1000)).astype(np.float32),
                rng.standard_normal((1000, 1000)).astype(np.float32))
    if name in ("svdvals 500x500", "svd 500x500"):
        return (rng.standard_normal((500, 500)).astype(np.float32),)
    if name == "rfft 2^20":
        return (rng.standard_normal(2**20).astype(np.float32),)
    if name == "fft 2^20 complex64":
        return ((rng.standard_normal(2**20) + 1j * rng.standard_normal(2**20)).astype(
            np.complex64),)
    raise KeyError(name)


CASES = [
    ("cholesky 1000x1000", np.linalg.cholesky, "lambda jnp, a: jnp.linalg.cholesky(a)"),
    ("cholesky batched 256x32x32", np.linalg.cholesky, "lambda jnp, a: jnp.linalg.cholesky(a)"),
    ("solve 1000x1000, b (1000,)", lambda a, b: scipy.linalg.solve(a, b),
     "lambda jnp, a, b: jnp.linalg.solve(a, b)"),
    ("solve 1000x1000, b (1000, 1000)", lambda a, b: scipy.linalg.solve(a, b),
     "lambda jnp, a, b: jnp.linalg.solve(a, b)"),
    ("svdvals 500x500", lambda a: np.linalg.svd(a, compute_uv=False),
     "lambda jnp, a: jnp.linalg.svd(a, compute_uv=False)"),
    ("svd 500x500", np.linalg.svd, "lambda jnp, a: jnp.linalg.svd(a)"),
    ("rfft 2^20", np.fft.rfft, "lambda jnp, a: jnp.fft.rfft(a)"),
    ("fft 2^20 complex64", np.fft.fft, "lambda jnp, a: jnp.fft.fft(a)"),
]

_JAX_SCRIPT = r"""
import json, statistics, sys, time
import numpy as np
sys.path.insert(0, sys.argv[1])
import jax, jax.numpy as jnp
from bench_linalg import CASES, _inputs
repeats = int(sys.argv[2])
out = {"version": jax.__version__}
def median(fn):
    jax.block_until_ready(fn())
    times = []
    for _ in range(repeats):
        start = time.perf_counter(); jax.block_until_ready(fn())
        times.append(time.perf_counter() - start)
    return statistics.median(times)
for name, _, src in CASES:
    fn = eval(src)
    args = [jnp.asarray(x) for x in _inputs(name)]
    jitted = jax.jit(lambda *xs: fn(jnp, *xs))
    out[name] = {"eager": median(lambda: fn(jnp, *args)), "jit": median(lambda: jitted(*args))}
print(json.dumps(out))
"""


def median_seconds(fn, repeats):
    fn()  # warm-up: tracing, compilation, caches
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _block(out):
    for leaf in out if isinstance(out, (tuple, list)) else [out]:
        np.asarray(leaf)


def _jax_timings(repeats):
    python = os.environ.get("COREJAX_JAX_PYTHON")
    if not python:
        print("JAX: skipped (set COREJAX_JAX_PYTHON to a Python that has jax)", file=sys.stderr)
        return None
    here = os.path.dirname(os.path.abspath(__file__))
    proc = subprocess.run([python, "-c", _JAX_SCRIPT, here, str(repeats)], capture_output=True,
                          text=True, env={**os.environ, "JAX_PLATFORMS": "cpu"})
    if proc.returncode:
        print(f"JAX: failed ({proc.stderr.strip().splitlines()[-1:]})", file=sys.stderr)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main():
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import corejax
    import corejax.numpy as jnp
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    jax_times = _jax_timings(args.repeats)
    header = f"{'case':34s} {'NumPy/SciPy':>12s} {'corejax':>12s} {'corejax jit':>12s}"
    if jax_times:
        header += f" {'JAX ' + jax_times['version']:>12s} {'JAX jit':>12s}"
    print(header + "   (median ms; x: speed relative to NumPy/SciPy)")
    for name, reference, src in CASES:
        fn = eval(src)
        arrays = _inputs(name)
        ref = median_seconds(lambda: reference(*arrays), args.repeats)
        operands = [jnp.asarray(x) for x in arrays]
        jitted = corejax.jit(lambda *xs: fn(jnp, *xs))
        eager = median_seconds(lambda: _block(fn(jnp, *operands)), args.repeats)
        compiled = median_seconds(lambda: _block(jitted(*operands)), args.repeats)
        cells = [ref, eager, compiled]
        if jax_times:
            cells += [jax_times[name]["eager"], jax_times[name]["jit"]]
        row = f"{name:34s} {ref * 1e3:12.2f}"
        row += "".join(f" {t * 1e3:7.2f} x{ref / t:4.2f}" for t in cells[1:])
        print(row)


if __name__ == "__main__":
    main()
