"""flax.training.common_utils: helpers of the data-parallel training loops."""
from __future__ import annotations

import numpy as np

import corejax
import corejax.numpy as jnp
from corejax import lax, random, tree_util

__all__ = ["shard", "shard_prng_key", "stack_forest", "get_metrics", "onehot"]


def shard(xs):
    """Each array's leading axis split into (local device count, rest)."""
    n = corejax.local_device_count()
    return tree_util.tree_map(lambda x: x.reshape((n, -1) + x.shape[1:]), xs)


def shard_prng_key(prng_key):
    """One key per local device."""
    return random.split(prng_key, num=corejax.local_device_count())


def stack_forest(forest):
    """A list of identically shaped trees -> one tree of stacked leaves."""
    return tree_util.tree_map(lambda *leaves: jnp.stack(leaves), *forest)


def get_metrics(device_metrics):
    """Per-step metric trees replicated over devices -> one tree of host arrays stacked over
    steps (the first device's copy of each)."""
    first = tree_util.tree_map(lambda x: x[0], device_metrics)
    return stack_forest(corejax.device_get(first))


def onehot(labels, num_classes, on_value=1.0, off_value=0.0):
    """float32 one-hot vectors along a new last axis (prefer nn.one_hot)."""
    labels = jnp.asarray(labels)
    hit = labels[..., None] == jnp.arange(num_classes).reshape((1,) * labels.ndim + (-1,))
    out = lax.select(hit, jnp.full(hit.shape, on_value), jnp.full(hit.shape, off_value))
    return out.astype(np.float32)
