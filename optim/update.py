"""Blending and periodically replacing parameter trees (optax.incremental_update,
optax.periodic_update), e.g. for target networks."""
from __future__ import annotations

import corejax as jax
import corejax.numpy as jnp
from corejax import lax

__all__ = ["incremental_update", "periodic_update"]


def incremental_update(new_tensors, old_tensors, step_size):
    """Polyak averaging: `step_size * new + (1 - step_size) * old`, leafwise (None leaves of
    `new_tensors` stay None)."""
    return jax.tree_util.tree_map(
        lambda new, old: None if new is None else step_size * new + (1.0 - step_size) * old,
        new_tensors, old_tensors, is_leaf=lambda x: x is None)


def periodic_update(new_tensors, old_tensors, steps, update_period: int):
    """`new_tensors` on steps that are multiples of `update_period`, else `old_tensors`."""
    return lax.cond(jnp.mod(steps, update_period) == 0, lambda _: new_tensors,
                    lambda _: old_tensors, None)
