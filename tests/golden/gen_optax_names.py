"""Record the public names of Optax 0.2.8 per namespace, for optim's coverage test.

Run with a Python that has optax installed (never a corejax dependency):

    python tests/golden/gen_optax_names.py

Writes tests/golden/optax_names.json: {"optax_version": ..., "modules": {module: {name:
kind}}}, kind one of "module", "class", "function", "other", for the names of dir(module)
not starting with an underscore, in optax, optax.schedules, optax.losses, optax.tree,
optax.tree_utils, optax.transforms, optax.projections and optax.contrib. Standard-library
modules a namespace happens to import (optax.tree_utils' functools and typing) are left out.
tests/test_optim_surface.py reports how many of them optim has.
"""
import importlib
import inspect
import json
import os
import types

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "optax_names.json")
MODULES = ["optax", "optax.schedules", "optax.losses", "optax.tree", "optax.tree_utils",
           "optax.transforms", "optax.projections", "optax.contrib"]


def kind(value):
    if isinstance(value, types.ModuleType):
        return "module"
    if inspect.isclass(value):
        return "class"
    if callable(value):
        return "function"
    return "other"


def main():
    import optax
    names = {}
    for module in MODULES:
        mod = importlib.import_module(module)
        entries = {}
        for name in sorted(dir(mod)):
            value = getattr(mod, name)
            if name.startswith("_"):
                continue
            if isinstance(value, types.ModuleType) and not value.__name__.startswith("optax"):
                continue
            entries[name] = kind(value)
        names[module] = entries
    with open(OUT, "w") as f:
        json.dump({"optax_version": optax.__version__, "modules": names}, f, indent=1)
        f.write("\n")
    print(f"wrote {sum(map(len, names.values()))} names of {len(names)} modules to {OUT}")


if __name__ == "__main__":
    main()
