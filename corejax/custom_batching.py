"""Custom vmap rules: `custom_vmap` and `sequential_vmap` (JAX's jax.custom_batching).

`f = custom_vmap(fun)` with `@f.def_vmap` `rule(axis_size, in_batched, *args) -> (out,
out_batched)` binds `custom_vmap_call`, whose body is `fun`'s Jaxpr. Under vmap the rule runs
instead of batching the body: it gets the arguments with their batch axis first (unbatched
ones as they are) and `in_batched`, a list of bool pytrees like the arguments, and returns the
outputs and which of them are batched (a bool pytree, or one bool for all).

Under jvp the primal output is `custom_vmap_call` again, and so is the tangent: a call whose
body is the JVP of `fun` and whose rule is the JVP of `rule`, so that `vmap` of a derivative
still uses the rule. Reverse mode transposes the tangent call's body.
"""
from __future__ import annotations

import functools
from typing import Callable

from corejax import core
from corejax.core import ClosedJaxpr, Primitive, Tracer, get_aval
from corejax.transforms import ad, batching
from corejax.transforms.ad import Zero
from corejax.transforms.jit import closed_call, jvp_jaxpr, stage
from corejax._tree_traced import tree_flatten, tree_leaves, tree_map, tree_unflatten

__all__ = ["custom_vmap", "sequential_vmap"]

custom_vmap_p = Primitive("custom_vmap_call")
custom_vmap_p.multiple_results = True


def _impl(*args, call: ClosedJaxpr, rule):
    return [core.full_lower(o) for o in closed_call(call, *args)]


custom_vmap_p.def_impl(_impl)
custom_vmap_p.def_abstract_eval(lambda *avals, call, rule: call.out_avals)
custom_vmap_p.weak_type_rule = lambda *args, call, rule: [a.weak_type for a in call.out_avals]


def _batch(axis_size, vals, dims, *, call, rule):
    front = [v if d is None else batching.moveaxis(v, d, 0) for v, d in zip(vals, dims)]
    outs, out_batched = rule(axis_size, [d is not None for d in dims], *front)
    return outs, [0 if b else None for b in out_batched]


_batch.needs_axis_size = True


class _FlatRule:
    """The user's rule on flat operands: `(axis_size, flat in_batched, *leaves) -> (flat outs,
    flat out_batched)`."""

    def __init__(self, rule: Callable, in_tree, out_tree):
        self.rule, self.in_tree, self.out_tree = rule, in_tree, out_tree

    def __call__(self, axis_size, in_batched, *leaves):
        args = tree_unflatten(self.in_tree, list(leaves))
        batched = tree_unflatten(self.in_tree, list(in_batched))
        result = self.rule(axis_size, list(batched), *args)
        if not (isinstance(result, tuple) and len(result) == 2):
            raise TypeError(f"custom_vmap rule {getattr(self.rule, '__name__', self.rule)} "
                            "must return a pair (outputs, out_batched)")
        out, out_batched = result
        out_leaves, tree = tree_flatten(out)
        if tree != self.out_tree:
            raise ValueError(f"custom_vmap rule output {tree} does not match the function's "
                             f"output {self.out_tree}")
        if isinstance(out_batched, bool):
            flags = [out_batched] * len(out_leaves)
        else:
            flags = _broadcast_prefix(out_batched, out)
        # an output the rule leaves unbatched is returned as such: its batch axis is None
        return out_leaves, flags

    def __repr__(self):
        return f"_FlatRule({getattr(self.rule, '__name__', self.rule)})"


def _broadcast_prefix(prefix, tree) -> list:
    flags = []
    for p, sub in zip(tree_leaves(prefix), _prefix_subtrees(prefix, tree)):
        flags += [bool(p)] * len(tree_leaves(sub))
    return flags


def _prefix_subtrees(prefix, tree):
    if not isinstance(prefix, (tuple, list, dict)):
        return [tree]
    if isinstance(prefix, dict):
        return [s for k in sorted(prefix) for s in _prefix_subtrees(prefix[k], tree[k])]
    if len(prefix) != len(tree):
        raise ValueError("custom_vmap rule's out_batched does not match its output structure")
    return [s for p, t in zip(prefix, tree) for s in _prefix_subtrees(p, t)]


