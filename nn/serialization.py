"""flax.serialization: state dicts and Flax's msgpack byte format.

A *state dict* is the nested dict of strings to leaves that describes an object: dicts keep
their keys (as strings), lists and tuples become {"0": ..., "1": ...}, namedtuples
{field: ...}, registered classes (struct dataclasses, FrozenDict, TrainState) their own dict;
anything unregistered is a leaf. `from_state_dict(target, state)` rebuilds an object shaped like
`target` from a state dict.

On disk (`to_bytes` / `msgpack_serialize`) a state dict is msgpack with Flax's extension types:
an array is ext 1 holding the msgpack of (shape, dtype name, C-order bytes), a NumPy scalar
ext 3 with the same payload, a Python complex ext 2 holding (real, imag). Arrays over 1 GiB are
split into chunks as Flax does. The bytes are Flax's: a file written by either loads in the
other.
"""
from __future__ import annotations

import contextlib
import enum
import threading
from typing import Any

import numpy as np

from corejax import Array, tree_util

__all__ = ["to_state_dict", "from_state_dict", "register_serialization_state",
           "is_serializable", "current_path", "to_bytes", "from_bytes", "msgpack_serialize",
           "msgpack_restore"]


# --- state dicts ------------------------------------------------------------------------------

class _Path(threading.local):
    def __init__(self):
        self.parts: list = []


_path = _Path()


@contextlib.contextmanager
def _entering(name: str):
    _path.parts.append(name)
    try:
        yield
    finally:
        _path.parts.pop()


def current_path() -> str:
    """The path of the state dict node being restored, e.g. 'params/Dense_0' (for messages)."""
    return "/".join(_path.parts)


class _NamedTupleTag:
    """Registry key standing for every namedtuple class."""


_registry: dict = {}


def _registry_type(target):
    if isinstance(target, tuple) and hasattr(target, "_fields"):
        return _NamedTupleTag
    return type(target)


def register_serialization_state(ty, ty_to_state_dict, ty_from_state_dict, override=False):
    """Teaches to_state_dict / from_state_dict a type: `ty_to_state_dict(x) -> dict` and
    `ty_from_state_dict(x, state) -> a copy of x with that state`."""
    if ty in _registry and not override:
        raise ValueError(f'a serialization handler for "{ty.__name__}" is already registered')
    _registry[ty] = (ty_to_state_dict, ty_from_state_dict)


def is_serializable(target) -> bool:
    return (target if isinstance(target, type) else type(target)) in _registry


def to_state_dict(target) -> dict[str, Any]:
    """The state dict of `target` (itself when its type is not registered)."""
    handlers = _registry.get(_registry_type(target))
    if handlers is None:
        return target
    state = handlers[0](target)
    if isinstance(state, dict) and not all(isinstance(k, str) for k in state):
        raise AssertionError("A state dict must only have string keys.")
    return state


def from_state_dict(target, state: dict[str, Any], name: str = "."):
    """A copy of `target` holding `state`; only target's structure is used (leaves in `state`
    replace target's leaves whatever their shapes)."""
    handlers = _registry.get(_registry_type(target))
    if handlers is None:
        return state
    with _entering(name):
        return handlers[1](target, state)


def _sequence_state(xs) -> dict:
    return {str(i): to_state_dict(x) for i, x in enumerate(xs)}


def _restore_list(xs, state: dict) -> list:
    if len(state) != len(xs):
        raise ValueError("The size of the list and the state dict do not match, got "
                         f"{len(xs)} and {len(state)} at path {current_path()}")
    return [from_state_dict(xs[i], state[str(i)], name=str(i)) for i in range(len(state))]


def _dict_state(xs: dict) -> dict:
    keys = {str(k) for k in xs}
    if len(keys) != len(xs):
        raise ValueError(f"Dict keys do not have a unique string representation: {keys} vs "
                         f"given: {xs}")
    return {str(k): to_state_dict(v) for k, v in xs.items()}


def _restore_dict(xs: dict, state: dict) -> dict:
    missing = set(map(str, xs)).difference(state)
    if missing:
        raise ValueError("The target dict keys and state dict keys do not match, target dict "
                         f"contains keys {missing} which are not present in state dict at "
                         f"path {current_path()}")
    return {k: from_state_dict(v, state[str(k)], name=str(k)) for k, v in xs.items()}


def _namedtuple_state(nt) -> dict:
    return {f: to_state_dict(getattr(nt, f)) for f in nt._fields}


def _restore_namedtuple(nt, state: dict):
    if set(state) == {"name", "fields", "values"}:  # the layout Flax wrote before 2022
        state = {state["fields"][str(i)]: state["values"][str(i)]
                 for i in range(len(state["fields"]))}
    if set(state) != set(nt._fields):
        raise ValueError("The field names of the state dict and the named tuple do not match, "
                         f"got {set(state)} and {set(nt._fields)} at path {current_path()}")
    return type(nt)(**{k: from_state_dict(getattr(nt, k), v, name=k)
                       for k, v in state.items()})


register_serialization_state(dict, _dict_state, _restore_dict)
register_serialization_state(list, _sequence_state, _restore_list)
register_serialization_state(tuple, _sequence_state,
                             lambda xs, state: tuple(_restore_list(list(xs), state)))
