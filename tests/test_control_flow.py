"""Control flow (cond, switch, while_loop, fori_loop, scan, map, associative_scan): values
against Python loops, derivatives against finite differences, vmap against stacking, jit
against eager, and the documented errors."""
import numpy as np
import pytest

import corejax as jax
import corejax.numpy as jnp
from corejax import grad, jacfwd, jacrev, jit, vmap
from corejax.lax.control_flow import (associative_scan, cond, fori_loop, map as lax_map, scan,
                                      switch, while_loop)


def _close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def _numerical_grad(f, x, eps=1e-6):
    """Central differences of a scalar function of one float64 array."""
    x = np.asarray(x, np.float64)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = eps
        g[i] = (float(f(jnp.asarray(x + e))) - float(f(jnp.asarray(x - e)))) / (2 * eps)
    return g


def _check_grads(f, x, tol=1e-6):
    """grad, jacfwd and jacrev of scalar `f` at `x` against finite differences."""
    expected = _numerical_grad(f, x)
    _close(grad(f)(jnp.asarray(x)), expected, tol)
    _close(jacfwd(f)(jnp.asarray(x)), expected, tol)
    _close(jacrev(f)(jnp.asarray(x)), expected, tol)


# --- cond / switch -------------------------------------------------------------------------------

def test_cond_values():
    assert float(cond(True, lambda x: x + 1, lambda x: x - 1, 1.0)) == 2.0
    assert float(cond(False, lambda x: x + 1, lambda x: x - 1, 1.0)) == 0.0
    assert float(cond(jnp.array(3), lambda x: x + 1, lambda x: x - 1, 1.0)) == 2.0  # int pred
    assert float(cond(jnp.array(0), lambda x: x + 1, lambda x: x - 1, 1.0)) == 0.0
    out = cond(jnp.array(True), lambda d, y: {"a": d["a"] * y, "b": (d["b"], y)},
               lambda d, y: {"a": d["a"] + y, "b": (d["b"] * 0, y)},
               {"a": jnp.ones(2), "b": jnp.int32(4)}, 3.0)
    _close(out["a"], [3.0, 3.0])
    assert int(out["b"][0]) == 4 and out["b"][0].dtype == np.int32
    assert float(cond(True, lambda: 1.0, lambda: 2.0)) == 1.0  # no operands


def test_cond_closes_over_outer_values():
    w = jnp.array([1.0, 2.0])

    def f(x, p):
        return cond(p > 0, lambda: jnp.sum(w * x), lambda: jnp.sum(x) - 1.0)

    assert float(f(jnp.array([3.0, 4.0]), 1.0)) == 11.0
    assert float(jit(f)(jnp.array([3.0, 4.0]), -1.0)) == 6.0
    _close(grad(f)(jnp.array([3.0, 4.0]), 1.0), [1.0, 2.0])
    _close(vmap(f, (0, None))(jnp.array([[3.0, 4.0], [1.0, 1.0]]), 1.0), [11.0, 3.0])


def test_switch_values_and_clamping():
    branches = [lambda x: x, lambda x: 2 * x, lambda x: 3 * x]
    for i, expected in [(0, 2.0), (1, 4.0), (2, 6.0), (-5, 2.0), (7, 6.0)]:
        assert float(switch(i, branches, 2.0)) == expected
        assert float(jit(lambda i, x: switch(i, branches, x))(i, 2.0)) == expected
    assert float(switch(0, [lambda x: x + 1], 2.0)) == 3.0


def test_cond_branch_mismatch_errors():
    with pytest.raises(TypeError, match="(?s)true_fun and false_fun output must have identical "
                                        "types.*true_fun returns f32\\[\\] but false_fun "
                                        "returns i32\\[\\]"):
        cond(True, lambda x: x, lambda x: x.astype(jnp.int32), 1.0)
    with pytest.raises(TypeError, match="(?s)output must have identical types.*f32\\[2\\]"):
        cond(True, lambda x: x, lambda x: jnp.stack([x, x]), 1.0)
    with pytest.raises(TypeError, match="same type structure"):
        cond(True, lambda x: x, lambda x: (x, x), 1.0)
    with pytest.raises(TypeError, match="(?s)branch 0 returns f32\\[\\] but branch 2 returns"):
        switch(1, [lambda x: x, lambda x: x, lambda x: x[None]], 1.0)


