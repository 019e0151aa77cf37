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
from collections import OrderedDict

import numpy as np

from corejax.array import Array, Device

__all__ = ["Sharding", "SingleDeviceSharding", "NamedSharding", "Mesh", "PartitionSpec",
           "AxisType", "Shard"]


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
        return self.devices.size

    @property
    def device_ids(self) -> np.ndarray:
        return np.vectorize(lambda d: d.id, otypes=[int])(self.devices)

    def __repr__(self):
        sizes = ", ".join(f"{n!r}: {s}" for n, s in self.shape.items())
        return f"Mesh({sizes}, axis_types={self.axis_types})"

    def __eq__(self, other):
        return (isinstance(other, Mesh) and self.axis_names == other.axis_names
                and self.devices.shape == other.devices.shape
                and list(self.devices.flat) == list(other.devices.flat)
                and self.axis_types == other.axis_types)

    def __hash__(self):
        return hash((self.axis_names, self.devices.shape, tuple(self.devices.flat)))


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

    @property
    def _device_assignment(self) -> tuple:
        return (self._device,)

    @property
    def is_fully_replicated(self) -> bool:
        return True

    def devices_indices_map(self, global_shape) -> dict:
        return {self._device: (slice(None),) * len(global_shape)}

    def __repr__(self):
        return f"SingleDeviceSharding(device={self._device!r}, memory_kind=device)"

    def __eq__(self, other):
        return isinstance(other, SingleDeviceSharding) and self._device == other._device

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
            raise ValueError(f"A mesh axis may split only one dimension, got {spec}.")
        self.mesh, self.spec = mesh, spec

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
        return f"NamedSharding(mesh={self.mesh!r}, spec={self.spec!r}, memory_kind=device)"

    def __eq__(self, other):
        return (isinstance(other, NamedSharding) and self.mesh == other.mesh
                and tuple(self.spec) == tuple(other.spec))

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


def with_sharding(x: Array, sharding: Sharding) -> Array:
    """`x`'s buffer as an Array placed by `sharding` (no copy)."""
    if isinstance(sharding, NamedSharding):
        sharding.check_divisible(x.shape)
    out = Array.__new__(Array)
    out._value, out.weak_type, out._aval, out._device = x._value, x.weak_type, None, x._device
    out._sharding = sharding
    return out
