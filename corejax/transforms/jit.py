"""The `jit` primitive: a call of a staged Jaxpr, with every transformation rule for it.

`jit(f)` stages `f` once per signature to a Jaxpr and binds `jit_p` with it. Eagerly, the
compiler runs the Jaxpr; under other transformations the rules below transform the Jaxpr
itself, so `grad(jit(f))`, `vmap(jit(f))` and `jit(jit(f))` keep the inner call compiled.
"""
from __future__ import annotations

import weakref

from corejax import core
from corejax.compiler import registry
from corejax.core import ClosedJaxpr, Primitive
from corejax.transforms import ad, batching
from corejax.transforms.ad import UndefinedPrimal, Zero, is_undefined_primal
from corejax.transforms.staging import trace_to_jaxpr

__all__ = ["jit_p", "closed_call", "jvp_jaxpr", "batch_jaxpr", "transpose_jaxpr"]


jit_p = Primitive("jit")
jit_p.multiple_results = True


def _has_mesh_ops(jaxpr: core.Jaxpr) -> bool:
    """Whether `jaxpr` binds a mesh-placing primitive (registry.mesh_placing: shard_map,
    reshard), directly or in a call it inlines (asked only once a process has staged one)."""
    for eqn in jaxpr.eqns:
        if eqn.primitive in registry.mesh_placing:
            return True
        body = registry.call_params.get(eqn.primitive)
        if body is not None and _has_mesh_ops(eqn.params[body].jaxpr):
            return True
    return False


def _jit_impl(*args, jaxpr: ClosedJaxpr, name: str, backend: str | None = None, **_):
    from corejax.array import backend_for, operands_for
    from corejax.compiler import compile_jaxpr
    from corejax.sharding import state
    if state.mesh_ops_staged and _has_mesh_ops(jaxpr.jaxpr):
        # (a jit call under jvp / vjp, evaluated: its shard_map's results are split over the
        # mesh, as a jitted shard_map's are when called directly)
        return core.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *args)
    backend = backend_for(args, backend)
    return compile_jaxpr(jaxpr, backend, name=name)(*operands_for(backend, args))


def _jit_abstract(*avals, jaxpr: ClosedJaxpr, **_):
    return jaxpr.out_avals


jit_p.def_impl(_jit_impl)
jit_p.def_abstract_eval(_jit_abstract)
jit_p.weak_type_rule = lambda *args, jaxpr, **_: [a.weak_type for a in jaxpr.out_avals]
registry.def_call(jit_p, "jaxpr")


def stage(fun, in_avals, name="fun") -> ClosedJaxpr:
    """Stages `fun` (flat list in, flat list out) to a ClosedJaxpr with concrete consts only."""
    jaxpr, consts = trace_to_jaxpr(fun, in_avals, fun_name=name)
    if any(isinstance(c, core.Tracer) for c in consts):
        raise core.UnexpectedTracerError("A staged transformation rule closed over a tracer.")
    return ClosedJaxpr(jaxpr, consts)


_derived = weakref.WeakKeyDictionary()


def memoized(kind: str, closed: ClosedJaxpr, key, build):
    """Derived Jaxprs (jvp, transpose, batched) are built once per source Jaxpr and key, so
    repeated transformed calls reuse one compiled program."""
    table = _derived.setdefault(closed, {})
    k = (kind, key)
    if k not in table:
        table[k] = build()
    return table[k]


def closed_call(closed: ClosedJaxpr, *args):
    return core.eval_jaxpr(closed.jaxpr, closed.consts, *args)


# --- jvp -------------------------------------------------------------------------------------

def jvp_jaxpr(closed: ClosedJaxpr, nonzeros: list[bool]) -> ClosedJaxpr:
    """A Jaxpr of `(primals, nonzero tangents) -> (outputs, output tangents)`."""
    n = len(closed.in_avals)

    def fun(*args):
        primals, nz_tangents = args[:n], iter(args[n:])
        tangents = [next(nz_tangents) if nz else Zero(a.to_tangent_aval())
                    for nz, a in zip(nonzeros, closed.in_avals)]
        outs, touts = ad.jvp_flat(lambda *xs: closed_call(closed, *xs), primals, tangents)
        return [*outs, *touts]

    tangent_avals = [a.to_tangent_aval() for a, nz in zip(closed.in_avals, nonzeros) if nz]
    return stage(fun, [*closed.in_avals, *tangent_avals], "jvp")


def _jit_jvp(primals, tangents, jaxpr, name, **params):
    nonzeros = [type(t) is not Zero for t in tangents]
    new = memoized("jvp", jaxpr, tuple(nonzeros), lambda: jvp_jaxpr(jaxpr, nonzeros))
    nz_tangents = [t for t in tangents if type(t) is not Zero]
    outs = jit_p.bind(*primals, *nz_tangents, jaxpr=new, name=f"jvp({name})", **params)
    m = len(jaxpr.out_avals)
    return outs[:m], outs[m:]


