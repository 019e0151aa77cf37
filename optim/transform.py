"""Building blocks: each returns a GradientTransformation with a NamedTuple state."""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

import corejax as jax
import corejax.numpy as jnp
from corejax import lax

from optim import tree_utils as tu
from optim.base import (EmptyState, GradientTransformation, params_required,
                        safe_int32_increment, zero_count)

__all__ = ["scale", "scale_by_schedule", "scale_by_learning_rate", "scale_by_adam",
           "scale_by_adamax", "scale_by_rms", "scale_by_stddev", "scale_by_rss",
           "scale_by_lion", "scale_by_trust_ratio", "add_decayed_weights", "trace", "ema",
           "ScaleState", "ScaleByScheduleState", "ScaleByAdamState", "ScaleByRmsState",
           "ScaleByRmsWithCountState", "ScaleByRStdDevState", "ScaleByRStdDevWithCountState",
           "ScaleByRssState", "ScaleByLionState", "ScaleByTrustRatioState",
           "AddDecayedWeightsState", "TraceState", "EmaState"]

_map = jax.tree_util.tree_map

ScaleState = EmptyState
ScaleByTrustRatioState = EmptyState
AddDecayedWeightsState = EmptyState


def _empty_init(params):
    del params
    return EmptyState()


def scale(step_size) -> GradientTransformation:
    """Multiplies every update by the constant `step_size`."""
    def update(updates, state, params=None):
        del params
        return _map(lambda g: step_size * g, updates), state
    return GradientTransformation(_empty_init, update)


class ScaleByScheduleState(NamedTuple):
    count: Any


def scale_by_schedule(step_size_fn: Callable[[Any], Any]) -> GradientTransformation:
    """Multiplies updates by `step_size_fn(count)`, where count is the number of updates so far."""
    if not callable(step_size_fn):
        raise TypeError(f"scale_by_schedule expects a callable step -> value, got "
                        f"{type(step_size_fn).__name__}; use scale() for a constant.")

    def init(params):
        del params
        return ScaleByScheduleState(zero_count())

    def update(updates, state, params=None):
        del params
        step_size = step_size_fn(state.count)
        updates = _map(lambda g: jnp.asarray(step_size, dtype=g.dtype) * g, updates)
        return updates, ScaleByScheduleState(safe_int32_increment(state.count))
    return GradientTransformation(init, update)


def scale_by_learning_rate(learning_rate=None, *, flip_sign: bool = True) -> GradientTransformation:
    """Scales by `-learning_rate` (descent); `learning_rate` is a number or a schedule
    (`None`: no scaling at all)."""
    if learning_rate is None:
        from optim.base import identity
        return identity()
    sign = -1 if flip_sign else 1
    if callable(learning_rate):
        return scale_by_schedule(lambda count: sign * learning_rate(count))
    return scale(sign * learning_rate)


class ScaleByAdamState(NamedTuple):
    count: Any
    mu: Any
    nu: Any


def scale_by_adam(b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, mu_dtype=None, *,
                  nesterov: bool = False) -> GradientTransformation:
    """Adam's rescaling: bias-corrected first moment over the root of the second."""
    def init(params):
        return ScaleByAdamState(zero_count(), tu.tree_zeros_like(params, dtype=mu_dtype),
                                tu.tree_zeros_like(params))

    def update(updates, state, params=None):
        del params
        mu = tu.tree_update_moment(updates, state.mu, b1, 1)
        nu = tu.tree_update_moment_per_elem_norm(updates, state.nu, b2, 2)
        count = safe_int32_increment(state.count)
        if nesterov:
            # Nesterov look-ahead: next step's bias-corrected momentum plus this gradient's share.
            mu_hat = _map(lambda m, g: (b1 * m / (1 - b1 ** (count + 1))
                                        + (1 - b1) * g / (1 - b1 ** count)), mu, updates)
        else:
            mu_hat = tu.tree_bias_correction(mu, b1, count)
        nu_hat = tu.tree_bias_correction(nu, b2, count)
        updates = _map(lambda m, v: m / (jnp.sqrt(v + eps_root) + eps), mu_hat, nu_hat)
        return updates, ScaleByAdamState(count, tu.tree_cast(mu, mu_dtype), nu)
    return GradientTransformation(init, update)


