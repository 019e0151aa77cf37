"""GEMMs of the CPU backend: float32 ones in corejax's own GEMM (compiler/sgemm.py, last
paragraph), the others in OpenBLAS, on its own threads or one thread, chosen per call site,
with the same bits either way.

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
chunks on both.

A matrix product for which no plan passes (with OpenBLAS's AVX2 kernels, every product of
the MNIST models: their threaded and one-thread results differ, and no split of the rows or
columns reproduces the threaded ones), or too big to test cheaply, is made of fixed blocks
of its output (`Blocks`, `blocks_for`: a function of the shape alone), each one gemm on one
OpenBLAS thread, claimed by this thread and the eager helper threads in compiled code: its
bits depend neither on the thread count nor on the load, and a thread sharing its core with
another process simply takes fewer blocks. On the 2-core test machine the MLP step's
products took 1.02-1.11x OpenBLAS's threaded time quiet, and beside a busy process
train.py's mlp.yaml epoch went from 3.3-3.5 s to 1.3 s (1.31x its quiet time, as JAX's).
A product below BLOCK_MIN_FLOPS is one block, and any below MIN_FLOPS runs whole on one
thread, plan or not. Vector products (gemv) with no plan run on OpenBLAS's threads, as
NumPy runs them.

Every product of a float dtype goes through here, eager ones included (lax's dot_general
and conv impls call `matmul` and `batched_matmul`): one set of bits eagerly and compiled.

float32 products do not run in OpenBLAS at all but in corejax's own GEMM (compiler/sgemm.py,
unless COREJAX_SGEMM=openblas), whose bits do not depend on how its output is cut: no plan
is tested for them; a big one runs in its `blocks_for` blocks over this thread and the eager
helper threads (`_own_run`), a small one whole on the caller's thread, and compiled code
calls the same kernel by address (`gemm_symbol`).
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

from corejax.compiler.gemm_blocks import BLOCK, Blocks, blocks_for
from corejax.compiler.gemm_blocks import bounds_array as _bounds
from corejax.compiler.gemm_blocks import flat as _flat
from corejax.compiler.gemm_blocks import leading as _leading
from corejax.compiler.gemm_blocks import readable as _readable
from corejax.compiler.gemm_blocks import transposed as _transposed
from corejax.compiler.gemm_sites import GemmSite

__all__ = ["matmul", "batched_matmul", "accumulate", "Plan", "Blocks",
           "blocks_for", "gemm_symbol", "plan_for", "devices_at_once", "own_kernel",
           "product_here"]

# GEMMs below this many flops run whole on one thread (waking OpenBLAS's workers costs more
# there), untested: eager and compiled calls alike.
MIN_FLOPS = 1 << 22
# The bit-equality test runs the product twice; bigger products skip it (and adaptation).
MAX_TEST_FLOPS = 1 << 31
# The search over reduction chunks (up to 2 * MAX_CHUNKS products more) only below this:
# a larger product with no plan of its whole reduction is made in blocks (a first eager
# call of a new shape pays the search)
MAX_SPLIT_TEST_FLOPS = 1 << 28
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


# Whether float32 products run in corejax's own GEMM (compiler/sgemm.py)
_OWN_F32 = os.environ.get("COREJAX_SGEMM", "own") != "openblas"


def own_kernel(dtype) -> bool:
    """Whether products of `dtype` run in corejax's own GEMM (compiler/sgemm.py): float32's,
    unless the environment says COREJAX_SGEMM=openblas. Its bits do not depend on threads or
    blocks, and every product of the dtype, vector ones and x @ x.T included, calls it."""
    return _OWN_F32 and np.dtype(dtype) == np.float32


def gemm_symbol(dtype):
    """(address, ilp64) of the cblas_?gemm compiled code calls for products of `dtype`:
    corejax's own float32 one (`own_kernel`), or the OpenBLAS NumPy's matmul calls; None
    (another BLAS, another dtype)."""
    if own_kernel(dtype):
        from corejax.compiler import sgemm
        return sgemm.address()
    return _cblas_address(np.dtype(dtype), "gemm")


def gemv_symbol(dtype):
    """(address, ilp64) of the cblas_sgemv / cblas_dgemv NumPy's matmul calls for vector
    products, or None (and None where `own_kernel` makes them gemms)."""
    return None if own_kernel(dtype) else _cblas_address(np.dtype(dtype), "gemv")


def syrk_symbol(dtype):
    """(address, ilp64) of the cblas_ssyrk / cblas_dsyrk NumPy's matmul calls for x @ x.T,
    or None (and None where `own_kernel` makes them gemms)."""
    return None if own_kernel(dtype) else _cblas_address(np.dtype(dtype), "syrk")


class Plan(NamedTuple):
    """How `matmul` cuts the reduction of a product into chunks (k bounds, one BLAS call
    each, summed in order) on OpenBLAS's threads and on one thread: both give the same bits."""
    threads: tuple
    one: tuple

    @classmethod
    def whole(cls, k):
        """The whole reduction in one call, on the threads as on one thread."""
        return cls((0, k), (0, k))


