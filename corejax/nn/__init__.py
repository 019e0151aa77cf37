"""corejax.nn: activation functions and utilities (jax.nn)."""
from corejax.nn.functions import *  # noqa: F401,F403
from corejax.nn.functions import __all__
