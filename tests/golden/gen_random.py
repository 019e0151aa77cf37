"""Record JAX's PRNG outputs as golden data for corejax.random.

Run with a Python that has jax installed (never a corejax dependency):

    python tests/golden/gen_random.py

Writes tests/golden/random.npz holding
  * ``meta``: UTF-8 JSON bytes (uint8) with jax's version, the case list and the seed facts;
  * one flat array per result dtype (named by the dtype), all results of that dtype
    concatenated; a case's ``result`` is ``{"dtype", "offset", "shape"}`` into it.

A case is a dict: ``fn`` (a jax.random function name, or one of the raw threefry entry
points), ``key`` (a seed for ``PRNGKey``, or null), ``kwargs`` (JSON; arrays are written as
``{"array": nested_list, "dtype": name}``, dtypes as their names), ``x64`` and
``partitionable`` flags, and either ``result`` (where its array lies, see above) or ``error``
(the exception type name jax raised).
"""
import json
import os

import numpy as np

import jax
import jax.numpy as jnp
from jax.extend.random import threefry2x32_p, threefry_2x32

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "random.npz")
SEEDS = (0, 42, 1234)


def arr(values, dtype):
    return {"array": np.asarray(values, dtype=dtype).tolist(), "dtype": dtype}


def decode(value):
    if isinstance(value, dict) and "array" in value:
        return jnp.asarray(np.asarray(value["array"], dtype=value["dtype"]))
    return value


def sampler_cases():
    """(fn, kwargs, seeds) triples for functions that take a key first."""
    logits5 = arr([0.1, -1.0, 2.0, 0.5, 0.0], "float32")
    logits35 = arr(np.linspace(-2, 2, 15).reshape(3, 5), "float32")
    probs10 = arr(np.arange(1, 11) / 55.0, "float32")
    out = []
    add = lambda fn, kw, seeds=SEEDS: out.append((fn, kw, seeds))
    add("split", {"num": 2})
    add("split", {"num": 3})
    add("split", {"num": 5})
    add("split", {"num": [2, 3]}, (0,))
    for data in (0, 1, 7, 123456, 2**31 - 1, 2**32 - 1):
        add("fold_in", {"data": data})
    add("fold_in", {"data": -1}, (0,))
    for dtype in ("uint32", "uint8", "uint16"):
        for shape in ([], [7], [3, 5]):
            add("bits", {"shape": shape, "dtype": dtype})
    add("bits", {"shape": [1001]}, (0,))
    for shape in ([], [5], [2, 3]):
        add("uniform", {"shape": shape})
        add("normal", {"shape": shape})
    add("uniform", {})
    add("normal", {})
    add("uniform", {"shape": [1001]}, (0,))
    add("normal", {"shape": [1001]}, (0,))
    add("uniform", {"shape": [5], "minval": -2.0, "maxval": 3.0})
    add("uniform", {"shape": [2, 3], "minval": arr([0.0, 10.0, 100.0], "float32"), "maxval": 1000.0})
    add("uniform", {"shape": [5], "dtype": "float16"})
    add("normal", {"shape": [5], "dtype": "float16"})
    add("randint", {"shape": [5], "minval": 0, "maxval": 10})
    add("randint", {"shape": [3, 4], "minval": -5, "maxval": 5})
    add("randint", {"shape": [7], "minval": -100, "maxval": 1000})
    add("randint", {"shape": [], "minval": 3, "maxval": 4})
    add("randint", {"shape": [10], "minval": 0, "maxval": 2**31 - 1})
    add("randint", {"shape": [10], "minval": -(2**31), "maxval": 2**31 - 1})
    add("randint", {"shape": [6], "minval": -3, "maxval": 3, "dtype": "int8"})
    add("randint", {"shape": [6], "minval": 0, "maxval": 300, "dtype": "uint8"})
    add("randint", {"shape": [4], "minval": arr([0, 10, 100, -50], "int32"), "maxval": 200})
    add("bernoulli", {"shape": [10]})
    add("bernoulli", {"p": 0.3, "shape": [3, 4]})
    add("bernoulli", {"p": arr([0.1, 0.5, 0.9], "float32")})
    add("bernoulli", {"p": 0.3, "shape": [6], "mode": "high"}, (0,))
    add("permutation", {"x": 10})
    add("permutation", {"x": 100}, (0,))
    add("permutation", {"x": arr(np.arange(12).reshape(3, 4), "int32")})
    add("permutation", {"x": arr(np.arange(12).reshape(3, 4), "int32"), "axis": 1, "independent": True})
    add("truncated_normal", {"lower": -1.0, "upper": 2.0, "shape": [5]})
    add("truncated_normal", {"lower": -2.0, "upper": 2.0, "shape": [3, 4]})
    add("truncated_normal", {"lower": 0.0, "upper": float("inf"), "shape": [5]}, (0,))
    add("truncated_normal", {"lower": arr([-1.0, 0.0, 1.0], "float32"), "upper": 3.0})
    add("gumbel", {"shape": [5]})
    add("gumbel", {"shape": [2, 3]})
    add("gumbel", {"shape": [5], "mode": "high"}, (0,))
    add("exponential", {"shape": [5]})
    add("exponential", {"shape": [2, 3]})
    add("laplace", {"shape": [5]})
    add("logistic", {"shape": [5]})
    add("categorical", {"logits": logits5})
    add("categorical", {"logits": logits35})
    add("categorical", {"logits": logits35, "axis": 0})
    add("categorical", {"logits": logits35, "shape": [4, 3]})
    add("categorical", {"logits": logits5, "shape": [8]})
    add("categorical", {"logits": arr(np.log(np.arange(1, 11) / 55.0), "float32"),
                        "shape": [5], "replace": False})
    add("choice", {"a": 5})
    add("choice", {"a": 10, "shape": [3]})
    add("choice", {"a": 10, "shape": [5], "replace": False})
    add("choice", {"a": 10, "shape": [4], "p": probs10})
    add("choice", {"a": 10, "shape": [4], "replace": False, "p": probs10})
    add("choice", {"a": arr(np.arange(12).reshape(4, 3) * 10, "int32"), "shape": [2]})
    add("choice", {"a": arr(np.arange(12).reshape(4, 3) * 10, "int32"), "shape": [2],
                   "replace": False, "axis": 1})
    add("multivariate_normal", {"mean": arr([0.0, 1.0, -1.0], "float32"),
                                "cov": arr([[2.0, 0.5, 0.0], [0.5, 1.0, 0.2], [0.0, 0.2, 0.5]], "float32"),
                                "shape": [4]})
    return out


