"""`shard_map`: a per-device function mapped over the devices of a mesh (public as
corejax.shard_map and corejax.experimental.shard_map.shard_map).

`shard_map(f, mesh=, in_specs=, out_specs=)(*args)` splits each argument into blocks as its
PartitionSpec says (an axis named in the spec is split over that mesh axis; an axis the spec
leaves out is whole on every device), stages `f` once for one device's blocks with the mesh
axes as named axes (its collectives staged as primitives over them), and binds `shard_map_p`
with that per-device program. Evaluated, the primitive runs the program on every device
(corejax/_mesh_run.py) and assembles the outputs as `out_specs` says: blocks concatenated
along the dimensions a spec splits, and, along a mesh axis a spec leaves out, the block of
the first device (that the devices agree there is what check_vma verifies).

Rules of the primitive: jvp (the per-device jvp, tangents placed as their primals), partial
evaluation (residuals leave the known program one block per device, stacked along a leading
axis split over all manual axes), transposition (the global transpose: an output replicated
over a mesh axis sends its cotangent through one device of that axis, and an input replicated
over mesh axes gets the psum of its per-device cotangents over them, as JAX's shard_map
does), and batching (a leading unsplit dimension added to every spec).

check_vma: which mesh axes each value varies over is inferred from the staged program
(inputs vary over the axes their spec splits them over; psum/pmax/pmin make a value
invariant over their axes; axis_index, all_gather, ppermute, psum_scatter and all_to_all make
it vary over theirs; everything else varies over the union of its operands'); an output whose
spec leaves out an axis it varies over is an error, as in JAX.
"""
from __future__ import annotations

import math

import numpy as np

from corejax import core
from corejax._mesh_run import (assemble, blocks_of, global_shape, local_aval, participants,
                               run, staging_axes)
from corejax._traceback import api_boundary
from corejax._tree_traced import tree_flatten, tree_unflatten
from corejax.api import _canonical_leaves, _fun_name, _wraps
from corejax.compiler import registry
from corejax.core import ClosedJaxpr, Primitive, Tracer, get_aval
from corejax.sharding import (AbstractMesh, AxisType, Mesh, NamedSharding, PartitionSpec,
                              get_mesh, state as sharding_state)
from corejax.transforms import ad, batching
from corejax.transforms.ad import Zero, UndefinedPrimal, is_undefined_primal
from corejax.transforms.jit import batch_jaxpr, closed_call, jvp_jaxpr, memoized, stage
from corejax.transforms.staging import convert_constvars, trace_to_jaxpr

__all__ = ["shard_map", "shard_map_p", "Infer", "spec_dims", "varying_axes"]


class _InferType:
    """in_specs left to shard_map: read from the arguments' shardings (Explicit axes)."""

    def __repr__(self):
        return "Infer"


Infer = _InferType()


def spec_dims(spec, ndim: int) -> list:
    """Per dimension of a rank-`ndim` value, the tuple of mesh axes `spec` splits it over."""
    parts = list(spec) + [None] * (ndim - len(spec))
    return [() if p is None else (p if isinstance(p, tuple) else (p,)) for p in parts]


def _names_in(spec) -> list:
    return [n for p in spec if p is not None for n in (p if isinstance(p, tuple) else (p,))]


# --- which mesh axes a value varies over ------------------------------------------------------

_REDUCING = {"psum", "pmax", "pmin"}
_VARYING = {"all_gather", "ppermute", "psum_scatter", "all_to_all"}


def varying_axes(jaxpr: core.Jaxpr, in_vma: list) -> list:
    """Per output of `jaxpr`, the frozenset of named axes it may vary over, given its inputs'
    (constvars vary over none). Sub-programs of calls and control flow are looked into; a
    loop's carry is iterated to its fixed point."""
    env: dict = {}

    def read(v):
        return frozenset() if type(v) is core.Literal else env.get(v, frozenset())

    for v, s in zip(jaxpr.invars, in_vma):
        env[v] = frozenset(s)
    for eqn in jaxpr.eqns:
        ins = [read(v) for v in eqn.invars]
        union = frozenset().union(*ins)
        name, p = eqn.primitive.name, eqn.params
        if name in _REDUCING:
            outs = [union - frozenset(p["axes"])]
        elif name in _VARYING:
            outs = [union | frozenset(p["axes"])]
        elif name == "axis_index":
            outs = [frozenset([p["axis_name"]])]
        else:
            outs = _sub_program_vma(eqn, ins)
            if outs is None:
                outs = [union] * len(eqn.outvars)
        for v, s in zip(eqn.outvars, outs):
            env[v] = s
    return [read(v) for v in jaxpr.outvars]


