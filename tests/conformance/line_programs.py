"""Programs whose results are lines of text (reprs of structures, error types, values), run
identically under JAX (gen_line_programs.py records the lines in golden_line_programs.json)
and corejax (test_line_programs.py compares them line by line).

Imports only numpy and the standard library."""
import numpy as np


def stages(jax, jnp):
    """jit(f).trace / .lower / .compile."""
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


def callbacks(jax, jnp):
    """pure_callback eagerly, under jit, under vmap with each vmap_method, and its errors."""
    out, calls = [], []

    def cb(x, y=1.0):
        calls.append(np.shape(x))
        return np.sin(np.asarray(x)) * y

    def both(a, b):
        calls.append((np.shape(a), np.shape(b)))
        return np.asarray(a) + np.asarray(b)

    sd = jax.ShapeDtypeStruct((3,), jnp.float32)
    x = jnp.arange(3.)
    out.append(repr(jax.pure_callback(cb, sd, x).tolist()))
    out.append(repr(jax.jit(lambda x: jax.pure_callback(cb, sd, x, y=2.0))(x).tolist()))
    for m in ["sequential", "sequential_unrolled", "expand_dims", "broadcast_all",
              "legacy_vectorized", None]:
        calls.clear()
        try:
            r = jax.vmap(lambda x: jax.pure_callback(cb, sd, x, vmap_method=m))(jnp.ones((2, 3)))
            out.append(f"{m} {r.shape} {calls} {np.round(np.asarray(r), 5).tolist()}")
        except Exception as e:  # noqa: BLE001
            out.append(f"{m} {type(e).__name__}")
        calls.clear()
        try:
            r = jax.jit(jax.vmap(lambda x, c: jax.pure_callback(both, sd, x, c, vmap_method=m),
                                 in_axes=(0, None)))(jnp.ones((2, 3)), jnp.arange(3.))
            out.append(f"{m} {r.shape} {calls} {np.asarray(r).tolist()}")
        except Exception as e:  # noqa: BLE001
            out.append(f"{m} {type(e).__name__}")
    try:
        jax.grad(lambda x: jax.pure_callback(cb, jax.ShapeDtypeStruct((), jnp.float32), x))(1.)
    except Exception as e:  # noqa: BLE001
        out.append(type(e).__name__)
    out.append(str(jax.pure_callback(lambda x: np.ones(3, np.float64), sd, x).dtype))
    out.append(repr(jax.pure_callback(lambda x: (np.ones(3, np.float32),), sd, x).tolist()))
    r = jax.pure_callback(lambda a: {"s": np.sum(a), "d": np.asarray(a) * 2},
                          {"s": jax.ShapeDtypeStruct((), jnp.float32), "d": x}, x)
    out.append(repr(jax.tree_util.tree_map(lambda v: np.asarray(v).tolist(), r)))
    return out


def transposes(jax, jnp):
    """linear_transpose, custom_gradient and closure_convert."""
    out = []

    def show(v):
        return repr(jax.tree_util.tree_map(lambda a: np.round(np.asarray(a), 5).tolist(), v))

    f = lambda x, y: (0.5 * x - 0.5 * y, jnp.sum(x) * 2.0)  # noqa: E731
    ft = jax.linear_transpose(f, jnp.ones(3), jnp.ones(3))
    out.append(show(ft((jnp.arange(3.), 4.0))))
    out.append(show(jax.linear_transpose(lambda d: d["a"] @ jnp.ones((3, 2)), {
        "a": jax.ShapeDtypeStruct((4, 3), jnp.float32)})(jnp.ones((4, 2)))))
    for bad in [lambda: ft((jnp.arange(3.),)), lambda: ft((jnp.arange(4.), 1.0)),
                lambda: jax.linear_transpose(jnp.sin, 1.0)(1.0),
                lambda: jax.linear_transpose(lambda x: x.astype(jnp.int32), 1.0)]:
        try:
            out.append(show(bad()))
        except Exception as e:  # noqa: BLE001
            out.append(type(e).__name__)

    @jax.custom_gradient
    def f2(x):
        return jnp.sin(x), lambda g: (g * jnp.cos(x) * 10,)
    out.append(show((jax.grad(f2)(1.0), jax.jit(jax.grad(f2))(1.0),
                     jax.vmap(jax.grad(f2))(jnp.arange(3.)),
                     jax.grad(lambda x: f2(x) * x)(0.5))))

    @jax.custom_gradient
    def f3(x, y):
        return x * y, lambda g: (g * y, g * x * 2)
    out.append(show(jax.grad(f3, argnums=(0, 1))(2.0, 3.0)))

    def outer(a):
        conv, consts = jax.closure_convert(lambda x: x * a, 1.0)
        return conv(2.0, *consts), len(consts)
    out.append(show((jax.grad(lambda a: outer(a)[0])(3.0), outer(3.0)[1])))
    conv, consts = jax.closure_convert(lambda x: x * 2, 1.0)
    out.append(show((len(consts), conv(4.0))))
    return out


