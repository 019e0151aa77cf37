"""jit benchmarks: fused kernels vs NumPy and vs JAX (here, or under --jax-python).

    python bench/bench_jit.py [--quick] [--no-compile] [--load [N]] [--jax-python PY]
                              [--rounds R] [--only-elementwise] [--isa {host,avx2}]

Prints tables: median time over repeats, and ratios (corejax / NumPy, corejax / JAX).

"Elementwise at memory speed" (issue #32): jit selu over 1M float32 (in cache: 8 MB moved) and
over 100M (--quick: 2**25; far beyond the 32 MiB L3), as time, GB/s (bytes read + written /
median time) and the fraction of this machine's copy bandwidth measured in the same run
(np.copyto of the same sizes on one thread, and a Numba prange copy on all threads), beside
JAX's time. corejax, JAX (a subprocess) and the copies take turns for --rounds rounds (default
3); each figure is the median of its rounds' medians, so a slow spell of this shared machine
lands on all of them. Every table row names the vector registers its fused kernels compute on,
read from the kernels' machine code (`kernel_vectors`): zmm (AVX-512), ymm (AVX/AVX2), xmm
(SSE-width packed) or scalar; and whether a kernel runs its outer loop over Numba's threads.
--isa avx2 compiles both frameworks for this CPU without AVX-512 (an AVX2-only machine's code,
on this machine's cores and memory).

Compile times are measured in fresh subprocesses: *cold* with an empty kernel cache
(COREJAX_CACHE_DIR pointing at a new temporary directory), *warm* with the cache the cold run
filled (Numba loads machine code instead of compiling); --no-compile leaves them out.

JAX's column: measured here when JAX is importable, else in a subprocess of --jax-python
($JAX_PYTHON, default /work/jaxvenv/bin/python) running this file's JAX side (the project's
environment has no JAX), else JAX's published figures (marked *). --load [N] runs N
busy-looping processes (bench/_load.py) beside every timing, JAX's subprocess included: issue
#32 compares how jit selu on 1M float32 slows down beside a competing process.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _openblas  # noqa: E402,F401  (before NumPy: see bench/_openblas.py)
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

# JAX in this interpreter (jax_runtime imports it); else it runs under --jax-python
HAVE_JAX = importlib.util.find_spec("jax") is not None

sys.path.insert(0, os.path.join(ROOT, "bench"))
import _load  # noqa: E402


def timeit(fn, repeats=15, number=None):
    fn()
    if number is None:
        t = time.perf_counter()
        fn()
        once = time.perf_counter() - t
        number = max(1, int(0.02 / max(once, 1e-7)))
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t) / number)
    return statistics.median(times)


def block(x):
    return x.block_until_ready() if hasattr(x, "block_until_ready") else x


# --- workloads -------------------------------------------------------------------------------

ALPHA, SCALE = 1.6732632423543772, 1.0507009873554805


def selu_np(x):
    return SCALE * np.where(x > 0, x, ALPHA * np.exp(x) - ALPHA)


def selu(np_like):
    def f(x):
        return SCALE * np_like.where(x > 0, x, ALPHA * np_like.exp(x) - ALPHA)
    return f


def norm_np(x):
    return (x - x.mean(axis=1, keepdims=True)) / x.std(axis=1, keepdims=True)


def norm(np_like):
    def f(x):
        m = np_like.mean(x, axis=1, keepdims=True)
        return (x - m) / np_like.std(x, axis=1, keepdims=True)
    return f


# JAX jit figures on this machine (from the issue and DESIGN.md), used for the ratio when JAX
# is not importable here; marked with '*' in the table.
JAX_REFERENCE = {"selu": 1.38e-3, "norm": 45e-3}


def runtime_cases(quick):
    """(row name, NumPy function, generator of the jnp-like function, input) per row (selu is
    the elementwise table's: elementwise_cases)."""
    rng = np.random.default_rng(0)
    n = 2000 if quick else 4000
    x2 = rng.standard_normal((n, n)).astype(np.float32)
    return [(f"(x-mean)/std rows, {n}x{n}", norm_np, norm, x2)]


def params_of(m):
    """A training step's arguments: a Flax-style parameter dict of the MLP (m: a jnp)."""
    return {"params": {f"Dense_{i}": {"kernel": m.zeros((a, b), np.float32),
                                      "bias": m.zeros((b,), np.float32)}
                       for i, (a, b) in enumerate([(784, 512), (512, 512), (512, 10)])}}


def pytree_step(p, o, x, y):
    # flattening and signature only; not returned: JAX copies arrays passed through a jitted
    # function, corejax returns their buffers
    return x[0, 0] + y[0, 0]


SCALAR_ROW = "call overhead, jit(x + 1)(scalar)"
PYTREE_ROW = "call overhead, MLP step's pytree args"


def jax_runtime(quick):
    """JAX jit's time of every runtime row, by row name (JAX must be importable)."""
    import jax
    import jax.numpy as jnp
    out = {}
    for name, _, f_gen, x in runtime_cases(quick):
        f_jx = jax.jit(f_gen(jnp))
        xj = jax.device_put(x)
        out[name] = timeit(lambda: block(f_jx(xj)), repeats=7 if x.size > 2e6 else 15)
    fj = jax.jit(lambda x: x + 1)
    sj = jax.device_put(np.float32(1.0))
    out[SCALAR_ROW] = timeit(lambda: fj(sj), repeats=15, number=5000)
    fj = jax.jit(pytree_step)
    jargs = (params_of(jnp), ((), ()), jnp.zeros((128, 784)), jnp.zeros((128, 10)))
    out[PYTREE_ROW] = timeit(lambda: fj(*jargs), repeats=15, number=2000)
    return out


def jax_times(quick, jax_python, side="runtime"):
    """JAX's rows of one table (side: "runtime", or "elementwise": by str(n)): measured here,
    in a subprocess of jax_python, or {} (a note on stderr)."""
    if HAVE_JAX:
        return jax_runtime(quick) if side == "runtime" else jax_elementwise(quick)
    if not jax_python or not os.path.exists(jax_python):
        print(f"jax: not importable and {jax_python} not found (--jax-python): published "
              "figures only", file=sys.stderr)
        return {}
    cmd = [jax_python, os.path.abspath(__file__), "--jax-side", side] + \
        (["--quick"] if quick else [])
    r = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ,
                                                                       JAX_PLATFORMS="cpu"))
    if r.returncode:
        print(f"jax side failed:\n{r.stderr[-1500:]}", file=sys.stderr)
        return {}
    return json.loads(r.stdout.strip().splitlines()[-1])


