"""jax.checkpoint against JAX (golden_checkpoint.json, made by gen_checkpoint.py): what the
backward pass keeps under each policy, and the derivatives through checkpointed functions."""
import contextlib
import io
import json
import os
import sys

import numpy as np
import pytest

import corejax
import corejax.numpy as jnp
from corejax import ad_checkpoint, lax

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import checkpoint_programs  # noqa: E402

with open(os.path.join(HERE, "golden_checkpoint.json")) as _fh:
    GOLDEN = json.load(_fh)["results"]
PROGRAMS = checkpoint_programs.build(corejax, jnp, lax, ad_checkpoint)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_saved_residuals_follow_the_policy(name):
    if name in checkpoint_programs.RESIDUALS_DIFFER | checkpoint_programs.NOT_POLICY_DETERMINED:
        pytest.skip("residuals not comparable with JAX's (see checkpoint_programs.py)")
    fn, W, x = PROGRAMS[name]
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        ad_checkpoint.print_saved_residuals(fn, W, x)
    assert checkpoint_programs.normalize_residuals(buf.getvalue()) == GOLDEN[name]["residuals"]
    # and the vjp really keeps that many arrays
    _, f_vjp = corejax.vjp(fn, W, x)
    assert len(corejax.tree_util.tree_leaves(f_vjp)) == len(GOLDEN[name]["residuals"])


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_derivatives_match_jax(name):
    fn, W, x = PROGRAMS[name]
    got = checkpoint_programs.derivatives(corejax, fn, W, x)
    for key, expected in GOLDEN[name]["derivatives"].items():
        leaves = corejax.tree_util.tree_leaves(got[key])
        assert len(leaves) == len(expected), key
        for leaf, (value, dtype, shape) in zip(leaves, expected):
            assert np.asarray(leaf).dtype.name == dtype and list(np.shape(leaf)) == shape, key
            np.testing.assert_allclose(np.asarray(leaf), np.asarray(value, dtype), rtol=2e-5,
                                       atol=2e-6, err_msg=f"{name} {key}")


def test_except_these_names_excludes_the_names():
    # corejax follows the documentation of save_anything_except_these_names (JAX 0.10.2's
    # policy saves everything): the named value is recomputed, everything else saved
    fn, W, x = PROGRAMS["g_except_z"]
    lines = [desc for _, desc in ad_checkpoint.saved_residuals(fn, W, x)]
    assert not any("named 'z'" in d for d in lines)
    assert sum(d.startswith("output of cos") for d in lines) == 2
    assert any(d.startswith("output of sin") for d in lines)  # z = name(sin(y)) from sin's


def test_checkpoint_in_jaxpr_and_eager_call():
    f = corejax.checkpoint(lambda x: jnp.sin(x) * 2)
    assert float(f(1.0)) == pytest.approx(2 * np.sin(1.0), rel=1e-6)
    text = str(corejax.make_jaxpr(f)(1.0))
    assert "checkpoint[" in text and "differentiated=False" in text
    text = str(corejax.make_jaxpr(corejax.grad(f))(1.0))
    assert "differentiated=True" in text


def test_static_argnums_out_of_range():
    f = corejax.checkpoint(lambda x, n: x * n, static_argnums=(2,))
    with pytest.raises(ValueError, match="static_argnums"):
        corejax.grad(f)(1.0, 2)


def test_checkpoint_name_is_identity_under_transformations():
    f = lambda x: ad_checkpoint.checkpoint_name(x * 2.0, "a") ** 2  # noqa: E731
    assert float(corejax.grad(f)(3.0)) == pytest.approx(24.0)
    assert corejax.vmap(f)(jnp.arange(3.0)).tolist() == [0.0, 4.0, 16.0]
    assert float(corejax.jit(f)(1.5)) == pytest.approx(9.0)