def _rest_helpers():
    """eager_threads.rest (imported here when first needed: it loads Numba)."""
    from corejax.compiler import eager_threads
    eager_threads.rest()


def _small(m, k, n) -> bool:
    """Whether an (m, k) @ (k, n) product runs unchunked on one thread (MIN_FLOPS)."""
    return 2 * m * n * k < MIN_FLOPS


def plan_for(m, k, n, a_transposed, b_transposed, dtype, any_size=False):
    """The `Plan` `matmul` uses for such a product (see `GemmSite`), or its `Blocks`, or ()
    where OpenBLAS's threads run it unchunked, or None for a small product (whole on one
    thread). Compiled loops, which call BLAS on OpenBLAS's threads, cut the reduction as its
    `threads` chunks say, for the same bits, or make its blocks on one thread."""
    dt = np.dtype(dtype)
    if own_kernel(dt):
        return None if _small(m, k, n) and not any_size else blocks_for(m, k, n)
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
        """The `Plan` of an (m, k) @ (k, n) product, else its `Blocks` (a matrix product),
        else () (a vector product: OpenBLAS's threads, as NumPy runs it), tested once per
        shape, layout, dtype and kind (`accumulate`: c += alpha a @ b, one beta=1 call per
        chunk; see the module docstring); the caller holds `lock`."""
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
                      if parts == 1 or (k // parts >= MIN_CHUNK and
                                        2 * m * n * k <= MAX_SPLIT_TEST_FLOPS)]
            found = self.first_agreeing(run, splits)
        if found == () and m > 1 and n > 1 and k > 1:
            found = blocks_for(m, k, n)
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
        call on one OpenBLAS thread, has the bits of the product run its one way (`run`: an
        eager call's, or a jit call site's), on random operands; tested once per shape,
        layout and dtype (a bigger product than MAX_TEST_FLOPS is not tested: False). The
        caller holds `lock`."""
        dt = np.dtype(dtype)
        key = (m, k, n, block, a_transposed, b_transposed, dt)
        same = self._blocks.get(key)
        if same is None:
            same = False
            if 2 * m * n * k <= MAX_TEST_FLOPS:
                a, b = _operands(_random_of(dt), m, k, n, a_transposed, b_transposed)
                whole = np.empty((m, n), dt)
                self._run_locked(a, b, whole, None, None, m, k, n)

                def blocked():
                    out = np.empty((m, n), dt)
                    for lo in range(0, m, block):
                        np.matmul(a[lo:lo + block], b, out=out[lo:lo + block])
                    return out
                same = bool(np.array_equal(self.on_threads(1, blocked), whole, equal_nan=True))
            self._blocks[key] = same
        return same

    def run(self, a, b, out, site, alpha=None):
        """a @ b into out (`alpha` None), or out += alpha * (a @ b), the product's one way
        (see the module docstring): a small product whole on one thread; a larger one over
        its plan's chunks on OpenBLAS's threads or on one thread, whichever `site` measures
        faster (`site` None: an eager call, on the threads), or in its `Blocks` where no plan
        passed. Concurrent callers take turns: OpenBLAS's thread count is process-wide, and is
        set back after a call on one thread. (One flat method, no closures: it runs between
        GEMMs that leave every cache cold.)"""
        m, n = out.shape
        k = a.shape[1]
        if self.sharing:
            self._run_shared(a, b, out, site, alpha, m, k, n)
            return
        with self.lock:
            self._run_locked(a, b, out, site, alpha, m, k, n)

    def _plan_of(self, site, a, b, out, alpha, m, k, n):
        """The product's `Plan`, `Blocks` or () (`plan`), kept by its call site (an eager call,
        `site` None, looks it up each time); the caller holds `lock`."""
        plan = None if site is None else site.plan
        if plan is None:
            plan = self.plan(m, k, n, _transposed(a), _transposed(b), out.dtype,
                             alpha is not None)
            if site is not None:
                site.plan = plan
        return plan

    def _run_locked(self, a, b, out, site, alpha, m, k, n):
        """run(), the caller holding `lock`."""
        timed = False
        plan = None if _small(m, k, n) else self._plan_of(site, a, b, out, alpha, m, k, n)
        if plan is None or (type(plan) is Blocks and len(plan.bounds) == 2):
            chunks, mode = (0, k), 1        # small, or one block: whole on one thread
        elif type(plan) is Blocks:
            self._run_blocks(a, b, out, plan, alpha, True)
            return
        elif plan:
            mode = 0 if site is None else site.mode()
            chunks, timed = plan[mode], site is not None
        else:
            chunks, mode = (0, k), None     # a vector product with no plan: the threads
        if mode == 1:
            self._set(1)
        else:
            _rest_helpers()         # (OpenBLAS's threads want both cores)
        try:
            start = time.perf_counter()
            if alpha is not None:
                _accumulate(a, b, out, chunks, alpha)
            elif len(chunks) == 2:
                np.matmul(a, b, out=out)
            else:
                partial = np.empty_like(out) if site is None else site.partial
                if partial is None:
                    partial = site.partial = np.empty_like(out)
                self._product(a, b, out, chunks, partial)
            if timed:
                site.record(mode, time.perf_counter() - start)
        finally:
            if mode == 1:
                self._set(self.threads)

    def _run_blocks(self, a, b, out, blocks: Blocks, alpha, parallel: bool):
        """The product (or out += alpha * product) in its blocks, each one cblas_?gemm call
        on one OpenBLAS thread, with NumPy's matmul's arguments for that block: over this
        thread and the eager helper threads (`parallel`; the caller holds `lock`), whose
        blocks are claimed and run in compiled code (`_blocks_native`), or in order on this
        thread (OpenBLAS already on one thread)."""
        a, b = _readable(a), _readable(b)
        k = a.shape[1]
        bounds = blocks.bounds
        if parallel:
            self._set(1)
            try:
                if _native_blocks(a, b, out, blocks, 1.0 if alpha is None else alpha,
                                  0.0 if alpha is None else 1.0, FLOPS_PER_SECOND):
                    return
            finally:
                self._set(self.threads)
        rows = blocks.axis == 0
        if parallel:
            self._set(1)
        try:
            for lo, hi in zip(bounds, bounds[1:]):
                x, y, o = (a[lo:hi], b, out[lo:hi]) if rows else \
                    (a, b[:, lo:hi], out[:, lo:hi])
                if alpha is None:
                    np.matmul(x, y, out=o)
                else:
                    _accumulate(x, y, o, (0, k), alpha)
        finally:
            if parallel:
                self._set(self.threads)

    def _run_shared(self, a, b, out, site, alpha, m, k, n):
        """run() while several devices' programs run at once (devices_at_once): OpenBLAS is
        on one thread, so each call runs on its caller's thread (a plan over its one-thread
        chunks, the bits of the threaded call; blocks in order), and the devices' products
        overlap."""
        if _small(m, k, n):
            chunks = (0, k)
        else:
            plan = None if site is None else site.plan
            if plan is None:
                with self.lock:
                    plan = self._plan_of(site, a, b, out, alpha, m, k, n)
            if type(plan) is Blocks:
                self._run_blocks(a, b, out, plan, alpha, False)
                return
            chunks = plan[1] if plan else (0, k)
        if alpha is not None:
            _accumulate(a, b, out, chunks, alpha)
        else:
            self._product(a, b, out, chunks, np.empty_like(out) if len(chunks) > 2 else None)

    def run_batched(self, a, b, out):
        """out = a @ b for C (batch, m, k) @ (batch, k, n) operands, each element's product
        whole on one OpenBLAS thread (the bits of the threaded call where its plan is the
        whole reduction; its own elsewhere), the elements shared out over this thread and the
        eager helper threads (in order on this thread while devices share the cores). (A batch
        of small products on OpenBLAS's threads wakes its workers once per element: while
        another process holds a core, each wake-up can cost milliseconds.)"""
        batch, m, k = a.shape
        n = b.shape[2]
        if self.sharing:
            np.matmul(a, b, out=out)
            return

        def task(lo, hi):
            np.matmul(a[lo:hi], b[lo:hi], out=out[lo:hi])

        from corejax.compiler import eager_kernels
        bounds = _batch_parts(batch, m, k, n)
        with self.lock:
            self._set(1)
            try:
                eager_kernels.run_parts(task, bounds)
            finally:
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
    a (m, k), b (k, n) and out (m, n) 2-D arrays as BLAS reads them in place (each a C array
    or a transposed one, its rows or columns any distance apart; out not transposed)."""
    a, b = _readable(a), _readable(b)
    ta, tb = _transposed(a), _transposed(b)
    m, n = out.shape
    gemm_chunks, addr, ilp64, one = _gemm_chunks(out.dtype)
    (fa, lda), (fb, ldb), (fc, ldc) = _flat(a, ta), _flat(b, tb), _flat(out, False)
    gemm_chunks(addr, ilp64, ta, tb, m, n, type(one)(alpha), fa, lda, fb, ldb, one, fc, ldc,
                _bounds(chunks))