def custom_vmaps(jax, jnp):
    """custom_batching.custom_vmap and sequential_vmap under vmap, jit, jvp and grad."""
    import importlib
    cb = importlib.import_module(jax.__name__ + ".custom_batching")
    out, log = [], []

    def show(v):
        return repr(jax.tree_util.tree_map(lambda a: np.round(np.asarray(a), 5).tolist(), v))

    @cb.custom_vmap
    def f(x, y):
        return jnp.sin(x) * y

    @f.def_vmap
    def rule(axis_size, in_batched, x, y):
        log.append((axis_size, in_batched, np.shape(x), np.shape(y)))
        return jnp.cos(x) * y, True

    x = jnp.arange(3.)
    out.append(show(f(1., 2.)))
    out.append(show(jax.vmap(f, in_axes=(0, None))(x, 2.)) + repr(log[-1]))
    out.append(show(jax.jit(jax.vmap(f))(x, x)) + repr(log[-1]))
    out.append(show(jax.jvp(f, (1., 2.), (1., 0.))))
    out.append(show(jax.jvp(jax.vmap(f), (x, x), (x, x))) + repr(log[-1]))
    out.append(show(jax.grad(lambda a: jax.vmap(f)(a, a).sum())(x)) + repr(log[-1]))
    out.append(show(jax.vmap(lambda a, b: jax.jvp(f, (a, b), (1., 1.)))(x, x + 1)))

    @cb.custom_vmap
    def h(x):
        return x * 2, x + 1

    @h.def_vmap
    def hr(axis_size, in_batched, x):
        log.append(in_batched)
        return (x * 3, x[0] + 1), (True, False)
    out.append(show(jax.vmap(h)(x)) + repr(log[-1]))
    g = cb.sequential_vmap(lambda a: (log.append(np.shape(a)), a * 2)[1])
    out.append(show(jax.vmap(g)(jnp.ones((2, 3)))) + repr(log[-2:]))

    @cb.custom_vmap
    def k(d):
        return d["a"] + d["b"]

    @k.def_vmap
    def kr(axis_size, in_batched, d):
        log.append(in_batched)
        return d["a"] - d["b"], in_batched[0]["a"] or in_batched[0]["b"]
    out.append(show(jax.vmap(k, in_axes=({"a": 0, "b": None},))({"a": x, "b": 1.0}))
               + repr(log[-1]))
    return out


def io_callbacks(jax, jnp):
    """experimental.io_callback: eager, jit (ordered, results unused), vmap, errors."""
    import importlib
    io_callback = importlib.import_module(jax.__name__ + ".experimental").io_callback
    out, log = [], []

    def cb(x):
        log.append(np.asarray(x).tolist())
        return np.asarray(x) * 2

    sd = jax.ShapeDtypeStruct((), jnp.float32)
    out.append(repr((float(io_callback(cb, sd, 1.0)), list(log))))
    out.append(repr((float(jax.jit(lambda x: io_callback(cb, sd, x, ordered=True))(3.0)),
                     list(log))))
    log.clear()
    out.append(repr((np.asarray(jax.vmap(lambda x: io_callback(cb, sd, x))(
        jnp.arange(3.))).tolist(), list(log))))
    for bad in [lambda: jax.vmap(lambda x: io_callback(cb, sd, x, ordered=True))(jnp.arange(3.)),
                lambda: jax.grad(lambda x: io_callback(cb, sd, x))(1.)]:
        try:
            out.append(repr(bad()))
        except Exception as e:  # noqa: BLE001
            out.append(type(e).__name__)
    log.clear()
    jax.jit(lambda x: (io_callback(cb, sd, x), 1.0)[1])(5.0)
    out.append(repr(log))
    return out


