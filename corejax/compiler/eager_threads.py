"""Helper threads that run parts of eager kernels' loops (compiler/eager_kernels.run_parts).

A loop of a few hundred microseconds gains from a second core only if the helper starts at
once and the caller learns at once that it is done. A thread blocked on a lock or a condition
took 20 us to wake on the shared 2-core VM when its core was awake, 110 us when the core had
idled for 5 ms or more, and ThreadPoolExecutor's hand-off and completion each cost that. Here
work is posted by bumping a counter; a helper that has just finished waits for the next post
spinning for SPIN_SECONDS (polling the counter with an atomic load and x86's `pause`, in
compiled code that holds no GIL) before it sleeps on a condition, and the caller waits for the
helpers' last parts spinning the same way for up to WAIT_SECONDS. XLA's (Eigen's) threads spin
longer after their work; a helper spinning for a millisecond after every op slowed this
process's own next ops whenever another process held the other core (the machine
oversubscribed), hence a short spin.

Work is posted as a callable that takes parts until none is left (run_parts' claim counter):
the caller runs it too, so a helper that starts late finds the parts taken and returns, and
none is ever waited for before it started a part.
"""
from __future__ import annotations

import collections
import functools
import itertools
import os
import platform
import threading
import time

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

__all__ = ["run_parts", "start", "SPIN_SECONDS", "WAIT_SECONDS"]

SPIN_SECONDS = 50e-6    # a helper's spin for more work before it sleeps
WAIT_SECONDS = 2e-3     # the caller's spin for the helpers' last parts before it sleeps


@intrinsic
def _atomic_load(typingctx, addr):
    """The int64 at address `addr`, read with acquire ordering (never hoisted out of a loop)."""
    def codegen(context, builder, sig, args):
        p = builder.inttoptr(args[0], ir.IntType(64).as_pointer())
        return builder.load_atomic(p, "acquire", 8)
    return types.int64(types.int64), codegen


_X86 = platform.machine().lower() in ("x86_64", "amd64", "i386", "i686", "x86")


@intrinsic
def _pause(typingctx):
    """The spin-wait hint (x86's `pause`; nothing elsewhere)."""
    def codegen(context, builder, sig, args):
        if _X86:
            fn = builder.module.declare_intrinsic(
                "llvm.x86.sse2.pause", fnty=ir.FunctionType(ir.VoidType(), []))
            builder.call(fn, [])
        return context.get_dummy_value()
    return types.none(), codegen


@njit(nogil=True, cache=True)
def _spin_while_equal(addr, value, rounds):
    """Whether the int64 at `addr` differed from `value` within `rounds` polls."""
    for _ in range(rounds):
        if _atomic_load(addr) != value:
            return True
        _pause()
    return False


@njit(nogil=True, cache=True)
def _spin_until(addr, target, rounds):
    """Whether the int64 at `addr` reached `target` within `rounds` polls."""
    for _ in range(rounds):
        if _atomic_load(addr) >= target:
            return True
        _pause()
    return False


class _Pool:
    def __init__(self, n: int):
        self.seq = np.zeros(1, np.int64)        # bumped for every post
        self.addr = self.seq.ctypes.data
        self.jobs: collections.deque = collections.deque()
        self.cond = threading.Condition()
        self.sleeping = 0
        self.rounds = _rounds(SPIN_SECONDS)
        self.wait_rounds = _rounds(WAIT_SECONDS)
        self.n = n
        for i in range(n):
            threading.Thread(target=self._loop, daemon=True, name=f"corejax-eager-{i}").start()

    def post(self, job, copies: int) -> None:
        self.jobs.extend([job] * copies)
        self.seq[0] += 1
        if self.sleeping:
            with self.cond:
                self.cond.notify_all()

    def _loop(self) -> None:
        last = int(self.seq[0])
        while True:
            if not _spin_while_equal(self.addr, last, self.rounds):
                with self.cond:
                    self.sleeping += 1
                    while int(self.seq[0]) == last:
                        self.cond.wait()
                    self.sleeping -= 1
            last = int(self.seq[0])
            while True:
                try:
                    job = self.jobs.popleft()
                except IndexError:
                    break
                job()


@functools.lru_cache(maxsize=None)
def _poll_seconds() -> float:
    """The time of one poll of the spins (some 25 ns here)."""
    probe = np.zeros(1, np.int64)
    _spin_while_equal(probe.ctypes.data, 0, 10)
    n = 20000
    start = time.perf_counter()
    _spin_while_equal(probe.ctypes.data, 0, n)
    return max((time.perf_counter() - start) / n, 1e-9)


def _rounds(seconds: float) -> int:
    return max(100, int(seconds / _poll_seconds()))


_pool: _Pool | None = None
_pool_lock = threading.Lock()


def _get_pool(helpers: int) -> _Pool:
    global _pool
    if _pool is None:
        with _pool_lock:
            if _pool is None:
                _pool = _Pool(helpers)
    return _pool


def start(helpers: int) -> None:
    """Starts the `helpers` helper threads if they are not running yet."""
    _get_pool(helpers)


def _forget_pool() -> None:    # a forked child has none of its parent's threads
    global _pool
    _pool = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def run_parts(task, bounds, helpers: int) -> None:
    """task(lo, hi) over each part [bounds[i], bounds[i+1]), parts taken in turn by this thread
    and up to `helpers` helper threads; returns when all are done (re-raising the first
    exception)."""
    k = len(bounds) - 1
    if k == 1 or helpers < 1:
        for i in range(k):
            task(bounds[i], bounds[i + 1])
        return
    pool = _get_pool(helpers)
    claim = itertools.count()       # next() on it is atomic (the GIL)
    done = np.zeros(1, np.int64)    # parts finished (or skipped after a failure)
    finished = threading.Event()
    failed: list = []

    def work():
        while True:
            i = next(claim)
            if i >= k:
                return
            try:
                if not failed:
                    task(bounds[i], bounds[i + 1])
            except BaseException as e:  # noqa: B036 - re-raised by the caller
                failed.append(e)
            finally:
                done[0] += 1
                if done[0] == k:
                    finished.set()

    pool.post(work, min(pool.n, k - 1))
    work()
    if done[0] < k and not _spin_until(done.ctypes.data, k, pool.wait_rounds):
        finished.wait()
    if failed:
        raise failed[0]