def bench_runtime(rows, quick, jax_python):
    import corejax as cj
    import corejax.numpy as cjnp
    theirs = jax_times(quick, jax_python)
    for name, f_np, f_gen, x in runtime_cases(quick):
        t_np = timeit(lambda: f_np(x), repeats=7 if x.size > 2e6 else 15)
        f_cj = cj.jit(f_gen(cjnp))
        xc = cj.device_put(x)
        np.testing.assert_allclose(np.asarray(f_cj(xc)), f_np(x), rtol=1e-4, atol=1e-4)
        t_cj = timeit(lambda: f_cj(xc), repeats=7 if x.size > 2e6 else 15)
        t_jax, published = theirs.get(name), False
        if t_jax is None and x.shape[0] == 4000:   # the published size
            t_jax, published = JAX_REFERENCE["norm"], True
        rows.append((name, t_cj, t_np, t_jax, published, vectors_of(f_cj, xc)))

    f = cj.jit(lambda x: x + 1)
    s = cj.device_put(np.float32(1.0))
    t_cj = timeit(lambda: f(s), repeats=15, number=20000)
    t_np = timeit(lambda: np.add(np.float32(1.0), 1), repeats=15, number=20000)
    rows.append((SCALAR_ROW, t_cj, t_np, theirs.get(SCALAR_ROW), False, vectors_of(f, s)))

    args = (params_of(cjnp), ((), ()), cjnp.zeros((128, 784)), cjnp.zeros((128, 10)))
    f = cj.jit(pytree_step)
    t_cj = timeit(lambda: f(*args), repeats=15, number=5000)
    rows.append((PYTREE_ROW, t_cj, None, theirs.get(PYTREE_ROW), False, vectors_of(f, *args)))


