"""Helper threads that run parts of loops: eager kernels' and eager sums' splits
(compiler/eager_kernels), and jit's fused groups that run in parts (compiler/cpu.py).

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

That callable is Python, and Python needs the GIL: a helper leaving its spin had to take it to
start a part and again to report it done, some 30 us each on the shared machine while the
caller's own part ran. A kernel built with `native_source` has a second way: the caller posts
the job in a control block (`run_native`: the kernel's C-callable part runner, the part bounds,
its operands' addresses) from compiled code, and a spinning helper (`_serve`) calls that runner
through its address: parts are claimed with a compare-and-swap, counted done with an atomic
add, and neither side takes the GIL until the job is over.
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

from corejax._machine import own_jiffies, stat_jiffies

__all__ = ["run_parts", "run_native", "native_source", "start", "rest", "SPIN_SECONDS",
           "QUIET_SPIN_SECONDS", "WAIT_SECONDS"]

SPIN_SECONDS = 50e-6    # a helper's spin for more work before it sleeps
QUIET_SPIN_SECONDS = 2e-3   # the same while no other process uses a core (`_others_idle`)
WAIT_SECONDS = 2e-3     # the caller's spin for the helpers' last parts before it sleeps
WAKE_SECONDS = 200e-6   # a job from which sleeping helpers are woken to take part in it

_I64 = ir.IntType(64)


def _pointer(builder, addr):
    return builder.inttoptr(addr, _I64.as_pointer())


@intrinsic
def _atomic_load(typingctx, addr):
    """The int64 at address `addr`, read with acquire ordering (never hoisted out of a loop)."""
    def codegen(context, builder, sig, args):
        return builder.load_atomic(_pointer(builder, args[0]), "acquire", 8)
    return types.int64(types.int64), codegen


@intrinsic
def _atomic_store(typingctx, addr, value):
    """Stores the int64 `value` at address `addr` with release ordering (the writes before it
    are seen by a thread that reads it with acquire ordering)."""
    def codegen(context, builder, sig, args):
        builder.store_atomic(args[1], _pointer(builder, args[0]), "release", 8)
        return context.get_dummy_value()
    return types.none(types.int64, types.int64), codegen


@intrinsic
def _atomic_add(typingctx, addr, value):
    """Adds `value` to the int64 at address `addr` atomically; returns the old value."""
    def codegen(context, builder, sig, args):
        return builder.atomic_rmw("add", _pointer(builder, args[0]), args[1], "acq_rel")
    return types.int64(types.int64, types.int64), codegen


@intrinsic
def _compare_and_swap(typingctx, addr, expected, new):
    """Whether the int64 at address `addr` was `expected` and is now `new` (atomically)."""
    def codegen(context, builder, sig, args):
        pair = builder.cmpxchg(_pointer(builder, args[0]), args[1], args[2], "acq_rel",
                               "acquire")
        return builder.extract_value(pair, 1)
    return types.boolean(types.int64, types.int64, types.int64), codegen


@intrinsic
def voidptr(typingctx, addr):
    """The address `addr` as a void pointer (for numba.carray)."""
    def codegen(context, builder, sig, args):
        return builder.inttoptr(args[0], ir.IntType(8).as_pointer())
    return types.voidptr(types.int64), codegen


@intrinsic
def call_runner(typingctx, fn, ctrl, job):
    """Calls the C function at address `fn` as void fn(int64 ctrl, int64 job)."""
    def codegen(context, builder, sig, args):
        fnty = ir.FunctionType(ir.VoidType(), [_I64, _I64])
        builder.call(builder.inttoptr(args[0], fnty.as_pointer()), [args[1], args[2]])
        return context.get_dummy_value()
    return types.none(types.int64, types.int64, types.int64), codegen


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


# --- the control block ------------------------------------------------------------------------
#
# One int64 array per pool, never freed, words (in cache lines of their own where two threads
# write them):
#   SEQ    the id of the last job posted (a helper polls it)
#   RUNNER the address of that job's part runner, 0 for a Python job (Pool.jobs holds those)
#   REST   1: spinning helpers go to sleep now (`rest`); cleared by the next post
#   CLAIM  (job id & 0x7fffffff) << 32 | parts << 16 | the next part to claim
#   DONE   the parts finished
#   BOUNDS the k + 1 part bounds, then ARGS the operands' words (a runner's own layout).
# A poster writes BOUNDS and ARGS, then CLAIM, DONE, RUNNER and last SEQ (release). A helper
# that read an older job's runner fails its claim (CLAIM holds the newer job's id, written
# before RUNNER), and a claim succeeds only for a part not yet done, so a job's words are
# not rewritten while any thread reads them: the next job is posted after DONE reached k.

SEQ, RUNNER, REST, CLAIM, DONE, BOUNDS = 0, 1, 2, 8, 16, 24
LATE = 1 << 40          # a flag beside a job id: the helper woke to that job
MAX_PARTS = 64
ARGS = BOUNDS + MAX_PARTS + 8
CTRL_WORDS = ARGS + 1024


@njit(nogil=True, cache=True)
def claim_part(ctrl, job):
    """The index of a part of job `job` that this thread now runs, or -1 where none is left
    (or `job` is no longer the posted one). A helper that woke to the job (LATE set in `job`,
    for its first claim) does not start on the last part: the caller would otherwise wait
    for a part begun on a core that was idle, when it could run it itself."""
    addr = ctrl + CLAIM * 8
    tag = job & 0x7FFFFFFF
    keep = 2 if job & LATE else 1
    while True:
        w = _atomic_load(addr)
        i = w & 0xFFFF
        if (w >> 32) != tag or i + keep > ((w >> 16) & 0xFFFF):
            return -1
        if _compare_and_swap(addr, w, w + 1):
            return i


@njit(nogil=True, cache=True)
def finish_part(ctrl):
    """Counts a part done (after its writes)."""
    _atomic_add(ctrl + DONE * 8, 1)


@njit(nogil=True, cache=True)
def post_job(ctrl, job, runner, bounds):
    """Posts job `job` (its ARGS words already written): parts between `bounds`, run by the
    C function at address `runner`."""
    k = bounds.size - 1
    _atomic_store(ctrl + REST * 8, 0)
    for i in range(k + 1):
        _atomic_store(ctrl + (BOUNDS + i) * 8, bounds[i])
    _atomic_store(ctrl + CLAIM * 8, ((job & 0x7FFFFFFF) << 32) | (k << 16))
    _atomic_store(ctrl + DONE * 8, 0)
    _atomic_store(ctrl + RUNNER * 8, runner)
    _atomic_store(ctrl + SEQ * 8, job)


@njit(nogil=True, cache=True)
def _post_python(ctrl, job):
    _atomic_store(ctrl + REST * 8, 0)
    _atomic_store(ctrl + RUNNER * 8, 0)
    _atomic_store(ctrl + SEQ * 8, job)


@njit(nogil=True, cache=True)
def wait_job(ctrl, k, rounds):
    """Whether the job's k parts were all done within `rounds` polls."""
    return _spin_until(ctrl + DONE * 8, k, rounds)