def scale_by_adamax(b1=0.9, b2=0.999, eps=1e-8) -> GradientTransformation:
    """Adamax: bias-corrected first moment over a decayed running max of |g|."""
    def init(params):
        return ScaleByAdamState(zero_count(), tu.tree_zeros_like(params),
                                tu.tree_zeros_like(params))

    def update(updates, state, params=None):
        del params
        count = safe_int32_increment(state.count)
        mu = tu.tree_update_moment(updates, state.mu, b1, 1)
        nu = tu.tree_update_infinity_moment(updates, state.nu, b2, eps)
        mu_hat = tu.tree_bias_correction(mu, b1, count)
        return _map(lambda m, v: m / v, mu_hat, nu), ScaleByAdamState(count, mu, nu)
    return GradientTransformation(init, update)


class ScaleByRmsState(NamedTuple):
    nu: Any


class ScaleByRmsWithCountState(NamedTuple):
    count: Any
    nu: Any


def _inverse_root(denominator_sq, eps, eps_in_sqrt):
    if eps_in_sqrt:
        return lax.rsqrt(denominator_sq + eps)
    return 1 / (jnp.sqrt(denominator_sq) + eps)


def scale_by_rms(decay=0.9, eps=1e-8, initial_scale=0.0, eps_in_sqrt: bool = True,
                 bias_correction: bool = False) -> GradientTransformation:
    """Divides updates by the root of a moving average of their squares (RMSProp)."""
    def init(params):
        nu = tu.tree_full_like(params, initial_scale)
        if bias_correction:
            return ScaleByRmsWithCountState(zero_count(), nu)
        return ScaleByRmsState(nu)

    def update(updates, state, params=None):
        del params
        nu = tu.tree_update_moment_per_elem_norm(updates, state.nu, decay, 2)
        if bias_correction:
            count = safe_int32_increment(state.count)
            nu_hat = tu.tree_bias_correction(nu, decay, count)
            new_state = ScaleByRmsWithCountState(count, nu)
        else:
            nu_hat, new_state = nu, ScaleByRmsState(nu)
        updates = _map(lambda g, v: g * _inverse_root(v, eps, eps_in_sqrt), updates, nu_hat)
        return updates, new_state
    return GradientTransformation(init, update)


class ScaleByRStdDevState(NamedTuple):
    mu: Any
    nu: Any


class ScaleByRStdDevWithCountState(NamedTuple):
    count: Any
    mu: Any
    nu: Any


def scale_by_stddev(decay=0.9, eps=1e-8, initial_scale=0.0, eps_in_sqrt: bool = True,
                    bias_correction: bool = False) -> GradientTransformation:
    """Divides updates by a running estimate of their standard deviation (centered RMSProp)."""
    def init(params):
        mu, nu = tu.tree_zeros_like(params), tu.tree_full_like(params, initial_scale)
        if bias_correction:
            return ScaleByRStdDevWithCountState(zero_count(), mu, nu)
        return ScaleByRStdDevState(mu, nu)

    def update(updates, state, params=None):
        del params
        mu = tu.tree_update_moment(updates, state.mu, decay, 1)
        nu = tu.tree_update_moment_per_elem_norm(updates, state.nu, decay, 2)
        if bias_correction:
            count = safe_int32_increment(state.count)
            mu_hat = tu.tree_bias_correction(mu, decay, count)
            nu_hat = tu.tree_bias_correction(nu, decay, count)
            new_state = ScaleByRStdDevWithCountState(count, mu, nu)
        else:
            mu_hat, nu_hat, new_state = mu, nu, ScaleByRStdDevState(mu, nu)
        updates = _map(lambda g, m, v: g * _inverse_root(v - jnp.square(m), eps, eps_in_sqrt),
                       updates, mu_hat, nu_hat)
        return updates, new_state
    return GradientTransformation(init, update)


class ScaleByRssState(NamedTuple):
    sum_of_squares: Any


def scale_by_rss(initial_accumulator_value=0.1, eps=1e-7) -> GradientTransformation:
    """Divides updates by the root of the running sum of their squares (Adagrad)."""
    def init(params):
        return ScaleByRssState(tu.tree_full_like(params, initial_accumulator_value))

    def update(updates, state, params=None):
        del params
        sum_of_squares = _map(lambda g, s: jnp.square(g) + s, updates, state.sum_of_squares)
        updates = _map(lambda g, s: jnp.where(s > 0, lax.rsqrt(s + eps), 0.0) * g,
                       updates, sum_of_squares)
        return updates, ScaleByRssState(sum_of_squares)
    return GradientTransformation(init, update)


class ScaleByLionState(NamedTuple):
    count: Any
    mu: Any


