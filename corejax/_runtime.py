"""Process, device and cache queries of the top-level API: process_index / process_count /
process_indices (and the old host_* names), local_devices, local_device_count,
effects_barrier, clear_caches, live_arrays, copy_to_host_async, print_environment_info.
Their public path is corejax.

One process unless corejax.distributed.initialize() joined it to others (under mpiexec):
then process_index/process_count are its MPI rank and size, `devices()` lists every process's
devices and `local_devices()` this process's.
"""
from __future__ import annotations

import gc
import platform
import sys
import warnings

from corejax import _mpi, api, compiler
from corejax.array import Array
from corejax.array import devices as _local_devices
from corejax.distributed import global_devices as devices

__all__ = ["devices", "process_index", "process_count", "process_indices", "host_id",
           "host_count", "host_ids", "local_devices", "local_device_count", "effects_barrier",
           "clear_caches", "live_arrays", "copy_to_host_async", "print_environment_info"]


def process_index(backend: str | None = None) -> int:
    """The index of this process among the processes of the computation (0 alone)."""
    eng = _mpi.engine()
    return 0 if eng is None else eng.rank


def process_count(backend: str | None = None) -> int:
    """The number of processes taking part in the computation (1 alone)."""
    eng = _mpi.engine()
    return 1 if eng is None else eng.size


def process_indices(backend: str | None = None) -> list[int]:
    """The indices of all processes: [0, ..., process_count() - 1]."""
    return list(range(process_count(backend)))


def _renamed(old: str, new: str) -> None:
    warnings.warn(f"corejax.{old} is an old name of corejax.{new}; use {new}.", UserWarning,
                  stacklevel=3)


def host_id(backend: str | None = None) -> int:
    _renamed("host_id", "process_index")
    return process_index(backend)


def host_count(backend: str | None = None) -> int:
    _renamed("host_count", "process_count")
    return process_count(backend)


def host_ids(backend: str | None = None) -> list[int]:
    _renamed("host_ids", "process_indices")
    return process_indices(backend)


def local_devices(process_index: int | None = None, backend: str | None = None,
                  host_id: int | None = None) -> list:
    """The devices of process `process_index` (this one's by default) of `backend`."""
    index = process_index if process_index is not None else host_id
    if index is None or index == _process_index():
        return _local_devices(backend)
    if not 0 <= index < process_count():
        raise ValueError(f"Unknown process_index {index}: the processes are 0..."
                         f"{process_count() - 1} (corejax.distributed.initialize() joins "
                         "processes started by mpiexec).")
    return [d for d in devices(backend) if d.process_index == index]


_process_index = process_index


def local_device_count(backend: str | None = None) -> int:
    return len(local_devices(backend=backend))


def effects_barrier() -> None:
    """Waits until every side effect of computations already dispatched (debug callbacks,
    prints) has happened. corejax runs effects on the host in program order as each
    computation runs, so none is ever pending."""


def clear_caches() -> None:
    """Drops every traced and compiled program held in memory: the next call of a jitted
    function traces and compiles again. (Numba's kernel cache on disk is kept.)"""
    with api._trace_caches_lock:
        tables = list(api._trace_caches.values())
    for table in tables:
        for state in list(table.values()):
            with state.lock:
                state.entries.clear()
                state.fast.clear()
    compiler._cache.clear()


def live_arrays(platform: str | None = None) -> list:
    """Every Array alive in this process that has not been deleted (on `platform`, if
    given: 'cpu' or 'cuda'). A debugging aid: it walks the garbage collector's objects."""
    return [x for x in gc.get_objects()
            if type(x) is Array and not x.is_deleted()
            and (platform is None or x.device.platform == platform)]


def copy_to_host_async(x):
    """A hint to start copying the Arrays of pytree `x` to the host ahead of a later read;
    returns `x`. corejax copies a device buffer when it is read, so there is nothing to
    start early."""
    return x


def print_environment_info(return_string: bool = False) -> str | None:
    """Prints (or returns) the versions of corejax and its dependencies, the devices and
    the platform, for bug reports."""
    import numpy
    import corejax
    lines = [f"corejax: {corejax.__version__}", f"numpy:   {numpy.__version__}"]
    for name in ("numba", "scipy"):
        module = sys.modules.get(name)
        if module is None:
            try:
                module = __import__(name)
            except ImportError:
                lines.append(f"{name + ':':8} not installed")
                continue
        lines.append(f"{name + ':':8} {module.__version__}")
    lines.append(f"python:  {sys.version}")
    devs = devices()
    lines.append(f"devices: {', '.join(str(d) for d in devs)} "
                 f"({len(local_devices())} local)")
    lines.append(f"process_count: {process_count()}")
    lines.append(f"platform: {platform.uname()}")
    text = "\n".join(lines)
    if return_string:
        return text
    print(text)
    return None
