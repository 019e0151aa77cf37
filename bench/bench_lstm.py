"""LSTM language-model training step: embedding, nn.scan over OptimizedLSTMCell (hidden 512),
a vocabulary projection, softmax cross-entropy, gradients and an SGD update, for sequence 64 and
batch 32, jitted. Runs ours and, in a subprocess with /work/flaxvenv/bin/python (or
$FLAX_PYTHON), the same model in Flax on JAX CPU; prints the medians and the ratio.

    python bench/bench_lstm.py [--repeats 10]
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

HIDDEN, SEQ, BATCH, VOCAB = 512, 64, 32, 1000


def build(nn, jnp, jax):
    class LM(nn.Module):
        @nn.compact
        def __call__(self, tokens):
            x = nn.Embed(VOCAB, 128)(tokens)
            cell = nn.scan(nn.OptimizedLSTMCell, variable_broadcast="params",
                           split_rngs={"params": False}, in_axes=1, out_axes=1)(HIDDEN)
            carry = (jnp.zeros((tokens.shape[0], HIDDEN)), jnp.zeros((tokens.shape[0], HIDDEN)))
            _, ys = cell(carry, x)
            return nn.Dense(VOCAB)(ys)

    model = LM()

    def loss_fn(params, tokens, targets):
        logits = model.apply({"params": params}, tokens)
        logp = jax.nn.log_softmax(logits)
        return -jnp.mean(jnp.take_along_axis(logp, targets[..., None], axis=-1))

    @jax.jit
    def step(params, tokens, targets):
        loss, grads = jax.value_and_grad(loss_fn)(params, tokens, targets)
        return jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads), loss

    rng = np.random.RandomState(0)
    tokens = jnp.asarray(rng.randint(0, VOCAB, (BATCH, SEQ)).astype(np.int32))
    targets = jnp.asarray(rng.randint(0, VOCAB, (BATCH, SEQ)).astype(np.int32))
    params = model.init(jax.random.PRNGKey(0), tokens)["params"]
    return step, params, tokens, targets


def measure(nn, jnp, jax, repeats):
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--flax", action="store_true", help="(internal) measure Flax on JAX")
    args = ap.parse_args()
    if args.flax:
        import jax
        import jax.numpy as jnp
        import flax.linen as nn
        print(json.dumps(measure(nn, jnp, jax, args.repeats)))
        return
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import corejax
    import corejax.numpy as jnp
    import nn
    ours = measure(nn, jnp, corejax, args.repeats)
    print(f"corejax  median {ours['median_s'] * 1e3:8.1f} ms  (first call {ours['first_s']:.1f} s,"
          f" loss {ours['loss']:.4f})")
    flax_py = os.environ.get("FLAX_PYTHON", "/work/flaxvenv/bin/python")
    if not os.path.exists(flax_py):
        print("flax: not installed (set FLAX_PYTHON); no ratio")
        return
    out = subprocess.run([flax_py, os.path.abspath(__file__), "--flax", "--repeats",
                          str(args.repeats)], capture_output=True, text=True,
                         env=dict(os.environ, JAX_PLATFORMS="cpu"))
    if out.returncode:
        print("flax run failed:", out.stderr[-500:])
        return
    theirs = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"flax/jax median {theirs['median_s'] * 1e3:8.1f} ms  (first call "
          f"{theirs['first_s']:.1f} s, loss {theirs['loss']:.4f})")
    print(f"ratio corejax / flax: {ours['median_s'] / theirs['median_s']:.2f}x")


if __name__ == "__main__":
    main()
