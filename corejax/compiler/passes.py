"""Passes on the IR, each a small function ClosedJaxpr -> ClosedJaxpr, run as a named list.

The Jaxprs reaching the compiler are flat programs over Vars; every pass builds new equation
lists and leaves its input untouched (Jaxprs are shared with the tracing caches).
"""
from __future__ import annotations

import weakref

import numpy as np

from corejax.core import ClosedJaxpr, Jaxpr, Literal, Var
from corejax.compiler import eager_kernels, registry
from corejax.compiler.scan_sums import (plain_scan, scan_layouts, scan_products, scan_sums,
                                         scan_views)

__all__ = ["PASSES", "run_passes", "inline_calls", "simplify", "fold_constants", "cse", "dce",
           "scan_invariants", "scan_dedupe"]

_FOLD_MAX_SIZE = 1 << 16


def _substitute(atom, env):
    return env.get(atom, atom) if type(atom) is Var else atom


def _rebuild(closed: ClosedJaxpr, eqns, outvars, constvars=None, consts=None) -> ClosedJaxpr:
    j = closed.jaxpr
    jaxpr = Jaxpr(j.constvars if constvars is None else constvars, j.invars, eqns, outvars,
                  j.debug_info)
    return ClosedJaxpr(jaxpr, closed.consts if consts is None else consts)


# --- inlining ------------------------------------------------------------------------------

def inline_calls(closed: ClosedJaxpr) -> ClosedJaxpr:
    """Replaces the equations of call-like primitives (registry.call_params: jit,
    custom_jvp_call, custom_vjp_call, checkpoint) by their bodies."""
    constvars, consts = list(closed.jaxpr.constvars), list(closed.consts)
    eqns: list = []

    def emit(jaxpr, env, fresh):
        for eqn in jaxpr.eqns:
            invars = [_substitute(v, env) for v in eqn.invars]
            pname = registry.call_params.get(eqn.primitive)
            if pname is not None and isinstance(eqn.params.get(pname), ClosedJaxpr):
                sub = eqn.params[pname]
                sub_env = dict(zip(sub.jaxpr.invars, invars))
                for cv, c in zip(sub.jaxpr.constvars, sub.consts):
                    nv = Var(cv.aval)
                    constvars.append(nv)
                    consts.append(c)
                    sub_env[cv] = nv
                outs = emit(sub.jaxpr, sub_env, True)
                for v, o in zip(eqn.outvars, outs):
                    env[v] = o
                continue
            outvars = list(eqn.outvars)
            if fresh:
                outvars = [Var(v.aval) for v in eqn.outvars]
                env.update(zip(eqn.outvars, outvars))
            eqns.append(eqn._replace(invars=invars, outvars=outvars))
        return [_substitute(v, env) for v in jaxpr.outvars]

    # Equations of the top-level Jaxpr keep their Vars; bodies get fresh ones per inlining.
    outs = emit(closed.jaxpr, {}, False)
    if len(eqns) == len(closed.jaxpr.eqns) and all(
            a is b for a, b in zip(eqns, closed.jaxpr.eqns)):
        return closed
    return _rebuild(closed, eqns, outs, constvars, consts)


# --- simplification ------------------------------------------------------------------------

def _scalar_value(atom, known):
    """The scalar every element of `atom` equals, if statically known."""
    if type(atom) is Literal:
        return np.asarray(atom.val).item() if np.ndim(atom.val) == 0 else None
    return known.get(atom)


