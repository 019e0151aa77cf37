"""Unit tests of the lax / nn names added for issue #26: errors, edge cases, compositions with
jit / vmap / grad, and values recorded from JAX 0.10.2 where the conformance cases cannot reach
(large integers for mulhi/clz, shape arithmetic that JAX returns as NumPy integers)."""
import numpy as np
import pytest

import corejax
import corejax.numpy as jnp
from corejax import grad, jit, lax, nn, vmap


def _fd_grad(f, x, eps=1e-3):
    x = np.asarray(x, np.float64)
    out = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        out[i] = (float(f(x + d)) - float(f(x - d))) / (2 * eps)
    return out


# --- cumulative reductions -------------------------------------------------------------------

@pytest.mark.parametrize("fn", [lax.cumprod, lax.cumlogsumexp])
def test_cumulative_grad_matches_finite_differences(fn, x64):
    x = np.array([[0.3, -1.2, 0.7], [1.1, 0.4, -0.5]])
    w = np.arange(1.0, 7.0).reshape(2, 3)
    f = lambda v: jnp.sum(fn(jnp.asarray(v), axis=1, reverse=True) * w)
    np.testing.assert_allclose(grad(f)(x), _fd_grad(f, x), rtol=1e-6)
    # second order through the associative scan of the jvp rule
    g2 = grad(lambda v: jnp.sum(grad(f)(v) * w))(x)
    fd2 = _fd_grad(lambda v: np.sum(np.asarray(grad(f)(v)) * w), x)
    np.testing.assert_allclose(g2, fd2, rtol=1e-5, atol=1e-8)


def test_cummax_ties_split_the_gradient_as_jax():
    x = jnp.array([[1., 3., 2.], [2., 2., 5.]])
    g = grad(lambda v: jnp.sum(lax.cummax(v, axis=1) * jnp.arange(3.)))(x)
    np.testing.assert_array_equal(g, [[0., 3., 0.], [0.5, 0.5, 2.]])  # JAX 0.10.2
    g = grad(lambda v: jnp.sum(lax.cummin(v, axis=1) * jnp.arange(3.)))(x)
    np.testing.assert_array_equal(g, [[3., 0., 0.], [1.5, 1.5, 0.]])


def test_cumulative_vmap_and_jit_agree_with_eager():
    x = jnp.asarray(np.random.default_rng(0).standard_normal((3, 4, 5)), jnp.float32)
    for fn in (lax.cumprod, lax.cummax, lax.cummin, lax.cumlogsumexp):
        eager = fn(x, axis=2, reverse=True)
        np.testing.assert_allclose(vmap(lambda v: fn(v, 1, True), in_axes=1, out_axes=1)(x),
                                   eager, rtol=1e-6)
        np.testing.assert_allclose(jit(lambda v: fn(v, 2, True))(x), eager, rtol=1e-6)


def test_cumulative_errors():
    with pytest.raises(TypeError, match="cummax does not accept dtype bool"):
        lax.cummax(jnp.ones(3, bool))
    with pytest.raises(ValueError, match="axis 2 is out of bounds"):
        lax.cumprod(jnp.ones((2, 3)), axis=2)
    with pytest.raises(OverflowError, match="floating dtype"):
        lax.cumlogsumexp(jnp.ones(3, jnp.int32))


def test_cumlogsumexp_infinities():
    x = jnp.array([-np.inf, -np.inf, 0., np.inf, 1.])
    np.testing.assert_array_equal(lax.cumlogsumexp(x), [-np.inf, -np.inf, 0., np.inf, np.inf])
    g = grad(lambda v: jnp.sum(lax.cumlogsumexp(v)))(x)
    # JAX 0.10.2 gives these too (nan where -inf meets -inf)
    np.testing.assert_allclose(g, [np.nan, np.nan, 3., 2., np.e], rtol=1e-6)


# --- reduce ----------------------------------------------------------------------------------

def test_reduce_uses_the_monoid_primitive_for_its_identity():
    x = jnp.ones((3, 4))
    assert "reduce_sum" in str(corejax.make_jaxpr(lambda v: lax.reduce(v, 0., lax.add, (0,)))(x))
    assert "reduce_max" in str(corejax.make_jaxpr(
        lambda v: lax.reduce(v, -np.inf, lax.max, (0,)))(x))


