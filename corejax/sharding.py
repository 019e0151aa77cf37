"""Shardings: where the pieces of an Array live (public as corejax.sharding).

`SingleDeviceSharding` is an array on one device; `NamedSharding(mesh, spec)` cuts an array
over a `Mesh` of devices, dimension by dimension as its `PartitionSpec` says (JAX's pmap
results are NamedShardings over a one-axis mesh named by the pmap's axis_name). On the CPU
a sharded Array keeps its whole value in one host buffer: each device's shard is a view of
it, so moving between devices never copies.
"""
from __future__ import annotations

import enum
import math
import threading
from collections import OrderedDict

import numpy as np

from corejax.array import Array, Device

__all__ = ["Sharding", "SingleDeviceSharding", "NamedSharding", "Mesh", "PartitionSpec",
           "AxisType", "Shard", "AbstractMesh", "make_mesh", "set_mesh", "get_mesh",
           "get_abstract_mesh", "use_abstract_mesh", "reshard", "make_array_from_callback",
           "make_array_from_single_device_arrays", "make_array_from_process_local_data",
           "DuplicateSpecError"]


class AxisType(enum.Enum):
    """How a mesh axis is treated by sharding propagation (JAX's names)."""
    Auto = enum.auto()
    Explicit = enum.auto()
    Manual = enum.auto()

    def __repr__(self):
        return self.name


class PartitionSpec(tuple):
    """Per array dimension: the mesh axis name (or tuple of names) it is split over, or None
    (not split). Dimensions past its length are not split."""

    def __new__(cls, *parts):
        for p in parts:
            if p is not None and not isinstance(p, (str, tuple)):
                raise TypeError(f"PartitionSpec entries must be None, an axis name or a tuple "
                                f"of axis names, got {p!r}.")
        return super().__new__(cls, parts)

    def __repr__(self):
        return "P" + repr(tuple(self))

    __str__ = __repr__

    def __eq__(self, other):
        return isinstance(other, PartitionSpec) and tuple(self) == tuple(other)

    def __hash__(self):
        return hash(("PartitionSpec", tuple(self)))

    def __reduce__(self):
        return (PartitionSpec, tuple(self))


