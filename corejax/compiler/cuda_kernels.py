"""Hand-written CUDA device kernels and the namespace every generated CUDA kernel runs in.

Every kernel here is *source text* defining `def kernel(...)` (specialized per rank / dtype /
tile size, with shape parameters as scalar arguments), so that one path serves all of them:
`load(source)` compiles it with `numba.cuda.jit` (cached per source in this process) and
tests/test_ptx.py compiles the same text to PTX with `numba.cuda.compile_ptx`, the only type
check the Numba CUDA simulator does not do.

Kernels run in `kernel_namespace()`: `cuda`, `np`, `math`, `libdevice`, `bitcast` and the scalar
helpers below (lax semantics for integer division, shifts, saturating casts, NaN-propagating
max/min, ...). On a real GPU `math.*` and `libdevice.*` are NVIDIA's libdevice. Under the
simulator (which runs each thread as Python) they are NumPy stand-ins with the same IEEE
results (Python's `math` raises on log(0) and sqrt(-1), and libdevice's stubs return None).
Numba's CPU-jitted helpers (compiler/fastmath.py, kernel_lib.py) cannot be called from CUDA
kernels (their dispatchers try to initialize a driver) and NumPy ufuncs on scalars are not
typed in CUDA kernels, so nothing generated here names them.
"""
from __future__ import annotations

import math as _pymath
import threading
from typing import NamedTuple

import numpy as np
from numba import config as _nb_config, cuda

from corejax.compiler import kernel_lib
from corejax.lax.elementwise import GILES_ERF_INV_CENTRAL, GILES_ERF_INV_TAIL
from corejax.lax.prng import threefry2x32_scalar

__all__ = ["SIM", "BLOCK", "load", "LaunchSite", "kernel_namespace", "np_name"]

SIM = bool(_nb_config.ENABLE_CUDASIM)
# Threads per block: real-GPU sizes, and small ones under the simulator (one Python thread
# per CUDA thread). Reduction blocks must be powers of two (tree reduction).
BLOCK = 8 if SIM else 256
REDUCE_BLOCK = 8 if SIM else 256
MAX_GRID = 64 if SIM else 65535


def np_name(dt) -> str:
    dt = np.dtype(dt)
    return "np.bool_" if dt == np.bool_ else f"np.{dt.name}"


# --- simulator stand-ins ------------------------------------------------------------------------

def _quiet(fn):
    def f(*args):
        with np.errstate(all="ignore"):
            return fn(*args)
    return f


def _lgamma(x):
    try:
        return _pymath.lgamma(x)
    except (ValueError, OverflowError):
        return np.inf


class _SimMath:
    """`math` for simulated kernels: IEEE results instead of Python's exceptions."""
    exp, log, log1p, expm1 = map(_quiet, (np.exp, np.log, np.log1p, np.expm1))
    tanh, sin, cos, tan = map(_quiet, (np.tanh, np.sin, np.cos, np.tan))
    asin, acos, atan = map(_quiet, (np.arcsin, np.arccos, np.arctan))
    sinh, cosh, asinh, acosh, atanh = map(_quiet, (np.sinh, np.cosh, np.arcsinh, np.arccosh,
                                                   np.arctanh))
    sqrt, log2, log10, atan2 = map(_quiet, (np.sqrt, np.log2, np.log10, np.arctan2))
    pow, fabs, copysign = map(_quiet, (np.power, np.fabs, np.copysign))
    erf, erfc = _pymath.erf, _pymath.erfc
    lgamma = staticmethod(_lgamma)
    isnan, isinf = np.isnan, np.isinf


def _erfinv(y):
    from corejax.lax.elementwise import _erf_inv_np
    return _erf_inv_np(np.asarray(y))[()]


def _fma(a, b, c):
    from corejax.lax.elementwise import _fma_np
    return _fma_np(*map(np.asarray, (a, b, c)))[()]


