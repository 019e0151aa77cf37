"""Structured control flow: cond, switch, while_loop, fori_loop, scan, map, associative_scan.

Three primitives carry sub-jaxprs, each followed by all of its rules:
- `cond_p(index, *operands, branches)`: runs `branches[index]` (index clamped).
- `while_p(*cond_consts, *body_consts, *carry, cond_jaxpr, body_jaxpr, cond_nconsts,
  body_nconsts)`: iterates the body while the cond jaxpr returns True.
- `scan_p(*consts, *carry, *xs, jaxpr, length, reverse, num_consts, num_carry)`: the body maps
  `(consts, carry, x) -> (carry, y)`; returns the final carry and the stacked ys.

The user functions are staged to jaxprs once; values they close over (tracers of enclosing
transformations) are passed as explicit leading operands, so every rule sees them.

Reverse mode follows JAX: the partial-evaluation rules split a loop into a known loop (which
also emits the residuals the tangent computation needs, stacked per iteration for scan) and an
unknown, linear loop; transposing that linear scan is a scan in the other direction.

No compiled lowering is registered here yet: the compiler runs primitives without a lowering as
host steps through their `impl`, which evaluates the sub-jaxprs with the NumPy impls.
"""
from __future__ import annotations

import builtins
import operator
from functools import partial
from typing import NamedTuple

import numpy as np

from corejax import core, dtypes
from corejax.config import config
from corejax.core import ClosedJaxpr, Primitive, ShapedArray, Tracer, get_aval
from corejax.lax.elementwise import (add, bitwise_or, clamp, convert_element_type, full, ne,
                                     select_n)
from corejax.lax.reductions import reduce_or
from corejax.lax.structural import (broadcast_in_dim, concatenate, expand_dims, index_in_dim,
                                    pad, reshape, rev, slice_in_dim)
from corejax.transforms import ad, batching
from corejax.transforms.ad import UndefinedPrimal, Zero, is_undefined_primal
from corejax.transforms.jit import closed_call, memoized, stage, transpose_jaxpr
from corejax.transforms.staging import trace_to_jaxpr
from corejax.tree_util import (tree_flatten, tree_flatten_with_path, tree_map, tree_unflatten,
                               keystr)

__all__ = ["cond", "switch", "while_loop", "fori_loop", "scan", "map", "associative_scan",
           "cond_p", "while_p", "scan_p"]

_WHILE_TRANSPOSE_ERROR = (
    "Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop with dynamic "
    "start/stop values. Try using lax.scan, or using fori_loop with static start/stop.")


# --- staging user functions ------------------------------------------------------------------

def _canon(x):
    """A leaf as an operand: NumPy values become Arrays of the canonical dtype."""
    if isinstance(x, Tracer) or type(x) in (int, float, complex, bool):
        return x
    from corejax.array import Array
    if type(x) is Array:
        return x
    arr = np.asarray(x)
    core.get_aval(arr)  # raises a TypeError naming the value for non-array leaves
    # A copy: Array freezes its buffer, which must not be the caller's array.
    return Array(np.array(arr, dtypes.canonicalize_dtype(arr.dtype)))


def _trace(fun, in_tree, in_avals, name):
    """Stages `fun(*tree_unflatten(in_tree, leaves))`. Returns `(jaxpr, consts, out)` where
    `jaxpr` takes the closed-over tracers `consts` first, then the leaves (concrete closed-over
    values stay inside it), and `out` is whatever `fun` returned, for its pytree structure."""
    store = []

    def flat(*leaves):
        out = fun(*tree_unflatten(in_tree, leaves))
        store.append(out)
        return tree_flatten(out)[0]

    jaxpr, consts = trace_to_jaxpr(flat, in_avals, fun_name=getattr(fun, "__name__", name))
    is_tracer = [isinstance(c, Tracer) for c in consts]
    tracer_vars = [v for v, t in zip(jaxpr.constvars, is_tracer) if t]
    inner = core.Jaxpr([v for v, t in zip(jaxpr.constvars, is_tracer) if not t],
                       tracer_vars + jaxpr.invars, jaxpr.eqns, jaxpr.outvars)
    closed = ClosedJaxpr(inner, [c for c, t in zip(consts, is_tracer) if not t])
    return closed, [c for c, t in zip(consts, is_tracer) if t], store[0]


