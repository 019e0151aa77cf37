"""Indexing: x[idx] and x.at[idx] against NumPy, take/take_along_axis, out-of-bound modes, the
gather/scatter primitives' derivatives (finite differences, jvp/vjp transposition), vmap
against stacking, and jit."""
import numpy as np
import pytest

import corejax
import corejax.numpy as jnp
from corejax import lax
from corejax.lax import indexing as lax_indexing
from corejax.lax.indexing import (GatherDimensionNumbers, GatherScatterMode,
                                  ScatterDimensionNumbers)
from corejax.numpy._indexing import NonConcreteBooleanIndexError

X = np.arange(60, dtype=np.float32).reshape(3, 4, 5)

GETITEM_CASES = [
    1, -1, (1, 2), (-3, -4, -5), (slice(None), 2), (Ellipsis, 1), (None, 1),
    (slice(1, None, 2),), (slice(None, None, -1), slice(3, 0, -2)), (1, None, Ellipsis, None),
    (slice(-2, None), 0, slice(None, 1)), (), (slice(None, None, -2), slice(None), slice(4, 0, -3)),
    (slice(5, 1),),
    # integer arrays of several shapes
    np.array([0, 2]), np.array([2, 0, 2]), np.array([[0, 1], [2, 2]]), (slice(None), [1, 3]),
    (slice(None), np.array([[3], [-1]])), ([0, 2], [1, 3]), ([0, 2], [[1], [3]]),
    (np.array(1), slice(None), np.array([4, 0])), (Ellipsis, [[0], [4]]),
    ([-1, -3], slice(1, None, 2)),
    # adjacent and non-adjacent advanced indices (NumPy's placement rule)
    ([0, 2], slice(None), [1, 3]), (0, slice(None), [1, 2]), (slice(None), 0, [1, 2]),
    (slice(None), [[0, 1]], [[1], [2]]), ([0, 1], None, [0, 1]), (None, 0, None, [1, 2]),
    (None, [0, 1], None, [1, 2]), (slice(None, None, -1), [3, 0], slice(None, None, 2)),
    ([1], Ellipsis, [2]),
    # boolean masks
    X[:, 0, 0] > 10, X[..., 0] > 20, (slice(None), X[0, :, 0] > 6), X > 33,
    (X[:, :, 0] % 7 > 2, slice(1, 3)), (1, X[0] % 3 == 0), (np.zeros(3, bool),),
    ([True, False, True],),
]


@pytest.mark.parametrize("idx", GETITEM_CASES, ids=repr)
def test_getitem_matches_numpy(idx):
    out = jnp.asarray(X)[idx]
    expected = X[idx]
    assert out.shape == expected.shape
    np.testing.assert_array_equal(np.asarray(out), expected)


def test_getitem_with_traced_indices_under_jit():
    jx = jnp.asarray(X)
    f = corejax.jit(lambda x, i, j: x[i, :, j])
    i, j = np.array([[0], [2]]), np.array([1, -1, 0])
    np.testing.assert_array_equal(np.asarray(f(jx, i, j)), X[i, :, j])
    g = corejax.jit(lambda x, k: x[k, 1:, ::-2])
    np.testing.assert_array_equal(np.asarray(g(jx, -1)), X[-1, 1:, ::-2])
    np.testing.assert_array_equal(np.asarray(g(jx, 1)), X[1, 1:, ::-2])


def test_index_errors():
    jx = jnp.asarray(X)
    with pytest.raises(IndexError):
        jx[0, 0, 0, 0]
    with pytest.raises(IndexError):
        jx[..., 0, ...]
    with pytest.raises(TypeError, match="boolean scalar"):
        jx[True]
    with pytest.raises(TypeError, match="integer or boolean"):
        jx[np.array([0.5])]
    with pytest.raises(TypeError):
        jx["a"]
    with pytest.raises(IndexError, match="boolean index did not match"):
        jx[np.array([True, False])]
    with pytest.raises(IndexError, match="shape mismatch"):
        jx[[0, 1], [0, 1, 2]]
    with pytest.raises(IndexError, match="static start/stop/step"):
        corejax.jit(lambda x, i: x[i:])(jx, 1)


def test_traced_boolean_mask_is_a_clear_error():
    f = corejax.jit(lambda x: x[x > 3])
    with pytest.raises(NonConcreteBooleanIndexError, match="jnp.where") as info:
        f(jnp.arange(6.0))
    assert isinstance(info.value, IndexError)
    assert "size=" in str(info.value)


