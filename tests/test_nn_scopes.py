"""nn against Flax linen's recorded behaviour (tests/golden/gen_flax_scopes.py ->
flax_scopes.json; the cases: tests/golden/flax_scopes_cases.py): share_scope,
compact_name_scope, fold_rngs (and nn.jit's PRNG counters across calls), add_metadata_axis and
the axis metadata of nn.vmap / nn.scan, nn.vmap's keyword arguments, the named_call switches,
kw_only_dataclasses, batch_apply, spmd's rules fallbacks, and the normalization layers'
statistics across a named axis (axis_name)."""
import json
import os
import sys

import numpy as np
import pytest

import corejax
import corejax.numpy as jnp
import nn

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden")
sys.path.insert(0, HERE)
from flax_scopes_cases import cases, outcome  # noqa: E402

with open(os.path.join(HERE, "flax_scopes.json")) as fh:
    GOLDEN = json.load(fh)
CASES = cases(nn, corejax, jnp)


def _is_array(x) -> bool:
    return isinstance(x, dict) and set(x) == {"dtype", "shape", "values"}


def _compare(got, want, where="result"):
    if _is_array(want):
        assert _is_array(got), f"{where}: expected an array, got {got!r}"
        assert (got["dtype"], got["shape"]) == (want["dtype"], want["shape"]), where
        if want["dtype"].startswith("float"):
            np.testing.assert_allclose(got["values"], want["values"], rtol=2e-5, atol=2e-6,
                                       err_msg=where)
        else:
            assert got["values"] == want["values"], where
    elif isinstance(want, dict):
        assert isinstance(got, dict) and sorted(got) == sorted(want), \
            f"{where}: keys {sorted(got) if isinstance(got, dict) else got} != {sorted(want)}"
        for k in want:
            _compare(got[k], want[k], f"{where}/{k}")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), f"{where}: {got} != {want}"
        for i, (g, w) in enumerate(zip(got, want)):
            _compare(g, w, f"{where}[{i}]")
    else:
        assert got == want, f"{where}: {got!r} != {want!r}"


def test_golden_covers_every_case():
    assert sorted(GOLDEN) == sorted(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_flax(name):
    _compare(outcome(CASES[name]), GOLDEN[name], name)


def test_batchnorm_axis_name_under_pmap_matches_flax(four_devices):
    """The cross-replica statistics of case batchnorm_axis_name (Flax under jax.vmap with
    axis_name), with each replica's slice on its own device (corejax.pmap)."""
    from flax_scopes_cases import _inputs, plain
    _, batch = _inputs(jnp)
    layer = nn.BatchNorm(use_running_average=False, axis_name="batch", momentum=0.8)
    v = layer.clone(axis_name=None).init(corejax.random.PRNGKey(0), batch[0])
    y, upd = corejax.pmap(lambda xb: layer.apply(v, xb, mutable=["batch_stats"]),
                          axis_name="batch")(batch)
    want = GOLDEN["batchnorm_axis_name"]
    _compare(plain(y), want["out"], "out")
    _compare(plain(upd), want["updated"], "updated")
