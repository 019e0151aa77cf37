"""Record JAX's pmap (and collectives under pmap) as golden data for corejax.pmap.

Run with a Python that has jax installed (never a corejax dependency); it makes 4 CPU
devices itself:

    /work/jaxvenv/bin/python tests/golden/gen_pmap.py

Writes tests/golden/pmap.json: {"jax_version": ..., "cases": {name: result}}. Each case is a
function body in CASES, run with `jax`, `jnp`, `lax`, `np` bound to one framework and `x4`,
`m42` (float32 inputs) defined; tests/test_pmap.py runs the same bodies on corejax with 4
CPU devices. A result is recorded by `describe`: arrays by values, dtype, shape and (for
pmap outputs) the partition spec of their sharding; an exception by its type.
Cases marked "# as vmap" record JAX's vmap (axis_name=) where JAX 0.10.2's pmap refuses
the program (pmap nested in pmap): corejax runs it, with vmap's semantics.
"""
import json
import os

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pmap.json")

PRELUDE = """
x4 = np.arange(4, dtype=np.float32) * 1.5 - 2.0
m42 = np.arange(8, dtype=np.float32).reshape(4, 2) ** 2 / 7.0 - 1.0
"""

CASES = {
    # --- collectives --------------------------------------------------------------------
    "psum": "return jax.pmap(lambda x: lax.psum(x, 'i'), 'i')(x4)",
    "pmean": "return jax.pmap(lambda x: lax.pmean(x, 'i'), 'i')(m42)",
    "pmax_pmin": "return jax.pmap(lambda x: (lax.pmax(x, 'i'), lax.pmin(x, 'i')), 'i')(m42)",
    "psum_int_bool": "return jax.pmap(lambda x: (lax.psum(x, 'i'), lax.psum(x > 2, 'i')), "
                     "'i')(np.arange(4, dtype=np.int32))",
    "psum_const": "return jax.pmap(lambda x: x + lax.psum(1, 'i'), 'i')(x4)",
    "axis_index": "return jax.pmap(lambda x: x * lax.axis_index('i'), 'i')(m42)",
    "all_gather": "return jax.pmap(lambda x: lax.all_gather(x, 'i'), 'i')(m42)",
    "all_gather_axis1": "return jax.pmap(lambda x: lax.all_gather(x, 'i', axis=1), 'i')(m42)",
    "all_gather_tiled": "return jax.pmap(lambda x: lax.all_gather(x, 'i', tiled=True), "
                        "'i')(m42)",
    "psum_scatter": "return jax.pmap(lambda x: lax.psum_scatter(x, 'i'), 'i')"
                    "(np.arange(16, dtype=np.float32).reshape(4, 4))",
    "psum_scatter_tiled": "return jax.pmap(lambda x: lax.psum_scatter(x, 'i', tiled=True), "
                          "'i')(np.arange(32, dtype=np.float32).reshape(4, 8))",
    "all_to_all": "return jax.pmap(lambda x: lax.all_to_all(x, 'i', 0, 0), 'i')"
                  "(np.arange(16, dtype=np.float32).reshape(4, 4))",
    "all_to_all_tiled": "return jax.pmap(lambda x: lax.all_to_all(x, 'i', 0, 1, tiled=True), "
                        "'i')(np.arange(32, dtype=np.float32).reshape(4, 4, 2))",
    "ppermute": "return jax.pmap(lambda x: lax.ppermute(x, 'i', [(0, 1), (1, 2), (2, 3)]), "
                "'i')(m42)",
    "pshuffle": "return jax.pmap(lambda x: lax.pshuffle(x, 'i', [2, 0, 3, 1]), 'i')(x4)",
    "collectives_in_scan": """
def f(x):
    def body(c, _):
        return lax.psum(c, 'i') * 0.25 + c, None
    return lax.scan(body, x, None, length=3)[0]
return jax.pmap(f, 'i')(m42)""",
    # --- in_axes / out_axes / static / devices -----------------------------------------
    "in_axes_none": "return jax.pmap(lambda x, y: x * y, in_axes=(0, None))(m42, "
                    "np.float32(3.0))",
    "in_axes_1": "return jax.pmap(lambda x: x.sum(), in_axes=1)(m42.T)",
    "in_axes_dict": "return jax.pmap(lambda d: d['a'] + d['b'], in_axes=({'a': 0, 'b': None},)"
                    ")({'a': m42, 'b': np.ones(2, np.float32)})",
    "out_axes_1": "return jax.pmap(lambda x: x * 2, out_axes=1)(m42)",
    "out_axes_none": "return jax.pmap(lambda x: lax.psum(x, 'i'), 'i', out_axes=None)(m42)",
    "out_axes_tuple": "return jax.pmap(lambda x: (x, x.sum()), out_axes=(1, 0))(m42)",
    "static_arg": "return jax.pmap(lambda x, n: x ** n, static_broadcasted_argnums=1)(x4, 3)",
    "two_devices": "return jax.pmap(lambda x: lax.psum(x, 'i'), 'i')(m42[:2])",
    "weak_int": "return jax.pmap(lambda x: x + 1)(np.arange(4, dtype=np.int32))",
    "pytree_out": "return jax.pmap(lambda x: {'s': lax.psum(x, 'i'), 'l': [x, -x]}, 'i')(x4)",
    # --- composition ---------------------------------------------------------------------
    "jit_inside": "return jax.pmap(jax.jit(lambda x: lax.psum(jnp.sin(x), 'i')), 'i')(m42)",
    "grad_inside": "return jax.pmap(jax.grad(lambda x: jnp.sum(jnp.sin(x) * lax.psum(x, 'i'))),"
                   " 'i')(m42)",
    "grad_of_pmap": "return jax.grad(lambda x: jax.pmap(lambda y: jnp.sin(y) * lax.psum(y, 'i')"
                    ", 'i')(x).sum())(x4)",
    "grad_all_gather": "return jax.pmap(jax.grad(lambda x: jnp.sum(lax.all_gather(x, 'i') * "
                       "np.arange(4.0, dtype=np.float32)[:, None])), 'i')(m42)",
    "grad_ppermute": "return jax.pmap(jax.grad(lambda x: jnp.sum(jnp.cos(lax.ppermute(x, 'i', "
                     "[(0, 2), (2, 1), (1, 0)])))), 'i')(m42)",
    "jit_of_pmap": "return jax.jit(jax.pmap(lambda x: lax.pmean(x * x, 'i'), 'i'))(m42)",
    "vmap_inside": "return jax.pmap(jax.vmap(lambda x: lax.psum(x, ('i', 'j')), "
                   "axis_name='j'), 'i')(m42)",
    "vmap_of_pmap": "return jax.vmap(jax.pmap(lambda x: lax.psum(x, 'i'), 'i'))(m42.T)",
    "nested": "return jax.vmap(jax.vmap(lambda x: (lax.psum(x, 'i'), lax.axis_index('j')), "
              "axis_name='j'), axis_name='i')(m42)  # as vmap",
    # --- errors ----------------------------------------------------------------------------
    "error_too_many": "return jax.pmap(lambda x: x)(np.zeros(5, np.float32))",
    "error_unbound": "return jax.pmap(lambda x: lax.psum(x, 'j'), 'i')(x4)",
    "error_sizes": "return jax.pmap(lambda x, y: x + y)(x4, np.zeros(3, np.float32))",
    "error_in_axes_len": "return jax.pmap(lambda x: x, in_axes=(0, 0))(x4)",
    "error_no_mapped": "return jax.pmap(lambda x: x, in_axes=None, axis_size=4)(x4)",
    "error_axis_size": "return jax.pmap(lambda x: x, axis_size=3)(x4)",
    "error_pmax_grad": "return jax.pmap(jax.grad(lambda x: lax.pmax(x, 'i')), 'i')(x4)",
}

