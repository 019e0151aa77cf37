"""ADOPT (Taniguchi et al., 2024): Adam with the gradient normalized by the previous second
moment before it enters the momentum, which converges for any b2."""
from __future__ import annotations

from typing import Callable

import corejax as jax
import corejax.numpy as jnp

from optim import tree_utils as tu
from optim.base import GradientTransformation, safe_int32_increment, zero_count
from optim.combine import chain
from optim.transform import ScaleByAdamState, scale_by_learning_rate

__all__ = ["adopt", "scale_by_adopt"]

_map = jax.tree_util.tree_map


def _quarter_power(count):
    return count ** 0.25


def scale_by_adopt(b1=0.9, b2=0.9999, eps=1e-6, mu_dtype=None, *, nesterov: bool = False,
                   use_clipping: bool = True, clip_value_fn: Callable = _quarter_power
                   ) -> GradientTransformation:
    """ADOPT's rescaling; the normalized gradient is clipped to +-clip_value_fn(step)."""
    def init(params):
        return ScaleByAdamState(zero_count(), tu.tree_zeros_like(params, mu_dtype),
                                tu.tree_zeros_like(params))

    def update(updates, state, params=None):
        del params
        b2_ = jnp.where(state.count > 0, b2, 0)
        b1_ = jnp.where(state.count > 0, b1, 1)
        nu = tu.tree_update_moment_per_elem_norm(updates, state.nu, b2_, 2)
        normalized = _map(lambda g, v: g / jnp.maximum(jnp.sqrt(v), eps), updates, state.nu)
        if use_clipping:
            bound = clip_value_fn(state.count)
            normalized = _map(lambda x: jnp.clip(x, -bound, bound), normalized)
        mu = tu.tree_update_moment(normalized, state.mu, b1_, 1)
        new_updates = tu.tree_update_moment(normalized, mu, b1_, 1) if nesterov else mu
        if mu_dtype is not None:
            mu = tu.tree_cast(mu, mu_dtype)
        return new_updates, ScaleByAdamState(safe_int32_increment(state.count), mu, nu)
    return GradientTransformation(init, update)


def adopt(learning_rate, b1=0.9, b2=0.9999, eps=1e-6, mu_dtype=None, *, nesterov: bool = False,
          use_clipping: bool = True, clip_value_fn: Callable = _quarter_power
          ) -> GradientTransformation:
    """ADOPT: scale_by_adopt, then the learning rate."""
    return chain(scale_by_adopt(b1=b1, b2=b2, eps=eps, mu_dtype=mu_dtype, nesterov=nesterov,
                                use_clipping=use_clipping, clip_value_fn=clip_value_fn),
                 scale_by_learning_rate(learning_rate))
