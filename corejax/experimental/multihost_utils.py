"""Host data between processes (public as corejax.experimental.multihost_utils, JAX's
jax.experimental.multihost_utils): process_allgather, broadcast_one_to_all,
sync_global_devices, assert_equal.

Each runs MPI collectives on host buffers (corejax/_mpi.py) and returns NumPy arrays, as
JAX's do. With one process (distributed not initialized) they return the local values.
"""
from __future__ import annotations

import zlib

import numpy as np

from corejax import _mpi
from corejax.tree_util import tree_flatten, tree_map, tree_unflatten

__all__ = ["process_allgather", "broadcast_one_to_all", "sync_global_devices",
           "assert_equal"]


def _processes() -> int:
    eng = _mpi.engine()
    return 1 if eng is None else eng.size


def process_allgather(in_tree, tiled: bool = False):
    """Every process's arrays of `in_tree` (the same shapes on every process): stacked on a
    new leading axis in process order, or concatenated along axis 0 with tiled=True (a
    scalar is always stacked). Returns NumPy arrays."""
    def gather(x):
        x = np.asarray(x)
        if _processes() == 1:
            return x if tiled else x[None]
        table = _mpi.engine().allgather(x, "process_allgather")
        if tiled and x.ndim:
            return table.reshape((-1,) + x.shape[1:])
        return table
    return tree_map(gather, in_tree)


def broadcast_one_to_all(in_tree, is_source: bool | None = None):
    """The source process's arrays of `in_tree` on every process (NumPy arrays). The source
    is process 0 unless `is_source` says which; every process passes arrays of the same
    shapes. (As in JAX, several sources give the sum of their values.)"""
    eng = _mpi.engine()
    if eng is None or eng.size == 1:
        return tree_map(np.asarray, in_tree)
    if is_source is None:
        is_source = eng.rank == 0
    sources = np.flatnonzero(eng.allgather(np.array(bool(is_source)),
                                           "broadcast_one_to_all (sources)"))
    leaves, tree = tree_flatten(in_tree)
    out = []
    for x in leaves:
        x = np.array(x)
        if len(sources) == 1:
            out.append(eng.broadcast(x, int(sources[0]), "broadcast_one_to_all"))
            continue
        if not is_source:
            x = np.zeros_like(x)
        if x.dtype == np.bool_:
            out.append(eng.allreduce(x.astype(np.uint8), "max", "broadcast_one_to_all")
                       .astype(np.bool_))
        else:
            out.append(eng.allreduce(x, "sum", "broadcast_one_to_all"))
    return tree_unflatten(tree, out)


def sync_global_devices(name: str) -> None:
    """Waits until every process has reached `sync_global_devices` with the same name
    (AssertionError if the names differ)."""
    assert_equal(np.uint32(zlib.crc32(name.encode())),
                 f"sync_global_devices name mismatch ('{name}')")


def assert_equal(in_tree, fail_message: str = "") -> None:
    """AssertionError (with `fail_message`) unless every process holds the same values."""
    gathered = process_allgather(in_tree, tiled=False)
    mine = tree_map(np.asarray, in_tree)
    same = [bool(np.all(g == m[None])) for g, m in zip(tree_flatten(gathered)[0],
                                                       tree_flatten(mine)[0])]
    if not all(same):
        raise AssertionError(f"{fail_message}. Expected: {gathered}; got: {in_tree}.")
