"""optax.experimental.aggregating: optimizers fed per-example updates (a leading batch axis
per leaf). An Aggregator turns them into one update (averaging, possibly over several
accumulation steps, or keeping their mean and spread); `process` chains a preprocessor, an
aggregator and a postprocessor, the postprocessor only running on steps where the
aggregator's state says `ready`."""
from __future__ import annotations

import math
from typing import Any, NamedTuple, Protocol, Sequence, Union

import corejax as jax
import corejax.numpy as jnp
from corejax import lax
from optim import _tree_math as tm
from optim._tree_state import tree_get
from optim.base import (GradientTransformation, GradientTransformationExtraArgs, identity,
                        init_empty_state, safe_int32_increment)
from optim.combine import chain

__all__ = ["AccumulateAvgUpdatesState", "AggregatedUpdates", "Aggregator",
           "AggregatorUpdateFn", "MaybeAxis", "PerElementMeanAndSumSqDiffGradsState",
           "PerElementMeanAndVarianceEMAState", "PerElementUpdates", "accumulate_avg_updates",
           "add_mean_variance_to_opt", "average_incrementally_updates",
           "average_per_element_updates", "get_batch_size_from_per_elt_updates",
           "get_per_element_mean_and_sum_sq_diff_grads", "get_unbiased_mean_and_variance_ema",
           "process", "track_per_element_mean_and_variance_with_ema"]

PerElementUpdates = Any     # a pytree of updates with a per-example axis
AggregatedUpdates = Any     # a pytree of updates without it
MaybeAxis = Union[int, Sequence[int], None]
_map = jax.tree_util.tree_map


class AggregatorUpdateFn(Protocol):
    """`(per_elt_updates, state, params=None, **extra_args) -> (updates, state)`."""

    def __call__(self, per_elt_updates, state, params=None, **extra_args: Any):
        ...


class Aggregator(GradientTransformationExtraArgs):
    """A transformation taking per-example updates and returning aggregated ones."""


def process(preprocessor, aggregator, postprocessor, aggregator_has_aux: bool = False):
    """Per-example updates through `preprocessor`, then `aggregator`, then (when the
    aggregator's state has `ready` True, or has no `ready`) `postprocessor`; zero updates
    otherwise. With `aggregator_has_aux` the aggregator returns `(updates, aux dict)` and
    the dict is passed to the postprocessor as extra arguments."""
    def init_fn(params):
        return (preprocessor.init(params), aggregator.init(params), postprocessor.init(params))

    def update_fn(indiv_grads, states, params=None, **extra_args):
        pre_state, agg_state, post_state = states
        indiv, pre_state = preprocessor.update(indiv_grads, pre_state, params, **extra_args)
        aggregated, agg_state = aggregator.update(indiv, agg_state, params, **extra_args)
        if aggregator_has_aux:
            aggregated, aux = aggregated
            extra_args = extra_args | aux
        ready = tree_get(agg_state, "ready", True)
        updates, post_state = lax.cond(
            ready, lambda g, s, p, kw: postprocessor.update(g, s, p, **kw),
            lambda g, s, *_: (tm.tree_zeros_like(aggregated), s),
            aggregated, post_state, params, extra_args)
        return updates, (pre_state, agg_state, post_state)
    if isinstance(aggregator, Aggregator):
        return Aggregator(init_fn, update_fn)
    return GradientTransformationExtraArgs(init_fn, update_fn)


def average_per_element_updates(per_elt_axis: MaybeAxis = 0) -> Aggregator:
    """The mean of the per-example updates over `per_elt_axis`."""
    def update_fn(per_elt_updates, state, params=None):
        del params
        return _map(lambda x: jnp.mean(x, axis=per_elt_axis), per_elt_updates), state
    return Aggregator(init_empty_state, update_fn)


class AccumulateAvgUpdatesState(NamedTuple):
    micro_step: Any
    ready: Any
    avg_grad: Any


def accumulate_avg_updates(accumulation_steps: int):
    """The running mean of the updates of `accumulation_steps` calls, emitted on the last
    one (zeros before, with `ready` False in the state)."""
    if accumulation_steps < 1:
        raise ValueError("accumulation_steps must be larger than or equal to 1.")
    if accumulation_steps == 1:
        return identity()

    def init_fn(params):
        return AccumulateAvgUpdatesState(micro_step=jnp.asarray(0), ready=jnp.asarray(False),
                                         avg_grad=tm.tree_zeros_like(params))

    def update_fn(updates, state, params=None):
        del params
        step = state.micro_step + 1
        avg = _map(lambda u, a: a + (u - a) / step, updates, state.avg_grad)
        done = AccumulateAvgUpdatesState(jnp.asarray(0), jnp.asarray(True),
                                         tm.tree_zeros_like(avg))
        pending = AccumulateAvgUpdatesState(step, jnp.asarray(False), avg)
        return tm.tree_where(step == accumulation_steps, (avg, done),
                             (tm.tree_zeros_like(avg), pending))
    return GradientTransformation(init_fn, update_fn)


def average_incrementally_updates(per_elt_axis: MaybeAxis, accumulation_steps: int):
    """Per-example mean (unless `per_elt_axis` is None), accumulated over
    `accumulation_steps` calls."""
    if per_elt_axis is None:
        return accumulate_avg_updates(accumulation_steps)
    both = chain(average_per_element_updates(per_elt_axis),
                 accumulate_avg_updates(accumulation_steps))
    return Aggregator(both.init, both.update)


