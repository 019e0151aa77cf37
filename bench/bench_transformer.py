"""Transformer encoder training step: token embedding plus a learned position embedding,
4 pre-LayerNorm encoder blocks (nn.MultiHeadDotProductAttention self-attention, 4 heads,
then an MLP d_model -> 4 d_model -> d_model with gelu, each with a residual), a final
LayerNorm, a vocabulary projection, softmax cross-entropy, gradients and an SGD update,
jitted. Sizes of a small model: d_model 256, 4 heads, MLP 1024, sequence 128, batch 16,
vocabulary 1000. Runs ours and, in a subprocess with /work/flaxvenv/bin/python (or
$FLAX_PYTHON), the same model in Flax on JAX CPU; prints the medians and the ratio.

    python bench/bench_transformer.py [--repeats 10]
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

D_MODEL, HEADS, MLP, SEQ, BATCH, VOCAB, LAYERS = 256, 4, 1024, 128, 16, 1000, 4


def build(nn, jnp, jax):
    class Block(nn.Module):
        @nn.compact
        def __call__(self, x):
            h = nn.LayerNorm()(x)
            h = nn.MultiHeadDotProductAttention(num_heads=HEADS)(h, h)
            x = x + h
            h = nn.LayerNorm()(x)
            h = nn.Dense(MLP)(h)
            h = jax.nn.gelu(h)
            h = nn.Dense(D_MODEL)(h)
            return x + h

    class Encoder(nn.Module):
        @nn.compact
        def __call__(self, tokens):
            x = nn.Embed(VOCAB, D_MODEL)(tokens)
            pos = self.param("pos", nn.initializers.normal(0.02), (SEQ, D_MODEL))
            x = x + pos[None]
            for _ in range(LAYERS):
                x = Block()(x)
            x = nn.LayerNorm()(x)
            return nn.Dense(VOCAB)(x)

    model = Encoder()

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
