"""corejax.experimental: JAX's experimental names that corejax provides (io_callback)."""
from corejax.callbacks import io_callback

__all__ = ["io_callback"]
