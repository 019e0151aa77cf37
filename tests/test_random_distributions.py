"""corejax.random beyond the basic samplers: the key API (typed keys, key_impl, key_dtype,
clone), random_gamma_p and its rules, the distributions' errors and edge cases, their
compositions with jit / vmap / grad, and statistical sanity checks (moments against the
distributions' known values) where no golden data applies.

Bit-exact agreement with JAX for every sampler is checked by tests/conformance (cases_random.py).
"""
import contextlib
import math

import numpy as np
import pytest
import scipy.special
import scipy.stats

import corejax
import corejax.numpy as jnp
from corejax import random
from corejax.config import config


@contextlib.contextmanager
def partitionable(value):
    saved = config.threefry_partitionable
    config.update("threefry_partitionable", value)
    try:
        yield
    finally:
        config.update("threefry_partitionable", saved)


KEY = random.PRNGKey(17)


# --- the key API ----------------------------------------------------------------------------------

def test_key_constructors_take_impl_or_dtype_not_both():
    k = random.key(3, dtype=random.key_dtype())
    np.testing.assert_array_equal(random.key_data(k), random.PRNGKey(3))
    np.testing.assert_array_equal(random.key_data(random.key(3, impl="threefry2x32")),
                                  random.PRNGKey(3))
    with pytest.raises(ValueError, match="both `impl` and `dtype`"):
        random.key(0, impl="threefry2x32", dtype="threefry2x32")
    with pytest.raises(ValueError, match="both `impl` and `dtype`"):
        random.wrap_key_data(random.PRNGKey(0), impl="threefry2x32", dtype="threefry2x32")
    wrapped = random.wrap_key_data(random.PRNGKey(4), dtype=k.dtype)
    assert wrapped.dtype == k.dtype


def test_unknown_and_unsupported_implementations():
    with pytest.raises(ValueError, match='unrecognized PRNG implementation "foo".*threefry4x32'):
        random.key(0, impl="foo")
    with pytest.raises(TypeError, match="unrecognized type"):
        random.key_dtype(3)
    for name in ("rbg", "unsafe_rbg", "philox2x32", "philox4x32", "threefry4x32"):
        with pytest.raises(ValueError, match="'threefry2x32' only"):
            random.key(0, impl=name)


def test_key_impl_and_key_dtype():
    assert random.key_impl(random.PRNGKey(0)) == "threefry2x32"
    assert random.key_impl(random.split(random.key(0), 3)) == "threefry2x32"
    dt = random.key_dtype()
    assert str(dt) == repr(dt) == dt.name == "key<fry>"
    assert random.key(1).dtype == dt and random.key_dtype("threefry2x32") == dt
    assert hash(dt) == hash(random.key(2).dtype)
    with pytest.raises(TypeError, match="shape to end with"):
        random.key_impl(jnp.zeros(3, jnp.uint32))


def test_clone_is_the_identity_outside_a_reuse_checker():
    legacy = random.PRNGKey(5)
    np.testing.assert_array_equal(random.clone(legacy), legacy)
    typed = random.key(5)
    assert random.uniform(random.clone(typed)) == random.uniform(typed)
    np.testing.assert_array_equal(corejax.jit(random.clone)(legacy), legacy)


def test_typed_key_array_methods():
    keys = random.split(random.key(0), (2, 3))
    data = np.asarray(random.key_data(keys))
    assert keys.T.shape == (3, 2)
    np.testing.assert_array_equal(random.key_data(keys.T), data.transpose(1, 0, 2))
    np.testing.assert_array_equal(random.key_data(keys.ravel()), data.reshape(6, 2))
    assert keys.flatten().shape == (6,)
    assert keys[:1].squeeze().shape == (3,) and keys[:1].squeeze(0).shape == (3,)
    np.testing.assert_array_equal(random.key_data(keys.swapaxes(0, 1)),
                                  data.transpose(1, 0, 2))
    np.testing.assert_array_equal(random.key_data(keys.transpose(1, 0)),
                                  data.transpose(1, 0, 2))
    np.testing.assert_array_equal(keys == keys, np.ones((2, 3), bool))
    np.testing.assert_array_equal(keys[0] != keys[1], np.ones(3, bool))
    assert bool(random.key(7) == random.wrap_key_data(random.PRNGKey(7)))
    with pytest.raises(ValueError, match="out of bounds"):
        keys.swapaxes(0, 2)
    with pytest.raises(TypeError):
        iter(random.key(0))


