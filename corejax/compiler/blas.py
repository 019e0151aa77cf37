"""GEMMs of the CPU backend: OpenBLAS's own threads or one thread, chosen per call site, with
the same bits either way.

OpenBLAS parallelizes a GEMM well (on the 2-core test machine its two threads beat two
single-threaded calls over halves of the output by 10-15%: they share the packed panels), but
its workers spin, and when another process holds a core a threaded call can take three times
as long as a single-threaded one. So each dot_general call site times both and runs the faster
one, trying the other now and then (`GemmSite`).

Switching must not change results: the same seed and config give bitwise-identical parameters
whatever the load was. OpenBLAS's threads split the output, not the reduction, but its
threaded and serial drivers cut a long reduction into blocks differently (one block below
the kernel's GEMM_Q, about 450 for the float32 kernel picked on the test machine), and the
sums round differently. The plan of a call site (`Plan`) is therefore found by testing, once
per shape, layout and dtype, on random operands: how to cut the reduction into chunks on
OpenBLAS's threads and on one thread so that both give identical bits. The chunks are
separate BLAS calls summed in a fixed order. The whole reduction in one call on the threads
is preferred, with as few chunks on one thread as match it (a 784-long reduction on the test
machine: two halves on one thread add up as the threaded driver's blocks do); then the same
chunks on both. A shape for which no plan passes, or too big to test cheaply, runs with
OpenBLAS's threads only, as NumPy would.
"""
from __future__ import annotations

import contextlib
import ctypes
import functools
import glob
import os
import threading
import time
from typing import NamedTuple

import numpy as np

__all__ = ["matmul", "batched_matmul", "accumulate", "image_blocks", "GemmSite", "Plan",
           "gemm_symbol", "plan_for", "devices_at_once"]

# GEMMs below this many flops run on one thread: waking OpenBLAS's workers costs more there.
MIN_FLOPS = 1 << 22
# The bit-equality test runs the product twice; bigger products skip it (and adaptation).
MAX_TEST_FLOPS = 1 << 31
MAX_CHUNKS = 8
MIN_CHUNK = 32


def _openblas_symbol(prefixes, name, suffixes=("64_", "")):
    """(function, suffix) of the first `prefix + name + suffix` that the OpenBLAS NumPy's
    matmul calls exports (a 64_ suffix marks the ILP64 interface), or None."""
    root = os.path.dirname(np.__path__[0])
    paths = glob.glob(os.path.join(root, "numpy.libs", "*openblas*")) + \
        glob.glob(os.path.join(np.__path__[0], ".dylibs", "*openblas*"))
    if not paths:
        try:
            with open("/proc/self/maps") as f:
                paths = sorted({line.split()[-1] for line in f if "openblas" in line})
        except OSError:
            paths = []
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix in prefixes:
            for suffix in suffixes:
                fn = getattr(lib, f"{prefix}{name}{suffix}", None)
                if fn is not None:
                    return fn, suffix
    return None


@functools.lru_cache(maxsize=None)
def _cblas_address(dtype, name):
    """(address, ilp64) of cblas_s<name> / cblas_d<name> in the OpenBLAS NumPy's matmul calls,
    or None (another BLAS, another dtype)."""
    dt = np.dtype(dtype)
    if dt not in (np.float32, np.float64):
        return None
    found = _openblas_symbol(("scipy_cblas_", "cblas_"), ("s" if dt == np.float32 else "d") +
                             name)
    if found is None:
        return None
    return ctypes.cast(found[0], ctypes.c_void_p).value, found[1] == "64_"


def gemm_symbol(dtype):
    """(address, ilp64) of the cblas_sgemm / cblas_dgemm in the OpenBLAS NumPy's matmul
    calls, for compiled code to call directly, or None (another BLAS, another dtype)."""
    return _cblas_address(np.dtype(dtype), "gemm")


