"""Sums over a scan's iterations taken out of the loop: one product over the stacked operands.

The backward pass of a recurrent layer is a reverse scan whose carries accumulate the weight
gradients: at every step `dW = dW + h_t^T @ dgates_t` (and `db = db + sum(dgates_t)`), a GEMM
whose reduction is one batch of rows long (32 for a batch of 32): BLAS runs such thin products
at a fraction of its speed, and the loop pays for one per step and per weight. The sum over the
steps is itself a reduction. When a carry is touched by nothing but that accumulation, the scan
returns the two operands of each step's product as stacked outputs instead (where they are not
already its stacked inputs), and after the loop one dot_general contracts the step axis along
with the product's own: the weight gradient of a 64-step LSTM is then a GEMM whose reduction is
64 x 32 long. A `reduce_sum` accumulation (a bias gradient) becomes one reduction over the
stacked values likewise. View operations between the product and the addition (the slices
that cut a fused gate kernel's gradient into its gates, transposes, reshapes) are linear and
move along: they apply to the total.

The sum is then taken in another order (one GEMM's blocking rather than step after step), so
the last bits of such a gradient change; the compiled-loop and Python-driven executions of a
program see the same transformed program and agree with each other bit for bit.
"""
from __future__ import annotations

import weakref

from corejax.core import ClosedJaxpr, Jaxpr, ShapedArray, Var

__all__ = ["scan_sums", "scan_products", "scan_views", "scan_layouts", "plain_scan"]

_SCAN_PARAMS = frozenset({"jaxpr", "length", "reverse", "num_consts", "num_carry"})
# Linear maps of one operand that commute with a sum over the steps.
_VIEWS = frozenset({"slice", "transpose", "reshape", "squeeze", "expand_dims"})
_ADDS = frozenset({"add", "add_any"})
_memo: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def plain_scan(eqn) -> bool:
    """Whether `eqn` is a scan with JAX's parameters only, at least one step and a closed body:
    the scans the loop passes (here and passes.scan_invariants) rewrite."""
    p = eqn.params
    return eqn.primitive.name == "scan" and frozenset(p) == _SCAN_PARAMS and \
        p["length"] >= 1 and isinstance(p["jaxpr"], ClosedJaxpr)


class _Sum:
    """A carry `k` that accumulates `chain(root)` each step with the equation `add`."""

    def __init__(self, k, root, chain, add):
        self.k, self.root, self.chain, self.add = k, root, chain, add


def _find_sums(body: ClosedJaxpr, nc: int, nk: int) -> tuple:
    j = body.jaxpr
    producer = {v: e for e in j.eqns for v in e.outvars}
    uses: dict = {}
    for e in j.eqns:
        for v in e.invars:
            if type(v) is Var:
                uses[v] = uses.get(v, 0) + 1
    for v in j.outvars:
        if type(v) is Var:
            uses[v] = uses.get(v, 0) + 1
    consts = set(j.invars[:nc]) | set(j.constvars)     # and what is computed from them alone
    for e in j.eqns:
        if all(type(x) is not Var or x in consts for x in e.invars):
            consts.update(e.outvars)
    carries = j.invars[nc:nc + nk]
    found = []
    for k, (cin, cout) in enumerate(zip(carries, j.outvars[:nk])):
        add = producer.get(cout) if type(cout) is Var else None
        if add is None or add.primitive.name not in _ADDS or uses.get(cin) != 1 or \
                uses.get(cout) != 1 or cin.aval.dtype.kind not in "fc" or \
                cout in j.outvars[nk:]:
            continue
        a, b = add.invars
        if a is cin and b is not cin:
            v = b
        elif b is cin and a is not cin:
            v = a
        else:
            continue
        chain = []
        while type(v) is Var and v in producer and producer[v].primitive.name in _VIEWS \
                and len(producer[v].invars) == 1:
            chain.append(producer[v])
            v = producer[v].invars[0]
        root = producer.get(v) if type(v) is Var else None
        if root is None or v.aval.shape != tuple(root.outvars[0].aval.shape) or \
                len(root.outvars) != 1 or any(type(x) is not Var or x in consts or x in carries
                                               for x in root.invars):
            continue
        name = root.primitive.name
        if name == "dot_general" and root.params.get("preferred_element_type") in (
                None, v.aval.dtype) and root.invars[0].aval.dtype == v.aval.dtype:
            found.append(_Sum(k, root, chain[::-1], add))
        elif name == "reduce_sum":
            found.append(_Sum(k, root, chain[::-1], add))
    # A product (or a view of it) the body reads for anything else would be computed twice:
    # every reader of the values on the kept chains must be an equation of those chains
    # (chains may share a prefix: one transpose of a fused kernel's gradient, sliced per gate).
    while found:
        readers: dict = {}
        for f in found:
            for e in f.chain + [f.add]:
                for x in e.invars:
                    readers.setdefault(x, set()).add(id(e))
        bad = {v for f in found for v in [f.root.outvars[0]] + [e.outvars[0] for e in f.chain]
               if len(readers.get(v, ())) != uses.get(v)}
        kept = [f for f in found if not ({f.root.outvars[0]} | {e.outvars[0] for e in f.chain})
                & bad]
        if len(kept) == len(found):
            break
        found = kept
    return tuple(found)


