"""Loops compiled whole (compiler/loops.py): while / fori / scan under jit against the
Python-driven host loop (bit for bit, except small dots, whose loop matmul rounds differently
from BLAS), the reference backend and eager evaluation; that the compiled path is taken where it
should be, and that bodies without a nopython form still run (Python-driven)."""
import contextlib
import os
import subprocess
import sys

import numpy as np
import pytest

import corejax as jax
import corejax.numpy as jnp
from corejax import grad, jit, lax, vmap
from corejax.compiler import control_flow, loops
from corejax.compiler.loop_lowerings import DOT_MAX_MACS
from corejax.lax.control_flow import cond, fori_loop, scan, while_loop
from corejax.tree_util import tree_leaves


@contextlib.contextmanager
def python_driven(monkeypatch):
    def refuse(name, params):
        raise loops.Unsupported("disabled by the test")
    with monkeypatch.context() as m:
        m.setattr(control_flow.loops, "compile_loop", refuse)
        yield


def _fresh_jit(f, **kw):
    return jit(lambda *a: f(*a), **kw)


def _calls():
    return loops.stats["compiled_calls"], loops.stats["python_calls"]


def _same(a, b, exact=True, tol=1e-5):
    la, lb = tree_leaves(a), tree_leaves(b)
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        x, y = np.asarray(x), np.asarray(y)
        assert x.dtype == y.dtype and x.shape == y.shape, (x.dtype, y.dtype, x.shape, y.shape)
        if exact:
            np.testing.assert_array_equal(x, y)
            if x.dtype.kind == "f":     # the sign of zero too
                np.testing.assert_array_equal(np.signbit(x) | np.isnan(x),
                                              np.signbit(y) | np.isnan(y))
        else:
            np.testing.assert_allclose(x, y, rtol=tol, atol=tol)


def check(monkeypatch, f, *args, compiled=True, exact=True, tol=1e-5):
    """f under jit (compiled loop where `compiled`), against the Python-driven loop (bitwise
    unless `exact` is False), the reference backend and eager evaluation."""
    c0, p0 = _calls()
    out = _fresh_jit(f)(*args)
    c1, p1 = _calls()
    if compiled:
        assert c1 > c0 and p1 == p0, "the loop did not run compiled"
    else:
        assert p1 > p0, "the loop was expected to stay Python-driven"
    with python_driven(monkeypatch):
        driven = _fresh_jit(f)(*args)
    _same(out, driven, exact, tol)
    _same(out, _fresh_jit(f, backend="reference")(*args), False, tol)
    _same(out, f(*args), False, tol)
    return out


x3 = jnp.asarray(np.linspace(-1.0, 1.0, 3), jnp.float32)
m34 = jnp.asarray(np.arange(12.0).reshape(3, 4) / 7, jnp.float32)


# --- bodies that compile -------------------------------------------------------------------------

def test_fori_elementwise(monkeypatch):
    check(monkeypatch, lambda x: fori_loop(0, 50, lambda i, c: c * 0.9 + jnp.sin(c) + i, x), x3)


def test_fori_reductions_and_broadcasts(monkeypatch):
    def body(i, c):
        return c - jnp.mean(c, axis=1, keepdims=True) * 0.5 + jnp.max(c) * 0.01
    check(monkeypatch, lambda m: fori_loop(0, 7, body, m), m34)


def test_scan_layout_ops(monkeypatch):
    def step(c, x):
        t = c.T                                       # transpose
        s = t[1:3, ::2]                               # slice with strides
        cat = jnp.concatenate([s.reshape(-1), x[:2], jnp.flip(x)])
        rolled = jnp.pad(cat, (1, 2), constant_values=3.0)[:cat.shape[0]]
        new_c = c * 0.5 + jnp.broadcast_to(rolled[:4], (3, 4))
        return new_c, (cat.sum(), rolled)
    xs = jnp.asarray(np.random.RandomState(0).randn(6, 4), jnp.float32)
    check(monkeypatch, lambda c, xs: scan(step, c, xs), m34, xs)


def test_scan_dynamic_slices(monkeypatch):
    def step(c, i):
        window = lax.dynamic_slice(c, (i, 1), (2, 2))              # start clamps past the end
        c = lax.dynamic_update_slice(c, window * 2.0 + 1.0, (i - 1, 0))
        return c, lax.dynamic_index_in_dim(c, i, 0, keepdims=False)
    check(monkeypatch, lambda c: scan(step, c, jnp.arange(-1, 5)), m34)