@njit(nogil=True, cache=True)
def _serve(ctrl, last, rounds, woken):
    """A helper's loop: runs the parts it can claim of each native job posted after job
    `last`, spinning for the next until `rounds` polls after the last job ended (not after
    its own last part: the poster, still running its parts, posts again soon after); returns
    the id of a Python job posted (>= 0), or -1 - the last job's id after a spin without one.
    `woken`: it comes from sleep, and a job it finds at once is one it was woken for (it
    joins it LATE)."""
    polls = 0
    late = LATE if woken else 0
    while polls < rounds:
        s = _atomic_load(ctrl + SEQ * 8)
        if s == last:
            _pause()
            late = 0
            w = _atomic_load(ctrl + CLAIM * 8)
            if (w >> 32) == (last & 0x7FFFFFFF) and \
                    _atomic_load(ctrl + DONE * 8) < ((w >> 16) & 0xFFFF):
                continue    # (the job runs on: the spin counts from its end)
            if _atomic_load(ctrl + REST * 8):
                break       # (told to rest: another thread pool needs the cores)
            polls += 1
            continue
        last = s
        runner = _atomic_load(ctrl + RUNNER * 8)
        if runner == 0:
            return s
        call_runner(runner, ctrl, s | late)
        late = 0
        polls = 0
    return -1 - last


