"""custom_jvp and custom_vjp: user-defined derivative rules for a Python function.

Eagerly, outside any transformation, the function just runs. Under a transformation it is
staged to a Jaxpr and bound as `custom_jvp_call` / `custom_vjp_call`, whose rules call the
user's rule functions: the JVP rule calls `jvp`, batching vmaps both functions, and staging
keeps the rule in the equation so a later differentiation (grad of jit) still finds it.
"""
from __future__ import annotations

import functools
from typing import Callable

from corejax import core
from corejax.compiler import registry
from corejax.core import Primitive, Tracer, get_aval
from corejax.transforms import ad, batching
from corejax.transforms.ad import Zero
from corejax.transforms.jit import closed_call, stage
from corejax._tree_traced import tree_flatten, tree_unflatten, tree_map

__all__ = ["custom_jvp", "custom_vjp"]


def _in_transformation(leaves) -> bool:
    return core._trace_state.dynamic_level > 0 or any(isinstance(x, Tracer) for x in leaves)


class _FlatCall:
    """`fun(*args)` with the `nondiff_argnums` arguments held static and the rest flattened."""

    def __init__(self, fun, args, nondiff_argnums):
        self.fun, self.nargs = fun, len(args)
        self.static = {i: a for i, a in enumerate(args) if i in nondiff_argnums}
        dyn = [a for i, a in enumerate(args) if i not in self.static]
        self.leaves, self.in_tree = tree_flatten(dyn)
        self.out_tree = None

    def static_args(self) -> list:
        return [self.static[i] for i in sorted(self.static)]

    def dyn_args(self, flat) -> tuple:
        return tuple(tree_unflatten(self.in_tree, flat))

    def full_args(self, flat) -> list:
        it = iter(self.dyn_args(flat))
        return [self.static[i] if i in self.static else next(it) for i in range(self.nargs)]

    def flat_fun(self, *flat):
        out_leaves, self.out_tree = tree_flatten(self.fun(*self.full_args(flat)))
        return out_leaves


class custom_jvp:
    """Wraps `fun` so that its JVP is the rule given with `.defjvp(rule)`, where
    `rule(primals, tangents) -> (primal_out, tangent_out)`."""

    def __init__(self, fun: Callable, nondiff_argnums=()):
        # the wrapped function's name and docstring first, so that its attributes (another
        # custom_jvp's, say) never overwrite this object's own state below
        functools.update_wrapper(self, fun, updated=())
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.jvp = None

    def defjvp(self, jvp: Callable, symbolic_zeros: bool = False):
        self.jvp = jvp
        return jvp

    def defjvps(self, *jvps):
        """One function per argument: `jvp_i(tangent_i, primal_out, *primals)` (None: the output
        does not depend on that argument). The primal output comes from calling this custom_jvp
        function itself, so that derivatives of the rule use the rule again."""
        if self.nondiff_argnums:
            raise TypeError("Can't use ``defjvps`` with ``nondiff_argnums``; use ``defjvp``.")

        def jvp(primals, tangents):
            out = self(*primals)
            total = None
            for fn, t in zip(jvps, tangents):
                if fn is None:
                    continue
                contrib = fn(t, out, *primals)
                total = contrib if total is None else tree_map(lambda a, b: a + b, total, contrib)
            return out, total
        self.jvp = jvp

    def __call__(self, *args):
        if self.jvp is None:
            raise AttributeError(f"No JVP defined for custom_jvp function {self.__name__} "
                                 "using defjvp.")
        call = _FlatCall(self.fun, args, self.nondiff_argnums)
        if not _in_transformation(call.leaves):
            return self.fun(*args)

        def flat_jvp(primals, tangents):
            out, tout = self.jvp(*call.static_args(), call.dyn_args(primals),
                                 call.dyn_args(tangents))
            out_leaves, call.out_tree = tree_flatten(out)
            return out_leaves, _tangent_leaves(tout, out_leaves, self.__name__)

        def staged_call():
            closed = stage(call.flat_fun, [get_aval(x) for x in call.leaves], self.__name__)
            return custom_jvp_call_p.bind(*call.leaves, call_jaxpr=closed, jvp=flat_jvp)

        outs = core.find_top_trace(call.leaves).process_custom_derivative_call(
            call.leaves, lambda ps, ts: _custom_jvp_call_jvp(ps, ts, None, flat_jvp),
            staged_call)
        return tree_unflatten(call.out_tree, outs)


custom_jvp_call_p = Primitive("custom_jvp_call")
custom_jvp_call_p.multiple_results = True
registry.def_call(custom_jvp_call_p, "call_jaxpr")
custom_jvp_call_p.def_impl(lambda *args, call_jaxpr, jvp: [
    core.full_lower(o) for o in closed_call(call_jaxpr, *args)])
