"""The convnet training step of configs/cnn.yaml: corejax vs JAX (Flax linen + Optax) vs PyTorch,
CPU, quiet and beside a competing busy process, in one run.

    python bench/bench_cnn.py [--steps 20] [--turn 5] [--only corejax,jax,pytorch]
        [--quiet | --load [N] | --both [N]] [--jax-python PY] [--torch-python PY] [--data-dir D]

Model: train.py's `CNN` with cnn.yaml's arguments (two 3x3 SAME convolutions of 32 and 64
channels, each with relu and 2x2 max pooling, Dense 128 + relu, Dense 10, log_softmax), the
cross_entropy loss, Adam from 1e-3 (optim.adam(1e-3): a step's time does not depend on the
schedule), batch 128 of NHWC (128, 28, 28, 1) pixels in [0, 1] (MNIST's first training images
from --data-dir / $COREJAX_DATA_DIR, else seeded noise). corejax runs train.py's step (jit,
parameters and optimizer state donated); JAX the same architecture in Flax linen with
optax.adam, donated likewise; PyTorch torch.nn modules in its default NCHW layout with
torch.optim.Adam and its default thread count. All start from the same float32 parameters and
batches: their first losses agree (printed, a check that they compute the same thing).

Timed: a step (forward, backward, update) from call to completion, synchronized after each;
the median over --steps steps per framework and condition. Each framework runs in a process of
its own (JAX and PyTorch are no project dependencies: --jax-python / $JAX_PYTHON and
--torch-python / $TORCH_PYTHON name interpreters that have them; a missing one is skipped),
compiled before any timing. As in bench_mnist.py the frameworks take turns (--turn steps each,
after --untimed untimed ones that wake the thread pools, --pause s apart, the order rotating):
this shared machine slows down for spells of seconds, which runs taken one after the other
would land in unevenly.

Conditions: quiet, and loaded (N busy-looping processes from bench/_load.py beside each turn).
With both (the default) quiet and loaded rounds alternate, so that each framework's slowdown
factor loaded / quiet, which issue #32 compares with the peers', comes from the same minutes.
"""
from __future__ import annotations

import argparse
import functools
import itertools
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _openblas  # noqa: E402  (before NumPy: see bench/_openblas.py)
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import _load  # noqa: E402

BATCH = 128
N_BATCHES = 4               # distinct batches, cycled through
# name -> (kernel shape, bias shape), in the Flax layout (HWIO convolutions, (in, out) dense).
SHAPES = {"Conv_0": ((3, 3, 1, 32), (32,)), "Conv_1": ((3, 3, 32, 64), (64,)),
          "Dense_0": ((7 * 7 * 64, 128), (128,)), "Dense_1": ((128, 10), (10,))}
LR = 1e-3
FRAMEWORKS = ("corejax", "jax", "pytorch")
JAX_PY, TORCH_PY = "/work/jaxvenv/bin/python", "/work/torchvenv/bin/python"


# --------------------------------------------------------------------------- shared inputs

def make_inputs(path: str, data_dir: str | None) -> str:
    """Writes the parameters and batches every framework starts from to `path` (.npz) and
    returns where the images came from."""
    rng = np.random.default_rng(0)
    arrays = {}
    for name, (kshape, bshape) in SHAPES.items():
        fan_in = int(np.prod(kshape[:-1]))
        arrays[name + "/kernel"] = (rng.standard_normal(kshape) / np.sqrt(fan_in)).astype(
            np.float32)
        arrays[name + "/bias"] = np.zeros(bshape, np.float32)
    n = BATCH * N_BATCHES
    stems = [os.path.join(data_dir or "", f"train-{k}-idx{d}-ubyte")
             for k, d in (("images", 3), ("labels", 1))]
    found = [next((f for f in (stem + ".gz", stem) if os.path.exists(f)), None)
             for stem in stems]
    if data_dir and None not in found:
        from bench_mnist import read_idx_gz
        images, labels = (read_idx_gz(f)[:n] for f in found)
        source = f"the first {n} MNIST training images"
    else:
        images = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
        labels = rng.integers(0, 10, n).astype(np.uint8)
        source = "seeded noise"
    arrays["x"] = (images.astype(np.float32) / 255.0).reshape(N_BATCHES, BATCH, 28, 28, 1)
    arrays["y"] = np.eye(10, dtype=np.float32)[labels].reshape(N_BATCHES, BATCH, 10)
    np.savez(path, **arrays)
    return source


