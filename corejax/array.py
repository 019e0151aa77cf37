"""The immutable `Array`: a buffer on one device plus its weak-type flag.

On the CPU the buffer is a read-only NumPy array. Operators and methods (`x + y`, `x.sum()`,
`x.at[i].set(v)`) are installed by corejax.numpy, which defines them once for Array and Tracer.
"""
from __future__ import annotations

import numpy as np

from corejax import _cuda_driver, core, dtypes
from corejax.config import config, _VALIDATORS
from corejax._guards import Guards as _Guards, refuse_execution
from corejax import _transfer_guard
from corejax._transfer_guard import Guarded as _TransferGuarded

__all__ = ["Array", "Device", "devices", "device_put", "device_get", "block_until_ready"]


class Device:
    """A place arrays live and computations run: `cpu:0` or `cuda:N`."""

    # process_index: the process the device belongs to (corejax.distributed sets it on this
    # process's devices once it knows its rank; the hash leaves it out, so that stays put)
    __slots__ = ("platform", "id", "process_index")

    @property
    def device_kind(self) -> str:
        return self.platform

    @property
    def host_id(self) -> int:
        return self.process_index

    def __init__(self, platform: str, id: int = 0, process_index: int = 0):
        self.platform, self.id, self.process_index = platform, id, process_index

    def __repr__(self):
        where = f", process_index={self.process_index}" if self.process_index else ""
        return f"{'Cpu' if self.platform == 'cpu' else 'Cuda'}Device(id={self.id}{where})"

    def __str__(self):
        where = f"@{self.process_index}" if self.process_index else ""
        return f"{self.platform}:{self.id}{where}"

    def __eq__(self, other):
        return isinstance(other, Device) and (self.platform, self.id, self.process_index) == (
            other.platform, other.id, other.process_index)

    def __hash__(self):
        return hash((self.platform, self.id))


CPU = Device("cpu", 0)


class _Deleted:
    """The buffer slot of a deleted Array (`Array.delete`, or donated to a jitted call): the
    shape and dtype stay readable; any use of the values raises RuntimeError, as in JAX."""

    __slots__ = ("shape", "dtype", "ndim")

    def __init__(self, shape, dtype):
        self.shape, self.dtype, self.ndim = tuple(shape), np.dtype(dtype), len(shape)

    def error(self) -> RuntimeError:
        return RuntimeError(f"Array has been deleted with shape="
                            f"{core.ShapedArray(self.shape, self.dtype).str_short()}.")

    def __getattr__(self, name):
        raise self.error()

    def __array__(self, *args, **kwargs):
        raise self.error()

    def __len__(self):
        raise self.error()


class _ArrayMeta(type):
    """`isinstance(x, Array)` holds for tracers too, as `isinstance(x, jax.Array)` does in JAX
    (code checks it inside jit/grad/vmap); `type(x) is Array` still means a concrete array."""

    def __instancecheck__(cls, obj):
        return type.__instancecheck__(cls, obj) or (
            cls is Array and isinstance(obj, core.Tracer))


