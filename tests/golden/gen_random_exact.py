"""Record JAX's float32/float64 random.uniform samples (and the uniform initializers built on it)
for a bit-exact comparison: XLA's CPU backend fuses uniform's scale-and-shift into one
fused multiply-add, which corejax must reproduce to give Flax's parameters for the same key.

Run with a Python that has jax installed (never a corejax dependency):

    python tests/golden/gen_random_exact.py

Writes tests/golden/random_exact.npz: one array per case, named by the case (see CASES).
"""
import os

import numpy as np

import jax
from jax import random
from jax.nn import initializers

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "random_exact.npz")
SEEDS = (0, 1, 42)
BOUNDS = ((-0.9544997, 0.9544997), (-3.0, 5.5), (0.1, 0.7), (0.0, 1.0))
INITS = ("glorot_uniform", "lecun_uniform", "he_uniform")


def cases():
    for seed in SEEDS:
        key = random.PRNGKey(seed)
        for lo, hi in BOUNDS:
            yield f"uniform/{seed}/{lo}/{hi}", random.uniform(key, (513,), minval=lo, maxval=hi)
        for name in INITS:
            yield f"{name}/{seed}", getattr(initializers, name)()(key, (37, 29))
        yield f"variance_scaling/{seed}", initializers.variance_scaling(
            1.7, "fan_avg", "uniform")(key, (3, 24, 10))
        jax.config.update("jax_enable_x64", True)
        yield f"uniform64/{seed}", random.uniform(key, (257,), "float64", -2.5, 7.25)
        jax.config.update("jax_enable_x64", False)


if __name__ == "__main__":
    np.savez(OUT, **{name: np.asarray(value) for name, value in cases()})
    print("wrote", OUT)