# --- machine code: the vectors fused kernels compute on --------------------------------------

# Instructions in AT&T syntax: the last register an instruction names is its destination (or,
# for a store, its source), whose class is the vector width: xmm 128 bits (SSE/AVX), ymm 256
# (AVX/AVX2), zmm 512 (AVX-512). Any instruction on ymm/zmm is vector work (loads, stores,
# arithmetic: a loop that only stores a broadcast value has no arithmetic left inside). Scalar
# floating-point code runs on xmm registers too, so an xmm instruction counts as a vector one
# only when it is packed arithmetic (`...ps`/`...pd`, integer `vp...`), and as scalar when it
# is scalar floating-point arithmetic (`...ss`/`...sd`).
_INSN = re.compile(r"^\s+([a-z][a-z0-9]*)\s[^\n]*%([xyz]mm)\d+", re.M)
_FP_OP = r"v?(?:add|sub|mul|div|max|min|sqrt|rndscale|round|cmp[a-z]*|fn?m(?:add|sub)\d{3})"
_PACKED_XMM = re.compile(rf"{_FP_OP}p[sd]$|vp(?:add|sub|mul|min|max|cmp|sll|srl|sra)[a-z0-9]*$")
_SCALAR_FP = re.compile(rf"(?:{_FP_OP}|v?u?comi)s[sd]$")


def host_isa() -> dict:
    """What Numba compiles for: CPU name, whether the target is x86, and whether AVX2 and
    AVX-512F are among its features (NUMBA_CPU_NAME / NUMBA_CPU_FEATURES override the host's,
    as they do for Numba)."""
    import platform

    import llvmlite.binding as ll
    import numba
    feats = numba.config.CPU_FEATURES
    if feats is None:
        feats = ll.get_host_cpu_features().flatten()
    on = {f[1:] for f in feats.split(",") if f.startswith("+")}
    return {"cpu": numba.config.CPU_NAME or ll.get_host_cpu_name(),
            "x86": platform.machine().lower() in ("x86_64", "amd64", "i386", "i686"),
            "avx2": "avx2" in on, "avx512f": "avx512f" in on}


def _kernel_sig(plan) -> tuple:
    """The argument types CpuExecutable compiles a KernelPlan for (loop sizes, arrays,
    outputs, reduction output)."""
    from numba import types

    from corejax.compiler import diskcache
    sig = [types.int64] * len(plan.sizes)
    sig += [diskcache.numba_type(v.aval.dtype) for v in list(plan.arrays) + list(plan.outputs)]
    if plan.reduction_out is not None:
        sig.append(diskcache.numba_type(plan.reduction_out.aval.dtype))
    return tuple(sig)


_LABEL = re.compile(r"^([A-Za-z_.$][^\s:]*):[ \t]*$", re.M)


def _function_asm(library, name: str) -> str:
    """The assembly of the kernel function `name` in a Numba code library, with the loop
    bodies Numba outlined from its `prange` loops (the `__numba_parfor_gufunc_*` functions its
    threads run, and their `__gufunc__` wrappers, into which LLVM may inline them), without
    the Python wrapper Numba adds or other functions linked beside."""
    asm = library.get_asm_str()
    parts = []
    for m in _LABEL.finditer(asm):
        label = m.group(1)
        if label == name or "__numba_parfor_gufunc_" in label:
            end = asm.find(".Lfunc_end", m.end())
            parts.append(asm[m.start():end if end >= 0 else len(asm)])
    return "\n".join(parts) if parts else asm


