"""Transforms that bound the size of updates."""
from __future__ import annotations

import corejax as jax
import corejax.numpy as jnp

from optim.base import EmptyState, GradientTransformation
from optim.tree_utils import global_norm

__all__ = ["clip", "clip_by_global_norm", "ClipState", "ClipByGlobalNormState"]

ClipState = EmptyState
ClipByGlobalNormState = EmptyState


def _empty_init(params):
    del params
    return EmptyState()


def clip(max_delta) -> GradientTransformation:
    """Clamps every update element to [-max_delta, max_delta]."""
    def update(updates, state, params=None):
        del params
        return jax.tree_util.tree_map(lambda g: jnp.clip(g, -max_delta, max_delta), updates), state
    return GradientTransformation(_empty_init, update)


def clip_by_global_norm(max_norm) -> GradientTransformation:
    """Rescales the whole update tree so that its global l2 norm is at most `max_norm`."""
    def update(updates, state, params=None):
        del params
        norm = global_norm(updates)
        within = norm < max_norm

        def rescale(g):
            return jnp.where(within, g, (g / norm.astype(g.dtype)) * max_norm)
        return jax.tree_util.tree_map(rescale, updates), state
    return GradientTransformation(_empty_init, update)


# Optax's other clipping transforms live in their own module (re-exported here, their home in
# Optax's layout).
from optim.clipping_extra import (AdaptiveGradClipState, adaptive_grad_clip,  # noqa: E402
                                  clip_by_block_rms, per_example_global_norm_clip,
                                  per_example_layer_norm_clip, unitwise_clip, unitwise_norm)
