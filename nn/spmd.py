"""Logical axis names (flax.linen.spmd): layers name the dimensions of their parameters and
activations logically ('batch', 'embed', 'mlp'), and a list of rules maps those names to the
axes of a device mesh, so one model definition serves every partitioning.

    kernel_init = nn.with_logical_partitioning(nn.initializers.lecun_normal(), ('embed', 'mlp'))
    with nn.logical_axis_rules([('batch', 'data'), ('mlp', 'model')]):
        spec = nn.logical_to_mesh_axes(('batch', 'mlp'))      # P('data', 'model')

corejax runs each program on one device per process, so a constraint only records where the
values would live: the values themselves never change.
"""
from __future__ import annotations

import contextlib
import enum
import functools
import threading
from typing import Any, Callable

from corejax import lax, tree_util
from corejax.sharding import NamedSharding, PartitionSpec
from nn import struct
from nn.meta import Partitioned

__all__ = ["LogicallyPartitioned", "RulesFallback", "logical_axis_rules",
           "set_logical_axis_rules", "get_logical_axis_rules", "logical_to_mesh_axes",
           "logical_to_mesh", "logical_to_mesh_sharding", "with_logical_constraint",
           "with_logical_partitioning"]


class LogicallyPartitioned(Partitioned):
    """Partitioned by logical axis names (its partition spec is in those names; map it to
    mesh axes with logical_to_mesh), with the rules to use for it (None: the global ones)."""
    rules: Any = struct.field(default=None, pytree_node=False)


class RulesFallback(enum.Enum):
    """What with_logical_constraint does with a logical name no rule assigns a mesh axis."""
    AXIS_IS_UNSHARDED = "axis_is_unsharded"
    RAISE_ERROR = "raise_error"
    NO_CONSTRAINT = "no_constraint"


class _Rules(threading.local):
    def __init__(self):
        self.rules: tuple = ()


_rules = _Rules()


def set_logical_axis_rules(rules) -> None:
    """Sets the (logical name, mesh axis) rules used when none are passed."""
    _rules.rules = tuple(rules)


def get_logical_axis_rules() -> tuple:
    """The global (logical name, mesh axis) rules."""
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


_UNASSIGNED = object()


def _assign(array_dim_names, rules) -> list:
    """One entry per dimension: its mesh axes, None, or _UNASSIGNED where a logical name got
    no rule (or only rules whose mesh axes an earlier rule took)."""
    names = [n for n in array_dim_names if n is not None]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"Unsupported: Dimensions {tuple(repeated)} occur more than once in "
                         "array names.")
    rules = get_logical_axis_rules() if rules is None else rules
    out = [None if n is None else _UNASSIGNED for n in array_dim_names]
    used: set = set()
    for logical, mesh_axis in rules:  # rules in order: an earlier rule takes its axes first
        if logical not in array_dim_names:
            continue
        pos = list(array_dim_names).index(logical)
        parts = set(mesh_axis if isinstance(mesh_axis, tuple) else (mesh_axis,)) - {None}
        if out[pos] is _UNASSIGNED and not used & parts:
            out[pos] = mesh_axis
            used |= parts
    return out


def logical_to_mesh_axes(array_dim_names, rules=None) -> PartitionSpec:
    """Mesh axes for logical names. Rules are taken in order: a rule (name, mesh axes) gives
    its axes to the dimension of that name if the dimension has none yet and no earlier rule
    took those axes; dimensions left over get None. Without `rules` the global ones
    (logical_axis_rules) are used."""
    if array_dim_names is None:
        return None
    assigned = _assign(array_dim_names, rules)
    return PartitionSpec(*(None if a is _UNASSIGNED else a for a in assigned))


def _is_logical_spec(x) -> bool:
    return isinstance(x, PartitionSpec) or (
        isinstance(x, tuple) and all(n is None or isinstance(n, str) for n in x))


def logical_to_mesh(tree, rules=None):
    """Every PartitionSpec of logical names in `tree` mapped to mesh axes."""
    return tree_util.tree_map(lambda spec: logical_to_mesh_axes(tuple(spec), rules), tree,
                              is_leaf=lambda x: isinstance(x, PartitionSpec))


def logical_to_mesh_sharding(tree, mesh, rules=None):
    """Every PartitionSpec of logical names in `tree` as a NamedSharding on `mesh`."""
    return tree_util.tree_map(lambda spec: NamedSharding(mesh, spec), logical_to_mesh(tree, rules),
                              is_leaf=lambda x: isinstance(x, PartitionSpec))


def with_logical_constraint(x, logical_axis_resources, rules=None, mesh=None,
                            fallback=RulesFallback.AXIS_IS_UNSHARDED):
    """`x` (an array or a pytree of them), constrained to the mesh axes of its logical names
    (one logical spec for every leaf, or a tree of specs matching `x`). The values are
    unchanged; with a mesh the constraint is recorded. With fallback RAISE_ERROR a logical name
    that no rule maps raises ValueError."""
    if logical_axis_resources is None:
        return x

    def constrain(leaf, spec):
        assigned = _assign(tuple(spec), rules)
        if _UNASSIGNED in assigned and fallback == RulesFallback.RAISE_ERROR:
            raise ValueError(f"Axis names {spec!r} did not match a rule")
        if mesh is None or (_UNASSIGNED in assigned and fallback == RulesFallback.NO_CONSTRAINT):
            return leaf
        mesh_spec = PartitionSpec(*(None if a is _UNASSIGNED else a for a in assigned))
        return lax.with_sharding_constraint(leaf, NamedSharding(mesh, mesh_spec))

    if _is_logical_spec(logical_axis_resources):
        return tree_util.tree_map(lambda leaf: constrain(leaf, logical_axis_resources), x)
    return tree_util.tree_map(constrain, x, logical_axis_resources)


def with_logical_partitioning(fn: Callable, names: tuple, mesh=None,
                              rules=None) -> Callable:
    """An initializer that boxes `fn`'s result as LogicallyPartitioned(value, names, ...)."""
    @functools.wraps(fn)
    def init(*args, **kwargs):
        return LogicallyPartitioned(fn(*args, **kwargs), names, mesh=mesh, rules=rules)
    return init
