"""Models that configs name in `model.name`; each returns log-probabilities (log_softmax).

    mlp: MLP(features=(512, 512), num_classes=10, activation='relu', weight_init='normal',
             init_scale=0.01)
    cnn: CNN(features=(32, 64), kernel_size=3, dense=128, num_classes=10, activation='relu',
             pool='max')
"""
from __future__ import annotations

from typing import Sequence

import nn

__all__ = ["MLP", "CNN", "MODELS"]


def _activation(name: str):
    fn = getattr(nn, name, None)
    if not callable(fn):
        raise ValueError(f"unknown activation {name!r}; use a function of nn such as 'relu', "
                         "'tanh', 'gelu' or 'sigmoid'.")
    return fn


def _initializers(name: str, scale: float):
    """(kernel_init, bias_init). 'normal' draws both from N(0, scale^2), as the seed did."""
    if name == "normal":
        return nn.initializers.normal(stddev=scale), nn.initializers.normal(stddev=scale)
    kernel_init = getattr(nn.initializers, name, None)
    if kernel_init is None:
        raise ValueError(f"unknown weight_init {name!r}; use 'normal' or an nn.initializers name such "
                         "as 'lecun_normal' or 'glorot_uniform'.")
    return kernel_init(), nn.initializers.zeros


class MLP(nn.Module):
    """Dense layers of widths `features` with `activation`, then a Dense to `num_classes`."""
    features: Sequence[int] = (512, 512)
    num_classes: int = 10
    activation: str = "relu"
    weight_init: str = "normal"
    init_scale: float = 0.01

    @nn.compact
    def __call__(self, x):
        act = _activation(self.activation)
        kernel_init, bias_init = _initializers(self.weight_init, self.init_scale)
        x = x.reshape((x.shape[0], -1))
        for width in self.features:
            x = act(nn.Dense(width, kernel_init=kernel_init, bias_init=bias_init)(x))
        x = nn.Dense(self.num_classes, kernel_init=kernel_init, bias_init=bias_init)(x)
        return nn.log_softmax(x)


class CNN(nn.Module):
    """Conv(k x k) + activation + 2x2 pooling per entry of `features`, then Dense layers."""
    features: Sequence[int] = (32, 64)
    kernel_size: int = 3
    dense: int = 128
    num_classes: int = 10
    activation: str = "relu"
    pool: str = "max"

    @nn.compact
    def __call__(self, x):
        act = _activation(self.activation)
        if self.pool not in ("max", "avg"):
            raise ValueError(f"unknown pool {self.pool!r}; use 'max' or 'avg'.")
        pool = nn.max_pool if self.pool == "max" else nn.avg_pool
        if x.ndim == 2:
            x = x.reshape((x.shape[0], 28, 28, 1))
        for width in self.features:
            x = act(nn.Conv(width, kernel_size=(self.kernel_size, self.kernel_size))(x))
            x = pool(x, window_shape=(2, 2), strides=(2, 2))
        x = x.reshape((x.shape[0], -1))
        x = act(nn.Dense(self.dense)(x))
        x = nn.Dense(self.num_classes)(x)
        return nn.log_softmax(x)


MODELS = {"mlp": MLP, "cnn": CNN}
