"""MADGRAD (Defazio & Jelassi, 2021): dual averaging with a cube-root preconditioner and
momentum by iterate averaging."""
from __future__ import annotations

from typing import Any, NamedTuple

import corejax as jax
import corejax.numpy as jnp

from optim import tree_utils as tu
from optim.base import GradientTransformation, params_required, safe_int32_increment, zero_count
from optim.combine import chain
from optim.contrib._common import value_at
from optim.transform import add_decayed_weights

__all__ = ["madgrad", "scale_by_madgrad", "MadgradState"]

_map = jax.tree_util.tree_map


class MadgradState(NamedTuple):
    count: Any
    grad_sum_sq: Any
    s: Any
    x0: Any


def scale_by_madgrad(learning_rate, momentum: float = 0.9, eps: float = 1e-6
                     ) -> GradientTransformation:
    """MADGRAD's step (the learning rate is part of it: lambda_k = (lr + eps) sqrt(k + 1))."""
    def init(params):
        return MadgradState(zero_count(), tu.tree_zeros_like(params),
                            tu.tree_zeros_like(params), _map(lambda x: x, params))

    def update(updates, state, params=None):
        params_required("scale_by_madgrad", params)
        lamb = (value_at(learning_rate, state.count) + eps) * jnp.sqrt(state.count + 1)
        grad_sum_sq = _map(lambda acc, g: acc + (lamb * g ** 2).astype(g.dtype),
                           state.grad_sum_sq, updates)
        s = _map(lambda acc, g: acc + (lamb * g).astype(g.dtype), state.s, updates)
        z = _map(lambda x0, si, acc: x0 - si / (jnp.cbrt(acc) + eps), state.x0, s, grad_sum_sq)
        new_x = _map(lambda zi, x: (1 - momentum) * zi + momentum * x, z, params)
        new_updates = _map(lambda new, old: new - old, new_x, params)
        return new_updates, MadgradState(safe_int32_increment(state.count), grad_sum_sq, s,
                                         state.x0)
    return GradientTransformation(init, update)


def madgrad(learning_rate, momentum: float = 0.9, weight_decay: float = 0.0,
            eps: float = 1e-6) -> GradientTransformation:
    """MADGRAD with weight decay added to the gradient."""
    return chain(add_decayed_weights(weight_decay),
                 scale_by_madgrad(learning_rate=learning_rate, momentum=momentum, eps=eps))