def native_source(params) -> str:
    """Source to append to a kernel module defining `claims` (a C-callable part runner for
    the job posted in a control block) and `run(ctrl, job, runner, bounds, rounds, *operands)`
    (writes the operands' words, posts the job, runs parts on the calling thread, returns
    whether all were done within `rounds` polls). `params` describes `kernel`'s arguments in
    order: "lo" / "hi" (the part's bounds), "count" (hi - lo), ("int", name) (an operand passed
    to run), ("array", name, dtype, sliced) (an array operand, passed whole, or with `sliced`
    from element lo, hi - lo long: a flat loop's part); operands' names must not begin with
    an underscore (run's own names do). None where the operands need more words than a
    control block holds."""
    words, lines, call, operands = 0, [], [], []
    for p in params:
        if isinstance(p, tuple) and p[1].startswith("_"):
            raise ValueError(f"operand name {p[1]!r}: names beginning with '_' are run's own")
        if p in ("lo", "hi"):
            call.append(p)
        elif p == "count":
            call.append("hi - lo")
        elif p[0] == "int":
            operands.append(p[1])
            lines.append(f"    _words[{ARGS + words}] = {p[1]}")
            call.append(f"c[{ARGS + words}]")
            words += 1
        else:
            _, name, dt, sliced = p
            dt = np.dtype(dt)
            operands.append(name)
            lines += [f"    _words[{ARGS + words}] = {name}.ctypes.data",
                      f"    _words[{ARGS + words + 1}] = {name}.size"]
            if sliced:
                call.append(f"carray(voidptr(c[{ARGS + words}] + lo * {dt.itemsize}), hi - lo, "
                            f"np.{dt.name})")
            else:
                call.append(f"carray(voidptr(c[{ARGS + words}]), c[{ARGS + words + 1}], "
                            f"np.{dt.name})")
            words += 2
    if words > CTRL_WORDS - ARGS:
        return None
    return "\n".join([
        "", "", "from numba import carray, cfunc, types",
        "from corejax.compiler.eager_threads import (call_runner, claim_part, finish_part, "
        "post_job, voidptr, wait_job)", "", "",
        "def _claims(ctrl, job):",
        f"    c = carray(voidptr(ctrl), {CTRL_WORDS}, np.int64)",
        "    while True:",
        "        i = claim_part(ctrl, job)",
        "        if i < 0:",
        "            return",
        f"        lo = c[{BOUNDS} + i]",
        f"        hi = c[{BOUNDS} + i + 1]",
        f"        kernel({', '.join(call)})",
        "        finish_part(ctrl)",
        f"        job = job & {LATE - 1}", "", "",
        'claims = cfunc(types.void(types.int64, types.int64), error_model="numpy", '
        "cache=True)(_claims)",
        "", "",
        "@njit(nogil=True, cache=True)",
        f"def run(_ctrl, _job, _runner, _bounds, _rounds{''.join(', ' + o for o in operands)}):",
        f"    _words = carray(voidptr(_ctrl), {CTRL_WORDS}, np.int64)",
        *lines,
        "    post_job(_ctrl, _job, _runner, _bounds)",
        "    call_runner(_runner, _ctrl, _job)",
        "    return wait_job(_ctrl, _bounds.size - 1, _rounds)",
    ]) + "\n"