def test_item_assignment_raises_and_points_to_at():
    x = jnp.zeros(3)
    with pytest.raises(TypeError, match=r"\.at\[idx\]\.set"):
        x[0] = 1.0


# --- .at[] -------------------------------------------------------------------------------------

_NP_UFUNC = {"add": np.add, "multiply": np.multiply, "min": np.minimum, "max": np.maximum}

UPDATE_INDICES = [
    np.array([0, 2, 0, 0]), (slice(None), [3, 1, 3]), ([0, 0, 2], slice(None), [1, 1, 4]),
    (1, [2, 2], slice(1, None, 2)), (slice(None, None, -1), 1), (slice(0, 3, 2), 1, slice(None)),
    (Ellipsis, slice(4, 0, -2)), 2, (-1, -2), X > 40, (slice(None), np.array([[0, 1], [1, 0]])),
    (slice(None, None, -2), [1, 1, 3]), ([2, 0], slice(3, 0, -1), 1),
]


@pytest.mark.parametrize("op", ["add", "multiply", "min", "max"])
@pytest.mark.parametrize("idx", UPDATE_INDICES, ids=repr)
def test_at_combining_updates_match_numpy_ufunc_at(op, idx):
    rng = np.random.default_rng(1)
    x = rng.normal(size=X.shape).astype(np.float32)
    values = rng.normal(size=x[idx].shape).astype(np.float32)
    expected = x.copy()
    _NP_UFUNC[op].at(expected, idx, values)
    out = getattr(jnp.asarray(x).at[idx], op)(values)
    np.testing.assert_allclose(np.asarray(out), expected, rtol=1e-6)


@pytest.mark.parametrize("idx", UPDATE_INDICES, ids=repr)
def test_at_set_matches_numpy(idx):
    x = X.copy()
    values = np.arange(x[idx].size, dtype=np.float32).reshape(x[idx].shape) + 100
    duplicated = isinstance(idx, np.ndarray) or (isinstance(idx, tuple) and any(
        isinstance(i, list) and len(set(i)) < len(i) for i in idx))
    if duplicated:  # NumPy and corejax both let the last update win; compare unique targets
        values = np.full(x[idx].shape, 7.0, np.float32)
    x[idx] = values
    out = jnp.asarray(X).at[idx].set(values)
    np.testing.assert_array_equal(np.asarray(out), x)


def test_at_values_broadcast_and_cast():
    x = jnp.zeros((3, 4), jnp.int32)
    out = x.at[:, [0, 2]].set(jnp.asarray([7, 8], jnp.int32))
    np.testing.assert_array_equal(np.asarray(out), [[7, 0, 8, 0]] * 3)
    assert out.dtype == np.int32
    out = jnp.zeros(4).at[1:3].add(1)  # weak Python int into float32
    assert out.dtype == np.float32 and np.asarray(out).tolist() == [0, 1, 1, 0]
    with pytest.warns(FutureWarning, match="scatter inputs have incompatible types"):
        out = x.at[0].set(2.5)
    assert out.dtype == np.int32 and int(out[0, 0]) == 2
    out = jnp.zeros((2, 3)).at[0].set(np.ones((1, 1, 3)))
    np.testing.assert_array_equal(np.asarray(out), [[1, 1, 1], [0, 0, 0]])


def test_at_other_methods():
    x = jnp.arange(1.0, 6.0)
    np.testing.assert_allclose(np.asarray(x.at[np.array([1, 3])].subtract(1.0)), [1, 1, 3, 3, 5])
    np.testing.assert_allclose(np.asarray(x.at[np.array([1, 1])].divide(2.0)), [1, 0.5, 3, 4, 5])
    np.testing.assert_allclose(np.asarray(x.at[2:].power(2)), [1, 2, 9, 16, 25])
    np.testing.assert_allclose(np.asarray(x.at[::2].apply(jnp.negative)), [-1, 2, -3, 4, -5])
    np.testing.assert_array_equal(np.asarray(x.at[np.array([0, 4])].get()), [1, 5])
    np.testing.assert_array_equal(np.asarray(jnp.arange(4).at[np.array([1, 2])].divide(2)),
                                  [0, 0.5, 1, 3])


