"""Collectives over named axes: psum, pmean, pmax, pmin, all_gather, psum_scatter, all_to_all,
ppermute, pshuffle, pswapaxes, axis_index, axis_size (public in corejax.lax).

A named axis is a `vmap(..., axis_name=...)` axis or a pmap's. Each
collective is a primitive whose batching rule, at the level of the axis it names, computes the
collective across the batch: `psum` over the axis is a sum over the batch dimension whose
result every member shares (an unbatched result), `all_gather` stacks the members, and so on.
At other levels the rule passes the collective through. The function binding a collective
first raises its operand to the named axis's level, so that an operand that does not vary
along the axis (a constant, a closed-over value) still reaches the rule there. An axis name
nobody binds raises NameError, as in JAX.

Under pmap (corejax/_pmap.py) a collective over the pmap's axis is staged into the
per-device program as its primitive; when the program runs, each device's worker thread
reaches the primitive's impl, which meets the other devices there (_Rendezvous) and computes
the result with the same batching rule over the devices' stacked operands. The collectives
are marked effectful so that the compiler never folds, merges or drops one: every device
runs every collective, in program order.

Differentiation: psum, all_gather, psum_scatter, all_to_all and ppermute are linear, with the
transposes JAX gives them (psum <-> psum, all_gather <-> psum_scatter, ppermute by the inverse
permutation); pmax and pmin have no derivative, as in JAX.
"""
from __future__ import annotations

import numpy as np

import threading

from corejax import dtypes
from corejax.compiler import registry
from corejax.array import Array
from corejax import core
from corejax.core import Primitive, Tracer, get_aval
from corejax.transforms import ad, batching
from corejax.lax import reductions, structural
from corejax.lax.elementwise import convert_element_type, mul, select_n, full, div
from corejax.lax.indexing import gather, GatherDimensionNumbers
from corejax._tree_traced import tree_flatten, tree_unflatten

__all__ = ["psum", "pmean", "pmax", "pmin", "all_gather", "psum_scatter", "all_to_all",
           "ppermute", "pshuffle", "pswapaxes", "axis_index", "axis_size"]


def _names(axis_name) -> tuple:
    return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)


class _PmapAxes(threading.local):
    """pmap's axes. `staging`: (name, size) of each pmap whose per-device program is being
    traced on this thread (its collectives are staged as primitives). `running`: on a
    device's worker thread, name -> (_Rendezvous, this device's index) of the pmap it runs."""

    def __init__(self):
        self.staging: list = []
        self.running: dict = {}


_pmap_axes = _PmapAxes()


def _vmap_bound(name) -> bool:
    try:
        batching.find_axis(name)
        return True
    except NameError:
        return False


def _pmap_size(name):
    """The size of pmap axis `name` if a pmap is staging its per-device program over it (and
    no vmap in it binds the same name), else None."""
    for n, size in reversed(_pmap_axes.staging):
        if n == name and not _vmap_bound(name):
            return size
    return None


class _Rendezvous:
    """Where the devices of one pmap call meet at each collective: every device leaves its
    operand, one of them computes all the results (the collective's vmap rule over the
    stacked operands, the same code `vmap(axis_name=)` runs), and each takes its own."""

    def __init__(self, n: int):
        self.barrier = threading.Barrier(n)
        self.operands: list = [None] * n
        self.results = None

    def meet(self, slot: int, x, leader_work):
        """Leaves `x` in `slot`; once every device has arrived, one of them computes
        `leader_work(operands)` for all; returns that."""
        self.operands[slot] = x
        try:
            if self.barrier.wait() == 0:
                try:
                    self.results = leader_work(self.operands)
                except BaseException:
                    self.barrier.abort()
                    raise
            self.barrier.wait()
        except threading.BrokenBarrierError:
            raise RuntimeError("another device of this pmap failed before reaching the "
                               "collective (its error is raised by pmap)") from None
        return self.results

    def exchange(self, index: int, x, combine):
        return np.array(self.meet(index, x, lambda ops: combine(np.stack(ops)))[index])

    def all_reduce(self, index: int, x, ufunc):
        """`ufunc` over every device's operand, in device order, computed by each device for
        itself (no copies besides its own result)."""
        self.operands[index] = x
        try:
            self.barrier.wait()
            ops = self.operands
            out = np.empty(np.shape(x), np.result_type(x))
            if len(ops) == 1:
                out[...] = ops[0]
            else:
                ufunc(ops[0], ops[1], out=out)
                for op in ops[2:]:
                    ufunc(out, op, out=out)
            self.barrier.wait()      # every device has read the operands
        except threading.BrokenBarrierError:
            raise RuntimeError("another device of this pmap failed before reaching the "
                               "collective (its error is raised by pmap)") from None
        return out