def _body_dce(eqns, outvars):
    live = {v for v in outvars if type(v) is Var}
    kept = []
    for e in reversed(eqns):
        if any(v in live for v in e.outvars):
            kept.append(e)
            live.update(v for v in e.invars if type(v) is Var)
    return kept[::-1]


def _rewrite(body: ClosedJaxpr, nc: int, nk: int):
    """(sums, the new body, the body Vars returned as new stacked outputs), or None; memoized
    per body (compiled loops are cached by body)."""
    per = _memo.setdefault(body, {})
    key = (nc, nk)
    if key in per:
        return per[key]
    sums = _find_sums(body, nc, nk)
    if not sums:
        per[key] = None
        return None
    j = body.jaxpr
    xs_in = j.invars[nc + nk:]
    gone = {s.k for s in sums}
    new_ys = []
    for s in sums:
        for x in s.root.invars:
            if x not in xs_in and x not in new_ys:
                new_ys.append(x)
    outvars = [v for k, v in enumerate(j.outvars[:nk]) if k not in gone] + \
        list(j.outvars[nk:]) + new_ys
    eqns = _body_dce(j.eqns, outvars)
    invars = j.invars[:nc] + [v for k, v in enumerate(j.invars[nc:nc + nk]) if k not in gone] \
        + list(xs_in)
    new_body = ClosedJaxpr(Jaxpr(j.constvars, invars, eqns, outvars, j.debug_info), body.consts)
    out = (sums, new_body, new_ys)
    per[key] = out
    return out


def _stacked(v, length):
    return Var(ShapedArray((length,) + tuple(v.aval.shape), v.aval.dtype, v.aval.weak_type))


def _total(root, operands):
    """The root equation over stacked operands, the step axis (0) summed too."""
    p = dict(root.params)
    if root.primitive.name == "reduce_sum":
        p["axes"] = (0,) + tuple(a + 1 for a in p["axes"])
    else:
        (lc, rc), (lb, rb) = p["dimension_numbers"]
        shift = lambda dims: tuple(d + 1 for d in dims)
        p["dimension_numbers"] = (((0,) + shift(lc), (0,) + shift(rc)), (shift(lb), shift(rb)))
    return root._replace(invars=list(operands), outvars=[Var(root.outvars[0].aval)], params=p)


