"""nn.dtypes (flax.linen.dtypes) against Flax's recorded results
(tests/golden/gen_flax_dtypes.py -> flax_dtypes.json)."""
import json
import os
import sys

import pytest

import corejax.numpy as jnp
import nn

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden")
sys.path.insert(0, HERE)
from flax_dtypes_cases import CASES, build  # noqa: E402

with open(os.path.join(HERE, "flax_dtypes.json")) as fh:
    GOLDEN = json.load(fh)


def _outcome(fn):
    try:
        out = fn()
    except Exception as e:  # noqa: BLE001
        return {"error": type(e).__name__}
    if isinstance(out, list):
        return [None if x is None else [str(x.dtype), list(x.shape)] for x in out]
    return str(jnp.dtype(out))


@pytest.mark.parametrize("i", range(len(CASES)))
def test_dtypes_match_flax(i):
    args, kwargs = build(*CASES[i], jnp)
    assert _outcome(lambda: nn.dtypes.canonicalize_dtype(*args, **kwargs)) == \
        GOLDEN[i]["canonicalize"]
    assert _outcome(lambda: nn.dtypes.promote_dtype(*args, **kwargs)) == GOLDEN[i]["promote"]
