"""Record JAX's type promotion table as golden data for corejax's dtypes.

Run with a Python that has jax installed (never a corejax dependency):

    python tests/golden/gen_promotion.py

Writes tests/golden/promotion.json:
  {"jax_version": ..., "operands": {name: description},
   "x64_disabled": {"unary": {a: type}, "binary": {a: {b: {"result_type": type, "add": type}}}},
   "x64_enabled": {...same...}}
A type is a dtype name, with a trailing "*" when the value is weakly typed
("float32*"). "result_type" is jnp.result_type(x, y) (a dtype, so never weak);
"add" is the dtype and weak type of jnp.add(x, y) (the same promotion as ``x + y`` when one
side is an array). Operand names starting with "py_" are Python scalars (weakly typed);
the others are 0-d arrays of that dtype.
"""
import json
import os

import jax
import jax.numpy as jnp

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "promotion.json")
ARRAY_DTYPES_X32 = ["bool", "uint8", "uint16", "uint32", "int8", "int16", "int32",
                    "float16", "bfloat16", "float32", "complex64"]
ARRAY_DTYPES_X64 = ARRAY_DTYPES_X32 + ["uint64", "int64", "float64", "complex128"]
PY_SCALARS = {"py_bool": True, "py_int": 1, "py_float": 1.5, "py_complex": 1 + 1j}


def operand(name):
    if name in PY_SCALARS:
        return PY_SCALARS[name]
    return jnp.ones((), dtype=name)


def type_name(x):
    aval = jax.typeof(x)
    return aval.dtype.name + ("*" if aval.weak_type else "")


def table(array_dtypes):
    names = array_dtypes + list(PY_SCALARS)
    unary = {a: type_name(jnp.asarray(operand(a))) for a in names}
    binary = {}
    for a in names:
        row = binary[a] = {}
        for b in names:
            x, y = operand(a), operand(b)
            row[b] = {"result_type": jnp.result_type(x, y).name, "add": type_name(jnp.add(x, y))}
    return {"unary": unary, "binary": binary}


def main():
    out = {"jax_version": jax.__version__,
           "operands": {**{d: f"jnp.ones((), {d})" for d in ARRAY_DTYPES_X64},
                        **{k: repr(v) for k, v in PY_SCALARS.items()}}}
    jax.config.update("jax_enable_x64", False)
    out["x64_disabled"] = table(ARRAY_DTYPES_X32)
    jax.config.update("jax_enable_x64", True)
    out["x64_enabled"] = table(ARRAY_DTYPES_X64)
    jax.config.update("jax_enable_x64", False)
    with open(OUT, "w") as f:
        json.dump(out, f, separators=(",", ":"), sort_keys=False)
        f.write("\n")
    print(f"wrote {OUT}: {os.path.getsize(OUT)} bytes")


if __name__ == "__main__":
    main()
