"""MoMo and MoMo-Adam (Schaipp et al., 2023): momentum methods with model-based (Polyak-like)
adaptive step sizes; update needs the loss as `value=`."""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

import corejax as jax
import corejax.numpy as jnp
from corejax import lax

from optim import tree_utils as tu
from optim.base import GradientTransformationExtraArgs, params_required, safe_int32_increment
from optim.contrib._common import float_dtype, value_at

__all__ = ["momo", "MomoState", "momo_adam", "MomoAdamState"]

_map = jax.tree_util.tree_map
_EPS = float(np.finfo(np.float64).eps)   # Optax's jnp.finfo(float).eps


def _check_value(value):
    if value is None:
        raise ValueError("MoMo needs the latest loss: call update(updates, state, params, "
                         "value=loss) (jax.value_and_grad gives both).")


class MomoState(NamedTuple):
    exp_avg: Any
    barf: Any
    gamma: Any
    lb: Any
    count: Any


def momo(learning_rate=1.0, beta=0.9, lower_bound=0.0, weight_decay=0.0,
         adapt_lower_bound: bool = False) -> GradientTransformationExtraArgs:
    """MoMo (SGD with momentum): the step is min(learning_rate, Polyak step against the
    loss's `lower_bound`), optionally adapting that bound online."""
    def init(params):
        dtype = float_dtype(params, "lowest")
        return MomoState(tu.tree_zeros_like(params), jnp.zeros([], dtype), jnp.zeros([], dtype),
                         jnp.asarray(lower_bound, dtype), jnp.zeros([], jnp.int32))

    def update(updates, state, params=None, *, value=None, **extra_args):
        del extra_args
        params_required("momo", params)
        _check_value(value)
        bt = jnp.where(state.count == 0, 0.0, beta)
        barf = bt * state.barf + (1 - bt) * jnp.asarray(value, state.barf.dtype)
        exp_avg = _map(lambda m, g: bt * m + (1 - bt) * g, state.exp_avg, updates)
        gamma = bt * state.gamma + (1 - bt) * tu.tree_vdot(updates, params)
        norm_sq = tu.tree_l2_norm(exp_avg, squared=True)
        iprod = tu.tree_vdot(exp_avg, params)
        alpha = value_at(learning_rate, state.count)
        decay = 1 + alpha * weight_decay
        lb = state.lb
        if adapt_lower_bound:
            cap = decay * (barf - gamma) + iprod
            lb = lax.cond(cap < decay * state.lb,
                          lambda: jnp.maximum(cap / (2 * decay), lower_bound),
                          lambda: state.lb)
        t1 = jnp.maximum(decay * (barf - lb - gamma) + iprod, 0.0) / norm_sq
        t1 = jnp.where(norm_sq <= _EPS, 0.0, t1)
        tau = jnp.minimum(alpha, t1)
        new_updates = _map(lambda m, p: -(alpha * weight_decay) / decay * p - tau * m,
                           exp_avg, params)
        new_lb = state.lb
        if adapt_lower_bound:
            new_lb = jnp.maximum(barf + iprod - gamma - 1 / 2 * tau * norm_sq, lower_bound)
        return new_updates, MomoState(exp_avg, barf, gamma, new_lb,
                                      safe_int32_increment(state.count))
    return GradientTransformationExtraArgs(init, update)


class MomoAdamState(NamedTuple):
    exp_avg: Any
    exp_avg_sq: Any
    barf: Any
    gamma: Any
    lb: Any
    count: Any


def momo_adam(learning_rate=1e-2, b1=0.9, b2=0.999, eps=1e-8, lower_bound=0.0,
              weight_decay=0.0, adapt_lower_bound: bool = False
              ) -> GradientTransformationExtraArgs:
    """MoMo-Adam: MoMo's adaptive step with Adam's preconditioner."""
    def init(params):
        dtype = float_dtype(params, "lowest")
        zeros = tu.tree_zeros_like(params)
        return MomoAdamState(zeros, zeros, jnp.zeros([], dtype), jnp.zeros([], dtype),
                             jnp.asarray(lower_bound, dtype), jnp.zeros([], jnp.int32))

    def update(updates, state, params=None, *, value=None, **extra_args):
        del extra_args
        params_required("momo_adam", params)
        _check_value(value)
        count_inc = safe_int32_increment(state.count)
        barf = b1 * state.barf + (1 - b1) * jnp.asarray(value, state.barf.dtype)
        exp_avg = _map(lambda m, g: b1 * m + (1 - b1) * g, state.exp_avg, updates)
        exp_avg_sq = _map(lambda v, g: b2 * v + (1 - b2) * g * g, state.exp_avg_sq, updates)
        bc2 = jnp.asarray(1 - b2 ** count_inc, barf.dtype)
        precond = _map(lambda v: eps + jnp.sqrt(v / bc2), exp_avg_sq)
        norm = tu.tree_vdot(exp_avg, _map(lambda m, pc: m / pc, exp_avg, precond))
        gamma = b1 * state.gamma + (1 - b1) * tu.tree_vdot(updates, params)
        iprod = tu.tree_vdot(exp_avg, params)
        alpha = value_at(learning_rate, state.count)
        bc1 = jnp.asarray(1 - b1 ** count_inc, barf.dtype)
        decay = 1 + alpha * weight_decay
        lb = state.lb
        if adapt_lower_bound:
            cap = decay * (barf - gamma) + iprod
            lb = jnp.where(cap < decay * bc1 * state.lb,
                           jnp.maximum(cap / (2 * bc1 * decay), lower_bound), state.lb)
        t1 = jnp.maximum(decay * (barf - bc1 * lb - gamma) + iprod, 0.0) / norm
        t1 = jnp.where(norm <= _EPS, 0.0, t1)
        tau = jnp.minimum(alpha / bc1, t1)
        new_updates = _map(lambda m, pc, p: -(alpha * weight_decay) / decay * p - tau * m / pc,
                           exp_avg, precond, params)
        new_lb = state.lb
        if adapt_lower_bound:
            new_lb = jnp.maximum((barf + iprod - gamma - 1 / 2 * tau * norm) / bc1, lower_bound)
        return new_updates, MomoAdamState(exp_avg, exp_avg_sq, barf, gamma, new_lb, count_inc)
    return GradientTransformationExtraArgs(init, update)
