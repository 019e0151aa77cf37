"""Focused tests for jnp / nn behaviours fixed against JAX 0.10.2 (issue #24) and for the jnp
functions added for issue #26: errors, edge cases and compositions with jit / vmap / grad.
Values against JAX live in tests/conformance (cases_numpy_extra.py); expected values here are
facts observed from JAX or plain NumPy arithmetic."""
import numpy as np
import pytest

import corejax
import corejax.numpy as jnp
from corejax import grad, jit, lax, vmap
import corejax.nn as nn
from corejax.scipy.special import logsumexp


def _weak(x):
    return bool(getattr(x, "weak_type", False))


# ---------------------------------------------------------------- issue #24: weak types

def test_comparisons_and_is_finite_keep_weak_types():
    assert _weak(jnp.arange(3) == 1.0) and not _weak(jnp.arange(3) == 1)
    assert _weak(jnp.isfinite(1.5)) and not _weak(jnp.isfinite(jnp.ones(2)))
    assert _weak(lax.lt(jnp.asarray(1.5), 2.0))
    assert _weak(jit(lambda x: x == 1.0)(jnp.arange(3)))


def test_python_scalar_results_stay_weak():
    for f in (jnp.deg2rad, jnp.rad2deg, jnp.sinc, jnp.logical_not):
        assert _weak(f(1.5)), f.__name__
    assert _weak(jnp.unravel_index(4, (2, 3))[0])
    assert not _weak(jnp.cumsum(1.5)) and jnp.cumsum(1.5).shape == (1,)


def test_rint_of_integers_is_a_strong_float():
    out = jnp.rint(jnp.arange(3))
    assert out.dtype == np.float32 and not _weak(out)
    assert jnp.rint(3).dtype == np.float32 and not _weak(jnp.rint(3))


def test_full_like_weak_type_follows_the_array_not_the_fill():
    x = jnp.ones((2, 3))
    assert not _weak(jit(jnp.full_like)(x, 2.0))
    assert _weak(jnp.full_like(1.5, 2.0)) and _weak(jit(jnp.full_like)(1.5, 2.0))
    assert not _weak(jit(lambda f: jnp.full((2,), f, dtype=jnp.float32))(2.0))


def test_relu_derivative_keeps_the_weak_type():
    assert _weak(grad(nn.relu)(1.5))
    assert _weak(corejax.jacfwd(nn.relu)(1.5))
    _, t = corejax.jvp(nn.relu, (-1.5,), (1.0,))
    assert _weak(t) and float(t) == 0.0


def test_nn_integer_inputs_follow_jax():
    xi = jnp.array([-3, -1, 0, 2])
    out = nn.hard_tanh(xi)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(out), [-1, -1, 0, 1])
    for f in (nn.celu, nn.elu, nn.leaky_relu, nn.selu, nn.sparse_plus):
        out = f(xi)
        assert out.dtype == np.float32 and _weak(out), f.__name__
    for f in (nn.swish, nn.silu, nn.sigmoid, nn.glu):
        with pytest.raises(TypeError, match="logistic does not accept dtype int32"):
            f(xi)


def test_one_hot_compares_float_labels_exactly():
    out = nn.one_hot(jnp.array([0.7, 1.0, 2.5, -0.0]), 3)
    np.testing.assert_array_equal(np.asarray(out), [[0, 0, 0], [0, 1, 0], [0, 0, 0], [1, 0, 0]])
    with pytest.raises(TypeError, match="iota does not accept dtype bool"):
        nn.one_hot(jnp.array([True, False]), 3)


# ---------------------------------------------------------------- issue #24: errors


def test_error_types_match_jax():
    with pytest.raises(NotImplementedError, match="decimals < 0"):
        jnp.round(jnp.arange(4), decimals=-1)
    with pytest.raises(TypeError, match="position 2"):
        jnp.where(jnp.ones(3) > 0, jnp.ones(3))
    with pytest.raises(TypeError, match=r"different numbers of dimensions: got \(2, 3\), \(3,\)"):
        jnp.concatenate([jnp.ones((2, 3)), jnp.ones(3)])
    with pytest.raises(TypeError, match="nonnegative"):
        jnp.zeros((2, -1))
    with pytest.raises(TypeError, match="nonnegative"):
        lax.full((2, -1), 1.0)
    with pytest.raises(TypeError, match="negative powers"):
        jnp.arange(3) ** -1
    with pytest.raises(TypeError, match="negative powers"):
        jit(lambda x: x ** -2)(jnp.arange(3))
    with pytest.raises(TypeError, match="broadcast_in_dim operand dimension sizes"):
        lax.broadcast_in_dim(jnp.ones(3), (2, 4), (1,))
    with pytest.raises(ValueError, match="feature dimension size"):
        lax.conv_general_dilated(jnp.ones((1, 2, 5, 5)), jnp.ones((3, 3, 3, 3)), (1, 1), "VALID")


