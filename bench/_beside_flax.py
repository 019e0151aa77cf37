"""What bench_lstm.py and bench_transformer.py share: a model's language-model training step
(`build(nn, jnp, jax)` returns the jitted step, parameters, tokens and targets) timed under
corejax and under Flax on JAX CPU ($FLAX_PYTHON, default /work/flaxvenv/bin/python), each in
a worker process of its own. The two take turns (a few steps each, the first of every turn
untimed), so that both see the same spells of a shared machine, whose speed drifts minute to
minute; prints both medians over all their turns and the ratio. `--load N` runs N busy
processes beside every turn (bench/_load.py)."""
import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _openblas  # noqa: E402  (before NumPy: see bench/_openblas.py)
import numpy as np

import _load  # noqa: E402


def lm_step(model, nn, jnp, jax, vocab, batch, seq):
    """The jitted SGD step of `model` (tokens -> logits) with softmax cross-entropy, and its
    initial parameters and data (seeded)."""
    def loss_fn(params, tokens, targets):
        logits = model.apply({"params": params}, tokens)
        logp = jax.nn.log_softmax(logits)
        return -jnp.mean(jnp.take_along_axis(logp, targets[..., None], axis=-1))

    @jax.jit
    def step(params, tokens, targets):
        loss, grads = jax.value_and_grad(loss_fn)(params, tokens, targets)
        return jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads), loss

    rng = np.random.RandomState(0)
    tokens = jnp.asarray(rng.randint(0, vocab, (batch, seq)).astype(np.int32))
    targets = jnp.asarray(rng.randint(0, vocab, (batch, seq)).astype(np.int32))
    params = model.init(jax.random.PRNGKey(0), tokens)["params"]
    return step, params, tokens, targets


def _worker(build, framework) -> None:
    """A framework's process: builds and compiles the step, says so on its protocol line, then
    answers each 'turn U T' line from stdin with the times of T timed steps after U untimed
    ones. Protocol lines go to a private copy of stdout; the process's own stdout is sent to
    stderr, so that nothing a library prints mixes in."""
    proto = _load.protocol_stream()
    if framework == "flax":
        import flax.linen as nn
        import jax
        import jax.numpy as jnp
    else:
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        import corejax as jax
        import corejax.numpy as jnp
        import nn
    step, params, tokens, targets = build(nn, jnp, jax)
    t0 = time.perf_counter()
    params, loss = step(params, tokens, targets)
    jax.block_until_ready(loss)
    proto.write(json.dumps({"first_s": time.perf_counter() - t0, "loss0": float(loss)}) + "\n")
    for line in sys.stdin:
        untimed, timed = map(int, line.split()[1:])
        for _ in range(untimed):
            params, loss = step(params, tokens, targets)
        jax.block_until_ready(loss)
        times = []
        for _ in range(timed):
            t0 = time.perf_counter()
            params, loss = step(params, tokens, targets)
            jax.block_until_ready(loss)
            times.append(time.perf_counter() - t0)
        proto.write(json.dumps({"times": times, "loss": float(loss)}) + "\n")


class _Side(_load.Worker):
    def __init__(self, name, python, script, log):
        super().__init__(name, [python, os.path.abspath(script), "--worker", name], log)
        self.times: list = []

    def turn(self, untimed, timed):
        out = self.ask(f"turn {untimed} {timed}")
        self.times += out["times"]
        self.last_loss = out["loss"]


def main(build, script):
    """The command line of a side-by-side benchmark whose file is `script`."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=20, help="timed steps per framework")
    ap.add_argument("--turn", type=int, default=5, help="timed steps per turn")
    ap.add_argument("--load", type=int, nargs="?", const=1, default=0,
                    help="busy processes beside every turn (default none; 1 if given bare)")
    ap.add_argument("--worker", choices=["corejax", "flax"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        _worker(build, args.worker)
        return
    flax_py = os.environ.get("FLAX_PYTHON", "/work/flaxvenv/bin/python")
    names = {"corejax": sys.executable}
    if os.path.exists(flax_py):
        names["flax"] = flax_py
    else:
        print("flax: not installed (set FLAX_PYTHON); corejax alone, no ratio")
    with tempfile.TemporaryFile("w+") as log:
        sides = {}
        try:
            for name, python in names.items():
                sides[name] = _Side(name, python, script, log)
            loads = []
            for r, done in enumerate(range(0, args.repeats, args.turn)):
                order = list(sides.values())
                order = order[r % len(order):] + order[:r % len(order)]
                with _load.busy(args.load):
                    loads.append(_load.load_average())
                    for side in order:
                        side.turn(1, min(args.turn, args.repeats - done))
        finally:
            for side in sides.values():
                side.close()
    print(f"{_load.describe(args.load).split(';')[0]}; 1-min load average at the start of the "
          f"rounds {min(loads):.2f}..{max(loads):.2f}; turns of {args.turn} timed steps, "
          f"taken in turn; corejax's products: {_openblas.kernels()}")
    med = {}
    for name, side in sides.items():
        med[name] = float(np.median(side.times))
        label = "flax/jax" if name == "flax" else name
        print(f"{label:<8} median {med[name] * 1e3:8.1f} ms  min {min(side.times) * 1e3:8.1f} ms"
              f"  ({len(side.times)} steps; first call {side.info['first_s']:.1f} s, loss "
              f"{side.info['loss0']:.4f} -> {side.last_loss:.4f})")
    if "flax" in med:
        print(f"ratio corejax / flax: {med['corejax'] / med['flax']:.2f}x")