class Array(metaclass=_ArrayMeta):
    """An immutable n-dimensional array, the value type of corejax.

    `_value` is the buffer: a read-only NumPy array on the CPU, a numba.cuda device array on a
    CUDA device (`_device`). Reading values on the host (`np.asarray(x)`, `x.item()`, printing)
    copies a device buffer back; computing with it never does."""

    # `_sharding` (unset on most arrays) places an array on CPU devices other than the default
    # one, or over several of them (pmap's results): corejax.sharding.
    __slots__ = ("_value", "weak_type", "_aval", "_device", "_sharding", "__weakref__")
    __array_priority__ = 100

    def __init__(self, value: np.ndarray, weak_type: bool = False):
        flags = value.flags
        if flags.writeable:
            flags.writeable = False
        self._value = value
        self.weak_type = weak_type
        self._aval = None
        self._device = CPU

    @property
    def aval(self) -> core.ShapedArray:
        if self._aval is None:
            v = self._value
            self._aval = core.ShapedArray(tuple(v.shape), v.dtype, self.weak_type)
        return self._aval

    # tuple(): the CUDA simulator's device arrays have a tuple-like shape of their own.
    shape = property(lambda self: tuple(self._value.shape))
    dtype = property(lambda self: self._value.dtype)
    ndim = property(lambda self: len(self._value.shape))
    size = property(lambda self: int(np.prod(self._value.shape, dtype=np.int64)))
    nbytes = property(lambda self: self.size * self._value.dtype.itemsize)
    itemsize = property(lambda self: self._value.dtype.itemsize)

    @property
    def device(self):
        sharding = getattr(self, "_sharding", None)
        if sharding is None:
            return self._device
        # an array over several devices answers with its sharding, as JAX's does
        return sharding._device_assignment[0] if len(sharding._device_assignment) == 1 \
            else sharding

    def devices(self) -> set:
        sharding = getattr(self, "_sharding", None)
        return {self._device} if sharding is None else set(sharding.device_set)

    @property
    def sharding(self):
        sharding = getattr(self, "_sharding", None)
        if sharding is None:
            from corejax.sharding import SingleDeviceSharding
            return SingleDeviceSharding(self._device)
        return sharding

    @property
    def is_fully_replicated(self) -> bool:
        return self.sharding.is_fully_replicated

    @property
    def committed(self) -> bool:
        """Whether the array was placed on its device(s) explicitly (device_put to a device,
        or a pmap result); arrays placed by `default_device` are not."""
        sharding = getattr(self, "_sharding", None)
        return sharding is not None and not getattr(sharding, "_uncommitted", False)

    @property
    def addressable_shards(self) -> list:
        from corejax.sharding import shards_of
        return shards_of(self)

    def addressable_data(self, index: int) -> "Array":
        return self.addressable_shards[index].data

    def _host(self) -> np.ndarray:
        """The value as a NumPy array (a copy from a device buffer)."""
        v = self._value
        if type(v) is np.ndarray:
            return v
        if _cuda_driver.enabled() and v.is_c_contiguous():
            return _cuda_driver.to_host(v)
        return v.copy_to_host()

    def _read(self) -> np.ndarray:
        """The value as a NumPy array, read by the user (np.asarray(x), float(x), printing): an
        implicit device-to-host transfer when the array lives on a CUDA device."""
        if self._device is not CPU and _TransferGuarded.device_to_host:
            _transfer_guard.device_to_host(lambda: _transfer_guard.describe_transfer(
                self.aval, src=self._device))
        return self._host()

    def delete(self) -> None:
        """Drops the buffer now; any later use of the values raises RuntimeError."""
        v = self._value
        if type(v) is not _Deleted:
            self._value = _Deleted(v.shape, v.dtype)

    def is_deleted(self) -> bool:
        return type(self._value) is _Deleted

    def unsafe_buffer_pointer(self) -> int:
        """The address of the array's buffer (host or device memory), as an int."""
        v = self._value
        if type(v) is _Deleted:
            raise v.error()
        if type(v) is np.ndarray:
            return int(v.__array_interface__["data"][0])
        return int(v.__cuda_array_interface__["data"][0])

    def block_until_ready(self) -> "Array":
        if type(self._value) is _Deleted:
            raise self._value.error()
        if self._device is not CPU:
            _cuda_module().synchronize()
        return self

    def is_fully_addressable(self) -> bool:
        return True

    def __array__(self, dtype=None, copy=None):
        v = self._read()
        if copy and v is self._value:
            v = v.copy()
        return v if dtype is None else v.astype(dtype, copy=False)

    def item(self, *args):
        return self._read().item(*args)

    def tolist(self):
        return self._read().tolist()

    def __bool__(self):
        return bool(self._read())

    def __int__(self):
        return int(self._read())

    def __float__(self):
        return float(self._read())

    def __complex__(self):
        return complex(self._read())

    def __index__(self):
        if not dtypes.is_integer(self.dtype) and self.dtype != np.bool_:
            raise TypeError(f"Only integer scalar arrays can be converted to a scalar index, "
                            f"got dtype {self.dtype}.")
        return int(self._read())

    def __len__(self):
        if not self.ndim:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        if not self.ndim:
            raise TypeError("iteration over a 0-d array")
        if self._device is CPU:
            return (Array(np.asarray(row), self.weak_type) for row in self._value)
        return (self[i] for i in range(self.shape[0]))

    def __hash__(self):
        raise TypeError("unhashable type: 'Array' (arrays are mutable-looking values; use a "
                        "tuple or x.item() as a dictionary key)")

    def __setitem__(self, idx, value):
        raise TypeError("'Array' object does not support item assignment: corejax arrays are "
                        "immutable. Use x = x.at[idx].set(value) (or .add, .multiply, .min, .max) "
                        "instead.")

    def __reduce__(self):
        # Pickles hold host values, so what was saved from a GPU loads on a CPU-only machine.
        return (_rebuild, (np.array(self._host()), self.weak_type))

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def copy(self) -> "Array":
        if self._device is CPU:
            return Array(self._value.copy(), self.weak_type)
        buf = _cuda_module().device_array(self.shape, self.dtype)
        buf.copy_to_device(self._value)
        return cuda_array(buf, self.weak_type, self._device)

    def __format__(self, spec):
        if self.ndim == 0:
            return format(self._read().item(), spec)
        return format(str(self), spec)

    def __repr__(self):
        v = self._read()
        weak = ", weak_type=True" if self.weak_type else ""
        if v.size == 0 and v.ndim:
            return f"Array([], shape={v.shape}, dtype={v.dtype.name}{weak})"
        width = np.get_printoptions()["linewidth"]
        body = np.array2string(v, separator=", ", prefix="Array(", suffix=",",
                               max_line_width=width)
        dtype_str = f"dtype={v.dtype.name}{weak}"
        # JAX pads the separator to the prefix's width when the dtype would overflow the line
        last_line = len(body) - body.rfind("\n") + 1
        sep = " " * len("Array(") if last_line + len(dtype_str) + 2 > width else " "
        return f"Array({body},{sep}{dtype_str})"

    def __str__(self):
        return str(self._read())