def _typematch(a: ShapedArray, b: ShapedArray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype


def _aval_str(a: ShapedArray) -> str:
    return a.str_short()


def _promote_weak(vals, in_avals, out_avals):
    """Weakly typed carries whose dtype the body changes take the body's dtype (as in JAX)."""
    changed = False
    vals = list(vals)
    for i, (a, b) in enumerate(zip(in_avals, out_avals)):
        if a.weak_type and not _typematch(a, b) and a.shape == b.shape:
            vals[i] = convert_element_type(vals[i], dtypes.result_type(vals[i], b.dtype))
            changed = True
    return vals, changed


def _run(closed: ClosedJaxpr, *args) -> list:
    """Evaluates a jaxpr on NumPy values with each primitive's impl (the reference path)."""
    from corejax.array import to_numpy
    jaxpr = closed.jaxpr
    env = dict(zip(jaxpr.constvars, [to_numpy(c) for c in closed.consts]))
    env.update(zip(jaxpr.invars, args))

    def read(v):
        return np.asarray(v.val, v.aval.dtype) if type(v) is core.Literal else env[v]

    for eqn in jaxpr.eqns:
        outs = eqn.primitive.impl(*[read(v) for v in eqn.invars], **eqn.params)
        if not eqn.primitive.multiple_results:
            outs = (outs,)
        env.update(zip(eqn.outvars, [to_numpy(o) for o in outs]))
    return [read(v) for v in jaxpr.outvars]


def _reorder(closed: ClosedJaxpr, in_perm, out_perm=None) -> ClosedJaxpr:
    """The same program with its inputs (and outputs) listed in another order."""
    j = closed.jaxpr
    outvars = j.outvars if out_perm is None else [j.outvars[i] for i in out_perm]
    return ClosedJaxpr(core.Jaxpr(j.constvars, [j.invars[i] for i in in_perm], j.eqns, outvars),
                       closed.consts)


def _split_list(xs, sizes):
    out, start = [], 0
    for n in sizes:
        out.append(list(xs[start:start + n]))
        start += n
    out.append(list(xs[start:]))
    return out


def _nonzero(t) -> bool:
    return type(t) is not Zero


def _tangent_mask(primals, tangents) -> list[bool]:
    """Which tangents are nonzero; integer operands never have one."""
    return [_nonzero(t) and dtypes.is_inexact(get_aval(p).dtype)
            for p, t in zip(primals, tangents)]


def _zeros(aval: ShapedArray):
    return full(aval.shape, 0, aval.dtype, weak_type=aval.weak_type)


# --- jaxpr-level transformations shared by the rules -----------------------------------------

def _jvp(closed: ClosedJaxpr, nonzeros, instantiate):
    """`((primals, nonzero tangents) -> (outputs, nonzero output tangents), out_nonzeros)`.
    Output tangents are nonzero when they depend on a nonzero input tangent, or are listed
    in `instantiate` (then materialized as zeros)."""
    nonzeros = tuple(bool(z) and dtypes.is_inexact(a.dtype)
                     for z, a in zip(nonzeros, closed.in_avals))
    key = (nonzeros, tuple(instantiate))
    return memoized("cf_jvp", closed, key, lambda: _build_jvp(closed, nonzeros, instantiate))


def _build_jvp(closed, nonzeros, instantiate):
    n, box = len(closed.in_avals), []

    def fun(*args):
        nz_tangents = iter(args[n:])
        tangents = [next(nz_tangents) if z else Zero(a.to_tangent_aval())
                    for z, a in zip(nonzeros, closed.in_avals)]
        outs, touts = ad.jvp_flat(partial(closed_call, closed), args[:n], tangents,
                                  instantiate=False)
        out_nz = [dtypes.is_inexact(a.dtype) and (_nonzero(t) or inst)
                  for t, a, inst in zip(touts, closed.out_avals, instantiate)]
        box.append(out_nz)
        return [*outs, *[ad.instantiate_zeros(t) for t, z in zip(touts, out_nz) if z]]

    t_avals = [a.to_tangent_aval() for a, z in zip(closed.in_avals, nonzeros) if z]
    jaxpr = stage(fun, [*closed.in_avals, *t_avals], "jvp")
    return jaxpr, box[0]


def _batch(closed: ClosedJaxpr, axis_size: int, in_batched, instantiate):
    """`(batched jaxpr, out_batched)`: batched inputs and outputs carry the batch at axis 0;
    outputs are batched when they depend on a batched input or are listed in `instantiate`."""
    key = (axis_size, tuple(in_batched), tuple(instantiate))
    return memoized("cf_vmap", closed, key,
                    lambda: _build_batch(closed, axis_size, in_batched, instantiate))


def _build_batch(closed, axis_size, in_batched, instantiate):
    box = []
    in_avals = [a.update(shape=(axis_size,) + a.shape) if b else a
                for a, b in zip(closed.in_avals, in_batched)]

    def fun(*args):
        outs, dims = batching.vmap_flat(partial(closed_call, closed), axis_size,
                                        [0 if b else None for b in in_batched], args=args)
        out_b = [d is not None or inst for d, inst in zip(dims, instantiate)]
        box.append(out_b)
        return [batching.bdim_at_front(o, d, axis_size) if b else o
                for o, d, b in zip(outs, dims, out_b)]

    jaxpr = stage(fun, in_avals, "vmap")
    return jaxpr, box[0]


class _Split(NamedTuple):
    known: ClosedJaxpr    # known inputs -> (known outputs, residuals)
    unknown: ClosedJaxpr  # (residuals, unknown inputs) -> unknown outputs
    out_uks: list
    num_res: int


def _split(closed: ClosedJaxpr, unknowns, instantiate=False) -> _Split:
    """Partial evaluation of a jaxpr (ad.partial_eval_jaxpr, which re-traces it so nested
    control flow is split by its own rule), built once per jaxpr and pattern."""
    if isinstance(instantiate, bool):
        instantiate = [instantiate] * len(closed.out_avals)
    key = (tuple(unknowns), tuple(instantiate))
    return memoized("cf_split", closed, key, lambda: _Split(
        *ad.partial_eval_jaxpr(closed, list(unknowns), list(instantiate))))


def _fixpoint(mask, step):
    """Grows the boolean `mask` with `step(mask)` until it is stable (loop-carried facts)."""
    mask = list(mask)
    while True:
        new = [a or b for a, b in zip(mask, step(mask))]
        if new == mask:
            return mask
        mask = new


# --- cond --------------------------------------------------------------------------------------

cond_p = Primitive("cond")
cond_p.multiple_results = True


def _cond_out_avals(branches):
    avals = branches[0].out_avals
    weak = [all(b.out_avals[i].weak_type for b in branches) for i in range(len(avals))]
    return [a.update(weak_type=w) for a, w in zip(avals, weak)]


def _cond_impl(index, *ops, branches):
    i = builtins.min(builtins.max(int(index), 0), len(branches) - 1)
    return _run(branches[i], *ops)


def _cond_abstract(index, *ops, branches):
    if index.shape != () or index.dtype.kind not in "iu":
        raise TypeError(f"cond index must be a scalar integer, got {_aval_str(index)}.")
    for i, b in enumerate(branches):
        if len(b.in_avals) != len(ops) or not all(builtins.map(_typematch, b.in_avals, ops)):
            raise TypeError(f"cond branch {i} takes {[_aval_str(a) for a in b.in_avals]}, got "
                            f"operands {[_aval_str(a) for a in ops]}.")
        outs0 = branches[0].out_avals
        if len(b.out_avals) != len(outs0) or not all(builtins.map(_typematch, b.out_avals, outs0)):
            raise TypeError(f"cond branches must return identical types; branch 0 returns "
                            f"{[_aval_str(a) for a in outs0]}, branch {i} returns "
                            f"{[_aval_str(a) for a in b.out_avals]}.")
    return _cond_out_avals(branches)


cond_p.def_impl(_cond_impl)
cond_p.def_abstract_eval(_cond_abstract)
cond_p.weak_type_rule = lambda *args, branches: [a.weak_type for a in _cond_out_avals(branches)]


def _cond_jvp(primals, tangents, branches):
    index, *ops = primals
    nonzeros = _tangent_mask(ops, tangents[1:])
    n_out = len(branches[0].out_avals)
    out_nz = [builtins.any(col) for col in
              zip(*[_jvp(b, nonzeros, [False] * n_out)[1] for b in branches])]
    new = tuple(_jvp(b, nonzeros, out_nz)[0] for b in branches)
    nz_tangents = [t for t, z in zip(tangents[1:], nonzeros) if z]
    outs = cond_p.bind(index, *ops, *nz_tangents, branches=new)
    touts = iter(outs[n_out:])
    return outs[:n_out], [next(touts) if z else Zero(a.to_tangent_aval())
                          for z, a in zip(out_nz, branches[0].out_avals)]


def _cond_partial_eval(trace, tracers, branches):
    index, *ops = tracers
    if not index.pval.is_known:  # which branch runs is unknown: the whole cond is
        return trace.default_process(cond_p, tracers, dict(branches=branches))
    unknowns = [not t.pval.is_known for t in ops]
    out_uks = [builtins.any(col) for col in zip(*[_split(b, unknowns).out_uks for b in branches])]
    splits = [_split(b, unknowns, out_uks) for b in branches]
    # Residuals differ between branches: every branch returns all of them, zeros for the
    # others' (JAX's join of branch residuals), and each unknown branch reads its own.
    res_avals = [s.known.out_avals[len(s.known.out_avals) - s.num_res:] for s in splits]
    offsets = np.cumsum([0] + [s.num_res for s in splits]).tolist()
    all_res_avals = [a for avals in res_avals for a in avals]
    known_avals = [t.aval for t in ops if t.pval.is_known]

    def known_branch(i):
        def fun(*args):
            outs = closed_call(splits[i].known, *args)
            n_known = len(outs) - splits[i].num_res
            res = [_zeros(a) for a in all_res_avals]
            res[offsets[i]:offsets[i + 1]] = outs[n_known:]
            return [*outs[:n_known], *res]
        return stage(fun, known_avals, "known_branch")

    def unknown_branch(i):
        def fun(*args):
            res, rest = args[:len(all_res_avals)], args[len(all_res_avals):]
            return closed_call(splits[i].unknown, *res[offsets[i]:offsets[i + 1]], *rest)
        return stage(fun, [*all_res_avals, *[t.aval for t in ops if not t.pval.is_known]],
                     "unknown_branch")

    # Keyed on the sibling branches too: the residual layout depends on all of them.
    key = (tuple(unknowns), tuple(out_uks), branches[1:])
    known_branches, unknown_branches = memoized("cond_pe", branches[0], key, lambda: (
        tuple(known_branch(i) for i in range(len(branches))),
        tuple(unknown_branch(i) for i in range(len(branches)))))
    known_outs = cond_p.bind(index.pval.const, *[t.pval.const for t in ops if t.pval.is_known],
                             branches=known_branches)
    n_known = len(known_outs) - len(all_res_avals)
    res_tracers = [trace.instantiate_const(trace.pure(r)) for r in known_outs[n_known:]]
    unknown_in = [trace.instantiate_const(index), *res_tracers,
                  *[t for t in ops if not t.pval.is_known]]
    unknown_outs = trace.default_process(cond_p, unknown_in, dict(branches=unknown_branches)) \
        if any(out_uks) else []
    known_it, unknown_it = iter(known_outs[:n_known]), iter(unknown_outs)
    return [next(unknown_it) if u else trace.pure(next(known_it)) for u in out_uks]


def _cond_transpose(cts, index, *ops, branches):
    if is_undefined_primal(index):
        raise ValueError("cond is not linear in its predicate or index.")
    linear = tuple(is_undefined_primal(o) for o in ops)
    cts = [ad.instantiate_zeros(ct) for ct in cts]
    new = tuple(memoized("cond_transpose", b, linear, partial(transpose_jaxpr, b, list(linear)))
                for b in branches)
    res = [o for o in ops if not is_undefined_primal(o)]
    outs = iter(cond_p.bind(index, *res, *cts, branches=new))
    return [None] + [next(outs) if l else None for l in linear]


def _cond_batch(axis_size, vals, dims, branches):
    index, *ops = vals
    index_dim, *op_dims = dims
    n_out = len(branches[0].out_avals)
    if index_dim is not None:
        # Each lane picks its own branch: run every branch on the whole batch and select.
        in_b = [d is not None for d in op_dims]
        ops = [batching.moveaxis(o, d, 0) if d is not None else o for o, d in zip(ops, op_dims)]
        per_branch = [closed_call(_batch(b, axis_size, in_b, [True] * n_out)[0], *ops)
                      for b in branches]
        index = batching.moveaxis(index, index_dim, 0)
        outs = []
        for cases in zip(*per_branch):
            shape = get_aval(cases[0]).shape
            outs.append(select_n(broadcast_in_dim(index, shape, (0,)), *cases))
        return outs, [0] * n_out
    in_b = [d is not None for d in op_dims]
    ops = [batching.moveaxis(o, d, 0) if d is not None else o for o, d in zip(ops, op_dims)]
    out_b = [builtins.any(col) for col in
             zip(*[_batch(b, axis_size, in_b, [False] * n_out)[1] for b in branches])]
    new = tuple(_batch(b, axis_size, in_b, out_b)[0] for b in branches)
    outs = cond_p.bind(index, *ops, branches=new)
    return outs, [0 if b else None for b in out_b]


_cond_batch.needs_axis_size = True
ad.primitive_jvps[cond_p] = _cond_jvp
ad.partial_eval_rules[cond_p] = _cond_partial_eval
ad.primitive_transposes[cond_p] = _cond_transpose
batching.primitive_batchers[cond_p] = _cond_batch


def _branch_call(index, funs, names, operands, what, order):
    ops, in_tree = tree_flatten(tuple(operands))
    ops = [_canon(x) for x in ops]
    in_avals = [get_aval(x) for x in ops]
    traced = [_trace(f, in_tree, in_avals, name) for f, name in zip(funs, names)]
    first = order[0]
    out_paths, out_tree = tree_flatten_with_path(traced[first][2])
    paths = ["output" + keystr(p) for p, _ in out_paths]
    for i in order[1:]:
        tree_i = tree_flatten(traced[i][2])[1]
        if tree_i != out_tree:
            raise TypeError(f"{what} output must have same type structure, got {out_tree} "
                            f"from {names[first]} and {tree_i} from {names[i]}.")
        diffs = [f"  * {p}: {names[first]} returns {_aval_str(a)} but {names[i]} returns "
                 f"{_aval_str(b)}" for p, a, b in zip(paths, traced[first][0].out_avals,
                                                     traced[i][0].out_avals)
                 if not _typematch(a, b)]
        if diffs:
            raise TypeError(f"{what} output must have identical types, got\n" + "\n".join(diffs))
    # Every branch takes the closed-over values of all branches, so they share one signature.
    all_consts = [c for _, consts, _ in traced for c in consts]
    branches, before = [], 0
    for jaxpr, consts, _ in traced:
        j, nc = jaxpr.jaxpr, len(consts)
        others = [core.Var(get_aval(c)) for c in all_consts]
        invars = [*others[:before], *j.invars[:nc], *others[before + nc:], *j.invars[nc:]]
        branches.append(ClosedJaxpr(core.Jaxpr(j.constvars, invars, j.eqns, j.outvars),
                                    jaxpr.consts))
        before += nc
    outs = cond_p.bind(index, *all_consts, *ops, branches=tuple(branches))
    return tree_unflatten(out_tree, outs)


def cond(pred, true_fun, false_fun, *operands):
    """`true_fun(*operands)` if `pred` else `false_fun(*operands)`; both are staged, and under
    vmap with a batched `pred` both run and the results are selected per lane."""
    if not (callable(true_fun) and callable(false_fun)):
        raise TypeError("true_fun and false_fun arguments should be callable.")
    aval = get_aval(pred)
    if aval.shape != ():
        raise TypeError(f"Pred must be a scalar, got {pred} of shape {aval.shape}.")
    if aval.dtype != np.bool_:
        if aval.dtype.kind not in "iu":
            raise TypeError(f"Pred type must be either boolean or number, got {aval.dtype}.")
        pred = ne(pred, 0)
    if config.disable_jit and not isinstance(pred, Tracer):
        return true_fun(*operands) if bool(pred) else false_fun(*operands)
    index = convert_element_type(pred, np.int32)
    return _branch_call(index, (false_fun, true_fun), ("false_fun", "true_fun"), operands,
                        "true_fun and false_fun", order=(1, 0))


def switch(index, branches, *operands):
    """`branches[index](*operands)`, with `index` clamped to the valid range."""
    branches = tuple(branches)
    if not branches:
        raise ValueError("Empty branch sequence")
    if not all(callable(b) for b in branches):
        raise TypeError("switch branches must be callable.")
    aval = get_aval(index)
    if aval.shape != ():
        raise TypeError(f"Branch index must be scalar, got {index} of shape {aval.shape}.")
    if aval.dtype.kind not in "iu":
        raise TypeError(f"Index type must be an integer, got {index} of type {aval.dtype}")
    if len(branches) == 1:
        return branches[0](*operands)
    index = clamp(0, convert_element_type(index, np.int32), len(branches) - 1)
    if config.disable_jit and not isinstance(index, Tracer):
        return branches[int(index)](*operands)
    names = [f"branch {i}" for i in range(len(branches))]
    return _branch_call(index, branches, names, operands, "switch branches'",
                        order=range(len(branches)))


# --- while -------------------------------------------------------------------------------------

while_p = Primitive("while")
while_p.multiple_results = True


def _while_impl(*args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cconsts, bconsts, carry = _split_list(args, [cond_nconsts, body_nconsts])
    while bool(_run(cond_jaxpr, *cconsts, *carry)[0]):
        carry = _run(body_jaxpr, *bconsts, *carry)
    return carry


def _while_abstract(*avals, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    carry = avals[cond_nconsts + body_nconsts:]
    if not all(builtins.map(_typematch, carry, body_jaxpr.out_avals)) or \
            len(carry) != len(body_jaxpr.out_avals):
        raise TypeError(f"while_loop body maps {[_aval_str(a) for a in carry]} to "
                        f"{[_aval_str(a) for a in body_jaxpr.out_avals]}; they must be equal.")
    return list(body_jaxpr.out_avals)


while_p.def_impl(_while_impl)
while_p.def_abstract_eval(_while_abstract)
while_p.weak_type_rule = lambda *args, body_jaxpr, **_: [a.weak_type
                                                         for a in body_jaxpr.out_avals]


def _add_unused_inputs(closed: ClosedJaxpr, avals) -> ClosedJaxpr:
    j = closed.jaxpr
    return ClosedJaxpr(core.Jaxpr(j.constvars, [*j.invars, *[core.Var(a) for a in avals]],
                                  j.eqns, j.outvars), closed.consts)


def _while_jvp(primals, tangents, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    nc, nb = cond_nconsts, body_nconsts
    cconsts, bconsts, carry = _split_list(primals, [nc, nb])
    _, bconst_t, carry_t = _split_list(tangents, [nc, nb])
    bconst_nz = _tangent_mask(bconsts, bconst_t)
    n = len(carry)
    carry_nz = _fixpoint(_tangent_mask(carry, carry_t),
                         lambda nz: _jvp(body_jaxpr, bconst_nz + nz, [False] * n)[1])
    body_jvp, _ = _jvp(body_jaxpr, bconst_nz + carry_nz, carry_nz)
    n_bt, n_ct = builtins.sum(bconst_nz), builtins.sum(carry_nz)
    # body_jvp takes (bconsts, carry, bconst tangents, carry tangents): put consts first.
    perm = [*range(nb), *range(nb + n, nb + n + n_bt), *range(nb, nb + n),
            *range(nb + n + n_bt, nb + n + n_bt + n_ct)]
    new_body = memoized("while_jvp", body_jvp, "perm", lambda: _reorder(body_jvp, perm))
    tangent_avals = [a.to_tangent_aval() for a, z in zip(body_jaxpr.out_avals, carry_nz) if z]
    new_cond = memoized("while_jvp", cond_jaxpr, tuple(carry_nz),
                        lambda: _add_unused_inputs(cond_jaxpr, tangent_avals))
    carry_t = [ad.instantiate_zeros(t) for t, z in zip(carry_t, carry_nz) if z]
    outs = while_p.bind(*cconsts, *bconsts, *[t for t, z in zip(bconst_t, bconst_nz) if z], *carry,
                        *carry_t, cond_jaxpr=new_cond, body_jaxpr=new_body,
                        cond_nconsts=nc, body_nconsts=nb + n_bt)
    touts = iter(outs[n:])
    return outs[:n], [next(touts) if z else Zero(a.to_tangent_aval())
                      for z, a in zip(carry_nz, body_jaxpr.out_avals)]


def _while_partial_eval(trace, tracers, **params):
    """The known carries are computed by a loop of their own; the unknown ones by the whole
    loop, recomputing the known part (JAX's rule). Transposing that loop is an error."""
    nc, nb = params["cond_nconsts"], params["body_nconsts"]
    cond_jaxpr, body_jaxpr = params["cond_jaxpr"], params["body_jaxpr"]
    uk = [not t.pval.is_known for t in tracers]
    cc_uk, bc_uk, carry_uk = _split_list(uk, [nc, nb])
    carry_uk = _fixpoint(carry_uk, lambda m: _split(body_jaxpr, bc_uk + m).out_uks)
    cond_split = _split(cond_jaxpr, cc_uk + carry_uk)
    if cond_split.out_uks[0] or all(carry_uk):
        return trace.default_process(while_p, tracers, params)
    body_split = _split(body_jaxpr, bc_uk + carry_uk, carry_uk)
    n_known = len(carry_uk) - builtins.sum(carry_uk)
    key = (tuple(bc_uk), tuple(carry_uk), tuple(cc_uk))
    known_body = memoized("while_known", body_jaxpr, key, lambda: stage(
        lambda *a: closed_call(body_split.known, *a)[:n_known], body_split.known.in_avals))
    known_cond = memoized("while_known", cond_jaxpr, key, lambda: stage(
        lambda *a: closed_call(cond_split.known, *a)[:1], cond_split.known.in_avals))
    cconsts, bconsts, carry = _split_list(tracers, [nc, nb])
    known = lambda ts: [t.pval.const for t in ts if t.pval.is_known]
    known_outs = iter(while_p.bind(*known(cconsts), *known(bconsts), *known(carry),
                                   cond_jaxpr=known_cond, body_jaxpr=known_body,
                                   cond_nconsts=len(known(cconsts)),
                                   body_nconsts=len(known(bconsts))))
    whole = trace.default_process(while_p, tracers, params)
    return [w if u else trace.pure(next(known_outs)) for w, u in zip(whole, carry_uk)]


def _while_transpose(cts, *args, **params):
    raise ValueError(_WHILE_TRANSPOSE_ERROR)


def _while_batch(axis_size, vals, dims, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    nc, nb = cond_nconsts, body_nconsts
    batched = [d is not None for d in dims]
    cc_b, bc_b, carry_b = _split_list(batched, [nc, nb])
    n = len(carry_b)
    carry_b = _fixpoint(carry_b, lambda m: _batch(body_jaxpr, axis_size, bc_b + m, [False] * n)[1])
    pred_batched = _batch(cond_jaxpr, axis_size, cc_b + carry_b, [False])[1][0]
    if pred_batched:  # lanes finish at different times: every carry is per lane
        carry_b = [True] * n
    vals = [batching.moveaxis(v, d, 0) if d is not None else v for v, d in zip(vals, dims)]
    cconsts, bconsts, carry = _split_list(vals, [nc, nb])
    carry = [batching.bdim_at_front(c, d, axis_size) if b and d is None else c
             for c, d, b in zip(carry, dims[nc + nb:], carry_b)]
    body_b = _batch(body_jaxpr, axis_size, bc_b + carry_b, carry_b)[0]
    cond_b = _batch(cond_jaxpr, axis_size, cc_b + carry_b, [pred_batched])[0]
    if not pred_batched:
        outs = while_p.bind(*cconsts, *bconsts, *carry, cond_jaxpr=cond_b, body_jaxpr=body_b,
                            cond_nconsts=nc, body_nconsts=nb)
        return outs, [0 if b else None for b in carry_b]

    def any_running(*args):
        return [reduce_or(closed_call(cond_b, *args)[0], (0,))]

    def masked_body(*args):
        cc, bc, old = _split_list(args, [nc, nb])
        running = closed_call(cond_b, *cc, *old)[0]
        new = closed_call(body_b, *bc, *old)
        return [select_n(broadcast_in_dim(running, get_aval(o).shape, (0,)), o, nw)
                for o, nw in zip(old, new)]

    key = (axis_size, tuple(batched), cond_jaxpr)
    new_cond = memoized("while_vmap_cond", body_jaxpr, key,
                        lambda: stage(any_running, cond_b.in_avals))
    new_body = memoized("while_vmap_body", body_jaxpr, key, lambda: stage(
        masked_body, [*cond_b.in_avals[:nc], *body_b.in_avals]))
    outs = while_p.bind(*cconsts, *cconsts, *bconsts, *carry, cond_jaxpr=new_cond,
                        body_jaxpr=new_body, cond_nconsts=nc, body_nconsts=nc + nb)
    return outs, [0] * n


_while_batch.needs_axis_size = True
ad.primitive_jvps[while_p] = _while_jvp
ad.partial_eval_rules[while_p] = _while_partial_eval
ad.primitive_transposes[while_p] = _while_transpose
batching.primitive_batchers[while_p] = _while_batch


def _check_carry(what, paths, in_avals, out_avals):
    lines = []
    for p, a, b in zip(paths, in_avals, out_avals):
        if not _typematch(a, b):
            kind = "shapes" if a.shape != b.shape else "dtypes"
            lines.append(f"  * the input carry component {p} has type {_aval_str(a)} but the "
                         f"corresponding output carry component has type {_aval_str(b)}, so "
                         f"the {kind} do not match")
    if lines:
        raise TypeError(f"{what} function carry input and carry output must have equal types "
                        "(shape and dtype), but they differ:\n" + "\n".join(lines))


def while_loop(cond_fun, body_fun, init_val):
    """`while cond_fun(val): val = body_fun(val)`, staged; reverse-mode differentiation through
    it is not supported (use scan or a fori_loop with static bounds)."""
    if not (callable(cond_fun) and callable(body_fun)):
        raise TypeError("lax.while_loop: cond_fun and body_fun arguments should be callable.")
    if config.disable_jit:  # debugging: a Python loop, unless the condition is traced
        try:
            val = init_val
            while cond_fun(val):
                val = body_fun(val)
            return val
        except core.ConcretizationTypeError:
            pass
    path_leaves, in_tree = tree_flatten_with_path(init_val)
    paths = ["init_val" + keystr(p) for p, _ in path_leaves]
    init = [_canon(x) for _, x in path_leaves]
    args_tree = tree_flatten((init_val,))[1]
    for _ in range(2):
        avals = [get_aval(x) for x in init]
        cond_jaxpr, cond_consts, _ = _trace(cond_fun, args_tree, avals, "cond_fun")
        outs = cond_jaxpr.out_avals
        if len(outs) != 1 or outs[0].shape != () or outs[0].dtype != np.bool_:
            raise TypeError("cond_fun must return a boolean scalar, but got output type(s) "
                            f"{[_aval_str(a) for a in outs]}.")
        body_jaxpr, body_consts, body_out = _trace(body_fun, args_tree, avals, "body_fun")
        out_tree = tree_flatten(body_out)[1]
        if out_tree != in_tree:
            raise TypeError("body_fun output and input must have identical types, got\n"
                            f"  output tree: {out_tree}\n  input tree: {in_tree}.")
        init, changed = _promote_weak(init, avals, body_jaxpr.out_avals)
        if not changed:
            break
    _check_carry("while_loop body", paths, avals, body_jaxpr.out_avals)
    outs = while_p.bind(*cond_consts, *body_consts, *init, cond_jaxpr=cond_jaxpr,
                        body_jaxpr=body_jaxpr, cond_nconsts=len(cond_consts),
                        body_nconsts=len(body_consts))
    return tree_unflatten(in_tree, outs)


# --- scan --------------------------------------------------------------------------------------

scan_p = Primitive("scan")
scan_p.multiple_results = True


def _scan_impl(*args, jaxpr, length, reverse, num_consts, num_carry):
    consts, carry, xs = _split_list(args, [num_consts, num_carry])
    ys = []
    for i in (range(length - 1, -1, -1) if reverse else range(length)):
        out = _run(jaxpr, *consts, *carry, *[x[i] for x in xs])
        carry = out[:num_carry]
        ys.append(out[num_carry:])
    if reverse:
        ys.reverse()
    y_avals = jaxpr.out_avals[num_carry:]
    stacked = [np.stack([y[j] for y in ys]).astype(a.dtype, copy=False) if ys
               else np.zeros((0,) + a.shape, a.dtype) for j, a in enumerate(y_avals)]
    return [*carry, *stacked]


def _scan_abstract(*avals, jaxpr, length, reverse, num_consts, num_carry):
    consts, carry, xs = _split_list(avals, [num_consts, num_carry])
    body_in = jaxpr.in_avals
    x_avals = [ShapedArray(x.shape[1:], x.dtype, x.weak_type) for x in xs]
    if len(body_in) != len(avals) or not all(builtins.map(_typematch, body_in,
                                                  [*consts, *carry, *x_avals])):
        raise TypeError(f"scan body takes {[_aval_str(a) for a in body_in]}, got operands "
                        f"{[_aval_str(a) for a in avals]}.")
    if any(x.shape[:1] != (length,) for x in xs):
        raise TypeError(f"scan of length {length} got xs of shapes {[x.shape for x in xs]}.")
    carry_out, ys = _split_list(jaxpr.out_avals, [num_carry])[:2]
    if not all(builtins.map(_typematch, carry, carry_out)):
        raise TypeError(f"scan body maps the carry {[_aval_str(a) for a in carry]} to "
                        f"{[_aval_str(a) for a in carry_out]}; they must be equal.")
    return [*carry_out, *[ShapedArray((length,) + y.shape, y.dtype, y.weak_type) for y in ys]]


scan_p.def_impl(_scan_impl)
scan_p.def_abstract_eval(_scan_abstract)
scan_p.weak_type_rule = lambda *args, jaxpr, **_: [a.weak_type for a in jaxpr.out_avals]


def _scan_jvp(primals, tangents, jaxpr, length, reverse, num_consts, num_carry):
    nc, nk = num_consts, num_carry
    nx, ny = len(primals) - nc - nk, len(jaxpr.out_avals) - nk
    consts, carry, xs = _split_list(primals, [nc, nk])
    const_t, carry_t, xs_t = _split_list(tangents, [nc, nk])
    const_nz, xs_nz = _tangent_mask(consts, const_t), _tangent_mask(xs, xs_t)
    carry_nz = _fixpoint(_tangent_mask(carry, carry_t), lambda m: _jvp(
        jaxpr, const_nz + m + xs_nz, [False] * (nk + ny))[1][:nk])
    jvp_jaxpr, out_nz = _jvp(jaxpr, const_nz + carry_nz + xs_nz, carry_nz + [False] * ny)
    n_ct, n_kt, n_xt = builtins.sum(const_nz), builtins.sum(carry_nz), builtins.sum(xs_nz)
    n_yt = builtins.sum(out_nz[nk:])
    # jvp_jaxpr: (consts, carry, xs, their tangents) -> (carry, ys, their tangents); the scan
    # needs (consts, const tangents, carry, carry tangents, xs, xs tangents) -> likewise.
    n = nc + nk + nx
    in_perm = [*range(nc), *range(n, n + n_ct), *range(nc, nc + nk),
               *range(n + n_ct, n + n_ct + n_kt), *range(nc + nk, n),
               *range(n + n_ct + n_kt, n + n_ct + n_kt + n_xt)]
    m = nk + ny
    out_perm = [*range(nk), *range(m, m + n_kt), *range(nk, m), *range(m + n_kt, m + n_kt + n_yt)]
    body = memoized("scan_jvp", jvp_jaxpr, "perm", lambda: _reorder(jvp_jaxpr, in_perm, out_perm))
    nz_only = lambda ts, mask: [ad.instantiate_zeros(t) for t, z in zip(ts, mask) if z]
    outs = scan_p.bind(*consts, *nz_only(const_t, const_nz), *carry, *nz_only(carry_t, carry_nz),
                       *xs, *nz_only(xs_t, xs_nz), jaxpr=body, length=length, reverse=reverse,
                       num_consts=nc + n_ct, num_carry=nk + n_kt)
    carry_out, carry_tout, ys, ys_t = _split_list(outs, [nk, n_kt, ny])
    ct_it, yt_it = iter(carry_tout), iter(ys_t)
    out_avals = scan_p.abstract_eval(*[get_aval(p) for p in primals], jaxpr=jaxpr, length=length,
                                     reverse=reverse, num_consts=nc, num_carry=nk)
    touts = [next(ct_it) if z else Zero(a.to_tangent_aval())
             for z, a in zip(carry_nz, out_avals[:nk])]
    touts += [next(yt_it) if z else Zero(a.to_tangent_aval())
              for z, a in zip(out_nz[nk:], out_avals[nk:])]
    return [*carry_out, *ys], touts


class _ScanSplit(NamedTuple):
    """A scan body split into a known scan and an unknown (linear) scan.

    The unknown body takes `(const residuals, unknown consts, unknown carry, stacked residuals,
    unknown xs)`. Residuals are of three kinds: loop-invariant values (`const`), known xs read
    as they are (`xs`), and values the known scan must emit per iteration (`loop`)."""
    known: ClosedJaxpr      # known scan body emitting (known carry, known ys, loop residuals)
    unknown: ClosedJaxpr
    carry_uk: list
    out_uks: list
    res_kinds: list         # per residual: ("const", value source) / ("xs", i) / ("loop", i)


def _scan_split(jaxpr, unknowns, num_consts, num_carry) -> _ScanSplit:
    nc, nk = num_consts, num_carry
    const_uk, carry_uk, xs_uk = _split_list(unknowns, [nc, nk])
    ny = len(jaxpr.out_avals) - nk
    carry_uk = _fixpoint(carry_uk, lambda m: _split(jaxpr, const_uk + m + xs_uk).out_uks[:nk])
    key = (tuple(const_uk + carry_uk + xs_uk), nc, nk)
    return memoized("scan_split", jaxpr, key, lambda: _build_scan_split(
        jaxpr, const_uk, carry_uk, xs_uk, ny))


def _build_scan_split(jaxpr, const_uk, carry_uk, xs_uk, ny):
    s = _split(jaxpr, const_uk + carry_uk + xs_uk, carry_uk + [False] * ny)
    jk = s.known.jaxpr
    n_kc = len(const_uk) - builtins.sum(const_uk)
    n_kk = len(carry_uk) - builtins.sum(carry_uk)
    n_known_out = len(jk.outvars) - s.num_res
    const_pos = {v: i for i, v in enumerate(jk.invars[:n_kc])}
    xs_pos = {v: i for i, v in enumerate(jk.invars[n_kc + n_kk:])}
    closed_pos = {v: i for i, v in enumerate(jk.constvars)}
    kinds, loop_vars = [], []
    for v in jk.outvars[n_known_out:]:
        if type(v) is core.Literal:
            kinds.append(("const", ("literal", v.val, v.aval)))
        elif v in const_pos:
            kinds.append(("const", ("operand", const_pos[v])))
        elif v in closed_pos:
            kinds.append(("const", ("closed", s.known.consts[closed_pos[v]])))
        elif v in xs_pos:
            kinds.append(("xs", xs_pos[v]))
        else:
            kinds.append(("loop", len(loop_vars)))
            loop_vars.append(v)
    known = ClosedJaxpr(core.Jaxpr(jk.constvars, jk.invars, jk.eqns,
                                   [*jk.outvars[:n_known_out], *loop_vars]), s.known.consts)
    ju = s.unknown.jaxpr
    res_vars, rest = ju.invars[:s.num_res], ju.invars[s.num_res:]
    n_uc, n_uk = builtins.sum(const_uk), builtins.sum(carry_uk)
    uc, uk, ux = _split_list(rest, [n_uc, n_uk])
    const_res = [v for v, (k, _) in zip(res_vars, kinds) if k == "const"]
    stacked_res = [v for v, (k, _) in zip(res_vars, kinds) if k != "const"]
    unknown = ClosedJaxpr(core.Jaxpr(ju.constvars, [*const_res, *uc, *uk, *stacked_res, *ux],
                                     ju.eqns, ju.outvars), s.unknown.consts)
    return _ScanSplit(known, unknown, carry_uk, s.out_uks, kinds)


def _residual_values(split: _ScanSplit, known_consts, known_xs, loop_res):
    """The values of the unknown scan's const residuals and stacked residuals."""
    consts, stacked = [], []
    for kind, src in split.res_kinds:
        if kind == "const":
            if src[0] == "literal":
                consts.append(full((), src[1], src[2].dtype, src[2].weak_type))
            elif src[0] == "operand":
                consts.append(known_consts[src[1]])
            else:
                consts.append(src[1])
        elif kind == "xs":
            stacked.append(known_xs[src])
        else:
            stacked.append(loop_res[src])
    return consts, stacked


def _scan_partial_eval(trace, tracers, jaxpr, length, reverse, num_consts, num_carry):
    nc, nk = num_consts, num_carry
    ny = len(jaxpr.out_avals) - nk
    split = _scan_split(jaxpr, [not t.pval.is_known for t in tracers], nc, nk)
    consts, carry, xs = _split_list(tracers, [nc, nk])
    known_of = lambda ts, uks: [t.pval.const for t, u in zip(ts, uks) if not u]
    const_uk = [not t.pval.is_known for t in consts]
    xs_uk = [not t.pval.is_known for t in xs]
    k_consts = known_of(consts, const_uk)
    k_carry = known_of(carry, split.carry_uk)
    k_xs = known_of(xs, xs_uk)
    n_kk = len(k_carry)
    n_ky = ny - builtins.sum(split.out_uks[nk:])
    known_outs = []
    if len(split.known.out_avals):
        known_outs = scan_p.bind(*k_consts, *k_carry, *k_xs, jaxpr=split.known, length=length,
                                 reverse=reverse, num_consts=len(k_consts), num_carry=n_kk)
    k_carry_out, k_ys, loop_res = _split_list(known_outs, [n_kk, n_ky])
    res_consts, res_stacked = _residual_values(split, k_consts, k_xs, loop_res)
    inst = lambda x: trace.instantiate_const(trace.pure(x))
    unknown_in = [*[inst(r) for r in res_consts],
                  *[t for t, u in zip(consts, const_uk) if u],
                  *[trace.instantiate_const(t) for t, u in zip(carry, split.carry_uk) if u],
                  *[inst(r) for r in res_stacked],
                  *[t for t, u in zip(xs, xs_uk) if u]]
    unknown_outs = iter(trace.default_process(scan_p, unknown_in, dict(
        jaxpr=split.unknown, length=length, reverse=reverse,
        num_consts=len(res_consts) + builtins.sum(const_uk),
        num_carry=builtins.sum(split.carry_uk))))
    known_it = iter([*k_carry_out, *k_ys])
    return [next(unknown_outs) if u else trace.pure(next(known_it)) for u in split.out_uks]


def _scan_transpose(cts, *args, jaxpr, length, reverse, num_consts, num_carry):
    nc, nk = num_consts, num_carry
    ny = len(jaxpr.out_avals) - nk
    linear = [is_undefined_primal(a) for a in args]
    # A carry is linear if its update reads a linear value (a tangent carry may start from
    # known zeros); the non-linear part is computed by a known scan first (rematerialized).
    split = _scan_split(jaxpr, linear, nc, nk)
    consts, carry, xs = _split_list(args, [nc, nk])
    const_lin, xs_lin = [is_undefined_primal(c) for c in consts], [is_undefined_primal(x)
                                                                    for x in xs]
    k_consts = [c for c, l in zip(consts, const_lin) if not l]
    k_xs = [x for x, l in zip(xs, xs_lin) if not l]
    loop_res = []
    if any(kind == "loop" for kind, _ in split.res_kinds):
        k_carry = [c for c, u in zip(carry, split.carry_uk) if not u]
        outs = scan_p.bind(*k_consts, *k_carry, *k_xs, jaxpr=split.known, length=length,
                           reverse=reverse, num_consts=len(k_consts), num_carry=len(k_carry))
        n_known_out = len(k_carry) + ny - builtins.sum(split.out_uks[nk:])
        loop_res = outs[n_known_out:]
    res_consts, res_stacked = _residual_values(split, k_consts, k_xs, loop_res)

    lin_out = split.out_uks
    ct_carry = [ad.instantiate_zeros(ct) for ct, u in zip(cts[:nk], lin_out[:nk]) if u]
    ct_ys = [ct for ct, u in zip(cts[nk:], lin_out[nk:]) if u]
    ys_nz = tuple(_nonzero(ct) for ct in ct_ys)
    body_t = memoized("scan_transpose", split.unknown, (len(res_consts), len(res_stacked), ys_nz),
                      lambda: _transpose_body(split.unknown, len(res_consts), len(res_stacked),
                                              builtins.sum(const_lin), len(ct_carry), ys_nz))
    lin_const_avals = [c.aval for c in consts if is_undefined_primal(c)]
    outs = scan_p.bind(*res_consts, *[_zeros(a) for a in lin_const_avals], *ct_carry,
                       *res_stacked, *[ct for ct in ct_ys if _nonzero(ct)], jaxpr=body_t,
                       length=length, reverse=not reverse, num_consts=len(res_consts),
                       num_carry=len(lin_const_avals) + len(ct_carry))
    ct_consts, ct_init, ct_xs = _split_list(outs, [len(lin_const_avals), len(ct_carry)])
    ct_consts, ct_init, ct_xs = iter(ct_consts), iter(ct_init), iter(ct_xs)
    result = [next(ct_consts) if l else None for l in const_lin]
    for c, u in zip(carry, split.carry_uk):
        ct = next(ct_init) if u else None
        result.append(ct if is_undefined_primal(c) else None)
    result += [next(ct_xs) if l else None for l in xs_lin]
    return result


def _transpose_body(linear_body: ClosedJaxpr, n_cres, n_sres, n_lc, n_lk, ys_nz):
    """The body of the transposed scan: `(const residuals, const cotangent accumulators,
    carry cotangents, stacked residuals, nonzero ys cotangents) -> (accumulators, carry
    cotangents, xs cotangents)`."""
    in_avals = linear_body.in_avals
    cres_av, lc_av, lk_av, sres_av, lx_av = _split_list(in_avals, [n_cres, n_lc, n_lk, n_sres])
    ys_av = linear_body.out_avals[n_lk:]

    def fun(*args):
        cres, acc, ct_carry, sres, ct_ys_nz = _split_list(args, [n_cres, n_lc, n_lk, n_sres])
        nz_it = iter(ct_ys_nz)
        ct_ys = [next(nz_it) if z else Zero(a) for z, a in zip(ys_nz, ys_av)]
        primals = [*cres, *[UndefinedPrimal(a) for a in lc_av + lk_av], *sres,
                   *[UndefinedPrimal(a) for a in lx_av]]
        cts_in = ad.backward_pass(linear_body.jaxpr, linear_body.consts, primals,
                                  [*ct_carry, *ct_ys])
        ct_c, ct_k, _, ct_x = _split_list(cts_in[n_cres:], [n_lc, n_lk, n_sres])
        new_acc = [ad.add_tangents(a, c) for a, c in zip(acc, ct_c)]
        return [*new_acc, *[ad.instantiate_zeros(c) for c in ct_k],
                *[ad.instantiate_zeros(c) for c in ct_x]]

    return stage(fun, [*cres_av, *lc_av, *lk_av, *sres_av,
                       *[a for a, z in zip(ys_av, ys_nz) if z]], "transpose")


def _scan_batch(axis_size, vals, dims, jaxpr, length, reverse, num_consts, num_carry):
    nc, nk = num_consts, num_carry
    ny = len(jaxpr.out_avals) - nk
    consts, carry, xs = _split_list(vals, [nc, nk])
    const_d, carry_d, xs_d = _split_list(dims, [nc, nk])
    const_b, xs_b = [d is not None for d in const_d], [d is not None for d in xs_d]
    carry_b = _fixpoint([d is not None for d in carry_d], lambda m: _batch(
        jaxpr, axis_size, const_b + m + xs_b, [False] * (nk + ny))[1][:nk])
    body, out_b = _batch(jaxpr, axis_size, const_b + carry_b + xs_b, carry_b + [False] * ny)
    consts = [batching.moveaxis(c, d, 0) if d is not None else c for c, d in zip(consts, const_d)]
    carry = [batching.bdim_at_front(c, d, axis_size) if b else c
             for c, d, b in zip(carry, carry_d, carry_b)]
    # The scanned axis stays first; the body sees each slice with its batch axis first.
    xs = [batching.moveaxis(x, d, 1) if d is not None else x for x, d in zip(xs, xs_d)]
    outs = scan_p.bind(*consts, *carry, *xs, jaxpr=body, length=length, reverse=reverse,
                       num_consts=nc, num_carry=nk)
    return outs, [0 if b else None for b in carry_b] + [1 if b else None for b in out_b[nk:]]


_scan_batch.needs_axis_size = True
ad.primitive_jvps[scan_p] = _scan_jvp
ad.partial_eval_rules[scan_p] = _scan_partial_eval
ad.primitive_transposes[scan_p] = _scan_transpose
batching.primitive_batchers[scan_p] = _scan_batch


def scan(f, init, xs=None, length=None, reverse=False, unroll=1):
    """Loops `carry, y = f(carry, x)` over the leading axis of `xs`; returns the final carry
    and the stacked `y`s. `unroll` is accepted for compatibility (it does not change results;
    the reference executor loops one step at a time)."""
    if not callable(f):
        raise TypeError("scan: f argument should be a callable.")
    if not isinstance(unroll, (bool, int)) or (not isinstance(unroll, bool) and unroll < 1):
        raise ValueError(f"scan: unroll must be a positive int or a bool, got {unroll!r}.")
    xs_flat, xs_tree = tree_flatten(xs)
    xs_flat = [_canon(x) for x in xs_flat]
    x_avals = [get_aval(x) for x in xs_flat]
    if any(a.ndim == 0 for a in x_avals):
        raise ValueError("scan got value with no leading axis to scan over: "
                         + ", ".join(str(x) for x, a in zip(xs_flat, x_avals) if a.ndim == 0)
                         + ".")
    lengths = [a.shape[0] for a in x_avals]
    if length is not None:
        length = core.concrete_or_error(operator.index, length,
                                        "The `length` argument to `scan` expects a concrete "
                                        "`int` value")
        if any(n != length for n in lengths):
            raise ValueError(f"scan got `length` argument of {length} which disagrees with "
                             f"leading axis sizes {lengths}.")
    else:
        if not lengths:
            raise ValueError("scan got no values to scan over and `length` not provided.")
        if len(set(lengths)) > 1:
            raise ValueError("scan got values with different leading axis sizes: "
                             + ", ".join(str(n) for n in lengths) + ".")
        length = lengths[0]
    if config.disable_jit:
        return _scan_python_loop(f, init, xs_flat, xs_tree, length, reverse)
    path_leaves, init_tree = tree_flatten_with_path(init)
    paths = ["carry" + keystr(p) for p, _ in path_leaves]
    init_flat = [_canon(x) for _, x in path_leaves]
    slice_avals = [a.update(shape=a.shape[1:]) for a in x_avals]
    args_tree = tree_flatten((init, xs))[1]
    y_store = []

    def body(carry, x):
        out = f(carry, x)
        if not (isinstance(out, (tuple, list)) and len(out) == 2):
            raise TypeError(f"scan body output must be a pair, got {tree_flatten(out)[1]}.")
        carry_out, y = out
        carry_leaves, carry_tree = tree_flatten(carry_out)
        if carry_tree != init_tree:
            raise TypeError("scan body function carry input and carry output must have the same "
                            f"pytree structure, but they differ:\n  input carry: {init_tree}\n"
                            f"  output carry: {carry_tree}.")
        y_leaves, y_tree = tree_flatten(y)
        y_store.append(y_tree)
        return (carry_leaves, y_leaves)

    for _ in range(2):
        carry_avals = [get_aval(c) for c in init_flat]
        y_store.clear()
        jaxpr, consts, _ = _trace(body, args_tree, [*carry_avals, *slice_avals], "scan body")
        carry_out_avals = jaxpr.out_avals[:len(init_flat)]
        init_flat, changed = _promote_weak(init_flat, carry_avals, carry_out_avals)
        if not changed:
            break
    _check_carry("scan body", paths, carry_avals, carry_out_avals)
    outs = scan_p.bind(*consts, *init_flat, *xs_flat, jaxpr=jaxpr, length=int(length),
                       reverse=bool(reverse), num_consts=len(consts), num_carry=len(init_flat))
    nk = len(init_flat)
    return tree_unflatten(init_tree, outs[:nk]), tree_unflatten(y_store[-1], outs[nk:])


def _scan_python_loop(f, init, xs_flat, xs_tree, length, reverse):
    """scan under disable_jit: the loop runs in Python, one call of `f` per step."""
    if length == 0:
        raise ValueError("zero-length scan is not supported in disable_jit() mode because the "
                         "output type is unknown.")
    carry, ys = init, []
    for i in (range(length - 1, -1, -1) if reverse else range(length)):
        x = tree_unflatten(xs_tree, [index_in_dim(v, i, 0, keepdims=False) for v in xs_flat])
        carry, y = f(carry, x)
        ys.append(y)
    if reverse:
        ys.reverse()
    stack = lambda *leaves: concatenate([expand_dims(v, (0,)) for v in leaves], 0)
    return carry, tree_map(stack, *ys)


# --- loops built on the primitives -------------------------------------------------------------

def fori_loop(lower, upper, body_fun, init_val, *, unroll=None):
    """`for i in range(lower, upper): val = body_fun(i, val)`. With concrete bounds it is a scan
    (so reverse-mode differentiable); with traced bounds a while_loop."""
    if not callable(body_fun):
        raise TypeError("lax.fori_loop: body_fun argument should be callable.")
    lower_dt, upper_dt = get_aval(lower).dtype, get_aval(upper).dtype
    if lower_dt.kind not in "iu" or upper_dt.kind not in "iu":
        raise TypeError(f"lax.fori_loop: lower and upper must be integers, got {lower_dt} and "
                        f"{upper_dt}.")
    if lower_dt != upper_dt:
        dt = dtypes.promote_types(lower_dt, upper_dt)
        lower, upper = convert_element_type(lower, dt), convert_element_type(upper, dt)
    try:
        lo, hi = int(lower), int(upper)
    except TypeError:  # traced bounds (ConcretizationTypeError is a TypeError)
        use_scan = False
    else:
        use_scan = True
    if use_scan:
        def step(carry, _):
            i, val = carry
            return (add(i, 1), body_fun(i, val)), None
        (_, result), _ = scan(step, (lower, init_val), None, length=builtins.max(hi - lo, 0),
                              unroll=unroll if unroll is not None else 1)
        return result

    def while_body(carry):
        i, hi_, val = carry
        return add(i, 1), hi_, body_fun(i, val)

    from corejax.lax.elementwise import lt
    _, _, result = while_loop(lambda c: lt(c[0], c[1]), while_body, (lower, upper, init_val))
    return result


def map(f, xs, *, batch_size=None):
    """`stack([f(x) for x in xs])` as a scan over the leading axis; with `batch_size`, a scan
    over batches of `f` vectorized with vmap (the remainder in one more vmapped call)."""
    if batch_size is None:
        return scan(lambda _, x: ((), f(x)), (), xs)[1]
    from corejax.api import vmap
    leaves, tree = tree_flatten(xs)
    n = get_aval(leaves[0]).shape[0]
    num_batches, rem = divmod(n, int(batch_size))
    main = [slice_in_dim(x, 0, num_batches * batch_size, 1, 0) for x in leaves]
    main = [reshape(x, (num_batches, batch_size) + get_aval(x).shape[1:]) for x in main]
    _, ys = scan(lambda _, x: ((), vmap(f)(x)), (), tree_unflatten(tree, main))
    ys = tree_map(lambda y: reshape(y, (-1,) + get_aval(y).shape[2:])
                  if get_aval(y).shape[0] else reshape(y, (0,) + get_aval(y).shape[2:]), ys)
    if rem:
        rest = tree_unflatten(tree, [slice_in_dim(x, n - rem, n, 1, 0) for x in leaves])
        ys = tree_map(lambda a, b: concatenate([a, b], 0), ys, vmap(f)(rest))
    return ys


def associative_scan(fn, elems, reverse=False, axis=0):
    """All prefix reductions `fn(...fn(fn(e0, e1), e2)..., ek)` of an associative `fn`, in
    O(log n) vectorized steps (Blelloch's odd/even recursion; JAX's algorithm)."""
    leaves, tree = tree_flatten(elems)
    if not leaves:
        return elems
    ndim = get_aval(leaves[0]).ndim
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"associative_scan: axis {axis} is out of bounds for array of "
                         f"dimension {ndim}.")
    axis %= ndim
    sizes = {get_aval(x).shape[axis] for x in leaves}
    if len(sizes) != 1:
        raise ValueError("Array inputs to associative_scan must have the same first dimension. "
                         f"(saw: {sorted(sizes)})")
    if reverse:
        leaves = [rev(x, (axis,)) for x in leaves]

    def combine(a, b):
        out = fn(tree_unflatten(tree, a), tree_unflatten(tree, b))
        out_leaves, out_tree = tree_flatten(out)
        if out_tree != tree:
            raise TypeError("associative_scan: fn must return a pytree of the same structure "
                            f"as elems, got {out_tree} and {tree}.")
        return out_leaves

    def size(xs):
        return get_aval(xs[0]).shape[axis]

    def sl(xs, start, stop, stride=1):
        return [slice_in_dim(x, start, stop, stride, axis) for x in xs]

    def interleave(a, b):
        na, nb = get_aval(a).shape[axis], get_aval(b).shape[axis]
        cfg_a = [(0, 0, 0)] * ndim
        cfg_b = [(0, 0, 0)] * ndim
        cfg_a[axis] = (0, 1 if na == nb else 0, 1)
        cfg_b[axis] = (1, 0 if na == nb else 1, 1)
        op = bitwise_or if get_aval(a).dtype == np.bool_ else add
        return op(pad(a, full((), 0, get_aval(a).dtype), cfg_a),
                  pad(b, full((), 0, get_aval(b).dtype), cfg_b))

    def recurse(xs):
        n = size(xs)
        if n < 2:
            return xs
        reduced = combine(sl(xs, 0, n - 1, 2), sl(xs, 1, n, 2))
        odd = recurse(reduced)
        if n % 2 == 0:
            even = combine(sl(odd, 0, size(odd) - 1), sl(xs, 2, n, 2))
        else:
            even = combine(odd, sl(xs, 2, n, 2))
        even = [concatenate([slice_in_dim(x, 0, 1, 1, axis), e], axis)
                for x, e in zip(xs, even)]
        return [interleave(e, o) for e, o in zip(even, odd)]

    out = recurse(leaves)
    if reverse:
        out = [rev(x, (axis,)) for x in out]
    return tree_unflatten(tree, out)