def test_at_with_traced_indices_under_jit():
    @corejax.jit
    def f(x, i, v):
        return x.at[i].add(v).at[i + 1].set(0.0).at[i, 0].max(v[:, 0])
    x = np.zeros((5, 3), np.float32)
    i = np.array([0, 0, 2])
    v = np.array([[1.0], [2.0], [3.0]], np.float32)
    expected = x.copy()
    np.add.at(expected, i, v)
    expected[i + 1] = 0
    np.maximum.at(expected, (i, 0), v[:, 0])
    np.testing.assert_array_equal(np.asarray(f(x, i, v)), expected)
    g = corejax.jit(lambda x, k: x.at[k].set(9.0))
    np.testing.assert_array_equal(np.asarray(g(jnp.zeros(3), -1)), [0, 0, 9])


# --- out-of-bound indices ----------------------------------------------------------------------

def test_out_of_bound_reads_clamp_by_default_and_fill_on_request():
    x = jnp.arange(10.0)
    assert float(x[11]) == 9.0 and float(x[-11]) == 0.0
    np.testing.assert_array_equal(np.asarray(x[np.array([12, -20, 3])]), [9, 0, 3])
    i = jnp.asarray(11)
    assert float(x[i]) == 9.0
    assert np.isnan(float(x.at[11].get(mode="fill")))
    assert float(x.at[11].get(mode="fill", fill_value=-1.0)) == -1.0
    np.testing.assert_array_equal(
        np.asarray(x.at[np.array([1, 10, -1, -11])].get(mode="fill", fill_value=5.0)),
        [1, 5, 9, 5])
    np.testing.assert_array_equal(np.asarray(x.at[i].get(mode="clip")), 9.0)
    xi = jnp.arange(4, dtype=jnp.int32)
    assert int(xi.at[7].get(mode="fill")) == np.iinfo(np.int32).min
    xu = jnp.arange(4, dtype=jnp.uint8)
    assert int(xu.at[7].get(mode="fill")) == 255
    with pytest.raises(ValueError, match="Unknown gather mode"):
        x.at[0].get(mode="bogus")


def test_out_of_bound_updates_drop_by_default_and_clip_on_request():
    x = jnp.zeros(5)
    np.testing.assert_array_equal(np.asarray(x.at[10].set(1.0)), np.zeros(5))
    np.testing.assert_array_equal(np.asarray(x.at[np.array([1, 10, -1, -9])].add(1.0)),
                                  [0, 1, 0, 0, 1])
    np.testing.assert_array_equal(np.asarray(x.at[10].set(1.0, mode="clip")), [0, 0, 0, 0, 1])
    np.testing.assert_array_equal(np.asarray(x.at[np.array([7, -9])].add(1.0, mode="clip")),
                                  [1, 0, 0, 0, 1])
    np.testing.assert_array_equal(
        np.asarray(corejax.jit(lambda x, i: x.at[i].set(1.0))(x, 5)), np.zeros(5))


def test_take():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    for idx, axis in [([0, 2, -1], None), ([[1, 0], [2, 2]], 0), ([3, -4], 1), (2, 1),
                      (np.array([], np.int32), 0)]:
        np.testing.assert_array_equal(np.asarray(jnp.take(a, np.asarray(idx), axis=axis)),
                                      np.take(a, idx, axis=axis))
    out = jnp.take(a, np.array([0, 5, -5]), axis=1)
    assert np.isnan(np.asarray(out)[:, 1:]).all() and np.asarray(out)[0, 0] == 0
    np.testing.assert_array_equal(np.asarray(jnp.take(a, np.array([5, -5]), axis=1, mode="clip")),
                                  np.take(a, [5, -5], axis=1, mode="clip"))
    np.testing.assert_array_equal(np.asarray(jnp.take(a, np.array([5, -5]), axis=1, mode="wrap")),
                                  np.take(a, [5, -5], axis=1, mode="wrap"))
    np.testing.assert_array_equal(
        np.asarray(jnp.take(a, np.array([9]), axis=1, fill_value=-2.0)), [[-2], [-2], [-2]])
    ai = jnp.arange(4)
    assert int(jnp.take(ai, np.array([4]))[0]) == np.iinfo(np.int32).min
    with pytest.raises(NotImplementedError):
        jnp.take(a, np.array([0]), mode="raise")
    with pytest.raises(TypeError):
        jnp.take(a, np.array([0.5]))