def kernel_asm(executable) -> list:
    """(key, the kernel function's assembly, how it was obtained, KernelPlan) per fused kernel
    of a CPU executable (`jit(f).lower(*args).compile().runtime_executable()`).

    The assembly is that of the dispatcher the executable calls (module corejax_kernel_<key>,
    loaded by diskcache.load_kernel) when this process compiled it ("compiled here"). Numba
    keeps no assembly for machine code it loaded from its disk cache: such a kernel is compiled
    once more, without the cache, from the same source for the same argument types
    ("recompiled"); the kernel cache's key holds the host CPU's name and features and Numba's
    version, so the cached code came from the same compiler for the same CPU."""
    out = []
    for _step, plan, key in getattr(executable, "kernels", ()):
        sig = _kernel_sig(plan)
        disp = getattr(sys.modules.get(f"corejax_kernel_{key}"), "kernel", None)
        cres = disp.overloads.get(sig) if disp is not None else None
        if cres is not None and not getattr(cres.library, "_disable_inspection", False):
            out.append((key, _function_asm(cres.library, cres.fndesc.mangled_name),
                        "compiled here", plan))
            continue
        ns = {"__name__": f"corejax_kernel_inspect_{key}"}
        exec(compile(plan.source.replace("cache=True", "cache=False"),  # noqa: S102
                     f"<corejax kernel {key}>", "exec"), ns)
        disp = ns["kernel"]
        disp.compile(sig)
        cres = disp.overloads[sig]
        out.append((key, _function_asm(cres.library, cres.fndesc.mangled_name),
                    "recompiled", plan))
    return out


def vector_counts(asm: str) -> dict:
    """Instructions of `asm` by the vector registers they write or store: any on zmm and on
    ymm, packed arithmetic on xmm; and scalar floating-point arithmetic ("scalar")."""
    counts = {"zmm": 0, "ymm": 0, "xmm": 0, "scalar": 0}
    for op, reg in _INSN.findall(asm):
        if reg != "xmm":
            counts[reg] += 1
        elif _PACKED_XMM.match(op):
            counts["xmm"] += 1
        elif _SCALAR_FP.match(op):
            counts["scalar"] += 1
    return counts


def vector_width(counts: dict) -> str:
    """The widest vectors counted: 'zmm', 'ymm', 'xmm', else 'scalar' (scalar floating-point
    arithmetic) or 'none' (neither: e.g. integer code on general registers)."""
    for w in ("zmm", "ymm", "xmm", "scalar"):
        if counts[w]:
            return w
    return "none"


_JUMP = re.compile(r"^\s+j[a-z]+\s+(\S+)\s*$")
# a load into a vector register: a memory operand `...)` before the last operand, an xmm/ymm/zmm
_VECTOR_LOAD = re.compile(r"\)\s*,[^\n]*%[xyz]mm\d+")


def hot_loops(asm: str) -> list:
    """The innermost loops of `asm` (a backward jump to a label above it closes a loop; one
    that holds no other loop is innermost) that load into vector registers: where an
    elementwise kernel reads its operands. A kernel's other innermost loops (a fill of a
    reduction's output when a reduced dimension is empty, say) leave its speed alone. When no
    loop loads (a loop storing a value computed outside it), every innermost loop."""
    lines = asm.splitlines()
    at, loops = {}, []
    for i, line in enumerate(lines):
        m = _LABEL.match(line)
        if m:
            at[m.group(1)] = i
            continue
        m = _JUMP.match(line)
        if m and m.group(1) in at:
            loops.append((at[m.group(1)], i))
    inner = [(a, b) for a, b in loops
             if not any(a <= c and d <= b and (c, d) != (a, b) for c, d in loops)]
    bodies = ["\n".join(lines[a:b + 1]) for a, b in inner]
    loading = [body for body in bodies if _VECTOR_LOAD.search(body)]
    return loading or bodies


