"""Gradient checkpointing (rematerialization): `checkpoint` / `remat`, the `checkpoint_policies`
that choose which intermediate values the backward pass keeps, `checkpoint_name`, and
`print_saved_residuals`.

`checkpoint(f)` stages `f` and binds `checkpoint_p` with its Jaxpr. The primitive evaluates
its body; what makes it a checkpoint is its partial-evaluation rule, which is where
`linearize`, `vjp` and `grad` decide what the backward pass receives. Without a checkpoint, every
intermediate of the forward pass that the linear (backward) part reads is a residual. For a
checkpoint equation, only the residuals that the policy declares saveable are kept; the linear
part gets the checkpoint's inputs instead and recomputes the rest from them (and from the saved
values) when it runs, inside a `checkpoint_p` equation of its own (`differentiated=True`).

A policy is called as `policy(primitive, *input_avals, **params)` for the forward equation
that produced a residual and answers whether to save its output (True / `Saveable` /
`Offloadable`) or recompute it (False / `Recompute`). It sees the equations of the checkpointed
function's own level: a residual produced inside a nested call (jit, scan, cond) is judged by
that call's primitive.

Under `jit`, the compiler inlines checkpoint bodies like any call, and its common-subexpression
pass may then merge the backward pass's recomputation with the forward values; the result is the
same, the memory saving is not guaranteed there (`prevent_cse` is recorded, not enforced).
"""
from __future__ import annotations

import functools
from typing import Callable

import numpy as np

from corejax import core
from corejax.compiler import registry
from corejax.core import ClosedJaxpr, Primitive, Tracer, get_aval
from corejax.transforms import ad, batching
from corejax.transforms.ad import Zero
from corejax.transforms.jit import (batch_jaxpr, closed_call, jvp_jaxpr, memoized,
                                   transpose_jaxpr)
from corejax.transforms.staging import convert_constvars, trace_to_jaxpr
from corejax._tree_traced import tree_flatten, tree_flatten_with_path, tree_unflatten
from corejax._tree_keys import keystr

__all__ = ["checkpoint", "remat", "checkpoint_name", "checkpoint_policies",
           "print_saved_residuals", "saved_residuals", "Saveable", "Recompute", "Offloadable",
           "checkpoint_p", "name_p"]


# --- policies --------------------------------------------------------------------------------

class _Decision:
    def __init__(self, name: str, save: bool):
        self._name, self._save = name, save

    def __bool__(self):
        return self._save

    def __repr__(self):
        return self._name


Saveable = _Decision("Saveable", True)
Recompute = _Decision("Recompute", False)


class Offloadable:
    """Save the value in another memory space (`src` -> `dst`). corejax's device memory is the
    host's on CPU, so an offloaded residual is simply saved."""

    def __init__(self, src: str, dst: str):
        self.src, self.dst = src, dst

    def __bool__(self):
        return True

    def __repr__(self):
        return f"Offloadable(src={self.src!r}, dst={self.dst!r})"


def _is_dot(prim) -> bool:
    return prim.name == "dot_general"


def _has_batch_dims(params) -> bool:
    (_, (lhs_batch, rhs_batch)) = params["dimension_numbers"]
    return bool(lhs_batch) or bool(rhs_batch)


def _name_of(prim, params):
    return params["name"] if prim is name_p else None


