"""Transforms that wrap other transforms: masking, freezing, gradient accumulation, and
hyperparameters carried in the state."""
from __future__ import annotations

import functools
import inspect
import warnings
from typing import Any, Callable, NamedTuple, Optional, Union

import numpy as np

import corejax as jax
import corejax.numpy as jnp
from corejax.core import Tracer

from optim import tree_utils as tu
from optim.base import (GradientTransformation, GradientTransformationExtraArgs,
                        safe_int32_increment, set_to_zero, with_extra_args_support, zero_count)

__all__ = ["masked", "MaskedNode", "MaskedState", "freeze", "MultiSteps", "MultiStepsState",
           "inject_hyperparams", "InjectHyperparamsState", "inject_stateful_hyperparams",
           "InjectStatefulHyperparamsState", "WrappedSchedule", "MaskOrFn"]

_map = jax.tree_util.tree_map

# A mask: a pytree of bools shaped like the params (or a prefix of them), or a function of the
# params returning one.
MaskOrFn = Union[Any, Callable[[Any], Any]]


class MaskedNode(NamedTuple):
    """Stands in for a masked-out subtree: a pytree node with no leaves, so the inner
    transform neither sees nor keeps state for it."""


class MaskedState(NamedTuple):
    inner_state: Any


def _resolve_mask(mask, tree, who: str):
    """The mask tree for `tree`, checked to be a prefix of it with static boolean leaves."""
    mask_tree = mask(tree)
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


def _mask_is_callable(mask) -> bool:
    """Optax's rule: a mask is a function when every leaf of it is callable."""
    leaves = jax.tree_util.tree_leaves(_map(callable, mask))
    return bool(leaves) and all(leaves)


