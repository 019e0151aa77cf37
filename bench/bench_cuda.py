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


def _real_gpu():
    from numba import cuda
    return os.environ.get("NUMBA_ENABLE_CUDASIM") != "1" and cuda.is_available()


def card_peak_gflops():
    """The FP32 FMA peak of cuda:0 in GFLOP/s, or None when it cannot be read (simulator)."""
    from numba import cuda
    if not _real_gpu():
        return None
    dev = cuda.get_current_device()
    lanes = _FP32_PER_SM.get(tuple(dev.compute_capability))
    if lanes is None:
        return None
    clock_khz = dev.CLOCK_RATE
    return 2 * lanes * dev.MULTIPROCESSOR_COUNT * clock_khz / 1e6


def card_bandwidth_gbs():
    """(datasheet, measured) memory bandwidth of cuda:0 in GB/s: the memory clock and bus
    width the driver reports (double data rate), and a 1 GiB device-to-device copy counting
    bytes read plus written. None under the simulator."""
    from numba import cuda
    if not _real_gpu():
        return None, None
    dev = cuda.get_current_device()
    sheet = 2 * dev.MEMORY_CLOCK_RATE * 1e3 * dev.GLOBAL_MEMORY_BUS_WIDTH / 8 / 1e9
    n = 1 << 28
    a, b = cuda.device_array(n, np.float32), cuda.device_array(n, np.float32)

    def copy():
        b.copy_to_device(a)
        cuda.synchronize()
    t = median_time(copy, 10)
    return sheet, 2 * 4 * n / t / 1e9


def bench_kernels(n_selus, n_matmul, repeats):
    import corejax as jax
    import corejax.numpy as jnp
    from corejax import nn as jnn

    gpu, cpu = jax.devices("cuda")[0], jax.devices("cpu")[0]
    rows = []
    selu = {b: jax.jit(jnn.selu, backend=b) for b in ("cpu", "cuda")}
    for n_selu in n_selus:
        x = np.random.default_rng(0).uniform(-3, 3, n_selu).astype(np.float32)
        for b, dev in (("cpu", cpu), ("cuda", gpu)):
            xd = jax.device_put(x, dev)
            t = median_time(lambda: selu[b](xd).block_until_ready(), repeats)
            rows.append((f"selu {n_selu:,} float32", b, t, 8 * n_selu / t / 1e9, "GB/s"))
            del xd
    a = np.random.default_rng(0).standard_normal((n_matmul, n_matmul), dtype=np.float32)
    mm = {b: jax.jit(jnp.matmul, backend=b) for b in ("cpu", "cuda")}
    for b, dev in (("cpu", cpu), ("cuda", gpu)):
        ad = jax.device_put(a, dev)
        t = median_time(lambda: mm[b](ad, ad).block_until_ready(), repeats)
        rows.append((f"matmul {n_matmul}^2 float32", b, t, 2 * n_matmul ** 3 / t / 1e9,
                     "GFLOP/s"))
    return rows


def compile_times(data_dir, steps):
    """The first and second call of train.py's MLP step on cuda:0, each in a fresh process,
    the second finding the first's cache directory: (cold, warm) seconds."""
    import subprocess
    import tempfile
    code = ("import sys, time; sys.path[:0] = [%r, %r]\n"
            "import bench_cuda as b\n"
            "t = time.perf_counter(); b.bench_mnist_epoch(%r, 0, %d, ('cuda',))\n"
            "print('SECONDS', time.perf_counter() - t)") % (ROOT, os.path.join(ROOT, "bench"),
                                                          data_dir, steps)
    env = dict(os.environ, COREJAX_CACHE_DIR=tempfile.mkdtemp())
    out = []
    for _ in range(2):
        res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, check=True)
        out.append(float(res.stdout.split("SECONDS")[-1]))
    return out


