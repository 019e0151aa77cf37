"""Linear algebra (lax.linalg, jnp.linalg, scipy.linalg): derivative rules against central
differences (float64), transpose rules against their jvps, batching rules against loops,
jit against eager, the edge cases (singular, empty, non-square, NaN-producing inputs) and the
errors. Values are compared with NumPy / SciPy; JAX's own results are in the conformance
suite (tests/conformance/cases_linalg.py)."""
import numpy as np
import pytest
import scipy.linalg

import corejax
import corejax.numpy as jnp
import corejax.scipy.linalg as jsl
from corejax.lax import linalg as L

RNG = np.random.default_rng(20250125)


@pytest.fixture
def x64():
    prev = corejax.config.enable_x64
    corejax.config.update("jax_enable_x64", True)
    yield
    corejax.config.update("jax_enable_x64", prev)


def rand(*shape, dtype=np.float64):
    return RNG.standard_normal(shape).astype(dtype)


def spd(n, batch=()):
    a = rand(*batch, n, n)
    return a @ np.swapaxes(a, -1, -2) / n + np.eye(n)


def dominant(n, batch=()):
    return rand(*batch, n, n) + 2 * n * np.eye(n)


def _leaves(tree):
    return [np.asarray(x) for x in corejax.tree_util.tree_leaves(tree)]


def check_jvp(f, args, tol=1e-6, h=1e-6):
    """f's jvp against central differences along one random direction per argument."""
    tangents = tuple(rand(*np.shape(a)) for a in args)
    _, out_dot = corejax.jvp(f, tuple(args), tangents)
    plus = f(*[a + h * t for a, t in zip(args, tangents)])
    minus = f(*[a - h * t for a, t in zip(args, tangents)])
    for d, p, m in zip(_leaves(out_dot), _leaves(plus), _leaves(minus)):
        fd = (p - m) / (2 * h)
        np.testing.assert_allclose(d, fd, rtol=tol, atol=tol * (1 + np.abs(fd).max()))


def check_vjp(f, args, tol=1e-9):
    """<ct, jvp(t)> == <vjp(ct), t>: the transpose rules agree with the jvp rules."""
    tangents = tuple(rand(*np.shape(a)) for a in args)
    out, out_dot = corejax.jvp(f, tuple(args), tangents)
    cts = corejax.tree_util.tree_map(lambda o: rand(*np.shape(o)), out)
    _, pullback = corejax.vjp(f, *args)
    in_cts = pullback(cts)
    lhs = sum(float(np.sum(c * d)) for c, d in zip(_leaves(cts), _leaves(out_dot)))
    rhs = sum(float(np.sum(c * t)) for c, t in zip(_leaves(in_cts), tangents))
    assert abs(lhs - rhs) <= tol * (1 + abs(lhs))


# --- derivative rules (float64) --------------------------------------------------------------

def _fix_signs(v):
    return v * jnp.sign(v[..., :1, :])


