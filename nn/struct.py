"""flax.struct: frozen dataclasses that are pytrees.

    @struct.dataclass
    class State:
        params: Any
        apply_fn: Callable = struct.field(pytree_node=False)

Fields are pytree children unless declared `field(pytree_node=False)` (then they are static aux
data, part of the tree structure). Instances get `.replace(**changes)` and a state dict of their
pytree fields for nn.serialization. `PyTreeNode` is the same as a base class.
"""
from __future__ import annotations

import dataclasses
from typing import TypeVar

from corejax import tree_util
from nn import serialization

__all__ = ["dataclass", "field", "PyTreeNode"]

_T = TypeVar("_T")


def field(pytree_node: bool = True, *, metadata=None, **kwargs):
    """dataclasses.field with `pytree_node` recorded in its metadata (False: a static field)."""
    return dataclasses.field(metadata={**(metadata or {}), "pytree_node": pytree_node}, **kwargs)


def dataclass(clz: _T = None, **kwargs) -> _T:
    """Turns `clz` into a frozen dataclass registered as a pytree (usable bare or called with
    dataclasses.dataclass's keyword arguments)."""
    if clz is None:
        return lambda cls: dataclass(cls, **kwargs)
    if "_flax_dataclass" in clz.__dict__:
        return clz
    kwargs.setdefault("frozen", True)
    data_clz = dataclasses.dataclass(clz, **kwargs)
    data_fields, meta_fields = [], []
    for f in dataclasses.fields(data_clz):
        (data_fields if f.metadata.get("pytree_node", True) else meta_fields).append(f.name)

    def replace(self, **updates):
        """A copy with the given fields replaced."""
        return dataclasses.replace(self, **updates)

    data_clz.replace = replace
    tree_util.register_dataclass(data_clz, data_fields, meta_fields)

    def to_state(x) -> dict:
        return {name: serialization.to_state_dict(getattr(x, name)) for name in data_fields}

    def from_state(x, state: dict):
        state = dict(state)
        updates = {}
        for name in data_fields:
            if name not in state:
                raise ValueError(f"Missing field {name} in state dict while restoring an "
                                 f"instance of {clz.__name__}, at path "
                                 f"{serialization.current_path()}")
            updates[name] = serialization.from_state_dict(getattr(x, name), state.pop(name),
                                                          name=name)
        if state:
            names = ",".join(state)
            raise ValueError(f'Unknown field(s) "{names}" in state dict while restoring an '
                             f"instance of {clz.__name__} at path "
                             f"{serialization.current_path()}")
        return x.replace(**updates)

    serialization.register_serialization_state(data_clz, to_state, from_state)
    data_clz._flax_dataclass = True
    return data_clz


class PyTreeNode:
    """Base class whose subclasses are struct dataclasses (keyword arguments of the class
    statement go to dataclasses.dataclass, e.g. `class S(PyTreeNode, frozen=False)`)."""

    def __init_subclass__(cls, **kwargs):
        dataclass(cls, **kwargs)