def _collected(self):
    _transfer_guard.array_collected(self)


def _gc_guard_changed(value) -> None:
    """Installs (or removes) Array's finalizer for the array garbage-collection guard
    (corejax/_transfer_guard.py), so that arrays pay for one only while the guard is on."""
    if (value or "allow") != "allow":
        _transfer_guard.track_collections()
        Array.__del__ = _collected
    elif "__del__" in Array.__dict__:
        del Array.__del__


config.watch("array_garbage_collection_guard", _gc_guard_changed)
if config.array_garbage_collection_guard is not None:      # JAX_ARRAY_GARBAGE_COLLECTION_GUARD
    _gc_guard_changed(config.array_garbage_collection_guard)


def _rebuild(value, weak_type):
    return Array(value, weak_type)


core.pytype_aval_mappings[Array] = lambda x: x.aval


# --- eager evaluation ------------------------------------------------------------------------

def to_numpy(x) -> np.ndarray:
    """The NumPy value of an eager operand (Array, NumPy array or Python scalar); a device
    buffer is copied to the host."""
    t = type(x)
    if t is Array:
        v = x._value
        return v if type(v) is np.ndarray else v.copy_to_host()
    if t is np.ndarray:
        return x
    if t in (int, float, complex, bool):
        return np.asarray(x, dtypes.python_scalar_dtype(x))
    return np.asarray(x)


class _NanChecks:
    """debug_nans / debug_infs: every eager result and jitted output is checked."""
    nans, infs = bool(config.debug_nans), bool(config.debug_infs)
    enabled = nans or infs

    @classmethod
    def set(cls, nans=None, infs=None):
        cls.nans = cls.nans if nans is None else bool(nans)
        cls.infs = cls.infs if infs is None else bool(infs)
        cls.enabled = cls.nans or cls.infs

    @classmethod
    def bad(cls, value) -> str | None:
        """'nan' or 'inf' if `value` has one that is being checked for, else None."""
        if value.dtype.kind not in "fc":
            return None
        if cls.nans and np.isnan(value).any():
            return "nan"
        if cls.infs and np.isinf(value).any():
            return "inf"
        return None


config.watch("debug_nans", lambda v: _NanChecks.set(nans=v))
config.watch("debug_infs", lambda v: _NanChecks.set(infs=v))


class _AvalChecks:
    enabled = config.check_eager_avals


config.watch("check_eager_avals", lambda v: setattr(_AvalChecks, "enabled", bool(v)))


def _check_avals(primitive, args, params, outs) -> None:
    """Eager results against the primitive's abstract evaluation: a rule or a jnp function
    that runs eagerly only because NumPy broadcasts or promotes more freely than the
    primitive's contract fails here as it would under jit."""
    expected = primitive.abstract_eval(*[core.get_aval(a) for a in args], **params)
    if not primitive.multiple_results:
        expected, outs = [expected], [outs]
    got = [(a.shape, a.dtype) for a in map(core.get_aval, outs)]
    want = [(a.shape, np.dtype(a.dtype)) for a in expected]
    if got != want:
        raise TypeError(f"{primitive.name}: eager result {got} differs from its abstract "
                        f"evaluation {want} (params {params}).")


def _check_nans(name: str, value) -> None:
    kind = _NanChecks.bad(value)
    if kind is not None:
        raise FloatingPointError(f"invalid value ({kind}) encountered in {name}")


def wrap(out, weak_type: bool) -> Array:
    if type(out) is core.Token:  # tokens are values of their own, not arrays
        return out
    if type(out) is Array:
        if out.weak_type == weak_type:
            return out
        # A call primitive's implementation evaluates its program on NumPy values, which
        # carry no weak type: the primitive's rule decides it (same buffer, new flag).
        new = object.__new__(Array)
        new._value, new.weak_type, new._aval, new._device = \
            out._value, weak_type, None, out._device
        return new
    if type(out) is not np.ndarray:
        out = np.asarray(out)
    return Array(out, weak_type)