DERIVATIVE_CASES = {
    "cholesky": (lambda a: L.cholesky(a), lambda: [spd(4)]),
    # a symmetric argument: these read one triangle, while the rule (as JAX's) uses the whole
    # tangent, so only symmetric directions have a derivative to compare with
    "cholesky_nosym": (lambda a: L.cholesky(a + a.T, symmetrize_input=False),
                       lambda: [spd(4) / 2]),
    "triangular_left_lower": (lambda a, b: L.triangular_solve(a, b, left_side=True, lower=True),
                              lambda: [dominant(4), rand(4, 3)]),
    "triangular_right_upper_t": (lambda a, b: L.triangular_solve(
        a, b, left_side=False, lower=False, transpose_a=True), lambda: [dominant(4), rand(2, 4)]),
    "triangular_unit": (lambda a, b: L.triangular_solve(
        a, b, left_side=True, lower=True, unit_diagonal=True), lambda: [dominant(4), rand(4, 2)]),
    "lu_square": (lambda a: L.lu(a)[0], lambda: [rand(4, 4)]),
    "lu_tall": (lambda a: L.lu(a)[0], lambda: [rand(5, 3)]),
    "lu_wide": (lambda a: L.lu(a)[0], lambda: [rand(3, 5)]),
    "qr_square": (lambda a: L.qr(a), lambda: [rand(4, 4)]),
    "qr_tall_reduced": (lambda a: L.qr(a, full_matrices=False), lambda: [rand(5, 3)]),
    "qr_tall_full": (lambda a: L.qr(a, full_matrices=True), lambda: [rand(5, 2)]),
    "qr_wide": (lambda a: L.qr(a), lambda: [rand(2, 5)]),
    "qr_pivoting": (lambda a: L.qr(a, pivoting=True)[:2], lambda: [rand(4, 4)]),
    "eigh": (lambda a: (lambda v, w: (_fix_signs(v), w))(*L.eigh(a)), lambda: [rand(4, 4)]),
    "svd_values": (lambda a: L.svd(a, compute_uv=False), lambda: [rand(4, 3)]),
    "svd_tall": (lambda a: (lambda u, s, vt: (u * jnp.sign(u[:1]), s, vt * jnp.sign(u[:1]).T))(
        *L.svd(a, full_matrices=False)), lambda: [rand(5, 3)]),
    "svd_wide": (lambda a: (lambda u, s, vt: (u * jnp.sign(u[:1]), s, vt * jnp.sign(u[:1]).T))(
        *L.svd(a, full_matrices=False)), lambda: [rand(3, 5)]),
    "tridiagonal_solve": (lambda dl, d, du, b: L.tridiagonal_solve(dl, d, du, b),
                          lambda: [rand(5) * 0.3, 2 + rand(5) ** 2, rand(5) * 0.3, rand(5, 2)]),
    "det": (jnp.linalg.det, lambda: [rand(4, 4)]),
    "slogdet": (lambda a: jnp.linalg.slogdet(a)[1], lambda: [rand(4, 4)]),
    "slogdet_qr": (lambda a: jnp.linalg.slogdet(a, method="qr")[1], lambda: [rand(4, 4)]),
    "solve": (jnp.linalg.solve, lambda: [rand(4, 4), rand(4, 2)]),
    "inv": (jnp.linalg.inv, lambda: [rand(3, 3)]),
    "pinv": (jnp.linalg.pinv, lambda: [rand(5, 3)]),
    "sylvester": (jsl.solve_sylvester, lambda: [rand(3, 3) * 0.2, 2 * np.eye(2) + rand(2, 2) * 0.1,
                                                 rand(3, 2)]),
    "expm": (jsl.expm, lambda: [rand(3, 3)]),
    "cho_solve": (lambda a, b: jsl.cho_solve(jsl.cho_factor(a + a.T), b),
                  lambda: [spd(4) / 2, rand(4)]),
    "lu_solve": (lambda a, b: jsl.lu_solve(jsl.lu_factor(a), b, trans=1),
                 lambda: [rand(4, 4), rand(4, 2)]),
    "norm_nuc": (lambda a: jnp.linalg.norm(a, "nuc"), lambda: [rand(4, 3)]),
    "polar_svd": (lambda a: jsl.polar(a, method="svd"), lambda: [rand(4, 4)]),
}


@pytest.mark.parametrize("name", sorted(DERIVATIVE_CASES))
def test_jvp_matches_finite_differences(name, x64):
    f, make = DERIVATIVE_CASES[name]
    check_jvp(f, make())


@pytest.mark.parametrize("name", sorted(DERIVATIVE_CASES))
def test_vjp_is_the_transpose_of_jvp(name, x64):
    f, make = DERIVATIVE_CASES[name]
    check_vjp(f, make())


@pytest.mark.parametrize("name", ["cholesky", "det", "slogdet", "triangular_left_lower", "eigh",
                                  "solve", "svd_values"])
def test_second_order(name, x64):
    """The jvp rules are made of differentiable operations: their own jvp is right too."""
    f, make = DERIVATIVE_CASES[name]
    args = make()
    direction = tuple(rand(*np.shape(a)) for a in args)

    def first(*xs):
        return corejax.jvp(f, xs, direction)[1]

    check_jvp(first, args, tol=1e-5, h=1e-5)


def test_det_derivative_at_singular_matrix_is_the_adjugate(x64):
    a = rand(4, 4)
    a[:, 3] = a[:, 0] + a[:, 1]              # rank 3, zero pivot last
    cof = np.array([[(-1) ** (i + j) * np.linalg.det(np.delete(np.delete(a, i, 0), j, 1))
                     for j in range(4)] for i in range(4)])
    np.testing.assert_allclose(corejax.grad(jnp.linalg.det)(a), cof, atol=1e-10)
    assert float(jnp.linalg.det(a)) == pytest.approx(0, abs=1e-12)