# The reductions psum / pmax / pmin compute over the devices' operands (what their vmap
# rules compute, without tracing them on every call).
_ALL_REDUCE = {"psum": np.add, "pmax": np.maximum, "pmin": np.minimum}


def _device_impl(prim):
    """The primitive's evaluation inside a running pmap: a rendezvous of the devices."""
    def impl(x, **params):
        axes = params["axes"]
        # (a shard_map's devices also meet over several mesh axes at once: keyed by the tuple)
        run = _pmap_axes.running.get(axes[0] if len(axes) == 1 else tuple(axes))
        if run is None:
            _unbound(axes)
        rendezvous, index = run

        ufunc = _ALL_REDUCE.get(prim.name)
        if ufunc is not None:
            return rendezvous.all_reduce(index, x, ufunc)

        def combine(stacked):
            outs, dims = batching.vmap_flat(lambda v: [prim.bind(v, **params)],
                                            stacked.shape[0], [0], args=[Array(stacked)],
                                            axis_name=axes[0])
            return np.asarray(batching.bdim_at_front(outs[0], dims[0], stacked.shape[0]))
        return rendezvous.exchange(index, x, combine)
    registry.def_effectful(prim)     # every device runs every collective, in program order
    return impl


def _find_axis(name):
    """The vmap axis `name`; NameError naming the axes bound here (vmap's and pmap's)."""
    try:
        return batching.find_axis(name)
    except NameError:
        stack = core._trace_state.stack
        bound = [m.payload.name for m in stack if issubclass(m.trace_type, batching.BatchTrace)
                 and m.payload.name is not None] + [n for n, _ in _pmap_axes.staging]
        raise NameError(f"unbound axis name: {name}. The following axis names (e.g. defined "
                        f"by pmap or vmap(axis_name=...)) are available to collective "
                        f"operations: {bound}") from None


def _raise_to_axes(x, names):
    """`x` as a tracer of the innermost of the named axes (or above): the collective's
    primitive then reaches that axis's batching rule even when `x` does not vary along it.
    Axes of a pmap being staged bind nothing: the primitive is staged as it is."""
    mains = [_find_axis(n) for n in names if _pmap_size(n) is None]
    if not mains:
        return x
    top = max(mains, key=lambda m: m.level)
    if isinstance(x, Tracer) and x._trace.main.level >= top.level:
        return x
    return top.with_trace().full_raise(x)


def _leafwise(fn, x):
    leaves, tree = tree_flatten(x)
    return tree_unflatten(tree, [fn(leaf) for leaf in leaves])


def _check_groups(axis_index_groups):
    if axis_index_groups is not None:
        raise NotImplementedError("axis_index_groups is not supported by corejax's "
                                  "collectives (JAX supports it only on TPU)")


def _sum_operand(x):
    """psum's operand: booleans sum as integers, as in JAX."""
    if get_aval(x).dtype == np.bool_:
        return convert_element_type(x, dtypes.default_int_dtype())
    return x


# --- psum / pmax / pmin ----------------------------------------------------------------------

