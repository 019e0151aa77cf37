"""Records the lines stages_program.run prints under real JAX (golden_stages.json).

    /work/jaxvenv/bin/python tests/conformance/gen_stages.py
"""
import json
import os
import sys

import jax
import jax.numpy as jnp

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import stages_program  # noqa: E402

if __name__ == "__main__":
    with open(os.path.join(HERE, "golden_stages.json"), "w") as fh:
        json.dump({"jax_version": jax.__version__, "lines": stages_program.run(jax, jnp)}, fh,
                  indent=0)