def x64_cases():
    out = [("PRNGKey", {"seed": s}, (None,)) for s in (-1, 2**31, 2**40, 2**63 - 1, -(2**63))]
    out += [("uniform", {"shape": [5]}, (0, 42)), ("normal", {"shape": [5]}, (0, 42)),
            ("bits", {"shape": [5], "dtype": "uint64"}, (0, 42)),
            ("randint", {"shape": [5], "minval": -10, "maxval": 10}, (0, 42)),
            ("randint", {"shape": [5], "minval": 0, "maxval": 2**40, "dtype": "int64"}, (0, 42)),
            ("uniform", {"shape": [5], "dtype": "float32"}, (0,))]
    return out


def seed_cases():
    seeds = (0, 42, 2**31 - 1, -1, 2**32 + 5, 2**40, 2**63 - 1)
    out = [("PRNGKey", {"seed": s}, (None,)) for s in seeds]
    out += [("key_data_of_key", {"seed": s}, (None,)) for s in (0, 42)]
    out += [("PRNGKey", {"seed": 2**64}, (None,)), ("PRNGKey", {"seed": 1.5}, (None,))]
    return out


def error_cases():
    return [
        ("split", {"num": 2, "raw_key": arr([1, 2, 3], "uint32")}, (None,)),
        ("split", {"num": 2, "raw_key": arr([1, 2], "int32")}, (None,)),
        ("uniform", {"shape": [3], "raw_key": arr([1.0, 2.0], "float32")}, (None,)),
        ("uniform", {"shape": [3], "dtype": "int32"}, (0,)),
        ("normal", {"shape": [3], "dtype": "int32"}, (0,)),
        ("randint", {"shape": [3], "minval": 0, "maxval": 10, "dtype": "float32"}, (0,)),
        ("bits", {"shape": [3], "dtype": "int32"}, (0,)),
        ("choice", {"a": 3, "shape": [5], "replace": False}, (0,)),
        ("categorical", {"logits": arr(np.zeros((3, 5)), "float32"), "shape": [4]}, (0,)),
    ]