def gemv_symbol(dtype):
    """(address, ilp64) of the cblas_sgemv / cblas_dgemv NumPy's matmul calls for vector
    products, or None."""
    return _cblas_address(np.dtype(dtype), "gemv")


def syrk_symbol(dtype):
    """(address, ilp64) of the cblas_ssyrk / cblas_dsyrk NumPy's matmul calls for x @ x.T,
    or None."""
    return _cblas_address(np.dtype(dtype), "syrk")


class Plan(NamedTuple):
    """How `matmul` cuts the reduction of a product into chunks (k bounds, one BLAS call
    each, summed in order) on OpenBLAS's threads and on one thread: both give the same bits."""
    threads: tuple
    one: tuple

    @classmethod
    def whole(cls, k):
        """The whole reduction in one call, on the threads as on one thread."""
        return cls((0, k), (0, k))


def _small(m, k, n) -> bool:
    """Whether an (m, k) @ (k, n) product runs unchunked on one thread (MIN_FLOPS)."""
    return 2 * m * n * k < MIN_FLOPS


def plan_for(m, k, n, a_transposed, b_transposed, dtype, any_size=False):
    """The `Plan` `matmul` uses for such a product (see `GemmSite`), or () where OpenBLAS's
    threads run it unchunked, or None for a small product (unchunked: on one thread where
    that has the threaded bits, `one_thread_keeps_bits`, else on the threads). Compiled
    loops, which call BLAS on OpenBLAS's threads, cut the reduction as its `threads` chunks
    say, for the same bits."""
    dt = np.dtype(dtype)
    if _adaptive is None or dt.char not in "fdFD":
        return Plan.whole(k)
    if _small(m, k, n) and not any_size:
        return None
    with _adaptive.lock:
        return _adaptive.plan(m, k, n, a_transposed, b_transposed, dt)


def _find_threads_api():
    """(get_num_threads, set_num_threads) of the OpenBLAS NumPy's matmul calls, or None."""
    for prefix in ("scipy_openblas_", "openblas_"):
        get = _openblas_symbol((prefix,), "get_num_threads")
        if get is not None:
            set_ = _openblas_symbol((prefix,), "set_num_threads", (get[1],))
            if set_ is not None:
                return get[0], set_[0]
    return None


class GemmSite:
    """One dot_general call site: its `Plan` and which thread count runs it.

    `seconds[mode]` (mode 0: OpenBLAS's threads, 1: one thread) is the fastest recent time,
    raised a quarter of the way towards each slower call, so that one slow call does not flip
    the choice but a sustained change does within a few calls. The mode not chosen is tried
    again after `interval` calls; the interval doubles each time the trial confirms the choice,
    and is at least 32 times the ratio of the two modes' times (a trial of OpenBLAS's threads
    while another process holds a core can take ten times the single-threaded call), up to
    MAX_INTERVAL; it falls back to MIN_INTERVAL when the choice flips. Under steady
    conditions the trials cost well under 1% of the call site's time."""

    __slots__ = ("plan", "seconds", "calls", "next_trial", "interval", "partial",
                 "spare_seen", "spare_trials", "spare_trial")
    MIN_INTERVAL = 8
    MAX_INTERVAL = 1024

    def __init__(self):
        self.plan = None            # None: not planned yet; () : threads only; else a Plan
        self.seconds = [0.0, 0.0]   # 0.0: not measured yet
        self.calls = 0
        self.next_trial = 0
        self.interval = self.MIN_INTERVAL
        self.partial = None         # scratch product for chunks after the first
        self.spare_seen = 0         # the last spare period of the machine's it was told of
        self.spare_trials = True    # whether a spare core triggers a trial of the threads
        self.spare_trial = False    # whether the running call is such a trial

    def choice(self) -> int:
        return 0 if self.seconds[0] <= self.seconds[1] else 1

    def mode(self) -> int:
        """The mode for the next call: an unmeasured one, a trial, or the faster. Running on
        one thread because another process held a core, a site tries the threads again as
        soon as the machine has had a core to spare since (`_SpareCores`): a contention that
        ended must not keep it at half speed until its next scheduled trial."""
        if self.seconds[0] == 0.0:
            return 0
        if self.seconds[1] == 0.0:
            return 1
        best = self.choice()
        if self.calls >= self.next_trial:
            return 1 - best
        if best == 1 and self.spare_trials and _spare_cores.seen(self):
            self.spare_trial = True
            return 0
        return best

    def record(self, mode: int, seconds: float):
        both = self.seconds[0] > 0.0 and self.seconds[1] > 0.0
        before = self.choice()
        old = self.seconds[mode]
        self.seconds[mode] = seconds if old == 0.0 or seconds < old else \
            old + 0.25 * (seconds - old)
        self.calls += 1
        spare_trial, self.spare_trial = self.spare_trial, False
        if not both:
            self.next_trial = self.calls + self.interval
        elif self.choice() != before:
            # the other mode's time may be stale: measure it again soon
            self.interval = self.MIN_INTERVAL
            self.next_trial = self.calls + self.interval
            # one thread became the faster: contention, whose end a spare core tells
            self.spare_trials = self.choice() == 1
        elif spare_trial:
            # one thread is the faster even with a core to spare: no such trials until the
            # choice changes again (the scheduled ones go on)
            self.spare_trials = False
        elif mode != before:
            # a trial that confirmed the choice; one that cost r times the chosen mode's
            # time waits at least 32 r calls
            ratio = self.seconds[mode] / self.seconds[before]
            self.interval = int(min(max(2 * self.interval, 32 * ratio), self.MAX_INTERVAL))
            self.next_trial = self.calls + self.interval