def flax_tree(inp, asarray):
    return {"params": {name: {"kernel": asarray(inp[name + "/kernel"]),
                              "bias": asarray(inp[name + "/bias"])} for name in SHAPES}}


# --------------------------------------------------------------------------- the three sides
# Each returns (version, step): step(i) trains on batch i % N_BATCHES, waits for the result and
# returns the loss (any scalar float() accepts).

def jitted_step(jax, tx, apply_updates, loss_fn, params, batches):
    """step(i) for corejax and JAX alike: train.py's step (value_and_grad, tx.update,
    apply_updates; jitted, parameters and optimizer state donated), waited for."""
    @functools.partial(jax.jit, donate_argnums=(0, 1))
    def train_step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        updates, opt_state = tx.update(grads, opt_state, params)
        return apply_updates(params, updates), opt_state, loss

    state = {"p": params, "o": tx.init(params)}

    def step(i):
        x, y = batches[i % N_BATCHES]
        state["p"], state["o"], loss = train_step(state["p"], state["o"], x, y)
        jax.block_until_ready((state["p"], loss))
        return loss
    return step


def corejax_side(inp):
    sys.path.insert(0, ROOT)
    import corejax as jax
    import corejax.numpy as jnp
    import optim
    import train

    cfg = train.load_config(os.path.join(ROOT, "configs", "cnn.yaml"))
    jax.config.update("platform", "cpu")
    model = train.build_model(cfg)              # train.py's CNN with cnn.yaml's model.args
    tx = optim.adam(LR)
    loss_of = train.make_loss(cfg["loss"])

    def loss_fn(params, x, y):
        return loss_of(model.apply(params, x), y)

    batches = [(jnp.asarray(x), jnp.asarray(y)) for x, y in zip(inp["x"], inp["y"])]
    params = flax_tree(inp, jnp.asarray)
    own = model.init(jax.random.PRNGKey(0), batches[0][0])
    if jax.tree_util.tree_map(np.shape, own) != jax.tree_util.tree_map(np.shape, params):
        raise SystemExit("bench_cnn: train.CNN's parameters are not those of SHAPES")
    return "repo", jitted_step(jax, tx, optim.apply_updates, loss_fn, params, batches)


def jax_side(inp):
    import jax
    import jax.numpy as jnp
    import flax.linen as nn
    import optax

    class CNN(nn.Module):
        @nn.compact
        def __call__(self, x):
            for width in (32, 64):
                x = nn.relu(nn.Conv(width, kernel_size=(3, 3))(x))
                x = nn.max_pool(x, window_shape=(2, 2), strides=(2, 2))
            x = x.reshape((x.shape[0], -1))
            x = nn.relu(nn.Dense(128)(x))
            return nn.log_softmax(nn.Dense(10)(x))

    model, tx = CNN(), optax.adam(LR)

    def loss_fn(params, x, y):
        return jnp.mean(optax.softmax_cross_entropy(model.apply(params, x), y))

    cpu = jax.devices("cpu")[0]
    batches = [jax.device_put((x, y), cpu) for x, y in zip(inp["x"], inp["y"])]
    params = jax.device_put(flax_tree(inp, np.asarray), cpu)
    version = f"{jax.__version__}/flax {sys.modules['flax'].__version__}"
    return version, jitted_step(jax, tx, optax.apply_updates, loss_fn, params, batches)


def torch_side(inp):
    import torch
    nn, fn = torch.nn, torch.nn.functional
    model = nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(7 * 7 * 64, 128), nn.ReLU(),
                          nn.Linear(128, 10), nn.LogSoftmax(dim=-1))
    # The shared parameters are Flax's layout: HWIO kernels become OIHW, and the first dense
    # kernel's rows, in (h, w, c) order after an NHWC flatten, are put in NCHW's (c, h, w).
    d0 = inp["Dense_0/kernel"].reshape(7, 7, 64, 128).transpose(2, 0, 1, 3).reshape(-1, 128)
    weights = [inp["Conv_0/kernel"].transpose(3, 2, 0, 1),
               inp["Conv_1/kernel"].transpose(3, 2, 0, 1), d0.T, inp["Dense_1/kernel"].T]
    layers = [m for m in model if isinstance(m, (nn.Conv2d, nn.Linear))]   # SHAPES' order
    with torch.no_grad():
        for layer, w, name in zip(layers, weights, SHAPES):
            layer.weight.copy_(torch.from_numpy(np.ascontiguousarray(w)))
            layer.bias.copy_(torch.from_numpy(inp[name + "/bias"]))
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    batches = [(torch.from_numpy(np.ascontiguousarray(x.transpose(0, 3, 1, 2))),
                torch.from_numpy(y)) for x, y in zip(inp["x"], inp["y"])]

    def step(i):
        x, y = batches[i % N_BATCHES]
        opt.zero_grad(set_to_none=True)
        # cross_entropy applies log_softmax to its input, as optax's and optim's
        # softmax_cross_entropy do to the log-probabilities the other two pass them
        loss = fn.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.detach()
    return torch.__version__, step