def test_scan_rnn_small_dots(monkeypatch):
    rs = np.random.RandomState(1)
    W = jnp.asarray(rs.randn(8, 8) / 3, jnp.float32)
    U = jnp.asarray(rs.randn(5, 8) / 3, jnp.float32)
    xs = jnp.asarray(rs.randn(20, 2, 5), jnp.float32)
    W3 = jnp.asarray(rs.randn(2, 8, 9) / 3, jnp.float32)

    def rnn(h, xs):
        def cell(h, x):
            h = jnp.tanh(h @ W + x @ U)                              # matrix products
            batched = jnp.einsum("bi,bik->bk", h, W3).sum()              # batched, n >= 8
            return h, jnp.dot(W, h[0]) + jnp.einsum("bi,bi->b", h, h).sum() + batched
        return scan(cell, h, xs)
    check(monkeypatch, rnn, jnp.zeros((2, 8), jnp.float32), xs, exact=False)


def test_integer_dot_is_exact(monkeypatch):
    a = jnp.asarray(np.arange(9).reshape(3, 3) % 4, jnp.int32)
    check(monkeypatch, lambda a: fori_loop(0, 3, lambda i, m: (m @ a) % 7, a), a)


def test_nested_loops_and_cond(monkeypatch):
    def f(x):
        def outer(c, k):
            inner = fori_loop(0, 3, lambda i, v: v * 1.5 - i, c)
            counted = while_loop(lambda s: s[0] < 4 + k, lambda s: (s[0] + 1, s[1] * 0.75),
                                 (jnp.int32(0), inner))[1]
            branch = cond(k % 2 == 0, lambda v: v + 1.0, lambda v: jnp.cos(v), counted)
            picked = lax.switch(k, [lambda v: v, lambda v: -v, lambda v: v * v], branch)
            return picked, jnp.sum(picked)
        return scan(outer, x, jnp.arange(5))
    check(monkeypatch, f, x3)


def test_pytree_carries_of_mixed_dtypes(monkeypatch):
    def f(x):
        def body(i, s):
            flag = jnp.logical_xor(s["flag"], i % 3 == 0)
            return {"x": jnp.where(flag, s["x"] * 2.0, s["x"] - 1.0),
                    "n": (s["n"][0] + i, s["n"][1] * 2),
                    "flag": flag}
        return fori_loop(0, 9, body, {"x": x, "n": (jnp.int32(1), jnp.ones(2, jnp.int32)),
                                       "flag": jnp.bool_(False)})
    check(monkeypatch, f, x3)


def test_carry_permutation_and_passthrough(monkeypatch):
    # Each carry's new value is another carry's old buffer (a swap needs a temporary), one
    # carry passes through, one becomes a constant.
    def f(a, b):
        return fori_loop(0, 5, lambda i, c: (c[1], c[0] + c[1], c[2], jnp.ones(3)),
                         (a, b, a * 3, b))
    check(monkeypatch, f, x3, x3 + 1)


def test_reverse_scan_and_empty_lengths(monkeypatch):
    xs = jnp.asarray(np.arange(12.0).reshape(4, 3), jnp.float32)
    check(monkeypatch, lambda c, xs: scan(lambda c, x: (c * 0.5 + x, c), c, xs, reverse=True),
          x3, xs)
    out = check(monkeypatch, lambda c, xs: scan(lambda c, x: (c + x, c * x), c, xs),
                x3, xs[:0])
    assert out[1].shape == (0, 3)
    check(monkeypatch, lambda c: scan(lambda c, _: (c + 1.0, None), c, None, length=0), x3)
    check(monkeypatch, lambda c: fori_loop(5, 2, lambda i, v: v + i, c), x3)


def test_fori_with_traced_bounds_is_a_compiled_while(monkeypatch):
    f = lambda x, lo, hi: fori_loop(lo, hi, lambda i, v: v * 1.25 + i, x)   # noqa: E731
    assert "while" in str(jax.make_jaxpr(f)(x3, 1, 7))
    check(monkeypatch, f, x3, 1, 7)
    check(monkeypatch, f, x3, 7, 1)


def test_vmap_of_while_masks_the_loop(monkeypatch):
    def f(x, n):
        return while_loop(lambda s: s[0] < n, lambda s: (s[0] + 1, s[1] * 1.5 + 1.0),
                          (jnp.int32(0), x))[1]
    xs = jnp.asarray(np.arange(8.0).reshape(4, 2), jnp.float32)
    ns = jnp.asarray([0, 3, 1, 6], jnp.int32)
    out = check(monkeypatch, vmap(f), xs, ns)
    expected = [np.asarray(f(x, n)) for x, n in zip(xs, ns)]
    np.testing.assert_allclose(np.asarray(out), np.stack(expected), rtol=1e-6)


