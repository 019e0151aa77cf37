"""Special functions: lax's special-function primitives (corejax/lax/special.py and
_special_host.py) and jax.scipy.special.

Values are checked against SciPy in float64 (an independent implementation; JAX's own values
are checked by the conformance suite, tests/conformance/cases_special.py), derivative rules
against finite differences, compiled kernels against eager evaluation, vmap against a loop,
and errors against JAX's types and messages.
"""
import math

import numpy as np
import pytest
import scipy.special as sc

import corejax as jax
import corejax.numpy as jnp
import corejax.scipy.special as jsp
from corejax import lax
from corejax.lax import special as lax_special

RNG = np.random.default_rng(1234)


@pytest.fixture
def x64():
    prev = jax.config.enable_x64
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", prev)


def _rel(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert np.array_equal(np.isnan(got), np.isnan(want)), (got, want)
    ok = np.isfinite(want)
    assert np.array_equal(got[~ok & ~np.isnan(want)], want[~ok & ~np.isnan(want)])
    return np.max(np.abs(got[ok] - want[ok]) / np.maximum(np.abs(want[ok]), 1e-300),
                  initial=0.0)


# --- values against SciPy, float64 -------------------------------------------------------------

def _away_from_poles(x):
    return x[np.abs(x - np.round(x)) > 1e-3]


UNARY_REFERENCES = [
    ("digamma", lax.digamma, sc.psi,
     _away_from_poles(np.concatenate([RNG.uniform(-20, 20, 300), RNG.uniform(2, 1e6, 100)])),
     1e-13),
    ("bessel_i0e", lax.bessel_i0e, sc.i0e, RNG.uniform(-60, 60, 400), 1e-14),
    ("bessel_i1e", lax.bessel_i1e, sc.i1e, RNG.uniform(-60, 60, 400), 1e-14),
    ("erfcx", lax_special.erfcx, sc.erfcx, RNG.uniform(-5, 40, 400), 1e-14),
    ("ndtri", lax_special.ndtri, sc.ndtri,
     np.concatenate([RNG.uniform(0, 1, 300), 10.0 ** RNG.uniform(-300, -1, 100)]), 1e-14),
]


@pytest.mark.parametrize("name,fn,ref,x,tol", UNARY_REFERENCES, ids=lambda v: v
                         if isinstance(v, str) else "")
def test_unary_values_match_scipy_in_float64(x64, name, fn, ref, x, tol):
    assert _rel(fn(jnp.asarray(x)), ref(x)) < tol


def test_binary_values_match_scipy_in_float64(x64):
    a = 10.0 ** RNG.uniform(-3, 3, 400)
    x = 10.0 ** RNG.uniform(-3, 3.3, 400)
    assert _rel(lax.igamma(jnp.asarray(a), jnp.asarray(x)), sc.gammainc(a, x)) < 1e-11
    assert _rel(lax.igammac(jnp.asarray(a), jnp.asarray(x)), sc.gammaincc(a, x)) < 1e-11
    s, q = RNG.uniform(1.05, 30, 400), 10.0 ** RNG.uniform(-2, 3, 400)
    assert _rel(lax.zeta(jnp.asarray(s), jnp.asarray(q)), sc.zeta(s, q)) < 1e-14
    n, y = RNG.integers(1, 8, 300).astype(float), _away_from_poles(RNG.uniform(-8, 30, 300))
    n = n[:y.size]
    assert _rel(lax.polygamma(jnp.asarray(n), jnp.asarray(y)),
                sc.polygamma(n.astype(int), y)) < 1e-12
    p, r = 10.0 ** RNG.uniform(-2, 2, 400), 10.0 ** RNG.uniform(-2, 2, 400)
    t = RNG.uniform(0, 1, 400)
    assert _rel(lax.betainc(jnp.asarray(p), jnp.asarray(r), jnp.asarray(t)),
                sc.betainc(p, r, t)) < 1e-11
    # (absolute error ~1e-11 where log B crosses zero: log Gamma(a) ~ 1 cancels)
    np.testing.assert_allclose(jsp.betaln(jnp.asarray(p * 100), jnp.asarray(r)),
                               sc.betaln(p * 100, r), rtol=1e-12, atol=1e-10)


def test_small_a_upper_incomplete_gamma_has_no_cancellation(x64):
    # Q(a, x) for tiny a is ~ a E1(x): 1 - P(a, x) would be all rounding error
    a = np.array([1e-30, 1e-10, 1e-3, 0.3])
    x = np.array([1.0, 0.5, 1e-3, 0.9])
    assert _rel(lax.igammac(jnp.asarray(a), jnp.asarray(x)), sc.gammaincc(a, x)) < 1e-12


# --- special values (JAX's conventions) ---------------------------------------------------------

def test_special_values_follow_jax():
    f32 = np.float32
    nan, inf = np.nan, np.inf
    np.testing.assert_array_equal(
        lax.digamma(jnp.asarray([0.0, -0.0, -1.0, -2.0, inf, -inf, nan], f32)),
        [nan, nan, nan, nan, inf, nan, nan])
    np.testing.assert_array_equal(
        lax.igamma(jnp.asarray([0.0, 1.0, -1.0, 1.0, 0.0, 1.0, inf], f32),
                   jnp.asarray([0.0, 0.0, 1.0, -1.0, 2.0, inf, inf], f32)),
        [nan, 0.0, nan, nan, 1.0, 1.0, 1.0])
    np.testing.assert_array_equal(
        lax.igammac(jnp.asarray([1.0, 0.0, 1.0], f32), jnp.asarray([0.0, 2.0, inf], f32)),
        [1.0, 0.0, 0.0])
    # zeta: s == 1 is a pole for every q; a pole in q is +inf for even s, nan for odd s
    np.testing.assert_array_equal(
        lax.zeta(jnp.asarray([1.0, 1.0, 2.0, 3.0, 2.0, 0.5, 2.5], f32),
                 jnp.asarray([nan, 2.0, -1.0, -1.0, 0.0, 1.0, -2.5], f32)),
        [inf, inf, inf, nan, inf, nan, nan])
    np.testing.assert_array_equal(
        lax.polygamma(jnp.asarray([1.0, 2.0, 0.5, -1.0], f32),
                      jnp.asarray([0.0, 0.0, 1.0, 1.0], f32)),
        [inf, nan, nan, nan])
    np.testing.assert_array_equal(
        lax.betainc(jnp.asarray([0.0, 1.0, 2.0, inf, 0.0, 2.0], f32),
                    jnp.asarray([1.0, 0.0, inf, 1.0, 0.0, 2.0], f32),
                    jnp.asarray([0.5, 0.5, 0.5, 1.0, 0.5, 1.5], f32)),
        [1.0, 0.0, 1.0, 1.0, nan, nan])
    np.testing.assert_array_equal(lax.bessel_i1e(jnp.asarray([-inf, -0.0], f32)), [-0.0, -0.0])
    assert np.signbit(np.asarray(lax.bessel_i1e(jnp.asarray([-0.0], f32)))[0])
    np.testing.assert_array_equal(
        lax.random_gamma_grad(jnp.asarray([1.0, 0.0, inf, 1.0], f32),
                              jnp.asarray([0.0, 1.0, 0.0, inf], f32)), [0.0, nan, 0.0, nan])
    np.testing.assert_array_equal(lax.lgamma(jnp.asarray([0.0, -2.0, -inf], f32)),
                                  [inf, inf, inf])


# --- derivatives ---------------------------------------------------------------------------------

def _fd(f, x, h=1e-6):
    return (f(x + h) - f(x - h)) / (2 * h)


def test_igamma_derivatives_match_finite_differences(x64):
    a = np.array([0.3, 1.5, 4.0, 30.0, 2.0])
    x = np.array([0.2, 0.7, 6.0, 25.0, 1e-3])
    da, dx = jax.vmap(jax.grad(lax.igamma, argnums=(0, 1)))(jnp.asarray(a), jnp.asarray(x))
    np.testing.assert_allclose(da, _fd(lambda t: sc.gammainc(t, x), a, 1e-7), rtol=1e-6)
    np.testing.assert_allclose(dx, _fd(lambda t: sc.gammainc(a, t), x, 1e-8), rtol=1e-6)
    dca, dcx = jax.vmap(jax.grad(lax.igammac, argnums=(0, 1)))(jnp.asarray(a), jnp.asarray(x))
    np.testing.assert_allclose(dca, -np.asarray(da), rtol=1e-12)
    np.testing.assert_allclose(dcx, -np.asarray(dx), rtol=1e-12)


def test_random_gamma_grad_is_the_implicit_derivative_of_the_quantile(x64):
    # x(a) = P^-1(a, u) for fixed u: dx/da = random_gamma_grad(a, x(a))
    a = np.array([0.3, 1.5, 4.0, 30.0, 200.0])
    u = np.array([0.2, 0.5, 0.9, 0.01, 0.6])
    x = sc.gammaincinv(a, u)
    want = _fd(lambda t: sc.gammaincinv(t, u), a, 1e-7 * a)
    np.testing.assert_allclose(lax.random_gamma_grad(jnp.asarray(a), jnp.asarray(x)), want,
                               rtol=2e-6)
    # its jvp in x against finite differences of the kernel itself
    got = jax.vmap(jax.grad(lax.random_gamma_grad, argnums=1))(jnp.asarray(a), jnp.asarray(x))
    h = 1e-6 * x
    fd = (np.asarray(lax.random_gamma_grad(jnp.asarray(a), jnp.asarray(x + h)))
          - np.asarray(lax.random_gamma_grad(jnp.asarray(a), jnp.asarray(x - h)))) / (2 * h)
    np.testing.assert_allclose(got, fd, rtol=1e-5)
    # and in a (forward and reverse mode: hessians through random.gamma)
    got = jax.vmap(jax.grad(lax.random_gamma_grad))(jnp.asarray(a), jnp.asarray(x))
    h = 1e-6 * a
    fd = (np.asarray(lax.random_gamma_grad(jnp.asarray(a + h), jnp.asarray(x)))
          - np.asarray(lax.random_gamma_grad(jnp.asarray(a - h), jnp.asarray(x)))) / (2 * h)
    np.testing.assert_allclose(got, fd, rtol=1e-6)


def test_unary_derivatives_match_finite_differences(x64):
    x = np.array([-3.7, -0.6, 0.4, 1.3, 5.5, 12.0])
    for fn, ref in [(lax.digamma, sc.psi), (lax.lgamma, sc.gammaln), (lax.bessel_i0e, sc.i0e),
                    (lax.bessel_i1e, sc.i1e), (lax_special.erfcx, sc.erfcx),
                    (jsp.dawsn, sc.dawsn), (lambda v: jsp.fresnel(v)[0],
                                            lambda v: sc.fresnel(v)[0]),
                    (lambda v: jsp.fresnel(v)[1], lambda v: sc.fresnel(v)[1]),
                    (lambda v: jsp.sici(v)[0], lambda v: sc.sici(v)[0]), (jsp.expi, sc.expi)]:
        got = jax.vmap(jax.grad(fn))(jnp.asarray(x))
        np.testing.assert_allclose(got, _fd(ref, x), rtol=1e-6, atol=1e-9)
    p = np.array([1e-5, 0.1, 0.5, 0.8, 0.999])
    np.testing.assert_allclose(jax.vmap(jax.grad(lax_special.ndtri))(jnp.asarray(p)),
                               _fd(sc.ndtri, p, 1e-9), rtol=1e-5)
    y = np.array([0.1, 0.7, 2.0, 9.0])
    for fn, ref in [(lambda v: jsp.sici(v)[1], lambda v: sc.sici(v)[1]), (jsp.exp1, sc.exp1),
                    (jsp.spence, sc.spence)]:
        np.testing.assert_allclose(jax.vmap(jax.grad(fn))(jnp.asarray(y)), _fd(ref, y),
                                   rtol=1e-6)


def test_derivatives_at_zero_follow_the_limits():
    assert float(jax.grad(lax.bessel_i1e)(0.0)) == 0.5
    assert float(jax.grad(lax.bessel_i0e)(0.0)) == 0.0
    assert float(jax.grad(lambda v: jsp.sici(v)[0])(0.0)) == 1.0
    assert float(jax.grad(jsp.spence)(1.0)) == -1.0


def test_binary_derivatives_match_finite_differences(x64):
    s, q = np.array([1.5, 2.0, 3.3, 7.0]), np.array([0.4, 1.0, 2.5, 11.0])
    ds, dq = jax.vmap(jax.grad(jsp.zeta, argnums=(0, 1)))(jnp.asarray(s), jnp.asarray(q))
    np.testing.assert_allclose(ds, _fd(lambda t: sc.zeta(t, q), s), rtol=1e-6)
    np.testing.assert_allclose(dq, _fd(lambda t: sc.zeta(s, t), q), rtol=1e-6)
    a, b, x = np.array([0.5, 2.0, 7.0]), np.array([1.5, 0.7, 30.0]), np.array([0.3, 0.9, 0.2])
    dx = jax.vmap(jax.grad(lax.betainc, argnums=2))(*map(jnp.asarray, (a, b, x)))
    np.testing.assert_allclose(dx, _fd(lambda t: sc.betainc(a, b, t), x), rtol=1e-6)
    da, db = jax.vmap(jax.grad(jsp.betaln, argnums=(0, 1)))(jnp.asarray(a), jnp.asarray(b))
    np.testing.assert_allclose(da, _fd(lambda t: sc.betaln(t, b), a), rtol=1e-6)
    np.testing.assert_allclose(db, _fd(lambda t: sc.betaln(a, t), b), rtol=1e-6)
    h, k = np.array([0.3, 1.5, -2.0]), np.array([0.2, 0.7, 3.0])
    dh, dk = jax.vmap(jax.grad(jsp.owens_t, argnums=(0, 1)))(jnp.asarray(h), jnp.asarray(k))
    np.testing.assert_allclose(dh, _fd(lambda t: sc.owens_t(t, k), h), rtol=1e-6)
    np.testing.assert_allclose(dk, _fd(lambda t: sc.owens_t(h, t), k), rtol=1e-6, atol=1e-12)
    n, y = np.array([0.0, 1.0, 2.0, 5.0]), np.array([0.5, 1.0, 2.0, 0.3])
    dn = jax.vmap(jax.grad(jsp.expn, argnums=1))(jnp.asarray(n), jnp.asarray(y))
    np.testing.assert_allclose(dn, _fd(lambda t: sc.expn(n.astype(int), t), y), rtol=1e-6)
    c = np.array([0.5, 1.0, 2.5])
    d1 = jax.vmap(jax.grad(jsp.hyp1f1, argnums=2))(*map(jnp.asarray, (c, c + 1, x)))
    np.testing.assert_allclose(d1, _fd(lambda t: sc.hyp1f1(c, c + 1, t), x), rtol=1e-6)
    d2 = jax.vmap(jax.grad(jsp.hyp2f1, argnums=3))(*map(jnp.asarray, (c, c, c + 2, x)))
    np.testing.assert_allclose(d2, _fd(lambda t: sc.hyp2f1(c, c, c + 2, t), x), rtol=1e-6)
    z = np.array([0.3, 2.0, 7.5])
    for order in range(3):
        dj = jax.vmap(jax.grad(lambda v: jsp.bessel_jn(v, v=2)[order]))(jnp.asarray(z))
        np.testing.assert_allclose(dj, _fd(lambda t: sc.jv(order, t), z), rtol=1e-6)


def test_log_ndtr_is_accurate_and_differentiable_in_both_tails(x64):
    x = np.array([-1e3, -40.0, -8.0, -1.0, 0.0, 2.0, 9.0, 30.0])
    np.testing.assert_allclose(jsp.log_ndtr(jnp.asarray(x)), sc.log_ndtr(x), rtol=1e-12)
    got = jax.vmap(jax.grad(jsp.log_ndtr))(jnp.asarray(x))
    want = math.sqrt(2 / math.pi) / sc.erfcx(-x / math.sqrt(2))     # phi / Phi
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert np.all(np.isfinite(jax.vmap(jax.grad(jax.grad(jsp.log_ndtr)))(jnp.asarray(x))))


def test_second_derivatives():
    # d2/dx2 lgamma = polygamma(1, x); d2/dx2 digamma = polygamma(2, x)
    for x in (0.3, 2.5, 7.0):
        np.testing.assert_allclose(jax.grad(jax.grad(lax.lgamma))(x), sc.polygamma(1, x),
                                   rtol=1e-5)
        np.testing.assert_allclose(jax.grad(jax.grad(lax.digamma))(x), sc.polygamma(2, x),
                                   rtol=1e-5)


# --- compiled kernels, jit and vmap ---------------------------------------------------------------

PRIMITIVE_CALLS = [
    ("digamma", lax.digamma, 1, (-5.0, 5.0)), ("bessel_i0e", lax.bessel_i0e, 1, (-30, 30)),
    ("bessel_i1e", lax.bessel_i1e, 1, (-30, 30)), ("erfcx", lax_special.erfcx, 1, (-5, 30)),
    ("ndtri", lax_special.ndtri, 1, (0.0, 1.0)), ("igamma", lax.igamma, 2, (0.0, 8.0)),
    ("igammac", lax.igammac, 2, (0.0, 8.0)), ("igamma_grad_a", lax.igamma_grad_a, 2, (0, 8)),
    ("random_gamma_grad", lax.random_gamma_grad, 2, (0.0, 8.0)),
    ("random_gamma_grad_da", lax_special.random_gamma_grad_da, 2, (0.0, 8.0)),
    ("zeta", lax.zeta, 2, (1.0, 9.0)), ("betaln", jsp.betaln, 2, (0.0, 30.0)),
    ("betainc", lambda a, b, x: lax.betainc(a, b, x / 10), 3, (0.0, 10.0)),
]


@pytest.mark.parametrize("name,fn,arity,domain", PRIMITIVE_CALLS,
                         ids=[c[0] for c in PRIMITIVE_CALLS])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fused_kernel_agrees_with_eager_evaluation(name, fn, arity, domain, dtype, x64):
    args = [jnp.asarray(RNG.uniform(*domain, (3, 7)).astype(dtype)) for _ in range(arity)]
    fused = jax.jit(lambda *a: fn(*a) * 2 + 1)
    text = fused.lower(*args).as_text()
    # the kernel is inlined: the scalar float64 one, or fastmath's vectorizable float32 one
    assert "special_" in text or (dtype == np.float32 and f"{name}_f32(" in text)
    # the same algorithm; LLVM may vectorize the inlined copy's libm calls differently (an ulp
    # of log or lgamma, magnified by exp of a large exponent in igamma's prefactor)
    np.testing.assert_allclose(fused(*args), np.asarray(fn(*args)) * dtype(2) + dtype(1),
                               rtol=1e-12 if dtype == np.float64 else 3e-7, atol=1e-30)


@pytest.mark.parametrize("name,fn,arity,domain", PRIMITIVE_CALLS,
                         ids=[c[0] for c in PRIMITIVE_CALLS])
def test_vmap_equals_a_loop(name, fn, arity, domain):
    args = [jnp.asarray(RNG.uniform(*domain, (4, 3)).astype(np.float32)) for _ in range(arity)]
    batched = jax.vmap(fn, in_axes=(1,) + (0,) * (arity - 1))(
        jnp.asarray(np.asarray(args[0]).T), *args[1:])
    looped = np.stack([np.asarray(fn(*[a[i] for a in args])) for i in range(4)])
    np.testing.assert_array_equal(batched, looped)


def test_host_step_primitives_run_under_jit_and_vmap():
    x = jnp.asarray(RNG.uniform(0.1, 3.0, (2, 5)).astype(np.float32))
    for fn in (jsp.dawsn, jsp.expi, jsp.exp1, jsp.spence, lambda v: jsp.fresnel(v)[1],
               lambda v: jsp.sici(v)[0], lambda v: jsp.owens_t(v, 0.5),
               lambda v: jsp.hyp1f1(0.5, 1.5, v), lambda v: jsp.hyp2f1(0.5, 1.0, 2.0, v / 4),
               lambda v: jsp.expn(2, v), lambda v: jsp.bessel_jn(v, v=2)):
        eager = np.asarray(fn(x))
        np.testing.assert_array_equal(jax.jit(fn)(x), eager)
        np.testing.assert_array_equal(jax.vmap(fn)(x), eager if eager.shape[0] == 2 else
                                      np.moveaxis(eager, 1, 0))


def test_float16_is_computed_in_float64_and_rounded_once():
    x = np.array([0.3, 1.7, 4.2], np.float16)
    got = lax.digamma(jnp.asarray(x))
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, sc.psi(x.astype(np.float64)).astype(np.float16))
    np.testing.assert_array_equal(jax.jit(lax.digamma)(jnp.asarray(x)), got)