def test_hessian_of_logdet(x64):
    a = spd(3)
    h = corejax.hessian(lambda x: jnp.linalg.slogdet(x)[1])(a)
    inv = np.linalg.inv(a)
    np.testing.assert_allclose(h, -np.einsum("jk,li->ijkl", inv, inv), atol=1e-9)


def test_full_svd_of_non_square_has_no_derivative():
    with pytest.raises(NotImplementedError, match="full matrices"):
        corejax.grad(lambda x: jnp.linalg.svd(x)[0].sum())(rand(4, 2, dtype=np.float32))


@pytest.mark.parametrize("fn", [lambda a: L.householder_product(a, np.full(2, 0.5, a.dtype)),
                                lambda a: L.hessenberg(a)[0], lambda a: L.schur(a)[0]])
def test_no_derivative_where_jax_has_none(fn):
    with pytest.raises(NotImplementedError, match="Differentiation rule"):
        corejax.jvp(fn, (rand(4, 4, dtype=np.float32),), (rand(4, 4, dtype=np.float32),))


# --- batching rules, jit ---------------------------------------------------------------------

BATCH_CASES = {
    "cholesky": (L.cholesky, [spd(4, (3,))], (0,)),
    "triangular_a_unbatched_left": (
        lambda a, b: L.triangular_solve(a, b, left_side=True, lower=True),
        [dominant(4), rand(4, 3, 2)], (None, 1)),
    "triangular_a_unbatched_right": (
        lambda a, b: L.triangular_solve(a, b, left_side=False, transpose_a=True),
        [dominant(4), rand(2, 3, 4)], (None, 1)),
    "triangular_b_unbatched": (
        lambda a, b: L.triangular_solve(a, b, left_side=True),
        [dominant(4, (3,)), rand(4, 2)], (0, None)),
    "lu": (L.lu, [rand(4, 3, 4)], (1,)),
    "qr": (L.qr, [rand(3, 5, 2)], (0,)),
    "eigh": (lambda a: L.eigh(a)[1], [rand(4, 4, 3)], (2,)),
    "svd": (lambda a: L.svd(a, compute_uv=False), [rand(3, 4, 2)], (0,)),
    "tridiagonal": (L.tridiagonal_solve, [rand(3, 5), 3 + rand(3, 5), rand(5), rand(5, 2, 3)],
                    (0, 0, None, 2)),
    "lu_pivots": (lambda p: L.lu_pivots_to_permutation(p, 5),
                  [RNG.integers(0, 5, (3, 4)).astype(np.int32)], (0,)),
    "householder": (L.householder_product, [rand(3, 4, 2), rand(2)], (0, None)),
    "hessenberg": (lambda a: L.hessenberg(a)[0], [rand(3, 4, 4)], (0,)),
    "sylvester": (jsl.solve_sylvester, [rand(3, 3), 3 * np.eye(2), rand(3, 2, 3)],
                  (None, None, 2)),
    "det": (jnp.linalg.det, [rand(4, 3, 4)], (1,)),
    "solve": (jnp.linalg.solve, [rand(3, 4, 4), rand(4)], (0, None)),
    "expm": (jsl.expm, [rand(3, 3, 3) * 0.5], (0,)),
}