def test_take_along_axis():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(3, 4, 5)).astype(np.float32)
    for axis in (0, 1, -1):
        idx = np.argsort(a, axis=axis)
        np.testing.assert_array_equal(
            np.asarray(jnp.take_along_axis(a, idx, axis=axis)), np.take_along_axis(a, idx, axis))
    idx = rng.integers(-4, 4, size=(1, 6, 5))  # broadcasts along axis 0, negative indices
    np.testing.assert_array_equal(np.asarray(jnp.take_along_axis(a, idx, axis=1)),
                                  np.take_along_axis(a, idx, axis=1))
    flat = np.array([0, 59, 7])
    np.testing.assert_array_equal(np.asarray(jnp.take_along_axis(a, flat, axis=None)),
                                  np.take_along_axis(a, flat, axis=None))
    out = np.asarray(jnp.take_along_axis(a, np.full((3, 1, 5), 9), axis=1))
    assert np.isnan(out).all()
    out = jnp.take_along_axis(a, np.full((3, 1, 5), 9), axis=1, mode="clip")
    np.testing.assert_array_equal(np.asarray(out), a[:, 3:4])
    with pytest.raises(ValueError, match="same number of dimensions"):
        jnp.take_along_axis(a, np.zeros((3, 4), np.int32), axis=1)


# --- the lax primitives directly ---------------------------------------------------------------

def test_lax_gather_with_batching_dims():
    operand = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    indices = np.array([[[1], [2]], [[0], [0]]])  # (batch 2, 2 lookups, index vector 1)
    dn = GatherDimensionNumbers(offset_dims=(2,), collapsed_slice_dims=(1,),
                                start_index_map=(1,), operand_batching_dims=(0,),
                                start_indices_batching_dims=(0,))
    out = lax_indexing.gather(operand, indices, dn, (1, 1, 4))
    expected = np.stack([operand[b][indices[b, :, 0]] for b in range(2)])
    np.testing.assert_array_equal(np.asarray(out), expected)
    sdn = ScatterDimensionNumbers(update_window_dims=(2,), inserted_window_dims=(1,),
                                  scatter_dims_to_operand_dims=(1,), operand_batching_dims=(0,),
                                  scatter_indices_batching_dims=(0,))
    upd = np.ones((2, 2, 4), np.float32)
    out = lax_indexing.scatter_add(np.zeros_like(operand), indices, upd, sdn)
    expected = np.zeros_like(operand)
    for b in range(2):
        np.add.at(expected[b], indices[b, :, 0], upd[b])
    np.testing.assert_array_equal(np.asarray(out), expected)


def test_lax_gather_windows_and_modes():
    operand = np.arange(20, dtype=np.float32).reshape(4, 5)
    dn = GatherDimensionNumbers(offset_dims=(1, 2), collapsed_slice_dims=(),
                                start_index_map=(0, 1))
    starts = np.array([[0, 0], [3, 4], [-1, 2]])
    clip = lax_indexing.gather(operand, starts, dn, (2, 3), mode="clip")
    expected = np.stack([operand[min(max(r, 0), 2):][:2, min(max(c, 0), 2):][:, :3]
                         for r, c in starts])
    np.testing.assert_array_equal(np.asarray(clip), expected)
    fill = np.asarray(lax_indexing.gather(operand, starts, dn, (2, 3), mode="fill",
                                          fill_value=-1))
    np.testing.assert_array_equal(fill[0], expected[0])
    assert (fill[1:] == -1).all()  # a window partly out of bounds is filled entirely


def test_lax_shape_errors_name_the_shapes():
    operand = np.zeros((3, 4), np.float32)
    dn = GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
    with pytest.raises(TypeError, match=r"Slice size at index 1 .*\(3, 4\)"):
        lax_indexing.gather(operand, np.zeros((2, 1), np.int32), dn, (1, 5))
    with pytest.raises(TypeError, match="integer"):
        lax_indexing.gather(operand, np.zeros((2, 1), np.float32), dn, (1, 4))
    with pytest.raises(TypeError, match="start_index_map"):
        lax_indexing.gather(operand, np.zeros((2, 2), np.int32), dn, (1, 4))
    sdn = ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                  scatter_dims_to_operand_dims=(0,))
    with pytest.raises(TypeError, match=r"\(3,\).*\(2, 1\)"):
        lax_indexing.scatter_add(operand, np.zeros((2, 1), np.int32), np.zeros((3, 4),
                                                                             np.float32), sdn)
    with pytest.raises(TypeError, match="same dtype"):
        lax_indexing.scatter(operand, np.zeros((2, 1), np.int32), np.zeros((2, 4), np.int32),
                             sdn)