def simplify(closed: ClosedJaxpr) -> ClosedJaxpr:
    """Algebraic identities: x*1, 1*x, x+0 (integers), x-0, x/1, double transpose, reshape
    of reshape, conversion to the same dtype, no-op broadcasts, reshapes and pads, a transposed
    matrix product computed as the product of the swapped operands, products reading
    the operands of transposes instead of their results, relu masks read off the relu
    (`_clamp_mask`), and sums of zero pads that tile an axis as one concatenation
    (`_concatenation`)."""
    env: dict = {}
    known: dict = {}          # var -> scalar value of a broadcast constant
    producer: dict = {}       # var -> the equation that defines it
    uses: dict = {}
    stored: set = set()       # vars kept in memory: what an unfused step reads, the outputs
    clamps: dict = {}         # (max|min, x, c) -> max(x, c) / min(x, c) of a stored result
    tiles: dict = {}          # var -> (axis, [(offset, piece)]): a sum of zero pads (_pad_tile)
    for eqn in closed.jaxpr.eqns:
        for v in eqn.invars:
            if type(v) is Var:
                uses[v] = uses.get(v, 0) + 1
                if _unfused(eqn.primitive):
                    stored.add(v)
    for v in closed.jaxpr.outvars:
        if type(v) is Var:
            uses[v] = uses.get(v, 0) + 1
            stored.add(v)
    eqns = []
    for eqn in closed.jaxpr.eqns:
        invars = [_substitute(v, env) for v in eqn.invars]
        eqn = eqn._replace(invars=invars)
        name = eqn.primitive.name
        out = eqn.outvars[0] if len(eqn.outvars) == 1 else None
        replacement = None
        if out is not None:
            replacement = _identity(name, eqn, invars, out, known)
        if replacement is not None:
            env[out] = replacement
            continue
        if name == "transpose" and _is_swappable_dot(producer.get(invars[0]), eqn) \
                and uses.get(invars[0]) == 1:
            # transpose(a . b) = b . a for matrix products: no transposed copy afterwards.
            dot = producer[invars[0]]
            (lc, rc), _ = dot.params["dimension_numbers"]
            swapped = {**dot.params, "dimension_numbers": ((rc, lc), ((), ()))}
            eqns.remove(dot)
            eqn = dot._replace(invars=dot.invars[::-1], params=swapped, outvars=eqn.outvars)
        elif name == "transpose" and type(invars[0]) is Var and invars[0] in producer \
                and producer[invars[0]].primitive.name == "transpose":
            inner = producer[invars[0]]
            p1, p2 = inner.params["permutation"], eqn.params["permutation"]
            perm = tuple(p1[p] for p in p2)
            if perm == tuple(range(len(perm))):
                env[out] = inner.invars[0]
                continue
            eqn = eqn._replace(invars=[inner.invars[0]], params={**eqn.params, "permutation": perm})
        elif name == "dot_general":
            eqn = _read_through_transposes(eqn, producer)
        elif name == "reshape" and type(invars[0]) is Var and invars[0] in producer \
                and producer[invars[0]].primitive.name == "reshape" \
                and producer[invars[0]].params.get("dimensions") is None \
                and eqn.params.get("dimensions") is None:
            src = producer[invars[0]].invars[0]
            if getattr(src, "aval", None) is not None and src.aval.shape == out.aval.shape:
                env[out] = src
                continue
            eqn = eqn._replace(invars=[src])
        elif name in ("gt", "lt"):
            eqn = _clamp_mask(eqn, clamps)
        elif name == "pad":
            tile = _pad_tile(eqn, invars, known)
            if tile is not None and uses.get(out) == 1:
                tiles[out] = tile
        elif name in ("add", "add_any") and all(type(v) is Var and v in tiles for v in invars):
            merged = _merged_tiles(tiles[invars[0]], tiles[invars[1]], out)
            concatenation = None if merged is None else _concatenation(merged, out, eqn)
            if concatenation is not None:
                for e in concatenation:
                    producer[e.outvars[0]] = e
                eqns += concatenation
                continue
            if merged is not None and uses.get(out) == 1:
                tiles[out] = merged
        if name == "broadcast_in_dim":
            val = _scalar_value(invars[0], known)
            if val is not None:
                known[out] = val
        elif name in ("max", "min") and out in stored:
            x, c = invars
            clamps[name, _atom_key(x), _atom_key(c)] = clamps[name, _atom_key(c), _atom_key(x)] \
                = out
        for v in eqn.outvars:
            producer[v] = eqn
        eqns.append(eqn)
    outs = [_substitute(v, env) for v in closed.jaxpr.outvars]
    return _rebuild(closed, eqns, outs)


