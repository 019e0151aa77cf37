"""optimizers: first-order optimizers as triples of pure functions
(jax.example_libraries.optimizers).

An optimizer is `(init_fun, update_fun, get_params)`:

- `init_fun(params) -> opt_state` for a pytree of parameters;
- `update_fun(step, grads, opt_state) -> opt_state`, `grads` with the parameters' structure;
- `get_params(opt_state) -> params`.

Each optimizer below is written for a single array (`init(x0) -> state`, `update(i, g, state)`,
`get_params(state)`) and the `@optimizer` decorator maps it over every leaf of a parameter
pytree. The resulting `OptimizerState` is itself a pytree, so it passes through jit, grad and
vmap. Step sizes are floats or schedules `step -> step size`.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, NamedTuple

import corejax.numpy as jnp
from corejax.tree_util import (register_pytree_node, tree_flatten, tree_map, tree_unflatten,
                               tree_leaves)

__all__ = [
    "OptimizerState", "Optimizer", "optimizer", "JoinPoint", "unpack_optimizer_state",
    "pack_optimizer_state",
    "sgd", "momentum", "nesterov", "adagrad", "rmsprop", "rmsprop_momentum", "adam", "adamax",
    "sm3",
    "constant", "exponential_decay", "inverse_time_decay", "polynomial_decay",
    "piecewise_constant", "make_schedule",
    "l2_norm", "clip_grads",
]

Step = int
Schedule = Callable[[Step], float]
Params = Any
State = Any
Updates = Params


class OptimizerState(NamedTuple):
    """The state of a tree optimizer: per-leaf states flattened (`packed_state`, one list of
    arrays per parameter leaf), with the parameters' tree structure (`tree_def`) and each leaf
    state's own structure (`subtree_defs`) kept as static pytree metadata."""
    packed_state: Any
    tree_def: Any
    subtree_defs: Any


register_pytree_node(
    OptimizerState,
    lambda state: ((state.packed_state,), (state.tree_def, state.subtree_defs)),
    lambda aux, children: OptimizerState(children[0], aux[0], aux[1]))


class Optimizer(NamedTuple):
    init_fn: Callable
    update_fn: Callable
    params_fn: Callable


def _unzip2(pairs):
    firsts, seconds = [], []
    for a, b in pairs:
        firsts.append(a)
        seconds.append(b)
    return tuple(firsts), tuple(seconds)


def optimizer(opt_maker):
    """Turns a maker of single-array `(init, update, get_params)` functions into a maker of an
    `Optimizer` that works on pytrees of arrays."""
    @functools.wraps(opt_maker)
    def tree_opt_maker(*args, **kwargs):
        init, update, get_params = opt_maker(*args, **kwargs)

        @functools.wraps(init)
        def tree_init(x0_tree):
            x0_flat, tree = tree_flatten(x0_tree)
            states_flat, subtrees = _unzip2(tree_flatten(init(x0)) for x0 in x0_flat)
            return OptimizerState(states_flat, tree, subtrees)

        @functools.wraps(update)
        def tree_update(i, grad_tree, opt_state):
            states_flat, tree, subtrees = opt_state
            grad_flat, grad_tree_def = tree_flatten(grad_tree)
            if grad_tree_def != tree:
                raise TypeError(
                    "optimizer update function was passed a gradient tree that did not match "
                    f"the parameter tree structure with which it was initialized: parameter "
                    f"tree {tree} and grad tree {grad_tree_def}.")
            states = map(tree_unflatten, subtrees, states_flat)
            new_states = map(functools.partial(update, i), grad_flat, states)
            new_states_flat, new_subtrees = _unzip2(map(tree_flatten, new_states))
            for subtree, new_subtree in zip(subtrees, new_subtrees):
                if new_subtree != subtree:
                    raise TypeError(
                        "optimizer update function produced an output structure that did not "
                        f"match its input structure: input {subtree} and output {new_subtree}.")
            return OptimizerState(new_states_flat, tree, subtrees)

        @functools.wraps(get_params)
        def tree_get_params(opt_state):
            states_flat, tree, subtrees = opt_state
            states = map(tree_unflatten, subtrees, states_flat)
            return tree_unflatten(tree, map(get_params, states))

        return Optimizer(tree_init, tree_update, tree_get_params)

    return tree_opt_maker


# --- optimizers ------------------------------------------------------------------------------

def _first(state):
    """get_params of optimizers whose per-array state is (params, *statistics)."""
    return state[0]


@optimizer
def sgd(step_size):
    """Stochastic gradient descent: x <- x - step_size(i) * g."""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0

    def update(i, g, x):
        return x - step_size(i) * g

    def get_params(x):
        return x

    return init, update, get_params