class Mesh:
    """An n-dimensional array of devices whose axes have names."""

    def __init__(self, devices, axis_names, axis_types=None):
        if isinstance(axis_names, str):
            axis_names = (axis_names,)
        self.devices = np.asarray(devices, dtype=object)
        self.axis_names = tuple(axis_names)
        if self.devices.ndim != len(self.axis_names):
            raise ValueError(f"Mesh requires the ndim of its first argument (`devices`) to "
                             f"equal the length of its second argument (`axis_names`), got "
                             f"devices.ndim == {self.devices.ndim} and "
                             f"len(axis_names) == {len(self.axis_names)}.")
        if len(set(self.axis_names)) != len(self.axis_names):
            raise ValueError(f"Mesh axis names must be unique, got {self.axis_names}.")
        if axis_types is None:
            axis_types = (AxisType.Auto,) * len(self.axis_names)
        elif isinstance(axis_types, AxisType):
            axis_types = (axis_types,) * len(self.axis_names)
        self.axis_types = tuple(axis_types)
        if len(self.axis_types) != len(self.axis_names) or not all(
                isinstance(t, AxisType) for t in self.axis_types):
            raise ValueError(f"Number of axis names should match the number of axis_types, "
                             f"got axis_names={self.axis_names} and "
                             f"axis_types={self.axis_types} (each an AxisType).")
        for d in self.devices.flat:
            if not isinstance(d, Device):
                raise TypeError(f"Mesh devices must be Devices (corejax.devices()), got {d!r}.")

    @property
    def shape(self) -> OrderedDict:
        return OrderedDict(zip(self.axis_names, self.devices.shape))

    @property
    def axis_sizes(self) -> tuple:
        return self.devices.shape

    @property
    def size(self) -> int:
        return 0 if self.empty else self.devices.size

    @property
    def device_ids(self) -> np.ndarray:
        return np.vectorize(lambda d: d.id, otypes=[int])(self.devices)

    @property
    def shape_tuple(self) -> tuple:
        return tuple(self.shape.items())

    @property
    def empty(self) -> bool:
        return not self.axis_names

    @property
    def abstract_mesh(self) -> "AbstractMesh":
        return AbstractMesh(self.axis_sizes, self.axis_names, self.axis_types)

    @property
    def local_devices(self) -> list:
        return list(self.devices.flat)

    @property
    def explicit_axes(self) -> tuple:
        return _axes_of_type(self, AxisType.Explicit)

    @property
    def auto_axes(self) -> tuple:
        return _axes_of_type(self, AxisType.Auto)

    @property
    def manual_axes(self) -> tuple:
        return _axes_of_type(self, AxisType.Manual)

    @property
    def are_all_axes_explicit(self) -> bool:
        return all(t == AxisType.Explicit for t in self.axis_types)

    @property
    def are_all_axes_auto(self) -> bool:
        return all(t == AxisType.Auto for t in self.axis_types)

    @property
    def are_all_axes_manual(self) -> bool:
        return all(t == AxisType.Manual for t in self.axis_types)

    def __str__(self):
        if self.empty:
            return "Mesh()"
        sizes = ", ".join(f"{n!r}: {s}" for n, s in self.shape.items())
        return f"Mesh({sizes}, axis_types={self.axis_types})"

    def __repr__(self):
        if self.empty:
            return "Mesh(axis_sizes=(), axis_names=())"
        return (f"Mesh(axis_sizes={self.axis_sizes}, axis_names={self.axis_names}, "
                f"axis_types={self.axis_types})")

    def __eq__(self, other):
        return (isinstance(other, Mesh) and self.axis_names == other.axis_names
                and self.devices.shape == other.devices.shape
                and list(self.devices.flat) == list(other.devices.flat)
                and self.axis_types == other.axis_types)

    def __hash__(self):
        return hash((self.axis_names, self.devices.shape, tuple(self.devices.flat)))


class DuplicateSpecError(Exception):
    """A PartitionSpec names one mesh axis for more than one dimension (JAX's name; like
    JAX's, not a ValueError)."""


# A CPU device's memories are all host memory, so JAX's three CPU memory kinds name the same
# buffers here; a CUDA device's arrays live in device memory only.
_MEMORY_KINDS = {"cpu": ("device", "pinned_host", "unpinned_host")}


def _memory_kind(kind, device=None) -> str:
    """`kind` checked against what `device` can address; None means its default, 'device'."""
    if kind is None:
        return "device"
    if not isinstance(kind, str):
        raise TypeError(f"memory_kind must be a string such as 'device' or 'pinned_host', got "
                        f"{kind!r} of type {type(kind).__name__}.")
    platform = getattr(device, "platform", "cpu")
    kinds = _MEMORY_KINDS.get(platform, ("device",))
    if kind not in kinds:
        raise ValueError(f"Could not find memory addressable by device {platform}. Device "
                         f"{platform} can address the following memory kinds: "
                         f"{', '.join(kinds)}. Got memory kind: {kind}")
    return kind


class Sharding:
    """Where the pieces of an array live: the base of the sharding classes."""

    memory_kind = "device"

    @property
    def _device_assignment(self) -> tuple:
        raise NotImplementedError

    @property
    def device_set(self) -> set:
        return set(self._device_assignment)

    @property
    def num_devices(self) -> int:
        return len(self._device_assignment)

    @property
    def addressable_devices(self) -> set:
        return self.device_set

    @property
    def is_fully_addressable(self) -> bool:
        return True

    def devices_indices_map(self, global_shape) -> dict:
        """Device -> the tuple of slices of the global array it holds."""
        raise NotImplementedError

    def addressable_devices_indices_map(self, global_shape) -> dict:
        return self.devices_indices_map(global_shape)

    def shard_shape(self, global_shape) -> tuple:
        index = next(iter(self.devices_indices_map(global_shape).values()))
        return tuple(len(range(*s.indices(n))) for s, n in zip(index, global_shape))

    @property
    def is_fully_replicated(self) -> bool:
        raise NotImplementedError