@pytest.mark.parametrize("name", sorted(BATCH_CASES))
def test_vmap_matches_a_loop(name, x64):
    f, args, axes = BATCH_CASES[name]
    size = next(np.shape(a)[ax] for a, ax in zip(args, axes) if ax is not None)
    batched = corejax.vmap(f, in_axes=axes)(*args)
    singles = [f(*[a if ax is None else np.take(a, i, axis=ax) for a, ax in zip(args, axes)])
               for i in range(size)]
    for got, parts in zip(_leaves(batched), zip(*[_leaves(s) for s in singles])):
        np.testing.assert_allclose(got, np.stack(parts), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("name", sorted(BATCH_CASES))
def test_jit_matches_eager(name, x64):
    f, args, axes = BATCH_CASES[name]
    batched = corejax.vmap(f, in_axes=axes)
    for got, want in zip(_leaves(corejax.jit(batched)(*args)), _leaves(batched(*args))):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_grad_of_vmap_of_jit(x64):
    a, b = spd(4, (3,)), rand(3, 4)

    def loss(a, b):
        solve = corejax.jit(lambda c, b: jsl.cho_solve((c, False), b))
        return jnp.sum(corejax.vmap(solve)(jsl.cho_factor(a + a.mT)[0], b) ** 2)

    check_jvp(loss, [a / 2, b])


# --- values against NumPy / SciPy ------------------------------------------------------------

def test_values_against_numpy_and_scipy(x64):
    a, s = rand(5, 5), spd(5)
    lu, piv, perm = L.lu(a)
    p, l, u = scipy.linalg.lu(a)
    np.testing.assert_allclose(np.asarray(a)[np.asarray(perm)],
                               (np.tril(lu, -1) + np.eye(5)) @ np.triu(lu), atol=1e-12)
    np.testing.assert_allclose(jsl.lu(a)[2], u, atol=1e-12)
    np.testing.assert_allclose(jnp.linalg.cholesky(s), np.linalg.cholesky(s), atol=1e-12)
    np.testing.assert_allclose(jnp.linalg.eigvalsh(s), np.linalg.eigvalsh(s), atol=1e-12)
    np.testing.assert_allclose(jnp.linalg.det(a), np.linalg.det(a), rtol=1e-12)
    np.testing.assert_allclose(jnp.linalg.pinv(a[:, :3]), np.linalg.pinv(a[:, :3]), atol=1e-12)
    np.testing.assert_allclose(jsl.expm(a), scipy.linalg.expm(a), rtol=1e-12)
    e = rand(5, 5)
    np.testing.assert_allclose(jsl.expm_frechet(a, e)[1], scipy.linalg.expm_frechet(a, e)[1],
                               rtol=1e-10)
    for ord_ in (None, 1, -1, 2, -2, np.inf, -np.inf, "fro", "nuc"):
        np.testing.assert_allclose(jnp.linalg.norm(a, ord_), np.linalg.norm(a, ord_),
                                   rtol=1e-12)
    for fn, args in [("toeplitz", (a[0], a[1])), ("hankel", (a[0], a[1])), ("circulant", (a[0],)),
                     ("companion", (a[0],)), ("fiedler", (a[0],)),
                     ("fiedler_companion", (a[0],)), ("leslie", (a[0], a[1, :4])),
                     ("helmert", (5, True)), ("hilbert", (5,)), ("invhilbert", (5,)),
                     ("pascal", (5,)), ("invpascal", (5, "upper")), ("hadamard", (8,))]:
        np.testing.assert_allclose(getattr(jsl, fn)(*args), getattr(scipy.linalg, fn)(*args),
                                   rtol=1e-12, atol=1e-12, err_msg=fn)
    for mode in ("full", "same", "valid"):
        for n in (3, 7):
            np.testing.assert_allclose(jsl.convolution_matrix(a[0, :4], n, mode),
                                       scipy.linalg.convolution_matrix(a[0, :4], n, mode))


def test_qdwh_and_polar(x64):
    a = rand(6, 4)
    u, h, iters, converged = L.qdwh(a)
    assert bool(converged) and 0 < int(iters) <= 10
    np.testing.assert_allclose(np.asarray(u).T @ u, np.eye(4), atol=1e-12)
    np.testing.assert_allclose(np.asarray(u) @ h, a, atol=1e-12)
    assert np.all(np.linalg.eigvalsh(h) > 0)
    u_svd, p_svd = jsl.polar(a, method="svd")
    np.testing.assert_allclose(u, u_svd, atol=1e-10)
    np.testing.assert_allclose(h, p_svd, atol=1e-10)
    u, h, *_ = L.qdwh(np.pad(a, ((0, 2), (0, 1))), dynamic_shape=(6, 4))
    np.testing.assert_allclose(np.asarray(u)[:6, :4] @ np.asarray(h)[:4, :4], a, atol=1e-12)
    assert not np.asarray(u)[6:].any()


def test_subsets_and_tridiagonal_eigenvalues(x64):
    s = spd(6)
    v, w = L.eigh(s, subset_by_index=(2, 5))
    np.testing.assert_allclose(w, np.linalg.eigvalsh(s)[2:5], atol=1e-12)
    np.testing.assert_allclose(np.asarray(s) @ v, np.asarray(v) * np.asarray(w), atol=1e-10)
    _, sv, _ = L.svd(s, full_matrices=False, subset_by_index=(0, 2))
    np.testing.assert_allclose(sv, np.linalg.svd(s, compute_uv=False)[:2], atol=1e-12)
    d, e = rand(6), rand(5)
    w = jsl.eigh_tridiagonal(d, e, eigvals_only=True)
    np.testing.assert_allclose(w, scipy.linalg.eigh_tridiagonal(d, e, eigvals_only=True),
                               atol=1e-12)


# --- edge cases ------------------------------------------------------------------------------

def test_singular_and_indefinite_inputs_give_nan_or_inf_not_errors():
    f32 = np.float32
    assert np.isnan(np.asarray(L.cholesky(-np.eye(3, dtype=f32)))).sum() == 6
    batch = np.stack([np.eye(3, dtype=f32), -np.eye(3, dtype=f32)])
    out = np.asarray(L.cholesky(batch))
    np.testing.assert_array_equal(out[0], np.eye(3))
    assert np.isnan(out[1]).sum() == 6 and (np.triu(out[1], 1) == 0).all()
    ones = np.ones((2, 2), f32)
    assert float(jnp.linalg.det(ones)) == 0
    assert np.isinf(np.asarray(jnp.linalg.inv(ones))).all()
    sign, logdet = jnp.linalg.slogdet(ones)
    assert float(sign) == 0 and float(logdet) == -np.inf
    lu, piv, _ = L.lu(ones)
    np.testing.assert_array_equal(lu, [[1, 1], [1, 0]])
    x = L.tridiagonal_solve(np.zeros(3, f32), np.array([1, 0, 2], f32), np.zeros(3, f32),
                            np.ones((3, 1), f32))
    assert np.isnan(np.asarray(x)).all()
    x = L.tridiagonal_solve(np.zeros(3, f32), np.array([1, 0, 2], f32), np.zeros(3, f32),
                            np.ones((3, 1), f32), perturb_singular=True)
    assert np.isfinite(np.asarray(x)).all() and float(x[1, 0]) > 1e5


def test_perturbed_tridiagonal_solve_matches_lapack_when_regular(x64):
    dl, d, du, b = rand(2, 6), rand(2, 6), rand(2, 6), rand(2, 6, 3)
    np.testing.assert_allclose(L.tridiagonal_solve(dl, d, du, b, perturb_singular=True),
                               L.tridiagonal_solve(dl, d, du, b), rtol=1e-9, atol=1e-9)


def test_empty_matrices():
    e = np.zeros((0, 0), np.float32)
    assert float(jnp.linalg.det(e)) == 1.0
    assert L.cholesky(e).shape == (0, 0)
    assert [x.shape for x in L.lu(np.zeros((2, 0, 3), np.float32))] == [(2, 0, 3), (2, 0), (2, 0)]
    assert [x.shape for x in L.svd(np.zeros((3, 0), np.float32))] == [(3, 3), (0,), (0, 0)]
    assert jnp.linalg.inv(np.zeros((2, 0, 0), np.float32)).shape == (2, 0, 0)


def test_lu_pivots_to_permutation():
    np.testing.assert_array_equal(L.lu_pivots_to_permutation(np.array([2, 2, 2], np.int32), 5),
                                  [2, 0, 1, 3, 4])
    # out of range: the read clamps and the write is dropped, as JAX's gather / scatter do
    np.testing.assert_array_equal(L.lu_pivots_to_permutation(np.array([7, 2, 2], np.int32), 5),
                                  [4, 2, 1, 3, 4])


def test_cholesky_update_and_symmetric_product(x64):
    s, w = spd(4), rand(4)
    r = np.linalg.cholesky(s).T
    np.testing.assert_allclose(L.cholesky_update(r, w), np.linalg.cholesky(s + np.outer(w, w)).T,
                               atol=1e-12)
    a, c = rand(4, 2), rand(4, 4)
    np.testing.assert_allclose(L.symmetric_product(a, c, alpha=2.0, beta=0.5),
                               2 * a @ a.T + 0.5 * c, atol=1e-12)


# --- errors ----------------------------------------------------------------------------------

@pytest.mark.parametrize("call,error,match", [
    (lambda: L.cholesky(np.ones((2, 3), np.float32), symmetrize_input=False), ValueError,
     "square"),
    (lambda: L.cholesky(np.ones(3, np.float32)), TypeError, "rank at least 2"),
    (lambda: L.lu(np.ones((3, 3), np.int32)), TypeError, "does not accept dtype int32"),
    (lambda: L.lu(np.ones((3, 3), np.float16)), NotImplementedError, "float16"),
    (lambda: L.triangular_solve(np.eye(3, dtype=np.float32), np.ones((2, 3), np.float32),
                                left_side=True), ValueError, "Incompatible shapes"),
    (lambda: L.triangular_solve(np.eye(3, dtype=np.float32), np.ones((2, 3, 3), np.float32)),
     TypeError, "same number of batch dimensions"),
    (lambda: L.lu_pivots_to_permutation(np.zeros(3, np.int32), 2), ValueError, "exceed"),
    (lambda: L.svd(np.ones((3, 2), np.float32), algorithm=L.SvdAlgorithm.JACOBI),
     NotImplementedError, "Jacobi"),
    (lambda: L.eig(np.ones((2, 3), np.float32)), ValueError, "square"),
    (lambda: corejax.grad(lambda a: jnp.abs(jnp.linalg.eig(a)[1]).sum())(np.eye(2, dtype="f")),
     NotImplementedError, "enable_eigvec_derivs"),
    (lambda: jsl.sqrtm(np.eye(2, dtype=np.float32), blocksize=2), NotImplementedError,
     "Blocked"),
    (lambda: jnp.linalg.inv(np.ones(3, np.float32)), ValueError, r"\[\.\.\., n, n\]"),
    (lambda: jnp.linalg.solve(np.eye(3, dtype=np.float32), np.ones(4, np.float32)), ValueError,
     "right-hand side"),
    (lambda: jnp.linalg.norm(np.ones(3, np.float32), "fro"), ValueError, "vector norm"),
    (lambda: jnp.linalg.norm(np.ones((2, 2), np.float32), axis=2), ValueError, "out of bounds"),
    (lambda: jnp.linalg.matrix_power(np.eye(2, dtype=np.float32), 1.5), TypeError, "integer"),
    (lambda: jnp.linalg.qr(np.eye(2, dtype=np.float32), mode="economic"), ValueError,
     "Unsupported QR"),
    (lambda: jnp.linalg.cholesky([[1.0]]), TypeError, "ndarray or scalar"),
    (lambda: jsl.solve(np.eye(2), np.ones(2), assume_a="banded"), ValueError, "assume_a"),
    (lambda: jsl.hadamard(6), ValueError, "power of 2"),
    (lambda: jsl.eigh(np.eye(2), np.eye(2)), NotImplementedError, "b=None"),
])
def test_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_errors_under_jit_match_eager():
    with pytest.raises(ValueError, match="square"):
        corejax.jit(lambda a: L.cholesky(a, symmetrize_input=False))(
            np.ones((2, 3), np.float32))
    with pytest.raises(corejax.errors.TracerBoolConversionError):
        corejax.jit(lambda a, b: jnp.linalg.lstsq(a, b, numpy_resid=True))(
            rand(4, 2, dtype=np.float32), rand(4, dtype=np.float32))


def test_dtypes_follow_jax():
    i = np.eye(3, dtype=np.int32)
    assert L.cholesky(i).dtype == np.float32          # (x + x^T) / 2 makes ints float
    assert jnp.linalg.det(i).dtype == np.float32
    assert jnp.linalg.matrix_rank(i).dtype == np.int32
    assert jnp.linalg.cross(np.ones(3, np.int32), np.ones(3, np.int32)).dtype == np.int32
    assert jnp.linalg.matrix_power(i, 2).dtype == np.int32
    assert jnp.linalg.matrix_power(i, -1).dtype == np.float32
    assert not jnp.linalg.norm(3.0).weak_type
    lu, piv, perm = L.lu(np.eye(3, dtype=np.float32))
    assert (piv.dtype, perm.dtype) == (np.int32, np.int32)


# --- custom_linear_solve, custom_root --------------------------------------------------------

def _dense_solve(a, b, **kw):
    return corejax.lax.custom_linear_solve(
        lambda x: a @ x, b, lambda mv, y: jnp.linalg.solve(a, y),
        transpose_solve=lambda vm, y: jnp.linalg.solve(a.T, y), **kw)


def test_custom_linear_solve_derivatives(x64):
    a, b = dominant(4), rand(4)
    check_jvp(_dense_solve, [a, b])
    check_vjp(_dense_solve, [a, b])
    want = corejax.grad(lambda a, b: jnp.sum(jnp.linalg.solve(a, b) ** 2), (0, 1))(a, b)
    got = corejax.jit(corejax.grad(lambda a, b: jnp.sum(_dense_solve(a, b) ** 2), (0, 1)))(a, b)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-10)
    hess = corejax.hessian(lambda b: jnp.sum(_dense_solve(a, b) ** 3))(b)
    x = np.linalg.solve(a, b)
    inv = np.linalg.inv(a)
    np.testing.assert_allclose(hess, 6 * inv.T @ np.diag(x) @ inv, rtol=1e-9)


