"""Lookahead: a fast optimizer explores; every `sync_period` steps slow weights move part of
the way towards the fast ones and the fast ones restart from there (Zhang et al., 2019)."""
from __future__ import annotations

import logging
from typing import Any, NamedTuple

import corejax as jax

from optim.base import GradientTransformation, zero_count

__all__ = ["lookahead", "LookaheadState", "LookaheadParams"]

_map = jax.tree_util.tree_map


class LookaheadState(NamedTuple):
    fast_state: Any
    steps_since_sync: Any    # int32


class LookaheadParams(NamedTuple):
    """The pair of parameter trees lookahead updates; `apply_updates` works on it as a whole."""
    fast: Any
    slow: Any

    @classmethod
    def init_synced(cls, params) -> "LookaheadParams":
        return cls(fast=params, slow=params)


def lookahead(fast_optimizer: GradientTransformation, sync_period: int, slow_step_size,
              reset_state: bool = False) -> GradientTransformation:
    """Wraps `fast_optimizer`: params and updates are `LookaheadParams(fast, slow)`. On the
    steps that end a period, slow += slow_step_size * (fast_new - slow) and fast = slow; with
    `reset_state` the fast optimizer's state restarts there too."""
    if sync_period < 1:
        raise ValueError(f"lookahead: sync_period must be >= 1, got {sync_period}.")

    def init(params):
        fast = getattr(params, "fast", None)
        if fast is None:
            logging.warning("lookahead: params have no `fast` attribute; taking them as the "
                            "fast parameters. Pass LookaheadParams.init_synced(params).")
            fast = params
        return LookaheadState(fast_optimizer.init(fast), zero_count())

    def update(updates, state, params=None):
        if not isinstance(params, LookaheadParams):
            raise ValueError("lookahead's update needs params=LookaheadParams(fast, slow) "
                             f"(LookaheadParams.init_synced(params)), got {type(params).__name__}.")
        fast_updates, fast_state = fast_optimizer.update(updates, state.fast_state, params.fast)
        sync = state.steps_since_sync == sync_period - 1
        gap = _map(lambda f, u, s: f + u - s, params.fast, fast_updates, params.slow)
        new_updates = LookaheadParams(
            fast=_map(lambda u, d: u - sync * (1 - slow_step_size) * d, fast_updates, gap),
            slow=_map(lambda d: slow_step_size * sync * d, gap))
        if reset_state:
            fresh = fast_optimizer.init(params.fast)
            fast_state = _map(lambda cur, new: (1 - sync) * cur + sync * new, fast_state, fresh)
        steps = (state.steps_since_sync + 1) % sync_period
        return new_updates, LookaheadState(fast_state, steps)
    return GradientTransformation(init, update)
