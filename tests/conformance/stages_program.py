"""The ahead-of-time stages (jit(f).trace / .lower / .compile) exercised identically under JAX
(gen_stages.py records the printed lines) and corejax (test_stages.py compares)."""


def run(jax, jnp):
    out = []

    def f(x, n, *, k=1.0):
        return x * n + k

    jf = jax.jit(f, static_argnums=1)
    t = jf.trace(jnp.ones(3), 2, k=3.0)
    out += [repr(t.out_info), repr(t.in_avals), t.fun_name, repr(t.in_tree), repr(t.out_tree)]
    c = t.lower().compile()
    out.append(repr(c(jnp.ones(3), k=3.0).tolist()))
    for args, kwargs in [((jnp.ones(3), 2), dict(k=3.0)), ((jnp.ones(4),), dict(k=3.0)),
                         ((jnp.ones(3, dtype=jnp.int32),), dict(k=3.0)), ((jnp.ones(3),), {})]:
        try:
            out.append(repr(c(*args, **kwargs)))
        except Exception as e:  # noqa: BLE001
            out.append(type(e).__name__)
    out.append(repr(c.cost_analysis()["flops"]))
    out.append(repr(jf.eval_shape(jnp.ones(3), 2)))
    mm = jax.jit(lambda a, b: a @ b).lower(jnp.ones((4, 5)), jnp.ones((5, 6))).compile()
    out.append(repr(mm.cost_analysis()["flops"]))
    out.append(repr((mm.out_info.shape, str(mm.out_info.dtype))))
    m = jax.jit(lambda a, b: a * b, donate_argnums=0).trace(jnp.ones(3), jnp.ones(3))
    out.append(repr((m.donate_argnums, m.args_info[0][0].donated, m.args_info[0][1].donated)))
    out.append(repr(isinstance(mm, jax.stages.Compiled)))
    out.append(repr(isinstance(jf.lower(jnp.ones(2), 3), jax.stages.Lowered)))
    tr = jax.jit(lambda d: {"s": d["a"].sum(), "m": d["b"] * 2}).trace(
        {"a": jnp.ones((2, 3)), "b": jnp.arange(4)})
    out += [repr(tr.out_info), repr(tr.in_tree)]
    j = jax.jit(lambda x, y: (jnp.sin(x) * 2.0, y)).trace(jnp.ones(2), 3).jaxpr
    out.append(repr(([str(a) for a in j.in_avals], [str(a) for a in j.out_avals])))
    return out