def test_custom_linear_solve_pytrees_aux_and_vmap(x64):
    a = dominant(3)

    def solve(mv, b):
        return {"u": jnp.linalg.solve(a, b["u"])}, {"iterations": 1}

    x, aux = corejax.lax.custom_linear_solve(lambda x: {"u": a @ x["u"]}, {"u": rand(3)}, solve,
                                             symmetric=True, has_aux=True)
    assert set(x) == {"u"} and aux == {"iterations": 1}
    bs = rand(5, 3)
    got = corejax.vmap(lambda b: _dense_solve(a, b))(bs)
    np.testing.assert_allclose(got, np.linalg.solve(a, bs.T).T, rtol=1e-10)


def test_custom_linear_solve_errors():
    a = np.eye(2, dtype=np.float32) * 2

    def no_transpose(b):
        return corejax.lax.custom_linear_solve(lambda x: a @ x, b, lambda mv, y: y / 2)

    with pytest.raises(TypeError, match="transpose_solve required"):
        corejax.grad(lambda b: no_transpose(b).sum())(np.ones(2, np.float32))
    with pytest.raises(TypeError, match="structure, shapes and dtypes of b"):
        corejax.jit(lambda b: corejax.lax.custom_linear_solve(
            lambda x: x[:1], b, lambda mv, y: y))(np.ones(2, np.float32))