class SingleDeviceSharding(Sharding):
    """The whole array on one device."""

    def __init__(self, device: Device, *, memory_kind: str | None = None):
        if not isinstance(device, Device):
            raise TypeError(f"SingleDeviceSharding expects a Device, got {device!r}.")
        self._device = device
        self.memory_kind = _memory_kind(memory_kind, device)

    def with_memory_kind(self, kind: str) -> "SingleDeviceSharding":
        return SingleDeviceSharding(self._device, memory_kind=kind)

    @property
    def _device_assignment(self) -> tuple:
        return (self._device,)

    @property
    def is_fully_replicated(self) -> bool:
        return True

    def devices_indices_map(self, global_shape) -> dict:
        return {self._device: (slice(None),) * len(global_shape)}

    def __repr__(self):
        return f"SingleDeviceSharding(device={self._device!r}, memory_kind={self.memory_kind})"

    def __eq__(self, other):
        return (isinstance(other, SingleDeviceSharding) and self._device == other._device
                and self.memory_kind == other.memory_kind)

    def __hash__(self):
        return hash(("SingleDeviceSharding", self._device))


class NamedSharding(Sharding):
    """An array split over the axes of `mesh` as `spec` says, replicated over the rest."""

    def __init__(self, mesh: Mesh, spec: PartitionSpec = PartitionSpec(), *,
                 memory_kind: str | None = None):
        if not isinstance(mesh, Mesh):
            raise TypeError(f"NamedSharding expects a Mesh, got {type(mesh).__name__}.")
        if not isinstance(spec, PartitionSpec):
            if isinstance(spec, (tuple, list)):
                spec = PartitionSpec(*spec)
            else:
                raise TypeError(f"NamedSharding expects a PartitionSpec, got {spec!r}.")
        used = [n for part in spec if part is not None
                for n in (part if isinstance(part, tuple) else (part,))]
        for n in used:
            if n not in mesh.axis_names:
                raise ValueError(f"Resource axis: {n} of {spec} is not found in mesh: "
                                 f"{tuple(mesh.axis_names)}.")
        if len(set(used)) != len(used):
            twice = sorted({n for n in used if used.count(n) > 1})
            raise DuplicateSpecError(f"A single NamedSharding spec specification can map "
                                     f"every mesh axis to at most one positional dimension, "
                                     f"but {spec} has duplicate entries for {twice}.")
        self.mesh, self.spec = mesh, spec
        self.memory_kind = _memory_kind(memory_kind, *mesh.devices.flat[:1])

    def with_memory_kind(self, kind: str) -> "NamedSharding":
        return NamedSharding(self.mesh, self.spec, memory_kind=kind)

    @property
    def _device_assignment(self) -> tuple:
        return tuple(self.mesh.devices.flat)

    @property
    def is_fully_replicated(self) -> bool:
        return all(p is None or p == () for p in self.spec) or all(
            self.mesh.shape[n] == 1 for part in self.spec if part is not None
            for n in (part if isinstance(part, tuple) else (part,)))

    def _splits(self, ndim: int) -> list:
        """Per dimension, the mesh axis names it is split over (outermost first)."""
        if len(self.spec) > ndim:
            raise ValueError(f"One of the arrays has rank {ndim}, but its sharding {self!r} "
                             f"names {len(self.spec)} dimensions.")
        parts = list(self.spec) + [None] * (ndim - len(self.spec))
        return [() if p is None else (p if isinstance(p, tuple) else (p,)) for p in parts]

    def check_divisible(self, global_shape) -> None:
        for d, names in enumerate(self._splits(len(global_shape))):
            k = math.prod(self.mesh.shape[n] for n in names)
            if global_shape[d] % k:
                raise ValueError(f"Sharding {self!r} implies that array axis {d} is "
                                 f"partitioned {k} times, but the dimension size is "
                                 f"{global_shape[d]} (full shape: {tuple(global_shape)}): it "
                                 "should divide the shape evenly.")

    def devices_indices_map(self, global_shape) -> dict:
        self.check_divisible(global_shape)
        splits = self._splits(len(global_shape))
        names = self.mesh.axis_names
        out = {}
        for coords in np.ndindex(*self.mesh.devices.shape):
            where = dict(zip(names, coords))
            index = []
            for d, axes in enumerate(splits):
                if not axes:
                    index.append(slice(None))
                    continue
                block, count = 0, 1
                for n in axes:
                    block, count = block * self.mesh.shape[n] + where[n], \
                        count * self.mesh.shape[n]
                size = global_shape[d] // count
                index.append(slice(block * size, (block + 1) * size))
            out[self.mesh.devices[coords]] = tuple(index)
        return out

    def __repr__(self):
        return (f"NamedSharding(mesh={self.mesh}, spec={self.spec!r}, "
                f"memory_kind={self.memory_kind})")

    def __eq__(self, other):
        return (isinstance(other, NamedSharding) and self.mesh == other.mesh
                and tuple(self.spec) == tuple(other.spec)
                and self.memory_kind == other.memory_kind)

    def __hash__(self):
        return hash(("NamedSharding", self.mesh, tuple(self.spec)))


