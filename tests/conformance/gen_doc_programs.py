"""Records JAX's outputs for the programs of doc_programs.py as golden data.

Run with a Python that has jax installed (never a corejax dependency):

    python tests/conformance/gen_doc_programs.py

Writes tests/conformance/golden_doc_programs.json: {"jax_version": ...,
"results": {setting: {program: [[value (nested lists; a flat list of reprs when some float
is not finite; [real parts, imaginary parts] for a complex leaf), dtype name, weak_type,
shape], ...] per output leaf, or "raises
<ExceptionType>"}}}. Settings: "threefry_partitionable=False"
(JAX 0.4's layout) runs every program; "threefry_partitionable=True" (the default of JAX 0.10
and of corejax) reruns the ones that draw random numbers.
"""
import json
import os
import sys

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax, random

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from doc_programs import build  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden_doc_programs.json")
SETTINGS = {"threefry_partitionable=False": False, "threefry_partitionable=True": True}


def encode(tree):
    out = []
    for leaf in jax.tree_util.tree_leaves(tree):
        a = np.asarray(leaf)
        if a.dtype.kind == "c":     # JSON has no complex numbers: [real parts, imaginary parts]
            val = [a.real.tolist(), a.imag.tolist()]
        else:
            val = a.tolist() if a.dtype != np.float32 or np.isfinite(a).all() else \
                [repr(float(v)) for v in a.ravel()]
        out.append([val, a.dtype.name, bool(getattr(leaf, "weak_type", False)), list(a.shape)])
    return out


def run(partitionable):
    jax.config.update("jax_threefry_partitionable", partitionable)
    results = {}
    for name, thunk in build(jax, jnp, lax, random).items():
        if partitionable and not name.startswith("random"):
            continue
        try:
            results[name] = encode(thunk())
        except Exception as e:  # a program JAX rejects: corejax must raise the same type
            results[name] = f"raises {type(e).__name__}"
    return results


def main():
    golden = {"jax_version": jax.__version__,
              "results": {k: run(v) for k, v in SETTINGS.items()}}
    with open(OUT, "w") as f:
        json.dump(golden, f, indent=0, sort_keys=True)
    print(f"wrote {OUT}: {sum(len(r) for r in golden['results'].values())} results")


if __name__ == "__main__":
    main()