def _sub_program_vma(eqn, ins):
    """The outputs' varying axes of a call or control-flow equation, None for the others."""
    name, p = eqn.primitive.name, eqn.params
    param = registry.call_params.get(eqn.primitive)
    if param is not None:
        body = p[param]
        return varying_axes(body.jaxpr, ins[len(ins) - len(body.jaxpr.invars):])
    if name == "shard_map":
        return None
    if name == "cond":
        index, ops = ins[0], ins[1:]
        outs = [varying_axes(b.jaxpr, ops) for b in p["branches"]]
        return [index.union(*col) for col in zip(*outs)]
    if name == "scan":
        nc, nk = p["num_consts"], p["num_carry"]
        consts, carry, xs = ins[:nc], list(ins[nc:nc + nk]), ins[nc + nk:]
        while True:
            outs = varying_axes(p["jaxpr"].jaxpr, consts + carry + xs)
            new = [c | o for c, o in zip(carry, outs[:nk])]
            if new == carry:
                return outs
            carry = new
    if name == "while":
        cn, bn = p["cond_nconsts"], p["body_nconsts"]
        cconsts, bconsts, carry = ins[:cn], ins[cn:cn + bn], list(ins[cn + bn:])
        while True:
            pred = varying_axes(p["cond_jaxpr"].jaxpr, cconsts + carry)[0]
            outs = varying_axes(p["body_jaxpr"].jaxpr, bconsts + carry)
            new = [c | o | pred for c, o in zip(carry, outs)]
            if new == carry:
                return carry
            carry = new
    return None


# --- the primitive ----------------------------------------------------------------------------

shard_map_p = Primitive("shard_map")
shard_map_p.multiple_results = True


def _impl(*args, jaxpr, mesh, in_specs, out_specs, check_vma, manual_axes):
    from corejax.compiler import compile_jaxpr
    exe = compile_jaxpr(jaxpr, "cpu")
    devices = [d for d, _ in participants(mesh, manual_axes)]
    blocks = [blocks_of(x, s, mesh, devices) for x, s in zip(args, in_specs)]
    results = run(exe, mesh, manual_axes, [[b[i] for b in blocks] for i in range(len(devices))])
    return [assemble([r[k] for r in results], s, mesh, devices, a.weak_type)
            for k, (s, a) in enumerate(zip(out_specs, jaxpr.out_avals))]


def _abstract(*avals, jaxpr, mesh, out_specs, **_):
    return [a.update(shape=global_shape(a.shape, s, mesh))
            for a, s in zip(jaxpr.out_avals, out_specs)]


shard_map_p.def_impl(_impl)
shard_map_p.def_abstract_eval(_abstract)
registry.def_mesh_placing(shard_map_p)
shard_map_p.weak_type_rule = lambda *args, jaxpr, **_: [a.weak_type for a in jaxpr.out_avals]


def _restage(params, fun, avals, name):
    """`fun` staged as a per-device program of the same mesh (its collectives staged)."""
    with staging_axes(params["mesh"], params["manual_axes"]):
        return stage(fun, avals, name)


def _bind(args, params, **changes):
    return shard_map_p.bind(*args, **{**params, **changes})


# jvp: the per-device jvp; tangents are split as their primals are.
def _jvp(primals, tangents, **params):
    jaxpr = params["jaxpr"]
    nonzeros = [type(t) is not Zero for t in tangents]
    with staging_axes(params["mesh"], params["manual_axes"]):
        new = memoized("shard_map_jvp", jaxpr, tuple(nonzeros),
                       lambda: jvp_jaxpr(jaxpr, nonzeros))
    nz = [t for t in tangents if type(t) is not Zero]
    in_specs = params["in_specs"] + tuple(s for s, n in zip(params["in_specs"], nonzeros) if n)
    outs = _bind([*primals, *nz], params, jaxpr=new, in_specs=in_specs,
                 out_specs=params["out_specs"] * 2)
    m = len(jaxpr.out_avals)
    return outs[:m], outs[m:]


ad.primitive_jvps[shard_map_p] = _jvp


# partial evaluation: one shard_map of the known part, one of the unknown part; the
# residuals cross between them one block per device.
def _stacked_spec(manual) -> PartitionSpec:
    return PartitionSpec(tuple(manual) if len(manual) > 1 else manual[0])