def kernel_vectors(executable) -> list:
    """Per fused kernel: {key, width, counts, parallel (its outer loop over Numba's threads,
    or in parts over corejax's helper threads where its call site now chooses them), how (see
    kernel_asm)}; width and counts are those of its hot loops (hot_loops), or of the whole
    function when it has no loop."""
    out = []
    import numba
    from corejax._machine import usable_cores
    sites = getattr(executable, "thread_sites", {})
    split = {key for step, _, key in getattr(executable, "kernels", ())
             if id(step) in sites and sites[id(step)].seconds[0] > 0
             and sites[id(step)].choice() == 0}
    for key, asm, how, plan in kernel_asm(executable):
        counts = vector_counts("\n".join(hot_loops(asm)) or asm)
        prange = "parallel=True" in plan.source
        out.append({"key": key, "width": vector_width(counts), "counts": counts, "how": how,
                    "parallel": prange or key in split,
                    "threads": numba.get_num_threads() if prange else
                    min(usable_cores(), 4) if key in split else 1})
    return out


def vectors_of(f, *args) -> str:
    """One table cell: the vector width of each fused kernel jit `f` runs for `args`
    ('zmm', 'ymm x2T' for a kernel over 2 threads, ...), or '-' for none / not a CPU program."""
    try:
        exe = f.lower(*args).compile().runtime_executable()
        ks = kernel_vectors(exe)
    except Exception as e:   # a bench prints; it does not stop on a report column
        return f"? ({type(e).__name__})"
    if not ks:
        return "-"
    return ",".join(k["width"] + (f" x{k['threads']}T" if k["parallel"] else "") for k in ks)


# --- elementwise at memory speed -------------------------------------------------------------

def elementwise_sizes(quick):
    """(label, n) of the elementwise rows: in cache, then far beyond this machine's L3."""
    big = 2 ** 25 if quick else 100_000_000
    return [("1M", 1_000_000), (f"{big / 1e6:.0f}M" if big % 1_000_000 == 0
                                else f"2^{big.bit_length() - 1}", big)]


def elementwise_input(n):
    return np.random.default_rng(0).standard_normal(n, dtype=np.float32)


def _elementwise_repeats(n):
    return 15 if n <= 4_000_000 else 5


def jax_elementwise(quick):
    """JAX jit's selu time per size, by str(n) (JAX must be importable)."""
    import jax
    import jax.numpy as jnp
    f = jax.jit(selu(jnp))
    out = {}
    for _, n in elementwise_sizes(quick):
        x = jax.device_put(elementwise_input(n))
        out[str(n)] = timeit(lambda: block(f(x)), repeats=_elementwise_repeats(n))
        del x
    return out


def _parallel_copy():
    """A copy over all of Numba's threads (prange), for the bandwidth two cores reach."""
    from numba import njit, prange

    @njit(parallel=True, nogil=True)
    def copy(src, dst):
        for i in prange(src.size):
            dst[i] = src[i]
    return copy


