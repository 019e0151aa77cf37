"""Generates tests/conformance/golden_fuzz.npz: what real JAX computes for the fuzz programs.

Made with JAX 0.10.2 (CPU, float32, x64 off) in a scratch virtual environment that corejax
never imports:

    /work/jaxvenv/bin/python tests/conformance/gen_fuzz.py            # seeds 0..N-1 (default N)
    /work/jaxvenv/bin/python tests/conformance/gen_fuzz.py --seeds 2000 --start 300 --jobs 2 --out x.npz

For each seed it builds the program of `fuzz_programs.program_source(seed)` against `jax`,
`jax.numpy` and `jax.lax`, calls it, and stores the flattened outputs (`flatten_outputs`:
values, dtypes and shapes, and each leaf's weak_type) or, where JAX raises, the exception's
class names. It then runs every program again with x64 enabled and its float32 arrays made
float64, and stores |float32 result - float64 result| per element: an estimate of how much
float32 rounding moves each value (deep derivative stacks through tanh, exp, ... lose digits),
which the test adds to its tolerance.

The file holds one array per output leaf, named `<seed>_<i>`, its rounding estimate
`e<seed>_<i>` (float32; absent where the x64 run failed or agreed exactly), and `meta`, a JSON
string: `{"jax_version", "generator_version", "seeds": {seed: {"hash": <program text hash>,
"n": <leaves>, "weak": [weak_type per leaf]} or {"hash", "error": [class names, most derived
first]}}}`. The hash lets the test tell a stale golden (the generator changed) from a
disagreement.

`test_fuzz.py` runs this same evaluation in a subprocess for seeds beyond the committed ones
(COREJAX_FUZZ_SEEDS / COREJAX_JAX_PYTHON).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzz_programs as fp  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_SEEDS = 300
DEFAULT_OUT = os.path.join(HERE, "golden_fuzz.npz")


def evaluate(seeds, verbose=False):
    """Runs `seeds` under JAX: (meta dict, arrays dict)."""
    import jax
    import jax.numpy as jnp
    from jax import lax
    import jax.scipy.special  # noqa: F401 - the programs use jax.scipy.special.logsumexp

    assert not jax.config.jax_enable_x64
    meta = {"jax_version": jax.__version__, "generator_version": fp.GENERATOR_VERSION,
            "seeds": {}}
    arrays = {}
    seeds = list(seeds)
    for seed in seeds:
        status, res, src = fp.run(seed, jax, jnp, lax)
        entry = {"hash": fp.source_hash(src)}
        if status == "ok":
            leaves, weak = res
            entry["n"] = len(leaves)
            entry["weak"] = weak
            for i, leaf in enumerate(leaves):
                arrays[f"{seed}_{i}"] = leaf
        else:
            entry["error"] = fp.exception_names(res)
            if verbose:
                print(f"seed {seed}: {type(res).__name__}: {str(res).splitlines()[0][:150]}",
                      file=sys.stderr)
        meta["seeds"][str(seed)] = entry
    jax.config.update("jax_enable_x64", True)
    try:
        for seed in seeds:
            entry = meta["seeds"][str(seed)]
            if "error" in entry:
                continue
            status, res, _ = fp.run(seed, jax, jnp, lax, x64=True)
            if status != "ok" or len(res[0]) != entry["n"]:
                continue
            for i, ref in enumerate(res[0]):
                got = arrays[f"{seed}_{i}"]
                if ref.shape != got.shape or got.dtype.kind != "f":
                    continue
                with np.errstate(invalid="ignore"):
                    err = np.abs(got.astype(np.float64) - ref.astype(np.float64))
                err = np.where(np.isfinite(err), err, 0.0).astype(np.float32)
                if err.any():
                    arrays[f"e{seed}_{i}"] = err
    finally:
        jax.config.update("jax_enable_x64", False)
    return meta, arrays


def evaluate_parallel(seeds, jobs, verbose=False):
    """`evaluate` split over `jobs` processes (seeds dealt round-robin)."""
    seeds = list(seeds)
    if jobs <= 1 or len(seeds) < 2:
        return evaluate(seeds, verbose)
    import multiprocessing as mp
    chunks = [seeds[i::jobs] for i in range(jobs) if seeds[i::jobs]]
    with mp.get_context("spawn").Pool(len(chunks)) as pool:
        parts = pool.starmap(evaluate, [(c, verbose) for c in chunks])
    meta, arrays = parts[0][0], {}
    for m, a in parts:
        meta["seeds"].update(m["seeds"])
        arrays.update(a)
    meta["seeds"] = {str(s): meta["seeds"][str(s)] for s in seeds}
    return meta, arrays


def write(path, meta, arrays):
    np.savez_compressed(path, meta=np.array(json.dumps(meta, sort_keys=True)), **arrays)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=DEFAULT_SEEDS, help="how many seeds")
    ap.add_argument("--start", type=int, default=0, help="first seed")
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--jobs", type=int, default=1, help="processes to run JAX in")
    ap.add_argument("-v", "--verbose", action="store_true", help="print JAX's exceptions")
    a = ap.parse_args(argv)
    t0 = time.time()
    meta, arrays = evaluate_parallel(range(a.start, a.start + a.seeds), a.jobs, a.verbose)
    write(a.out, meta, arrays)
    n_err = sum("error" in e for e in meta["seeds"].values())
    print(f"{a.seeds} seeds ({n_err} raise in JAX) -> {a.out} "
          f"({os.path.getsize(a.out) / 1e3:.0f} kB, {time.time() - t0:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