def _reducer(name, reduce, unbatched):
    prim = Primitive(name)
    prim.def_impl(_device_impl(prim))
    prim.def_abstract_eval(lambda aval, *, axes: aval)
    prim.weak_type_rule = lambda x, *, axes: get_aval(x).weak_type

    def rule(axis_size, axis_name, vals, dims, *, axes):
        (x,), (d,) = vals, dims
        if axis_name not in axes:
            return prim.bind(x, axes=axes), d
        out = unbatched(x, axis_size) if d is None else reduce(x, (d,))
        rest = tuple(a for a in axes if a != axis_name)
        if rest:
            out = prim.bind(_raise_to_axes(out, rest), axes=rest)
        return out, None

    rule.needs_axis_name = True
    batching.primitive_batchers[prim] = rule
    batching.axis_primitives.add(prim)
    return prim


def _unbound(axes):
    batching.find_axis(axes[0])  # raises NameError
    raise NameError(f"unbound axis name: {axes[0]}")


def _times(x, n):
    return mul(x, full((), n, get_aval(x).dtype, get_aval(x).weak_type))


psum_p = _reducer("psum", reductions.reduce_sum, _times)
pmax_p = _reducer("pmax", reductions.reduce_max, lambda x, n: x)
pmin_p = _reducer("pmin", reductions.reduce_min, lambda x, n: x)

ad.deflinear(psum_p, lambda ct, x, *, axes: [psum_p.bind(_raise_to_axes(ad.instantiate_zeros(
    ct), axes), axes=axes)])


def psum(x, axis_name, *, axis_index_groups=None):
    """The sum of `x` over the named axis (axes), which every member gets."""
    _check_groups(axis_index_groups)
    names = _names(axis_name)
    return _leafwise(lambda v: psum_p.bind(_raise_to_axes(_sum_operand(v), names),
                                           axes=names), x)


def pmax(x, axis_name, *, axis_index_groups=None):
    _check_groups(axis_index_groups)
    names = _names(axis_name)
    return _leafwise(lambda v: pmax_p.bind(_raise_to_axes(v, names), axes=names), x)


def pmin(x, axis_name, *, axis_index_groups=None):
    _check_groups(axis_index_groups)
    names = _names(axis_name)
    return _leafwise(lambda v: pmin_p.bind(_raise_to_axes(v, names), axes=names), x)


def axis_size(axis_name) -> int:
    """The size of the named axis (the product over several names)."""
    size = 1
    for n in _names(axis_name):
        pmapped = _pmap_size(n)
        size *= _find_axis(n).payload.size if pmapped is None else pmapped
    return size


def pmean(x, axis_name, *, axis_index_groups=None):
    n = axis_size(axis_name)

    def one(v):
        s = psum(v, axis_name, axis_index_groups=axis_index_groups)
        if not dtypes.is_inexact(get_aval(s).dtype):
            s = convert_element_type(s, dtypes.default_float_dtype())
        aval = get_aval(s)
        return div(s, full((), n, aval.dtype, aval.weak_type))
    return _leafwise(one, x)


def axis_index(axis_name):
    """This member's index along the named axis (int32)."""
    names = _names(axis_name)
    if len(names) > 1:
        index = 0
        for n in names:
            index = index * axis_size(n) + axis_index(n)
        return index
    if _pmap_size(names[0]) is not None:
        return axis_index_p.bind(axis_name=names[0])
    main = batching.find_axis(names[0])
    # a concrete iota: binding one here would stage it into whatever jit is tracing now
    iota = Array(np.arange(main.payload.size, dtype=np.int32))
    return batching.BatchTracer(main.with_trace(), iota, 0)


def _axis_index_impl(*, axis_name):
    run = _pmap_axes.running.get(axis_name)
    if run is None:
        _unbound((axis_name,))
    return np.asarray(run[1], np.int32)


# A pmap's axis_index: this device's index, read when its program runs.
axis_index_p = Primitive("axis_index")
axis_index_p.def_impl(_axis_index_impl)
axis_index_p.def_abstract_eval(lambda *, axis_name: core.ShapedArray((), np.dtype(np.int32)))
axis_index_p.weak_type_rule = lambda *, axis_name: False
registry.def_effectful(axis_index_p)
ad.defjvp_zero(axis_index_p)
# (no operands: under vmap it is unbatched, the same on every member of the vmapped axis)
batching.primitive_batchers[axis_index_p] = lambda vals, dims, *, axis_name: (
    axis_index_p.bind(axis_name=axis_name), None)


