"""What the conformance cases of cases_lax_more.py cannot compare with JAX, because JAX 0.10.2
raises where corejax computes: ragged_dot under vmap with any in_axes (JAX: only all 0),
derivatives of the contracting and batch ragged modes (JAX: NotImplementedError), derivatives
and vmap of a composite (JAX: "JVP rule for composite not implemented"). Each is checked by a
law: vmap against the stacked per-example results, derivatives against finite differences
(corejax.test_util.check_grads, JAX's tolerances) and against the decomposition's derivatives,
which the conformance cases compare with JAX. Also the printed programs (jaxprs) of the new
primitives, as JAX prints them."""
import itertools

import numpy as np
import pytest

import corejax
import corejax.numpy as jnp
from corejax import lax
from corejax.test_util import check_grads

RNG = np.random.default_rng(0)


def _normal(*shape):
    return jnp.asarray(RNG.standard_normal(shape).astype(np.float32))


# --- ragged_dot under vmap ---------------------------------------------------------------------

_LHS, _RHS = _normal(3, 6, 4), _normal(3, 2, 4, 5)
_SIZES = jnp.array([[2, 3], [1, 5], [6, 0]], jnp.int32)


@pytest.mark.parametrize("in_axes", list(itertools.product((None, 0, 1), repeat=3))[1:])
def test_ragged_dot_vmap_matches_stacked_results(in_axes):
    args = []
    for a, batch in zip(in_axes, (_LHS, _RHS, _SIZES)):
        args.append(batch[0] if a is None else jnp.moveaxis(batch, 0, a))
    got = corejax.vmap(lax.ragged_dot, in_axes=in_axes)(*args)
    expected = np.stack([np.asarray(lax.ragged_dot(
        *[batch[0] if a is None else batch[i] for a, batch in zip(in_axes, (_LHS, _RHS, _SIZES))]
    )) for i in range(3)])
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)


def test_ragged_dot_vmap_of_grad_and_jit():
    def loss(lhs, rhs, sizes):
        return jnp.sum(jnp.tanh(lax.ragged_dot(lhs, rhs, sizes)))

    got = corejax.jit(corejax.vmap(corejax.grad(loss, argnums=(0, 1))))(_LHS, _RHS, _SIZES)
    for i in range(3):
        expected = corejax.grad(loss, argnums=(0, 1))(_LHS[i], _RHS[i], _SIZES[i])
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g[i], e, rtol=1e-5, atol=1e-6)


_MODE2 = lax.RaggedDotDimensionNumbers((([1], [0]), ([], [])), [1], [])


@pytest.mark.parametrize("in_axes", [(0, None, None), (None, 1, 0), (0, 0, 0)])
def test_ragged_contracting_vmap_matches_stacked_results(in_axes):
    lhs, rhs = _normal(3, 2, 6), _normal(3, 6, 4)
    sizes = jnp.array([[2, 3, 1], [0, 6, 0], [4, -1, 3]], jnp.int32)
    batches = (lhs, rhs, sizes)
    args = [b[0] if a is None else jnp.moveaxis(b, 0, a) for a, b in zip(in_axes, batches)]
    f = lambda x, y, s: lax.ragged_dot_general(x, y, s, _MODE2)
    got = corejax.vmap(f, in_axes=in_axes, out_axes=1)(*args)
    expected = np.stack([np.asarray(f(*[b[0] if a is None else b[i]
                                       for a, b in zip(in_axes, batches)])) for i in range(3)],
                        axis=1)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)


# --- derivatives JAX does not define -----------------------------------------------------------

@pytest.mark.parametrize("dims,shapes,sizes", [
    (_MODE2, ((2, 6), (6, 4)), np.array([2, 3, 1], np.int32)),
    (_MODE2, ((2, 6), (6, 4)), np.array([4, -2, 5], np.int32)),
    (lax.RaggedDotDimensionNumbers((([2], [1]), ([0], [0])), [2], []), ((3, 2, 5), (3, 5, 4)),
     np.array([[1, 2, 2], [0, 5, 0], [3, 1, 1]], np.int32)),
    (lax.RaggedDotDimensionNumbers((([0, 2], [1, 0]), ([], [])), [2], []), ((4, 2, 3), (3, 4, 5)),
     np.array([1, 2], np.int32)),
    (lax.RaggedDotDimensionNumbers((([2], [1]), ([0], [0])), [0], []), ((5, 2, 3), (5, 3, 4)),
     np.array([2, 1], np.int32)),
], ids=["contracting", "contracting_negative", "contracting_batched", "contracting_two_dims",
        "batch"])
def test_ragged_modes_without_jax_derivatives_against_finite_differences(dims, shapes, sizes):
    lhs, rhs = (np.asarray(_normal(*s), np.float64) for s in shapes)
    with corejax.enable_x64(True):
        f = lambda x, y: lax.ragged_dot_general(x, y, jnp.asarray(sizes), dims)
        check_grads(f, (lhs, rhs), order=2, modes=("fwd", "rev"))


def test_ragged_contracting_derivative_with_permuted_outer_sizes_is_refused():
    dims = lax.RaggedDotDimensionNumbers((([0, 2], [1, 0]), ([], [])), [2], [])
    sizes = jnp.ones((4, 2), jnp.int32)     # per position of lhs dimension 0, paired differently
    lhs, rhs = _normal(4, 2, 3), _normal(3, 4, 5)
    out = lax.ragged_dot_general(lhs, rhs, sizes, dims)
    assert out.shape == (2, 2, 5)
    with pytest.raises(NotImplementedError, match="group_sizes"):
        corejax.grad(lambda x: lax.ragged_dot_general(x, rhs, sizes, dims).sum())(lhs)


