"""COCOB-Backprop (Orabona & Tommasi, 2017): learning-rate-free steps from coin betting."""
from __future__ import annotations

from typing import Any, Callable, NamedTuple, Optional, Union

import corejax as jax
import corejax.numpy as jnp

from optim import tree_utils as tu
from optim.base import GradientTransformation
from optim.combine import chain
from optim.transform import add_decayed_weights, scale_by_learning_rate

__all__ = ["cocob", "scale_by_cocob", "COCOBState"]

_map = jax.tree_util.tree_map


class COCOBState(NamedTuple):
    init_particles: Any
    cumulative_gradients: Any
    scale: Any
    subgradients: Any
    reward: Any


def scale_by_cocob(alpha=100.0, eps=1e-8) -> GradientTransformation:
    """COCOB-Backprop's per-coordinate bets; `alpha` bounds the bet early on. Expects the
    gradient (not its negative) and returns the step to add."""
    def init(params):
        zeros = tu.tree_zeros_like(params)
        return COCOBState(params, zeros, tu.tree_scalar_mul(eps, tu.tree_ones_like(params)),
                          zeros, zeros)

    def update(updates, state, params=None):
        scale = _map(lambda s, g: jnp.maximum(s, jnp.abs(g)), state.scale, updates)
        subgradients = _map(lambda s, g: s + jnp.abs(g), state.subgradients, updates)
        reward = _map(lambda r, g, p, p0: jnp.maximum(r - g * (p - p0), 0), state.reward,
                      updates, params, state.init_particles)
        cumulative = _map(lambda c, g: c - g, state.cumulative_gradients, updates)
        new_updates = _map(
            lambda p, p0, c, s, sub, r: -p + (p0 + c / (s * jnp.maximum(sub + s, alpha * s))
                                              * (s + r)),
            params, state.init_particles, cumulative, scale, subgradients, reward)
        return new_updates, COCOBState(state.init_particles, cumulative, scale, subgradients,
                                       reward)
    return GradientTransformation(init, update)


def cocob(learning_rate=1.0, alpha=100.0, eps=1e-8, weight_decay=0.0,
          mask: Optional[Union[Any, Callable[[Any], Any]]] = None) -> GradientTransformation:
    """COCOB with decoupled weight decay; `learning_rate` scales the gradient it bets on."""
    return chain(add_decayed_weights(weight_decay, mask),
                 scale_by_learning_rate(learning_rate, flip_sign=False),
                 scale_by_cocob(alpha, eps))