# --- all_gather / psum_scatter ---------------------------------------------------------------

all_gather_p = Primitive("all_gather")
psum_scatter_p = Primitive("psum_scatter")


def _gathered_shape(aval, size, axis, tiled):
    shape = list(aval.shape)
    if tiled:
        shape[axis] *= size
    else:
        shape.insert(axis, size)
    return tuple(shape)


def _all_gather_abstract(aval, *, axes, axis, tiled, size):
    return aval.update(shape=_gathered_shape(aval, size, axis, tiled))


def _all_gather_batch(axis_size_, axis_name, vals, dims, *, axes, axis, tiled, size):
    (x,), (d,) = vals, dims
    if axis_name not in axes:
        return all_gather_p.bind(x, axes=axes, axis=axis, tiled=tiled, size=size), d
    x = batching.bdim_at_front(x, d, axis_size_)
    out = batching.moveaxis(x, 0, axis)
    if tiled:
        shape = get_aval(out).shape
        out = structural.reshape(out, shape[:axis] + (shape[axis] * shape[axis + 1],)
                                 + shape[axis + 2:])
    return out, None


def _psum_scatter_abstract(aval, *, axes, scatter_dimension, tiled, size):
    shape = list(aval.shape)
    if tiled:
        if shape[scatter_dimension] % size:
            raise ValueError(f"psum_scatter: the scatter dimension's size "
                             f"{shape[scatter_dimension]} must be divisible by the axis size "
                             f"{size}")
        shape[scatter_dimension] //= size
    else:
        if shape[scatter_dimension] != size:
            raise ValueError(f"psum_scatter: the scatter dimension's size "
                             f"{shape[scatter_dimension]} must equal the axis size {size} "
                             "(or pass tiled=True)")
        del shape[scatter_dimension]
    return aval.update(shape=tuple(shape))


