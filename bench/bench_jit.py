"""jit benchmarks: fused kernels vs NumPy and vs JAX (here, or under --jax-python).

    python bench/bench_jit.py [--quick] [--no-compile] [--load [N]] [--jax-python PY]

Prints one table: median time over repeats, and ratios (corejax / NumPy, corejax / JAX).
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
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

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
    """(row name, NumPy function, generator of the jnp-like function, input) per row."""
    rng = np.random.default_rng(0)
    x1 = rng.standard_normal(1_000_000).astype(np.float32)
    n = 2000 if quick else 4000
    x2 = rng.standard_normal((n, n)).astype(np.float32)
    return [("selu, 1M float32", selu_np, selu, x1),
            (f"(x-mean)/std rows, {n}x{n}", norm_np, norm, x2)]


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


def jax_times(quick, jax_python):
    """JAX's runtime rows: here, in a subprocess of jax_python, or {} (a note on stderr)."""
    if HAVE_JAX:
        return jax_runtime(quick)
    if not jax_python or not os.path.exists(jax_python):
        print(f"jax: not importable and {jax_python} not found (--jax-python): published "
              "figures only", file=sys.stderr)
        return {}
    cmd = [jax_python, os.path.abspath(__file__), "--jax-side"] + (["--quick"] if quick else [])
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
        if t_jax is None and (f_np is selu_np or x.shape[0] == 4000):   # the published sizes
            t_jax, published = JAX_REFERENCE["selu" if f_np is selu_np else "norm"], True
        rows.append((name, t_cj, t_np, t_jax, published))

    f = cj.jit(lambda x: x + 1)
    s = cj.device_put(np.float32(1.0))
    t_cj = timeit(lambda: f(s), repeats=15, number=20000)
    t_np = timeit(lambda: np.add(np.float32(1.0), 1), repeats=15, number=20000)
    rows.append((SCALAR_ROW, t_cj, t_np, theirs.get(SCALAR_ROW), False))

    args = (params_of(cjnp), ((), ()), cjnp.zeros((128, 784)), cjnp.zeros((128, 10)))
    f = cj.jit(pytree_step)
    t_cj = timeit(lambda: f(*args), repeats=15, number=5000)
    rows.append((PYTREE_ROW, t_cj, None, theirs.get(PYTREE_ROW), False))


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


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="a 2000x2000 norm instead of 4000x4000")
    ap.add_argument("--no-compile", action="store_true", help="leave out the compile times")
    ap.add_argument("--jax-python", default=os.environ.get("JAX_PYTHON",
                                                           "/work/jaxvenv/bin/python"),
                    help="a Python with jax, for JAX's column when JAX is not importable here")
    ap.add_argument("--jax-side", action="store_true", help=argparse.SUPPRESS)
    _load.add_load_argument(ap, "every timing")
    args = ap.parse_args(argv)
    if args.jax_side:       # run by jax_times under --jax-python: JAX's rows as JSON
        print(json.dumps(jax_runtime(args.quick)))
        return
    print(_load.describe(args.load))
    with _load.busy(args.load):
        measure_and_print(args)
    print(f"1-min load average after: {_load.load_average():.2f}")


def measure_and_print(args):
    rows = []
    bench_runtime(rows, args.quick, args.jax_python)
    print(f"{'benchmark':44s} {'corejax':>10s} {'NumPy':>10s} {'JAX':>10s} "
          f"{'vs NumPy':>9s} {'vs JAX':>8s}")
    for name, t_cj, t_np, t_jax, published in rows:
        r_np = f"{t_cj / t_np:.2f}x" if t_np else "-"
        r_jax = f"{t_cj / t_jax:.2f}x" if t_jax else "-"
        star = "*" if published else ""
        print(f"{name:44s} {fmt(t_cj):>10s} {fmt(t_np):>10s} {fmt(t_jax) + star:>10s} "
              f"{r_np:>9s} {r_jax:>8s}")
    if not args.no_compile:
        print()
        print(f"{'compile (fresh process)':44s} {'cold':>10s} {'warm':>10s} {'JAX':>10s} "
              f"{'kernels':>9s} {'step':>8s}")
        for which, label in (("swish", "vmap(grad^3(swish)), 1200 points"),
                             ("mlp", "MNIST MLP SGD step 784-512-512-10, b128")):
            cold, warm = compile_times(which)
            t_jax = jax_compile_time(which, args.jax_python)
            kernels = f"{cold['kernels_compiled']}/{warm['kernels_compiled']}"
            print(f"{label:44s} {fmt(cold['first_call_s']):>10s} "
                  f"{fmt(warm['first_call_s']):>10s} {fmt(t_jax):>10s} {kernels:>9s} "
                  f"{fmt(warm['run_s']):>8s}")
    print("\nratios: corejax time / peer time (lower is better); kernels: Numba compilations "
          "cold/warm;\nstep: steady-state time per call; compile: first call, tracing included.")
    if any(r[4] for r in rows):
        print("*: JAX could not be run; JAX jit's published time on this machine "
              "(DESIGN.md / the issue).")


if __name__ == "__main__":
    main()
