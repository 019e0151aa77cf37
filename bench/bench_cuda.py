"""The CUDA backend on a GPU: selu over 1M elements, a 4096^2 matmul against the card's FP32
peak, and the MNIST MLP epoch (configs/mlp.yaml's step), each beside the CPU backend.

    python bench/bench_cuda.py --data-dir ../shared/data/mnist [--repeats 5]
    NUMBA_ENABLE_CUDASIM=1 python bench/bench_cuda.py --tiny     # smoke run in the simulator

Times are medians over --repeats runs after a warm-up (compilation), each ended by
block_until_ready, so asynchronous launches are fully counted. The MNIST epoch reuses
bench_mnist.py's data, initial parameters and epoch loop (469 steps, host batches transferred
by the jitted call as a user's would be).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

# FP32 lanes per multiprocessor by compute capability (NVIDIA's CUDA C programming guide,
# "arithmetic instructions" throughput table).
_FP32_PER_SM = {(6, 0): 64, (6, 1): 128, (7, 0): 64, (7, 5): 64, (8, 0): 64, (8, 6): 128,
                (8, 7): 128, (8, 9): 128, (9, 0): 128}


def median_time(fn, repeats):
    fn()                                                    # warm-up: compilation
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def card_peak_gflops():
    """The FP32 FMA peak of cuda:0 in GFLOP/s, or None when it cannot be read (simulator)."""
    from numba import cuda
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        return None
    dev = cuda.get_current_device()
    lanes = _FP32_PER_SM.get(tuple(dev.compute_capability))
    if lanes is None:
        return None
    clock_khz = dev.CLOCK_RATE
    return 2 * lanes * dev.MULTIPROCESSOR_COUNT * clock_khz / 1e6


def bench_kernels(n_selu, n_matmul, repeats):
    import corejax as jax
    import corejax.numpy as jnp
    from corejax import nn as jnn

    gpu, cpu = jax.devices("cuda")[0], jax.devices("cpu")[0]
    rows = []
    x = np.linspace(-3, 3, n_selu, dtype=np.float32)
    selu = {b: jax.jit(jnn.selu, backend=b) for b in ("cpu", "cuda")}
    for b, dev in (("cpu", cpu), ("cuda", gpu)):
        xd = jax.device_put(x, dev)
        t = median_time(lambda: selu[b](xd).block_until_ready(), repeats)
        rows.append((f"selu {n_selu:,} float32", b, t, None))
    a = np.random.default_rng(0).standard_normal((n_matmul, n_matmul), dtype=np.float32)
    mm = {b: jax.jit(jnp.matmul, backend=b) for b in ("cpu", "cuda")}
    for b, dev in (("cpu", cpu), ("cuda", gpu)):
        ad = jax.device_put(a, dev)
        t = median_time(lambda: mm[b](ad, ad).block_until_ready(), repeats)
        rows.append((f"matmul {n_matmul}^2 float32", b, t, 2 * n_matmul ** 3 / t / 1e9))
    return rows


def bench_mnist_epoch(data_dir, repeats, limit):
    import corejax as cj
    import corejax.numpy as cjnp
    import optim
    import train
    from bench_mnist import init_params, load_batches

    batches = load_batches(data_dir)[:limit]
    cfg = train.load_config(os.path.join(ROOT, "configs", "mlp.yaml"))
    model, tx, loss_of = (train.build_model(cfg), train.build_optimizer(cfg),
                          train.make_loss(cfg["loss"]))

    def loss_fn(params, x, y):
        return loss_of(model.apply(params, x), y)

    rows = []
    for backend in ("cpu", "cuda"):
        @cj.jit
        def step(params, opt_state, x, y):          # train.py's step
            loss, grads = cj.value_and_grad(loss_fn)(params, x, y)
            updates, opt_state = tx.update(grads, opt_state, params)
            return optim.apply_updates(params, updates), opt_state, loss

        dev = cj.devices(backend)[0]
        params = cj.device_put({"params": {
            f"Dense_{i}": {"kernel": cjnp.asarray(w), "bias": cjnp.asarray(b)}
            for i, (w, b) in enumerate(init_params())}}, dev)
        state = {"p": params, "o": tx.init(params)}

        def epoch():
            p, o = state["p"], state["o"]
            for x, y in batches:
                p, o, loss = step(p, o, x, y)
            cj.block_until_ready(p)
            state["p"], state["o"] = p, o

        rows.append((f"MNIST MLP epoch ({len(batches)} steps)", backend,
                     median_time(epoch, repeats), None))
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", default=os.environ.get("COREJAX_DATA_DIR"))
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--tiny", action="store_true",
                    help="tiny sizes, for a smoke run under NUMBA_ENABLE_CUDASIM=1")
    args = ap.parse_args(argv)
    import corejax as jax
    jax.devices("cuda")                              # a clear error without a GPU
    n_selu, n_mm, steps = (64, 16, 2) if args.tiny else (1 << 20, 4096, None)
    rows = bench_kernels(n_selu, n_mm, args.repeats)
    if args.data_dir:
        rows += bench_mnist_epoch(args.data_dir, args.repeats if not args.tiny else 1, steps)
    peak = card_peak_gflops()
    print(f"{'benchmark':<32} {'backend':<8} {'median':>12} {'GFLOP/s':>10} {'cuda/cpu':>9}")
    cpu_time = {}
    for name, backend, t, gflops in rows:
        if backend == "cpu":
            cpu_time[name] = t
        ratio = f"{t / cpu_time[name]:.3f}" if backend == "cuda" and name in cpu_time else ""
        g = f"{gflops:.1f}" if gflops is not None else ""
        print(f"{name:<32} {backend:<8} {t * 1e3:>9.2f} ms {g:>10} {ratio:>9}")
    if peak is not None:
        best = max(g for _, b, _, g in rows if b == "cuda" and g is not None)
        print(f"card FP32 peak {peak:,.0f} GFLOP/s; matmul reaches {100 * best / peak:.1f}%")


if __name__ == "__main__":
    main()
