"""flax.core's surface that linen users touch: FrozenDict and its helpers (freeze, unfreeze,
copy, pop, pretty_repr), and the axis metadata boxes (re-exported from nn.meta and nn.spmd).

A FrozenDict keeps plain nested dicts inside and hands out a FrozenDict for a nested dict on
access, so freezing is one deep copy and reading never copies. It is a pytree (children in
sorted key order, keyed by DictKey, as Flax's) and a serializable state.
"""
from __future__ import annotations

from collections.abc import ItemsView, KeysView, Mapping, ValuesView
from typing import Any

from corejax import tree_util
from nn import meta, serialization
from nn.module import DenyList  # noqa: F401
from nn.meta import AxisMetadata, Partitioned, unbox, with_partitioning  # noqa: F401
from nn.spmd import LogicallyPartitioned, with_logical_partitioning  # noqa: F401

__all__ = ["FrozenDict", "freeze", "unfreeze", "copy", "pop", "pretty_repr", "meta", "DenyList",
           "AxisMetadata", "Partitioned", "LogicallyPartitioned", "unbox"]


def _thaw_copy(xs):
    """A deep copy of the dict structure, FrozenDicts opened up."""
    if isinstance(xs, FrozenDict):
        xs = xs._dict
    if isinstance(xs, dict):
        return {k: _thaw_copy(v) for k, v in xs.items()}
    return xs


class FrozenKeysView(KeysView):
    def __repr__(self):
        return f"frozen_dict_keys({list(self)})"


class FrozenValuesView(ValuesView):
    def __repr__(self):
        return f"frozen_dict_values({list(self)})"


class FrozenDict(Mapping):
    """An immutable dict; nested dicts read back as FrozenDicts."""

    __slots__ = ("_dict", "_hash")

    def __init__(self, *args, __unsafe_skip_copy__=False, **kwargs):
        if __unsafe_skip_copy__:
            self._dict = dict(*args, **kwargs)
        else:
            self._dict = _thaw_copy(dict(*args, **kwargs))
        self._hash = None

    def __getitem__(self, key):
        value = self._dict[key]
        if isinstance(value, dict):
            return FrozenDict(value, __unsafe_skip_copy__=True)
        return value

    def __setitem__(self, key, value):
        raise ValueError("FrozenDict is immutable.")

    def __contains__(self, key):
        return key in self._dict

    def __iter__(self):
        return iter(self._dict)

    def __len__(self):
        return len(self._dict)

    def __repr__(self):
        return self.pretty_repr()

    def __reduce__(self):
        return FrozenDict, (self.unfreeze(),)

    def __hash__(self):
        if self._hash is None:
            self._hash = hash(tuple((k, self[k]) for k in self._dict))
        return self._hash

    def copy(self, add_or_replace: Mapping = None) -> "FrozenDict":
        """A new FrozenDict with `add_or_replace`'s entries added or replaced."""
        return type(self)({**self._dict, **unfreeze(add_or_replace or {})})

    def keys(self):
        return FrozenKeysView(self)

    def values(self):
        return FrozenValuesView(self)

    def items(self):
        for key in self._dict:
            yield key, self[key]

    def pop(self, key) -> tuple["FrozenDict", Any]:
        """(a FrozenDict without `key`, the value that was there)."""
        value = self[key]
        rest = {k: v for k, v in self._dict.items() if k != key}
        return type(self)(rest, __unsafe_skip_copy__=True), value

    def pretty_repr(self, num_spaces: int = 4) -> str:
        return "FrozenDict(" + pretty_repr(self, num_spaces) + ")"

    def unfreeze(self) -> dict:
        return unfreeze(self)

    def tree_flatten_with_keys(self):
        keys = sorted(self._dict)
        return tuple((tree_util.DictKey(k), self._dict[k]) for k in keys), tuple(keys)

    def tree_flatten(self):
        keys = sorted(self._dict)
        return tuple(self._dict[k] for k in keys), tuple(keys)

    @classmethod
    def tree_unflatten(cls, keys, values):
        return cls(dict(zip(keys, values)), __unsafe_skip_copy__=True)


tree_util.register_pytree_with_keys(FrozenDict, FrozenDict.tree_flatten_with_keys,
                                    FrozenDict.tree_unflatten, FrozenDict.tree_flatten)


def freeze(xs: Mapping) -> FrozenDict:
    """A FrozenDict of `xs` (deep: nested dicts become frozen too)."""
    return FrozenDict(xs)


def unfreeze(x):
    """A plain nested dict copy of a FrozenDict or dict; anything else is returned as is."""
    if isinstance(x, (FrozenDict, dict)):
        return _thaw_copy(x)
    return x


def copy(x, add_or_replace: Mapping = FrozenDict({})):
    """`x` with `add_or_replace`'s entries; a FrozenDict stays frozen, a dict stays a dict."""
    if isinstance(x, FrozenDict):
        return x.copy(add_or_replace)
    if isinstance(x, dict):
        new = dict(x)
        new.update(add_or_replace)
        return new
    raise TypeError(f"Expected FrozenDict or dict, got {type(x)}")


def pop(x, key):
    """(`x` without `key`, the value there); `x` itself is left unchanged."""
    if isinstance(x, FrozenDict):
        return x.pop(key)
    if isinstance(x, dict):
        x = dict(x)
        value = x.pop(key)
        return x, value
    raise TypeError(f"Expected FrozenDict or dict, got {type(x)}")


def pretty_repr(x: Any, num_spaces: int = 4) -> str:
    """Flax's indented repr of nested (Frozen)dicts: keys unquoted, one entry a line."""
    if not isinstance(x, Mapping):
        return repr(x)

    def render(node, depth):
        if not isinstance(node, Mapping):
            return repr(node)
        if not node:
            return "{}"
        pad = " " * (num_spaces * (depth + 1))
        lines = [f"{pad}{k}: {render(v, depth + 1)}," for k, v in node.items()]
        return "{\n" + "\n".join(lines) + "\n" + " " * (num_spaces * depth) + "}"

    return render(x, 0)


def _frozen_state(xs: FrozenDict) -> dict:
    return {k: serialization.to_state_dict(v) for k, v in xs.items()}


def _restore_frozen(xs: FrozenDict, states: dict) -> FrozenDict:
    missing = set(map(str, xs._dict)).difference(states)
    if missing:
        raise ValueError("The target dict keys and state dict keys do not match, target dict "
                         f"contains keys {missing} which are not present in state dict at "
                         f"path {serialization.current_path()}")
    return FrozenDict({k: serialization.from_state_dict(v, states[k], name=k)
                       for k, v in xs._dict.items()}, __unsafe_skip_copy__=True)


serialization.register_serialization_state(FrozenDict, _frozen_state, _restore_frozen)