class Shard:
    """One device's piece of an Array: `data` (an Array), `index` (slices of the global
    array) and `replica_id`."""

    def __init__(self, device, index, replica_id, data):
        self.device, self.index, self.replica_id, self.data = device, index, replica_id, data

    def __repr__(self):
        return (f"Shard(device={self.device!r}, index={self.index}, "
                f"replica_id={self.replica_id}, data={self.data})")


def shards_of(x: Array) -> list:
    """The Shards of a concrete Array, one per device of its sharding (views of its buffer)."""
    sharding = x.sharding
    value = x._host()
    seen: dict = {}
    shards = []
    for device, index in sharding.devices_indices_map(x.shape).items():
        key = tuple((s.start, s.stop) for s in index)
        replica = seen.get(key, 0)
        seen[key] = replica + 1
        piece = Array(value[index], x.weak_type)
        piece._sharding = SingleDeviceSharding(device)
        shards.append(Shard(device, index, replica, piece))
    return shards


class _ShardingState:
    """What jit must look for before taking its single-device path: Arrays over several
    devices exist (`mesh_arrays`), or a shard_map / reshard was staged (`mesh_ops_staged`)."""
    mesh_arrays = False
    mesh_ops_staged = False


state = _ShardingState()


def with_sharding(x: Array, sharding: Sharding) -> Array:
    """`x`'s buffer as an Array placed by `sharding` (no copy)."""
    if isinstance(sharding, NamedSharding):
        sharding.check_divisible(x.shape)
        if sharding.mesh.size > 1:
            state.mesh_arrays = True
    out = Array.__new__(Array)
    out._value, out.weak_type, out._aval, out._device = x._value, x.weak_type, None, x._device
    out._sharding = sharding
    return out


# --- global arrays from per-shard data ---------------------------------------------------------

def _global_array(shape, sharding, pieces, dtype, what: str) -> Array:
    """The Array of global `shape` placed by `sharding`, from `pieces`: (device, index, value)
    of every addressable device (the first value of each distinct index is used, as replicas
    are equal by contract)."""
    from corejax import dtypes
    shape = tuple(int(d) for d in shape)
    out, filled = None, set()
    for device, index, value in pieces:
        if isinstance(value, Array):
            value = value._host()
        elif not isinstance(value, (np.ndarray, np.generic)):
            raise TypeError(f"{what}: each shard must be an array (NumPy or corejax), got "
                            f"{type(value).__name__} for the shard of {device}.")
        want = tuple(len(range(*s.indices(n))) for s, n in zip(index, shape))
        if tuple(value.shape) != want:
            raise ValueError(f"Expected shard shape {want} doesn't match the single device "
                             f"array shape {tuple(value.shape)} (the shard of {device}). Shape "
                             f"of Array is {list(shape)} with sharding {sharding}.")
        value = np.asarray(value, dtypes.canonicalize_dtype(value.dtype))
        if out is None:
            if dtype is not None and np.dtype(dtype) != value.dtype:
                raise ValueError(f"If `dtype` is provided to `{what}`, it must match the dtype "
                                 f"of the addressable shards. Got dtype={np.dtype(dtype)} and "
                                 f"shard dtype={value.dtype}.")
            out = np.empty(shape, value.dtype)
        key = tuple((s.start, s.stop) for s in index)
        if key not in filled:
            filled.add(key)
            out[index] = value
    if out is None:
        if dtype is None:
            raise ValueError(f"{what}: the sharding addresses no device, so `dtype` must be "
                             "given.")
        out = np.empty(shape, dtypes.canonicalize_dtype(dtype))
    return with_sharding(Array(out), sharding)


