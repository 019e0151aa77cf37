"""smap, jax.memory, the auto_pcast and remove_size_one_mesh_axis_from_type flags and
NamedSharding's memory kinds over 4 CPU devices against JAX 0.10.2 (tests/golden/smap.json,
written by tests/golden/gen_smap.py with 4 host devices): each case's body runs here with
corejax bound to the same names, and its values, dtypes, shapes, partition specs and
exception types are compared with JAX's."""
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
    "gen_smap", os.path.join(_GOLDEN_DIR, "gen_smap.py"))
gen_smap = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gen_smap)
with open(os.path.join(_GOLDEN_DIR, "smap.json")) as _fh:
    GOLDEN = json.load(_fh)["cases"]

ENV = {"jax": jax, "jnp": jnp, "lax": lax, "np": np, "P": PartitionSpec,
       "NamedSharding": NamedSharding, "AxisType": AxisType}

# Where corejax's values agree but the sharding it reports does not (each runs as
# xfail(strict=True), so a fix asks for its entry to go).
_NESTED = ("a nested smap runs as a named vmap inside the outer per-device program: "
           "its output is split as the outer out_axes say (P('x')), where JAX also "
           "keeps the inner split over the outer's Auto axis (P('x', 'y')); the "
           "values agree")
KNOWN = {
    "smap_nested": _NESTED,
    "smap_nested_jit": _NESTED,
    "smap_nested_explicit_jit": _NESTED,
}


@pytest.fixture(scope="module", autouse=True)
def four_devices_for_module():
    with cpu_devices(4):
        yield


def test_every_case_is_recorded():
    assert sorted(GOLDEN) == sorted(gen_smap.CASES), \
        "run tests/golden/gen_smap.py under JAX to record the new cases"


@pytest.mark.parametrize("name", [
    pytest.param(n, marks=[pytest.mark.xfail(strict=True, reason=KNOWN[n])] if n in KNOWN
                 else []) for n in sorted(gen_smap.CASES)])
def test_case_matches_jax(name):
    assert_described_close(gen_smap.run_case(name, dict(ENV)), GOLDEN[name], name)


@pytest.mark.parametrize("name", sorted(KNOWN))
def test_known_cases_values_match_jax(name):
    got, want = gen_smap.run_case(name, dict(ENV)), GOLDEN[name]
    assert (got["dtype"], got["shape"]) == (want["dtype"], want["shape"]), name
    np.testing.assert_allclose(np.array(got["value"], dtype=float),
                               np.array(want["value"], dtype=float), rtol=2e-6, atol=1e-6,
                               err_msg=name)