def test_jaxpr_shows_one_gather_and_scatter():
    text = str(corejax.make_jaxpr(lambda x, i: x[i].sum() + x.at[i].add(1.0).sum())(
        jnp.zeros((4, 3)), np.array([0, 2])))
    assert "gather[" in text and "scatter-add[" in text
    assert "GatherScatterMode.PROMISE_IN_BOUNDS" in text and "FILL_OR_DROP" in text


# --- derivatives -------------------------------------------------------------------------------

def _numerical_grad(f, x, eps=1e-6):
    x = np.asarray(x, np.float64)
    g = np.zeros_like(x)
    for k in range(x.size):
        d = np.zeros_like(x)
        d.flat[k] = eps
        g.flat[k] = (float(f(jnp.asarray(x + d))) - float(f(jnp.asarray(x - d)))) / (2 * eps)
    return g


def _check_grad(f, x, **tol):
    g = np.asarray(corejax.grad(f)(jnp.asarray(x)))
    np.testing.assert_allclose(g, _numerical_grad(f, x), rtol=1e-6, atol=1e-6, **tol)


def test_grad_of_gather_matches_finite_differences(x64):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, 5))
    w = rng.normal(size=(3, 2, 5))
    idx = np.array([[0, 3], [3, 3], [1, 0]])
    _check_grad(lambda x: jnp.sum(jnp.sin(x[idx]) * w), x)
    _check_grad(lambda x: jnp.sum(x[[2, 0, 2], 1:4:2] ** 2), x)
    _check_grad(lambda x: jnp.sum(jnp.take_along_axis(x, np.array([[4], [0], [2], [4]]),
                                                      axis=1) ** 3), x)
    _check_grad(lambda x: jnp.sum(x.at[np.array([0, 9])].get(mode="fill", fill_value=0.0) ** 2),
                x[0])
    # second order through gather
    h = corejax.grad(lambda x: jnp.sum(corejax.grad(lambda y: jnp.sum(y[idx] ** 3))(x)))(
        jnp.asarray(x))
    expected = np.zeros_like(x)
    np.add.at(expected, idx, 6 * x[idx])
    np.testing.assert_allclose(np.asarray(h), expected, rtol=1e-10)


def test_grad_of_scatter_add_matches_finite_differences(x64):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(4, 3))
    v = rng.normal(size=(5, 3))
    idx = np.array([0, 2, 0, 3, 0])
    f_x = lambda x: jnp.sum(jnp.tanh(x.at[idx].add(v)) ** 2)
    f_v = lambda v: jnp.sum(jnp.tanh(jnp.asarray(x).at[idx].add(v)) ** 2)
    _check_grad(f_x, x)
    _check_grad(f_v, v)
    _check_grad(lambda v: jnp.sum(jnp.asarray(x).at[:, ::2].add(v[:4, :2]) ** 3), v)


def test_grad_of_set_min_max_mul_match_finite_differences(x64):
    rng = np.random.default_rng(2)
    x = rng.normal(size=(6,))
    v = rng.normal(size=(4,))
    dup = np.array([1, 4, 1, 5])
    uniq = np.array([1, 4, 0, 5])
    for idx in (dup, uniq):
        _check_grad(lambda x: jnp.sum(jnp.sin(x.at[idx].set(v))), x)
        _check_grad(lambda v: jnp.sum(jnp.sin(jnp.asarray(x).at[idx].set(v))), v)
        for op in ("min", "max"):
            _check_grad(lambda x: jnp.sum(jnp.sin(getattr(x.at[idx], op)(v))), x)
            _check_grad(lambda v: jnp.sum(jnp.sin(getattr(jnp.asarray(x).at[idx], op)(v))), v)
        _check_grad(lambda x: jnp.sum(jnp.sin(x.at[idx].multiply(v))), x)
    _check_grad(lambda v: jnp.sum(jnp.sin(jnp.asarray(x).at[uniq].multiply(
        v, unique_indices=True))), v)
    with pytest.raises(NotImplementedError, match="unique_indices"):
        corejax.grad(lambda v: jnp.sum(jnp.asarray(x).at[dup].multiply(v)))(jnp.asarray(v))
    # ties share the tangent equally, as lax.max does
    g = corejax.grad(lambda v: jnp.sum(jnp.zeros(2).at[np.array([0, 0, 1])].max(v)))(
        jnp.asarray([1.0, 1.0, -1.0]))
    np.testing.assert_allclose(np.asarray(g), [0.5, 0.5, 0.0])


