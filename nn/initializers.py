"""nn.initializers: jax.nn.initializers plus Flax's zeros_init() / ones_init() factories."""
from corejax.nn.initializers import *  # noqa: F401,F403
from corejax.nn.initializers import __all__ as _jax_names
from corejax.nn.initializers import zeros, ones

__all__ = list(_jax_names) + ["zeros_init", "ones_init"]


def zeros_init():
    return zeros


def ones_init():
    return ones
