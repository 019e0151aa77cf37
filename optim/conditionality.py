"""Transforms applied only when a condition holds: on a step predicate, or on finite updates."""
from __future__ import annotations

from typing import Any, NamedTuple, Protocol

import corejax as jax
import corejax.numpy as jnp
from corejax import lax

from optim import tree_utils as tu
from optim.base import (GradientTransformation, GradientTransformationExtraArgs,
                        safe_int32_increment, with_extra_args_support, zero_count)

__all__ = ["ConditionFn", "conditionally_transform", "ConditionallyTransformState",
           "conditionally_mask", "ConditionallyMaskState", "apply_if_finite",
           "ApplyIfFiniteState"]


class ConditionFn(Protocol):
    """`fn(step, **extra_args) -> bool scalar`: whether the wrapped transform runs at `step`."""

    def __call__(self, step, **extra_args) -> Any:
        ...


class ConditionallyTransformState(NamedTuple):
    inner_state: Any
    step: Any


class ConditionallyMaskState(NamedTuple):
    step: Any
    inner_state: Any


def _conditional(inner, should_transform_fn, forward_extra_args, on_reject, make_state):
    inner = with_extra_args_support(inner)

    def update(updates, state, params=None, **extra_args):
        condition_args = extra_args if forward_extra_args else {}
        run = should_transform_fn(state.step, **condition_args)
        new_updates, inner_state = lax.cond(
            run, lambda: inner.update(updates, state.inner_state, params, **extra_args),
            lambda: (on_reject(updates), state.inner_state))
        return new_updates, make_state(inner_state, safe_int32_increment(state.step))
    return inner, update


def conditionally_transform(inner: GradientTransformation, should_transform_fn: ConditionFn,
                            forward_extra_args: bool = False) -> GradientTransformationExtraArgs:
    """Runs `inner` at the steps where `should_transform_fn(step)` holds; at the others the
    updates pass through unchanged and `inner`'s state stays as it was."""
    inner, update = _conditional(
        inner, should_transform_fn, forward_extra_args, lambda u: u,
        lambda inner_state, step: ConditionallyTransformState(inner_state, step))

    def init(params):
        return ConditionallyTransformState(inner.init(params), zero_count())
    return GradientTransformationExtraArgs(init, update)


def conditionally_mask(inner: GradientTransformation, should_transform_fn: ConditionFn,
                       forward_extra_args: bool = False) -> GradientTransformationExtraArgs:
    """Runs `inner` at the steps where `should_transform_fn(step)` holds; at the others the
    updates are zeros and `inner`'s state stays as it was."""
    inner, update = _conditional(
        inner, should_transform_fn, forward_extra_args, tu.tree_zeros_like,
        lambda inner_state, step: ConditionallyMaskState(step, inner_state))

    def init(params):
        return ConditionallyMaskState(zero_count(), inner.init(params))
    return GradientTransformationExtraArgs(init, update)


class ApplyIfFiniteState(NamedTuple):
    notfinite_count: Any     # int32: consecutive steps with a non-finite update
    last_finite: Any         # bool: whether the latest update was finite
    total_notfinite: Any     # int32: non-finite updates seen so far
    inner_state: Any


def apply_if_finite(inner: GradientTransformation, max_consecutive_errors: int
                    ) -> GradientTransformationExtraArgs:
    """Runs `inner` only on updates whose every entry is finite; a non-finite update becomes
    zeros and leaves `inner`'s state alone, unless more than `max_consecutive_errors` came in a
    row, in which case it goes through `inner` as it is."""
    inner = with_extra_args_support(inner)

    def init(params):
        return ApplyIfFiniteState(zero_count(), jnp.asarray(True, jnp.bool_), zero_count(),
                                  inner.init(params))

    def update(updates, state, params=None, **extra_args):
        leaves = jax.tree_util.tree_leaves(updates)
        finite = jnp.all(jnp.stack([jnp.all(jnp.isfinite(x)) for x in leaves]))
        notfinite_count = jnp.where(finite, zero_count(),
                                    safe_int32_increment(state.notfinite_count))
        new_updates, inner_state = lax.cond(
            jnp.logical_or(finite, notfinite_count > max_consecutive_errors),
            lambda: inner.update(updates, state.inner_state, params, **extra_args),
            lambda: (tu.tree_zeros_like(updates), state.inner_state))
        total = jnp.where(finite, state.total_notfinite,
                          safe_int32_increment(state.total_notfinite))
        return new_updates, ApplyIfFiniteState(notfinite_count, finite, total, inner_state)
    return GradientTransformationExtraArgs(init, update)