def test_second_order_through_scatters_matches_finite_differences(x64):
    rng = np.random.default_rng(5)
    x, v, w = rng.normal(size=(6,)), rng.normal(size=(4,)), rng.normal(size=(6,))
    idx = np.array([1, 4, 1, 5])
    for update in ("add", "set", "max"):
        def f(x):
            return jnp.sum(jnp.sin(getattr(x.at[idx], update)(jnp.asarray(v) * x[:4])) ** 2)
        directional = lambda x: jnp.vdot(corejax.grad(f)(x), jnp.asarray(w))
        _check_grad(directional, x, err_msg=update)


def _dot(a, b):
    return float(np.sum(np.asarray(a) * np.asarray(b)))


@pytest.mark.parametrize("fn", [
    lambda x, u: x[np.array([[0, 3], [2, 2]])],
    lambda x, u: x.at[np.array([1, 1, 3])].get(mode="fill", fill_value=0.0),
    lambda x, u: x.at[np.array([0, 3, 0])].add(u),
    lambda x, u: x.at[np.array([0, 3, 0])].set(u),
    lambda x, u: x.at[np.array([0, 3, 2])].set(u, unique_indices=True),
    lambda x, u: x.at[np.array([0, 3, 0])].max(u),
    lambda x, u: x.at[np.array([0, 3, 0])].min(u),
    lambda x, u: x.at[np.array([0, 9, 0])].add(u),
    lambda x, u: x.at[np.array([0, 9, 1])].set(u, mode="clip"),
    lambda x, u: jnp.take_along_axis(x, np.array([[1, 0, 1]] * 4).T[:3, :1], axis=0),
], ids=["gather", "gather_fill", "scatter_add", "scatter_dup", "scatter_unique", "scatter_max",
        "scatter_min", "scatter_add_oob", "scatter_clip", "take_along_axis"])
def test_jvp_and_vjp_are_transposes(fn, x64):
    rng = np.random.default_rng(3)
    x, u = rng.normal(size=(4, 2)), rng.normal(size=(3, 2))
    tx, tu = rng.normal(size=(4, 2)), rng.normal(size=(3, 2))
    f = lambda x, u: fn(x, u)
    out, jvp_out = corejax.jvp(f, (jnp.asarray(x), jnp.asarray(u)),
                               (jnp.asarray(tx), jnp.asarray(tu)))
    ct = rng.normal(size=np.shape(out))
    _, f_vjp = corejax.vjp(f, jnp.asarray(x), jnp.asarray(u))
    cx, cu = f_vjp(jnp.asarray(ct))
    np.testing.assert_allclose(_dot(ct, jvp_out), _dot(cx, tx) + _dot(cu, tu), rtol=1e-10)


# --- vmap --------------------------------------------------------------------------------------

def _stacked(f, *args, in_axes):
    n = next(np.shape(a)[0] for a, ax in zip(args, in_axes) if ax is not None)
    rows = [f(*[a if ax is None else a[b] for a, ax in zip(args, in_axes)]) for b in range(n)]
    return np.stack([np.asarray(r) for r in rows])


VMAP_FNS = {
    "getitem": lambda x, i, v: x[i, 1:],
    "getitem_nonadjacent": lambda x, i, v: x[i[:, None], :, i[:1]],
    "at_add": lambda x, i, v: x.at[i].add(v[:, None, None]),
    "at_set_unique": lambda x, i, v: x.at[i[:2], 0].set(v[:2, None], unique_indices=True),
    "at_max": lambda x, i, v: x.at[:, i, 1].max(v),
    "take_along_axis": lambda x, i, v: jnp.take_along_axis(x, i[None, :, None] % 4, axis=1),
    "scalar_index": lambda x, i, v: x.at[i[2], 1].add(v[0])[i[0], :, i[1]],
    "dynamic_slice": lambda x, i, v: lax.dynamic_slice(x, (i[0], 1, i[1]), (1, 2, 2)),
    "dynamic_update_slice": lambda x, i, v: lax.dynamic_update_slice(
        x, jnp.reshape(v, (1, 1, 3)), (i[2], i[0], 1)),
}