# Nested pmap is checked against JAX's vmap-of-vmap (JAX 0.10.2's pmap refuses it); in
# corejax the same body written with pmap runs.
COREJAX_BODIES = {
    "nested": "return jax.pmap(jax.pmap(lambda x: (lax.psum(x, 'i'), lax.axis_index('j')), "
              "'j'), 'i')(m42)",
}


def describe(x, np):
    if isinstance(x, (tuple, list)):
        return [describe(v, np) for v in x]
    if isinstance(x, dict):
        return {k: describe(v, np) for k, v in sorted(x.items())}
    sharding = getattr(x, "sharding", None)
    spec = getattr(sharding, "spec", None)
    value = np.asarray(x)
    return {"value": value.tolist(), "dtype": str(value.dtype), "shape": list(value.shape),
            "spec": None if spec is None else [None if p is None else str(p) for p in spec]}


def run_case(name, env, bodies=None):
    body = (bodies or {}).get(name, CASES[name])
    scope = dict(env)
    exec(PRELUDE, scope)
    src = "def _case():\n" + "\n".join("    " + line for line in body.strip().splitlines())
    exec(src, scope)
    try:
        out = scope["_case"]()
    except Exception as e:  # noqa: BLE001 - the exception type is the golden result
        return {"raises": [c.__name__ for c in type(e).__mro__
                           if c.__name__ in ("ValueError", "TypeError", "NameError",
                                             "IndexError", "RuntimeError")][:1]}
    return describe(out, env["np"])


def main():
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax import lax
    env = {"jax": jax, "jnp": jnp, "lax": lax, "np": np}
    cases = {name: run_case(name, env) for name in CASES}
    with open(OUT, "w") as f:
        json.dump({"jax_version": jax.__version__, "cases": cases}, f, indent=0,
                  sort_keys=True)
    print(f"wrote {OUT}: {len(cases)} cases")


if __name__ == "__main__":
    main()