def _split_programs(jaxpr, unknowns, params):
    known, unknown, out_uks, num_res = ad.partial_eval_jaxpr(jaxpr, unknowns)
    from corejax.lax import structural
    n_known_out = len(known.out_avals) - num_res

    def known_fun(*args):
        outs = closed_call(known, *args)
        res = outs[n_known_out:]
        return outs[:n_known_out] + [structural.broadcast_in_dim(
            r, (1,) + get_aval(r).shape, tuple(range(1, get_aval(r).ndim + 1))) for r in res]

    res_avals = known.out_avals[n_known_out:]

    def unknown_fun(*args):
        res = [structural.reshape(r, a.shape) for r, a in zip(args[:num_res], res_avals)]
        return closed_call(unknown, *res, *args[num_res:])

    known_s = _restage(params, known_fun, known.in_avals, "known")
    unknown_s = _restage(params, unknown_fun, [a.update(shape=(1,) + a.shape)
                                               for a in res_avals] + unknown.in_avals[num_res:],
                         "unknown")
    return known_s, unknown_s, out_uks, num_res


def _partial_eval(trace, tracers, **params):
    jaxpr = params["jaxpr"]
    unknowns = [not t.pval.is_known for t in tracers]
    known, unknown, out_uks, num_res = memoized(
        "shard_map_partial_eval", jaxpr, tuple(unknowns),
        lambda: _split_programs(jaxpr, unknowns, params))
    in_specs, out_specs = params["in_specs"], params["out_specs"]
    stacked = _stacked_spec(params["manual_axes"])
    known_outs = _bind([t.pval.const for t in tracers if t.pval.is_known], params,
                       jaxpr=known,
                       in_specs=tuple(s for s, u in zip(in_specs, unknowns) if not u),
                       out_specs=tuple(s for s, u in zip(out_specs, out_uks) if not u)
                       + (stacked,) * num_res)
    n_known_out = len(known_outs) - num_res
    res_tracers = [trace.instantiate_const(trace.pure(r)) for r in known_outs[n_known_out:]]
    unk_tracers = [t for t in tracers if not t.pval.is_known]
    new_params = dict(params, jaxpr=unknown,
                      in_specs=(stacked,) * num_res
                      + tuple(s for s, u in zip(in_specs, unknowns) if u),
                      out_specs=tuple(s for s, u in zip(out_specs, out_uks) if u))
    outs_unknown = trace.default_process(shard_map_p, res_tracers + unk_tracers, new_params)
    known_it, unknown_it = iter(known_outs[:n_known_out]), iter(outs_unknown)
    return [next(unknown_it) if u else trace.pure(next(known_it)) for u in out_uks]


ad.partial_eval_rules[shard_map_p] = _partial_eval


# transposition: the transpose of the global linear map the shard_map computes.
def _left_out(spec, ndim, manual) -> tuple:
    used = set(_names_in(spec))
    return tuple(n for n in manual if n not in used)


def _transpose_program(params, linear):
    from corejax import parallel
    from corejax.lax import elementwise, structural
    jaxpr, manual = params["jaxpr"], params["manual_axes"]
    in_avals = jaxpr.in_avals
    res_avals = [a for a, l in zip(in_avals, linear) if not l]
    out_left = [_left_out(s, a.ndim, manual)
                for s, a in zip(params["out_specs"], jaxpr.out_avals)]

    def fun(*args):
        res, cts = iter(args[:len(res_avals)]), list(args[len(res_avals):])
        for k, axes in enumerate(out_left):
            if axes:   # replicated output: its cotangent enters through one device only
                first = None
                for n in axes:
                    here = elementwise.eq(parallel.axis_index(n), np.int32(0))
                    first = here if first is None else elementwise.and_p.bind(first, here)
                aval = get_aval(cts[k])
                mask = structural.broadcast_in_dim(first, aval.shape, ())
                cts[k] = elementwise.select_n(mask, elementwise.full(
                    aval.shape, 0, aval.dtype, aval.weak_type), cts[k])
        full = [UndefinedPrimal(a) if l else next(res) for a, l in zip(in_avals, linear)]
        cts_in = ad.backward_pass(jaxpr.jaxpr, jaxpr.consts, full, cts)
        outs = []
        for ct, l, s, a in zip(cts_in, linear, params["in_specs"], in_avals):
            if not l:
                continue
            ct = ad.instantiate_zeros(ct if ct is not None else Zero(a))
            left = _left_out(s, a.ndim, manual)
            if left:   # replicated input: the sum of its cotangents over the devices
                ct = parallel.psum(ct, left)
            outs.append(ct)
        return outs

    return _restage(params, fun, [*res_avals, *jaxpr.out_avals], "transpose")