def config_options(jax, jnp):
    """numpy_dtype_promotion='strict', numpy_rank_promotion, debug_infs, and their errors."""
    import warnings
    out = []

    def attempt(f):
        try:
            r = f()
            return f"ok {r.dtype} {r.weak_type}" if hasattr(r, "weak_type") else f"ok {r}"
        except Exception as e:  # noqa: BLE001
            return f"{type(e).__name__} {isinstance(e, ValueError)}"

    pairs = [(jnp.float32(1), 1.0), (jnp.int32(1), 1.0), (jnp.int32(1), 1),
             (jnp.int32(1), jnp.float32(1)), (jnp.float16(1), jnp.float32(1)),
             (jnp.int8(1), jnp.int32(2)), (jnp.ones(2), True), (jnp.float32(1), 1),
             (jnp.uint8(1), 1), (jnp.float16(1), 1.0), (jnp.int32(1), True), (1, 2.0),
             (jnp.bool_(True), True)]
    with jax.numpy_dtype_promotion("strict"):
        out += [attempt(lambda: jnp.add(a, b)) for a, b in pairs]
        out.append(attempt(lambda: jnp.result_type(jnp.int32, jnp.float32)))
        out.append(attempt(lambda: jnp.promote_types(jnp.int32, jnp.float32)))
        out.append(attempt(lambda: jnp.promote_types(jnp.int32, jnp.int32)))
    out.append(attempt(lambda: jnp.add(jnp.int32(1), 1.0)))
    with jax.numpy_rank_promotion("raise"):
        for a, b in [(jnp.ones((2, 3)), jnp.ones(3)), (jnp.ones((2, 3)), 1.0),
                     (jnp.ones((2, 3)), jnp.float32(2)), (jnp.ones((1, 3)), jnp.ones((2, 3)))]:
            out.append(attempt(lambda: (a + b)))
    with jax.numpy_rank_promotion("warn"):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            jnp.ones((2, 3)) + jnp.ones(3)
            out.append(repr([x.category.__name__ for x in w]))
    # (JAX's dtype-promotion value is an enum whose .value is the string)
    out.append(repr((jax.numpy_rank_promotion.value,
                     getattr(jax.numpy_dtype_promotion.value, "value",
                             jax.numpy_dtype_promotion.value),
                     jax.debug_infs.value, jax.log_compiles.value)))
    for k, v in [("jax_numpy_rank_promotion", "bad"), ("jax_numpy_dtype_promotion", "loose")]:
        out.append(attempt(lambda: jax.config.update(k, v)))
    with jax.debug_infs(True):
        out.append(attempt(lambda: jnp.log(jnp.zeros(2))))
        out.append(attempt(lambda: jax.jit(lambda x: jnp.log(x) + 1)(jnp.zeros(2))))
        out.append(attempt(lambda: jnp.log(jnp.ones(2))))
    with jax.default_matmul_precision("float32"):
        out.append(repr(float(jnp.dot(jnp.ones(3), jnp.ones(3)))))
    return out


def array_instances(jax, jnp):
    """isinstance(x, jax.Array) for concrete arrays, tracers under each transformation, and
    non-arrays."""
    out = [repr((isinstance(jnp.ones(2), jax.Array), isinstance(1.0, jax.Array),
                 isinstance(np.ones(2), jax.Array)))]
    seen = []

    def f(x):
        seen.append(isinstance(x, jax.Array))
        return x * 2.0

    jax.jit(f)(1.0)
    jax.grad(f)(1.0)
    jax.vmap(f)(jnp.ones(2))
    jax.jvp(f, (1.0,), (1.0,))
    out.append(repr(seen))
    return out


def precisions(jax, jnp):
    """lax.Precision and the precision argument of dot / jnp.dot."""
    lax = jax.lax
    out = [repr((list(lax.Precision), lax.Precision("highest"), lax.Precision("bfloat16"),
                 lax.Precision.HIGHEST.value, str(lax.Precision.HIGH)))]
    for f in [lambda: lax.Precision("bad"),
              lambda: lax.dot(jnp.ones(2), jnp.ones(2), precision="bad"),
              lambda: lax.dot(jnp.ones(2), jnp.ones(2),
                              precision=(lax.Precision.HIGHEST, lax.Precision.DEFAULT)),
              lambda: jnp.dot(jnp.ones(2), jnp.ones(2), precision=lax.Precision.HIGHEST),
              lambda: jnp.matmul(jnp.ones((2, 2)), jnp.ones(2), precision="highest")]:
        try:
            out.append(repr(np.asarray(f()).tolist()))
        except Exception as e:  # noqa: BLE001
            out.append(type(e).__name__)
    return out


