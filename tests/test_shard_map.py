"""shard_map, meshes, reshard and jit on sharded arrays over 4 CPU devices against JAX 0.10.2
(tests/golden/shard_map.json, written by tests/golden/gen_shard_map.py with 4 host devices):
each case's body runs here with corejax bound to the same names, and its values, dtypes,
shapes, partition specs and exception types are compared with JAX's."""
import importlib.util
import json
import os

import numpy as np
import pytest

from conftest import assert_described_close, cpu_devices
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
    with cpu_devices(4):
        yield


def test_every_case_is_recorded():
    assert sorted(GOLDEN) == sorted(gen_shard_map.CASES), \
        "run tests/golden/gen_shard_map.py under JAX to record the new cases"


@pytest.mark.parametrize("name", [
    pytest.param(n, marks=[pytest.mark.xfail(strict=True, reason=KNOWN[n])] if n in KNOWN
                 else []) for n in sorted(gen_shard_map.CASES)])
def test_case_matches_jax(name):
    assert_described_close(gen_shard_map.run_case(name, dict(ENV)), GOLDEN[name], name)