# A rough single-thread GEMM rate, to tell the helper threads whether a job of blocks is
# worth waking them for (eager_threads.run_native).
FLOPS_PER_SECOND = 1e11


@functools.lru_cache(maxsize=None)
def _blocks_native(dtype):
    """The compiled job (eager_kernels.native_kernel) that runs a product's blocks, claimed by
    this thread and the helpers with no GIL between them: each block one cblas_?gemm call as
    NumPy's matmul makes it for that block (row-major; each operand read in place, with its
    transpose flag). None for a dtype without a callable gemm, or where no job can be built
    (the blocks then run from Python)."""
    dt = np.dtype(dtype)
    symbol = gemm_symbol(dt) if dt.char in "fd" else None
    if symbol is None:
        return None
    from numba import types
    from corejax.compiler import diskcache, eager_kernels
    integer, item = ("np.int64" if symbol[1] else "np.int32"), dt.itemsize
    source = "\n".join([
        "import numpy as np", "from numba import carray, njit",
        "from corejax.compiler.eager_threads import voidptr",
        "from corejax.compiler.kernel_lib import call_gemm", "", "",
        '@njit(error_model="numpy", nogil=True, cache=True)',
        "def kernel(lo, hi, fn, rows, ta, tb, m, n, k, a, lda, b, ldb, c, ldc, s):",
        "    if rows:",
        "        ao, bo, co, mb, nb = (lo if ta else lo * lda), 0, lo * ldc, hi - lo, n",
        "    else:",
        "        ao, bo, co, mb, nb = 0, (lo * ldb if tb else lo), lo, m, hi - lo",
        f"    av = carray(voidptr(a + ao * {item}), 1, np.{dt.name})",
        f"    bv = carray(voidptr(b + bo * {item}), 1, np.{dt.name})",
        f"    cv = carray(voidptr(c + co * {item}), 1, np.{dt.name})",
        "    call_gemm(fn, np.int32(101), np.int32(112 if ta else 111), "
        f"np.int32(112 if tb else 111), {integer}(mb), {integer}(nb), {integer}(k), s[0], av, "
        f"{integer}(lda), bv, {integer}(ldb), s[1], cv, {integer}(ldc))"]) + "\n"
    names = ("fn", "rows", "ta", "tb", "m", "n", "k", "a", "lda", "b", "ldb", "c", "ldc")
    params = ["lo", "hi"] + [("int", name) for name in names] + [("array", "s", dt, False)]
    sig = (types.int64,) * len(names) + (diskcache.numba_type(dt),)
    return eager_kernels.native_kernel(source, params, sig)


