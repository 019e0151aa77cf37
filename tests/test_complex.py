"""Complex differentiation against JAX's recorded results (tests/golden/complex.json, made by
tests/golden/gen_complex.py): grad of real-valued functions of complex inputs (JAX's convention),
holomorphic grad / jacfwd / jacrev / hessian, jvp / vjp with complex tangents and cotangents,
and the errors of non-holomorphic misuse. Plus the FFT transposes against finite differences of
the real-linear maps they transpose."""
import json
import os
import sys

import numpy as np
import pytest

import corejax as jax
import corejax.numpy as jnp
from corejax import lax

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "golden"))
import gen_complex  # noqa: E402

with open(os.path.join(HERE, "golden", "complex.json")) as _fh:
    GOLDEN = json.load(_fh)["cases"]


def test_golden_complex_derivatives():
    """Every recorded case, in one test (they share the few kernels they compile)."""
    names = {"jax": jax, "jnp": jnp, "lax": lax, "np": np}
    failures = []
    for name, body in gen_complex.CASES.items():
        expected = GOLDEN[name]
        got = gen_complex.run_case(body, names)
        if isinstance(expected, dict) or isinstance(got, dict):
            if got != expected:
                failures.append(f"{name}: corejax {got} != JAX {expected}")
            continue
        if len(got) != len(expected):
            failures.append(f"{name}: {len(got)} leaves != JAX's {len(expected)}")
            continue
        for i, (g, e) in enumerate(zip(got, expected)):
            if g[:2] != e[:2]:
                failures.append(f"{name} leaf {i}: {g[:2]} != JAX's {e[:2]}")
                continue
            gv = np.array(g[2]) + 1j * np.array(g[3])
            ev = np.array(e[2]) + 1j * np.array(e[3])
            scale = max(1.0, float(np.max(np.abs(ev)))) if ev.size else 1.0
            if not np.allclose(gv, ev, rtol=2e-5, atol=2e-5 * scale):
                failures.append(f"{name} leaf {i}: corejax {gv} != JAX {ev}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("kind,lengths,in_shape", [
    ("rfft", (6,), (2, 6)), ("rfft", (5,), (5,)), ("irfft", (6,), (2, 4)),
    ("irfft", (7,), (4,)), ("fft", (4,), (3, 4)), ("ifft", (2, 3), (2, 3)),
    ("irfft", (2, 4), (2, 3)), ("rfft", (3, 4), (3, 4))])
def test_fft_transpose_is_bilinear_adjoint(kind, lengths, in_shape):
    rng = np.random.default_rng(len(in_shape) * 10 + lengths[-1])
    out_shape = jax.eval_shape(lambda x: lax.fft(x, kind, lengths), jax.ShapeDtypeStruct(
        in_shape, np.float32 if kind == "rfft" else np.complex64)).shape
    real_in = kind == "rfft"
    x = rng.standard_normal(in_shape).astype(np.float32)
    if not real_in:
        x = (x + 1j * rng.standard_normal(in_shape)).astype(np.complex64)
    ct = rng.standard_normal(out_shape).astype(np.float32)
    if kind != "irfft":
        ct = (ct + 1j * rng.standard_normal(out_shape)).astype(np.complex64)
    f = lambda v: lax.fft(v, kind, lengths)  # noqa: E731

    # JAX's pairing for complex values is Re(sum(a * b)) on the (real, imag) components with
    # the imaginary part's sign flipped on one side: check it through real / imag split maps
    def split(v):
        out = f(v)
        return (jnp.real(out), jnp.imag(out)) if out.dtype.kind == "c" else out

    _, pullback = jax.vjp(split, jnp.asarray(x))
    cts = (np.real(ct).astype(np.float32), np.imag(ct).astype(np.float32)) \
        if np.iscomplexobj(ct) else ct
    (back,) = pullback(cts)
    out = split(jnp.asarray(x))
    lhs = sum(np.sum(np.asarray(a) * np.asarray(b)) for a, b in zip(
        cts if isinstance(cts, tuple) else (cts,), out if isinstance(out, tuple) else (out,)))
    back = np.asarray(back)
    # the cotangent of a complex input z = a + ib is d/da - i d/db
    rhs = np.sum(np.real(back) * np.real(x)) - np.sum(np.imag(back) * np.imag(x)) \
        if np.iscomplexobj(x) else np.sum(back * x)
    np.testing.assert_allclose(lhs, rhs, rtol=1e-4, atol=1e-3)


