"""optax.contrib: experimental optimizers and wrappers."""