def scan_sums(closed: ClosedJaxpr) -> ClosedJaxpr:
    """Carries that only accumulate a per-step product (or reduce_sum), seen through view
    operations, are computed after the scan as one product over the stacked operands."""
    eqns: list = []
    changed = False
    for eqn in closed.jaxpr.eqns:
        p = eqn.params
        if not plain_scan(eqn):
            eqns.append(eqn)
            continue
        body, nc, nk, length = p["jaxpr"], p["num_consts"], p["num_carry"], p["length"]
        found = _rewrite(body, nc, nk)
        if found is None:
            eqns.append(eqn)
            continue
        changed = True
        sums, new_body, new_ys = found
        gone = {s.k for s in sums}
        xs_in = body.jaxpr.invars[nc + nk:]
        stacked = dict(zip(xs_in, eqn.invars[nc + nk:]))
        extra = [_stacked(v, length) for v in new_ys]
        stacked.update(zip(new_ys, extra))
        inits = eqn.invars[nc:nc + nk]
        finals = eqn.outvars[:nk]
        invars = list(eqn.invars[:nc]) + [v for k, v in enumerate(inits) if k not in gone] \
            + list(eqn.invars[nc + nk:])
        outvars = [v for k, v in enumerate(finals) if k not in gone] + \
            list(eqn.outvars[nk:]) + extra
        eqns.append(eqn._replace(invars=invars, outvars=outvars,
                                 params={**p, "jaxpr": new_body,
                                         "num_carry": nk - len(gone)}))
        totals: dict = {}       # body Var on a chain -> the Var of its sum over the steps
        for s in sums:
            root_out = s.root.outvars[0]
            if root_out not in totals:
                t = _total(s.root, [stacked[x] for x in s.root.invars])
                eqns.append(t)
                totals[root_out] = t.outvars[0]
            for view in s.chain:
                if view.outvars[0] not in totals:
                    e = view._replace(invars=[totals[view.invars[0]]],
                                      outvars=[Var(view.outvars[0].aval)])
                    eqns.append(e)
                    totals[view.outvars[0]] = e.outvars[0]
            v = totals[(s.chain[-1] if s.chain else s.root).outvars[0]]
            eqns.append(s.add._replace(invars=[inits[s.k], v], outvars=[finals[s.k]]))
    if not changed:
        return closed
    j = closed.jaxpr
    return ClosedJaxpr(Jaxpr(j.constvars, j.invars, eqns, j.outvars, j.debug_info),
                       closed.consts)


# --- per-step products with a loop constant, out of the loop ------------------------------------

def _plain_dot(e) -> bool:
    if e.primitive.name != "dot_general":
        return False
    (lc, rc), (lb, rb) = e.params["dimension_numbers"]
    return not lb and not rb and \
        e.params.get("preferred_element_type") in (None, e.outvars[0].aval.dtype)


def _find_products(body: ClosedJaxpr, nc: int, nk: int):
    """([(eqn, side of the stepping operand)] computable before the loop: the stepping
    operand is a stacked input; [(eqn, side)] computable after it: the product is only
    returned stacked), for products of one stepping operand with a loop constant."""
    j = body.jaxpr
    consts = set(j.invars[:nc]) | set(j.constvars)
    for e in j.eqns:     # views of the constants the body takes (kernels fold them there)
        if e.primitive.name in _VIEWS and all(type(x) is not Var or x in consts
                                              for x in e.invars):
            consts.update(e.outvars)
    xs_in = set(j.invars[nc + nk:])
    ys_pos: dict = {}
    for i, v in enumerate(j.outvars[nk:]):
        if type(v) is Var:
            ys_pos.setdefault(v, []).append(i)
    read = {x for e in j.eqns for x in e.invars if type(x) is Var} | \
        {v for v in j.outvars[:nk] if type(v) is Var}
    before, after = [], []
    for e in j.eqns:
        if not _plain_dot(e) or any(type(x) is not Var for x in e.invars):
            continue
        sides = [i for i, x in enumerate(e.invars) if x not in consts]
        if len(sides) != 1:
            continue
        s = sides[0]
        if e.invars[s] in xs_in:
            before.append((e, s))
        elif len(ys_pos.get(e.outvars[0], ())) == 1 and e.outvars[0] not in read:
            after.append((e, s))
    return before, after


