"""Sharpness-aware minimization (Foret et al., 2021) as a transform, and `normalize`."""
from __future__ import annotations

from typing import Any, NamedTuple, Optional

import corejax as jax
import corejax.numpy as jnp
from corejax import lax

from optim import tree_utils as tu
from optim.base import (EmptyState, GradientTransformation, GradientTransformationExtraArgs,
                        apply_updates, zero_count)

__all__ = ["normalize", "NormalizeState", "sam", "SAMState"]

_map = jax.tree_util.tree_map

NormalizeState = EmptyState


def normalize() -> GradientTransformation:
    """Divides the updates by their global L2 norm."""
    def init(params):
        del params
        return NormalizeState()

    def update(updates, state, params=None):
        del params
        norm = tu.tree_l2_norm(updates)
        return _map(lambda g: g / norm, updates), state
    return GradientTransformation(init, update)


class SAMState(NamedTuple):
    steps_since_sync: Any    # int32
    opt_state: Any           # the outer optimizer's state
    adv_state: Any           # the adversarial optimizer's state
    cache: Any               # params at the start of the period (None in opaque mode)


def sam(optimizer: GradientTransformation, adv_optimizer: GradientTransformation,
        sync_period: int = 2, reset_state: bool = True, opaque_mode: bool = False,
        batch_axis_name: Optional[str] = None) -> GradientTransformationExtraArgs:
    """SAM: `sync_period - 1` adversarial steps of `adv_optimizer` (e.g. chain(normalize(),
    sgd(rho))), then one step of `optimizer` taken from the period's starting params with the
    gradient at the adversarial point.

    Transparent mode (default): every call to update is one of these steps; the params the
    caller sees visit the adversarial points. Opaque mode: one call does a whole period, so
    update needs `grad_fn=lambda params, i: grads` as a keyword argument.
    """
    if sync_period < 1:
        raise ValueError(f"sam: sync_period must be >= 1, got {sync_period}.")

    def init(params):
        return SAMState(zero_count(), optimizer.init(params), adv_optimizer.init(params),
                        None if opaque_mode else params)

    def pick(cond, if_true, if_false):
        return _map(lambda t, f: cond * t + (1 - cond) * f, if_true, if_false)

    def transparent_update(updates, state, params=None, *, grad_fn=None):
        del grad_fn
        first = state.steps_since_sync == 0
        last = state.steps_since_sync == sync_period - 1
        adv_updates, adv_state = adv_optimizer.update(updates, state.adv_state, params)
        adv_updates = _map(lambda u: -u, adv_updates)
        opt_updates, opt_state = optimizer.update(updates, state.opt_state, state.cache)
        opt_updates = _map(lambda c, p, u: c - p + u, state.cache, params, opt_updates)
        cache = pick(first, params, state.cache)
        new_updates = pick(last, opt_updates, adv_updates)
        if reset_state:
            adv_state = pick(last, adv_optimizer.init(params), adv_state)
        else:
            adv_state = pick(last, state.adv_state, adv_state)
        opt_state = pick(last, opt_state, state.opt_state)
        steps = (state.steps_since_sync + 1) % sync_period
        return new_updates, SAMState(steps, opt_state, adv_state, cache)

    def opaque_update(updates, state, params=None, *, grad_fn=None):
        if grad_fn is None:
            raise ValueError("sam(opaque_mode=True) needs update(..., grad_fn=fn) with "
                             "fn(params, i) -> gradients.")
        adv_params, adv_updates, adv_state = params, updates, state.adv_state
        for i in range(sync_period - 1):
            adv_updates, adv_state = adv_optimizer.update(adv_updates, adv_state, adv_params)
            adv_updates = _map(lambda u: -u, adv_updates)
            adv_params = apply_updates(adv_params, adv_updates)
            adv_updates = grad_fn(adv_params, i)
            if batch_axis_name is not None:
                adv_updates = lax.pmean(adv_updates, axis_name=batch_axis_name)
        if reset_state:
            adv_state = adv_optimizer.init(params)
        new_updates, opt_state = optimizer.update(adv_updates, state.opt_state, params)
        return new_updates, SAMState(jnp.zeros([], jnp.int32), opt_state, adv_state, None)
    return GradientTransformationExtraArgs(
        init, opaque_update if opaque_mode else transparent_update)
