"""Line searches as gradient transformations: the update direction is scaled by a step size
found by evaluating the objective along it (Optax's scale_by_backtracking_linesearch and
scale_by_zoom_linesearch), and value_and_grad_from_state, which reuses the value and gradient
a line search already computed at the accepted point.

Both searches run as `lax.while_loop`s, so an optimizer step containing one compiles under
`corejax.jit`. Their updates take the extra keyword arguments `value` (objective at params),
`grad` (its gradient) and `value_fn` (the objective; further keyword arguments that `value_fn`
accepts are passed on to it)."""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, NamedTuple, Optional

import corejax as jax
import corejax.numpy as jnp
from corejax import lax

from optim import tree_utils as tu
from optim.base import GradientTransformationExtraArgs
from optim.numerics import safe_increment

__all__ = ["BacktrackingLinesearchInfo", "ScaleByBacktrackingLinesearchState",
           "scale_by_backtracking_linesearch", "ZoomLinesearchInfo",
           "ScaleByZoomLinesearchState", "scale_by_zoom_linesearch", "zoom_linesearch",
           "value_and_grad_from_state"]

_map = jax.tree_util.tree_map


def _real_vdot(x, y):
    return jnp.real(tu.tree_vdot(x, y))


def _cast_like(tree, like):
    """`tree` with every leaf cast to the dtype of the matching leaf of `like` (loop carries
    keep their types)."""
    return _map(lambda x, y: jnp.asarray(x).astype(jnp.asarray(y).dtype), tree, like)


def _value_dtype(params):
    return jnp.real(jnp.zeros((), jax.tree_util.tree_leaves(params)[0].dtype)).dtype


def _split_value_fn_kwargs(value_fn, extra_args, owner):
    """The extra arguments `value_fn` takes; any other one is an error naming it."""
    names = set(inspect.signature(value_fn).parameters)
    taken = {k: v for k, v in extra_args.items() if k in names}
    unused = sorted(k for k in extra_args if k not in names)
    if unused:
        raise TypeError(f"Unexpected keyword arguments passed to `{owner}.update`. These "
                        f"arguments were not consumed by `value_fn`: {unused}. Ensure that all "
                        "extra keyword arguments are accepted by `value_fn`.")
    return taken


def _print_if(condition, message, **values):
    """jax.debug.print(message, **values) when the traced `condition` holds at runtime."""
    lax.cond(condition, lambda v: jax.debug.print(message, **v), lambda v: None, values)


# The verbose searches' messages, as Optax prints them (users grep their logs for these).
_BACKTRACKING_FAILED = (
    "INFO: optax.scale_by_backtracking_linesearch:\n"
    "Backtracking linesearch failed to find a stepsize ensuring sufficent decrease.\n"
    "Value at current params: {value},\nSlope along update direction: {slope}\n"
    "Stepsize: {stepsize}\nDecrease Error: {decrease_error}")
_ZOOM_INFO = (
    "INFO: optax.scale_by_zoom_linesearch:\nValue at current params: {value_init}\n"
    "Slope along update direction: {slope_init}\nStepsize reached: {stepsize}\n"
    "Decrease Error: {decrease_error}\nCurvature Error: {curvature_error}")
_INTERVAL_NOT_FOUND = ("No interval satisfying curvature condition. Consider increasing "
                       "maximal possible stepsize of the linesearch.")
_INTERVAL_TOO_SMALL = "Length of searched interval has been reduced below threshold."
_CURVATURE_NOT_SATISFIED = ("Returning stepsize with sufficient decrease but curvature "
                            "condition not satisfied.")
_NO_STEPSIZE_FOUND = "Linesearch failed, no stepsize satisfying sufficient decrease found."
_NOT_A_DESCENT_DIRECTION = ("The linesearch failed because the provided direction is not a "
                            "descent direction. ")
_BELOW_PRECISION = ("Computed stepsize (={stepsize}) is below machine precision (={eps}), "
                    "consider passing to higher precision like x64, using "
                    "jax.config.update('jax_enable_x64', True).")