def test_split_of_typed_keys():
    k = random.key(9)
    ks = random.split(k, 4)
    assert isinstance(ks, random.PRNGKeyArray) and ks.shape == (4,)
    a, b = random.split(k)
    assert isinstance(a, random.PRNGKeyArray) and a.shape == ()
    assert random.split(k, (2, 0)).shape == (2, 0)
    np.testing.assert_array_equal(random.key_data(random.split(k, (2, 2))).reshape(4, 2),
                                  random.key_data(ks))
    with pytest.raises(ValueError, match=r"split accepts a single key.*\(4,\)"):
        random.split(ks)


# --- random_gamma_p ---------------------------------------------------------------------------------

def test_random_gamma_p_binds_typed_keys_and_key_data():
    a = jnp.asarray([0.5, 2.0, 5.0])
    keys = random.split(random.key(1), 3)
    by_typed = random.random_gamma_p.bind(keys, a, log_space=False)
    by_data = random.random_gamma_p.bind(random.key_data(keys), a, log_space=False)
    np.testing.assert_array_equal(by_typed, by_data)
    # One key per element: each sample is gamma of that element with that key.
    for i in range(3):
        np.testing.assert_array_equal(by_typed[i], random.random_gamma_p.bind(
            random.key_data(keys[i]), a[i:i + 1], log_space=False)[0])
    assert "random_gamma[log_space=False]" in str(
        corejax.make_jaxpr(lambda k, a: random.gamma(k, a))(KEY, a))


def test_random_gamma_p_abstract_eval_errors():
    with pytest.raises(TypeError, match="prefix"):
        random.random_gamma_p.bind(random.split(KEY, 2), jnp.ones(3), log_space=False)
    with pytest.raises(TypeError, match="floating"):
        random.random_gamma_p.bind(KEY, jnp.ones(3, jnp.int32), log_space=False)


@pytest.mark.parametrize("part", [False, True])
def test_gamma_eager_jit_and_vmap_agree_bit_for_bit(part):
    a = jnp.asarray([0.2, 0.9, 1.0, 3.5, 40.0])
    with partitionable(part):
        eager = random.gamma(KEY, a)
        np.testing.assert_array_equal(corejax.jit(random.gamma)(KEY, a), eager)
        keys = random.split(KEY, 3)
        batched = corejax.vmap(random.gamma, in_axes=(0, None))(keys, a)
        for i in range(3):
            np.testing.assert_array_equal(batched[i], random.gamma(keys[i], a))
        # An unbatched key with batched parameters: each element as its own call.
        rows = corejax.vmap(random.loggamma, in_axes=(None, 0))(KEY, jnp.stack([a, 2 * a]))
        np.testing.assert_array_equal(rows[1], random.loggamma(KEY, 2 * a))


def test_loggamma_is_the_log_of_gamma():
    a = jnp.asarray([0.05, 0.5, 1.0, 3.0, 20.0])
    np.testing.assert_allclose(np.exp(random.loggamma(KEY, a)), random.gamma(KEY, a),
                               rtol=2e-5)
    # Tiny shapes underflow gamma to 0 but stay finite in log space.
    tiny = random.loggamma(KEY, jnp.full(4, 1e-3))
    assert np.all(np.isfinite(tiny)) and np.all(tiny < -30)


def test_gamma_gradient_is_the_implicit_reparameterization():
    """d x / d a = -(dP/da) / (dP/dx) at the sample, P the regularized incomplete gamma
    function: checked with central differences of SciPy's gammainc."""
    a = np.array([0.3, 1.0, 2.5, 9.0])
    x = np.asarray(random.gamma(KEY, jnp.asarray(a, jnp.float32)), np.float64)
    grad = corejax.grad(lambda a: random.gamma(KEY, a).sum())(jnp.asarray(a, jnp.float32))
    h = 1e-6
    dp_da = (scipy.special.gammainc(a + h, x) - scipy.special.gammainc(a - h, x)) / (2 * h)
    dp_dx = np.exp((a - 1) * np.log(x) - x - scipy.special.gammaln(a))
    np.testing.assert_allclose(grad, -dp_da / dp_dx, rtol=1e-3)
    log_grad = corejax.grad(lambda a: random.loggamma(KEY, a).sum())(jnp.asarray(a, jnp.float32))
    np.testing.assert_allclose(log_grad, -dp_da / dp_dx / x, rtol=1e-3)


