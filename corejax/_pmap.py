"""`pmap`: one program per device, run on the devices' worker threads (public as corejax.pmap).

pmap stages the function once per signature as a *per-device* program: the mapped axis
removed from its inputs, its collectives (psum, all_gather, ppermute, axis_index, ...) staged
as primitives over the axis name. The program is compiled once; on each call it runs on each
device's shard at once: the first device's on the calling thread, every other device's on
that device's worker thread (Numba kernels and BLAS release the GIL, so the devices' work
overlaps); at each collective the devices meet (parallel._Rendezvous).
The outputs are stacked along `out_axes` into one Array sharded over the devices
(NamedSharding over a one-axis mesh named by axis_name, as JAX's pmap gives).

Under another transformation (jit, grad, vmap, or an outer pmap's body) pmap has no devices
to run on: there it is `vmap` with the same axis name, which has the same semantics (JAX
documents pmap as a vmap whose members run on devices).
"""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from corejax import _mpi_pmap, core, parallel
from corejax._traceback import api_boundary
from corejax.api import (_canonical_leaves, _flatten_axes, _wraps, check_mapped_sizes,
                         mapped_axes, vmap)
from corejax.array import Array, to_numpy
from corejax.compiler import blas
from corejax.core import get_aval
from corejax.sharding import Mesh, NamedSharding, PartitionSpec, with_sharding
from corejax._tree_traced import tree_flatten, tree_unflatten

__all__ = ["pmap"]

_INTERNAL_NAME = "_internal_pmap_axis_name"

_workers: dict = {}
_workers_lock = threading.Lock()
_submit_lock = threading.Lock()


def _worker(device) -> ThreadPoolExecutor:
    """The worker thread of `device` (one per device, started on first use)."""
    with _workers_lock:
        pool = _workers.get(device)
        if pool is None:
            pool = _workers[device] = ThreadPoolExecutor(
                max_workers=1, thread_name_prefix=f"corejax-{device}")
        return pool


def _argnums(nums, what) -> tuple:
    if isinstance(nums, int):
        return (nums,)
    nums = tuple(nums)
    if not all(isinstance(n, int) for n in nums):
        raise TypeError(f"pmap {what} must be an int or a sequence of ints, got {nums!r}.")
    return nums


def _shard(leaves, hosts, dims, i) -> list:
    """Device i's operands: views of the mapped ones (the trailing Ellipsis keeps a 0-d
    piece an array, not a scalar), the unmapped ones as they are."""
    return [x if d is None else Array(h[(slice(None),) * d + (i, Ellipsis)], x.weak_type)
            for x, h, d in zip(leaves, hosts, dims)]


def _run_on_device(exe, args, name, rendezvous, index):
    outer = parallel._pmap_axes.running
    parallel._pmap_axes.running = {name: (rendezvous, index)}
    try:
        return exe(*args)
    except BaseException:
        rendezvous.barrier.abort()    # the other devices must not wait for this one
        raise
    finally:
        parallel._pmap_axes.running = outer


def gather_results(run_first, futures) -> list:
    """The first device's results from `run_first()`, run on the calling thread, then the other
    devices' from their workers' `futures`, in device order. If any failed, raises the error of
    the device that failed first (not another's report that a collective was abandoned)."""
    results, errors = [], []
    try:
        results.append(run_first())
    except BaseException as e:   # noqa: B036 - re-raised below
        errors.append(e)
    for f in futures:
        try:
            results.append(f.result())
        except BaseException as e:   # noqa: B036 - re-raised below
            errors.append(e)
    if errors:
        raise next((e for e in errors if "another device of this pmap failed" not in str(e)),
                   errors[0])
    return results