class checkpoint_policies:
    """The standard policies (JAX's `jax.checkpoint_policies`)."""

    @staticmethod
    def everything_saveable(prim, *avals, **params):
        return True

    @staticmethod
    def nothing_saveable(prim, *avals, **params):
        return False

    @staticmethod
    def dots_saveable(prim, *avals, **params):
        return _is_dot(prim)

    checkpoint_dots = dots_saveable

    @staticmethod
    def dots_with_no_batch_dims_saveable(prim, *avals, **params):
        return _is_dot(prim) and not _has_batch_dims(params)

    checkpoint_dots_with_no_batch_dims = dots_with_no_batch_dims_saveable

    @staticmethod
    def save_only_these_names(*names_which_can_be_saved):
        names = set(names_which_can_be_saved)
        return lambda prim, *_, **params: _name_of(prim, params) in names

    @staticmethod
    def save_any_names_but_these(*names_not_to_save):
        names = set(names_not_to_save)
        return lambda prim, *_, **params: (prim is name_p and params["name"] not in names)

    @staticmethod
    def save_anything_except_these_names(*names_not_to_save):
        names = set(names_not_to_save)
        return lambda prim, *_, **params: _name_of(prim, params) not in names

    @staticmethod
    def save_from_both_policies(policy_1, policy_2):
        def policy(prim, *avals, **params):
            return bool(policy_1(prim, *avals, **params)) or bool(
                policy_2(prim, *avals, **params))
        return policy

    @staticmethod
    def save_and_offload_only_these_names(*, names_which_can_be_saved,
                                          names_which_can_be_offloaded, offload_src,
                                          offload_dst):
        saved, offloaded = set(names_which_can_be_saved), set(names_which_can_be_offloaded)
        overlap = saved & offloaded
        if overlap:
            raise ValueError("The names should be exclusive and should not intersect in "
                             "`names_which_can_be_saved` and `names_which_can_be_offloaded`. "
                             f"Got names_which_can_be_saved={saved}, "
                             f"names_which_can_be_offloaded={offloaded}")

        def policy(prim, *_, **params):
            name = _name_of(prim, params)
            if name in saved:
                return Saveable
            if name in offloaded:
                return Offloadable(offload_src, offload_dst)
            return Recompute
        return policy

    @staticmethod
    def offload_dot_with_no_batch_dims(offload_src, offload_dst):
        def policy(prim, *_, **params):
            if _is_dot(prim) and not _has_batch_dims(params):
                return Offloadable(offload_src, offload_dst)
            return Recompute
        return policy


# --- checkpoint_name -------------------------------------------------------------------------

name_p = Primitive("name")
name_p.def_impl(lambda x, *, name: x)
name_p.def_abstract_eval(lambda aval, *, name: aval)
name_p.weak_type_rule = lambda x, *, name: get_aval(x).weak_type
ad.primitive_jvps[name_p] = lambda primals, tangents, *, name: (
    name_p.bind(primals[0], name=name), tangents[0])
ad.primitive_transposes[name_p] = lambda ct, x, *, name: [ct]
batching.primitive_batchers[name_p] = lambda vals, dims, *, name: (
    name_p.bind(vals[0], name=name), dims[0])
registry.def_elementwise(name_p, lambda ctx, x, *, name: x)


def checkpoint_name(x, name: str):
    """`x`, with its value named `name` for the policies (save_only_these_names, ...)."""
    leaves, tree = tree_flatten(x)
    return tree_unflatten(tree, [name_p.bind(leaf, name=name) for leaf in leaves])


# --- the primitive ---------------------------------------------------------------------------

checkpoint_p = Primitive("checkpoint")
checkpoint_p.multiple_results = True
registry.def_call(checkpoint_p, "jaxpr")


def _checkpoint_impl(*args, jaxpr: ClosedJaxpr, **_):
    return [core.full_lower(o) for o in closed_call(jaxpr, *args)]


checkpoint_p.def_impl(_checkpoint_impl)
checkpoint_p.def_abstract_eval(lambda *avals, jaxpr, **_: jaxpr.out_avals)
checkpoint_p.weak_type_rule = lambda *args, jaxpr, **_: [a.weak_type for a in jaxpr.out_avals]


def _checkpoint_jvp(primals, tangents, *, jaxpr, **params):
    nonzeros = [type(t) is not Zero for t in tangents]
    new = memoized("jvp", jaxpr, tuple(nonzeros), lambda: jvp_jaxpr(jaxpr, nonzeros))
    outs = checkpoint_p.bind(*primals, *[t for t in tangents if type(t) is not Zero],
                             jaxpr=new, **params)
    n = len(jaxpr.out_avals)
    return outs[:n], outs[n:]


def _checkpoint_batch(axis_size, vals, dims, *, jaxpr, **params):
    new, out_dims = memoized("vmap", jaxpr, (axis_size, tuple(dims)),
                             lambda: batch_jaxpr(jaxpr, axis_size, dims, instantiate=False))
    return checkpoint_p.bind(*vals, jaxpr=new, **params), list(out_dims)


