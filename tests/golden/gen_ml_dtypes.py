"""Record JAX's behaviour on ml_dtypes' types (bfloat16, float8/6/4, int1/2/4, uint1/2/4) as
golden data for tests/test_ml_dtypes.py.

    /work/jaxvenv/bin/python tests/golden/gen_ml_dtypes.py

The computations are ml_dtypes_cases.py's. Writes tests/golden/ml_dtypes.json:
  {"jax_version", "entries": {key: entry}} where an entry is {"error": exception type name} or
  {"dtype": name, "shape": [...], "offset": n} (its raw bits, at offset n of the npz array of
  that width), plus "finfo", "iinfo", "issubdtype", "can_cast", "isdtype" tables;
and tests/golden/ml_dtypes.npz: the bits of every recorded array, concatenated by width
("u1", "u2", "u4", "u8"). Keys: "src/<dtype>" (the cast sources), "cast/<src>/<dst>",
"unary/<dtype>/<op>", "binary/<dtype>/<op>", "reduce/<dtype>/<op>"; "source_errors": the types
JAX could not even make its sources of (their sources are NumPy + ml_dtypes casts). Each op is also run under
jax.jit; any entry whose jit result differs in a bit from the eager one is listed in
"jit_differs" (none did with JAX 0.10.2 on CPU).
"""
import json
import os
import sys
import warnings

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax, nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ml_dtypes_cases as mc  # noqa: E402


class FW:
    numpy, lax, nn, jit = jnp, lax, nn, jax.jit


class NumpyFW:
    """Sources JAX cannot make (types XLA's CPU backend lacks) are made by NumPy + ml_dtypes."""
    numpy = np


def _same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    return np.array_equal(mc.bits_of(a), mc.bits_of(b))


def main():
    warnings.simplefilter("ignore")
    entries, flat, sizes, jit_differs = {}, {}, {}, []

    def store(key, out):
        out = np.asarray(out)
        bits = mc.bits_of(out)
        width = bits.dtype.str[1:]
        offset = sizes.get(width, 0)
        flat.setdefault(width, []).append(bits.reshape(-1))
        sizes[width] = offset + bits.size
        entries[key] = {"dtype": out.dtype.name, "shape": list(out.shape), "offset": offset}

    def record(key, fn, *np_args):
        try:
            args = [jnp.asarray(a) for a in np_args]
            out = fn(*args)
            np.asarray(out)
        except Exception as e:  # noqa: BLE001 (the exception type is the golden fact)
            entries[key] = {"error": type(e).__name__}
            return
        store(key, out)
        try:
            jitted = jax.jit(fn)(*args)
        except Exception:  # noqa: BLE001
            jit_differs.append(key)
            return
        if not _same_bits(out, jitted):
            jit_differs.append(key)

    sources, source_errors = {}, {}

    def cast_block(srcs, dsts):
        for s in srcs:
            try:
                x = np.asarray(mc.source_values(s, FW))
            except Exception as e:  # noqa: BLE001  (XLA's CPU backend lacks float6 and uint1)
                source_errors[s] = type(e).__name__
                x = np.asarray(mc.source_values(s, NumpyFW))
            store(f"src/{s}", x)
            sources[s] = x
            for d in dsts:
                record(f"cast/{s}/{d}", lambda v, d=d: v.astype(d), sources[s])

    jax.config.update("jax_enable_x64", False)
    everything = mc.STANDARD_X32 + mc.ML
    if os.environ.get("GEN_QUICK"):  # a trial run of the script itself
        everything = ["float32", "bfloat16", "float6_e2m3fn", "uint1"]
        mc.ML[:] = everything[1:]
    cast_block(everything, everything)
    for t in mc.ML:
        single, pair, matrix = mc.operands(t, sources[t])
        unary_ops, binary_ops, reductions = (
            (mc.INT_UNARY, mc.INT_BINARY, mc.INT_REDUCTIONS) if t in mc.ML_INTS else
            (mc.UNARY, mc.BINARY, mc.REDUCTIONS))
        for op in unary_ops:
            record(f"unary/{t}/{op}", lambda v, op=op: mc.unary(FW, op, v), single)
        for op in binary_ops:
            record(f"binary/{t}/{op}", lambda a, b, op=op: mc.binary(FW, op, a, b),
                   pair, pair)
        for op in reductions:
            record(f"reduce/{t}/{op}", lambda v, op=op: mc.reduction(FW, op, v),
                   matrix)
    jax.config.update("jax_enable_x64", True)
    x64_sources = dict(sources)
    sources.clear()
    cast_block(mc.STANDARD_X64, mc.ML)
    sources.update({k: v for k, v in x64_sources.items() if k in mc.ML})
    for s in mc.ML:
        for d in mc.STANDARD_X64:
            record(f"cast64/{s}/{d}", lambda v, d=d: v.astype(d), sources[s])
    jax.config.update("jax_enable_x64", False)

    def info_value(v):
        if isinstance(v, np.dtype):
            return v.name
        if isinstance(v, (np.generic, np.ndarray)):
            v = np.asarray(v)
            return float(v.astype(np.float64)) if v.dtype.kind not in "iu" else int(v)
        return v

    finfo = {t: {f: info_value(getattr(jnp.finfo(t), f)) for f in mc.FINFO_FIELDS
                 if hasattr(jnp.finfo(t), f)} for t in mc.ML_FLOATS}
    iinfo = {t: {f: info_value(getattr(jnp.iinfo(t), f)) for f in mc.IINFO_FIELDS}
             for t in mc.ML_INTS}
    all_names = mc.STANDARD_X32 + mc.STANDARD_X64 + mc.ML
    others = [getattr(np, b) for b in mc.ABSTRACT] + all_names
    issub = {a: dict(zip(mc.ABSTRACT + all_names, (bool(jnp.issubdtype(a, b)) for b in others)))
             for a in all_names}
    issub_scalar = {a: {b: bool(jnp.issubdtype(getattr(jnp, a), getattr(np, b)))
                        for b in mc.ABSTRACT} for a in mc.ML}
    can_cast = {a: {b: bool(jnp.can_cast(a, b)) for b in all_names} for a in all_names}
    isdtype = {a: {k: bool(jnp.isdtype(a, k)) for k in mc.ISDTYPE_KINDS} for a in all_names}
    itemsize_bits = {a: jax.dtypes.itemsize_bits(a) for a in all_names if a != "bool"}
    out = {"jax_version": jax.__version__, "jit_differs": jit_differs,
           "source_errors": source_errors, "finfo": finfo,
           "iinfo": iinfo, "issubdtype": issub, "issubdtype_scalar_types": issub_scalar,
           "can_cast": can_cast, "isdtype": isdtype, "itemsize_bits": itemsize_bits,
           "entries": entries}
    with open(os.path.join(HERE, "ml_dtypes.json"), "w") as fh:
        json.dump(out, fh, separators=(",", ":"))
        fh.write("\n")
    np.savez_compressed(os.path.join(HERE, "ml_dtypes.npz"),
                        **{w: np.concatenate(b) for w, b in flat.items()})
    errors = sum("error" in e for e in entries.values())
    print(f"{len(entries)} entries ({errors} errors); jit differs from eager in "
          f"{len(jit_differs)}: {jit_differs[:20]}")


if __name__ == "__main__":
    main()