def collectives(jax, jnp):
    """lax collectives over vmap(axis_name=...) axes: values, nesting, jit / scan / cond inside,
    derivatives, errors. (Partial ppermutes, pmax's gradient and invalid perms are left out:
    JAX's vmap fails on them with internal AssertionErrors / NotImplementedError, corejax
    computes the documented semantics.)"""
    lax = jax.lax
    out = []

    def show(tag, f):
        try:
            r = f()
            out.append(tag + " " + repr(jax.tree_util.tree_map(
                lambda a: (np.asarray(a).dtype.name, np.round(np.asarray(a), 4).tolist()), r)))
        except Exception as e:  # noqa: BLE001
            out.append(tag + " " + type(e).__name__)

    x = jnp.arange(12.).reshape(3, 4)
    V = lambda f, **k: jax.vmap(f, axis_name='i', **k)  # noqa: E731
    show("psum", lambda: V(lambda v: lax.psum(v, 'i'))(x))
    show("psum_const", lambda: V(lambda v: lax.psum(2., 'i'))(x))
    show("psum_bool", lambda: V(lambda v: lax.psum(True, 'i'))(x))
    show("pmean", lambda: V(lambda v: lax.pmean(v, 'i'))(x))
    show("pmean_int", lambda: V(lambda v: lax.pmean(v > 3, 'i'))(x))
    show("pmax", lambda: V(lambda v: lax.pmax(v, 'i'))(x))
    show("pmin", lambda: V(lambda v: lax.pmin(v, 'i'))(x))
    show("idx", lambda: V(lambda v: lax.axis_index('i'))(x))
    show("size", lambda: V(lambda v: v * lax.axis_size('i'))(x))
    show("ag", lambda: V(lambda v: lax.all_gather(v, 'i'))(x))
    show("ag1", lambda: V(lambda v: lax.all_gather(v, 'i', axis=1))(x))
    show("agt", lambda: V(lambda v: lax.all_gather(v, 'i', tiled=True))(x))
    y = jnp.arange(36.).reshape(3, 3, 4)
    show("ps", lambda: V(lambda v: lax.psum_scatter(v, 'i'))(y))
    show("pst", lambda: V(lambda v: lax.psum_scatter(v, 'i', scatter_dimension=1, tiled=True))(jnp.arange(36.).reshape(3, 4, 3)))
    show("a2a", lambda: V(lambda v: lax.all_to_all(v, 'i', 0, 1))(y))
    show("a2a_b", lambda: V(lambda v: lax.all_to_all(v, 'i', 1, 0))(jnp.arange(36.).reshape(3, 4, 3)))
    show("a2at", lambda: V(lambda v: lax.all_to_all(v, 'i', 0, 1, tiled=True))(jnp.arange(72.).reshape(3, 6, 4)))
    show("a2at2", lambda: V(lambda v: lax.all_to_all(v, 'i', 1, 0, tiled=True))(jnp.arange(72.).reshape(3, 4, 6)))
    show("pswap", lambda: V(lambda v: lax.pswapaxes(v, 'i', 0))(y))
    show("pperm", lambda: V(lambda v: lax.ppermute(v, 'i', [(0, 1), (1, 2), (2, 0)]))(x))
    show("pshuffle", lambda: V(lambda v: lax.pshuffle(v, 'i', [2, 0, 1]))(x))
    show("grad_psum", lambda: jax.grad(lambda z: V(lambda v: lax.psum(v ** 2, 'i') * v)(z).sum())(x))
    show("grad_pmean", lambda: jax.grad(lambda z: V(lambda v: jnp.sin(lax.pmean(v, 'i')) * v)(z).sum())(x))
    show("grad_ag", lambda: jax.grad(lambda z: V(lambda v: (lax.all_gather(v, 'i') * jnp.arange(3.)[:, None]).sum() * v)(z).sum())(x))
    show("grad_ps", lambda: jax.grad(lambda z: V(lambda v: lax.psum_scatter(v, 'i') ** 2)(z).sum())(y))
    show("grad_a2a", lambda: jax.grad(lambda z: V(lambda v: lax.all_to_all(v, 'i', 0, 1) * jnp.arange(12.).reshape(4, 3))(z).sum())(jnp.arange(36.).reshape(3, 3, 4)))
    show("jit_in", lambda: V(jax.jit(lambda v: lax.psum(v, 'i') + lax.axis_index('i')))(x))
    show("jit_out", lambda: jax.jit(V(lambda v: lax.psum(v, 'i')))(x))
    show("nested", lambda: jax.vmap(V(lambda v: lax.psum(v, ('i', 'j'))), axis_name='j')(jnp.arange(24.).reshape(2, 3, 4)))
    show("nested2", lambda: jax.vmap(V(lambda v: lax.psum(v, 'j') - lax.axis_index('j')), axis_name='j')(jnp.arange(24.).reshape(2, 3, 4)))
    show("nested_idx", lambda: jax.vmap(V(lambda v: lax.axis_index(('j', 'i'))), axis_name='j')(jnp.arange(24.).reshape(2, 3, 4)))
    show("unbound", lambda: lax.psum(1., 'i'))
    show("unbound2", lambda: V(lambda v: lax.psum(v, 'k'))(x))
    show("scan_in", lambda: V(lambda v: lax.scan(lambda c, a: (c + lax.psum(a, 'i'), c), 0., v))(x))
    show("cond_in", lambda: V(lambda v: lax.cond(v[0] > 3, lambda u: lax.psum(u, 'i'), lambda u: u * 0, v))(x))
    show("vjp_in", lambda: V(lambda v: jax.grad(lambda u: (lax.psum(u, 'i') ** 2).sum())(v))(x))
    show("pmean_tree", lambda: V(lambda v: lax.pmean({'a': v, 'b': v[0]}, 'i'))(x))
    show("in_axes", lambda: jax.vmap(lambda v, w: lax.psum(v * w, 'i'), in_axes=(1, None), axis_name='i')(x, 2.))
    show("bad_ps", lambda: V(lambda v: lax.psum_scatter(v, 'i'))(x))
    return out


