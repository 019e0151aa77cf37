"""jit benchmarks: fused kernels vs NumPy (and vs JAX when it is importable).

    python bench/bench_jit.py [--quick]

Prints one table: median time over repeats, and ratios (corejax / NumPy, corejax / JAX).
Compile times are measured in fresh subprocesses: *cold* with an empty kernel cache
(COREJAX_CACHE_DIR pointing at a new temporary directory), *warm* with the cache the cold run
filled (Numba loads machine code instead of compiling).
"""
from __future__ import annotations

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

try:
    import jax as real_jax  # noqa: F401
    import jax.numpy as real_jnp
    HAVE_JAX = True
except ImportError:
    HAVE_JAX = False

import corejax as cj  # noqa: E402
import corejax.numpy as cjnp  # noqa: E402


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


def bench_runtime(rows, quick):
    rng = np.random.default_rng(0)
    x1 = rng.standard_normal(1_000_000).astype(np.float32)
    n = 2000 if quick else 4000
    x2 = rng.standard_normal((n, n)).astype(np.float32)
    cases = [("selu, 1M float32", selu_np, selu, x1),
             (f"(x-mean)/std rows, {n}x{n}", norm_np, norm, x2)]
    for name, f_np, f_gen, x in cases:
        t_np = timeit(lambda: f_np(x), repeats=7 if x.size > 2e6 else 15)
        f_cj = cj.jit(f_gen(cjnp))
        xc = cj.device_put(x)
        np.testing.assert_allclose(np.asarray(f_cj(xc)), f_np(x), rtol=1e-4, atol=1e-4)
        t_cj = timeit(lambda: f_cj(xc), repeats=7 if x.size > 2e6 else 15)
        t_jax = None
        if not HAVE_JAX and (f_np is selu_np or n == 4000):   # the sizes the figures are for
            t_jax = JAX_REFERENCE["selu" if f_np is selu_np else "norm"]
        if HAVE_JAX:
            f_jx = real_jax.jit(f_gen(real_jnp))
            xj = real_jax.device_put(x)
            t_jax = timeit(lambda: block(f_jx(xj)), repeats=7 if x.size > 2e6 else 15)
        rows.append((name, t_cj, t_np, t_jax))

    f = cj.jit(lambda x: x + 1)
    s = cj.device_put(np.float32(1.0))
    t_cj = timeit(lambda: f(s), repeats=15, number=20000)
    t_np = timeit(lambda: np.add(np.float32(1.0), 1), repeats=15, number=20000)
    t_jax = None
    if HAVE_JAX:
        fj = real_jax.jit(lambda x: x + 1)
        sj = real_jax.device_put(np.float32(1.0))
        t_jax = timeit(lambda: fj(sj), repeats=15, number=5000)
    rows.append(("call overhead, jit(x + 1)(scalar)", t_cj, t_np, t_jax))

    # a training step's arguments: a Flax-style parameter dict of the MLP, an empty optimizer
    # state and a batch (flattening and signature; not returned: JAX copies arrays passed
    # through a jitted function, corejax returns their buffers)
    def params_of(m):
        return {"params": {f"Dense_{i}": {"kernel": m.zeros((a, b), np.float32),
                                          "bias": m.zeros((b,), np.float32)}
                           for i, (a, b) in enumerate([(784, 512), (512, 512), (512, 10)])}}

    def step(p, o, x, y):
        return x[0, 0] + y[0, 0]

    args = (params_of(cjnp), ((), ()), cjnp.zeros((128, 784)), cjnp.zeros((128, 10)))
    f = cj.jit(step)
    t_cj = timeit(lambda: f(*args), repeats=15, number=5000)
    t_jax = None
    if HAVE_JAX:
        fj = real_jax.jit(step)
        jargs = (params_of(real_jnp), ((), ()), real_jnp.zeros((128, 784)),
                 real_jnp.zeros((128, 10)))
        t_jax = timeit(lambda: fj(*jargs), repeats=15, number=2000)
    rows.append(("call overhead, MLP step's pytree args", t_cj, None, t_jax))


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


def jax_compile_time(which):
    if not HAVE_JAX:
        return None
    script = COMPILE_SCRIPT.replace("import corejax as jax, corejax.numpy as jnp",
                                    "import jax, jax.numpy as jnp").replace(
        "from corejax.compiler import kernel_stats", "kernel_stats = lambda: {}")
    r = subprocess.run([sys.executable, "-c", script, which], capture_output=True, text=True,
                       check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])["first_call_s"]


def fmt(t):
    if t is None:
        return "-"
    if t < 1e-3:
        return f"{t * 1e6:.1f} us"
    if t < 1:
        return f"{t * 1e3:.2f} ms"
    return f"{t:.2f} s"


def main():
    quick = "--quick" in sys.argv
    rows = []
    bench_runtime(rows, quick)
    print(f"{'benchmark':44s} {'corejax':>10s} {'NumPy':>10s} {'JAX':>10s} "
          f"{'vs NumPy':>9s} {'vs JAX':>8s}")
    for name, t_cj, t_np, t_jax in rows:
        r_np = f"{t_cj / t_np:.2f}x" if t_np else "-"
        r_jax = f"{t_cj / t_jax:.2f}x" if t_jax else "-"
        star = "*" if t_jax and not HAVE_JAX else ""
        print(f"{name:44s} {fmt(t_cj):>10s} {fmt(t_np):>10s} {fmt(t_jax) + star:>10s} "
              f"{r_np:>9s} {r_jax:>8s}")
    print()
    print(f"{'compile (fresh process)':44s} {'cold':>10s} {'warm':>10s} {'JAX':>10s} "
          f"{'kernels':>9s} {'step':>8s}")
    for which, label in (("swish", "vmap(grad^3(swish)), 1200 points"),
                         ("mlp", "MNIST MLP SGD step 784-512-512-10, b128")):
        cold, warm = compile_times(which)
        t_jax = jax_compile_time(which)
        kernels = f"{cold['kernels_compiled']}/{warm['kernels_compiled']}"
        print(f"{label:44s} {fmt(cold['first_call_s']):>10s} {fmt(warm['first_call_s']):>10s} "
              f"{fmt(t_jax):>10s} {kernels:>9s} {fmt(warm['run_s']):>8s}")
    print("\nratios: corejax time / peer time (lower is better); kernels: Numba compilations "
          "cold/warm;\nstep: steady-state time per call; compile: first call, tracing included.")
    if not HAVE_JAX:
        print("*: JAX is not importable here; JAX jit's published time on this machine "
              "(DESIGN.md / the issue).")


if __name__ == "__main__":
    main()