_checkpoint_batch.needs_axis_size = True


def _checkpoint_transpose(cts, *args, jaxpr, **params):
    # a checkpoint of the transposed body: its non-linear equations (the recomputation) run
    # forwards inside it, then the linear ones transposed
    linear = [ad.is_undefined_primal(a) for a in args]
    cts = [ad.instantiate_zeros(ct) for ct in cts]
    new = memoized("transpose", jaxpr, tuple(linear), lambda: transpose_jaxpr(jaxpr, linear))
    res = [a for a in args if not ad.is_undefined_primal(a)]
    outs = iter(checkpoint_p.bind(*res, *cts, jaxpr=new, **params))
    return [next(outs) if lin else None for lin in linear]


ad.primitive_jvps[checkpoint_p] = _checkpoint_jvp
batching.primitive_batchers[checkpoint_p] = _checkpoint_batch
ad.primitive_transposes[checkpoint_p] = _checkpoint_transpose


# --- partial evaluation: what the backward pass keeps ----------------------------------------

def _saves(policy, eqn) -> bool:
    if policy is None:
        return False
    return bool(policy(eqn.primitive, *[v.aval for v in eqn.invars], **eqn.params))


def _live_eqns(jaxpr: core.Jaxpr, targets, available) -> list:
    """The equations of `jaxpr` needed to compute the Vars `targets` when the Vars in
    `available` are given, and the effectful ones (debug callbacks), in program order."""
    needed = {v for v in targets if type(v) is core.Var and v not in available}
    kept = []
    for eqn in reversed(jaxpr.eqns):
        if any(v in needed for v in eqn.outvars) or eqn.primitive in registry.effectful:
            kept.append(eqn)
            needed.update(v for v in eqn.invars if type(v) is core.Var and v not in available)
    return kept[::-1]


def _remat_plan(jaxpr: ClosedJaxpr, unknowns: tuple, policy):
    """Splits the checkpoint body `jaxpr` for known / unknown inputs `unknowns`.

    Without a checkpoint, the residuals are the forward values the unknown (linear) side reads.
    Here each is saved if the policy saves the equation that produced it; otherwise that
    equation is recomputed on the unknown side, and its own inputs are in turn saved or
    recomputed by the same rule, back to the checkpoint's inputs.

    Returns `(known, recompute, out_unknowns, num_saved, used_known)`: `known` maps the known
    inputs to `(*known outputs, *saved values)`; `recompute` maps `(*saved values, *used known
    inputs, *unknown inputs)` to the unknown outputs; `used_known` masks the known inputs."""
    known, unknown, out_uks, num_res = ad.partial_eval_jaxpr(jaxpr, list(unknowns))
    kj = known.jaxpr
    n_kout = len(kj.outvars) - num_res
    res_atoms = kj.outvars[n_kout:]
    index = {v: (i, eqn) for i, eqn in enumerate(kj.eqns) for v in eqn.outvars}
    given = set(kj.invars) | set(kj.constvars)
    saved, redo = set(), set()
    stack = [v for v in res_atoms if type(v) is core.Var]
    while stack:
        v = stack.pop()
        if v in given or v in saved or v not in index:
            continue
        i, eqn = index[v]
        if i in redo:
            continue
        if _saves(policy, eqn):
            saved.add(v)
        else:
            redo.add(i)
            stack.extend(a for a in eqn.invars if type(a) is core.Var)
    saved = sorted(saved, key=lambda v: (index[v][0], index[v][1].outvars.index(v)))
    # the known side: its outputs and the saved values, nothing else
    known_outs = [*kj.outvars[:n_kout], *saved]
    known_jaxpr = core.Jaxpr(kj.constvars, kj.invars, _live_eqns(kj, known_outs, given),
                             known_outs)
    # the unknown side: the recomputed equations (an output that is also saved gets a fresh
    # Var: the saved value is an input), then the original unknown program
    saved_set = set(saved)
    recompute_eqns = [
        eqn._replace(outvars=[core.Var(v.aval) if v in saved_set else v for v in eqn.outvars])
        for i, eqn in enumerate(kj.eqns) if i in redo]
    uj = unknown.jaxpr
    env = dict(zip(uj.invars[:num_res], res_atoms))
    sub = lambda a: env.get(a, a) if type(a) is core.Var else a  # noqa: E731
    unknown_eqns = [e._replace(invars=[sub(a) for a in e.invars]) for e in uj.eqns]
    outvars = [sub(a) for a in uj.outvars]
    used = {a for e in recompute_eqns + unknown_eqns for a in e.invars if type(a) is core.Var}
    used.update(a for a in outvars if type(a) is core.Var)
    used_known = [v in used for v in kj.invars]
    invars = [*saved, *[v for v, u in zip(kj.invars, used_known) if u], *uj.invars[num_res:]]
    recompute = core.Jaxpr(kj.constvars, invars, recompute_eqns + unknown_eqns, outvars)
    return (ClosedJaxpr(known_jaxpr, known.consts), ClosedJaxpr(recompute, known.consts),
            out_uks, len(saved), used_known)


