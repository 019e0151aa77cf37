"""MNIST MLP training-epoch time: corejax vs JAX vs PyTorch (CPU) vs hand-written NumPy.

    python bench/bench_mnist.py --data-dir ../shared/data/mnist [--epochs 3] [--only corejax,numpy]
                                [--load [N]]

`gemms` is a floor, not a framework: the step's eight matrix products alone through NumPy.

The model, loss and step are those of configs/mlp.yaml: MLP 784-512-512-10, relu, log-softmax,
loss -mean(logp * onehot) over the (batch, 10) array, plain SGD 0.01, batch 128 (the last batch
of 96 kept: 469 batches), raw 0..255 pixels, stored order. Every framework starts from the same
float32 parameters (N(0, 0.01^2), NumPy seed 0) and sees the same batches.

Timed: the loop over the 469 batches calling the update step only (no evaluation, no per-step
host sync; the parameters are synchronized at the end of each turn, below). One warm-up epoch
(compilation) is run first for each framework, then --epochs epochs of every framework,
interleaved: each framework in turn trains on the next --turn batches (59: eight turns per
epoch). On the shared test machine the CPU slows by up to 1.5x for spells of seconds (other
tenants' load, invisible from inside: no steal time, no other process), so whole epochs taken in
turn land in different spells and their ratios scatter from 0.8 to 1.15; turns of a fraction
of a second let every framework sample the same conditions. Turns start --pause seconds apart
(0.2), untimed, so that none pays for the spinning threads of the one before it. The first
batch of each turn (--untimed) is trained on untimed too: it pays for waking the framework's
thread pool after the pause, which an epoch of training never does (the first OpenBLAS GEMM
after a pause took twice its steady time, and after a JAX turn 10-12 ms in one turn of five,
for a plain np.matmul as much as for corejax). An epoch's time is the sum of its turns' timed
batches, scaled to the whole epoch (469 / 461 batches); the median per framework is reported.
JAX and PyTorch are imported inside their measuring functions: missing ones are skipped.

--load [N] runs N busy-looping processes (bench/_load.py; 1 without N) for the whole run, beside
every framework's turns: issue #32 compares how much each framework slows down when another
process competes for this 2-core machine (run once without and once with it).
"""
from __future__ import annotations

import argparse
import functools
import gzip
import os
import platform
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _openblas  # noqa: E402  (before NumPy: see bench/_openblas.py)
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))
import _load  # noqa: E402

SIZES = (784, 512, 512, 10)
LR = 0.01
BATCH = 128
# Batches per turn of the interleaved timing: a turn of about 0.15 s, shorter than the spells
# of load other tenants put on the shared machine, long enough that the synchronization
# ending each turn costs nothing measurable.
TURN = 59
# Untimed seconds between two turns: OpenBLAS's idle workers spin for about 0.1 s after a
# call (2^28 cycles), and a JAX turn right after a corejax or NumPy one took 15% longer.
PAUSE = 0.2
# Batches at the start of each turn trained on untimed: waking a thread pool that slept
# through the pause is no part of an epoch's steady state.
UNTIMED = 1


# --------------------------------------------------------------------------- data

def read_idx_gz(path: str) -> np.ndarray:
    with (gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")) as f:
        raw = f.read()
    ndim = raw[3]
    shape = tuple(int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim))
    return np.frombuffer(raw, np.uint8, offset=4 + 4 * ndim).reshape(shape)


def load_batches(data_dir: str):
    def find(stem):
        for name in (stem + ".gz", stem):
            p = os.path.join(data_dir, name)
            if os.path.exists(p):
                return p
        raise SystemExit(f"bench_mnist: {stem}(.gz) not found in {data_dir!r}")
    images = read_idx_gz(find("train-images-idx3-ubyte"))
    labels = read_idx_gz(find("train-labels-idx1-ubyte"))
    x = images.reshape(images.shape[0], -1).astype(np.float32)       # raw 0..255, as the seed
    y = np.eye(10, dtype=np.float32)[labels]
    return [(np.ascontiguousarray(x[i:i + BATCH]), np.ascontiguousarray(y[i:i + BATCH]))
            for i in range(0, x.shape[0], BATCH)]


def init_params():
    rng = np.random.default_rng(0)
    out = []
    for m, n in zip(SIZES[:-1], SIZES[1:]):
        out.append((rng.normal(0, 0.01, (m, n)).astype(np.float32),
                    rng.normal(0, 0.01, (n,)).astype(np.float32)))
    return out


