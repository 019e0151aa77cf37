"""jit on sharded arrays: the traced program partitioned into one program per device.

When a jitted function gets Arrays split over a mesh (NamedSharding), or is given
in_shardings/out_shardings, or its program holds a shard_map or a reshard, jit traces the
function as usual (global shapes), then *partitions* the program: an interpreter walks its
equations with each value's local block and its split (per dimension, the mesh axes it is
split over), and stages, for one device, the equations that compute that device's block,
with the collectives they need. The per-device program then runs on every device of the mesh
(corejax/_mesh_run.py) and the outputs are assembled as their splits say.

What the partitioning rules cover (the data-parallel subset, and a little more):
- elementwise primitives (the compiler's elementwise table): operands brought to one split
  (the first operand's, completed by the others'); a replicated operand is sliced to the
  device's block for free (a broadcast is re-broadcast at the block's shape instead);
- reductions (reduce_sum/max/min/and/or): local reduction, then psum/pmax/pmin over the mesh
  axes of the reduced dimensions; argmax/argmin/reduce_prod/reduce_xor and the cumulative
  reductions need their reduced dimension whole;
- dot_general: batch and contracting dimensions paired (a contraction over a split dimension
  is a local product and a psum), free dimensions keep their splits;
- broadcast_in_dim, reshape (a split dimension that stays the leading factor of an output
  dimension with the same row-major prefix), transpose, squeeze, slice, dynamic_slice,
  dynamic_update_slice, pad, rev and concatenate (the dimensions they cut, pad, reverse or
  join must be whole);
- calls (nested jit, custom_jvp/custom_vjp, checkpoint) are partitioned through; shard_map
  runs its body on the blocks of its in_specs; reshard and out_shardings ask for a split;
- pure_callback / io_callback: operands gathered whole (over Explicit axes too, as JAX does),
  the Python function called once (on device 0), its results replicated;
- any other primitive runs unsplit when all its operands are replicated.

Where a rule needs a split dimension made whole (an all_gather the program did not ask for):
over Auto mesh axes it is done (as XLA's partitioner would); over Explicit axes it raises
ShardingTypeError (a NotImplementedError) naming the primitive and the operands' shardings,
as JAX's explicit sharding refuses it; a primitive with no rule and split operands raises
NotImplementedError over Explicit axes and runs on gathered operands over Auto ones. No
pattern gives a result other than the unsplit program's.
"""
from __future__ import annotations

import math
import weakref

import numpy as np

from corejax import core, parallel
from corejax._mesh_run import assemble, blocks_of, run, staging_axes
from corejax._reshard import reshard_p
from corejax._shard_map import shard_map_p, spec_dims
from corejax._tree_traced import tree_flatten, tree_unflatten
from corejax.api import _UNSPECIFIED
from corejax.array import Array
from corejax.compiler import registry
from corejax.core import Tracer, get_aval
from corejax.lax import structural
from corejax.lax.elementwise import add, mul
from corejax.sharding import (AxisType, NamedSharding, PartitionSpec, SingleDeviceSharding,
                              get_mesh, resolve_sharding, state as _state, with_sharding)
from corejax.transforms.jit import stage

__all__ = ["ShardingTypeError", "call", "NOT_SHARDED", "UNSPECIFIED"]


class ShardingTypeError(NotImplementedError):
    """A sharded jit would need communication the program did not ask for, over Explicit
    mesh axes (JAX raises its ShardingTypeError there)."""


UNSPECIFIED = _UNSPECIFIED
NOT_SHARDED = object()


class _V:
    """A value of the global program on one device: its block `x`, its split `dims` (per
    dimension, the tuple of mesh axes it is split over), its global aval, and, for a
    broadcast, (operand, broadcast_dimensions) to rebuild it at another split."""

    __slots__ = ("x", "dims", "aval", "bcast")

    def __init__(self, x, dims, aval, bcast=None):
        self.x, self.dims, self.aval, self.bcast = x, tuple(dims), aval, bcast

    @property
    def replicated(self) -> bool:
        return not any(self.dims)


