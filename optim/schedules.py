"""Schedules: closures `step -> value` built from jnp ops, so a traced step works under jit."""
from __future__ import annotations

import logging
from typing import (Any, Callable, Iterable, Mapping, Optional, Protocol, Sequence,
                    runtime_checkable)

import corejax.numpy as jnp
from optim.base import Schedule
from optim.wrappers import (InjectHyperparamsState, InjectStatefulHyperparamsState,
                            WrappedSchedule, inject_hyperparams, inject_stateful_hyperparams)

__all__ = ["constant_schedule", "polynomial_schedule", "linear_schedule",
           "piecewise_constant_schedule", "exponential_decay", "cosine_decay_schedule",
           "warmup_cosine_decay_schedule", "warmup_exponential_decay_schedule", "join_schedules",
           "piecewise_interpolate_schedule", "linear_onecycle_schedule",
           "cosine_onecycle_schedule", "warmup_constant_schedule", "sgdr_schedule", "Schedule",
           "StatefulSchedule", "WrappedSchedule", "InjectHyperparamsState",
           "InjectStatefulHyperparamsState", "inject_hyperparams", "inject_stateful_hyperparams"]

logger = logging.getLogger("optim")


def constant_schedule(value) -> Callable:
    """`value` at every step."""
    def schedule(count):
        del count
        return value
    return schedule


def polynomial_schedule(init_value, end_value, power, transition_steps: int,
                        transition_begin: int = 0) -> Callable:
    """Holds `init_value` for `transition_begin` steps, then goes polynomially (`power`) to
    `end_value` over `transition_steps` steps, and stays there."""
    if transition_steps <= 0:
        logger.info("polynomial_schedule: transition_steps=%s is not positive; the schedule "
                    "is the constant init_value.", transition_steps)
        return constant_schedule(init_value)
    if transition_begin < 0:
        logger.info("polynomial_schedule: negative transition_begin=%s treated as 0.",
                    transition_begin)
        transition_begin = 0

    def schedule(count):
        steps_in = jnp.clip(count - transition_begin, 0, transition_steps)
        remaining = 1 - steps_in / transition_steps
        return (init_value - end_value) * (remaining ** power) + end_value
    return schedule


def linear_schedule(init_value, end_value, transition_steps: int,
                    transition_begin: int = 0) -> Callable:
    """Linear interpolation from `init_value` to `end_value` over `transition_steps` steps."""
    return polynomial_schedule(init_value, end_value, 1, transition_steps, transition_begin)


def piecewise_constant_schedule(init_value, boundaries_and_scales: Optional[Mapping] = None
                                ) -> Callable:
    """`init_value` multiplied by every scale whose boundary step has been reached."""
    boundaries = sorted((boundaries_and_scales or {}).items())
    negative = [scale for _, scale in boundaries if scale < 0]
    if negative:
        raise ValueError(f"piecewise_constant_schedule: scales must be non-negative, got "
                         f"{negative} in boundaries_and_scales={dict(boundaries)}.")

    def schedule(count):
        value = init_value
        for boundary, scale in boundaries:
            # 1 before the boundary, 0 from it on (the boundary step already uses the new value).
            before = jnp.maximum(0.0, jnp.sign(boundary - count))
            value = value * before + (1 - before) * scale * value
        return value
    return schedule


