"""Record the public names of the Flax modules that nn mirrors, so tests can measure how much
of Flax's surface nn covers.

    /work/flaxvenv/bin/python tests/golden/gen_flax_surface.py

Writes tests/golden/flax_surface.json: {flax module: [names]} where a name is public (no
leading underscore) and belongs to Flax: a submodule of flax.linen / flax.core, or an object
defined in a Flax (or jax.nn, which linen re-exports) module. Names of typing helpers and
imported libraries are left out.
"""
import importlib
import inspect
import json
import os

import flax

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "flax_surface.json")
MODULES = ["flax.linen", "flax.struct", "flax.core", "flax.serialization",
           "flax.training.train_state", "flax.training.common_utils",
           "flax.training.early_stopping", "flax.training.checkpoints"]


def belongs(value, module_name) -> bool:
    if inspect.ismodule(value):  # the submodules of the two packages, not incidental imports
        return module_name in ("flax.linen", "flax.core") and value.__name__.startswith(
            module_name + ".")
    home = getattr(value, "__module__", None) or ""
    return home.startswith(("flax", "jax.nn", "jax._src.nn"))


def public_names(module_name):
    module = importlib.import_module(module_name)
    return sorted(n for n in dir(module)
                  if not n.startswith("_") and belongs(getattr(module, n), module_name))


# (logical names, rules) -> the mesh axes flax.linen.logical_to_mesh_axes gives
AXIS_CASES = [
    (["batch", "embed"], [["batch", "data"], ["embed", "model"]]),
    (["batch", "embed", "mlp"], [["batch", "data"], ["embed", None], ["mlp", "data"],
                                 ["mlp", "model"]]),
    (["batch", None, "heads"], [["heads", ["data", "model"]], ["batch", "data"]]),
    (["batch", "x"], None),
]


def axis_records():
    import flax.linen as nn

    def tuples(x):
        return tuple(tuples(v) for v in x) if isinstance(x, list) else x
    out = []
    for names, rules in AXIS_CASES:
        spec = nn.logical_to_mesh_axes(tuple(names), tuples(rules))
        out.append({"names": names, "rules": rules,
                    "spec": [list(a) if isinstance(a, tuple) else a for a in spec]})
    return out


def main():
    out = {"flax": flax.__version__, "modules": {m: public_names(m) for m in MODULES},
           "logical_to_mesh_axes": axis_records()}
    with open(OUT, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print(f"wrote {OUT}: " + ", ".join(f"{m} {len(v)}" for m, v in out["modules"].items()))


if __name__ == "__main__":
    main()