def _unfused(prim) -> bool:
    """Whether no fused kernel takes an equation of `prim`, on any backend, so that it reads
    its operands from memory (`registry`): not elementwise, not a group's trailing
    reduction, not a layout op (some of which kernels fold into their indexing). BLAS
    products, convolutions, gathers, control flow and the like."""
    if prim in registry.elementwise_lowerings:
        return False
    kind = registry.kernel_lowerings.get(prim)
    return kind is None or kind[0] not in ("reduce", "layout")


def _clamp_mask(eqn, clamps):
    """gt(x, c) as gt(max(x, c), c), and lt(x, c) as lt(min(x, c), c), where that max / min
    is computed and stored anyway: the same bits for every x and c (NaNs included: lax's max
    and min propagate them, and no comparison with a NaN holds), and a relu's backward
    mask then reads the relu's output, which its next layer's product keeps, instead of
    keeping the pre-activation alive until the backward pass (which the relu's kernel can
    then overwrite in place)."""
    x, c = eqn.invars
    y = clamps.get(("max" if eqn.primitive.name == "gt" else "min", _atom_key(x), _atom_key(c)))
    if y is None or y.aval.shape != x.aval.shape or y.aval.dtype != x.aval.dtype:
        return eqn
    return eqn._replace(invars=[y, c])


def _read_through_transposes(dot, producer):
    """dot_general(transpose(x, perm), ...) reads x, with its dimension numbers mapped through
    perm (dimension d of the transpose is dimension perm[d] of x), when the free dimensions
    keep their order (dot_general lists them in increasing order). The transposed value is
    then never materialized for the product; BLAS reads x with its transpose flag."""
    (lc, rc), (lb, rb) = dot.params["dimension_numbers"]
    dims = [[lc, lb], [rc, rb]]
    invars = list(dot.invars)
    changed = False
    for side, x in enumerate(invars):
        t = producer.get(x) if type(x) is Var else None
        if t is None or t.primitive.name != "transpose":
            continue
        perm = t.params["permutation"]
        contract, batch = dims[side]
        free = [d for d in range(len(perm)) if d not in contract and d not in batch]
        if any(perm[a] > perm[b] for a, b in zip(free, free[1:])):
            continue
        dims[side] = [tuple(perm[d] for d in contract), tuple(perm[d] for d in batch)]
        invars[side] = t.invars[0]
        changed = True
    if not changed:
        return dot
    (lc, lb), (rc, rb) = dims
    return dot._replace(invars=invars, params={**dot.params,
                                               "dimension_numbers": ((lc, rc), (lb, rb))})


def _is_swappable_dot(dot, transpose_eqn) -> bool:
    if dot is None or dot.primitive.name != "dot_general":
        return False
    (lc, rc), (lb, rb) = dot.params["dimension_numbers"]
    lhs, rhs = dot.invars
    return (not lb and transpose_eqn.params["permutation"] == (1, 0)
            and lhs.aval.ndim - len(lc) == 1 and rhs.aval.ndim - len(rc) == 1)


def _same_aval(atom, out) -> bool:
    a = atom.aval
    return a.shape == out.aval.shape and a.dtype == out.aval.dtype


def _identity(name, eqn, invars, out, known):
    """The operand an equation is equal to, or None."""
    if name in ("mul", "add", "sub", "div") and len(invars) == 2:
        x, y = invars
        unit = 1 if name in ("mul", "div") else 0
        if _scalar_value(y, known) == unit and _same_aval(x, out) and \
                not _is_neg_zero_sensitive(name, y, known):
            return x
        if name in ("mul", "add") and _scalar_value(x, known) == unit and _same_aval(y, out) \
                and not _is_neg_zero_sensitive(name, x, known):
            return y
        return None
    if name == "convert_element_type" and invars[0].aval.dtype == eqn.params["new_dtype"]:
        return invars[0] if _same_aval(invars[0], out) else None
    if name in ("broadcast_in_dim", "reshape", "stop_gradient", "squeeze") and \
            _same_aval(invars[0], out) and (name != "broadcast_in_dim" or eqn.params[
                "broadcast_dimensions"] == tuple(range(out.aval.ndim))):
        return invars[0]
    if name == "transpose" and eqn.params["permutation"] == tuple(range(out.aval.ndim)):
        return invars[0]
    if name == "pad" and not any(any(c) for c in eqn.params["padding_config"]):
        return invars[0]
    return None