def _checkpoint_partial_eval(trace, tracers, *, jaxpr, prevent_cse, differentiated, policy):
    unknowns = tuple(not t.pval.is_known for t in tracers)
    known, recompute, out_uks, num_saved, used_known = memoized(
        "remat_partial_eval", jaxpr, (unknowns, policy),
        lambda: _remat_plan(jaxpr, unknowns, policy))
    known_args = [t.pval.const for t in tracers if t.pval.is_known]
    known_outs = core.eval_jaxpr(known.jaxpr, known.consts, *known_args)
    n_kout = len(known_outs) - num_saved
    res = [*known_outs[n_kout:], *[a for a, u in zip(known_args, used_known) if u]]
    res_tracers = [trace.instantiate_const(trace.pure(r)) for r in res]
    unk_tracers = [t for t in tracers if not t.pval.is_known]
    outs_unknown = trace.default_process(
        checkpoint_p, res_tracers + unk_tracers,
        dict(jaxpr=recompute, prevent_cse=prevent_cse, differentiated=True, policy=policy))
    known_iter, unknown_iter = iter(known_outs[:n_kout]), iter(outs_unknown)
    return [next(unknown_iter) if u else trace.pure(next(known_iter)) for u in out_uks]


ad.partial_eval_rules[checkpoint_p] = _checkpoint_partial_eval


# --- the API ---------------------------------------------------------------------------------

def checkpoint(fun: Callable, *, prevent_cse: bool = True, policy: Callable | None = None,
               static_argnums: int | tuple = (), static_argnames=()) -> Callable:
    """`fun` with gradient checkpointing: differentiating it keeps only its inputs and the
    values `policy` saves (none by default) for the backward pass, which recomputes the rest.
    Values and derivatives are those of `fun`."""
    if isinstance(static_argnums, int):
        static_argnums = (static_argnums,)
    static_argnums = tuple(static_argnums)
    if isinstance(static_argnames, str):
        static_argnames = (static_argnames,)
    static_argnames = tuple(static_argnames)

    @functools.wraps(fun, updated=())
    def fun_remat(*args, **kwargs):
        n = len(args)
        for i in static_argnums:
            if not -n <= i < n:
                raise ValueError(f"jax.checkpoint static_argnums {static_argnums} out of range "
                                 f"for a call with {n} positional arguments")
        static_pos = {i % n for i in static_argnums}
        dyn_pos = [i for i in range(n) if i not in static_pos]
        dyn_kw = [k for k in kwargs if k not in static_argnames]
        leaves, tree = tree_flatten(([args[i] for i in dyn_pos], {k: kwargs[k] for k in dyn_kw}))
        if not any(isinstance(x, Tracer) for x in leaves):
            return fun(*args, **kwargs)  # no transformation to checkpoint for

        out_store = {}

        def flat(*xs):
            dyn_args, dyn_kwargs = tree_unflatten(tree, xs)
            full = list(args)
            for i, v in zip(dyn_pos, dyn_args):
                full[i] = v
            out = fun(*full, **{**kwargs, **dyn_kwargs})
            out_leaves, out_store["tree"] = tree_flatten(out)
            return out_leaves

        jaxpr, consts = trace_to_jaxpr(flat, [get_aval(x) for x in leaves],
                                       fun_name=getattr(fun, "__name__", "fun"))
        if any(isinstance(c, Tracer) for c in consts):
            # closed-over values of enclosing transformations become explicit operands
            closed, operands = ClosedJaxpr(convert_constvars(jaxpr), []), [*consts, *leaves]
        else:
            closed, operands = ClosedJaxpr(jaxpr, consts), leaves
        outs = checkpoint_p.bind(*operands, jaxpr=closed, prevent_cse=prevent_cse,
                                 differentiated=False, policy=policy)
        return tree_unflatten(out_store["tree"], outs)

    from corejax.config import config
    fun_remat._corejax_remat3 = bool(config.jax_remat3)   # (read when checkpoint is applied)
    return fun_remat


