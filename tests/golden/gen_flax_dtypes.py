"""Record flax.linen.dtypes' canonicalize_dtype / promote_dtype results.

    /work/flaxvenv/bin/python tests/golden/gen_flax_dtypes.py

Writes tests/golden/flax_dtypes.json: for each case of flax_dtypes_cases.CASES (inputs spelled
as (kind, dtype name) pairs), the dtype name each function returns, or the exception type."""
import json
import os
import sys

import jax.numpy as jnp
import flax.linen as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from flax_dtypes_cases import CASES, build  # noqa: E402


def outcome(fn):
    try:
        out = fn()
    except Exception as e:  # noqa: BLE001 (the exception type is the golden fact)
        return {"error": type(e).__name__}
    if isinstance(out, list):
        return [None if x is None else [str(x.dtype), list(x.shape)] for x in out]
    return str(jnp.dtype(out))


def main():
    results = []
    for args, kwargs in CASES:
        a, k = build(args, kwargs, jnp)
        results.append({
            "canonicalize": outcome(lambda: nn.dtypes.canonicalize_dtype(*a, **k)),
            "promote": outcome(lambda: nn.dtypes.promote_dtype(*a, **k))})
    with open(os.path.join(HERE, "flax_dtypes.json"), "w") as fh:
        json.dump(results, fh, indent=0)
    print(f"{len(results)} cases")


if __name__ == "__main__":
    main()