def scale_by_lion(b1=0.9, b2=0.99, mu_dtype=None, *, mode: str = "hard",
                  smooth_beta: float = 1.0) -> GradientTransformation:
    """Lion: the sign of an interpolation between the gradient and its momentum
    (`mode='smooth'`: tanh(smooth_beta * x) instead; `'refined'`: x itself where |x| < 1)."""
    shapes = {"hard": jnp.sign,
              "smooth": lambda x: jnp.tanh(smooth_beta * x),
              "refined": lambda x: jnp.where(jnp.abs(x) < 1.0, x, jnp.sign(x))}
    if mode not in shapes:
        raise ValueError(f"Unknown lion mode: {mode}. It needs to be one of "
                         "[\"hard\", \"smooth\", \"refined\"].")
    shape = shapes[mode]

    def init(params):
        return ScaleByLionState(zero_count(), tu.tree_zeros_like(params, dtype=mu_dtype))

    def update(updates, state, params=None):
        del params
        directions = _map(lambda g, m: shape((1.0 - b1) * g + b1 * m), updates, state.mu)
        mu = tu.tree_update_moment(updates, state.mu, b2, 1)
        return directions, ScaleByLionState(safe_int32_increment(state.count),
                                            tu.tree_cast(mu, mu_dtype))
    return GradientTransformation(init, update)


def _clamped_norm(x, min_norm):
    norm = jnp.sqrt(jnp.sum(jnp.square(x)))
    return jnp.where(norm <= min_norm, min_norm, norm)


def scale_by_trust_ratio(min_norm=0.0, trust_coefficient=1.0, eps=0.0) -> GradientTransformation:
    """Rescales each leaf's update by ||param|| / ||update|| (LARS/LAMB layer-wise trust)."""
    def update(updates, state, params=None):
        params_required("scale_by_trust_ratio", params)

        def rescale(u, p):
            param_norm = _clamped_norm(p, min_norm)
            update_norm = _clamped_norm(u, min_norm)
            ratio = trust_coefficient * param_norm / (update_norm + eps)
            degenerate = jnp.logical_or(param_norm == 0.0, update_norm == 0.0)
            return u * jnp.where(degenerate, 1.0, ratio).astype(u.dtype)
        return _map(rescale, updates, params), state
    return GradientTransformation(_empty_init, update)


class WeightDecaySchedule(NamedTuple):
    count: Any


def add_decayed_weights(weight_decay=0.0, mask=None) -> GradientTransformation:
    """Adds `weight_decay * params` to the updates (decoupled weight decay); `weight_decay`
    is a number or a schedule of the step count; `mask` limits it to some parameters (a
    pytree of bools like the params, or a callable params -> such)."""
    scheduled = callable(weight_decay)

    def init(params):
        del params
        return WeightDecaySchedule(zero_count()) if scheduled else EmptyState()

    def update(updates, state, params=None):
        params_required("add_decayed_weights", params)
        if scheduled:
            rate, state = weight_decay(state.count), WeightDecaySchedule(
                safe_int32_increment(state.count))
        else:
            rate = weight_decay
            if isinstance(rate, (int, float)) and rate == 0.0:
                return updates, state
        return _map(lambda g, p: g + rate * p, updates, params), state
    transform = GradientTransformation(init, update)
    if mask is None:
        return transform
    from optim.wrappers import masked
    return masked(transform, mask)


class TraceState(NamedTuple):
    trace: Any


def trace(decay, nesterov: bool = False, accumulator_dtype=None) -> GradientTransformation:
    """Momentum: `t <- g + decay * t`, emitting t (or `g + decay * t` again with Nesterov)."""
    def init(params):
        return TraceState(tu.tree_zeros_like(params, dtype=accumulator_dtype))

    def update(updates, state, params=None):
        del params
        def accumulate(g, t):
            return g + decay * t
        new_trace = _map(accumulate, updates, state.trace)
        updates = _map(accumulate, updates, new_trace) if nesterov else new_trace
        return updates, TraceState(tu.tree_cast(new_trace, accumulator_dtype))
    return GradientTransformation(init, update)


class EmaState(NamedTuple):
    count: Any
    ema: Any


def ema(decay, debias: bool = True, accumulator_dtype=None) -> GradientTransformation:
    """Replaces updates by their exponential moving average (bias-corrected if `debias`)."""
    def init(params):
        return EmaState(zero_count(), tu.tree_zeros_like(params, dtype=accumulator_dtype))

    def update(updates, state, params=None):
        del params
        averaged = tu.tree_update_moment(updates, state.ema, decay, 1)
        count = safe_int32_increment(state.count)
        updates = tu.tree_bias_correction(averaged, decay, count) if debias else averaged
        return updates, EmaState(count, tu.tree_cast(averaged, accumulator_dtype))
    return GradientTransformation(init, update)

