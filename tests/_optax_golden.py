"""Reading tests/golden/optax_losses.json (written by tests/golden/gen_optax_losses.py, Optax
0.2.8 on JAX 0.10.2) for the optim loss / schedule / tree / projection tests."""
import json
import os

import numpy as np

import corejax as jax
import corejax.numpy as jnp

GOLDEN = json.load(open(os.path.join(os.path.dirname(__file__), "golden",
                                     "optax_losses.json")))
FUNCTIONS = {"sum": jnp.sum, "mean": jnp.mean, "logsumexp": jax.nn.logsumexp}


def to_numpy(x):
    """A golden array as NumPy (its dtype kept); other values as they are."""
    if isinstance(x, dict) and "array" in x:
        a = np.asarray(x["array"])
        if "imag" in x:
            a = a + 1j * np.asarray(x["imag"])
        return a.astype(x["dtype"])
    if isinstance(x, dict) and "tuple" in x:
        return tuple(to_numpy(v) for v in x["tuple"])
    if isinstance(x, dict) and "fn" in x:
        return FUNCTIONS[x["fn"]]
    if isinstance(x, dict):
        return {k: to_numpy(v) for k, v in x.items()}
    if isinstance(x, list):
        return [to_numpy(v) for v in x]
    return x


def dec(x):
    """A golden value with its arrays as corejax arrays."""
    return jax.tree_util.tree_map(lambda v: jnp.asarray(v) if isinstance(v, np.ndarray) else v,
                                  to_numpy(x))


def assert_close(got, want, rtol=2e-6, atol=2e-6, what=""):
    """Leafwise comparison of a computed pytree with a golden one (dtypes must agree)."""
    want = to_numpy(want)
    got_leaves = jax.tree_util.tree_leaves(got)
    want_leaves = jax.tree_util.tree_leaves(want)
    assert len(got_leaves) == len(want_leaves), (what, got, want)
    for g, w in zip(got_leaves, want_leaves):
        g = np.asarray(g)
        w = np.asarray(w)
        assert g.shape == w.shape, (what, g.shape, w.shape)
        assert g.dtype == w.dtype, (what, g.dtype, w.dtype)
        if w.dtype == bool or np.issubdtype(w.dtype, np.integer):
            np.testing.assert_array_equal(g, w, err_msg=what)
        else:
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=what)