register_serialization_state(_NamedTupleTag, _namedtuple_state, _restore_namedtuple)
register_serialization_state(
    tree_util.Partial,
    lambda p: {"args": to_state_dict(p.args), "keywords": to_state_dict(p.keywords)},
    lambda p, s: tree_util.Partial(p.func, *from_state_dict(p.args, s["args"]),
                                   **from_state_dict(p.keywords, s["keywords"])))


# --- msgpack ----------------------------------------------------------------------------------

class _Ext(enum.IntEnum):
    ndarray = 1
    native_complex = 2
    npscalar = 3


def _msgpack():
    """The msgpack package (a dependency of corejax, imported when bytes are made or read)."""
    try:
        import msgpack
    except ImportError as e:
        raise ImportError("nn.serialization needs the msgpack package for to_bytes/from_bytes "
                          "and checkpoints: pip install msgpack") from e
    return msgpack


# msgpack caps one object at 2**31 - 1 bytes; larger arrays travel as chunks of 1 GiB.
MAX_CHUNK_SIZE = 2 ** 30
_CHUNKED = "__msgpack_chunked_array__"


def _array_payload(arr: np.ndarray) -> bytes:
    if arr.dtype.hasobject or arr.dtype.isalignedstruct:
        raise ValueError("Object and structured dtypes not supported for serialization of "
                         "ndarrays.")
    return _msgpack().packb((arr.shape, arr.dtype.name, arr.tobytes("C")), use_bin_type=True)


def _array_from_payload(data: bytes) -> np.ndarray:
    shape, dtype_name, buffer = _msgpack().unpackb(data, raw=True)
    if dtype_name == b"bfloat16":
        raise NotImplementedError("bfloat16 arrays cannot be restored: corejax has no bfloat16 "
                                  "dtype; convert them to float32 before saving.")
    return np.frombuffer(buffer, dtype=np.dtype(dtype_name.decode()), count=-1,
                         offset=0).reshape(shape, order="C")


def _pack_ext(x):
    if isinstance(x, np.ndarray):
        return _msgpack().ExtType(_Ext.ndarray, _array_payload(x))
    if isinstance(x, np.generic):
        return _msgpack().ExtType(_Ext.npscalar, _array_payload(np.asarray(x)))
    if isinstance(x, complex):
        return _msgpack().ExtType(_Ext.native_complex, _msgpack().packb((x.real, x.imag)))
    raise TypeError(f"can not serialize {type(x).__name__!r} object {x!r}: state dict leaves "
                    "must be arrays, NumPy scalars or Python scalars/strings/None.")


def _unpack_ext(code, data):
    if code == _Ext.ndarray:
        return _array_from_payload(data)
    if code == _Ext.native_complex:
        real, imag = _msgpack().unpackb(data)
        return complex(real, imag)
    if code == _Ext.npscalar:
        return _array_from_payload(data)[()]
    return _msgpack().ExtType(code, data)


def _prepare(node, sort_keys: bool):
    """Device arrays become NumPy arrays and huge arrays chunk dicts (a fresh tree); with
    `sort_keys` dicts are rebuilt in sorted key order, as the pytree copy Flax makes when not
    serializing in place."""
    if isinstance(node, dict):
        keys = sorted(node) if sort_keys else node
        return {k: _prepare(node[k], sort_keys) for k in keys}
    if isinstance(node, (list, tuple)) and not hasattr(node, "_fields"):
        return type(node)(_prepare(v, sort_keys) for v in node)
    if isinstance(node, Array):
        node = np.asarray(node)
    if isinstance(node, np.ndarray) and node.size * node.dtype.itemsize > MAX_CHUNK_SIZE:
        step = max(1, MAX_CHUNK_SIZE // node.dtype.itemsize)
        flat = node.reshape(-1)
        chunks = [flat[i:i + step] for i in range(0, flat.size, step)]
        return {_CHUNKED: True, "shape": {str(i): d for i, d in enumerate(node.shape)},
                "chunks": {str(i): c for i, c in enumerate(chunks)}}
    return node


def _unchunk(node):
    if isinstance(node, dict):
        if _CHUNKED in node:
            shape = tuple(node["shape"][str(i)] for i in range(len(node["shape"])))
            chunks = [node["chunks"][str(i)] for i in range(len(node["chunks"]))]
            return np.concatenate(chunks).reshape(shape)
        return {k: _unchunk(v) for k, v in node.items()}
    return node


def msgpack_serialize(pytree, in_place: bool = False) -> bytes:
    """Flax's msgpack bytes of a tree of dicts, lists, arrays and scalars. As in Flax, dict
    entries are written in sorted key order unless `in_place` (then in insertion order); the
    tree itself is never modified."""
    return _msgpack().packb(_prepare(pytree, not in_place), default=_pack_ext, strict_types=True)


def msgpack_restore(encoded_pytree: bytes):
    """The tree of dicts, lists, NumPy arrays and scalars that msgpack_serialize encoded."""
    tree = _msgpack().unpackb(encoded_pytree, ext_hook=_unpack_ext, raw=False,
                           strict_map_key=False)
    return _unchunk(tree)


def to_bytes(target) -> bytes:
    """Flax's msgpack bytes of `target`'s state dict."""
    return msgpack_serialize(to_state_dict(target), in_place=True)


def from_bytes(target, encoded_bytes: bytes):
    """A copy of `target` holding the state that `to_bytes` encoded."""
    return from_state_dict(target, msgpack_restore(encoded_bytes))