def _mlp_step(data_dir, limit):
    """train.py's MLP step (configs/mlp.yaml, parameters and optimizer state donated), its
    initial parameters and optimizer, and bench_mnist.py's batches."""
    import corejax as cj
    import optim
    import train
    from bench_mnist import init_params, load_batches

    batches = load_batches(data_dir)[:limit]
    cfg = train.load_config(os.path.join(ROOT, "configs", "mlp.yaml"))
    model, tx, loss_of = (train.build_model(cfg), train.build_optimizer(cfg),
                          train.make_loss(cfg["loss"]))

    def loss_fn(params, x, y):
        return loss_of(model.apply(params, x), y)

    def step(params, opt_state, x, y):
        loss, grads = cj.value_and_grad(loss_fn)(params, x, y)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optim.apply_updates(params, updates), opt_state, loss

    def init(device):
        import corejax.numpy as cjnp
        params = cj.device_put({"params": {
            f"Dense_{i}": {"kernel": cjnp.asarray(w), "bias": cjnp.asarray(b)}
            for i, (w, b) in enumerate(init_params())}}, device)
        return params, tx.init(params)
    return step, init, batches


def bench_mnist_epoch(data_dir, repeats, limit, backends=("cpu", "cuda")):
    """train.py's MLP epoch on each backend: host batches passed to the jitted step, its
    loss read back after every step, as train.py does. repeats=0: one epoch, untimed."""
    import corejax as cj
    import functools

    step_fn, init, batches = _mlp_step(data_dir, limit)
    rows = []
    for backend in backends:
        step = cj.jit(step_fn, donate_argnums=(0, 1))
        p, o = init(cj.devices(backend)[0])
        state = {"p": p, "o": o}

        def epoch():
            p, o = state["p"], state["o"]
            for x, y in batches:
                p, o, loss = step(p, o, x, y)
                float(loss)
            state["p"], state["o"] = p, o

        if repeats == 0:
            epoch()
            continue
        rows.append((f"MNIST MLP epoch ({len(batches)} steps)", backend,
                     median_time(epoch, repeats), None, ""))
    return rows