@optimizer
def momentum(step_size: Schedule, mass: float):
    """Heavy-ball momentum: v <- mass * v + g; x <- x - step_size(i) * v."""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, jnp.zeros_like(x0)

    def update(i, g, state):
        x, velocity = state
        velocity = mass * velocity + g
        return x - step_size(i) * velocity, velocity

    return init, update, _first


@optimizer
def nesterov(step_size: Schedule, mass: float):
    """Nesterov momentum: v <- mass * v + g; x <- x - step_size(i) * (mass * v + g)."""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, jnp.zeros_like(x0)

    def update(i, g, state):
        x, velocity = state
        velocity = mass * velocity + g
        return x - step_size(i) * (mass * velocity + g), velocity

    return init, update, _first


@optimizer
def adagrad(step_size, momentum=0.9):
    """Adagrad with momentum on the preconditioned gradient: the squared gradients accumulate,
    and entries that never saw a gradient are left alone (no division by zero)."""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

    def update(i, g, state):
        x, g_sq, m = state
        g_sq = g_sq + jnp.square(g)
        g_sq_inv_sqrt = jnp.where(g_sq > 0, 1. / jnp.sqrt(g_sq), 0.0)
        m = (1. - momentum) * (g * g_sq_inv_sqrt) + momentum * m
        return x - step_size(i) * m, g_sq, m

    return init, update, _first


@optimizer
def rmsprop(step_size, gamma=0.9, eps=1e-8):
    """RMSProp: a decaying average of squared gradients scales each step."""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, jnp.zeros_like(x0)

    def update(i, g, state):
        x, avg_sq_grad = state
        avg_sq_grad = avg_sq_grad * gamma + jnp.square(g) * (1. - gamma)
        return x - step_size(i) * g / jnp.sqrt(avg_sq_grad + eps), avg_sq_grad

    return init, update, _first


@optimizer
def rmsprop_momentum(step_size, gamma=0.9, eps=1e-8, momentum=0.9):
    """RMSProp whose scaled steps feed a momentum buffer: mom <- momentum * mom +
    step_size(i) * g / sqrt(avg_sq_grad + eps); x <- x - mom."""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

    def update(i, g, state):
        x, avg_sq_grad, mom = state
        avg_sq_grad = avg_sq_grad * gamma + jnp.square(g) * (1. - gamma)
        mom = momentum * mom + step_size(i) * g / jnp.sqrt(avg_sq_grad + eps)
        return x - mom, avg_sq_grad, mom

    return init, update, _first


@optimizer
def adam(step_size, b1=0.9, b2=0.999, eps=1e-8):
    """Adam (Kingma & Ba, 2015) with bias-corrected moments; `eps` is added to sqrt(v_hat)."""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

    def update(i, g, state):
        x, m, v = state
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * jnp.square(g) + b2 * v
        mhat = m / (1 - jnp.asarray(b1, m.dtype) ** (i + 1))
        vhat = v / (1 - jnp.asarray(b2, m.dtype) ** (i + 1))
        return x - step_size(i) * mhat / (jnp.sqrt(vhat) + eps), m, v

    return init, update, _first


@optimizer
def adamax(step_size, b1=0.9, b2=0.999, eps=1e-8):
    """AdaMax: Adam with the infinity norm, u <- max(b2 * u, |g|)."""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

    def update(i, g, state):
        x, m, u = state
        m = (1 - b1) * g + b1 * m
        u = jnp.maximum(b2 * u, jnp.abs(g))
        corrected = step_size(i) / (1 - jnp.asarray(b1, m.dtype) ** (i + 1))
        return x - corrected * m / (u + eps), m, u

    return init, update, _first


@optimizer
def sm3(step_size, momentum=0.9):
    """SM3 (Anil et al., 2019): Adagrad whose squared-gradient accumulator is a cover of one
    vector per axis (the accumulator of an entry is the min over the vectors of its axes), so
    it needs memory for the sum, not the product, of the dimensions. Scalars are treated as
    1-element vectors."""
    step_size = make_schedule(step_size)

    def init(x0):
        x0 = jnp.asarray(x0)
        shape = jnp.shape(jnp.atleast_1d(x0))
        return x0, jnp.zeros(shape, x0.dtype), [jnp.zeros(n, x0.dtype) for n in shape]

    def update(i, g, state):
        x, m, vs = state
        g1 = jnp.atleast_1d(g)
        ndim = g1.ndim
        # Each axis's vector, broadcast along the other axes.
        covers = [jnp.expand_dims(v, tuple(a for a in range(ndim) if a != axis))
                  for axis, v in enumerate(vs)]
        accum = functools.reduce(jnp.minimum, covers) + jnp.square(g1)
        accum_inv_sqrt = jnp.where(accum > 0, 1. / jnp.sqrt(accum), 0)
        m = (1. - momentum) * (g1 * accum_inv_sqrt) + momentum * m
        x = x - step_size(i) * jnp.reshape(m, jnp.shape(x))
        vs = [jnp.max(accum, axis=tuple(a for a in range(ndim) if a != axis))
              for axis in range(ndim)]
        return x, m, vs

    return init, update, _first


