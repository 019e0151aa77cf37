"""A convolutional MNIST classifier written the way Flax linen users write one: an `nn.Module`
with `@nn.compact`, parameters held in a `TrainState` with an `optim` (Optax-style) optimizer,
one jitted step that differentiates the loss and applies the update.

    COREJAX_DATA_DIR=../shared/data/mnist python examples/linen_mnist.py --epochs 1

The model and hyperparameters are those of Flax's linen MNIST example (two 3x3 convolutions of
32 and 64 features with 2x2 average pooling, a 256-unit hidden layer, SGD with momentum 0.9 at
learning rate 0.1, batches of 128), so its accuracy can be set beside Flax's published run
(about 99% after ten epochs). The code is this project's own.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

import corejax  # noqa: E402
import corejax.numpy as jnp  # noqa: E402
import nn  # noqa: E402
import optim  # noqa: E402
from data import mnist  # noqa: E402
from nn.training import train_state  # noqa: E402


class ConvNet(nn.Module):
    classes: int = 10

    @nn.compact
    def __call__(self, images):
        h = images
        for features in (32, 64):
            h = nn.relu(nn.Conv(features, (3, 3))(h))
            h = nn.avg_pool(h, (2, 2), strides=(2, 2))
        h = h.reshape(h.shape[0], -1)
        h = nn.relu(nn.Dense(256)(h))
        return nn.Dense(self.classes)(h)


def initial_state(key, learning_rate=0.1, momentum=0.9) -> train_state.TrainState:
    model = ConvNet()
    variables = model.init(key, jnp.zeros((1, 28, 28, 1), jnp.float32))
    return train_state.TrainState.create(apply_fn=model.apply, params=variables["params"],
                                         tx=optim.sgd(learning_rate, momentum))


def _loss_and_logits(state, params, images, labels):
    logits = state.apply_fn({"params": params}, images)
    loss = optim.softmax_cross_entropy_with_integer_labels(logits, labels).mean()
    return loss, logits


@corejax.jit
def train_step(state, images, labels):
    """One SGD step: (new state, the batch's loss, the batch's accuracy before the step)."""
    (loss, logits), grads = corejax.value_and_grad(_loss_and_logits, argnums=1, has_aux=True)(
        state, state.params, images, labels)
    accuracy = jnp.mean(jnp.argmax(logits, axis=-1) == labels)
    return state.apply_gradients(grads=grads), loss, accuracy


@corejax.jit
def evaluate(state, images, labels):
    loss, logits = _loss_and_logits(state, state.params, images, labels)
    return loss, jnp.mean(jnp.argmax(logits, axis=-1) == labels)


def as_inputs(images, labels):
    """uint8 (N, 28, 28) images -> float32 (N, 28, 28, 1) in [0, 1]; labels int32."""
    x = np.asarray(images, np.float32).reshape(-1, 28, 28, 1) / 255.0
    return jnp.asarray(x), jnp.asarray(np.asarray(labels, np.int32))


def run_epoch(state, images, labels, key, batch_size=128):
    """Shuffles with `key`, runs every full batch; returns (state, mean loss, mean accuracy)."""
    n = (images.shape[0] // batch_size) * batch_size
    order = np.asarray(corejax.random.permutation(key, images.shape[0]))[:n]
    losses, accuracies = [], []
    for batch in order.reshape(-1, batch_size):
        state, loss, accuracy = train_step(state, images[batch], labels[batch])
        losses.append(loss)
        accuracies.append(accuracy)
    return state, float(np.mean(losses)), float(np.mean(accuracies))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--data-dir", default=os.environ.get("COREJAX_DATA_DIR"))
    args = parser.parse_args(argv)
    train_x, train_y = as_inputs(*mnist.load("train", data_dir=args.data_dir))
    test_x, test_y = as_inputs(*mnist.load("test", data_dir=args.data_dir))
    key = corejax.random.key(0)
    key, init_key = corejax.random.split(key)
    state = initial_state(init_key)
    for epoch in range(1, args.epochs + 1):
        key, epoch_key = corejax.random.split(key)
        start = time.perf_counter()
        state, loss, accuracy = run_epoch(state, train_x, train_y, epoch_key, args.batch_size)
        test_loss, test_accuracy = evaluate(state, test_x, test_y)
        print(f"epoch {epoch}: train loss {loss:.4f} accuracy {accuracy:.2%}, test loss "
              f"{float(test_loss):.4f} accuracy {float(test_accuracy):.2%} "
              f"({time.perf_counter() - start:.1f} s)", flush=True)
    return state


if __name__ == "__main__":
    main()
