"""`scan_p` with all of its rules, then the user-facing `scan`, `map` and `associative_scan`.

`scan_p(*consts, *carry, *xs, jaxpr, length, reverse, num_consts, num_carry)`: the body maps
`(consts, carry, x) -> (carry, y)`; it returns the final carry and the stacked ys.

Reverse mode follows JAX: the partial-evaluation rule splits a scan into a known scan (which
also emits the residuals the tangent computation needs, stacked per iteration) and an unknown,
linear scan; transposing that linear scan is a scan in the other direction.

(The module is `scans`, not `scan`, so that `corejax.lax.control_flow.scan` names only the
function the package re-exports, never this module.)
"""
from __future__ import annotations

import builtins
import operator
from typing import NamedTuple

import numpy as np

from corejax import core
from corejax.config import config
from corejax.core import ClosedJaxpr, Primitive, ShapedArray, get_aval
from corejax.lax.control_flow.common import (_aval_str, _batch, _canon, _check_carry, _fixpoint,
                                             _jvp, _nonzero, _promote_weak, _reorder, _run,
                                             _split, _split_list, _tangent_mask, _trace,
                                             _typematch, _zeros)
from corejax.lax.elementwise import add, bitwise_or, full
from corejax.lax.structural import (concatenate, expand_dims, index_in_dim, pad, reshape, rev,
                                    slice_in_dim)
from corejax.transforms import ad, batching
from corejax.transforms.ad import UndefinedPrimal, Zero, is_undefined_primal
from corejax.transforms.jit import memoized, stage
from corejax._tree_traced import tree_flatten, tree_flatten_with_path, tree_map, tree_unflatten
from corejax.tree_util import keystr
from corejax._traceback import api_boundary
from corejax import _ref_state
from corejax import _key_reuse


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


@api_boundary
def scan(f, init, xs=None, length=None, reverse=False, unroll=1):
    """Loops `carry, y = f(carry, x)` over the leading axis of `xs`; returns the final carry
    and the stacked `y`s. `unroll` is accepted for compatibility (it does not change results;
    the reference executor loops one step at a time). Mutable array references `f` closes
    over are threaded through the loop as extra carries."""
    return _ref_state.thread_scan(_scan, f, init, xs, length, reverse, unroll)


def _scan(f, init, xs=None, length=None, reverse=False, unroll=1):
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
        reuse = _key_reuse.signatures()
        jaxpr, consts, _ = _trace(body, args_tree, [*carry_avals, *slice_avals], "scan body",
                                  reuse)
        carry_out_avals = jaxpr.out_avals[:len(init_flat)]
        init_flat, changed = _promote_weak(init_flat, carry_avals, carry_out_avals)
        if not changed:
            break
    _check_carry("scan body", paths, carry_avals, carry_out_avals)
    forwarded = reuse and _key_reuse.loop_operands("scan", reuse[-1], (init, xs),
                                                   len(init_flat), len(consts))
    outs = scan_p.bind(*consts, *init_flat, *xs_flat, jaxpr=jaxpr, length=int(length),
                       reverse=bool(reverse), num_consts=len(consts), num_carry=len(init_flat))
    nk = len(init_flat)
    return (_key_reuse.alias(tree_unflatten(init_tree, outs[:nk]), forwarded),
            tree_unflatten(y_store[-1], outs[nk:]))


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


# --- built on scan and lax ops, with no primitive of their own -----------------------------------

@api_boundary
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
    ys = tree_map(lambda y: reshape(y, (num_batches * batch_size,) + get_aval(y).shape[2:]),
                  ys)
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
