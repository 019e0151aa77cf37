"""Checkpoints of any pytree: `save(path, tree)` and `restore(path, target=None)`.

The file is a NumPy .npz archive (readable on any machine, loaded with allow_pickle=False): one
array per leaf, plus the tree structure described in JSON. Nodes are dicts, lists, tuples, None,
namedtuples (such as optimizer states) and other registered pytree nodes whose aux data is JSON
(they are re-imported by module and name). Writes are atomic: a temporary file in the same
folder, flushed and fsync'ed, then `os.replace`d over the old checkpoint, so a crash mid-write
leaves the previous checkpoint intact.
"""
from __future__ import annotations

import importlib
import json
import os
import tempfile

import numpy as np

from corejax import tree_util
from data.errors import CheckpointError

__all__ = ["save", "restore"]

_FORMAT = "corejax-checkpoint/1"
_TREE_ENTRY = "__tree__"
_BUILTIN_NODES = {tuple: "tuple", list: "list", dict: "dict", type(None): "none"}
_SCALARS = {bool: "bool", int: "int", float: "float"}


def _class_path(cls) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _import_class(path: str):
    module, _, qualname = path.partition(":")
    try:
        obj = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as e:
        raise CheckpointError(f"checkpoint names the pytree node class {path!r}, which cannot "
                              f"be imported ({e}); pass target= to restore into.") from e
    return obj


def _jsonable(aux):
    try:
        json.dumps(aux)
    except TypeError:
        return False
    return True


def _as_tuples(x):
    """JSON turns tuples into lists; aux data of pytree nodes must be hashable again."""
    return tuple(_as_tuples(v) for v in x) if isinstance(x, list) else x


def _encode(treedef) -> dict:
    node = treedef.node_type
    if node is None:
        return {"leaf": True}
    children = [_encode(c) for c in treedef.children()]
    if node in _BUILTIN_NODES:
        out = {"node": _BUILTIN_NODES[node], "children": children}
        if node is dict:
            if not all(isinstance(k, str) for k in treedef.aux):
                raise TypeError(f"checkpoint.save: dict keys must be strings, got "
                                f"{list(treedef.aux)!r}.")
            out["keys"] = list(treedef.aux)
        return out
    if not _jsonable(treedef.aux):
        raise TypeError(f"checkpoint.save: cannot describe the static data {treedef.aux!r} of "
                        f"pytree node {node.__name__} in JSON.")
    return {"node": "class", "class": _class_path(node), "aux": treedef.aux,
            "children": children}


def _decode(desc: dict, leaves):
    if desc.get("leaf"):
        return next(leaves)
    children = [_decode(c, leaves) for c in desc["children"]]
    kind = desc["node"]
    if kind == "tuple":
        return tuple(children)
    if kind == "list":
        return children
    if kind == "none":
        return None
    if kind == "dict":
        return dict(zip(desc["keys"], children))
    cls = _import_class(desc["class"])
    if isinstance(cls, type) and issubclass(cls, tuple) and hasattr(cls, "_fields"):
        return cls(*children)
    spec = tree_util._registry.get(cls)
    if spec is None:
        raise CheckpointError(f"checkpoint node class {desc['class']!r} is not a registered "
                              "pytree node; pass target= to restore into.")
    return spec.unflatten(_as_tuples(desc["aux"]), children)


def _leaf_array(leaf):
    kind = _SCALARS.get(type(leaf))
    return (kind or "array"), np.asarray(leaf)


def _fsync_dir(folder: str) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return  # some platforms cannot open folders; the rename itself is still atomic
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_atomically(path, write, mode: str = "wb") -> None:
    """Writes `path` through `write(file)` so that the file is either its old self or complete:
    into a temporary file beside it, flushed and fsynced, renamed over `path` (the rename made
    durable too). A failure, Ctrl-C included, removes the temporary file and leaves `path` as
    it was. The checkpoints, train.py's run records and nn.training's checkpoints write so."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    try:
        with os.fdopen(fd, mode) as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    _fsync_dir(folder)


def save(path, tree) -> None:
    """Writes `tree` (any pytree of arrays and Python scalars) to `path`, atomically."""
    path = os.fspath(path)
    leaves, treedef = tree_util.tree_flatten(tree)
    kinds, arrays = [], {}
    for i, leaf in enumerate(leaves):
        kind, arr = _leaf_array(leaf)
        if arr.dtype == object:
            raise TypeError(f"checkpoint.save: leaf {i} of type {type(leaf).__name__} is not an "
                            "array or a Python scalar.")
        kinds.append(kind)
        arrays[f"leaf_{i:05d}"] = arr
    meta = {"format": _FORMAT, "tree": _encode(treedef), "kinds": kinds}
    arrays[_TREE_ENTRY] = np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8)

    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    write_atomically(path, lambda f: np.savez(f, **arrays))


def _read(path: str):
    with open(path, "rb") as f:           # FileNotFoundError propagates as itself
        head = f.read(4)
    if head != b"PK\x03\x04":
        raise CheckpointError(f"{path}: not a corejax checkpoint: a checkpoint is a NumPy .npz "
                              f"(zip) archive, this file starts with {head!r}.")
    try:
        with np.load(path, allow_pickle=False) as archive:
            meta = json.loads(archive[_TREE_ENTRY].tobytes().decode("utf-8"))
            if meta.get("format") != _FORMAT:
                raise CheckpointError(f"{path}: unknown checkpoint format {meta.get('format')!r}"
                                      f"; expected {_FORMAT!r}.")
            leaves = [archive[f"leaf_{i:05d}"] for i in range(len(meta["kinds"]))]
    except FileNotFoundError:
        raise
    except CheckpointError:
        raise
    except Exception as e:  # noqa: BLE001 - zip, JSON and key errors all mean a bad file
        raise CheckpointError(f"{path}: not a readable corejax checkpoint ({e}).") from e
    out = []
    for kind, arr in zip(meta["kinds"], leaves):
        out.append(arr if kind == "array" else {"bool": bool, "int": int,
                                                  "float": float}[kind](arr.item()))
    return meta, out


def restore(path, target=None):
    """Reads a checkpoint written by `save`. Array leaves come back as NumPy arrays.

    With `target` (a pytree of the expected structure, e.g. freshly initialized parameters),
    the result has target's structure and every leaf's shape and dtype is checked against it;
    without it the structure stored in the file is rebuilt.
    """
    path = os.fspath(path)
    meta, leaves = _read(path)
    if target is None:
        return _decode(meta["tree"], iter(leaves))
    paths_leaves, treedef = tree_util.tree_flatten_with_path(target)
    if len(paths_leaves) != len(leaves):
        raise CheckpointError(f"{path}: checkpoint holds {len(leaves)} leaves but the target "
                              f"has {len(paths_leaves)}; was it written for another model or "
                              "optimizer?")
    for (key_path, want), got in zip(paths_leaves, leaves):
        want_shape, got_shape = np.shape(want), np.shape(got)
        want_dtype = np.asarray(want).dtype if not hasattr(want, "dtype") else want.dtype
        if want_shape != got_shape or np.dtype(want_dtype) != np.asarray(got).dtype:
            raise CheckpointError(
                f"{path}: leaf {tree_util.keystr(key_path)} is {np.asarray(got).dtype}"
                f"{list(got_shape)} in the checkpoint but {np.dtype(want_dtype)}"
                f"{list(want_shape)} in the target.")
    return tree_util.tree_unflatten(treedef, leaves)