def test_cond_predicate_errors():
    with pytest.raises(TypeError, match="Pred must be a scalar"):
        cond(jnp.array([True, False]), lambda: 1.0, lambda: 2.0)
    with pytest.raises(TypeError, match="Pred type must be either boolean or number"):
        cond(1.5, lambda: 1.0, lambda: 2.0)
    with pytest.raises(TypeError, match="Index type must be an integer"):
        switch(1.0, [lambda: 1.0, lambda: 2.0])
    with pytest.raises(jax.errors.TracerBoolConversionError):
        jit(lambda x: 1.0 if x > 0 else 2.0)(1.0)


def test_cond_grads(x64):
    f = lambda x: cond(jnp.sum(x) > 0, lambda y: jnp.sum(jnp.sin(y) * y),
                       lambda y: jnp.sum(jnp.exp(y)), x)
    _check_grads(f, np.array([0.3, 0.4, -0.2]))
    _check_grads(f, np.array([-0.3, 0.4, -0.5]))
    g = lambda x: switch(jnp.int32(2), [jnp.sin, jnp.cos, lambda y: y ** 3], x[0]) * x[1]
    _check_grads(g, np.array([0.7, 1.3]))


def test_cond_second_order(x64):
    f = lambda x: cond(x > 0, lambda y: y ** 3, lambda y: jnp.sin(y), x)
    _close(grad(grad(f))(1.5), 9.0)
    _close(grad(grad(f))(-1.5), -np.sin(-1.5))


def test_cond_vmap_batched_and_unbatched_predicate():
    xs = jnp.array([-1.0, 0.5, 2.0])
    f = lambda x: cond(x > 0, jnp.sin, jnp.cos, x)
    _close(vmap(f)(xs), [float(f(xs[i])) for i in range(3)])
    g = lambda p, x: cond(p, lambda y: y * 2.0, lambda y: y - 1.0, x)
    _close(vmap(g, (None, 0))(True, xs), xs * 2.0)  # unbatched predicate
    _close(vmap(g, (None, 0))(False, xs), xs - 1.0)
    _close(vmap(g, (0, None))(xs > 0, 3.0), [2.0, 6.0, 6.0])  # only the predicate batched
    h = lambda i, x: switch(i, [lambda y: y, lambda y: y * 10.0, lambda y: -y], x)
    idx = jnp.array([2, 0, 1])
    _close(vmap(h)(idx, xs), [float(h(idx[i], xs[i])) for i in range(3)])
    _close(vmap(grad(f))(xs), [float(grad(f)(xs[i])) for i in range(3)])


# --- while_loop / fori_loop ------------------------------------------------------------------

def test_while_loop_values():
    def py(n, x):
        i, acc = 0, x
        while i < n:
            i, acc = i + 1, acc * 2.0 + 1.0
        return acc

    f = lambda n, x: while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * 2.0 + 1.0),
                                (0, x))[1]
    for n in [0, 1, 5]:
        assert float(f(n, 1.5)) == py(n, 1.5)
        assert float(jit(f)(n, 1.5)) == py(n, 1.5)
    out = while_loop(lambda s: s["i"] < 3, lambda s: {"i": s["i"] + 1, "v": s["v"] * 2},
                     {"i": 0, "v": jnp.ones(2)})
    assert int(out["i"]) == 3
    _close(out["v"], [8.0, 8.0])


def test_while_loop_errors():
    with pytest.raises(TypeError, match="cond_fun must return a boolean scalar"):
        while_loop(lambda c: c, lambda c: c, 1.0)
    with pytest.raises(TypeError, match="carry input and carry output must have equal types"):
        while_loop(lambda c: c < 3, lambda c: jnp.stack([c, c]), 1.0)
    with pytest.raises(TypeError, match="body_fun output and input must have identical types"):
        while_loop(lambda c: c[0] < 3, lambda c: c[0], (1.0, 2.0))


def test_while_loop_forward_mode(x64):
    f = lambda x: while_loop(lambda c: c[0] < 4, lambda c: (c[0] + 1, jnp.sin(c[1]) * x),
                             (0, x))[1]
    x = 0.7
    num = (float(f(x + 1e-6)) - float(f(x - 1e-6))) / 2e-6
    _, t = jax.jvp(f, (x,), (1.0,))
    _close(t, num, 1e-6)
    _close(jacfwd(f)(x), num, 1e-6)