class _SimLibdevice:
    exp2 = exp2f = _quiet(np.exp2)
    cbrt = cbrtf = _quiet(np.cbrt)
    floor = floorf = _quiet(np.floor)
    ceil = ceilf = _quiet(np.ceil)
    trunc = truncf = _quiet(np.trunc)
    rint = rintf = _quiet(np.rint)
    fmod = fmodf = _quiet(np.fmod)
    pow = powf = _quiet(np.power)
    nextafter = nextafterf = _quiet(np.nextafter)
    erfinv = erfinvf = staticmethod(_quiet(_erfinv))
    fma = fmaf = staticmethod(_fma)


def _sim_bitcast(x, cls):
    return np.asarray(x).view(cls)[()]


if SIM:
    math = _SimMath
    libdevice = _SimLibdevice
    bitcast = _sim_bitcast
else:
    import math  # noqa: F811  (libdevice through Numba's CUDA math lowering)
    from numba.cuda import libdevice
    bitcast = kernel_lib.bitcast      # an @intrinsic: compiles for every Numba target

device = cuda.jit(device=True)


# --- scalar helpers (lax semantics; the same definitions as kernel_lib's CPU ones) -------------

@device
def int_div(x, y, on_zero):
    if y == 0:
        return on_zero
    q = x // y
    if (x % y != 0) and ((x < 0) != (y < 0)):
        q += 1
    return q


@device
def int_rem(x, y):
    """C's fmod for integers: the sign of the dividend; x where y == 0 (XLA's rem, as
    kernel_lib.int_rem on the CPU)."""
    if y == 0:
        return x
    r = x % y
    if r != 0 and (x < 0) != (y < 0):
        r -= y
    return r


@device
def float_to_int(x, lo, hi):
    if x != x:
        return 0
    xf = np.float64(x)
    if xf <= lo:
        return lo
    if xf >= hi:
        return hi
    return int(xf)


@device
def shift_left(x, y, nbits):
    if y >= nbits or y < 0:
        return x - x
    return x << y


@device
def shift_right_arith(x, y, nbits):
    if y >= nbits or y < 0:
        y = nbits - 1
    return x >> y


@device
def shift_right_logical(ux, y, nbits):
    if y >= nbits or y < 0:
        return ux - ux
    return ux >> y


@device
def round_away(x):
    t = libdevice.trunc(np.float64(x))
    if abs(x - t) >= 0.5:
        return t + (1.0 if x > 0 else -1.0)
    return t


@device
def fmax(x, y):
    # NaN propagates; -0 is below +0 (XLA's order, as on the CPU): max of two zeros is their sum
    if x != x:
        return x
    if y != y:
        return y
    if x == 0 and y == 0:
        return x + y
    return x if x >= y else y


@device
def fmin(x, y):
    if x != x:
        return x
    if y != y:
        return y
    if x == 0 and y == 0:
        return -((-x) + (-y))
    return x if x <= y else y


@device
def popcount(x, nbits):
    c = 0
    for i in range(nbits):
        c += (x >> i) & 1
    return c


@device
def integer_pow(x, n, one):
    m = n if n >= 0 else -n
    acc = one
    base = x
    while m:
        if m & 1:
            acc = acc * base
        base = base * base
        m >>= 1
    return acc if n >= 0 else one / acc


_ERF_INV_CENTRAL = tuple(np.float32(c) for c in GILES_ERF_INV_CENTRAL)
_ERF_INV_TAIL = tuple(np.float32(c) for c in GILES_ERF_INV_TAIL)


@device
def erf_inv_f32(x):
    """float32 erf_inv as XLA computes it on every backend (compiler/fastmath.erf_inv_f32)."""
    w = -math.log1p(-x * x)
    central = w < np.float32(5.0)
    t = w - np.float32(2.5) if central else math.sqrt(w) - np.float32(3.0)
    p = _ERF_INV_CENTRAL[0] if central else _ERF_INV_TAIL[0]
    for i in range(1, len(_ERF_INV_CENTRAL)):
        p = p * t + (_ERF_INV_CENTRAL[i] if central else _ERF_INV_TAIL[i])
    return x * np.float32(np.inf) if abs(x) == np.float32(1.0) else p * x


threefry2x32 = device(threefry2x32_scalar)

HELPERS = ("int_div", "int_rem", "float_to_int", "shift_left", "shift_right_arith",
           "shift_right_logical", "round_away", "fmax", "fmin", "popcount", "integer_pow",
           "erf_inv_f32", "threefry2x32")


