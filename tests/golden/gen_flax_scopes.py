"""Record what Flax linen's share_scope, compact_name_scope, fold_rngs, add_metadata_axis, the
named_call switches, nn.vmap's keyword arguments and metadata, kw_only_dataclasses, batch_apply,
spmd and the normalization layers' axis_name do.

    /work/flaxvenv/bin/python tests/golden/gen_flax_scopes.py

Writes tests/golden/flax_scopes.json: for each case of flax_scopes_cases.cases (shared with
tests/test_nn_scopes.py), its result as plain JSON data (arrays with dtype, shape and values),
or the exception type it raised."""
import json
import os
import sys

import jax
import jax.numpy as jnp
import flax.linen as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from flax_scopes_cases import cases, outcome  # noqa: E402


def main():
    results = {name: outcome(run) for name, run in cases(nn, jax, jnp).items()}
    with open(os.path.join(HERE, "flax_scopes.json"), "w") as fh:
        json.dump(results, fh, indent=0, sort_keys=True)
    errors = sorted(n for n, r in results.items() if isinstance(r, dict) and "error" in r)
    print(f"{len(results)} cases; raising: {errors}")


if __name__ == "__main__":
    main()