def test_while_loop_reverse_mode_error():
    f = lambda x: while_loop(lambda c: c < 10.0, lambda c: c * x, 1.0)
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work for "
                                         "lax.while_loop or lax.fori_loop with dynamic "
                                         "start/stop values"):
        grad(f)(2.0)


def test_while_loop_vmap_batched_predicate():
    def f(limit, x):
        return while_loop(lambda c: c[1] < limit, lambda c: (c[0] + 1, c[1] * x), (0, 1.0))

    limits, xs = jnp.array([1.5, 10.0, 100.0, 0.5]), jnp.array([2.0, 3.0, 1.5, 2.0])
    counts, vals = vmap(f)(limits, xs)
    expected = [f(limits[i], xs[i]) for i in range(4)]
    assert [int(c) for c in counts] == [int(e[0]) for e in expected]
    _close(vals, [float(e[1]) for e in expected])
    counts2, _ = vmap(f, (0, None))(limits, 2.0)  # only the limit batched
    assert [int(c) for c in counts2] == [int(f(limits[i], 2.0)[0]) for i in range(4)]
    # Unbatched predicate: the carry that decides termination is the same in every lane.
    g = lambda x: while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * x), (0, 1.0))[1]
    _close(vmap(g)(xs), xs ** 3)


def test_fori_loop_values_static_and_dynamic():
    body = lambda i, c: c * 2.0 + i
    py = 1.0
    for i in range(2, 6):
        py = py * 2.0 + i
    assert float(fori_loop(2, 6, body, 1.0)) == py
    assert float(jit(lambda lo, hi: fori_loop(lo, hi, body, 1.0))(2, 6)) == py  # while path
    assert float(fori_loop(5, 2, body, 1.0)) == 1.0
    text = str(jax.make_jaxpr(lambda x: fori_loop(0, 3, lambda i, c: c * x, x))(1.0))
    assert "scan" in text and "while" not in text
    text = str(jax.make_jaxpr(lambda n, x: fori_loop(0, n, lambda i, c: c * x, x))(3, 1.0))
    assert "while" in text


def test_fori_loop_grad_static_bounds_and_dynamic_error(x64):
    f = lambda x: fori_loop(0, 4, lambda i, c: jnp.sin(c) * x + i, x)
    _check_grads(f, np.array(0.6))
    _close(jit(grad(f))(0.6), grad(f)(0.6))
    dyn = lambda n, x: fori_loop(0, n, lambda i, c: c * x, x)
    with pytest.raises(ValueError, match="Try using lax.scan, or using fori_loop with static "
                                         "start/stop"):
        jit(grad(dyn, argnums=1))(3, 2.0)


# --- scan / map / associative_scan -----------------------------------------------------------

def test_scan_values_against_python_loop():
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((5, 3)).astype(np.float32)

    def step(c, x):
        return c * 0.5 + x, jnp.sum(c * x)

    carry, ys = scan(step, jnp.zeros(3), xs)
    c, py_ys = np.zeros(3, np.float32), []
    for x in xs:
        py_ys.append(np.sum(c * x))
        c = c * 0.5 + x
    _close(carry, c)
    _close(ys, py_ys)
    carry_r, ys_r = scan(step, jnp.zeros(3), xs, reverse=True)
    c, py_ys = np.zeros(3, np.float32), [None] * 5
    for t in reversed(range(5)):
        py_ys[t] = np.sum(c * xs[t])
        c = c * 0.5 + xs[t]
    _close(carry_r, c)
    _close(ys_r, py_ys)
    jc, jys = jit(lambda xs: scan(step, jnp.zeros(3), xs))(xs)
    _close(jc, carry)
    _close(jys, ys)


def test_scan_pytrees_none_xs_and_length():
    def step(carry, x):
        a, (b,) = carry["a"], carry["b"]
        return {"a": a + x["u"], "b": (b * x["v"],)}, (a, {"w": b})

    xs = {"u": jnp.arange(4.0), "v": jnp.full((4, 2), 2.0)}
    carry, (ys_a, ys_b) = scan(step, {"a": 0.0, "b": (jnp.ones(2),)}, xs)
    assert float(carry["a"]) == 6.0
    _close(carry["b"][0], [16.0, 16.0])
    _close(ys_a, [0.0, 0.0, 1.0, 3.0])
    assert ys_b["w"].shape == (4, 2)
    c, ys = scan(lambda c, _: (c + 1, c * 2), 0, None, length=3)
    assert int(c) == 3 and [int(y) for y in ys] == [0, 2, 4]
    c, ys = scan(lambda c, x: (c, None), 1.0, jnp.ones(3))
    assert ys is None and float(c) == 1.0
    c, ys = scan(lambda c, x: (c + x, x), 0.0, jnp.ones((0,)))
    assert float(c) == 0.0 and ys.shape == (0,)
    host = np.ones(3, np.float32)
    scan(lambda c, x: (c + x, None), 0.0, host)
    assert host.flags.writeable  # the caller's NumPy array is not frozen


