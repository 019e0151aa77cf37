"""NumPy's pairwise float sum, bit for bit, vectorized and split over threads.

An eager `reduce_sum` evaluates `np.sum` (the primitive's impl), and for a float32 / float64
array reduced whole NumPy adds its elements in a fixed order (numpy/_core/src/umath/
loops_utils.h.src, `pairwise_sum`): a run of n elements is cut at n2 = n/2 rounded down to a
multiple of 8 and the sums of its two parts are added; a run of at most 128 elements (a leaf)
is summed in 8 lanes, lane k adding elements k, k+8, k+16, ... in turn, then
((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7)), then its last n % 8 elements one by one;
a run of fewer than 8 elements is summed one by one from -0.0; the reduction adds the tree's
sum to its identity, +0.0. NumPy's C code runs the 8 lanes as scalar adds and recurses down
to every leaf: 156 us for 1M float32 on this machine, where memory allows some 45 us.

`pairwise_sum(a)` computes the same tree in two passes. The cuts halve every run of more
than 128 elements, so the tree is complete down to the first depth that holds a leaf
(`_level` lists that depth's runs, some 1/128 of n of them); each run there is a leaf or
splits into two (or, for a few sizes, into a deeper subtree: summed by the recursion
`_subtree`). The first pass sums those runs in one flat loop, a leaf's lanes as one 8-wide
vector add per step (`_lanes`, in LLVM IR: Numba's SLP vectorizer is off) and the two leaves
of a split run side by side (two independent chains); the second adds the runs' sums as the
complete tree above them adds them, pairs of neighbours level by level. Every add is an add
NumPy makes, on the same operands, so the result has NumPy's bits (tests/
test_eager_kernels.py compares them over sizes and shapes). 1M float32: 66 us on one
thread. With several free cores the first pass is cut into subtrees, one per thread:
the same adds, whatever the number of threads.

`center` gives the sum of (a[i] - center)**2, each square rounded to a's dtype, with the bits
of np.sum over the array of squares var would otherwise build, and `nan_to_zero` the sum of
a with NaNs as +0.0, nansum's (corejax/numpy/_eager_fusion.sum_of_squared_deviations and
nan_to_zero_sum decide where).

Only for C-contiguous operands reduced over every axis (np.sum then runs over the flat array
in this order). Imported on first use: it imports Numba.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["pairwise_sum", "LEAF"]

LEAF = 128      # NumPy's PW_BLOCKSIZE
PLAIN, SQUARES, NAN_TO_ZERO = 0, 1, 2      # what is summed: x, (x - c)**2, x with NaN as 0

# Kernels address the operand through its data pointer (an int64): a Numba call passing an
# array passes its seven fields, which the recursion paid on every call.


def _lanes_codegen(dt, k):
    """LLVM IR for the lane sums of k leaves at element offsets lo_j of the dt array at
    `addr`, m_j elements each (a multiple of 8, at least 8), each returned as
    ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7)), of the elements x transformed as
    `mode` says (see _element)."""
    def codegen(context, builder, sig, args):
        addr, c, mode = args[0], args[1], args[2]
        los, ms = args[3::2], args[4::2]
        fty = context.get_value_type(dt)
        data = builder.inttoptr(addr, fty.as_pointer())
        vty = ir.VectorType(fty, 8)
        i32, i64 = ir.IntType(32), ir.IntType(64)
        one = ir.Constant(i64, 1)
        cv = ir.Constant(vty, ir.Undefined)
        for i in range(8):
            cv = builder.insert_element(cv, c, ir.Constant(i32, i))
        sq = builder.icmp_unsigned("==", mode, ir.Constant(mode.type, SQUARES))
        nz = builder.icmp_unsigned("==", mode, ir.Constant(mode.type, NAN_TO_ZERO))
        zero = ir.Constant(vty, None)
        align = dt.bitwidth // 8
        ptrs = [builder.bitcast(builder.gep(data, [lo]), vty.as_pointer()) for lo in los]
        accs = [cgutils.alloca_once(builder, vty) for _ in ptrs]
        steps = [builder.udiv(m, ir.Constant(i64, 8)) for m in ms]
        common = steps[0]
        for s in steps[1:]:
            common = builder.select(builder.icmp_unsigned("<", s, common), s, common)

        def loops(element):
            def add_step(p, acc, idx):
                v = element(builder.load(builder.gep(p, [idx]), align=align))
                builder.store(builder.fadd(builder.load(acc), v), acc)

            for p, acc in zip(ptrs, accs):
                builder.store(element(builder.load(p, align=align)), acc)
            with cgutils.for_range_slice(builder, one, common, one, inc=True) as (idx, _):
                for p, acc in zip(ptrs, accs):         # the leaves' chains side by side
                    add_step(p, acc, idx)
            for p, acc, s in zip(ptrs, accs, steps):   # a longer leaf's last steps
                with cgutils.for_range_slice(builder, common, s, one, inc=True) as (idx, _):
                    add_step(p, acc, idx)

        def squares(v):
            d = builder.fsub(v, cv)
            return builder.fmul(d, d)

        def nan_to_zero(v):
            return builder.select(builder.fcmp_unordered("uno", v, v), zero, v)

        # one loop nest per mode (a select on the mode in the loop costs 20%)
        with builder.if_else(sq) as (then, otherwise):
            with then:
                loops(squares)
            with otherwise:
                with builder.if_else(nz) as (then2, otherwise2):
                    with then2:
                        loops(nan_to_zero)
                    with otherwise2:
                        loops(lambda v: v)
        add, outs = builder.fadd, []
        for acc in accs:
            v = builder.load(acc)
            r = [builder.extract_element(v, ir.Constant(i32, i)) for i in range(8)]
            outs.append(add(add(add(r[0], r[1]), add(r[2], r[3])),
                            add(add(r[4], r[5]), add(r[6], r[7]))))
        return context.make_tuple(builder, sig.return_type, outs)
    return codegen


def _float(c):
    return c in (types.float32, types.float64)


@intrinsic
def _lanes1(typingctx, addr, c, mode, lo, m):
    if not _float(c):
        return None
    i64 = types.int64
    return types.UniTuple(c, 1)(i64, c, i64, i64, i64), _lanes_codegen(c, 1)


@intrinsic
def _lanes2(typingctx, addr, c, mode, lo0, m0, lo1, m1):
    if not _float(c):
        return None
    i64 = types.int64
    return types.UniTuple(c, 2)(i64, c, i64, i64, i64, i64, i64), _lanes_codegen(c, 2)


@intrinsic
def _load(typingctx, addr, c, i):
    """Element i of the array of c's dtype at `addr`."""
    if not _float(c):
        return None

    def codegen(context, builder, sig, args):
        fty = context.get_value_type(sig.return_type)
        return builder.load(builder.gep(builder.inttoptr(args[0], fty.as_pointer()), [args[2]]))
    return c(types.int64, c, types.int64), codegen


