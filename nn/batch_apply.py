"""BatchApply (flax.linen.batch_apply): run a function on arrays whose leading axes are merged
into one, then split the leading axis of its outputs back, e.g. to apply a module to every step
of a [time, batch, ...] array with one call."""
from __future__ import annotations

import numpy as np

import corejax.numpy as jnp
from corejax import tree_util

__all__ = ["BatchApply", "ndim_at_least", "arbitrary_mergeable_leaf", "merge_leading_dims",
           "split_leading_dim"]


def ndim_at_least(x, num_dims) -> bool:
    """Whether `x` (an array, a scalar or a nested list) has at least `num_dims` axes."""
    return np.ndim(x) >= num_dims


def arbitrary_mergeable_leaf(min_num_dims, args, kwargs):
    """The first leaf of (args, kwargs) with at least `min_num_dims` axes, or None."""
    for leaf in tree_util.tree_leaves((args, kwargs)):
        if ndim_at_least(leaf, min_num_dims):
            return leaf
    return None


def merge_leading_dims(x, num_dims):
    """`x` with its first `num_dims` axes merged into one; `x` itself when it has fewer."""
    if not ndim_at_least(x, num_dims):
        return x
    shape = np.shape(x)
    return x.reshape((-1,) + tuple(shape[num_dims:]))


def split_leading_dim(x, to_dim):
    """`x` with its first axis split into the axes `to_dim`."""
    return jnp.reshape(x, tuple(to_dim) + tuple(np.shape(x)[1:]))


class BatchApply:
    """`BatchApply(f, num_dims=2)(*args, **kwargs)`: the leading `num_dims` axes of every array
    argument (of rank >= num_dims; others pass unchanged) are merged into one before calling
    `f`, and the leading axis of each output is split back into the leading axes of the first
    such argument."""

    def __init__(self, f, num_dims=2):
        self._f = f
        self.num_dims = num_dims

    def __call__(self, *args, **kwargs):
        example = arbitrary_mergeable_leaf(self.num_dims, args, kwargs)
        if example is None:
            raise ValueError(f"BatchApply requires at least one input with ndim >= "
                             f"{self.num_dims}.")
        lead = tuple(np.shape(example)[:self.num_dims])
        args, kwargs = tree_util.tree_map(lambda x: merge_leading_dims(x, self.num_dims),
                                          (args, kwargs))
        return tree_util.tree_map(lambda y: split_leading_dim(y, lead), self._f(*args, **kwargs))