# --- sums of zero pads -------------------------------------------------------------------
# The transpose of slicing an array into pieces (jnp.split, the gates of an LSTM cell, the
# query/key/value of an attention layer) is a zero pad per piece, and the cotangents add up:
# add_any(pad(a), pad(b), ...), each pad filling the whole result. When the pieces tile one
# axis, the sum is their concatenation, except that every element also had zeros added to it:
# -0.0 + 0.0 is +0.0. Each floating piece therefore gets `+ 0.0` (an elementwise add, fused
# into the kernel that computes the piece), and the result keeps its bits.

def _extent(piece, axis) -> int:
    return piece.aval.shape[axis]


def _pad_tile(eqn, invars, known):
    """(axis, [(offset, piece)]) for a pad with zeros along one axis only, else None."""
    x, fill = invars
    config = eqn.params["padding_config"]
    if _scalar_value(fill, known) != 0 or x.aval.dtype.kind not in "fciu" or \
            any(lo < 0 or hi < 0 or it for lo, hi, it in config):
        return None
    axes = [i for i, (lo, hi, _) in enumerate(config) if lo or hi]
    if len(axes) != 1:
        return None
    return axes[0], [(config[axes[0]][0], x)]


def _merged_tiles(a, b, out):
    """The tiles of a + b when both tile the same axis with pieces that do not overlap."""
    if a[0] != b[0] or any(p.aval.dtype != out.aval.dtype for _, p in a[1] + b[1]):
        return None
    axis = a[0]
    pieces = sorted(a[1] + b[1], key=lambda t: t[0])
    for (o1, p1), (o2, _) in zip(pieces, pieces[1:]):
        if o1 + _extent(p1, axis) > o2:
            return None
    return axis, pieces


def _concatenation(tiles, out, like) -> list:
    """Equations computing `out` from pieces that tile its axis without gaps."""
    from corejax.lax.elementwise import add_p
    from corejax.lax.structural import broadcast_in_dim_p, concatenate_p
    axis, pieces = tiles
    ends = [o + _extent(p, axis) for o, p in pieces]
    if pieces[0][0] != 0 or ends[-1] != out.aval.shape[axis] or \
            any(e != o for e, (o, _) in zip(ends, pieces[1:])):
        return None
    eqns, operands = [], []
    dtype = out.aval.dtype
    for _, p in pieces:
        if dtype.kind in "fc":      # -0.0 + 0.0 = +0.0, as the sum of pads computed it
            shape = tuple(p.aval.shape)
            zero_aval = p.aval.update(shape=(), weak_type=False)
            zeros = Var(p.aval.update(weak_type=False))
            eqns.append(like._replace(primitive=broadcast_in_dim_p,
                                      invars=[Literal(dtype.type(0), zero_aval)],
                                      params={"shape": shape, "broadcast_dimensions": ()},
                                      outvars=[zeros]))
            q = Var(p.aval)
            eqns.append(like._replace(primitive=add_p, invars=[p, zeros], params={},
                                      outvars=[q]))
            p = q
        operands.append(p)
    eqns.append(like._replace(primitive=concatenate_p, invars=operands,
                              params={"dimension": axis}, outvars=[out]))
    return eqns


def _is_neg_zero_sensitive(name, zero_atom, known) -> bool:
    # x + 0.0 is not x when x is -0.0 (the sum is +0.0); x - 0.0 and x * 1 are exact.
    return name == "add" and zero_atom.aval.dtype.kind == "f"


# --- constant folding ----------------------------------------------------------------------

_NO_FOLD = {"broadcast_in_dim", "iota"}   # free inside kernels; folding would materialize them


