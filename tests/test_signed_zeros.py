"""Max and min, reduced, windowed and elementwise, order -0 below +0 and propagate NaN as JAX does
(XLA's IEEE maximum / minimum), eagerly, jitted and under vmap: golden values recorded from
JAX by tests/golden/gen_signed_zeros.py (sign bits compared, not only values)."""
import json
import os
import sys

import numpy as np
import pytest

import corejax as jax
import corejax.numpy as jnp

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "golden"))
from gen_signed_zeros import CASES, make  # noqa: E402

with open(os.path.join(HERE, "golden", "signed_zeros.json")) as _f:
    GOLDEN = json.load(_f)["cases"]


def _fn(name, axis):
    return make(jax, jnp, name, axis)


def _same(got, want_reprs, where):
    got = np.asarray(got, np.float32).ravel()
    want = np.array([float(v) for v in want_reprs], np.float32)
    assert got.shape == want.shape, where
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=where)
    ok = ~np.isnan(want)
    np.testing.assert_array_equal(got[ok], want[ok], err_msg=where)
    np.testing.assert_array_equal(np.signbit(got[ok]), np.signbit(want[ok]),
                                  err_msg=f"{where}: sign of zero")


@pytest.mark.parametrize("key", sorted(CASES))
def test_signed_zeros_and_nans_as_jax(key):
    name, rows, axis = CASES[key]
    x = np.array(rows, np.float32)
    f = _fn(name, axis)
    _same(f(x), GOLDEN[key]["eager"], f"{key} eager")
    _same(jax.jit(f)(x), GOLDEN[key]["jit"], f"{key} jit")
    # vmapped over a leading copy axis: the same values in each copy
    batched = jax.vmap(f)(np.stack([x, x]))
    for b in np.asarray(batched):
        _same(b, GOLDEN[key]["jit"], f"{key} vmap")


def test_big_max_and_min_reductions_keep_the_zero_order(rng):
    """Long rows (a vectorized loop in several lanes) and columns of zeros of both signs."""
    x = rng.choice(np.array([-0.0, 0.0, -1.0], np.float32), size=(64, 300))
    x[:8] = -0.0
    x[8:16] = np.where(x[8:16] == -1.0, -0.0, x[8:16])
    for axis in (0, 1):
        for name in ("max", "min"):
            f = lambda v: getattr(jnp, name)(v, axis=axis)
            eager, jitted = np.asarray(f(x)), np.asarray(jax.jit(f)(x))
            zero = x == 0
            if name == "max":
                top = x.max(axis=axis)
                want_neg = (top == 0) & ~np.any(zero & ~np.signbit(x), axis=axis)
            else:
                top = x.min(axis=axis)
                want_neg = ((top == 0) & np.any(zero & np.signbit(x), axis=axis)) | (top < 0)
            for got in (eager, jitted):
                np.testing.assert_array_equal(got, top)
                np.testing.assert_array_equal(np.signbit(got), want_neg | (top < 0))
