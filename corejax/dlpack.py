"""Arrays from other libraries through the DLPack protocol, as jax.dlpack."""
from __future__ import annotations

import numpy as np

from corejax import dtypes
from corejax.array import Array, device_put

__all__ = ["from_dlpack", "is_supported_dtype"]

_SUPPORTED = {np.dtype(t) for t in (
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
    np.float16, np.float32, np.float64, np.complex64, np.complex128)}

_DLPACK_CPU = 1


def from_dlpack(external_array, device=None, copy: bool | None = None) -> Array:
    """A corejax Array with the values of `external_array`, any object implementing the
    DLPack protocol (`__dlpack__` and `__dlpack_device__`: NumPy, PyTorch, CuPy ... arrays)
    whose buffer is in host memory. The values are copied, in the canonical dtype (64-bit
    types narrow while x64 is off), onto `device` (by default the default device);
    `copy=False` (share the producer's buffer) is refused."""
    if copy is False:
        raise ValueError("from_dlpack(copy=False): corejax Arrays own their buffers, so the "
                         "values are always copied; pass copy=None or copy=True.")
    if isinstance(external_array, Array):
        return device_put(external_array, device)
    if not (hasattr(external_array, "__dlpack__")
            and hasattr(external_array, "__dlpack_device__")):
        raise TypeError(f"from_dlpack needs an object with __dlpack__ and __dlpack_device__ "
                        f"methods (a DLPack array), got {type(external_array).__name__}.")
    kind, _ = external_array.__dlpack_device__()
    if int(kind) != _DLPACK_CPU:
        raise NotImplementedError(
            f"from_dlpack reads DLPack buffers in host memory only; this one is on DLPack "
            f"device type {int(kind)}. Copy it to the host first (e.g. tensor.cpu()).")
    host = np.from_dlpack(external_array)
    if not is_supported_dtype(host.dtype):
        raise TypeError(f"from_dlpack: dtype {host.dtype} is not supported by corejax.")
    return device_put(np.array(host, copy=True), device)


def is_supported_dtype(dtype) -> bool:
    """Whether arrays of `dtype` can be exchanged through DLPack with corejax."""
    try:
        dt = dtypes.dtype(dtype)
    except TypeError:
        return False
    return np.dtype(dt) in _SUPPORTED
