"""The immutable `Array`: a buffer on one device plus its weak-type flag.

On the CPU the buffer is a read-only NumPy array. Operators and methods (`x + y`, `x.sum()`,
`x.at[i].set(v)`) are installed by corejax.numpy, which defines them once for Array and Tracer.
"""
from __future__ import annotations

import numpy as np

from corejax import core, dtypes
from corejax.config import config

__all__ = ["Array", "Device", "devices", "device_put", "device_get", "block_until_ready"]


class Device:
    """A place arrays live and computations run: `cpu:0` or `cuda:N`."""

    __slots__ = ("platform", "id")

    def __init__(self, platform: str, id: int = 0):
        self.platform, self.id = platform, id

    def __repr__(self):
        return f"{'Cpu' if self.platform == 'cpu' else 'Cuda'}Device(id={self.id})"

    def __str__(self):
        return f"{self.platform}:{self.id}"

    def __eq__(self, other):
        return isinstance(other, Device) and (self.platform, self.id) == (other.platform, other.id)

    def __hash__(self):
        return hash((self.platform, self.id))


CPU = Device("cpu", 0)


class Array:
    """An immutable n-dimensional array, the value type of corejax."""

    __slots__ = ("_value", "weak_type", "_aval", "__weakref__")
    __array_priority__ = 100

    def __init__(self, value: np.ndarray, weak_type: bool = False):
        if value.flags.writeable:
            value.flags.writeable = False
        self._value = value
        self.weak_type = weak_type
        self._aval = None

    @property
    def aval(self) -> core.ShapedArray:
        if self._aval is None:
            v = self._value
            self._aval = core.ShapedArray(v.shape, v.dtype, self.weak_type)
        return self._aval

    shape = property(lambda self: self._value.shape)
    dtype = property(lambda self: self._value.dtype)
    ndim = property(lambda self: self._value.ndim)
    size = property(lambda self: self._value.size)
    nbytes = property(lambda self: self._value.nbytes)
    itemsize = property(lambda self: self._value.itemsize)

    @property
    def device(self) -> Device:
        return CPU

    def devices(self) -> set:
        return {CPU}

    def block_until_ready(self) -> "Array":
        return self

    def is_fully_addressable(self) -> bool:
        return True

    def __array__(self, dtype=None, copy=None):
        v = self._value
        if copy:
            v = v.copy()
        return v if dtype is None else v.astype(dtype, copy=False)

    def item(self, *args):
        return self._value.item(*args)

    def tolist(self):
        return self._value.tolist()

    def __bool__(self):
        return bool(self._value)

    def __int__(self):
        return int(self._value)

    def __float__(self):
        return float(self._value)

    def __complex__(self):
        return complex(self._value)

    def __index__(self):
        if not dtypes.is_integer(self.dtype) and self.dtype != np.bool_:
            raise TypeError(f"Only integer scalar arrays can be converted to a scalar index, "
                            f"got dtype {self.dtype}.")
        return int(self._value)

    def __len__(self):
        if not self._value.ndim:
            raise TypeError("len() of unsized object")
        return len(self._value)

    def __iter__(self):
        if not self._value.ndim:
            raise TypeError("iteration over a 0-d array")
        return (Array(np.asarray(row), self.weak_type) for row in self._value)

    def __hash__(self):
        raise TypeError("unhashable type: 'Array' (arrays are mutable-looking values; use a "
                        "tuple or x.item() as a dictionary key)")

    def __setitem__(self, idx, value):
        raise TypeError("'Array' object does not support item assignment: corejax arrays are "
                        "immutable. Use x = x.at[idx].set(value) (or .add, .multiply, .min, .max) "
                        "instead.")

    def __reduce__(self):
        return (_rebuild, (np.array(self._value), self.weak_type))

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def copy(self) -> "Array":
        return Array(self._value.copy(), self.weak_type)

    def __format__(self, spec):
        if self.ndim == 0:
            return format(self._value.item(), spec)
        return format(str(self), spec)

    def __repr__(self):
        v = self._value
        weak = ", weak_type=True" if self.weak_type else ""
        if v.size == 0 and v.ndim:
            return f"Array([], shape={v.shape}, dtype={v.dtype.name}{weak})"
        body = np.array2string(v, separator=", ", prefix="Array(")
        return f"Array({body}, dtype={v.dtype.name}{weak})"

    def __str__(self):
        return str(self._value)


