"""The contract every optimizer piece follows, and the smallest transforms.

A `GradientTransformation` is a pair of pure functions: `init(params) -> state` and
`update(updates, state, params=None) -> (updates, new_state)`. States are NamedTuples of
arrays (step counts are int32 scalars), so they are pytrees that `corejax.jit` can carry.
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple, Optional, Union

import corejax as jax
import corejax.numpy as jnp

Params = Any
Updates = Any
OptState = Any
Schedule = Callable[[Any], Any]
ScalarOrSchedule = Union[float, int, Any, Schedule]

__all__ = ["GradientTransformation", "EmptyState", "identity", "set_to_zero", "stateless",
           "stateless_with_tree_map", "apply_updates", "safe_int32_increment",
           "Params", "Updates", "OptState", "Schedule", "ScalarOrSchedule"]


class GradientTransformation(NamedTuple):
    """`init(params) -> state`; `update(updates, state, params=None) -> (updates, state)`."""
    init: Callable[[Params], OptState]
    update: Callable[..., tuple]


class EmptyState(NamedTuple):
    """The state of a transform that remembers nothing."""


def _empty_init(params):
    del params
    return EmptyState()


def identity() -> GradientTransformation:
    """Passes updates through untouched."""
    def update(updates, state, params=None):
        del params
        return updates, state
    return GradientTransformation(_empty_init, update)


def set_to_zero() -> GradientTransformation:
    """Replaces every update by zeros (parameters stay where they are)."""
    def update(updates, state, params=None):
        del params
        return jax.tree_util.tree_map(jnp.zeros_like, updates), state
    return GradientTransformation(_empty_init, update)


def stateless(f: Callable[[Updates, Optional[Params]], Updates]) -> GradientTransformation:
    """A transform from `f(updates, params) -> updates`, with no state."""
    def update(updates, state, params=None):
        return f(updates, params), state
    return GradientTransformation(_empty_init, update)


def stateless_with_tree_map(f: Callable[[Any, Any], Any]) -> GradientTransformation:
    """A stateless transform applying `f(update_leaf, param_leaf_or_None)` leaf by leaf."""
    def per_tree(updates, params):
        if params is None:
            return jax.tree_util.tree_map(lambda u: f(u, None), updates)
        return jax.tree_util.tree_map(f, updates, params)
    return stateless(per_tree)


def apply_updates(params: Params, updates: Updates) -> Params:
    """`params + updates`, leaf by leaf, each result cast back to its parameter's dtype."""
    def add(p, u):
        if p is None:
            return None
        p = jnp.asarray(p)
        return jnp.asarray(p + u).astype(p.dtype)
    return jax.tree_util.tree_map(add, params, updates, is_leaf=lambda x: x is None)


def safe_int32_increment(count):
    """`count + 1` for an int32 step counter, saturating instead of wrapping at 2**31 - 1."""
    top = jnp.iinfo(jnp.int32).max
    count = jnp.asarray(count, jnp.int32)
    return jnp.where(count < top, count + jnp.asarray(1, jnp.int32), jnp.asarray(top, jnp.int32))


def zero_count():
    return jnp.zeros([], jnp.int32)


def params_required(name: str, params) -> None:
    if params is None:
        raise ValueError(
            f"{name} needs the current parameters: call `update(updates, state, params)` "
            "with params as the third argument.")