@pytest.mark.parametrize("name", sorted(VMAP_FNS))
@pytest.mark.parametrize("in_axes", [(0, None, None), (None, 0, 0), (0, 0, 0), (None, 0, None),
                                     (1, None, 0)], ids=str)
def test_vmap_matches_stacking(name, in_axes):
    fn = VMAP_FNS[name]
    rng = np.random.default_rng(4)
    b = 3
    x = rng.normal(size=(3, 4, 5)).astype(np.float32)
    i = np.array([2, 0, 2])
    v = rng.normal(size=(3,)).astype(np.float32)
    xs = np.stack([x + k for k in range(b)], axis=in_axes[0] or 0)
    is_ = np.stack([(i + k) % 3 for k in range(b)])
    vs = np.stack([v * (k + 1) for k in range(b)])
    args = [jnp.asarray(a) for a in (xs if in_axes[0] is not None else x,
                                     is_ if in_axes[1] is not None else i,
                                     vs if in_axes[2] is not None else v)]
    out = corejax.vmap(fn, in_axes=in_axes)(*args)
    per_example_args = list(args)
    if in_axes[0] == 1:
        per_example_args[0] = jnp.asarray(np.moveaxis(xs, 1, 0))
    expected = _stacked(fn, *per_example_args,
                        in_axes=[None if a is None else 0 for a in in_axes])
    np.testing.assert_allclose(np.asarray(out), expected, rtol=1e-6)


def test_vmap_with_out_of_bound_modes_and_jit():
    x = jnp.arange(12.0).reshape(3, 4)
    i = jnp.asarray([[0, 5], [-1, 2], [9, -9]])
    f = lambda r, j: r.at[j].get(mode="fill", fill_value=-1.0)
    np.testing.assert_array_equal(np.asarray(corejax.vmap(f)(x, i)),
                                  np.stack([np.asarray(f(r, j)) for r, j in zip(x, i)]))
    g = corejax.jit(corejax.vmap(lambda r, j: r.at[j].add(1.0)))
    expected = np.asarray(x).copy()
    for b, js in enumerate(np.asarray(i)):
        for j in js:
            if -4 <= j < 4:
                expected[b, j] += 1
    np.testing.assert_array_equal(np.asarray(g(x, i)), expected)
    h = corejax.jit(corejax.vmap(lambda r, k: lax.dynamic_slice(r, (k,), (2,))))
    np.testing.assert_array_equal(np.asarray(h(x, jnp.asarray([0, 3, -2]))),
                                  [[0, 1], [6, 7], [8, 9]])


def test_grad_of_vmapped_dynamic_slices_with_batched_starts(x64):
    rng = np.random.default_rng(6)
    x, u = rng.normal(size=(3, 6)), rng.normal(size=(3, 2))
    starts = jnp.asarray([4, 0, 9])

    def f(x, u):
        updated = corejax.vmap(lambda r, w, k: lax.dynamic_update_slice(r, w, (k,)))(x, u, starts)
        sliced = corejax.vmap(lambda r, k: lax.dynamic_slice(r, (k,), (3,)))(updated, starts - 1)
        return jnp.sum(jnp.sin(sliced) * updated[:, :3])

    _check_grad(lambda x: f(x, jnp.asarray(u)), x)
    _check_grad(lambda u: f(jnp.asarray(x), u), u)


def test_vmap_of_batched_gather_is_one_primitive():
    f = corejax.vmap(lambda x, i: x[i], in_axes=(0, 0))
    text = str(corejax.make_jaxpr(f)(jnp.zeros((3, 5)), np.zeros((3, 2), np.int32)))
    assert text.count("gather[") == 1 and "operand_batching_dims=(0,)" in text


def test_per_example_gradients_through_indexing():
    def loss(w, i):
        return jnp.sum(w[i] ** 2) + jnp.sum(w.at[i].add(1.0))
    w = jnp.asarray(np.arange(6.0, dtype=np.float32).reshape(3, 2))
    idx = jnp.asarray([[0, 2], [1, 1]])
    g = corejax.vmap(corejax.grad(loss), in_axes=(None, 0))(w, idx)
    expected = np.stack([np.asarray(corejax.grad(loss)(w, i)) for i in idx])
    np.testing.assert_allclose(np.asarray(g), expected)


