"""Arithmetic on whole pytrees of arrays (params, gradients, moments)."""
from __future__ import annotations

import functools
import operator

import corejax as jax
import corejax.numpy as jnp

__all__ = ["tree_zeros_like", "tree_ones_like", "tree_full_like", "tree_cast", "tree_add",
           "tree_sub", "tree_mul", "tree_div", "tree_scalar_mul", "tree_add_scalar_mul",
           "tree_vdot", "tree_sum", "tree_l2_norm", "tree_update_moment",
           "tree_update_moment_per_elem_norm", "tree_update_infinity_moment",
           "tree_bias_correction", "tree_where", "global_norm"]

_map = jax.tree_util.tree_map


def tree_zeros_like(tree, dtype=None):
    return _map(lambda x: jnp.zeros_like(x, dtype=dtype), tree)


def tree_ones_like(tree, dtype=None):
    return _map(lambda x: jnp.ones_like(x, dtype=dtype), tree)


def tree_full_like(tree, fill_value, dtype=None):
    return _map(lambda x: jnp.full_like(x, fill_value, dtype=dtype), tree)


def tree_cast(tree, dtype):
    """Casts every leaf to `dtype`; `dtype=None` leaves the tree as it is."""
    if dtype is None:
        return tree
    return _map(lambda x: jnp.asarray(x).astype(dtype), tree)


def tree_add(tree, *others):
    return _map(lambda *xs: functools.reduce(operator.add, xs), tree, *others)


def tree_sub(tree_x, tree_y):
    return _map(operator.sub, tree_x, tree_y)


def tree_mul(tree_x, tree_y):
    return _map(operator.mul, tree_x, tree_y)


def tree_div(tree_x, tree_y):
    return _map(operator.truediv, tree_x, tree_y)


def tree_scalar_mul(scalar, tree):
    return _map(lambda x: scalar * x, tree)


def tree_add_scalar_mul(tree_x, scalar, tree_y):
    """`tree_x + scalar * tree_y`."""
    return _map(lambda x, y: x + scalar * y, tree_x, tree_y)


def tree_vdot(tree_x, tree_y):
    """Sum over leaves of the full inner product of matching leaves."""
    parts = jax.tree_util.tree_leaves(_map(lambda x, y: jnp.sum(x * y), tree_x, tree_y))
    return functools.reduce(operator.add, parts, jnp.asarray(0.0))


def tree_sum(tree):
    parts = [jnp.sum(x) for x in jax.tree_util.tree_leaves(tree)]
    return functools.reduce(operator.add, parts, jnp.asarray(0.0))


def _sum_of_squares(tree):
    parts = [jnp.sum(jnp.square(x)) for x in jax.tree_util.tree_leaves(tree)]
    return functools.reduce(operator.add, parts, jnp.asarray(0.0))


def tree_l2_norm(tree, squared: bool = False):
    """The l2 norm of all leaves taken together as one flat vector."""
    sq = _sum_of_squares(tree)
    return sq if squared else jnp.sqrt(sq)


def global_norm(updates):
    """The l2 norm of a whole pytree (all leaves as one vector)."""
    return tree_l2_norm(updates)


def tree_where(condition, tree_x, tree_y):
    """Picks `tree_x` where the scalar `condition` holds, else `tree_y`, leaf by leaf."""
    return _map(lambda x, y: jnp.where(condition, x, y), tree_x, tree_y)


def tree_update_moment(updates, moments, decay, order: int):
    """Exponential moving average of `updates ** order`: `(1 - decay) * g**order + decay * m`."""
    if order == 1:
        return _map(lambda g, m: (1 - decay) * g + decay * m, updates, moments)
    return _map(lambda g, m: (1 - decay) * (g ** order) + decay * m, updates, moments)


def tree_update_moment_per_elem_norm(updates, moments, decay, order: int):
    """Moving average of `|g| ** order` (for real gradients and order 2, `g * g`)."""
    def power(g):
        return jnp.square(g) if order == 2 else jnp.abs(g) ** order
    return _map(lambda g, m: (1 - decay) * power(g) + decay * m, updates, moments)


def tree_update_infinity_moment(updates, moments, decay, eps):
    """Decayed running maximum of `|g|` (Adamax's denominator)."""
    return _map(lambda g, m: jnp.maximum(jnp.abs(g) + eps, decay * m), updates, moments)


def tree_bias_correction(moments, decay, count):
    """Undoes the zero initialization of a moving average after `count` steps."""
    correction = 1 - decay ** count
    return _map(lambda m: m / jnp.asarray(correction).astype(m.dtype), moments)