class _JvpRule:
    """The batching rule of the tangent call: the JVP of the primal rule. Operands whose
    primal and tangent differ in batchedness are broadcast so that the rule sees one flag per
    argument; a tangent output is batched where its primal output is."""

    def __init__(self, rule, nonzeros):
        self.rule, self.nonzeros = rule, tuple(nonzeros)

    def __call__(self, axis_size, in_batched, *vals):
        from corejax.api import jvp
        n = len(self.nonzeros)
        primals, tangents = list(vals[:n]), list(vals[n:])
        p_flags, t_flags = list(in_batched[:n]), list(in_batched[n:])
        full_t, flags, it = [], [], iter(zip(tangents, t_flags))
        for p, pb, nz in zip(primals, p_flags, self.nonzeros):
            if nz:
                t, tb = next(it)
            else:
                t, tb = ad.instantiate_zeros(Zero(get_aval(p).to_tangent_aval())), False
            b = pb or tb
            full_t.append(_batched(t, tb, b, axis_size))
            flags.append(b)
        primals = [_batched(p, pb, b, axis_size) for p, pb, b in zip(primals, p_flags, flags)]
        box = {}

        def primal_rule(*ps):
            outs, out_flags = self.rule(axis_size, flags, *ps)
            box["flags"] = out_flags
            return outs

        _, t_outs = jvp(primal_rule, primals, full_t)
        return list(t_outs), box["flags"]


def _batched(x, is_batched, want, axis_size):
    return batching.bdim_at_front(x, None, axis_size) if want and not is_batched else x


def _tangent_jaxpr(call: ClosedJaxpr, nonzeros) -> ClosedJaxpr:
    full = jvp_jaxpr(call, nonzeros)
    n_out = len(call.out_avals)

    def fun(*args):
        return closed_call(full, *args)[n_out:]

    avals = [*call.in_avals, *[a.to_tangent_aval() for a, nz in zip(call.in_avals, nonzeros)
                               if nz]]
    return stage(fun, avals, "custom_vmap_jvp")


def _jvp(primals, tangents, *, call, rule):
    nonzeros = [type(t) is not Zero for t in tangents]
    outs = custom_vmap_p.bind(*primals, call=call, rule=rule)
    nz_tangents = [t for t in tangents if type(t) is not Zero]
    touts = custom_vmap_p.bind(*primals, *nz_tangents, call=_tangent_jaxpr(call, nonzeros),
                               rule=_JvpRule(rule, nonzeros))
    return outs, touts


def _transpose(cts, *args, call, rule):
    cts = [ad.instantiate_zeros(ct) for ct in cts]
    cts_in = ad.backward_pass(call.jaxpr, call.consts, list(args), cts)
    return [ct if ad.is_undefined_primal(a) else None for ct, a in zip(cts_in, args)]


ad.primitive_jvps[custom_vmap_p] = _jvp
ad.primitive_transposes[custom_vmap_p] = _transpose
batching.primitive_batchers[custom_vmap_p] = _batch


class custom_vmap:
    """`fun` with a custom vmap rule, set with `@f.def_vmap`."""

    def __init__(self, fun: Callable):
        functools.update_wrapper(self, fun, updated=())
        self.fun = fun
        self.vmap_rule = None

    def def_vmap(self, vmap_rule: Callable) -> Callable:
        self.vmap_rule = vmap_rule
        return vmap_rule

    def __call__(self, *args, **kwargs):
        if kwargs:
            args = _bind_kwargs(self.fun, args, kwargs)
        if self.vmap_rule is None:
            raise AttributeError(f"No batching rule defined for custom_vmap function "
                                 f"{getattr(self.fun, '__name__', 'fun')} using def_vmap.")
        leaves, in_tree = tree_flatten(args)
        if not any(isinstance(x, Tracer) for x in leaves):
            return self.fun(*args)
        box = {}

        def flat(*xs):
            out = self.fun(*tree_unflatten(in_tree, list(xs)))
            out_leaves, box["tree"] = tree_flatten(out)
            return out_leaves

        call = stage(flat, [get_aval(x) for x in leaves], getattr(self.fun, "__name__", "fun"))
        outs = custom_vmap_p.bind(*leaves, call=call,
                                  rule=_FlatRule(self.vmap_rule, in_tree, box["tree"]))
        return tree_unflatten(box["tree"], outs)


def _bind_kwargs(fun, args, kwargs):
    import inspect
    bound = inspect.signature(fun).bind(*args, **kwargs)
    bound.apply_defaults()
    return bound.args


def sequential_vmap(f: Callable) -> custom_vmap:
    """`f` whose vmap calls it once per batch element (a lax.map over the batched arguments)
    instead of batching its body."""
    from corejax import lax

    f = custom_vmap(f)

    @f.def_vmap
    def rule(axis_size, in_batched, *args):
        flags = [bool(b) for b in tree_leaves(in_batched)]
        leaves, tree = tree_flatten(args)
        mapped = [x for x, b in zip(leaves, flags) if b]

        def one(xs):
            it = iter(xs)
            full = [next(it) if b else x for x, b in zip(leaves, flags)]
            return f.fun(*tree_unflatten(tree, full))

        out = lax.map(one, mapped)
        return out, tree_map(lambda _: True, out)

    return f

