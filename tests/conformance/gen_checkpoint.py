"""Records JAX's results for the programs of checkpoint_programs.py (golden_checkpoint.json).

    /work/jaxvenv/bin/python tests/conformance/gen_checkpoint.py

For each program: the residuals print_saved_residuals lists (normalized) and the derivatives
of checkpoint_programs.derivatives, as nested lists with their dtypes."""
import contextlib
import io
import json
import os
import sys

import numpy as np

import jax
import jax.numpy as jnp
from jax import ad_checkpoint, lax

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import checkpoint_programs  # noqa: E402


def encode(tree):
    return [[np.asarray(leaf).tolist(), np.asarray(leaf).dtype.name, list(np.shape(leaf))]
            for leaf in jax.tree_util.tree_leaves(tree)]


def main():
    results = {}
    for name, (fn, W, x) in checkpoint_programs.build(jax, jnp, lax, ad_checkpoint).items():
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            ad_checkpoint.print_saved_residuals(fn, W, x)
        results[name] = {
            "residuals": checkpoint_programs.normalize_residuals(buf.getvalue()),
            "derivatives": {k: encode(v) for k, v in
                            checkpoint_programs.derivatives(jax, fn, W, x).items()}}
    with open(os.path.join(HERE, "golden_checkpoint.json"), "w") as fh:
        json.dump({"jax_version": jax.__version__, "results": results}, fh, indent=0,
                  sort_keys=True)
    print(f"{len(results)} programs")


if __name__ == "__main__":
    main()
