"""Records the lines each program of line_programs.py returns under real JAX
(golden_line_programs.json).

    /work/jaxvenv/bin/python tests/conformance/gen_line_programs.py
"""
import json
import os
import sys

import jax
import jax.numpy as jnp

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import line_programs  # noqa: E402

if __name__ == "__main__":
    golden = {name: fn(jax, jnp) for name, fn in line_programs.PROGRAMS.items()}
    with open(os.path.join(HERE, "golden_line_programs.json"), "w") as fh:
        json.dump({"jax_version": jax.__version__, "programs": golden}, fh, indent=0)
    print({k: len(v) for k, v in golden.items()})
