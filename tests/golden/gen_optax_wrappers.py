"""Record Optax 0.2.8's trajectories for the wrapper/combinator cases of
optax_wrapper_cases.py as golden data for tests/test_optim_wrappers.py.

Run with a Python that has jax and optax (neither is a corejax dependency):

    python tests/golden/gen_optax_wrappers.py

Writes tests/golden/optax_wrappers.json: "namespace" (the public names of optax.transforms),
"x", "y", "params" (the problem of optax_problem.py) and "cases": name -> {"trajectory": per step, the params' leaves; "state_paths" and "state":
the final optimizer state's leaves with their key paths and dtypes; "losses"; "post": the case's
post-run values, if any}. Values are float32 numbers
written exactly (as doubles); booleans and integers as numbers.
"""
import json
import os
import sys

import numpy as np

import jax
import jax.numpy as jnp
import optax

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import optax_problem  # noqa: E402

# JAX 0.10's default threefry layout, which is corejax's default too.
jax.config.update("jax_threefry_partitionable", True)


def tolist(x):
    x = np.asarray(x)
    return (x.astype(np.float64) if x.dtype != np.bool_ else x.astype(np.int64)).tolist()


def record(cases, out_name, namespace):
    x, y, params = optax_problem.problem_data()
    out = {"namespace": sorted(n for n in dir(namespace) if not n.startswith("_")),
           "x": x.tolist(), "y": y.tolist(),
           "params": {k: v.tolist() for k, v in params.items()}, "cases": {}}
    for name, case in cases.items():
        trajectory, paths, leaves, losses, post = optax_problem.run(case, optax, jax, jnp, x,
                                                                    y, params)
        out["cases"][name] = {"trajectory": [[tolist(v) for v in step] for step in trajectory],
                              "state_paths": paths,
                              "state": [tolist(v) for v in leaves],
                              "state_dtypes": [str(np.asarray(v).dtype) for v in leaves],
                              "losses": [float(v) for v in losses],
                              "post": [tolist(v) for v in post]}
        print(name, "ok", flush=True)
    with open(os.path.join(HERE, out_name), "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    import optax_wrapper_cases
    record(optax_wrapper_cases.CASES, "optax_wrappers.json", optax.transforms)