def fold_constants(closed: ClosedJaxpr) -> ClosedJaxpr:
    """Evaluates equations whose operands are all constants (small results only): scalar
    results become Literals, others new constvars."""
    values = {v: c for v, c in zip(closed.jaxpr.constvars, closed.consts)}
    constvars, consts = list(closed.jaxpr.constvars), list(closed.consts)
    env: dict = {}
    eqns = []
    from corejax.array import to_numpy
    for eqn in closed.jaxpr.eqns:
        invars = [_substitute(v, env) for v in eqn.invars]
        eqn = eqn._replace(invars=invars)
        prim = eqn.primitive
        foldable = (invars and prim.name not in _NO_FOLD and prim not in registry.effectful
                    and not any(isinstance(p, (ClosedJaxpr, Jaxpr)) for p in eqn.params.values())
                    and all(type(v) is Literal or v in values for v in invars)
                    and all(v.aval.size <= _FOLD_MAX_SIZE for v in eqn.outvars))
        if foldable:
            args = [np.asarray(v.val, v.aval.dtype) if type(v) is Literal else to_numpy(values[v])
                    for v in invars]
            try:
                with np.errstate(all="ignore"):
                    # the bits the program's kernel would compute (eager_kernels), else impl
                    outs = eager_kernels.evaluate(prim, args, eqn.params)
                    if outs is None:
                        outs = prim.impl(*args, **eqn.params)
            except Exception:
                outs = None
            if outs is not None:
                outs = outs if prim.multiple_results else [outs]
                for v, o in zip(eqn.outvars, outs):
                    o = np.asarray(to_numpy(o), v.aval.dtype)
                    if o.shape == ():
                        env[v] = Literal(o[()], v.aval)
                    else:
                        nv = Var(v.aval)
                        constvars.append(nv)
                        consts.append(o)
                        values[nv] = o
                        env[v] = nv
                continue
        eqns.append(eqn)
    outs = [_substitute(v, env) for v in closed.jaxpr.outvars]
    if len(constvars) == len(closed.jaxpr.constvars) and not env:
        return closed
    return _rebuild(closed, eqns, outs, constvars, consts)


# --- common-subexpression elimination ------------------------------------------------------

def _atom_key(atom):
    if type(atom) is Literal:
        return ("lit", np.asarray(atom.val).item(), atom.aval.dtype.name, atom.aval.weak_type)
    return id(atom)


def _params_key(params):
    try:
        key = tuple(sorted((k, v) for k, v in params.items()))
        hash(key)
        return key
    except TypeError:
        return None


def cse(closed: ClosedJaxpr) -> ClosedJaxpr:
    """Equal equations (same primitive, operands and params) are computed once."""
    env: dict = {}
    seen: dict = {}
    eqns = []
    for eqn in closed.jaxpr.eqns:
        invars = [_substitute(v, env) for v in eqn.invars]
        eqn = eqn._replace(invars=invars)
        pk = None if has_effects(eqn) else _params_key(eqn.params)
        if pk is not None:
            key = (eqn.primitive, tuple(map(_atom_key, invars)), pk)
            prev = seen.get(key)
            if prev is not None:
                for v, p in zip(eqn.outvars, prev.outvars):
                    env[v] = p
                continue
            seen[key] = eqn
        eqns.append(eqn)
    outs = [_substitute(v, env) for v in closed.jaxpr.outvars]
    return _rebuild(closed, eqns, outs)


# --- effects -------------------------------------------------------------------------------

def _sub_jaxprs(value):
    if isinstance(value, ClosedJaxpr):
        yield value.jaxpr
    elif isinstance(value, Jaxpr):
        yield value
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _sub_jaxprs(item)


def has_effects(eqn, _memo: dict | None = None) -> bool:
    """Whether an equation has an effect: an effectful primitive (a debug print, a callback),
    or a control-flow or call primitive whose body holds one (a print in a cond branch must
    stay when the cond has no used results)."""
    if eqn.primitive in registry.effectful:
        return True
    memo = {} if _memo is None else _memo
    for value in eqn.params.values():
        for jaxpr in _sub_jaxprs(value):
            key = id(jaxpr)
            if key not in memo:
                memo[key] = False
                memo[key] = any(has_effects(e, memo) for e in jaxpr.eqns)
            if memo[key]:
                return True
    return False


# --- loop-invariant code in scans ------------------------------------------------------------