@intrinsic
def _negative_zero(typingctx, c):
    """-0.0 in c's dtype (NumPy's start for runs of fewer than 8 elements)."""
    if not _float(c):
        return None

    def codegen(context, builder, sig, args):
        return ir.Constant(context.get_value_type(sig.return_type), -0.0)
    return c(c), codegen


_jit = njit(error_model="numpy", nogil=True, cache=True)


@njit(error_model="numpy", nogil=True, cache=True, inline="always")
def _element(v, c, mode):
    """x itself (PLAIN), (x - c) * (x - c) (SQUARES) or x with NaN as +0.0 (NAN_TO_ZERO), as
    the array var / nansum sum would hold it."""
    if mode == SQUARES:
        d = v - c
        return d * d
    if mode == NAN_TO_ZERO and v != v:
        return c                # (+0.0 in this mode)
    return v


@njit(error_model="numpy", nogil=True, cache=True, inline="always")
def _rest(addr, c, mode, lo, m, n, res):
    """res plus elements lo + m, ..., lo + n - 1 (transformed), one by one."""
    for i in range(m, n):
        res += _element(_load(addr, c, lo + i), c, mode)
    return res


@njit(error_model="numpy", nogil=True, cache=True, inline="always")
def _half(n):
    n2 = n // 2
    return n2 - n2 % 8


@njit(error_model="numpy", nogil=True, cache=True, inline="always")
def _leaf(addr, c, mode, lo, n):
    m = n - n % 8
    return _rest(addr, c, mode, lo, m, n, _lanes1(addr, c, mode, lo, m)[0])


_SIGS = [dt(types.int64, dt, types.int64, types.int64, types.int64)
         for dt in (types.float32, types.float64)]


@njit(_SIGS, error_model="numpy", nogil=True, cache=True)
def _subtree(addr, c, mode, lo, n):
    """NumPy's pairwise_sum of elements lo .. lo + n - 1, recursively."""
    if n < 8:
        return _rest(addr, c, mode, lo, 0, n, _negative_zero(c))
    if n <= LEAF:
        return _leaf(addr, c, mode, lo, n)
    n2 = _half(n)
    r = n - n2
    if r <= LEAF:               # two leaves (n2 <= r): their chains side by side
        m0 = n2 - n2 % 8
        m1 = r - r % 8
        s0, s1 = _lanes2(addr, c, mode, lo, m0, lo + n2, m1)
        return _rest(addr, c, mode, lo, m0, n2, s0) + _rest(addr, c, mode, lo + n2, m1, r, s1)
    return _subtree(addr, c, mode, lo, n2) + _subtree(addr, c, mode, lo + n2, r)


@_jit
def _level(n):
    """Bounds b[0] = 0 < b[1] < ... < b[2^D] = n of the runs at depth D, the first depth of
    the tree over n > LEAF elements that holds a leaf (every run above it is cut in two)."""
    b = np.empty(2, np.int64)
    b[0], b[1] = 0, n
    while True:
        k = b.size - 1
        for j in range(k):
            if b[j + 1] - b[j] <= LEAF:
                return b
        nb = np.empty(2 * k + 1, np.int64)
        for j in range(k):
            nb[2 * j] = b[j]
            nb[2 * j + 1] = b[j] + _half(b[j + 1] - b[j])
        nb[2 * k] = n
        b = nb


