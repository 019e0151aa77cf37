"""Prodigy (Mishchenko & Defazio, 2023): Adam with a learning rate estimated on the fly from
the distance travelled from the initial point."""
from __future__ import annotations

from typing import Any, NamedTuple

import corejax as jax
import corejax.numpy as jnp

from optim import tree_utils as tu
from optim.base import GradientTransformationExtraArgs, params_required, safe_int32_increment
from optim.contrib._common import float_dtype, value_at

__all__ = ["prodigy", "ProdigyState"]

_map = jax.tree_util.tree_map


class ProdigyState(NamedTuple):
    exp_avg: Any
    exp_avg_sq: Any
    grad_sum: Any
    params0: Any
    estim_lr: Any            # the distance estimate d
    numerator_weighted: Any
    count: Any


def prodigy(learning_rate=1.0, betas=(0.9, 0.999), beta3=None, eps=1e-8, estim_lr0=1e-6,
            estim_lr_coef=1.0, weight_decay=0.0, safeguard_warmup: bool = False
            ) -> GradientTransformationExtraArgs:
    """Prodigy. `learning_rate` multiplies the estimated one (keep it 1 unless scheduling);
    `estim_lr0` is the initial distance estimate; `beta3` defaults to sqrt(betas[1])."""
    beta1, beta2 = betas
    if beta3 is None:
        beta3 = beta2 ** 0.5

    def init(params):
        dtype = float_dtype(params, "lowest")
        zeros = tu.tree_zeros_like(params)
        return ProdigyState(zeros, zeros, zeros, params, jnp.asarray(estim_lr0, dtype),
                            jnp.zeros((), dtype), jnp.zeros((), jnp.int32))

    def update(updates, state, params=None, **extra_args):
        del extra_args
        params_required("prodigy", params)
        count_inc = safe_int32_increment(state.count)
        sched = value_at(learning_rate, state.count)
        d = state.estim_lr
        bc = (1 - beta2 ** count_inc) ** 0.5 / (1 - beta1 ** count_inc)
        dlr = jnp.asarray(d * sched * bc, d.dtype)
        dg = _map(lambda g: d * g, updates)
        numerator_acum = tu.tree_vdot(updates, _map(lambda p0, p: p0 - p, state.params0,
                                                    params))
        exp_avg = _map(lambda m, x: beta1 * m + (1 - beta1) * x, state.exp_avg, dg)
        exp_avg_sq = _map(lambda v, x: beta2 * v + (1 - beta2) * x * x, state.exp_avg_sq, dg)
        step = d if safeguard_warmup else dlr
        grad_sum = _map(lambda s, x: beta3 * s + step * x / estim_lr0, state.grad_sum, dg)
        numerator = beta3 * state.numerator_weighted + d / estim_lr0 * dlr * numerator_acum
        denominator = tu.tree_sum(_map(jnp.abs, grad_sum))
        new_d = jnp.maximum(d, estim_lr_coef * numerator / denominator)
        new_updates = _map(lambda m, v, p: -weight_decay * dlr * p
                           - dlr * m / (jnp.sqrt(v) + new_d * eps), exp_avg, exp_avg_sq, params)
        return new_updates, ProdigyState(exp_avg, exp_avg_sq, grad_sum, state.params0, new_d,
                                         numerator, count_inc)
    return GradientTransformationExtraArgs(init, update)