def dtype_warnings(jax, jnp):
    """The warning for an explicitly requested 64-bit dtype while jax_enable_x64 is off (and
    none for Python's float or a 32-bit dtype)."""
    import warnings
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        jnp.array([1.], dtype=jnp.float64)
        jnp.zeros(3, jnp.float64)
        jnp.ones(2, "float64")
        jnp.arange(3, dtype=jnp.int64)
        jnp.asarray(1., jnp.float64)
        jnp.full(2, 1., jnp.float64)
        jnp.ones(2).astype(jnp.float64)
        jnp.array([1.], dtype=float)
        jnp.zeros(2, dtype=jnp.uint64)
        jnp.eye(2, dtype=jnp.float64)
        jnp.linspace(0, 1, 3, dtype=jnp.float64)
        jnp.astype(jnp.ones(2), jnp.float64)
        jnp.zeros_like(jnp.ones(2), dtype=jnp.float64)
        jnp.array([1.], dtype=jnp.float32)
    return [f"{x.category.__name__} {str(x.message).split('. To enable')[0]}" for x in w]


def effects_in_control_flow(jax, jnp):
    """debug.print inside cond branches, switch, while and scan bodies whose results are unused
    (or that have none), eagerly and under jit: every print happens, once, in order."""
    import contextlib
    import io
    lax = jax.lax

    def f(x):
        lax.cond(x.sum() > 1, lambda: jax.debug.print("cond {}", x.sum()), lambda: None)
        lax.cond(x.sum() > 1, lambda: jax.debug.print("cond {}", x.sum()), lambda: None)
        lax.switch(1, [lambda: None, lambda: jax.debug.print("switch {}", x[0])])
        lax.while_loop(lambda c: c < 2, lambda c: (jax.debug.print("while {}", c), c + 1)[1], 0)
        lax.scan(lambda c, t: (jax.debug.print("scan {}", t), (c, None))[1], 0.0, jnp.arange(2.))
        return x * 2

    out = []
    for name, fn in (("eager", f), ("jit", jax.jit(f))):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            r = fn(jnp.ones(3))
            jax.block_until_ready(r)
            jax.effects_barrier()
        out += [f"{name}: {line}" for line in buf.getvalue().splitlines()]
        out.append(f"{name}: {np.asarray(r).tolist()}")
    return out


