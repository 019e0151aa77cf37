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
import threading

import numpy as np

from corejax import core
from corejax._config_states import auto_pcast, remove_size_one_mesh_axis_from_type
from corejax._mesh_run import (assemble, blocks_of, global_shape, local_aval, participants,
                               run, staging_axes)
from corejax._traceback import api_boundary
from corejax._tree_traced import tree_flatten, tree_unflatten
from corejax.api import _canonical_leaves, _fun_name, _wraps
from corejax.compiler import registry
from corejax.core import ClosedJaxpr, Primitive, Tracer, get_aval
from corejax.sharding import (AbstractMesh, AxisType, DuplicateSpecError, Mesh, NamedSharding,
                              PartitionSpec, get_mesh, state as sharding_state)
from corejax.transforms import ad, batching
from corejax.transforms.ad import Zero, UndefinedPrimal, is_undefined_primal
from corejax.transforms.jit import batch_jaxpr, closed_call, jvp_jaxpr, memoized, stage
from corejax.transforms.staging import convert_constvars, trace_to_jaxpr

__all__ = ["shard_map", "shard_map_p", "Infer", "spec_dims", "varying_axes"]


class _Staging(threading.local):
    """(mesh, manual axes) of each shard_map whose per-device body is being traced on this
    thread, innermost last: a shard_map called there is nested in it."""

    def __init__(self):
        self.meshes: list = []


_staging = _Staging()


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


def varying_axes(jaxpr: core.Jaxpr, in_vma: list, *, ignore=frozenset(),
                 strict: bool = False) -> list:
    """Per output of `jaxpr`, the frozenset of named axes it may vary over, given its inputs'
    (constvars vary over none). Sub-programs of calls and control flow are looked into; a
    loop's carry is iterated to its fixed point. Axes in `ignore` (the mesh's size-one axes
    under remove_size_one_mesh_axis_from_type) are never counted. `strict` (auto_pcast off):
    an operation whose operands vary over different axes raises, as does a collective
    whose operand is invariant over its axes, instead of treating the invariant operands as
    varying (the implicit pvary)."""
    env: dict = {}

    def read(v):
        return frozenset() if type(v) is core.Literal else env.get(v, frozenset())

    for v, s in zip(jaxpr.invars, in_vma):
        env[v] = frozenset(s) - ignore
    for eqn in jaxpr.eqns:
        ins = [read(v) for v in eqn.invars]
        union = frozenset().union(*ins)
        name, p = eqn.primitive.name, eqn.params
        if name in _REDUCING or name in _VARYING:
            axes = frozenset(p["axes"]) - ignore
            # (the psum of a constant is folded to a product in JAX: no operand to cast)
            constant = all(type(v) is core.Literal for v in eqn.invars)
            if strict and not axes <= union and not constant:
                _invariant_operand_error(name, axes, union)
            outs = [union - axes if name in _REDUCING else union | axes]
        elif name == "axis_index":
            outs = [frozenset([p["axis_name"]]) - ignore]
        else:
            outs = _sub_program_vma(eqn, ins, ignore, strict)
            if outs is None:
                if strict and any(i != ins[0] for i in ins[1:]):
                    raise ValueError(
                        f"{name} combines values that vary over different manual mesh axes: "
                        f"{list(ins)}, and jax.config.auto_pcast is off, so none is cast to "
                        f"varying implicitly. Cast the invariant operands with "
                        f"lax.pcast(x, axis_names, to='varying'), turn auto_pcast on, or pass "
                        f"check_vma=False to shard_map.")
                outs = [union] * len(eqn.outvars)
        for v, s in zip(eqn.outvars, outs):
            env[v] = s
    return [read(v) for v in jaxpr.outvars]


def _invariant_operand_error(name, axes, vma):
    if name in _REDUCING:
        raise ValueError(f"{name} reduces a value that varies over the mesh axes {tuple(axes)} "
                         f"to one invariant over them, but its operand varies only over "
                         f"{set(vma) or '{}'}; with jax.config.auto_pcast off it is not cast to "
                         f"varying implicitly. Apply lax.pcast(x, {tuple(axes)}, "
                         f"to='varying') first, or pass check_vma=False to shard_map.")
    raise ValueError(f"the collective {name} over the mesh axes {tuple(axes)} needs an operand "
                     f"that varies over them, but it varies only over {set(vma) or '{}'}; with "
                     f"jax.config.auto_pcast off it is not cast to varying implicitly. Apply "
                     f"lax.pcast(x, {tuple(axes)}, to='varying') first, or pass "
                     f"check_vma=False to shard_map.")


def _sub_program_vma(eqn, ins, ignore, strict):
    """The outputs' varying axes of a call or control-flow equation, None for the others."""
    name, p = eqn.primitive.name, eqn.params
    inner = lambda jaxpr, vma: varying_axes(jaxpr, vma, ignore=ignore,  # noqa: E731
                                            strict=strict)
    param = registry.call_params.get(eqn.primitive)
    if param is not None:
        body = p[param]
        return inner(body.jaxpr, ins[len(ins) - len(body.jaxpr.invars):])
    if name == "shard_map":
        return [frozenset().union(*ins)] * len(eqn.outvars)
    if name == "cond":
        index, ops = ins[0], ins[1:]
        outs = [inner(b.jaxpr, ops) for b in p["branches"]]
        return [index.union(*col) for col in zip(*outs)]
    if name == "scan":
        nc, nk = p["num_consts"], p["num_carry"]
        consts, carry, xs = ins[:nc], list(ins[nc:nc + nk]), ins[nc + nk:]
        while True:
            outs = inner(p["jaxpr"].jaxpr, consts + carry + xs)
            new = [c | o for c, o in zip(carry, outs[:nk])]
            if new == carry:
                return outs
            carry = new
    if name == "while":
        cn, bn = p["cond_nconsts"], p["body_nconsts"]
        cconsts, bconsts, carry = ins[:cn], ins[cn:cn + bn], list(ins[cn + bn:])
        while True:
            pred = inner(p["cond_jaxpr"].jaxpr, cconsts + carry)[0]
            outs = inner(p["body_jaxpr"].jaxpr, bconsts + carry)
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


