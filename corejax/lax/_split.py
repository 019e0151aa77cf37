"""Running a compiled loop over the machine's cores, split along its output's first axis.

Used by the gathers and sums of lax's Numba kernels (convolutions, windowed reductions):
each part writes a disjoint slab of the output, so the result does not depend on how many
threads ran it.
"""
from __future__ import annotations

import functools

from corejax._machine import usable_cores

__all__ = ["SPLIT_MIN", "over_cores"]

# Loops writing (or reading) at least this many elements are split over the machine's cores
# (two halves of the outer axis on two threads: a copy this size takes milliseconds, a
# thread's hand-off microseconds; with another process holding a core, the scheduler's fair
# share gives two threads more of the machine than one).
SPLIT_MIN = 1 << 20


@functools.lru_cache(maxsize=None)
def _helpers():
    from concurrent.futures import ThreadPoolExecutor
    n = min(usable_cores(), 4) - 1
    return (ThreadPoolExecutor(n, thread_name_prefix="corejax-lax") if n > 0 else None), n


def over_cores(kernel, x, out, args, work=None):
    """kernel(x, out, *args, a0, a1) over the whole first axis of `out` ([a0, a1) its part),
    split across cores when `work` (the elements it reads or writes; out.size by default) is
    at least SPLIT_MIN; the kernel must release the GIL (nogil)."""
    total = out.shape[0]
    pool, n = _helpers()
    if pool is None or (out.size if work is None else work) < SPLIT_MIN or total < 2:
        kernel(x, out, *args, 0, total)
        return
    parts = min(n + 1, total)
    bounds = [total * i // parts for i in range(parts + 1)]
    futures = [pool.submit(kernel, x, out, *args, lo, hi)
               for lo, hi in zip(bounds[1:-1], bounds[2:])]
    kernel(x, out, *args, bounds[0], bounds[1])
    for f in futures:
        f.result()
