"""The MPI engine under corejax.distributed: collectives between processes on host buffers.

MPI (mpi4py over MPICH or Open MPI, `pip install corejax[mpi]`) moves the bytes; this module
only adds what a training run needs around it:

- Program order is checked before data moves. Every collective first gathers a short
  description of itself from every process (its sequence number, what it is, dtype and
  shape: a fixed-size record, so the check itself can never mismatch). Processes that
  disagree all raise DistributedError naming each one's collective, instead of entering
  operations of different sizes and deadlocking.
- Nothing waits forever. Requests are non-blocking and polled; while waiting, a process
  looks for (1) the exit notice a peer sends when its interpreter ends (an error or a
  normal end while this one still waits for it), (2) peers on the same machine whose process
  is gone (kill -9, a crash: MPI itself would wait forever), and (3) the heartbeat timeout
  (`initialize(heartbeat_timeout_seconds=)`), the bound for peers on other machines that
  vanish without a word. Each ends the wait with DistributedError naming the lost process.
- A process whose collective failed leaves without MPI_Finalize (which would wait for the
  lost peer): its exit status is then 1.

Polling sleeps between tests (yielding the core to a peer on the same machine), so a
collective that waits for a slower peer costs at most about a millisecond more than MPI's
own blocking call.
"""
from __future__ import annotations

import atexit
import os
import socket
import sys
import threading
import time
import zlib

import numpy as np

from corejax._guards import ThreadGuard as _ThreadGuard

__all__ = ["DistributedError", "Engine", "engine", "start", "stop"]


class DistributedError(RuntimeError):
    """A collective between processes cannot complete: a process was lost, or the processes
    reached different collectives. `lost` holds the indices of processes known lost."""

    __module__ = "corejax.distributed"       # its public path

    def __init__(self, message: str, lost=()):
        super().__init__(message)
        self.lost = frozenset(lost)


_SIGNATURE_BYTES = 160
_EXIT_TAG = 7
_INSTALL_HINT = ("corejax.distributed runs on MPI through mpi4py: install it with an MPI "
                 "from the package registry, `pip install -e \".[mpi]\"` (mpi4py and the "
                 "MPICH wheel), and launch the processes with `mpiexec -n N python ...`.")


def load_mpi():
    """mpi4py's MPI module (initializing MPI, with thread support for device threads)."""
    try:
        import mpi4py
    except ImportError as e:
        raise ImportError(_INSTALL_HINT) from e
    mpi4py.rc.thread_level = "multiple"
    from mpi4py import MPI
    return MPI


def launched_processes() -> int | None:
    """The process count an MPI launcher announced in the environment (MPICH's hydra, Open
    MPI, PMIx, Slurm's srun), or None outside one; read without initializing MPI."""
    for var in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS_WORLD",
                "SLURM_NTASKS"):
        value = os.environ.get(var)
        if value and value.isdigit():
            return int(value)
    return None