def kernel_namespace() -> dict:
    ns = {"cuda": cuda, "np": np, "math": math, "libdevice": libdevice, "bitcast": bitcast}
    ns.update({name: globals()[name] for name in HELPERS})
    return ns


# --- loading -------------------------------------------------------------------------------------

_lock = threading.Lock()
_compiled: dict = {}


def pyfunc(source: str):
    """The plain Python function a kernel source defines (for cuda.jit or compile_ptx)."""
    ns = kernel_namespace()
    exec(compile(source, "<corejax cuda kernel>", "exec"), ns)
    return ns["kernel"]


def load(source: str):
    """The numba.cuda kernel of `source`, compiled once per process (Numba compiles it per
    argument types at its first launch)."""
    k = _compiled.get(source)
    if k is None:
        with _lock:
            k = _compiled.get(source)
            if k is None:
                k = _compiled[source] = cuda.jit(pyfunc(source))
    return k


class LaunchSite:
    """A place in a program that launches the kernel of `source` with arguments of
    `argtypes`: `site(grid, block, *args)`. On a real GPU, with a signature the driver path
    takes (corejax._cuda_driver.KernelLaunch.supports), the kernel is compiled for exactly
    these types at the first launch and launched through the driver with its parameters
    packed once; otherwise (the simulator, other argument types) through Numba's dispatcher.
    Launches of one site must not overlap (CudaExecutable runs a program under a lock)."""

    __slots__ = ("source", "argtypes", "_launch")

    def __init__(self, source: str, argtypes):
        self.source, self.argtypes = source, tuple(argtypes)
        self._launch = None

    def __call__(self, grid, block, *args):
        launch = self._launch
        if launch is None:
            launch = self._launch = self._make()
        launch(grid, block, args)

    def _make(self):
        from corejax import _cuda_driver
        kernel = load(self.source)
        if not SIM and _cuda_driver.enabled() and _cuda_driver.KernelLaunch.supports(
                self.argtypes):
            return _cuda_driver.KernelLaunch(kernel.compile(self.argtypes), self.argtypes)
        return lambda grid, block, args: kernel[grid, block](*args)


