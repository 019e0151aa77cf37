"""Transforms that wrap other transforms: masking, freezing, gradient accumulation, and
hyperparameters carried in the state."""
from __future__ import annotations

import inspect
from typing import Any, Callable, NamedTuple, Optional, Union

import numpy as np

import corejax as jax
import corejax.numpy as jnp
from corejax.core import Tracer

from optim import tree_utils as tu
from optim.base import GradientTransformation, safe_int32_increment, set_to_zero, zero_count

__all__ = ["masked", "MaskedNode", "MaskedState", "freeze", "MultiSteps", "MultiStepsState",
           "inject_hyperparams", "InjectHyperparamsState"]

_map = jax.tree_util.tree_map


class MaskedNode(NamedTuple):
    """Stands in for a masked-out subtree: a pytree node with no leaves, so the inner
    transform neither sees nor keeps state for it."""


class MaskedState(NamedTuple):
    inner_state: Any


def _resolve_mask(mask, tree, who: str):
    """The mask tree for `tree`, checked to be a prefix of it with static boolean leaves."""
    mask_tree = mask(tree) if callable(mask) else mask
    mask_def = jax.tree_util.tree_structure(mask_tree)
    try:
        mask_def.flatten_up_to(tree)
    except ValueError:
        raise ValueError(
            f"{who}: the mask's tree structure {mask_def} does not match the parameters' "
            f"structure {jax.tree_util.tree_structure(tree)}. Give a mask with the params' "
            "structure (or a prefix of it) with a bool per leaf, or a callable params -> mask."
        ) from None
    for leaf in jax.tree_util.tree_leaves(mask_tree):
        if isinstance(leaf, Tracer) or np.ndim(leaf) != 0:
            raise TypeError(
                f"{who}: mask leaves must be static Python bools (the mask picks which leaves "
                f"the inner transform sees, at trace time), got {leaf!r}.")
    return mask_tree


def _keep_where(mask_tree, tree):
    return _map(lambda m, x: x if m else MaskedNode(), mask_tree, tree)


def masked(inner: GradientTransformation, mask: Union[Any, Callable[[Any], Any]]
           ) -> GradientTransformation:
    """Applies `inner` only to the leaves where `mask` is True; other updates pass through.

    `mask` is a pytree of bools with the params' structure (or a prefix of it), or a callable
    taking the params (at init) / the updates (at update) and returning one.
    """
    def init(params):
        mask_tree = _resolve_mask(mask, params, "masked")
        return MaskedState(inner.init(_keep_where(mask_tree, params)))

    def update(updates, state, params=None):
        mask_tree = _resolve_mask(mask, updates, "masked")
        inner_params = None if params is None else _keep_where(mask_tree, params)
        inner_updates, inner_state = inner.update(_keep_where(mask_tree, updates),
                                                  state.inner_state, inner_params)
        merged = _map(lambda m, new, old: new if m else old, mask_tree, inner_updates, updates)
        return merged, MaskedState(inner_state)
    return GradientTransformation(init, update)


def freeze(mask) -> GradientTransformation:
    """Zeroes the updates of the parameters where `mask` is True, so they never move."""
    return masked(set_to_zero(), mask)


# --- gradient accumulation --------------------------------------------------------------------

class MultiStepsState(NamedTuple):
    mini_step: Any          # int32: mini-batches accumulated since the last real update
    gradient_step: Any      # int32: real updates applied so far
    inner_opt_state: Any
    acc_grads: Any          # ONE accumulator tree shaped like the params
    skip_state: Any = ()


class MultiSteps:
    """Accumulates gradients over `every_k_schedule` calls and applies the inner optimizer to
    their mean (or sum) once per k calls; in between, updates are zeros.

    `every_k_schedule` is an int or a callable gradient_step -> int. `should_skip_update_fn`,
    if given, maps (updates, gradient_step, params) -> (skip: bool array, skip_state); a skipped
    mini-batch changes nothing.
    """

    def __init__(self, opt: GradientTransformation, every_k_schedule: Union[int, Callable],
                 use_grad_mean: bool = True, should_skip_update_fn: Optional[Callable] = None):
        if not callable(every_k_schedule):
            k = every_k_schedule
            if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
                raise ValueError(f"MultiSteps: every_k_schedule must be a positive int or a "
                                 f"callable step -> int, got {k!r}.")

            def every_k_schedule(step):
                del step
                return k
        self._opt = opt
        self._every_k = every_k_schedule
        self._use_grad_mean = use_grad_mean
        self._should_skip = should_skip_update_fn

    @property
    def inner_opt(self) -> GradientTransformation:
        return self._opt

    def init(self, params) -> MultiStepsState:
        skip_state = ()
        if self._should_skip is not None:
            _, skip_state = self._should_skip(tu.tree_zeros_like(params), zero_count(), params)
        return MultiStepsState(zero_count(), zero_count(), self._opt.init(params),
                               tu.tree_zeros_like(params), skip_state)

    def update(self, updates, state: MultiStepsState, params=None):
        k = self._every_k(state.gradient_step)
        if self._use_grad_mean:
            acc = _map(lambda g, a: a + (g - a) / (state.mini_step + 1).astype(a.dtype),
                       updates, state.acc_grads)
        else:
            acc = _map(lambda g, a: a + g, updates, state.acc_grads)
        skip_state = state.skip_state
        if self._should_skip is not None:
            skip, skip_state = self._should_skip(updates, state.gradient_step, params)

        # No lax.cond on the hot path: both outcomes are computed and selected with `where`,
        # which keeps the step a single straight-line program under jit.
        emit = state.mini_step >= k - 1
        inner_updates, inner_state = self._opt.update(acc, state.inner_opt_state, params)
        emitted = MultiStepsState(zero_count(), safe_int32_increment(state.gradient_step),
                                  inner_state, tu.tree_zeros_like(acc), skip_state)
        waiting = MultiStepsState(state.mini_step + 1, state.gradient_step,
                                  state.inner_opt_state, acc, skip_state)
        new_state = tu.tree_where(emit, emitted, waiting)
        new_updates = tu.tree_where(emit, inner_updates, tu.tree_zeros_like(updates))
        if self._should_skip is not None:
            kept = state._replace(skip_state=skip_state)
            new_state = tu.tree_where(skip, kept, new_state)
            new_updates = tu.tree_where(skip, tu.tree_zeros_like(updates), new_updates)
        return new_updates, new_state

    def has_updated(self, state: MultiStepsState):
        """Whether the last call to `update` applied the inner optimizer."""
        return jnp.logical_and(state.mini_step == 0, state.gradient_step > 0)

    def gradient_transformation(self) -> GradientTransformation:
        return GradientTransformation(self.init, self.update)