def bench_elementwise(quick, jax_python, rounds):
    """Per size: {label, n, cj, jax, published, copy1, copy2, vectors}, each time the median of
    `rounds` rounds' medians. In each round JAX's subprocess runs, then corejax, then the copies."""
    import corejax as cj
    import corejax.numpy as cjnp
    f = cj.jit(selu(cjnp))
    copy2 = _parallel_copy()
    sizes = elementwise_sizes(quick)
    inputs, rows = {}, []
    for label, n in sizes:
        xc = inputs[n] = cj.device_put(elementwise_input(n))
        head = min(n, 1_000_000)
        np.testing.assert_allclose(np.asarray(f(xc))[:head], selu_np(np.asarray(xc)[:head]),
                                   rtol=1e-5, atol=1e-6)
        rows.append({"label": label, "n": n, "vectors": vectors_of(f, xc),
                     "cj": [], "jax": [], "copy1": [], "copy2": [], "published": False})
    for _ in range(rounds):
        theirs = jax_times(quick, jax_python, side="elementwise")
        for row in rows:
            n, xc = row["n"], inputs[row["n"]]
            reps = _elementwise_repeats(n)
            if theirs.get(str(n)) is not None:
                row["jax"].append(theirs[str(n)])
            row["cj"].append(timeit(lambda: f(xc), repeats=reps))
            src = np.asarray(xc)
            dst = np.zeros_like(src)        # touched: no page faults inside the timing
            row["copy1"].append(timeit(lambda: np.copyto(dst, src), repeats=reps))
            row["copy2"].append(timeit(lambda: copy2(src, dst), repeats=reps))
            del dst
    for row in rows:
        row["vectors"] = vectors_of(f, inputs[row["n"]])   # the threads its call site chose
        for k in ("cj", "jax", "copy1", "copy2"):
            row[k] = statistics.median(row[k]) if row[k] else None
        if row["jax"] is None and row["n"] == 1_000_000:
            row["jax"], row["published"] = JAX_REFERENCE["selu"], True
    return rows


def gbps(n, t, itemsize=4, arrays=2):
    """GB/s moving n elements `arrays` times (one read + one write: 2) in t seconds."""
    return n * itemsize * arrays / t / 1e9 if t else None


def print_elementwise(rows, rounds):
    import numba
    isa = host_isa()
    print(f"Elementwise at memory speed: jit selu on float32, 4 B read + 4 B written per "
          f"element; medians of {rounds} rounds' medians")
    print(f"Numba compiles for {isa['cpu']}: AVX2 {'yes' if isa['avx2'] else 'no'}, "
          f"AVX-512F {'yes' if isa['avx512f'] else 'no'}; {numba.get_num_threads()} Numba "
          f"threads ({numba.config.THREADING_LAYER}); os.getloadavg() "
          f"{tuple(round(v, 2) for v in os.getloadavg())}")
    if "xla_cpu_max_isa" in os.environ.get("XLA_FLAGS", ""):
        print(f"JAX: XLA_FLAGS={os.environ['XLA_FLAGS']}")
    print(f"{'size':6s} {'copy 1T':>9s} {'copy all T':>10s} {'corejax':>10s} {'GB/s':>6s} "
          f"{'of copy':>8s} {'JAX':>10s} {'GB/s':>6s} {'vs JAX':>7s}  vectors")
    for r in rows:
        n = r["n"]
        best = min(t for t in (r["copy1"], r["copy2"]) if t)
        star = "*" if r["published"] else ""
        g_jax = gbps(n, r["jax"])
        ratio = f"{r['cj'] / r['jax']:.2f}x" if r["jax"] else "-"
        print(f"{r['label']:6s} {gbps(n, r['copy1']):6.1f}GB/s {gbps(n, r['copy2']):7.1f}GB/s "
              f"{fmt(r['cj']):>10s} {gbps(n, r['cj']):6.1f} {best / r['cj']:7.0%} "
              f"{fmt(r['jax']) + star:>10s} {'-' if g_jax is None else f'{g_jax:.1f}':>6s} "
              f"{ratio:>7s}  {r['vectors']}")
    print("copy 1T: np.copyto into a touched buffer (memcpy), one thread; copy all T: a Numba "
          "prange copy loop on all\nNumba threads; of copy: corejax's GB/s / the faster "
          "copy's at the same size; vectors: the registers the\nfused kernel's hot loop "
          "computes on (zmm AVX-512, ymm AVX2, xmm 128-bit packed, or scalar), xNT: its\n"
          "outer loop on N threads (as its call site chose after the timings).")


# --- compile time (fresh processes) ----------------------------------------------------------

