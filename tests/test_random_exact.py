"""random.uniform and the uniform initializers give JAX's bits exactly for the same key
(golden data: tests/golden/gen_random_exact.py). XLA fuses uniform's scale-and-shift into one
fused multiply-add; lax's internal fma reproduces it, and its one rounding is checked here
against exact rational arithmetic."""
import contextlib
import os
from fractions import Fraction

import numpy as np
import pytest

import corejax
from corejax import random
from corejax.config import config
from corejax.lax.elementwise import _fma
from corejax.nn import initializers

GOLDEN = np.load(os.path.join(os.path.dirname(__file__), "golden", "random_exact.npz"))


def _ours(name):
    kind, seed, *bounds = name.split("/")
    key = random.PRNGKey(int(seed))
    if kind == "uniform":
        lo, hi = map(float, bounds)
        return random.uniform(key, (513,), minval=lo, maxval=hi)
    if kind == "uniform64":
        with config_x64(True):
            return np.asarray(random.uniform(key, (257,), "float64", -2.5, 7.25))
    if kind == "variance_scaling":
        return initializers.variance_scaling(1.7, "fan_avg", "uniform")(key, (3, 24, 10))
    return getattr(initializers, kind)()(key, (37, 29))


@pytest.mark.parametrize("name", sorted(GOLDEN.files))
def test_bit_identical_to_jax(name):
    got, expected = np.asarray(_ours(name)), GOLDEN[name]
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got.view(f"u{got.itemsize}"),
                                  expected.view(f"u{expected.itemsize}"))


def _correctly_rounded(a, b, c, dt):
    """a*b + c rounded once to dt (round to nearest, ties to even), from exact rationals."""
    exact = Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))
    guess = dt(float(exact))   # within an ulp of the answer; its neighbours settle it
    candidates = [guess, np.nextafter(guess, dt(np.inf)), np.nextafter(guess, dt(-np.inf))]
    uint = np.dtype(f"u{np.dtype(dt).itemsize}")
    return min(candidates, key=lambda v: (abs(Fraction(float(v)) - exact),
                                          int(np.asarray(v).view(uint)) & 1))


@contextlib.contextmanager
def config_x64(on):
    saved = config.enable_x64
    config.update("enable_x64", on)
    try:
        yield
    finally:
        config.update("enable_x64", saved)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("compiled", [False, True])
def test_fma_rounds_once(dt, compiled):
    rng = np.random.default_rng(7)
    n = 400
    a, b = rng.standard_normal((2, n)).astype(dt)
    # c near -a*b cancels most bits (where two roundings differ most), and tiny scales reach
    # float32's subnormal results.
    c = (-(a.astype(np.float64) * b) * (1 + rng.uniform(-1e-5, 1e-5, n))).astype(dt)
    tiny = dt(2.0 ** -75) if dt == np.float32 else dt(2.0 ** -540)
    a = np.concatenate([a, a * tiny]).astype(dt)
    b = np.concatenate([b, b * tiny]).astype(dt)
    c = np.concatenate([c, (c * tiny * tiny)]).astype(dt)
    with config_x64(dt == np.float64):
        fn = corejax.jit(_fma) if compiled else _fma
        got = np.asarray(fn(a, b, c))
    expected = np.array([_correctly_rounded(*t, dt) for t in zip(a, b, c)], dt)
    np.testing.assert_array_equal(got, expected)
    assert (a * b + c != expected).any()          # the cases do tell one rounding from two


def test_fma_derivatives_and_vmap():
    a, b, c = (np.float32(v) for v in (1.5, -2.0, 0.25))
    grads = corejax.grad(lambda *t: _fma(*t), argnums=(0, 1, 2))(a, b, c)
    assert [float(g) for g in grads] == [-2.0, 1.5, 1.0]
    xs = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(corejax.vmap(_fma, (0, None, 0))(xs, np.float32(3), xs),
                                  xs * 3 + xs)


def test_fma_special_values():
    x = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 3.4e38], np.float32)
    a, b, c = (g.ravel() for g in np.meshgrid(x, x, x))
    with np.errstate(all="ignore"):
        unfused = (a.astype(np.float64) * b + c).astype(np.float32)   # exact product here
    for fn in (_fma, corejax.jit(_fma)):
        got = np.asarray(fn(a, b, c))
        np.testing.assert_array_equal(got, unfused)   # NaN positions, inf and zero signs alike