_LARGE_SLOPE = ("Very large absolute slope at stepsize=0. (|slope|={abs_slope_init}). The "
                "objective is badly conditioned. Consider reparameterizing objective (e.g., "
                "normalizing parameters) or finding a better guess for the initial parameters "
                "for the solver.")


def _missing(owner, **args):
    absent = [k for k, v in args.items() if v is None]
    if absent:
        raise TypeError(f"{owner}.update needs the keyword arguments value=, grad= and "
                        f"value_fn= (the objective, its gradient at params and the objective "
                        f"function); missing: {absent}.")


# --- backtracking (Armijo) ----------------------------------------------------------------

class BacktrackingLinesearchInfo(NamedTuple):
    num_linesearch_steps: Any
    decrease_error: Any


class ScaleByBacktrackingLinesearchState(NamedTuple):
    learning_rate: Any
    value: Any
    grad: Any
    info: BacktrackingLinesearchInfo


class BacktrackingLineSearchState(NamedTuple):
    learning_rate: Any
    new_value: Any
    new_grad: Any
    decrease_error: Any
    iter_num: Any


def scale_by_backtracking_linesearch(max_backtracking_steps, slope_rtol=1e-4,
                                     decrease_factor=0.8, increase_factor=1.5,
                                     max_learning_rate=1.0, atol=0.0, rtol=0.0,
                                     store_grad: bool = False,
                                     verbose: bool = False) -> GradientTransformationExtraArgs:
    """Armijo backtracking: starting from `increase_factor` times the previous step size
    (at most `max_learning_rate`), shrink by `decrease_factor` until
    f(x + s u) <= (1 + rtol) f(x) + s * slope_rtol * <u, grad> + atol. With `store_grad`,
    the gradient at the accepted point is kept in the state (value_and_grad_from_state)."""
    def init(params):
        dtype = _value_dtype(params)
        return ScaleByBacktrackingLinesearchState(
            learning_rate=jnp.array(1.0, dtype=dtype), value=jnp.array(jnp.inf, dtype=dtype),
            grad=tu.tree_zeros_like(params) if store_grad else None,
            info=BacktrackingLinesearchInfo(jnp.asarray(0, jnp.int32),
                                            jnp.array(jnp.inf, dtype=dtype)))

    def decrease_error_at(stepsize, slope, value, new_value):
        err = new_value - (1.0 + rtol) * value - stepsize * slope_rtol * slope
        err = jnp.where(jnp.isnan(err), jnp.inf, err)
        return jnp.maximum(err, 0.0)

    def update(updates, state, params=None, *, value=None, grad=None, value_fn=None,
               **extra_args):
        _missing("scale_by_backtracking_linesearch", value=value, grad=grad,
                 value_fn=value_fn)
        fn_kwargs = _split_value_fn_kwargs(value_fn, extra_args,
                                           "scale_by_backtracking_linesearch")
        objective = functools.partial(value_fn, **fn_kwargs)
        slope = _real_vdot(updates, _map(jnp.conj, grad))

        def cond(s):
            return (jnp.logical_not(s.decrease_error <= atol)
                    & (s.iter_num <= max_backtracking_steps))

        def body(s):
            rate = jnp.where(s.iter_num > 0, decrease_factor * s.learning_rate,
                             s.learning_rate)
            trial = tu.tree_add_scalar_mul(params, rate, updates)
            new_grad = s.new_grad
            if store_grad:
                new_value, new_grad = jax.value_and_grad(objective)(trial)
            else:
                new_value = objective(trial)
            err = decrease_error_at(rate, slope, value, new_value)
            return _cast_like(BacktrackingLineSearchState(rate, new_value, new_grad, err,
                                                          s.iter_num + 1), s)

        start = jnp.minimum(increase_factor * state.learning_rate, max_learning_rate)
        first = BacktrackingLineSearchState(
            start, jnp.asarray(value), tu.tree_zeros_like(params),
            jnp.asarray(jnp.inf, jnp.asarray(start).dtype), jnp.asarray(0, jnp.int32))
        final = lax.while_loop(cond, body, first)
        rate = jnp.where(jnp.isinf(final.decrease_error), 0.0, final.learning_rate)
        if verbose:  # only when the search failed
            _print_if(final.decrease_error > atol, _BACKTRACKING_FAILED,
                      stepsize=final.learning_rate, decrease_error=final.decrease_error,
                      value=value, slope=slope)
            _print_if(jnp.isinf(final.decrease_error),
                      "Using a stepsize of 0 to avoid infinite or nan values.")
        new_state = ScaleByBacktrackingLinesearchState(
            learning_rate=rate, value=final.new_value,
            grad=final.new_grad if store_grad else None,
            info=BacktrackingLinesearchInfo(final.iter_num, final.decrease_error))
        return _map(lambda u: rate * u, updates), _cast_like(new_state, state)
    return GradientTransformationExtraArgs(init, update)