def _transpose(cts, *args, **params):
    linear = [is_undefined_primal(a) for a in args]
    cts = [ad.instantiate_zeros(ct) for ct in cts]
    new = memoized("shard_map_transpose", params["jaxpr"], tuple(linear),
                   lambda: _transpose_program(params, linear))
    res = [a for a in args if not is_undefined_primal(a)]
    in_specs = params["in_specs"]
    outs = iter(_bind([*res, *cts], params, jaxpr=new,
                      in_specs=tuple(s for s, l in zip(in_specs, linear) if not l)
                      + params["out_specs"],
                      out_specs=tuple(s for s, l in zip(in_specs, linear) if l)))
    return [next(outs) if l else None for l in linear]


ad.primitive_transposes[shard_map_p] = _transpose


# batching: the batch dimension leads every block, unsplit.
def _batch(axis_size, vals, dims, **params):
    jaxpr = params["jaxpr"]
    vals = [v if d is None else batching.moveaxis(v, d, 0) for v, d in zip(vals, dims)]
    dims = tuple(None if d is None else 0 for d in dims)
    with staging_axes(params["mesh"], params["manual_axes"]):
        new = memoized("shard_map_vmap", jaxpr, (axis_size, dims),
                       lambda: batch_jaxpr(jaxpr, axis_size, dims, instantiate=True))
    lead = lambda s: PartitionSpec(None, *s)   # noqa: E731
    outs = _bind(vals, params, jaxpr=new,
                 in_specs=tuple(s if d is None else lead(s)
                                for s, d in zip(params["in_specs"], dims)),
                 out_specs=tuple(lead(s) for s in params["out_specs"]))
    return outs, [0] * len(outs)


_batch.needs_axis_size = True
batching.primitive_batchers[shard_map_p] = _batch


# --- the API ----------------------------------------------------------------------------------

def _mesh_for(mesh):
    if mesh is None:
        mesh = get_mesh()
        if mesh.empty:
            raise ValueError("The context mesh cannot be empty. Use `jax.set_mesh(mesh)` to "
                             "enter into a mesh context")
    if isinstance(mesh, AbstractMesh):
        raise NotImplementedError("shard_map over an AbstractMesh runs only inside a jit "
                                  "with a concrete mesh, which corejax does not stage: pass "
                                  "the Mesh itself")
    return mesh


def _manual_axes(mesh, axis_names) -> tuple:
    names = frozenset(axis_names)
    for n in names:
        if n not in mesh.axis_names:
            raise ValueError(f"shard_map axis_names={set(names)} must be a subset of the "
                             f"mesh's axis names {mesh.axis_names}, but {n!r} is not.")
    return tuple(n for n in mesh.axis_names if not names or n in names)


def _prefix_specs(what, specs, tree_value, count, fname) -> list:
    """The spec of each of the `count` leaves of `tree_value`, from the prefix tree `specs`."""
    is_leaf = lambda x: x is None or isinstance(x, PartitionSpec)   # noqa: E731
    if is_leaf(specs):
        return [PartitionSpec() if specs is None else specs] * count
    leaves, spec_tree = tree_flatten(specs, is_leaf=is_leaf)
    try:
        subtrees = spec_tree.flatten_up_to(tree_value)
    except ValueError as e:
        raise ValueError(f"pytree structure error: shard_map {what} must be a tree prefix of "
                         f"the {'arguments' if what == 'in_specs' else 'outputs'} of "
                         f"{fname!r}, but got {what}={specs!r}: {e}") from None
    out = []
    for spec, sub in zip(leaves, subtrees):
        if spec is not None and not isinstance(spec, PartitionSpec):
            raise TypeError(f"shard_map {what} argument must be a pytree of "
                            f"`jax.sharding.PartitionSpec` instances, but it had {spec!r} of "
                            f"type {type(spec).__name__}")
        out.extend([PartitionSpec() if spec is None else spec] * len(tree_flatten(sub)[0]))
    return out