# layout ops the executor runs as views (or kernels fold into their indexing): left in the
# body, where they cost nothing, rather than materialized outside as the loop's constants
_VIEW_OPS = frozenset({"broadcast_in_dim", "reshape", "transpose", "squeeze", "expand_dims",
                       "rev", "slice", "split", "iota", "dynamic_slice"})
_licm_memo: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _pure(eqn) -> bool:
    return not has_effects(eqn) and \
        not any(True for p in eqn.params.values() for _ in _sub_jaxprs(p))


def _split_body(body: ClosedJaxpr, nc: int, nk: int, as_consts: tuple):
    """The loop-invariant part of a scan body whose first `nc` inputs are its constants and
    whose xs inputs at the positions `as_consts` are to become constants too: (equations to
    run before the loop, the new body, the invariant body Vars each new constant input takes,
    the ys positions whose value is loop-invariant with the body Var it is, the number of
    ys). Invariant work leaves the body; invariant views and broadcasts stay in it too (free
    there: kernels fold them), computed outside only where hoisted work or invariant ys read
    them. Memoized per body so that the same scan gets the same new body (compiled loops
    are cached by body)."""
    key = (nc, nk, as_consts)
    per = _licm_memo.setdefault(body, {})
    if key in per:
        return per[key]
    j = body.jaxpr
    xs_in = j.invars[nc + nk:]
    invariant = set(j.invars[:nc]) | {xs_in[i] for i in as_consts} | set(j.constvars)
    inv_eqns, heavy, kept = [], set(), []
    for eqn in j.eqns:
        vars_in = [v for v in eqn.invars if type(v) is Var]
        if all(v in invariant for v in vars_in) and _pure(eqn):
            invariant.update(eqn.outvars)
            inv_eqns.append(eqn)
            if vars_in and eqn.primitive.name not in _VIEW_OPS:
                heavy.add(id(eqn))
                continue
        kept.append(eqn)
    ny = len(j.outvars) - nk
    inv_ys = {i: v for i, v in enumerate(j.outvars[nk:]) if type(v) is Var and v in invariant}
    if not heavy and not inv_ys and not as_consts:
        per[key] = None
        return None
    # what runs outside: the hoisted work and the invariant ys, with what they read
    want = {v for i, v in inv_ys.items()}
    outside = []
    for eqn in reversed(inv_eqns):
        if id(eqn) in heavy or any(v in want for v in eqn.outvars):
            outside.append(eqn)
            want.update(v for v in eqn.invars if type(v) is Var)
    outside.reverse()
    produced = {v for e in inv_eqns if id(e) in heavy for v in e.outvars}
    needed = []
    for eqn in kept:
        for v in eqn.invars:
            if type(v) is Var and v in produced and v not in needed:
                needed.append(v)
    for i, v in enumerate(j.outvars):
        if (i < nk or i - nk not in inv_ys) and type(v) is Var and v in produced \
                and v not in needed:
            needed.append(v)
    invars = (j.invars[:nc] + [xs_in[i] for i in as_consts] + needed + j.invars[nc:nc + nk]
              + [v for i, v in enumerate(xs_in) if i not in as_consts])
    outvars = j.outvars[:nk] + [v for i, v in enumerate(j.outvars[nk:]) if i not in inv_ys]
    new_body = ClosedJaxpr(Jaxpr(j.constvars, invars, kept, outvars, j.debug_info), body.consts)
    out = (outside, new_body, needed, inv_ys, ny)
    per[key] = out
    return out


