"""The few CUDA driver calls on the hot path, made directly through ctypes.

numba.cuda's own launch and copy paths cost 40-80 us of Python per call (argument typing and
packing, cuda.core's launch configuration, array wrappers), measured on an H100 with
numba-cuda 0.30: more than the kernels of a small training step take on the GPU. Here a launch
site packs its parameters once, in the layout Numba's kernels expect, and each launch writes
only the data pointers and sizes that changed before one `cuLaunchKernel`; host <-> device
copies of whole buffers are one `cuMemcpy*` each. Numba still compiles the kernels, owns the
context and allocates the buffers. Everything goes on the legacy default stream, as Numba's
launches do, so it stays ordered with them.

Under Numba's CUDA simulator (or a Numba whose kernels this module cannot read a handle off)
`enabled()` is False and callers take Numba's own paths.
"""
from __future__ import annotations

import ctypes
import threading

import numpy as np

__all__ = ["enabled", "device_pointer", "to_host", "from_host", "KernelLaunch"]

_CUDA_ERROR_INVALID_CONTEXT = 201
_lib = None
_state: dict = {}
_lock = threading.Lock()


def enabled() -> bool:
    """Whether the direct driver path is usable: a real GPU under numba-cuda, not the
    simulator. Decided once per process."""
    ok = _state.get("enabled")
    if ok is None:
        with _lock:
            ok = _state.get("enabled")
            if ok is None:
                ok = _state["enabled"] = _probe()
    return ok


def _probe() -> bool:
    global _lib
    from numba import config
    if config.ENABLE_CUDASIM:
        return False
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    vp, sz, u = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint
    lib.cuLaunchKernel.argtypes = [vp, u, u, u, u, u, u, u, vp, vp, vp]
    lib.cuMemcpyHtoD_v2.argtypes = [ctypes.c_uint64, vp, sz]
    lib.cuMemcpyDtoH_v2.argtypes = [vp, ctypes.c_uint64, sz]
    lib.cuGetErrorName.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
    _lib = lib
    return True


def _check(rc: int, what: str) -> None:
    if rc:
        name = ctypes.c_char_p()
        _lib.cuGetErrorName(rc, ctypes.byref(name))
        raise RuntimeError(f"CUDA driver error {rc} ({(name.value or b'?').decode()}) in "
                           f"{what}.")


def _call(fn, what: str, *args) -> None:
    rc = fn(*args)
    if rc == _CUDA_ERROR_INVALID_CONTEXT:
        # A thread that has not touched CUDA through Numba yet has no current context:
        # Numba makes its (primary) context current, then the call is made again.
        from numba import cuda
        cuda.current_context()
        rc = fn(*args)
    _check(rc, what)


def device_pointer(buf) -> int:
    """The device address of a numba device array's first element."""
    return buf.device_ctypes_pointer.value or 0


def to_host(buf) -> np.ndarray:
    """A NumPy copy of a contiguous numba device array (waits for the work writing it)."""
    out = np.empty(buf.shape, buf.dtype)
    if out.nbytes:
        _call(_lib.cuMemcpyDtoH_v2, "a device-to-host copy", out.ctypes.data,
              device_pointer(buf), out.nbytes)
    return out


def from_host(buf, host: np.ndarray) -> None:
    """Copies a C-contiguous NumPy array of the same size into a numba device array; ordered
    after the work already queued (it waits for kernels still reading `buf`)."""
    if host.nbytes:
        _call(_lib.cuMemcpyHtoD_v2, "a host-to-device copy", device_pointer(buf),
              host.ctypes.data, host.nbytes)


class KernelLaunch:
    """One launch site of a compiled numba.cuda kernel, its parameters packed once.

    `kernel` is the kernel Numba compiled for `argtypes`, each a 1-D C-contiguous array
    type or an int64 / int32 / float64 / float32 scalar (`supports` says whether a signature
    qualifies). Numba passes a 1-D array as seven parameters (meminfo, parent, nitems,
    itemsize, data, shape, stride); a call rewrites the ones that vary from array to array."""

    _scalar = {"int64": ctypes.c_int64, "int32": ctypes.c_int32,
               "float64": ctypes.c_double, "float32": ctypes.c_float}

    @classmethod
    def supports(cls, argtypes) -> bool:
        from numba import types
        return all((isinstance(t, types.Array) and t.ndim == 1 and t.layout == "C")
                   or str(t) in cls._scalar for t in argtypes)

    def __init__(self, kernel, argtypes):
        from numba import types
        handle = kernel._codelibrary.get_cufunc().handle
        self._handle = ctypes.c_void_p(handle.value if hasattr(handle, "value")
                                       else int(handle))
        self._slots = []        # per argument: ("a", nitems, data, shape, stride) or ("s", v)
        values = []
        for t in argtypes:
            if isinstance(t, types.Array):
                meminfo, parent, nitems, itemsize, data, shape, stride = (
                    ctypes.c_int64(0) for _ in range(7))
                itemsize.value = np.dtype(str(t.dtype)).itemsize
                values += [meminfo, parent, nitems, itemsize, data, shape, stride]
                self._slots.append((True, nitems, data, shape, stride))
            else:
                v = self._scalar[str(t)]()
                values.append(v)
                self._slots.append((False, v))
        self._values = values
        self._params = (ctypes.c_void_p * max(1, len(values)))(
            *[ctypes.addressof(v) for v in values])

    def __call__(self, grid, block, args) -> None:
        for slot, a in zip(self._slots, args):
            if slot[0]:
                _, nitems, data, shape, stride = slot
                nitems.value = shape.value = a.size
                stride.value = a.strides[0] if a.strides else a.dtype.itemsize
                data.value = device_pointer(a)
            else:
                slot[1].value = a
        gx, gy, gz = (grid, 1, 1) if type(grid) is int else (tuple(grid) + (1, 1))[:3]
        bx, by, bz = (block, 1, 1) if type(block) is int else (tuple(block) + (1, 1))[:3]
        _call(_lib.cuLaunchKernel, "a kernel launch", self._handle, gx, gy, gz, bx, by, bz,
              0, None, self._params, None)