# --- zoom (strong Wolfe conditions) -------------------------------------------------------

class ZoomLinesearchState(NamedTuple):
    count: Any
    params: Any
    updates: Any
    stepsize_guess: Any
    stepsize: Any
    value: Any
    grad: Any
    slope: Any
    value_init: Any
    slope_init: Any
    decrease_error: Any
    curvature_error: Any
    error: Any
    interval_found: Any
    done: Any
    failed: Any
    low: Any
    value_low: Any
    slope_low: Any
    high: Any
    value_high: Any
    slope_high: Any
    cubic_ref: Any
    value_cubic_ref: Any
    safe_stepsize: Any
    safe_value: Any
    safe_grad: Any


def _cubicmin(a, fa, fpa, b, fb, c, fc):
    """Minimizer of the cubic through (a, fa) with slope fpa at a, (b, fb) and (c, fc)."""
    db, dc = b - a, c - a
    denom = (db * dc) ** 2 * (db - dc)
    rb, rc = fb - fa - fpa * db, fc - fa - fpa * dc
    cubic = (dc ** 2 * rb + (-db ** 2) * rc) / denom
    quad = ((-dc ** 3) * rb + db ** 3 * rc) / denom
    radical = quad * quad - 3.0 * cubic * fpa
    return a + (-quad + jnp.sqrt(radical)) / (3.0 * cubic)


def _quadmin(a, fa, fpa, b, fb):
    """Minimizer of the parabola through (a, fa) with slope fpa at a and (b, fb)."""
    db = b - a
    curv = (fb - fa - fpa * db) / db ** 2
    return a - fpa / (2.0 * curv)


def _pick(cond, on_true, on_false):
    return [jnp.where(cond, t, f) for t, f in zip(on_true, on_false)]


def _pick_trees(cond, on_true, on_false):
    return _map(lambda t, f: jnp.where(cond, t, f), on_true, on_false)