def test_reduce_pytree_operands_and_errors():
    x = jnp.arange(12.).reshape(3, 4)
    s, p = lax.reduce((x, x + 1), (0., 1.), lambda a, b: (a[0] + b[0], a[1] * b[1]), (1,))
    np.testing.assert_allclose(s, [6., 22., 38.])
    np.testing.assert_allclose(p, [24., 1680., 11880.])
    with pytest.raises(ValueError, match="same tree structure"):
        lax.reduce((x, x), 0., lax.add, (0,))
    with pytest.raises(ValueError, match="same shape"):
        lax.reduce((x, x[0]), (0., 0.), lambda a, b: a, (0,))


def test_reduce_xor_values():
    np.testing.assert_array_equal(lax.reduce_xor(jnp.array([[1, 2, 3], [4, 5, 6]]), (1,)),
                                  [0, 7])
    assert not bool(lax.reduce_xor(jnp.array([True, True, False]), (0,)))
    with pytest.raises(TypeError, match="bool or int"):
        lax.reduce_xor(jnp.ones(2), (0,))


# --- bits ------------------------------------------------------------------------------------

def test_clz_and_mulhi_match_jax_on_wide_values():
    # values recorded from JAX 0.10.2
    np.testing.assert_array_equal(
        lax.clz(jnp.array([0, 1, 2, 255, -1, 2**30], jnp.int32)), [32, 31, 30, 24, 0, 1])
    np.testing.assert_array_equal(lax.clz(jnp.array([0, 1, 2, 255], jnp.uint8)), [8, 7, 6, 0])
    a = jnp.array([2**31 - 1, -5, 123456789], jnp.int32)
    b = jnp.array([2**31 - 1, 7, -987654321], jnp.int32)
    expected = [1073741823, -1, -28389653]
    np.testing.assert_array_equal(lax.mulhi(a, b), expected)
    np.testing.assert_array_equal(jit(lax.mulhi)(a, b), expected)
    np.testing.assert_array_equal(
        lax.mulhi(jnp.array([2**32 - 1, 5], jnp.uint32), jnp.array([2**32 - 1, 7], jnp.uint32)),
        [4294967294, 0])
    np.testing.assert_array_equal(
        lax.mulhi(jnp.array([200, 5], jnp.uint8), jnp.array([200, 7], jnp.uint8)), [156, 0])


def test_mulhi_against_numpy_int64_products():
    rng = np.random.default_rng(1)
    a = rng.integers(-2**31, 2**31, 200, dtype=np.int64)
    b = rng.integers(-2**31, 2**31, 200, dtype=np.int64)
    got = lax.mulhi(jnp.asarray(a.astype(np.int32)), jnp.asarray(b.astype(np.int32)))
    np.testing.assert_array_equal(np.asarray(got), (a * b) >> 32)


def test_reduce_precision_values_and_derivative():
    x = jnp.array([1.1, 3.14159265, 1e10, 1e-10, 65520., 1e-45], jnp.float32)
    np.testing.assert_array_equal(lax.reduce_precision(x, 5, 10),
                                  np.array([1.0996094, 3.140625, np.inf, 0., np.inf, 0.],
                                           np.float32))
    y = jnp.array([1.1, 3.14159265, 1e10, 1e-10, 1.00390625, 1.01171875], jnp.float32)
    np.testing.assert_array_equal(
        lax.reduce_precision(y, 8, 7),
        np.array([1.1015625, 3.140625, 9.9992207e+09, 1.0004442e-10, 1., 1.015625], np.float32))
    # the bfloat16 format of reduce_precision is the bfloat16 rounding of the value
    np.testing.assert_array_equal(
        lax.reduce_precision(jnp.array([1.1, 2.3]), 8, 7),
        np.array([1.1, 2.3], np.float32).astype(jnp.bfloat16).astype(np.float32)
        if hasattr(jnp, "bfloat16") else lax.reduce_precision(jnp.array([1.1, 2.3]), 8, 7))
    # the tangent is rounded too (linear, as in JAX), so grad of a sum is all ones
    np.testing.assert_array_equal(grad(lambda v: jnp.sum(lax.reduce_precision(v, 5, 3)))(
        jnp.array([1.1, 2.3])), [1., 1.])
    _, t = corejax.jvp(lambda v: lax.reduce_precision(v, 5, 2), (jnp.array([1.0]),),
                       (jnp.array([1.3]),))
    np.testing.assert_array_equal(t, [1.25])
    with pytest.raises(TypeError, match="reduce_precision does not accept dtype int32"):
        lax.reduce_precision(jnp.array([1]), 5, 3)


# --- shapes ----------------------------------------------------------------------------------

