"""ACProp (Zhuang et al., 2021): AdaBelief's belief in the gradient, applied asynchronously
(the second moment of the previous step scales the current gradient)."""
from __future__ import annotations

from typing import Any, Callable, Optional, Union

import corejax as jax
import corejax.numpy as jnp

from optim import tree_utils as tu
from optim.base import GradientTransformation, safe_int32_increment, zero_count
from optim.combine import chain
from optim.transform import add_decayed_weights, scale_by_learning_rate
from optim.transform_adaptive import ScaleByBeliefState

__all__ = ["acprop", "scale_by_acprop"]

_map = jax.tree_util.tree_map


def scale_by_acprop(b1=0.9, b2=0.999, eps=1e-16, eps_root=1e-16) -> GradientTransformation:
    """ACProp's rescaling: g / (sqrt(bias-corrected previous belief s) + eps); the first
    step divides by 1 + eps."""
    def init(params):
        return ScaleByBeliefState(zero_count(), tu.tree_zeros_like(params),
                                  tu.tree_zeros_like(params))

    def update(updates, state, params=None):
        del params
        mu = tu.tree_update_moment(updates, state.mu, b1, 1)
        surprise = _map(lambda g, m: g - m, updates, state.mu)
        nu = tu.tree_update_moment_per_elem_norm(surprise, state.nu, b2, 2)
        nu = _map(lambda v: v + eps_root, nu)
        count_inc = safe_int32_increment(state.count)
        first = state.count == 0
        t = jnp.where(first, count_inc, state.count)
        nu_hat = tu.tree_bias_correction(state.nu, b2, t)
        nu_hat = _map(lambda v: jnp.where(first, 1, v), nu_hat)
        new_updates = _map(lambda g, v: g / (jnp.sqrt(v) + eps), updates, nu_hat)
        return new_updates, ScaleByBeliefState(count_inc, mu, nu)
    return GradientTransformation(init, update)


def acprop(learning_rate, b1=0.9, b2=0.999, eps=1e-16, eps_root=1e-16, weight_decay=0.0,
           mask: Optional[Union[Any, Callable[[Any], Any]]] = None) -> GradientTransformation:
    """ACProp with decoupled weight decay."""
    return chain(scale_by_acprop(b1=b1, b2=b2, eps=eps, eps_root=eps_root),
                 add_decayed_weights(weight_decay, mask), scale_by_learning_rate(learning_rate))
