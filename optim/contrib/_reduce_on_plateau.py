"""reduce_on_plateau: scales the updates down by `factor` when a monitored loss stops
improving, as Keras' and PyTorch's ReduceLROnPlateau do for the learning rate."""
from __future__ import annotations

from typing import Any, NamedTuple

import corejax as jax
import corejax.numpy as jnp
from corejax import lax

from optim.base import GradientTransformationExtraArgs, safe_int32_increment
from optim.contrib._common import float_dtype

__all__ = ["reduce_on_plateau", "ReduceLROnPlateauState"]


class ReduceLROnPlateauState(NamedTuple):
    scale: Any               # the factor the updates are multiplied by
    best_value: Any          # the best averaged loss so far
    plateau_count: Any       # int32: evaluations without improvement
    cooldown_count: Any      # int32: evaluations left before plateaus count again
    count: Any               # int32: losses accumulated into avg_value
    avg_value: Any           # mean of the losses accumulated since the last evaluation


def reduce_on_plateau(factor: float = 0.1, patience: int = 10, rtol: float = 1e-4,
                      atol: float = 0.0, cooldown: int = 0, accumulation_size: int = 1,
                      min_scale: float = 0.0) -> GradientTransformationExtraArgs:
    """Multiplies the updates by a scale that starts at 1 and is multiplied by `factor` (never
    below `min_scale`) after `patience` evaluations without improvement. An evaluation happens
    every `accumulation_size` updates, on the mean of their `value=` losses; it improves when
    mean < (1 - rtol) * best - atol. After a reduction, `cooldown` evaluations are ignored.
    Call `update(updates, state, params, value=loss)`."""
    if factor <= 0.0 or factor >= 1.0:
        raise ValueError(f"reduce_on_plateau: factor must be in (0, 1), got factor = {factor}.")
    if rtol < 0.0 or atol < 0.0:
        raise ValueError("reduce_on_plateau: rtol and atol must be non-negative, got "
                         f"rtol = {rtol} and atol = {atol}.")
    if rtol == 0.0 and atol == 0.0:
        raise ValueError("reduce_on_plateau: at least one of rtol or atol must be positive, "
                         f"got rtol = {rtol} and atol = {atol}.")
    if rtol > 1.0:
        raise ValueError(f"reduce_on_plateau: rtol must be <= 1.0, got rtol = {rtol}.")

    def init(params):
        high = float_dtype(params, "highest")
        return ReduceLROnPlateauState(
            scale=jnp.asarray(1.0, float_dtype(params, "lowest")),
            best_value=jnp.asarray(float("inf"), high),
            plateau_count=jnp.asarray(0, jnp.int32), cooldown_count=jnp.asarray(0, jnp.int32),
            count=jnp.asarray(0, jnp.int32), avg_value=jnp.asarray(0.0, high))

    def evaluate(state):
        improved = state.avg_value < (1 - rtol) * state.best_value - atol
        best = jnp.where(improved, state.avg_value.astype(state.best_value.dtype),
                         state.best_value)
        plateau = jnp.where(improved, 0, safe_int32_increment(state.plateau_count))
        reduce = plateau == patience
        cooling = state.cooldown_count > 0
        new_plateau = jnp.where(cooling, 0, jnp.where(reduce, 0, plateau)).astype(jnp.int32)
        reduced = jnp.maximum(jnp.where(reduce, state.scale * factor, state.scale), min_scale)
        new_scale = jnp.where(cooling, state.scale, reduced).astype(state.scale.dtype)
        new_cooldown = jnp.where(cooling, state.cooldown_count - 1,
                                 jnp.where(reduce, cooldown, 0)).astype(jnp.int32)
        return ReduceLROnPlateauState(new_scale, best.astype(state.best_value.dtype),
                                      new_plateau, new_cooldown, jnp.asarray(0, jnp.int32),
                                      jnp.asarray(0.0, state.avg_value.dtype))

    def update(updates, state, params=None, *, value, **extra_args):
        del params, extra_args
        count = safe_int32_increment(state.count)
        avg = (state.count * state.avg_value + jnp.asarray(value).astype(state.avg_value.dtype)
               ) / count
        state = state._replace(avg_value=avg.astype(state.avg_value.dtype), count=count)
        state = lax.cond(count == accumulation_size, lambda: evaluate(state), lambda: state)
        return jax.tree_util.tree_map(lambda g: state.scale * g, updates), state
    return GradientTransformationExtraArgs(init, update)