def test_against_python_loops():
    def py_scan(c, xs):
        ys = []
        for x in np.asarray(xs):
            c = np.tanh(c + x) * np.float32(0.5)
            ys.append(c.sum())
        return c, np.asarray(ys, np.float32)
    xs = jnp.asarray(np.random.RandomState(2).randn(30, 3), jnp.float32)
    c, ys = jit(lambda c, xs: scan(lambda c, x: ((jnp.tanh(c + x) * 0.5),) * 2, c, xs))(x3, xs)
    pc, pys = py_scan(np.asarray(x3), xs)
    np.testing.assert_allclose(c, pc, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(ys).sum(axis=1), pys, rtol=1e-5)


def test_scatters_argmax_cumsum_are_native(monkeypatch):
    m = jnp.asarray(np.random.RandomState(5).randn(4, 5), jnp.float32)
    idx = jnp.asarray([3, 0, 3, 7, -9], jnp.int32)                # repeated and out of range

    def body(i, c):
        c = c.at[i % 4].set(c[(i + 1) % 4] * 0.5)                  # a row window
        c = c.at[jnp.argmax(c[:, 0]), jnp.argmin(c[1])].add(1.0)  # point, traced twice
        c = c.at[:, idx].add(0.25, mode="drop")                    # repeated / dropped
        c = c.at[1, idx].mul(1.5, mode="clip")
        c = c.at[idx % 4, 2].set(jnp.arange(5.0))                  # repeated: the last wins
        return jnp.cumsum(c, axis=1) * 0.1 + lax.cumsum(c[:, ::-1], axis=0, reverse=True) * 0.05
    f = lambda c: fori_loop(0, 5, body, c)   # noqa: E731
    check(monkeypatch, f, m)
    assert _built_loop(f, m).host_prims == []

    nan_ties = jnp.asarray([[1.0, 3.0, 3.0, np.nan, 2.0], [5.0, -1.0, -1.0, 0.0, 5.0]],
                           jnp.float32)
    g = lambda x: scan(lambda c, _: (c, (jnp.argmax(c, axis=1), jnp.argmin(c, axis=0),  # noqa
                                         jnp.argmax(c[:, 1:3] > 0, axis=1))), x, None, length=2)
    check(monkeypatch, g, nan_ties)
    ints = jnp.asarray(np.arange(12).reshape(3, 4) * 7 % 5, jnp.int32)
    check(monkeypatch, lambda x: fori_loop(
        0, 3, lambda i, c: c.at[c[0, :3] % 3, 1].add(c[:, 2]) + jnp.cumsum(c, 0), x), ints)


def test_gathers_are_native(monkeypatch):
    table = jnp.asarray(np.random.RandomState(6).randn(7, 3), jnp.float32)
    ids = jnp.asarray([[1, 6], [0, 9], [-2, 3]], jnp.int32)        # one out of range

    def step(c, k):
        rows = table[(ids + k) % 7]                                 # embedding lookup
        clipped = jnp.take(table, ids[:, 1] + k, axis=0, mode="clip")
        filled = jnp.take(table, ids[:, 1] + k, axis=0, mode="fill", fill_value=-5.0)
        return c * 0.5 + rows.sum(1) + clipped + filled, table.T[:, k]
    f = lambda c: scan(step, c, jnp.arange(5))   # noqa: E731
    c0 = jnp.zeros((3, 3), jnp.float32)
    check(monkeypatch, f, c0)
    assert _built_loop(f, c0).host_prims == []
    def batched(c, k):            # gathers and scatters with batching dims
        along = jnp.take_along_axis(c, (ids[:, :1] + k) % 3, axis=1)
        per_row = vmap(lambda row, i: row.at[i].add(1.0))(c, (ids[:, 0] + k) % 3)
        return per_row * 0.5 + along, along[:, 0]
    check(monkeypatch, lambda c: scan(batched, c, jnp.arange(4)), c0 + table[:3])
    g = grad(lambda c: scan(batched, c, jnp.arange(4))[1].sum() ** 2)  # scatter-add of along
    check(monkeypatch, g, c0 + table[:3], exact=False)
    assert _built_loop(lambda c: scan(batched, c, jnp.arange(4)), c0).host_prims == []
    nan_fill = lambda c: fori_loop(0, 2, lambda i, v: v + jnp.take(  # noqa: E731
        table, ids[:, 1] + i, axis=0, mode="fill").sum(1), c)
    out = check(monkeypatch, nan_fill, jnp.zeros(3, jnp.float32))
    assert np.isnan(np.asarray(out)[1])                             # the default NaN fill