def _stacked_dot(e, s, operands, length):
    """[equations] computing e's product for every step at once from `operands` (the stepping
    one stacked along a leading axis), the step axis first in the result."""
    (lc, rc), lrb = e.params["dimension_numbers"]
    if s == 0:
        lc = tuple(d + 1 for d in lc)
    else:
        rc = tuple(d + 1 for d in rc)
    out = e.outvars[0]
    prod = Var(ShapedArray((length,) + tuple(out.aval.shape), out.aval.dtype,
                           out.aval.weak_type))
    if s == 0:
        return [e._replace(invars=list(operands), outvars=[prod],
                           params={**e.params, "dimension_numbers": ((lc, rc), lrb)})], prod
    from corejax.lax.structural import transpose_p
    n_lhs_free = operands[0].aval.ndim - len(lc)
    raw_shape = out.aval.shape[:n_lhs_free] + (length,) + out.aval.shape[n_lhs_free:]
    raw = Var(ShapedArray(tuple(raw_shape), out.aval.dtype, out.aval.weak_type))
    dot = e._replace(invars=list(operands), outvars=[raw],
                     params={**e.params, "dimension_numbers": ((lc, rc), lrb)})
    perm = (n_lhs_free,) + tuple(range(n_lhs_free)) + \
        tuple(range(n_lhs_free + 1, len(raw_shape)))
    return [dot, e._replace(primitive=transpose_p, invars=[raw], outvars=[prod],
                            params={"permutation": perm})], prod


def _rewrite_products(body: ClosedJaxpr, nc: int, nk: int):
    per = _memo.setdefault(body, {})
    key = ("products", nc, nk)
    if key in per:
        return per[key]
    before, after = _find_products(body, nc, nk)
    if not before and not after:
        per[key] = None
        return None
    j = body.jaxpr
    moved = {id(e) for e, _ in before + after}
    new_xs = [Var(e.outvars[0].aval) for e, _ in before]
    env = {e.outvars[0]: v for (e, _), v in zip(before, new_xs)}
    eqns = [e._replace(invars=[env.get(x, x) if type(x) is Var else x for x in e.invars])
            for e in j.eqns if id(e) not in moved]
    after_outs = {e.outvars[0] for e, _ in after}
    ys = [v for v in j.outvars[nk:]]
    kept_ys = [i for i, v in enumerate(ys) if v not in after_outs]
    xs_in = j.invars[nc + nk:]
    new_ys = []
    for e, s in after:
        x = e.invars[s]
        if x not in xs_in and x not in new_ys:
            new_ys.append(x)
    outvars = [env.get(v, v) if type(v) is Var else v for v in j.outvars[:nk]] + \
        [ys[i] for i in kept_ys] + new_ys
    eqns = _body_dce(eqns, outvars)
    invars = list(j.invars) + new_xs
    new_body = ClosedJaxpr(Jaxpr(j.constvars, invars, eqns, outvars, j.debug_info), body.consts)
    out = (before, after, new_body, kept_ys, new_ys)
    per[key] = out
    return out


def scan_products(closed: ClosedJaxpr) -> ClosedJaxpr:
    """Products of a loop constant with a scan's stacked input run before the loop as one
    product over all steps (an LSTM's input projection), and products with a loop constant
    that the body only returns stacked run after it (the input gradient of its backward
    pass): one GEMM over steps x batch rows instead of one thin GEMM per step. Each product
    element is the same sum of the same terms, in the order BLAS takes them."""
    eqns: list = []
    changed = False
    for eqn in closed.jaxpr.eqns:
        p = eqn.params
        if not plain_scan(eqn) or p["jaxpr"].consts:
            eqns.append(eqn)
            continue
        body, nc, nk, length = p["jaxpr"], p["num_consts"], p["num_carry"], p["length"]
        found = _rewrite_products(body, nc, nk)
        if found is None:
            eqns.append(eqn)
            continue
        changed = True
        before, after, new_body, kept_ys, new_ys = found
        j = body.jaxpr
        outer = dict(zip(j.invars, eqn.invars))      # consts and stacked inputs
        producer = {v: e for e in j.eqns for v in e.outvars}

        def outside(x):
            """x's value outside the loop (a view of the loop's constants is made again)."""
            if x not in outer:
                e = producer[x]
                new = e._replace(invars=[outside(a) if type(a) is Var else a for a in e.invars],
                                 outvars=[Var(v.aval) for v in e.outvars])
                eqns.append(new)
                outer.update(zip(e.outvars, new.outvars))
            return outer[x]
        stacked_in = []
        for e, s in before:
            ops = [outside(x) for x in e.invars]
            new, prod = _stacked_dot(e, s, ops, length)
            eqns.extend(new)
            stacked_in.append(prod)
        ys_out = eqn.outvars[nk:]
        extra = [_stacked(v, length) for v in new_ys]
        outvars = list(eqn.outvars[:nk]) + [ys_out[i] for i in kept_ys] + extra
        eqns.append(eqn._replace(invars=list(eqn.invars) + stacked_in, outvars=outvars,
                                 params={**p, "jaxpr": new_body}))
        stacked = dict(zip(new_ys, extra))
        xs_in = j.invars[nc + nk:]
        stacked.update(zip(xs_in, eqn.invars[nc + nk:]))
        ys_body = j.outvars[nk:]
        for e, s in after:
            ops = [stacked[x] if i == s else outside(x) for i, x in enumerate(e.invars)]
            new, _ = _stacked_dot(e, s, ops, length)
            target = ys_out[[i for i, v in enumerate(ys_body) if v is e.outvars[0]][0]]
            eqns.extend(new[:-1] + [new[-1]._replace(outvars=[target])])
    if not changed:
        return closed
    j = closed.jaxpr
    return ClosedJaxpr(Jaxpr(j.constvars, j.invars, eqns, j.outvars, j.debug_info),
                       closed.consts)



