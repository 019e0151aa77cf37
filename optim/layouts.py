"""Changing the layout an inner transform sees: all leaves as one flat vector."""
from __future__ import annotations

import numpy as np

import corejax as jax
import corejax.numpy as jnp

from optim.base import (GradientTransformation, GradientTransformationExtraArgs,
                        with_extra_args_support)

__all__ = ["flatten"]


def _as_vector(tree):
    return jnp.concatenate([jnp.reshape(x, [-1]) for x in jax.tree_util.tree_leaves(tree)])


def _like(tree, vector):
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    bounds = np.cumsum([np.size(x) for x in leaves])[:-1].tolist()
    pieces = jnp.split(vector, bounds)
    return jax.tree_util.tree_unflatten(
        treedef, [jnp.reshape(piece, np.shape(x)) for piece, x in zip(pieces, leaves)])


def flatten(inner: GradientTransformation) -> GradientTransformationExtraArgs:
    """Runs `inner` on one vector holding every leaf, raveled and concatenated (fewer, larger
    arrays for transforms with per-leaf overhead); its state is `inner`'s on that vector."""
    inner = with_extra_args_support(inner)

    def init(params):
        return inner.init(_as_vector(params))

    def update(updates, state, params=None, **extra_args):
        flat_params = None if params is None else _as_vector(params)
        flat_updates, state = inner.update(_as_vector(updates), state, flat_params,
                                           **extra_args)
        return _like(updates, flat_updates), state
    return GradientTransformationExtraArgs(init, update)
