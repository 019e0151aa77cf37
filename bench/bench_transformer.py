"""Transformer encoder training step: token embedding plus a learned position embedding,
4 pre-LayerNorm encoder blocks (nn.MultiHeadDotProductAttention self-attention, 4 heads,
then an MLP d_model -> 4 d_model -> d_model with gelu, each with a residual), a final
LayerNorm, a vocabulary projection, softmax cross-entropy, gradients and an SGD update,
jitted. Sizes of a small model: d_model 256, 4 heads, MLP 1024, sequence 128, batch 16,
vocabulary 1000. Runs ours and, in a subprocess with /work/flaxvenv/bin/python (or
$FLAX_PYTHON), the same model in Flax on JAX CPU; prints the medians and the ratio.

    python bench/bench_transformer.py [--repeats 10]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _beside_flax import lm_step, main  # noqa: E402

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

    return lm_step(Encoder(), nn, jnp, jax, VOCAB, BATCH, SEQ)


if __name__ == "__main__":
    main(build, __file__)
