"""Numerically careful scalars used by several transforms (optax's numerics)."""
from __future__ import annotations

import numpy as np

import corejax as jax
import corejax.numpy as jnp

__all__ = ["abs_sq", "safe_norm", "safe_root_mean_squares", "safe_increment"]


def abs_sq(x):
    """`|x| ** 2` elementwise (`x * x` for real x, `re(conj(x) * x)` for complex)."""
    if not isinstance(x, (np.ndarray, jax.Array)):
        raise ValueError(f"`abs_sq` accepts only arrays, got {type(x).__name__}: {x!r}; "
                         "wrap the value in jnp.asarray first.")
    if jnp.iscomplexobj(x):
        return jnp.real(jnp.conj(x) * x)
    return x * x


def safe_norm(x, min_norm, ord=None, axis=None, keepdims: bool = False):
    """`max(norm(x), min_norm)` whose gradient is finite (zero) where the norm is below
    `min_norm`: the norm is taken of a copy of `x` with those blocks replaced by ones."""
    x = jnp.asarray(x)
    norm = jnp.linalg.norm(x, ord=ord, axis=axis, keepdims=True)
    small = norm <= min_norm
    x = jnp.where(small, jnp.ones_like(x), x)
    norm = norm if keepdims else jnp.squeeze(norm, axis=axis)
    masked = jnp.linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims)
    return jnp.where(norm <= min_norm, min_norm, masked)


def safe_root_mean_squares(x, min_rms):
    """`max(rms(x), min_rms)` with a finite gradient below `min_rms`."""
    x = jnp.asarray(x)
    rms = jnp.sqrt(jnp.mean(abs_sq(x)))
    x = jnp.where(rms <= min_rms, jnp.ones_like(x), x)
    return jnp.where(rms <= min_rms, min_rms, jnp.sqrt(jnp.mean(abs_sq(x))))


def safe_increment(count):
    """`count + 1` in the counter's own dtype, saturating at the dtype's maximum."""
    count = jnp.asarray(count)
    dtype = count.dtype
    if jnp.issubdtype(dtype, jnp.integer):
        top = jnp.iinfo(dtype).max
    elif jnp.issubdtype(dtype, jnp.floating):
        top = jnp.finfo(dtype).max
    else:
        raise ValueError(f"Cannot safely increment count with dtype {dtype}, valid dtypes are "
                         "subdtypes of \"jnp.integer\" or \"jnp.floating\".")
    top = jnp.array(top, dtype)
    return jnp.where(count < top, count + jnp.array(1, dtype), top)
