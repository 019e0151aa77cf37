"""AdEMAMix (Pagliardini et al., 2024): Adam with a second, slow momentum mixed in, and its
simplified form (Morwani et al., 2025)."""
from __future__ import annotations

from typing import Any, Callable, NamedTuple, Optional, Union

import corejax as jax
import corejax.numpy as jnp

from optim import tree_utils as tu
from optim.base import GradientTransformation, safe_int32_increment, zero_count
from optim.combine import chain
from optim.contrib._common import value_at
from optim.transform import add_decayed_weights, scale_by_learning_rate

__all__ = ["ademamix", "scale_by_ademamix", "ScaleByAdemamixState", "simplified_ademamix",
           "scale_by_simplified_ademamix", "ScaleBySimplifiedAdEMAMixState"]

_map = jax.tree_util.tree_map


class ScaleByAdemamixState(NamedTuple):
    count: Any
    count_m2: Any
    m1: Any
    m2: Any
    nu: Any


def scale_by_ademamix(b1=0.9, b2=0.999, b3=0.9999, alpha=6.0, eps=1e-8, eps_root=0.0,
                      mu_dtype=None) -> GradientTransformation:
    """(m1_hat + alpha * m2) / (sqrt(nu_hat + eps_root) + eps): m1 the fast EMA (b1, bias
    corrected), m2 the slow one (b3, not corrected); b3 and alpha may be schedules."""
    def init(params):
        zeros = tu.tree_zeros_like(params, mu_dtype)
        return ScaleByAdemamixState(zero_count(), zero_count(), zeros, zeros, zeros)

    def update(updates, state, params=None):
        del params
        c_b3 = value_at(b3, state.count_m2)
        c_alpha = value_at(alpha, state.count_m2)
        m1 = tu.tree_update_moment(updates, state.m1, b1, 1)
        m2 = tu.tree_update_moment(updates, state.m2, c_b3, 1)
        nu = tu.tree_update_moment_per_elem_norm(updates, state.nu, b2, 2)
        count_inc = safe_int32_increment(state.count)
        m1_hat = tu.tree_bias_correction(m1, b1, count_inc)
        nu_hat = tu.tree_bias_correction(nu, b2, count_inc)
        new_updates = _map(lambda a, b, v: (a + c_alpha * b) / (jnp.sqrt(v + eps_root) + eps),
                           m1_hat, m2, nu_hat)
        return new_updates, ScaleByAdemamixState(count_inc, safe_int32_increment(
            state.count_m2), m1, m2, nu)
    return GradientTransformation(init, update)


def ademamix(learning_rate, b1=0.9, b2=0.999, b3=0.9999, alpha=5.0, eps=1e-8, eps_root=0.0,
             mu_dtype=None, weight_decay=0.0,
             mask: Optional[Union[Any, Callable[[Any], Any]]] = None) -> GradientTransformation:
    """AdEMAMix with decoupled weight decay."""
    return chain(scale_by_ademamix(b1=b1, b2=b2, b3=b3, alpha=alpha, eps=eps, eps_root=eps_root,
                                   mu_dtype=mu_dtype),
                 add_decayed_weights(weight_decay, mask), scale_by_learning_rate(learning_rate))


class ScaleBySimplifiedAdEMAMixState(NamedTuple):
    t: Any
    m: Any
    n: Any


def scale_by_simplified_ademamix(b1=0.99, b2=0.95, alpha=0.0, eps=1e-8, eps_root=0.0
                                 ) -> GradientTransformation:
    """(m + alpha * g) / (sqrt(n_hat + eps_root) + eps) with m = g + b1 * m (an undamped
    sum) and n the bias-corrected EMA of g^2."""
    def init(params):
        return ScaleBySimplifiedAdEMAMixState(jnp.asarray(0, jnp.int32),
                                              tu.tree_zeros_like(params),
                                              tu.tree_zeros_like(params))

    def update(updates, state, params=None):
        del params
        c_alpha = value_at(alpha, state.t)
        m = _map(lambda g, mi: g + b1 * mi, updates, state.m)
        n = _map(lambda g, ni: g * g + b2 * (ni - g * g), updates, state.n)
        t = safe_int32_increment(state.t)
        n_hat = tu.tree_bias_correction(n, b2, t)
        new_updates = _map(lambda mi, g, ni: (mi + c_alpha * g) / (jnp.sqrt(ni + eps_root) + eps),
                           m, updates, n_hat)
        return new_updates, ScaleBySimplifiedAdEMAMixState(t, m, n)
    return GradientTransformation(init, update)


def simplified_ademamix(learning_rate, b1=0.99, b2=0.95, alpha=0.0, eps=1e-8, eps_root=0.0,
                        weight_decay=0.0,
                        mask: Optional[Union[Any, Callable[[Any], Any]]] = None
                        ) -> GradientTransformation:
    """Simplified AdEMAMix with decoupled weight decay."""
    return chain(scale_by_simplified_ademamix(b1=b1, b2=b2, alpha=alpha, eps=eps,
                                              eps_root=eps_root),
                 add_decayed_weights(weight_decay, mask), scale_by_learning_rate(learning_rate))