def zoom_linesearch(max_linesearch_steps, max_stepsize=None, tol=0.0, increase_factor=2.0,
                    slope_rtol=1e-4, curv_rtol=0.9, approx_dec_rtol=1e-6,
                    interval_threshold=1e-5, verbose: bool = False):
    """The zoom line search of Nocedal & Wright (Algorithm 3.5/3.6) as (init, step, cond)
    functions over a ZoomLinesearchState: first grow the step until an interval bracketing a
    point satisfying the strong Wolfe conditions is found, then shrink it by cubic,
    quadratic or bisection steps. Hager & Zhang's approximate decrease condition is accepted
    too when `approx_dec_rtol` is not None."""
    def on_line(value_and_grad_fn, params, stepsize, updates, fn_kwargs):
        point = tu.tree_add_scalar_mul(params, stepsize, updates)
        value, grad = value_and_grad_fn(point, **fn_kwargs)
        return value, grad, _real_vdot(_map(jnp.conj, grad), updates)

    def decrease_error_at(stepsize, value, slope, value_init, slope_init):
        err = value - value_init - slope_rtol * stepsize * slope_init
        if approx_dec_rtol is not None:
            approx = slope - (2 * slope_rtol - 1.0) * slope_init
            delta = value - value_init - approx_dec_rtol * jnp.abs(value_init)
            err = jnp.minimum(jnp.maximum(approx, delta), err)
        err = jnp.maximum(err, 0.0)
        return jnp.where(jnp.isnan(err), jnp.inf, err)

    def curvature_error_at(slope, slope_init):
        err = jnp.maximum(jnp.abs(slope) - curv_rtol * jnp.abs(slope_init), 0.0)
        return jnp.where(jnp.isnan(err), jnp.inf, err)

    def failure_diagnostic(s):
        jax.debug.print(_NO_STEPSIZE_FOUND)
        descent = s.slope_init < 0.0
        _print_if(jnp.logical_not(descent), _NOT_A_DESCENT_DIRECTION + "The slope "
                  "(={slope_init}) at stepsize=0 should be negative", slope_init=s.slope_init)
        _print_if(descent, "Consider augmenting the maximal number of linesearch iterations.")
        eps = jnp.finfo(jnp.float32).eps
        _print_if((s.stepsize < eps) & descent, _BELOW_PRECISION, stepsize=s.stepsize, eps=eps)
        abs_slope_init = jnp.abs(s.slope_init)
        _print_if((abs_slope_init > 1e16) & descent, _LARGE_SLOPE,
                  abs_slope_init=abs_slope_init)
        outside_domain = jnp.isinf(s.decrease_error)
        _print_if(outside_domain, "Cannot even make a step without getting Inf or Nan. The "
                  "linesearch won't make a step and the optimizer is stuck.")
        _print_if(jnp.logical_not(outside_domain), "Making an unsafe step, not decreasing "
                  "enough the objective. Convergence of the solver is compromised as it does "
                  "not reduce values.")

    def report_failure(s):
        jax.debug.print(_ZOOM_INFO, value_init=s.value_init, slope_init=s.slope_init,
                        stepsize=s.stepsize, decrease_error=s.decrease_error,
                        curvature_error=s.curvature_error)
        interval_length = jnp.abs(s.low - s.high)
        _print_if(interval_length <= interval_threshold,
                  _INTERVAL_TOO_SMALL + " Interval length: {interval_length}.",
                  interval_length=interval_length)
        lax.cond(s.safe_stepsize > 0.0,
                 lambda st: jax.debug.print(_CURVATURE_NOT_SATISFIED + " Stepsize ensuring "
                                            "sufficient decrease: {safe_stepsize}.",
                                            safe_stepsize=st.safe_stepsize),
                 failure_diagnostic, s)

    def try_safe_step(s):
        if verbose:
            report_failure(s)
        outside_domain = jnp.isinf(s.decrease_error)
        use_safe = (s.safe_stepsize > 0.0) | outside_domain
        stepsize, value = _pick(use_safe, [s.safe_stepsize, s.safe_value],
                                [s.stepsize, s.value])
        grad = _pick_trees(use_safe, s.safe_grad, s.grad)
        return _cast_like(s._replace(stepsize=stepsize, value=value, grad=grad), s)

    def search_interval(s, value_and_grad_fn, fn_kwargs):
        new_step = jnp.where(s.count == 0, s.stepsize_guess, increase_factor * s.stepsize)
        if max_stepsize is not None:
            max_reached = new_step >= max_stepsize
            new_step = jnp.minimum(new_step, max_stepsize)
        else:
            max_reached = jnp.asarray(False)
        value, grad, slope = on_line(value_and_grad_fn, s.params, new_step, s.updates,
                                     fn_kwargs)
        dec = decrease_error_at(new_step, value, slope, s.value_init, s.slope_init)
        curv = curvature_error_at(slope, s.slope_init)
        error = jnp.maximum(dec, curv)
        safe = dec <= tol
        safe_stepsize, safe_value = _pick(safe, [new_step, value],
                                          [s.safe_stepsize, s.safe_value])
        safe_grad = _pick_trees(safe, grad, s.safe_grad)
        high_is_new = (dec > 0.0) | ((value >= s.value) & (s.count > 0))
        low_is_new = (slope >= 0.0) & jnp.logical_not(high_is_new)
        low, value_low, slope_low, high, value_high, slope_high = _pick(
            low_is_new, [new_step, value, slope, s.stepsize, s.value, s.slope],
            [s.stepsize, s.value, s.slope, new_step, value, slope])
        interval_found = high_is_new | low_is_new | (error <= tol)
        done = (error <= tol) | (max_reached & jnp.logical_not(interval_found))
        if verbose:
            _print_if(max_reached & jnp.logical_not(interval_found),
                      _ZOOM_INFO + _INTERVAL_NOT_FOUND + "\n" + _CURVATURE_NOT_SATISFIED,
                      value_init=s.value_init, slope_init=s.slope_init, stepsize=new_step,
                      decrease_error=dec, curvature_error=curv)
        failed = (s.count + 1 >= max_linesearch_steps) & jnp.logical_not(done)
        new = ZoomLinesearchState(
            count=safe_increment(s.count), params=s.params, updates=s.updates,
            stepsize_guess=s.stepsize_guess, stepsize=new_step, value=value, grad=grad,
            slope=slope, value_init=s.value_init, slope_init=s.slope_init,
            decrease_error=dec, curvature_error=curv, error=error,
            interval_found=jnp.asarray(interval_found), done=jnp.asarray(done),
            failed=jnp.asarray(failed), low=low, value_low=value_low, slope_low=slope_low,
            high=high, value_high=value_high, slope_high=slope_high, cubic_ref=low,
            value_cubic_ref=value_low, safe_stepsize=safe_stepsize, safe_value=safe_value,
            safe_grad=safe_grad)
        return _cast_like(new, s)

    def zoom_into_interval(s, value_and_grad_fn, fn_kwargs):
        low, high = s.low, s.high
        delta = jnp.abs(high - low)
        left, right = jnp.minimum(high, low), jnp.maximum(high, low)
        too_small = delta <= interval_threshold
        cubic = _cubicmin(low, s.value_low, s.slope_low, high, s.value_high, s.cubic_ref,
                          s.value_cubic_ref)
        use_cubic = (cubic > left + 0.2 * delta) & (cubic < right - 0.2 * delta)
        quad = _quadmin(low, s.value_low, s.slope_low, high, s.value_high)
        use_quad = jnp.logical_not(use_cubic) & (quad > left + 0.1 * delta) & (
            quad < right - 0.1 * delta)
        use_bisection = jnp.logical_not(use_cubic) & jnp.logical_not(use_quad)
        middle = jnp.where(use_cubic, cubic, s.cubic_ref)
        middle = jnp.where(use_quad, quad, middle)
        middle = jnp.where(use_bisection, (low + high) / 2.0, middle)
        value, grad, slope = on_line(value_and_grad_fn, s.params, middle, s.updates,
                                     fn_kwargs)
        dec = decrease_error_at(middle, value, slope, s.value_init, s.slope_init)
        curv = curvature_error_at(slope, s.slope_init)
        error = jnp.maximum(dec, curv)
        better_safe = (dec <= tol) & (value < s.safe_value)
        safe_stepsize, safe_value = _pick(better_safe, [middle, value],
                                          [s.safe_stepsize, s.safe_value])
        safe_grad = _pick_trees(better_safe, grad, s.safe_grad)
        done = error <= tol
        high_to_middle = (dec > 0.0) | (value >= s.value_low)
        high_to_low = (slope * (high - low) >= 0.0) & jnp.logical_not(high_to_middle)
        low_to_middle = jnp.logical_not(high_to_middle)
        mid = [middle, value, slope]
        new_high = _pick(high_to_middle, mid, [high, s.value_high, s.slope_high])
        new_high = _pick(high_to_low, [low, s.value_low, s.slope_low], new_high)
        new_low = _pick(low_to_middle, mid, [low, s.value_low, s.slope_low])
        cubic_ref, value_cubic_ref = _pick(high_to_middle | high_to_low,
                                           [high, s.value_high], [low, s.value_low])
        presumably_failed = (s.count + 1 >= max_linesearch_steps) | (
            too_small & (safe_stepsize > 0.0))
        new = ZoomLinesearchState(
            count=safe_increment(s.count), params=s.params, updates=s.updates,
            stepsize_guess=s.stepsize_guess, stepsize=middle, value=value, grad=grad,
            slope=slope, value_init=s.value_init, slope_init=s.slope_init,
            decrease_error=dec, curvature_error=curv, error=error,
            interval_found=s.interval_found, done=done,
            failed=presumably_failed & jnp.logical_not(done), low=new_low[0],
            value_low=new_low[1], slope_low=new_low[2], high=new_high[0],
            value_high=new_high[1], slope_high=new_high[2], cubic_ref=cubic_ref,
            value_cubic_ref=value_cubic_ref, safe_stepsize=safe_stepsize,
            safe_value=safe_value, safe_grad=safe_grad)
        return _cast_like(new, s)

    def init(updates, params, *, value, grad, prev_stepsize=1.0,
             initial_guess_strategy: str = "one"):
        if initial_guess_strategy == "one":
            guess = jnp.asarray(1.0)
        elif initial_guess_strategy == "keep":
            guess = jnp.asarray(prev_stepsize)
        else:
            raise ValueError(f"Unknown initial guess strategy: {initial_guess_strategy!r}; "
                             "use 'one' or 'keep'.")
        dtype = _value_dtype(params)
        value = jnp.asarray(value, dtype)
        slope = _real_vdot(updates, grad)
        zero, inf = jnp.asarray(0.0, dtype), jnp.asarray(jnp.inf, dtype)
        return ZoomLinesearchState(
            count=jnp.asarray(0, jnp.int32), params=params, updates=updates,
            stepsize_guess=guess.astype(dtype), stepsize=zero, value=value, grad=grad,
            slope=slope, value_init=value, slope_init=slope, decrease_error=inf,
            curvature_error=inf, error=inf, interval_found=jnp.asarray(False),
            done=jnp.asarray(False), failed=jnp.asarray(False), low=zero, value_low=value,
            slope_low=slope, high=zero, value_high=value, slope_high=slope, cubic_ref=zero,
            value_cubic_ref=value, safe_stepsize=zero, safe_value=value, safe_grad=grad)

    def step(s, *, value_and_grad_fn, fn_kwargs):
        new = lax.cond(s.interval_found,
                       functools.partial(zoom_into_interval, value_and_grad_fn=value_and_grad_fn,
                                         fn_kwargs=fn_kwargs),
                       functools.partial(search_interval, value_and_grad_fn=value_and_grad_fn,
                                         fn_kwargs=fn_kwargs), s)
        new = lax.cond(new.failed, try_safe_step, lambda x: x, new)
        return _cast_like(new, s)

    def cond(s):
        return jnp.logical_not(s.done | s.failed)
    return init, step, cond