def test_shape_tuples_match_jax():
    # values recorded from JAX 0.10.2
    assert lax.conv_general_permutations(("NHWC", "HWIO", "NHWC")) == (
        (0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))
    with pytest.raises(TypeError, match="must contain the characters 'N' and 'C'"):
        lax.conv_general_permutations(("NHWC", "HWIO", "NHW"))
    assert lax.conv_shape_tuple((2, 3, 9, 9), (4, 3, 3, 3), (2, 1), ((1, 1), (0, 0))) == \
        (2, 4, 5, 7)
    assert lax.conv_shape_tuple((2, 3, 9, 9), (4, 3, 3, 3), (2, 1), "SAME") == (2, 4, 5, 9)
    assert lax.conv_shape_tuple((4, 3, 9, 9), (4, 3, 3, 3), (1, 1), ((0, 0), (0, 0)), 2) == \
        (2, 4, 7, 7)
    dn = ("NHWC", "HWIO", "NHWC")
    assert lax.conv_general_shape_tuple((2, 9, 9, 3), (3, 3, 3, 4), (2, 1), ((1, 1), (0, 0)),
                                        dn) == (2, 5, 7, 4)
    assert lax.conv_general_shape_tuple((2, 9, 9, 3), (3, 3, 3, 4), (2, 1), "SAME", dn) == \
        (2, 5, 9, 4)
    assert lax.conv_transpose_shape_tuple((2, 9, 9, 3), (3, 3, 3, 4), (2, 1),
                                          ((1, 1), (0, 0)), dn) == (2, 17, 7, 4)
    assert lax.conv_transpose_shape_tuple((2, 9, 9, 3), (3, 3, 3, 4), (2, 1), "SAME", dn) == \
        (2, 18, 9, 4)
    assert lax.reduce_window_shape_tuple((2, 9, 9), (1, 3, 3), (1, 2, 2),
                                         ((0, 0), (1, 1), (0, 0))) == (2, 5, 4)
    assert lax.reduce_window_shape_tuple((2, 9, 9), (1, 3, 3), (1, 2, 2),
                                         ((0, 0), (1, 1), (0, 0)), (1, 2, 1), (1, 1, 2)) == \
        (2, 9, 3)


def test_shape_utilities_errors():
    with pytest.raises(ValueError, match="Incompatible shapes for broadcasting"):
        lax.broadcast_shapes((2, 1), (3, 2))
    with pytest.raises(ValueError, match="Invalid dimension range passed to collapse"):
        lax.collapse(jnp.ones((2, 3, 4)), 2, 1)
    with pytest.raises(ValueError, match="Sum of sizes 3 must be equal to dimension 1"):
        lax.split(jnp.ones((3, 4)), (1, 2), axis=1)
    with pytest.raises(TypeError, match="reps length must be equal to the ndim"):
        lax.tile(jnp.ones((1, 2)), (2,))
    with pytest.raises(ValueError, match="must have same ndim"):
        lax.batch_matmul(jnp.ones((2, 3, 4)), jnp.ones((4, 5)))
    with pytest.raises(ValueError, match="at least 2D"):
        lax.batch_matmul(jnp.ones(4), jnp.ones(4))
    with pytest.raises(TypeError, match="same dtypes"):
        lax.stack([jnp.ones(2), jnp.ones(2, jnp.int32)])


def test_dynamic_update_index_in_dim_traced_negative_index():
    f = jit(lambda x, i: lax.dynamic_update_index_in_dim(x, 9., i, 0))
    np.testing.assert_array_equal(f(jnp.arange(4.), -1), [0., 1., 2., 9.])
    np.testing.assert_array_equal(f(jnp.arange(4.), 1), [0., 9., 2., 3.])
    np.testing.assert_array_equal(
        vmap(lambda i: lax.dynamic_update_index_in_dim(jnp.zeros(3), 1., i, 0))(
            jnp.array([0, -1])), [[1., 0., 0.], [0., 0., 1.]])


def test_scatter_apply_applies_once_per_occurrence():
    dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                     scatter_dims_to_operand_dims=(0,))
    idx = jnp.array([[0], [0], [2]])
    out = lax.scatter_apply(jnp.arange(5.), idx, lambda v: v * 2 + 1, dn, update_shape=(3,))
    np.testing.assert_array_equal(out, [3., 1., 5., 3., 4.])  # JAX 0.10.2
    np.testing.assert_array_equal(
        jit(lambda x: lax.scatter_apply(x, idx, lambda v: v * 2 + 1, dn, update_shape=(3,)))(
            jnp.arange(5.)), out)


