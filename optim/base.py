"""The contract every optimizer piece follows, and the smallest transforms.

A `GradientTransformation` is a pair of pure functions: `init(params) -> state` and
`update(updates, state, params=None) -> (updates, new_state)`. States are NamedTuples of
arrays (step counts are int32 scalars), so they are pytrees that `corejax.jit` can carry.
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple, Optional, Protocol, Union

import corejax as jax
import corejax.numpy as jnp

Params = Any
Updates = Any
OptState = Any
Schedule = Callable[[Any], Any]
ScalarOrSchedule = Union[float, int, Any, Schedule]

__all__ = ["GradientTransformation", "GradientTransformationExtraArgs", "EmptyState",
           "TransformInitFn", "TransformUpdateFn", "TransformUpdateExtraArgsFn",
           "identity", "set_to_zero", "stateless", "stateless_with_tree_map", "apply_updates",
           "safe_int32_increment", "init_empty_state", "with_extra_args_support",
           "Params", "Updates", "OptState", "Schedule", "ScalarOrSchedule"]

NO_PARAMS_MSG = ("You are using a transformation that requires the current value of "
                 "parameters, but you are not passing `params` when calling `update`.")


class TransformInitFn(Protocol):
    """`init(params) -> state`."""
    def __call__(self, params: Params) -> OptState:
        ...


class TransformUpdateFn(Protocol):
    """`update(updates, state, params=None) -> (updates, state)`."""
    def __call__(self, updates: Updates, state: OptState,
                 params: Optional[Params] = None) -> tuple:
        ...


class TransformUpdateExtraArgsFn(Protocol):
    """`update(updates, state, params=None, **extra_args) -> (updates, state)`: extra keyword
    arguments (a loss `value`, a `grad`, a `value_fn`) that a transform may use or ignore."""
    def __call__(self, updates: Updates, state: OptState, params: Optional[Params] = None,
                 **extra_args: Any) -> tuple:
        ...


class GradientTransformation(NamedTuple):
    """`init(params) -> state`; `update(updates, state, params=None) -> (updates, state)`."""
    init: Callable[[Params], OptState]
    update: Callable[..., tuple]


class GradientTransformationExtraArgs(GradientTransformation):
    """A GradientTransformation whose `update` also takes keyword-only extra arguments
    (e.g. `value=` for Polyak steps, `value`, `grad`, `value_fn` for line searches)."""


class EmptyState(NamedTuple):
    """The state of a transform that remembers nothing."""


def init_empty_state(params: Params) -> EmptyState:
    """The `init` of a stateless transform: ignores `params`, returns `EmptyState()`."""
    del params
    return EmptyState()


_empty_init = init_empty_state


def with_extra_args_support(tx: GradientTransformation) -> GradientTransformationExtraArgs:
    """Wraps `tx` so that its `update` accepts (and ignores) extra keyword arguments; a
    transform that already takes them is returned as it is."""
    if isinstance(tx, GradientTransformationExtraArgs):
        return tx

    def update(updates, state, params=None, **extra_args):
        del extra_args
        return tx.update(updates, state, params)
    return GradientTransformationExtraArgs(tx.init, update)


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
        del state
        return f(updates, params), EmptyState()
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