def test_gamma_gradient_has_mean_one():
    # E[x] = a, so E[dx/da] = 1 for the reparameterized sample.
    a = jnp.full((4000,), 1.7)
    g = corejax.grad(lambda a: random.gamma(random.PRNGKey(2), a).sum())(a)
    assert abs(float(jnp.mean(g)) - 1.0) < 0.05


def test_gradients_through_the_gamma_family_compose_with_jit_and_vmap():
    a = jnp.asarray([0.8, 2.0, 4.0])
    f = lambda a: random.beta(KEY, a, 2.0).sum()
    np.testing.assert_allclose(corejax.jit(corejax.grad(f))(a), corejax.grad(f)(a), rtol=1e-6)
    keys = random.split(KEY, 2)
    per_key = corejax.vmap(corejax.grad(lambda k, a: random.dirichlet(k, a)[0], argnums=1),
                           in_axes=(0, None))(keys, a)
    for i in range(2):
        np.testing.assert_allclose(per_key[i], corejax.grad(
            lambda a: random.dirichlet(keys[i], a)[0])(a), rtol=1e-6)


def test_second_derivatives_of_gamma_samples_differentiate_random_gamma_grad():
    """random_gamma_grad is differentiable in `a` (JAX's is too). The sample itself jumps where
    the rejection sampler accepts another proposal, so the check is the chain rule: the second
    derivative of a sample x(a) is d/da rgg(a, x(a)) = rgg_a + rgg_x * rgg, with each partial
    derivative checked by central differences at a fixed x."""
    from corejax import lax
    a = jnp.asarray([0.7, 1.0, 3.5])
    x = random.gamma(KEY, a)
    g = corejax.grad(lambda a: random.gamma(KEY, a).sum())
    _, second = corejax.jvp(g, (a,), (jnp.ones(3),))
    rgg = lambda a, x: lax.random_gamma_grad(a, x)
    _, d_a = corejax.jvp(lambda a: rgg(a, x), (a,), (jnp.ones(3),))
    _, d_x = corejax.jvp(lambda x: rgg(a, x), (x,), (jnp.ones(3),))
    for d, (lo, hi) in ((d_a, (rgg(a - 1e-2, x), rgg(a + 1e-2, x))),
                        (d_x, (rgg(a, x - 1e-3 * x), rgg(a, x + 1e-3 * x)))):
        step = 1e-2 if d is d_a else 1e-3 * np.asarray(x)
        fd = (np.asarray(hi) - np.asarray(lo)) / (2 * step)
        np.testing.assert_allclose(np.asarray(d), fd, rtol=2e-2, atol=1e-3)
    np.testing.assert_allclose(np.asarray(second),
                               np.asarray(d_a) + np.asarray(d_x) * np.asarray(rgg(a, x)),
                               rtol=1e-4, atol=1e-5)


# --- errors as JAX raises them --------------------------------------------------------------------

