"""jax.scipy.stats.mode, rankdata and sem."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from corejax import Array, lax
from corejax.numpy._core import canonicalize_axes, check_arraylike
import corejax.numpy as jnp

__all__ = ["ModeResult", "mode", "rankdata", "sem"]

_NAN_POLICIES = ("propagate", "omit", "raise")


def _check_nan_policy(nan_policy, name, supported=("propagate",)):
    if nan_policy not in _NAN_POLICIES:
        raise ValueError(f"Illegal nan_policy value {nan_policy!r}; expected one of "
                         "{'propagate', 'omit', 'raise'}")
    if nan_policy in supported:
        return
    if nan_policy == "raise":
        raise NotImplementedError(
            f"In order to best JIT compile `{name}`, we cannot know whether `x` contains nans. "
            f"Please check if nans exist in `x` outside of the `{name}` function.")
    raise NotImplementedError(f"Logic for `nan_policy` of {nan_policy} is not implemented")


class ModeResult(NamedTuple):
    mode: Array
    count: Array


def mode(a, axis=0, nan_policy="propagate", keepdims=False):
    """The most common value along `axis` (the smallest of equally common ones) and its
    count. NaNs never equal each other, so they count once at most and never win a tie."""
    check_arraylike("mode", a)
    _check_nan_policy(nan_policy, "mode")
    x = jnp.asarray(a)
    if axis is None:
        x, axis = jnp.ravel(x), 0
    if x.ndim == 0:
        x, axis = x.reshape(1), 0
    (axis,) = canonicalize_axes(axis, x.ndim)
    x = jnp.moveaxis(x, axis, -1)
    if x.shape[-1] == 0:
        shape = x.shape[:-1]
        float_dtype = x.dtype if jnp.issubdtype(x.dtype, jnp.inexact) else jnp.float32
        out_mode = jnp.full(shape, jnp.nan, float_dtype)
        out_count = jnp.zeros(shape, float_dtype)
    else:
        ordered = jnp.sort(x, axis=-1)
        counts = jnp.sum(ordered[..., :, None] == ordered[..., None, :], axis=-1).astype(
            jnp.int32)
        counts = jnp.maximum(counts, 1)           # a NaN counts once
        best = jnp.argmax(counts, axis=-1)[..., None]
        out_mode = jnp.take_along_axis(ordered, best, axis=-1)[..., 0]
        out_count = jnp.take_along_axis(counts, best, axis=-1)[..., 0]
    if keepdims:
        out_mode, out_count = (jnp.expand_dims(v, axis) for v in (out_mode, out_count))
    return ModeResult(out_mode, out_count)


_RANK_METHODS = ("average", "min", "max", "dense", "ordinal")


def rankdata(a, method="average", *, axis=None, nan_policy="propagate"):
    """Ranks of the data, 1-based, ties resolved by `method` (average, min, max, dense or
    ordinal); a slice with a NaN ranks as NaN."""
    check_arraylike("rankdata", a)
    if method not in _RANK_METHODS:
        raise ValueError(f"unknown method '{method}'")
    _check_nan_policy(nan_policy, "rankdata")
    x = jnp.asarray(a)
    if axis is None:
        x, axis = jnp.ravel(x), 0
    (axis,) = canonicalize_axes(axis, x.ndim)
    x = jnp.moveaxis(x, axis, -1)
    n = x.shape[-1]
    order = jnp.argsort(x, axis=-1, stable=True)
    ordered = jnp.take_along_axis(x, order, axis=-1)
    positions = jnp.arange(1, n + 1, dtype=jnp.float32)
    inverse = jnp.argsort(order, axis=-1, stable=True)
    if method == "ordinal":
        ranks = jnp.take_along_axis(jnp.broadcast_to(positions, x.shape), inverse, axis=-1)
    else:
        # groups of equal values are contiguous in sorted order: each item's group runs from
        # the last group start at or before it to the first group end at or after it
        edge = jnp.ones(x.shape[:-1] + (1,), bool)
        differs = ordered[..., 1:] != ordered[..., :-1]
        starts = jnp.concatenate([edge, differs], axis=-1)
        ends = jnp.concatenate([differs, edge], axis=-1)
        lowest = _cummax(jnp.where(starts, positions, 0))
        highest = -_cummax(jnp.where(ends, -positions, -np.inf)[..., ::-1])[..., ::-1]
        dense = jnp.cumsum(starts, axis=-1).astype(jnp.float32)
        value = {"dense": dense, "min": lowest, "max": highest,
                 "average": (lowest + highest) / 2}[method]
        ranks = jnp.take_along_axis(value, inverse, axis=-1)
    has_nan = jnp.any(jnp.isnan(x), axis=-1, keepdims=True) if jnp.issubdtype(
        x.dtype, jnp.inexact) else jnp.zeros(x.shape[:-1] + (1,), bool)
    ranks = jnp.where(has_nan, jnp.nan, ranks)
    return jnp.moveaxis(ranks, -1, axis)


def _cummax(v):
    """The cumulative maximum along the last axis."""
    return lax.cummax(v, axis=v.ndim - 1)


def sem(a, axis=0, ddof=1, nan_policy="propagate", *, keepdims=False):
    """The standard error of the mean: std(a, ddof) / sqrt(n) along `axis`."""
    check_arraylike("sem", a)
    if nan_policy == "raise":  # a ValueError in JAX's sem (NotImplementedError in mode's)
        raise ValueError("sem: nan_policy='raise' is not supported; use 'propagate' or 'omit' "
                         "(under jit NaNs cannot be detected: check for them outside sem)")
    _check_nan_policy(nan_policy, "sem", supported=("propagate", "omit"))
    x = jnp.asarray(a)
    if axis is None:
        x, axis = jnp.ravel(x), 0
    if nan_policy == "omit":
        count = jnp.sum(~jnp.isnan(x), axis=axis, keepdims=keepdims)
        return jnp.nanstd(x, axis=axis, ddof=ddof, keepdims=keepdims) / jnp.sqrt(count)
    n = x.shape[canonicalize_axes(axis, x.ndim)[0]]
    return jnp.std(x, axis=axis, ddof=ddof, keepdims=keepdims) / jnp.sqrt(n)
