"""Eager elementwise transcendentals run the scalar code that jit's kernels inline.

In JAX an eager op and the same op under jit give the same bits: both run XLA's kernels. Here a
fused kernel computes a transcendental with the compiler's own scalar code (compiler/fastmath.py's
polynomials, libm through Numba, kernel_lib), while the primitive's NumPy impl computes float32 in
float64 and rounds once, and uses NumPy's float64 functions: the two differ in the last bit on a
fraction of inputs (float32 pow on about 20% of them). So an eager call of a primitive in
`PRIMITIVES` on float32 or float64 operands, at every size, runs a one-loop kernel built from the
primitive's own elementwise lowering rule, the very expression a fused kernel inlines, and
constant folding under jit (compiler/passes.py) evaluates them the same way.

`PRIMITIVES` lists the elementwise primitives whose lowering is not bit-identical to their NumPy
impl. A lowering rule may also ask for it itself (`rule.eager_kernel = True`): the special
functions of lax/special.py do, whose impl runs the lowering's own scalar code but on one
thread (here their long loops split over the cores, and on float32 digamma, bessel_i0e/i1e,
erfcx, ndtri, zeta and polygamma run fastmath's kernels, as jit does). Arithmetic,
comparisons, sqrt, floor/ceil/round, rem, nextafter, max/min stay on NumPy (IEEE-exact on both
sides, and NumPy runs them on broadcast views without copying).
(`FAST`, further down, lists primitives whose NumPy impl is slow on large operands: those run
compiled loops with the NumPy impl's own bits above FAST_MIN_SIZE; `REDUCTIONS`, at the end,
the float sums that run NumPy's pairwise order compiled, compiler/eager_sums.py.) Long loops
are split over the cores other processes leave free (`call_split`). tests/test_eager_kernels.py
checks eager == jit bit for bit for every float elementwise primitive, listed here or not.

Kernels are built on first use per (primitive, dtype, params) and cached on disk like jit's
(compiler/diskcache.py: a new process loads machine code instead of compiling); Numba is imported
then, not with corejax. Array operands are passed flat and C-contiguous (a strided or broadcast
operand is copied first), so a kernel serves every shape, 0-d included.
"""
from __future__ import annotations

import functools
import math
import time

import numpy as np

from corejax import array
from corejax._machine import usable_cores
from corejax.compiler import registry
from corejax.core import ShapedArray

__all__ = ["PRIMITIVES", "runner", "evaluate", "install"]

PRIMITIVES = frozenset({
    "exp", "exp2", "log", "log1p", "expm1", "tanh", "logistic", "sin", "cos", "tan", "asin",
    "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "erf", "erfc", "erf_inv", "pow",
    "atan2", "cbrt", "rsqrt", "lgamma"})

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _source(primitive, dtype: np.dtype, out_dtype: np.dtype, arity: int, params: dict) -> str:
    """The kernel module: one loop over flat operands, the statement codegen emits for the
    primitive's equation inside it."""
    from corejax.compiler.scalar_ctx import ScalarCtx
    rule = registry.elementwise_lowerings[primitive]
    ctx = ScalarCtx()
    ctx.in_dtypes, ctx.out_dtype = [dtype] * arity, out_dtype
    expr = rule(ctx, *[f"x{j}" for j in range(arity)], **params)
    operands = ", ".join(f"a{j}" for j in range(arity))
    loads = [f"        x{j} = a{j}[i0]" for j in range(arity)]
    return "\n".join([
        "import math", "import numpy as np", "from numba import njit", *sorted(ctx.imports),
        "", "",
        '@njit(error_model="numpy", nogil=True, cache=True)',
        f"def kernel(n0, {operands}, o0):",
        "    for i0 in range(n0):",
        *loads,
        f"        v0 = np.{out_dtype.name}({expr})",
        "        o0[i0] = v0",
    ]) + "\n"


def _build(primitive, dtype: np.dtype, arity: int, params: dict):
    from numba import types
    from corejax.compiler import diskcache
    out_dtype = np.dtype(primitive.abstract_eval(
        *[ShapedArray((), dtype)] * arity, **params).dtype)
    source = _source(primitive, dtype, out_dtype, arity, params)
    sig = [types.int64] + [diskcache.numba_type(dtype)] * arity + \
        [diskcache.numba_type(out_dtype)]
    return load_flat(source, sig), out_dtype