def grid_for(n: int, block: int = BLOCK) -> int:
    return max(1, min(MAX_GRID, -(-n // block)))


def target_blocks() -> int:
    """Blocks that fill the GPU: about two per multiprocessor of the current device (kernels
    that would launch fewer split their long loops over more blocks to get there)."""
    if SIM:
        return 8
    try:
        return 2 * int(cuda.get_current_device().MULTIPROCESSOR_COUNT)
    except Exception:           # no context yet, or an attribute the driver lacks
        return 264


def split_loop(blocks: int, n: int, min_part: int) -> tuple[int, int]:
    """(parts, part length) for a loop of n steps that `blocks` blocks each run whole: split
    into contiguous parts of at least min_part steps until about target_blocks() blocks run,
    none empty. (1, n) where the blocks already fill the GPU or the loop is too short."""
    if n <= 0:
        return 1, 0
    parts = max(1, min(-(-target_blocks() // max(1, blocks)), n // min_part))
    length = -(-n // parts)
    return -(-n // length), length


def partials_source(nt: str, combine: str, store_args=(), store=("C[t] = acc",)) -> str:
    """The second pass of a loop split in parts (split_loop): the partial results of each of
    `total` outputs, P[(b * parts + s) * inner + r] for s = 0, 1, ... (t = b * inner + r),
    combined in that order (`combine`: a format of a and b, cast to `nt`), so a split gives
    the same bits at every call; `store` lines write `acc` (t, b and r in scope, and
    `store_args`). kernel(P, C, total, inner, parts, *store_args)."""
    body = ["r = t % inner", "b = t // inner", "acc = P[b * parts * inner + r]",
            "for s in range(1, parts):",
            f"    acc = {nt}({combine.format(a='acc', b='P[(b * parts + s) * inner + r]')})"]
    return _kernel(["P", "C", "total", "inner", "parts", *store_args],
                   _grid_loop("total", body + list(store)))


# --- layout kernels ------------------------------------------------------------------------------

def _unravel(rank: int, t: str = "t", prefix: str = "i", sizes: str = "n") -> list[str]:
    """Lines decomposing linear index `t` into i0..i{rank-1} over sizes n0..n{rank-1}."""
    lines = [f"r = {t}"]
    for d in range(rank - 1, -1, -1):
        if d == 0:
            lines.append(f"{prefix}0 = r")
        else:
            lines.append(f"{prefix}{d} = r % {sizes}{d}")
            lines.append(f"r = r // {sizes}{d}")
    return lines


def _kernel(args: list[str], body: list[str]) -> str:
    return ("def kernel(" + ", ".join(args) + "):\n" +
            "".join(f"    {line}\n" for line in body))


def _grid_loop(total: str, body: list[str]) -> list[str]:
    return [f"for t in range(cuda.grid(1), {total}, cuda.gridsize(1)):"] + \
        [f"    {line}" for line in body]


def copy_source(rank: int, out_dtype, dyn_src: bool = False, dyn_dst: bool = False) -> str:
    """dst[doff + sum i_d*ds_d] = src[soff + sum i_d*ss_d] over the index space n0..n{r-1}:
    transposes, broadcasts (stride 0), rev (negative strides), slices, concatenation pieces.
    With dyn_src / dyn_dst the offset adds clamp(q_d[0], 0, lim_d) * stride_d read from
    device index buffers (dynamic_slice / dynamic_update_slice)."""
    R = range(rank)
    args = ["src", "dst", "total", "soff", "doff"] + [f"n{d}" for d in R] + \
        [f"ss{d}" for d in R] + [f"ds{d}" for d in R]
    pre = []
    for side, on in (("s", dyn_src), ("d", dyn_dst)):
        if on:
            args += [f"{side}q{d}" for d in R] + [f"{side}lim{d}" for d in R]
            pre.append(f"{side}o = {side}off")
            for d in R:
                pre += [f"q = np.int64({side}q{d}[0])",
                        f"q = q if q < {side}lim{d} else {side}lim{d}",
                        f"{side}o += (q if q > 0 else 0) * {side}s{d}"]
        else:
            pre.append(f"{side}o = {side}off")
    sidx = " + ".join(["so"] + [f"i{d} * ss{d}" for d in R])
    didx = " + ".join(["do"] + [f"i{d} * ds{d}" for d in R])
    body = _unravel(rank) + [f"dst[{didx}] = {np_name(out_dtype)}(src[{sidx}])"]
    return _kernel(args, pre + _grid_loop("total", body))


def pad_source(rank: int, dtype) -> str:
    """lax.pad: out[i] = x[(i_d - lo_d) / (interior_d + 1)] where that lands on an element,
    else the padding value pv[0] (negative lo/hi crop)."""
    R = range(rank)
    args = ["src", "pv", "dst", "total"] + [f"n{d}" for d in R] + [f"m{d}" for d in R] + \
        [f"lo{d}" for d in R] + [f"st{d}" for d in R]
    body = _unravel(rank) + ["ok = True", "s = 0"]
    for d in R:
        body += [f"j = i{d} - lo{d}",
                 f"if j < 0 or j % st{d} != 0 or j // st{d} >= m{d}:",
                 "    ok = False",
                 f"s = s * m{d} + (j // st{d} if ok else 0)"]
    body.append(f"dst[t] = src[s] if ok else pv[0]")
    return _kernel(args, _grid_loop("total", body))


def iota_source(dtype) -> str:
    """out[t] = the index along one dimension: (t // inner) % n."""
    return _kernel(["dst", "total", "inner", "n"],
                   _grid_loop("total", [f"dst[t] = {np_name(dtype)}((t // inner) % n)"]))


def fill_source(dtype) -> str:
    return _kernel(["dst", "total", "value"],
                   _grid_loop("total", [f"dst[t] = {np_name(dtype)}(value[0])"]))


# --- reductions along one axis (arg-reductions, cumulative sums) --------------------------------

def argreduce_source(kind: str, in_dtype, index_dtype) -> str:
    """argmax/argmin along the middle axis of an (outer, n, inner) operand, one thread per
    result; the first NaN wins (np.argmax), then the first extremum."""
    better = ">" if kind == "argmax" else "<"
    body = ["o = t // inner", "j = t - o * inner", "base = o * n * inner + j",
            "best = src[base]", "bi = 0",
            "for r in range(1, n):",
            "    v = src[base + r * inner]",
            "    if best != best:",
            "        break",
            f"    if v != v or v {better} best:",
            "        best = v",
            "        bi = r",
            f"dst[t] = {np_name(index_dtype)}(bi)"]
    return _kernel(["src", "dst", "total", "n", "inner"], _grid_loop("total", body))


def cumsum_source(dtype, reverse: bool) -> str:
    rng = "range(n - 1, -1, -1)" if reverse else "range(n)"
    body = ["o = t // inner", "j = t - o * inner", "base = o * n * inner + j",
            f"acc = {np_name(dtype)}(0)",
            f"for r in {rng}:",
            f"    acc = {np_name(dtype)}(acc + src[base + r * inner])",
            "    dst[base + r * inner] = acc"]
    return _kernel(["src", "dst", "total", "n", "inner"], _grid_loop("total", body))


def top_k_source(dtype) -> str:
    """lax.top_k along the middle axis of an (pre, n, post) operand, one thread per element:
    its rank in its lane, descending in IEEE's total order with ties by position (top_k's
    impl: NaN first, +0.0 before -0.0), counted against every element of the lane; an
    element ranked below k writes itself and its position there."""
    dt = np.dtype(dtype)
    if dt.kind == "f":   # the total order's integer key (lax/total_order.py), from the bits
        signed = np_name(np.dtype(f"int{dt.itemsize * 8}"))
        flip = f"{signed}({np.iinfo(np.dtype(f'int{dt.itemsize * 8}')).max})"
        key = lambda v: [f"b = bitcast({v}, {signed})", f"key = b ^ {flip} if b < 0 else b"]
    else:
        key = lambda v: [f"key = {v}"]
    body = ["p = t // (n * post)", "i = (t - p * n * post) // post",
            "r = t - p * n * post - i * post", "base = p * n * post + r",
            *[line.replace("key", "mine") for line in key("src[t]")], "rank = 0",
            "for m in range(n):", *["    " + line for line in key("src[base + m * post]")],
            "    if key > mine or (key == mine and m < i):", "        rank += 1",
            "if rank < k:", "    dst = p * k * post + rank * post + r", "    values[dst] = src[t]",
            "    indices[dst] = np.int32(i)"]
    return _kernel(["src", "values", "indices", "total", "n", "post", "k"],
                   _grid_loop("total", body))


def sort_source(key_dtypes, n_operands: int, less_name: str = "less") -> str:
    """lax.sort along the middle axis of (pre, n, post) operands, one block per lane: a bitonic
    sort of the lane's positions (padded to P, a power of two, in `perm`, P ints per lane)
    under "keys lexicographically, NaN after every number, then the original position" -- a
    total order, so the result is the stable sort's (np.argsort / np.lexsort with
    kind="stable"), also for is_stable=False, whose order of ties is unspecified -- then every
    operand gathered through the permutation. Padding positions sort after every element."""
    key_args = ", ".join(f"k{i}" for i in range(len(key_dtypes)))
    less = [f"def {less_name}(a, b, base, post, n, {key_args}):", "    if a >= n:",
            "        return False", "    if b >= n:", "        return True"]
    for i, dt in enumerate(key_dtypes):
        dt = np.dtype(dt)
        cast = "np.int8" if dt.kind == "b" else ""
        less += [f"    u = {cast}(k{i}[base + a * post])", f"    v = {cast}(k{i}[base + b * post])"]
        if dt.kind == "f":
            less += ["    if u < v or (u == u and v != v):", "        return True",
                     "    if v < u or (v == v and u != u):", "        return False"]
        else:
            less += ["    if u < v:", "        return True", "    if v < u:",
                     "        return False"]
    less += ["    return a < b", f"{less_name} = cuda.jit(device=True)({less_name})", ""]
    keys = ", ".join(f"x{i}" for i in range(len(key_dtypes)))
    xs = [f"x{i}" for i in range(n_operands)]
    ys = [f"y{i}" for i in range(n_operands)]
    body = [
        "tid = cuda.threadIdx.x",
        "nt = cuda.blockDim.x",
        "for lane in range(cuda.blockIdx.x, lanes, cuda.gridDim.x):",
        "    p = lane // post",
        "    base = p * n * post + (lane - p * post)",
        "    pb = lane * P",
        "    for i in range(tid, P, nt):",
        "        perm[pb + i] = i",
        "    cuda.syncthreads()",
        "    k = 2",
        "    while k <= P:",
        "        j = k // 2",
        "        while j > 0:",
        "            for i in range(tid, P, nt):",
        "                l = i ^ j",
        "                if l > i:",
        "                    a = perm[pb + i]",
        "                    b = perm[pb + l]",
        "                    if (i & k) == 0:",
        f"                        swap = {less_name}(b, a, base, post, n, {keys})",
        "                    else:",
        f"                        swap = {less_name}(a, b, base, post, n, {keys})",
        "                    if swap:",
        "                        perm[pb + i] = b",
        "                        perm[pb + l] = a",
        "            cuda.syncthreads()",
        "            j = j // 2",
        "        k = k * 2",
        "    for i in range(tid, n, nt):",
        "        src = base + perm[pb + i] * post",
        "        dst = base + i * post",
        *[f"        {y}[dst] = {x}[src]" for x, y in zip(xs, ys)],
        "    cuda.syncthreads()",
    ]
    return "\n".join(less) + "\n" + _kernel(xs + ys + ["perm", "lanes", "n", "post", "P"], body)


# --- windowed reductions ------------------------------------------------------------------------

def reduce_window_source(rank: int, kind: str, dtype) -> str:
    """One thread per output element; window taps innermost, out-of-range (padding) taps
    skipped, starting from the identity `init[0]`."""
    R = range(rank)
    args = ["src", "init", "dst", "total"] + [f"n{d}" for d in R] + [f"m{d}" for d in R] + \
        [f"w{d}" for d in R] + [f"s{d}" for d in R] + [f"lo{d}" for d in R] + \
        [f"bd{d}" for d in R] + [f"wd{d}" for d in R]
    comb = {"sum": "acc + v", "max": "fmax(acc, v)", "min": "fmin(acc, v)"}[kind]
    if np.dtype(dtype).kind != "f" and kind != "sum":
        comb = "(acc if acc >= v else v)" if kind == "max" else "(acc if acc <= v else v)"
    body = _unravel(rank) + ["acc = init[0]"]
    ind = ""
    for d in R:
        body += [f"{ind}for k{d} in range(w{d}):",
                 f"{ind}    p{d} = i{d} * s{d} + k{d} * wd{d} - lo{d}",
                 f"{ind}    if p{d} >= 0 and p{d} % bd{d} == 0 and p{d} // bd{d} < m{d}:"]
        ind += "        "
    idx = "0"
    for d in R:
        idx = f"({idx}) * m{d} + p{d} // bd{d}"
    body += [f"{ind}v = src[{idx}]", f"{ind}acc = {np_name(dtype)}({comb})"]
    body.append("dst[t] = acc")
    return _kernel(args, _grid_loop("total", body))


# --- gather --------------------------------------------------------------------------------------

# Scatters on the device: "scatter" stores, "scatter-add" adds atomically (dtypes with a
# hardware atomic add), "scatter-mul/min/max" combine in a compare-and-swap loop on the bits
# (through an integer view of the output, for dtypes of 32 or 64 bits).
SCATTER_ATOMIC_ADD = ("int32", "uint32", "int64", "uint64", "float32", "float64")
SCATTER_CAS = {"float32": "int32", "float64": "int64", "int32": "int32", "int64": "int64",
               "uint32": "uint32", "uint64": "uint64"}
# NumPy's combiners (np.multiply / minimum / maximum .at: NaN wins a min or max), with the
# value already in the output as `c` and the update as `v`
_CAS_COMBINE = {"scatter-mul": "c * v", "scatter-min": "c if (c <= v or c != c) else v",
                "scatter-max": "c if (c >= v or c != c) else v"}


class ScatterPlan(NamedTuple):
    """A scatter kernel (see scatter_source) and its launch: int64 maps `rel` (an element's
    offset in its window), `um` (where update element t is read) and `base` (each window's
    batching offset), the number of update elements, the window size, and `view`: the
    integer dtype through which mul / min / max compare-and-swap the output, else None."""
    source: str
    maps: list
    total: int
    window: int
    view: str | None


def scatter_plan(eqn) -> ScatterPlan | None:
    """The ScatterPlan of a scatter equation, or None where it stays on the host (rank-0
    operand, a dtype without the atomic it needs). The maps lay the windows out as the impl
    does."""
    from corejax.lax.indexing import (GatherScatterMode, _scatter_update_perm,
                                      _scatter_window, _window_bases, _window_offsets)
    operand, indices, updates = eqn.invars
    kind = eqn.primitive.name
    shape, dt = operand.aval.shape, np.dtype(eqn.outvars[0].aval.dtype)
    view = SCATTER_CAS.get(dt.name) if kind in _CAS_COMBINE else None
    if not shape or (kind == "scatter-add" and dt.name not in SCATTER_ATOMIC_ADD) or (
            kind in _CAS_COMBINE and view is None):
        return None
    dn = eqn.params["dimension_numbers"]
    window = _scatter_window(dn, len(shape), updates.aval.shape)
    batch = indices.aval.shape[:-1]
    size = lambda sh: int(np.prod(sh, dtype=np.int64))
    n, w = size(batch), size(window)
    strides = [size(shape[d + 1:]) for d in range(len(shape))]
    um = np.transpose(np.arange(size(updates.aval.shape)).reshape(updates.aval.shape),
                      _scatter_update_perm(dn, updates.aval.ndim)).reshape(-1)
    base = _window_bases(shape, batch, list(zip(dn.operand_batching_dims,
                                                dn.scatter_indices_batching_dims)))
    index_dims = [(k, strides[d]) for k, d in enumerate(dn.scatter_dims_to_operand_dims)]
    hi = [shape[d] - window[d] for d in dn.scatter_dims_to_operand_dims]
    src = scatter_source(kind, shape, index_dims, indices.aval.shape[-1], w, hi,
                         eqn.params["mode"] is not GatherScatterMode.CLIP, dt)
    maps = [np.ascontiguousarray(m, np.int64).reshape(-1)
            for m in (_window_offsets(shape, window), um, base if n else np.zeros(1))]
    return ScatterPlan(src, maps, n * w, w, view)


def sort_plan(eqn, less_name: str = "less"):
    """(source, lanes, n, post, P) of a sort equation (see sort_source)."""
    dim, num_keys = eqn.params["dimension"], eqn.params["num_keys"]
    shape = eqn.invars[0].aval.shape
    size = lambda sh: int(np.prod(sh, dtype=np.int64))
    pre, n, post = size(shape[:dim]), shape[dim], size(shape[dim + 1:])
    src = sort_source([v.aval.dtype for v in eqn.invars[:num_keys]], len(eqn.invars), less_name)
    return src, pre * post, n, post, 1 << max(0, (n - 1).bit_length())


def scatter_source(kind: str, operand_shape, index_dims, n_index: int, window_size: int,
                   hi, check: bool, dtype) -> str:
    """lax.scatter / scatter-add into `out` (already a copy of the operand), one thread per
    update element: `t` is (window j, element q of the window); the window's flat start in
    the operand is base[j] (batching dims) plus each index-vector component clamped into
    [0, hi_k] times its dim's stride (`index_dims`: (component, stride) pairs); under `check`
    a window not wholly inside is dropped. rel[q] places the element in its window, um[t]
    reads it from the updates. Repeated windows: a store's winner is unspecified, sums
    accumulate in an unspecified order (as on JAX's GPU backend); mul / min / max retry a
    compare-and-swap of the element's bits (`outi`, the output's integer view) until no other
    thread changed it in between."""
    body = ["j = t // wsize", "q = t - j * wsize", "off = base[j]", "ok = True"]
    for (k, stride), h in zip(index_dims, hi):
        body.append(f"s = np.int64(idx[j * {n_index} + {k}])")
        if check:
            body.append(f"ok = ok and s >= 0 and s <= {h}")
        body += [f"s = s if s < {h} else {h}", "s = s if s > 0 else 0", f"off += s * {stride}"]
    T = np_name(dtype)
    value = f"{T}(upd[um[t]])"
    args = ["out", "idx", "upd", "rel", "um", "base", "total", "wsize"]
    if kind == "scatter":
        store = [f"out[off + rel[q]] = {value}"]
    elif kind == "scatter-add":
        store = [f"cuda.atomic.add(out, off + rel[q], {value})"]
    elif kind in _CAS_COMBINE:
        args.append("outi")
        I = np_name(np.dtype(SCATTER_CAS[np.dtype(dtype).name]))
        same = I == T
        store = ["a = off + rel[q]", f"v = {value}", "old = outi[a]", "while True:",
                 f"    c = {'old' if same else f'bitcast(old, {T})'}",
                 f"    new = {T}({_CAS_COMBINE[kind]})",
                 f"    prev = cuda.atomic.cas(outi, a, old, "
                 f"{'new' if same else f'bitcast(new, {I})'})",
                 "    if prev == old:", "        break", "    old = prev"]
    else:
        raise ValueError(f"no device scatter for {kind!r}")
    body += ["if ok:"] + [f"    {line}" for line in store]
    return _kernel(args, _grid_loop("total", body))


def gather_plan(eqn):
    """(source, fill value as a 1-element array) of a gather equation (see gather_source)."""
    from corejax.lax.indexing import GatherScatterMode, _default_fill
    op, idx = eqn.invars
    out, p = eqn.outvars[0], eqn.params
    dt = np.dtype(out.aval.dtype)
    fill = _default_fill(dt) if p["fill_value"] is None else p["fill_value"]
    src = gather_source(op.aval.shape, idx.aval.shape, out.aval.shape, p["dimension_numbers"],
                        p["slice_sizes"], p["mode"] is GatherScatterMode.FILL_OR_DROP, dt)
    return src, np.asarray([fill], dt)


def gather_source(operand_shape, indices_shape, out_shape, dn, slice_sizes, fill_mode: bool,
                  out_dtype) -> str:
    """lax.gather (index vector last), one thread per output element, all dimension numbers
    and shapes baked in: each output index splits into batch indices (which select an index
    vector) and window offsets; starts are clamped into range, or in fill mode out-of-range
    windows read `fill[0]`."""
    rank = len(out_shape)
    batch_positions = [p for p in range(rank) if p not in dn.offset_dims]
    batch_shape = indices_shape[:-1]
    nvec = indices_shape[-1]
    dropped = set(dn.collapsed_slice_dims) | set(dn.operand_batching_dims)
    kept = [d for d in range(len(operand_shape)) if d not in dropped]
    body = ["r = t"]
    for p in range(rank - 1, -1, -1):
        body += [f"o{p} = r % {out_shape[p]}", f"r = r // {out_shape[p]}"]
    blin = "0"
    for j, p in enumerate(batch_positions):
        blin = f"({blin}) * {batch_shape[j]} + o{p}"
    body += [f"ib = ({blin}) * {nvec}", "valid = True", "off = 0"]
    for d, n in enumerate(operand_shape):
        upper = n - slice_sizes[d]
        if d in dn.start_index_map:
            s = f"np.int64(idx[ib + {list(dn.start_index_map).index(d)}])"
        elif d in dn.operand_batching_dims:
            bdim = dn.start_indices_batching_dims[list(dn.operand_batching_dims).index(d)]
            s = f"o{batch_positions[bdim]}"
        else:
            s = "0"
        w = f"o{dn.offset_dims[kept.index(d)]}" if d in kept else "0"
        body.append(f"s = {s}")
        if fill_mode:
            body.append(f"valid = valid and s >= 0 and s <= {upper}")
        body += [f"s = s if s < {upper} else {upper}", "s = s if s > 0 else 0",
                 f"off = off * {n} + s + {w}"]
    body.append(f"dst[t] = op[off] if valid else {np_name(out_dtype)}(fill[0])")
    total = int(np.prod(out_shape, dtype=np.int64))
    return _kernel(["op", "idx", "dst", "fill"], _grid_loop(str(total), body))