@pytest.mark.parametrize("call, error, match", [
    (lambda: random.gamma(KEY, 1.0, dtype=jnp.int32), ValueError, "`gamma` must be a float"),
    (lambda: random.loggamma(KEY, 1.0, dtype=jnp.int32), ValueError, "`gamma` must be a float"),
    (lambda: random.gamma(KEY, jnp.ones(2), shape=(3,)), ValueError, "broadcast"),
    (lambda: random.beta(KEY, jnp.ones(2), jnp.ones(3)), ValueError, "broadcast"),
    (lambda: random.dirichlet(KEY, 1.0), ValueError, "alpha.ndim >= 1"),
    (lambda: random.dirichlet(KEY, jnp.ones((2, 3)), shape=(4,)), ValueError, "broadcast"),
    (lambda: random.poisson(KEY, 2.0, (3,), dtype=jnp.float32), ValueError, "integer"),
    (lambda: random.binomial(KEY, 5, 0.5, dtype=jnp.int32), ValueError, "float dtype"),
    (lambda: random.geometric(KEY, 0.5, dtype=jnp.float32), ValueError, "int dtype"),
    (lambda: random.multinomial(KEY, 10, [0.5, 0.5]), TypeError, "ndarray or scalar"),
    (lambda: random.multivariate_normal(KEY, jnp.zeros(3), jnp.eye(2)), ValueError,
     r"cov.shape == \(..., n, n\)"),
    (lambda: random.multivariate_normal(KEY, jnp.zeros(2), jnp.eye(2), method="qr"),
     ValueError, "method must be one of"),
    (lambda: random.multivariate_normal(KEY, 0.0, jnp.eye(2)), ValueError, "mean.ndim >= 1"),
    (lambda: random.pareto(KEY, jnp.ones(2, jnp.float32), dtype=jnp.float16),
     corejax.dtypes.TypePromotionError, "cannot safely cast"),
    (lambda: random.triangular(KEY, 0.0, 0.5, 1.0, dtype=jnp.int32), ValueError, "float"),
    (lambda: random.gumbel(KEY, (2,), mode="bad"), ValueError, "valid mode for gumbel"),
    (lambda: random.bernoulli(KEY, 0.5, mode="highest"), ValueError, "'high' or 'low'"),
    (lambda: random.choice(KEY, 5, 3), TypeError, "must be a sequence"),
    (lambda: random.choice(KEY, jnp.ones((2, 3)), (2,), axis=3), ValueError, "out of bounds"),
    (lambda: random.permutation(KEY, 4.0), TypeError, "integer or at least 1-dimensional"),
    (lambda: random.orthogonal(KEY, 2.5), TypeError, "float"),
    (lambda: random.ball(KEY, 2.5), TypeError, "float"),
    (lambda: random.lognormal(KEY, dtype=jnp.int32), ValueError, "float or complex"),
])
def test_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_shapes_must_be_concrete_under_jit():
    with pytest.raises(TypeError, match="static_argnums"):
        corejax.jit(lambda n: random.cauchy(KEY, (n,)))(3)
    with pytest.raises(corejax.ConcretizationTypeError):
        corejax.jit(lambda n: random.choice(KEY, n, (2,)))(jnp.asarray(5))


# --- edge cases -----------------------------------------------------------------------------------

def test_binomial_edge_values():
    n = jnp.asarray([0.0, 10.0, 10.0, np.inf, np.nan, -1.0, 10.0, 10.0])
    p = jnp.asarray([0.5, 0.0, 1.0, 0.3, 0.3, 0.3, np.nan, -0.1])
    out = np.asarray(random.binomial(KEY, n, p))
    np.testing.assert_array_equal(out[:4], [0.0, 0.0, 10.0, np.inf])
    assert np.all(np.isnan(out[4:]))


def test_poisson_edge_values():
    lam = jnp.asarray([0.0, 0.0, 1e-30, 10.0, 1e6])
    out = np.asarray(random.poisson(KEY, lam))
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out[:3], 0)
    assert abs(out[4] - 1e6) < 6 * 1e3


def test_choice_and_permutation_details():
    assert random.choice(KEY, jnp.ones((2, 3)), (0,), axis=1).shape == (0,)
    np.testing.assert_array_equal(random.choice(KEY, jnp.asarray(5), (4,)),
                                  random.choice(KEY, 5, (4,)))
    # mode only matters for weighted sampling without replacement
    np.testing.assert_array_equal(random.choice(KEY, 5, (2,), mode="bad"),
                                  random.choice(KEY, 5, (2,)))
    np.testing.assert_array_equal(random.permutation(KEY, jnp.asarray(6)),
                                  random.permutation(KEY, 6))


def test_double_sided_maxwell_appends_the_parameter_shape():
    # As in JAX: `shape` is extended by the broadcast shape of loc and scale.
    assert random.double_sided_maxwell(KEY, jnp.zeros(2), 1.0, (3,)).shape == (3, 2)
    assert random.double_sided_maxwell(KEY, jnp.zeros(2), 1.0).shape == (2, 2)