# --- transposes of stacked outputs, after the loop ---------------------------------------------

def _rewrite_views(body: ClosedJaxpr, nc: int, nk: int):
    """(the body returning, in place of each stacked transpose of a per-step value, that
    value; {output index: that transpose equation}), or None; memoized per body."""
    per = _memo.setdefault(body, {})
    key = ("views", nc, nk)
    if key in per:
        return per[key]
    j = body.jaxpr
    consts = set(j.invars[:nc])
    producer = {v: e for e in j.eqns for v in e.outvars}
    outvars = list(j.outvars)
    moved: dict = {}
    for i in range(nk, len(outvars)):
        e = producer.get(outvars[i]) if type(outvars[i]) is Var else None
        if e is None or e.primitive.name != "transpose" or type(e.invars[0]) is not Var \
                or e.invars[0] in consts:
            continue
        outvars[i] = e.invars[0]
        moved[i - nk] = e
    out = None
    if moved:
        new = ClosedJaxpr(Jaxpr(j.constvars, j.invars, _body_dce(j.eqns, outvars), outvars,
                                j.debug_info), body.consts)
        out = (new, moved)
    per[key] = out
    return out


def scan_views(closed: ClosedJaxpr) -> ClosedJaxpr:
    """A scan that returns a transpose of a per-step value stacked (a gate gradient
    transposed for the weight gradient's product, once that product has left the loop)
    returns the value itself stacked, and one transpose of the stacked array follows the
    loop, which the product after it reads through (passes.simplify): no transposed copy is
    made at every step. The same elements, so the same bits."""
    eqns: list = []
    changed = False
    for eqn in closed.jaxpr.eqns:
        p = eqn.params
        found = _rewrite_views(p["jaxpr"], p["num_consts"], p["num_carry"]) \
            if plain_scan(eqn) else None
        if found is None:
            eqns.append(eqn)
            continue
        changed = True
        new_body, moved = found
        nk = p["num_carry"]
        outvars = list(eqn.outvars)
        after = []
        for i, t in moved.items():
            stacked = _stacked(t.invars[0], p["length"])
            perm = (0,) + tuple(d + 1 for d in t.params["permutation"])
            after.append(t._replace(invars=[stacked], outvars=[outvars[nk + i]],
                                    params={**t.params, "permutation": perm}))
            outvars[nk + i] = stacked
        eqns.append(eqn._replace(outvars=outvars, params={**p, "jaxpr": new_body}))
        eqns.extend(after)
    if not changed:
        return closed
    j = closed.jaxpr
    return ClosedJaxpr(Jaxpr(j.constvars, j.invars, eqns, j.outvars, j.debug_info),
                       closed.consts)


# --- loop constants laid out for the loop's products -------------------------------------------

