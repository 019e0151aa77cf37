"""optax.projections: Euclidean projections of a pytree (seen as one flat vector) onto convex
sets: boxes, balls and spheres of the l1 / l2 / linf norms, the simplex, hyperplanes and
halfspaces. Each works on any pytree and under jit, vmap and grad."""
from __future__ import annotations

import corejax as jax
import corejax.numpy as jnp
from corejax import flatten_util, lax
from optim import _tree_math as tm

__all__ = ["projection_box", "projection_halfspace", "projection_hypercube",
           "projection_hyperplane", "projection_l1_ball", "projection_l1_sphere",
           "projection_l2_ball", "projection_l2_sphere", "projection_linf_ball",
           "projection_non_negative", "projection_simplex", "projection_vector"]


def projection_non_negative(tree):
    """Negative entries set to 0."""
    return jax.tree_util.tree_map(jax.nn.relu, tree)


def projection_box(tree, lower, upper):
    """Entries clipped to `[lower, upper]` (scalars or trees like `tree`)."""
    if not isinstance(lower, (list, tuple, dict)) and not isinstance(upper, (list, tuple, dict)):
        return jax.tree_util.tree_map(lambda x: jnp.clip(x, lower, upper), tree)
    return jax.tree_util.tree_map(jnp.clip, tree, lower, upper)


def projection_hypercube(tree, scale=1):
    """Entries clipped to `[0, scale]`."""
    return projection_box(tree, lower=0, upper=scale)


@jax.custom_jvp
def _unit_simplex(values):
    # Sort decreasingly; the support is the longest prefix whose threshold stays positive.
    n = values.shape[0]
    desc = jnp.sort(values)[::-1]
    partial = jnp.cumsum(desc)
    counts = jnp.arange(1, n + 1, dtype=values.dtype)
    support = jnp.count_nonzero(1 / counts + (desc - partial / counts) > 0)
    size = support.astype(values.dtype)
    return jax.nn.relu(1 / size + (values - partial[support - 1] / size))


@_unit_simplex.defjvp
def _unit_simplex_jvp(primals, tangents):
    (values,), (dvalues,) = primals, tangents
    out = _unit_simplex(values)
    inside = (out > 0).astype(values.dtype)
    mean_inside = jnp.dot(inside, dvalues) / jnp.sum(inside)
    return out, inside * dvalues - mean_inside * inside


def projection_simplex(tree, scale=1):
    """Projection onto `{x >= 0, sum(x) = scale}`, all leaves taken as one vector."""
    flat, unravel = flatten_util.ravel_pytree(tree)
    return unravel(scale * _unit_simplex(flat / scale))


def projection_l1_sphere(tree, scale=1):
    """Projection onto `{x : ||x||_1 = scale}`."""
    magnitudes = projection_simplex(jax.tree_util.tree_map(jnp.abs, tree), scale)
    return tm.tree_mul(jax.tree_util.tree_map(jnp.sign, tree), magnitudes)


def projection_l1_ball(tree, scale=1):
    """Projection onto `{x : ||x||_1 <= scale}` (the tree itself when already inside)."""
    inside = tm.tree_norm(tree, ord=1) <= scale
    return lax.cond(inside, lambda t: t, lambda t: projection_l1_sphere(t, scale), tree)


def projection_l2_sphere(tree, scale=1):
    """Projection onto `{x : ||x||_2 = scale}` (the tree rescaled)."""
    return tm.tree_scale(scale / tm.tree_norm(tree), tree)


def projection_l2_ball(tree, scale=1):
    """Projection onto `{x : ||x||_2 <= scale}`."""
    squared = tm.tree_norm(tree, squared=True)
    return tm.tree_scale(scale / jnp.sqrt(jnp.maximum(squared, scale ** 2)), tree)


def projection_linf_ball(tree, scale=1):
    """Projection onto `{x : ||x||_inf <= scale}` (entries clipped to `[-scale, scale]`)."""
    return projection_box(tree, tm.tree_full_like(tree, -scale), tm.tree_full_like(tree, scale))


def projection_vector(x, a):
    """Projection of `x` onto the line spanned by `a`."""
    return tm.tree_scale(tm.tree_vdot(x, a) / tm.tree_vdot(a, a), a)


def projection_hyperplane(x, a, b):
    """Projection of `x` onto `{y : <a, y> = b}`."""
    step = (b - tm.tree_vdot(x, a)) / tm.tree_vdot(a, a)
    return tm.tree_add_scale(x, step, a)


def projection_halfspace(x, a, b):
    """Projection of `x` onto `{y : <a, y> <= b}`."""
    step = jnp.minimum((b - tm.tree_vdot(x, a)) / tm.tree_vdot(a, a), 0)
    return tm.tree_add_scale(x, step, a)