def like_descriptions(jax, jnp):
    """zeros_like & co. of shape/dtype descriptions (ShapeDtypeStruct, eval_shape's result)."""
    out = []
    descs = [jax.ShapeDtypeStruct((2,), jnp.float32),
             jax.ShapeDtypeStruct((2, 1), jnp.float32, weak_type=True),
             jax.eval_shape(lambda: jnp.ones(3, jnp.int32)), jax.ShapeDtypeStruct((), jnp.bool_)]
    for d in descs:
        for name, fn in (("zeros", jnp.zeros_like), ("ones", jnp.ones_like),
                         ("full", lambda a: jnp.full_like(a, 3)),
                         ("zeros_f16", lambda a: jnp.zeros_like(a, dtype=jnp.float16)),
                         ("shape", lambda a: jnp.ones_like(a, shape=(1, 2)))):
            r = fn(d)
            out.append(f"{name} {r.dtype} {r.shape} {r.weak_type} {np.asarray(r).tolist()}")
    return out


def numpy_constants(jax, jnp):
    """jnp's constants: value and Python type."""
    return [f"{name} {getattr(jnp, name)!r} {type(getattr(jnp, name)).__name__}"
            for name in ("pi", "e", "euler_gamma", "inf", "nan", "newaxis")]


def doc_page_outputs(jax, jnp):
    """What the tutorial pages print: tracer reprs under each transformation, Array reprs that
    reach the line width, ShapeDtypeStruct.like, allclose on complex values, the remat3 flag,
    and the order print_saved_residuals lists residuals in."""
    import contextlib
    import io
    out = []

    def show(x):
        out.append(repr(x))
        return x * 3

    jax.jit(show)(jnp.ones((2, 3)))
    jax.jit(show)(7)
    jax.vmap(show)(jnp.arange(4))
    jax.vmap(show, in_axes=1)(jnp.ones((2, 5)))
    jax.grad(show)(2.5)
    jax.jvp(show, (2.5,), (0.5,))
    jax.grad(jax.grad(show))(2.5)
    jax.vmap(jax.jit(show))(jnp.ones(3))
    for a in [jnp.arange(6.0) * 0.1234567, jnp.arange(12.0).reshape(3, 4) / 7, jnp.arange(40),
              jnp.ones((2, 12)) / 3, jnp.arange(9.0) * 2, jnp.arange(3.0) * 1j, jnp.array(2.5)]:
        out.append(repr(a))
    out.append(repr(jax.ShapeDtypeStruct.like(jnp.ones((2, 3), jnp.int32))))
    out.append(repr(jax.ShapeDtypeStruct.like(0.5)))
    z, w = jnp.array([1.0 + 2.0j, 3.0 - 1.0j]), jnp.array([1.0 + 2.0000001j, 3.0 - 1.5j])
    out.append(repr((bool(jnp.allclose(z, z + 1e-7)), jnp.isclose(z, w).tolist())))
    jax.config.update("jax_remat3", True)
    out.append(repr(jax.config.jax_remat3))
    jax.config.update("jax_remat3", False)

    def chain(p, v):
        h = jnp.tanh(jnp.dot(p, v))
        return jnp.exp(jnp.dot(p, h))

    buf = io.StringIO()
    ad_checkpoint = __import__(jax.__name__ + ".ad_checkpoint", fromlist=["x"])
    with contextlib.redirect_stdout(buf):
        ad_checkpoint.print_saved_residuals(chain, jnp.ones((3, 3)), jnp.ones(3))
    out += [line.split(" from ")[0] + (" arg" if "argument" in line else "")
            for line in buf.getvalue().splitlines()]
    return out


