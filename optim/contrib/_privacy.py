"""Differentially private aggregation (DP-SGD, Abadi et al., 2016): per-example gradients
clipped to a global L2 norm, summed, noised with a Gaussian and averaged."""
from __future__ import annotations

import warnings
from typing import Any, NamedTuple, Optional

import corejax as jax
import corejax.numpy as jnp

from optim.base import GradientTransformation, identity
from optim.clipping_extra import per_example_global_norm_clip
from optim.combine import chain
from optim.transform import scale_by_learning_rate, trace

__all__ = ["differentially_private_aggregate", "DifferentiallyPrivateAggregateState", "dpsgd"]


class DifferentiallyPrivateAggregateState(NamedTuple):
    rng_key: Any


def _as_key(key):
    if isinstance(key, int):
        return jax.random.key(key)
    return key


def differentially_private_aggregate(l2_norm_clip, noise_multiplier, key=None, *,
                                     seed: Optional[int] = None) -> GradientTransformation:
    """Takes per-example gradients (leading batch axis) and returns their DP mean: each
    example clipped to `l2_norm_clip`, the sum noised with N(0, (l2_norm_clip *
    noise_multiplier)^2) per entry, divided by the batch size. `key` is a PRNG key or an int
    seed (`seed=` is Optax's deprecated spelling)."""
    if seed is not None:
        warnings.warn('"seed" is deprecated and will be removed in optax 0.2.7, use "key".',
                      DeprecationWarning, stacklevel=2)
        if key is not None:
            raise ValueError("differentially_private_aggregate: give only one of seed or key.")
        key = jax.random.key(seed)
    if key is None:
        warnings.warn("Specifying a key will be required in optax 0.2.7.", stacklevel=2)
        key = jax.random.key(0)
    key = _as_key(key)
    noise_std = l2_norm_clip * noise_multiplier

    def init(params):
        del params
        return DifferentiallyPrivateAggregateState(key)

    def update(updates, state, params=None):
        del params
        leaves, treedef = jax.tree_util.tree_flatten(updates)
        batch = jnp.shape(leaves[0])[0]
        clipped = jax.tree_util.tree_leaves(per_example_global_norm_clip(updates,
                                                                         l2_norm_clip)[0])
        new_key, *keys = jax.random.split(state.rng_key, len(leaves) + 1)
        noised = [(g + noise_std * jax.random.normal(k, jnp.shape(g), g.dtype)) / batch
                  for g, k in zip(clipped, keys)]
        return (jax.tree_util.tree_unflatten(treedef, noised),
                DifferentiallyPrivateAggregateState(new_key))
    return GradientTransformation(init, update)


def dpsgd(learning_rate, l2_norm_clip, noise_multiplier, seed: int, momentum=None,
          nesterov: bool = False) -> GradientTransformation:
    """DP-SGD: differentially_private_aggregate, optional (Nesterov) momentum, then SGD."""
    return chain(differentially_private_aggregate(l2_norm_clip=l2_norm_clip,
                                                  noise_multiplier=noise_multiplier, seed=seed),
                 trace(decay=momentum, nesterov=nesterov) if momentum is not None
                 else identity(),
                 scale_by_learning_rate(learning_rate))
