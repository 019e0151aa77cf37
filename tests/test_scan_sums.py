"""compiler/scan_sums.py: carries of a scan that only accumulate a per-step product (a weight
gradient) become one product over the stacked operands after the loop; values against the
untransformed program, and where the pass must leave a scan alone."""
import numpy as np
import pytest

import corejax as jax
import corejax.numpy as jnp
from corejax import lax
from corejax.compiler import passes
from corejax.compiler.scan_sums import scan_sums


def _scans(closed):
    return [e for e in closed.jaxpr.eqns if e.primitive.name == "scan"]


def _optimized(f, *args):
    return passes.run_passes(jax.make_jaxpr(f)(*args))


def _without_pass(monkeypatch):
    monkeypatch.setattr(passes, "PASSES", [p for p in passes.PASSES if p[0] != "scan_sums"])


def rnn_loss(params, xs, h0):
    """An Elman RNN whose kernels are used through views (a fused gate kernel sliced in two),
    so its backward scan accumulates slices of a transposed product and a bias sum."""
    def cell(h, x):
        z = jnp.dot(jnp.concatenate([h, x], -1), params["w"]) + params["b"]
        a, b = z[:, :8], z[:, 8:]
        h = jnp.tanh(a) * jax.nn.sigmoid(b)
        return h, h
    _, hs = lax.scan(cell, h0, xs)
    return jnp.sum(hs ** 2)


@pytest.fixture
def rnn(rng):
    params = {"w": rng.standard_normal((8 + 3, 16)).astype(np.float32) * 0.3,
              "b": rng.standard_normal(16).astype(np.float32)}
    xs = rng.standard_normal((12, 5, 3)).astype(np.float32)
    h0 = rng.standard_normal((5, 8)).astype(np.float32)
    return params, xs, h0


def test_weight_gradient_leaves_the_backward_loop(rnn):
    g = jax.grad(rnn_loss)
    before = passes.run_passes(jax.make_jaxpr(g)(*rnn),
                               [p for p in passes.PASSES if p[0] != "scan_sums"])
    after = _optimized(g, *rnn)
    carries = lambda c: sorted(e.params["num_carry"] for e in _scans(c))
    # the backward scan kept only the hidden-state cotangent
    assert carries(after) == [1, 1] and carries(before)[-1] > 1
    names = [e.primitive.name for e in after.jaxpr.eqns]
    assert names.count("dot_general") >= 1 and "reduce_sum" in names


