"""The programs of doc_programs.py (JAX documentation idioms) under corejax, compared with
the values, dtypes and weak types JAX gave them (golden_doc_programs.json, written by
gen_doc_programs.py), under both PRNG layouts."""
import contextlib
import json
import os

import numpy as np
import pytest

import corejax as jax
import corejax.numpy as jnp
from corejax import lax, random
from corejax.config import config

from doc_programs import build  # tests/conformance is on sys.path (pytest rootdir-relative)

with open(os.path.join(os.path.dirname(__file__), "golden_doc_programs.json")) as f:
    GOLDEN = json.load(f)["results"]

PROGRAMS = build(jax, jnp, lax, random)
CASES = [(setting, name) for setting, results in sorted(GOLDEN.items()) for name in results]


@contextlib.contextmanager
def partitionable(value):
    saved = config.threefry_partitionable
    config.update("jax_threefry_partitionable", value)
    try:
        yield
    finally:
        config.update("jax_threefry_partitionable", saved)


def test_every_program_has_golden_data():
    assert set(PROGRAMS) == set(GOLDEN["threefry_partitionable=False"])


@pytest.mark.parametrize("setting,name", CASES, ids=[f"{n}[{s[-5:]}]" for s, n in CASES])
def test_program_matches_jax(setting, name):
    expected = GOLDEN[setting][name]
    with partitionable(setting.endswith("True")):
        if isinstance(expected, str):
            exc = expected.split()[-1]
            with pytest.raises(Exception) as info:
                PROGRAMS[name]()
            assert exc in [c.__name__ for c in type(info.value).__mro__], info.value
            return
        got = jax.tree_util.tree_leaves(PROGRAMS[name]())
    assert len(got) == len(expected), f"{name}: {len(got)} outputs, JAX gave {len(expected)}"
    for i, (leaf, (value, dtype, weak, shape)) in enumerate(zip(got, expected)):
        if dtype.startswith("complex"):                # stored as [real parts, imag parts]
            value = np.asarray(value[0]) + 1j * np.asarray(value[1])
        elif isinstance(value, list) and value and isinstance(value[0], str):
            value = [float(v) for v in value]          # non-finite floats, stored as repr
        want = np.asarray(value, dtype=dtype)
        have = np.asarray(leaf)
        where = f"{name}, output {i}"
        assert have.dtype.name == dtype, f"{where}: dtype {have.dtype.name}, JAX {dtype}"
        assert bool(getattr(leaf, "weak_type", False)) == weak, f"{where}: weak_type"
        assert have.shape == tuple(shape), f"{where}: shape {have.shape}, JAX {tuple(shape)}"
        want = want.reshape(have.shape)    # non-finite values are stored flattened
        if dtype in ("float32", "float16", "float64"):
            np.testing.assert_allclose(have, want, rtol=2e-6 if dtype != "float16" else 1e-3,
                                       atol=1e-6, equal_nan=True, err_msg=where)
        elif dtype.startswith("complex"):
            # complex results come from LAPACK-backed linear algebra here: a few ulp apart
            np.testing.assert_allclose(have, want, rtol=1e-5, atol=1e-6, err_msg=where)
        else:
            np.testing.assert_array_equal(have, want, err_msg=where)
