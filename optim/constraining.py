"""Transforms that constrain the updates: non-negative parameters, NaN-free updates."""
from __future__ import annotations

from typing import Any, NamedTuple

import corejax as jax
import corejax.numpy as jnp

from optim.base import EmptyState, GradientTransformation, params_required

__all__ = ["keep_params_nonnegative", "NonNegativeParamsState", "zero_nans", "ZeroNansState"]

NonNegativeParamsState = EmptyState


def keep_params_nonnegative() -> GradientTransformation:
    """Changes each update that would take its parameter below zero to one landing it on zero
    (the params must be non-negative to start with)."""
    def init(params):
        del params
        return NonNegativeParamsState()

    def update(updates, state, params=None):
        params_required("keep_params_nonnegative", params)
        new_updates = jax.tree_util.tree_map(
            lambda p, u: None if p is None else jnp.where(p + u < 0.0, -p, u), params, updates,
            is_leaf=lambda x: x is None)
        return new_updates, state
    return GradientTransformation(init, update)


class ZeroNansState(NamedTuple):
    found_nan: Any           # per leaf, bool: whether the latest update of that leaf had a NaN


def zero_nans() -> GradientTransformation:
    """Replaces NaNs in the updates by zeros and records, per leaf, whether there were any."""
    def init(params):
        return ZeroNansState(jax.tree_util.tree_map(lambda _: jnp.asarray(False, jnp.bool_),
                                                    params))

    def update(updates, state, params=None):
        del state, params
        found = jax.tree_util.tree_map(lambda u: jnp.any(jnp.isnan(u)), updates)
        cleaned = jax.tree_util.tree_map(
            lambda u: jnp.where(jnp.isnan(u), jnp.zeros_like(u), u), updates)
        return cleaned, ZeroNansState(found)
    return GradientTransformation(init, update)
