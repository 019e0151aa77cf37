"""Record Flax linen's init variables (PRNGKey(0)) and apply outputs / gradients for the
recurrent cells, lifted transformations and layers of tests/golden/flax_layers_cases.py.

Run with a Python that has jax and flax (neither is a corejax dependency):

    /work/flaxvenv/bin/python tests/golden/gen_flax_layers.py [CASE ...]

With case names, only those cases are recomputed and merged into the existing files.
Writes tests/golden/flax_layers.npz (arrays under "{case}/init/{collection}/{path}" and
"{case}/out|upd|grad/{path}") and tests/golden/flax_layers.json (case list, versions, and the
cases Flax itself rejects, with the error).
"""
import importlib.util
import json
import os
import sys

import numpy as np

import jax
import jax.numpy as jnp
import flax
import flax.linen as nn

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("flax_layers_cases",
                                               os.path.join(HERE, "flax_layers_cases.py"))
cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cases)


def main(only=()):
    jax.config.update("jax_threefry_partitionable", True)
    arrays, meta = {}, {"flax": flax.__version__, "jax": jax.__version__,
                        "threefry_partitionable": True, "cases": [], "errors": {}}
    known = [case.__name__ for case in cases.CASES]
    unknown = sorted(set(only) - set(known))
    if unknown:
        raise SystemExit(f"unknown cases {unknown}; known: {known}")
    if only:  # keep the other cases' records
        with np.load(os.path.join(HERE, "flax_layers.npz")) as old:
            arrays = {k: old[k] for k in old.files if k.split("/", 1)[0] not in only}
        with open(os.path.join(HERE, "flax_layers.json")) as f:
            previous = json.load(f)
        meta["errors"] = {k: v for k, v in previous["errors"].items() if k not in only}
        meta["cases"] = [n for n in previous["cases"] if n not in only]
    for case in cases.CASES:
        name = case.__name__
        if only and name not in only:
            continue
        try:
            variables, record = cases.run_case(case, nn, jnp, jax)
        except Exception as e:  # a case Flax rejects is recorded, not hidden
            meta["errors"][name] = f"{type(e).__name__}: {e}"[:400]
            print("ERROR", name, meta["errors"][name])
            continue
        meta["cases"].append(name)
        for k, v in cases.flatten(variables).items():
            arrays[f"{name}/init/{k}"] = v
        for k, v in record.items():
            arrays[f"{name}/{k}"] = np.asarray(v)
        print("ok", name, len(record))
    meta["cases"].sort(key=known.index)
    np.savez_compressed(os.path.join(HERE, "flax_layers.npz"), **arrays)
    with open(os.path.join(HERE, "flax_layers.json"), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
