"""The version of corejax, as jax.version: `corejax.version.__version__`."""
__version__ = "0.1.0"