class _EagerKernels:
    """Elementwise primitives whose eager results come from the scalar code jit's kernels
    inline rather than from their NumPy impl, so eager and jitted results agree bit for bit
    as in JAX (transcendentals: corejax/compiler/eager_kernels.py). The compiler, a layer
    above, registers `runner_for(primitive) -> run(values, params) -> ndarray or None`."""
    runner_for = None
    runners: dict = {}      # primitive -> its run function, or None for the NumPy impl


def set_eager_kernels(runner_for) -> None:
    _EagerKernels.runner_for = runner_for
    _EagerKernels.runners.clear()


def _eager_kernel(primitive):
    runners = _EagerKernels.runners
    run = runners.get(primitive, False)
    if run is False:
        find = _EagerKernels.runner_for
        run = runners[primitive] = find(primitive) if find is not None else None
    return run


def apply_primitive(primitive, args, params):
    if _Guards.no_execution:
        refuse_execution(f"the primitive {primitive.name}")
    if _TransferGuarded.host_to_device:
        _guard_numpy_operands(args)
    if _Placement.cuda_in_use:
        device = _placement(args)
        if device is not None:
            return _apply_on_device(primitive, args, params, device)
    vals = [to_numpy(a) for a in args]
    run = _eager_kernel(primitive)
    out = run(vals, params) if run is not None and vals else None
    if out is None:
        out = primitive.impl(*vals, **params)
    weak = primitive.weak_type_rule(*args, **params)
    if primitive.multiple_results:
        if isinstance(weak, bool):
            weak = [weak] * len(out)
        outs = [wrap(o, w) for o, w in zip(out, weak)]
        if _AvalChecks.enabled:
            _check_avals(primitive, args, params, outs)
        if _NanChecks.enabled:
            for o in outs:
                _check_nans(primitive.name, o._value)
        return outs
    result = wrap(out, weak)
    if _AvalChecks.enabled:
        _check_avals(primitive, args, params, result)
    if _NanChecks.enabled:
        _check_nans(primitive.name, result._value)
    return result


core.eval_hooks.apply_primitive = apply_primitive


def plain_eager() -> bool:
    """Whether an eager primitive's result is its computation and nothing else: no trace is
    staging, and no execution guard, transfer guard, NaN / inf check, CUDA placement or
    committed CPU device is in force (what apply_primitive honours besides the computation).
    The jnp layer's fast paths for the commonest notebook operations check it first."""
    return not (_Guards.no_execution or _TransferGuarded.host_to_device or _NanChecks.enabled
                or _Placement.cuda_in_use or _Placement.cpu_committed) and \
        core._trace_state.dynamic_level == 0


def _guard_numpy_operands(args) -> None:
    """The host-to-device guard on NumPy operands handed straight to a lax function."""
    for a in args:
        if isinstance(a, (np.ndarray, np.generic)):
            _transfer_guard.host_to_device(lambda: _transfer_guard.describe_transfer(
                core.ShapedArray(np.shape(a), dtypes.canonicalize_dtype(np.result_type(a))),
                dst=default_device()))


# --- devices ---------------------------------------------------------------------------------

class _Placement:
    """Whether any array may live on a CUDA device (an array was put there, or the default
    platform is cuda): until then eager evaluation skips every placement check."""
    cuda_in_use = config.platform == "cuda"
    # whether an array was committed to a CPU device other than cpu:0 (results follow it), or
    # `default_device` names one (results with no committed operand go there)
    cpu_committed = False
    # the CPU device other than cpu:0 that `default_device` names, else None
    cpu_default = None


config.watch("platform", lambda v: setattr(_Placement, "cuda_in_use",
                                           _Placement.cuda_in_use or v == "cuda"))

_cuda = None
_cuda_devices = None


def _cuda_module():
    global _cuda
    if _cuda is None:
        from numba import cuda
        from corejax import _cuda_memory
        _cuda_memory.install(cuda)
        _cuda = cuda
    return _cuda


_cpu_device_list: list | None = None


def _cpu_devices() -> list:
    """cpu:0 .. cpu:N-1, N from config num_cpu_devices (JAX's jax_num_cpu_devices, or
    XLA_FLAGS=--xla_force_host_platform_device_count=N); fixed by the first call."""
    global _cpu_device_list
    if _cpu_device_list is None:
        n = config.num_cpu_devices
        n = 1 if n in (-1, None) else int(n)
        if n < 1:
            raise ValueError(f"num_cpu_devices must be a positive count (or -1 for one), got "
                             f"{n}.")
        _cpu_device_list = [CPU] + [Device("cpu", i) for i in range(1, n)]
    return _cpu_device_list


