"""D-Adaptation AdamW (Defazio & Mishchenko, 2023): AdamW whose learning rate is a running
lower bound on the distance to the solution."""
from __future__ import annotations

from typing import Any, NamedTuple

import corejax as jax
import corejax.numpy as jnp

from optim import tree_utils as tu
from optim.base import GradientTransformationExtraArgs, params_required, safe_int32_increment
from optim.contrib._common import float_dtype, value_at

__all__ = ["dadapt_adamw", "DAdaptAdamWState"]

_map = jax.tree_util.tree_map


class DAdaptAdamWState(NamedTuple):
    exp_avg: Any
    exp_avg_sq: Any
    grad_sum: Any
    estim_lr: Any            # the distance estimate d
    numerator_weighted: Any
    count: Any


def dadapt_adamw(learning_rate=1.0, betas=(0.9, 0.999), eps=1e-8, estim_lr0=1e-6,
                 weight_decay=0.0) -> GradientTransformationExtraArgs:
    """D-Adapted AdamW; `learning_rate` multiplies the estimate (1 unless scheduling)."""
    beta1, beta2 = betas
    sb2 = beta2 ** 0.5

    def init(params):
        dtype = float_dtype(params, "lowest")
        zeros = tu.tree_zeros_like(params)
        return DAdaptAdamWState(zeros, zeros, zeros, jnp.asarray(estim_lr0, dtype),
                                jnp.zeros([], dtype), jnp.zeros([], jnp.int32))

    def update(updates, state, params=None, **extra_args):
        del extra_args
        params_required("dadapt_adamw", params)
        sched = value_at(learning_rate, state.count)
        count_inc = safe_int32_increment(state.count)
        bc = (1 - beta2 ** count_inc) ** 0.5 / (1 - beta1 ** count_inc)
        dlr = (state.estim_lr * sched * bc).astype(state.numerator_weighted.dtype)
        s_weighted = _map(lambda s, v: s / (jnp.sqrt(v) + eps), state.grad_sum,
                          state.exp_avg_sq)
        numerator_acum = tu.tree_vdot(updates, s_weighted)
        exp_avg = _map(lambda m, g: beta1 * m + (1 - beta1) * dlr * g, state.exp_avg, updates)
        exp_avg_sq = _map(lambda v, g: beta2 * v + (1 - beta2) * g * g, state.exp_avg_sq,
                          updates)
        grad_sum = _map(lambda s, g: sb2 * s + (1 - sb2) * dlr * g, state.grad_sum, updates)
        l1 = tu.tree_sum(_map(jnp.abs, grad_sum))
        numerator = sb2 * state.numerator_weighted + (1 - sb2) * dlr * numerator_acum
        estim_lr = jnp.maximum(state.estim_lr, numerator / ((1 - sb2) * l1))
        new_updates = _map(lambda m, v, p: -weight_decay * dlr * p - m / (jnp.sqrt(v) + eps),
                           exp_avg, exp_avg_sq, params)
        return new_updates, DAdaptAdamWState(exp_avg, exp_avg_sq, grad_sum, estim_lr,
                                             numerator, count_inc)
    return GradientTransformationExtraArgs(init, update)
