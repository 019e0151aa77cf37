"""Records JAX 0.10.2's behaviour of the top-level config names corejax adds in
tests/test_api_toplevel.py (no_tracing, no_execution, legacy_prng_key, default_prng_impl,
enable_checks, make_user_context) into api_toplevel.json.

Run with real JAX (never imported by corejax):  /work/jaxvenv/bin/python gen_api_toplevel.py
"""
import json
import os
import sys
import warnings

import numpy as np

import jax
import jax.numpy as jnp

from api_toplevel_cases import (leak_cases, leak_outcome, legacy_cases, outcome,
                                user_context_blocks)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "api_toplevel.json")


def states():
    names = ["no_tracing", "no_execution", "legacy_prng_key", "default_prng_impl",
             "check_tracer_leaks",
             "enable_checks"]
    return {n: {"name": getattr(jax, n).name, "default": str(getattr(jax, n).value)
                if not isinstance(getattr(jax, n).value, bool) else getattr(jax, n).value}
            for n in names}


def legacy():
    raw = jax.random.PRNGKey(0)
    out = {}
    for mode in ("allow", "warn", "error"):
        with jax.legacy_prng_key(mode):
            out[mode] = {n: outcome(f) for n, f in legacy_cases(jax, jnp, raw).items()}
    out["bad_value"] = outcome(lambda: jax.config.update("jax_legacy_prng_key", "sometimes"))
    with jax.legacy_prng_key("warn"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out["warn_normal_values"] = np.asarray(jax.random.normal(raw, (3,))).tolist()
    return out


def prng_impl():
    out = {"bad_value": outcome(lambda: jax.config.update("jax_default_prng_impl", "mt19937")),
           "bad_value_ctx": outcome(lambda: jax.default_prng_impl("mt19937").__enter__())}
    try:
        jax.config.update("jax_default_prng_impl", "mt19937")
    except ValueError as e:
        msg = str(e)
        out["accepted"] = sorted(msg[msg.index("[") + 1:msg.index("]")].replace("'", "")
                                 .replace(" ", "").split(","))
    with jax.default_prng_impl("threefry2x32"):
        out["threefry_key_shape"] = list(jax.random.PRNGKey(0).shape)
        out["threefry_key_impl"] = str(jax.random.key_impl(jax.random.key(0)))
    return out


def guards():
    out = {}
    g = jax.jit(lambda x: x + 1)
    g(1.0)
    with jax.no_tracing(True):
        out["no_tracing"] = {
            "cached_call": outcome(lambda: g(1.0)),
            "new_signature": outcome(lambda: g(np.ones(3, np.float32))),
            "new_function": outcome(lambda: jax.jit(lambda x: x * 3)(1.0)),
            "make_jaxpr": outcome(lambda: jax.make_jaxpr(lambda x: x * 2)(1.0)),
            "eval_shape": outcome(lambda: jax.eval_shape(lambda x: x * 2, 1.0)),
            "jit_trace": outcome(lambda: jax.jit(lambda x: x * 4).trace(1.0)),
        }
    out["no_tracing_after"] = outcome(lambda: g(np.ones(3, np.float32)))
    with jax.no_execution(True):
        out["no_execution"] = {
            "cached_jit": outcome(lambda: g(1.0)),
            "eager_op": outcome(lambda: jnp.ones(3) + 1),
            "make_jaxpr": outcome(lambda: jax.make_jaxpr(lambda x: x * 2)(1.0)),
            "eval_shape": outcome(lambda: jax.eval_shape(lambda x: x * 2, 1.0)),
            "device_put": outcome(lambda: jax.device_put(np.ones(3, np.float32))),
        }
        out["no_execution_jaxpr"] = str(jax.make_jaxpr(lambda x: x * 2)(1.0))
    out["no_execution_after"] = float(g(2.0))
    return out


def enable_checks():
    out = {}
    for v in (True, False, 1, 0):
        with jax.enable_checks(v):
            out[repr(v)] = jax.enable_checks.value
    return out


def user_context():
    out = {}
    ctx = jax.make_user_context(default_value=None)
    out["default"] = ctx.value
    traces = []

    @jax.jit
    def f(x):
        traces.append(ctx.value)
        return x * 2

    seq = [None, 0, 0.0, 1, "a", 1, None]
    counts = []
    for v in seq:
        with ctx(v):
            f(1.0)
        counts.append(len(traces))
    out["sequence"] = [repr(v) for v in seq]
    out["trace_counts"] = counts
    out["traced_values"] = [repr(v) for v in traces]
    out.update(user_context_blocks(jax))

    def unhashable():
        with ctx([1, 2]):
            f(1.0)
    out["unhashable"] = outcome(unhashable)
    out["two_positional"] = outcome(lambda: jax.make_user_context(1, 2))
    out["as_decorator"] = outcome(lambda: ctx(3)(lambda: 0)())
    return out


def leaks():
    out = {}
    for name in leak_cases(jax, jnp, []):
        leaked = []
        out[name] = leak_outcome(jax, leak_cases(jax, jnp, leaked)[name])
        leaked.clear()
    return out


def main():
    data = {"jax_version": jax.__version__, "states": states(), "legacy": legacy(),
            "prng_impl": prng_impl(), "guards": guards(), "enable_checks": enable_checks(),
            "user_context": user_context(), "leaks": leaks()}
    with open(OUT, "w") as fh:
        json.dump(data, fh, indent=1, sort_keys=True)
        fh.write("\n")


if __name__ == "__main__":
    main()