def _transposed_reads(body: ClosedJaxpr, nc: int):
    """{const index: [dot equations]} of the 2-D loop constants that body products read as
    their right operand contracted over its last dimension ((m, k) . (n, k)^T), memoized."""
    per = _memo.setdefault(body, {})
    key = ("layouts", nc)
    if key not in per:
        consts = {v: i for i, v in enumerate(body.jaxpr.invars[:nc])}
        # W.T written in the body: the product reads through it (passes.simplify)
        transposed = {e.outvars[0]: e.invars[0] for e in body.jaxpr.eqns
                      if e.primitive.name == "transpose" and e.params["permutation"] == (1, 0)
                      and type(e.invars[0]) is Var and e.invars[0] in consts}
        found: dict = {}
        for e in body.jaxpr.eqns:
            if not _plain_dot(e):
                continue
            lhs, rhs = e.invars
            contract = e.params["dimension_numbers"][0]
            if contract == ((1,), (0,)) and type(rhs) is Var and rhs in transposed:
                rhs = transposed[rhs]
            elif contract != ((1,), (1,)):
                continue
            if type(rhs) is Var and rhs in consts and rhs.aval.ndim == 2 and lhs is not rhs \
                    and getattr(lhs, "aval", None) is not None and lhs.aval.ndim == 2:
                found.setdefault(consts[rhs], []).append(e)
        per[key] = found
    return per[key]


def scan_layouts(closed: ClosedJaxpr) -> ClosedJaxpr:
    """A product in a loop body that reads a loop constant W (n, k) transposed, x @ W.T, runs
    on BLAS as an NT product, which packs W's panels across its rows at every step: with the
    few rows of a recurrent step, OpenBLAS took 660-720 us for (32, 2048) @ (512, 2048)^T
    against 455-475 us for the same product of a (2048, 512) C array (2 threads; 1250 against
    830 on one; never slower over the shapes tried). The loop then gets W transposed once,
    before it (a copy, fused with the transpose: one pass over W), as a constant of its own,
    and the product reads it as it is. A product by other means than before, so the last bits
    of its result may change."""
    from corejax.lax.elementwise import copy_p
    from corejax.lax.structural import transpose_p
    eqns: list = []
    changed = False
    for eqn in closed.jaxpr.eqns:
        p = eqn.params
        found = _transposed_reads(p["jaxpr"], p["num_consts"]) \
            if plain_scan(eqn) and p["length"] >= 2 else {}
        if not found:
            eqns.append(eqn)
            continue
        changed = True
        body, nc = p["jaxpr"], p["num_consts"]
        j = body.jaxpr
        new_consts, new_outer, swap = [], [], {}
        for i, dots in found.items():
            w = j.invars[i]
            n, k = w.aval.shape
            aval = w.aval.update(shape=(k, n), weak_type=False)
            inner = Var(aval)
            new_consts.append(inner)
            t, c = Var(aval), Var(aval)
            eqns.append(eqn._replace(primitive=transpose_p, invars=[eqn.invars[i]], outvars=[t],
                                     params={"permutation": (1, 0)}))
            eqns.append(eqn._replace(primitive=copy_p, invars=[t], outvars=[c], params={}))
            new_outer.append(c)
            for d in dots:
                swap[id(d)] = d._replace(
                    invars=[d.invars[0], inner],
                    params={**d.params, "dimension_numbers": (((1,), (0,)), ((), ()))})
        body_eqns = [swap.get(id(e), e) for e in j.eqns]
        new_body = ClosedJaxpr(Jaxpr(j.constvars, list(j.invars[:nc]) + new_consts +
                                     list(j.invars[nc:]), body_eqns, j.outvars, j.debug_info),
                               body.consts)
        eqns.append(eqn._replace(
            invars=list(eqn.invars[:nc]) + new_outer + list(eqn.invars[nc:]),
            params={**p, "jaxpr": new_body, "num_consts": nc + len(new_consts)}))
    if not changed:
        return closed
    j = closed.jaxpr
    return ClosedJaxpr(Jaxpr(j.constvars, j.invars, eqns, j.outvars, j.debug_info),
                       closed.consts)