def threefry_cases():
    """Raw primitive outputs: (k0, k1, x0, x1) -> (y0, y1); includes Random123's vectors."""
    u = lambda v: arr(v, "uint32")
    big = np.arange(37, dtype=np.uint64) * 2654435761 % 2**32
    prim = [
        (u(0), u(0), u([0]), u([0])),
        (u(0xFFFFFFFF), u(0xFFFFFFFF), u([0xFFFFFFFF]), u([0xFFFFFFFF])),
        (u(0x13198A2E), u(0x03707344), u([0x243F6A88]), u([0x85A308D3])),
        (u(42), u(1234), u(np.arange(10)), u(np.arange(10) + 100)),
        (u(0xDEADBEEF), u(0x12345678), u(big), u(big[::-1])),
    ]
    out = [("threefry2x32_p", {"k0": a, "k1": b, "x0": c, "x1": d}, (None,)) for a, b, c, d in prim]
    for keypair, count in ((u([0, 0]), u(np.arange(5))), (u([42, 1234]), u(np.arange(12).reshape(3, 4))),
                           (u([7, 9]), u(big))):
        out.append(("threefry_2x32", {"keypair": keypair, "count": count}, (None,)))
    return out


def call(fn, seed, kwargs):
    kw = {k: decode(v) for k, v in kwargs.items()}
    for k in ("shape", "num"):
        if isinstance(kw.get(k), list):
            kw[k] = tuple(kw[k])
    if "dtype" in kw:
        kw["dtype"] = jnp.dtype(kw["dtype"])
    if fn == "threefry2x32_p":
        y0, y1 = threefry2x32_p.bind(kw["k0"], kw["k1"], kw["x0"], kw["x1"])
        return np.stack([np.asarray(y0), np.asarray(y1)])
    if fn == "threefry_2x32":
        return threefry_2x32(kw["keypair"], kw["count"])
    if fn == "PRNGKey":
        return jax.random.PRNGKey(kw["seed"])
    if fn == "key_data_of_key":
        return jax.random.key_data(jax.random.key(kw["seed"]))
    key = kw.pop("raw_key") if "raw_key" in kw else jax.random.PRNGKey(seed)
    return getattr(jax.random, fn)(key, **kw)


def main():
    meta = {"jax_version": jax.__version__, "default_threefry_partitionable":
            bool(jax.config.jax_threefry_partitionable), "cases": []}
    buffers = {}
    groups = [(False, sampler_cases() + seed_cases() + threefry_cases() + error_cases()),
              (True, x64_cases())]
    for partitionable in (False, True):
        jax.config.update("jax_threefry_partitionable", partitionable)
        for x64, cases in groups:
            jax.config.update("jax_enable_x64", x64)
            for fn, kwargs, seeds in cases:
                for seed in seeds:
                    case = {"fn": fn, "key": seed, "kwargs": kwargs, "x64": x64,
                            "partitionable": partitionable}
                    try:
                        value = np.asarray(call(fn, seed, kwargs))
                    except Exception as e:  # the exception type is the golden fact
                        case["error"] = type(e).__name__
                    else:
                        flat = buffers.setdefault(value.dtype.name, [])
                        case["result"] = {"dtype": value.dtype.name, "shape": list(value.shape),
                                          "offset": sum(b.size for b in flat)}
                        flat.append(value.ravel())
                    meta["cases"].append(case)
        jax.config.update("jax_enable_x64", False)

    jax.config.update("jax_threefry_partitionable", False)
    facts = {
        "uniform(PRNGKey(42))": float(jax.random.uniform(jax.random.PRNGKey(42))),
        "uniform(key(42)) + normal(key(42))": float(jax.random.uniform(jax.random.key(42))
                                                    + jax.random.normal(jax.random.key(42))),
    }
    assert np.float32(facts["uniform(PRNGKey(42))"]) == np.float32(0.42672753), facts
    assert np.float32(facts["uniform(key(42)) + normal(key(42))"]) == np.float32(0.24201576), facts
    meta["seed_facts_nonpartitionable"] = facts
    arrays = {dtype: np.concatenate(flat) for dtype, flat in buffers.items()}
    meta_bytes = np.frombuffer(json.dumps(meta, separators=(",", ":")).encode(), np.uint8)
    np.savez_compressed(OUT, meta=meta_bytes, **arrays)
    print(f"wrote {OUT}: {len(meta['cases'])} cases, {os.path.getsize(OUT)} bytes")


if __name__ == "__main__":
    main()
