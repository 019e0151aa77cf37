"""corejax's PRNG against JAX's own outputs (tests/golden/random.npz, from gen_random.py)."""
import json
import os

import numpy as np
import pytest

from corejax._threefry_numpy import threefry2x32

GOLDEN = os.path.join(os.path.dirname(__file__), "golden", "random.npz")


def _load_golden():
    with np.load(GOLDEN) as data:
        meta = json.loads(data["meta"].tobytes())
        buffers = {name: data[name] for name in data.files if name != "meta"}
    for case in meta["cases"]:
        if "result" in case:
            where = case["result"]
            size = int(np.prod(where["shape"], dtype=np.int64))
            flat = buffers[where["dtype"]][where["offset"]:where["offset"] + size]
            case["expected"] = flat.reshape(where["shape"])
    return meta


META = _load_golden()


def _decode(value):
    if isinstance(value, dict) and "array" in value:
        return np.asarray(value["array"], dtype=value["dtype"])
    return value


def _cases(fn):
    return [c for c in META["cases"] if c["fn"] == fn]


@pytest.mark.parametrize("case", _cases("threefry2x32_p"), ids=lambda c: str(c["kwargs"]["k0"]["array"]))
def test_threefry2x32_numpy_matches_jax(case):
    kw = {k: _decode(v) for k, v in case["kwargs"].items()}
    y0, y1 = threefry2x32(kw["k0"], kw["k1"], kw["x0"], kw["x1"])
    np.testing.assert_array_equal(np.stack([y0, y1]), case["expected"])


def test_threefry2x32_numpy_broadcasts_and_keeps_shape():
    x = np.arange(12, dtype=np.uint32).reshape(3, 4)
    y0, y1 = threefry2x32(np.uint32(7), np.uint32(9), x, x[:1])
    assert y0.shape == y1.shape == (3, 4) and y0.dtype == np.uint32
    z0, z1 = threefry2x32(np.uint32(7), np.uint32(9), x[1, 2], x[0, 2])
    assert z0.shape == () and (z0, z1) == (y0[1, 2], y1[1, 2])


def test_threefry2x32_numpy_rejects_non_uint32():
    with pytest.raises(TypeError, match="uint32"):
        threefry2x32(np.uint32(0), np.uint32(0), np.arange(3), np.arange(3))
