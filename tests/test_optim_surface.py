"""optim's coverage of Optax 0.2.8's public names, namespace by namespace
(tests/golden/optax_names.json, written by tests/golden/gen_optax_names.py): prints the
covered fraction and the names still missing, and asserts a floor per namespace: the number
of names covered when it was last set (raise it as names land, never lower it)."""
import importlib
import json
import os

import pytest

NAMES = json.load(open(os.path.join(os.path.dirname(__file__), "golden", "optax_names.json")))
# Names covered per namespace when the floor was last set (issue #28).
FLOORS = {"optax": 224, "optax.schedules": 21, "optax.losses": 32, "optax.tree": 35,
          "optax.tree_utils": 36, "optax.transforms": 46, "optax.projections": 12,
          "optax.contrib": 58}


def optim_module(optax_module):
    return importlib.import_module("optim" + optax_module[len("optax"):])


def coverage(optax_module):
    names = NAMES["modules"][optax_module]
    try:
        mod = optim_module(optax_module)
    except ImportError:
        return names, sorted(names)
    return names, sorted(n for n in names if not hasattr(mod, n))


@pytest.mark.parametrize("optax_module", sorted(NAMES["modules"]))
def test_optax_names_covered(optax_module):
    names, missing = coverage(optax_module)
    covered = len(names) - len(missing)
    print(f"\n{optax_module}: {covered}/{len(names)} names "
          f"({covered / len(names):.1%}); missing: {', '.join(missing) or 'none'}")
    assert covered >= FLOORS[optax_module], (optax_module, missing)


def test_optax_namespaces_match_their_optim_modules():
    # A name optax exports as a module is an optim module too (optim.losses, optim.tree, ...).
    import optim
    for name, kind in NAMES["modules"]["optax"].items():
        if kind == "module" and hasattr(optim, name):
            assert type(getattr(optim, name)).__name__ == "module", name
    # optax.tree and optax.tree_utils name the same functions.
    for name in NAMES["modules"]["optax.tree"]:
        assert getattr(optim.tree, name) is getattr(optim.tree_utils, "tree_" + name), name
