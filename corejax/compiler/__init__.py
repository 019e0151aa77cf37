"""The compiler: turns a ClosedJaxpr into an executable for a backend.

`compile_jaxpr(closed, backend)` returns a callable `(*arrays) -> list[Array]`, cached per
Jaxpr. The reference executor runs each equation's NumPy impl directly (no tracing).
"""
from __future__ import annotations

import weakref

from corejax.compiler.reference import ReferenceExecutable

__all__ = ["compile_jaxpr"]

_cache: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def compile_jaxpr(closed, backend: str = "cpu"):
    per_jaxpr = _cache.setdefault(closed, {})
    exe = per_jaxpr.get(backend)
    if exe is None:
        if backend != "cpu":
            from corejax.array import devices
            devices(backend)  # raises a clear error for an unavailable backend
        exe = per_jaxpr[backend] = ReferenceExecutable(closed)
    return exe