class _Pool:
    def __init__(self, n: int):
        self.ctrl = np.zeros(CTRL_WORDS, np.int64)
        self.addr = self.ctrl.ctypes.data
        self.ids = itertools.count(1)           # job ids (next() is atomic: the GIL)
        self.jobs: collections.deque = collections.deque()
        self.cond = threading.Condition()
        self.native = threading.Lock()          # held by the thread whose native job runs
        self.sleeping = 0
        self.wakes = 0
        self.poster_cpu = -1
        _allowed_cpus()                         # (read here: the helpers change their own)
        self.rounds = _rounds(SPIN_SECONDS)
        self.quiet_rounds = _rounds(QUIET_SPIN_SECONDS)
        self.wait_rounds = _rounds(WAIT_SECONDS)
        self.n = n
        _serve(self.addr, 0, 0, False)  # its code loaded here, not by helpers as work waits
        for i in range(n):
            threading.Thread(target=self._loop, daemon=True, name=f"corejax-eager-{i}").start()

    def post(self, job, copies: int) -> None:
        self.jobs.extend([job] * copies)
        _post_python(self.addr, next(self.ids))
        if self.sleeping:
            self.wake()

    def wake(self) -> None:
        """Wakes the sleeping helpers into their spin (work is about to be posted)."""
        self.poster_cpu = _current_cpu()
        with self.cond:
            self.wakes += 1
            self.cond.notify_all()

    def _leave_poster_cpu(self) -> None:
        """A helper just woken by a poster: off the poster's CPU. Linux places a thread woken
        through a futex on (or beside) its waker's CPU when the thread's own was idle long
        enough, and the two then take turns on one core (tanh over 1M floats: 780 us split
        against 680 whole, where a helper on the other core makes it 360). Its affinity
        excludes that CPU until a later wake finds it on the poster's CPU again."""
        cpu = self.poster_cpu
        if cpu < 0 or _current_cpu() != cpu:
            return
        others = _allowed_cpus() - {cpu}
        if others:
            try:
                os.sched_setaffinity(0, others)     # (0: the calling thread, on Linux)
            except OSError:
                pass

    def _loop(self) -> None:
        last = int(self.ctrl[SEQ])
        woken = False
        while True:
            got = _serve(self.addr, last,
                         self.quiet_rounds if _others_idle.now(self.n + 1) else self.rounds, woken)
            woken = False
            if got < 0:
                last = -1 - got
                with self.cond:
                    self.sleeping += 1
                    seen = self.wakes
                    while int(self.ctrl[SEQ]) == last and self.wakes == seen:
                        self.cond.wait()
                    self.sleeping -= 1
                woken = True
                self._leave_poster_cpu()
                continue
            last = got
            while True:
                try:
                    job = self.jobs.popleft()
                except IndexError:
                    break
                job()


class _OthersIdle:
    """Whether the other processes on the machine left this process's threads (the caller and
    its helpers) their cores, less QUIET_SLACK of one, over the last PERIOD seconds or more:
    the machine's busy time (/proc/stat) less this process's own (/proc/self/stat, its
    helpers' spins included). While they do, a helper's spin after its work takes time from
    no one, and it spins QUIET_SPIN_SECONDS: the next job (the next product of a training
    step, 0.1-0.5 ms away) finds it awake instead of paying its wake-up, which on the shared
    VM can outlast a whole block of a product. While another process wants the cores, a
    spin would take time from it or from this process's own thread, and the helpers spin
    SPIN_SECONDS. Linux only; elsewhere never idle."""

    PERIOD = 0.05
    QUIET_SLACK = 0.25

    def __init__(self):
        self._last = None           # (time, machine busy jiffies, own jiffies, all jiffies)
        self._idle = False
        self._ok = os.path.exists("/proc/stat") and os.path.exists("/proc/self/stat")

    @staticmethod
    def _sample():
        """(machine busy, own, all) jiffies."""
        idle, total = stat_jiffies()
        return total - idle, own_jiffies(), total

    def now(self, ours: int) -> bool:
        """(`ours`: this process's threads, the caller and its helpers.)"""
        if not self._ok:
            return False
        t = time.perf_counter()
        last = self._last
        if last is not None and t - last[0] < self.PERIOD:
            return self._idle
        try:
            busy, own, total = self._sample()
        except (OSError, ValueError, IndexError):
            self._ok = False
            return False
        if last is not None and total > last[3]:
            machine = max(1, os.cpu_count() or 1)
            others = max(0, (busy - last[1]) - (own - last[2])) / (total - last[3]) * machine
            self._idle = machine - others >= ours - self.QUIET_SLACK
        self._last = (t, busy, own, total)
        return self._idle