def scan_invariants(closed: ClosedJaxpr) -> ClosedJaxpr:
    """Loop-invariant code motion for scans. A scan's xs operand that is a broadcast of one
    value along the scanned axis becomes a constant of the loop (the backward scan of a
    gradient reads the forward's invariant residuals so); body equations reading only the
    loop's constants run once, before the loop, and feed it as constants (an LSTM cell's
    concatenated gate kernels); ys the body returns unchanged from its constants are a
    broadcast of them outside, not a stack written per iteration. The same operations on the
    same values: the bits do not change."""
    from corejax.lax.structural import broadcast_in_dim_p
    constvars, consts = list(closed.jaxpr.constvars), list(closed.consts)
    producer: dict = {}
    eqns: list = []
    changed = False
    for eqn in closed.jaxpr.eqns:
        p = eqn.params
        if not plain_scan(eqn):
            eqns.append(eqn)
            producer.update((v, eqn) for v in eqn.outvars)
            continue
        body, nc, nk, length = p["jaxpr"], p["num_consts"], p["num_carry"], p["length"]
        xs_ops = eqn.invars[nc + nk:]
        xs_in = body.jaxpr.invars[nc + nk:]
        as_consts, sources = [], []
        for i, (a, bv) in enumerate(zip(xs_ops, xs_in)):
            b = producer.get(a) if type(a) is Var else None
            if b is not None and b.primitive is broadcast_in_dim_p and type(b.invars[0]) is Var \
                    and b.invars[0].aval.shape == bv.aval.shape \
                    and b.invars[0].aval.dtype == bv.aval.dtype \
                    and tuple(b.params["broadcast_dimensions"]) == \
                    tuple(range(1, len(bv.aval.shape) + 1)):
                as_consts.append(i)
                sources.append(b.invars[0])
        split = _split_body(body, nc, nk, tuple(as_consts))
        if split is None:
            eqns.append(eqn)
            producer.update((v, eqn) for v in eqn.outvars)
            continue
        changed = True
        hoisted, new_body, needed, inv_ys, ny = split
        env = dict(zip(body.jaxpr.invars[:nc], eqn.invars[:nc]))
        env.update((xs_in[i], s) for i, s in zip(as_consts, sources))
        for cv, c in zip(body.jaxpr.constvars, body.consts):
            nv = Var(cv.aval)
            constvars.append(nv)
            consts.append(c)
            env[cv] = nv
        for h in hoisted:
            outs = [Var(v.aval) for v in h.outvars]
            env.update(zip(h.outvars, outs))
            new = h._replace(invars=[_substitute(v, env) for v in h.invars], outvars=outs)
            eqns.append(new)
            producer.update((v, new) for v in outs)
        ys_out = eqn.outvars[nk:]
        invars = (list(eqn.invars[:nc]) + sources + [env[v] for v in needed]
                  + list(eqn.invars[nc:nc + nk])
                  + [a for i, a in enumerate(xs_ops) if i not in as_consts])
        outvars = list(eqn.outvars[:nk]) + [v for i, v in enumerate(ys_out) if i not in inv_ys]
        params = {**p, "jaxpr": new_body, "num_consts": nc + len(sources) + len(needed)}
        scan = eqn._replace(invars=invars, outvars=outvars, params=params)
        eqns.append(scan)
        producer.update((v, scan) for v in outvars)
        for i, bv in inv_ys.items():
            src = _substitute(bv, env)
            shape = (length,) + tuple(bv.aval.shape)
            b = eqn._replace(primitive=broadcast_in_dim_p, invars=[src], outvars=[ys_out[i]],
                             params={"shape": shape, "broadcast_dimensions":
                                     tuple(range(1, len(bv.aval.shape) + 1))})
            eqns.append(b)
            producer[ys_out[i]] = b
    if not changed:
        return closed
    return _rebuild(closed, eqns, closed.jaxpr.outvars, constvars, consts)


# --- dead-code elimination -----------------------------------------------------------------

