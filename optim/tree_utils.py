"""optax.tree_utils: the `tree_`-prefixed names of optim.tree (Optax's older spelling), plus a
few helpers optim's own transforms use (tree_l2_norm, tree_scalar_mul, tree_add_scalar_mul,
global_norm)."""
from __future__ import annotations

from optim._tree_math import (tree_add, tree_add_scale, tree_allclose, tree_batch_shape,
                              tree_bias_correction, tree_cast, tree_cast_like, tree_clip,
                              tree_conj, tree_div, tree_dtype, tree_full_like, tree_max,
                              tree_min, tree_mul, tree_norm, tree_ones_like, tree_random_like,
                              tree_real, tree_scale, tree_size, tree_split_key_like, tree_sub,
                              tree_sum, tree_unwrap_random_key_data, tree_update_infinity_moment,
                              tree_update_moment, tree_update_moment_per_elem_norm, tree_vdot,
                              tree_where, tree_zeros_like)
from optim._tree_state import (NamedTupleKey, tree_get, tree_get_all_with_path,
                               tree_map_params, tree_set)

__all__ = ["NamedTupleKey", "tree_add", "tree_add_scale", "tree_allclose", "tree_batch_shape",
           "tree_bias_correction", "tree_cast", "tree_cast_like", "tree_clip", "tree_conj",
           "tree_div", "tree_dtype", "tree_full_like", "tree_get", "tree_get_all_with_path",
           "tree_map_params", "tree_max", "tree_min", "tree_mul", "tree_norm",
           "tree_ones_like", "tree_random_like", "tree_real", "tree_scale", "tree_set",
           "tree_size", "tree_split_key_like", "tree_sub", "tree_sum",
           "tree_unwrap_random_key_data", "tree_update_infinity_moment", "tree_update_moment",
           "tree_update_moment_per_elem_norm", "tree_vdot", "tree_where", "tree_zeros_like",
           "tree_l2_norm", "tree_scalar_mul", "tree_add_scalar_mul", "global_norm"]


def tree_scalar_mul(scalar, tree):
    """`scalar * tree` (Optax's older name of tree_scale)."""
    return tree_scale(scalar, tree)


def tree_add_scalar_mul(tree_x, scalar, tree_y):
    """`tree_x + scalar * tree_y` (Optax's older name of tree_add_scale)."""
    return tree_add_scale(tree_x, scalar, tree_y)


def tree_l2_norm(tree, squared: bool = False):
    """The l2 norm of all leaves taken together as one flat vector."""
    return tree_norm(tree, squared=squared)


def global_norm(updates):
    """The l2 norm of a whole pytree (all leaves as one vector); optax.global_norm."""
    return tree_norm(updates)