def test_jit_of_grad_of_vmap_composes():
    f = corejax.jit(corejax.grad(lambda x, i: jnp.sum(corejax.vmap(lambda r, j: r[j])(x, i))))
    x = jnp.zeros((2, 4))
    i = np.array([[0, 0, 3], [1, 2, 2]])
    expected = np.zeros((2, 4))
    for r in range(2):
        np.add.at(expected[r], i[r], 1.0)
    np.testing.assert_array_equal(np.asarray(f(x, i)), expected)


def test_modes_are_printable_and_parsed():
    assert GatherScatterMode.from_any("drop") is GatherScatterMode.FILL_OR_DROP
    assert GatherScatterMode.from_any(None) is GatherScatterMode.FILL_OR_DROP
    assert str(GatherScatterMode.CLIP) == "GatherScatterMode.CLIP"


def test_index_helpers_match_numpy():
    from corejax.numpy import _indexing as helpers
    flat = np.array([0, 7, 11, 5])
    for got, want in zip(helpers.unravel_index(jnp.asarray(flat), (3, 4)),
                         np.unravel_index(flat, (3, 4))):
        np.testing.assert_array_equal(np.asarray(got), want)
    np.testing.assert_array_equal(  # negative wraps, out of bounds clips (as in JAX)
        np.asarray(helpers.unravel_index(jnp.asarray([-1, 99]), (3, 4))[1]), [3, 3])
    multi = (np.array([0, 2, 1]), np.array([3, 1, 0]))
    for order in ("C", "F"):
        np.testing.assert_array_equal(
            np.asarray(helpers.ravel_multi_index(multi, (3, 4), order=order)),
            np.ravel_multi_index(multi, (3, 4), order=order))
    np.testing.assert_array_equal(
        np.asarray(helpers.ravel_multi_index((np.array([5]), np.array([-1])), (3, 4),
                                             mode="clip")),
        np.ravel_multi_index(([5], [-1]), (3, 4), mode="clip"))
    with pytest.raises(ValueError, match="invalid entry"):
        helpers.ravel_multi_index((np.array([3]), np.array([0])), (3, 4))
    x = np.arange(12).reshape(3, 4)
    np.testing.assert_array_equal(np.asarray(jnp.asarray(x)[helpers.ix_([0, 2], [3, 1])]),
                                  x[np.ix_([0, 2], [3, 1])])
    np.testing.assert_array_equal(np.asarray(helpers.indices((2, 3))), np.indices((2, 3)))
    for got, want in zip(helpers.indices((2, 3), sparse=True), np.indices((2, 3), sparse=True)):
        np.testing.assert_array_equal(np.asarray(got), want)
    for fn in ("tril_indices", "triu_indices"):
        for got, want in zip(getattr(helpers, fn)(4, 1, 5), getattr(np, fn)(4, 1, 5)):
            np.testing.assert_array_equal(np.asarray(got), want)
    np.testing.assert_array_equal(np.asarray(x[helpers.diag_indices(3)]), np.diag(x))
    for mode in (None, "clip", "wrap"):
        want = np.zeros(5, np.int32)
        np.put(want, [0, 2, 9, -7], [10, 20], mode=mode or "clip")
        got = helpers.put(jnp.zeros(5, jnp.int32), np.array([0, 2, 9, -7]), np.array([10, 20]),
                          mode=mode, inplace=False)
        np.testing.assert_array_equal(np.asarray(got), want)
    with pytest.raises(ValueError, match="inplace=False"):
        helpers.put(jnp.zeros(5), np.array([0]), 1.0)
    a = np.arange(12.0).reshape(3, 4)
    idx = np.array([[1, 2], [0, 0], [3, 1]])
    want = a.copy()
    np.put_along_axis(want, idx, -1.0, axis=1)
    np.testing.assert_array_equal(
        np.asarray(helpers.put_along_axis(a, idx, -1.0, axis=1, inplace=False)), want)


def test_fill_mode_scalar_read_is_0d_under_jit():
    """gather's implementation returned shape (1,) for a 0-d result (np.ascontiguousarray
    makes 0-d arrays 1-d); eagerly a reshape hid it, under jit the (1,) came out."""
    x = jnp.arange(10.0)
    for f in (lambda v: v.at[11].get(mode="fill"), corejax.jit(lambda v: v.at[11].get(mode="fill")),
              corejax.jit(lambda v: v.at[3].get(mode="fill"))):
        assert f(x).shape == ()
    assert np.isnan(float(corejax.jit(lambda v: v.at[11].get(mode="fill"))(x)))