def _cnn_step(batch=None):
    """train.py's CNN step (configs/cnn.yaml), its parameters for key 0, and a batch (the
    config's size) of random images in [0, 1) with one-hot labels (timing needs no data)."""
    import corejax as cj
    import optim
    import train

    cfg = train.load_config(os.path.join(ROOT, "configs", "cnn.yaml"))
    model, tx, loss_of = (train.build_model(cfg), train.build_optimizer(cfg),
                          train.make_loss(cfg["loss"]))
    rng = np.random.default_rng(0)
    x = rng.random((batch or cfg["train.batch_size"], 28, 28, 1), dtype=np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, x.shape[0])]

    def step(params, opt_state, x, y):
        loss, grads = cj.value_and_grad(
            lambda p: loss_of(model.apply(p, x), y))(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optim.apply_updates(params, updates), opt_state, loss

    def init(device):
        params = cj.device_put(model.init(cj.random.PRNGKey(0), x[:1]), device)
        return params, tx.init(params)
    return step, init, [(x, y)]


def profile_step(data_dir, model="mlp", repeats=50, tiny=False):
    """Where a CUDA training step's time goes (train.py's MLP or CNN step): each program
    step's host time (launching) and device time (synchronized before and after), medians
    over `repeats` steps, and the costs of Numba's allocation and launch paths themselves."""
    import corejax as cj
    from numba import cuda

    step_fn, init, batches = (_mlp_step(data_dir, 4) if model == "mlp" else
                              _cnn_step(2 if tiny else None))
    gpu = cj.devices("cuda")[0]
    p, o = init(gpu)
    x, y = batches[0]
    lowered = cj.jit(step_fn).lower(p, o, x, y)
    exe = lowered._executable()
    args = [*lowered._entry.consts, *cj.tree_util.tree_leaves((p, o, x, y))]
    exe(*args)
    cuda.synchronize()
    bufs = [cj.device_put(a, gpu)._value.reshape(-1) for a in args]
    whole = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        exe.run_device(*bufs)
        t1 = time.perf_counter()
        cuda.synchronize()
        whole.append((t1 - t0, time.perf_counter() - t0))
    host = statistics.median(w[0] for w in whole)
    total = statistics.median(w[1] for w in whole)
    per = [[] for _ in exe._program]
    for _ in range(repeats):
        env = exe._env()
        for (s, _), b in zip(exe._in, bufs):
            env[s] = b
        for i, st in enumerate(exe._program):
            cuda.synchronize()
            t0 = time.perf_counter()
            st(env)
            t1 = time.perf_counter()
            cuda.synchronize()
            per[i].append((t1 - t0, time.perf_counter() - t0))
    print(f"{model.upper()} step on cuda: {len(exe._program)} program steps, "
          f"{len(exe.kernels)} kernels; "
          f"run_device {host * 1e6:.0f} us on the host, {total * 1e6:.0f} us synchronized")
    rows = sorted(((statistics.median(a for a, _ in t), statistics.median(b for _, b in t), i)
                   for i, t in enumerate(per)), key=lambda r: -r[1])
    print(f"{'host us':>8} {'sync us':>8}  step")
    for h, s_, i in rows[:30]:
        print(f"{h * 1e6:8.1f} {s_ * 1e6:8.1f}  {exe.plan[i][:110]}")

    def timed(fn, n=200):
        fn()
        ts = []
        for _ in range(n):
            t = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t)
        return statistics.median(ts) * 1e6

    @cuda.jit
    def empty(a, b, n, m):
        pass
    a = cuda.device_array(1024, np.float32)
    from corejax._cuda_memory import ArrayFactory
    make = ArrayFactory(1024, np.float32)
    print(f"corejax: ArrayFactory(1024)() {timed(make):.1f} us")
    print(f"numba: device_array(1024) {timed(lambda: cuda.device_array(1024, np.float32)):.1f} us,"
          f" empty kernel launch (4 args) {timed(lambda: empty[4, 256](a, a, 1, 2)):.1f} us, "
          f"to_device(128x784 f32) {timed(lambda: cuda.to_device(x)):.1f} us, "
          f"copy_to_host(4 B) {timed(lambda: a[:1].copy_to_host()):.1f} us")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", default=os.environ.get("COREJAX_DATA_DIR"))
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--tiny", action="store_true",
                    help="tiny sizes, for a smoke run under NUMBA_ENABLE_CUDASIM=1")
    ap.add_argument("--profile", nargs="?", const="mlp", choices=("mlp", "cnn"),
                    help="only profile train.py's MLP step (needs --data-dir) or CNN step "
                         "on cuda:0")
    ap.add_argument("--compile-times", action="store_true",
                    help="also time the MLP step's first call in two fresh processes")
    args = ap.parse_args(argv)
    import corejax as jax
    jax.devices("cuda")                              # a clear error without a GPU
    if args.profile:
        profile_step(args.data_dir, args.profile, 3 if args.tiny else 50, args.tiny)
        return
    n_selus, n_mm, steps = ((64,), 16, 2) if args.tiny else ((1 << 20, 100 << 20), 4096, None)
    sheet, measured = card_bandwidth_gbs()
    if sheet is not None:
        from numba import cuda
        name = cuda.get_current_device().name
        name = name.decode() if isinstance(name, bytes) else name
        print(f"{name}: memory bandwidth {sheet:,.0f} GB/s "
              f"(datasheet), {measured:,.0f} GB/s (device-to-device copy)")
    rows = bench_kernels(n_selus, n_mm, args.repeats)
    if args.data_dir:
        rows += bench_mnist_epoch(args.data_dir, args.repeats if not args.tiny else 1, steps)
    peak = card_peak_gflops()
    print(f"{'benchmark':<32} {'backend':<8} {'median':>12} {'rate':>16} {'cuda/cpu':>9}")
    cpu_time = {}
    for name, backend, t, rate, unit in rows:
        if backend == "cpu":
            cpu_time[name] = t
        ratio = f"{t / cpu_time[name]:.3f}" if backend == "cuda" and name in cpu_time else ""
        r = f"{rate:.1f} {unit}" if rate is not None else ""
        print(f"{name:<32} {backend:<8} {t * 1e3:>9.2f} ms {r:>16} {ratio:>9}")
    if peak is not None:
        best = max(g for _, b, _, g, u in rows if b == "cuda" and u == "GFLOP/s")
        print(f"card FP32 peak {peak:,.0f} GFLOP/s; matmul reaches {100 * best / peak:.1f}%")
    if args.compile_times and args.data_dir:
        cold, warm = compile_times(args.data_dir, 2)
        print(f"MLP step, first call of a fresh process (2 steps): cold cache {cold:.2f} s, "
              f"warm cache {warm:.2f} s")


if __name__ == "__main__":
    main()