COMPILE_SCRIPT = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    t0 = time.perf_counter()
    import corejax as jax, corejax.numpy as jnp
    from corejax.compiler import kernel_stats
    t_import = time.perf_counter() - t0
    which = sys.argv[1]
    if which == "swish":
        def swish(x):
            return x * jax.nn.sigmoid(x)
        g = jax.grad(jax.grad(jax.grad(swish)))
        f = jax.jit(jax.vmap(g))
        args = (jnp.linspace(-4.0, 4.0, 1200),)
    else:
        rng = np.random.default_rng(0)
        sizes = [784, 512, 512, 10]
        params = [(jnp.asarray(rng.standard_normal((m, n)).astype(np.float32) * 0.05),
                   jnp.zeros((n,), jnp.float32)) for m, n in zip(sizes[:-1], sizes[1:])]

        def loss(params, x, y):
            h = x
            for i, (w, b) in enumerate(params):
                h = h @ w + b
                if i < len(params) - 1:
                    h = jax.nn.relu(h)
            logp = h - jax.nn.logsumexp(h, axis=1, keepdims=True)
            return -jnp.mean(jnp.sum(logp * y, axis=1))

        def step(params, x, y):
            grads = jax.grad(loss)(params, x, y)
            return jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads)

        f = jax.jit(step)
        x = jnp.asarray(rng.standard_normal((128, 784)).astype(np.float32))
        y = jax.nn.one_hot(jnp.asarray(rng.integers(0, 10, 128)), 10)
        args = (params, x, y)
    t = time.perf_counter()
    out = f(*args)
    jax.block_until_ready(out)
    t_first = time.perf_counter() - t
    t = time.perf_counter()
    for _ in range(5):
        jax.block_until_ready(f(*args))
    t_run = (time.perf_counter() - t) / 5
    print(json.dumps(dict(import_s=t_import, first_call_s=t_first, run_s=t_run,
                          **kernel_stats())))