def test_stable_sorts_are_native(monkeypatch):
    keys = jnp.asarray([[2.0, np.nan, -0.0, 1.0, 0.0, 2.0, np.nan, -1.0],
                        [0.0, -0.0, 0.0, 3.0, 3.0, 1.0, 1.0, 1.0]], jnp.float32)
    ints = jnp.asarray([[3, 1, 3, 0, 1, 2, 2, 0], [1, 1, 0, 0, 1, 1, 0, 0]], jnp.int32)

    def step(c, k):
        ks, order = c
        s = jnp.sort(ks, axis=1)
        perm = jnp.argsort(ks[:, ::-1], axis=1)                        # ties: stable order
        by_two = lax.sort((ints, ks, order), dimension=1, num_keys=2)  # lexicographic keys
        top, where = lax.top_k(ks[0], 3)
        return (ks * -1.0 + s, by_two[2] + k), (perm, by_two[1], top, where, jnp.sort(ks, 0))
    f = lambda ks: scan(step, (ks, jnp.zeros((2, 8), jnp.int32)), jnp.arange(3))  # noqa: E731
    check(monkeypatch, f, keys)
    assert _built_loop(f, keys).host_prims == []


def test_random_bits_in_loops(monkeypatch):
    def f(key, x):
        def step(c, k):
            k1, k2 = jax.random.split(k)
            keep = jax.random.bernoulli(k1, 0.7, c.shape)
            return jnp.where(keep, c, 0.0) + jax.random.normal(k2, c.shape) * 0.1, k2
        return scan(step, x, jax.random.split(key, 8))
    key = jax.random.PRNGKey(42)
    check(monkeypatch, f, key, jnp.ones((2, 5), jnp.float32))
    assert _built_loop(f, key, jnp.ones((2, 5), jnp.float32)).host_prims == []


def test_updates_in_place_only_when_the_old_value_is_dead(monkeypatch):
    z = jnp.zeros((6, 5), jnp.float32)

    def fill(buf):
        def body(i, b):
            b = b.at[i, 0].set(i * 1.0)
            return lax.dynamic_update_slice(b, jnp.full((1, 4), 2.0) * i, (i, 1))
        return fori_loop(0, 6, body, buf)
    loop_text = _built_loop(fill, z).source.split("for it_")[1]
    assert "[:] = " not in loop_text                # no whole-buffer copy per iteration
    check(monkeypatch, fill, z)

    def old_read_after(b):
        def step(c, i):
            new = c.at[i].set(-1.0)
            return new, jnp.sum(c) + new[0, 0] + c.T[1, i]
        return scan(step, b, jnp.arange(6))

    def old_returned(b):
        return fori_loop(0, 4, lambda i, c: (c[0].at[i].add(1.0), c[0] * 2 + c[1]), (b, b))

    def old_passed(b):
        return fori_loop(0, 4, lambda i, c: (c[0].at[i].add(1.0), c[0]), (b, b))

    def crossed(b):
        def body(i, c):
            x, y = c
            return lax.dynamic_update_slice(y, x[:1] + 1.0, (i, 0)), x.at[i + 1].mul(0.5)
        return fori_loop(0, 4, body, (b + 1.0, b))

    def nested(b):
        def outer(c, k):
            c = fori_loop(0, 3, lambda i, v: v.at[k, i].add(1.0 + i), c)
            return c.at[k + 1].set(c[k] * 2), c.sum()
        return scan(outer, b, jnp.arange(4))
    for f in (old_read_after, old_returned, old_passed, crossed, nested):
        check(monkeypatch, f, z + jnp.arange(5.0))


# --- gradients (their backward passes are scans too) ----------------------------------------------

def test_grad_of_scan_and_fori_under_jit(monkeypatch):
    W = jnp.asarray(np.random.RandomState(3).randn(3, 3) / 2, jnp.float32)

    def loss(x):
        h, ys = scan(lambda h, _: (jnp.tanh(W @ h + 0.1), jnp.sum(h * h)), x, None, length=6)
        return jnp.sum(ys) + fori_loop(0, 4, lambda i, v: jnp.sin(v) * 1.1, h).sum()
    g = check(monkeypatch, grad(loss), x3, exact=False)
    # against central differences in float64
    eps, num = 1e-3, np.zeros(3)
    for k in range(3):
        e = np.zeros(3, np.float32)
        e[k] = eps
        num[k] = (float(loss(x3 + e)) - float(loss(x3 - e))) / (2 * eps)
    np.testing.assert_allclose(np.asarray(g), num, rtol=2e-2, atol=2e-3)


# --- bodies with host calls (objmode) inside the compiled loop -----------------------------------