@functools.lru_cache(maxsize=None)
def runner(primitive):
    """`run(values, params) -> ndarray | None` evaluating `primitive` on NumPy operands with
    its compiled scalar code, None where it does not apply (another dtype, mismatched operands:
    the NumPy impl then runs, and raises the primitive's own errors); None for a primitive
    outside PRIMITIVES (or a rule's `eager_kernel`), FAST and REDUCTIONS."""
    if primitive.name in FAST:
        return _fast_runner(primitive.name)
    if primitive.name in REDUCTIONS:
        return REDUCTIONS[primitive.name](primitive)
    rule = registry.elementwise_lowerings.get(primitive)
    if rule is None or (primitive.name not in PRIMITIVES and
                        not getattr(rule, "eager_kernel", False)):
        return None
    kernels: dict = {}

    def run(values, params):
        v0 = values[0]
        dt = v0.dtype
        if dt not in _FLOATS:
            return None
        for v in values[1:]:
            if v.dtype != dt or v.shape != v0.shape:
                return None
        try:
            key = (dt, len(values), tuple(params.items()) if params else ())
            built = kernels.get(key)
        except TypeError:   # an unhashable parameter
            return None
        if built is None:
            built = kernels[key] = _build(primitive, dt, len(values), params)
        fn, out_dtype = built
        out = np.empty(v0.shape, out_dtype)
        call_split(fn, v0.size, [v.ravel() for v in values], None, [out.reshape(-1)])
        return out

    return run


# --- splitting a loop over threads ------------------------------------------------------------
#
# XLA runs a large elementwise op on all of the machine's cores; so do these kernels (compiled
# nogil), where that pays: a flat loop is cut into PARTS_PER_CORE contiguous parts per core (at
# multiples of 64 elements), and this thread and the helpers (compiler/eager_threads.py: they
# spin 50 us for work before they sleep) take parts in turn until none is left, claiming them
# in compiled code (the kernel's native form) with no GIL between them. Each element is
# computed by the same code wherever it lands, so results do not depend on the split. A
# helper that gets a core late leaves its parts to this thread, which never waits for a helper
# that has not started a part.
#
# "Where that pays" is measured, per kernel: the time per element of its unsplit and of its
# split calls (moving averages). A loop predicted to take less than SPLIT_MIN_SECONDS unsplit
# never splits (a post and a wake cost microseconds, a sleeping helper 20-110 us to start); a
# longer one splits when its split calls have been faster by the factor SPLIT_GAIN (memory-
# bound loops gain less, and lose under load), and every EXPLORE-th call tries the other way,
# so the choice follows the machine's load. Measured there (1M float32, medians, one thread /
# split, both cores free, helpers spinning): exp 346 / 204 us, tanh 600 / 336 us, hypot's loop
# 503 / 283 us, the pairwise sum 66 / 40 us. (With parts handed to helpers through Python
# calls, each taking the GIL, the split exp took 329 us and the sum 154.) With other processes
# keeping both cores busy a split only costs, and this sees it.

SPLIT_MIN = 1 << 16             # elements: below, never split (nor timed)
SPLIT_MIN_SECONDS = 30e-6       # predicted time of the unsplit loop from which it may split
SPLIT_GAIN = 0.8                # split calls must have been this much faster
PARTS_PER_CORE = 2
EXPLORE = 8
_timings: dict = {}             # kernel -> [unsplit s/element, split s/element, calls,
                                #            unsplit samples, split samples]


@functools.lru_cache(maxsize=None)
def _helpers() -> int:
    """The number of helper threads: one fewer than the usable cores, at most 3."""
    return min(usable_cores(), 4) - 1


