"""`while_p` with all of its rules, then the user-facing `while_loop` and `fori_loop`.

`while_p(*cond_consts, *body_consts, *carry, cond_jaxpr, body_jaxpr, cond_nconsts,
body_nconsts)` iterates the body while the cond jaxpr returns True. Its trip count is not
known ahead of time, so it can be linearized but not transposed: `fori_loop` with concrete
bounds is therefore a scan, which reverse mode supports.
"""
from __future__ import annotations

import builtins

import numpy as np

from corejax import core, dtypes
from corejax.config import config
from corejax.core import ClosedJaxpr, Primitive, get_aval
from corejax.lax.control_flow.common import (_aval_str, _batch, _canon, _check_carry, _fixpoint,
                                             _jvp, _promote_weak, _reorder, _run, _split,
                                             _split_list, _tangent_mask, _trace, _typematch)
from corejax.lax.control_flow.scans import scan
from corejax.lax.elementwise import add, convert_element_type, lt, select_n
from corejax.lax.reductions import reduce_or
from corejax.lax.structural import broadcast_in_dim
from corejax.transforms import ad, batching
from corejax.transforms.ad import Zero
from corejax.transforms.jit import closed_call, memoized, stage
from corejax._tree_traced import tree_flatten, tree_flatten_with_path, tree_unflatten
from corejax.tree_util import keystr
from corejax._traceback import api_boundary
from corejax import _ref_state
from corejax import _key_reuse


_WHILE_TRANSPOSE_ERROR = (
    "Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop with dynamic "
    "start/stop values. Try using lax.scan, or using fori_loop with static start/stop.")


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
    """`closed` taking extra inputs it ignores: the jvp loop's cond sees the tangent carries
    too, but the predicate depends on primals only."""
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
    # Known by the fixpoint, not by the tracer: a known initial carry that the body makes
    # unknown (a tangent carry fed by an unknown const) belongs to the unknown loop.
    known = lambda ts, uks: [t.pval.const for t, u in zip(ts, uks) if not u]
    known_outs = iter(while_p.bind(*known(cconsts, cc_uk), *known(bconsts, bc_uk),
                                   *known(carry, carry_uk),
                                   cond_jaxpr=known_cond, body_jaxpr=known_body,
                                   cond_nconsts=len(known(cconsts, cc_uk)),
                                   body_nconsts=len(known(bconsts, bc_uk))))
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


@api_boundary
def while_loop(cond_fun, body_fun, init_val):
    """`while cond_fun(val): val = body_fun(val)`, staged; reverse-mode differentiation through
    it is not supported (use scan or a fori_loop with static bounds)."""
    if not (callable(cond_fun) and callable(body_fun)):
        raise TypeError("lax.while_loop: cond_fun and body_fun arguments should be callable.")
    return _ref_state.thread_while(_while_loop, cond_fun, body_fun, init_val)


def _while_loop(cond_fun, body_fun, init_val):
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
        cond_reuse, body_reuse = _key_reuse.signatures(), _key_reuse.signatures()
        cond_jaxpr, cond_consts, _ = _trace(cond_fun, args_tree, avals, "cond_fun", cond_reuse)
        outs = cond_jaxpr.out_avals
        if len(outs) != 1 or outs[0].shape != () or outs[0].dtype != np.bool_:
            raise TypeError("cond_fun must return a boolean scalar, but got output type(s) "
                            f"{[_aval_str(a) for a in outs]}.")
        body_jaxpr, body_consts, body_out = _trace(body_fun, args_tree, avals, "body_fun",
                                                   body_reuse)
        out_tree = tree_flatten(body_out)[1]
        if out_tree != in_tree:
            raise TypeError("body_fun output and input must have identical types, got\n"
                            f"  output tree: {out_tree}\n  input tree: {in_tree}.")
        init, changed = _promote_weak(init, avals, body_jaxpr.out_avals)
        if not changed:
            break
    _check_carry("while_loop body", paths, avals, body_jaxpr.out_avals)
    forwarded = body_reuse and _key_reuse.loop_operands(
        "while", body_reuse[-1], (init_val,), len(init), len(cond_consts) + len(body_consts),
        cond_reuse[-1])
    outs = while_p.bind(*cond_consts, *body_consts, *init, cond_jaxpr=cond_jaxpr,
                        body_jaxpr=body_jaxpr, cond_nconsts=len(cond_consts),
                        body_nconsts=len(body_consts))
    return _key_reuse.alias(tree_unflatten(in_tree, outs), forwarded)


# --- fori_loop: a scan with concrete bounds, else a while ----------------------------------------

@api_boundary
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

    _, _, result = while_loop(lambda c: lt(c[0], c[1]), while_body, (lower, upper, init_val))
    return result