def test_values_match_the_loop_accumulation(rnn, monkeypatch):
    g = jax.jit(jax.grad(rnn_loss))(*rnn)
    _without_pass(monkeypatch)
    ref = jax.jit(jax.grad(rnn_loss))(*rnn)
    eager = jax.grad(rnn_loss)(*rnn)
    for a, b, c in zip(jax.tree_util.tree_leaves(g), jax.tree_util.tree_leaves(ref),
                       jax.tree_util.tree_leaves(eager)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-5, atol=2e-5)
        np.testing.assert_allclose(np.asarray(a), np.asarray(c), rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("reverse", [False, True])
def test_nonzero_initial_carry_and_reverse(reverse, rng):
    a = rng.standard_normal((7, 4, 3)).astype(np.float32)
    b = rng.standard_normal((7, 4, 5)).astype(np.float32)
    init = rng.standard_normal((3, 5)).astype(np.float32)

    def f(init, a, b):
        def body(acc, ab):
            x, y = ab
            return acc + jnp.dot(x.T, jnp.sin(y)), None
        acc, _ = lax.scan(body, init, (a, b), reverse=reverse)
        return acc
    opt = _optimized(f, init, a, b)
    assert [e.params["num_carry"] for e in _scans(opt)] == [0]
    want = init + np.einsum("tki,tkj->ij", a.astype(np.float64), np.sin(b.astype(np.float64)))
    np.testing.assert_allclose(np.asarray(jax.jit(f)(init, a, b)), want, rtol=1e-5, atol=1e-5)


def test_scans_left_alone(rng):
    a = rng.standard_normal((6, 4, 3)).astype(np.float32)

    def reads_acc(init, a):          # the accumulator is read inside the loop
        def body(acc, x):
            return acc + jnp.dot(x.T, x), jnp.sum(acc)
        return lax.scan(body, init, a)

    def product_used_twice(init, a):  # the product feeds the ys too
        def body(acc, x):
            p = jnp.dot(x.T, x)
            return acc + p, p
        return lax.scan(body, init, a)

    def constant_operand(init, a):   # a loop-invariant operand: nothing gained by stacking
        w = jnp.ones((4, 3))
        def body(acc, x):
            return acc + jnp.dot(w.T, x), None
        return lax.scan(body, init, a)
    init = np.zeros((3, 3), np.float32)
    for f in (reads_acc, product_used_twice, constant_operand):
        closed = jax.make_jaxpr(f)(init, a)
        assert scan_sums(closed) is closed, f.__name__
        np.testing.assert_allclose(np.asarray(jax.tree_util.tree_leaves(jax.jit(f)(init, a))[0]),
                                   np.asarray(jax.tree_util.tree_leaves(f(init, a))[0]),
                                   rtol=1e-5, atol=1e-5)


def _body_dots(scan_eqn):
    return [e for e in scan_eqn.params["jaxpr"].jaxpr.eqns if e.primitive.name == "dot_general"]


@pytest.mark.parametrize("side", ["lhs", "rhs"])
def test_products_with_a_constant_leave_the_loops(side, rng, monkeypatch):
    """The input projection (a stacked input times a kernel) runs before the forward loop,
    and the input gradient (a per-step value times the kernel, only returned stacked) after
    the backward one; the stepping operand on either side of the product."""
    wx = rng.standard_normal((3, 6)).astype(np.float32) * 0.5
    wh = rng.standard_normal((6, 6)).astype(np.float32) * 0.5
    xs = rng.standard_normal((9, 4, 3)).astype(np.float32)
    if side == "rhs":               # each step's input (3, 4), the right operand
        xs = np.ascontiguousarray(xs.transpose(0, 2, 1))

    def loss(wx, wh, xs):
        def cell(h, x):
            proj = jnp.dot(x, wx) if side == "lhs" else jnp.dot(wx.T, x).T
            h = jnp.tanh(proj + jnp.dot(h, wh))
            return h, h
        _, hs = lax.scan(cell, jnp.zeros((4, 6), jnp.float32), xs)
        return jnp.sum(hs * hs)
    g = jax.grad(loss, argnums=(0, 1, 2))
    opt = _optimized(g, wx, wh, xs)
    forward, backward = sorted(_scans(opt), key=lambda e: e.params["reverse"])
    # left in the forward body: the recurrent product
    assert len(_body_dots(forward)) == 1
    if side == "lhs":
        # and in the backward body the recurrent cotangent's product with the kernel (the
        # input gradient, returned stacked through a transpose on the other side, stays)
        assert len(_body_dots(backward)) == 1
    got = jax.jit(g)(wx, wh, xs)
    monkeypatch.setattr(passes, "PASSES", [p for p in passes.PASSES
                                           if p[0] not in ("scan_sums", "scan_products")])
    want = jax.jit(g)(wx, wh, xs)
    for a, b in zip(got, want):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-5, atol=2e-5)


def _stacked_out(scan_eqn):
    return scan_eqn.params["jaxpr"].jaxpr.outvars[scan_eqn.params["num_carry"]:]


