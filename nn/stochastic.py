"""Dropout."""
from __future__ import annotations

from typing import Any, Sequence

import corejax.numpy as jnp
from corejax import lax, random
from nn.module import Module, compact, merge_param

__all__ = ["Dropout"]


class Dropout(Module):
    """Zeroes each element with probability `rate` and scales the rest by 1 / (1 - rate);
    the identity when deterministic. Draws its mask from the `rng_collection` stream."""
    rate: float
    broadcast_dims: Sequence[int] = ()
    deterministic: Any = None
    rng_collection: str = "dropout"

    @compact
    def __call__(self, inputs, deterministic=None, rng=None):
        deterministic = merge_param("deterministic", self.deterministic, deterministic,
                                    f'Dropout "{self.path}"')
        inputs = jnp.asarray(inputs)
        if self.rate == 0.0 or deterministic:
            return inputs
        if self.rate == 1.0:
            return jnp.zeros_like(inputs)
        keep = 1.0 - self.rate
        if rng is None:
            rng = self.make_rng(self.rng_collection)
        shape = list(inputs.shape)
        for d in self.broadcast_dims:
            shape[d] = 1
        mask = jnp.broadcast_to(random.bernoulli(rng, p=keep, shape=tuple(shape)), inputs.shape)
        return lax.select(mask, inputs / jnp.asarray(keep, inputs.dtype), jnp.zeros_like(inputs))
