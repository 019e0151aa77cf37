"""JAX's step for train.py's MLP and CNN, run the way train.py runs corejax's: the peer for
bench_cuda.py's GPU epochs (JAX with CUDA, Flax and Optax in a scratch environment or on the
GPU machine; the project itself never imports them).

    python bench/bench_cuda_jax.py --config configs/mlp.yaml --data-dir ../shared/data/mnist
    python bench/bench_cuda_jax.py --config configs/cnn.yaml --epochs 3

The loop is train.py's: the same config file, the same host batches from `data.batches` (same
shuffle, preprocessing and prefetch thread), one jitted step per batch with the parameters and
optimizer state donated, and the loss read back to the host after every step (`float(loss)`),
so both frameworks wait for each step alike. The models are train.py's MLP and CNN written in
Flax linen (Conv padding SAME, 2x2 pooling, log-softmax outputs), the optimizer the config's
Optax one. Prints "Epoch i in t sec" and the test accuracy after each epoch, as train.py does.
"""
from __future__ import annotations

import argparse
import functools
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def build(cfg):
    import flax.linen as fnn
    import jax
    import jax.numpy as jnp
    import optax

    args = dict(cfg["model.args"])
    if cfg["model.name"] == "mlp":
        init = (jax.nn.initializers.normal(args.get("init_scale", 0.01))
                if args.get("weight_init", "normal") == "normal" else None)
        kw = {"kernel_init": init, "bias_init": init} if init is not None else {}

        class Model(fnn.Module):
            @fnn.compact
            def __call__(self, x):
                x = x.reshape((x.shape[0], -1))
                for width in args.get("features", (512, 512)):
                    x = jax.nn.relu(fnn.Dense(width, **kw)(x))
                return jax.nn.log_softmax(fnn.Dense(10, **kw)(x))
    else:
        k = args.get("kernel_size", 3)

        class Model(fnn.Module):
            @fnn.compact
            def __call__(self, x):
                if x.ndim == 2:
                    x = x.reshape((x.shape[0], 28, 28, 1))
                for width in args.get("features", (32, 64)):
                    x = jax.nn.relu(fnn.Conv(width, kernel_size=(k, k))(x))
                    x = fnn.max_pool(x, window_shape=(2, 2), strides=(2, 2))
                x = x.reshape((x.shape[0], -1))
                x = jax.nn.relu(fnn.Dense(args.get("dense", 128))(x))
                return jax.nn.log_softmax(fnn.Dense(10)(x))

    lr = cfg["optimizer.learning_rate"]
    if cfg["optimizer.schedule.name"] is not None:
        lr = getattr(optax, cfg["optimizer.schedule.name"])(
            init_value=lr, **cfg["optimizer.schedule.args"])
    tx = getattr(optax, cfg["optimizer.name"])(learning_rate=lr, **cfg["optimizer.args"])

    def loss_of(logp, onehot):
        if cfg["loss"] == "neg_mean_logp":
            return -jnp.mean(logp * onehot)
        if cfg["loss"] == "neg_sum_logp":
            return -jnp.sum(logp * onehot)
        return jnp.mean(optax.softmax_cross_entropy(logp, onehot))
    return Model(), tx, loss_of


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", required=True)
    ap.add_argument("--data-dir", default=os.environ.get("COREJAX_DATA_DIR"))
    ap.add_argument("--epochs", type=int, default=None)
    args = ap.parse_args(argv)

    import jax
    import optax
    import train
    from corejax import random as cj_random
    from data import Preprocess, batches

    cfg = train.load_config(args.config, data_dir=args.data_dir)
    if args.epochs is not None:
        cfg["train.epochs"] = args.epochs
    print(f"JAX {jax.__version__} on {jax.devices()[0].device_kind} ({jax.default_backend()})")
    train_x, train_y, test_x, test_y = train.load_data(cfg)
    pre = Preprocess(flatten=cfg["data.flatten"], scale=cfg["data.scale"], one_hot=10)
    model, tx, loss_of = build(cfg)

    def loss_fn(params, x, y):
        return loss_of(model.apply(params, x), y)

    @functools.partial(jax.jit, donate_argnums=(0, 1))
    def train_step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    @jax.jit
    def predict(params, x):
        return jax.numpy.argmax(model.apply(params, x), axis=-1)

    sample, _ = train.batches_preprocess(train_x[:1], train_y[:1], pre)
    params = model.init(jax.random.PRNGKey(cfg["train.seed"]), sample)
    opt_state = tx.init(params)
    _, shuffle_key = cj_random.split(cj_random.PRNGKey(cfg["train.seed"]))
    bs = cfg["train.batch_size"]
    for epoch in range(cfg["train.epochs"]):
        it = batches(train_x, train_y, bs, key=shuffle_key, epoch=epoch,
                     shuffle=cfg["data.shuffle"], drop_remainder=cfg["data.drop_remainder"],
                     preprocess=pre, prefetch=cfg["data.prefetch"])
        start = time.perf_counter()
        for x, y in it:
            params, opt_state, loss = train_step(params, opt_state, x, y)
            loss = float(loss)
        elapsed = time.perf_counter() - start
        it.close()
        acc = train.accuracy(predict, params, test_x, test_y, pre, cfg["train.eval_batch_size"])
        print(f"Epoch {epoch} in {elapsed:0.2f} sec", flush=True)
        print(f"Test set accuracy {acc}  (last train loss {loss:.4f})", flush=True)


if __name__ == "__main__":
    main()