def _num_cpu_devices_changed(value) -> None:
    if _cpu_device_list is not None and value != len(_cpu_device_list) and not (
            value == -1 and len(_cpu_device_list) == 1):
        count = len(_cpu_device_list)
        config._values["num_cpu_devices"] = count          # the devices in use stay
        object.__setattr__(config, "num_cpu_devices", count)
        raise RuntimeError("jax_num_cpu_devices config should be updated before backends are "
                           "initialized i.e. before any JAX operation is executed (corejax "
                           f"already lists {count} CPU device(s)). Set it right after "
                           "`import corejax`, or with COREJAX_NUM_CPU_DEVICES / XLA_FLAGS="
                           "--xla_force_host_platform_device_count=N.")


config.watch("num_cpu_devices", _num_cpu_devices_changed)


def devices(backend: str | None = None) -> list[Device]:
    """The devices of a backend (`'cpu'` or `'cuda'`); without one, every device here: cpu:0
    and, where numba.cuda finds GPUs, cuda:0, cuda:1, ..."""
    global _cuda_devices
    if backend is None:
        try:
            return list(_cpu_devices()) + devices("cuda")
        except RuntimeError:
            return list(_cpu_devices())
    if backend == "cpu":
        return list(_cpu_devices())
    if backend == "cuda":
        if _cuda_devices is None:
            cuda = _cuda_module()
            if not cuda.is_available():
                raise RuntimeError(
                    "Backend 'cuda' requested, but numba.cuda finds no usable CUDA GPU (it needs "
                    "an NVIDIA GPU, its driver and the CUDA toolkit; `python -c \"from numba "
                    "import cuda; cuda.detect()\"` says what is missing). Use the CPU backend "
                    "(COREJAX_PLATFORM=cpu, jit(..., backend='cpu'), `backend: cpu` in a "
                    "train.py config), or NUMBA_ENABLE_CUDASIM=1 to run CUDA kernels in "
                    "Numba's simulator.")
            _cuda_devices = [Device("cuda", i) for i in range(len(cuda.gpus))]
        return list(_cuda_devices)
    raise RuntimeError(f"Unknown backend {backend!r}: expected 'cpu' or 'cuda'.")


def default_device() -> Device:
    """The device new arrays and computations of uncommitted operands go to: the
    `default_device` option's, else cpu:0, or cuda:0 when the platform is cuda."""
    chosen = config.default_device
    if chosen is None:
        return CPU if config.platform == "cpu" else devices(config.platform)[0]
    if isinstance(chosen, Device):
        return chosen
    return devices("cpu" if chosen == "cpu" else "cuda")[0]


def _check_default_device(value):
    """The `default_device` option's values: None, a Device, or a platform name (JAX's)."""
    if value is None or isinstance(value, Device):
        return value
    if value in ("cpu", "gpu", "cuda"):
        return value
    if value == "tpu":
        raise ValueError("default_device 'tpu': corejax has no TPU backend (its platforms are "
                         "'cpu' and 'cuda').")
    raise ValueError("jax.default_device must be passed either a Device object (e.g. "
                     "`corejax.devices('cpu')[0]`) or a platform name string like 'cpu' or "
                     f"'gpu', got: {value!r}")


def _default_device_changed(value) -> None:
    device = None if value is None else default_device()
    if device is not None and device.platform == "cuda":
        _Placement.cuda_in_use = True
    if device is not None and device.platform == "cpu" and device != CPU:
        if device not in _cpu_devices():
            raise ValueError(f"Unknown device {device}: the CPU devices here are "
                             f"{', '.join(map(str, _cpu_devices()))}.")
        _Placement.cpu_default = device
        _install_placement()
    else:
        _Placement.cpu_default = None


_VALIDATORS["default_device"] = _check_default_device
config.watch("default_device", _default_device_changed)


def cuda_array(buf, weak_type: bool, device: Device) -> Array:
    """An Array over a numba.cuda device buffer on `device`."""
    x = Array.__new__(Array)
    x._value, x.weak_type, x._aval, x._device = buf, bool(weak_type), None, device
    _Placement.cuda_in_use = True
    return x


def _check_cuda_device(device: Device) -> None:
    if device not in devices("cuda"):
        raise ValueError(f"Unknown device {device}: the CUDA devices here are "
                         f"{', '.join(map(str, devices('cuda')))}.")