def make_array_from_callback(shape, sharding: Sharding, data_callback, dtype=None) -> Array:
    """The Array of global `shape` placed by `sharding` whose shard on each device is
    `data_callback(index)`, index being that device's tuple of slices of the global array.
    The callback is called once per device (replicas included), as JAX calls it; it returns
    NumPy or corejax arrays (their dtype canonicalized: float64 is float32 without x64).
    `dtype` need only be given when the sharding addresses no device, and must otherwise
    match the shards'."""
    if not isinstance(sharding, Sharding):
        raise TypeError(f"make_array_from_callback: sharding must be a Sharding, got "
                        f"{sharding!r}.")
    index = sharding.devices_indices_map(tuple(shape))
    return _global_array(shape, sharding, [(d, i, data_callback(i)) for d, i in index.items()],
                         dtype, "jax.make_array_from_callback")


def make_array_from_single_device_arrays(shape, sharding: Sharding, arrays, *,
                                         dtype=None) -> Array:
    """The Array of global `shape` placed by `sharding` from one array per device of the
    sharding, each on its device (`device_put(piece, device)`) and of that device's shard
    shape."""
    arrays = list(arrays)
    index = sharding.devices_indices_map(tuple(shape))
    if len(arrays) != len(index):
        raise ValueError(f"Expected {len(index)} per-device arrays (this is how many devices "
                         f"are addressable by the sharding), but got {len(arrays)}")
    pieces, seen = [], set()
    for a in arrays:
        devices = a.devices() if isinstance(a, Array) else set()
        if len(devices) != 1:
            raise ValueError("make_array_from_single_device_arrays takes arrays each on one "
                             f"device (device_put(piece, device)); got one on {devices or 'none'}.")
        (device,) = devices
        if device not in index or device in seen:
            raise ValueError(f"make_array_from_single_device_arrays: an array is on {device}, "
                             + ("which holds another of the arrays" if device in seen else
                                f"which is not one of the sharding's devices "
                                f"{list(index)}") + ": give one array per device.")
        seen.add(device)
        pieces.append((device, index[device], a))
    return _global_array(shape, sharding, pieces, dtype,
                         "jax.make_array_from_single_device_arrays")


def make_array_from_process_local_data(sharding: Sharding, local_data, global_shape=None
                                       ) -> Array:
    """The global Array placed by `sharding` from this process's part of it. With one process
    the local data is the whole array (`global_shape`, if given, must be its shape). Across
    processes (corejax.distributed) corejax keeps every process's Arrays whole and local, so
    a sharding spanning processes is refused (NotImplementedError) rather than assembled
    wrongly."""
    from corejax import _mpi
    local_data = np.asarray(local_data._host() if isinstance(local_data, Array)
                            else local_data)
    engine = _mpi.engine()
    if engine is not None and engine.size > 1:
        raise NotImplementedError(
            "make_array_from_process_local_data across processes: corejax's Arrays live in "
            "one process, so a global array over several processes' devices cannot be built; "
            "gather the data with corejax.experimental.multihost_utils.process_allgather.")
    if global_shape is not None and tuple(global_shape) != local_data.shape:
        raise ValueError("When calling `make_array_from_process_local_data` on a single "
                         "process, global_shape should be None or equal to local_data.shape."
                         f"Got global_shape={tuple(global_shape)} and local_data.shape="
                         f"{local_data.shape}.")
    return make_array_from_callback(local_data.shape, sharding, lambda index: local_data[index])