def test_fft_under_jit_vmap_and_numpy():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 4, 6)).astype(np.float32)
    c = (x + 1j * rng.standard_normal(x.shape)).astype(np.complex64)
    got = jax.jit(lambda v: jnp.fft.rfftn(v, axes=(0, 2)))(x)
    np.testing.assert_allclose(got, np.fft.rfftn(x, axes=(0, 2)), rtol=1e-5, atol=1e-4)
    got = jax.vmap(lambda v: jnp.fft.ifft2(v, norm="ortho"), in_axes=2)(c)
    want = np.fft.ifft2(np.moveaxis(c, 2, 0), norm="ortho")
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    got = jax.vmap(lambda v: lax.fft(v, "irfft", (6,)), in_axes=1)(c[..., :4])
    np.testing.assert_allclose(got, np.fft.irfft(np.moveaxis(c[..., :4], 1, 0), 6),
                               rtol=1e-5, atol=1e-5)
    assert jnp.fft.fft(x).dtype == np.complex64 and jnp.fft.irfft(c).dtype == np.float32


def test_real_valued_functions_keep_their_dtypes():
    z = jnp.asarray(np.array([1 + 2j, -3j], np.complex64))
    assert lax.abs(z).dtype == np.float32 and jnp.angle(z).dtype == np.float32
    assert lax.real(z).dtype == np.float32 and jnp.var(z).dtype == np.float32
    assert lax.conj(jnp.float32(1.0)).dtype == np.complex64
    with pytest.raises(TypeError, match="lt does not accept dtype complex64"):
        lax.lt(z, z)
    np.testing.assert_array_equal(jnp.less(z, z[::-1]), np.array([False, True]))


def test_rsf2csf_second_derivative_matches_finite_differences(x64):
    """JAX raises NotImplementedError for rsf2csf's second derivative; corejax's Hessian-vector
    product through it is held to central differences of its (JAX-checked) gradient."""
    from corejax.scipy.linalg import rsf2csf
    rng = np.random.default_rng(0)
    x, z, vx, vz = (rng.standard_normal((4, 4)) for _ in range(4))
    weights = np.cos(np.arange(16.0)).reshape(4, 4)

    def f(x, z):
        # a real Schur form: upper triangular but for two standardized 2x2 blocks
        one = jnp.eye(4)
        t = x * jnp.triu(jnp.ones((4, 4)))
        for top in (0, 2):
            t = t + (x[top, top] - x[top + 1, top + 1]) * jnp.outer(one[top + 1], one[top + 1])
            t = t - 0.5 * x[top, top + 1] * jnp.outer(one[top + 1], one[top])
        t_c, z_c = rsf2csf(t, z)
        return jnp.sum(jnp.real(t_c) * weights) + jnp.sum(jnp.imag(z_c) ** 2) + \
            jnp.sum(jnp.abs(t_c) ** 2 * weights)

    grad = jax.grad(f, argnums=(0, 1))
    _, hvp = jax.jvp(grad, (jnp.asarray(x), jnp.asarray(z)), (jnp.asarray(vx), jnp.asarray(vz)))
    eps = 1e-5
    plus, minus = grad(x + eps * vx, z + eps * vz), grad(x - eps * vx, z - eps * vz)
    for h, p, m in zip(hvp, plus, minus):
        fd = (np.asarray(p) - np.asarray(m)) / (2 * eps)
        np.testing.assert_allclose(np.asarray(h), fd, rtol=1e-5, atol=1e-6 * np.abs(fd).max())