def split_cores(key, n: int) -> int:
    """How many cores a loop of n elements of kernel `key` should use now (see above): 1 below
    SPLIT_MIN elements, where it is predicted shorter than SPLIT_MIN_SECONDS (or was timed
    fewer than twice), without helper threads, or where split calls have not been faster by
    the factor SPLIT_GAIN (but on every EXPLORE-th call), once split three times (the first
    split of a process may start threads and load code; `timed` keeps the faster of the next
    two); else all the helpers' and this thread's."""
    if n < SPLIT_MIN:
        return 1
    t = _timings.get(key)
    if t is None or t[3] < 2 or n * t[0] < SPLIT_MIN_SECONDS:
        return 1
    helpers = _helpers()
    if helpers < 1:
        return 1
    t[2] += 1
    split = t[4] < 3 or t[1] < SPLIT_GAIN * t[0]
    if t[2] % EXPLORE == 0:
        split = not split
    return helpers + 1 if split else 1


def timed(key, n: int, cores: int, call):
    """call() (a loop of n elements of kernel `key` on `cores` cores), its time recorded per
    way: from its second call on (the first may load code or start threads), the fastest of
    three, then a moving average, a preempted call counting as at most twice the average. A
    split call that finds the helper threads asleep is not recorded: it measures their
    waking, not the split (they then spin for the calls that follow)."""
    if n < SPLIT_MIN:
        return call()
    if cores > 1:
        from corejax.compiler import eager_threads
        if not eager_threads.helpers_awake():   # (this call wakes them: not a split's time)
            return call()
    start = time.perf_counter()
    out = call()
    per = (time.perf_counter() - start) / n
    t = _timings.get(key)
    if t is None:
        t = _timings[key] = [None, None, 0, 0, 0]
    i = 0 if cores < 2 else 1
    seen = t[i + 3]
    if seen < 2:
        t[i] = per
    elif seen < 4:              # (the fastest of the first few: a start without outliers)
        t[i] = min(t[i], per)
    else:
        t[i] = 0.75 * t[i] + 0.25 * min(per, 2 * t[i])
    t[i + 3] += 1
    return out


