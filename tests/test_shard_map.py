"""shard_map, meshes, reshard and jit on sharded arrays over 4 CPU devices against JAX 0.10.2
(tests/golden/shard_map.json, written by tests/golden/gen_shard_map.py with 4 host devices):
each case's body runs here with corejax bound to the same names, and its values, dtypes,
shapes, partition specs and exception types are compared with JAX's."""
import importlib.util
import json
import os

import numpy as np
import pytest

import corejax as jax
import corejax.numpy as jnp
from corejax import lax
from corejax.sharding import AxisType, NamedSharding, PartitionSpec

_GOLDEN_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden")
_spec = importlib.util.spec_from_file_location(
    "gen_shard_map", os.path.join(_GOLDEN_DIR, "gen_shard_map.py"))
gen_shard_map = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gen_shard_map)
with open(os.path.join(_GOLDEN_DIR, "shard_map.json")) as _fh:
    GOLDEN = json.load(_fh)["cases"]

ENV = {"jax": jax, "jnp": jnp, "lax": lax, "np": np, "P": PartitionSpec,
       "NamedSharding": NamedSharding, "AxisType": AxisType}


# Where corejax's values agree but the sharding it reports does not (each runs as
# xfail(strict=True), so a fix asks for its entry to go).
KNOWN = {
}


@pytest.fixture(scope="module", autouse=True)
def four_devices_for_module():
    from conftest import cpu_devices
    with cpu_devices(4):
        yield


def _compare(got, want, path):
    if isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), f"{path}: {got!r}"
        for i, (g, w) in enumerate(zip(got, want)):
            _compare(g, w, f"{path}[{i}]")
        return
    assert isinstance(got, dict), f"{path}: {got!r} where JAX gives {want!r}"
    if "raises" in want or "text" in want:
        assert got == want, f"{path}: {got!r} where JAX gives {want!r}"
        return
    if "value" not in want:     # a dict of results
        assert sorted(got) == sorted(want), path
        for k in want:
            _compare(got[k], want[k], f"{path}[{k!r}]")
        return
    assert "value" in got, f"{path}: {got!r} where JAX gives {want!r}"
    assert (got["dtype"], got["shape"], got["spec"]) == \
        (want["dtype"], want["shape"], want["spec"]), f"{path}: dtype, shape, spec"
    np.testing.assert_allclose(np.array(got["value"], dtype=float),
                               np.array(want["value"], dtype=float), rtol=2e-6, atol=1e-6,
                               err_msg=path)


def test_every_case_is_recorded():
    assert sorted(GOLDEN) == sorted(gen_shard_map.CASES), \
        "run tests/golden/gen_shard_map.py under JAX to record the new cases"


@pytest.mark.parametrize("name", [
    pytest.param(n, marks=[pytest.mark.xfail(strict=True, reason=KNOWN[n])] if n in KNOWN
                 else []) for n in sorted(gen_shard_map.CASES)])
def test_case_matches_jax(name):
    _compare(gen_shard_map.run_case(name, dict(ENV)), GOLDEN[name], name)