@functools.lru_cache(maxsize=None)
def _gemm_chunks(dtype):
    """kernel_lib.gemm_chunks, the (address, ilp64) of the BLAS gemm it calls for dtype, and
    a 1 of dtype."""
    from corejax.compiler.kernel_lib import gemm_chunks
    return (gemm_chunks,) + gemm_symbol(dtype) + (dtype.type(1),)


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
    if own_kernel(out.dtype) and _own_operands(a, b):
        _own_run(a, b, out, alpha)
    elif _adaptive is None:
        _accumulate(a, b, out, (0, a.shape[1]), alpha)
    else:
        _adaptive.run(a, b, out, site, alpha)


def matmul(a, b, out=None, site=None):
    """a @ b of 2-D operands BLAS reads in place, into `out` (a fresh C array where None;
    returned), its product's one way (`_AdaptiveBlas.run`), as `site` has learned to run it;
    `site` None for an eager call: the same bits."""
    if out is None:
        out = np.empty((a.shape[0], b.shape[1]), np.result_type(a, b))
    if own_kernel(out.dtype) and _own_operands(a, b):
        _own_run(a, b, out)
    elif _adaptive is None or out.dtype.char not in "fdFD":
        np.matmul(a, b, out=out)
    else:
        _adaptive.run(a, b, out, site)
    return out


