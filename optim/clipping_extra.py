"""More of Optax's clipping: per block RMS, unit-wise adaptive (AGC), and per-example clipping
of batched gradients (the building block of DP-SGD)."""
from __future__ import annotations

from typing import Optional, Union

import corejax as jax
import corejax.numpy as jnp

from optim.base import EmptyState, GradientTransformation, init_empty_state, params_required
from optim.numerics import abs_sq
from optim.tree_utils import tree_l2_norm

__all__ = ["clip_by_block_rms", "adaptive_grad_clip",
           "AdaptiveGradClipState", "unitwise_norm", "unitwise_clip",
           "per_example_global_norm_clip", "per_example_layer_norm_clip"]

AdaptiveGradClipState = EmptyState

_map = jax.tree_util.tree_map


def clip_by_block_rms(threshold) -> GradientTransformation:
    """Divides each leaf's update by max(1, rms(update) / threshold)."""
    def update(updates, state, params=None):
        del params
        return _map(lambda u: u / jnp.maximum(1.0, jnp.sqrt(jnp.mean(abs_sq(u))) / threshold),
                    updates), state
    return GradientTransformation(init_empty_state, update)


def unitwise_norm(x, axis: Optional[Union[int, tuple]] = None):
    """The L2 norm of each unit of `x`, broadcast to x's shape: over `axis` if given, else
    the whole array for vectors and scalars, the input axis of matrices (axis 0), and all but
    the output axis of convolution kernels (HWIO-style, ranks 4 and 5)."""
    if axis is not None:
        squared = jnp.sum(abs_sq(x), axis=axis, keepdims=True)
    elif jnp.squeeze(x).ndim <= 1:
        squared = jnp.sum(abs_sq(x), keepdims=True)
    elif x.ndim in (2, 3):
        squared = jnp.sum(abs_sq(x), axis=0, keepdims=True)
    elif x.ndim in (4, 5):
        squared = jnp.sum(abs_sq(x), axis=tuple(range(x.ndim - 1)), keepdims=True)
    else:
        raise ValueError(f"Expected parameter with shape in {(1, 2, 3, 4, 5)}, got {x.shape}. "
                         "Use axis parameter to specify reduction axes for other shapes.")
    return jnp.broadcast_to(jnp.sqrt(squared), x.shape)


def unitwise_clip(g_norm, max_norm, grad, div_eps=1e-6):
    """`grad` where its unit norm `g_norm` is below `max_norm`, else rescaled to that norm."""
    shapes = {jnp.shape(g_norm), jnp.shape(max_norm), jnp.shape(grad)}
    if len(shapes) != 1:
        raise ValueError(f"unitwise_clip: g_norm, max_norm and grad must have one shape, got "
                         f"{jnp.shape(g_norm)}, {jnp.shape(max_norm)} and {jnp.shape(grad)}.")
    clipped = grad * (max_norm / jnp.maximum(g_norm, div_eps))
    return jnp.where(g_norm < max_norm, grad, clipped)


def adaptive_grad_clip(clipping, eps=1e-3, axis: Optional[Union[int, tuple]] = None
                       ) -> GradientTransformation:
    """Adaptive gradient clipping (Brock et al., 2021): each unit's gradient norm is kept
    below clipping * max(unit norm of the parameter, eps)."""
    def update(updates, state, params=None):
        params_required("adaptive_grad_clip", params)
        g_norm = _map(lambda x: unitwise_norm(x, axis=axis), updates)
        p_norm = _map(lambda x: unitwise_norm(x, axis=axis), params)
        max_norm = _map(lambda n: clipping * jnp.maximum(n, eps), p_norm)
        return _map(unitwise_clip, g_norm, max_norm, updates), state
    return GradientTransformation(init_empty_state, update)


def _has_batch_axis(grads) -> bool:
    leaves = jax.tree_util.tree_leaves(grads)
    return bool(leaves) and all(jnp.ndim(g) >= 1 and jnp.shape(g)[0] == jnp.shape(leaves[0])[0]
                                for g in leaves)


def per_example_global_norm_clip(grads, l2_norm_clip) -> tuple:
    """Per-example gradients (leading batch axis on every leaf) each scaled to global L2 norm
    at most `l2_norm_clip`, summed over the batch; returns (sum, number of examples
    clipped)."""
    if not _has_batch_axis(grads):
        raise ValueError("Unlike other transforms, `per_example_global_norm_clip` expects "
                         "`grads` to have a batch dimension in the 0th axis.")
    norms = jax.vmap(tree_l2_norm)(grads)
    multipliers = jnp.nan_to_num(jnp.minimum(l2_norm_clip / norms, 1.0), nan=1.0)
    clipped = _map(lambda g: jnp.tensordot(multipliers, g, axes=1), grads)
    return clipped, jnp.sum(multipliers < 1.0)


def per_example_layer_norm_clip(grads, global_l2_norm_clip, uniform: bool = True) -> tuple:
    """Per-example clipping leaf by leaf: each leaf's bound is global_l2_norm_clip / sqrt(number
    of leaves) (`uniform`) or global_l2_norm_clip * sqrt(leaf size / total size); returns the
    trees (clipped sums, numbers clipped)."""
    if not _has_batch_axis(grads):
        raise ValueError("Unlike other transforms, `per_example_layer_norm_clip` expects "
                         "`grads` to have a batch dimension in the 0th axis; got shapes: "
                         f"{_map(jnp.shape, grads)}.")
    leaves, treedef = jax.tree_util.tree_flatten(grads)
    if uniform:
        bounds = [global_l2_norm_clip * (1.0 / len(leaves)) ** 0.5] * len(leaves)
    else:
        total = sum(int(jnp.size(g[0])) for g in leaves)
        bounds = [global_l2_norm_clip * (int(jnp.size(g[0])) / total) ** 0.5 for g in leaves]
    pairs = [per_example_global_norm_clip(g, b) for g, b in zip(leaves, bounds)]
    return (jax.tree_util.tree_unflatten(treedef, [p[0] for p in pairs]),
            jax.tree_util.tree_unflatten(treedef, [p[1] for p in pairs]))