def _built_loop(f, *args, name="scan"):
    eqn = next(e for e in jax.make_jaxpr(f)(*args).jaxpr.eqns if e.primitive.name == name)
    return loops.compile_loop(name, eqn.params)


def test_host_calls_inside_compiled_loops(monkeypatch):
    def body(i, c):
        c = c.at[jnp.argmax(c)].max(0.5)                         # scatter-max
        along = jnp.take_along_axis(c, jnp.asarray([2, 0, 1]), axis=0)  # a batched gather
        return lax.sort(c, is_stable=False) * 0.25 + along       # unstable sort
    f = lambda c: fori_loop(0, 6, body, c)   # noqa: E731
    calls = loops.stats["host_calls"]
    check(monkeypatch, f, x3)
    assert loops.stats["host_calls"] > calls
    assert set(_built_loop(f, x3).host_prims) == {"scatter-max", "sort"}


def test_host_calls_in_branches_of_nested_loops(monkeypatch):
    def f(x):
        return fori_loop(0, 5, lambda i, c: cond(
            i % 2 == 0, lambda v: lax.sort(v, is_stable=False) * -1.0,
            lambda v: fori_loop(0, 2, lambda j, w: lax.sort(w, is_stable=False) + j, v), c), x)
    check(monkeypatch, f, x3)
    assert _built_loop(f, x3).host_prims == ["sort"]


# --- bodies that stay Python-driven ---------------------------------------------------------------

def test_unsupported_bodies_fall_back_correctly(monkeypatch):
    seen = []

    def body(i, c):
        jax.debug.callback(lambda v: seen.append(int(v)), i)     # an effect: stays in Python
        return c * 2.0
    check(monkeypatch, lambda c: fori_loop(0, 3, body, c), x3, compiled=False)
    assert seen[-3:] == [0, 1, 2]
    with pytest.raises(loops.Unsupported, match="debug_callback|effectful"):
        _built_loop(lambda c: fori_loop(0, 3, body, c), x3)
    inner = lambda c: fori_loop(0, 3, lambda i, v: fori_loop(0, 2, lambda j, w: w + j, body(i, v)),  # noqa
                                c)
    compiled_calls = loops.stats["compiled_calls"]
    check(monkeypatch, inner, x3, compiled=False)     # the outer loop is Python-driven ...
    assert loops.stats["compiled_calls"] > compiled_calls    # ... its inner loop compiled
    long = jnp.asarray(np.random.RandomState(4).randn(300000) / 550, jnp.float32)
    dot = lambda v: fori_loop(0, 2, lambda i, u: u * jnp.tanh(u @ u), v)   # noqa: E731
    check(monkeypatch, dot, long, compiled=False)   # a BLAS-sized (1, K) @ (K, 1) dot
    with pytest.raises(loops.Unsupported, match="BLAS-sized dot_general.*dot"):
        _built_loop(dot, long)
    half = jnp.asarray([1.0, 2.0], jnp.float16)
    check(monkeypatch, lambda c: fori_loop(0, 3, lambda i, v: v * 1.5, c), half,
          compiled=False)


@pytest.mark.parametrize("m,k,n", [(96, 96, 96), (32, 784, 512), (8, 600, 64)])
def test_blas_sized_products_call_blas_from_the_compiled_loop(monkeypatch, m, k, n):
    """(96^3: OpenBLAS unchunked, or one thread; 784: the executor's reduction chunks, or
    its blocks; 8x600x64: a small product, one thread in the executor.) The bits are the
    Python-driven loop's."""
    from corejax.compiler import blas
    if blas.gemm_symbol(np.float32) is None:
        pytest.skip("no cblas_sgemm to call from compiled code here")
    r = np.random.RandomState(5)
    w = jnp.asarray(r.randn(k, n) / k, jnp.float32)
    u = jnp.asarray(r.randn(n, k) / n, jnp.float32)
    x = jnp.asarray(r.randn(m, k), jnp.float32)
    f = lambda x: fori_loop(0, 3, lambda i, v: jnp.tanh(v @ w) @ u + v * 0.5, x)  # noqa: E731
    plan = blas.plan_for(m, k, n, False, False, np.float32)
    if isinstance(plan, blas.Blocks) and len(plan.bounds) > 2:
        # no plan here: the executor shares the blocks out over the cores; the loop stays
        # Python-driven (bit for bit with itself and eager evaluation)
        check(monkeypatch, f, x, compiled=False)
        with pytest.raises(loops.Unsupported, match="in blocks over the cores"):
            _built_loop(f, x)
        return
    check(monkeypatch, f, x)
    assert "call_gemm" in _built_loop(f, x).source
    # transposed operands (the gradient's products) are read in place with the BLAS flag
    check(monkeypatch, lambda x: jax.grad(lambda x: jnp.sum(f(x) ** 2))(x), x)