def test_transposes_of_stacked_outputs_follow_the_loop(rng, monkeypatch):
    """A body returning a transpose of a per-step value stacked returns the value, and one
    transpose of the stacked array follows the loop (the product after it reads through
    it); returning the same value twice stacks it once. Values as without both passes."""
    w = rng.standard_normal((6, 5)).astype(np.float32) * 0.5
    xs = rng.standard_normal((7, 4, 6)).astype(np.float32)

    def f(w, xs):
        def body(c, x):
            y = jnp.tanh(jnp.dot(x, w) + c)
            y2 = jnp.tanh(jnp.dot(x, w) + c)          # y again, once cse has run
            return c + 1.0, (y.T, y, y2)
        _, (yts, ys, ys2) = lax.scan(body, jnp.zeros((4, 5), jnp.float32), xs)
        return jnp.einsum("tjb,tbk->jk", yts, xs) + jnp.sum(ys * ys2)
    opt = _optimized(f, w, xs)
    (scan,) = _scans(opt)
    body_prims = {e.primitive.name for e in scan.params["jaxpr"].jaxpr.eqns}
    assert "transpose" not in body_prims
    outs = _stacked_out(scan)
    assert len(outs) == len(set(outs)) == 1            # y, stacked once
    got = jax.jit(f)(w, xs)
    eager = f(w, xs)
    monkeypatch.setattr(passes, "PASSES", [p for p in passes.PASSES
                                           if p[0] not in ("scan_views", "scan_dedupe")])
    before = _scans(_optimized(f, w, xs))[0]
    assert len(_stacked_out(before)) > 1
    want = jax.jit(f)(w, xs)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(np.asarray(got), np.asarray(eager), rtol=2e-5, atol=2e-5)


def test_transposes_of_constants_and_carries(rng):
    """A transposed carry returned stacked is a per-step value: the transpose leaves the
    loop. (A transpose of a loop constant leaves it earlier, with scan_invariants.)"""
    w = rng.standard_normal((3, 4)).astype(np.float32)

    def f(w):
        def body(c, _):
            return c * 0.5, (w.T, c.T)
        return lax.scan(body, w, None, length=5)
    opt = _optimized(f, w)
    (scan,) = _scans(opt)
    assert not [e for e in scan.params["jaxpr"].jaxpr.eqns if e.primitive.name == "transpose"]
    c, (wts, cts) = jax.jit(f)(w)
    cs = w * 0.5 ** np.arange(5)[:, None, None]
    np.testing.assert_array_equal(np.asarray(wts), np.broadcast_to(w.T, (5, 4, 3)))
    np.testing.assert_allclose(np.asarray(cts), cs.transpose(0, 2, 1), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(c), w * 0.5 ** 5, rtol=1e-6)


@pytest.mark.parametrize("k, n", [(6, 4), (256, 512)])     # a loop matmul; BLAS
def test_constants_read_transposed_by_loop_products_are_transposed_before_the_loop(
        k, n, rng, monkeypatch):
    # x @ W.T with W a loop constant: the loop gets W.T as a C array of its own (transposed
    # and copied once, before it) and its product reads that as it is.
    w = (rng.standard_normal((n, k)) / np.sqrt(k)).astype(np.float32)
    u = (rng.standard_normal((n, k)) / np.sqrt(n)).astype(np.float32)
    xs = rng.standard_normal((9, 32, n)).astype(np.float32)
    h0 = rng.standard_normal((32, k)).astype(np.float32)

    def f(w, u, xs, h0):
        def cell(h, x):
            z = jnp.tanh(x + h @ w.T)
            return jnp.tanh(z @ u), z[:, :2]
        return lax.scan(cell, h0, xs)

    opt = _optimized(f, w, u, xs, h0)
    scan, = _scans(opt)
    body, nc = scan.params["jaxpr"].jaxpr, scan.params["num_consts"]
    dots = [e for e in body.eqns if e.primitive.name == "dot_general"]
    assert [e.params["dimension_numbers"][0] for e in dots] == [((1,), (0,))] * 2
    consts = body.invars[:nc]
    assert dots[0].invars[1] in consts and dots[0].invars[1].aval.shape == (k, n)
    outer = {v: e for e in opt.jaxpr.eqns for v in e.outvars}
    copied = outer[scan.invars[consts.index(dots[0].invars[1])]]
    assert copied.primitive.name == "copy" and outer[copied.invars[0]].primitive.name == \
        "transpose"
    got = jax.jit(f)(w, u, xs, h0)
    monkeypatch.setattr(passes, "PASSES", [p for p in passes.PASSES if p[0] != "scan_layouts"])
    before = passes.run_passes(_scans(_optimized(f, w, u, xs, h0))[0].params["jaxpr"])
    assert [e.params["dimension_numbers"][0] for e in before.jaxpr.eqns
            if e.primitive.name == "dot_general"] == [((1,), (1,)), ((1,), (0,))]
    for a, b in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(f(w, u, xs, h0))):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-5, atol=2e-5)