def _machine() -> str:
    """This machine's identity: host name and boot id (two containers may share a name)."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot = f.read().strip()
    except OSError:
        boot = ""
    return f"{socket.gethostname()}/{boot}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        return state not in ("Z", "X")       # a killed child its launcher has not reaped yet
    except (OSError, IndexError):
        return True


# dtypes MPI reduces itself; others (float16, bfloat16, bool) are gathered and reduced here
_MPI_REDUCIBLE = {np.dtype(t) for t in (np.float32, np.float64, np.int8, np.int16, np.int32,
                                        np.int64, np.uint8, np.uint16, np.uint32, np.uint64)}
_MPI_SUMMABLE = _MPI_REDUCIBLE | {np.dtype(np.complex64), np.dtype(np.complex128)}
_NUMPY_OPS = {"sum": np.add, "max": np.maximum, "min": np.minimum}


def _contiguous(buf) -> np.ndarray:
    """`buf` as a C-contiguous array of its own shape (0-d stays 0-d, unlike
    np.ascontiguousarray)."""
    buf = np.asarray(buf)
    return buf if buf.flags.c_contiguous else np.ascontiguousarray(buf).reshape(buf.shape)


class Engine:
    """The processes of one run and their collectives (one per process: `engine()`)."""

    def __init__(self, MPI, heartbeat_timeout: float):
        self.MPI = MPI
        world = MPI.COMM_WORLD
        self.comm = world.Dup()           # the data
        self.signatures = world.Dup()     # the program-order check
        self.control = world.Dup()        # exit notices
        self.rank, self.size = world.Get_rank(), world.Get_size()
        self.timeout = float(heartbeat_timeout)
        self.sequence = 0
        self.broken = False
        self.lock = threading.RLock()
        self.ops = {"sum": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN}
        me = (_machine(), os.getpid(), socket.gethostname())
        peers = self.comm.allgather(me)
        self.pids = [p[1] for p in peers]
        self.hosts = [p[2] for p in peers]
        self.neighbours = [r for r, p in enumerate(peers) if p[0] == me[0] and r != self.rank]
        self._notices: list = []

    # --- waiting ------------------------------------------------------------------------

    def who(self, rank: int) -> str:
        return f"process {rank} (pid {self.pids[rank]} on {self.hosts[rank]})"

    def _check_peers(self, what: str) -> None:
        status = self.MPI.Status()
        if self.control.Iprobe(source=self.MPI.ANY_SOURCE, tag=_EXIT_TAG, status=status):
            source = status.Get_source()
            self.control.recv(source=source, tag=_EXIT_TAG)
            raise DistributedError(
                f"{self.who(source)} exited while process {self.rank} waited for it in "
                f"{what}: every process must run the same collectives; the run cannot go on "
                f"(the error of process {source}, if it had one, is in its output).", {source})
        for r in self.neighbours:
            if not _alive(self.pids[r]):
                raise DistributedError(
                    f"{self.who(r)} was lost (its process is gone: killed or crashed) while "
                    f"process {self.rank} waited for it in {what}; the run cannot go on.", {r})

    def wait(self, request, what: str) -> None:
        """Waits for `request`, checking for lost peers; DistributedError when one is lost or
        the heartbeat timeout passes. A request left incomplete marks the engine broken."""
        if request.Test():
            return
        start = time.monotonic()
        next_check = start + 0.05
        # MPI moves a nonblocking collective's data only inside Test(): poll (yielding the core)
        # for the first 20 ms, the length of a large gradient allreduce, then back off to
        # sleeps of up to 1 ms (a process waiting for a slow peer should not spin)
        spin_until, pause = start + 0.02, 2e-5
        try:
            while not request.Test():
                now = time.monotonic()
                if now < spin_until:
                    os.sched_yield()
                else:
                    time.sleep(pause)
                    pause = min(pause * 1.5, 1e-3)
                if now >= next_check:
                    self._check_peers(what)
                    next_check = now + 0.1
                    if now - start > self.timeout:
                        raise DistributedError(
                            f"process {self.rank} waited {now - start:.0f} s in {what} (the "
                            f"heartbeat timeout): a process was lost or is stuck; the run "
                            "cannot go on. (initialize(heartbeat_timeout_seconds=) sets the "
                            "bound.)")
        except BaseException:
            self.broken = True
            raise

    # --- collectives ----------------------------------------------------------------------

    def _check_order(self, what: str) -> int:
        """Gathers every process's description of the collective it is entering; raises
        DistributedError on all of them if any differs."""
        owner = _ThreadGuard.owner
        if owner is not None and self.size > 1 and threading.get_ident() != owner:
            raise RuntimeError(
                f"thread_guard: the multi-process operation {what} was called from thread "
                f"{threading.current_thread().name!r}, not from the thread that set "
                "corejax.thread_guard(True). Processes that enter collectives from several "
                "threads may enter them in different orders and deadlock; run multi-process "
                "operations from that one thread, or unset the guard.")
        self.sequence += 1
        text = f"#{self.sequence} {what}"
        mine = np.zeros(_SIGNATURE_BYTES, np.uint8)
        raw = text.encode()[:_SIGNATURE_BYTES - 4]
        mine[4:4 + len(raw)] = np.frombuffer(raw, np.uint8)
        mine[:4] = np.frombuffer(np.uint32(zlib.crc32(text.encode())).tobytes(), np.uint8)
        table = np.empty((self.size, _SIGNATURE_BYTES), np.uint8)
        self.wait(self.signatures.Iallgather(mine, table), f"collective #{self.sequence} "
                                                           f"({what})")
        if not (table == table[0]).all():
            rows = "\n".join(
                f"  process {r}: " + bytes(table[r, 4:]).rstrip(b"\0").decode(errors="replace")
                for r in range(self.size))
            raise DistributedError(
                "the processes reached different collectives (a different program, or "
                "arrays of different shapes or dtypes on different processes):\n" + rows +
                "\nEvery process must run the same collectives, on arrays of the same shape "
                "and dtype, in the same order.")
        return self.sequence

    def allreduce(self, buf: np.ndarray, op: str, what: str = "allreduce") -> np.ndarray:
        """`op` ('sum', 'max', 'min') of `buf` over the processes, in place; returns buf."""
        buf = _contiguous(buf)
        with self.lock:
            n = self._check_order(f"{what} {op} {buf.dtype}{list(buf.shape)}")
            if self.size == 1:
                return buf
            allowed = _MPI_SUMMABLE if op == "sum" else _MPI_REDUCIBLE
            if buf.dtype in allowed:
                self.wait(self.comm.Iallreduce(self.MPI.IN_PLACE, buf, self.ops[op]),
                          f"collective #{n} ({what})")
                return buf
            table = self._allgather(buf, f"collective #{n} ({what})")
            out = table[0].copy()
            for row in table[1:]:
                _NUMPY_OPS[op](out, row, out=out)
            buf[...] = out
            return buf

    def _allgather(self, buf: np.ndarray, what: str) -> np.ndarray:
        table = np.empty((self.size,) + buf.shape, buf.dtype)
        raw_in = buf.reshape(-1).view(np.uint8)
        raw_out = table.reshape(-1).view(np.uint8)
        self.wait(self.comm.Iallgather(raw_in, raw_out), what)
        return table

    def allgather(self, buf, what: str = "allgather") -> np.ndarray:
        """Every process's `buf` (same shape and dtype everywhere), stacked on a new axis 0 in
        process order."""
        buf = _contiguous(buf)
        with self.lock:
            n = self._check_order(f"{what} {buf.dtype}{list(buf.shape)}")
            return self._allgather(buf, f"collective #{n} ({what})")

    def broadcast(self, buf: np.ndarray, root: int, what: str = "broadcast") -> np.ndarray:
        """Process `root`'s `buf` on every process, in place; returns buf."""
        buf = _contiguous(buf)
        with self.lock:
            n = self._check_order(f"{what} from {root} {buf.dtype}{list(buf.shape)}")
            raw = buf.reshape(-1).view(np.uint8)
            self.wait(self.comm.Ibcast(raw, root=root), f"collective #{n} ({what})")
            return buf

    def barrier(self, what: str = "barrier") -> None:
        with self.lock:
            n = self._check_order(what)
            self.wait(self.comm.Ibarrier(), f"collective #{n} ({what})")

    # --- the end --------------------------------------------------------------------------

    def close(self, timeout: float) -> bool:
        """Tells the peers this process is leaving and waits (up to `timeout` s, or until a
        peer is lost) for all of them to leave too; True when MPI may be finalized."""
        if self.broken:
            return False
        note = f"process {self.rank} exiting"
        for r in range(self.size):
            if r != self.rank:
                self._notices.append(self.control.isend(note, dest=r, tag=_EXIT_TAG))
        request = self.control.Ibarrier()
        start = time.monotonic()
        while not request.Test():
            time.sleep(0.002)
            if time.monotonic() - start > timeout or not all(
                    _alive(self.pids[r]) for r in self.neighbours):
                return False
        for r in range(self.size):      # notices nobody waited for
            status = self.MPI.Status()
            while self.control.Iprobe(source=r, tag=_EXIT_TAG, status=status):
                self.control.recv(source=r, tag=_EXIT_TAG)
        self.MPI.Request.Waitall(self._notices)
        for comm in (self.comm, self.signatures, self.control):
            comm.Free()
        return True


_engine: Engine | None = None
_shutdown_timeout = 300.0


def engine() -> Engine | None:
    """The running engine, or None (one process, distributed not initialized)."""
    return _engine


def start(heartbeat_timeout: float, shutdown_timeout: float) -> Engine:
    global _engine, _shutdown_timeout
    MPI = load_mpi()
    _engine = Engine(MPI, heartbeat_timeout)
    _shutdown_timeout = float(shutdown_timeout)
    atexit.register(_at_exit)
    return _engine


def stop() -> None:
    """Leaves the group: waits for every process to leave too, then MPI may finalize."""
    global _engine
    eng, _engine = _engine, None
    if eng is not None and not eng.close(_shutdown_timeout):
        eng.broken = True
        _engine = eng
        raise DistributedError(f"process {eng.rank} could not leave the group cleanly: a "
                               "peer was lost or did not leave in time.")


def _at_exit() -> None:
    eng = _engine
    if eng is None:
        return
    if eng.size > 1 and not eng.close(_shutdown_timeout):
        # MPI_Finalize would wait for the lost peer: leave without it
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)