def run_interleaved(runs: dict, n_batches: int, n_timed: int, turn: int = TURN,
                    pause: float = PAUSE, untimed: int = UNTIMED) -> dict:
    """runs: name -> run(lo, hi) (trains on batches lo..hi-1, synchronizes, returns the last
    loss). One warm-up epoch each, then n_timed epochs of every framework, interleaved: each
    framework in turn trains on the next `turn` batches, so that all of them see the same
    load on a shared machine. Each turn starts `pause` seconds after the previous one ends,
    untimed, so that it does not pay for the threads of the framework before it still
    spinning; its first `untimed` batches are trained on untimed (waking the framework's own
    threads). An epoch's time is the sum of its turns' timed batches' times, scaled by
    n_batches / (timed batches)."""
    results = {}
    for name, run in runs.items():
        time.sleep(pause)
        t = time.perf_counter()
        loss0 = run(0, n_batches)
        results[name] = {"warmup": time.perf_counter() - t, "times": [], "load": [],
                         "loss_after_warmup": float(loss0)}
    starts = range(0, n_batches, turn)
    timed = sum(max(min(lo + turn, n_batches) - lo - untimed, 0) for lo in starts)
    if timed == 0:
        raise ValueError(f"untimed={untimed} leaves no batch of a turn of {turn} timed")
    for _ in range(n_timed):
        spent = dict.fromkeys(runs, 0.0)
        for lo in starts:
            hi = min(lo + turn, n_batches)
            mid = min(lo + untimed, hi)
            for name, run in runs.items():
                time.sleep(pause)
                if mid > lo:
                    results[name]["last_loss"] = float(run(lo, mid))
                if hi > mid:
                    t = time.perf_counter()
                    results[name]["last_loss"] = float(run(mid, hi))
                    spent[name] += time.perf_counter() - t
        for name, r in results.items():
            r["times"].append(spent[name] * n_batches / timed)
            r["load"].append(os.getloadavg()[0])
    for r in results.values():
        r["median"] = statistics.median(r["times"])
    return results


# --------------------------------------------------------------------------- frameworks

def bench_corejax(batches):
    import corejax as cj
    import corejax.numpy as cjnp
    import optim
    import train

    cfg = train.load_config(os.path.join(ROOT, "configs", "mlp.yaml"))
    cj.config.update("platform", "cpu")
    model = train.build_model(cfg)              # the same model, optimizer and loss as train.py
    tx = train.build_optimizer(cfg)
    loss_of = train.make_loss(cfg["loss"])

    def loss_fn(params, x, y):
        return loss_of(model.apply(params, x), y)

    @functools.partial(cj.jit, donate_argnums=(0, 1))
    def train_step(params, opt_state, x, y):    # train.py's step, verbatim
        loss, grads = cj.value_and_grad(loss_fn)(params, x, y)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optim.apply_updates(params, updates), opt_state, loss

    params = {"params": {f"Dense_{i}": {"kernel": cjnp.asarray(w), "bias": cjnp.asarray(b)}
                         for i, (w, b) in enumerate(init_params())}}
    state = {"p": params, "o": tx.init(params)}
    dev = [(cjnp.asarray(x), cjnp.asarray(y)) for x, y in batches]

    def run(lo, hi):
        p, o = state["p"], state["o"]
        loss = None
        for x, y in dev[lo:hi]:
            p, o, loss = train_step(p, o, x, y)
        cj.tree_util.tree_map(lambda a: a.block_until_ready(), p)
        state["p"], state["o"] = p, o
        return np.asarray(loss)
    return run


