"""sort, sort_key_val, top_k, jnp.sort/argsort/median against NumPy; derivatives; vmap; jit."""
import numpy as np
import pytest

import corejax as jax
import corejax.numpy as jnp
from corejax import lax

R = np.random.default_rng(0)


@pytest.mark.parametrize("axis", [0, 1, -1, None])
def test_sort_and_argsort_match_numpy(axis):
    x = R.integers(0, 4, size=(5, 6)).astype(np.float32)  # many ties: checks stability
    np.testing.assert_array_equal(np.asarray(jnp.sort(x, axis=axis)), np.sort(x, axis=axis))
    np.testing.assert_array_equal(np.asarray(jnp.argsort(x, axis=axis)),
                                  np.argsort(x, axis=axis, kind="stable"))


def test_descending_and_integers():
    x = np.array([3, -2**31, 7, 7, 0], np.int32)
    np.testing.assert_array_equal(np.asarray(jnp.sort(x, descending=True)), np.sort(x)[::-1])
    np.testing.assert_array_equal(np.asarray(jnp.argsort(x, descending=True)), [2, 3, 0, 4, 1])


def test_sort_key_val_multi_key_and_top_k():
    keys = np.array([2, 1, 2, 1], np.int32)
    vals = np.array([10.0, 20.0, 30.0, 40.0], np.float32)
    k, v = lax.sort_key_val(keys, vals)
    np.testing.assert_array_equal(np.asarray(v), [20.0, 40.0, 10.0, 30.0])
    second = np.array([5, 9, 1, 3], np.int32)
    out = lax.sort((keys, second, vals), num_keys=2)
    np.testing.assert_array_equal(np.asarray(out[2]), [40.0, 20.0, 30.0, 10.0])
    values, idx = lax.top_k(jnp.array([[1.0, 4.0, 4.0, 2.0]]), 3)
    np.testing.assert_array_equal(np.asarray(values), [[4.0, 4.0, 2.0]])
    np.testing.assert_array_equal(np.asarray(idx), [[1, 2, 3]])
    with pytest.raises(ValueError, match="top_k"):
        lax.top_k(jnp.ones(3), 4)


def test_median():
    x = R.normal(size=(4, 5)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(jnp.median(x, axis=1)), np.median(x, axis=1), rtol=1e-6)
    np.testing.assert_allclose(float(jnp.median(x)), np.median(x), rtol=1e-6)


def test_sort_derivatives(x64):
    x = jnp.asarray(R.normal(size=(3, 4)))
    t = jnp.asarray(R.normal(size=(3, 4)))
    f = lambda x: jnp.sort(x, axis=1) * jnp.arange(4.0)
    _, tout = jax.jvp(f, (x,), (t,))
    numeric = (np.asarray(f(x + 1e-6 * t)) - np.asarray(f(x - 1e-6 * t))) / 2e-6
    np.testing.assert_allclose(np.asarray(tout), numeric, rtol=1e-6, atol=1e-8)
    ct = jnp.asarray(R.normal(size=(3, 4)))
    _, f_vjp = jax.vjp(f, x)
    (g,) = f_vjp(ct)
    np.testing.assert_allclose(float(jnp.sum(tout * ct)), float(jnp.sum(g * t)), rtol=1e-10)
    top = jax.grad(lambda x: jnp.sum(lax.top_k(x, 2)[0]))(jnp.array([0.5, 3.0, 1.0]))
    np.testing.assert_array_equal(np.asarray(top), [0.0, 1.0, 1.0])


def test_sort_vmap_and_jit():
    xs = R.normal(size=(3, 5)).astype(np.float32)
    np.testing.assert_array_equal(np.asarray(jax.vmap(jnp.sort)(xs)), np.sort(xs, axis=1))
    np.testing.assert_array_equal(np.asarray(jax.vmap(jnp.sort, in_axes=1)(xs)),
                                  np.sort(xs, axis=0).T)
    np.testing.assert_array_equal(np.asarray(jax.jit(jnp.argsort)(xs[0])),
                                  np.argsort(xs[0], kind="stable"))