def _rebuild(value, weak_type):
    return Array(value, weak_type)


core.pytype_aval_mappings[Array] = lambda x: x.aval


# --- eager evaluation ------------------------------------------------------------------------

def to_numpy(x) -> np.ndarray:
    """The NumPy value of an eager operand (Array, NumPy array or Python scalar)."""
    t = type(x)
    if t is Array:
        return x._value
    if t is np.ndarray:
        return x
    if t in (int, float, complex, bool):
        return np.asarray(x, dtypes.python_scalar_dtype(x))
    return np.asarray(x)


class _NanChecks:
    enabled = config.debug_nans


config.watch("debug_nans", lambda v: setattr(_NanChecks, "enabled", bool(v)))


def _check_nans(name: str, value) -> None:
    if value.dtype.kind in "fc" and np.isnan(value).any():
        raise FloatingPointError(f"invalid value (nan) encountered in {name}")


def wrap(out, weak_type: bool) -> Array:
    if type(out) is Array:
        return out
    if type(out) is not np.ndarray:
        out = np.asarray(out)
    return Array(out, weak_type)


def apply_primitive(primitive, args, params):
    vals = [to_numpy(a) for a in args]
    out = primitive.impl(*vals, **params)
    weak = primitive.weak_type_rule(*args, **params)
    if primitive.multiple_results:
        if isinstance(weak, bool):
            weak = [weak] * len(out)
        outs = [wrap(o, w) for o, w in zip(out, weak)]
        if _NanChecks.enabled:
            for o in outs:
                _check_nans(primitive.name, o._value)
        return outs
    result = wrap(out, weak)
    if _NanChecks.enabled:
        _check_nans(primitive.name, result._value)
    return result


core.eval_hooks.apply_primitive = apply_primitive


# --- devices ---------------------------------------------------------------------------------

def devices(backend: str | None = None) -> list[Device]:
    """The devices of a backend (`'cpu'` or `'cuda'`); the default backend without argument."""
    backend = backend or config.platform
    if backend == "cpu":
        return [CPU]
    if backend == "cuda":
        raise RuntimeError("Backend 'cuda' requested, but the CUDA backend is not available "
                           "in this build. Use backend='cpu' (COREJAX_PLATFORM=cpu).")
    raise RuntimeError(f"Unknown backend {backend!r}: expected 'cpu' or 'cuda'.")


def _device_put_leaf(x, device):
    if device is not None and device != CPU:
        devices(device.platform)  # raises for an unavailable platform
    if isinstance(x, core.Tracer):
        return x
    if type(x) is Array:
        return x
    if type(x) in (int, float, complex, bool):
        return Array(np.asarray(x, dtypes.python_scalar_dtype(x)), weak_type=type(x) is not bool)
    val = np.asarray(x)
    dt = dtypes.canonicalize_dtype(val.dtype)
    return Array(np.array(val, dtype=dt, copy=True))


def device_put(x, device: Device | None = None):
    """Moves every leaf of pytree `x` to `device` (the default device if None)."""
    from corejax.tree_util import tree_map
    return tree_map(lambda leaf: _device_put_leaf(leaf, device), x)


def device_get(x):
    """Fetches every array leaf of pytree `x` to the host as a NumPy array."""
    from corejax.tree_util import tree_map
    return tree_map(lambda leaf: np.asarray(leaf) if isinstance(leaf, Array) else leaf, x)


def block_until_ready(x):
    """Waits until every array in pytree `x` is computed; returns `x`."""
    from corejax.tree_util import tree_leaves
    for leaf in tree_leaves(x):
        if hasattr(leaf, "block_until_ready"):
            leaf.block_until_ready()
    return x