# --- identities on one device ----------------------------------------------------------------

def test_optimization_barrier_is_an_identity_under_transformations():
    x = jnp.arange(3.)
    np.testing.assert_array_equal(grad(lambda v: jnp.sum(lax.optimization_barrier(v * v)))(x),
                                  2 * x)
    a, b = lax.optimization_barrier((x, 1.0))
    assert b.weak_type and b.dtype == jnp.float32


def test_with_sharding_constraint_and_platform_dependent():
    x = jnp.ones(2)
    with pytest.raises(ValueError, match="sharding None"):
        lax.with_sharding_constraint(x, None)
    np.testing.assert_array_equal(lax.with_sharding_constraint(x, object()), x)
    with pytest.raises(NotImplementedError, match="no branch for the platform"):
        lax.platform_dependent(x, cuda=lambda v: v)
    np.testing.assert_array_equal(
        jit(lambda v: lax.platform_dependent(v, cpu=lambda u: u + 1, default=lambda u: u))(x),
        [2., 2.])


def test_rounding_method_and_dtype():
    np.testing.assert_array_equal(
        lax.round(jnp.array([0.5, 1.5, 2.5]), lax.RoundingMethod.TO_NEAREST_EVEN), [0., 2., 2.])
    np.testing.assert_array_equal(
        lax.round(jnp.array([0.5, 1.5, 2.5]), lax.RoundingMethod.AWAY_FROM_ZERO), [1., 2., 3.])
    assert lax.dtype(1.0) == np.float32 and lax.dtype(jnp.ones(2, jnp.int8)) == np.int8


# --- nn --------------------------------------------------------------------------------------

def _attention_reference(q, k, v, mask):
    """A direct NumPy evaluation in float64: softmax over keys, one head group per key head."""
    b, t, n, h = q.shape
    g = n // k.shape[2]
    kk = np.repeat(k, g, axis=2)
    vv = np.repeat(v, g, axis=2)
    logits = np.einsum("btnh,bsnh->bnts", q, kk) / np.sqrt(h)
    logits = np.where(mask, logits, -np.inf)
    p = np.exp(logits - logits.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return np.einsum("bnts,bsnh->btnh", p, vv)


def test_dot_product_attention_against_a_direct_evaluation():
    rng = np.random.default_rng(0)
    q = rng.standard_normal((2, 3, 4, 5))
    k = rng.standard_normal((2, 6, 2, 5))
    v = rng.standard_normal((2, 6, 2, 5))
    causal = np.tril(np.ones((3, 6), bool))[None, None]
    got = nn.dot_product_attention(*(jnp.asarray(a, jnp.float32) for a in (q, k, v)),
                                   is_causal=True)
    np.testing.assert_allclose(got, _attention_reference(q, k, v, causal), rtol=2e-5,
                               atol=2e-6)


def test_dot_product_attention_errors():
    q = jnp.ones((3, 4, 5))
    with pytest.raises(ValueError, match="multiple of key/value heads"):
        nn.dot_product_attention(q, jnp.ones((6, 3, 5)), jnp.ones((6, 3, 5)))
    with pytest.raises(ValueError, match="dtype should be float32"):
        nn.dot_product_attention(q, jnp.ones((6, 4, 5), jnp.float16), jnp.ones((6, 4, 5)))
    with pytest.raises(RuntimeError, match="cuDNN"):
        nn.dot_product_attention(q, q, q, implementation="cudnn")
    with pytest.raises(ValueError, match="Unsupported implementation option"):
        nn.dot_product_attention(q, q, q, implementation="flash")


def test_log1mexp_logmeanexp_sparse_sigmoid_edges():
    np.testing.assert_array_equal(nn.log1mexp(jnp.array([0.])), [-np.inf])
    assert np.isnan(np.asarray(nn.log1mexp(jnp.array([-1.])))[0])
    out = nn.logmeanexp(jnp.arange(6.).reshape(2, 3), axis=1,
                        where=jnp.array([[True, False, True], [False, False, False]]))
    assert np.isclose(float(out[0]), np.log((1 + np.exp(2.)) / 2)) and np.isnan(float(out[1]))
    g = grad(lambda v: jnp.sum(nn.sparse_sigmoid(v)))(jnp.array([-2., -1., 0., 1., 2.]))
    np.testing.assert_array_equal(g, [0., 0.25, 0.5, 0.25, 0.])  # ties at the kinks, as JAX
    with pytest.raises(TypeError, match="requires ndarray or scalar arguments"):
        nn.identity([1., 2.])