def pmap(fun, axis_name=None, *, in_axes=0, out_axes=0, static_broadcasted_argnums=(),
         devices=None, backend=None, axis_size=None, donate_argnums=()):
    """Maps `fun` over the leading axis (`in_axes`) of its arguments, one member per device,
    with collectives over `axis_name`; the result is sharded over the devices."""
    if not callable(fun):
        raise TypeError(f"pmap requires a callable, got {fun!r}.")
    static = _argnums(static_broadcasted_argnums, "static_broadcasted_argnums")
    donate = _argnums(donate_argnums, "donate_argnums")
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    if backend not in (None, "cpu"):
        raise NotImplementedError(f"pmap runs on corejax's CPU devices only; backend="
                                  f"{backend!r} is not supported (use backend='cpu').")
    name = _INTERNAL_NAME if axis_name is None else axis_name
    cache: dict = {}

    @_wraps(fun)
    @api_boundary
    def mapped(*args, **kwargs):
        nargs = len(args)
        for n in static + donate:
            if not -nargs <= n < nargs:
                raise ValueError(f"pmap argnum {n} is out of range for a call with {nargs} "
                                 "positional arguments.")
        static_pos = {n % nargs for n in static}
        dyn_pos = [i for i in range(nargs) if i not in static_pos]
        dyn_args = tuple(args[i] for i in dyn_pos)
        axes_spec = in_axes
        if isinstance(in_axes, tuple) and len(in_axes) == nargs and static_pos:
            axes_spec = tuple(in_axes[i] for i in dyn_pos)
        if isinstance(axes_spec, tuple) and len(axes_spec) != len(dyn_args):
            raise ValueError(f"pmap in_axes must be an int, None, or a tuple of entries "
                             f"corresponding to the positional arguments passed to the "
                             f"function, but got len(in_axes)={len(axes_spec)}, "
                             f"len(args)={len(dyn_args)}")
        statics = {i: args[i] for i in static_pos}

        def with_statics(*dyn, **kw):
            it = iter(dyn)
            return fun(*[statics[i] if i in statics else next(it) for i in range(nargs)], **kw)

        leaves, in_tree = tree_flatten((dyn_args, kwargs))
        inner = bool(parallel._pmap_axes.staging) or any(
            isinstance(x, core.Tracer) for x in leaves)
        if inner:
            return vmap(with_statics, in_axes=axes_spec, out_axes=out_axes,
                        axis_name=name, axis_size=axis_size)(*dyn_args, **kwargs)
        return _call_top(with_statics, dyn_args, leaves, in_tree, axes_spec, statics, args)

    def _call_top(with_statics, dyn_args, leaves, in_tree, axes_spec, statics, args):
        leaves = _canonical_leaves(leaves)
        dims, sizes = mapped_axes("pmap", dyn_args, axes_spec, leaves)
        if not sizes:
            raise ValueError("pmap requires at least one argument with a mapped axis.")
        check_mapped_sizes("pmap", leaves, dims, sizes)
        n = sizes[0]
        if axis_size is not None and axis_size != n:
            raise ValueError(f"Specified axis_size {axis_size} doesn't match received "
                             f"axis_size {n}.")
        devs = _devices_for(n)
        # after distributed.initialize(): the axis spans every process's n devices
        span = _mpi_pmap.spanning(devices)
        total, offset = (n, 0) if span is None else (n * span[0], n * span[1])
        avals = []
        for x, d in zip(leaves, dims):
            aval = get_aval(x)
            if d is not None:
                aval = aval.update(shape=aval.shape[:d] + aval.shape[d + 1:])
            avals.append(aval)
        try:
            key = (in_tree, tuple(avals), tuple(dims), n, total,
                   tuple(sorted((i, v) for i, v in statics.items())))
            hash(key)
        except TypeError:
            raise ValueError("Non-hashable static arguments are not supported: pass them "
                             "as arrays, or make them hashable.") from None
        entry = cache.get(key)
        if entry is None:
            entry = cache[key] = _compile(with_statics, in_tree, avals, total)
        closed, exe, out_store = entry
        hosts = [to_numpy(x) if d is not None else None for x, d in zip(leaves, dims)]
        rendezvous = parallel._Rendezvous(n) if span is None else \
            _mpi_pmap.ProcessRendezvous(n, offset, total)
        # (all of one call's work is queued at once: two pmaps called from two threads then
        # run in the same order on every device, never each waiting for the other)
        with blas.devices_at_once(n):
            with _submit_lock:
                futures = _submit(exe, devs, leaves, hosts, dims, rendezvous, offset)
            results = gather_results(lambda: _run_on_device(
                exe, _shard(leaves, hosts, dims, 0), name, rendezvous, offset), futures)
        out_tree = out_store[0]
        out_ax = _flatten_axes("pmap out_axes", tree_unflatten(out_tree, results[0]), out_axes)
        mesh = Mesh(np.array(devs, dtype=object), (name,))
        final = []
        for k, ax in enumerate(out_ax):
            per_device = [r[k] for r in results]
            first = per_device[0]
            if ax is None:
                final.append(with_sharding(first, NamedSharding(mesh, PartitionSpec())))
                continue
            ndim = first.ndim + 1
            if not -ndim <= ax < ndim:
                raise ValueError(f"pmap out_axes {ax} is out of range for an output of rank "
                                 f"{first.ndim}.")
            ax %= ndim
            stacked = Array(np.stack([to_numpy(r) for r in per_device], axis=ax),
                            first.weak_type)
            spec = PartitionSpec(*([None] * ax + [name]))
            final.append(with_sharding(stacked, NamedSharding(mesh, spec)))
        for i in donate:
            for leaf in tree_flatten(args[i])[0]:
                if type(leaf) is Array:
                    leaf.delete()
        return tree_unflatten(out_tree, final)

    def _submit(exe, devs, leaves, hosts, dims, rendezvous, offset):
        return [_worker(device).submit(_run_on_device, exe, _shard(leaves, hosts, dims, i),
                                       name, rendezvous, offset + i)
                for i, device in enumerate(devs) if i]

    def _devices_for(n):
        from corejax._runtime import local_devices
        if devices is not None:
            devs = list(devices)
            known = local_devices(backend="cpu")
            for d in devs:
                if d not in known:
                    raise ValueError(f"pmap devices= names {d!r}, which is not one of this "
                                     f"process's CPU devices {known}.")
            if len(devs) != n:
                raise ValueError(f"Leading axis size of input to pmapped function must equal "
                                 f"the number of local devices passed to pmap. Got axis_size="
                                 f"{n}, num_local_devices={len(devs)}.")
            return devs
        local = local_devices(backend="cpu")
        if n > len(local):
            raise ValueError(f"pmap got a mapped axis of size {n}, but only {len(local)} CPU "
                             f"device(s) are available: map over at most {len(local)} (split "
                             "the leading axis, or vmap inside the pmap), or make more devices "
                             "with XLA_FLAGS=--xla_force_host_platform_device_count=N or "
                             "config.update('jax_num_cpu_devices', N) before first use.")
        return local[:n]

    def _compile(with_statics, in_tree, avals, n):
        from corejax.compiler import compile_jaxpr
        from corejax.transforms.jit import stage
        out_store: list = []

        def per_device(*leaves):
            dyn, kw = tree_unflatten(in_tree, list(leaves))
            parallel._pmap_axes.staging.append((name, n))
            try:
                out = with_statics(*dyn, **kw)
            finally:
                parallel._pmap_axes.staging.pop()
            out_leaves, out_tree = tree_flatten(out)
            out_store.append(out_tree)
            return out_leaves

        closed = stage(per_device, avals, name=getattr(fun, "__name__", "pmap"))
        return closed, compile_jaxpr(closed, "cpu"), out_store

    return mapped
