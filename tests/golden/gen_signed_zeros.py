"""Record JAX's signed zeros and NaNs of max / min reductions and elementwise max / min.

Made with JAX 0.10.2 (jaxlib CPU) in a scratch environment that corejax never imports:

    /work/jaxvenv/bin/python tests/golden/gen_signed_zeros.py

Writes signed_zeros.json: {"jax_version", "cases": {name: {"eager": [values], "jit": [...]}}}
with every value written by repr (so -0.0 and nan survive); inputs are in CASES below, which
tests/test_signed_zeros.py imports.
"""
import json
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
NAN = float("nan")
# name -> (function name, input rows (float32), axis)
CASES = {
    "max_neg_then_pos": ("max", [[-0.0, 0.0]], 1),
    "max_pos_then_neg": ("max", [[0.0, -0.0]], 1),
    "max_all_neg_zero": ("max", [[-0.0, -0.0, -0.0]], 1),
    "max_neg_below_zero": ("max", [[-1.0, -0.0, -2.0]], 1),
    "max_nan": ("max", [[0.0, NAN, -0.0], [NAN, 1.0, 2.0]], 1),
    "min_neg_then_pos": ("min", [[-0.0, 0.0]], 1),
    "min_pos_then_neg": ("min", [[0.0, -0.0]], 1),
    "min_all_pos_zero": ("min", [[0.0, 0.0, 0.0]], 1),
    "min_nan": ("min", [[0.0, NAN, -0.0], [3.0, NAN, 2.0]], 1),
    "max_columns": ("max", [[-0.0, 0.0, -0.0], [0.0, -0.0, -0.0]], 0),
    "min_columns": ("min", [[-0.0, 0.0, 0.0], [0.0, -0.0, 0.0]], 0),
    "maximum_elementwise": ("maximum", [[-0.0, 0.0, -0.0, 0.0], [0.0, -0.0, -0.0, 0.0]], None),
    "minimum_elementwise": ("minimum", [[-0.0, 0.0, -0.0, 0.0], [0.0, -0.0, -0.0, 0.0]], None),
    # lax.reduce_window with lax.max / lax.min over windows of 2 (stride 2) along axis 1
    "window_max": ("window_max", [[-0.0, 0.0, 0.0, -0.0, -0.0, -0.0, NAN, 1.0]], 1),
    "window_min": ("window_min", [[-0.0, 0.0, 0.0, -0.0, 0.0, 0.0, 2.0, NAN]], 1),
}


def make(jax, jnp, name, axis):
    """The function a case runs, written once for JAX and corejax."""
    if name in ("maximum", "minimum"):
        return lambda x: getattr(jnp, name)(x[0], x[1])
    if name.startswith("window_"):
        op, init = (jax.lax.max, -np.inf) if name == "window_max" else (jax.lax.min, np.inf)
        return lambda x: jax.lax.reduce_window(x, init, op, (1, 2), (1, 2), "VALID")
    return lambda x: getattr(jnp, name)(x, axis=axis)


def main():
    import jax
    import jax.numpy as jnp

    def fn(name, axis):
        return make(jax, jnp, name, axis)

    out = {}
    for key, (name, rows, axis) in CASES.items():
        x = jnp.asarray(np.array(rows, np.float32))
        f = fn(name, axis)
        out[key] = {mode: [repr(float(v)) for v in np.asarray(g(x)).ravel()]
                    for mode, g in (("eager", f), ("jit", jax.jit(f)))}
    with open(os.path.join(HERE, "signed_zeros.json"), "w") as fh:
        json.dump({"jax_version": jax.__version__, "cases": out}, fh, indent=1)


if __name__ == "__main__":
    main()