def to_device_buffer(x, device: Device):
    """The numba.cuda device buffer of operand `x` on `device`: an Array already there is
    used as is; host values (CPU Arrays, NumPy arrays, Python scalars) are copied over."""
    if type(x) is Array and x._device is not CPU:
        if x._device != device:
            raise ValueError(f"An operand lives on {x._device} but the computation runs on "
                             f"{device}: move it explicitly with device_put(x, device).")
        return x._value
    host = to_numpy(x)
    if not host.flags.c_contiguous:
        host = np.array(host, order="C")       # (np.ascontiguousarray would make 0-d 1-d)
    cuda = _cuda_module()
    if device.id != 0 or len(devices("cuda")) > 1:
        with cuda.gpus[device.id]:
            return cuda.to_device(host)
    return cuda.to_device(host)


def _placement(args) -> Device | None:
    """The CUDA device an eager operation on `args` runs on, or None for the CPU. Host
    operands join arrays on a device (they are copied there, like JAX's uncommitted
    arrays); arrays on two different devices are an error."""
    device = None
    for a in args:
        if type(a) is Array and a._device is not CPU:
            if device is None:
                device = a._device
            elif a._device != device:
                raise ValueError(f"Operands live on different devices ({device} and "
                                 f"{a._device}): move them to one with device_put(x, device).")
    if device is None and (config.platform == "cuda" or config.default_device is not None):
        device = default_device()
        if device.platform != "cuda":
            return None
    return device


_one_op_programs: dict = {}


def _params_key(params):
    def freeze(v):
        if isinstance(v, (list, tuple)):
            return tuple(freeze(e) for e in v)
        if isinstance(v, np.ndarray):
            return (v.dtype.str, v.shape, v.tobytes())
        return v
    key = tuple(sorted((k, freeze(v)) for k, v in params.items()))
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _apply_on_device(primitive, args, params, device: Device):
    """Eager evaluation on a CUDA device: the primitive as a one-equation program compiled
    for the device (cached per primitive, parameters and operand types)."""
    return _apply_compiled(primitive, args, params, "cuda", device)


def _apply_compiled(primitive, args, params, backend: str, device: Device = CPU):
    """The primitive as a one-equation program compiled for `backend` (cached per primitive,
    parameters, operand types and device)."""
    from corejax.compiler import compile_jaxpr
    from corejax.transforms.jit import stage
    avals = tuple(core.get_aval(a) for a in args)
    pkey = _params_key(params)
    key = (primitive, pkey, avals, device) if pkey is not None else None
    closed = _one_op_programs.get(key) if key is not None else None
    if closed is None:
        def one_op(*xs):
            out = primitive.bind(*xs, **params)
            return list(out) if primitive.multiple_results else [out]
        closed = stage(one_op, list(avals), name=primitive.name)
        if key is not None:
            _one_op_programs[key] = closed
    outs = compile_jaxpr(closed, backend)(*args)
    weak = primitive.weak_type_rule(*args, **params)
    if isinstance(weak, bool):
        weak = [weak] * len(outs)
    for o, w in zip(outs, weak):
        o.weak_type, o._aval = bool(w), None
    if _NanChecks.enabled:
        for o in outs:
            _check_nans(primitive.name, o._host())
    return outs if primitive.multiple_results else outs[0]


def backend_for(args, backend: str | None = None) -> str:
    """The backend a jitted call runs on: the explicit one, else CUDA if an operand lives
    there, else the default platform."""
    if backend is not None:
        return backend
    if _Placement.cuda_in_use:
        for a in args:
            if type(a) is Array and a._device is not CPU:
                return "cuda"
    if config.default_device is not None:
        return default_device().platform
    return config.platform


def operands_for(backend: str, args):
    """`args` for an executable of `backend`: a CPU program reads device arrays copied to the
    host (an explicit backend='cpu' asked for that); everything else is passed as is."""
    if backend == "cpu" and _Placement.cuda_in_use:
        return [Array(x._host(), x.weak_type) if type(x) is Array and x._device is not CPU
                else x for x in args]
    return args


