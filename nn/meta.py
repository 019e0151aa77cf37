"""Axis metadata boxes (flax.core.meta and linen's spmd names): a variable created through
`with_partitioning(init, names)` is stored as `Partitioned(value, names)`; modules read the
unboxed value (`Module.param(..., unbox=True)`), the variables returned by init keep the box so
its metadata travels with checkpoints and `get_partition_spec`.

corejax runs on one device per process, so the partitioning is carried as metadata only:
`unbox` applies no sharding constraint.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

from corejax import tree_util
from corejax.sharding import PartitionSpec
from nn import struct

__all__ = ["AxisMetadata", "Partitioned", "LogicallyPartitioned", "is_axis_metadata", "unbox",
           "replace_boxed", "with_partitioning", "with_logical_partitioning",
           "get_partition_spec", "logical_to_mesh_axes", "PARTITION_NAME"]

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

    def add_axis(self, index: int, params: dict):
        names = list(self.names)
        names.insert(index, (params or {}).get(PARTITION_NAME))
        return self.replace(names=tuple(names))

    def remove_axis(self, index: int, params: dict):
        names = list(self.names)
        names.pop(index)
        return self.replace(names=tuple(names))


class LogicallyPartitioned(Partitioned):
    """Partitioned by logical axis names, mapped to mesh axes by `rules`."""
    rules: Any = struct.field(default=None, pytree_node=False)

    def get_partition_spec(self) -> PartitionSpec:
        return PartitionSpec(*logical_to_mesh_axes(self.names, self.rules))


def logical_to_mesh_axes(array_dim_names, rules=None) -> PartitionSpec:
    """Mesh axes for logical names: each name maps to the first rule for it whose mesh axis is
    still free (None when there is none, or when no rules are given)."""
    if array_dim_names is None:
        return None
    if rules is None:
        return PartitionSpec(*([None] * len(array_dim_names)))
    used, out = set(), []
    for name in array_dim_names:
        axis = None
        for logical, mesh_axis in rules:
            if logical == name and mesh_axis not in used:
                axis = mesh_axis
                break
        if axis is not None:
            used.add(axis)
        out.append(axis)
    return PartitionSpec(*out)


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


def with_logical_partitioning(fn: Callable, names: tuple, mesh=None,
                              rules=None) -> Callable:
    """An initializer that boxes `fn`'s result as LogicallyPartitioned(value, names, ...)."""
    @functools.wraps(fn)
    def init(*args, **kwargs):
        return LogicallyPartitioned(fn(*args, **kwargs), names, mesh=mesh, rules=rules)
    return init