def test_scan_errors():
    with pytest.raises(ValueError, match="no values to scan over"):
        scan(lambda c, x: (c, x), 0.0, None)
    with pytest.raises(ValueError, match="different leading axis sizes: 3, 4"):
        scan(lambda c, x: (c, x), 0.0, (jnp.ones(3), jnp.ones(4)))
    with pytest.raises(ValueError, match="`length` argument of 5 which disagrees"):
        scan(lambda c, x: (c, x), 0.0, jnp.ones(3), length=5)
    with pytest.raises(TypeError, match="scan body output must be a pair"):
        scan(lambda c, x: c, 0.0, jnp.ones(3))
    with pytest.raises(TypeError, match="carry input and carry output must have equal types"):
        scan(lambda c, x: (jnp.stack([c, x]), x), 0.0, jnp.ones(3))
    with pytest.raises(TypeError, match="same pytree structure"):
        scan(lambda c, x: ((c, c), x), 0.0, jnp.ones(3))


def test_scan_weak_carry_is_promoted():
    c, _ = scan(lambda c, x: (c + x, None), 0, jnp.arange(3.0))  # int carry becomes float
    assert c.dtype == np.float32 and float(c) == 3.0


def test_scan_gradient_of_three_step_product():
    f = lambda xs: scan(lambda c, x: (c * x, c), 1.0, xs)[0]
    xs = jnp.array([2.0, 3.0, 4.0])
    assert float(f(xs)) == 24.0
    _close(grad(f)(xs), [12.0, 8.0, 6.0])
    _close(jacrev(f)(xs), [12.0, 8.0, 6.0])
    _close(jacfwd(f)(xs), [12.0, 8.0, 6.0])


def test_scan_grads(x64):
    rng = np.random.default_rng(1)
    w = jnp.asarray(rng.standard_normal((3, 3)) * 0.5)
    xs0 = rng.standard_normal((4, 3))

    def loss_xs(xs):  # ys, final carry, a closed-over constant and a reverse scan
        def step(h, x):
            h = jnp.tanh(w @ h + x)
            return h, jnp.sum(h ** 2)
        h, ys = scan(step, jnp.ones(3) * 0.1, xs)
        back, _ = scan(lambda c, x: (c * jnp.cos(x[0]) + x[1], None), 1.0, xs, reverse=True)
        return jnp.sum(h) + jnp.sum(ys) + back

    _check_grads(loss_xs, xs0)

    def loss_w(wf):
        return scan(lambda h, x: (jnp.tanh(wf.reshape(3, 3) @ h + x), None), jnp.ones(3),
                    jnp.asarray(xs0))[0].sum()

    _check_grads(loss_w, np.asarray(w).ravel())
    loss_init = lambda h0: scan(lambda h, x: (jnp.sin(h) * x, h), h0, jnp.asarray(xs0))[1].sum()
    _check_grads(loss_init, np.array([0.1, 0.2, 0.3]))


def test_scan_second_order(x64):
    f = lambda x: scan(lambda c, xi: (c * jnp.sin(xi), c), 1.0, x)[0]
    x = np.array([0.5, 1.0, 2.0])
    h = jax.hessian(f)(jnp.asarray(x))
    expected = np.empty((3, 3))
    for i in range(3):
        expected[i] = _numerical_grad(lambda y: grad(f)(y)[i], x)
    _close(h, expected, 1e-5)


