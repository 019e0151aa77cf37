"""What the machine gives this process: the cores it may run on (its affinity mask where the
OS reports one, else the CPU count). Kernels that split work over threads size their parts
by it."""
from __future__ import annotations

import functools
import os

__all__ = ["usable_cores"]


@functools.lru_cache(maxsize=None)
def usable_cores() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1
