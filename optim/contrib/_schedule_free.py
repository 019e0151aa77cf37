"""Schedule-free optimization (Defazio et al., 2024): iterate averaging in place of a
learning-rate schedule, wrapping a base optimizer."""
from __future__ import annotations

from typing import Any, NamedTuple, Optional

import corejax as jax
import corejax.numpy as jnp

from optim import tree_utils as tu
from optim.alias import sgd
from optim.base import (GradientTransformation, GradientTransformationExtraArgs,
                        safe_int32_increment, with_extra_args_support)
from optim.combine import chain
from optim.contrib._common import float_dtype
from optim.schedules import linear_schedule
from optim.transform import add_decayed_weights, scale_by_learning_rate, scale_by_rms

__all__ = ["schedule_free", "schedule_free_sgd", "schedule_free_adamw",
           "schedule_free_eval_params", "ScheduleFreeState"]

_map = jax.tree_util.tree_map


class ScheduleFreeState(NamedTuple):
    b1: Any                  # the interpolation coefficient, in the params' dtype
    weight_sum: Any          # sum of the averaging weights so far
    step_count: Any          # int32, starting at 1
    max_lr: Any              # largest learning rate seen
    base_optimizer_state: Any
    z: Any                   # the base optimizer's iterate


def schedule_free_eval_params(state, params):
    """The averaged iterate x, where a schedule-free optimizer's params are y; evaluate (and
    test) the model at these."""
    b1, z = getattr(state, "b1", None), getattr(state, "z", None)
    if b1 is None or z is None:
        raise ValueError("schedule_free_eval_params needs a ScheduleFreeState (the state of "
                         f"schedule_free and its aliases), got {type(state).__name__}.")
    return _map(lambda y, zi: (y - (1.0 - b1) * zi) / b1, params, z)


def schedule_free(base_optimizer: GradientTransformation, learning_rate, b1=0.9,
                  weight_lr_power=2.0, state_dtype=None) -> GradientTransformationExtraArgs:
    """Makes `base_optimizer` schedule-free: it steps z; the averaged iterate x weighs each
    step by max_lr ** weight_lr_power; the params returned (y) interpolate x and z by `b1`.
    `learning_rate` (number or schedule) must be the one inside `base_optimizer`."""
    base_optimizer = with_extra_args_support(base_optimizer)

    def init(params):
        dtype = float_dtype(params, "lowest")
        z = params if state_dtype is None else tu.tree_cast(params, state_dtype)
        z = _map(lambda t: jnp.array(t, copy=True), z)
        return ScheduleFreeState(jnp.asarray(b1, dtype), jnp.zeros([], dtype),
                                 jnp.ones([], jnp.int32), jnp.zeros([], dtype),
                                 base_optimizer.init(params), z)

    def update(grads, state, params=None, **extra_args):
        lr = learning_rate
        if callable(learning_rate):
            lr = jnp.asarray(learning_rate(state.step_count), state.max_lr.dtype)
        max_lr = jnp.maximum(state.max_lr, lr)
        weight = max_lr ** weight_lr_power
        total = state.weight_sum + weight
        ck = jnp.where(jnp.logical_or(jnp.isnan(weight), jnp.isnan(total)),
                       jnp.full(jnp.shape(weight), jnp.nan),
                       jnp.nan_to_num(weight / total, nan=0.0, posinf=jnp.inf))
        base_updates, base_state = base_optimizer.update(grads, state.base_optimizer_state,
                                                         params, **extra_args)
        z = _map(lambda zi, u: jnp.asarray(zi + u).astype(jnp.asarray(zi).dtype), state.z,
                 base_updates)
        prev_x = _map(lambda y, zi: (y - (1.0 - b1) * zi) / b1, params, state.z)
        x = _map(lambda xi, zi: (1.0 - ck) * xi + ck * zi, prev_x, z)
        y = _map(lambda xi, zi: b1 * xi + (1.0 - b1) * zi, x, z)
        updates = _map(lambda new, old: new - old, y, params)
        return updates, ScheduleFreeState(state.b1, total, safe_int32_increment(
            state.step_count), max_lr, base_state, z)
    return GradientTransformationExtraArgs(init, update)


def schedule_free_sgd(learning_rate=1.0, warmup_steps: Optional[int] = None, b1=0.9,
                      weight_decay=None, weight_lr_power=2.0, state_dtype=None
                      ) -> GradientTransformationExtraArgs:
    """Schedule-free SGD, with an optional linear warmup and decoupled weight decay."""
    if warmup_steps is not None:
        learning_rate = linear_schedule(0, learning_rate, warmup_steps)   # Optax's warmup
    optimizer = sgd(learning_rate)
    if weight_decay is not None:
        optimizer = chain(add_decayed_weights(weight_decay), optimizer)
    return schedule_free(optimizer, learning_rate=learning_rate, b1=b1,
                         weight_lr_power=weight_lr_power, state_dtype=state_dtype)


def schedule_free_adamw(learning_rate=0.0025, warmup_steps: Optional[int] = None, b1=0.9,
                        b2=0.999, eps=1e-8, weight_decay=0.0, weight_lr_power=2.0,
                        state_dtype=None) -> GradientTransformationExtraArgs:
    """Schedule-free AdamW: bias-corrected RMS scaling (eps outside the root), decoupled
    weight decay and the learning rate, made schedule-free."""
    if warmup_steps is not None:
        learning_rate = linear_schedule(0, learning_rate, warmup_steps)   # Optax's warmup
    optimizer = chain(scale_by_rms(decay=b2, eps=eps, eps_in_sqrt=False, bias_correction=True),
                      add_decayed_weights(weight_decay), scale_by_learning_rate(learning_rate))
    return schedule_free(optimizer, learning_rate=learning_rate, b1=b1,
                         weight_lr_power=weight_lr_power, state_dtype=state_dtype)