def _psum_scatter_batch(axis_size_, axis_name, vals, dims, *, axes, scatter_dimension, tiled,
                        size):
    (x,), (d,) = vals, dims
    params = dict(axes=axes, scatter_dimension=scatter_dimension, tiled=tiled, size=size)
    if axis_name not in axes:
        return psum_scatter_p.bind(x, **params), d
    total = _times(x, axis_size_) if d is None else reductions.reduce_sum(x, (d,))
    if tiled:
        shape = get_aval(total).shape
        k = shape[scatter_dimension]
        total = structural.reshape(total, shape[:scatter_dimension] + (size, k // size)
                                   + shape[scatter_dimension + 1:])
    return batching.moveaxis(total, scatter_dimension, 0), 0


all_gather_p.def_abstract_eval(_all_gather_abstract)
all_gather_p.def_impl(_device_impl(all_gather_p))
all_gather_p.weak_type_rule = lambda x, **_: get_aval(x).weak_type
psum_scatter_p.def_abstract_eval(_psum_scatter_abstract)
psum_scatter_p.def_impl(_device_impl(psum_scatter_p))
psum_scatter_p.weak_type_rule = lambda x, **_: get_aval(x).weak_type
_all_gather_batch.needs_axis_name = True
_psum_scatter_batch.needs_axis_name = True
batching.primitive_batchers[all_gather_p] = _all_gather_batch
batching.primitive_batchers[psum_scatter_p] = _psum_scatter_batch
batching.axis_primitives.update({all_gather_p, psum_scatter_p})
ad.deflinear(all_gather_p, lambda ct, x, *, axes, axis, tiled, size: [psum_scatter_p.bind(
    _raise_to_axes(ad.instantiate_zeros(ct), axes), axes=axes, scatter_dimension=axis,
    tiled=tiled, size=size)])
ad.deflinear(psum_scatter_p, lambda ct, x, *, axes, scatter_dimension, tiled, size: [
    all_gather_p.bind(_raise_to_axes(ad.instantiate_zeros(ct), axes), axes=axes,
                      axis=scatter_dimension, tiled=tiled, size=size)])


def _one_axis(fn_name, axis_name):
    names = _names(axis_name)
    if len(names) != 1:
        raise NotImplementedError(f"{fn_name} over several axis names at once")
    return names


def all_gather(x, axis_name, *, axis_index_groups=None, axis=0, tiled=False, to="varying"):
    """Every member's `x`, stacked along a new axis `axis` (concatenated with tiled=True)."""
    _check_groups(axis_index_groups)
    names = _one_axis("all_gather", axis_name)
    size = axis_size(names)

    def one(v):
        ndim = get_aval(v).ndim
        ax = axis % (ndim if tiled else ndim + 1) if (ndim or not tiled) else axis
        return all_gather_p.bind(_raise_to_axes(v, names), axes=names, axis=ax,
                                 tiled=bool(tiled), size=size)
    return _leafwise(one, x)


def psum_scatter(x, axis_name, *, scatter_dimension=0, axis_index_groups=None, tiled=False):
    """psum, with member i getting only block i of `scatter_dimension`."""
    _check_groups(axis_index_groups)
    names = _one_axis("psum_scatter", axis_name)
    size = axis_size(names)

    def one(v):
        dim = scatter_dimension % get_aval(v).ndim
        return psum_scatter_p.bind(_raise_to_axes(_sum_operand(v), names), axes=names,
                                   scatter_dimension=dim, tiled=bool(tiled), size=size)
    return _leafwise(one, x)


# --- all_to_all ------------------------------------------------------------------------------

all_to_all_p = Primitive("all_to_all")


def _all_to_all_abstract(aval, *, axes, split_axis, concat_axis, tiled, size):
    shape = list(aval.shape)
    if shape[split_axis] % size:
        raise ValueError(f"all_to_all: the split axis's size {shape[split_axis]} must be "
                         f"divisible by the axis size {size}")
    if tiled:
        shape[split_axis] //= size
        shape[concat_axis] *= size
    else:
        if shape[split_axis] != size:
            raise ValueError(f"all_to_all: the split axis's size {shape[split_axis]} must "
                             f"equal the axis size {size} (or pass tiled=True)")
    return aval.update(shape=tuple(shape))


def _all_to_all_batch(axis_size_, axis_name, vals, dims, *, axes, split_axis, concat_axis,
                      tiled, size):
    (x,), (d,) = vals, dims
    params = dict(axes=axes, split_axis=split_axis, concat_axis=concat_axis, tiled=tiled,
                  size=size)
    if axis_name not in axes:
        return all_to_all_p.bind(x, **params), d
    x = batching.bdim_at_front(x, d, axis_size_)      # [n (member i), ...]
    shape = get_aval(x).shape[1:]
    s, c = split_axis, concat_axis
    # member i's block j of the split axis goes to member j, at position i of the concat axis
    blocks = structural.reshape(x, (size,) + shape[:s] + (size, shape[s] // size)
                                + shape[s + 1:])      # [i, ..., j, m, ...]
    blocks = batching.moveaxis(blocks, s + 1, 0)       # [j, i, ..., m, ...] (split dim last)
    if not tiled:
        # the split axis (size n) is replaced by i; blocks of size 1 along it
        out = structural.reshape(blocks, (size, size) + shape[:s] + shape[s + 1:])
        out = batching.moveaxis(out, 1, 1 + c)
        return out, 0
    out = batching.moveaxis(blocks, 1, 1 + c)          # [j, ..., i, (concat dim) ...]
    oshape = get_aval(out).shape
    merged = oshape[:1 + c] + (oshape[1 + c] * oshape[2 + c],) + oshape[3 + c:]
    return structural.reshape(out, merged), 0


all_to_all_p.def_abstract_eval(_all_to_all_abstract)
all_to_all_p.def_impl(_device_impl(all_to_all_p))
all_to_all_p.weak_type_rule = lambda x, **_: get_aval(x).weak_type
_all_to_all_batch.needs_axis_name = True
batching.primitive_batchers[all_to_all_p] = _all_to_all_batch
batching.axis_primitives.add(all_to_all_p)
ad.deflinear(all_to_all_p, lambda ct, x, *, axes, split_axis, concat_axis, tiled, size: [
    all_to_all_p.bind(_raise_to_axes(ad.instantiate_zeros(ct), axes), axes=axes,
                      split_axis=concat_axis, concat_axis=split_axis, tiled=tiled, size=size)])


def all_to_all(x, axis_name, split_axis, concat_axis, *, axis_index_groups=None, tiled=False):
    """Member i sends block j of `split_axis` to member j, which places it at position i of
    `concat_axis`."""
    _check_groups(axis_index_groups)
    names = _one_axis("all_to_all", axis_name)
    size = axis_size(names)

    def one(v):
        ndim = get_aval(v).ndim
        return all_to_all_p.bind(_raise_to_axes(v, names), axes=names,
                                 split_axis=split_axis % ndim, concat_axis=concat_axis % ndim,
                                 tiled=bool(tiled), size=size)
    return _leafwise(one, x)


def pswapaxes(x, axis_name, axis, *, axis_index_groups=None):
    """Swaps the named axis with positional axis `axis` (all_to_all on that axis)."""
    return all_to_all(x, axis_name, axis, axis, axis_index_groups=axis_index_groups)


# --- ppermute --------------------------------------------------------------------------------

ppermute_p = Primitive("ppermute")


def _ppermute_batch(axis_size_, axis_name, vals, dims, *, axes, perm):
    (x,), (d,) = vals, dims
    if axis_name not in axes:
        return ppermute_p.bind(x, axes=axes, perm=perm), d
    x = batching.bdim_at_front(x, d, axis_size_)
    source = np.zeros(axis_size_, np.int32)
    receives = np.zeros(axis_size_, bool)
    for src, dst in perm:
        source[dst], receives[dst] = src, True
    aval = get_aval(x)
    dn = GatherDimensionNumbers(offset_dims=tuple(range(1, aval.ndim)),
                                collapsed_slice_dims=(0,), start_index_map=(0,))
    moved = gather(x, source.reshape(-1, 1), dn, (1,) + aval.shape[1:])
    if receives.all():
        return moved, 0
    mask = structural.broadcast_in_dim(receives, aval.shape, (0,))
    zeros = full(aval.shape, 0, aval.dtype, aval.weak_type)
    return select_n(mask, zeros, moved), 0


ppermute_p.def_abstract_eval(lambda aval, **_: aval)
ppermute_p.def_impl(_device_impl(ppermute_p))
ppermute_p.weak_type_rule = lambda x, **_: get_aval(x).weak_type
_ppermute_batch.needs_axis_name = True
batching.primitive_batchers[ppermute_p] = _ppermute_batch
batching.axis_primitives.add(ppermute_p)
ad.deflinear(ppermute_p, lambda ct, x, *, axes, perm: [ppermute_p.bind(
    _raise_to_axes(ad.instantiate_zeros(ct), axes), axes=axes,
    perm=tuple((dst, src) for src, dst in perm))])


def ppermute(x, axis_name, perm):
    """Member `src` sends `x` to member `dst` for each (src, dst) in `perm`; members nobody
    sends to get zeros."""
    names = _one_axis("ppermute", axis_name)
    perm = tuple((int(s), int(d)) for s, d in perm)
    srcs, dsts = [s for s, _ in perm], [d for _, d in perm]
    size = axis_size(names)
    if len(set(srcs)) != len(srcs) or len(set(dsts)) != len(dsts):
        raise ValueError(f"ppermute sources and destinations must be unique, got {perm}.")
    if any(not 0 <= i < size for i in srcs + dsts):
        raise ValueError(f"ppermute indices must be in [0, {size}), got {perm}.")
    return _leafwise(lambda v: ppermute_p.bind(_raise_to_axes(v, names), axes=names,
                                               perm=perm), x)


def pshuffle(x, axis_name, perm):
    """Member i gets member perm[i]'s `x` (perm a permutation of the axis)."""
    if set(perm) != set(range(len(perm))):
        raise ValueError(f"`perm` does not represent a permutation: {perm}")
    return ppermute(x, axis_name, list(zip(perm, range(len(perm)))))