""")


def compile_times(which):
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, COREJAX_CACHE_DIR=d, PYTHONPATH=ROOT)
        out = []
        for _ in range(2):   # cold, then warm on the cache the cold run wrote
            r = subprocess.run([sys.executable, "-c", COMPILE_SCRIPT, which], env=env,
                               capture_output=True, text=True, check=True)
            out.append(json.loads(r.stdout.strip().splitlines()[-1]))
        return out


def jax_compile_time(which, jax_python):
    python = sys.executable if HAVE_JAX else jax_python
    if not python or not os.path.exists(python):
        return None
    script = COMPILE_SCRIPT.replace("import corejax as jax, corejax.numpy as jnp",
                                    "import jax, jax.numpy as jnp").replace(
        "from corejax.compiler import kernel_stats", "kernel_stats = lambda: {}")
    r = subprocess.run([python, "-c", script, which], capture_output=True, text=True,
                       check=True, env=dict(os.environ, JAX_PLATFORMS="cpu"))
    return json.loads(r.stdout.strip().splitlines()[-1])["first_call_s"]


def fmt(t):
    if t is None:
        return "-"
    if t < 1e-3:
        return f"{t * 1e6:.1f} us"
    if t < 1:
        return f"{t * 1e3:.2f} ms"
    return f"{t:.2f} s"


def limit_to_avx2():
    """Numba and JAX (its subprocesses) compile for this CPU without AVX-512, as for an
    AVX2-only machine; set before Numba is imported. Kernels go to a cache folder of their own
    (corejax's kernel key holds the host's features, not the ones Numba is told to use)."""
    if "numba" in sys.modules:
        raise RuntimeError("--isa avx2 must be set before Numba is imported")
    import llvmlite.binding as ll
    feats = ll.get_host_cpu_features()
    for k in list(feats):
        if k.startswith("avx512"):
            feats[k] = False
    os.environ["NUMBA_CPU_FEATURES"] = feats.flatten()
    if ll.get_host_cpu_name() in ("znver4", "znver5"):
        os.environ["NUMBA_CPU_NAME"] = "znver3"   # the same core's tuning, minus AVX-512
    else:
        os.environ["NUMBA_CPU_NAME"] = ll.get_host_cpu_name()
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                               " --xla_cpu_max_isa=AVX2").strip()
    os.environ.setdefault("COREJAX_CACHE_DIR", os.path.join(tempfile.gettempdir(),
                                                            "corejax-bench-avx2"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="a 2000x2000 norm instead of 4000x4000, elementwise 2^25 not 100M")
    ap.add_argument("--no-compile", action="store_true", help="leave out the compile times")
    ap.add_argument("--only-elementwise", action="store_true",
                    help="the elementwise table alone")
    ap.add_argument("--rounds", type=int, default=3,
                    help="elementwise rounds (JAX, corejax, copies in turn; default 3)")
    ap.add_argument("--jax-python", default=os.environ.get("JAX_PYTHON",
                                                           "/work/jaxvenv/bin/python"),
                    help="a Python with jax, for JAX's column when JAX is not importable here")
    ap.add_argument("--jax-side", choices=("runtime", "elementwise"), help=argparse.SUPPRESS)
    ap.add_argument("--isa", choices=("host", "avx2"), default="host",
                    help="avx2: compile for this CPU without AVX-512 (Numba: NUMBA_CPU_NAME/"
                         "FEATURES; JAX: --xla_cpu_max_isa=AVX2), as on an AVX2-only machine")
    _load.add_load_argument(ap, "every timing")
    args = ap.parse_args(argv)
    if args.isa == "avx2" and not args.jax_side:
        limit_to_avx2()
    if args.jax_side:       # run by jax_times under --jax-python: JAX's rows as JSON
        side = jax_runtime if args.jax_side == "runtime" else jax_elementwise
        print(json.dumps(side(args.quick)))
        return
    print(_load.describe(args.load))
    with _load.busy(args.load):
        measure_and_print(args)
    print(f"1-min load average after: {_load.load_average():.2f}")


def measure_and_print(args):
    rounds = max(1, args.rounds)
    print_elementwise(bench_elementwise(args.quick, args.jax_python, rounds), rounds)
    if args.only_elementwise:
        return
    print()
    rows = []
    bench_runtime(rows, args.quick, args.jax_python)
    print(f"{'benchmark':40s} {'corejax':>10s} {'NumPy':>10s} {'JAX':>10s} "
          f"{'vs NumPy':>9s} {'vs JAX':>8s}  vectors (per fused kernel)")
    for name, t_cj, t_np, t_jax, published, vectors in rows:
        r_np = f"{t_cj / t_np:.2f}x" if t_np else "-"
        r_jax = f"{t_cj / t_jax:.2f}x" if t_jax else "-"
        star = "*" if published else ""
        print(f"{name:40s} {fmt(t_cj):>10s} {fmt(t_np):>10s} {fmt(t_jax) + star:>10s} "
              f"{r_np:>9s} {r_jax:>8s}  {vectors}")
    if not args.no_compile:
        print()
        print(f"{'compile (fresh process)':40s} {'cold':>10s} {'warm':>10s} {'JAX':>10s} "
              f"{'kernels':>9s} {'step':>8s}")
        for which, label in (("swish", "vmap(grad^3(swish)), 1200 points"),
                             ("mlp", "MNIST MLP SGD step 784-512-512-10, b128")):
            cold, warm = compile_times(which)
            t_jax = jax_compile_time(which, args.jax_python)
            kernels = f"{cold['kernels_compiled']}/{warm['kernels_compiled']}"
            print(f"{label:40s} {fmt(cold['first_call_s']):>10s} "
                  f"{fmt(warm['first_call_s']):>10s} {fmt(t_jax):>10s} {kernels:>9s} "
                  f"{fmt(warm['run_s']):>8s}")
    print("\nratios: corejax time / peer time (lower is better); kernels: Numba compilations "
          "cold/warm;\nstep: steady-state time per call; compile: first call, tracing included.")
    if any(r[4] for r in rows):
        print("*: JAX could not be run; JAX jit's published time on this machine "
              "(DESIGN.md / the issue).")


if __name__ == "__main__":
    main()