def masked(inner: GradientTransformation, mask: Union[Any, Callable[[Any], Any]], *,
           mask_compatible_extra_args: bool = False) -> GradientTransformationExtraArgs:
    """Applies `inner` only to the leaves where `mask` is True; other updates pass through.

    `mask` is a pytree of bools with the params' structure (or a prefix of it), or a callable
    taking the params (at init) / the updates (at update) and returning one. With
    `mask_compatible_extra_args`, extra arguments of `update` shaped like the updates are
    masked the same way before they reach `inner`.
    """
    inner = with_extra_args_support(inner)

    def mask_for(tree):
        return _resolve_mask(mask if _mask_is_callable(mask) else (lambda _: mask), tree,
                             "masked")

    def init(params):
        return MaskedState(inner.init(_keep_where(mask_for(params), params)))

    def update(updates, state, params=None, **extra_args):
        mask_tree = mask_for(updates)
        if mask_compatible_extra_args:
            structure = jax.tree_util.tree_structure(updates)
            extra_args = {k: _keep_where(mask_tree, v)
                          if jax.tree_util.tree_structure(v) == structure else v
                          for k, v in extra_args.items()}
        inner_params = None if params is None else _keep_where(mask_tree, params)
        inner_updates, inner_state = inner.update(_keep_where(mask_tree, updates),
                                                  state.inner_state, inner_params, **extra_args)
        merged = _map(lambda m, new, old: new if m else old, mask_tree, inner_updates, updates)
        return merged, MaskedState(inner_state)
    return GradientTransformationExtraArgs(init, update)


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
    if given, maps (updates, gradient_step, params) -> (skip: bool scalar, skip_state); a
    skipped mini-batch changes nothing but the skip state. The accumulator is kept in
    `accumulator_dtype` (float32 by default).
    """

    def __init__(self, opt: GradientTransformation, every_k_schedule: Union[int, Callable],
                 use_grad_mean: bool = True, should_skip_update_fn: Optional[Callable] = None,
                 accumulator_dtype=jnp.float32):
        if not callable(every_k_schedule):
            k = every_k_schedule
            if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
                raise ValueError(f"MultiSteps: every_k_schedule must be a positive int or a "
                                 f"callable step -> int, got {k!r}.")

            def every_k_schedule(step):
                del step
                return k
        self._opt = with_extra_args_support(opt)
        self._every_k = every_k_schedule
        self._use_grad_mean = use_grad_mean
        self._should_skip = should_skip_update_fn
        self._acc_dtype = jnp.dtype(accumulator_dtype)

    @property
    def inner_opt(self) -> GradientTransformation:
        return self._opt

    def init(self, params) -> MultiStepsState:
        skip_state = ()
        if self._should_skip is not None:
            _, skip_state = self._should_skip(tu.tree_zeros_like(params), zero_count(), params)
        return MultiStepsState(zero_count(), zero_count(), self._opt.init(params),
                               tu.tree_zeros_like(params, self._acc_dtype), skip_state)

    def update(self, updates, state: MultiStepsState, params=None, **extra_args):
        k = self._every_k(state.gradient_step)
        skip_state = state.skip_state
        if self._should_skip is not None:
            skip, skip_state = self._should_skip(updates, state.gradient_step, params)
            skip = jnp.asarray(skip)
            if skip.dtype != jnp.bool_ or skip.shape != ():
                raise ValueError(
                    "MultiSteps: should_skip_update_fn must return a boolean scalar array as "
                    f"its first output, got dtype {skip.dtype} and shape {skip.shape}.")
        n = state.mini_step
        if self._use_grad_mean:
            acc = _map(lambda g, a: a + (g - a) / (n + 1).astype(jnp.result_type(g, a)),
                       updates, state.acc_grads)
        else:
            acc = _map(lambda g, a: a + g, updates, state.acc_grads)

        # No lax.cond on the hot path: both outcomes are computed and selected with `where`,
        # which keeps the step a single straight-line program under jit.
        emit = n == k - 1
        inner_updates, inner_state = self._opt.update(
            _map(lambda a, u: a.astype(u.dtype), acc, updates), state.inner_opt_state, params,
            **extra_args)
        new_state = MultiStepsState(
            safe_int32_increment(n) % jnp.asarray(k, jnp.int32),
            jnp.where(emit, safe_int32_increment(state.gradient_step), state.gradient_step),
            tu.tree_where(emit, inner_state, state.inner_opt_state),
            _map(lambda a: jnp.where(emit, jnp.zeros_like(a), a).astype(self._acc_dtype), acc),
            skip_state)
        new_updates = tu.tree_where(emit, inner_updates, tu.tree_zeros_like(inner_updates))
        if self._should_skip is not None:
            kept = state._replace(skip_state=skip_state)
            new_state = tu.tree_where(skip, kept, new_state)
            new_updates = tu.tree_where(skip, tu.tree_zeros_like(new_updates), new_updates)
        return new_updates, new_state

    def has_updated(self, state: MultiStepsState):
        """Whether the last call to `update` applied the inner optimizer."""
        return jnp.logical_and(state.mini_step == 0, state.gradient_step > 0)

    def gradient_transformation(self) -> GradientTransformation:
        """init and update as a GradientTransformation (a plain one, as Optax returns: a
        chain holding it does not forward extra arguments to it)."""
        return GradientTransformation(self.init, self.update)


# --- hyperparameters in the state -------------------------------------------------------------

class InjectHyperparamsState(NamedTuple):
    count: Any               # int32: updates so far (the step schedules are evaluated at)
    hyperparams: dict        # name -> scalar array: the values used by the latest update
    inner_state: Any


class InjectStatefulHyperparamsState(NamedTuple):
    """The state `inject_hyperparams` builds (as Optax 0.2.8 does): the schedules' own states
    sit next to the hyperparameter values."""
    count: Any
    hyperparams: dict
    hyperparams_states: dict  # name -> schedule state (WrappedScheduleState for plain ones)
    inner_state: Any


class WrappedScheduleState(NamedTuple):
    count: Any


class WrappedSchedule:
    """A step -> value schedule seen as a stateful schedule (init / update / __call__) whose
    state counts the updates."""

    def __init__(self, schedule_fn: Callable[[Any], Any]):
        self.schedule_fn = schedule_fn

    def init(self) -> WrappedScheduleState:
        return WrappedScheduleState(zero_count())

    def update(self, state: WrappedScheduleState, **extra_args) -> WrappedScheduleState:
        del extra_args
        return WrappedScheduleState(safe_int32_increment(state.count))

    def __call__(self, state: WrappedScheduleState, **extra_args):
        del extra_args
        return self.schedule_fn(state.count)


def _is_stateful_schedule(value) -> bool:
    return all(callable(getattr(value, name, None)) for name in ("init", "update", "__call__"))


def _highest_float_dtype(tree):
    """The widest floating dtype among the leaves (float32 when there is none), as Optax picks
    the hyperparameters' dtype."""
    best = None
    for leaf in jax.tree_util.tree_leaves(tree):
        dtype = getattr(leaf, "dtype", None)
        if dtype is not None and jnp.issubdtype(dtype, jnp.floating):
            if best is None or jnp.dtype(dtype).itemsize > jnp.dtype(best).itemsize:
                best = dtype
    return best if best is not None else jnp.dtype(jnp.float32)