def exponential_decay(init_value, transition_steps: int, decay_rate, transition_begin: int = 0,
                      staircase: bool = False, end_value=None) -> Callable:
    """`init_value * decay_rate ** ((step - transition_begin) / transition_steps)` after
    `transition_begin` (before it, `init_value`); `staircase` floors the exponent; `end_value`
    bounds the result (a floor when decaying, a ceiling when growing)."""
    if transition_steps <= 0:
        logger.info("exponential_decay: transition_steps=%s is not positive; the schedule is "
                    "the constant init_value.", transition_steps)
        return constant_schedule(init_value)
    if decay_rate == 0:
        logger.info("exponential_decay: decay_rate is 0; the schedule is the constant "
                    "init_value.")
        return constant_schedule(init_value)
    if transition_begin < 0:
        logger.info("exponential_decay: negative transition_begin=%s treated as 0.",
                    transition_begin)
        transition_begin = 0
    bound = None
    if end_value is not None:
        bound = jnp.maximum if decay_rate < 1 else jnp.minimum

    def schedule(count):
        steps_in = count - transition_begin
        exponent = steps_in / transition_steps
        if staircase:
            exponent = jnp.floor(exponent)
        value = jnp.where(steps_in <= 0, init_value, init_value * jnp.power(decay_rate, exponent))
        return value if bound is None else bound(value, end_value)
    return schedule


def cosine_decay_schedule(init_value, decay_steps: int, alpha=0.0, exponent=1.0) -> Callable:
    """Half a cosine from `init_value` down to `alpha * init_value` over `decay_steps` steps."""
    if not decay_steps > 0:
        raise ValueError(f"cosine_decay_schedule: decay_steps must be positive, got "
                         f"{decay_steps}.")

    def schedule(count):
        steps = float(decay_steps) if isinstance(decay_steps, int) else decay_steps
        count = float(count) if isinstance(count, int) else count
        cosine = 0.5 * (1 + jnp.cos(jnp.pi * jnp.minimum(count, steps) / steps))
        return init_value * ((1 - alpha) * cosine ** exponent + alpha)
    return schedule


def join_schedules(schedules: Sequence[Callable], boundaries: Sequence[int]) -> Callable:
    """`schedules[i]` from `boundaries[i-1]` on, each fed the steps since its own start."""
    if len(boundaries) != len(schedules) - 1:
        raise ValueError(f"join_schedules: {len(schedules)} schedules need "
                         f"{len(schedules) - 1} boundaries, got {len(boundaries)}.")

    def schedule(step):
        value = schedules[0](step)
        for boundary, later in zip(boundaries, schedules[1:]):
            value = jnp.where(step < boundary, value, later(step - boundary))
        return value
    return schedule


def warmup_cosine_decay_schedule(init_value, peak_value, warmup_steps: int, decay_steps: int,
                                 end_value=0.0, exponent=1.0) -> Callable:
    """Linear warmup from `init_value` to `peak_value` over `warmup_steps`, then cosine decay
    to `end_value`; `decay_steps` counts the warmup too."""
    if not decay_steps > warmup_steps:
        raise ValueError(f"warmup_cosine_decay_schedule: decay_steps ({decay_steps}) counts the "
                         f"warmup steps too and must exceed warmup_steps ({warmup_steps}).")
    alpha = 0.0 if peak_value == 0 else end_value / peak_value
    return join_schedules(
        [linear_schedule(init_value, peak_value, warmup_steps),
         cosine_decay_schedule(peak_value, decay_steps - warmup_steps, alpha, exponent)],
        [warmup_steps])


def warmup_exponential_decay_schedule(init_value, peak_value, warmup_steps: int,
                                      transition_steps: int, decay_rate, transition_begin: int = 0,
                                      staircase: bool = False, end_value=None) -> Callable:
    """Linear warmup to `peak_value`, then exponential decay (steps counted from the peak)."""
    return join_schedules(
        [linear_schedule(init_value, peak_value, warmup_steps),
         exponential_decay(peak_value, transition_steps, decay_rate, transition_begin,
                           staircase, end_value)],
        [warmup_steps])


@runtime_checkable
class StatefulSchedule(Protocol):
    """A schedule with state: `init() -> state`, `update(state, **extra_args) -> state` and
    `__call__(state, **extra_args) -> value` (inject_stateful_hyperparams drives it)."""

    def init(self) -> Any:
        ...

    def update(self, state, **extra_args) -> Any:
        ...

    def __call__(self, state, **extra_args) -> Any:
        ...


def _interpolate_linear(start, end, frac):
    return (end - start) * frac + start


