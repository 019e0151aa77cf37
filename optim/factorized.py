"""Adafactor's second-moment estimate: for a matrix-like leaf, a moving average of the row
means and of the column means of g^2 (memory rows + columns instead of rows * columns)."""
from __future__ import annotations

from typing import Any, Callable, NamedTuple, Optional

import numpy as np

import corejax as jax
import corejax.numpy as jnp

from optim.base import GradientTransformation, params_required, zero_count
from optim.numerics import abs_sq, safe_increment

__all__ = ["FactoredState", "scale_by_factored_rms"]


def _decay_rate_pow(i, exponent=0.8):
    """Adafactor's increasing decay: 1 - (i + 1) ** -exponent."""
    t = jnp.array(i + 1, jnp.float32)
    return 1.0 - t ** (-exponent)


def _factored_dims(shape, factored: bool, min_dim_size_to_factor: int) -> Optional[tuple]:
    """The two largest axes (second largest, largest) if both are worth factoring."""
    if not factored or len(shape) < 2:
        return None
    order = np.argsort(shape)
    if shape[order[-2]] < min_dim_size_to_factor:
        return None
    return int(order[-2]), int(order[-1])


class FactoredState(NamedTuple):
    count: Any
    v_row: Any
    v_col: Any
    v: Any


def scale_by_factored_rms(factored: bool = True, decay_rate=0.8, step_offset=0,
                          min_dim_size_to_factor: int = 128, epsilon=1e-30,
                          decay_rate_fn: Callable[[Any, Any], Any] = _decay_rate_pow
                          ) -> GradientTransformation:
    """Divides updates by a factored estimate of the root mean square of past gradients
    (Shazeer & Stern, 2018). Leaves whose two largest dimensions are both at least
    `min_dim_size_to_factor` keep row and column statistics; the others a full moment.
    Unused slots of the state hold a (1,)-shaped zero, as in Optax."""
    def placeholder(dtype):
        return jnp.zeros((1,), dtype=dtype)

    def init(params):
        def per_leaf(p):
            dims = _factored_dims(p.shape, factored, min_dim_size_to_factor)
            if dims is not None:
                d1, d0 = dims
                row_shape = tuple(s for i, s in enumerate(p.shape) if i != d0)
                col_shape = tuple(s for i, s in enumerate(p.shape) if i != d1)
                return (jnp.zeros(row_shape, p.dtype), jnp.zeros(col_shape, p.dtype),
                        placeholder(p.dtype))
            return placeholder(p.dtype), placeholder(p.dtype), jnp.zeros_like(p)
        return _to_state(zero_count(), _map_leaves(per_leaf, params))

    def update(grads, state, params=None):
        params_required("scale_by_factored_rms", params)
        step = state.count

        def per_leaf(g, v_row, v_col, v, p):
            dtype = p.dtype
            rate = decay_rate_fn(step - step_offset, decay_rate)
            dims = _factored_dims(p.shape, factored, min_dim_size_to_factor)
            grad_sqr = abs_sq(g) + epsilon
            if dims is not None:
                d1, d0 = dims
                new_row = (rate * v_row + (1.0 - rate) * jnp.mean(grad_sqr, axis=d0)).astype(dtype)
                new_col = (rate * v_col + (1.0 - rate) * jnp.mean(grad_sqr, axis=d1)).astype(dtype)
                reduced_d1 = d1 - 1 if d1 > d0 else d1
                row_factor = (new_row / jnp.mean(new_row, axis=reduced_d1, keepdims=True)) ** -0.5
                col_factor = new_col ** -0.5
                out = (g * jnp.expand_dims(row_factor, axis=d0)
                       * jnp.expand_dims(col_factor, axis=d1))
                return out, new_row, new_col, placeholder(dtype)
            new_v = (rate * v + (1.0 - rate) * grad_sqr).astype(dtype)
            return g * new_v ** -0.5, placeholder(dtype), placeholder(dtype), new_v

        g_leaves, treedef = jax.tree_util.tree_flatten(grads)
        columns = [treedef.flatten_up_to(t) for t in (state.v_row, state.v_col, state.v,
                                                      params)]
        results = [per_leaf(g, *rest) for g, *rest in zip(g_leaves, *columns)]
        updates = jax.tree_util.tree_unflatten(treedef, [r[0] for r in results])
        return updates, _to_state(safe_increment(state.count),
                                  (treedef, [r[1:] for r in results]))
    return GradientTransformation(init, update)


def _map_leaves(fn, tree):
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    return treedef, [fn(leaf) for leaf in leaves]


def _to_state(count, flat_results):
    """FactoredState from per-leaf (v_row, v_col, v) triples."""
    treedef, results = flat_results

    def tree(i):
        return jax.tree_util.tree_unflatten(treedef, [r[i] for r in results])
    return FactoredState(count, tree(0), tree(1), tree(2))
