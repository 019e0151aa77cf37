"""Helpers shared by the contrib optimizers."""
from __future__ import annotations

import corejax as jax
import corejax.numpy as jnp


def float_dtype(tree, which: str):
    """The 'lowest' or 'highest' precision floating dtype among the leaves of `tree`
    (float32 for a tree without floating leaves), as Optax sizes its scalar state."""
    dtypes = [jnp.dtype(leaf.dtype) for leaf in jax.tree_util.tree_leaves(tree)
              if hasattr(leaf, "dtype") and jnp.issubdtype(leaf.dtype, jnp.floating)]
    if not dtypes:
        return jnp.dtype(jnp.float32)
    pick = min if which == "lowest" else max
    return pick(dtypes, key=lambda d: d.itemsize)


def value_at(learning_rate, count):
    """A number, or a schedule evaluated at `count`."""
    return learning_rate(count) if callable(learning_rate) else learning_rate