def _check_spec_axes(what, spec, manual):
    names = _names_in(spec)
    for n in names:
        if n not in manual:
            raise ValueError(f"shard_map {what} argument must refer to an axis marked as "
                             f"manual ({frozenset(manual)}), but:\n\n  {what} refers to "
                             f"{n!r}\n\nCheck the {what} values passed to shard_map.")
    if len(set(names)) != len(names):
        raise ValueError(f"shard_map {what} {spec} names a mesh axis more than once: each "
                         "mesh axis may split at most one dimension.")


def _rank_error(what, spec, fname, value_desc, aval):
    kind = "input" if what == "in_specs" else "output"
    hint = ("\n\nFor scalar values (rank 0), consider using an out_specs entry of `P()`, where "
            "`P = jax.sharding.PartitionSpec`." if what == "out_specs" and aval.ndim == 0
            else "")
    raise ValueError(f"shard_map applied to the function '{fname}' was given an {what} entry "
                     f"which is too long to be compatible with the corresponding {kind} value "
                     f"from the function:\n\n{what} is {spec} which has length {len(spec)}, "
                     f"but {value_desc} has shape {aval.str_short()}, which has rank "
                     f"{aval.ndim} (and {aval.ndim} < {len(spec)})\n\nEntries in {what} must "
                     f"be of length no greater than the number of axes in the corresponding "
                     f"{kind} value.{hint}")


def _arg_spec(x, mesh) -> PartitionSpec:
    sharding = getattr(x, "_sharding", None) if type(x) is not Tracer else None
    if isinstance(sharding, NamedSharding) and sharding.mesh == mesh:
        return sharding.spec
    return PartitionSpec()


def _full_spec(spec, ndim) -> PartitionSpec:
    return PartitionSpec(*(list(spec) + [None] * (ndim - len(spec))))


def _explicit_dims(spec, ndim, explicit) -> list:
    return [tuple(n for n in d if n in explicit) for d in spec_dims(spec, ndim)]


def _in_specs_for(in_specs, args, leaves, mesh, manual, fname) -> list:
    explicit = [n for n in manual if mesh.axis_types[mesh.axis_names.index(n)]
                == AxisType.Explicit]
    if in_specs is Infer or in_specs is None:
        if len(explicit) != len(manual):
            raise TypeError(f"shard_map in_specs argument must be a pytree of "
                            f"`jax.sharding.PartitionSpec` instances, but it was `None` when "
                            f"axis_names={frozenset(manual)} are of type AxisType.Auto")
        return [_arg_spec(x, mesh) for x in leaves]
    specs = _prefix_specs("in_specs", in_specs, args, len(leaves), fname)
    for x, spec in zip(leaves, specs):
        _check_spec_axes("in_specs", spec, manual)
        aval = get_aval(x)
        if len(spec) > aval.ndim:
            _rank_error("in_specs", spec, fname, "the passed argument", aval)
        for d, names in enumerate(spec_dims(spec, aval.ndim)):
            k = math.prod(mesh.shape[n] for n in names)
            if aval.shape[d] % k:
                raise ValueError(
                    f"shard_map applied to the function '{fname}' was given argument arrays "
                    f"with axis sizes that are not evenly divisible by the corresponding mesh "
                    f"axis sizes:\n\nThe mesh given has shape {mesh.axis_sizes} with "
                    f"corresponding axis names {mesh.axis_names}.\n\nthe passed argument of "
                    f"shape {aval.str_short()} corresponds to in_specs of value {spec}, which "
                    f"maps array axis {d} (of size {aval.shape[d]}) to mesh axes {names} (of "
                    f"total size {k}), but {k} does not evenly divide {aval.shape[d]}\n\nArray "
                    "arguments' axis sizes must be evenly divisible by the mesh axis or axes "
                    "indicated by the corresponding elements of the argument's in_spec")
        if explicit and not isinstance(x, Tracer):
            actual = _arg_spec(x, mesh)
            if _explicit_dims(spec, aval.ndim, explicit) != \
                    _explicit_dims(actual, aval.ndim, explicit):
                raise ValueError(
                    f"in_specs passed to shard_map: {spec} does not match the specs of the "
                    f"input: {_full_spec(actual, aval.ndim)} for arg: {aval.str_short()}. "
                    "`in_specs` is an optional argument so you "
                    "can omit specifying it and shard_map will infer the in_specs from the "
                    "arguments. If you want to reshard your inputs, you can use `jax.reshard` "
                    "on the arguments and then pass those args to shard_map.")
    return specs