def test_custom_jvp_rules_may_solve_with_tangents():
    """jnp.linalg.solve is linear in b wherever it is used, so a custom rule that solves with
    tangents still transposes (reverse mode)."""
    a = np.eye(2, dtype=np.float32) * 2

    @corejax.custom_jvp
    def f(x):
        return x * 2

    @f.defjvp
    def f_jvp(primals, tangents):
        return f(primals[0]), jnp.linalg.solve(a, tangents[0])

    np.testing.assert_allclose(corejax.grad(lambda x: f(x).sum())(np.ones(2, np.float32)), 0.5)


def _sqrt(c):
    def newton(f, x):
        for _ in range(30):
            x = x - f(x) / (2 * x)
        return x
    return corejax.lax.custom_root(lambda x: x * x - c, jnp.ones_like(c), newton,
                                   lambda g, y: y / g(jnp.ones_like(y)))


def test_custom_root_implicit_derivatives(x64):
    c = np.array([2.0, 9.0, 0.25])
    np.testing.assert_allclose(_sqrt(c), np.sqrt(c), rtol=1e-12)
    np.testing.assert_allclose(corejax.jacfwd(_sqrt)(c), np.diag(0.5 / np.sqrt(c)), rtol=1e-10)
    np.testing.assert_allclose(corejax.grad(lambda c: _sqrt(c).sum())(c), 0.5 / np.sqrt(c),
                               rtol=1e-10)
    np.testing.assert_allclose(corejax.vmap(corejax.grad(lambda c: _sqrt(c).sum()))(c[:, None]),
                               0.5 / np.sqrt(c)[:, None], rtol=1e-10)
    second = corejax.grad(lambda c: corejax.grad(lambda c: _sqrt(c).sum())(c).sum())(c)
    np.testing.assert_allclose(second, -0.25 * c ** -1.5, rtol=1e-9)
    np.testing.assert_allclose(corejax.jit(corejax.grad(lambda c: _sqrt(c).sum()))(c),
                               0.5 / np.sqrt(c), rtol=1e-10)


def test_non_convergence_gives_nan_for_that_matrix_only():
    batch = np.stack([np.eye(3, dtype=np.float32), np.full((3, 3), np.nan, np.float32)])
    for out in (L.eigh(batch), L.svd(batch), L.schur(batch), [L.svd(batch, compute_uv=False)]):
        for leaf in out:
            leaf = np.asarray(leaf)
            assert np.isfinite(leaf[0]).all() and np.isnan(leaf[1]).all()
