"""flax.linen.dtypes: the dtype a layer computes in, from its inputs and its `dtype` field."""
from __future__ import annotations

import numpy as np

import corejax.numpy as jnp

__all__ = ["canonicalize_dtype", "promote_dtype"]


def canonicalize_dtype(*args, dtype=None, inexact: bool = True):
    """The dtype for computing on `args`: `dtype` when given (it must be inexact when `inexact`),
    else the promoted dtype of the non-None `args`, promoted with float32 once more when
    `inexact` and that dtype is not floating or complex."""
    if dtype is None:
        result = jnp.result_type(*[a for a in args if a is not None])
        if inexact and not jnp.issubdtype(result, jnp.inexact):
            result = jnp.promote_types(jnp.float32, result)
        return np.dtype(result)
    if inexact and not jnp.issubdtype(dtype, jnp.inexact):
        raise ValueError(f"Dtype must be inexact: {dtype}")
    return dtype


def promote_dtype(*args, dtype=None, inexact: bool = True) -> list:
    """`args` as arrays of canonicalize_dtype's dtype (None stays None)."""
    dt = canonicalize_dtype(*args, dtype=dtype, inexact=inexact)
    return [None if x is None else jnp.asarray(x, dt) for x in args]
