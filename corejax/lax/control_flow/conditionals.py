"""`cond_p` with all of its rules, then the user-facing `cond` and `switch`.

`cond_p(index, *operands, branches)` runs `branches[index]` (index clamped). The branches share
one signature: the closed-over values of every branch come first, then the user's operands.
"""
from __future__ import annotations

import builtins
from functools import partial

import numpy as np

from corejax import core
from corejax.config import config
from corejax.core import ClosedJaxpr, Primitive, Tracer, get_aval
from corejax.lax.control_flow.common import (_aval_str, _batch, _canon, _jvp, _run, _split,
                                             _tangent_mask, _trace, _typematch, _zeros)
from corejax.lax.elementwise import clamp, convert_element_type, ne, select_n
from corejax.lax.structural import broadcast_in_dim
from corejax.transforms import ad, batching
from corejax.transforms.ad import Zero, is_undefined_primal
from corejax.transforms.jit import closed_call, memoized, stage, transpose_jaxpr
from corejax._tree_traced import tree_flatten, tree_flatten_with_path, tree_unflatten
from corejax.tree_util import keystr
from corejax._traceback import api_boundary
from corejax import _ref_state
from corejax import _key_reuse


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
    """The staged call of `funs[index](*operands)`; mutable array references the branches
    close over are threaded through as extra operands and outputs."""
    return _ref_state.thread_branches(_branch_call_pure, index, funs, names, operands, what,
                                      order)


def _branch_call_pure(index, funs, names, operands, what, order):
    ops, in_tree = tree_flatten(tuple(operands))
    ops = [_canon(x) for x in ops]
    in_avals = [get_aval(x) for x in ops]
    reuse = _key_reuse.signatures()
    traced = [_trace(f, in_tree, in_avals, name, reuse) for f, name in zip(funs, names)]
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
    forwarded = reuse and _key_reuse.cond_operands(reuse, operands, len(all_consts))
    outs = cond_p.bind(index, *all_consts, *ops, branches=tuple(branches))
    return _key_reuse.alias(tree_unflatten(out_tree, outs), forwarded)


@api_boundary
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


@api_boundary
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
