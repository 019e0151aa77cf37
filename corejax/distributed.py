"""Several processes, one computation (public as corejax.distributed): JAX's
`initialize`, `shutdown`, `is_initialized`, on MPI.

Launch one process per machine (or per share of a machine) with MPI's launcher and
initialize each before computing:

    mpiexec -n 2 python train.py ...           # or: mpiexec -f hosts -n 8 python ...

    import corejax as jax
    jax.distributed.initialize()               # rank and size come from MPI
    jax.process_index(), jax.process_count()   # 0 or 1, 2
    jax.devices()                              # every process's devices
    jax.local_devices()                        # this process's

Then pmap collectives (psum, pmean, all_gather, ppermute, ...) over a pmap's axis span
every process's devices (corejax/_mpi_pmap.py), and corejax.experimental.multihost_utils
moves host data between processes; both run MPI collectives on host buffers, checked for
program order and lost processes (corejax/_mpi.py). MPI comes from the package registry:
`pip install -e ".[mpi]"` (mpi4py and the MPICH wheel, whose `mpiexec` lands beside python).
"""
from __future__ import annotations

from corejax import array
from corejax._mpi import DistributedError, launched_processes
from corejax import _mpi

__all__ = ["initialize", "shutdown", "is_initialized", "DistributedError"]


def initialize(coordinator_address: str | None = None, num_processes: int | None = None,
               process_id: int | None = None, local_device_ids=None,
               cluster_detection_method: str | None = None, initialization_timeout: int = 300,
               heartbeat_timeout_seconds: int = 100, shutdown_timeout_seconds: int = 300,
               coordinator_bind_address: str | None = None, slice_index: int | None = None,
               partition_index: int | None = None) -> None:
    """Joins this process to the computation's other processes.

    Under `mpiexec` no argument is needed: MPI gives each process its index (rank) and the
    count. `num_processes` and `process_id`, if given, must agree with MPI's. MPI's launcher
    connects the processes, so `coordinator_address` (and the other address and cluster
    arguments) are accepted as JAX takes them and not needed. `heartbeat_timeout_seconds`
    bounds how long a process waits in a collective for a peer that may be lost (peers on the
    same machine found gone end the wait at once); `shutdown_timeout_seconds` how long it
    waits at exit for the others to finish.
    """
    if _mpi.engine() is not None:
        raise RuntimeError("distributed.initialize should only be called once.")
    for name, value in (("num_processes", num_processes), ("process_id", process_id)):
        if value is not None and (not isinstance(value, int) or value < 0):
            raise TypeError(f"distributed.initialize: {name} must be a non-negative int, got "
                            f"{value!r}.")
    if local_device_ids is not None:
        raise NotImplementedError(
            "distributed.initialize(local_device_ids=...): corejax gives each process all of "
            "its devices; choose them per process with COREJAX_NUM_CPU_DEVICES (CPU) or "
            "CUDA_VISIBLE_DEVICES (GPU) in the launcher's environment instead.")
    if coordinator_address is not None and not isinstance(coordinator_address, str):
        raise TypeError(f"coordinator_address must be a 'host:port' string, got "
                        f"{coordinator_address!r}.")
    launched = launched_processes()
    if num_processes is not None and num_processes > 1 and launched is None:
        raise RuntimeError(
            f"distributed.initialize(num_processes={num_processes}): corejax's processes are "
            f"started and connected by MPI's launcher; run `mpiexec -n {num_processes} "
            "python ...` (this process was not started by one).")
    eng = _mpi.start(heartbeat_timeout_seconds, shutdown_timeout_seconds)
    try:
        if num_processes is not None and num_processes != eng.size:
            raise ValueError(f"distributed.initialize: num_processes={num_processes}, but "
                             f"MPI started {eng.size} process(es) (mpiexec -n).")
        if process_id is not None and process_id != eng.rank:
            raise ValueError(f"distributed.initialize: process_id={process_id}, but MPI "
                             f"gave this process rank {eng.rank}.")
        _join_devices(eng)
    except BaseException:
        _mpi._engine = None
        raise


def _join_devices(eng) -> None:
    """Gives this process's devices its index and learns every process's device count (and
    the corejax version it runs: processes of different versions stop here)."""
    from corejax.config import config
    from corejax.version import __version__
    local = {"cpu": array.devices("cpu")}
    if config.platform == "cuda":
        local["cuda"] = array.devices("cuda")
    for devs in local.values():
        for d in devs:
            d.process_index = eng.rank
    mine = (__version__, {k: len(v) for k, v in local.items()})
    table = eng.comm.allgather(mine)
    versions = {v for v, _ in table}
    if len(versions) > 1:
        raise DistributedError("the processes run different corejax versions: " + ", ".join(
            f"process {r}: {v}" for r, (v, _) in enumerate(table)) + "; install the same "
            "code on every machine.")
    _Processes.counts = [counts for _, counts in table]
    _Processes.remote = {}


class _Processes:
    """Per process, its device count by platform (after initialize)."""
    counts: list | None = None
    remote: dict = {}


def global_devices(backend: str | None = None) -> list:
    """Every process's devices of `backend`, process by process (this one's own objects)."""
    eng = _mpi.engine()
    local = array.devices(backend)
    if eng is None or eng.size == 1 or _Processes.counts is None:
        return local
    platforms = [backend] if backend is not None else ["cpu", "cuda"]
    out = []
    for p, counts in enumerate(_Processes.counts):
        for platform in platforms:
            if platform not in counts:
                continue
            if p == eng.rank:
                out.extend(d for d in local if d.platform == platform)
                continue
            key = (platform, p)
            devs = _Processes.remote.get(key)
            if devs is None:
                devs = _Processes.remote[key] = [array.Device(platform, i, p)
                                                 for i in range(counts[platform])]
            out.extend(devs)
    return out


def shutdown() -> None:
    """Leaves the computation: waits until every process has called shutdown (or is
    exiting), then this process computes alone again. Called at exit if not before."""
    eng = _mpi.engine()
    if eng is None:
        return
    _mpi.stop()
    for devs in (array.devices("cpu"),):
        for d in devs:
            d.process_index = 0
    _Processes.counts = None
    _Processes.remote = {}


def is_initialized() -> bool:
    """Whether initialize() has been called (and shutdown() not since)."""
    return _mpi.engine() is not None