def test_an_rnn_with_blas_sized_cells_differentiates_in_compiled_loops(monkeypatch):
    r = np.random.RandomState(6)
    w = jnp.asarray(r.randn(256, 256) / 16, jnp.float32)
    xs = jnp.asarray(r.randn(20, 32, 256), jnp.float32)

    def loss(w):
        h, _ = lax.scan(lambda h, x: (jnp.tanh(h @ w + x),) * 2, jnp.zeros((32, 256)), xs)
        return jnp.mean(h ** 2)

    grads = check(monkeypatch, jax.grad(loss), w, tol=1e-4)
    assert np.isfinite(np.asarray(grads)).all()


def test_generated_source_is_cached_module():
    f = lambda x: fori_loop(0, 3, lambda i, v: v * 2.0, x)   # noqa: E731
    eqn = next(e for e in jax.make_jaxpr(f)(x3).jaxpr.eqns if e.primitive.name == "scan")
    run = loops.compile_loop("scan", eqn.params)
    assert run.host_prims == []
    assert "cache=True" in run.source and "def kernel(" in run.source
    assert loops.compile_loop("scan", eqn.params) is run      # built once per body
    from corejax.compiler import compile_jaxpr
    text = loops.loop_sources(compile_jaxpr(jax.make_jaxpr(f)(x3), "cpu"))
    assert f"compiled as loop k_{run.key}" in text and run.source in text


_CACHE_PROBE = """
import numpy as np, corejax as jax, corejax.numpy as jnp
from corejax import lax
from corejax.compiler import kernel_stats, loops
f = jax.jit(lambda h, xs, w: lax.scan(lambda h, x: (jnp.tanh(w @ h + x), h.sum()), h, xs))
out = f(jnp.ones(4), jnp.ones((9, 4)), jnp.eye(4))
assert loops.stats["compiled_calls"] == 1
print(kernel_stats()["kernels_compiled"], kernel_stats()["kernels_loaded"])
"""


def test_compiled_loops_load_from_the_disk_cache_in_a_new_process(tmp_path):
    env = dict(os.environ, COREJAX_CACHE_DIR=str(tmp_path))

    def probe():
        out = subprocess.run([sys.executable, "-c", _CACHE_PROBE], env=env, check=True,
                             capture_output=True, text=True).stdout.split()
        return int(out[0]), int(out[1])
    compiled, _ = probe()
    assert compiled >= 1
    assert probe() == (0, compiled)        # everything comes back from the cache


# --- BLAS-sized products of every kind NumPy's matmul has ----------------------------------------

def _blas_case(request, dtype, *routines):
    """dtype, with 64-bit types on for float64; a skip where NumPy's OpenBLAS lacks one of the
    cblas routines."""
    from corejax.compiler import blas
    dt = np.dtype(dtype)
    for name in routines:
        if getattr(blas, f"{name}_symbol")(dt) is None:
            pytest.skip(f"no cblas_?{name} to call from compiled code here")
    if dt == np.float64:
        request.getfixturevalue("x64")
    return dt


def _scan3(step):
    return lambda c: scan(lambda v, _: (step(v), None), c, None, length=3)[0]


def _numpy3(step, x):
    x = np.asarray(x)
    for _ in range(3):
        x = step(x)
    return x


