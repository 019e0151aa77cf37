"""Record Optax 0.2.8's trajectories for the optax.contrib cases of optax_contrib_cases.py as
golden data for tests/test_optim_contrib.py.

Run with a Python that has jax and optax (neither is a corejax dependency):

    python tests/golden/gen_optax_contrib.py

Writes tests/golden/optax_contrib.json, laid out as gen_optax_wrappers.py's file ("namespace"
holds the public names of optax.contrib).
"""
import os
import sys
import warnings

import optax

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_optax_wrappers  # noqa: E402  (sets the default threefry layout)
import optax_contrib_cases  # noqa: E402

if __name__ == "__main__":
    warnings.simplefilter("ignore", DeprecationWarning)     # dpsgd passes Optax's seed=
    gen_optax_wrappers.record(optax_contrib_cases.CASES, "optax_contrib.json", optax.contrib)