def test_cuda_lowering_declines_so_the_group_runs_on_the_host():
    from corejax.compiler.cuda_codegen import CudaScalarCtx
    from corejax.compiler import registry
    ctx = CudaScalarCtx()
    ctx.in_dtypes, ctx.out_dtype = [np.dtype(np.float32)], np.dtype(np.float32)
    with pytest.raises(NotImplementedError, match="digamma has no cuda device kernel"):
        registry.elementwise_lowerings[lax_special.digamma_p](ctx, "x")


# --- jax.scipy.special: dtypes, weak types, composition -----------------------------------------

@pytest.mark.parametrize("name,weak", [
    ("digamma", True), ("gamma", False), ("gammasgn", False), ("gammaln", True),
    ("loggamma", True), ("ndtr", False), ("ndtri", False), ("log_ndtr", False),
    ("erfcx", False), ("dawsn", False), ("entr", True), ("i0", True), ("i0e", True),
    ("i1", True), ("i1e", True), ("exp1", False), ("expi", False), ("spence", False),
    ("factorial", True)])
def test_unary_weak_types_follow_jax(name, weak):
    out = getattr(jsp, name)(0.5)
    assert out.dtype == np.float32 and out.weak_type is weak


@pytest.mark.parametrize("name,weak", [
    ("gammainc", True), ("gammaincc", True), ("beta", False), ("betaln", True),
    ("poch", False), ("kl_div", True), ("rel_entr", True), ("boxcox", True),
    ("boxcox1p", True), ("comb", True), ("expn", False), ("zeta", True), ("owens_t", False)])