def test_nested_control_flow_grads(x64):
    def scan_of_cond(x):
        def step(c, xi):
            c = cond(xi > 0, lambda a: a * xi, lambda a: a + jnp.sin(xi), c)
            return c, c
        return jnp.sum(scan(step, 1.0, x)[1])

    _check_grads(scan_of_cond, np.array([1.0, -2.0, 3.0]))

    def scan_of_scan(x):
        def outer(c, xi):
            inner, _ = scan(lambda a, b: (a * b + xi, None), c, x)
            return inner, inner
        return jnp.sum(scan(outer, 0.5, x)[1])

    _check_grads(scan_of_scan, np.array([0.5, 0.3]))

    def cond_of_scan(x):
        return cond(x[0] > 0, lambda y: scan(lambda c, yi: (c * yi, c), 1.0, y)[0],
                    lambda y: jnp.sum(y), x)

    _check_grads(cond_of_scan, np.array([0.5, 0.3, 2.0]))


def test_scan_vmap_against_stacked_loops():
    rng = np.random.default_rng(2)
    xs = jnp.asarray(rng.standard_normal((2, 5, 3)).astype(np.float32))
    inits = jnp.asarray(rng.standard_normal((2, 3)).astype(np.float32))
    w = jnp.asarray(rng.standard_normal((3, 3)).astype(np.float32))

    def f(h0, xs, w):
        return scan(lambda h, x: (jnp.tanh(w @ h + x), h.sum()), h0, xs)

    for in_axes in [(0, 0, None), (None, 0, None), (0, None, None), (None, None, 0),
                    (0, 1, None)]:
        args = [inits if in_axes[0] is not None else inits[0],
                (xs if in_axes[1] == 0 else jnp.swapaxes(xs, 0, 1)) if in_axes[1] is not None
                else xs[0],
                jnp.stack([w, w * 0.5]) if in_axes[2] is not None else w]
        carry, ys = vmap(f, in_axes)(*args)
        for b in range(2):
            pick = [a if ax is None else (a[b] if ax == 0 else a[:, b])
                    for a, ax in zip(args, in_axes)]
            c_b, ys_b = f(*pick)
            _close(carry[b], c_b)
            _close(ys[b], ys_b)
    g = vmap(grad(lambda xs: f(inits[0], xs, w)[1].sum()))(xs)
    for b in range(2):
        _close(g[b], grad(lambda xs: f(inits[0], xs, w)[1].sum())(xs[b]))


def test_map_and_batch_size():
    xs = jnp.arange(7.0)
    _close(lax_map(lambda x: x ** 2, xs), np.arange(7.0) ** 2)
    out = lax_map(lambda d: {"s": d["a"] + d["b"]}, {"a": xs, "b": xs})
    _close(out["s"], 2 * np.arange(7.0))
    _close(lax_map(lambda x: x * 3.0, xs, batch_size=3), np.arange(7.0) * 3)
    _close(lax_map(lambda x: x * 3.0, xs, batch_size=7), np.arange(7.0) * 3)


def test_associative_scan():
    x = np.arange(1.0, 8.0)
    _close(associative_scan(jnp.add, jnp.asarray(x)), np.cumsum(x))
    _close(associative_scan(jnp.multiply, jnp.asarray(x)), np.cumprod(x))
    _close(associative_scan(jnp.add, jnp.asarray(x), reverse=True), np.cumsum(x[::-1])[::-1])
    m = np.arange(12.0).reshape(3, 4)
    _close(associative_scan(jnp.add, jnp.asarray(m), axis=1), np.cumsum(m, axis=1))
    # A pytree: the linear recurrence h_t = a_t h_{t-1} + b_t as pairs.
    a, b = np.array([0.5, 2.0, 1.5, 0.1, 3.0]), np.array([1.0, -1.0, 0.5, 2.0, 0.3])
    comb = lambda p, q: (p[0] * q[0], p[1] * q[0] + q[1])
    _, hs = associative_scan(comb, (jnp.asarray(a), jnp.asarray(b)))
    h, expected = 0.0, []
    for at, bt in zip(a, b):
        h = at * h + bt
        expected.append(h)
    _close(hs, expected)
    _close(jit(lambda v: associative_scan(jnp.add, v))(jnp.asarray(x)), np.cumsum(x))


