"""Loops under jit: corejax's compiled loops (one Numba function runs every iteration) against
its Python-driven host loop (a Python iteration calling the body's executable) and JAX's jit.

    python bench/bench_control_flow.py [--repeats 7]

Prints median times per call, ratios, and first-call (trace + compile) times, cold (empty
kernel cache) and warm (a second process loading the same cache from disk). Run it with an
interpreter that has JAX installed to get the JAX column.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np


def cases(jax_like, jnp, lax):
    """name -> (function, example arguments) written against a jax / jnp / lax triple."""
    rs = np.random.RandomState(0)
    x16 = rs.randn(16).astype(np.float32)
    W = (rs.randn(32, 32) / 6).astype(np.float32)
    U = (rs.randn(32, 16) / 4).astype(np.float32)
    b = np.zeros(32, np.float32)
    xs = rs.randn(1000, 16).astype(np.float32)
    h0 = np.zeros(32, np.float32)

    def fori_elementwise(x):
        return lax.fori_loop(0, 10_000, lambda i, c: c * 0.999 + jnp.sin(c) * 0.001, x)

    def rnn(params, h, xs):
        W, U, b = params

        def cell(h, x):
            h = jnp.tanh(W @ h + U @ x + b)
            return h, h
        return lax.scan(cell, h, xs)

    def newton_while(x):
        def body(s):
            k, y = s
            return k + 1, y - (y * y - x) / (2.0 * y)
        return lax.while_loop(lambda s: s[0] < 2000, body, (0, x + 1.0))[1]

    def rnn_grad(params, h, xs):
        def loss(params):
            hT, hs = rnn(params, h, xs)
            return jnp.sum(hs * hs)
        return jax_like.value_and_grad(loss)(params)

    def scatter_steps(x):
        def body(i, c):
            return c.at[jnp.argmax(c)].add(-1.0) * 0.999
        return lax.fori_loop(0, 1000, body, x)

    def fill_rows(buf):
        return lax.fori_loop(0, 1000, lambda i, b: b.at[i].set(jnp.sin(b[i - 1]) + 1.0), buf)

    Xb = rs.randn(64, 8).astype(np.float32)
    Yb = rs.randint(0, 3, 64)
    mlp = {"w1": (rs.randn(8, 32) / 3).astype(np.float32), "b1": np.zeros(32, np.float32),
           "w2": (rs.randn(32, 3) / 6).astype(np.float32)}

    def train_mlp(params):
        def loss(p):
            logits = jax_like.nn.relu(Xb @ p["w1"] + p["b1"]) @ p["w2"]
            return -jnp.mean(jnp.take_along_axis(jax_like.nn.log_softmax(logits),
                                                 Yb[:, None], axis=1))

        def sgd(i, p):
            return jax_like.tree_util.tree_map(lambda a, g: a - 0.1 * g, p,
                                               jax_like.grad(loss)(p))
        return lax.fori_loop(0, 100, sgd, params)

    Wbig = (rs.randn(256, 256) / 16).astype(np.float32)
    xs_big = rs.randn(100, 32, 256).astype(np.float32)

    def rnn_blas(h, xs):
        return lax.scan(lambda h, x: (jnp.tanh(h @ Wbig + x),) * 2, h, xs)

    Wbat = (rs.randn(8, 64, 64) / 8).astype(np.float32)
    x_bat = rs.randn(8, 64, 64).astype(np.float32)

    def batched_blas(x):      # a BLAS-sized batched product: one gemm per batch element
        return lax.scan(lambda c, _: (jnp.tanh(jnp.matmul(c, Wbat)), None), x, None,
                        length=100)[0]

    def sort_steps(x):
        return lax.fori_loop(0, 1000, lambda i, c: jnp.sort(c * -0.999), x)

    def host_steps(x):      # an unstable sort has no native form: a host call
        return lax.fori_loop(0, 1000, lambda i, c: lax.sort(c * -0.999, is_stable=False), x)

    def dropout_scan(key, x):
        def step(c, k):
            keep = jax_like.random.bernoulli(k, 0.9, c.shape)
            return jnp.tanh(jnp.where(keep, c, 0.0) * 1.1), jnp.sum(c)
        return lax.scan(step, x, jax_like.random.split(key, 1000))

    return {
        "fori_loop 10^4 x elementwise[16]": (fori_elementwise, (x16,)),
        "while_loop 2000 x Newton step[16]": (newton_while, (np.abs(x16),)),
        "scan RNN 1000 steps, 32 units": (rnn, ((W, U, b), h0, xs)),
        "grad of that RNN (2 scans)": (rnn_grad, ((W, U, b), h0, xs)),
        "fori 1000 x argmax+scatter-add[16]": (scatter_steps, (x16,)),
        "scan 1000 x PRNG dropout[64]": (dropout_scan, (jax_like.random.PRNGKey(0),
                                                        np.ones(64, np.float32))),
        "fori 1000 x row write, (1000,64) buf": (fill_rows, (np.zeros((1000, 64), np.float32),)),
        "fori 100 x MLP SGD step (64x8-32-3)": (train_mlp, (mlp,)),
        "scan 100 x RNN 32x256 (BLAS calls)": (rnn_blas, (np.zeros((32, 256), np.float32),
                                                       xs_big)),
        "scan 100 x batched (8,64,64) matmul": (batched_blas, (x_bat,)),
        "fori 1000 x sort[16]": (sort_steps, (x16,)),
        "fori 1000 x unstable sort (host call)": (host_steps, (x16,)),
    }


def _median_time(fn, args, repeats, block):
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        block(fn(*args))
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def corejax_times(repeats, python_driven=False):
    import corejax as cj
    import corejax.numpy as cjnp
    from corejax import lax
    from corejax.compiler import control_flow, loops
    from corejax.tree_util import tree_leaves

    def refuse(name, params):
        raise loops.Unsupported("Python-driven for the benchmark")

    block = lambda out: [np.asarray(o) for o in tree_leaves(out)]   # noqa: E731
    out = {}
    with contextlib.ExitStack() as stack:
        if python_driven:
            saved = control_flow.loops.compile_loop
            control_flow.loops.compile_loop = refuse
            stack.callback(setattr, control_flow.loops, "compile_loop", saved)
        for name, (f, args) in cases(cj, cjnp, lax).items():
            args = cj.tree_util.tree_map(cjnp.asarray, args)
            fn = cj.jit(f)
            t = time.perf_counter()
            block(fn(*args))
            first = time.perf_counter() - t
            out[name] = {"first": first, "run": _median_time(fn, args, repeats, block)}
    return out


def jax_times(repeats):
    try:
        import jax
        import jax.numpy as jjnp
    except ImportError:
        return None
    out = {}
    for name, (f, args) in cases(jax, jjnp, jax.lax).items():
        args = jax.tree_util.tree_map(jjnp.asarray, args)
        fn = jax.jit(f)
        block = lambda o: jax.block_until_ready(o)   # noqa: E731
        t = time.perf_counter()
        block(fn(*args))
        first = time.perf_counter() - t
        out[name] = {"first": first, "run": _median_time(fn, args, repeats, block)}
    return out


def _fmt(s):
    return f"{s * 1e3:9.3f} ms" if s < 10 else f"{s:9.2f} s "


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--child", choices=["compiled"], help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(corejax_times(a.repeats)))
        return
    with tempfile.TemporaryDirectory() as cache:
        os.environ["COREJAX_CACHE_DIR"] = cache
        compiled = corejax_times(a.repeats)                       # cold: empty kernel cache
        warm = json.loads(subprocess.run(
            [sys.executable, __file__, "--child", "compiled", "--repeats", "1"],
            check=True, capture_output=True, text=True, env=dict(os.environ)).stdout)
        driven = corejax_times(a.repeats, python_driven=True)
    jx = jax_times(a.repeats)
    print(f"median of {a.repeats} calls; ratios are time / compiled-loop time\n")
    head = f"{'case':36s} {'compiled':>12s} {'Python-driven':>14s} {'ratio':>7s}"
    if jx:
        head += f" {'JAX jit':>12s} {'ratio':>7s}"
    print(head)
    for name, c in compiled.items():
        row = f"{name:36s} {_fmt(c['run'])}  {_fmt(driven[name]['run'])} " \
              f"{driven[name]['run'] / c['run']:6.1f}x"
        if jx:
            row += f" {_fmt(jx[name]['run'])} {jx[name]['run'] / c['run']:6.2f}x"
        print(row)
    print("\nfirst call (trace + compile + run)")
    head = f"{'case':36s} {'cold':>12s} {'warm cache':>12s} {'Py-driven':>12s}"
    print(head + (f" {'JAX jit':>12s}" if jx else ""))
    for name, c in compiled.items():
        row = f"{name:36s} {_fmt(c['first'])} {_fmt(warm[name]['first'])} " \
              f"{_fmt(driven[name]['first'])}"
        print(row + (f" {_fmt(jx[name]['first'])}" if jx else ""))


if __name__ == "__main__":
    main()