def test_binary_weak_types_follow_jax(name, weak):
    out = getattr(jsp, name)(2.0, 0.5)
    assert out.dtype == np.float32 and out.weak_type is weak


def test_dtype_promotion():
    assert jsp.digamma(jnp.int32(2)).dtype == np.float32
    assert jsp.gammainc(jnp.float16(1.5), jnp.float16(0.5)).dtype == np.float16
    assert jsp.gammainc(2, jnp.float16(0.5)).dtype == np.float16
    assert jsp.owens_t(jnp.float16(1.5), jnp.float16(0.5)).dtype == np.float32
    assert jsp.polygamma(1, jnp.float16(0.5)).dtype == np.float16
    assert jsp.polygamma(jnp.int32(1), 0.5).weak_type
    assert jsp.bernoulli(4).dtype == np.float32
    np.testing.assert_allclose(jsp.bernoulli(6), [1, -0.5, 1 / 6, 0, -1 / 30, 0, 1 / 42],
                               rtol=1e-7)


def test_errors_follow_jax():
    with pytest.raises(TypeError, match="digamma does not accept dtype int32"):
        lax.digamma(jnp.int32(3))
    with pytest.raises(TypeError, match="igamma requires arguments to have the same dtypes"):
        lax.igamma(jnp.float32(1.0), jnp.float16(1.0))
    with pytest.raises(TypeError, match="incompatible shapes"):
        lax.igamma(jnp.ones(3), jnp.ones(2))
    with pytest.raises(ValueError, match="polygamma gradient with respect to m"):
        jax.grad(lax.polygamma)(1.0, 2.0)
    with pytest.raises(ValueError, match="Betainc gradient with respect to a and b"):
        jax.grad(lax.betainc)(1.0, 2.0, 0.5)
    with pytest.raises(NotImplementedError, match="igamma_grad_a"):
        jax.grad(lax.igamma_grad_a)(1.0, 2.0)
    with pytest.raises(ValueError, match="must be of integer type. Got dtype float32"):
        jsp.polygamma(1.0, 2.0)
    with pytest.raises(NotImplementedError, match="Riemann zeta function not implemented"):
        jsp.zeta(2.0)
    with pytest.raises(NotImplementedError, match="exact=True"):
        jsp.factorial(3, exact=True)
    with pytest.raises(TypeError, match="x.dtype=int32 is not supported"):
        jsp.ndtr(jnp.int32(1))
    with pytest.raises(TypeError, match="x.dtype=float16 is not supported"):
        jsp.ndtri(jnp.float16(0.5))
    with pytest.raises(ValueError, match="series_order must be non-negative"):
        jsp.log_ndtr(0.5, series_order=-1)
    with pytest.raises(ValueError, match="series_order must be <= 30"):
        jsp.log_ndtr(0.5, series_order=31)
    with pytest.raises(TypeError):
        jsp.multigammaln(2.5, jnp.ones(2))
    with pytest.raises(ValueError, match="expn gradient with respect to n"):
        jax.grad(jsp.expn)(1.0, 2.0)