SIDES = {"corejax": corejax_side, "jax": jax_side, "pytorch": torch_side}


def worker(name: str, inputs: str) -> None:
    """A framework's process: builds its step, runs three warm-up steps (the first compiles),
    says so on its protocol line, then answers each 'turn U T' line from stdin with the times
    of T timed steps after U untimed ones. Protocol lines go to a private copy of stdout; the
    process's own stdout is sent to stderr, so that nothing a library prints mixes in."""
    proto = _load.protocol_stream()
    with np.load(inputs) as f:
        inp = {k: f[k] for k in f.files}
    version, step = SIDES[name](inp)
    t = time.perf_counter()
    loss0 = float(step(0))
    first = time.perf_counter() - t
    batch = itertools.count(1)
    step(next(batch))
    step(next(batch))
    proto.write(json.dumps({"version": version, "first_s": first, "loss0": loss0}) + "\n")
    for line in sys.stdin:
        untimed, timed = map(int, line.split()[1:])
        for _ in range(untimed):
            step(next(batch))
        times = []
        for _ in range(timed):
            t = time.perf_counter()
            loss = step(next(batch))
            times.append(time.perf_counter() - t)
        proto.write(json.dumps({"times": times, "loss": float(loss) if timed else None}) + "\n")


# --------------------------------------------------------------------------- the driver

class Side(_load.Worker):
    """The driver's handle on one framework's worker process."""

    def __init__(self, name, python, inputs, log):
        super().__init__(name, [python, os.path.abspath(__file__), "--worker", name,
                                "--inputs", inputs], log)

    def turn(self, untimed, timed):
        return self.ask(f"turn {untimed} {timed}")


def measure(sides, conditions, steps, turn, untimed, pause):
    """Rounds of turns: in each round every condition (rotated) runs one turn of every
    framework (rotated), under its load. Returns {condition: {name: [step seconds]}}, the load
    averages seen at the start of each condition's rounds, and the last losses."""
    def rotated(seq, r):
        r %= len(seq)
        return list(seq)[r:] + list(seq)[:r]

    times = {c: {n: [] for n in sides} for c in conditions}
    loads, last = {c: [] for c in conditions}, {}
    for r, done in enumerate(range(0, steps, turn)):
        for cond in rotated(conditions, r):
            with _load.busy(cond):
                loads[cond].append(_load.load_average())
                for name in rotated(sides, r):
                    time.sleep(pause)
                    out = sides[name].turn(untimed, min(turn, steps - done))
                    times[cond][name] += out["times"]
                    last[name] = out["loss"]
    return times, loads, last


