"""Focused tests for jnp / nn behaviours fixed against JAX 0.10.2 (issue #24) and for the jnp
functions added for issue #26: errors, edge cases and compositions with jit / vmap / grad.
Values against JAX live in tests/conformance (cases_numpy_extra.py); expected values here are
facts observed from JAX or plain NumPy arithmetic."""
import warnings

import numpy as np
import pytest
import scipy.special

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


# ================================================================ issue #26: new functions
# Expected values come from NumPy / SciPy (the same definitions JAX follows) or from the
# functions' defining identities; JAX's own results are in the conformance suite.



def _rng(seed=0):
    return np.random.default_rng(seed)


def _fd_grad(f, x, eps=1e-3):
    """Central finite differences of a scalar function of a float64 vector."""
    x = np.asarray(x, np.float64)
    g = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = eps
        g.flat[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return g


def _with_x64(fn):
    prev = corejax.config.enable_x64
    corejax.config.update("jax_enable_x64", True)
    try:
        return fn()
    finally:
        corejax.config.update("jax_enable_x64", prev)


def test_math_functions_match_numpy():
    x = _rng().uniform(0.1, 10, 20).astype(np.float32)
    np.testing.assert_allclose(np.asarray(jnp.log2(x)), np.log2(x), rtol=2e-7)
    np.testing.assert_allclose(np.asarray(jnp.log10(x)), np.log10(x), rtol=2e-7)
    big = np.float32([3e38, 1e-30, 0.0, np.inf, 3.0])
    np.testing.assert_allclose(np.asarray(jnp.hypot(big, big[::-1])),
                               np.hypot(big, big[::-1]), rtol=1e-6)
    a, b = _rng(1).integers(-50, 50, (2, 30))
    np.testing.assert_array_equal(np.asarray(jnp.gcd(a, b)), np.gcd(a, b))
    np.testing.assert_array_equal(np.asarray(jnp.lcm(a, b)), np.lcm(a, b))
    np.testing.assert_array_equal(np.asarray(jit(jnp.gcd)(a, b)), np.gcd(a, b))
    y = np.float32([1.0, 0.0, -3.5, 1e10, np.inf, np.nan])
    np.testing.assert_array_equal(np.asarray(jnp.spacing(y)), np.spacing(y))
    assert float(jnp.spacing(np.float32(-0.0))) < 0  # JAX steps from -0 toward -inf
    np.testing.assert_array_equal(np.asarray(jnp.bitwise_count(np.int32([0, 1, 7, -1, -8]))),
                                  np.bitwise_count(np.int32([0, 1, 7, -1, -8])))


def test_ldexp_and_frexp_are_exact():
    m = np.float32([0.75, -0.5, 1.0, 3.0, 1e-20])
    e = np.int32([3, -140, 127, -300, 200])
    np.testing.assert_array_equal(np.asarray(jnp.ldexp(m, e)), np.ldexp(m, e))
    x = np.float32([1.0, -8.0, 0.1, 1e-40, 3e38, 0.0, -np.inf, np.nan])
    mant, ex = jnp.frexp(x)
    want_m, want_e = np.frexp(x)
    np.testing.assert_array_equal(np.asarray(mant), want_m)
    np.testing.assert_array_equal(np.asarray(ex), want_e)
    assert ex.dtype == np.int32
    with pytest.raises(ValueError, match="ldexp"):
        jnp.ldexp(jnp.ones(2), jnp.ones(2))


def test_i0_matches_scipy_and_its_derivative_is_i1():
    x = np.linspace(-30, 30, 121).astype(np.float32)
    np.testing.assert_allclose(np.asarray(jnp.i0(x)), scipy.special.i0(x), rtol=1e-6)
    g = vmap(grad(jnp.i0))(x)
    np.testing.assert_allclose(np.asarray(g), scipy.special.i1(x), rtol=2e-6, atol=1e-6)
    out = _with_x64(lambda: np.asarray(jnp.i0(np.linspace(-90.0, 90.0, 181))))
    np.testing.assert_allclose(out, scipy.special.i0(np.linspace(-90.0, 90.0, 181)),
                               rtol=5e-15)
    np.testing.assert_allclose(np.asarray(jnp.kaiser(9, 6.0)), np.kaiser(9, 6.0), rtol=1e-6)


def test_smooth_functions_match_finite_differences():
    x = np.float64([0.3, -1.2, 2.0])
    for f in (lambda v: jnp.hypot(v, 0.7), lambda v: jnp.logaddexp2(v, 0.5),
              lambda v: jnp.i0(v), lambda v: jnp.interp(v, jnp.array([-2.0, 0.0, 1.0, 3.0]),
                                                         jnp.array([1.0, -1.0, 2.0, 0.0]))):
        want = _fd_grad(lambda v: float(np.sum(np.asarray(_with_x64(lambda: f(v))))), x)
        got = _with_x64(lambda: np.asarray(grad(lambda v: jnp.sum(f(v)))(x)))
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


def test_window_functions_match_numpy():
    for name in ("bartlett", "blackman", "hamming", "hanning"):
        for m in (0, 1, 2, 7):
            np.testing.assert_allclose(np.asarray(getattr(jnp, name)(m)),
                                       getattr(np, name)(m), atol=1e-6, err_msg=name)


def test_isclose_and_array_equal():
    a = np.float32([1.0, np.nan, np.inf, -np.inf, 1e-9])
    b = np.float32([1.0 + 1e-7, np.nan, np.inf, np.inf, 0.0])
    np.testing.assert_array_equal(np.asarray(jnp.isclose(a, b)), np.isclose(a, b))
    np.testing.assert_array_equal(np.asarray(jnp.isclose(a, b, equal_nan=True)),
                                  np.isclose(a, b, equal_nan=True))
    assert not bool(jnp.array_equal(jnp.ones(2), jnp.ones(3)))
    assert bool(jit(jnp.array_equiv)(jnp.ones((2, 3)), jnp.ones(3)))
    assert jnp.isdtype(jnp.float32, ("integral", "real floating"))


def test_rearranging_matches_numpy():
    x = np.arange(24).reshape(2, 3, 4)
    for k in range(-2, 5):
        np.testing.assert_array_equal(np.asarray(jnp.rot90(x, k, (2, 0))), np.rot90(x, k, (2, 0)))
    np.testing.assert_array_equal(np.asarray(jnp.rollaxis(x, 2, 1)), np.rollaxis(x, 2, 1))
    np.testing.assert_array_equal(np.asarray(jnp.resize(np.arange(5), (3, 4))),
                                  np.resize(np.arange(5), (3, 4)))
    blocks = [[np.ones((2, 2)), np.zeros((2, 1))], [np.full((1, 3), 2.0)]]
    np.testing.assert_array_equal(np.asarray(jnp.block(blocks)), np.block(blocks))
    for k in (-2, 0, 3):
        np.testing.assert_array_equal(np.asarray(jnp.diagflat(np.arange(1, 4), k)),
                                      np.diagflat(np.arange(1, 4), k))
    np.testing.assert_array_equal(np.asarray(jnp.trim_zeros(np.array([0, 0, 3, 0, 1, 0]))),
                                  [3, 0, 1])


def test_insert_and_delete_with_traced_indices():
    x = np.arange(6.0)
    for obj, vals in [(2, 9.0), (np.array([1, 4, 1]), np.array([7.0, 8.0, 9.0])), (6, 5.0),
                      (-1, np.array([1.0, 2.0]))]:
        np.testing.assert_array_equal(np.asarray(jnp.insert(x, obj, vals)),
                                      np.insert(x, obj, vals))
    f = jit(lambda i, v: jnp.insert(x, i, v))
    np.testing.assert_array_equal(np.asarray(f(np.array([4, 0]), np.array([7.0, 8.0]))),
                                  np.insert(x, [4, 0], [7.0, 8.0]))
    g = grad(lambda v: jnp.sum(jnp.insert(x, 3, v) * jnp.arange(8.0)))(jnp.array([1.0, 2.0]))
    np.testing.assert_array_equal(np.asarray(g), [3.0, 4.0])
    np.testing.assert_array_equal(np.asarray(jnp.delete(x, np.array([0, 5, 0]))),
                                  np.delete(x, [0, 5, 0]))
    d = jit(lambda i: jnp.delete(x, i, assume_unique_indices=True))(np.array([1, 3]))
    np.testing.assert_array_equal(np.asarray(d), [0.0, 2.0, 4.0, 5.0])
    with pytest.raises(corejax.errors.ConcretizationTypeError):
        jit(lambda i: jnp.delete(x, i))(np.array([1, 3]))


def test_index_tricks_match_numpy():
    np.testing.assert_array_equal(np.asarray(jnp.mgrid[0:3, 1:5:2]), np.mgrid[0:3, 1:5:2])
    np.testing.assert_allclose(np.asarray(jnp.mgrid[-1:1:5j]), np.mgrid[-1:1:5j])
    for got, want in zip(jnp.ogrid[0:2, 0:3], np.ogrid[0:2, 0:3]):
        np.testing.assert_array_equal(np.asarray(got), want)
    np.testing.assert_array_equal(np.asarray(jnp.r_[np.array([1, 2]), 0, 4:6]),
                                  np.r_[np.array([1, 2]), 0, 4:6])
    np.testing.assert_array_equal(np.asarray(jnp.r_["0,2,0", [1, 2], [3, 4]]),
                                  np.r_["0,2,0", [1, 2], [3, 4]])
    np.testing.assert_array_equal(np.asarray(jnp.c_[np.arange(3), np.arange(3)]),
                                  np.c_[np.arange(3), np.arange(3)])
    assert jnp.s_[1:2] == np.s_[1:2]
    filled = jnp.fill_diagonal(jnp.zeros((4, 3)), jnp.array([1.0, 2.0]), inplace=False)
    want = np.zeros((4, 3))
    np.fill_diagonal(want, [1.0, 2.0])
    np.testing.assert_array_equal(np.asarray(filled), want)


def test_vectorize_with_signature():
    matvec = jnp.vectorize(lambda m, v: m @ v, signature="(i,j),(j)->(i)")
    m, v = _rng().normal(size=(4, 1, 2, 3)), _rng(1).normal(size=(5, 3))
    np.testing.assert_allclose(np.asarray(matvec(m, v)), np.einsum("abij,bj->abi", m, v),
                               rtol=1e-5)
    with pytest.raises(ValueError, match="inconsistent size for core dimension 'j'"):
        matvec(m, np.ones(4))
    with pytest.raises(ValueError, match="not a valid gufunc signature"):
        jnp.vectorize(lambda x: x, signature="(i)->")
    pair = jnp.vectorize(lambda x: (x.sum(), x.max()), signature="(n)->(),()")
    s, mx = jit(pair)(np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(np.asarray(s), [3.0, 12.0])
    np.testing.assert_array_equal(np.asarray(mx), [2.0, 5.0])
    g = grad(lambda x: jnp.vectorize(jnp.dot, signature="(n),(n)->()")(x, x).sum())(
        jnp.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(np.asarray(g), 2 * np.arange(6.0).reshape(2, 3))
    out = jnp.apply_along_axis(lambda r: r[::-1].cumsum(), 1, np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(np.asarray(out),
                                  np.apply_along_axis(lambda r: r[::-1].cumsum(), 1,
                                                      np.arange(6.0).reshape(2, 3)))


def test_piecewise_select_and_choose():
    x = jnp.linspace(-2.0, 2.0, 9)
    f = lambda x: jnp.piecewise(x, [x < 0, x > 1], [lambda v: v ** 2, lambda v: 3 * v, 0.5])
    want = np.piecewise(np.asarray(x), [np.asarray(x) < 0, np.asarray(x) > 1],
                        [lambda v: v ** 2, lambda v: 3 * v, 0.5])
    np.testing.assert_allclose(np.asarray(f(x)), want)
    np.testing.assert_allclose(np.asarray(grad(lambda v: f(v).sum())(x)),
                               np.where(np.asarray(x) < 0, 2 * np.asarray(x),
                                        np.where(np.asarray(x) > 1, 3.0, 0.0)))
    c = [np.array([True, False, False]), np.array([True, True, False])]
    np.testing.assert_array_equal(np.asarray(jnp.select(c, [np.arange(3), -np.arange(3)], 9)),
                                  np.select(c, [np.arange(3), -np.arange(3)], 9))
    idx = np.array([2, 0, 1, 2])
    choices = [np.arange(4), 10 * np.arange(4), 100 * np.arange(4)]
    np.testing.assert_array_equal(np.asarray(jit(lambda i: jnp.choose(i, choices, mode="clip"))(
        idx)), np.choose(idx, choices))
    with pytest.raises(ValueError, match="invalid entry"):
        jnp.choose(np.array([3]), choices)


def test_searchsorted_methods_agree_with_numpy():
    rng = _rng(3)
    # One jitted function per (side, method), two sorted-array lengths: 16 compilations
    # cover 20 random draws each.
    search = {(side, method): jit(lambda a, v, side=side, method=method:
                                  jnp.searchsorted(a, v, side=side, method=method))
              for side in ("left", "right")
              for method in ("scan", "scan_unrolled", "compare_all", "sort")}
    for _ in range(20):
        a = np.sort(rng.choice([-1.0, 0.0, 0.5, 2.0, np.inf, np.nan], size=rng.choice([1, 8])))
        a = a.astype(np.float32)
        v = rng.choice([-2.0, -1.0, 0.0, 0.5, 1.0, 2.0, 3.0, np.inf, np.nan], size=(2, 3))
        v = v.astype(np.float32)
        for (side, method), fn in search.items():
            np.testing.assert_array_equal(np.asarray(fn(a, v)), np.searchsorted(a, v, side=side),
                                          err_msg=f"{method} {side} {a} {v}")
    bins = np.float32([3.0, 2.0, 1.0])
    x = np.float32([0.5, 1.0, 1.5, 3.0, 4.0])
    for right in (False, True):
        np.testing.assert_array_equal(np.asarray(jnp.digitize(x, bins, right)),
                                      np.digitize(x, bins, right))


def test_partition_and_lexsort():
    x = _rng(4).normal(size=(3, 7)).astype(np.float32)
    for kth in (0, 3, 6):
        p = np.asarray(jnp.partition(x, kth))
        np.testing.assert_array_equal(np.sort(p, 1), np.sort(x, 1))
        np.testing.assert_array_equal(p[:, kth], np.sort(x, 1)[:, kth])
        pivot = p[:, kth:kth + 1]
        assert (p[:, :kth] <= pivot).all() and (p[:, kth + 1:] >= pivot).all()
        i = np.asarray(jnp.argpartition(x, kth))
        np.testing.assert_array_equal(np.sort(i, 1), np.tile(np.arange(7), (3, 1)))
        np.testing.assert_array_equal(np.take_along_axis(x, i, 1)[:, :kth + 1], p[:, :kth + 1])
    keys = _rng(5).integers(0, 3, (3, 10))
    np.testing.assert_array_equal(np.asarray(jnp.lexsort(keys)), np.lexsort(keys))


def test_nan_reductions_match_numpy():
    x = _rng(6).normal(size=(4, 5)).astype(np.float32)
    x[0, 1] = x[2, :] = x[3, 4] = np.nan
    for name in ("nansum", "nanprod", "nanmean", "nanvar", "nanstd", "nanmax", "nanmin",
                 "nancumsum", "nancumprod"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # NumPy warns about the all-NaN row
            want = getattr(np, name)(x, axis=1)
        np.testing.assert_allclose(np.asarray(getattr(jnp, name)(x, axis=1)), want, rtol=1e-5,
                                   err_msg=name)
    ok = ~np.isnan(x).all(axis=1)
    np.testing.assert_array_equal(np.asarray(jnp.nanargmax(x, axis=1))[ok],
                                  np.nanargmax(x[ok], axis=1))
    np.testing.assert_array_equal(np.asarray(jnp.nanargmin(x, axis=1))[ok],
                                  np.nanargmin(x[ok], axis=1))
    assert int(jnp.nanargmin(x, axis=1)[2]) == -1
    g = grad(lambda v: jnp.nanvar(v))(x[0])
    assert np.isfinite(np.asarray(g)).all() and float(g[1]) == 0.0


def test_quantiles_match_numpy():
    x = _rng(7).normal(size=(3, 8)).astype(np.float32)
    q = np.float32([0.0, 0.1, 0.33, 0.5, 0.9, 1.0])
    for method in ("linear", "lower", "higher", "midpoint", "inverted_cdf"):
        np.testing.assert_allclose(np.asarray(jnp.quantile(x, q, axis=1, method=method)),
                                   np.quantile(x, q, axis=1, method=method), rtol=1e-6,
                                   err_msg=method)
    np.testing.assert_allclose(np.asarray(jnp.percentile(x, 40.0, axis=(0, 1))),
                               np.percentile(x, 40.0), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(jnp.median(x, axis=0, keepdims=True)),
                               np.median(x, axis=0, keepdims=True), rtol=1e-6)
    x[1, 2] = np.nan
    np.testing.assert_allclose(np.asarray(jnp.nanmedian(x, axis=1)), np.nanmedian(x, axis=1),
                               rtol=1e-6)
    assert np.isnan(np.asarray(jnp.median(x, axis=1))[1])
    w = np.float32([1, 2, 3, 4, 5, 6, 7, 8])
    np.testing.assert_allclose(
        np.asarray(jnp.quantile(x[0], q, method="inverted_cdf", weights=w)),
        np.quantile(x[0], q, method="inverted_cdf", weights=w), rtol=1e-6)
    g = grad(lambda v: jnp.quantile(v, 0.3))(jnp.array([4.0, 1.0, 3.0, 2.0, 10.0]))
    np.testing.assert_allclose(np.asarray(g), [0.0, 0.0, 0.2, 0.8, 0.0], rtol=1e-5)


def test_average_cov_corrcoef_match_numpy():
    x = _rng(8).normal(size=(3, 6))
    w = _rng(9).uniform(0.5, 2.0, 6)
    f = _rng(10).integers(1, 4, 6)
    np.testing.assert_allclose(np.asarray(jnp.average(x, axis=1, weights=w)),
                               np.average(x, axis=1, weights=w), rtol=1e-6)
    for kw in ({}, {"bias": True}, {"ddof": 3}, {"fweights": f}, {"aweights": w},
               {"fweights": f, "aweights": w}, {"rowvar": False}):
        np.testing.assert_allclose(np.asarray(jnp.cov(x, **kw)), np.cov(x, **kw), rtol=1e-5,
                                   atol=1e-6, err_msg=str(kw))
    np.testing.assert_allclose(np.asarray(jnp.corrcoef(x)), np.corrcoef(x), rtol=1e-5)
    g = _with_x64(lambda: np.asarray(grad(lambda v: jnp.cov(v)[0, 1])(x)))
    want = _fd_grad(lambda v: np.cov(v.reshape(3, 6))[0, 1], x.ravel(), 1e-6).reshape(3, 6)
    np.testing.assert_allclose(g, want, rtol=1e-6, atol=1e-8)


def test_bincount_and_histograms_match_numpy():
    x = _rng(11).integers(0, 6, 20)
    np.testing.assert_array_equal(np.asarray(jnp.bincount(x)), np.bincount(x))
    w = _rng(12).normal(size=20).astype(np.float32)
    np.testing.assert_allclose(np.asarray(jit(lambda x, w: jnp.bincount(x, w, length=6))(x, w)),
                               np.bincount(x, w, minlength=6), rtol=1e-6)
    with pytest.raises(corejax.errors.ConcretizationTypeError, match="length"):
        jit(jnp.bincount)(x)
    a = _rng(13).normal(size=50).astype(np.float32)
    for kw in ({}, {"bins": 4, "range": (-1, 1)}, {"bins": 7, "density": True},
               {"bins": np.float32([-2, 0, 0.5, 3]), "weights": np.abs(a)}):
        got_c, got_e = jnp.histogram(a, **kw)
        want_c, want_e = np.histogram(a, **kw)
        np.testing.assert_allclose(np.asarray(got_c), want_c, rtol=1e-5, err_msg=str(kw))
        np.testing.assert_allclose(np.asarray(got_e), want_e, rtol=1e-6, err_msg=str(kw))
    xy = _rng(14).normal(size=(30, 2))
    got_c, got_x, got_y = jnp.histogram2d(xy[:, 0], xy[:, 1], bins=(3, 4))
    want_c, want_x, want_y = np.histogram2d(xy[:, 0], xy[:, 1], bins=(3, 4))
    np.testing.assert_array_equal(np.asarray(got_c), want_c)
    np.testing.assert_allclose(np.asarray(got_y), want_y, rtol=1e-6, atol=1e-6)


def test_differences_match_numpy():
    x = _rng(15).normal(size=(3, 5))
    np.testing.assert_allclose(np.asarray(jnp.diff(x, n=2, axis=1, prepend=0.0)),
                               np.diff(x, n=2, axis=1, prepend=0.0), rtol=1e-6)
    coords = np.array([0.0, 0.5, 1.7, 2.0, 4.0])
    for got, want in zip(jnp.gradient(x, 2.0, coords), np.gradient(x, 2.0, coords)):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(jnp.trapezoid(x, coords)), np.trapezoid(x, coords),
                               rtol=1e-6)
    xp, fp = np.array([0.0, 1.0, 1.0, 3.0]), np.array([1.0, 2.0, 5.0, 0.0])
    q = np.array([-1.0, 0.5, 1.0, 2.0, 3.0, 7.0])
    np.testing.assert_allclose(np.asarray(jnp.interp(q, xp, fp)), np.interp(q, xp, fp),
                               rtol=1e-6)
    np.testing.assert_allclose(np.asarray(jnp.interp(q, xp[[0, 1, 3]], fp[[0, 1, 3]],
                                                     period=4.0)),
                               np.interp(q, xp[[0, 1, 3]], fp[[0, 1, 3]], period=4.0), rtol=1e-6)
    p = np.cumsum(_rng(16).uniform(-4, 4, 12))
    np.testing.assert_allclose(np.asarray(jnp.unwrap(p)), np.unwrap(p), rtol=1e-5, atol=1e-5)


def test_unique_and_sets_match_numpy_and_run_under_jit():
    a = _rng(17).integers(0, 6, 12)
    b = _rng(18).integers(3, 9, 7)
    vals, idx, inv, cnt = jnp.unique(a, True, True, True)
    for got, want in zip((vals, idx, inv, cnt), np.unique(a, True, True, True)):
        np.testing.assert_array_equal(np.asarray(got), want)
    f = jit(lambda a: jnp.unique(a, size=8, fill_value=-1))
    want = np.full(8, -1)
    want[:len(np.unique(a))] = np.unique(a)
    np.testing.assert_array_equal(np.asarray(f(a)), want)
    rows = _rng(19).integers(0, 2, (6, 2))
    np.testing.assert_array_equal(np.asarray(jnp.unique(rows, axis=0)), np.unique(rows, axis=0))
    for name in ("setdiff1d", "union1d", "intersect1d", "setxor1d"):
        np.testing.assert_array_equal(np.asarray(getattr(jnp, name)(a, b)),
                                      getattr(np, name)(a, b), err_msg=name)
    for method in ("compare_all", "binary_search", "sort", "auto"):
        np.testing.assert_array_equal(np.asarray(jnp.isin(a, b, method=method)), np.isin(a, b))
    common, i1, i2 = jnp.intersect1d(a, b, return_indices=True)
    np.testing.assert_array_equal(np.asarray(a)[np.asarray(i1)], np.asarray(common))
    np.testing.assert_array_equal(np.asarray(b)[np.asarray(i2)], np.asarray(common))
    with pytest.raises(corejax.errors.ConcretizationTypeError, match="size"):
        jit(jnp.unique)(a)


def test_polynomials_match_numpy():
    p, q = np.array([1.0, -2.0, 0.5, 3.0]), np.array([2.0, 1.0])
    x = np.linspace(-2, 2, 5)
    np.testing.assert_allclose(np.asarray(jnp.polyval(p, x)), np.polyval(p, x), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(jnp.polymul(p, q)), np.polymul(p, q), rtol=1e-6)
    for got, want in zip(jnp.polydiv(p, q), np.polydiv(p, q)):
        np.testing.assert_allclose(np.asarray(got)[-len(want):], want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(jnp.polyder(p, 2)), np.polyder(p, 2))
    np.testing.assert_allclose(np.asarray(jnp.polyint(p, 2, [1.0, 2.0])),
                               np.polyint(p, 2, [1.0, 2.0]), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(jnp.poly(np.array([1.0, 2.0, -3.0]))),
                               np.poly([1.0, 2.0, -3.0]))
    np.testing.assert_allclose(np.asarray(jnp.vander(x, 3, increasing=True)),
                               np.vander(x, 3, increasing=True), rtol=1e-6)
    for mode in ("full", "same", "valid"):
        for u, v in ((p, q), (q, p)):
            np.testing.assert_allclose(np.asarray(jnp.convolve(u, v, mode)),
                                       np.convolve(u, v, mode), rtol=1e-6)
            np.testing.assert_allclose(np.asarray(jnp.correlate(u, v, mode)),
                                       np.correlate(u, v, mode), rtol=1e-6, err_msg=mode)
    xs = np.linspace(0, 1, 8)
    ys = 3 * xs ** 2 - xs + 0.5
    np.testing.assert_allclose(np.asarray(jnp.polyfit(xs, ys, 2)), [3.0, -1.0, 0.5], atol=1e-3)


def test_bits_and_io(tmp_path):
    bits = _rng(20).integers(0, 2, (3, 11))
    for axis in (None, 0, 1):
        for order in ("big", "little"):
            packed = jnp.packbits(bits, axis=axis, bitorder=order)
            np.testing.assert_array_equal(np.asarray(packed),
                                          np.packbits(bits, axis=axis, bitorder=order))
            np.testing.assert_array_equal(
                np.asarray(jnp.unpackbits(packed, axis=axis, count=11 if axis else None,
                                          bitorder=order)),
                np.unpackbits(np.asarray(packed), axis=axis, count=11 if axis else None,
                              bitorder=order))
    path = tmp_path / "x.npy"
    jnp.save(path, jnp.arange(3.0))
    loaded = jnp.load(path)
    assert isinstance(loaded, corejax.Array)
    np.testing.assert_array_equal(np.asarray(loaded), [0.0, 1.0, 2.0])
    path_list, report = jnp.einsum_path("ij,jk,kl->il", jnp.ones((2, 3)), jnp.ones((3, 4)),
                                        jnp.ones((4, 5)))
    assert path_list == [(0, 1), (0, 1)] and "Complete contraction" in report
    with pytest.raises(NotImplementedError, match="non-pure"):
        jnp.fromiter(iter([1, 2]))


def test_cumulative_functions():
    x = _rng(21).normal(size=(3, 4)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(jnp.cumprod(x, axis=1)), np.cumprod(x, axis=1),
                               rtol=1e-6)
    g = grad(lambda v: jnp.cumprod(v).sum())(jnp.array([1.0, 2.0, 0.0, 4.0]))
    np.testing.assert_allclose(np.asarray(g), [3.0, 1.0, 10.0, 0.0])
    out = jnp.cumulative_sum(np.int8([100, 100]), include_initial=True)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(out), [0, 100, 200])
    with pytest.raises(ValueError, match="axis"):
        jnp.cumulative_prod(x)


def test_ufunc_objects():
    assert isinstance(jnp.add, jnp.ufunc) and jnp.add.identity == 0 and jnp.add.nin == 2
    x = np.arange(1.0, 5.0)
    np.testing.assert_array_equal(np.asarray(jnp.add.reduce(x)), 10.0)
    np.testing.assert_array_equal(np.asarray(jnp.multiply.accumulate(x)), np.multiply.accumulate(x))
    np.testing.assert_array_equal(np.asarray(jnp.subtract.outer(x, x)), np.subtract.outer(x, x))
    np.testing.assert_array_equal(np.asarray(jnp.add.reduceat(np.arange(6), np.array([0, 4, 2]))),
                                  np.add.reduceat(np.arange(6), [0, 4, 2]))
    want = x.copy()
    np.add.at(want, [0, 0, 2], 1.0)
    np.testing.assert_array_equal(np.asarray(jnp.add.at(x, np.array([0, 0, 2]), 1.0,
                                                        inplace=False)), want)
    with pytest.raises(NotImplementedError, match="inplace=False"):
        jnp.add.at(x, np.array([0]), 1.0)
    # a Python function: folds start from the identity, skip where=False, and differentiate
    f = jnp.frompyfunc(lambda a, b: a * b + 1, 2, 1, identity=1)
    assert float(f.reduce(x)) == 65.0          # ((((1*1+1)*2+1)*3+1)*4+1)
    assert float(f.reduce(x, where=np.array([True, False, True, True]))) == 29.0
    np.testing.assert_array_equal(np.asarray(f.accumulate(x)), [1.0, 3.0, 10.0, 41.0])
    np.testing.assert_array_equal(np.asarray(f.at(x, np.array([0, 0, 2]), 3.0, inplace=False)),
                                  [13.0, 2.0, 10.0, 4.0])
    np.testing.assert_array_equal(np.asarray(jit(f.reduce)(x)), 65.0)
    np.testing.assert_array_equal(np.asarray(grad(f.reduce)(x)), [24.0, 24.0, 20.0, 16.0])
    with pytest.raises(ValueError, match="no identity"):
        jnp.frompyfunc(lambda a, b: a + b, 2, 1).reduce(jnp.zeros(0))
    with pytest.raises(ValueError, match="binary"):
        jnp.frompyfunc(lambda a: a, 1, 1).reduce(x)


@pytest.mark.parametrize("dtype", ["float16", "float32", "bfloat16"])
def test_python_scalar_operand_fast_path_matches_promotion(dtype, monkeypatch):
    """An eager float Array with a Python float or int (either side) takes a shortcut past the
    promotion lattice: the same values, dtypes and weak types as the general path."""
    from corejax.numpy import _core
    x = jnp.asarray(np.linspace(-3, 3, 7), dtype)
    weak = jnp.asarray(1.5)                                    # weakly typed float32
    assert weak.weak_type
    cases = [(x, 2.5), (x, 3), (x, -0.0), (weak, 2), (weak, 0.25), (x, 1 << 40)]
    ops = [jnp.add, jnp.subtract, jnp.multiply, jnp.true_divide]

    def run():
        out = []
        for a, s in cases:
            for op in ops:
                for r in (op(a, s), op(s, a)):
                    out.append((np.asarray(r).tobytes(), r.dtype, r.weak_type))
        return out
    fast = run()
    monkeypatch.setattr(_core, "_with_scalar", lambda x, s: None)
    assert fast == run()
