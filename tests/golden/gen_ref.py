"""Writes tests/golden/ref.json: what real JAX returns or raises for each case of
ref_cases.py. Run with the reference JAX install:  /work/jaxvenv/bin/python tests/golden/gen_ref.py
"""
import json
import os
import sys

import numpy as np
import jax
import jax.numpy as jnp

sys.path.insert(0, os.path.dirname(__file__))
from ref_cases import cases  # noqa: E402


def encode(x):
    if isinstance(x, jax.Ref):
        x = x[...]
    if isinstance(x, (tuple, list)):
        return [encode(v) for v in x]
    if x is None:
        return None
    a = np.asarray(x)
    return {"dtype": str(a.dtype), "shape": list(a.shape),
            "value": a.astype(np.float64).ravel().tolist(),
            "weak": bool(getattr(x, "weak_type", False))}


def main():
    out = {"jax_version": jax.__version__, "cases": {}}
    for name, fn in cases(jax, jnp).items():
        try:
            res = {"result": encode(fn())}
        except Exception as e:  # the error is the expected result
            res = {"error": type(e).__name__, "message": str(e)[:300]}
        out["cases"][name] = res
        print(name, res.get("error", "ok"))
    path = os.path.join(os.path.dirname(__file__), "ref.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