def get_batch_size_from_per_elt_updates(per_elt_updates, per_elt_axis: MaybeAxis) -> int:
    """The number of examples along `per_elt_axis` (the same for every leaf, else
    ValueError)."""
    def size(u):
        if isinstance(per_elt_axis, int):
            return u.shape[per_elt_axis]
        return math.prod(u.shape[i] for i in per_elt_axis)
    sizes = jax.tree_util.tree_leaves(_map(size, per_elt_updates))
    if not all(s == sizes[0] for s in sizes):
        raise ValueError(f"Per-element updates must have the same batch size. Got: {sizes}")
    return sizes[0]


class PerElementMeanAndSumSqDiffGradsState(NamedTuple):
    micro_step: Any
    ready: Any
    mean_grads: Any
    sum_sq_diff_grads: Any


def _mean_and_sum_sq_diff(per_elt, axis):
    means = _map(lambda x: jnp.mean(x, axis=axis, keepdims=True), per_elt)
    spread = _map(lambda x, m: jnp.sum(jnp.square(x - m), axis=axis), per_elt, means)
    return _map(lambda m: m.squeeze(axis=axis), means), spread


def get_per_element_mean_and_sum_sq_diff_grads(per_elt_axis: MaybeAxis = 0,
                                               accumulation_steps: int = 1) -> Aggregator:
    """Aggregator with aux: the mean update, and `{'sum_sq_diff_grads': sum of squared
    deviations from it, 'sample_size': examples}`, pooled (Chan et al.'s update) over
    `accumulation_steps` calls."""
    if accumulation_steps == 1:
        def single(per_elt, state, params):
            del params
            size = get_batch_size_from_per_elt_updates(per_elt, per_elt_axis)
            mean, spread = _mean_and_sum_sq_diff(per_elt, per_elt_axis)
            return (mean, {"sum_sq_diff_grads": spread, "sample_size": size}), state
        return Aggregator(init_empty_state, single)

    def init_fn(params):
        return PerElementMeanAndSumSqDiffGradsState(
            micro_step=jnp.asarray(0, jnp.int32), ready=jnp.asarray(False),
            mean_grads=tm.tree_zeros_like(params), sum_sq_diff_grads=tm.tree_zeros_like(params))

    def update_fn(per_elt, state, params=None):
        del params
        size = get_batch_size_from_per_elt_updates(per_elt, per_elt_axis)
        step = state.micro_step + 1
        batch_mean, batch_spread = _mean_and_sum_sq_diff(per_elt, per_elt_axis)
        delta = _map(lambda u, a: u - a, batch_mean, state.mean_grads)
        mean = _map(lambda a, d: a + d / step, state.mean_grads, delta)
        weight = state.micro_step * size / step
        spread = _map(lambda a, s, d: a + s + d ** 2 * weight, state.sum_sq_diff_grads,
                      batch_spread, delta)
        outputs = (mean, {"sum_sq_diff_grads": spread, "sample_size": size * step})
        done = PerElementMeanAndSumSqDiffGradsState(
            jnp.asarray(0, jnp.int32), jnp.asarray(True), tm.tree_zeros_like(mean),
            tm.tree_zeros_like(spread))
        pending = PerElementMeanAndSumSqDiffGradsState(step, jnp.asarray(False), mean, spread)
        return tm.tree_where(step == accumulation_steps, (outputs, done),
                             (tm.tree_zeros_like(outputs), pending))
    return Aggregator(init_fn, update_fn)


class PerElementMeanAndVarianceEMAState(NamedTuple):
    count: Any
    ema_decay: Any
    mean_grads_ema: Any
    variance_grads_ema: Any


def track_per_element_mean_and_variance_with_ema(ema_decay: float = 0.9):
    """Passes updates through, keeping EMAs of them and of the per-example variance
    `sum_sq_diff_grads / (sample_size - 1)` (both extra arguments)."""
    def init_fn(params):
        return PerElementMeanAndVarianceEMAState(
            count=jnp.zeros([], jnp.int32), ema_decay=jnp.asarray(ema_decay),
            mean_grads_ema=tm.tree_zeros_like(params),
            variance_grads_ema=tm.tree_zeros_like(params))

    def update_fn(updates, state, params=None, *, sum_sq_diff_grads, sample_size):
        del params
        blend = lambda x, y: (1.0 - ema_decay) * x + ema_decay * y  # noqa: E731
        mean = _map(blend, updates, state.mean_grads_ema)
        variance = _map(blend, tm.tree_scale(1 / (sample_size - 1), sum_sq_diff_grads),
                        state.variance_grads_ema)
        return updates, state._replace(count=safe_int32_increment(state.count),
                                       mean_grads_ema=mean, variance_grads_ema=variance)
    return GradientTransformationExtraArgs(init_fn, update_fn)


def get_unbiased_mean_and_variance_ema(state):
    """`(mean, variance)` EMAs of a state holding a PerElementMeanAndVarianceEMAState,
    bias-corrected by `1 - decay ** count`."""
    ema = tree_get(state, "PerElementMeanAndVarianceEMAState", None)
    if ema is None:
        raise ValueError("State must have PerElementMeanAndVarianceEMAState to compute "
                         "unbiased mean and variance EMA.")
    correction = 1 - ema.ema_decay ** ema.count
    return (_map(lambda x: x / correction, ema.mean_grads_ema),
            _map(lambda x: x / correction, ema.variance_grads_ema))


def add_mean_variance_to_opt(opt, ema_decay: float = 0.9, per_elt_axis: MaybeAxis = 0,
                             accumulation_steps: int = 1):
    """`opt` fed the mean of per-example updates, its state also tracking EMAs of their mean
    and variance (read them with get_unbiased_mean_and_variance_ema)."""
    return process(preprocessor=identity(),
                   aggregator=get_per_element_mean_and_sum_sq_diff_grads(per_elt_axis,
                                                                        accumulation_steps),
                   postprocessor=chain(track_per_element_mean_and_variance_with_ema(ema_decay),
                                       opt),
                   aggregator_has_aux=True)