def _in_specs_for(in_specs, args, leaves, mesh, manual, fname, smap=False) -> list:
    explicit = [n for n in manual if mesh.axis_types[mesh.axis_names.index(n)]
                == AxisType.Explicit]
    if in_specs is Infer or in_specs is None:
        if len(explicit) != len(manual):
            if smap:
                raise TypeError(f"smap was given no in_axes, which it infers from the "
                                f"arguments' shardings only over an Explicit mesh axis, but "
                                f"axis_name={manual[0]!r} is of type AxisType.Auto: pass "
                                f"in_axes.")
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
        _staging.meshes.append((mesh, manual))
        try:
            jaxpr, consts = trace_to_jaxpr(flat, avals, fun_name=fname)
        finally:
            _staging.meshes.pop()
    closed = ClosedJaxpr(convert_constvars(jaxpr), [])
    if check_vma:
        ignore = frozenset(n for n in mesh.axis_names if mesh.shape[n] == 1) \
            if remove_size_one_mesh_axis_from_type.value else frozenset()
        in_vma = [()] * len(consts) + [set(_names_in(s)) for s in in_specs]
        vmas = varying_axes(closed.jaxpr, in_vma, ignore=ignore, strict=not auto_pcast.value)
        for k, (vma, spec) in enumerate(zip(vmas, box["specs"])):
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
    return mapped_over_mesh(f, out_specs=out_specs, in_specs=in_specs, mesh=mesh,
                            axis_names=axis_names, check_vma=check_vma)


def mapped_over_mesh(f, *, out_specs, in_specs, mesh, axis_names, check_vma, smap=False):
    """shard_map's (and smap's) mapped function; `smap` only words its errors as smap's."""
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
        outer = next((axes for sm, axes in reversed(_staging.meshes) if sm == m), None)
        if outer is not None and not axis_names:
            manual = tuple(n for n in manual if n not in outer)
        leaves, in_tree = tree_flatten(args)
        leaves = _canonical_leaves(leaves)
        specs = _in_specs_for(in_specs, args, leaves, m, manual, fname, smap)
        avals = [local_aval(get_aval(x), s, m) for x, s in zip(leaves, specs)]
        if outer is not None:
            return _nested(f, fname, in_tree, leaves, avals, specs, m, manual, outer,
                           out_specs, check_vma)
        key = (in_tree, tuple(avals), tuple(specs), m, manual, auto_pcast.value,
               remove_size_one_mesh_axis_from_type.value)
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


# --- a shard_map nested in another over the same mesh -----------------------------------------

def _nested(f, fname, in_tree, leaves, avals, specs, mesh, manual, outer, out_specs,
            check_vma):
    """A shard_map called inside the body of another over the same mesh, manual over an
    axis the outer one left Auto. Its body is staged (and its vma checked) as any shard_map
    body, then `f` runs inside the outer body's per-device program as a named vmap over
    that axis: the arguments' blocks along it stacked on a batch axis, its collectives over
    it reductions over that batch axis (so `f` is traced twice). The values are those of a
    nested shard_map; the outer program, not the devices along the inner axis, computes
    them, so the result is split only as the outer shard_map's out_specs say."""
    again = [n for n in manual if n in outer]
    if again:
        raise DuplicateSpecError(f"shard_map over {again[0]!r} is nested in a shard_map that "
                                 f"is already manual over {again[0]!r}: a mesh axis can be "
                                 "mapped over once.")
    if len(manual) != 1:
        raise NotImplementedError(f"a shard_map nested in another runs its body as a named "
                                  f"vmap over one mesh axis; it was given {manual}: nest one "
                                  "shard_map (or smap) per axis.")
    (name,), size = manual, mesh.shape[manual[0]]
    _, _, out_tree, leaf_out_specs = _stage_body(f, fname, in_tree, avals, specs, mesh, manual,
                                                 out_specs, check_vma)
    from corejax.lax import structural
    args, dims = [], []
    for x, spec in zip(leaves, specs):
        d = _dim_split_over(spec, name)
        if d is not None:
            shape = get_aval(x).shape
            x = structural.reshape(x, shape[:d] + (size, shape[d] // size) + shape[d + 1:])
        args.append(x)
        dims.append(d)
    outs, out_dims = batching.vmap_flat(
        lambda *xs: tree_flatten(f(*tree_unflatten(in_tree, list(xs))))[0], size, dims,
        args=args, axis_name=name)
    result = []
    for o, b, spec in zip(outs, out_dims, leaf_out_specs):
        d = _dim_split_over(spec, name)
        if d is None:   # a replicated output: the first device's block
            result.append(o if b is None else structural.index_in_dim(o, 0, b, keepdims=False))
            continue
        if b is None:   # the same block on every device along the axis
            b = 0
            o = structural.broadcast_in_dim(o, (size,) + get_aval(o).shape,
                                            tuple(range(1, get_aval(o).ndim + 1)))
        o = batching.moveaxis(o, b, d)
        shape = get_aval(o).shape
        result.append(structural.reshape(o, shape[:d] + (shape[d] * shape[d + 1],)
                                         + shape[d + 2:]))
    return tree_unflatten(out_tree, result)


def _dim_split_over(spec, name):
    """The dimension `spec` splits over mesh axis `name`, None if none."""
    return next((d for d, names in enumerate(spec_dims(spec, len(spec))) if name in names),
                None)