_others_idle = _OthersIdle()


@functools.lru_cache(maxsize=None)
def _sched_getcpu():
    """glibc's sched_getcpu, or None (another C library, another OS)."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    import ctypes
    try:
        fn = ctypes.CDLL(None).sched_getcpu
    except (AttributeError, OSError):
        return None
    fn.restype, fn.argtypes = ctypes.c_int, []
    return fn


def _current_cpu() -> int:
    """The CPU the calling thread runs on, or -1 where that cannot be asked."""
    fn = _sched_getcpu()
    return fn() if fn is not None else -1


@functools.lru_cache(maxsize=None)
def _allowed_cpus() -> frozenset:
    """The CPUs this process may run on (when the pool starts)."""
    return frozenset(os.sched_getaffinity(0))


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


@njit(nogil=True, cache=True)
def _set_rest(ctrl):
    _atomic_store(ctrl + REST * 8, 1)


def rest() -> None:
    """Sends spinning helpers to sleep now, not at the end of their spin: the caller is about
    to run work on threads of another pool (OpenBLAS's), which a spinning helper would share
    a core with (a 5 ms threaded product took 6.4-6.8 ms beside a helper's spin)."""
    if _pool is not None and _pool.sleeping < _pool.n:
        _set_rest(_pool.addr)


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


def helpers_awake() -> bool:
    """Whether the helper threads are running or spinning (none asleep): a split call's time
    then says what splitting gains; one that had to wake them says how long they slept."""
    return _pool is not None and _pool.sleeping == 0


def run_native(run, runner: int, bounds: np.ndarray, operands, helpers: int,
               seconds: float = 0.0) -> bool:
    """Runs a job of a kernel built with `native_source` (`run` its entry, `runner` the address
    of its `claims`) over the parts between `bounds` (int64) on this thread and up to `helpers`
    helper threads; returns False, running nothing, where another thread's native job holds
    the helpers, or where they sleep and the job (`seconds` on one thread, as predicted) is
    shorter than WAKE_SECONDS (the caller then runs the kernel itself). A woken helper needs
    the GIL on its way back to its spin (30-100 us after the wake here, on a core that was
    idle), and a short job's caller then waits for it at its own return: measured, the
    pairwise sum of 1M float32 (62 us) split after a sleep took 123 us against 88 whole,
    exp (373 us) 249 against 380, tanh (620 us) 373 against 631."""
    if bounds.size - 1 > MAX_PARTS:     # (more than a control block's bound words)
        return False
    pool = _get_pool(helpers)
    if not pool.native.acquire(blocking=False):
        return False
    try:
        if pool.sleeping:
            if seconds < WAKE_SECONDS:
                return False
            pool.wake()
        k = bounds.size - 1
        if not run(pool.addr, next(pool.ids), runner, bounds, pool.wait_rounds, *operands):
            # a helper holds a part and lost its core: poll, letting other threads run
            while not _spin_until(pool.addr + DONE * 8, k, 1000):
                time.sleep(20e-6)
    finally:
        pool.native.release()
    return True
