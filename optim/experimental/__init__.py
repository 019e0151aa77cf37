"""optax.experimental: Optax's experimental modules (aggregating)."""
from optim.experimental import aggregating

__all__ = ["aggregating"]