custom_jvp_call_p.def_abstract_eval(lambda *avals, call_jaxpr, jvp: call_jaxpr.out_avals)
custom_jvp_call_p.weak_type_rule = lambda *a, call_jaxpr, jvp: [
    x.weak_type for x in call_jaxpr.out_avals]


def _custom_jvp_call_jvp(primals, tangents, call_jaxpr, jvp):
    tangents = [ad.instantiate_zeros(t) if get_aval(p).to_tangent_aval().dtype !=
                core.dtypes.float0 else t for p, t in zip(primals, tangents)]
    outs, touts = jvp(primals, tangents)
    touts = [ad.zeros_like_aval(get_aval(o).to_tangent_aval()) if t is None else t
             for t, o in zip(touts, outs)]
    return outs, touts


def _tangent_leaves(tout, out_leaves, name) -> list:
    """The rule's output tangents as leaves matching the primal outputs (None: a zero)."""
    t_leaves, _ = tree_flatten(tout, is_leaf=lambda x: x is None)
    if len(t_leaves) != len(out_leaves):
        raise TypeError(f"Custom JVP rule of {name} must produce primal and tangent outputs "
                        f"with equal container (pytree) structures, got {len(out_leaves)} "
                        f"primal leaves and {len(t_leaves)} tangent leaves.")
    for p, t in zip(out_leaves, t_leaves):
        if t is None or type(t) is Zero:
            continue
        pa, ta = get_aval(p), get_aval(t)
        if pa.shape != ta.shape:
            raise ValueError(f"Custom JVP rule of {name} must produce primal and tangent "
                             f"outputs with equal shapes, got {pa.shape} and {ta.shape}.")
    return t_leaves


def _custom_jvp_call_batch(axis_size, vals, dims, call_jaxpr, jvp):
    from corejax.transforms.jit import batch_jaxpr
    batched = batch_jaxpr(call_jaxpr, axis_size, dims)

    def batched_jvp(primals, tangents):
        t_dims = dims
        def f(*pt):
            n = len(primals)
            o, t = jvp(list(pt[:n]), list(pt[n:]))
            return [*o, *t]
        outs, out_dims = batching.vmap_flat(f, axis_size, list(dims) + list(t_dims),
                                            args=[*primals, *tangents])
        outs = [batching.bdim_at_front(o, d, axis_size) for o, d in zip(outs, out_dims)]
        m = len(outs) // 2
        return outs[:m], outs[m:]

    outs = custom_jvp_call_p.bind(*vals, call_jaxpr=batched, jvp=batched_jvp)
    return outs, [0] * len(outs)


_custom_jvp_call_batch.needs_axis_size = True
ad.primitive_jvps[custom_jvp_call_p] = _custom_jvp_call_jvp
batching.primitive_batchers[custom_jvp_call_p] = _custom_jvp_call_batch


class custom_vjp:
    """Wraps `fun` so that reverse mode uses `.defvjp(fwd, bwd)`: `fwd(*args) -> (out, res)`
    and `bwd(res, cotangent) -> tuple of argument cotangents`."""

    def __init__(self, fun: Callable, nondiff_argnums=()):
        functools.update_wrapper(self, fun, updated=())
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.fwd = self.bwd = None

    def defvjp(self, fwd: Callable, bwd: Callable, symbolic_zeros: bool = False):
        self.fwd, self.bwd = fwd, bwd

    def __call__(self, *args):
        if self.fwd is None:
            raise AttributeError(f"No VJP defined for custom_vjp function {self.__name__} "
                                 "using defvjp.")
        call = _FlatCall(self.fun, args, self.nondiff_argnums)
        if not _in_transformation(call.leaves):
            return self.fun(*args)
        res_store: list = []

        def flat_fwd(*xs):
            fwd_out = self.fwd(*call.full_args(xs))
            if not (isinstance(fwd_out, tuple) and len(fwd_out) == 2):
                raise TypeError(f"Custom VJP fwd rule of {self.__name__} must return a pair "
                                "(output, residuals).")
            out, res = fwd_out
            res_leaves, res_tree = tree_flatten(res)
            res_store.append(res_tree)
            out_leaves, call.out_tree = tree_flatten(out)
            return [*out_leaves, *res_leaves]

        def flat_bwd(res_leaves, cts):
            res = tree_unflatten(res_store[-1], res_leaves)
            args_ct = self.bwd(*call.static_args(), res, tree_unflatten(call.out_tree, cts))
            if not isinstance(args_ct, tuple):
                raise TypeError(f"Custom VJP bwd rule for {self.__name__} must produce a tuple "
                                f"of cotangents, got {type(args_ct).__name__}.")
            ct_leaves = []
            for a, c in zip(call.dyn_args(call.leaves), args_ct):
                if c is None:
                    ct_leaves.extend(Zero(get_aval(x).to_tangent_aval())
                                     for x in tree_flatten(a)[0])
                else:
                    ct_leaves.extend(tree_flatten(c)[0])
            return ct_leaves

        def jvp_rule(primals, tangents):
            # fwd on the primals; bwd becomes the transpose of the linear part
            outs_res = flat_fwd(*primals)
            n = len(outs_res) - res_store[-1].num_leaves
            return _custom_vjp_linear(outs_res[:n], outs_res[n:], tangents, flat_bwd)

        def staged_call():
            closed = stage(call.flat_fun, [get_aval(x) for x in call.leaves], self.__name__)
            return custom_vjp_call_p.bind(*call.leaves, call_jaxpr=closed, fwd=flat_fwd,
                                          bwd=flat_bwd, num_outs=len(closed.out_avals))

        outs = core.find_top_trace(call.leaves).process_custom_derivative_call(
            call.leaves, jvp_rule, staged_call)
        return tree_unflatten(call.out_tree, outs)


