"""Record the variables Flax linen's ``init`` makes for a fixed key, and dropout outputs.

Run with a Python that has jax and flax installed (neither is a corejax dependency):

    /work/flaxvenv/bin/python tests/golden/gen_flax_params.py

Writes tests/golden/flax_params.npz. Each array is stored under
``"{partitionable}/{model}/{collection}/{path/to/leaf}"`` (partitionable is "p0" or "p1", the
``jax_threefry_partitionable`` setting) and each model's output under
``"{partitionable}/{model}/__out__"``. The models are tests/golden/flax_params_cases.py's,
shared with tests/test_nn_flax_params.py.
"""
import os
import sys

import numpy as np

import jax
import jax.numpy as jnp
import flax.linen as nn

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "flax_params.npz")
sys.path.insert(0, HERE)
from flax_params_cases import flatten, runs  # noqa: E402


def main():
    out = {}
    for partitionable in (False, True):
        jax.config.update("jax_threefry_partitionable", partitionable)
        tag = f"p{int(partitionable)}"
        for name, model, rngs, args, apply_kwargs in runs(nn, jax.random, jnp):
            variables = jax.tree_util.tree_map(lambda a: a, dict(model.init(rngs, *args)))
            flatten(f"{tag}/{name}", variables, out)
            y = model.apply(variables, *args, **apply_kwargs)
            if "mutable" in apply_kwargs:
                y = y[0]
            out[f"{tag}/{name}/__out__"] = np.asarray(y)
    jax.config.update("jax_threefry_partitionable", False)
    np.savez_compressed(OUT, **out)
    print(f"wrote {OUT}: {len(out)} arrays, {os.path.getsize(OUT)} bytes")


if __name__ == "__main__":
    main()
