"""Eager (op-by-op) timings, as a notebook or JAX's documentation runs them: elementwise ops and
reductions on 1M float32 and small-array dispatch, against NumPy and, with --jax-python, JAX's
eager ops in a subprocess (the project never imports JAX). Prints medians; asserts nothing.

    python bench/bench_eager.py [--repeats 15] [--jax-python /path/to/python-with-jax]
"""
import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _openblas  # noqa: E402,F401  (before NumPy: see bench/_openblas.py)
import numpy as np

CASES = {
    "exp 1M": ("exp", 1_000_000), "tanh 1M": ("tanh", 1_000_000), "log 1M": ("log", 1_000_000),
    "sin 1M": ("sin", 1_000_000), "x + 1.0 1M": ("add1", 1_000_000),
    "sum 1M": ("sum", 1_000_000), "x + 1.0 on 16": ("add1", 16),
}

_RUNNER = """
import json, sys, time
import numpy as np
def run(np_mod, asarray, cases, repeats, block):
    out = {}
    for name, (op, n) in cases.items():
        x = asarray(np.random.default_rng(0).random(n, dtype=np.float32) + 0.5)
        fn = {"exp": np_mod.exp, "tanh": np_mod.tanh, "log": np_mod.log, "sin": np_mod.sin,
              "add1": lambda v: v + 1.0, "sum": np_mod.sum}[op]
        block(fn(x))
        times = []
        for _ in range(repeats):
            t = time.perf_counter()
            block(fn(x))
            times.append(time.perf_counter() - t)
        out[name] = float(np.median(times))
    return out
"""


def _median_table(framework, cases, repeats):
    ns = {}
    exec(_RUNNER, ns)
    if framework == "numpy":
        return ns["run"](np, np.asarray, cases, repeats, lambda v: v)
    import corejax.numpy as jnp
    return ns["run"](jnp, jnp.asarray, cases, repeats, lambda v: v.block_until_ready())


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--repeats", type=int, default=15)
    p.add_argument("--jax-python", help="a Python with jax installed, run as a subprocess")
    args = p.parse_args()
    results = {"corejax": _median_table("corejax", CASES, args.repeats),
               "numpy": _median_table("numpy", CASES, args.repeats)}
    if args.jax_python:
        code = _RUNNER + (
            "\nimport jax, jax.numpy as jnp\n"
            f"print(json.dumps(run(jnp, jnp.asarray, {CASES!r}, {args.repeats}, "
            "lambda v: v.block_until_ready())))\n")
        r = subprocess.run([args.jax_python, "-c", code], capture_output=True, text=True)
        if r.returncode == 0:
            results["jax"] = json.loads(r.stdout.strip().splitlines()[-1])
        else:
            print("JAX run failed:", r.stderr[-500:], file=sys.stderr)
    print(f"{'case':16s} {'corejax':>10s} {'NumPy':>10s} {'JAX':>10s} {'vs NumPy':>9s} "
          f"{'vs JAX':>7s}")
    for name in CASES:
        c, n = results["corejax"][name], results["numpy"][name]
        j = results.get("jax", {}).get(name)
        print(f"{name:16s} {c * 1e6:9.0f}us {n * 1e6:9.0f}us "
              f"{(f'{j * 1e6:9.0f}us' if j else '         -'):>10s} {c / n:8.2f}x "
              f"{(f'{c / j:6.2f}x' if j else '     -'):>7s}")


if __name__ == "__main__":
    main()