_dedupe_memo: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _deduped_body(body: ClosedJaxpr, nc: int, nk: int, same_xs: tuple):
    """(the body reading each stacked input once and returning each stacked value once, the
    stacked inputs kept, for each stacked output the index of the one it equals), or None
    where there is nothing to merge. `same_xs[i]`: the first stacked input whose outer
    operand is the i-th's."""
    per = _dedupe_memo.setdefault(body, {})
    key = (nc, nk, same_xs)
    if key in per:
        return per[key]
    j = body.jaxpr
    xs_in = j.invars[nc + nk:]
    env = {xs_in[i]: xs_in[f] for i, f in enumerate(same_xs) if f != i}
    eqns = [e._replace(invars=[_substitute(v, env) for v in e.invars]) for e in j.eqns]
    kept_xs = [i for i, f in enumerate(same_xs) if f == i]
    invars = list(j.invars[:nc + nk]) + [xs_in[i] for i in kept_xs]
    outvars = [_substitute(v, env) for v in j.outvars]
    j = cse(ClosedJaxpr(Jaxpr(j.constvars, invars, eqns, outvars, j.debug_info),
                        body.consts)).jaxpr
    ys = j.outvars[nk:]
    first: dict = {}
    keep, index = [], []
    for v in ys:
        if type(v) is Var and v in first:
            index.append(first[v])
            continue
        if type(v) is Var:
            first[v] = len(keep)
        index.append(len(keep))
        keep.append(v)
    out = None
    if len(keep) < len(ys) or len(kept_xs) < len(xs_in):
        new = dce(ClosedJaxpr(Jaxpr(j.constvars, j.invars, j.eqns, list(j.outvars[:nk]) + keep,
                                    j.debug_info), body.consts))
        out = (new, kept_xs, index)
    per[key] = out
    return out


def scan_dedupe(closed: ClosedJaxpr) -> ClosedJaxpr:
    """A scan that reads one array as several stacked inputs (two products moved before the
    loop that cse then found equal), or whose body returns one value as several stacked
    outputs (two gradients cse finds equal), reads it and stacks it once: every step's copy,
    and each stacked buffer, were paid once per operand."""
    env: dict = {}
    eqns = []
    changed = False
    for eqn in closed.jaxpr.eqns:
        if env:
            eqn = eqn._replace(invars=[_substitute(v, env) for v in eqn.invars])
        found = None
        if plain_scan(eqn):
            p = eqn.params
            nc, nk = p["num_consts"], p["num_carry"]
            xs = eqn.invars[nc + nk:]
            same_xs = tuple(next(k for k in range(i + 1) if xs[k] is x) if type(x) is Var
                            else i for i, x in enumerate(xs))
            found = _deduped_body(p["jaxpr"], nc, nk, same_xs)
        if found is None:
            eqns.append(eqn)
            continue
        changed = True
        body, kept_xs, index = found
        outs = eqn.outvars
        kept = []
        for i, k in enumerate(index):
            if k == len(kept):
                kept.append(outs[nk + i])
            else:
                env[outs[nk + i]] = kept[k]
        eqns.append(eqn._replace(
            invars=list(eqn.invars[:nc + nk]) + [xs[i] for i in kept_xs],
            outvars=list(outs[:nk]) + kept, params={**p, "jaxpr": body}))
    if not changed:
        return closed
    return _rebuild(closed, eqns, [_substitute(v, env) for v in closed.jaxpr.outvars])


def dce(closed: ClosedJaxpr) -> ClosedJaxpr:
    """Drops equations whose results are unused (effectful ones, like debug prints, stay),
    and constants nothing reads."""
    live = {v for v in closed.jaxpr.outvars if type(v) is Var}
    kept = []
    memo: dict = {}
    for eqn in reversed(closed.jaxpr.eqns):
        if any(v in live for v in eqn.outvars) or has_effects(eqn, memo):
            kept.append(eqn)
            live.update(v for v in eqn.invars if type(v) is Var)
    kept.reverse()
    pairs = [(v, c) for v, c in zip(closed.jaxpr.constvars, closed.consts) if v in live]
    return _rebuild(closed, kept, closed.jaxpr.outvars, [v for v, _ in pairs],
                    [c for _, c in pairs])


PASSES = [
    ("inline", inline_calls),
    ("simplify", simplify),
    ("fold_constants", fold_constants),
    ("cse", cse),
    ("scan_invariants", scan_invariants),
    ("scan_sums", scan_sums),
    ("scan_products", scan_products),
    ("scan_views", scan_views),
    ("cse", cse),
    ("scan_dedupe", scan_dedupe),
    ("scan_layouts", scan_layouts),
    ("simplify", simplify),
    ("dce", dce),
]


def run_passes(closed: ClosedJaxpr, passes=None) -> ClosedJaxpr:
    for _, p in (PASSES if passes is None else passes):
        closed = p(closed)
    return closed
