"""Pooling over the spatial axes of channels-last inputs: max_pool, avg_pool, min_pool."""
from __future__ import annotations

import math

import corejax.numpy as jnp
from corejax import lax
from corejax.lax.windowed import (reduce_window, reduce_window_max, reduce_window_min,
                                  reduce_window_sum)

__all__ = ["pool", "avg_pool", "max_pool", "min_pool"]

_REDUCERS = {"sum": reduce_window_sum, "max": reduce_window_max, "min": reduce_window_min}


def _known_reducer(init, reduce_fn):
    """'sum' / 'max' / 'min' when (init, reduce_fn) is one of the standard monoids."""
    try:
        v = float(init)
    except (TypeError, ValueError):
        return None
    if reduce_fn in (lax.add, jnp.add) and v == 0:
        return "sum"
    if reduce_fn in (lax.max, jnp.maximum) and v == -float("inf"):
        return "max"
    if reduce_fn in (lax.min, jnp.minimum) and v == float("inf"):
        return "min"
    return None


def pool(inputs, init, reduce_fn, window_shape, strides=None, padding="VALID"):
    """Windowed reduction `reduce_fn` (starting from `init`) over axes 1..n of inputs
    (batch..., *spatial, features); unbatched inputs (*spatial, features) are accepted too."""
    reducer = _known_reducer(init, reduce_fn) or (init, reduce_fn)
    return _pool(inputs, reducer, window_shape, strides, padding)


def _pool(inputs, reducer, window_shape, strides=None, padding="VALID"):
    inputs = jnp.asarray(inputs)
    window_shape = tuple(window_shape)
    n = len(window_shape)
    strides = (1,) * n if strides is None else tuple(strides)
    if len(strides) != n:
        raise ValueError(f"pool: strides {strides} must have as many entries as window_shape "
                         f"{window_shape}.")
    batch_dims = inputs.ndim - (n + 1)
    if batch_dims < 0:
        raise ValueError(f"pool: a {n}-D window needs inputs of rank at least {n + 1} "
                         f"(*spatial, features); got input of shape {tuple(inputs.shape)}.")
    batch_shape = inputs.shape[:batch_dims]
    x = jnp.reshape(inputs, (math.prod(batch_shape),) + inputs.shape[batch_dims:])
    if not isinstance(padding, str):
        padding = tuple(tuple(p) for p in padding)
        if len(padding) != n:
            raise ValueError(f"pool: padding {padding} must have one (low, high) pair per "
                             f"window dimension ({n}).")
        padding = ((0, 0),) + padding + ((0, 0),)
    dims, steps = (1,) + window_shape + (1,), (1,) + strides + (1,)
    if isinstance(reducer, tuple):
        y = reduce_window(x, jnp.asarray(reducer[0], x.dtype), reducer[1], dims, steps, padding)
    else:
        y = _REDUCERS[reducer](x, dims, steps, padding)
    return jnp.reshape(y, batch_shape + y.shape[1:])


def max_pool(inputs, window_shape, strides=None, padding="VALID"):
    return _pool(inputs, "max", window_shape, strides, padding)


def min_pool(inputs, window_shape, strides=None, padding="VALID"):
    return _pool(inputs, "min", window_shape, strides, padding)


def avg_pool(inputs, window_shape, strides=None, padding="VALID", count_include_pad=True):
    """Window means; with count_include_pad=False padded positions do not count."""
    y = _pool(inputs, "sum", window_shape, strides, padding)
    if count_include_pad:
        return y / math.prod(window_shape)
    inputs = jnp.asarray(inputs)
    counts = _pool(jnp.ones(inputs.shape[:-1] + (1,), y.dtype), "sum", window_shape, strides,
                  padding)
    return y / counts
