"""Record JAX's results for every (case, transformation) of cases.py as golden data.

Made with JAX 0.10.2 (jaxlib CPU) in a scratch environment that corejax never imports:

    /work/jaxvenv/bin/python tests/conformance/gen_conformance.py

(`... gen_conformance.py SUBSTRING...` re-records only the cases whose id contains one of the
substrings, records the entries the files lack, and keeps every other entry. XLA exhausts a
process's memory maps after several thousand compilations, so a whole regeneration runs in
parts: `GEN_LIMIT=1500 ... gen_conformance.py` and then, until it reports none skipped,
`GEN_LIMIT=1500 ... gen_conformance.py @@` ("@@" matches no case id: only missing entries).)

Writes, next to this file,
  * golden_conformance.json: {"jax_version", "jax_names": {module: [public callables]},
    "entries": {"<case id>|<transform>": entry}} where an entry is either
    {"error": type name, "mro": [base type names]} or {"tree": structure string,
    "leaves": [leaf]}; an array leaf is ["array", dtype, shape, weak_type, offset] (offset into
    the flat array of that dtype in the npz), any other leaf ["py", type, value] or
    ["dtype", name];
  * golden_conformance.npz: one flat array per dtype, every array leaf of that dtype concatenated.
"""
import gc
import json
import os
import sys
import warnings

import numpy as np

import jax

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cases  # noqa: E402


def public_names(module):
    return sorted(n for n in dir(module) if not n.startswith("_") and callable(
        getattr(module, n, None)))


def load_flat(path):
    """The npz's arrays by dtype name; ml_dtypes' arrays (bfloat16, float8, int4 ...) are kept
    as their raw bits (unsigned integers: NumPy cannot read some of their own descriptors back)
    and viewed as their dtype again. An array that cannot be read is left out (the entries
    using it are recomputed)."""
    out = {}
    with np.load(path) as npz:
        for k in npz.files:
            try:
                a = npz[k]
            except ValueError:
                continue
            out[k] = a.view(k) if a.dtype.kind in "uV" and a.dtype.name != k else a
    return out


def raw(a):
    """ml_dtypes' arrays as their raw bits (see load_flat); other arrays as they are."""
    return a.view(f"u{a.itemsize}") if a.dtype.type.__module__ == "ml_dtypes" else a


def main():
    warnings.simplefilter("ignore")
    fw = cases.Framework(jax)
    only = sys.argv[1:]
    old_entries, old_flat = {}, {}
    if only:
        with open(os.path.join(HERE, "golden_conformance.json")) as fh:
            old_entries = json.load(fh)["entries"]
        old_flat = load_flat(os.path.join(HERE, "golden_conformance.npz"))
    entries, flat = {}, {}

    sizes = {}

    def store(array, dtype):
        offset = sizes.get(dtype, 0)
        flat.setdefault(dtype, []).append(np.asarray(array).reshape(-1))
        sizes[dtype] = offset + np.size(array)
        return offset

    # XLA keeps compiled executables' memory mapped; several thousand compilations exhaust the
    # process's memory maps (LLVM "Cannot allocate memory", then a crash). GEN_LIMIT=n computes
    # at most n entries per run, keeping the rest as they are (missing ones stay missing):
    # rerun with an argument until it reports none skipped.
    limit = int(os.environ.get("GEN_LIMIT", "1000000000"))
    computed = skipped = 0
    for c, transform in cases.entries():
        key = f"{c['id']}|{transform}"
        if only and not any(s in c["id"] for s in only) and key in old_entries and all(
                leaf[1] in old_flat for leaf in old_entries[key].get("leaves", ())
                if leaf[0] == "array"):
            entry = old_entries[key]
            for leaf in entry.get("leaves", ()):
                if leaf[0] == "array":
                    size = int(np.prod(leaf[2])) if leaf[2] else 1
                    leaf[4] = store(old_flat[leaf[1]][leaf[4]:leaf[4] + size], leaf[1])
            entries[key] = entry
            continue
        jax.config.update("jax_enable_x64", c["x64"])
        jax.config.update("jax_threefry_partitionable", c["partitionable"])
        if computed >= limit:
            skipped += 1
            continue
        computed += 1
        if computed % 250 == 0:
            jax.clear_caches()
            gc.collect()
        try:
            out = cases.run(c, transform, fw)
            leaves, tree = cases.flatten(out)
            recorded = []
            for leaf in leaves:
                kind, payload = cases.describe_leaf(leaf)
                if kind == "array":
                    dtype, shape, weak = payload
                    recorded.append(["array", dtype, list(shape), weak, store(leaf, dtype)])
                elif kind == "py":
                    value = payload[1]
                    if isinstance(value, float) and not np.isfinite(value):
                        value = repr(value)
                    recorded.append(["py", payload[0], value])
                else:
                    recorded.append([kind, payload])
            entries[key] = {"tree": tree, "leaves": recorded}
        except Exception as e:  # noqa: BLE001 (JAX's error type is the golden fact)
            if isinstance(e, (AssertionError, KeyError, NameError)) and "jax" not in type(
                    e).__module__:
                print(f"spec problem? {key}: {type(e).__name__}: {e}", file=sys.stderr)
            entries[key] = {"error": type(e).__name__,
                            "mro": [t.__name__ for t in type(e).__mro__]}
    jax.config.update("jax_enable_x64", False)
    jax.config.update("jax_threefry_partitionable", False)
    names = {mod: public_names(fw.module(mod)) for mod in cases.MODULES}
    with open(os.path.join(HERE, "golden_conformance.json"), "w") as fh:
        fh.write('{"jax_version": %s,\n"jax_names": %s,\n"entries": {\n' % (
            json.dumps(jax.__version__), json.dumps(names)))
        fh.write(",\n".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in entries.items()))
        fh.write("\n}}\n")
    np.savez_compressed(os.path.join(HERE, "golden_conformance.npz"),
                        **{dt: raw(np.concatenate(bufs)) for dt, bufs in flat.items()})
    errors = sum("error" in e for e in entries.values())
    print(f"{len(entries)} entries ({errors} errors) from {len(cases.CASES)} cases; "
          f"{computed} computed" + (f", {skipped} skipped over GEN_LIMIT: run again with an "
                                    f"argument" if skipped else ""))


if __name__ == "__main__":
    main()
