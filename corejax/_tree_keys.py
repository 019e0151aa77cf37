"""Key paths: the entries that name a child inside its pytree node, and `keystr`.

A key path is a tuple of entries from the root down to a leaf. Dict-like nodes name their
children with `DictKey`, lists and tuples with `SequenceKey`, namedtuples and dataclasses with
`GetAttrKey`, and nodes registered without keys with `FlattenedIndexKey` (the child's position
in the node's flattened children). The public path of these names is corejax.tree_util.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Hashable, TypeVar

__all__ = ["DictKey", "SequenceKey", "GetAttrKey", "FlattenedIndexKey", "KeyEntry", "KeyPath",
           "keystr"]

KeyEntry = TypeVar("KeyEntry", bound=Hashable)
KeyPath = tuple[KeyEntry, ...]


@dataclasses.dataclass(frozen=True)
class DictKey:
    """The child stored under `key` in a dict-like node; printed `['a']`."""
    key: Any

    def __str__(self):
        return f"[{self.key!r}]"


@dataclasses.dataclass(frozen=True)
class SequenceKey:
    """The child at index `idx` of a list or tuple; printed `[0]`."""
    idx: int

    def __str__(self):
        return f"[{self.idx}]"


@dataclasses.dataclass(frozen=True)
class GetAttrKey:
    """The child in attribute `name` (namedtuple and dataclass fields); printed `.name`."""
    name: str

    def __str__(self):
        return f".{self.name}"


@dataclasses.dataclass(frozen=True)
class FlattenedIndexKey:
    """The child at position `key` among the flattened children of a node registered
    without keys; printed `[<flat index 0>]`."""
    key: int

    def __str__(self):
        return f"[<flat index {self.key}>]"


for _cls in (DictKey, SequenceKey, GetAttrKey, FlattenedIndexKey):
    _cls.__module__ = "corejax.tree_util"


def _simple(entry) -> str:
    if isinstance(entry, DictKey):
        return str(entry.key)
    if isinstance(entry, SequenceKey):
        return str(entry.idx)
    if isinstance(entry, GetAttrKey):
        return entry.name
    if isinstance(entry, FlattenedIndexKey):
        return str(entry.key)
    return str(entry)


def keystr(keys: KeyPath, *, simple: bool = False, separator: str = "") -> str:
    """The key path `keys` as a string: `['a'][0].w` by default; with `simple=True` each
    entry is its bare key (`a`, `0`, `w`), best read with a `separator` such as `'/'`.
    Entries of other types print as `str(entry)`."""
    return separator.join(_simple(k) if simple else str(k) for k in keys)