class ZoomLinesearchInfo(NamedTuple):
    num_linesearch_steps: Any
    decrease_error: Any
    curvature_error: Any


class ScaleByZoomLinesearchState(NamedTuple):
    learning_rate: Any
    value: Any
    grad: Any
    info: ZoomLinesearchInfo


def scale_by_zoom_linesearch(max_linesearch_steps, max_learning_rate=None, tol=0.0,
                             increase_factor=2.0, slope_rtol=1e-4, curv_rtol=0.9,
                             approx_dec_rtol=1e-6, stepsize_precision=1e-5,
                             initial_guess_strategy: str = "keep",
                             verbose: bool = False) -> GradientTransformationExtraArgs:
    """Scales the updates by a step size satisfying the strong Wolfe conditions (or, failing
    that within `max_linesearch_steps`, the best one ensuring sufficient decrease). The state
    keeps the value and gradient at the new point for value_and_grad_from_state."""
    if initial_guess_strategy not in ("one", "keep"):
        raise ValueError(f"Unknown initial guess strategy: {initial_guess_strategy!r}; use "
                         "'one' or 'keep'.")
    init_ls, step_ls, cond_ls = zoom_linesearch(
        max_linesearch_steps=max_linesearch_steps, max_stepsize=max_learning_rate, tol=tol,
        increase_factor=increase_factor, slope_rtol=slope_rtol, curv_rtol=curv_rtol,
        approx_dec_rtol=approx_dec_rtol, interval_threshold=stepsize_precision,
        verbose=verbose)

    def init(params):
        dtype = _value_dtype(params)
        inf = jnp.asarray(jnp.inf, dtype)
        return ScaleByZoomLinesearchState(
            learning_rate=jnp.asarray(1.0, dtype), value=inf,
            grad=tu.tree_zeros_like(params),
            info=ZoomLinesearchInfo(jnp.asarray(0, jnp.int32), inf, inf))

    def update(updates, state, params=None, *, value=None, grad=None, value_fn=None,
               **extra_args):
        _missing("scale_by_zoom_linesearch", value=value, grad=grad, value_fn=value_fn)
        fn_kwargs = _split_value_fn_kwargs(value_fn, extra_args, "scale_by_zoom_linesearch")
        value_and_grad_fn = jax.value_and_grad(value_fn)
        first = init_ls(updates, params, value=value, grad=grad,
                        prev_stepsize=state.learning_rate,
                        initial_guess_strategy=initial_guess_strategy)
        final = lax.while_loop(cond_ls, functools.partial(
            step_ls, value_and_grad_fn=value_and_grad_fn, fn_kwargs=fn_kwargs), first)
        rate = final.stepsize
        new_state = ScaleByZoomLinesearchState(
            learning_rate=rate, value=final.value, grad=final.grad,
            info=ZoomLinesearchInfo(final.count, final.decrease_error, final.curvature_error))
        return _map(lambda u: rate * u, updates), _cast_like(new_state, state)
    return GradientTransformationExtraArgs(init, update)