def doc_101_201_outputs(jax, jnp):
    """What the JAX 101/201 pages show: typeof of typed keys, vmap over reference arguments,
    the errors of a traced shape, of a traced bool, of a list operand, buffer pointers, and
    the printed form of short jaxprs."""
    out = []
    k = jax.random.key(7)
    ks = jax.random.split(k, 5)
    out += [str(jax.typeof(k)), repr(jax.typeof(ks)), repr(jax.typeof(k) == jax.typeof(ks[0]))]
    jax.jit(lambda a: out.append(str(jax.typeof(a))))(ks)

    def fill(v, r):
        r[...] = v * 3.0 - r[...]

    def bump_first_row(v, r):
        r[0] = r[0] + v
        return r[1] * v

    r1 = jax.new_ref(jnp.ones(4))
    jax.vmap(fill)(jnp.arange(4.0), r1)
    out.append(repr(r1[...].tolist()))
    r2 = jax.new_ref(jnp.full((2, 3), 2.0))
    res = jax.vmap(bump_first_row, in_axes=(0, 1))(jnp.arange(3.0), r2)
    out.append(repr((res.tolist(), r2[...].tolist())))
    res = jax.jit(lambda r: jax.vmap(bump_first_row, in_axes=(0, 1))(jnp.ones(3), r))(r2)
    out.append(repr((res.tolist(), r2[...].tolist())))
    out.append(repr(type(r2.unsafe_buffer_pointer()).__name__))
    out.append(repr(type(jnp.ones(2).unsafe_buffer_pointer()).__name__))
    for make in (lambda n: jnp.zeros((n, 2)), lambda n: jnp.ones(n), lambda n: jnp.full((2, n), 1),
                 lambda n: jnp.arange(6.0).reshape(n, -1), lambda n: jnp.broadcast_to(2.0, (n,))):
        try:
            jax.jit(make)(3)
            out.append("no error")
        except Exception as e:  # noqa: BLE001
            out.append(f"{type(e).__name__}: {str(e).splitlines()[0]}")
    for f in (lambda x: 1.0 if x > 2 else 0.0, lambda x: (x > 1) and (x < 4)):
        try:
            jax.jit(f)(3.0)
        except Exception as e:  # noqa: BLE001
            out.append(f"{type(e).__name__}: {str(e).splitlines()[0]}")
    try:
        jnp.prod((1.0, 2.0))
    except TypeError as e:
        out.append(str(e))
    out.append(str(jax.jit(lambda: 5).trace().jaxpr))
    out.append(str(jax.jit(lambda n: (n * 2, n - 1)).trace(1).jaxpr))
    out.append(str(jax.jit(lambda x: jnp.cos(x) + 1.0).trace(1.0).jaxpr))
    return out


def saved_residual_sources(jax, jnp):
    """print_saved_residuals' descriptions: source positions as file:line:col with the
    function's qualified name, names of variadic arguments, and (with jax_remat3) a
    checkpointed function's arguments named by position (args[i], kwargs['k'])."""
    import contextlib
    import io
    ad_checkpoint = __import__(jax.__name__ + ".ad_checkpoint", fromlist=["x"])

    class Model:
        def apply(self, w, v):
            return jnp.sum(jnp.exp(jnp.sin(w["k"] @ v)) * jnp.tanh(
                v[:2]))

    def outer():
        def inner(*vs):
            return jnp.sum(jnp.cos(vs[0] * vs[1]["u"]))
        return inner

    def named(w, v, scale=1.0):
        h = ad_checkpoint.checkpoint_name(jnp.sin(w * v), "h")
        return jnp.sum(jnp.cos(h) * scale)

    w, v = {"k": jnp.ones((2, 3))}, jnp.arange(3.0)
    keep_h = jax.checkpoint_policies.save_only_these_names("h")
    out = []
    for remat3 in (False, True):
        jax.config.update("jax_remat3", remat3)
        try:   # (the flag in force when checkpoint is applied decides how arguments are named)
            runs = [(Model().apply, (w, v), {}), (outer(), (v, {"u": v + 1}), {}),
                    (jax.checkpoint(named, policy=keep_h), (v, v), {"scale": jnp.ones(3)})]
            for fn, args, kwargs in runs:
                buf = io.StringIO()
                with contextlib.redirect_stdout(buf):
                    ad_checkpoint.print_saved_residuals(fn, *args, **kwargs)
                out += [line.split(" from ")[0] + " | " + line.split(" from ")[-1].split("/")[-1]
                        for line in buf.getvalue().splitlines()]
        finally:
            jax.config.update("jax_remat3", False)
    return out


PROGRAMS = {"dtype_warnings": dtype_warnings, "collectives": collectives, "precisions": precisions, "array_instances": array_instances, "stages": stages, "callbacks": callbacks,
            "transposes": transposes,
            "custom_vmaps": custom_vmaps, "io_callbacks": io_callbacks,
            "config_options": config_options,
            "effects_in_control_flow": effects_in_control_flow,
            "like_descriptions": like_descriptions, "numpy_constants": numpy_constants,
            "doc_page_outputs": doc_page_outputs, "doc_101_201_outputs": doc_101_201_outputs,
            "saved_residual_sources": saved_residual_sources}
