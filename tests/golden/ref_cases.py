"""Mutable array reference cases, written once against the JAX API: gen_ref.py runs them with
real JAX to record golden results; tests/test_ref.py runs them with corejax.

Each case builds its own references and returns a pytree of arrays and references (a
reference is recorded as its final value)."""


def cases(jax, jnp):
    lax = jax.lax
    new_ref, ds = jax.new_ref, jax.ds
    C = {}

    def case(fn):
        C[fn.__name__] = fn
        return fn

    # --- eager ------------------------------------------------------------------------------
    @case
    def eager_get_forms():
        r = new_ref(jnp.arange(12.).reshape(3, 4))
        return (r[...], r[1], r[-1], r[0:2], r[:, 1], r[1, 1:], r[ds(1, 2)],
                r[ds(1, 2), ds(0, 2, 2)], r[jnp.array([0, 2])], r[None], r[..., 3],
                r[::2], jax.ref.get(r), jax.ref.get(r, (2, slice(1, 3))))

    @case
    def eager_set_forms():
        r = new_ref(jnp.zeros((3, 4)))
        r[1] = jnp.ones(4)
        r[0, 2] = 5.
        r[ds(1, 2), 0] = jnp.array([7., 8.])
        r[jnp.array([2, 0]), 3] = jnp.array([-1., -2.])
        r[..., 1] = jnp.arange(3.)
        r[:, ds(0, 2, 2)] += jnp.ones((3, 2))
        return r

    @case
    def eager_swap_addupdate():
        r = new_ref(jnp.arange(4.))
        old = jax.ref.swap(r, 1, 9.)
        jax.ref.addupdate(r, jnp.array([0, 0, 3]), jnp.array([1., 2., 3.]))
        jax.ref.set(r, ds(2, 1), jnp.array([4.]))
        return old, r

    @case
    def eager_dup_set():
        r = new_ref(jnp.zeros(4))
        r[jnp.array([0, 0])] = jnp.array([9., 8.])
        return r

    @case
    def eager_weak_values():
        a = new_ref(3.)
        b = new_ref(jnp.zeros(2, jnp.bfloat16))
        b[0] = jnp.asarray(2.)
        c = new_ref(1.)
        c[...] = jnp.float32(2)
        d = new_ref(jnp.zeros(2, jnp.int32))
        d[1] = 7
        return a, b, c, d

    @case
    def eager_freeze():
        r = new_ref(jnp.arange(3.))
        r[0] = 5.
        return jax.freeze(r)

    # --- jit --------------------------------------------------------------------------------
    @case
    def jit_closed_over():
        r = new_ref(jnp.zeros(3))

        @jax.jit
        def f(x):
            r[...] += x
            return r[0]
        return f(1.), f(2.), f(jnp.float32(3.)), r

    @case
    def jit_closed_read_only():
        r = new_ref(jnp.arange(3.))

        @jax.jit
        def f(x):
            return r[...] * x
        a = f(2.)
        r[0] = 10.
        return a, f(2.), r

    @case
    def jit_ref_args():
        @jax.jit
        def inc(r, x):
            r[...] += x
            return r[...].sum()
        a, b = new_ref(jnp.zeros(2)), new_ref(jnp.ones(2))
        return inc(a, 1.), inc(b, 2.), inc(a, 3.), a, b

    @case
    def jit_ref_in_pytree_arg():
        d = {"r": new_ref(jnp.zeros(2)), "x": jnp.ones(2)}

        @jax.jit
        def f(d):
            d["r"][1] = d["x"][0] * 5
            return d["x"] * 2
        return f(d), d["r"]

    @case
    def jit_ref_inside():
        @jax.jit
        def k(x):
            q = new_ref(x)
            q[0] = 2 * q[1]
            q[...] = q[...] * 3
            return q[...], jax.freeze(new_ref(x)) + 1
        return k(jnp.arange(3.))

    @case
    def jit_nested():
        r = new_ref(jnp.zeros(2))
        inner = jax.jit(lambda x: r.__setitem__(0, r[0] + x))

        @jax.jit
        def outer(x):
            inner(x)
            inner(x * 10)
            r[1] = r[0] + 1
            return r[...]
        return outer(1.), outer(2.), r

    @case
    def jit_traced_indices():
        r = new_ref(jnp.arange(5.))
        f = jax.jit(lambda i: (r[ds(i, 2)], r[i]))
        g = jax.jit(lambda i: r.__setitem__(ds(i, 2), jnp.array([-1., -2.])))
        out = f(1), f(4), f(7), f(-1)
        g(4)
        return out, r

    @case
    def jit_empty_ref():
        @jax.jit
        def f(x):
            q = jax.empty_ref(jax.ShapeDtypeStruct((2,), jnp.float32))
            q[...] = x
            return q[...] * 2
        return f(jnp.ones(2))

    # --- grad / vmap --------------------------------------------------------------------------
    def internal(x):
        r = new_ref(jnp.zeros(3))
        r[...] = x * 2
        r[1] += x[0]
        return jnp.sum(r[...] ** 2)

    @case
    def grad_internal():
        x = jnp.arange(3.)
        return jax.grad(internal)(x), jax.jit(jax.grad(internal))(x), \
            jax.value_and_grad(internal)(x)

    @case
    def vmap_internal():
        return jax.vmap(internal)(jnp.arange(6.).reshape(2, 3)), \
            jax.vmap(jax.grad(internal))(jnp.arange(6.).reshape(2, 3))

    @case
    def grad_vmap_closed_read():
        c = new_ref(jnp.arange(3.))
        f = lambda x: (c[...] * x).sum()
        return jax.grad(f)(jnp.ones(3)), jax.vmap(f)(jnp.ones((2, 3))), \
            jax.vmap(jax.jit(f))(jnp.ones((2, 3)))

    @case
    def grad_closed_write_const():
        c = new_ref(jnp.zeros(3))

        def f(x):
            c[...] += 1.
            return (x * 2).sum()
        return jax.grad(f)(jnp.ones(3)), c

    @case
    def grad_ref_nondiff_arg():
        return jax.grad(lambda x, r: x * r[...])(2., new_ref(3.))

    @case
    def grad_jit_internal_ref():
        def f(x):
            q = new_ref(0.)
            q[...] = x * x
            return q[...]
        return jax.grad(lambda x: jax.jit(f)(x))(3.)

    # --- control flow -------------------------------------------------------------------------
    @case
    def scan_closed():
        acc = new_ref(0.)

        def body(carry, x):
            acc[...] += x
            return carry + 1, acc[...]
        return lax.scan(body, 0, jnp.arange(4.)), acc

    @case
    def scan_closed_jit():
        acc = new_ref(jnp.zeros(2))

        @jax.jit
        def f(xs):
            def body(c, x):
                acc[0] += x
                acc[1] = acc[0] * c
                return c + 1., None
            return lax.scan(body, 1., xs)[0]
        return f(jnp.arange(3.)), f(jnp.ones(3)), acc

    @case
    def fori_closed():
        acc = new_ref(jnp.zeros(5))

        def fb(i, carry):
            acc[i] = i * 2.
            return carry + acc[i]
        a = lax.fori_loop(0, 5, fb, 0.)
        b = jax.jit(lambda n: lax.fori_loop(0, n, fb, 1.))(3)
        return a, b, acc

    @case
    def while_closed():
        cnt = new_ref(jnp.int32(0))

        def body(s):
            cnt[...] += 1
            return s * 2
        return lax.while_loop(lambda s: s < 10, body, 1), cnt

    @case
    def cond_closed():
        cr = new_ref(jnp.ones(2))

        def tb(x):
            cr[...] = cr[...] + x
            return x

        def fb(x):
            return -x
        a = lax.cond(True, tb, fb, 1.)
        b = lax.cond(False, tb, fb, 1.)
        c = jax.jit(lambda p: lax.cond(p, tb, fb, 1.))(True)
        d = jax.jit(lambda p: lax.cond(p, tb, fb, 1.))(False)
        return a, b, c, d, cr

    @case
    def nested_loops_jit_inside_scan():
        r = new_ref(jnp.zeros(2))

        def outer(c, x):
            def inner(c2, y):
                r[0] += y
                return c2, None
            lax.scan(inner, 0., jnp.arange(2.))
            jax.jit(lambda: r.__setitem__(1, r[1] + x))()
            return c + r[0], r[1]
        return lax.scan(outer, 0., jnp.arange(3.)), r

    @case
    def grad_scan_internal_ref():
        def f(x):
            r = new_ref(0.)

            def b(c, xi):
                r[...] += xi * c
                return c * x, None
            lax.scan(b, 1., jnp.arange(3.))
            return r[...]
        return jax.grad(f)(2.), jax.jit(jax.grad(f))(2.)

    # --- errors -------------------------------------------------------------------------------
    @case
    def err_set_dtype():
        new_ref(jnp.zeros(3))[0] = jnp.int32(3)

    @case
    def err_set_python_int_into_float():
        new_ref(jnp.zeros(3))[0] = 2

    @case
    def err_set_shape():
        new_ref(jnp.zeros(3))[:] = jnp.ones(2)

    @case
    def err_set_no_broadcast():
        new_ref(jnp.zeros(3))[...] = 7.

    @case
    def err_addupdate_shape():
        jax.ref.addupdate(new_ref(jnp.zeros(3)), ..., jnp.ones(2))

    @case
    def err_set_shape_jit():
        c = new_ref(jnp.zeros(3))
        jax.jit(lambda: c.__setitem__(..., jnp.ones(4)))()

    @case
    def err_oob_int():
        return new_ref(jnp.arange(6.))[10]

    @case
    def err_oob_ds():
        return new_ref(jnp.arange(5.))[ds(4, 2)]

    @case
    def err_negative_ds():
        return new_ref(jnp.arange(5.))[ds(-2, 2)]

    @case
    def err_new_ref_list():
        return new_ref([1., 2.])

    @case
    def err_return_ref_from_jit():
        return jax.jit(lambda: new_ref(1.))()

    @case
    def err_return_arg_ref_from_jit():
        return jax.jit(lambda r: r)(new_ref(1.))

    @case
    def err_aliased_args():
        r = new_ref(jnp.zeros(3))
        jax.jit(lambda a, b: None)(r, r)

    @case
    def err_closed_and_arg():
        r = new_ref(jnp.zeros(3))
        return jax.jit(lambda a: a[0] + r[0])(r)

    @case
    def err_vmap_closed_write():
        c = new_ref(jnp.zeros(3))

        def f(x):
            c[...] = x
            return x.sum()
        return jax.vmap(f)(jnp.ones((2, 3)))

    @case
    def err_vmap_closed_write_unbatched():
        c = new_ref(jnp.zeros(3))

        def f(x):
            c[...] += 1.
            return x
        return jax.vmap(f)(jnp.ones((2, 3)))

    @case
    def err_grad_closed_write():
        c = new_ref(jnp.zeros(3))

        def f(x):
            c[...] = x
            return x.sum()
        return jax.grad(f)(jnp.arange(3.))

    @case
    def err_use_leaked():
        leak = []

        @jax.jit
        def mk(x):
            leak.append(new_ref(x))
            return x
        mk(1.)
        return leak[0][...]

    @case
    def err_use_after_freeze_jit():
        def f(x):
            r = new_ref(x)
            y = jax.freeze(r)
            return r[...] + y
        return jax.jit(f)(1.)

    @case
    def err_bool_index():
        return new_ref(jnp.arange(3.))[jnp.array([True, False, True])]

    return C


ERROR_MATCH = {
    "err_set_dtype": "Invalid dtype for `swap`",
    "err_set_python_int_into_float": "Invalid dtype for `swap`",
    "err_set_shape": "Invalid shape for `swap`",
    "err_set_no_broadcast": "Invalid shape for `swap`",
    "err_addupdate_shape": "Invalid shape for `addupdate`",
    "err_set_shape_jit": "Invalid shape for `swap`",
    "err_oob_int": "Out of bound indexer",
    "err_oob_ds": "Out of bound slice",
    "err_negative_ds": "nonnegative",
    "err_new_ref_list": "new_ref",
    "err_return_ref_from_jit": "cannot be returned",
    "err_return_arg_ref_from_jit": "cannot be returned",
    "err_aliased_args": "only one reference to a mutable array",
    "err_closed_and_arg": "both closed over and passed as the argument",
    "err_vmap_closed_write": "vmapped value on an unbatched array reference",
    "err_vmap_closed_write_unbatched": "vmapped value on an unbatched array reference",
    "err_grad_closed_write": "differentiated value on a non-differentiated",
    "err_use_leaked": "",
    "err_use_after_freeze_jit": "",
    "err_bool_index": "",
}