@_jit
def _runs(addr, c, mode, b, v, j0, j1):
    """v[j] = the sum of run j (bounds b[j], b[j + 1]) for j0 <= j < j1."""
    for j in range(j0, j1):
        lo = b[j]
        n = b[j + 1] - lo
        if n <= LEAF:
            v[j] = _leaf(addr, c, mode, lo, n)
            continue
        n2 = _half(n)
        r = n - n2
        if r > LEAF:            # (a deeper subtree)
            v[j] = _subtree(addr, c, mode, lo, n)
            continue
        m0 = n2 - n2 % 8
        m1 = r - r % 8
        s0, s1 = _lanes2(addr, c, mode, lo, m0, lo + n2, m1)
        v[j] = _rest(addr, c, mode, lo, m0, n2, s0) + _rest(addr, c, mode, lo + n2, m1, r, s1)


@_jit
def _tree(v):
    """The complete tree's sum over v (2^D values): neighbours added level by level."""
    k = v.size
    while k > 1:
        k //= 2
        for j in range(k):
            v[j] = v[2 * j] + v[2 * j + 1]
    return v[0]


@_jit
def _whole(a, c, mode):
    """The pairwise sum of a (1-D, C-contiguous) on this thread."""
    addr = a.ctypes.data
    n = a.size
    if n <= LEAF:
        return _subtree(addr, c, mode, 0, n)
    b = _level(n)
    v = np.empty(b.size - 1, a.dtype)
    _runs(addr, c, mode, b, v, 0, v.size)
    return _tree(v)


_levels: dict = {}      # n -> _level(n) (read only), for the split sums


def pairwise_sum(a: np.ndarray, parts: int = 1, run_parts=None, center=None,
                 nan_to_zero: bool = False):
    """np.add.reduce(a) for a 1-D C-contiguous float32 / float64 array, its bits included, as
    a NumPy scalar; with `center` c, np.add.reduce((a - c) * (a - c)), with `nan_to_zero`,
    np.add.reduce(np.where(np.isnan(a), 0, a)) (as those arrays would hold their elements),
    without the arrays. With parts >= 2, the first pass is cut into up to `parts` subtrees
    (a power of two, each of 64 runs or more), run by this thread and the helper threads:
    claimed in compiled code (`_native`), or, where that cannot be built or another thread's
    job holds the helpers, by `run_parts(task, bounds)` (eager_kernels.run_parts)."""
    t = a.dtype.type
    c = t(0 if center is None else center)
    mode = SQUARES if center is not None else NAN_TO_ZERO if nan_to_zero else PLAIN
    n = a.size
    # (Numba returns a Python float: back to the array's dtype; +0.0 is NumPy's identity,
    # which only a sum of -0.0s sees)
    if parts < 2 or run_parts is None or n <= 256 * LEAF:
        return t(0.0) + t(_whole(a, c, mode))
    b = _levels.get(n)
    if b is None:       # (7 us for 1M elements: a tenth of the sum split in two)
        if len(_levels) >= 64:
            _levels.clear()
        b = _levels[n] = _level(n)
    k = b.size - 1
    p = 1
    while 2 * p <= parts and k // (2 * p) >= 64:
        p *= 2
    v = np.empty(k, a.dtype)
    addr = a.ctypes.data
    bounds = [k * i // p for i in range(p + 1)]
    native = _native(a.dtype)
    if native is None:
        run_parts(lambda j0, j1: _runs(addr, c, mode, b, v, j0, j1), bounds)
    elif not _eager_kernels().run_native(native, np.asarray(bounds, np.int64),
                                         (addr, np.full(1, c), mode, b, v)):
        _runs(addr, c, mode, b, v, 0, k)    # (the helpers asleep or held: this thread)
    return t(0.0) + t(_tree(v))


# The first pass's native form (compiler/eager_threads.native_source: runs claimed and summed
# in compiled code by this thread and the helpers, no GIL between them), one per dtype. (It
# inlines the functions above: this file is part of every kernel's cache key,
# diskcache._runtime_id.)

_natives: dict = {}


def _eager_kernels():
    from corejax.compiler import eager_kernels as module   # (it imports this module)
    return module


def _native(dt):
    dt = np.dtype(dt)
    if dt not in _natives:
        from corejax.compiler import diskcache
        source = "\n".join([
            "import numpy as np", "from numba import njit",
            "from corejax.compiler.eager_sums import _runs", "", "",
            '@njit(error_model="numpy", nogil=True, cache=True)',
            "def kernel(lo, hi, addr, c, mode, b, v):",
            "    _runs(addr, c[0], mode, b, v, lo, hi)"]) + "\n"
        params = ["lo", "hi", ("int", "addr"), ("array", "c", dt, False), ("int", "mode"),
                  ("array", "b", np.int64, False), ("array", "v", dt, False)]
        arr = diskcache.numba_type
        sig = (types.int64, arr(dt), types.int64, arr(np.int64), arr(dt))
        _natives[dt] = _eager_kernels().native_kernel(source, params, sig)
    return _natives[dt]