def test_eager_lax_ops_check_dtypes_as_under_jit():
    for f in (lax.exp, lax.logistic, lax.sin):
        with pytest.raises(TypeError, match="does not accept dtype int32"):
            f(jnp.arange(3))
    with pytest.raises(TypeError, match="does not accept dtype int32"):
        lax.pow(jnp.arange(3), jnp.arange(3))


def test_list_index_is_a_type_error_but_a_tuple_of_lists_is_not():
    x = jnp.arange(8.0).reshape(4, 2)
    with pytest.raises(TypeError, match=r"arr\[array\(seq\)\]"):
        x[[0, 2]]
    with pytest.raises(TypeError, match=r"arr\[tuple\(seq\)\]"):
        x[[slice(0, 2)]]
    with pytest.raises(TypeError, match="non-tuple sequence"):
        x.at[[0, 2]].set(1.0)
    np.testing.assert_array_equal(np.asarray(x[[0, 2], 1]), [1.0, 5.0])
    np.testing.assert_array_equal(np.asarray(x[jnp.array([0, 2])]), [[0, 1], [4, 5]])


# ---------------------------------------------------------------- lax.pow with an int exponent


def test_lax_pow_accepts_an_integer_exponent():
    x, y = jnp.array([2.0, 0.0, 0.0]), jnp.array([-1, 0, 3])
    np.testing.assert_array_equal(np.asarray(lax.pow(x, y)), [0.5, 1.0, 0.0])
    np.testing.assert_array_equal(np.asarray(jit(lax.pow)(x, y)), [0.5, 1.0, 0.0])
    g = grad(lambda x: lax.pow(x, y).sum())(jnp.array([2.0, 2.0, 2.0]))
    np.testing.assert_allclose(np.asarray(g), [-0.25, 0.0, 12.0])
    out = vmap(lax.pow, (0, None))(jnp.ones((2, 3)) * 2, y)
    np.testing.assert_allclose(np.asarray(out), [[0.5, 1, 8]] * 2)
    with pytest.raises(TypeError, match="same dtypes"):
        lax.pow(jnp.ones(3, jnp.float16), jnp.ones(3))


# ---------------------------------------------------------------- jnp.repeat


def test_repeat_with_array_repeats_under_jit():
    a = jnp.arange(3.0)
    with pytest.raises(TypeError, match="position 1"):
        jnp.repeat(a, [1, 0, 2])
    np.testing.assert_array_equal(np.asarray(jnp.repeat(a, jnp.array([1, 0, 2]))), [0, 2, 2])
    f = jit(lambda a, r: jnp.repeat(a, r, total_repeat_length=4))
    np.testing.assert_array_equal(np.asarray(f(a, jnp.array([1, 0, 2]))), [0, 2, 2, 2])
    # a total beyond the sum repeats the last element; a shorter one drops the tail
    np.testing.assert_array_equal(
        np.asarray(jnp.repeat(a, jnp.array([1, 2, 0]), total_repeat_length=5)), [0, 1, 1, 2, 2])
    np.testing.assert_array_equal(np.asarray(jnp.repeat(a, 2, total_repeat_length=7)),
                                  [0, 0, 1, 1, 2, 2, 2])
    with pytest.raises(corejax.errors.ConcretizationTypeError, match="total_repeat_length"):
        jit(lambda a, r: jnp.repeat(a, r))(a, jnp.array([1, 0, 2]))
    g = grad(lambda a: jnp.sum(f(a, jnp.array([1, 0, 3])) * jnp.arange(4.0)))(a)
    np.testing.assert_array_equal(np.asarray(g), [0.0, 0.0, 6.0])
    x2 = jnp.arange(6.0).reshape(2, 3)
    out = vmap(lambda r: jnp.repeat(x2, r, axis=1, total_repeat_length=4))(
        jnp.array([[1, 1, 2], [0, 4, 0]]))
    np.testing.assert_array_equal(np.asarray(out[1]), [[1, 1, 1, 1], [4, 4, 4, 4]])


# ---------------------------------------------------------------- logsumexp


def test_logsumexp_empty_and_masked():
    assert float(logsumexp(jnp.zeros(0))) == -np.inf
    x = jnp.array([[1.0, 2, 3, 4], [5, 6, 7, 8]])
    m = jnp.array([[True, False, True, False], [False] * 4])
    out = logsumexp(x, axis=1, where=m)
    np.testing.assert_allclose(np.asarray(out)[0], np.log(np.exp(1) + np.exp(3)), rtol=1e-6)
    assert np.asarray(out)[1] == -np.inf
    g = grad(lambda x: logsumexp(x, axis=1, where=m).sum())(x)
    np.testing.assert_allclose(np.asarray(g)[0], [0.11920291, 0, 0.880797, 0], rtol=1e-5)
    np.testing.assert_array_equal(np.asarray(g)[1], 0)
    assert not _weak(grad(logsumexp)(1.5))
