"""What bench_lstm.py and bench_transformer.py share: a model's language-model training step
(`build(nn, jnp, jax)` returns the jitted step, parameters, tokens and targets) timed under
corejax and, in a subprocess with $FLAX_PYTHON (default /work/flaxvenv/bin/python), the same
code under Flax on JAX CPU; prints both medians and the ratio."""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np


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


def measure(build, nn, jnp, jax, repeats):
    step, params, tokens, targets = build(nn, jnp, jax)
    t0 = time.perf_counter()
    params, loss = step(params, tokens, targets)
    jax.block_until_ready(loss)
    first = time.perf_counter() - t0
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        params, loss = step(params, tokens, targets)
        jax.block_until_ready(loss)
        times.append(time.perf_counter() - t0)
    return {"median_s": float(np.median(times)), "first_s": first, "loss": float(loss)}


def main(build, script):
    """The command line of a side-by-side benchmark whose file is `script`."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--flax", action="store_true", help="(internal) measure Flax on JAX")
    args = ap.parse_args()
    if args.flax:
        import jax
        import jax.numpy as jnp
        import flax.linen as nn
        print(json.dumps(measure(build, nn, jnp, jax, args.repeats)))
        return
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(script))))
    import corejax
    import corejax.numpy as jnp
    import nn
    ours = measure(build, nn, jnp, corejax, args.repeats)
    print(f"corejax  median {ours['median_s'] * 1e3:8.1f} ms  (first call {ours['first_s']:.1f} s,"
          f" loss {ours['loss']:.4f})")
    flax_py = os.environ.get("FLAX_PYTHON", "/work/flaxvenv/bin/python")
    if not os.path.exists(flax_py):
        print("flax: not installed (set FLAX_PYTHON); no ratio")
        return
    out = subprocess.run([flax_py, os.path.abspath(script), "--flax", "--repeats",
                          str(args.repeats)], capture_output=True, text=True,
                         env=dict(os.environ, JAX_PLATFORMS="cpu"))
    if out.returncode:
        print("flax run failed:", out.stderr[-500:])
        return
    theirs = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"flax/jax median {theirs['median_s'] * 1e3:8.1f} ms  (first call "
          f"{theirs['first_s']:.1f} s, loss {theirs['loss']:.4f})")
    print(f"ratio corejax / flax: {ours['median_s'] / theirs['median_s']:.2f}x")