def _compiled_blas(monkeypatch, f, x, numpy_f, call, tol):
    """f's loop compiled (calling `call`: a BLAS routine, or none), bitwise equal to the
    Python-driven loop (`check`) and close to NumPy (`numpy_f`). A skip where the executor's
    bits depend on OpenBLAS's thread count on this machine (a small product there runs on
    one thread, and the plans of blas.plan_for are found by testing); the Python-driven
    loop's bits (None returned) where a product has no plan and runs in blocks over the
    cores (blas.Blocks)."""
    try:
        run = _built_loop(f, x)
    except loops.Unsupported as e:
        if "thread count" in str(e):
            pytest.skip(f"on this machine: {e}")
        if "in blocks over the cores" not in str(e):
            raise
        # no plan here: the executor shares the product's blocks out over the cores, and the
        # loop stays Python-driven, with its bits
        out = check(monkeypatch, f, x, compiled=False, tol=tol)
        np.testing.assert_allclose(np.asarray(out), numpy_f(np.asarray(x)), rtol=tol,
                                   atol=tol)
        return None
    if call is None:
        assert "call_" not in run.source
    else:
        assert call in run.source
    out = check(monkeypatch, f, x, tol=tol)
    np.testing.assert_allclose(np.asarray(out), numpy_f(np.asarray(x)), rtol=tol, atol=tol)
    return run


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_batched_blas_products_compile_bit_for_bit(monkeypatch, request, dtype):
    """One cblas_?gemm per batch element as NumPy's matmul calls it on the executor's C
    operands: (4, 64, 64) @ (4, 64, 64) (4 x 64^3 > DOT_MAX_MACS); and a cblas_?gemv each
    for batched vector products, (4, 1, 600) @ (4, 600, 600)."""
    dt = _blas_case(request, dtype, "gemm", "gemv")
    r = np.random.RandomState(8)
    w = (r.randn(4, 64, 64) / 8).astype(dt)
    x = jnp.asarray(r.randn(4, 64, 64).astype(dt))
    assert 4 * 64 ** 3 > DOT_MAX_MACS
    step = lambda v, m=jnp.asarray(w): jnp.tanh(jnp.matmul(v, m))   # noqa: E731
    run = _compiled_blas(monkeypatch, _scan3(step), x,
                         lambda a: _numpy3(lambda v: np.tanh(np.matmul(v, w)), a),
                         "call_gemm", 1e-4)
    assert "for p_" in run.source                   # a loop over the batch
    wv = (r.randn(4, 600, 600) / 25).astype(dt)
    xv = jnp.asarray(r.randn(4, 1, 600).astype(dt))
    step = lambda v, m=jnp.asarray(wv): jnp.tanh(jnp.matmul(v, m))  # noqa: E731
    _compiled_blas(monkeypatch, _scan3(step), xv,
                   lambda a: _numpy3(lambda v: np.tanh(np.matmul(v, wv)), a), "call_gemv", 1e-4)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("form", ["v @ w", "v @ w.T", "w @ v", "w.T @ v"])
def test_vector_products_call_gemv_bit_for_bit(monkeypatch, request, dtype, form):
    """(1, 600) @ (600, 600) and (600, 600) @ (600, 1), the matrix read in place or
    transposed: cblas_?gemv with the order, transpose flag and leading dimension NumPy's
    matmul passes (each layout picks another OpenBLAS kernel), through the executor's
    blas.matmul (small: one thread there, a thread-invariant call here)."""
    dt = _blas_case(request, dtype, "gemv")
    r = np.random.RandomState(9)
    w = (r.randn(600, 600) / 25).astype(dt)
    m = jnp.asarray(w)
    steps = {"v @ w": (lambda v: jnp.tanh(v @ m), lambda v: np.tanh(v @ w), (1, 600)),
             "v @ w.T": (lambda v: jnp.tanh(v @ m.T), lambda v: np.tanh(v @ w.T), (1, 600)),
             "w @ v": (lambda v: jnp.tanh(m @ v), lambda v: np.tanh(w @ v), (600, 1)),
             "w.T @ v": (lambda v: jnp.tanh(m.T @ v), lambda v: np.tanh(w.T @ v), (600, 1))}
    step, numpy_step, shape = steps[form]
    x = jnp.asarray(r.randn(*shape).astype(dt))
    _compiled_blas(monkeypatch, _scan3(step), x, lambda a: _numpy3(numpy_step, a), "call_gemv",
                   1e-4)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_outer_products_compile_bit_for_bit(monkeypatch, request, dtype):
    """(600, 1) @ (1, 600): NumPy's matmul computes it in its own loop (0 + a * b), not BLAS."""
    dt = _blas_case(request, dtype)
    x = jnp.asarray(np.random.RandomState(10).randn(600, 600).astype(dt))
    step = lambda v: jnp.tanh(v[:, :1] @ v[1:2, :]) + v * 0.5               # noqa: E731
    _compiled_blas(monkeypatch, _scan3(step), x,
                   lambda a: _numpy3(lambda v: np.tanh(v[:, :1] @ v[1:2, :]) + v * 0.5, a),
                   None, 1e-5)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("form,k,rows", [("x @ x.T", 200, 300), ("x.T @ x", 200, 300),
                                         ("x @ x.T", 2000, 300), ("x @ x.T", 300, 150)])
