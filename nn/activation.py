"""Activation functions as flax.linen exports them (corejax.nn's functions) and PReLU."""
from __future__ import annotations

from typing import Any

import corejax.numpy as jnp
from corejax.nn import (  # noqa: F401
    celu, elu, gelu, glu, hard_sigmoid, hard_silu, hard_swish, hard_tanh, leaky_relu,
    log_sigmoid, log_softmax, logsumexp, one_hot, relu, relu6, selu, sigmoid, silu, soft_sign,
    softmax, softplus, standardize, swish, tanh,
)
from nn.module import Module, compact

__all__ = ["PReLU", "normalize", "celu", "elu", "gelu", "glu", "hard_sigmoid", "hard_silu",
           "hard_swish", "hard_tanh", "leaky_relu", "log_sigmoid", "log_softmax", "logsumexp",
           "one_hot", "relu", "relu6", "selu", "sigmoid", "silu", "soft_sign", "softmax",
           "softplus", "standardize", "swish", "tanh"]

# flax.linen still exports jax.nn's old name for standardize.
normalize = standardize


class PReLU(Module):
    """x where x >= 0, else negative_slope * x, with the slope a learned scalar parameter."""
    param_dtype: Any = jnp.float32
    negative_slope_init: float = 0.01

    @compact
    def __call__(self, inputs):
        slope = self.param("negative_slope",
                           lambda key: jnp.asarray(self.negative_slope_init, self.param_dtype))
        inputs = jnp.asarray(inputs)
        return jnp.where(inputs >= 0, inputs, jnp.asarray(slope, inputs.dtype) * inputs)