class _SpareCores:
    """Whether the machine has had at least half a core idle on average over the last
    PERIOD seconds or more, from the idle time in /proc/stat (Linux; elsewhere never, and
    single-threaded sites then wait for their scheduled trials). Each spare period is
    reported once to each site that asks (`GemmSite.mode`: a site on one thread since a
    contention), so a site runs one trial of the threads per period at most; while other
    processes keep every core busy, none is reported and no trial is run."""

    PERIOD = 0.05
    MIN_SPARE = 0.5

    def __init__(self, path="/proc/stat"):
        self._path = path
        self._last = None           # (time, idle jiffies, all jiffies)
        self._epoch = 0             # counts the spare periods seen
        self._cpus = 0
        try:
            with open(path) as f:
                self._cpus = sum(1 for line in f if line.startswith("cpu") and
                                 line[3:4].isdigit())
        except OSError:
            self._path = None

    def _sample(self):
        with open(self._path) as f:
            fields = f.readline().split()
        values = [int(v) for v in fields[1:]]
        return values[3] + values[4], sum(values[:8])   # idle + iowait; all but guests

    def seen(self, site) -> bool:
        if self._path is None:
            return False
        now = time.perf_counter()
        last = self._last
        if last is None or now - last[0] >= self.PERIOD:
            try:
                idle, total = self._sample()
            except (OSError, ValueError, IndexError):
                self._path = None
                return False
            if last is not None and total > last[2] and \
                    (idle - last[1]) / (total - last[2]) * self._cpus >= self.MIN_SPARE:
                self._epoch += 1
            self._last = (now, idle, total)
        if site.spare_seen == self._epoch:
            return False
        site.spare_seen = self._epoch
        return True


_spare_cores = _SpareCores()


def _random_of(dtype):
    """random(shape): standard normal values of `dtype` (complex parts both random), from one
    seeded generator: the operands of the bit-equality tests."""
    rng = np.random.default_rng(0)

    def random(shape):
        x = rng.standard_normal(shape)
        if dtype.kind == "c":
            x = x + 1j * rng.standard_normal(shape)
        return x.astype(dtype)
    return random


def _operands(random, m, k, n, a_transposed, b_transposed):
    """Random (m, k) and (k, n) operands laid out as BLAS will read the real ones (a transposed
    C array where the flag says so)."""
    a = random((k, m)).T if a_transposed else random((m, k))
    b = random((n, k)).T if b_transposed else random((k, n))
    return a, b


