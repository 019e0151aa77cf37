"""Record the public names of JAX's top-level API and its pytree / typing / test modules.

Run with a Python that has jax installed (never a corejax dependency):

    python tests/golden/gen_api_names.py

Writes tests/golden/jax_api_names.json: {"jax_version": ..., "modules": {module: [names]}},
the names of dir(module) not starting with an underscore, for jax, jax.tree,
jax.tree_util, jax.typing, jax.flatten_util, jax.test_util and jax.lax. tests/test_api_surface.py
checks that corejax has each of them, except the ones it lists as not provided.
"""
import importlib
import json
import os

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jax_api_names.json")
MODULES = ["jax", "jax.tree", "jax.tree_util", "jax.typing", "jax.flatten_util",
           "jax.test_util", "jax.lax"]


def main():
    import jax
    names = {}
    for module in MODULES:
        mod = importlib.import_module(module)
        names[module] = sorted(n for n in dir(mod) if not n.startswith("_"))
    with open(OUT, "w") as f:
        json.dump({"jax_version": jax.__version__, "modules": names}, f, indent=1)
        f.write("\n")
    print(f"wrote {sum(map(len, names.values()))} names of {len(names)} modules to {OUT}")


if __name__ == "__main__":
    main()