def _axes_of_type(mesh, axis_type) -> tuple:
    return tuple(n for n, t in zip(mesh.axis_names, mesh.axis_types) if t == axis_type)


class AbstractMesh:
    """A mesh's axis names, sizes and types without its devices: what a traced program may
    know about the mesh it runs on (`get_abstract_mesh()`, `Mesh.abstract_mesh`)."""

    def __init__(self, axis_sizes, axis_names, axis_types=None):
        self.axis_sizes, self.axis_names = tuple(axis_sizes), tuple(axis_names)
        if len(self.axis_sizes) != len(self.axis_names):
            raise ValueError(f"AbstractMesh needs one size per axis name, got axis_sizes="
                             f"{self.axis_sizes} and axis_names={self.axis_names}.")
        if axis_types is None:
            axis_types = (AxisType.Auto,) * len(self.axis_names)
        elif isinstance(axis_types, AxisType):
            axis_types = (axis_types,) * len(self.axis_names)
        self.axis_types = tuple(axis_types)

    shape_tuple = Mesh.shape_tuple
    empty = Mesh.empty
    explicit_axes = Mesh.explicit_axes
    auto_axes = Mesh.auto_axes
    manual_axes = Mesh.manual_axes
    are_all_axes_explicit = Mesh.are_all_axes_explicit
    are_all_axes_auto = Mesh.are_all_axes_auto
    are_all_axes_manual = Mesh.are_all_axes_manual

    @property
    def shape(self) -> OrderedDict:
        return OrderedDict(zip(self.axis_names, self.axis_sizes))

    @property
    def size(self) -> int:
        return math.prod(self.axis_sizes)

    @property
    def abstract_mesh(self) -> "AbstractMesh":
        return self

    def update_axis_types(self, name_to_type: dict) -> "AbstractMesh":
        types = tuple(name_to_type.get(n, t) for n, t in zip(self.axis_names, self.axis_types))
        return AbstractMesh(self.axis_sizes, self.axis_names, types)

    def __repr__(self):
        if self.empty:
            return "AbstractMesh((), axis_types=())"
        sizes = ", ".join(f"{n!r}: {s}" for n, s in self.shape.items())
        return (f"AbstractMesh({sizes}, axis_types={self.axis_types}, device_kind=cpu, "
                "num_cores=None, platform=cpu)")

    def __eq__(self, other):
        return (isinstance(other, AbstractMesh) and self.axis_sizes == other.axis_sizes
                and self.axis_names == other.axis_names and self.axis_types == other.axis_types)

    def __hash__(self):
        return hash(("AbstractMesh", self.axis_sizes, self.axis_names, self.axis_types))


def _empty_mesh() -> Mesh:
    mesh = Mesh.__new__(Mesh)
    mesh.devices, mesh.axis_names, mesh.axis_types = np.empty((), dtype=object), (), ()
    return mesh


_EMPTY_MESH = _empty_mesh()
_EMPTY_ABSTRACT_MESH = AbstractMesh((), ())


class _MeshContext(threading.local):
    """The mesh `set_mesh` put in context on this thread (empty when none)."""

    def __init__(self):
        self.mesh: Mesh = _EMPTY_MESH
        self.abstract: AbstractMesh = _EMPTY_ABSTRACT_MESH


_context = _MeshContext()


def get_mesh() -> Mesh:
    """The mesh `set_mesh` put in context (an empty Mesh when there is none)."""
    return _context.mesh


def get_abstract_mesh() -> AbstractMesh:
    """The abstract mesh in context: set_mesh's mesh's, or use_abstract_mesh's."""
    return _context.abstract