class _AdaptiveBlas:
    def __init__(self, threads_api):
        self._get, self._set = threads_api
        self.threads = int(self._get())
        self.lock = threading.Lock()
        self._plans: dict = {}
        self._blocks: dict = {}    # blocks_agree's answers
        self.sharing = 0     # device programs running at once (devices_at_once)

    def _product(self, a, b, out, chunks, partial):
        """out = a @ b as BLAS calls over the reduction chunks, summed left to right. Where
        NumPy's matmul calls gemm (a matrix product of distinct operands: not gemv, not
        x @ x.T's syrk) and the BLAS is callable directly, each chunk after the first is
        added by the GEMM itself (beta = 1) instead of through `partial` and an addition."""
        if len(chunks) == 2:
            np.matmul(a, b, out=out)
            return
        np.matmul(a[:, :chunks[1]], b[:chunks[1]], out=out)
        if gemm_accumulates(out.shape[0], out.shape[1], out.dtype) and not _syrk(a, b):
            _accumulate(a, b, out, chunks[1:], 1.0)
            return
        for lo, hi in zip(chunks[1:-1], chunks[2:]):
            np.matmul(a[:, lo:hi], b[lo:hi], out=partial)
            np.add(out, partial, out=out)

    def plan(self, m, k, n, a_transposed, b_transposed, dtype, accumulate=False):
        """The `Plan` of an (m, k) @ (k, n) product, or () (see the module docstring), tested
        once per shape, layout, dtype and kind (`accumulate`: c += alpha a @ b, one beta=1
        call per chunk); the caller holds `lock`."""
        dt = np.dtype(dtype)
        key = (m, k, n, a_transposed, b_transposed, dt, accumulate)
        found = self._plans.get(key)
        if found is not None:
            return found
        found = ()
        if 2 * m * n * k <= MAX_TEST_FLOPS:
            random = _random_of(dt)
            ta, tb = _operands(random, m, k, n, a_transposed, b_transposed)
            partial = np.empty((m, n), dt)
            c = random((m, n)) if accumulate else None

            def run(bounds):
                if accumulate:
                    out = c.copy()
                    _accumulate(ta, tb, out, bounds, -0.5)
                else:
                    out = np.empty((m, n), dt)
                    self._product(ta, tb, out, bounds, partial)
                return out

            splits = [tuple(k * i // parts for i in range(parts + 1))
                      for parts in range(1, MAX_CHUNKS + 1)
                      if parts == 1 or k // parts >= MIN_CHUNK]
            found = self.first_agreeing(run, splits)
        self._plans[key] = found
        return found

    def first_agreeing(self, run, splits):
        """The first `Plan` over `splits` (k bounds, fewest chunks first) for which run(bounds)
        (a fresh result each call) has the same bits on OpenBLAS's threads as on one thread:
        the whole reduction on the threads with as few chunks on one thread as match it, else
        the same chunks on both; () where none does. The caller holds `lock`."""
        whole = self.on_threads(self.threads, lambda: run(splits[0]))
        for bounds in splits:
            if np.array_equal(self.on_threads(1, lambda: run(bounds)), whole, equal_nan=True):
                return Plan(splits[0], bounds)
        for bounds in splits[1:]:
            if self.agrees(run, Plan(bounds, bounds)):
                return Plan(bounds, bounds)
        return ()

    def on_threads(self, threads, run):
        """run() with OpenBLAS on `threads` threads; the caller holds `lock`."""
        try:
            self._set(threads)
            return run()
        finally:
            self._set(self.threads)

    def agrees(self, run, plan: Plan) -> bool:
        """Whether run(bounds) (a fresh result each call) has the same bits over the plan's
        `one` chunks on one OpenBLAS thread as over its `threads` chunks on all; the caller
        holds `lock`."""
        one = self.on_threads(1, lambda: run(plan.one))
        return bool(np.array_equal(one, self.on_threads(self.threads, lambda: run(plan.threads)),
                                   equal_nan=True))

    def blocks_agree(self, m, k, n, block, a_transposed, b_transposed, dtype) -> bool:
        """Whether an (m, k) @ (k, n) product made `block` rows at a time, each block one
        call on one OpenBLAS thread, has the bits of the whole product on OpenBLAS's threads
        (np.matmul, as the eager impl runs it), on random operands; tested once per shape,
        layout and dtype (a bigger product than MAX_TEST_FLOPS is not tested: False). The
        caller holds `lock`."""
        dt = np.dtype(dtype)
        key = (m, k, n, block, a_transposed, b_transposed, dt)
        same = self._blocks.get(key)
        if same is None:
            same = False
            if 2 * m * n * k <= MAX_TEST_FLOPS:
                a, b = _operands(_random_of(dt), m, k, n, a_transposed, b_transposed)
                whole = self.on_threads(self.threads, lambda: np.matmul(a, b))

                def blocked():
                    out = np.empty((m, n), dt)
                    for lo in range(0, m, block):
                        np.matmul(a[lo:lo + block], b, out=out[lo:lo + block])
                    return out
                same = bool(np.array_equal(self.on_threads(1, blocked), whole, equal_nan=True))
            self._blocks[key] = same
        return same

    def run(self, a, b, out, site: GemmSite, alpha=None):
        """a @ b into out (`alpha` None), or out += alpha * (a @ b), as `site` has learned to
        run it: a small product unchunked, on one thread where that has the threaded bits
        (`one_thread_keeps_bits`), else on the threads; a larger one on OpenBLAS's threads or one
        thread, whichever the site measures faster, over the chunks its plan gives that mode
        (unchunked on the threads where no plan passed). Concurrent callers take turns:
        OpenBLAS's thread count is process-wide, and is set back after a call on one thread.
        (One flat method, no closures: it runs between GEMMs that leave every cache cold.)"""
        m, n = out.shape
        k = a.shape[1]
        if self.sharing:
            self._run_shared(a, b, out, site, alpha, m, k, n)
            return
        small = _small(m, k, n)
        if small and site.plan is None:
            site.plan = Plan.whole(k) if one_thread_keeps_bits(
                m, k, n, _transposed(a), _transposed(b), out.dtype, _syrk(a, b),
                alpha is not None) else ()
        with self.lock:
            timed = False
            if small:
                # one thread where that gives the threaded call's bits (eager np.matmul's);
                # else OpenBLAS's threads, as eagerly
                chunks, mode = (0, k), (1 if site.plan else None)
            else:
                plan = site.plan
                if plan is None:
                    plan = site.plan = self.plan(m, k, n, _transposed(a), _transposed(b),
                                                 out.dtype, alpha is not None)
                if plan:
                    mode = site.mode()
                    chunks, timed = plan[mode], True
                else:
                    chunks, mode = (0, k), None
            if mode == 1:
                self._set(1)
            try:
                start = time.perf_counter()
                if alpha is not None:
                    _accumulate(a, b, out, chunks, alpha)
                else:
                    if len(chunks) > 2 and site.partial is None:
                        site.partial = np.empty_like(out)
                    self._product(a, b, out, chunks, site.partial)
                if timed:
                    site.record(mode, time.perf_counter() - start)
            finally:
                if mode == 1:
                    self._set(self.threads)


    def _run_shared(self, a, b, out, site, alpha, m, k, n):
        """run() while several devices' programs run at once (devices_at_once): OpenBLAS is
        on one thread, so each call runs on its caller's thread over the plan's one-thread
        chunks (the bits of the threaded call), and the devices' products overlap."""
        if _small(m, k, n):
            chunks = (0, k)
        else:
            if site.plan is None:
                with self.lock:
                    if site.plan is None:
                        site.plan = self.plan(m, k, n, _transposed(a), _transposed(b),
                                              out.dtype, alpha is not None)
            chunks = site.plan[1] if site.plan else (0, k)
        if alpha is not None:
            _accumulate(a, b, out, chunks, alpha)
        else:
            self._product(a, b, out, chunks, np.empty_like(out) if len(chunks) > 2 else None)

    def run_batched(self, a, b, out, site: GemmSite):
        """out = a @ b for C (batch, m, k) @ (batch, k, n) operands: np.matmul, one gemm per
        batch element, on OpenBLAS's threads or on one thread, whichever `site` measures
        faster, where one element's whole product has the same bits on both (its plan's
        one-thread chunks are the whole reduction); else on the threads, as NumPy runs it.
        (A batch of small products on the threads wakes the workers once per element: while
        another process holds a core, each wake-up can cost milliseconds.)"""
        m, k = a.shape[1], a.shape[2]
        n = b.shape[2]
        with self.lock:
            if site.plan is None:
                whole = Plan.whole(k)
                site.plan = whole if self.plan(m, k, n, False, False, out.dtype) == whole \
                    else ()
            # (a batch of small products keeps OpenBLAS's workers awake from one element to
            # the next: unlike one small product, it can gain from them; measured, as `run`)
            mode = site.mode() if site.plan else None
            timed = mode is not None
            if mode == 1:
                self._set(1)
            try:
                start = time.perf_counter()
                np.matmul(a, b, out=out)
                if timed:
                    site.record(mode, time.perf_counter() - start)
            finally:
                if mode == 1:
                    self._set(self.threads)

    def share_cores(self, entering: bool):
        with self.lock:
            self.sharing += 1 if entering else -1
            self._set(1 if self.sharing else self.threads)


@contextlib.contextmanager
def devices_at_once(n: int):
    """A context in which `n` devices' programs run concurrently on this process's cores (pmap,
    shard_map): every GEMM runs on its device's thread alone (OpenBLAS on one thread; its own
    threads would take turns between the devices and spin), with the same bits as when the
    program runs alone."""
    if _adaptive is None or n < 2:
        yield
        return
    _adaptive.share_cores(True)
    try:
        yield
    finally:
        _adaptive.share_cores(False)


def _accumulate(a, b, out, chunks, alpha):
    """out += alpha * (a @ b) as one cblas_?gemm call (beta = 1) per reduction chunk, in order:
    a (m, k) and b (k, n) as BLAS reads them in place (C arrays or transposed C arrays), out a
    C-contiguous (m, n) array."""
    ta, tb = _transposed(a), _transposed(b)
    m, n = out.shape
    dt = out.dtype
    gemm_chunks, addr, ilp64, one = _gemm_chunks(dt)
    gemm_chunks(addr, ilp64, ta, tb, m, n, type(one)(alpha), (a.T if ta else a).reshape(-1),
                m if ta else a.shape[1], (b.T if tb else b).reshape(-1),
                b.shape[0] if tb else n, one, out.reshape(-1), n, _bounds(chunks))


@functools.lru_cache(maxsize=None)
def _gemm_chunks(dtype):
    """kernel_lib.gemm_chunks, the (address, ilp64) of the BLAS gemm it calls for dtype, and
    a 1 of dtype."""
    from corejax.compiler.kernel_lib import gemm_chunks
    return (gemm_chunks,) + gemm_symbol(dtype) + (dtype.type(1),)


@functools.lru_cache(maxsize=1024)
def _bounds(chunks):
    """The chunk bounds as the int64 array kernel_lib.gemm_chunks takes (read-only, shared)."""
    bounds = np.array(chunks, np.int64)
    bounds.flags.writeable = False
    return bounds


def gemm_accumulates(m, n, dtype) -> bool:
    """Whether the reduction chunks of an (m, k) @ (k, n) product of distinct operands after
    the first are accumulated by gemm calls with beta = 1 (see `_AdaptiveBlas._product`):
    compiled loops split such a product the same way."""
    return m > 1 and n > 1 and np.dtype(dtype).char in "fd" and gemm_symbol(dtype) is not None


def _syrk(a, b) -> bool:
    """Whether NumPy's matmul computes a @ b with syrk: x @ x.T, one buffer read once
    transposed and once not."""
    return a.shape[0] == b.shape[1] and _transposed(a) != _transposed(b) and \
        a.__array_interface__["data"][0] == b.__array_interface__["data"][0]


def _transposed(x) -> bool:
    """Whether BLAS reads the 2-D matrix x with its transpose flag (a transposed C array)."""
    return x.flags.f_contiguous and not x.flags.c_contiguous


def _make():
    if os.environ.get("COREJAX_ADAPTIVE_BLAS", "1") == "0":
        return None
    api = _find_threads_api()
    if api is None:
        return None
    adaptive = _AdaptiveBlas(api)
    return adaptive if adaptive.threads > 1 else None


_adaptive = _make()


def accumulate(a, b, out, alpha, site: GemmSite):
    """out += alpha * (a @ b) (out C-contiguous; a, b 2-D operands BLAS reads in place; a
    dtype `gemm_symbol` has) as `site` has learned to run it: the GEMM writes into out,
    which it reads instead of zeros (beta = 1), and no product is materialized."""
    if _adaptive is None:
        _accumulate(a, b, out, (0, a.shape[1]), alpha)
    else:
        _adaptive.run(a, b, out, site, alpha)


def matmul(a, b, out, site: GemmSite):
    """out[...] = a @ b (2-D, BLAS-readable operands) as `site` has learned to run it."""
    if _adaptive is None or out.dtype.char not in "fdFD":
        np.matmul(a, b, out=out)
    else:
        _adaptive.run(a, b, out, site)


_block_buffers = threading.local()


def _block_buffer(shape, dtype):
    """A scratch array of `shape` for the calling thread, reused across its blocks (a fresh
    megabyte-sized one page-faults)."""
    size = int(np.prod(shape))
    buf = getattr(_block_buffers, "buf", None)
    if buf is None or buf.dtype != dtype or buf.size < size:
        buf = _block_buffers.buf = np.empty(size, dtype)
    return buf[:size].reshape(shape)


def image_blocks(form, product_buffer):
    """A convolution (lax/_conv_gemm's GemmForm) run in its blocks of images (`form.blocks`)
    over this thread and the helper threads, each block's stages back to back while its rows
    are in cache: its gather (`prepare`), its product on one OpenBLAS thread (into the rows of
    `product_buffer(shape, dtype)`'s buffer where the product is the output's matrix, else into
    a per-thread buffer), its finish. A block holds about one L2 cache of operand and product
    rows; the threads claim blocks as they go (one sharing its core with another process takes
    fewer). Returns the output, or None, running nothing, where the blocks' products do not
    have the whole product's bits on OpenBLAS's threads (`blocks_agree`, tested once per
    shape), where there is no adaptive BLAS to set to one thread, or where the product is too
    small to split: the caller then runs it whole (`form.whole`).

    In cnn.yaml's step (2 cores, OpenBLAS's workers not left spinning): the 64 -> 32 input
    gradient (a (25088, 64) @ (64, 288) product, then nine taps summed per output) 9.0-10.2
    ms whole, 6.1 ms in blocks; the 32 -> 64 forward convolution (the gather of 128 x 196
    windows of 288, then the product by the (288, 64) kernel) 8.3-8.4 ms whole, 6.9-7.6 ms
    in blocks (2 to 8 images a block)."""
    from corejax._machine import l2_bytes
    ad, a, b, blocks = _adaptive, form.a, form.b, form.blocks
    dt = a.dtype
    if ad is None or ad.sharing or dt.char not in "fd" or a.ndim != 2 or b.ndim != 2:
        return None
    m, k = a.shape
    n = b.shape[1]
    rows, prepare, finish_block = blocks.rows, blocks.prepare, blocks.finish_block
    per = max(1, l2_bytes() // (rows * ((k if prepare else 0) + n) * dt.itemsize))
    if blocks.images <= per or _small(m, k, n):
        return None
    bounds = list(range(0, blocks.images, per)) + [blocks.images]
    out = None if finish_block is not None else product_buffer((m, n), dt)

    def task(lo, hi):
        if prepare is not None:
            prepare(lo, hi)
        target = _block_buffer(((hi - lo) * rows, n), dt) if out is None \
            else out[lo * rows:hi * rows]
        np.matmul(a[lo * rows:hi * rows], b, out=target)
        if finish_block is not None:
            finish_block(target, lo, hi)

    from corejax.compiler import eager_kernels
    with ad.lock:
        if not ad.blocks_agree(m, k, n, per * rows, _transposed(a), _transposed(b), dt):
            return None
        ad.on_threads(1, lambda: eager_kernels.run_parts(task, bounds))
    return blocks.result() if finish_block is not None else form.finish(out)


def batched_matmul(a, b, out, site: GemmSite):
    """out[...] = a @ b for C (batch, m, k) @ (batch, k, n) operands, on OpenBLAS's threads or
    on one thread as `site` measures faster where both give the same bits
    (`_AdaptiveBlas.run_batched`)."""
    if _adaptive is None or out.dtype.char not in "fd" or _adaptive.sharing or \
            not (a.flags.c_contiguous and b.flags.c_contiguous and out.flags.c_contiguous):
        np.matmul(a, b, out=out)
    else:
        _adaptive.run_batched(a, b, out, site)


_syrk_checked: dict = {}


def one_thread_keeps_bits(m, k, n, a_transposed, b_transposed, dtype, syrk=False,
                          accumulate=False) -> bool:
    """Whether an unchunked (m, k) @ (k, n) product (x @ x.T where `syrk`; c += alpha a @ b
    where `accumulate`) has the same bits on one OpenBLAS thread as on its threads, tested once
    per shape, layout and kind. Decides where a small product runs (`_AdaptiveBlas.run`: on one
    thread only then, else on the threads, as eager np.matmul) and whether a compiled loop may
    call it (loop_lowerings). OpenBLAS's AVX2 (Haswell) sgemm differs between the two even for
    96 x 96 x 96; its SkylakeX kernels mostly agree."""
    whole = Plan.whole(k)
    if _adaptive is None:
        return True
    if syrk:
        return syrk_thread_invariant(m, k, a_transposed, dtype, whole)
    with _adaptive.lock:
        return _adaptive.plan(m, k, n, a_transposed, b_transposed, np.dtype(dtype),
                              accumulate) == whole


def syrk_thread_invariant(m, k, transposed, dtype, plan: Plan) -> bool:
    """Whether x @ x.T (x an (m, k) C array; x.T @ x of a (k, m) one where `transposed`) run
    as `matmul` runs a product under `plan` gives the same bits on OpenBLAS's threads (over
    its `threads` chunks) as on one thread (over its `one` chunks), on random operands
    (cached). Each chunk's np.matmul there reads two views of one data pointer, so NumPy
    computes it with cblas_?syrk, not the cblas_?gemm `plan_for`'s own test ran: a compiled
    loop calling syrk on OpenBLAS's threads where `matmul` may use one thread needs this
    too."""
    if _adaptive is None:
        return True
    dt = np.dtype(dtype)
    key = (m, k, bool(transposed), dt, tuple(plan))
    with _adaptive.lock:
        same = _syrk_checked.get(key)
        if same is None:
            x = np.random.default_rng(0).standard_normal((k, m) if transposed
                                                         else (m, k)).astype(dt)
            a, b = (x.T, x) if transposed else (x, x.T)
            partial = np.empty((m, m), dt)

            def run(bounds):
                out = np.empty((m, m), dt)
                _adaptive._product(a, b, out, bounds, partial)
                return out

            same = _syrk_checked[key] = _adaptive.agrees(run, plan)
    return same
