"""A caching allocator for numba.cuda device memory (a Numba EMM plugin), as JAX's and
PyTorch's GPU allocators are: freed blocks go back to a free list per size class and the next
allocation of that class takes one, instead of a `cuMemAlloc` and a later, synchronizing,
`cuMemFree` each time. Measured on an H100 with numba-cuda 0.30: Numba's own allocator costs
40 us per buffer and more when its deferred frees flush, and a training step allocates one
buffer per output.

A block is back on its free list when the last array using it (views included: they share
its MemoryPointer) is gone. Reusing it at once is safe because every corejax launch and copy
goes on the legacy default stream: work queued with the block's next owner runs after the
work that used it before. (Code that drives its own non-blocking streams on this memory
should set COREJAX_CUDA_ALLOCATOR=numba, which leaves Numba's allocator in place.) Cached
blocks are released when an allocation fails for lack of memory, and then it is retried.
"""
from __future__ import annotations

import os
import threading
import weakref

__all__ = ["install", "ArrayFactory"]

_MIN_BLOCK = 512
_BIG_BLOCK = 1 << 20


def size_class(nbytes: int) -> int:
    """Powers of two from 512 B up to 1 MiB, then whole MiBs: a request wastes at most half
    its block below 1 MiB and under 1 MiB above it."""
    if nbytes <= _BIG_BLOCK:
        return max(_MIN_BLOCK, 1 << (max(nbytes, 1) - 1).bit_length())
    return -(-nbytes // _BIG_BLOCK) * _BIG_BLOCK


def install(cuda) -> bool:
    """Makes the caching allocator numba.cuda's memory manager for contexts created from now
    on. Not under the simulator, nor with COREJAX_CUDA_ALLOCATOR=numba. Returns whether it
    was installed."""
    from numba import config
    if config.ENABLE_CUDASIM or os.environ.get("COREJAX_CUDA_ALLOCATOR", "caching") == "numba":
        return False
    cuda.set_memory_manager(_manager_class(cuda))
    return True


def _manager_class(cuda):
    from numba.cuda.cudadrv import driver as drv

    class CachingMemoryManager(cuda.GetIpcHandleMixin, cuda.HostOnlyCUDAMemoryManager):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self._free: dict = {}          # size class -> device pointers ready for reuse
            self._lock = threading.Lock()

        def initialize(self):
            pass

        def memalloc(self, size):
            n = size_class(size)
            with self._lock:
                blocks = self._free.get(n)
                ptr = blocks.pop() if blocks else None
            if ptr is None:
                ptr = self._allocate(n)
            return cuda.MemoryPointer(weakref.proxy(self.context), ptr, size,
                                      finalizer=_Release(self._free, self._lock, n, ptr))

        def _allocate(self, n):
            try:
                return drv.driver.cuMemAlloc(n)
            except drv.CudaAPIError as e:
                if "OUT_OF_MEMORY" not in str(e) and getattr(e, "code", None) != 2:
                    raise
                self.release_cached()
                return drv.driver.cuMemAlloc(n)

        def release_cached(self):
            """Gives every cached (unused) block back to the driver."""
            with self._lock:
                blocks = [p for ps in self._free.values() for p in ps]
                self._free.clear()
            for p in blocks:
                drv.driver.cuMemFree(p)

        def get_memory_info(self):
            free, total = drv.driver.cuMemGetInfo()
            return cuda.MemoryInfo(free=free, total=total)

        def reset(self):
            super().reset()
            self.release_cached()

        @property
        def interface_version(self):
            return 1

    return CachingMemoryManager


class _Release:
    """The finalizer of a block: back onto its free list (holds no reference to the block's
    MemoryPointer, so the pointer can be collected)."""

    __slots__ = ("free", "lock", "n", "ptr")

    def __init__(self, free, lock, n, ptr):
        self.free, self.lock, self.n, self.ptr = free, lock, n, ptr

    def __call__(self):
        with self.lock:
            self.free.setdefault(self.n, []).append(self.ptr)


# The instance state a numba.cuda DeviceNDArray constructor sets (numba-cuda 0.30 and Numba's
# own numba.cuda); ArrayFactory copies it from a template array and adds fresh memory.
_ARRAY_STATE = frozenset({"ndim", "_dummy", "shape", "strides", "dtype", "size", "alloc_size",
                          "stream", "gpu_data"})


class ArrayFactory:
    """New 1-D C-contiguous device arrays of one size and dtype: `factory()`.

    Numba's `device_array` builds each array from scratch (shape checks, an index descriptor,
    the context lookup): tens of microseconds of Python per array, and a compiled program
    makes one per output at every call. A factory takes the array state of one array built by
    Numba, and each call copies that state into a new array with memory of its own from the
    context's memory manager (this allocator, or Numba's): what the constructor does, without
    recomputing the parts every such array shares (the index descriptor is immutable, and
    Numba's own copies of an array share it too). Where the constructor sets
    other state than it is known to (another numba-cuda version), under the simulator, and
    for empty arrays, a call is Numba's `device_array` itself."""

    __slots__ = ("n", "dtype", "_cls", "_state", "_nbytes", "_get_context")

    def __init__(self, n: int, dtype):
        import numpy as np
        from numba import config
        self.n, self.dtype = int(n), np.dtype(dtype)
        self._state = None
        if self.n <= 0 or config.ENABLE_CUDASIM:
            return
        from numba import cuda
        from numba.cuda.cudadrv import devices
        t = cuda.device_array(self.n, self.dtype)      # the template (its memory is freed)
        state = dict(t.__dict__)
        if set(state) != _ARRAY_STATE:
            return
        del state["gpu_data"]
        self._cls, self._state, self._nbytes = type(t), state, t.alloc_size
        self._get_context = devices.get_context

    def __call__(self):
        state = self._state
        if state is None:
            from numba import cuda
            return cuda.device_array(self.n, self.dtype)
        a = object.__new__(self._cls)
        d = a.__dict__
        d.update(state)
        d["gpu_data"] = self._get_context().memalloc(self._nbytes)
        return a
