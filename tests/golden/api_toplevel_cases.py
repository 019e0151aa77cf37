"""The calls tests/test_api_toplevel.py makes and tests/golden/gen_api_toplevel.py records
with JAX, written once for both frameworks."""
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
