"""Axis metadata boxes (flax.core.meta): a variable created through
`with_partitioning(init, names)` is stored as `Partitioned(value, names)`; modules read the
unboxed value (`Module.param(..., unbox=True)`), the variables returned by init keep the box so
its metadata travels with checkpoints and `get_partition_spec`. Lifted transformations that
add an axis to variables (nn.vmap, nn.scan, nn.add_metadata_axis) add it to the boxes' names too
(`add_axis`), and take it out again on the way in (`remove_axis`). Logical names and their rules
are nn.spmd's.

corejax runs on one device per process, so the partitioning is carried as metadata only:
`unbox` applies no sharding constraint.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

from corejax import tree_util
from corejax.sharding import NamedSharding, PartitionSpec
from nn import struct
from nn.errors import PartitioningUnspecifiedError

__all__ = ["AxisMetadata", "Partitioned", "is_axis_metadata", "unbox", "replace_boxed",
           "add_axis", "remove_axis", "with_partitioning", "get_partition_spec", "get_sharding",
           "PARTITION_NAME"]

PARTITION_NAME = "partition_name"


class AxisMetadata(struct.PyTreeNode):
    """Base of the boxes: subclasses hold the variable as a pytree field `value`."""

    def unbox(self):
        return self.value

    def replace_boxed(self, val):
        return self.replace(value=val)

    def add_axis(self, index: int, params: dict):
        return self

    def remove_axis(self, index: int, params: dict):
        return self


class Partitioned(AxisMetadata):
    """A value with one mesh axis name (or None) per dimension."""
    value: Any
    names: tuple = struct.field(pytree_node=False)
    mesh: Any = struct.field(default=None, pytree_node=False)

    def unbox(self, apply_constraint: bool = True):
        del apply_constraint  # one device: nothing to constrain
        return self.value

    def get_partition_spec(self) -> PartitionSpec:
        return PartitionSpec(*self.names)

    def _axis_name(self, params: dict):
        if PARTITION_NAME not in params:
            raise PartitioningUnspecifiedError(self)
        return params[PARTITION_NAME]

    def add_axis(self, index: int, params: dict):
        """The box with the transformation's axis (`params[PARTITION_NAME]`) at `index`."""
        names = list(self.names)
        names.insert(index, self._axis_name(params))
        return self.replace(names=tuple(names))

    def remove_axis(self, index: int, params: dict):
        """The box without the transformation's axis, which must be at `index`."""
        name = self._axis_name(params)
        names = list(self.names)
        if names.pop(index) != name:
            raise AssertionError(f"remove_axis: names {self.names} have no axis {name!r} at "
                                 f"index {index}; it was added by another transformation.")
        return self.replace(names=tuple(names))


def get_sharding(tree, mesh):
    """NamedSharding on `mesh` for every leaf, from its box's PartitionSpec."""
    return tree_util.tree_map(lambda spec: NamedSharding(mesh, spec), get_partition_spec(tree),
                              is_leaf=lambda x: isinstance(x, PartitionSpec))


def is_axis_metadata(x) -> bool:
    return isinstance(x, AxisMetadata)


def unbox(tree):
    """The tree with every box replaced by its value."""
    return tree_util.tree_map(lambda x: x.unbox() if isinstance(x, AxisMetadata) else x,
                              tree, is_leaf=is_axis_metadata)


def replace_boxed(tree, updates):
    """`updates` put into the boxes of `tree` (where `tree` has boxes)."""
    def put(old, new):
        return old.replace_boxed(new) if isinstance(old, AxisMetadata) else new
    return tree_util.tree_map(put, tree, updates, is_leaf=is_axis_metadata)


def add_axis(tree, index: int, params: dict):
    """Every box in `tree` with a new axis at `index` (named by params[PARTITION_NAME])."""
    return tree_util.tree_map(
        lambda x: x.add_axis(index, params) if isinstance(x, AxisMetadata) else x, tree,
        is_leaf=is_axis_metadata)


def remove_axis(tree, index: int, params: dict):
    """Every box in `tree` without its axis at `index` (the inverse of add_axis)."""
    return tree_util.tree_map(
        lambda x: x.remove_axis(index, params) if isinstance(x, AxisMetadata) else x, tree,
        is_leaf=is_axis_metadata)


def get_partition_spec(tree):
    """The PartitionSpec of every leaf: the box's names, PartitionSpec() for plain arrays."""
    def spec(x):
        if isinstance(x, AxisMetadata):
            return x.get_partition_spec()
        return PartitionSpec() if hasattr(x, "shape") else None
    return tree_util.tree_map(spec, tree, is_leaf=is_axis_metadata)


def with_partitioning(fn: Callable, names: tuple, mesh=None) -> Callable:
    """An initializer that boxes `fn`'s result as Partitioned(value, names, mesh)."""
    @functools.wraps(fn)
    def init(*args, **kwargs):
        return Partitioned(fn(*args, **kwargs), names, mesh=mesh)
    return init
