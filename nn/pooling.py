"""Pooling over the spatial axes of channels-last inputs: max_pool, avg_pool, min_pool."""
from __future__ import annotations

import math

import corejax.numpy as jnp
from corejax.lax.windowed import reduce_window_max, reduce_window_min, reduce_window_sum

__all__ = ["pool", "avg_pool", "max_pool", "min_pool"]

_REDUCERS = {"sum": reduce_window_sum, "max": reduce_window_max, "min": reduce_window_min}


def pool(inputs, reducer: str, window_shape, strides=None, padding="VALID"):
    """Windowed reduction over axes 1..n (inputs (batch..., *spatial, features)); unbatched
    inputs (*spatial, features) are accepted too."""
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
    y = _REDUCERS[reducer](x, (1,) + window_shape + (1,), (1,) + strides + (1,), padding)
    return jnp.reshape(y, batch_shape + y.shape[1:])


def max_pool(inputs, window_shape, strides=None, padding="VALID"):
    return pool(inputs, "max", window_shape, strides, padding)


def min_pool(inputs, window_shape, strides=None, padding="VALID"):
    return pool(inputs, "min", window_shape, strides, padding)


def avg_pool(inputs, window_shape, strides=None, padding="VALID", count_include_pad=True):
    """Window means; with count_include_pad=False padded positions do not count."""
    y = pool(inputs, "sum", window_shape, strides, padding)
    if count_include_pad:
        return y / math.prod(window_shape)
    inputs = jnp.asarray(inputs)
    counts = pool(jnp.ones(inputs.shape[:-1] + (1,), y.dtype), "sum", window_shape, strides,
                  padding)
    return y / counts
