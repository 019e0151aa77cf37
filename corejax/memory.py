"""Memory spaces (JAX's `jax.memory`): `Space`, the memory an array or a ref lives in.

corejax's CPU devices have one memory, host RAM, which JAX's three CPU memory kinds
('device', 'pinned_host', 'unpinned_host', as NamedSharding(memory_kind=...) accepts them)
all name; CUDA devices hold their arrays in device memory only.
"""
from __future__ import annotations

import enum

__all__ = ["Space"]


class Space(enum.Enum):
    """Where a value lives: Device memory, Host memory, or Any (left to the compiler)."""
    Device = enum.auto()
    Host = enum.auto()
    Any = enum.auto()

    def __repr__(self):
        return f"MemorySpace.{self.name}"

    __str__ = __repr__


Space.__name__ = Space.__qualname__ = "MemorySpace"