def _spec(dims, full: bool = True) -> PartitionSpec:
    """The PartitionSpec of a split; without `full`, trailing unsplit dimensions left out
    (the outputs' specs of a jit over Auto axes, as JAX shows them; over Explicit axes every
    dimension is named, as in JAX's sharding-in-types)."""
    parts = [None if not d else (d[0] if len(d) == 1 else d) for d in dims]
    while parts and parts[-1] is None and not full:
        parts.pop()
    return PartitionSpec(*parts)


def _bind(eqn, xs, params=None):
    out = eqn.primitive.bind(*xs, **(eqn.params if params is None else params))
    return list(out) if eqn.primitive.multiple_results else [out]


class _Partitioner:
    def __init__(self, mesh):
        self.mesh = mesh
        self.explicit = {n for n, t in zip(mesh.axis_names, mesh.axis_types)
                         if t == AxisType.Explicit}

    def size(self, names) -> int:
        return math.prod(self.mesh.shape[n] for n in names)

    def local_shape(self, shape, dims) -> tuple:
        return tuple(s // self.size(d) for s, d in zip(shape, dims))

    def block_index(self, names):
        index = None
        for n in names:
            i = parallel.axis_index_p.bind(axis_name=n)
            index = i if index is None else add(mul(index, np.int32(self.mesh.shape[n])), i)
        return index

    def to_dims(self, v: _V, target, eqn=None):
        """`v`'s block at split `target`. `eqn`: the equation that needs it (None when the
        program asked for the split: reshard, out_shardings, shard_map's in_specs)."""
        target = tuple(tuple(t) for t in target)
        if v.dims == target:
            return v.x
        if v.bcast is not None:
            src, bdims = v.bcast
            src_target = [target[od] if src.aval.shape[i] == v.aval.shape[od] else ()
                          for i, od in enumerate(bdims)]
            x = self.to_dims(src, src_target, eqn)
            return structural.broadcast_in_dim(x, self.local_shape(v.aval.shape, target), bdims)
        gather = [d for d, names in enumerate(v.dims) if names and names != target[d]]
        if gather and eqn is not None:
            self.implicit_gather(eqn, v, target)
        x = v.x
        for d in gather:
            for n in reversed(v.dims[d]):
                x = parallel.all_gather_p.bind(x, axes=(n,), axis=d, tiled=True,
                                               size=self.mesh.shape[n])
        for d, names in enumerate(target):
            if names and names != v.dims[d]:
                size = v.aval.shape[d] // self.size(names)
                start = mul(self.block_index(names), np.int32(size))
                x = structural.dynamic_slice_in_dim(x, start, size, axis=d)
        return x

    def implicit_gather(self, eqn, v, target):
        names = {n for d, ns in enumerate(v.dims) if ns and ns != target[d] for n in ns}
        explicit = sorted(names & self.explicit)
        if explicit:
            raise ShardingTypeError(
                f"sharded jit: '{eqn.primitive.name}' needs its operand of type "
                f"{v.aval.str_short()} split as {_spec(v.dims)} brought to {_spec(target)}, "
                f"an all-gather over the Explicit mesh axes {explicit} that the program does "
                "not ask for. Reshard the operand first (jax.reshard(x, P(...))), or use "
                "Auto mesh axes.")

    def whole(self, eqn, v, dims_to_free, implicit=True):
        """`v`'s block with the dimensions `dims_to_free` whole, and its split. `implicit`:
        an all-gather this needs is one the program did not ask for (refused over Explicit
        axes); a reduction to a replicated value may gather (JAX's explicit mode does)."""
        target = [() if d in dims_to_free else names for d, names in enumerate(v.dims)]
        return self.to_dims(v, target, eqn if implicit else None), tuple(target)

    def no_rule(self, eqn, ins):
        if all(v.replicated for v in ins):
            return [_V(o, ((),) * ov.aval.ndim, ov.aval)
                    for o, ov in zip(_bind(eqn, [v.x for v in ins]), eqn.outvars)]
        names = {n for v in ins for d in v.dims for n in d}
        if names & self.explicit:
            raise NotImplementedError(
                f"sharded jit: no sharding rule for '{eqn.primitive.name}' with operands "
                + ", ".join(f"{v.aval.str_short()} split as {_spec(v.dims)}" for v in ins)
                + ". Reshard its operands to replicated first (jax.reshard(x, P())), or use "
                  "Auto mesh axes (then corejax gathers them).")
        xs = [self.to_dims(v, ((),) * v.aval.ndim) for v in ins]
        return [_V(o, ((),) * ov.aval.ndim, ov.aval)
                for o, ov in zip(_bind(eqn, xs), eqn.outvars)]

    def run(self, jaxpr: core.Jaxpr, consts, ins: list) -> list:
        env: dict = {}

        def read(v):
            if type(v) is core.Literal:
                return _V(v.value(), ((),) * v.aval.ndim, v.aval)
            return env[v]

        for v, c in zip(jaxpr.constvars, consts):
            env[v] = _V(c, ((),) * v.aval.ndim, v.aval)
        env.update(zip(jaxpr.invars, ins))
        for eqn in jaxpr.eqns:
            vals = [read(v) for v in eqn.invars]
            rule = _RULES.get(eqn.primitive.name)
            if rule is None:
                if eqn.primitive in registry.elementwise_lowerings:
                    rule = _elementwise
                elif eqn.primitive in registry.call_params:
                    rule = _call
                else:
                    rule = _Partitioner.no_rule
            env.update(zip(eqn.outvars, rule(self, eqn, vals)))
        return [read(v) for v in jaxpr.outvars]


# --- rules --------------------------------------------------------------------------------

def _merge(P, dims_list, nd, fixed=()) -> tuple:
    """One split for operands of the same rank: the first one's, completed by the others'
    where they split a dimension the first leaves whole over an axis not used yet;
    dimensions in `fixed` whole."""
    target, used = [()] * nd, set()
    for dims in dims_list:
        for d, names in enumerate(dims):
            if names and d not in fixed and not target[d] and not set(names) & used:
                target[d] = names
                used.update(names)
    return tuple(target)


def _elementwise(P, eqn, ins):
    nd = eqn.outvars[0].aval.ndim
    full = [v for v in ins if nd and v.aval.ndim == nd]
    target = _merge(P, [v.dims for v in full], nd)
    xs = [P.to_dims(v, target, eqn) if nd and v.aval.ndim == nd else v.x for v in ins]
    return [_V(o, target, ov.aval) for o, ov in zip(_bind(eqn, xs), eqn.outvars)]


_REDUCE_COLLECTIVE = {"reduce_sum": parallel.psum_p, "reduce_max": parallel.pmax_p,
                      "reduce_min": parallel.pmin_p, "reduce_and": parallel.pmin_p,
                      "reduce_or": parallel.pmax_p}


def _reduce(P, eqn, ins):
    (v,) = ins
    axes = tuple(eqn.params["axes"])
    collective = _REDUCE_COLLECTIVE.get(eqn.primitive.name)
    if collective is None and any(v.dims[a] for a in axes):
        x, dims = P.whole(eqn, v, axes, implicit=False)
    else:
        x, dims = v.x, v.dims
    (out,) = _bind(eqn, [x])
    names = tuple(n for a in axes for n in dims[a])
    if names:
        out = collective.bind(out, axes=names)
    return [_V(out, [d for i, d in enumerate(dims) if i not in axes], eqn.outvars[0].aval)]


def _along_axis(P, eqn, ins):
    """A cumulative op runs along its axis made whole (an all-gather, over Auto axes only);
    its result is split again as its operand was, as XLA's partitioner leaves a cumulative
    sum's result (it keeps the operand's sharding through the reduce-window)."""
    (v,) = ins
    x, dims = P.whole(eqn, v, (eqn.params["axis"],))
    out = _V(_bind(eqn, [x])[0], dims, eqn.outvars[0].aval)
    if tuple(dims) == tuple(v.dims):
        return [out]
    return [_V(P.to_dims(out, v.dims), v.dims, eqn.outvars[0].aval)]


def _dot_general(P, eqn, ins):
    lhs, rhs = ins
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    ld, rd = list(lhs.dims), list(rhs.dims)
    used: set = set()
    for a, b in zip(tuple(lb) + tuple(lc), tuple(rb) + tuple(rc)):
        pick = ld[a] or rd[b]
        if set(pick) & used:
            pick = ()
        ld[a] = rd[b] = pick
        used.update(pick)
    lfree = [d for d in range(lhs.aval.ndim) if d not in lc and d not in lb]
    rfree = [d for d in range(rhs.aval.ndim) if d not in rc and d not in rb]
    for dims, free in ((ld, lfree), (rd, rfree)):
        for d in free:
            if set(dims[d]) & used:
                dims[d] = ()
            used.update(dims[d])
    xl, xr = P.to_dims(lhs, ld, eqn), P.to_dims(rhs, rd, eqn)
    (out,) = _bind(eqn, [xl, xr])
    names = tuple(n for a in lc for n in ld[a])
    if names:
        out = parallel.psum_p.bind(out, axes=names)
    out_dims = [ld[a] for a in lb] + [ld[d] for d in lfree] + [rd[d] for d in rfree]
    return [_V(out, out_dims, eqn.outvars[0].aval)]


def _broadcast_in_dim(P, eqn, ins):
    v, rest = ins[0], ins[1:]
    shape, bdims = eqn.params["shape"], tuple(eqn.params["broadcast_dimensions"])
    out_dims = [()] * len(shape)
    for i, od in enumerate(bdims):
        if v.aval.shape[i] == shape[od]:
            out_dims[od] = v.dims[i]
    src = [out_dims[od] for od in bdims]
    x = P.to_dims(v, src, eqn)
    params = dict(eqn.params, shape=P.local_shape(shape, out_dims))
    (out,) = _bind(eqn, [x] + [r.x for r in rest], params)
    return [_V(out, out_dims, eqn.outvars[0].aval, bcast=(v, bdims))]


def _prefixes(shape) -> list:
    out, p = [], 1
    for s in shape:
        out.append(p)
        p *= s
    return out


def _reshape(P, eqn, ins):
    (v,) = ins
    new = tuple(eqn.params["new_sizes"])
    dimensions = eqn.params.get("dimensions")
    in_shape = v.aval.shape
    if dimensions is not None and tuple(dimensions) != tuple(range(len(in_shape))):
        x, dims = P.whole(eqn, v, tuple(range(len(in_shape))))
        v = _V(x, dims, v.aval)
    pin, pout = _prefixes(in_shape), _prefixes(new)
    target, out_dims = list(v.dims), [()] * len(new)
    for d, names in enumerate(v.dims):
        if not names:
            continue
        k = P.size(names)
        e = next((e for e in range(len(new)) if pout[e] == pin[d] and new[e] % k == 0), None)
        if e is None:
            target[d] = ()
        else:
            out_dims[e] = names
    x = P.to_dims(v, target, eqn)
    params = dict(eqn.params, new_sizes=P.local_shape(new, out_dims))
    return [_V(_bind(eqn, [x], params)[0], out_dims, eqn.outvars[0].aval)]


def _transpose(P, eqn, ins):
    (v,) = ins
    perm = eqn.params["permutation"]
    return [_V(_bind(eqn, [v.x])[0], [v.dims[p] for p in perm], eqn.outvars[0].aval)]


def _squeeze(P, eqn, ins):
    (v,) = ins
    gone = {d % v.aval.ndim for d in eqn.params["dimensions"]}
    x, dims = P.whole(eqn, v, tuple(gone))
    return [_V(_bind(eqn, [x])[0], [d for i, d in enumerate(dims) if i not in gone],
               eqn.outvars[0].aval)]


def _slice(P, eqn, ins):
    (v,) = ins
    p = eqn.params
    shape = v.aval.shape
    strides = p["strides"] or (1,) * len(shape)
    cut = tuple(d for d in range(len(shape)) if (p["start_indices"][d], p["limit_indices"][d],
                                                 strides[d]) != (0, shape[d], 1))
    x, dims = P.whole(eqn, v, cut)
    limits = P.local_shape(shape, dims)
    params = dict(p, limit_indices=tuple(lim if d in cut else limits[d]
                                         for d, lim in enumerate(p["limit_indices"])))
    return [_V(_bind(eqn, [x], params)[0], dims, eqn.outvars[0].aval)]


def _dynamic_slice(P, eqn, ins):
    v, starts = ins[0], ins[1:]
    sizes = eqn.params["slice_sizes"]
    cut = tuple(d for d, s in enumerate(sizes) if s != v.aval.shape[d])
    x, dims = P.whole(eqn, v, cut)
    params = dict(eqn.params, slice_sizes=P.local_shape(sizes, dims))
    xs = [x] + [P.to_dims(s, (), eqn) for s in starts]
    return [_V(_bind(eqn, xs, params)[0], dims, eqn.outvars[0].aval)]


def _dynamic_update_slice(P, eqn, ins):
    v, update, starts = ins[0], ins[1], ins[2:]
    cut = tuple(d for d in range(v.aval.ndim) if update.aval.shape[d] != v.aval.shape[d])
    target = _merge(P, [v.dims, update.dims], v.aval.ndim, fixed=cut)
    xs = [P.to_dims(v, target, eqn), P.to_dims(update, target, eqn)]
    xs += [P.to_dims(s, (), eqn) for s in starts]
    return [_V(_bind(eqn, xs)[0], target, eqn.outvars[0].aval)]


def _concatenate(P, eqn, ins):
    dim = eqn.params["dimension"]
    nd = eqn.outvars[0].aval.ndim
    target = _merge(P, [v.dims for v in ins], nd, fixed=(dim,))
    xs = [P.to_dims(v, target, eqn) for v in ins]
    return [_V(_bind(eqn, xs)[0], target, eqn.outvars[0].aval)]


def _pad(P, eqn, ins):
    v, value = ins
    cut = tuple(d for d, c in enumerate(eqn.params["padding_config"]) if tuple(c) != (0, 0, 0))
    x, dims = P.whole(eqn, v, cut)
    return [_V(_bind(eqn, [x, P.to_dims(value, (), eqn)])[0], dims, eqn.outvars[0].aval)]


def _rev(P, eqn, ins):
    (v,) = ins
    x, dims = P.whole(eqn, v, tuple(eqn.params["dimensions"]))
    return [_V(_bind(eqn, [x])[0], dims, eqn.outvars[0].aval)]


def _call(P, eqn, ins):
    body = eqn.params[registry.call_params[eqn.primitive]]
    if len(body.jaxpr.invars) != len(ins):
        return P.no_rule(eqn, ins)
    return P.run(body.jaxpr, body.consts, ins)


def _shard_map(P, eqn, ins):
    p = eqn.params
    if p["mesh"] != P.mesh:
        raise NotImplementedError(f"sharded jit: a shard_map over {p['mesh']} inside a jit "
                                  f"whose arrays are split over {P.mesh}: use one mesh")
    xs = [P.to_dims(v, spec_dims(s, v.aval.ndim)) for v, s in zip(ins, p["in_specs"])]
    outs = core.eval_jaxpr(p["jaxpr"].jaxpr, p["jaxpr"].consts, *xs)
    return [_V(o, spec_dims(s, ov.aval.ndim), ov.aval)
            for o, s, ov in zip(outs, p["out_specs"], eqn.outvars)]


def _reshard(P, eqn, ins):
    (v,) = ins
    dims = _dims_of(eqn.params["sharding"], v.aval.ndim, P.mesh)
    return [_V(P.to_dims(v, dims), dims, v.aval)]


class _OnFirstDevice:
    """A callback of a sharded program: its first operand is the device's index over the
    mesh, and only device 0 calls the user's function (the others give zeros), so the
    function runs once per call of the program, on the whole operands, as in JAX."""

    def __init__(self, callback, result_avals):
        self.callback, self.result_avals = callback, result_avals
        self.fn = getattr(callback, "fn", callback)

    def __call__(self, index, *leaves):
        if int(np.asarray(index)) == 0:
            return self.callback(*leaves)
        return [np.zeros(a.shape, a.dtype) for a in self.result_avals]


def _callback(P, eqn, ins):
    """pure_callback / io_callback: operands gathered whole (as JAX does, over Explicit axes
    too), the function called on device 0, its results sent to every device (replicated)."""
    xs = [P.to_dims(v, ((),) * v.aval.ndim) for v in ins]
    names = tuple(P.mesh.axis_names)
    index = P.block_index(names)
    params = dict(eqn.params, callback=_OnFirstDevice(eqn.params["callback"],
                                                      eqn.params["result_avals"]))
    outs = _bind(eqn, [index, *xs], params)
    result = []
    for o, ov in zip(outs, eqn.outvars):
        for n in names:   # device 0's value: element 0 along each mesh axis
            o = parallel.all_gather_p.bind(o, axes=(n,), axis=0, tiled=False,
                                           size=P.mesh.shape[n])
            o = _first(o)
        result.append(_V(o, ((),) * ov.aval.ndim, ov.aval))
    return result


def _first(x):
    shape = get_aval(x).shape
    x = structural.slice(x, (0,) * len(shape), (1,) + tuple(shape[1:]))
    return structural.reshape(x, tuple(shape[1:]))


_RULES = {
    "pure_callback": _callback, "io_callback": _callback,
    "dot_general": _dot_general, "broadcast_in_dim": _broadcast_in_dim, "reshape": _reshape,
    "transpose": _transpose, "squeeze": _squeeze, "slice": _slice,
    "dynamic_slice": _dynamic_slice, "dynamic_update_slice": _dynamic_update_slice,
    "concatenate": _concatenate, "pad": _pad, "rev": _rev, "shard_map": _shard_map,
    "reshard": _reshard,
    **{name: _reduce for name in ("reduce_sum", "reduce_max", "reduce_min", "reduce_prod",
                                  "reduce_and", "reduce_or", "reduce_xor", "argmax",
                                  "argmin")},
    **{name: _along_axis for name in ("cumsum", "cumprod", "cummax", "cummin",
                                      "cumlogsumexp")},
}


# --- the jit hook -------------------------------------------------------------------------

def _dims_of(sharding, ndim, mesh) -> tuple:
    """The split a sharding gives a rank-`ndim` value over `mesh`."""
    if isinstance(sharding, NamedSharding):
        if sharding.mesh != mesh:
            raise ValueError(f"Received incompatible devices for jitted computation: a "
                             f"sharding over {sharding.mesh} and one over {mesh}; put every "
                             "array on one mesh.")
        return tuple(spec_dims(sharding.spec, ndim))
    return ((),) * ndim


def _mesh_sharding(x):
    s = getattr(x, "_sharding", None) if type(x) is Array else None
    return s if isinstance(s, NamedSharding) and s.mesh.size > 1 else None


_MESH_OPS = ("shard_map", "reshard")
_uses_mesh_ops_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _mesh_of_ops(jaxpr: core.Jaxpr):
    """The mesh of the first shard_map or reshard in `jaxpr` (sub-programs included)."""
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "shard_map":
            return eqn.params["mesh"]
        if eqn.primitive.name == "reshard":
            s = eqn.params["sharding"]
            if isinstance(s, NamedSharding):
                return s.mesh
        for v in eqn.params.values():
            for sub in (v if isinstance(v, (tuple, list)) else (v,)):
                if isinstance(sub, core.ClosedJaxpr):
                    found = _mesh_of_ops(sub.jaxpr)
                    if found is not None:
                        return found
    return None


def _program_mesh(closed):
    try:
        return _uses_mesh_ops_cache[closed]
    except KeyError:
        mesh = _uses_mesh_ops_cache[closed] = _mesh_of_ops(closed.jaxpr)
        return mesh


def _leaf_shardings(shardings, dyn_args, dyn_kwargs, n_leaves, what) -> list:
    """One sharding (or None: unspecified) per leaf of (dyn_args, dyn_kwargs)."""
    if shardings is UNSPECIFIED:
        return [None] * n_leaves
    is_leaf = lambda s: s is None or isinstance(s, (NamedSharding, SingleDeviceSharding,
                                                    PartitionSpec))   # noqa: E731
    if is_leaf(shardings):
        out = [shardings] * len(tree_flatten(dyn_args)[0])
    else:
        tree_in = tuple(dyn_args) if isinstance(shardings, tuple) else dyn_args
        leaves, tree = tree_flatten(shardings, is_leaf=is_leaf)
        try:
            subtrees = tree.flatten_up_to(tree_in)
        except ValueError as e:
            raise ValueError(f"jit {what} must be a tree prefix of the positional arguments: "
                             f"{e}") from None
        out = [s for s, sub in zip(leaves, subtrees) for _ in tree_flatten(sub)[0]]
    return out + [None] * (n_leaves - len(out))


def _resolve(s, what):
    if isinstance(s, PartitionSpec) and get_mesh().empty:
        raise RuntimeError(f"jit requires a non-empty mesh in context if you are passing "
                           f"`PartitionSpec`s to {what}. You can define a context mesh via "
                           "`jax.set_mesh(mesh)`. Alternatively, provide `Sharding`s to "
                           f"{what} and then the mesh context manager is not required.")
    return resolve_sharding(s, what)


_partitioned: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _partition(closed, mesh, in_dims, out_targets):
    """(per-device closed program, output splits) of `closed` for inputs split `in_dims`."""
    box: dict = {}

    def per_device(*xs):
        P = _Partitioner(mesh)
        ins = [_V(x, d, a) for x, d, a in zip(xs, in_dims, closed.in_avals)]
        outs = P.run(closed.jaxpr, closed.consts, ins)
        result, dims = [], []
        for o, t in zip(outs, out_targets):
            if t is None:
                result.append(o.x)
                dims.append(o.dims)
            else:
                result.append(P.to_dims(o, t))
                dims.append(t)
        box["dims"] = dims
        return result

    P = _Partitioner(mesh)
    avals = [a.update(shape=P.local_shape(a.shape, d)) for a, d in zip(closed.in_avals, in_dims)]
    with staging_axes(mesh, mesh.axis_names):
        local = stage(per_device, avals, "sharded")
    return local, box["dims"]


def call(jf, args, kwargs):
    """The jitted function `jf` on `args` partitioned over a mesh, or NOT_SHARDED when
    nothing in the call is sharded (jit's ordinary path then runs it)."""
    in_sh, out_sh = jf._shardings if jf._shardings is not None else (UNSPECIFIED, UNSPECIFIED)
    _, _, dyn_args, dyn_kwargs = jf._split(args, kwargs)
    raw = tree_flatten((dyn_args, dyn_kwargs))[0]
    if any(isinstance(x, Tracer) for x in raw):
        return NOT_SHARDED
    sharded = [_mesh_sharding(x) for x in raw]
    if not any(sharded) and in_sh is UNSPECIFIED and out_sh is UNSPECIFIED \
            and not _state.mesh_ops_staged:
        return NOT_SHARDED
    entry, leaves = jf._lookup(args, kwargs)
    given = [None if s is None else _resolve(s, "in_shardings")
             for s in _leaf_shardings(in_sh, dyn_args, dyn_kwargs, len(leaves), "in_shardings")]
    meshes = [s.mesh for s in sharded if s is not None]
    meshes += [s.mesh for s in given if isinstance(s, NamedSharding)]
    program_mesh = _program_mesh(entry.jaxpr) if _state.mesh_ops_staged else None
    if program_mesh is not None:
        meshes.append(program_mesh)
    if not meshes and out_sh is UNSPECIFIED:
        return NOT_SHARDED
    out_leaves_sh = None
    if out_sh is not UNSPECIFIED:
        out_avals = entry.jaxpr.out_avals
        placeholder = tree_unflatten(entry.out_tree, list(range(len(out_avals))))
        out_leaves_sh = [None if s is None else _resolve(s, "out_shardings")
                         for s in _leaf_shardings(out_sh, placeholder, {}, len(out_avals),
                                                  "out_shardings")]
        meshes += [s.mesh for s in out_leaves_sh if isinstance(s, NamedSharding)]
    if not meshes:
        return NOT_SHARDED
    mesh = meshes[0]
    for m in meshes[1:]:
        if m != mesh:
            raise ValueError(f"Received incompatible devices for jitted computation: arrays "
                             f"or shardings over {mesh} and over {m}; put them on one mesh.")
    in_dims = []
    for x, s, g in zip(leaves, [_mesh_sharding(x) for x in leaves], given):
        ndim = get_aval(x).ndim
        if g is not None and s is not None and _dims_of(g, ndim, mesh) != \
                _dims_of(s, ndim, mesh):
            raise ValueError(f"Sharding passed to jit does not match the sharding on the "
                             f"respective arg. Got jit sharding: {g},\narg sharding: {s} for "
                             f"arg type: {get_aval(x).str_short()}")
        chosen = g if g is not None else s
        dims = _dims_of(chosen, ndim, mesh) if chosen is not None else ((),) * ndim
        if chosen is not None and isinstance(chosen, NamedSharding):
            chosen.check_divisible(get_aval(x).shape)
        in_dims.append(dims)
    in_dims = [((),) * a.ndim for a in entry.jaxpr.in_avals[:len(entry.consts)]] + in_dims
    out_targets = [None if s is None else _dims_of(s, a.ndim, mesh)
                   for s, a in zip(out_leaves_sh or [None] * len(entry.jaxpr.out_avals),
                                   entry.jaxpr.out_avals)]
    operands = [*entry.consts, *leaves]
    if program_mesh is None and not any(any(d) for d in in_dims) and not any(
            t is not None and any(t) for t in out_targets):
        outs = _run_replicated(entry, operands, mesh)
    else:
        outs = _run_partitioned(entry, operands, mesh, in_dims, out_targets)
    if entry.donated is not None and not getattr(entry.executable, "consumes_donations",
                                                 False):
        for x, d in zip(operands, entry.donated):
            if d and type(x) is Array:
                x.delete()
    if out_leaves_sh is not None:   # an output asked for as a sharding carries that one, as given
        outs = [with_sharding(o, s) if isinstance(s, NamedSharding) and type(o) is Array
                else o for o, s in zip(outs, out_leaves_sh)]
    return tree_unflatten(entry.out_tree, outs)


def _run_replicated(entry, operands, mesh):
    """A program whose inputs and outputs are all replicated runs once: every device would
    compute the same."""
    from corejax.compiler import compile_jaxpr
    exe = entry.executable
    if exe is None:
        exe = entry.executable = compile_jaxpr(entry.jaxpr, "cpu", entry.donated)
    outs = exe(*operands)
    full = any(t == AxisType.Explicit for t in mesh.axis_types)
    return [with_sharding(o, NamedSharding(mesh, _spec(((),) * o.ndim, full)))
            if type(o) is Array else o for o in outs]


def _run_partitioned(entry, operands, mesh, in_dims, out_targets):
    from corejax.compiler import compile_jaxpr
    key = (mesh, tuple(in_dims), tuple(out_targets))
    table = _partitioned.setdefault(entry.jaxpr, {})
    hit = table.get(key)
    if hit is None:
        local, out_dims = _partition(entry.jaxpr, mesh, in_dims, out_targets)
        hit = table[key] = (local, out_dims, compile_jaxpr(local, "cpu"))
    local, out_dims, exe = hit
    devices = list(mesh.devices.flat)
    blocks = [blocks_of(x, _spec(d), mesh, devices) for x, d in zip(operands, in_dims)]
    results = run(exe, mesh, mesh.axis_names,
                  [[b[i] for b in blocks] for i in range(len(devices))])
    full = any(t == AxisType.Explicit for t in mesh.axis_types)
    return [assemble([r[k] for r in results], _spec(d, full), mesh, devices, a.weak_type)
            for k, (d, a) in enumerate(zip(out_dims, entry.jaxpr.out_avals))]

