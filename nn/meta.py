"""Axis metadata boxes (flax.core.meta and linen's spmd names): a variable created through
`with_partitioning(init, names)` is stored as `Partitioned(value, names)`; modules read the
unboxed value (`Module.param(..., unbox=True)`), the variables returned by init keep the box so
its metadata travels with checkpoints and `get_partition_spec`.

corejax runs on one device per process, so the partitioning is carried as metadata only:
`unbox` applies no sharding constraint.
"""
from __future__ import annotations

import contextlib
import functools
import threading
from typing import Any, Callable

from corejax import lax, tree_util
from corejax.sharding import NamedSharding, PartitionSpec
from nn import struct

__all__ = ["AxisMetadata", "Partitioned", "LogicallyPartitioned", "is_axis_metadata", "unbox",
           "replace_boxed", "with_partitioning", "with_logical_partitioning",
           "get_partition_spec", "logical_to_mesh_axes", "logical_to_mesh",
           "logical_to_mesh_sharding", "logical_axis_rules", "set_logical_axis_rules",
           "get_logical_axis_rules", "with_logical_constraint", "get_sharding",
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
        return logical_to_mesh_axes(self.names, self.rules)


class _Rules(threading.local):
    def __init__(self):
        self.rules: tuple = ()


_rules = _Rules()


def set_logical_axis_rules(rules) -> None:
    """Sets the (logical name, mesh axis) rules used when none are passed."""
    _rules.rules = tuple(rules)


def get_logical_axis_rules() -> tuple:
    return _rules.rules


@contextlib.contextmanager
def logical_axis_rules(rules):
    """`with logical_axis_rules(rules):` the global rules for the block."""
    old = _rules.rules
    _rules.rules = tuple(rules)
    try:
        yield
    finally:
        _rules.rules = old


def logical_to_mesh_axes(array_dim_names, rules=None) -> PartitionSpec:
    """Mesh axes for logical names. Rules are taken in order: a rule (name, mesh axes) gives
    its axes to the dimension of that name if the dimension has none yet and no earlier rule
    took those axes; dimensions left over get None. Without `rules` the global ones
    (logical_axis_rules) are used."""
    if array_dim_names is None:
        return None
    names = [n for n in array_dim_names if n is not None]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"Unsupported: Dimensions {tuple(repeated)} occur more than once in "
                         "array names.")
    rules = get_logical_axis_rules() if rules is None else rules
    unassigned = object()
    out = [unassigned] * len(array_dim_names)
    used: set = set()
    for logical, mesh_axis in rules:  # rules in order: an earlier rule takes its axes first
        if logical not in array_dim_names:
            continue
        pos = list(array_dim_names).index(logical)
        parts = set(mesh_axis if isinstance(mesh_axis, tuple) else (mesh_axis,)) - {None}
        if out[pos] is unassigned and not used & parts:
            out[pos] = mesh_axis
            used |= parts
    return PartitionSpec(*(None if a is unassigned else a for a in out))


def logical_to_mesh(tree, rules=None):
    """Every PartitionSpec of logical names in `tree` mapped to mesh axes."""
    return tree_util.tree_map(lambda spec: logical_to_mesh_axes(tuple(spec), rules), tree,
                              is_leaf=lambda x: isinstance(x, PartitionSpec))


def logical_to_mesh_sharding(tree, mesh, rules=None):
    """Every PartitionSpec of logical names in `tree` as a NamedSharding on `mesh`."""
    return tree_util.tree_map(lambda spec: NamedSharding(mesh, spec), logical_to_mesh(tree, rules),
                              is_leaf=lambda x: isinstance(x, PartitionSpec))


def with_logical_constraint(x, logical_axis_resources, rules=None, mesh=None,
                            fallback="axis_is_unsharded"):
    """`x`, constrained to the mesh axes of its logical names: the values are unchanged (a
    sharding constraint only places them), and with a mesh the constraint is recorded."""
    if mesh is None:
        return x
    spec = logical_to_mesh_axes(tuple(logical_axis_resources), rules)
    return lax.with_sharding_constraint(x, NamedSharding(mesh, spec))


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