def batched_matmul(a, b, out=None):
    """a @ b for (batch, m, k) @ (batch, k, n) operands, into `out` (a fresh array where None;
    returned), each element's product whole on one OpenBLAS thread, the batch shared out over
    the cores (`_AdaptiveBlas.run_batched`): the same bits eagerly and compiled, on any load.
    Operands NumPy would read transposed are copied first (one layout, one set of bits)."""
    dt = np.result_type(a, b) if out is None else out.dtype
    if out is None:
        out = np.empty((a.shape[0], a.shape[1], b.shape[2]), dt)
    if own_kernel(dt) and _own_operands(a, b):
        _own_batched(a, b, out)
        return out
    if _adaptive is None or dt.char not in "fdFD":
        np.matmul(a, b, out=out)
        return out
    target = out if out.flags.c_contiguous else np.empty(out.shape, dt)
    _adaptive.run_batched(np.ascontiguousarray(a, dt), np.ascontiguousarray(b, dt), target)
    if target is not out:
        out[...] = target
    return out


_syrk_checked: dict = {}


def one_thread_keeps_bits(m, k, n, a_transposed, b_transposed, dtype, syrk=False,
                          accumulate=False) -> bool:
    """Whether an unchunked (m, k) @ (k, n) product (x @ x.T where `syrk`; c += alpha a @ b
    where `accumulate`) has the same bits on one OpenBLAS thread as on its threads, tested once
    per shape, layout and kind. A small product runs whole on one thread (`_AdaptiveBlas.run`),
    eagerly and compiled; a compiled loop may call it on OpenBLAS's threads where this holds,
    and otherwise runs on one thread (loop_lowerings). OpenBLAS's AVX2 (Haswell) sgemm differs
    between the two even for 96 x 96 x 96; its SkylakeX kernels mostly agree."""
    whole = Plan.whole(k)
    if _adaptive is None or own_kernel(dtype):
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


def _own_operands(a, b) -> bool:
    """Whether `own_kernel`'s GEMM takes a and b as they are: float32 both."""
    return a.dtype == np.float32 and b.dtype == np.float32


def _sharing() -> bool:
    """Whether several devices' programs share the cores now (`devices_at_once`)."""
    return _adaptive is not None and _adaptive.sharing > 0


def _own_run(a, b, out, alpha=None):
    """out = a @ b (`alpha` None), or out += alpha * (a @ b), in corejax's own float32 GEMM
    (`own_kernel`; 2-D operands of any strides): a product of several `blocks_for` blocks runs
    them over this thread and the eager helper threads where they are free, else whole on
    this thread, with the same bits either way."""
    from corejax.compiler import sgemm
    if np.may_share_memory(out, a) or np.may_share_memory(out, b):
        # (the kernel writes out as it reads a and b, as BLAS does: NumPy's matmul copies)
        target = out.copy() if alpha is not None else np.empty(out.shape, out.dtype)
        _own_run(a, b, target, alpha)
        out[...] = target
        return
    m, n = out.shape
    k = a.shape[1]
    scale, beta = (1.0, 0.0) if alpha is None else (alpha, 1.0)
    blocks = blocks_for(m, k, n)
    if len(blocks.bounds) > 2 and not _sharing() and out.strides[1] == out.itemsize and \
            _leading(out, False) is not None and _own_blocks(a, b, out, blocks, scale, beta):
        return
    sgemm.product(a, b, out, scale, beta)