# --- hyperparameters in the state -------------------------------------------------------------

class InjectHyperparamsState(NamedTuple):
    count: Any               # int32: updates so far (the step schedules are evaluated at)
    hyperparams: dict        # name -> scalar array: the values used by the latest update
    inner_state: Any


def _float_dtype_of(tree):
    for leaf in jax.tree_util.tree_leaves(tree):
        dtype = getattr(leaf, "dtype", None)
        if dtype is not None and jnp.issubdtype(dtype, jnp.floating):
            return dtype
    return None


def _as_hyperparam(value, dtype):
    value = jnp.asarray(value)
    if dtype is not None and jnp.issubdtype(value.dtype, jnp.floating):
        return value.astype(dtype)
    return value


def inject_hyperparams(inner_factory: Callable[..., GradientTransformation], static_args=(),
                       hyperparam_dtype=None) -> Callable[..., GradientTransformation]:
    """Wraps an optimizer factory so that its numeric arguments live in the optimizer state.

    `inject_hyperparams(optim.adam)(learning_rate=schedule)` behaves like `optim.adam` but its
    state has `.hyperparams['learning_rate']` (the value used by the latest update, readable
    and writable between steps). Numeric arguments become scalar arrays in the state; callable
    arguments are schedules evaluated at each step; bools, None, strings and the names in
    `static_args` are passed through unchanged (name a callable that is not a schedule, such
    as adamw's `mask`, in `static_args`). Floating hyperparameters take `hyperparam_dtype`, by
    default the dtype of the first floating leaf of the params.
    """
    static_args = {static_args} if isinstance(static_args, str) else set(static_args)
    signature = inspect.signature(inner_factory)
    unknown = static_args - set(signature.parameters)
    if unknown:
        raise ValueError(f"inject_hyperparams: static_args {sorted(unknown)} are not arguments "
                         f"of {getattr(inner_factory, '__name__', inner_factory)}{signature}.")

    def wrapped(*args, **kwargs) -> GradientTransformation:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        schedules, numeric, fixed = {}, {}, {}
        for name, value in bound.arguments.items():
            if name in static_args or isinstance(value, bool):
                fixed[name] = value
            elif callable(value):
                schedules[name] = value
            elif isinstance(value, (int, float, np.number, np.ndarray, jax.Array, Tracer)):
                numeric[name] = value
            else:
                fixed[name] = value

        def values_at(count, numeric_values, dtype):
            hyperparams = {k: _as_hyperparam(v, dtype) for k, v in numeric_values.items()}
            hyperparams.update({k: _as_hyperparam(f(count), dtype) for k, f in schedules.items()})
            return hyperparams

        def init(params):
            dtype = hyperparam_dtype or _float_dtype_of(params)
            count = zero_count()
            hyperparams = values_at(count, numeric, dtype)
            return InjectHyperparamsState(
                count, hyperparams, inner_factory(**fixed, **hyperparams).init(params))

        def update(updates, state, params=None):
            dtype = hyperparam_dtype or _float_dtype_of(updates)
            numeric_now = {k: state.hyperparams[k] for k in numeric}
            hyperparams = values_at(state.count, numeric_now, dtype)
            updates, inner_state = inner_factory(**fixed, **hyperparams).update(
                updates, state.inner_state, params)
            return updates, InjectHyperparamsState(safe_int32_increment(state.count),
                                                   hyperparams, inner_state)
        return GradientTransformation(init, update)
    wrapped.__name__ = getattr(inner_factory, "__name__", "wrapped")
    wrapped.__doc__ = inner_factory.__doc__
    return wrapped
