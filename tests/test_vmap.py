"""vmap: batching rules for every primitive against stacking the unbatched function."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import corejax as jax
import corejax.numpy as jnp
from corejax import lax

# (name, function, operand shapes) — each operand may be batched or not, along any axis.
CASES = [
    ("exp", lax.exp, [(3, 4)]), ("tanh", lax.tanh, [(3, 4)]), ("neg", lax.neg, [(2, 3)]),
    ("add", lax.add, [(3, 4), (3, 4)]), ("mul", lax.mul, [(3, 4), (3, 4)]),
    ("max", lax.max, [(2, 3), (2, 3)]), ("pow", lambda x, y: lax.pow(lax.abs(x) + 1, y),
                                         [(2, 3), (2, 3)]),
    ("lt", lax.lt, [(3,), (3,)]),
    ("select", lambda p, x, y: lax.select(p > 0, x, y), [(3, 2), (3, 2), (3, 2)]),
    ("convert", lambda x: lax.convert_element_type(x, np.int32), [(2, 3)]),
    ("reduce_sum", lambda x: lax.reduce_sum(x, (1,)), [(2, 3, 4)]),
    ("reduce_max", lambda x: lax.reduce_max(x, (0, 2)), [(2, 3, 4)]),
    ("reduce_prod", lambda x: lax.reduce_prod(x, (0,)), [(2, 3)]),
    ("argmax", lambda x: lax.argmax(x, 1), [(2, 3, 4)]),
    ("cumsum", lambda x: lax.cumsum(x, 0), [(3, 2)]),
    ("broadcast_in_dim", lambda x: lax.broadcast_in_dim(x, (2, 3, 5), (0, 1)), [(2, 3)]),
    ("reshape", lambda x: lax.reshape(x, (3, 2, 2)), [(3, 4)]),
    ("transpose", lambda x: lax.transpose(x, (2, 0, 1)), [(2, 3, 4)]),
    ("squeeze", lambda x: lax.squeeze(x, (1,)), [(3, 1, 2)]),
    ("rev", lambda x: lax.rev(x, (0,)), [(3, 2)]),
    ("slice", lambda x: lax.slice(x, (1, 0), (3, 4), (1, 2)), [(3, 4)]),
    ("pad", lambda x: lax.pad(x, lax.full((), -1.0, np.float32), [(1, 2, 1), (0, -1, 0)]),
     [(3, 4)]),
    ("pad_batched_value", lambda x, v: lax.pad(x, lax.reduce_sum(v, (0,)), [(1, 1, 0)]),
     [(3,), (2,)]),
    ("concatenate", lambda x, y: lax.concatenate([x, y], 1), [(2, 3), (2, 2)]),
    ("dot_general", lambda x, y: lax.dot_general(x, y, (((1,), (0,)), ((), ()))),
     [(2, 3), (3, 4)]),
    ("dot_general_batch", lambda x, y: lax.dot_general(x, y, (((2,), (1,)), ((0,), (0,)))),
     [(2, 3, 4), (2, 4, 5)]),
    ("dynamic_slice", lambda x: lax.dynamic_slice(x, (1, 0), (2, 2)), [(3, 4)]),
    ("dynamic_update_slice", lambda x, u: lax.dynamic_update_slice(x, u, (1, 1)),
     [(3, 4), (2, 2)]),
    ("iota_mix", lambda x: x + lax.broadcasted_iota(np.float32, (3,), 0), [(3,)]),
    ("matmul", jnp.matmul, [(2, 3), (3, 2)]), ("einsum", lambda a, b: jnp.einsum("ij,jk->ki", a, b),
                                                [(2, 3), (3, 4)]),
    ("softmax", jax.nn.softmax, [(2, 5)]), ("getitem", lambda x: x[1, ::-1], [(3, 4)]),
]


def _stack_reference(f, args, in_axes, size):
    outs = []
    for i in range(size):
        sliced = [np.take(a, i, axis=ax) if ax is not None else a for a, ax in zip(args, in_axes)]
        outs.append(np.asarray(f(*[jnp.asarray(s) for s in sliced])))
    return np.stack(outs)


@pytest.mark.parametrize("name,f,shapes", CASES, ids=[c[0] for c in CASES])
@settings(max_examples=6, deadline=None)
@given(data=st.data())
def test_vmap_matches_stacking(name, f, shapes, data):
    size = 3
    rng = np.random.default_rng(0)
    in_axes, args = [], []
    for k, shape in enumerate(shapes):
        ax = data.draw(st.sampled_from([None] + list(range(len(shape) + 1))), label=f"axis{k}")
        if k == 0 and all(a is None for a in in_axes) and ax is None:
            ax = 0
        in_axes.append(ax)
        full = list(shape)
        if ax is not None:
            full.insert(ax, size)
        args.append(rng.normal(size=full).astype(np.float32))
    if all(a is None for a in in_axes):
        in_axes[0] = 0
        args[0] = np.stack([args[0]] * size)
    out = jax.vmap(f, in_axes=tuple(in_axes))(*[jnp.asarray(a) for a in args])
    np.testing.assert_allclose(np.asarray(out), _stack_reference(f, args, in_axes, size),
                               rtol=1e-5, atol=1e-5)


def test_seed_examples():
    def single_linear(x, w, b):
        return jnp.dot(x, w) + b

    out = jax.vmap(single_linear, in_axes=(0, None, None))(jnp.ones((5, 4)), jnp.ones((4, 3)),
                                                           jnp.ones((3,)))
    assert out.shape == (5, 3)
    np.testing.assert_array_equal(np.asarray(out), 5.0)

    def swish(x):
        return x * jax.nn.sigmoid(x)

    xs = jnp.linspace(-5.0, 5.0, 1200)
    d3 = jax.vmap(jax.grad(jax.grad(jax.grad(swish))))(xs)
    ref = np.array([float(jax.grad(jax.grad(jax.grad(swish)))(float(x)))
                    for x in np.asarray(xs)[::97]])
    np.testing.assert_allclose(np.asarray(d3)[::97], ref, rtol=2e-4, atol=1e-5)


def test_per_example_mlp_and_gradients():
    rng = np.random.default_rng(1)
    params = [(jnp.asarray(rng.normal(size=(784, 32)).astype(np.float32) * 0.05),
               jnp.zeros(32)),
              (jnp.asarray(rng.normal(size=(32, 10)).astype(np.float32) * 0.05), jnp.zeros(10))]

    def predict(params, image):
        h = image
        for w, b in params[:-1]:
            h = jax.nn.relu(jnp.dot(h, w) + b)
        w, b = params[-1]
        logits = jnp.dot(h, w) + b
        return logits - jax.scipy.special.logsumexp(logits)

    images = jnp.asarray(rng.normal(size=(8, 784)).astype(np.float32))
    batched = jax.vmap(predict, in_axes=(None, 0))(params, images)
    assert batched.shape == (8, 10)
    np.testing.assert_allclose(np.asarray(batched[3]), np.asarray(predict(params, images[3])),
                               rtol=1e-5, atol=1e-6)
    labels = jax.nn.one_hot(jnp.arange(8) % 10, 10)

    def loss(params, x, y):
        return -jnp.sum(predict(params, x) * y)

    per_ex = jax.vmap(jax.grad(loss), in_axes=(None, 0, 0))(params, images, labels)
    single = jax.grad(loss)(params, images[2], labels[2])
    np.testing.assert_allclose(np.asarray(per_ex[0][0][2]), np.asarray(single[0][0]),
                               rtol=1e-5, atol=1e-6)
    # The per-example forward pass is one batched matmul per layer.
    jaxpr = jax.make_jaxpr(jax.vmap(predict, in_axes=(None, 0)))(params, images)
    dots = [e for e in jaxpr.eqns if e.primitive.name == "dot_general"]
    assert len(dots) == 2 and dots[0].outvars[0].aval.shape == (8, 32)


def test_nested_vmap_out_axes_and_pytrees():
    f = lambda x, y: {"s": x * y, "d": x - y}
    xs, ys = jnp.ones((2, 3)), jnp.arange(3.0)
    out = jax.vmap(jax.vmap(f, in_axes=(0, 0)), in_axes=(0, None), out_axes={"s": 1, "d": 0})(
        xs, ys)
    assert out["s"].shape == (3, 2) and out["d"].shape == (2, 3)
    np.testing.assert_allclose(np.asarray(out["s"]), np.asarray(ys)[:, None] * np.ones((3, 2)))


def test_vmap_errors():
    with pytest.raises(ValueError, match="inconsistent sizes"):
        jax.vmap(lambda x, y: x + y)(jnp.ones(3), jnp.ones(4))
    with pytest.raises(ValueError, match="axis 2"):
        jax.vmap(lambda x: x, in_axes=2)(jnp.ones((3, 4)))
    with pytest.raises(ValueError, match="len\\(in_axes\\)=1"):
        jax.vmap(lambda x, y: x, in_axes=(0,))(jnp.ones(3), jnp.ones(3))


def test_vmap_composes_with_jit_and_grad():
    f = lambda x: jnp.sum(jnp.sin(x) ** 2)
    xs = jnp.asarray(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3))
    a = jax.vmap(jax.grad(f))(xs)
    b = jax.jit(jax.vmap(jax.grad(f)))(xs)
    c = jax.vmap(jax.jit(jax.grad(f)))(xs)
    g = jax.grad(lambda xs: jnp.sum(jax.vmap(f)(xs)))(xs)
    for other in (b, c, g):
        np.testing.assert_allclose(np.asarray(a), np.asarray(other), rtol=1e-6)
    jac = jax.vmap(jax.jacrev(lambda v: jnp.sin(v) * v))(xs)
    assert jac.shape == (4, 3, 3)


def test_vmap_never_rebuilds_a_user_pytree_with_stand_in_leaves():
    """JAX only flattens the arguments against in_axes: a registered node's constructor sees
    real leaves (arrays, tracers), never placeholder objects."""
    seen = []

    class Point:
        def __init__(self, x, y):
            seen.append((type(x), type(y)))
            self.x, self.y = x, y

    jax.tree_util.register_pytree_node(Point, lambda p: ((p.x, p.y), None),
                                       lambda _, c: Point(*c))
    p = Point(jnp.ones(3), jnp.zeros(3))
    seen.clear()
    np.testing.assert_array_equal(np.asarray(jax.vmap(lambda q: q.x + q.y)(p)), np.ones(3))
    out = jax.vmap(lambda q, s: q.x * s, in_axes=(Point(0, None), None))(p, 2.0)
    np.testing.assert_array_equal(np.asarray(out), 2 * np.ones(3))
    assert all(t is not object for pair in seen for t in pair)