# --- learning-rate schedules -----------------------------------------------------------------

def constant(step_size) -> Schedule:
    def schedule(i):
        return step_size
    return schedule


def exponential_decay(step_size, decay_steps, decay_rate):
    """step_size * decay_rate ** (i / decay_steps)."""
    def schedule(i):
        return step_size * decay_rate ** (i / decay_steps)
    return schedule


def inverse_time_decay(step_size, decay_steps, decay_rate, staircase=False):
    """step_size / (1 + decay_rate * i / decay_steps), with the ratio floored if `staircase`."""
    if staircase:
        def schedule(i):
            return step_size / (1 + decay_rate * jnp.floor(i / decay_steps))
    else:
        def schedule(i):
            return step_size / (1 + decay_rate * i / decay_steps)
    return schedule


def polynomial_decay(step_size, decay_steps, final_step_size, power=1.0):
    """From step_size to final_step_size over decay_steps along (1 - i / decay_steps) ** power,
    then constant."""
    def schedule(step_num):
        step_num = jnp.minimum(step_num, decay_steps)
        step_mult = (1 - step_num / decay_steps) ** power
        return step_mult * (step_size - final_step_size) + final_step_size
    return schedule


def piecewise_constant(boundaries: Any, values: Any):
    """values[0] up to and including step boundaries[0], values[1] up to boundaries[1], ...,
    values[-1] after the last boundary."""
    boundaries = jnp.array(boundaries)
    values = jnp.array(values)
    if not boundaries.ndim == values.ndim == 1:
        raise ValueError("boundaries and values must be sequences")
    if not boundaries.shape[0] == values.shape[0] - 1:
        raise ValueError("boundaries length must be one shorter than values length")

    def schedule(i):
        return values[jnp.sum(i > boundaries)]
    return schedule


def make_schedule(scalar_or_schedule) -> Schedule:
    """A callable is a schedule already; a scalar becomes a constant schedule."""
    if callable(scalar_or_schedule):
        return scalar_or_schedule
    if jnp.ndim(scalar_or_schedule) == 0:
        return constant(scalar_or_schedule)
    raise TypeError(f"step size must be a scalar or a schedule (a function step -> step "
                    f"size), got {type(scalar_or_schedule).__name__} of shape "
                    f"{jnp.shape(scalar_or_schedule)}.")


# --- utilities -------------------------------------------------------------------------------

def l2_norm(tree):
    """The L2 norm of all the leaves of a pytree taken together."""
    leaves = tree_leaves(tree)
    return jnp.sqrt(sum(jnp.vdot(x, x) for x in leaves))


def clip_grads(grad_tree, max_norm):
    """Scales a gradient pytree down so that its total L2 norm is at most `max_norm`."""
    norm = l2_norm(grad_tree)

    def normalize(g):
        return jnp.where(norm < max_norm, g, g * (max_norm / norm))
    return tree_map(normalize, grad_tree)


# --- serialization ---------------------------------------------------------------------------

class JoinPoint:
    """Marks the boundary between two joined (nested) pytrees: a leaf of the parameter tree
    that holds that parameter's optimizer state."""

    def __init__(self, subtree):
        self.subtree = subtree

    def __iter__(self):
        yield self.subtree

    def __repr__(self):
        return f"JoinPoint({self.subtree!r})"


def unpack_optimizer_state(opt_state):
    """An OptimizerState as a pytree of the parameters' structure whose leaves are JoinPoints
    holding each parameter's state: plain Python containers and arrays, suitable for saving."""
    states_flat, tree_def, subtree_defs = opt_state
    subtrees = map(tree_unflatten, subtree_defs, states_flat)
    return tree_unflatten(tree_def, [JoinPoint(subtree) for subtree in subtrees])


def pack_optimizer_state(marked_pytree):
    """The inverse of unpack_optimizer_state."""
    sentinels, tree_def = tree_flatten(marked_pytree)
    if not all(isinstance(s, JoinPoint) for s in sentinels):
        raise TypeError("pack_optimizer_state expects a pytree whose leaves are all JoinPoints "
                        "(as returned by unpack_optimizer_state).")
    states_flat, subtree_defs = _unzip2(tree_flatten(s.subtree) for s in sentinels)
    return OptimizerState(states_flat, tree_def, subtree_defs)