def test_composites_against_scipy(x64):
    x = np.array([-2.5, -0.5, 0.3, 1.0, 2.5, 7.0])
    np.testing.assert_allclose(jsp.gamma(jnp.asarray(x)), sc.gamma(x), rtol=1e-13)
    np.testing.assert_array_equal(jsp.gammasgn(jnp.asarray(x)), sc.gammasgn(x))
    np.testing.assert_allclose(jsp.i0(jnp.asarray(x)), sc.i0(x), rtol=1e-13)
    np.testing.assert_allclose(jsp.i1(jnp.asarray(x)), sc.i1(x), rtol=1e-13)
    np.testing.assert_allclose(jsp.entr(jnp.asarray(x)), sc.entr(x), rtol=1e-13)
    np.testing.assert_allclose(jsp.factorial(jnp.asarray(x)), sc.factorial(x), rtol=1e-13)
    p, q = np.array([0.0, 0.5, 2.0, 3.0]), np.array([0.0, 0.5, 3.0, 0.2])
    np.testing.assert_allclose(jsp.kl_div(jnp.asarray(p), jnp.asarray(q)), sc.kl_div(p, q),
                               rtol=1e-13)
    np.testing.assert_allclose(jsp.rel_entr(jnp.asarray(p), jnp.asarray(q)),
                               sc.rel_entr(p, q), rtol=1e-13)
    np.testing.assert_allclose(jsp.boxcox(jnp.asarray(q + 1), jnp.asarray(p)),
                               sc.boxcox(q + 1, p), rtol=1e-13)
    np.testing.assert_allclose(jsp.boxcox1p(jnp.asarray(q), jnp.asarray(p)),
                               sc.boxcox1p(q, p), rtol=1e-13)
    np.testing.assert_allclose(jsp.poch(jnp.asarray(q + 1), jnp.asarray(p)),
                               sc.poch(q + 1, p), rtol=1e-12)
    n, k = np.array([5.0, 10.0, 3.5, 2.0]), np.array([2.0, 3.0, 1.5, 3.0])
    np.testing.assert_allclose(jsp.comb(jnp.asarray(n), jnp.asarray(k)), sc.comb(n, k),
                               rtol=1e-12)
    np.testing.assert_allclose(jsp.comb(jnp.asarray(n), jnp.asarray(k), repetition=True),
                               sc.comb(n, k, repetition=True), rtol=1e-12)
    np.testing.assert_allclose(jsp.multigammaln(jnp.asarray(4.5), 3), sc.multigammaln(4.5, 3),
                               rtol=1e-13)
    np.testing.assert_allclose(jsp.ndtr(jnp.asarray(x)), sc.ndtr(x), rtol=1e-13)
    np.testing.assert_allclose(jsp.beta(jnp.asarray(q + 1), jnp.asarray(p + 1)),
                               sc.beta(q + 1, p + 1), rtol=1e-13)