def _convert_floats(value, dtype):
    """Floating values (Python floats, weakly typed or NumPy ones) take `dtype`; strongly typed
    arrays and integers keep theirs."""
    if isinstance(value, (jax.Array, Tracer)) and not getattr(value, "weak_type", False):
        return value
    current = value.dtype if hasattr(value, "dtype") else type(value)
    if jnp.issubdtype(current, jnp.floating):
        return jnp.asarray(value, dtype=dtype)
    return value


def inject_hyperparams(inner_factory: Callable[..., GradientTransformation], static_args=(),
                       hyperparam_dtype=None) -> Callable[..., GradientTransformationExtraArgs]:
    """Wraps an optimizer factory so that its numeric arguments live in the optimizer state.

    `inject_hyperparams(optim.adam)(learning_rate=schedule)` behaves like `optim.adam` but its
    state has `.hyperparams['learning_rate']` (the value used by the latest update, readable
    and writable between steps). Numeric arguments (int, float, arrays) become arrays in the
    state (NumPy scalars other than float64, which is a float, are passed through as Optax
    does); callables are schedules evaluated at each step (stateful schedules, objects with
    init / update / __call__, keep their state in `.hyperparams_states`); bools, None,
    strings and the names in `static_args` are passed through unchanged (name a callable that
    is not a schedule, such as adamw's `mask`, in `static_args`). Floating hyperparameters take
    `hyperparam_dtype`, by default the widest floating dtype of the params.
    """
    static_args = {static_args} if isinstance(static_args, str) else set(static_args)
    signature = inspect.signature(inner_factory)
    unknown = static_args - set(signature.parameters)
    if unknown:
        raise ValueError(f"inject_hyperparams: static_args {sorted(unknown)} are not arguments "
                         f"of {getattr(inner_factory, '__name__', inner_factory)}{signature}.")

    def wrapped(*args, **kwargs) -> GradientTransformationExtraArgs:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        schedules, numeric, fixed = {}, {}, {}
        for name, value in bound.arguments.items():
            if name in static_args or isinstance(value, bool):
                fixed[name] = value
            elif _is_stateful_schedule(value):
                schedules[name] = value
            elif callable(value):
                schedules[name] = WrappedSchedule(value)
            elif isinstance(value, (int, float, np.ndarray, jax.Array, Tracer)):
                numeric[name] = value
            else:
                fixed[name] = value

        def init(params):
            dtype = hyperparam_dtype or _highest_float_dtype(params)
            hyperparams = {k: jnp.asarray(_convert_floats(v, dtype)) for k, v in numeric.items()}
            sched_states = {k: f.init() for k, f in schedules.items()}
            hyperparams.update({k: _convert_floats(f(sched_states[k]), dtype)
                                for k, f in schedules.items()})
            return InjectStatefulHyperparamsState(
                zero_count(), hyperparams, sched_states,
                inner_factory(**fixed, **hyperparams).init(params))

        def update(updates, state, params=None, **extra_args):
            dtype = hyperparam_dtype or _highest_float_dtype(params)
            hyperparams = {k: _convert_floats(v, dtype) for k, v in state.hyperparams.items()}
            hyperparams.update({k: _convert_floats(f(state.hyperparams_states[k], **extra_args),
                                                   dtype) for k, f in schedules.items()})
            sched_states = {k: f.update(state.hyperparams_states[k], **extra_args)
                            for k, f in schedules.items()}
            inner = with_extra_args_support(inner_factory(**fixed, **hyperparams))
            updates, inner_state = inner.update(updates, state.inner_state, params,
                                                **extra_args)
            return updates, InjectStatefulHyperparamsState(
                safe_int32_increment(state.count), hyperparams, sched_states, inner_state)
        return GradientTransformationExtraArgs(init, update)
    return functools.wraps(inner_factory)(wrapped)


def inject_stateful_hyperparams(inner_factory: Callable[..., GradientTransformation],
                                static_args=(), hyperparam_dtype=None
                                ) -> Callable[..., GradientTransformationExtraArgs]:
    """Deprecated in Optax: the same as `inject_hyperparams`."""
    warnings.warn("inject_stateful_hyperparams is deprecated, use inject_hyperparams instead",
                  DeprecationWarning, stacklevel=2)
    return inject_hyperparams(inner_factory, static_args, hyperparam_dtype)