def _device_put_leaf(x, device):
    if isinstance(x, core.Tracer):
        return x
    if type(x) is Array:
        if device is None or x._device == device:
            return x
        if _TransferGuarded.device_to_device:
            _transfer_guard.device_to_device(lambda: _transfer_guard.describe_transfer(
                x.aval, dst=device), explicit=True)
        if device.platform == "cpu":
            return Array(np.array(x._host()), x.weak_type)
        _check_cuda_device(device)
        if x._device is not CPU:
            with _cuda_module().gpus[device.id]:
                buf = _cuda_module().to_device(x._host())
            return cuda_array(buf, x.weak_type, device)
        return cuda_array(to_device_buffer(x, device), x.weak_type, device)
    if type(x) in (int, float, complex, bool):
        arr = Array(np.asarray(x, dtypes.python_scalar_dtype(x)), weak_type=type(x) is not bool)
    else:
        val = np.asarray(x)
        dt = dtypes.canonicalize_dtype(val.dtype)
        arr = Array(np.array(val, dtype=dt, copy=True))
    target = device if device is not None else default_device()
    if _TransferGuarded.host_to_device:
        _transfer_guard.host_to_device(lambda: _transfer_guard.describe_transfer(
            arr.aval, dst=target), explicit=True)
    if target.platform == "cpu" and target != CPU:
        from corejax.sharding import SingleDeviceSharding, with_sharding
        return with_sharding(arr, _uncommitted_on(target) if device is None
                             else SingleDeviceSharding(target))
    return arr if target.platform == "cpu" else _device_put_leaf(arr, target)


def device_put(x, device: Device | None = None):
    """Moves every leaf of pytree `x` to `device`. Without a device, host values (NumPy
    arrays, scalars) go to the default device and Arrays stay where they are."""
    if isinstance(device, tuple) and type(device).__name__ == "PartitionSpec":
        from corejax.sharding import NamedSharding, get_mesh
        if get_mesh().empty:
            raise ValueError("Please set a mesh via `jax.set_mesh` if a PartitionSpec is "
                             "passed to device_put")
        device = NamedSharding(get_mesh(), device)
    if device is not None and not isinstance(device, Device) and hasattr(
            device, "devices_indices_map"):
        return _device_put_sharded(x, device)
    if device is not None and not isinstance(device, Device):
        raise TypeError(f"device_put expects a Device (from corejax.devices()), got "
                        f"{type(device).__name__}: {device!r}.")
    if device is not None and device.platform == "cuda":
        devices("cuda")   # raises a clear error when CUDA is absent
    if device is not None and device.platform == "cpu" and device != CPU:
        from corejax.sharding import SingleDeviceSharding
        return _device_put_sharded(x, SingleDeviceSharding(device))
    if device is not None and device.platform == "cpu" and _Placement.cpu_committed:
        # onto cpu:0 from another CPU device: committed there
        from corejax.sharding import SingleDeviceSharding
        return _device_put_sharded(x, SingleDeviceSharding(device))
    from corejax._tree_traced import tree_map
    return tree_map(lambda leaf: _device_put_leaf(leaf, device), x)


def committed_device(args):
    """The CPU device that the committed operands among `args` were put on, or None;
    operands committed to two different devices are an error, as in JAX."""
    device, first = None, None
    for a in args:
        sharding = getattr(a, "_sharding", None) if type(a) is Array else None
        if sharding is None or len(sharding._device_assignment) != 1 \
                or hasattr(sharding, "mesh") or getattr(sharding, "_uncommitted", False):
            continue
        d = sharding._device_assignment[0]
        if device is None:
            device, first = d, a
        elif d != device:
            raise ValueError(f"Received incompatible devices for jitted computation. Got an "
                             f"argument of shape {first.aval.str_short()} on {device} and an "
                             f"argument of shape {a.aval.str_short()} on {d}: move them to "
                             "one device with device_put(x, device).")
    return device


def place_results(args, outs):
    """`outs` (an Array or a list of them) committed to the device of the committed
    operands among `args`, where there are any (JAX keeps a computation on its operands'
    device)."""
    device = committed_device(args)
    if device is None:
        device = _Placement.cpu_default
        if device is None:
            if _TransferGuarded.device_to_device:
                _check_implicit_moves(args, CPU)
            return outs
        sharding = _uncommitted_on(device)
    else:
        from corejax.sharding import SingleDeviceSharding
        sharding = SingleDeviceSharding(device)
    if _TransferGuarded.device_to_device:
        _check_implicit_moves(args, device)
    from corejax.sharding import with_sharding
    if type(outs) is Array:
        return with_sharding(outs, sharding)
    return [with_sharding(o, sharding) if type(o) is Array else o for o in outs]


def place_constants(operands, converted, scalar_types):
    """`converted` (the arrays jnp made of `operands`), with those made of Python scalars
    placed on the device the computation runs on (that of the committed operands, else the
    default device)."""
    device = committed_device(converted) or _Placement.cpu_default
    if device is None or device == CPU:
        return converted
    sharding = _uncommitted_on(device)
    from corejax.sharding import with_sharding
    return [with_sharding(c, sharding) if type(o) in scalar_types and type(c) is Array else c
            for o, c in zip(operands, converted)]