def bench_jax(batches, donate=False):
    import jax
    import jax.numpy as jnp

    def predict(params, x):
        for w, b in params[:-1]:
            x = jax.nn.relu(x @ w + b)
        w, b = params[-1]
        return jax.nn.log_softmax(x @ w + b)

    def loss_fn(params, x, y):
        return -jnp.mean(predict(params, x) * y)

    # the seed's step; jax-donated also donates the parameters, as train.py's step does
    @functools.partial(jax.jit, donate_argnums=(0,) if donate else ())
    def train_step(params, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        return jax.tree_util.tree_map(lambda p, g: p - LR * g, params, grads), loss

    cpu = jax.devices("cpu")[0]
    state = {"p": jax.device_put([(w, b) for w, b in init_params()], cpu)}
    dev = [(jax.device_put(x, cpu), jax.device_put(y, cpu)) for x, y in batches]

    def run(lo, hi):
        p = state["p"]
        loss = None
        for x, y in dev[lo:hi]:
            p, loss = train_step(p, x, y)
        jax.block_until_ready(p)
        state["p"] = p
        return np.asarray(loss)
    return run


def bench_torch(batches):
    import torch
    torch.set_num_threads(2)
    layers = [torch.nn.Linear(m, n) for m, n in zip(SIZES[:-1], SIZES[1:])]
    with torch.no_grad():
        for lin, (w, b) in zip(layers, init_params()):
            lin.weight.copy_(torch.from_numpy(w.T.copy()))
            lin.bias.copy_(torch.from_numpy(b))
    model = torch.nn.Sequential(layers[0], torch.nn.ReLU(), layers[1], torch.nn.ReLU(),
                                layers[2], torch.nn.LogSoftmax(dim=-1))
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    dev = [(torch.from_numpy(x), torch.from_numpy(y)) for x, y in batches]

    def run(lo, hi):
        loss = None
        for x, y in dev[lo:hi]:
            opt.zero_grad(set_to_none=True)
            loss = -(model(x) * y).mean()
            loss.backward()
            opt.step()
        return loss.detach().numpy()
    return run


def bench_numpy(batches):
    state = {"p": [(w.copy(), b.copy()) for w, b in init_params()]}
    lr = np.float32(LR)

    def step(params, x, y):
        (w1, b1), (w2, b2), (w3, b3) = params
        h1 = np.maximum(x @ w1 + b1, 0)
        h2 = np.maximum(h1 @ w2 + b2, 0)
        z = h2 @ w3 + b3
        z = z - z.max(axis=1, keepdims=True)
        e = np.exp(z)
        s = e.sum(axis=1, keepdims=True)
        logp = z - np.log(s)
        n = np.float32(y.size)
        loss = -(logp * y).sum() / n
        g_logp = -y / n                                        # d loss / d logp
        dz = g_logp - (e / s) * g_logp.sum(axis=1, keepdims=True)
        dw3, db3 = h2.T @ dz, dz.sum(0)
        dh2 = (dz @ w3.T) * (h2 > 0)
        dw2, db2 = h1.T @ dh2, dh2.sum(0)
        dh1 = (dh2 @ w2.T) * (h1 > 0)
        dw1, db1 = x.T @ dh1, dh1.sum(0)
        for (w, b), (dw, db) in zip(params, ((dw1, db1), (dw2, db2), (dw3, db3))):
            w -= lr * dw
            b -= lr * db
        return loss

    def run(lo, hi):
        loss = None
        for x, y in batches[lo:hi]:
            loss = step(state["p"], x, y)
        return loss
    return run


def bench_gemms(batches):
    """A floor, not a framework: the step's eight matrix products alone (three forward, five
    backward), np.matmul into preallocated outputs on OpenBLAS's default threads, on the same
    batches and weights; nothing else of the step runs. Its "loss" is nan."""
    (w1, _), (w2, _), (w3, _) = init_params()
    n = BATCH
    h1, h2 = np.empty((n, 512), np.float32), np.empty((n, 512), np.float32)
    z, g3 = np.empty((n, 10), np.float32), np.full((n, 10), 1e-3, np.float32)
    dw1, dw2, dw3 = np.empty_like(w1), np.empty_like(w2), np.empty_like(w3)
    dh1, dh2 = np.empty((n, 512), np.float32), np.empty((n, 512), np.float32)

    def run(lo, hi):
        for x, _ in batches[lo:hi]:
            m = x.shape[0]
            a1, a2, o = h1[:m], h2[:m], z[:m]
            np.matmul(x, w1, out=a1)
            np.matmul(a1, w2, out=a2)
            np.matmul(a2, w3, out=o)
            g = g3[:m]
            np.matmul(a2.T, g, out=dw3)
            np.matmul(g, w3.T, out=dh2[:m])
            np.matmul(a1.T, dh2[:m], out=dw2)
            np.matmul(dh2[:m], w2.T, out=dh1[:m])
            np.matmul(x.T, dh1[:m], out=dw1)
        return float("nan")
    return run


FRAMEWORKS = {"corejax": bench_corejax, "jax": bench_jax,
              "jax-donated": functools.partial(bench_jax, donate=True), "pytorch": bench_torch,
              "numpy": bench_numpy, "gemms": bench_gemms}


def machine_line() -> str:
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return (f"machine: nproc={os.cpu_count()} (affinity {len(os.sched_getaffinity(0))}), "
            f"CPU {model}, Python {platform.python_version()}, NumPy {np.__version__}; "
            f"{_openblas.kernels()}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data-dir", default=os.environ.get("COREJAX_DATA_DIR"),
                   help="folder of MNIST IDX files (default $COREJAX_DATA_DIR)")
    p.add_argument("--epochs", type=int, default=3, help="timed epochs after the warm-up one")
    p.add_argument("--turn", type=int, default=TURN,
                   help="batches each framework trains on before the next one's turn "
                        f"(default {TURN}; 469 alternates whole epochs)")
    p.add_argument("--pause", type=float, default=PAUSE,
                   help=f"untimed seconds between two turns (default {PAUSE})")
    p.add_argument("--untimed", type=int, default=UNTIMED,
                   help="batches at the start of each turn trained on untimed (default "
                        f"{UNTIMED}: the wake-up of thread pools idle during the pause)")
    p.add_argument("--only", default=",".join(FRAMEWORKS),
                   help="comma-separated subset of " + ",".join(FRAMEWORKS))
    _load.add_load_argument(p, "every framework's turns")
    args = p.parse_args(argv)
    if not args.data_dir:
        p.error("give --data-dir or set COREJAX_DATA_DIR")
    if args.epochs < 1:
        p.error("--epochs must be >= 1")
    if args.turn < 1:
        p.error("--turn must be >= 1")
    if args.pause < 0:
        p.error("--pause must be >= 0")
    if not 0 <= args.untimed < args.turn:
        p.error("--untimed must be >= 0 and below --turn")
    batches = load_batches(args.data_dir)
    print(machine_line())
    print(f"{len(batches)} batches per epoch; 1 warm-up epoch + median of {args.epochs}, "
          f"interleaved {args.turn} batches at a time, {args.pause} s apart, the first "
          f"{args.untimed} of each turn untimed")
    runs, versions = {}, {}
    for name in args.only.split(","):
        name = name.strip()
        if name not in FRAMEWORKS:
            p.error(f"unknown framework {name!r}")
        try:
            runs[name] = FRAMEWORKS[name](batches)
        except ImportError as e:
            print(f"  {name}: skipped ({e})", file=sys.stderr)
            continue
        mod = {"jax": "jax", "jax-donated": "jax", "pytorch": "torch", "numpy": "numpy",
               "gemms": "numpy"}.get(name)
        versions[name] = sys.modules[mod].__version__ if mod in sys.modules else "repo"
    print(_load.describe(args.load))
    with _load.busy(args.load):
        results = run_interleaved(runs, len(batches), args.epochs, args.turn, args.pause,
                                  args.untimed)
    for name, r in results.items():
        # The machine may be shared: other processes' load changes every figure, most of all
        # for frameworks whose threads spin (OpenBLAS, OpenMP).
        print(f"  {name}: warm-up {r['warmup']:.2f} s, epochs "
              + ", ".join(f"{t:.2f}" for t in r["times"]) + " (1-min load average after each: "
              + ", ".join(f"{x:.1f}" for x in r["load"]) + ")", file=sys.stderr, flush=True)

    jx = results.get("jax", {}).get("median")
    pt = results.get("pytorch", {}).get("median")
    print(f"{'framework':<12} {'version':<14} {'median epoch s':>14} {'vs JAX':>8} "
          f"{'vs PyTorch':>10} {'warm-up s':>9} {'loss@ep0':>10} {'loss@last':>10}")
    for name, r in results.items():
        m = r["median"]
        rj = f"{m / jx:.2f}x" if jx else "n/a"
        rp = f"{m / pt:.2f}x" if pt else "n/a"
        print(f"{name:<12} {versions[name]:<14} {m:>14.3f} {rj:>8} {rp:>10} "
              f"{r['warmup']:>9.2f} {r['loss_after_warmup']:>10.6f} {r['last_loss']:>10.6f}")
    print("ratios: framework median / peer median (below 1 is faster than the peer); losses are "
          "the last batch's after the warm-up epoch and after the last epoch (same init, same "
          "batches: they should agree)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