def test_gumbel_highest_reaches_further_into_the_tail():
    low = random.gumbel(KEY, (20000,))
    highest = random.gumbel(KEY, (20000,), mode="highest")
    assert np.all(np.isfinite(highest))
    assert abs(float(jnp.mean(highest)) - np.euler_gamma) < 0.03
    assert float(jnp.max(low)) < 17.0     # the low mode's resolution caps it near 16.6


def test_clz_matches_numpy():
    from corejax.random._basic import _clz32
    x = np.array([0, 1, 2, 3, 255, 256, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 12345678], np.uint32)
    expected = [32 - int(v).bit_length() for v in x]
    np.testing.assert_array_equal(_clz32(jnp.asarray(x)), expected)


# JAX 0.10.2's samples for PRNGKey(0) (complex leaves are not in the conformance suite:
# corejax.numpy cannot take the real / imaginary parts of complex arrays yet).
JAX_COMPLEX = {
    False: ([0.09823952615261078 + 0.8046015501022339j, 0.3601542115211487 - 0.8633453845977783j,
             -0.3755875825881958 - 0.41827934980392456j],
            [0.9803626537322998 + 0.06702674180269241j, 0.7641262412071228 - 0.14398404955863953j]),
    True: ([0.7099452614784241 - 1.7270770072937012j, -0.6408771872520447 - 1.4394434690475464j,
            -0.5290376543998718 + 0.14534172415733337j],
           [0.9266380667686462 - 1.0840765237808228j, 0.5458167791366577 - 0.4784497320652008j]),
}


