"""corejax.nn: activation functions and utilities (jax.nn), and parameter initializers."""
from corejax.nn.functions import *  # noqa: F401,F403
from corejax.nn.functions import __all__
from corejax.nn import initializers  # noqa: F401