@pytest.mark.parametrize("split", [False, True], ids=["whole", "parts"])
@pytest.mark.parametrize("name", ["expi", "exp1", "sici", "dawsn", "fresnel"])
def test_host_special_functions_on_large_float32_arrays(name, split, monkeypatch):
    """On float32, Ei, E1, Si, Ci and Dawson's integral run corejax's compiled kernels
    (compiler/host_special.py) and Fresnel's integrals SciPy; a large array runs whole or in
    parts on the free cores (eager_kernels.call_split, call_host_split; `parts` forces the
    split, as if splitting had paid): eager, jit and the parts give SciPy's float64 value rounded to float32
    (to within half an ulp plus the kernels' 0.01), special values included."""
    from corejax.compiler import eager_kernels, eager_threads
    cuts = []       # the parts of each run: Python-driven (SciPy's) or claimed natively
    run_parts, run_native = eager_kernels.run_parts, eager_kernels.run_native

    def spy_parts(task, bounds):
        cuts.append(len(bounds) - 1)
        return run_parts(task, bounds)

    def spy_native(native, bounds, *rest):
        cuts.append(len(bounds) - 1)
        return run_native(native, bounds, *rest)

    monkeypatch.setattr(eager_kernels, "run_parts", spy_parts)
    monkeypatch.setattr(eager_kernels, "run_native", spy_native)
    if split:
        monkeypatch.setattr(eager_kernels, "_helpers", lambda: 1)
        monkeypatch.setattr(eager_kernels, "split_cores", lambda key, n: 2)
        monkeypatch.setattr(eager_threads, "WAKE_SECONDS", 0.0)    # (short jobs wake them too)
    n = 140_000                              # above the parts' minimum (2^16), twice
    x = np.concatenate([RNG.standard_normal(n - 9) * 20,
                        [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, 90.0, -100.0, 3e38]])
    x = x.astype(np.float32)
    f = getattr(jsp, name)
    eager = f(jnp.asarray(x))
    jitted = jax.jit(f)(jnp.asarray(x))
    assert cuts and min(cuts) > 1 if split else max(cuts, default=1) == 1, cuts
    conventions = {"expi": lambda v, x: np.where((x == 0) | np.isinf(x), np.nan, v),
                   "exp1": lambda v, x: np.where(np.isinf(x), np.nan, v),
                   "fresnel": lambda v, x: np.where(np.isinf(x), np.copysign(0.5, x), v)}
    with np.errstate(all="ignore"):
        want = getattr(sc, name)(x.astype(np.float64))
    for i, (e, j, w) in enumerate(zip(*(
            [v if isinstance(v, tuple) else (v,) for v in (eager, jitted, want)]))):
        e, j = np.asarray(e), np.asarray(j)
        assert e.dtype == np.float32 and np.array_equal(e.view(np.uint32), j.view(np.uint32))
        w = conventions.get(name, lambda v, x: v)(w, x)
        if name == "sici" and i == 1:
            w = np.where(x == -np.inf, np.nan, w)
        w32 = w.astype(np.float32)
        special = ~np.isfinite(w32) | (w32 == 0)
        assert np.array_equal(e[special], w32[special], equal_nan=True)
        ulp = np.spacing(np.abs(w32[~special])).astype(np.float64)
        assert np.max(np.abs(e[~special] - w[~special]) / ulp) <= 0.51