def _own_blocks(a, b, out, blocks: Blocks, alpha, beta) -> bool:
    """The product's blocks as one compiled job over this thread and the helper threads,
    calling the own GEMM (`_native_blocks`)."""
    return _native_blocks(_readable(a), _readable(b), out, blocks, alpha, beta,
                          OWN_FLOPS_PER_SECOND)


def _native_blocks(a, b, out, blocks: Blocks, alpha, beta, rate) -> bool:
    """out = alpha a @ b + beta out in `blocks` as one compiled job (`_blocks_native`: each
    block one call of `gemm_symbol`'s gemm on one thread, with NumPy's matmul's arguments
    for that block) over this thread and the helper threads (a, b readable in place, out a
    C-ordered matrix); False, running nothing, where there is no such job or the helpers
    are taken or asleep for a job shorter than waking them (`rate`: the gemm's flops a
    second on one thread)."""
    native = _blocks_native(out.dtype)
    if native is None:
        return False
    ta, tb = _transposed(a), _transposed(b)
    m, n = out.shape
    k = a.shape[1]
    # (the data pointers of the first elements: what BLAS reads from)
    operands = (gemm_symbol(out.dtype)[0], int(blocks.axis == 0), int(ta), int(tb), m, n, k,
                a.ctypes.data, _leading(a, ta), b.ctypes.data, _leading(b, tb),
                out.ctypes.data, _leading(out, False), np.array([alpha, beta], out.dtype))
    from corejax.compiler import eager_kernels
    return eager_kernels.run_native(native, _bounds(blocks.bounds), operands,
                                    2.0 * m * n * k / rate)


def _batch_parts(batch, m, k, n) -> list:
    """The bounds a batch of (m, k) @ (k, n) products is shared out in: parts of about
    BLOCK^3 multiply-adds, at least one element each."""
    per = max(1, BLOCK ** 3 // max(1, m * k * n))
    return list(range(0, batch, per)) + [batch]


# the own GEMM's rough single-thread rate (FLOPS_PER_SECOND's for it)
OWN_FLOPS_PER_SECOND = 2e11


def _own_batched(a, b, out):
    """out = a @ b for (batch, m, k) @ (batch, k, n) float32 operands in the own GEMM, each
    element's product whole, the elements shared out over this thread and the helper
    threads (in order on this thread while devices share the cores)."""
    from corejax.compiler import sgemm
    batch, m, k = a.shape
    n = b.shape[2]
    target = out if out.flags.c_contiguous and not np.may_share_memory(out, a) and \
        not np.may_share_memory(out, b) else np.empty(out.shape, out.dtype)

    def task(lo, hi):
        for i in range(lo, hi):
            sgemm.product(a[i], b[i], target[i])

    bounds = _batch_parts(batch, m, k, n)
    if _sharing() or len(bounds) == 2:
        task(0, batch)
    else:
        from corejax.compiler import eager_kernels
        eager_kernels.run_parts(task, bounds)
    if target is not out:
        out[...] = target


def product_here(a, b, out):
    """out = a @ b of 2-D operands on the calling thread alone (one OpenBLAS thread set by the
    caller, or the own GEMM), with the bits `matmul` gives the product: a block of a bigger
    product run by one of several threads (compiler/conv_blocks.py)."""
    if own_kernel(out.dtype) and _own_operands(a, b):
        from corejax.compiler import sgemm
        if np.may_share_memory(out, a) or np.may_share_memory(out, b):
            out[...] = sgemm.product(a, b, np.empty(out.shape, out.dtype))
        else:
            sgemm.product(a, b, out)
    else:
        np.matmul(a, b, out=out)
