"""The compiler: turns a ClosedJaxpr into an executable for a backend.

`compile_jaxpr(closed, backend)` returns a callable `(*arrays) -> list[Array]` with
`as_text()`, cached per Jaxpr. Backends: 'cpu' (passes -> fusion -> Numba kernels, see
compiler/cpu.py), 'cuda' (the same passes and fusion, numba.cuda kernels, see
compiler/cuda.py) and 'reference' (each equation's NumPy impl: the oracle compiled results are
tested against).
"""
from __future__ import annotations

import contextlib
import threading
import weakref

from corejax import monitoring
from corejax.compiler import eager_kernels
from corejax.compiler.reference import ReferenceExecutable
from corejax.core import AbstractToken, Token

__all__ = ["compile_jaxpr", "kernel_stats"]

# eager transcendentals run the kernels' scalar code, as jit's programs do
eager_kernels.install()


class _TokenOutputs:
    """An executable whose token outputs (zero-size buffers inside the program, as tokens
    hold no data) come back as tokens."""

    def __init__(self, exe, is_token):
        self._exe, self._is_token = exe, is_token

    def __call__(self, *args):
        outs = self._exe(*args)
        return [Token() if t else o for o, t in zip(outs, self._is_token)]

    def __getattr__(self, name):
        return getattr(self._exe, name)

_cache: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_lock = threading.RLock()


def compile_jaxpr(closed, backend: str = "cpu", donated=None, row_major=False,
                  name: str | None = None):
    """The executable of `closed` for `backend`. `donated` (a bool per input, or None) marks
    inputs whose buffers the CPU program may write its results into, when the caller's
    Array is their only holder; the caller deletes donated Arrays after the call.
    `row_major`: a CPU program keeps every value row-major (no transposed layouts: control
    flow's sub-programs, whose bits must be those of the compiled loops). `name`: the
    jitted function's, for a compile that reports /jax/core/compile/backend_compile_duration
    (sub-programs compiled inside another program's compile pass none)."""
    key = backend if donated is None else (backend, tuple(donated))
    if row_major:
        key = (key, "row_major")
    per_jaxpr = _cache.get(closed)
    exe = per_jaxpr.get(key) if per_jaxpr is not None else None
    if exe is not None:
        return exe
    with _lock:
        per_jaxpr = _cache.setdefault(closed, {})
        exe = per_jaxpr.get(key)
        if exe is None:
            timed = monitoring._Timed(monitoring.BACKEND_COMPILE_DURATION, f"jit({name})") \
                if name is not None else contextlib.nullcontext()
            with timed:
                exe = _build(closed, backend, donated, row_major)
            per_jaxpr[key] = exe
    return exe


def _build(closed, backend, donated, row_major):
    if backend == "reference":
        exe = ReferenceExecutable(closed)
    else:
        from corejax.array import devices
        devs = devices(backend)  # raises a clear error for an unavailable backend
        if backend == "cuda":
            from corejax.compiler.cuda import CudaExecutable
            exe = CudaExecutable(closed, devs[0])
        else:
            from corejax.compiler.cpu import CpuExecutable
            exe = CpuExecutable(closed, donated, row_major)
    if any(type(a) is AbstractToken for a in closed.out_avals):
        exe = _TokenOutputs(exe, [type(a) is AbstractToken for a in closed.out_avals])
    return exe


def kernel_stats() -> dict:
    """Counters of this process: kernels_compiled (Numba compilations), kernels_loaded (from
    the disk cache), rebuilt (corrupted cache entries replaced)."""
    from corejax.compiler import diskcache
    return dict(diskcache.stats)
