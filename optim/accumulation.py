"""Gradient accumulation without an inner optimizer (apply_every), and the skip predicates that
`MultiSteps(should_skip_update_fn=...)` takes."""
from __future__ import annotations

from typing import Any, NamedTuple, Optional, Protocol

import corejax as jax
import corejax.numpy as jnp

from optim import tree_utils as tu
from optim.base import GradientTransformation, safe_int32_increment, zero_count

__all__ = ["apply_every", "ApplyEvery", "skip_not_finite", "skip_large_updates",
           "ShouldSkipUpdateFunction"]


class ShouldSkipUpdateFunction(Protocol):
    """`fn(updates, gradient_step, params) -> (skip: bool scalar, state: pytree)`."""

    def __call__(self, updates, gradient_step, params) -> tuple:
        ...


class ApplyEvery(NamedTuple):
    count: Any
    grad_acc: Any


def apply_every(k: int = 1) -> GradientTransformation:
    """Sums the updates of `k` consecutive steps and emits the sum on every k-th step (zeros on
    the others)."""
    def init(params):
        return ApplyEvery(zero_count(), tu.tree_zeros_like(params))

    def update(updates, state, params=None):
        del params
        phase = state.count % k
        keep = phase != 0
        grad_acc = jax.tree_util.tree_map(lambda g, acc: keep * acc + g, updates, state.grad_acc)
        emit = phase == k - 1
        new_updates = jax.tree_util.tree_map(lambda acc: emit * acc, grad_acc)
        return new_updates, ApplyEvery(safe_int32_increment(state.count) % k, grad_acc)
    return GradientTransformation(init, update)


def skip_not_finite(updates, gradient_step, params: Optional[Any]) -> tuple:
    """Skip a step whose updates hold a NaN or an infinity; the state records the decision
    and how many entries were not finite."""
    del gradient_step, params
    counts = [jnp.sum(jnp.logical_not(jnp.isfinite(x))) for x in jax.tree_util.tree_leaves(updates)]
    num_not_finite = jnp.sum(jnp.stack(counts))
    should_skip = num_not_finite > 0
    return should_skip, {"should_skip": should_skip, "num_not_finite": num_not_finite}


def skip_large_updates(updates, gradient_step, params: Optional[Any], max_squared_norm
                       ) -> tuple:
    """Skip a step whose updates' squared L2 norm is not below `max_squared_norm` (a NaN norm
    skips too); bind `max_squared_norm` with functools.partial."""
    del gradient_step, params
    squares = [jnp.sum(x ** 2) for x in jax.tree_util.tree_leaves(updates)]
    norm_squared = jnp.sum(jnp.stack(squares))
    should_skip = jnp.logical_not(norm_squared < max_squared_norm)
    return should_skip, {"should_skip": should_skip, "norm_squared": norm_squared}