def test_ragged_dot_jaxprs_as_jax_prints_them():
    lhs, rhs, sizes = _normal(6, 3), _normal(2, 3, 4), jnp.array([2, 3], jnp.int32)
    text = str(corejax.make_jaxpr(corejax.grad(
        lambda a, b: lax.ragged_dot(a, b, sizes).sum(), argnums=(0, 1)))(lhs, rhs))
    # JAX's transposes: the lhs cotangent is a ragged dot of the same kind, the rhs cotangent
    # a contracting-mode one
    assert text.count("ragged_dot_general[") == 3
    assert "lhs_ragged_dimensions=(0,), rhs_group_dimensions=(0,))" in text
    assert ("RaggedDotDimensionNumbers(dot_dimension_numbers=(((0,), (0,)), ((), ())), "
            "lhs_ragged_dimensions=(0,), rhs_group_dimensions=())") in text
    assert ("RaggedDotDimensionNumbers(dot_dimension_numbers=(((1,), (2,)), ((), ())), "
            "lhs_ragged_dimensions=(0,), rhs_group_dimensions=(0,))") in text


def test_ragged_dot_group_offset_is_refused():
    with pytest.raises(TypeError, match="group_offset"):
        lax.ragged_dot(_normal(6, 3), _normal(2, 3, 4), jnp.array([3, 3]),
                       group_offset=jnp.array([1]))


# --- composite ----------------------------------------------------------------------------------

def _decomposition(x, y):
    return jnp.sin(x) * y + jnp.exp(-x * x)


_composite = lax.composite(_decomposition, name="my.op", version=3)


def test_composite_is_one_equation():
    text = str(corejax.make_jaxpr(_composite)(1.0, 2.0))
    assert text.count("composite[") == 1 and "name=my.op" in text and "version=3" in text
    assert "sin" in text      # the decomposition is its body


def test_composite_derivatives_and_vmap_are_the_decompositions():
    x, y = _normal(4), _normal(4)
    g = lambda f: corejax.grad(lambda a, b: jnp.sum(f(a, b)), argnums=(0, 1))
    for got, expected in zip(g(_composite)(x, y), g(_decomposition)(x, y)):
        np.testing.assert_allclose(got, expected, rtol=1e-6)
    np.testing.assert_allclose(corejax.jit(corejax.grad(lambda a: _composite(a, 2.0)))(0.3),
                               corejax.grad(lambda a: _decomposition(a, 2.0))(0.3), rtol=1e-6)
    hess = corejax.hessian(lambda a: _composite(a, 1.5))(0.7)
    np.testing.assert_allclose(hess, corejax.hessian(lambda a: _decomposition(a, 1.5))(0.7),
                               rtol=1e-5)
    xs = _normal(3, 4)
    np.testing.assert_allclose(corejax.vmap(_composite, in_axes=(0, None))(xs, y),
                               _decomposition(xs, y), rtol=1e-6)
    text = str(corejax.make_jaxpr(corejax.grad(lambda a: _composite(a, 2.0)))(0.3))
    assert "composite[" not in text   # the derivative is not the named operation


def test_composite_refuses_traced_attributes_and_closures():
    with pytest.raises(corejax.errors.UnexpectedTracerError, match="attribute"):
        corejax.jit(lambda s: lax.composite(lambda x, *, scale: x * scale, "f")(
            1.0, scale=s))(2.0)
    with pytest.raises(corejax.errors.UnexpectedTracerError, match="constant"):
        corejax.grad(lambda s: lax.composite(lambda x: x * s, "f")(1.0))(2.0)


# --- tokens -------------------------------------------------------------------------------------

def test_tokens_in_programs():
    token = lax.create_token()
    assert isinstance(token, corejax.core.Token)
    assert str(corejax.typeof(token)) == "AbstractToken()"
    text = str(corejax.make_jaxpr(lambda t: lax.after_all(t, lax.create_token()))(token))
    assert "a:Tok. let" in text and "b:Tok = create_token" in text
    assert "c:Tok = after_all a b" in text
    out, y = corejax.jit(lambda t, x: (lax.after_all(t), x * 2))(token, 3.0)
    assert isinstance(out, corejax.core.Token) and float(y) == 6.0
    assert isinstance(corejax.jit(lax.create_token)(), corejax.core.Token)
    assert float(corejax.grad(lambda x: (lax.create_token(), x * x)[1])(3.0)) == 6.0
    with pytest.raises(TypeError, match="tokens"):
        corejax.jit(lambda x: lax.after_all(x))(1.0)


# --- rng_bit_generator: the printed program ----------------------------------------------------

def test_rng_bit_generator_jaxpr():
    key = jnp.array([1, 2, 3, 4], jnp.uint32)
    text = str(corejax.make_jaxpr(lambda k: lax.rng_bit_generator(k, (2, 3)))(key))
    assert "b:u32[4] c:u32[2,3] = rng_bit_generator[" in text
    assert "algorithm=RNG_DEFAULT" in text and "shape=(2, 3)" in text
    with pytest.raises(TypeError, match=r"uint32\[4\]"):
        lax.rng_bit_generator(jnp.array([1, 2], jnp.uint32), (3,))