# --- reuse of the line search's evaluations ------------------------------------------------

def _find_field(tree, name):
    """Every value stored under the NamedTuple field `name` anywhere in `tree`."""
    found = []

    def walk(node):
        if isinstance(node, tuple) and hasattr(node, "_fields"):
            for field in node._fields:
                child = getattr(node, field)
                if field == name:
                    found.append(child)
                else:
                    walk(child)
        elif isinstance(node, (tuple, list)):
            for child in node:
                walk(child)
        elif isinstance(node, dict):
            for child in node.values():
                walk(child)
    walk(tree)
    return found


def value_and_grad_from_state(value_fn: Callable[..., Any]) -> Callable[..., tuple]:
    """`value_and_grad(value_fn)` that first looks in the optimizer state (keyword `state=`)
    for the `value` and `grad` a line search stored at the current params and recomputes
    them only when that value is not finite (the first step)."""
    def value_and_grad(params, *fn_args, state: Optional[Any] = None, **fn_kwargs):
        values, grads = _find_field(state, "value"), _find_field(state, "grad")
        if len(values) != 1 or len(grads) != 1 or grads[0] is None:
            raise ValueError("Value or gradient not found in the state. Make sure that these "
                             "values are stored in the state by the optimizer "
                             f"(found {len(values)} 'value' and {len(grads)} 'grad' fields).")
        value, grad = values[0], grads[0]
        return lax.cond(jnp.logical_not(jnp.isinf(value)) & jnp.logical_not(jnp.isnan(value)),
                        lambda p, a, kw: (value, grad),
                        lambda p, a, kw: jax.value_and_grad(value_fn)(p, *a, **kw),
                        params, fn_args, fn_kwargs)
    return value_and_grad