def _interpolate_cosine(start, end, frac):
    return end + (start - end) / 2.0 * (jnp.cos(jnp.pi * frac) + 1)


def piecewise_interpolate_schedule(interpolate_type: str, init_value,
                                   boundaries_and_scales: Optional[Mapping] = None) -> Callable:
    """Values `init_value * scale_1 * ... * scale_i` reached at the boundaries, joined by
    'linear' or 'cosine' interpolation; the last value is held after the last boundary."""
    interpolate = {"linear": _interpolate_linear,
                   "cosine": _interpolate_cosine}.get(interpolate_type)
    if interpolate is None:
        raise ValueError(f"`interpolate_type` must be either 'cosine' or 'linear', got "
                         f"{interpolate_type!r}.")
    if boundaries_and_scales:
        boundaries, scales = zip(*sorted(boundaries_and_scales.items()))
        if not all(scale >= 0.0 for scale in scales):
            raise ValueError("`piecewise_interpolate_schedule` expects non-negative scale "
                             f"factors, got {dict(boundaries_and_scales)}.")
    else:
        boundaries, scales = (), ()

    def schedule(count):
        bounds = jnp.stack((0,) + tuple(boundaries))
        values = jnp.cumprod(jnp.stack((init_value,) + tuple(scales)))
        widths = jnp.maximum(bounds[1:] - bounds[:-1], 1)
        inside = jnp.logical_and(bounds[:-1] <= count, count < bounds[1:])
        frac = (count - bounds[:-1]) / widths
        pieces = interpolate(values[:-1], values[1:], frac)
        return inside.dot(pieces) + (bounds[-1] <= count) * values[-1]
    return schedule


def linear_onecycle_schedule(transition_steps: int, peak_value, pct_start: float = 0.3,
                             pct_final: float = 0.85, div_factor: float = 25.0,
                             final_div_factor: float = 1e4) -> Callable:
    """One-cycle policy, linear pieces: from `peak_value / div_factor` up to `peak_value` at
    `pct_start`, back down at `pct_final`, then to `1 / final_div_factor` of that at the end."""
    if transition_steps <= 0:
        raise ValueError("A linear onecycle schedule was set with a non-positive "
                         f"`transition_steps` ({transition_steps}).")
    return piecewise_interpolate_schedule(
        "linear", peak_value / div_factor,
        {int(pct_start * transition_steps): div_factor,
         int(pct_final * transition_steps): 1.0 / div_factor,
         transition_steps: 1.0 / final_div_factor})


def cosine_onecycle_schedule(transition_steps: int, peak_value, pct_start: float = 0.3,
                             div_factor: float = 25.0, final_div_factor: float = 1e4
                             ) -> Callable:
    """One-cycle policy, cosine pieces: from `peak_value / div_factor` up to `peak_value` at
    `pct_start`, then down to `peak_value / (div_factor * final_div_factor)` at the end."""
    if transition_steps <= 0:
        raise ValueError("A cosine onecycle schedule was set with a non-positive "
                         f"`transition_steps` ({transition_steps}).")
    return piecewise_interpolate_schedule(
        "cosine", peak_value / div_factor,
        {int(pct_start * transition_steps): div_factor,
         int(transition_steps): 1.0 / (div_factor * final_div_factor)})


def warmup_constant_schedule(init_value, peak_value, warmup_steps: int) -> Callable:
    """Linear warmup from `init_value` to `peak_value` over `warmup_steps`, then constant."""
    return linear_schedule(init_value, peak_value, warmup_steps)


def sgdr_schedule(cosine_kwargs: Iterable[dict]) -> Callable:
    """Warm restarts: the warmup_cosine_decay_schedules of `cosine_kwargs` one after another,
    each lasting its `decay_steps`."""
    schedules, boundaries, step = [], [], 0
    for kwargs in cosine_kwargs:
        schedules.append(warmup_cosine_decay_schedule(**kwargs))
        step += kwargs["decay_steps"]
        boundaries.append(step)
    return join_schedules(schedules, boundaries[:-1])
