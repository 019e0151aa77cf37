"""Benchmarks of the transformations (figures and ratios; never run as tests).

- reverse mode: the gradient of an MLP loss against the loss itself (JAX's ratio is about 2-3x);
- vmap: a per-example MLP forward batched with vmap against the hand-batched forward;
- eager dispatch: the cost of one small jnp op over the NumPy op.

Usage: python bench/bench_transforms.py [--repeats N]
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import corejax as jax
import corejax.numpy as jnp


def median_time(f, repeats: int, number: int = 1, sync: bool = True) -> float:
    f()  # warm up (and compile, under jit)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(number):
            out = f()
            if sync:
                jax.block_until_ready(out)
        times.append((time.perf_counter() - t0) / number)
    return statistics.median(times)


def mlp_params(rng, sizes=(784, 512, 512, 10)):
    return [(jnp.asarray(rng.normal(size=(m, n)).astype(np.float32) * 0.01),
             jnp.asarray(rng.normal(size=(n,)).astype(np.float32) * 0.01))
            for m, n in zip(sizes[:-1], sizes[1:])]


def predict(params, x):
    for w, b in params[:-1]:
        x = jax.nn.relu(x @ w + b)
    w, b = params[-1]
    logits = x @ w + b
    return logits - jax.scipy.special.logsumexp(logits, axis=-1, keepdims=True)


def loss(params, x, y):
    return -jnp.mean(predict(params, x) * y)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    params = mlp_params(rng)
    x = jnp.asarray(rng.uniform(0, 255, size=(128, 784)).astype(np.float32))
    y = jax.nn.one_hot(jnp.asarray(rng.integers(0, 10, 128)), 10)

    rows = []
    for mode, wrap in (("eager", lambda f: f), ("jit", jax.jit)):
        f_loss = wrap(loss)
        f_grad = wrap(jax.grad(loss))
        t_loss = median_time(lambda: f_loss(params, x, y), args.repeats)
        t_grad = median_time(lambda: f_grad(params, x, y), args.repeats)
        rows.append((f"grad / loss ({mode}, MLP 784-512-512-10, batch 128)",
                     f"{t_loss * 1e3:.2f} ms", f"{t_grad * 1e3:.2f} ms", t_grad / t_loss))

        batched = wrap(lambda p, xs: predict(p, xs))
        vmapped = wrap(jax.vmap(lambda p, xi: predict(p, xi), in_axes=(None, 0)))
        t_hand = median_time(lambda: batched(params, x), args.repeats)
        t_vmap = median_time(lambda: vmapped(params, x), args.repeats)
        rows.append((f"vmap / hand-batched forward ({mode})", f"{t_hand * 1e3:.2f} ms",
                     f"{t_vmap * 1e3:.2f} ms", t_vmap / t_hand))

    a = jnp.ones(4)
    an = np.ones(4, np.float32)
    t_np = median_time(lambda: np.add(an, an), args.repeats, number=20000, sync=False)
    t_j = median_time(lambda: jnp.add(a, a), args.repeats, number=20000, sync=False)
    t_s = median_time(lambda: a + 1.0, args.repeats, number=20000, sync=False)
    rows.append(("eager jnp.add(x, x) / np.add, 4 floats", f"{t_np * 1e6:.2f} us",
                 f"{t_j * 1e6:.2f} us", t_j / t_np))
    rows.append(("eager x + 1.0 / np.add, 4 floats", f"{t_np * 1e6:.2f} us",
                 f"{t_s * 1e6:.2f} us", t_s / t_np))

    print(f"{'case':58s} {'baseline':>12s} {'measured':>12s} {'ratio':>7s}")
    for name, base, meas, ratio in rows:
        print(f"{name:58s} {base:>12s} {meas:>12s} {ratio:7.2f}")


if __name__ == "__main__":
    main()