@pytest.mark.parametrize("part", [False, True])
def test_complex_normal_and_lognormal_match_jax(part):
    key = random.PRNGKey(0)
    normal, lognormal = JAX_COMPLEX[part]
    with partitionable(part):
        z = random.normal(key, (3,), jnp.complex64)
        w = random.lognormal(key, 0.5, (2,), jnp.complex64)
        assert z.dtype == w.dtype == jnp.complex64
        np.testing.assert_allclose(np.asarray(z), normal, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(np.asarray(w), lognormal, rtol=1e-6, atol=1e-7)
        np.testing.assert_array_equal(corejax.jit(lambda k: random.normal(
            k, (3,), jnp.complex64))(key), z)
    big = np.asarray(random.normal(KEY, (20000,), jnp.complex64))
    assert abs(np.mean(np.abs(big) ** 2) - 1.0) < 0.03


def test_orthogonal_matrices():
    q = np.asarray(random.orthogonal(KEY, 4, (3,)), np.float64)
    np.testing.assert_allclose(q @ q.transpose(0, 2, 1), np.broadcast_to(np.eye(4), (3, 4, 4)),
                               atol=1e-5)
    wide = np.asarray(random.orthogonal(KEY, 2, m=5), np.float64)
    assert wide.shape == (2, 5)
    np.testing.assert_allclose(wide @ wide.T, np.eye(2), atol=1e-5)
    tall = np.asarray(random.orthogonal(KEY, 5, m=2), np.float64)
    np.testing.assert_allclose(tall.T @ tall, np.eye(2), atol=1e-5)


def test_ball_points_are_inside():
    pts = np.asarray(random.ball(KEY, 3, 1.5, (2000,)), np.float64)
    assert pts.shape == (2000, 3)
    norms = np.sum(np.abs(pts) ** 1.5, -1) ** (1 / 1.5)
    assert np.all(norms <= 1.0) and norms.max() > 0.95


# --- moments ----------------------------------------------------------------------------------------

N = 20000


def _moments(x):
    x = np.asarray(x, np.float64)
    return x.mean(), x.var()


@pytest.mark.parametrize("name, draw, mean, var", [
    ("gamma", lambda k: random.gamma(k, 2.5, (N,)), 2.5, 2.5),
    ("gamma_small", lambda k: random.gamma(k, 0.3, (N,)), 0.3, 0.3),
    ("beta", lambda k: random.beta(k, 2.0, 5.0, (N,)), 2 / 7, 10 / (49 * 8)),
    ("t", lambda k: random.t(k, 6.0, (N,)), 0.0, 1.5),
    ("chisquare", lambda k: random.chisquare(k, 4.0, (N,)), 4.0, 8.0),
    ("f", lambda k: random.f(k, 5.0, 10.0, (N,)), 10 / 8, 2 * 100 * 13 / (5 * 64 * 6)),
    ("poisson", lambda k: random.poisson(k, 4.0, (N,)), 4.0, 4.0),
    ("poisson_large", lambda k: random.poisson(k, 50.0, (N,)), 50.0, 50.0),
    ("binomial", lambda k: random.binomial(k, 8.0, 0.3, (N,)), 2.4, 1.68),
    ("binomial_btrs", lambda k: random.binomial(k, 200.0, 0.7, (N,)), 140.0, 42.0),
    ("geometric", lambda k: random.geometric(k, 0.25, (N,)), 4.0, 12.0),
    ("rademacher", lambda k: random.rademacher(k, (N,)), 0.0, 1.0),
    ("lognormal", lambda k: random.lognormal(k, 0.5, (N,)), math.exp(0.125),
     (math.exp(0.25) - 1) * math.exp(0.25)),
    ("pareto", lambda k: random.pareto(k, 5.0, (N,)), 1.25, 5 / (16 * 3)),
    ("rayleigh", lambda k: random.rayleigh(k, 2.0, (N,)), 2 * math.sqrt(math.pi / 2),
     (4 - math.pi) / 2 * 4),
    ("wald", lambda k: random.wald(k, 1.5, (N,)), 1.5, 1.5 ** 3),
    ("weibull_min", lambda k: random.weibull_min(k, 2.0, 1.5, (N,)),
     2 * math.gamma(1 + 1 / 1.5), 4 * (math.gamma(1 + 2 / 1.5) - math.gamma(1 + 1 / 1.5) ** 2)),
    ("maxwell", lambda k: random.maxwell(k, (N,)), 2 * math.sqrt(2 / math.pi),
     (3 * math.pi - 8) / math.pi),
    ("double_sided_maxwell", lambda k: random.double_sided_maxwell(k, 1.0, 2.0, (N,)), 1.0,
     12.0),
    ("triangular", lambda k: random.triangular(k, 0.0, 0.25, 1.0, (N,)), 1.25 / 3,
     (1 + 0.0625 - 0.25) / 18),
    ("generalized_normal", lambda k: random.generalized_normal(k, 2.0, (N,)), 0.0, 0.5),
])
def test_moments(name, draw, mean, var):
    m, v = _moments(draw(random.PRNGKey(7)))
    assert abs(m - mean) < 5 * math.sqrt(var / N) + 1e-3, (m, mean)
    assert abs(v / var - 1) < 0.1, (v, var)


def test_cauchy_quartiles():
    x = np.asarray(random.cauchy(random.PRNGKey(7), (N,)))
    np.testing.assert_allclose(np.percentile(x, [25, 50, 75]), [-1, 0, 1], atol=0.05)


def test_dirichlet_and_multinomial_moments():
    alpha = np.array([0.5, 1.0, 2.5])
    x = np.asarray(random.dirichlet(random.PRNGKey(3), jnp.asarray(alpha), (N,)), np.float64)
    np.testing.assert_allclose(x.sum(-1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(x.mean(0), alpha / alpha.sum(), atol=0.01)
    p = np.array([0.1, 0.2, 0.3, 0.4], np.float32)
    counts = np.asarray(random.multinomial(random.PRNGKey(3), 40.0, jnp.asarray(p),
                                           shape=(4000, 4)))
    np.testing.assert_array_equal(counts.sum(-1), 40.0)
    np.testing.assert_allclose(counts.mean(0), 40 * p, atol=0.15)


def test_multivariate_normal_covariance():
    cov = np.array([[2.0, 0.5, 0.0], [0.5, 1.0, 0.2], [0.0, 0.2, 0.5]], np.float32)
    mean = np.array([1.0, -1.0, 0.5], np.float32)
    for method in ("cholesky", "eigh", "svd"):
        x = np.asarray(random.multivariate_normal(random.PRNGKey(4), mean, cov, (N,),
                                                  method=method), np.float64)
        np.testing.assert_allclose(x.mean(0), mean, atol=0.05)
        np.testing.assert_allclose(np.cov(x.T), cov, atol=0.06)


def test_gamma_matches_the_gamma_distribution():
    x = np.asarray(random.gamma(random.PRNGKey(11), 0.7, (N,)), np.float64)
    assert scipy.stats.kstest(x, scipy.stats.gamma(0.7).cdf).pvalue > 1e-3