class set_mesh:
    """Puts `mesh` in context on this thread, for the APIs that take a bare PartitionSpec
    (device_put, reshard, jit's in/out_shardings) and shard_map without mesh=. Either a
    setter (`set_mesh(mesh)`) or a context manager (`with set_mesh(mesh): ...`, which puts
    the previous mesh back on exit); `set_mesh(None)` clears it."""

    __slots__ = ("_previous",)

    def __init__(self, mesh: Mesh | None):
        if mesh is not None and not isinstance(mesh, Mesh):
            raise ValueError(f"Expected mesh of type `jax.sharding.Mesh`. Got {type(mesh)}")
        from corejax import core
        if core._trace_state.dynamic_level != 0 or len(core._trace_state.stack) > 1:
            raise ValueError("`set_mesh` can only be used outside of `jax.jit`.")
        if mesh is not None and mesh.manual_axes:
            raise ValueError(f"mesh {mesh} contains manual axes which is not allowed when "
                             "using `jax.set_mesh`. Please use `jax.shard_map` to enter into "
                             "`Manual` mode instead.")
        self._previous = (_context.mesh, _context.abstract)
        _context.mesh = _EMPTY_MESH if mesh is None else mesh
        _context.abstract = _EMPTY_ABSTRACT_MESH if mesh is None else mesh.abstract_mesh

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        _context.mesh, _context.abstract = self._previous


class use_abstract_mesh:
    """Context manager: `mesh` (an AbstractMesh) as the abstract mesh in context; the
    concrete mesh in context is cleared meanwhile."""

    __slots__ = ("_mesh", "_previous")

    def __init__(self, mesh: AbstractMesh):
        if not isinstance(mesh, AbstractMesh):
            raise ValueError(f"Expected mesh of type `jax.sharding.AbstractMesh`. Got "
                             f"{type(mesh)}")
        self._mesh = mesh

    def __enter__(self):
        self._previous = (_context.mesh, _context.abstract)
        _context.mesh, _context.abstract = _EMPTY_MESH, self._mesh

    def __exit__(self, *exc):
        _context.mesh, _context.abstract = self._previous


def make_mesh(axis_shapes, axis_names, axis_types=None, *, devices=None) -> Mesh:
    """A Mesh of shape `axis_shapes` over the first of `devices` (default: this process's
    devices of the default backend), in device order, with the axes named `axis_names`; axis
    types default to Explicit, as in JAX 0.10."""
    from corejax.array import devices as all_devices
    axis_shapes, axis_names = tuple(axis_shapes), tuple(axis_names)
    if len(axis_shapes) != len(axis_names):
        raise ValueError(f"Mesh requires the ndim of its first argument (`devices`) to equal "
                         f"the length of its second argument (`axis_names`), but got "
                         f"devices.ndim == {len(axis_shapes)} and "
                         f"len(axis_names) == {len(axis_names)}.")
    if axis_types is None:
        axis_types = (AxisType.Explicit,) * len(axis_names)
    elif isinstance(axis_types, AxisType):
        axis_types = (axis_types,) * len(axis_names)
    if len(axis_types) != len(axis_names):
        raise ValueError(f"Number of axis names should match the number of axis_types. Got "
                         f"axis_names={axis_names} and axis_types={tuple(axis_types)}")
    devs = list(all_devices() if devices is None else devices)
    size = math.prod(axis_shapes)
    if len(devs) < size:
        raise ValueError(f"Number of devices {len(devs)} must be >= the product of "
                         f"mesh_shape {axis_shapes}")
    grid = np.empty(size, dtype=object)
    grid[:] = devs[:size]
    return Mesh(grid.reshape(axis_shapes), axis_names, axis_types)


def resolve_sharding(sharding, what: str):
    """`sharding`, with a bare PartitionSpec made a NamedSharding over the mesh in context."""
    if isinstance(sharding, PartitionSpec):
        mesh = get_mesh()
        if mesh.empty:
            raise ValueError(f"Using PartitionSpec when you are not under a mesh context is "
                             f"not allowed ({what}). Please pass a NamedSharding instance or "
                             f"enter into a mesh context via `jax.set_mesh`. Got {sharding}")
        return NamedSharding(mesh, sharding)
    return sharding


def __getattr__(name):
    # reshard binds a primitive (a layer above this module's): imported when first asked for
    if name == "reshard":
        from corejax._reshard import reshard
        return reshard
    raise AttributeError(f"module 'corejax.sharding' has no attribute {name!r}")
