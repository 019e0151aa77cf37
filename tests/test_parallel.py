"""Collectives over named vmap axes where corejax goes beyond what JAX's vmap supports (JAX's
own results for everything else are in tests/conformance/golden_line_programs.json)."""
import numpy as np
import pytest

import corejax as jax
import corejax.numpy as jnp
from corejax import lax

X = jnp.arange(12.0).reshape(3, 4)


def _vmap(f):
    return jax.vmap(f, axis_name="i")


def test_partial_ppermute_gives_zeros_to_members_nobody_sends_to():
    out = _vmap(lambda v: lax.ppermute(v, "i", [(0, 2)]))(X)
    np.testing.assert_array_equal(np.asarray(out), [[0] * 4, [0] * 4, [0, 1, 2, 3]])
    # its transpose sends cotangents back along the inverted pairs
    g = jax.grad(lambda z: (_vmap(lambda v: lax.ppermute(v, "i", [(0, 1), (1, 2)]) * v)(z)
                            ).sum())(X)
    x = np.arange(12.0).reshape(3, 4)
    expected = np.zeros_like(x)
    expected[1] += x[0]          # member 1 received x[0] and multiplied it by its own x[1]
    expected[0] += x[1]
    expected[2] += x[1]
    expected[1] += x[2]
    np.testing.assert_allclose(np.asarray(g), expected)


def test_pmax_gradient_under_vmap_goes_to_the_maximum():
    g = jax.grad(lambda z: _vmap(lambda v: lax.pmax(v, "i"))(z).sum())(X)
    np.testing.assert_array_equal(np.asarray(g), [[0] * 4, [0] * 4, [3] * 4])


def test_collective_errors():
    with pytest.raises(NameError, match="unbound axis name: i"):
        lax.psum(1.0, "i")
    with pytest.raises(ValueError, match="unique"):
        _vmap(lambda v: lax.ppermute(v, "i", [(0, 1), (1, 1)]))(X)
    with pytest.raises(ValueError, match="permutation"):
        _vmap(lambda v: lax.pshuffle(v, "i", [0, 0, 1]))(X)
    with pytest.raises(NotImplementedError, match="axis_index_groups"):
        _vmap(lambda v: lax.psum(v, "i", axis_index_groups=[[0, 1], [2]]))(X)
