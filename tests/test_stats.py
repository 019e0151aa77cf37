"""jax.scipy.stats: every distribution function against SciPy's (float64, an independent
implementation; JAX's own values are in the conformance suite), tails, supports, derivatives
against finite differences, jit / vmap, summary statistics and gaussian_kde (including its
sampling, checked statistically)."""
import math

import numpy as np
import pytest
import scipy.stats as ss

import corejax as jax
import corejax.numpy as jnp
import corejax.scipy.stats as st

RNG = np.random.default_rng(7)


@pytest.fixture
def x64():
    prev = jax.config.enable_x64
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", prev)


def _check(got, want, rtol=1e-10, atol=1e-300):
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=rtol, atol=atol)


X = RNG.normal(size=20) * 2
P = RNG.uniform(0.01, 0.99, 20)
POS = RNG.uniform(0.1, 5.0, 20)

# (corejax module, scipy distribution, extra shape parameters, x sample, functions)
CONTINUOUS = [
    (st.norm, ss.norm, (), X, ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf"]),
    (st.expon, ss.expon, (), X, ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"]),
    (st.gamma, ss.gamma, (2.5,), POS, ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]),
    (st.chi2, ss.chi2, (3.0,), POS, ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]),
    (st.beta, ss.beta, (2.0, 3.5), P, ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]),
    (st.t, ss.t, (4.5,), X, ["logpdf", "pdf"]),
    (st.cauchy, ss.cauchy, (), X, ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf",
                                   "isf"]),
    (st.laplace, ss.laplace, (), X, ["logpdf", "pdf", "cdf"]),
    (st.logistic, ss.logistic, (), X, ["logpdf", "pdf", "cdf", "sf", "ppf", "isf"]),
    (st.uniform, ss.uniform, (), P * 1.4 - 0.2, ["logpdf", "pdf", "cdf", "ppf"]),
    (st.pareto, ss.pareto, (2.5,), POS + 0.5, ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf",
                                                "ppf"]),
    (st.gumbel_r, ss.gumbel_r, (), X, ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"]),
    (st.gumbel_l, ss.gumbel_l, (), X, ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"]),
    (st.truncnorm, ss.truncnorm, (-0.5, 2.0), X, ["logpdf", "pdf", "cdf", "logcdf", "sf",
                                                  "logsf"]),
]


@pytest.mark.parametrize("mod,ref,shape,x,fns", CONTINUOUS,
                         ids=[c[1].name for c in CONTINUOUS])
def test_continuous_distributions_match_scipy(x64, mod, ref, shape, x, fns):
    loc, scale = 0.3, 1.7
    for fn in fns:
        arg = P if fn in ("ppf", "isf") else x
        got = getattr(mod, fn)(jnp.asarray(arg), *shape, loc, scale)
        want = getattr(ref, fn)(arg, *shape, loc=loc, scale=scale)
        _check(got, want, rtol=1e-9, atol=1e-14)
        # defaults: loc 0, scale 1
        got = getattr(mod, fn)(jnp.asarray(arg), *shape)
        _check(got, getattr(ref, fn)(arg, *shape), rtol=1e-9, atol=1e-14)


def test_shape_only_distributions_match_scipy(x64):
    _check(st.gennorm.logpdf(jnp.asarray(X), 1.5), ss.gennorm.logpdf(X, 1.5))
    _check(st.gennorm.cdf(jnp.asarray(X), 1.5), ss.gennorm.cdf(X, 1.5), rtol=1e-9)
    angles = RNG.uniform(-math.pi, math.pi, 20)
    _check(st.vonmises.logpdf(jnp.asarray(angles), 2.5), ss.vonmises.logpdf(angles, 2.5))
    _check(st.vonmises.logpdf(jnp.asarray(angles), 800.0), ss.vonmises.logpdf(angles, 800.0),
           rtol=1e-8)
    wrapped = angles + math.pi
    _check(st.wrapcauchy.logpdf(jnp.asarray(wrapped), 0.4),
           ss.wrapcauchy.logpdf(wrapped, 0.4))


DISCRETE = [
    (st.bernoulli, ss.bernoulli, (0.3,)), (st.binom, ss.binom, (7.0, 0.35)),
    (st.nbinom, ss.nbinom, (3.0, 0.4)), (st.geom, ss.geom, (0.25,)),
    (st.poisson, ss.poisson, (2.7,)), (st.betabinom, ss.betabinom, (6.0, 1.5, 2.5)),
]


@pytest.mark.parametrize("mod,ref,params", DISCRETE, ids=[d[1].name for d in DISCRETE])
def test_discrete_distributions_match_scipy(x64, mod, ref, params):
    k = np.arange(-2.0, 10.0)
    for fn in ("logpmf", "pmf"):
        _check(getattr(mod, fn)(jnp.asarray(k), *params), getattr(ref, fn)(k, *params),
               rtol=1e-9)
        _check(getattr(mod, fn)(jnp.asarray(k), *params, 1.0),
               getattr(ref, fn)(k, *params, loc=1.0), rtol=1e-9)


def test_discrete_cdfs_and_quantiles(x64):
    k = np.array([-1.0, 0.0, 0.5, 1.0, 2.5, 7.0])
    _check(st.poisson.cdf(jnp.asarray(k), 2.7), ss.poisson.cdf(k, 2.7), rtol=1e-9)
    _check(st.poisson.cdf(jnp.asarray(k), 2.7, 1.0), ss.poisson.cdf(k, 2.7, loc=1.0),
           rtol=1e-9)
    _check(st.bernoulli.cdf(jnp.asarray(k), 0.3), ss.bernoulli.cdf(k, 0.3))
    q = np.array([0.2, 0.7, 0.71, 1.0])
    _check(st.bernoulli.ppf(jnp.asarray(q), 0.3), ss.bernoulli.ppf(q, 0.3))
    assert float(st.bernoulli.ppf(0.0, 0.3)) == 0.0          # JAX's (SciPy says -1)
    mu = np.array([0.0, 0.5, 3.0, 30.0, 150.0, 199.0, 201.0])
    # JAX's algorithm, followed here: truncated sums (35 terms below rate 10, 250 below 100),
    # two terms of the asymptotic series above 100; good to about 5e-7 relative
    _check(st.poisson.entropy(jnp.asarray(mu)), ss.poisson.entropy(mu), rtol=1e-6)
    # (SciPy's own value is off by 4e-4 at 1e4: against the sum itself)
    k = np.arange(30000.0)
    log_p = k * math.log(1e4) - 1e4 - np.array([math.lgamma(v + 1) for v in k])
    _check(st.poisson.entropy(1e4), -np.sum(np.exp(log_p) * log_p), rtol=1e-9)


def test_multivariate_distributions_match_scipy(x64):
    alpha = np.array([1.5, 2.0, 0.7])
    x = RNG.dirichlet(alpha, 5).T                               # (3, 5) points on the simplex
    _check(st.dirichlet.logpdf(jnp.asarray(x), jnp.asarray(alpha)),
           ss.dirichlet.logpdf(x, alpha))
    _check(st.dirichlet.pdf(jnp.asarray(x[:2]), jnp.asarray(alpha)), ss.dirichlet.pdf(x, alpha))
    counts = np.array([[2, 0, 3], [1, 1, 3]])
    p = np.array([0.2, 0.3, 0.5])
    _check(st.multinomial.logpmf(jnp.asarray(counts[0]), 5, jnp.asarray(p)),
           ss.multinomial.logpmf(counts[0], 5, p))
    c = RNG.normal(size=(3, 3))
    cov = c @ c.T + np.eye(3)
    mean = RNG.normal(size=3)
    pts = RNG.normal(size=(4, 3))
    _check(st.multivariate_normal.logpdf(jnp.asarray(pts), jnp.asarray(mean), jnp.asarray(cov)),
           ss.multivariate_normal.logpdf(pts, mean, cov))
    _check(st.multivariate_normal.pdf(jnp.asarray(pts), jnp.asarray(mean), 2.0),
           ss.multivariate_normal.pdf(pts, mean, 2.0 * np.eye(3)))
    # a batch of covariances against a batch of points
    covs = np.stack([cov, 2 * cov])
    got = st.multivariate_normal.logpdf(jnp.asarray(pts[:2]), jnp.asarray(mean),
                                        jnp.asarray(covs))
    _check(got, [ss.multivariate_normal.logpdf(pts[i], mean, covs[i]) for i in range(2)])


def test_supports_and_tails(x64):
    assert float(st.expon.logpdf(-0.1)) == -np.inf
    assert float(st.beta.logpdf(1.2, 2.0, 3.0)) == -np.inf
    assert float(st.pareto.logpdf(0.9, 2.0)) == -np.inf
    assert float(st.uniform.logpdf(1.5)) == -np.inf
    assert float(st.wrapcauchy.logpdf(7.0, 0.5)) == -np.inf
    assert np.isnan(float(st.wrapcauchy.logpdf(1.0, 1.5)))
    assert np.isnan(float(st.vonmises.logpdf(1.0, 0.0)))
    assert float(st.poisson.logpmf(1.5, 2.0)) == -np.inf
    assert float(st.geom.logpmf(0.0, 0.3)) == -np.inf
    assert float(st.dirichlet.logpdf(jnp.asarray([0.2, 0.3, 0.6]), jnp.ones(3))) == -np.inf
    assert float(st.multinomial.logpmf(jnp.asarray([1, 2, 3]), 5, jnp.asarray([.2, .3, .5]))) \
        == -np.inf
    # far tails keep their precision (no cancellation, no underflow)
    _check(st.norm.logcdf(-40.0), ss.norm.logcdf(-40.0), rtol=1e-12)
    _check(st.norm.logsf(40.0), ss.norm.logsf(40.0), rtol=1e-12)
    _check(st.norm.ppf(1e-300), ss.norm.ppf(1e-300), rtol=1e-12)
    x = np.array([10.0, 11.0, 12.0])
    _check(st.truncnorm.logcdf(jnp.asarray(x), 9.0, 15.0), ss.truncnorm.logcdf(x, 9.0, 15.0),
           rtol=1e-6)
    _check(st.truncnorm.logpdf(jnp.asarray(-x), -15.0, -9.0),
           ss.truncnorm.logpdf(-x, -15.0, -9.0), rtol=1e-9)


def test_errors_follow_jax():
    with pytest.raises(ValueError, match="`alpha` must be one-dimensional"):
        st.dirichlet.logpdf(jnp.ones(2) / 2, jnp.ones((2, 2)))
    with pytest.raises(ValueError, match="one entry fewer"):
        st.dirichlet.logpdf(jnp.ones(4) / 4, jnp.ones(2))
    with pytest.raises(ValueError, match="x and n must be of integer type"):
        st.multinomial.logpmf(jnp.ones(3), 3.0, jnp.ones(3) / 3)
    with pytest.raises(NotImplementedError, match="allow_singular"):
        st.multivariate_normal.logpdf(jnp.ones(2), jnp.zeros(2), jnp.eye(2), allow_singular=True)
    with pytest.raises(ValueError, match="incompatible shapes"):
        st.multivariate_normal.logpdf(jnp.ones(2), jnp.zeros(2), jnp.ones(2))
    with pytest.raises(TypeError, match="x.dtype=float16 is not supported"):
        st.norm.cdf(jnp.float16(0.5))
    with pytest.raises(NotImplementedError, match="nan_policy` of omit"):
        st.mode(jnp.ones(3), nan_policy="omit")
    with pytest.raises(ValueError, match="Illegal nan_policy"):
        st.sem(jnp.ones(3), nan_policy="x")
    with pytest.raises(ValueError, match="unknown method 'foo'"):
        st.rankdata(jnp.ones(3), method="foo")
    with pytest.raises(TypeError, match="sem requires ndarray or scalar arguments"):
        st.sem([1.0, 2.0])


# --- derivatives, jit, vmap ---------------------------------------------------------------------

def _fd(f, x, h=1e-6):
    return (f(x + h) - f(x - h)) / (2 * h)


@pytest.mark.parametrize("fn,ref", [
    (lambda x: st.gamma.logcdf(2.5, x), lambda x: ss.gamma.logcdf(2.5, x)),
    (lambda x: st.beta.cdf(0.3, x, 2.0), None),
    (lambda x: st.t.logpdf(0.7, x), lambda x: ss.t.logpdf(0.7, x)),
    (lambda x: st.truncnorm.logpdf(0.2, x - 2.5, 2.0),
     lambda x: ss.truncnorm.logpdf(0.2, x - 2.5, 2.0)),
    (lambda x: st.norm.logcdf(x, 0.5, 2.0), lambda x: ss.norm.logcdf(x, 0.5, 2.0)),
    (lambda x: st.poisson.logpmf(3.0, x), lambda x: ss.poisson.logpmf(3, x)),
    (lambda x: st.vonmises.logpdf(0.4, x), lambda x: ss.vonmises.logpdf(0.4, x)),
])
def test_parameter_derivatives_match_finite_differences(x64, fn, ref):
    x = 1.3
    if ref is None:        # beta.cdf in a: betainc has no derivative in a, as in JAX
        with pytest.raises(ValueError, match="Betainc gradient"):
            jax.grad(fn)(x)
        return
    np.testing.assert_allclose(float(jax.grad(fn)(x)), _fd(ref, x), rtol=1e-6)


def test_jit_and_vmap_agree_with_eager():
    x = jnp.asarray(RNG.normal(size=(3, 4)).astype(np.float32))
    scale = jnp.asarray(RNG.uniform(0.5, 2, 4).astype(np.float32))
    for fn in (st.norm.logcdf, st.cauchy.cdf, st.logistic.logpdf, st.gumbel_r.logsf):
        eager = fn(x, 0.1, scale)
        np.testing.assert_allclose(jax.jit(fn)(x, 0.1, scale), eager, rtol=2e-6, atol=1e-6)
        np.testing.assert_allclose(jax.vmap(fn, in_axes=(0, None, None))(x, 0.1, scale), eager,
                                   rtol=2e-6, atol=1e-6)


def test_weak_types_and_dtypes():
    assert st.norm.logpdf(0.5).weak_type
    assert not st.norm.cdf(0.5).weak_type          # ndtr's result is strongly typed
    assert st.poisson.logpmf(2, 1.5).dtype == np.float32
    assert st.multivariate_normal.logpdf(0.5, 0.0, 2.0).weak_type


# --- summary statistics ---------------------------------------------------------------------------

def test_mode_rankdata_sem_match_scipy():
    a = RNG.integers(0, 4, (7, 5)).astype(np.float32)
    got = st.mode(jnp.asarray(a))
    want = ss.mode(a, axis=0)
    np.testing.assert_array_equal(got.mode, want.mode)
    np.testing.assert_array_equal(got.count, want.count)
    got = st.mode(jnp.asarray(a), axis=1, keepdims=True)
    want = ss.mode(a, axis=1, keepdims=True)
    np.testing.assert_array_equal(got.mode, want.mode)
    np.testing.assert_array_equal(got.count, want.count)
    for method in ("average", "min", "max", "dense", "ordinal"):
        np.testing.assert_array_equal(st.rankdata(jnp.asarray(a), method=method),
                                      ss.rankdata(a, method=method))
        np.testing.assert_array_equal(st.rankdata(jnp.asarray(a), method=method, axis=1),
                                      ss.rankdata(a, method=method, axis=1))
    np.testing.assert_allclose(st.sem(jnp.asarray(a)), ss.sem(a), rtol=1e-6)
    np.testing.assert_allclose(st.sem(jnp.asarray(a), axis=None, ddof=0),
                               ss.sem(a, axis=None, ddof=0), rtol=1e-6)
    b = a.copy()
    b[2, 1] = np.nan
    np.testing.assert_allclose(st.sem(jnp.asarray(b), nan_policy="omit"),
                               ss.sem(b, nan_policy="omit"), rtol=1e-6)
    assert np.isnan(np.asarray(st.rankdata(jnp.asarray(b), axis=0))[:, 1]).all()


def test_mode_and_rankdata_under_jit():
    a = jnp.asarray(RNG.integers(0, 3, (6, 4)).astype(np.int32))
    out = jax.jit(st.mode)(a)
    np.testing.assert_array_equal(out.mode, st.mode(a).mode)
    np.testing.assert_array_equal(jax.jit(st.rankdata)(a), st.rankdata(a))


# --- gaussian_kde -----------------------------------------------------------------------------------

def test_gaussian_kde_matches_scipy(x64):
    data = RNG.normal(size=(2, 30))
    weights = RNG.uniform(0.5, 2.0, 30)
    points = RNG.normal(size=(2, 7))
    for kwargs in ({}, {"bw_method": "silverman"}, {"bw_method": 0.3},
                   {"weights": weights}):
        ours = st.gaussian_kde(jnp.asarray(data), **{
            k: jnp.asarray(v) if k == "weights" else v for k, v in kwargs.items()})
        ref = ss.gaussian_kde(data, **kwargs)
        _check(ours.covariance, ref.covariance, rtol=1e-12)
        _check(ours.evaluate(jnp.asarray(points)), ref.evaluate(points), rtol=1e-10)
        _check(ours.logpdf(jnp.asarray(points)), ref.logpdf(points), rtol=1e-10)
        _check(ours.integrate_gaussian(jnp.zeros(2), jnp.eye(2)),
               ref.integrate_gaussian(np.zeros(2), np.eye(2)), rtol=1e-10)
    one_d = RNG.normal(size=40)
    ours, ref = st.gaussian_kde(jnp.asarray(one_d)), ss.gaussian_kde(one_d)
    _check(ours.integrate_box_1d(-0.5, 1.0), ref.integrate_box_1d(-0.5, 1.0), rtol=1e-10)
    other = RNG.normal(size=25) + 0.5
    _check(ours.integrate_kde(st.gaussian_kde(jnp.asarray(other))),
           ref.integrate_kde(ss.gaussian_kde(other)), rtol=1e-10)
    assert ours.d == 1 and ours.n == 40


def test_gaussian_kde_is_a_pytree_and_samples_its_density():
    data = jnp.asarray(RNG.normal(size=200).astype(np.float32) * 0.5 + 1.0)
    kde = st.gaussian_kde(data)
    np.testing.assert_allclose(jax.jit(lambda k, x: k(x))(kde, jnp.asarray([0.5, 1.0])),
                               kde(jnp.asarray([0.5, 1.0])), rtol=1e-5)
    draws = np.asarray(kde.resample(jax.random.PRNGKey(3), (4000,)))
    assert draws.shape == (1, 4000)
    # mean of the mixture = weighted data mean; variance = data variance + kernel variance
    np.testing.assert_allclose(draws.mean(), float(jnp.mean(data)), atol=0.05)
    want_var = float(jnp.var(data)) + float(kde.covariance[0, 0])
    np.testing.assert_allclose(draws.var(), want_var, rtol=0.1)
    with pytest.raises(NotImplementedError, match="bandwidth"):
        kde.set_bandwidth(0.5)
    with pytest.raises(ValueError, match="multiple elements"):
        st.gaussian_kde(jnp.ones(1))