def test_a_matrix_times_its_transpose_calls_syrk_bit_for_bit(monkeypatch, request, dtype, form,
                                                             k, rows):
    """x @ x.T and x.T @ x of a (rows, k) carry: NumPy's matmul sees one data pointer read both
    ways and calls cblas_?syrk (upper triangle), then copies the triangle; k = 2000 is split
    over the reduction where the executor's plan splits it (each chunk one syrk there too).
    Where no plan passes, the executor makes the product in blocks over the cores, and the
    loop stays Python-driven (`_compiled_blas`); (150, 300) @ (300, 150) is one block where no
    plan passes: whole on one thread, syrk still, in the loop as in the executor."""
    dt = _blas_case(request, dtype, "syrk", "gemm")
    x = np.random.RandomState(11).randn(rows, k).astype(dt)
    s = 1.0 / (rows + k)
    if form == "x @ x.T":
        step, numpy_step = (lambda v: jnp.tanh(v @ v.T @ v * s),
                            lambda v: np.tanh(v @ v.T @ v * s))
    else:
        step, numpy_step = (lambda v: jnp.tanh(v @ (v.T @ v) * s),
                            lambda v: np.tanh(v @ (v.T @ v) * s))
    _compiled_blas(monkeypatch, _scan3(step), jnp.asarray(x), lambda a: _numpy3(numpy_step, a),
                   "call_syrk", 1e-4)


def test_blas_operands_laid_out_otherwise_stay_python_driven(monkeypatch):
    """Unbatched BLAS calls are chosen for the layouts the executor's np.matmul sees: C arrays.
    A loop operand laid out otherwise (a transposed view) is copied to a C array before the
    loop, which then runs compiled (the Python-driven loop, reading the view with the
    transpose flag, may round otherwise); a strided view computed in the body (a slice)
    keeps the loop Python-driven."""
    from corejax.compiler import blas
    if blas.gemm_symbol(np.float32) is None:
        pytest.skip("no cblas_sgemm to call from compiled code here")
    r = np.random.RandomState(12)
    # (160^3: BLAS-sized, a plan or one block everywhere: compiled)
    w = jnp.asarray(r.randn(160, 160) / 13, jnp.float32)
    f = lambda x: scan(lambda h, _: (jnp.tanh(h @ w), None), x, None, length=3)[0]  # noqa: E731
    base = jnp.asarray(r.randn(160, 160), jnp.float32)
    _built_loop(f, base)                              # the loop itself compiles ...
    check(monkeypatch, lambda b: f(b.T), base, exact=False)    # ... for x.T's view, copied
    check(monkeypatch, f, base)                       # (and C operands run it compiled)
    x = jnp.asarray(r.randn(160, 100), jnp.float32)
    g = lambda x: scan(lambda v, _: (jnp.tanh(v @ v.T)[:, :100], None), x, None,  # noqa: E731
                       length=3)[0]
    with pytest.raises(loops.Unsupported, match="strided view"):
        _built_loop(g, x)
    # (three rounds of tanh(v v^T) carry the backends' last-bit differences in the products
    # into the fourth digit of small entries: up to 1.3e-5 with OpenBLAS's AVX2 kernels)
    check(monkeypatch, g, x, compiled=False, tol=1e-4)


def test_scan_invariants_hoisted_out_of_the_loop_and_its_gradient(monkeypatch):
    """Work reading only a scan's constants (a concatenation of weights, as an LSTM cell
    does) runs once before the loop; the gradient's loop-invariant residuals are not stacked
    per iteration. Same results as the loop as written, compiled and Python-driven."""
    from corejax.compiler.passes import run_passes
    r = np.random.RandomState(3)
    w1 = jnp.asarray(r.randn(8, 8) / 4, jnp.float32)
    w2 = jnp.asarray(r.randn(8, 8) / 4, jnp.float32)
    xs = jnp.asarray(r.randn(5, 3, 8), jnp.float32)

    def loss(w1, w2, xs):
        def body(h, x):
            w = jnp.concatenate([w1, w2], axis=1) * 0.5     # loop-invariant
            z = h @ w[:, :8] + x @ w[:, 8:]
            return jnp.tanh(z), z
        h, zs = scan(body, jnp.zeros((3, 8)), xs)
        return jnp.sum(h) + jnp.sum(zs ** 2)

    f = jax.value_and_grad(loss, argnums=(0, 1))
    opt = run_passes(jax.make_jaxpr(f)(w1, w2, xs))
    scans = [e for e in opt.jaxpr.eqns if e.primitive.name == "scan"]
    assert scans
    for e in scans:
        body_prims = {b.primitive.name for b in e.params["jaxpr"].jaxpr.eqns}
        assert "concatenate" not in body_prims
        # no (5, 8, 16) stack of the invariant matrix among the loop's operands or results
        assert all(v.aval.shape != (5, 8, 16) for v in list(e.invars) + list(e.outvars)
                   if hasattr(v, "aval"))
    out = check(monkeypatch, f, w1, w2, xs, exact=False)
    _same(out, jit(f, backend="reference")(w1, w2, xs), exact=False)
