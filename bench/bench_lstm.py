"""LSTM language-model training step: embedding, nn.scan over OptimizedLSTMCell (hidden 512),
a vocabulary projection, softmax cross-entropy, gradients and an SGD update, for sequence 64 and
batch 32, jitted. Runs ours and, in a subprocess with /work/flaxvenv/bin/python (or
$FLAX_PYTHON), the same model in Flax on JAX CPU; prints the medians and the ratio.

    python bench/bench_lstm.py [--repeats 10]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _beside_flax import lm_step, main  # noqa: E402

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

    return lm_step(LM(), nn, jnp, jax, VOCAB, BATCH, SEQ)


if __name__ == "__main__":
    main(build, __file__)