remat = checkpoint


def saved_residuals(f: Callable, *args, **kwargs) -> list:
    """`[(ShapedArray, description)]`: the residuals `vjp(f, *args)` keeps for the backward
    pass, with where each comes from ("from the argument x", "output of cos from file:line",
    "named 'z' from ...")."""
    from corejax.api import _arg_names
    leaves, tree = tree_flatten((args, kwargs))
    if getattr(f, "_corejax_remat3", False):
        # (as JAX with remat3: a checkpointed function's arguments by position)
        names = [f"args[{i}]{keystr(p)}" for i, a in enumerate(args)
                 for p, _ in tree_flatten_with_path(a)[0]]
        names += [f"kwargs[{k!r}]{keystr(p)}" for k, v in kwargs.items()
                  for p, _ in tree_flatten_with_path(v)[0]]
    else:
        names = _arg_names(f, args, kwargs, ())

    def staged(*xs):
        a, kw = tree_unflatten(tree, xs)
        floats = [i for i, x in enumerate(xs)
                  if np.issubdtype(get_aval(x).dtype, np.inexact)]

        def g(*fl):
            full = list(xs)
            for i, v in zip(floats, fl):
                full[i] = v
            a2, kw2 = tree_unflatten(tree, full)
            return f(*a2, **kw2)

        _, pullback = ad.vjp_flat(lambda *fl: tree_flatten(g(*fl))[0],
                                  [xs[i] for i in floats])
        return list(pullback.residuals)

    jaxpr, _ = trace_to_jaxpr(staged, [get_aval(x) for x in leaves], names)
    producer = {v: eqn for eqn in jaxpr.eqns for v in eqn.outvars}
    order = {v: i for i, eqn in enumerate(jaxpr.eqns) for v in eqn.outvars}
    out = []
    # as JAX lists them: the saved arguments in argument order, then the computed residuals in
    # the order the forward pass produces them (each listed once)
    seen, outvars = set(), []
    for v in jaxpr.outvars:
        if type(v) is core.Literal or v not in seen:
            outvars.append(v)
            if type(v) is not core.Literal:
                seen.add(v)
    outvars.sort(key=lambda v: (0, jaxpr.invars.index(v)) if v in jaxpr.invars and
                 type(v) is not core.Literal else (1, order.get(v, -1)))
    for v in outvars:
        aval = v.aval
        if type(v) is core.Literal or v in jaxpr.constvars:
            out.append((aval, "from a constant"))
        elif v in jaxpr.invars:
            i = jaxpr.invars.index(v)
            out.append((aval, f"from the argument {names[i] if i < len(names) else i}"))
        else:
            eqn = producer[v]
            where = f" from {eqn.source_info}" if eqn.source_info else ""
            what = (f"named {eqn.params['name']!r}" if eqn.primitive is name_p
                    else f"output of {eqn.primitive.name}")
            out.append((aval, what + where))
    return out


def print_saved_residuals(f: Callable, *args, **kwargs) -> None:
    """Prints, one per line, the residuals `vjp(f, *args)` keeps (see `saved_residuals`)."""
    for aval, description in saved_residuals(f, *args, **kwargs):
        print(f"{aval.str_short()} {description}")