def parts(n: int, cores: int, inner: int = 1) -> list:
    """Bounds [b0, b1, ..., bk] cutting range(n), each index `inner` elements (the rows of a
    compiled kernel's outer loop; 1 for a flat loop), into PARTS_PER_CORE parts per core of at
    least 4096 elements (k = 1 for one core), interior bounds at whole multiples of 64
    elements where an index holds fewer."""
    if cores < 2:
        return [0, n]
    k = min(PARTS_PER_CORE * cores, max(1, n * inner // 4096), n)
    align = max(1, 64 // max(inner, 1))
    return [0] + [(n * i // k) // align * align for i in range(1, k)] + [n]


def run_parts(task, bounds) -> None:
    """task(lo, hi) over each part [bounds[i], bounds[i+1]), parts taken in turn by this thread
    and the helper threads (compiler/eager_threads.py); returns when all are done (re-raising
    the first exception)."""
    if len(bounds) == 2:
        task(bounds[0], bounds[1])
        return
    from corejax.compiler import eager_threads
    eager_threads.run_parts(task, bounds, _helpers())


def native_kernel(source: str, params, sig):
    """(run, the address of its part runner) for the kernel of module `source` (argument
    types `sig`, described by `params`: eager_threads.native_source), whose parts are claimed
    and run in compiled code; None where that cannot be built (too many operands, a compile
    error: the caller then runs parts through Python)."""
    from numba import types
    from corejax.compiler import diskcache, eager_threads
    extra = eager_threads.native_source(params)
    if extra is None:
        return None
    full = (types.int64,) * 3 + (diskcache.numba_type(np.int64), types.int64) + tuple(sig)
    try:
        return diskcache.load_native(source + extra, full)
    except diskcache.KernelCompileError:
        return None


def run_native(native, bounds: np.ndarray, operands, seconds: float = 0.0) -> bool:
    """Runs a `native_kernel` over the parts between `bounds` on this thread and the helper
    threads; False (nothing run) where another thread's job holds the helpers, or where they
    sleep and the job is short (`seconds`, its predicted time on one thread: see
    eager_threads.run_native)."""
    from corejax.compiler import eager_threads
    return eager_threads.run_native(native[0], native[1], bounds, operands, _helpers(),
                                    seconds)


def start_helpers() -> None:
    """Starts the helper threads now (a compiled program that will split kernels calls it
    when built), so that a call site's first timing of its split form is not the threads'
    start."""
    if _helpers() > 0:
        from corejax.compiler import eager_threads
        eager_threads.start(_helpers())


class FlatKernel:
    """A one-loop kernel over flat operands, `kernel(n0, a0, ..., o0, ...)` of a module
    source (`fn`, compiled), and its forms whose parts are claimed and run in
    compiled code (`native_kernel`), built on a first split call, per pattern of operands
    read whole."""

    __slots__ = ("fn", "source", "sig", "natives")

    def __init__(self, fn, source: str, sig):
        self.fn, self.source, self.sig = fn, source, tuple(sig)
        self.natives: dict = {}

    def native(self, scalar):
        key = None if scalar is None else tuple(scalar)
        got = self.natives.get(key, False)
        if got is False:
            from numba.np.numpy_support import as_dtype
            arrays = self.sig[1:]
            n_in = len(arrays) if scalar is None else len(scalar)
            params = ["count"] + [
                ("array", f"a{j}" if j < n_in else f"o{j - n_in}", as_dtype(t.dtype),
                 j >= n_in or scalar is None or not scalar[j])
                for j, t in enumerate(arrays)]
            got = self.natives[key] = native_kernel(self.source, params, arrays)
        return got


def load_flat(source: str, sig) -> FlatKernel:
    """The FlatKernel of module `source` for argument types `sig` (int64, then 1-D arrays)."""
    from corejax.compiler import diskcache
    fn, _ = diskcache.load_kernel(source, sig)
    return FlatKernel(fn, source, sig)


def _predicted_seconds(key, n: int) -> float:
    """The time of kernel `key` over n elements on one thread, as timed so far (0 before)."""
    t = _timings.get(key)
    return n * t[0] if t is not None and t[0] is not None else 0.0


def _short_while_asleep(key, n: int) -> bool:
    """Whether a split of kernel `key` over n elements would find the helper threads asleep
    and not wake them (predicted shorter than eager_threads.WAKE_SECONDS): this thread then
    runs it whole, and no native form is built for it."""
    from corejax.compiler import eager_threads
    return not eager_threads.helpers_awake() and \
        _predicted_seconds(key, n) < eager_threads.WAKE_SECONDS


def call_split(kernel: FlatKernel, n, flat, scalar, outs) -> None:
    """kernel(n, *flat, *outs) for a one-loop kernel over flat operands (those marked in
    `scalar` are one element, read whole by every part) and flat outputs, split over the
    cores `split_cores` gives: parts claimed in compiled code where the kernel's native form
    builds, else run by Python calls."""
    fn = kernel.fn
    cores = split_cores(kernel, n)
    if cores > 1 and _short_while_asleep(kernel, n):
        cores = 1
    if cores < 2:
        timed(kernel, n, 1, lambda: fn(n, *flat, *outs))
        return
    bounds = parts(n, cores)
    native = kernel.native(scalar)
    if native is not None:
        seconds = _predicted_seconds(kernel, n)

        def split():
            if not run_native(native, np.asarray(bounds, np.int64), (*flat, *outs), seconds):
                fn(n, *flat, *outs)
        timed(kernel, n, cores, split)
        return

    def task(lo, hi):
        fn(hi - lo, *[a if scalar is not None and scalar[j] else a[lo:hi]
                      for j, a in enumerate(flat)], *[o[lo:hi] for o in outs])

    timed(kernel, n, cores, lambda: run_parts(task, bounds))


def call_host_split(key, fn, flat, out) -> None:
    """out[lo:hi] = fn(*[a[lo:hi] for a in flat]) over the parts of a flat output, split over
    the cores as `call_split` splits a compiled loop (timed per `key`): for host functions of
    arrays, such as SciPy's special functions, whose loops release the GIL."""
    n = out.size
    cores = split_cores(key, n)
    if cores > 1 and _short_while_asleep(key, n):
        cores = 1

    def task(lo, hi):
        out[lo:hi] = fn(*[a[lo:hi] for a in flat])

    timed(key, n, cores, lambda: run_parts(task, parts(n, cores)))


def evaluate(primitive, values, params):
    """`primitive` on NumPy operands as jit's kernels compute it, or None where the NumPy impl
    gives those bits (or the operands are not float32/float64 arrays of one shape)."""
    run = runner(primitive)
    if run is None or not values:
        return None
    return run([np.asarray(v) for v in values], params)


def install() -> None:
    """Makes eager evaluation (corejax.array.apply_primitive) use these kernels."""
    array.set_eager_kernels(runner)


# --- compiled loops with the NumPy impl's bits -----------------------------------------------
#
# Some primitives' NumPy impls are slow on large operands for reasons that have nothing to do
# with their arithmetic: np.where branches per element (select_n with a random predicate: 10 ms
# on 1M float32, and max / min order signed zeros with it), NumPy's float16 conversion, fmod
# and nextafter are scalar software loops, integer division detours through float64 arrays,
# float32 sqrt runs at half the speed of the machine's vector sqrt (1M: 362 us, 180 us).
# Above FAST_MIN_SIZE elements their eager evaluation runs a compiled loop that computes the
# NumPy impl's own bits (not the lowering's where the two differ: eager results stay what they
# were; tests/test_eager_kernels.py checks every one against its NumPy impl bit for bit).
# Below it (and for other dtypes, mismatched operands, narrow types) the NumPy impl runs, so
# small eager programs never load Numba.

FAST_MIN_SIZE = 1 << 14

_NUMBA_DTYPES = frozenset(map(np.dtype, (
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
    np.uint64, np.float32, np.float64)))
_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)
_SMALL_INTS = frozenset(map(np.dtype, (np.int8, np.int16, np.int32, np.uint8, np.uint16,
                                       np.uint32)))


def _lit(value, dt: np.dtype) -> str:
    from corejax.compiler.scalar_ctx import literal
    return literal(value, dt)


# Each builder takes the operand dtypes and the params and returns None (the NumPy impl runs)
# or (body lines computing `v0` from the loaded operands x0, x1, ..., result dtype, the dtype
# the output buffer is passed as).

def _fast_select_n(dts, params):
    # np.where(which, case1, case0); both cases are loaded, so the loop vectorizes to blends
    if len(dts) != 3 or dts[0] != np.bool_ or dts[1] != dts[2]:
        return None
    return ["v0 = x2 if x0 else x1"], dts[1], dts[1]


def _fast_max_min(is_max):
    def build(dts, params):
        # np.maximum / np.minimum (NaN: the first NaN operand), and equal operands give
        # +0 over -0 (max) or -0 over +0 (min), as XLA orders zeros
        dt = dts[0]
        if len(dts) != 2 or dts[1] != dt or dt not in (_F32, _F64):
            return None
        gt = ">" if is_max else "<"
        tie = "x0 + x1" if is_max else "-((-x0) + (-x1))"
        return [f"v0 = x0 if x0 {gt} x1 else (x1 if x1 {gt} x0 else ((x0 if x0 != 0 else {tie})"
                f" if x0 == x1 else (x0 if x0 != x0 else x1)))"], dt, dt
    return build


def _fast_sign(dts, params):
    # np.sign, floats keeping zeros' signs and NaN's bits
    dt = dts[0]
    if dt == np.bool_ or dt not in _NUMBA_DTYPES:
        return None
    if dt.kind == "u":
        return [f"v0 = {_lit(1, dt)} if x0 > 0 else {_lit(0, dt)}"], dt, dt
    rest = "x0" if dt.kind == "f" else _lit(0, dt)
    return [f"v0 = {_lit(1, dt)} if x0 > 0 else ({_lit(-1, dt)} if x0 < 0 else {rest})"], dt, dt


def _fast_sqrt(dts, params):
    # IEEE sqrt (one vector instruction, as NumPy's float32 / float64 sqrt: the same bits, the
    # machine's NaN for negative operands included), which NumPy's loop runs at half the speed
    dt = dts[0]
    if dt not in (_F32, _F64):
        return None
    return [f"v0 = np.{dt.name}(math.sqrt(x0))"], dt, dt


def _fast_round(dts, params):
    # rounding_method 0 (half away from zero): trunc(x), plus sign(x) where |x - trunc(x)|
    # >= 1/2 (NaN and infinities keep trunc's result)
    dt = dts[0]
    if dt not in (_F32, _F64) or params.get("rounding_method", 1) != 0:
        return None
    return ["t = np.trunc(x0)",
            f"v0 = t + ({_lit(1, dt)} if x0 > 0 else {_lit(-1, dt)}) "
            f"if abs(x0 - t) >= {_lit(0.5, dt)} else t"], dt, dt


def _fast_nextafter(dts, params):
    # C's nextafter on the bits: kernel_lib's, which the CPU lowering calls too
    dt = dts[0]
    if len(dts) != 2 or dts[1] != dt or dt not in (_F32, _F64):
        return None
    return [f"v0 = nextafter_f{dt.itemsize * 8}(x0, x1)"], dt, dt


def _fast_div(dts, params):
    # floats: IEEE division, NumPy's bits (the machine's, split over the free cores; NumPy's
    # loop runs on one); integers of up to 32 bits: trunc(float64(x) / float64(y)) (exact),
    # -1 (signed) or the maximum (unsigned) where y == 0, wrapped to the type as NumPy's cast
    # wraps it
    dt = dts[0]
    if len(dts) != 2 or dts[1] != dt:
        return None
    if dt in (_F32, _F64):
        return ["v0 = x0 / x1"], dt, dt
    if dt not in _SMALL_INTS:
        return None
    on_zero = -1 if dt.kind == "i" else np.iinfo(dt).max
    return [f"v0 = {_lit(on_zero, dt)} if x1 == 0 else "
            f"np.{dt.name}(np.int64(np.float64(x0) / np.float64(x1)))"], dt, dt


def _fast_integer_pow(dts, params):
    # floats: the impl's repeated squaring, product for product (1 / it for y < 0), so
    # x ** -1 (jnp.reciprocal) and x ** 2 run split over the free cores with its bits
    dt, y = dts[0], params.get("y", 0)
    if dt not in (_F32, _F64) or y == 0:
        return None
    lines, acc, base, m = [], None, "x0", abs(y)
    while m:
        if m & 1:
            lines.append(f"p{len(lines)} = {base if acc is None else f'{acc} * {base}'}")
            acc = f"p{len(lines) - 1}"
        m >>= 1
        if m:
            lines.append(f"q{len(lines)} = {base} * {base}")
            base = f"q{len(lines) - 1}"
    lines.append(f"v0 = {_lit(1, dt)} / {acc}" if y < 0 else f"v0 = {acc}")
    return lines, dt, dt


def _fast_rem(dts, params):
    dt = dts[0]
    if len(dts) != 2 or dts[1] != dt:
        return None
    if dt in _SMALL_INTS:
        # C's %: x - trunc(x / y) * y (the quotient exact in float64); x where y == 0
        return ["if x1 == 0:", "    v0 = x0", "else:",
                "    q = np.int64(np.float64(x0) / np.float64(x1))",
                f"    v0 = np.{dt.name}(np.int64(x0) - q * np.int64(x1))"], dt, dt
    if dt != _F32:
        return None
    return ["v0 = fmod_f32(x0, x1)"], dt, dt


def _fast_convert(dts, params):
    new = np.dtype(params.get("new_dtype"))
    if dts[0] != _F32 or new != np.float16:
        return None
    if _hardware_f16():
        # the machine's conversion (it vectorizes) rounds as NumPy's does; NumPy keeps a NaN's
        # payload unquieted (its top 10 bits, 1 if those are 0)
        return [
            "b = bitcast(x0, np.uint32)",
            "n = np.uint16(((b >> np.uint32(16)) & np.uint32(0x8000)) | "
            "(np.uint32(0x7c00) + ((b & np.uint32(0x7fffff)) >> np.uint32(13))))",
            "n = n if (n & np.uint16(0x3ff)) != 0 else n | np.uint16(1)",
            "v0 = n if x0 != x0 else f32_to_f16_bits(x0)",
        ], np.dtype(np.float16), np.dtype(np.uint16)
    # float32 -> float16 bits, rounding to nearest even as NumPy's conversion does; NaN keeps
    # the top of its payload (and stays a NaN), overflow gives infinity
    return [
        "b = bitcast(x0, np.uint32)",
        "s = np.uint32((b >> np.uint32(16)) & np.uint32(0x8000))",
        "a = b & np.uint32(0x7fffffff)",
        "if a >= np.uint32(0x7f800000):",
        "    h = np.uint32(0x7c00) + (a & np.uint32(0x7fffff)) // np.uint32(8192)",
        "    if a > np.uint32(0x7f800000) and h == np.uint32(0x7c00):",
        "        h = np.uint32(0x7c01)",
        "elif a >= np.uint32(0x477ff000):",
        "    h = np.uint32(0x7c00)",
        "elif a >= np.uint32(0x38800000):",
        "    m = a - np.uint32(0x38000000)",
        "    h = (m + np.uint32(0xfff) + ((m >> np.uint32(13)) & np.uint32(1))) >> np.uint32(13)",
        "elif a > np.uint32(0x33000000):",
        "    e = a >> np.uint32(23)",
        "    mant = (a & np.uint32(0x7fffff)) | np.uint32(0x800000)",
        "    sh = np.uint32(126) - e",
        "    h = mant >> sh",
        "    rest = mant - (h << sh)",
        "    half = np.uint32(1) << (sh - np.uint32(1))",
        "    if rest > half or (rest == half and (h & np.uint32(1)) != 0):",
        "        h += np.uint32(1)",
        "else:",
        "    h = np.uint32(0)",
        "v0 = np.uint16(s | h)",
    ], np.dtype(np.float16), np.dtype(np.uint16)


def _hardware_f16() -> bool:
    """Whether the CPU converts float32 to float16 itself (x86-64 since F16C, ARM64): LLVM
    would otherwise call a compiler-rt routine that Numba does not link."""
    import platform
    from llvmlite import binding
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return platform.machine().lower() in ("aarch64", "arm64")
    return bool(binding.get_host_cpu_features().get("f16c"))


FAST = {
    "select_n": _fast_select_n, "max": _fast_max_min(True), "min": _fast_max_min(False),
    "sign": _fast_sign, "round": _fast_round, "nextafter": _fast_nextafter, "div": _fast_div, "rem": _fast_rem,
    "convert_element_type": _fast_convert, "sqrt": _fast_sqrt,
    "integer_pow": _fast_integer_pow,
}


def _fast_source(body, dts, scalar, out_view) -> str:
    operands = ", ".join(f"a{j}" for j in range(len(dts)))
    hoisted = [f"    x{j} = a{j}[0]" for j in range(len(dts)) if scalar[j]]
    loads = [f"        x{j} = a{j}[i0]" for j in range(len(dts)) if not scalar[j]]
    return "\n".join([
        "import math", "import numpy as np", "from numba import njit",
        "from corejax.compiler.kernel_lib import (bitcast, f32_to_f16_bits, fmod_f32,",
        "                                       nextafter_f32, nextafter_f64)", "", "",
        '@njit(error_model="numpy", nogil=True, cache=True)',
        f"def kernel(n0, {operands}, o0):",
        *hoisted,
        "    for i0 in range(n0):",
        *loads,
        *[f"        {line}" for line in body],
        "        o0[i0] = v0",
    ]) + "\n"


def _fast_runner(name):
    build = FAST[name]
    kernels: dict = {}

    def run(values, params):
        shape = None
        for v in values:
            if v.dtype not in _NUMBA_DTYPES:
                return None
            if v.ndim and shape is None:
                shape = v.shape
        if shape is None:
            return None
        n = math.prod(shape)
        if n < FAST_MIN_SIZE:
            return None
        flat, scalar = [], []
        for j, v in enumerate(values):
            if v.shape == shape and v.flags.c_contiguous:
                flat.append(v.reshape(-1))
                scalar.append(False)
            # a broadcast scalar is passed as one element (only select's predicate may be
            # rank 0: other mismatched operands are left to the impl, which raises)
            elif (v.shape == () and j == 0 and name == "select_n") or (
                    v.shape == shape and not any(v.strides)):
                flat.append(np.array([v[(0,) * v.ndim]], v.dtype))
                scalar.append(True)
            elif v.shape == shape:
                flat.append(np.ascontiguousarray(v).reshape(-1))
                scalar.append(False)
            else:
                return None
        dts = tuple(v.dtype for v in values)
        try:
            key = (dts, tuple(scalar), tuple(sorted(params.items())) if params else ())
            built = kernels.get(key, False)
        except TypeError:   # an unhashable parameter
            return None
        if built is False:
            spec = build(dts, params)
            if spec is not None:
                from numba import types
                from corejax.compiler import diskcache
                body, out_dtype, out_view = spec
                sig = [types.int64] + [diskcache.numba_type(d) for d in dts] + \
                    [diskcache.numba_type(out_view)]
                fn = load_flat(_fast_source(body, dts, scalar, out_view), sig)
                spec = fn, out_dtype, out_view
            built = kernels[key] = spec
        if built is None:
            return None
        fn, out_dtype, out_view = built
        out = np.empty(shape, out_dtype)
        call_split(fn, n, flat, scalar, [out.reshape(-1).view(out_view)])
        return out

    return run


# --- reductions with the NumPy impl's bits ----------------------------------------------------
#
# A float sum reduced over every axis of a C-contiguous array of at least FAST_MIN_SIZE
# elements: NumPy's pairwise order, vectorized and split over the free cores
# (compiler/eager_sums.py), the same bits as np.sum. Other sums run the NumPy impl.

def _reduce_sum(values, params):
    (x,) = values
    if x.dtype not in (_F32, _F64) or x.size < FAST_MIN_SIZE or not x.flags.c_contiguous or \
            tuple(params.get("axes", ())) != tuple(range(x.ndim)):
        return None
    return np.asarray(pairwise_sum(x.reshape(-1)))


def pairwise_sum(flat: np.ndarray, center=None, nan_to_zero: bool = False):
    """np.add.reduce(flat) (with `center`, of (flat - center)**2, with `nan_to_zero`, of flat
    with NaNs as 0, as those arrays would hold them) for a 1-D C-contiguous float32 / float64
    array, bit for bit: compiler/eager_sums.py, on the cores `split_cores` gives."""
    from corejax.compiler import eager_sums
    key = ("pairwise_sum", flat.dtype, center is None, nan_to_zero)
    cores = split_cores(key, flat.size)
    if cores > 1 and _short_while_asleep(key, flat.size):
        cores = 1
    return timed(key, flat.size, cores, lambda: eager_sums.pairwise_sum(
        flat, cores, run_parts if cores > 1 else None, center, nan_to_zero))


def _full_product(primitive):
    """A float product over every axis of a C-contiguous array of at least FAST_MIN_SIZE
    elements: the kernel jit's code generator writes for that one-equation program (its
    multiplications reassociated into vector lanes), so eager and jit give the same bits, as
    they do in JAX, at jit's speed (NumPy's product is one sequential chain of
    multiplications: 875 us for 1M float32 here, the loop 56-80 us). Other products run the
    NumPy impl."""
    kernels: dict = {}

    def run(values, params):
        (x,) = values
        if x.dtype not in (_F32, _F64) or x.size < FAST_MIN_SIZE or \
                not x.flags.c_contiguous or \
                tuple(params.get("axes", ())) != tuple(range(x.ndim)):
            return None
        fn = kernels.get(x.dtype)
        if fn is None:
            fn = kernels[x.dtype] = _whole_reduction_kernel(primitive, x.dtype)
        out = np.empty(1, x.dtype)
        fn(x.size, x.reshape(-1), out)
        return out.reshape(())

    return run


def _whole_reduction_kernel(primitive, dt):
    """jit's fused kernel `kernel(n0, a0, r0)` reducing a flat array of dtype `dt` whole with
    `primitive` (codegen's, for the program of that one equation: the source, and so the
    cached kernel, jit's own)."""
    from numba import types
    from corejax.compiler import codegen, diskcache
    from corejax.compiler.fusion import partition
    from corejax.core import Jaxpr, JaxprEqn, Var
    x, r = Var(ShapedArray((FAST_MIN_SIZE,), dt)), Var(ShapedArray((), dt))
    (group,) = partition(Jaxpr([], [x], [JaxprEqn(primitive, [x], {"axes": (0,)}, [r])], [r]))
    t = diskcache.numba_type(dt)
    return diskcache.load_kernel(codegen.generate(group).source, (types.int64, t, t))[0]


REDUCTIONS = {"reduce_sum": lambda primitive: _reduce_sum, "reduce_prod": _full_product}