def test_disable_jit_runs_python_loops():
    seen = []

    def body(c):
        seen.append(float(c))  # concrete values: the loop runs in Python
        return c * 2.0

    with jax.disable_jit():
        assert float(while_loop(lambda c: c < 10.0, body, 1.0)) == 16.0
        c, ys = scan(lambda c, x: (c + x, c * x), 1.0, jnp.arange(3.0), reverse=True)
        assert float(cond(True, lambda: 1.0, lambda: 2.0)) == 1.0
        assert float(fori_loop(0, 3, lambda i, v: v + i, 0.0)) == 3.0
    assert seen == [1.0, 2.0, 4.0, 8.0]
    c_ref, ys_ref = scan(lambda c, x: (c + x, c * x), 1.0, jnp.arange(3.0), reverse=True)
    _close(c, c_ref)
    _close(ys, ys_ref)


# --- jit, staging and training ---------------------------------------------------------------

def test_jit_matches_eager_and_prints_primitives():
    def f(x):
        y = cond(x.sum() > 0, lambda v: v * 2.0, lambda v: -v, x)
        _, z = while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] + y), (0, y))
        c, ys = scan(lambda c, v: (c + v, c * v), 0.0, z)
        return c + ys.sum()

    x = jnp.array([0.5, -0.25, 1.0])
    _close(jit(f)(x), f(x))
    _close(jit(f)(-x), f(-x))
    text = str(jax.make_jaxpr(f)(x))
    assert "cond[" in text and "while[" in text and "scan[" in text


def test_grad_of_jit_of_scan():
    f = lambda xs: scan(lambda c, x: (c * x, c), 1.0, xs)[0]
    xs = jnp.array([2.0, 3.0, 4.0])
    _close(jit(grad(f))(xs), [12.0, 8.0, 6.0])
    _close(jit(vmap(f))(jnp.stack([xs, xs])), [24.0, 24.0])


def test_grad_of_jit_with_control_flow_inside():
    f = lambda xs: scan(lambda c, x: (c * x, c), 1.0, xs)[0]
    _close(grad(jit(f))(jnp.array([2.0, 3.0, 4.0])), [12.0, 8.0, 6.0])
    g = lambda x: cond(x > 0, lambda y: fori_loop(0, 3, lambda i, c: c * y, 1.0), jnp.sin, x)
    _close(grad(jit(g))(2.0), 12.0)
    _close(grad(jit(g))(-1.0), np.cos(-1.0))


def test_rnn_trains_with_sgd():
    rng = np.random.default_rng(0)
    t_steps, d_in, d_h = 6, 2, 4
    xs = jnp.asarray(rng.standard_normal((t_steps, d_in)).astype(np.float32))
    target = jnp.asarray(np.sin(np.arange(t_steps, dtype=np.float32)))
    params = {"wx": jnp.asarray(rng.standard_normal((d_h, d_in)).astype(np.float32) * 0.5),
              "wh": jnp.asarray(rng.standard_normal((d_h, d_h)).astype(np.float32) * 0.5),
              "wo": jnp.asarray(rng.standard_normal((d_h,)).astype(np.float32) * 0.5)}

    def loss(p):
        def step(h, x):
            h = jnp.tanh(p["wx"] @ x + p["wh"] @ h)
            return h, jnp.dot(p["wo"], h)
        _, preds = scan(step, jnp.zeros(d_h), xs)
        return jnp.mean((preds - target) ** 2)

    step = jit(lambda p: jax.tree_util.tree_map(lambda w, g: w - 0.3 * g, p, grad(loss)(p)))
    losses = [float(loss(params))]
    for _ in range(8):
        params = step(params)
        losses.append(float(loss(params)))
    assert losses[-1] < 0.7 * losses[0]
    assert all(b < a for a, b in zip(losses, losses[1:]))


def test_while_partial_eval_keeps_carries_the_body_makes_unknown():
    """linearize of a while loop whose tangent carry starts known (zero) but is fed by an
    unknown tangent: the known loop took that carry too (one argument too many), which only
    ran eagerly; staged, it raised. 80 = d/dx x**4 * ... at x = 2 in JAX: 5 * 2**4."""
    f = lambda x: while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] * x),
                                 (0, 1.0))[1]
    assert float(jax.linearize(f, 2.0)[1](1.0)) == 80.0
    assert float(jit(lambda x: jax.linearize(f, x)[1](1.0))(2.0)) == 80.0


def test_map_with_batch_size_stages():
    """lax.map with batch_size reshaped with -1, which lax.reshape does not accept staged."""
    xs = jnp.arange(7.0)
    out = jit(lambda v: lax_map(lambda x: x * 3.0, v, batch_size=3))(xs)
    np.testing.assert_allclose(np.asarray(out), np.arange(7.0) * 3)
