"""(Not named coverage.py: pytest puts this folder on sys.path, and a coverage.py here would
shadow the coverage package that numba imports.)

Which public corejax functions the conformance suite covers, and under which transformations.

    python tests/conformance/coverage_table.py

Lists every public callable of the modules in cases.MODULES (corejax.numpy, corejax.lax,
corejax.nn, corejax.random, corejax.scipy.special and those the cases_<area>.py files add) with the transformations its cases run under; every uncovered name with
its reason (cases.SKIP_REASONS, "not in JAX" from the golden index, or "not yet covered"); the
names JAX has that corejax lacks; and the totals.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cases  # noqa: E402

import importlib  # noqa: E402

MODULES = {mod: importlib.import_module(f"corejax.{mod}") for mod in cases.MODULES}


def main():
    with open(os.path.join(HERE, "golden_conformance.json")) as fh:
        jax_names = json.load(fh)["jax_names"]
    covered = {}
    through: dict = {}   # a function passed by Ref (or called by Call) into another case
    #                      -> that case's function
    for c, transform in cases.entries():
        covered.setdefault(c["fn"], set()).add(transform)
        for arg in [*c["args"], *c["kwargs"].values()]:
            if isinstance(arg, (cases.Ref, cases.Call)) and arg.path != c["fn"]:
                through.setdefault(arg.path, c["fn"])
    n_funcs = n_pairs = 0
    uncovered = []
    for mod, module in MODULES.items():
        names = sorted(n for n in dir(module) if not n.startswith("_"))
        print(f"\n== {mod} ({len(names)} public names)")
        for name in names:
            transforms = covered.get(f"{mod}.{name}")
            if transforms:
                n_funcs += 1
                n_pairs += len(transforms)
                print(f"  {name:28s} " + " ".join(t for t in cases.TRANSFORMS if t in transforms))
                continue
            obj = getattr(module, name)
            reason = cases.SKIP_REASONS.get(mod, {}).get(name)
            if reason is None and f"{mod}.{name}" in through:
                reason = f"covered through {through[f'{mod}.{name}']} (an argument of it)"
            if reason is None and not callable(obj):
                reason = "a constant, not a function"
            if reason is None and name not in jax_names.get(mod, ()):
                reason = "not in jax (corejax extra)"
            reason = reason or "not yet covered"
            uncovered.append((mod, name, reason))
        missing = sorted(set(jax_names.get(mod, ())) - set(names))
        print(f"  -- missing in corejax ({len(missing)}): " + " ".join(missing))
    array_ops = sorted(fn for fn in covered if fn.startswith("array."))
    print(f"\n== Array operators and methods ({len(array_ops)}): "
          + " ".join(fn[6:] for fn in array_ops))
    print("\n== uncovered public names")
    for mod, name, reason in uncovered:
        print(f"  {mod}.{name:28s} {reason}")
    not_yet = sum(r == "not yet covered" for *_, r in uncovered)
    print(f"\nfunctions covered: {n_funcs} (+ {len(array_ops)} Array operators/methods); "
          f"(function, transformation) pairs: "
          f"{n_pairs + sum(len(covered[f]) for f in array_ops)}; cases: {len(cases.CASES)}; "
          f"tests: {len(cases.entries())}; uncovered names: {len(uncovered)} "
          f"({not_yet} not yet covered)")


if __name__ == "__main__":
    main()
