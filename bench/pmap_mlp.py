"""Data-parallel MNIST-MLP step (JAX's mnist_classifier_fromscratch sizes: 784-1024-1024-10,
global batch 128, SGD): jit on one device against pmap over N CPU devices with pmean'd
gradients. Prints ms per step. Run with, e.g.

    COREJAX_NUM_CPU_DEVICES=2 python bench/pmap_mlp.py [--jax]

(--jax times real JAX instead, with XLA_FLAGS=--xla_force_host_platform_device_count=N.)
"""
import os
import sys
import time

import numpy as np

if "--jax" in sys.argv:
    n = os.environ.get("COREJAX_NUM_CPU_DEVICES", "2")
    os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={n}"
    import jax
    import jax.numpy as jnp
    from jax import lax
else:
    import corejax as jax
    import corejax.numpy as jnp
    from corejax import lax

SIZES, BATCH, LR = [784, 1024, 1024, 10], 128, 0.001


def init(rng):
    return [(rng.standard_normal((m, n)).astype(np.float32) * 0.1,
             rng.standard_normal(n).astype(np.float32) * 0.1)
            for m, n in zip(SIZES[:-1], SIZES[1:])]


def predict(params, x):
    for w, b in params[:-1]:
        x = jnp.tanh(x @ w + b)
    w, b = params[-1]
    logits = x @ w + b
    return logits - jax.nn.logsumexp(logits, axis=1, keepdims=True)


def loss(params, x, y):
    return -jnp.mean(jnp.sum(predict(params, x) * y, axis=1))


@jax.jit
def step(params, x, y):
    g = jax.grad(loss)(params, x, y)
    return [(w - LR * dw, b - LR * db) for (w, b), (dw, db) in zip(params, g)]


def pstep(params, x, y):
    g = lax.pmean(jax.grad(loss)(params, x, y), "batch")
    return [(w - LR * dw, b - LR * db) for (w, b), (dw, db) in zip(params, g)]


def timeit(f, *args, calls=40):
    """(median ms, min ms, process CPU ms) per call, and the last output. The minimum is the
    figure to read on a shared machine: it is the call least disturbed by other processes."""
    out = jax.block_until_ready(f(*args))
    walls, cpu0 = [], time.process_time()
    for _ in range(calls):
        t = time.perf_counter()
        out = jax.block_until_ready(f(*args))
        walls.append(time.perf_counter() - t)
    cpu = (time.process_time() - cpu0) / calls
    return float(np.median(walls)) * 1e3, min(walls) * 1e3, cpu * 1e3, out


def main():
    rng = np.random.default_rng(0)
    params = init(rng)
    x = rng.random((BATCH, 784), dtype=np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, BATCH)]
    params, x, y = jax.device_put((params, x, y))
    med1, min1, cpu1, single = timeit(step, params, x, y)
    print(f"1 device (jit):  median {med1:6.2f} ms, min {min1:6.2f} ms, CPU {cpu1:6.2f} ms "
          "per step")
    for n in range(2, jax.local_device_count() + 1):
        # parameters unmapped (the same on every device), the batch split across devices
        p = jax.pmap(pstep, axis_name="batch", in_axes=(None, 0, 0), out_axes=None)
        xs, ys = x.reshape(n, -1, 784), y.reshape(n, -1, 10)
        med, mn, cpu, out = timeit(p, params, xs, ys)
        err = max(float(np.abs(np.asarray(a) - np.asarray(b)).max())
                  for a, b in zip(jax.tree_util.tree_leaves(out),
                                  jax.tree_util.tree_leaves(single)))
        print(f"{n} devices (pmap): median {med:6.2f} ms, min {mn:6.2f} ms, CPU {cpu:6.2f} ms "
              f"per step; speed-up (min) {min1 / mn:.2f}x; max |diff| to 1 device {err:.1e}")


if __name__ == "__main__":
    main()
