"""Mechanic (Cutkosky, Defazio & Mehta, 2023): learns a scale for a base optimizer's steps by
online betting over several averaging horizons."""
from __future__ import annotations

from typing import Any, NamedTuple

import corejax as jax
import corejax.numpy as jnp
from corejax import lax

from optim import tree_utils as tu
from optim.base import (GradientTransformation, GradientTransformationExtraArgs, params_required,
                        safe_int32_increment, with_extra_args_support)
from optim.contrib._common import float_dtype

__all__ = ["mechanize", "MechanicState"]

_map = jax.tree_util.tree_map


class MechanicState(NamedTuple):
    base_optimizer_state: Any
    count: Any
    r: Any                   # (num_betas,) rewards
    m: Any                   # (num_betas,) max |h|
    v: Any                   # (num_betas,) sum of h^2
    s: Any                   # (num_betas,) the scales bet
    x0: Any                  # the params the scaled steps start from


def mechanize(base_optimizer: GradientTransformation, weight_decay=0.01, eps=1e-8,
              s_init=1e-6, num_betas: int = 6) -> GradientTransformationExtraArgs:
    """Wraps `base_optimizer` (give it learning rate 1): its steps from x0 are multiplied by a
    learned scale sum(s), one bet per beta = 1 - 0.1 ** i, i = 1..num_betas."""
    base_optimizer = with_extra_args_support(base_optimizer)

    def init(params):
        dtype = float_dtype(params, "lowest")
        zeros = jnp.zeros([num_betas], dtype)
        return MechanicState(base_optimizer.init(params), jnp.zeros([], jnp.int32), zeros,
                             zeros, zeros, jnp.ones([num_betas], dtype) * s_init, params)

    def update(updates, state, params=None, **extra_args):
        params_required("mechanize", params)
        base_updates, base_state = base_optimizer.update(
            updates, state.base_optimizer_state, params, **extra_args)
        x0 = lax.cond(state.count == 0, lambda: params, lambda: state.x0)
        s_sum = jnp.sum(state.s)
        grad_norm = tu.tree_l2_norm(updates)
        param_norm = tu.tree_l2_norm(params)
        decayed = _map(lambda g, p: g + weight_decay * s_sum * grad_norm / (param_norm + eps) * p,
                       updates, params)
        delta_prev = _map(lambda x, x0i: (x0i - x) / (s_sum + eps), params, x0)
        delta = _map(lambda dp, u: dp - u, delta_prev, base_updates)
        h = tu.tree_vdot(decayed, delta_prev)
        clipped_h = lax.clamp(-state.m, jnp.ones_like(state.m) * h, state.m)
        betas = jnp.asarray([1.0 - 0.1 ** i for i in range(1, num_betas + 1)], state.s.dtype)
        m = jnp.maximum(betas * state.m, jnp.abs(h) + eps)
        v = betas ** 2 * state.v + h ** 2
        r = betas * state.r + clipped_h * state.s
        wealth = s_init / betas.size * m + jnp.maximum(0.0, r)
        s = wealth / (jnp.sqrt(v) + eps)
        new_params = _map(lambda x0i, d: x0i - jnp.sum(s) * d, x0, delta)
        new_updates = _map(lambda new, old: new - old, new_params, params)
        return new_updates, MechanicState(base_state, safe_int32_increment(state.count), r, m,
                                          v, s, x0)
    return GradientTransformationExtraArgs(init, update)
