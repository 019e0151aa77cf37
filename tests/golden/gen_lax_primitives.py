"""Record the primitives jax.lax exports (`jax.lax.add_p`, ...) with their names.

Run with a Python that has jax installed (never a corejax dependency):

    python tests/golden/gen_lax_primitives.py

Writes tests/golden/lax_primitives.json: {"jax_version": ..., "primitives": {attribute:
{"name": primitive name, "multiple_results": bool}}}. tests/test_lax_primitives.py checks that
each corejax.lax attribute of the same spelling is the primitive corejax stages for it.
"""
import json
import os

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lax_primitives.json")


def main():
    import jax
    import jax.lax as lax
    prims = {}
    for attr in sorted(dir(lax)):
        if attr.endswith("_p") and not attr.startswith("_"):
            p = getattr(lax, attr)
            prims[attr] = {"name": p.name, "multiple_results": bool(p.multiple_results)}
    with open(OUT, "w") as f:
        json.dump({"jax_version": jax.__version__, "primitives": prims}, f, indent=1)
        f.write("\n")
    print(f"wrote {len(prims)} primitives to {OUT}")


if __name__ == "__main__":
    main()
