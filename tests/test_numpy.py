"""The jnp layer against NumPy as the oracle: values, dtypes and shapes."""
import numpy as np
import pytest

import corejax as jax
import corejax.numpy as jnp

R = np.random.default_rng(0)
A = R.normal(size=(3, 4)).astype(np.float32)
B = R.normal(size=(3, 4)).astype(np.float32)
P = R.uniform(0.5, 2.0, size=(3, 4)).astype(np.float32)
I = R.integers(-5, 6, size=(3, 4)).astype(np.int32)
J = R.integers(1, 4, size=(3, 4)).astype(np.int32)

UNARY = ["exp", "log", "log1p", "expm1", "tanh", "sin", "cos", "tan", "arctan", "sinh", "cosh",
         "arcsinh", "sqrt", "cbrt", "negative", "abs", "sign", "floor", "ceil", "trunc", "rint",
         "square", "reciprocal", "isfinite", "isnan", "isinf", "signbit", "exp2"]
BINARY = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "arctan2", "power",
          "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "logaddexp",
          "copysign", "nextafter"]
INT_BINARY = ["add", "subtract", "multiply", "floor_divide", "remainder", "bitwise_and",
              "bitwise_or", "bitwise_xor", "maximum", "minimum", "left_shift", "right_shift"]


@pytest.mark.parametrize("name", UNARY)
def test_unary(name):
    x = P if name in ("log", "sqrt", "reciprocal", "log1p") else A
    out = getattr(jnp, name)(x)
    ref = getattr(np, name)(x)
    assert out.shape == ref.shape
    assert out.dtype == ref.dtype
    np.testing.assert_allclose(np.asarray(out), ref, rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("name", BINARY)
def test_binary(name):
    x, y = (P, A) if name == "power" else (A, B)
    out = getattr(jnp, name)(x, y)
    ref = getattr(np, name)(x, y)
    assert out.dtype == ref.dtype
    np.testing.assert_allclose(np.asarray(out), ref, rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("name", INT_BINARY)
def test_integer_binary(name):
    y = J if name in ("floor_divide", "remainder", "left_shift", "right_shift") else I
    y = -y if name in ("floor_divide", "remainder") else y
    out = getattr(jnp, name)(I, y)
    np.testing.assert_array_equal(np.asarray(out), getattr(np, name)(I, y))
    assert out.dtype == np.int32


def test_broadcasting_and_scalars():
    np.testing.assert_allclose(np.asarray(jnp.add(A, A[0])), A + A[0])
    np.testing.assert_allclose(np.asarray(jnp.multiply(A[:, :1], A[0])), A[:, :1] * A[0])
    np.testing.assert_allclose(np.asarray(2.0 ** jnp.asarray(A)), 2.0 ** A, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(jnp.asarray(A) ** 3), A ** 3, rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(jnp.asarray(I) ** 2), I ** 2)
    np.testing.assert_array_equal(np.asarray(jnp.power(I, J)), np.power(I, J))


@pytest.mark.parametrize("name", ["sum", "mean", "max", "min", "prod", "var", "std", "argmax",
                                  "argmin", "all", "any", "ptp", "count_nonzero"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 1)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions(name, axis, keepdims):
    if name in ("argmax", "argmin") and isinstance(axis, tuple):
        return
    x = A > 0 if name in ("all", "any") else A
    kw = {} if name in ("argmax", "argmin", "count_nonzero", "ptp") else {}
    out = getattr(jnp, name)(x, axis=axis, keepdims=keepdims, **kw)
    ref = getattr(np, name)(x, axis=axis, keepdims=keepdims)
    assert out.shape == np.shape(ref)
    np.testing.assert_allclose(np.asarray(out), ref, rtol=1e-5, atol=1e-6)


def test_reduction_dtypes():
    assert jnp.sum(jnp.ones(3, jnp.bool_)).dtype == np.int32
    assert jnp.sum(jnp.ones(3, jnp.int8)).dtype == np.int32
    assert jnp.mean(jnp.arange(4)).dtype == np.float32
    assert float(jnp.mean(jnp.arange(4))) == 1.5
    assert jnp.argmax(A).dtype == np.int32
    np.testing.assert_allclose(float(jnp.var(A, ddof=1)), np.var(A, ddof=1), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(jnp.cumsum(A, axis=1)), np.cumsum(A, axis=1),
                               rtol=1e-5)
    np.testing.assert_allclose(float(jnp.sum(A, where=A > 0)), A[A > 0].sum(), rtol=1e-5)


def test_creation():
    np.testing.assert_array_equal(np.asarray(jnp.arange(2, 10, 3)), np.arange(2, 10, 3))
    np.testing.assert_allclose(np.asarray(jnp.linspace(0, 1, 5)), np.linspace(0, 1, 5))
    np.testing.assert_allclose(np.asarray(jnp.linspace(0, 1, 4, endpoint=False)),
                               np.linspace(0, 1, 4, endpoint=False))
    np.testing.assert_array_equal(np.asarray(jnp.eye(3, 4, 1)), np.eye(3, 4, 1))
    np.testing.assert_array_equal(np.asarray(jnp.identity(2)), np.identity(2))
    np.testing.assert_array_equal(np.asarray(jnp.full((2, 2), 7)), np.full((2, 2), 7))
    assert jnp.full((2,), 7).dtype == np.int32
    assert jnp.zeros_like(I).dtype == np.int32 and jnp.ones_like(A, dtype=jnp.int8).dtype == np.int8
    np.testing.assert_array_equal(np.asarray(jnp.tri(3, k=-1)), np.tri(3, k=-1))
    with pytest.raises(TypeError):  # as JAX 0.10.2 (broadcast_in_dim's shape check)
        jnp.zeros((-1, 2))
    with pytest.raises(TypeError):
        jnp.zeros((2.5, 2))


def test_shape_functions():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    cases = [
        (lambda m: m.reshape(4, -1), lambda m: m.reshape(4, -1)),
        (lambda m: m.transpose(2, 0, 1), lambda m: m.transpose(2, 0, 1)),
        (lambda m: m.swapaxes(0, 2), lambda m: m.swapaxes(0, 2)),
        (lambda m: jnp.moveaxis(m, 0, -1), lambda m: np.moveaxis(m, 0, -1)),
        (lambda m: jnp.expand_dims(m, (0, 2)), lambda m: np.expand_dims(m, (0, 2))),
        (lambda m: jnp.squeeze(m[:1]), lambda m: np.squeeze(m[:1])),
        (lambda m: m.ravel(), lambda m: m.ravel()),
        (lambda m: jnp.broadcast_to(m[0, :, :1], (5, 3, 4)),
         lambda m: np.broadcast_to(m[0, :, :1], (5, 3, 4))),
        (lambda m: jnp.concatenate([m, m], axis=1), lambda m: np.concatenate([m, m], axis=1)),
        (lambda m: jnp.stack([m, m], axis=-1), lambda m: np.stack([m, m], axis=-1)),
        (lambda m: jnp.vstack([m[0], m[1]]), lambda m: np.vstack([m[0], m[1]])),
        (lambda m: jnp.hstack([m[0], m[1]]), lambda m: np.hstack([m[0], m[1]])),
        (lambda m: jnp.split(m, 2, axis=2)[1], lambda m: np.split(m, 2, axis=2)[1]),
        (lambda m: jnp.array_split(m, 3, axis=2)[2], lambda m: np.array_split(m, 3, axis=2)[2]),
        (lambda m: jnp.split(m, [1, 3], axis=1)[1], lambda m: np.split(m, [1, 3], axis=1)[1]),
        (lambda m: jnp.tile(m[0], (2, 1, 2)), lambda m: np.tile(m[0], (2, 1, 2))),
        (lambda m: jnp.repeat(m, 2, axis=1), lambda m: np.repeat(m, 2, axis=1)),
        (lambda m: jnp.repeat(m[0, 0], jnp.array([1, 0, 2, 1])),
         lambda m: np.repeat(m[0, 0], [1, 0, 2, 1])),
        (lambda m: jnp.flip(m, (0, 2)), lambda m: np.flip(m, (0, 2))),
        (lambda m: jnp.roll(m, 2, axis=2), lambda m: np.roll(m, 2, axis=2)),
        (lambda m: jnp.roll(m, -1), lambda m: np.roll(m, -1)),
        (lambda m: jnp.pad(m, ((0, 1), (2, 0), (1, 1))), lambda m: np.pad(m, ((0, 1), (2, 0),
                                                                               (1, 1)))),
        (lambda m: jnp.pad(m, 2, mode="edge"), lambda m: np.pad(m, 2, mode="edge")),
        (lambda m: jnp.pad(m, 2, mode="reflect"), lambda m: np.pad(m, 2, mode="reflect")),
        (lambda m: jnp.pad(m, 1, mode="wrap"), lambda m: np.pad(m, 1, mode="wrap")),
        (lambda m: jnp.tril(m[0], 1), lambda m: np.tril(m[0], 1)),
        (lambda m: jnp.triu(m[1], -1), lambda m: np.triu(m[1], -1)),
        (lambda m: jnp.diagonal(m[0], 1), lambda m: np.diagonal(m[0], 1)),
        (lambda m: jnp.diag(m[0, 0], -1), lambda m: np.diag(m[0, 0], -1)),
        (lambda m: jnp.trace(m[0]), lambda m: np.trace(m[0])),
        (lambda m: m.T, lambda m: m.T),
        (lambda m: jnp.where(m > 5, m, -m), lambda m: np.where(m > 5, m, -m)),
        (lambda m: jnp.clip(m, 3, 9), lambda m: np.clip(m, 3, 9)),
    ]
    for i, (f, g) in enumerate(cases):
        out, ref = f(jnp.asarray(x)), g(x)
        assert out.shape == ref.shape, i
        np.testing.assert_allclose(np.asarray(out), ref, err_msg=str(i))


def test_products():
    a = R.normal(size=(2, 3, 4)).astype(np.float32)
    b = R.normal(size=(2, 4, 5)).astype(np.float32)
    v = R.normal(size=4).astype(np.float32)
    tol = dict(rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(jnp.matmul(a, b)), a @ b, **tol)
    np.testing.assert_allclose(np.asarray(jnp.asarray(a) @ v), a @ v, **tol)
    np.testing.assert_allclose(np.asarray(jnp.matmul(a[0], b)), a[0] @ b, **tol)
    np.testing.assert_allclose(np.asarray(jnp.dot(a[0], b[0])), a[0] @ b[0], **tol)
    np.testing.assert_allclose(np.asarray(jnp.dot(a, v)), np.dot(a, v), **tol)
    np.testing.assert_allclose(np.asarray(jnp.outer(v, v[:2])), np.outer(v, v[:2]), **tol)
    np.testing.assert_allclose(np.asarray(jnp.inner(v, v)), np.inner(v, v), **tol)
    np.testing.assert_allclose(np.asarray(jnp.vdot(a, a)), np.vdot(a, a), **tol)
    np.testing.assert_allclose(np.asarray(jnp.tensordot(a, b, ((2,), (1,)))),
                               np.tensordot(a, b, ((2,), (1,))), **tol)
    for spec, ops in [("bij,bjk->bik", (a, b)), ("ij,kj->ik", (a[0], a[1])), ("ii->i", (a[0, :, :3],)),
                      ("ij->", (a[0],)), ("ij->ji", (a[0],)), ("...j,j->...", (a, v)),
                      ("bij,bjk", (a, b)), ("i,i", (v, v)), ("ij,jk,kl->il", (a[0], b[0], b[1].T))]:
        np.testing.assert_allclose(np.asarray(jnp.einsum(spec, *ops)), np.einsum(spec, *ops),
                                   err_msg=spec, **tol)


def test_basic_indexing():
    x = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    jx = jnp.asarray(x)
    for idx in [1, -1, (1, 2), (slice(None), 2), (Ellipsis, 1), (None, 1), (slice(1, None, 2),),
                (slice(None, None, -1), slice(3, 0, -2)), (1, None, Ellipsis, None),
                (slice(-2, None), 0, slice(None, 1)), ()]:
        np.testing.assert_array_equal(np.asarray(jx[idx]), x[idx], err_msg=str(idx))
    # Out-of-bounds integer indices clamp when reading, as JAX documents.
    np.testing.assert_array_equal(np.asarray(jx[3]), x[2])
    with pytest.raises(IndexError):
        jx[0, 0, 0, 0]


def test_traced_integer_index():
    x = jnp.arange(10.0)
    f = jax.jit(lambda x, i: x[i])
    assert float(f(x, 3)) == 3.0 and float(f(x, -1)) == 9.0


def test_dtype_objects_are_callable_and_usable():
    assert jnp.float32(2).dtype == np.float32 and jnp.int8(3).dtype == np.int8
    assert jnp.zeros(2, jnp.uint8).dtype == np.uint8
    assert jnp.asarray(A).astype(jnp.int32).dtype == np.int32
    assert jnp.issubdtype(jnp.float32, jnp.floating)


def test_methods_and_operators():
    x = jnp.asarray(A)
    np.testing.assert_allclose(np.asarray(-x + 1 - 2 * x / 4), -A + 1 - 2 * A / 4, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(x.sum(axis=0)), A.sum(axis=0), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(abs(x)), abs(A))
    np.testing.assert_array_equal(np.asarray(x > 0), A > 0)
    np.testing.assert_array_equal(np.asarray(~(x > 0)), ~(A > 0))
    np.testing.assert_allclose(np.asarray(x @ x.T), A @ A.T, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(1.0 - x), 1.0 - A)
    np.testing.assert_allclose(np.asarray(x.astype(jnp.float16)), A.astype(np.float16))
    assert len(x) == 3 and [r.shape for r in x] == [(4,)] * 3
    np.testing.assert_array_equal(np.asarray(x.reshape((4, 3))), A.reshape(4, 3))


def test_nonzero_concrete_and_static_size():
    x = np.array([[0, 2, 0], [3, 0, 4]], np.int32)
    for got, ref in zip(jnp.nonzero(x), np.nonzero(x)):
        np.testing.assert_array_equal(np.asarray(got), ref)
    f = jax.jit(lambda x: jnp.nonzero(x, size=4, fill_value=-1))
    out = f(jnp.asarray(x))
    np.testing.assert_array_equal(np.asarray(out[0]), [0, 1, 1, -1])
    np.testing.assert_array_equal(np.asarray(out[1]), [1, 0, 2, -1])
    with pytest.raises(jax.errors.ConcretizationTypeError):
        jax.jit(jnp.nonzero)(jnp.asarray(x))


def test_masked_reductions_and_softmax():
    mask = jnp.array([True, False, True])
    assert float(jnp.max(jnp.array([1.0, 5.0, 2.0]), where=mask, initial=-jnp.inf)) == 2.0
    with pytest.raises(ValueError, match="initial"):
        jnp.max(jnp.ones(3), where=mask)
    out = jax.nn.log_softmax(jnp.array([0.0, 100.0, 0.0]), where=mask)
    np.testing.assert_allclose(np.asarray(out), [np.log(0.5), -np.inf, np.log(0.5)], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(jax.nn.softmax(jnp.array([0.0, 100.0, 0.0]),
                                                         where=mask)), [0.5, 0.0, 0.5])


def test_mean_and_var_with_where():
    x = np.random.default_rng(1).normal(size=(4, 5)).astype(np.float32)
    m = x > -0.5
    assert (m.sum(axis=0) >= 2).all()
    np.testing.assert_allclose(np.asarray(jnp.mean(x, axis=1, where=m)),
                               np.mean(x, axis=1, where=m), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(jnp.var(x, axis=0, where=m, ddof=1)),
                               np.var(x, axis=0, where=m, ddof=1), rtol=1e-4)


def test_lax_dynamic_in_dim_helpers():
    from corejax import lax
    x = jnp.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(np.asarray(lax.dynamic_slice_in_dim(x, 1, 2, axis=1)),
                                  np.asarray(x)[:, 1:3])
    np.testing.assert_array_equal(np.asarray(lax.dynamic_index_in_dim(x, 2, 0, False)),
                                  np.asarray(x)[2])
    out = lax.dynamic_update_slice_in_dim(x, jnp.zeros((3, 1)), 3, 1)
    np.testing.assert_array_equal(np.asarray(out)[:, 3], 0.0)
    f = jax.jit(lambda x, i: lax.dynamic_slice_in_dim(x, i, 2, 0))
    np.testing.assert_array_equal(np.asarray(f(x, 1)), np.asarray(x)[1:3])