custom_vjp_call_p = Primitive("custom_vjp_call")
registry.def_call(custom_vjp_call_p, "call_jaxpr")
custom_vjp_call_p.multiple_results = True
custom_vjp_call_p.def_impl(lambda *args, call_jaxpr, **_: [
    core.full_lower(o) for o in closed_call(call_jaxpr, *args)])
custom_vjp_call_p.def_abstract_eval(lambda *avals, call_jaxpr, **_: call_jaxpr.out_avals)
custom_vjp_call_p.weak_type_rule = lambda *a, call_jaxpr, **_: [
    x.weak_type for x in call_jaxpr.out_avals]

# The linear part of a custom_vjp function: its transpose is the user's bwd.
custom_lin_p = Primitive("custom_lin")
custom_lin_p.multiple_results = True
custom_lin_p.def_abstract_eval(lambda *avals, num_res, bwd, out_avals: out_avals)


def _custom_lin_impl(*args, **params):
    raise TypeError("can't apply forward-mode autodiff (jvp) to a custom_vjp function.")


custom_lin_p.def_impl(_custom_lin_impl)


def _custom_lin_batch(*args, **params):
    # vmap of a jvp of a custom_vjp function: the same error as the jvp itself (JAX's)
    _custom_lin_impl()


batching.primitive_batchers[custom_lin_p] = _custom_lin_batch


def _custom_lin_transpose(cts, *args, num_res, bwd, out_avals):
    res = args[:num_res]
    cts = [ad.instantiate_zeros(c) for c in cts]
    cts_in = bwd(list(res), cts)
    return [None] * num_res + list(cts_in)


def _custom_vjp_linear(outs, res, tangents, bwd):
    """The outputs of fwd and their tangents: a linear map of `tangents` whose transpose is
    the user's bwd on the residuals `res`."""
    nz = [ad.instantiate_zeros(t) for t in tangents]
    touts = custom_lin_p.bind(*res, *nz, num_res=len(res), bwd=bwd,
                              out_avals=[get_aval(o).to_tangent_aval() for o in outs])
    return outs, touts


def _custom_vjp_call_jvp(primals, tangents, call_jaxpr, fwd, bwd, num_outs):
    outs_res = fwd(*primals)
    return _custom_vjp_linear(outs_res[:num_outs], outs_res[num_outs:], tangents, bwd)


def _custom_vjp_call_batch(axis_size, vals, dims, call_jaxpr, fwd, bwd, num_outs):
    from corejax.transforms.jit import batch_jaxpr
    batched = batch_jaxpr(call_jaxpr, axis_size, dims)

    def batched_fwd(*xs):
        outs, out_dims = batching.vmap_flat(fwd, axis_size, dims, args=xs)
        return [batching.bdim_at_front(o, d, axis_size) for o, d in zip(outs, out_dims)]

    def batched_bwd(res, cts):
        n = len(res)
        def f(*rc):
            return bwd(list(rc[:n]), list(rc[n:]))
        outs, out_dims = batching.vmap_flat(f, axis_size, [0] * (n + len(cts)),
                                            args=[*res, *cts])
        return [_cotangent_like_input(o, d, dim, val, axis_size)
                for o, d, dim, val in zip(outs, out_dims, dims, vals)]

    outs = custom_vjp_call_p.bind(*vals, call_jaxpr=batched, fwd=batched_fwd, bwd=batched_bwd,
                                  num_outs=num_outs)
    return outs, [0] * len(outs)


