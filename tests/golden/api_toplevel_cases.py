"""The calls tests/test_api_toplevel.py makes and tests/golden/gen_api_toplevel.py records
with JAX, written once for both frameworks."""
import threading
import warnings


def outcome(f):
    """'ok', 'warn:<Category>' or 'raise:<ExceptionType>' for calling f."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            f()
        except Exception as e:  # noqa: BLE001 - the exception type is the outcome
            return f"raise:{type(e).__name__}"
    cats = sorted({w.category.__name__ for w in caught
                   if not issubclass(w.category, DeprecationWarning)})
    return f"warn:{cats[0]}" if cats else "ok"


def legacy_cases(jax, jnp, raw):
    """The random calls legacy_prng_key judges, on a raw uint32 key `raw`."""
    r = jax.random
    return {
        "normal": lambda: r.normal(raw, (2,)),
        "uniform": lambda: r.uniform(raw, (2,)),
        "split": lambda: r.split(raw),
        "fold_in": lambda: r.fold_in(raw, 3),
        "bits": lambda: r.bits(raw, (2,)),
        "key_data": lambda: r.key_data(raw),
        "key_impl": lambda: r.key_impl(raw),
        "wrap_key_data": lambda: r.wrap_key_data(raw),
        "clone": lambda: r.clone(raw),
        "PRNGKey": lambda: r.PRNGKey(0),
        "typed_normal": lambda: r.normal(r.key(0), (2,)),
        "typed_key_data": lambda: r.key_data(r.key(0)),
        "jit_normal": lambda: jax.jit(lambda k: r.normal(k, (2,)))(raw),
        "vmap_split": lambda: jax.vmap(r.split)(jnp.stack([raw, raw])),
    }


def leak_cases(jax, jnp, leaked):
    """Transformations of functions that leave their argument (a tracer) in `leaked`, or
    put it there and take it out again, for the tracer leak checker."""
    lax = jax.lax

    def keep(x):
        leaked.append(x)
        return x * 2

    def drop(x):
        leaked.append(x)
        leaked.clear()
        return x * 2

    return {
        "jit": lambda: jax.jit(keep)(1.0),
        "vmap": lambda: jax.vmap(keep)(jnp.ones(3)),
        "grad": lambda: jax.grad(keep)(1.0),
        "jvp": lambda: jax.jvp(keep, (1.0,), (1.0,)),
        "make_jaxpr": lambda: jax.make_jaxpr(keep)(1.0),
        "eval_shape": lambda: jax.eval_shape(keep, 1.0),
        "jit_dropped": lambda: jax.jit(drop)(1.0),
        "vmap_dropped": lambda: jax.vmap(drop)(jnp.ones(3)),
        "jit_of_vmap": lambda: jax.jit(jax.vmap(keep))(jnp.ones(3)),
        "vmap_of_jit": lambda: jax.vmap(jax.jit(keep))(jnp.ones(3)),
        "scan": lambda: lax.scan(lambda c, x: (keep(c), x), 0.0, jnp.ones(2)),
        "scan_clean": lambda: lax.scan(lambda c, x: (c * 2, x), 0.0, jnp.ones(2)),
        "cond": lambda: lax.cond(True, keep, lambda x: x, 1.0),
        "while_loop": lambda: lax.while_loop(lambda c: c < 3, keep, 1.0),
    }


def leak_outcome(jax, f):
    """'ok', or 'leak:staging' / 'leak:batch' (the kind of trace the error names: JAX's
    DynamicJaxprTrace is corejax's StagingTrace), or 'raise:<type>' for another error."""
    with jax.checking_leaks():
        try:
            f()
        except Exception as e:  # noqa: BLE001 - the error is the outcome
            first = str(e).split("\n")[0]
            if type(e) is Exception and first.startswith("Leaked trace "):
                name = first[len("Leaked trace "):].rstrip(".")
                return "leak:batch" if "Batch" in name else "leak:staging" if (
                    "Jaxpr" in name or "Staging" in name) else f"leak:{name}"
            return f"raise:{type(e).__name__}"
    return "ok"


def user_context_blocks(jax):
    """What a user context reads in nested blocks, from another thread inside a block, and
    after set_global."""
    out = {}
    ctx = jax.make_user_context(default_value=None)
    with ctx(1):
        with ctx(2):
            out["nested_inner"] = ctx.value
        out["nested_outer"] = ctx.value
    out["after_blocks"] = ctx.value
    ctx5 = jax.make_user_context(5)
    with ctx5(7):
        seen = []
        t = threading.Thread(target=lambda: seen.append(ctx5.value))
        t.start()
        t.join()
        out["other_thread_sees"] = seen[0]
        out["this_thread_sees"] = ctx5.value
    ctx5.set_global(9)
    out["after_set_global"] = [ctx5.value, ctx5.get_global()]
    return out