def _stage_body(f, fname, in_tree, avals, in_specs, mesh, manual, out_specs, check_vma):
    """(closed per-device program taking the closed-over values first, those values, the
    outputs' tree, the outputs' specs)."""
    box: dict = {}

    def flat(*leaves):
        outs = f(*tree_unflatten(in_tree, list(leaves)))
        out_leaves, out_tree = tree_flatten(outs)
        specs = _prefix_specs("out_specs", out_specs, outs, len(out_leaves), fname)
        for o, spec in zip(out_leaves, specs):
            _check_spec_axes("out_specs", spec, manual)
            aval = get_aval(o)
            if len(spec) > aval.ndim:
                _rank_error("out_specs", spec, fname, f"{fname}(*args)", aval)
        box.update(out_tree=out_tree, specs=specs)
        return out_leaves

    with staging_axes(mesh, manual):
        jaxpr, consts = trace_to_jaxpr(flat, avals, fun_name=fname)
    closed = ClosedJaxpr(convert_constvars(jaxpr), [])
    if check_vma:
        in_vma = [()] * len(consts) + [set(_names_in(s)) for s in in_specs]
        for k, (vma, spec) in enumerate(zip(varying_axes(closed.jaxpr, in_vma), box["specs"])):
            missing = [n for n in manual if n in vma and n not in _names_in(spec)]
            if missing:
                raise ValueError(
                    f"shard_map applied to the function '{fname}' was given out_specs which "
                    f"require replication which can't be statically inferred given the mesh:"
                    f"\n\nThe mesh given has shape {mesh.axis_sizes} with corresponding axis "
                    f"names {mesh.axis_names}.\n\nout_specs is {spec} which implies that the "
                    f"corresponding output value (output {k}) is replicated across mesh axes "
                    f"{tuple(missing)}, but it varies over them\n\nCheck if these output "
                    "values are meant to be replicated over those mesh axes. If not, consider "
                    "revising the corresponding out_specs entries. If so, consider disabling "
                    "the check by passing the check_vma=False argument to `jax.shard_map`.")
    return closed, consts, box["out_tree"], tuple(box["specs"])


def shard_map(f=None, /, *, out_specs, in_specs=Infer, mesh=None, axis_names=frozenset(),
              check_vma=True):
    """Maps `f` over the devices of `mesh`: each device calls `f` on its blocks of the
    arguments (split as `in_specs` says), with collectives over the mesh's axis names; the
    outputs are assembled from the devices' blocks as `out_specs` says."""
    if f is None:
        return lambda g: shard_map(g, out_specs=out_specs, in_specs=in_specs, mesh=mesh,
                                   axis_names=axis_names, check_vma=check_vma)
    if not callable(f):
        raise TypeError(f"shard_map requires a callable for its first argument, but got {f} "
                        f"of type {type(f)}.")
    if mesh is not None and not isinstance(mesh, (Mesh, AbstractMesh)):
        raise TypeError(f"shard_map requires a `jax.sharding.Mesh` or "
                        f"`jax.sharding.AbstractMesh` instance for its second argument, but "
                        f"got {mesh} of type {type(mesh)}.")
    fname = _fun_name(f)
    cache: dict = {}

    @_wraps(f)
    @api_boundary
    def mapped(*args, **kwargs):
        if kwargs:
            raise TypeError(f"shard_map'd function {fname!r} takes positional arguments only "
                            f"(in_specs describe them), got keyword arguments {sorted(kwargs)}.")
        m = _mesh_for(mesh)
        manual = _manual_axes(m, axis_names)
        leaves, in_tree = tree_flatten(args)
        leaves = _canonical_leaves(leaves)
        specs = _in_specs_for(in_specs, args, leaves, m, manual, fname)
        avals = [local_aval(get_aval(x), s, m) for x, s in zip(leaves, specs)]
        key = (in_tree, tuple(avals), tuple(specs), m, manual)
        entry = cache.get(key)
        if entry is None:
            entry = _stage_body(f, fname, in_tree, avals, specs, m, manual, out_specs,
                                check_vma)
            if not any(isinstance(c, Tracer) for c in entry[1]):
                cache[key] = entry
        closed, consts, out_tree, leaf_out_specs = entry
        sharding_state.mesh_ops_staged = True   # (a jit staging this must look for it)
        outs = shard_map_p.bind(*consts, *leaves, jaxpr=closed, mesh=m,
                                in_specs=(PartitionSpec(),) * len(consts) + tuple(specs),
                                out_specs=leaf_out_specs, check_vma=bool(check_vma),
                                manual_axes=manual)
        return tree_unflatten(out_tree, outs)

    return mapped
