"""Small utilities Optax exports at the top level: scale_gradient, multi_normal, MaskOrFn."""
from __future__ import annotations

from typing import Any, Callable, Optional, Union

import corejax as jax
import corejax.numpy as jnp
from corejax import lax
from corejax.scipy.stats import norm

__all__ = ["scale_gradient", "multi_normal", "MultiNormalDiagFromLogScale", "MaskOrFn"]

# A mask pytree (bools) or a function of the params returning one, or None (optax.MaskOrFn).
MaskOrFn = Optional[Union[Any, Callable[[Any], Any]]]


@jax.custom_vjp
def _scaled_identity(inputs, scale):
    del scale
    return inputs


def _scaled_identity_fwd(inputs, scale):
    return inputs, scale


def _scaled_identity_bwd(scale, cotangent):
    return jax.tree_util.tree_map(lambda g: g * scale, cotangent), None


_scaled_identity.defvjp(_scaled_identity_fwd, _scaled_identity_bwd)


def scale_gradient(inputs, scale):
    """`inputs` unchanged on the way forward; gradients flowing back through it are
    multiplied by `scale` (0 stops them)."""
    if scale == 1.0:
        return inputs
    if scale == 0.0:
        return lax.stop_gradient(inputs)
    return _scaled_identity(inputs, scale)


class MultiNormalDiagFromLogScale:
    """A normal distribution with independent coordinates, mean `loc` and standard deviation
    `exp(log_scale)` (broadcast together)."""

    def __init__(self, loc, log_scale):
        self._log_scale = jnp.asarray(log_scale)
        self._scale = jnp.exp(log_scale)
        self._mean = jnp.asarray(loc)
        self._param_shape = jnp.broadcast_shapes(self._mean.shape, self._scale.shape)

    def sample(self, shape, key):
        """Draws of shape `(*shape, *param_shape)`."""
        draws = jax.random.normal(key, shape=tuple(shape) + self._param_shape)
        return draws * self._scale + self._mean

    def log_prob(self, x):
        """Log density of `x`, summed over the parameter axes."""
        per_coordinate = norm.logpdf(x, loc=self._mean, scale=self._scale)
        return jnp.sum(per_coordinate, axis=[-(i + 1) for i in range(len(self._param_shape))])

    @property
    def log_scale(self):
        return self._log_scale

    @property
    def params(self):
        return [self._mean, self._log_scale]


def multi_normal(loc, log_scale) -> MultiNormalDiagFromLogScale:
    """The diagonal normal distribution of mean `loc` and log standard deviation
    `log_scale`."""
    return MultiNormalDiagFromLogScale(loc=loc, log_scale=log_scale)
