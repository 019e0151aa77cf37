"""Running one per-device program over the devices of a mesh (shard_map's and sharded jit's
executor).

The program is a Jaxpr staged for one device's block of every operand, its collectives
(psum, all_gather, ppermute, axis_index, ...) staged as primitives over the mesh's *manual*
axes (`staging_axes`). It runs once per device of the mesh, each on that device's worker
thread (the first device's on the calling thread), as pmap's programs do. Devices meet at
each collective: a collective over axes A gathers the devices that differ only in their
coordinates along A, so every (ordered) tuple of manual axes has one rendezvous per group of
such devices, and each device finds its own by the tuple the collective names
(parallel._pmap_axes.running). Mesh axes that are not manual (a shard_map's Auto axes) take
no part: the program runs on the devices at coordinate 0 along them.
"""
from __future__ import annotations

import contextlib
import itertools
import math

import numpy as np

from corejax import parallel
from corejax._pmap import _submit_lock, _worker, gather_results
from corejax.array import Array, to_numpy
from corejax.compiler import blas
from corejax.sharding import NamedSharding

__all__ = ["staging_axes", "participants", "blocks_of", "run", "assemble", "local_aval"]


@contextlib.contextmanager
def staging_axes(mesh, manual: tuple):
    """While a per-device program over `mesh` is traced: its manual axes are named axes whose
    collectives are staged (as a pmap's are while its per-device program is traced)."""
    entries = [(n, mesh.shape[n]) for n in manual]
    parallel._pmap_axes.staging.extend(entries)
    try:
        yield
    finally:
        del parallel._pmap_axes.staging[len(parallel._pmap_axes.staging) - len(entries):]


def participants(mesh, manual: tuple) -> list:
    """(device, coordinates along the manual axes) of the devices the program runs on, in
    mesh order: those at coordinate 0 along every other axis."""
    out = []
    names = mesh.axis_names
    for coords in np.ndindex(*mesh.devices.shape):
        where = dict(zip(names, coords))
        if any(where[n] for n in names if n not in manual):
            continue
        out.append((mesh.devices[coords], tuple(where[n] for n in manual)))
    return out


def local_shape(shape, spec, mesh) -> tuple:
    """The shape of one device's block of an array of `shape` split as `spec` says."""
    dims = list(spec) + [None] * (len(shape) - len(spec))
    out = []
    for size, part in zip(shape, dims):
        names = () if part is None else (part if isinstance(part, tuple) else (part,))
        out.append(size // math.prod(mesh.shape[n] for n in names))
    return tuple(out)


def local_aval(aval, spec, mesh):
    return aval.update(shape=local_shape(aval.shape, spec, mesh))


def global_shape(shape, spec, mesh) -> tuple:
    """The shape of the array assembled from blocks of `shape` placed as `spec` says."""
    dims = list(spec) + [None] * (len(shape) - len(spec))
    out = []
    for size, part in zip(shape, dims):
        names = () if part is None else (part if isinstance(part, tuple) else (part,))
        out.append(size * math.prod(mesh.shape[n] for n in names))
    return tuple(out)


def blocks_of(x, spec, mesh, devices) -> list:
    """Each of `devices`' block of `x` (views of its host buffer), as `spec` splits it."""
    host = to_numpy(x)
    weak = bool(getattr(x, "weak_type", False))
    index = NamedSharding(mesh, spec).devices_indices_map(host.shape)
    return [Array(host[index[d] + (Ellipsis,)], weak) for d in devices]


def assemble(blocks: list, spec, mesh, devices, weak: bool) -> Array:
    """The global Array whose blocks on `devices` are `blocks` (placed as `spec` says), with
    the NamedSharding(mesh, spec)."""
    from corejax.sharding import with_sharding
    first = to_numpy(blocks[0])
    if all(p is None for p in spec):
        value = np.array(first)
    else:
        shape = global_shape(first.shape, spec, mesh)
        value = np.empty(shape, first.dtype)
        index = NamedSharding(mesh, spec).devices_indices_map(shape)
        done = set()
        for d, b in zip(devices, blocks):
            key = tuple((s.start, s.stop) for s in index[d])
            if key not in done:
                done.add(key)
                value[index[d]] = to_numpy(b)
    return with_sharding(Array(value, weak), NamedSharding(mesh, spec))


def _rendezvous_tables(mesh, manual: tuple, coords: list) -> list:
    """Per participant: {axis name, or tuple of names: (_Rendezvous, index in its group)} for
    every ordered tuple of distinct manual axes."""
    sizes = {n: mesh.shape[n] for n in manual}
    pos = {n: i for i, n in enumerate(manual)}
    tables: list = [dict() for _ in coords]
    for k in range(1, len(manual) + 1):
        for names in itertools.permutations(manual, k):
            groups: dict = {}
            group_size = math.prod(sizes[n] for n in names)
            for t, c in enumerate(coords):
                rest = tuple(c[pos[n]] for n in manual if n not in names)
                rdv = groups.get(rest)
                if rdv is None:
                    rdv = groups[rest] = parallel._Rendezvous(group_size)
                index = 0
                for n in names:
                    index = index * sizes[n] + c[pos[n]]
                tables[t][names[0] if k == 1 else names] = (rdv, index)
    return tables


def _run_one(exe, args, table):
    if parallel._pmap_axes.running:
        raise NotImplementedError("shard_map / sharded jit inside a running pmap or shard_map "
                                  "body is not supported by corejax")
    parallel._pmap_axes.running = table
    try:
        return exe(*args)
    except BaseException:
        for rdv, _ in table.values():   # the other devices must not wait for this one
            rdv.barrier.abort()
        raise
    finally:
        parallel._pmap_axes.running = {}


def run(exe, mesh, manual: tuple, per_device_args: list) -> list:
    """`exe` on each participant (participants(mesh, manual) order) with its arguments; the
    per-device lists of outputs."""
    parts = participants(mesh, manual)
    tables = _rendezvous_tables(mesh, manual, [c for _, c in parts])
    with blas.devices_at_once(len(parts)):
        with _submit_lock:
            futures = [_worker(d).submit(_run_one, exe, per_device_args[i], tables[i])
                       for i, (d, _) in enumerate(parts) if i]
        return gather_results(lambda: _run_one(exe, per_device_args[0], tables[0]), futures)
