"""DoG and DoWG (Ivgi et al., 2023; Khaled et al., 2023): step sizes from the distance
travelled over (weighted) accumulated gradient norms."""
from __future__ import annotations

from typing import Any, Callable, NamedTuple, Optional, Union

import corejax.numpy as jnp

from optim import tree_utils as tu
from optim.base import GradientTransformation, identity
from optim.combine import chain
from optim.contrib._common import float_dtype
from optim.transform import add_decayed_weights, scale_by_learning_rate

__all__ = ["dog", "scale_by_dog", "DoGState", "dowg", "scale_by_dowg", "DoWGState"]


class DoGState(NamedTuple):
    is_init_step: Any
    init_params: Any
    max_dist: Any
    sum_sq_norm_grads: Any


def scale_by_dog(init_step: tuple, eps=1e-8) -> GradientTransformation:
    """DoG's step size max_dist / sqrt(sum of squared gradient norms + eps). `init_step` is
    ('distance', r), ('heuristic', r) (r * (1 + |params|)) or ('learning_rate', lr) (the
    first step's size)."""
    kind, value = init_step
    if kind not in ("distance", "heuristic", "learning_rate"):
        raise ValueError(f"scale_by_dog: invalid init_step kind {kind!r}; use 'distance', "
                         "'heuristic' or 'learning_rate'.")

    def init(params):
        dtype = float_dtype(params, "lowest")
        if kind == "distance":
            r_eps = value
        elif kind == "heuristic":
            r_eps = value * (1 + tu.tree_l2_norm(params))
        else:
            r_eps = 0.0
        return DoGState(jnp.asarray(True), params, jnp.asarray(r_eps, dtype),
                        jnp.asarray(0.0, dtype))

    def update(updates, state, params=None):
        dist = tu.tree_l2_norm(tu.tree_sub(state.init_params, params))
        max_dist = jnp.maximum(state.max_dist, dist)
        sum_sq = state.sum_sq_norm_grads + tu.tree_l2_norm(updates, squared=True)
        lr = max_dist / jnp.sqrt(sum_sq + eps)
        if kind == "learning_rate":
            lr = jnp.where(state.is_init_step, value, lr)
        return (tu.tree_scalar_mul(lr, updates),
                DoGState(jnp.asarray(False), state.init_params, max_dist, sum_sq))
    return GradientTransformation(init, update)


def dog(learning_rate=1.0, init_step: tuple = ("heuristic", 1e-6), eps=1e-8,
        weight_decay=None, mask: Optional[Union[Any, Callable[[Any], Any]]] = None
        ) -> GradientTransformation:
    """DoG: optional weight decay, DoG's step size, then `learning_rate` (a multiplier)."""
    return chain(add_decayed_weights(weight_decay, mask) if weight_decay is not None
                 else identity(), scale_by_dog(init_step, eps),
                 scale_by_learning_rate(learning_rate))


class DoWGState(NamedTuple):
    init_params: Any
    weighted_sq_norm_grads: Any
    estim_sq_dist: Any


def scale_by_dowg(init_estim_sq_dist=None, eps=1e-4) -> GradientTransformation:
    """DoWG's step size: squared distance estimate over the root of the distance-weighted sum
    of squared gradient norms."""
    def init(params):
        dtype = float_dtype(params, "lowest")
        start = eps if init_estim_sq_dist is None else init_estim_sq_dist
        return DoWGState(params, jnp.asarray(0.0, dtype), jnp.asarray(start, dtype))

    def update(updates, state, params=None):
        sq_dist = tu.tree_l2_norm(tu.tree_sub(state.init_params, params), squared=True)
        estim = jnp.maximum(state.estim_sq_dist, sq_dist)
        weighted = estim * tu.tree_l2_norm(updates, squared=True) + state.weighted_sq_norm_grads
        lr = estim / (jnp.sqrt(weighted) + eps)
        return tu.tree_scalar_mul(lr, updates), DoWGState(state.init_params, weighted, estim)
    return GradientTransformation(init, update)


def dowg(learning_rate=1.0, init_estim_sq_dist=None, eps=1e-4, weight_decay=None,
         mask: Optional[Union[Any, Callable[[Any], Any]]] = None) -> GradientTransformation:
    """DoWG: optional weight decay, DoWG's step size, then `learning_rate` (a multiplier)."""
    return chain(add_decayed_weights(weight_decay, mask) if weight_decay is not None
                 else identity(), scale_by_dowg(init_estim_sq_dist, eps),
                 scale_by_learning_rate(learning_rate))