def report(sides, times, loads, last, conditions):
    infos = {n: s.info for n, s in sides.items()}
    medians = {c: {n: float(np.median(t)) for n, t in times[c].items()} for c in conditions}
    for c in conditions:
        med = medians[c]
        jx, pt, la = med.get("jax"), med.get("pytorch"), loads[c]
        print(f"\n{_load.describe(c).split(';')[0]}: 1-min load average at the start of its "
              f"rounds {min(la):.2f}..{max(la):.2f}")
        print(f"{'framework':<10} {'version':<24} {'median ms':>10} {'min ms':>8} {'steps':>6} "
              f"{'vs JAX':>7} {'vs PyTorch':>10}")
        for n, m in med.items():
            rj, rp = (f"{m / peer:.2f}x" if peer else "-" for peer in (jx, pt))
            print(f"{n:<10} {infos[n]['version']:<24} {m * 1e3:>10.2f} "
                  f"{min(times[c][n]) * 1e3:>8.2f} {len(times[c][n]):>6} {rj:>7} {rp:>10}")
    if len(conditions) == 2:
        q, ld = conditions
        print(f"\nslowdown loaded / quiet (median step time; {ld} busy process"
              f"{'es' if ld != 1 else ''})")
        for n in sides:
            print(f"  {n:<10} {medians[ld][n] / medians[q][n]:.2f}x")
    print("\nfirst call (compile + step) s, loss of the first step (same parameters and batch: "
          "should agree), last loss:")
    for n, i in infos.items():
        print(f"  {n:<10} {i['first_s']:7.2f}  {i['loss0']:.6f}  {last[n]:.6f}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n")[:2]),
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="Ratios are framework median / peer median (below 1 is "
                                        "faster). Benchmarks assert nothing.")
    ap.add_argument("--steps", type=int, default=20, help="timed steps per framework and "
                    "condition (default 20)")
    ap.add_argument("--turn", type=int, default=5, help="timed steps per turn (default 5)")
    ap.add_argument("--untimed", type=int, default=1, help="untimed steps first (default 1)")
    ap.add_argument("--pause", type=float, default=0.2, help="seconds between turns (0.2)")
    ap.add_argument("--only", default=",".join(FRAMEWORKS),
                    help="comma-separated subset of " + ",".join(FRAMEWORKS))
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--quiet", action="store_true", help="the quiet condition only")
    mode.add_argument("--load", type=int, nargs="?", const=1, metavar="N",
                      help="the loaded condition only: N busy processes (default 1)")
    mode.add_argument("--both", type=int, nargs="?", const=1, metavar="N", help="the default:"
                      " quiet and loaded rounds alternating, N busy processes (default 1)")
    env = os.environ.get
    ap.add_argument("--jax-python", default=env("JAX_PYTHON", env("FLAX_PYTHON", JAX_PY)),
                    help=f"a Python with jax, flax, optax ($JAX_PYTHON, $FLAX_PYTHON, {JAX_PY})")
    ap.add_argument("--torch-python", default=env("TORCH_PYTHON", TORCH_PY),
                    help=f"a Python with torch ($TORCH_PYTHON, {TORCH_PY})")
    ap.add_argument("--data-dir", default=env("COREJAX_DATA_DIR"),
                    help="MNIST IDX files ($COREJAX_DATA_DIR; without: seeded noise)")
    ap.add_argument("--worker", choices=FRAMEWORKS, help=argparse.SUPPRESS)
    ap.add_argument("--inputs", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        worker(args.worker, args.inputs)
        return 0
    counts = [args.steps, args.turn] + [n for n in (args.load, args.both) if n is not None]
    if min(counts) < 1 or min(args.untimed, args.pause) < 0:
        ap.error("--steps, --turn, --load and --both must be >= 1, --untimed and --pause >= 0")
    names = [n.strip() for n in args.only.split(",") if n.strip()]
    if set(names) - set(FRAMEWORKS):
        ap.error(f"unknown in --only: {sorted(set(names) - set(FRAMEWORKS))}")
    conditions = ([0] if args.quiet else [args.load] if args.load is not None
                  else [0, 1 if args.both is None else args.both])
    pythons = {"corejax": sys.executable, "jax": args.jax_python, "pytorch": args.torch_python}
    print(f"before: 1-min load average {_load.load_average():.2f}, runnable now "
          f"{_load.runnable()}; corejax's products: {_openblas.kernels()}")
    with tempfile.TemporaryDirectory() as tmp:
        inputs = os.path.join(tmp, "inputs.npz")
        source = make_inputs(inputs, args.data_dir)
        sides = {}
        try:
            for n in names:
                if not os.path.exists(pythons[n]):
                    print(f"{n}: skipped ({pythons[n]} not found; see --help)", file=sys.stderr)
                    continue
                log = open(os.path.join(tmp, n + ".log"), "w+")
                try:
                    sides[n] = Side(n, pythons[n], inputs, log)
                except RuntimeError as e:
                    print(f"{n}: skipped ({e})", file=sys.stderr)
            if not sides:
                print("no framework could run")
                return 1
            print(f"CNN train step, batch {BATCH}, {source}; {args.steps} timed steps per "
                  f"framework and condition, in turns of {args.untimed} untimed + up to "
                  f"{args.turn} timed steps, {args.pause} s apart")
            times, loads, last = measure(sides, conditions, args.steps, args.turn, args.untimed,
                                         args.pause)
        finally:
            for s in sides.values():
                s.close()
        report(sides, times, loads, last, conditions)
    return 0


if __name__ == "__main__":
    sys.exit(main())