ad.primitive_jvps[jit_p] = _jit_jvp


# --- partial evaluation ----------------------------------------------------------------------

def _jit_partial_eval(trace, tracers, jaxpr, name, **params):
    unknowns = [not t.pval.is_known for t in tracers]
    known, unknown, out_unknowns, num_res = memoized(
        "partial_eval", jaxpr, tuple(unknowns), lambda: ad.partial_eval_jaxpr(jaxpr, unknowns))
    known_args = [t.pval.const for t in tracers if t.pval.is_known]
    known_outs = jit_p.bind(*known_args, jaxpr=known, name=name, **params)
    n_known_out = len(known_outs) - num_res
    residuals = known_outs[n_known_out:]
    res_tracers = [trace.instantiate_const(trace.pure(r)) for r in residuals]
    unk_tracers = [t for t in tracers if not t.pval.is_known]
    outs_unknown = trace.default_process(jit_p, res_tracers + unk_tracers,
                                         dict(jaxpr=unknown, name=name, **params))
    known_iter, unknown_iter = iter(known_outs[:n_known_out]), iter(outs_unknown)
    return [next(unknown_iter) if u else trace.pure(next(known_iter)) for u in out_unknowns]


ad.partial_eval_rules[jit_p] = _jit_partial_eval


# --- transpose -------------------------------------------------------------------------------

def transpose_jaxpr(closed: ClosedJaxpr, linear: list[bool]) -> ClosedJaxpr:
    """A Jaxpr of `(non-linear inputs, output cotangents) -> cotangents of linear inputs`."""
    in_avals = closed.in_avals
    res_avals = [a for a, l in zip(in_avals, linear) if not l]

    def fun(*args):
        res, cts = iter(args[:len(res_avals)]), args[len(res_avals):]
        full = [UndefinedPrimal(a) if l else next(res) for a, l in zip(in_avals, linear)]
        cts_in = ad.backward_pass(closed.jaxpr, closed.consts, full, list(cts))
        return [ad.instantiate_zeros(ct) for ct, l in zip(cts_in, linear) if l]

    return stage(fun, [*res_avals, *closed.out_avals], "transpose")


def _jit_transpose(cts, *args, jaxpr, name, **params):
    linear = [is_undefined_primal(a) for a in args]
    cts = [ad.instantiate_zeros(ct) for ct in cts]
    new = memoized("transpose", jaxpr, tuple(linear), lambda: transpose_jaxpr(jaxpr, linear))
    res = [a for a in args if not is_undefined_primal(a)]
    outs = iter(jit_p.bind(*res, *cts, jaxpr=new, name=f"transpose({name})", **params))
    return [next(outs) if l else None for l in linear]


ad.primitive_transposes[jit_p] = _jit_transpose


# --- batching --------------------------------------------------------------------------------

def batch_jaxpr(closed: ClosedJaxpr, axis_size: int, in_dims, instantiate: bool = True):
    """A Jaxpr of the batched computation. With `instantiate`, every output is batched along
    axis 0 and the Jaxpr is returned; otherwise an output that does not depend on a batched
    input stays unbatched and `(jaxpr, out_dims)` is returned (out_dims: 0 or None each)."""
    in_avals = []
    for a, d in zip(closed.in_avals, in_dims):
        if d is None:
            in_avals.append(a)
        else:
            shape = list(a.shape)
            shape.insert(d, axis_size)
            in_avals.append(a.update(shape=tuple(shape)))
    out_dims = []

    def fun(*args):
        outs, dims = batching.vmap_flat(lambda *xs: closed_call(closed, *xs), axis_size,
                                        in_dims, args=args)
        out_dims[:] = [0 if instantiate or d is not None else None for d in dims]
        return [o if d is None and not instantiate else
                batching.bdim_at_front(o, d, axis_size) for o, d in zip(outs, dims)]

    staged = stage(fun, in_avals, "vmap")
    return staged if instantiate else (staged, tuple(out_dims))


def _jit_batch(axis_size, vals, dims, jaxpr, name, **params):
    new, out_dims = memoized("vmap", jaxpr, (axis_size, tuple(dims)),
                             lambda: batch_jaxpr(jaxpr, axis_size, dims, instantiate=False))
    outs = jit_p.bind(*vals, jaxpr=new, name=f"vmap({name})", **params)
    return outs, list(out_dims)


_jit_batch.needs_axis_size = True
batching.primitive_batchers[jit_p] = _jit_batch