_custom_vjp_call_batch.needs_axis_size = True


def _cotangent_like_input(ct, ct_dim, in_dim, val, axis_size):
    """A batched bwd's cotangent (batch axis `ct_dim`, or None) laid out as the input it belongs
    to: the batch axis where the input has it (`in_dim`), or summed away for an unbatched input
    (its cotangent is the sum of the per-example ones)."""
    from corejax import lax
    if type(ct) is Zero:
        return Zero(get_aval(val).to_tangent_aval())
    if in_dim is None:
        return ct if ct_dim is None else lax.reduce_sum(ct, (ct_dim,))
    return batching.moveaxis(batching.bdim_at_front(ct, ct_dim, axis_size), 0, in_dim)
ad.primitive_jvps[custom_vjp_call_p] = _custom_vjp_call_jvp


def _custom_call_transpose(cts, *args, call_jaxpr, **_):
    """A custom_jvp / custom_vjp function applied to linear values (a jvp rule applying the
    function to its tangents, linear_transpose of one): no derivative is taken here, so its
    body is transposed as it is, the custom rule playing no part (as in JAX)."""
    cts = [ad.instantiate_zeros(ct) for ct in cts]
    cts_in = ad.backward_pass(call_jaxpr.jaxpr, call_jaxpr.consts, list(args), cts)
    return [ct if ad.is_undefined_primal(a) else None for ct, a in zip(cts_in, args)]


ad.primitive_transposes[custom_jvp_call_p] = _custom_call_transpose
ad.primitive_transposes[custom_vjp_call_p] = _custom_call_transpose
ad.primitive_transposes[custom_lin_p] = _custom_lin_transpose
batching.primitive_batchers[custom_vjp_call_p] = _custom_vjp_call_batch


# --- closure_convert and custom_gradient -----------------------------------------------------

def closure_convert(fun: Callable, *example_args):
    """`(converted, consts)`: `converted(*args, *consts)` computes `fun(*args)` with the
    floating-point values `fun` closes over from enclosing transformations (tracers) taken as
    the explicit trailing arguments `consts`, so that it can be a custom_vjp's bwd or a
    custom_linear_solve's solver. Other closed-over values stay closed over."""
    from corejax.transforms.staging import trace_to_jaxpr
    from corejax import dtypes
    leaves, in_tree = tree_flatten(example_args)
    out_store = {}

    def flat(*xs):
        out = fun(*tree_unflatten(in_tree, list(xs)))
        out_leaves, out_store["tree"] = tree_flatten(out)
        return out_leaves

    jaxpr, consts = trace_to_jaxpr(flat, [get_aval(x) for x in leaves],
                                   fun_name=getattr(fun, "__name__", "fun"))
    hoist = [isinstance(c, Tracer) and dtypes.is_inexact(get_aval(c).dtype) for c in consts]
    hoisted = [c for c, h in zip(consts, hoist) if h]
    kept = [c for c, h in zip(consts, hoist) if not h]
    out_tree = out_store["tree"]

    def converted(*args_and_consts):
        n = len(args_and_consts) - len(hoisted)
        args_leaves, tree = tree_flatten(args_and_consts[:n])
        if tree != in_tree:
            raise TypeError(f"closure_convert: the converted function was traced for "
                            f"arguments {in_tree}, called with {tree}")
        given, kept_it = iter(args_and_consts[n:]), iter(kept)
        all_consts = [next(given) if h else next(kept_it) for h in hoist]
        return tree_unflatten(out_tree, core.eval_jaxpr(jaxpr, all_consts, *args_leaves))

    converted.__name__ = getattr(fun, "__name__", "converted")
    return converted, hoisted


def _consts_then_cotangent(converted, *consts_and_ct):
    return converted(consts_and_ct[-1], *consts_and_ct[:-1])


def custom_gradient(fun: Callable) -> Callable:
    """`fun(*args)` returns `(out, vjp)` with `vjp(cotangent_of_out)` a tuple of one cotangent
    per positional argument: differentiation uses that vjp."""
    from corejax.tree_util import Partial

    @custom_vjp
    def wrapped(*args):
        return fun(*args)[0]

    def fwd(*args):
        out, rule = fun(*args)
        converted, consts = closure_convert(rule, out)
        # the residuals: the rule's closed-over arrays, with the rule itself as static data
        return out, Partial(functools.partial(_consts_then_cotangent, converted), *consts)

    def bwd(res, ct):
        cts = res(ct)
        return tuple(cts) if isinstance(cts, (tuple, list)) else (cts,)

    wrapped.defvjp(fwd, bwd)
    return functools.wraps(fun, updated=())(lambda *args: wrapped(*args))
