"""L-BFGS (Nocedal & Wright, Algorithm 7.4): the gradient preconditioned by an inverse-Hessian
estimate built from the last `memory_size` parameter and gradient differences, then scaled by
a line search (Optax's lbfgs and scale_by_lbfgs)."""
from __future__ import annotations

from typing import Any, NamedTuple

import corejax as jax
import corejax.numpy as jnp
from corejax import lax

from optim import tree_utils as tu
from optim.base import GradientTransformation, identity, params_required
from optim.combine import chain
from optim.linesearch import scale_by_zoom_linesearch
from optim.numerics import safe_increment
from optim.transform import scale, scale_by_learning_rate

__all__ = ["ScaleByLBFGSState", "scale_by_lbfgs", "lbfgs"]

_map = jax.tree_util.tree_map


class ScaleByLBFGSState(NamedTuple):
    count: Any
    params: Any
    updates: Any
    diff_params_memory: Any
    diff_updates_memory: Any
    weights_memory: Any


def _real_vdot(x, y):
    return jnp.real(tu.tree_vdot(x, y))


def _precondition(updates, diff_params_memory, diff_updates_memory, weights, identity_scale,
                  memory_idx):
    """The two-loop recursion over the memory slots, oldest last in the first loop."""
    memory_size = weights.shape[0]
    order = (memory_idx + jnp.arange(memory_size)) % memory_size

    def slot(idx):
        return (_map(lambda m: m[idx], diff_params_memory),
                _map(lambda m: m[idx], diff_updates_memory))

    def backward(vec, idx):
        dw, du = slot(idx)
        alpha = weights[idx] * _real_vdot(dw, vec)
        out = _map(lambda v, u: (v - alpha * u).astype(v.dtype), vec, du)
        return out, alpha

    vec, alphas = lax.scan(backward, updates, order, reverse=True)
    vec = _map(lambda v: identity_scale * v, vec)

    def forward(vec, idx_alpha):
        idx, alpha = idx_alpha
        dw, du = slot(idx)
        beta = weights[idx] * _real_vdot(du, vec)
        out = _map(lambda v, w: (v + (alpha - beta) * w).astype(v.dtype), vec, dw)
        return out, beta

    vec, _ = lax.scan(forward, vec, (order, alphas))
    return vec


def scale_by_lbfgs(memory_size: int = 10,
                   scale_init_precond: bool = True) -> GradientTransformation:
    """Preconditions updates (gradients) by the L-BFGS inverse-Hessian estimate. With
    `scale_init_precond`, the initial estimate is <s, y> / <y, y> times the identity (on the
    first step, 1 / max(1, ||g||)). The output is a descent direction up to its sign: chain
    a negative scaling and a line search after it (see lbfgs)."""
    if memory_size < 1:
        raise ValueError(f"memory_size must be >= 1, got {memory_size}.")

    def init(params):
        stacked = _map(lambda p: jnp.zeros((memory_size,) + p.shape, p.dtype), params)
        return ScaleByLBFGSState(jnp.asarray(0, jnp.int32), tu.tree_zeros_like(params),
                                 tu.tree_zeros_like(params), stacked, stacked,
                                 jnp.zeros(memory_size))

    def update(updates, state, params=None):
        params_required("scale_by_lbfgs", params)
        memory_idx = state.count % memory_size
        prev_idx = (state.count - 1) % memory_size
        diff_params = tu.tree_sub(params, state.params)
        diff_updates = tu.tree_sub(updates, state.updates)
        curvature = _real_vdot(diff_updates, diff_params)
        weight = jnp.where(curvature == 0.0, 0.0, 1.0 / curvature)
        started = state.count > 0
        diff_params, diff_updates, weight = _map(
            lambda x: jnp.where(started, x, jnp.zeros_like(x)),
            (diff_params, diff_updates, weight))
        dp_mem, du_mem, w_mem = _map(
            lambda mem, x: mem.at[prev_idx].set(x),
            (state.diff_params_memory, state.diff_updates_memory, state.weights_memory),
            (diff_params, diff_updates, weight))
        if scale_init_precond:
            numerator = _real_vdot(diff_updates, diff_params)
            denominator = tu.tree_l2_norm(diff_updates, squared=True)
            identity_scale = jnp.where(denominator > 0.0, numerator / denominator, 1.0)
            update_norm = tu.tree_l2_norm(lax.stop_gradient(updates))
            first_scale = jnp.minimum(1.0, 1.0 / update_norm)
            identity_scale = jnp.where(started, identity_scale, first_scale)
        else:
            identity_scale = 1.0
        preconditioned = _precondition(updates, dp_mem, du_mem, w_mem, identity_scale,
                                       memory_idx)
        return preconditioned, ScaleByLBFGSState(safe_increment(state.count), params, updates,
                                                 dp_mem, du_mem, w_mem)
    return GradientTransformation(init, update)


def lbfgs(learning_rate=None, memory_size: int = 10, scale_init_precond: bool = True,
          linesearch=scale_by_zoom_linesearch(max_linesearch_steps=20,
                                              initial_guess_strategy="one")):
    """L-BFGS: scale_by_lbfgs, then -learning_rate (or -1), then the line search (zoom by
    default; `linesearch=None` for none). Its update takes value=, grad= and value_fn=."""
    base_scaling = scale(-1.0) if learning_rate is None else scale_by_learning_rate(
        learning_rate)
    if linesearch is None:
        linesearch = identity()
    return chain(scale_by_lbfgs(memory_size=memory_size, scale_init_precond=scale_init_precond),
                 base_scaling, linesearch)