def _cpu_device_of(a) -> Device:
    sharding = getattr(a, "_sharding", None)
    if sharding is None or len(sharding._device_assignment) != 1:
        return CPU
    return sharding._device_assignment[0]


def _check_implicit_moves(args, device) -> None:
    """The device-to-device guard: uncommitted Array operands on a CPU device other than the
    computation's `device` are moved there implicitly."""
    for a in args:
        sharding = getattr(a, "_sharding", None) if type(a) is Array else None
        if type(a) is Array and a._device is CPU and not hasattr(sharding, "mesh"):
            src = _cpu_device_of(a)
            if src != device:
                _transfer_guard.device_to_device(lambda: _transfer_guard.describe_transfer(
                    a.aval, src=src, dst=device))


_uncommitted_shardings: dict = {}


def _uncommitted_on(device: Device):
    """The placement of an uncommitted array on `device` (where `default_device` put it)."""
    sharding = _uncommitted_shardings.get(device)
    if sharding is None:
        from corejax.sharding import SingleDeviceSharding
        sharding = SingleDeviceSharding(device)
        sharding._uncommitted = True
        _uncommitted_shardings[device] = sharding
    return sharding


def _install_placement() -> None:
    """From now on eager results and jitted outputs follow their committed operands' device
    (or the default device)."""
    _Placement.cpu_committed = True
    core.eval_hooks.apply_primitive = _apply_primitive_placed


def _apply_primitive_placed(primitive, args, params):
    """Eager evaluation once an array has been committed to a CPU device other than cpu:0
    (installed then, so that until then evaluation pays nothing for it)."""
    return place_results(args, apply_primitive(primitive, args, params))


def _device_put_sharded(x, sharding):
    """device_put onto a Sharding of CPU devices (or a CPU device other than cpu:0): the
    host value, placed as `sharding` says."""
    from corejax.sharding import with_sharding
    from corejax._tree_traced import tree_map
    known = _cpu_devices()
    if len(sharding._device_assignment) == 1 and not hasattr(sharding, "mesh"):
        _install_placement()
    for d in sharding.device_set:
        if d not in known:
            raise ValueError(f"Unknown device {d}: the CPU devices here are "
                             f"{', '.join(map(str, known))} (more with "
                             "XLA_FLAGS=--xla_force_host_platform_device_count=N or "
                             "config.update('jax_num_cpu_devices', N)).")

    def leaf(v):
        if isinstance(v, core.Tracer):
            return v
        if _TransferGuarded.device_to_device and type(v) is Array and v._device is CPU \
                and len(sharding._device_assignment) == 1 \
                and _cpu_device_of(v) != sharding._device_assignment[0]:
            _transfer_guard.device_to_device(lambda: _transfer_guard.describe_transfer(
                v.aval, src=_cpu_device_of(v), dst=sharding._device_assignment[0]),
                explicit=True)
        return with_sharding(_device_put_leaf(v, CPU), sharding)
    return tree_map(leaf, x)


def place_new(x, device: Device | None = None, like=None):
    """A freshly created array (jnp.zeros, arange, ...) on `device`; without one, on the device
    of `like` if that is a device array, else on the default device."""
    if device is None:
        if _Placement.cpu_default is not None and not (
                type(like) is Array and like._device is not CPU):
            return _placed_default(x)
        if not _Placement.cuda_in_use:
            return x
        if type(like) is Array and like._device is not CPU:
            device = like._device
        else:
            device = default_device()
            if device.platform == "cpu":
                return x
    return device_put(x, device)


def _placed_default(x):
    """A freshly created array on the default CPU device (uncommitted)."""
    if type(x) is not Array:
        return x
    from corejax.sharding import with_sharding
    return with_sharding(x, _uncommitted_on(_Placement.cpu_default))


def _get_leaf(leaf):
    if not isinstance(leaf, Array):
        return leaf
    if _TransferGuarded.device_to_host and type(leaf) is Array and leaf._device is not CPU:
        _transfer_guard.device_to_host(lambda: _transfer_guard.describe_transfer(
            leaf.aval, src=leaf._device), explicit=True)
    return leaf._host()


def device_get(x):
    """Fetches every array leaf of pytree `x` to the host as a NumPy array (an explicit
    device-to-host transfer)."""
    from corejax._tree_traced import tree_map
    return tree_map(_get_leaf, x)


def block_until_ready(x):
    """Waits until every array in pytree `x` is computed; returns `x`."""
    from corejax._tree_traced import tree_leaves
    for leaf in tree_leaves(x):
        if hasattr(leaf, "block_until_ready"):
            leaf.block_until_ready()
    return x
