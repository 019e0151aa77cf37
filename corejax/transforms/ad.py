"""Automatic differentiation: forward mode (jvp), partial evaluation, and transposition.

Reverse mode is forward mode plus two program transformations, as in JAX:
`linearize` runs the JVP under a partial evaluator that computes everything depending only on
primals right away and records the (linear) tangent computation as a Jaxpr; `vjp` transposes
that linear Jaxpr with each linear primitive's transpose rule. So each primitive needs only a
jvp rule, and a transpose rule if it is linear, and every order of derivative composes.

Tangents may be the symbolic `Zero(aval)`, which rules skip instead of multiplying out.
"""
from __future__ import annotations

import itertools
from typing import Any, Callable, NamedTuple
from weakref import ref

import numpy as np

from corejax import core, dtypes
from corejax.compiler import registry
from corejax.transforms import batching
from corejax.core import Primitive, ShapedArray, Tracer, Trace, get_aval

__all__ = [
    "Zero", "UndefinedPrimal", "primitive_jvps", "primitive_transposes", "defjvp",
    "defjvp_zero", "deflinear", "defbilinear", "jvp_flat", "linearize_flat", "vjp_flat", "Pullback", "backward_pass",
    "partial_eval_flat", "partial_eval_jaxpr", "partial_eval_rules", "instantiate_zeros",
    "zeros_like_aval", "add_tangents", "is_undefined_primal",
]

primitive_jvps: dict[Primitive, Callable] = {}
primitive_transposes: dict[Primitive, Callable] = {}
partial_eval_rules: dict[Primitive, Callable] = {}


# --- symbolic zeros and tangent arithmetic ---------------------------------------------------

class Zero:
    """A tangent or cotangent known to be zero, so no work is done for it."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    @staticmethod
    def from_value(x) -> "Zero":
        return Zero(get_aval(x).to_tangent_aval())

    def __repr__(self):
        return f"Zero({self.aval})"

    def _no_arithmetic(self, *_):
        # A custom_jvp rule gets one for an integer input, whose tangent is float0 (JAX hands
        # it a float0 array, on which every operation raises TypeError likewise).
        raise TypeError(
            f"Called an arithmetic operation on a symbolic zero tangent "
            f"({self.aval.str_short()}): tangents of "
            "integer inputs are float0, which supports no operations. If you did not expect "
            "one, a derivative is being taken through an integer argument; a custom_jvp rule "
            "should leave such tangents out.")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _no_arithmetic
    __truediv__ = __rtruediv__ = __pow__ = __rpow__ = __neg__ = _no_arithmetic


def zeros_like_aval(aval: ShapedArray):
    from corejax import lax
    return lax.full(aval.shape, 0, aval.dtype, weak_type=aval.weak_type)


def instantiate_zeros(t):
    return zeros_like_aval(t.aval) if type(t) is Zero else t


add_any_p = Primitive("add_any")
add_any_p.def_impl(np.add)
add_any_p.def_abstract_eval(lambda x, y: x)


def add_tangents(x, y):
    if type(x) is Zero:
        return y
    if type(y) is Zero:
        return x
    return add_any_p.bind(x, y)


def _float0_zero(aval):
    return np.zeros(aval.shape, dtypes.float0)


# --- rule registration helpers ---------------------------------------------------------------

def defjvp(prim: Primitive, *jvp_fns) -> None:
    """One function per operand, `fn(tangent, primal_out, *primals, **params)` giving that
    operand's contribution to the output tangent; None for a non-differentiable operand."""

    def rule(primals, tangents, **params):
        out = prim.bind(*primals, **params)
        total = Zero(get_aval(out).to_tangent_aval())
        for fn, t in zip(jvp_fns, tangents):
            if fn is not None and type(t) is not Zero:
                total = add_tangents(total, fn(t, out, *primals, **params))
        return out, total

    primitive_jvps[prim] = rule


def defjvp_zero(prim: Primitive) -> None:
    """Outputs are piecewise constant (comparisons, integer ops): zero tangents."""

    def rule(primals, tangents, **params):
        out = prim.bind(*primals, **params)
        if prim.multiple_results:
            return out, [Zero(get_aval(o).to_tangent_aval()) for o in out]
        return out, Zero(get_aval(out).to_tangent_aval())

    primitive_jvps[prim] = rule


def deflinear(prim: Primitive, transpose_rule: Callable, linear_args=None) -> None:
    """`prim` is linear in the operands listed in `linear_args` (all by default); its JVP applies
    it to the tangents. `transpose_rule(ct, *operands, **params)` returns one cotangent per operand
    (None for a non-linear one); operands being transposed are `UndefinedPrimal`s."""

    def jvp(primals, tangents, **params):
        out = prim.bind(*primals, **params)
        lin = range(len(primals)) if linear_args is None else linear_args
        if all(type(tangents[i]) is Zero for i in lin):
            return out, Zero(get_aval(out).to_tangent_aval())
        args = [instantiate_zeros(tangents[i]) if i in lin else primals[i]
                for i in range(len(primals))]
        return out, prim.bind(*args, **params)

    primitive_jvps[prim] = jvp
    primitive_transposes[prim] = transpose_rule


def defbilinear(prim: Primitive, transpose_rule: Callable) -> None:
    """`prim(lhs, rhs)` is linear in each operand separately (mul, dot, conv): its JVP is
    prim(t_lhs, rhs) + prim(lhs, t_rhs), and `transpose_rule` handles either operand."""

    def jvp(primals, tangents, **params):
        lhs, rhs = primals
        t_lhs, t_rhs = tangents
        out = prim.bind(lhs, rhs, **params)
        total = Zero(get_aval(out).to_tangent_aval())
        if type(t_lhs) is not Zero:
            total = add_tangents(total, prim.bind(t_lhs, rhs, **params))
        if type(t_rhs) is not Zero:
            total = add_tangents(total, prim.bind(lhs, t_rhs, **params))
        return out, total

    primitive_jvps[prim] = jvp
    primitive_transposes[prim] = transpose_rule


deflinear(add_any_p, lambda ct, x, y: [ct, ct])
batching.defbroadcasting(add_any_p)
registry.def_elementwise(add_any_p, lambda ctx, x, y: f"({x} + {y})")


# --- forward mode ----------------------------------------------------------------------------

class JVPTracer(Tracer):
    __slots__ = ("primal", "tangent")

    def __init__(self, trace, primal, tangent):
        self._trace, self.primal, self.tangent = trace, primal, tangent

    @property
    def aval(self):
        return get_aval(self.primal)

    def full_lower(self):
        if type(self.tangent) is Zero:
            return core.full_lower(self.primal)
        return self

    def to_concrete_value(self):
        p = self.primal
        return p.to_concrete_value() if isinstance(p, Tracer) else p

    def _origin(self):
        return self.primal._origin() if isinstance(self.primal, Tracer) else ""

    def _short_repr(self):
        # JAX names a forward-mode tracer JVPTracer, and one whose tangent is being recorded
        # for transposition (grad, vjp, linearize) GradTracer, showing only the tangent's type
        def show(v):
            while isinstance(v, PartialEvalTracer) and v.pval.is_known:
                v = v.pval.const      # linearize's known half: the primal value itself
            return v._short_repr() if isinstance(v, Tracer) else str(v)
        if isinstance(self.tangent, PartialEvalTracer):
            return (f"GradTracer(primal={show(self.primal)}, "
                    f"typeof(tangent)={self.tangent.aval.str_short()})")
        return f"JVPTracer(primal={show(self.primal)}, tangent={show(self.tangent)})"


class JVPTrace(Trace):
    def pure(self, val):
        return JVPTracer(self, val, Zero.from_value(val))

    lift = pure

    def process_primitive(self, primitive, tracers, params):
        primals = [t.primal for t in tracers]
        tangents = [t.tangent for t in tracers]
        rule = primitive_jvps.get(primitive)
        if rule is None:
            raise NotImplementedError(
                f"Differentiation rule for '{primitive.name}' not implemented.")
        out, tangent_out = rule(primals, tangents, **params)
        if primitive.multiple_results:
            return [JVPTracer(self, p, t) for p, t in zip(out, tangent_out)]
        return JVPTracer(self, out, tangent_out)

    def process_custom_derivative_call(self, values, jvp_rule, staged_call):
        # JAX's process_custom_jvp_call: the rule runs on the primals one level down
        # (concrete when nothing else is active); the function itself is not called.
        tracers = [self.full_raise(x) for x in values]
        outs, touts = jvp_rule([t.primal for t in tracers], [t.tangent for t in tracers])
        return [JVPTracer(self, p, t) for p, t in zip(outs, touts)]


def _check_tangent(primal, tangent):
    if type(tangent) is Zero:
        return tangent
    p_aval, t_aval = get_aval(primal), get_aval(tangent)
    expected = p_aval.to_tangent_aval()
    if t_aval.shape != p_aval.shape:
        raise ValueError(f"jvp called with a tangent of shape {t_aval.shape} for a primal of "
                         f"shape {p_aval.shape}; they must match.")
    if expected.dtype == dtypes.float0:
        if t_aval.dtype != dtypes.float0:
            raise TypeError(f"primal of dtype {p_aval.dtype} requires a tangent of dtype float0, "
                            f"got {t_aval.dtype}.")
        return Zero(expected)
    if t_aval.dtype != p_aval.dtype:
        raise TypeError(f"jvp called with a primal of dtype {p_aval.dtype} and a tangent of "
                        f"dtype {t_aval.dtype}; they must be equal.")
    return tangent


def jvp_flat(fun: Callable, primals, tangents, instantiate=True):
    """`fun` maps a flat list to a flat list. Returns `(primals_out, tangents_out)`."""
    with core.new_main(JVPTrace) as main:
        trace = JVPTrace(main)
        tracers_in = [JVPTracer(trace, p, _check_tangent(p, t)) for p, t in zip(primals, tangents)]
        outs = fun(*tracers_in)
        tracers_out = [trace.full_raise(o) for o in outs]
        primals_out = [t.primal for t in tracers_out]
        tangents_out = [t.tangent for t in tracers_out]
    if instantiate:
        tangents_out = [_instantiate_tangent(t) for t in tangents_out]
    return primals_out, tangents_out


def _instantiate_tangent(t):
    if type(t) is not Zero:
        return t
    if t.aval.dtype == dtypes.float0:
        from corejax.array import Array
        return Array(_float0_zero(t.aval))
    return zeros_like_aval(t.aval)


# --- partial evaluation ----------------------------------------------------------------------

class PartialVal(NamedTuple):
    aval: ShapedArray
    const: Any  # the known value, or None when unknown

    @classmethod
    def known(cls, val):
        return cls(get_aval(val), val)

    @classmethod
    def unknown(cls, aval):
        return cls(aval, None)

    @property
    def is_known(self):
        return self.const is not None


class _LambdaBinding(NamedTuple):
    pass


class _ConstRecipe(NamedTuple):
    val: Any


class _EqnRecipe(NamedTuple):
    prim: Primitive
    tracers_in: list
    params: dict
    avals_out: list
    tracer_refs_out: list
    order: int  # creation order: the staged equations keep the program's own order


_recipe_counter = itertools.count()


class PartialEvalTracer(Tracer):
    __slots__ = ("pval", "recipe")

    def __init__(self, trace, pval: PartialVal, recipe):
        self._trace, self.pval, self.recipe = trace, pval, recipe

    @property
    def aval(self):
        return self.pval.aval

    def full_lower(self):
        if self.pval.is_known:
            return core.full_lower(self.pval.const)
        return self

    def to_concrete_value(self):
        c = self.pval.const
        if c is None:
            return None
        return c.to_concrete_value() if isinstance(c, Tracer) else c


class PartialEvalTrace(Trace):
    def new_arg(self, pval: PartialVal):
        if pval.is_known:
            return PartialEvalTracer(self, pval, None)
        return PartialEvalTracer(self, pval, _LambdaBinding())

    def pure(self, val):
        return PartialEvalTracer(self, PartialVal.known(val), None)

    lift = pure

    def instantiate_const(self, tracer: PartialEvalTracer) -> PartialEvalTracer:
        if not tracer.pval.is_known:
            return tracer
        return PartialEvalTracer(self, PartialVal.unknown(tracer.aval),
                                 _ConstRecipe(tracer.pval.const))

    def process_primitive(self, primitive, tracers, params):
        if all(t.pval.is_known for t in tracers):
            return primitive.bind(*[t.pval.const for t in tracers], **params)
        rule = partial_eval_rules.get(primitive)
        if rule is not None:
            return rule(self, tracers, **params)
        return self.default_process(primitive, tracers, params)

    def default_process(self, primitive, tracers, params):
        tracers_in = [self.instantiate_const(t) for t in tracers]
        avals_out = primitive.abstract_eval(*[t.aval for t in tracers_in], **params)
        multiple = primitive.multiple_results
        avals_list = avals_out if multiple else [avals_out]
        outs = [PartialEvalTracer(self, PartialVal.unknown(a), None) for a in avals_list]
        recipe = _EqnRecipe(primitive, tracers_in, params, avals_list, [ref(t) for t in outs],
                             next(_recipe_counter))
        for t in outs:
            t.recipe = recipe
        return outs if multiple else outs[0]


def partial_eval_flat(fun: Callable, pvals_in: list[PartialVal]):
    """Runs `fun` computing what depends only on known inputs; stages the rest.

    Returns `(jaxpr, pvals_out, consts)`: `jaxpr` takes `(*consts, *unknown_inputs)` and returns
    the unknown outputs; known outputs are in `pvals_out`.
    """
    with core.new_main(PartialEvalTrace) as main:
        trace = PartialEvalTrace(main)
        tracers_in = [trace.new_arg(pv) for pv in pvals_in]
        outs = fun(*tracers_in)
        tracers_out = [trace.full_raise(o) for o in outs]
        pvals_out = [t.pval for t in tracers_out]
        unk_in = [t for t in tracers_in if not t.pval.is_known]
        unk_out = [t for t in tracers_out if not t.pval.is_known]
        jaxpr, consts = _tracers_to_jaxpr(unk_in, unk_out)
    return jaxpr, pvals_out, consts


def _toposort(out_tracers):
    """The tracers the outputs depend on, each after the tracers it is computed from."""
    order, seen = [], set()
    stack = [(t, False) for t in reversed(out_tracers)]
    while stack:
        t, expanded = stack.pop()
        if expanded:
            order.append(t)
            continue
        if id(t) in seen:
            continue
        seen.add(id(t))
        stack.append((t, True))
        if isinstance(t.recipe, _EqnRecipe):
            stack.extend((p, False) for p in reversed(t.recipe.tracers_in) if id(p) not in seen)
    return order


def _tracers_to_jaxpr(tracers_in, tracers_out):
    tracer_to_var: dict[int, core.Var] = {id(t): core.Var(t.aval) for t in tracers_in}
    constvars, consts, eqns, done_recipes, const_vars = [], [], [], set(), {}
    # Equations in the order the program created them (a topological order, since an
    # equation's inputs exist before it), not in the order the outputs reach them: the
    # transpose then accumulates cotangents in the same order as JAX, which decides the weak
    # type of a sum of weak and strong cotangents (add_any takes its first operand's type).
    tracers = _toposort(tracers_out)
    tracers.sort(key=lambda t: t.recipe.order if isinstance(t.recipe, _EqnRecipe) else -1)
    for t in tracers:
        recipe = t.recipe
        if isinstance(recipe, _LambdaBinding):
            if id(t) not in tracer_to_var:
                raise core.UnexpectedTracerError("Encountered an unknown input during linearize.")
        elif isinstance(recipe, _ConstRecipe):
            # one residual per known value, however many unknown equations read it
            var = const_vars.get(id(recipe.val))
            if var is None:
                var = const_vars[id(recipe.val)] = core.Var(t.aval)
                constvars.append(var)
                consts.append(recipe.val)
            tracer_to_var[id(t)] = var
        elif isinstance(recipe, _EqnRecipe):
            if id(recipe) in done_recipes:
                continue
            done_recipes.add(id(recipe))
            outvars = [core.Var(a) for a in recipe.avals_out]
            for r, v in zip(recipe.tracer_refs_out, outvars):
                tr = r()
                if tr is not None:
                    tracer_to_var[id(tr)] = v
            eqns.append(core.JaxprEqn(recipe.prim, [tracer_to_var[id(x)] for x in recipe.tracers_in],
                                      recipe.params, outvars))
    invars = [tracer_to_var[id(t)] for t in tracers_in]
    outvars = [tracer_to_var[id(t)] for t in tracers_out]
    return core.Jaxpr(constvars, invars, eqns, outvars), consts


def partial_eval_jaxpr(closed: core.ClosedJaxpr, unknowns: list[bool], instantiate=False):
    """Splits `closed` into the part computable from its known inputs and the rest.

    Returns `(known, unknown, out_unknowns, num_res)`, both ClosedJaxprs: `known` maps the known
    inputs to `(*known_outputs, *residuals)`; `unknown` maps `(*residuals, *unknown_inputs)` to
    the unknown outputs. `instantiate` (a bool or one per output) forces outputs unknown.

    The program is re-traced under the partial evaluator with its known inputs bound to staging
    tracers, so equations with sub-programs (jit, cond, scan) are split by their own
    partial-evaluation rules rather than going wholly to the unknown side.
    """
    from corejax.transforms.staging import trace_to_jaxpr
    n_out = len(closed.out_avals)
    inst = [instantiate] * n_out if isinstance(instantiate, bool) else list(instantiate)
    box = {}

    def known_fun(*known_args):
        it = iter(known_args)
        pvals = [PartialVal.unknown(a) if u else PartialVal.known(next(it))
                 for a, u in zip(closed.in_avals, unknowns)]
        jaxpr, pvals_out, res = partial_eval_flat(
            lambda *xs: core.eval_jaxpr(closed.jaxpr, closed.consts, *xs), pvals)
        out_uks = [not pv.is_known or i for pv, i in zip(pvals_out, inst)]
        # Known outputs that must be unknown anyway travel as extra residuals.
        forced = [pv.const for pv, u in zip(pvals_out, out_uks) if u and pv.is_known]
        box.update(jaxpr=jaxpr, pvals_out=pvals_out, out_uks=out_uks,
                   num_res=len(res) + len(forced))
        return [*[pv.const for pv, u in zip(pvals_out, out_uks) if not u], *res, *forced]

    known_jaxpr, known_consts = trace_to_jaxpr(
        known_fun, [a for a, u in zip(closed.in_avals, unknowns) if not u], fun_name="known")
    if any(isinstance(c, Tracer) for c in known_consts):
        raise core.UnexpectedTracerError("partial evaluation closed over a tracer")
    jaxpr, pvals_out, out_uks = box["jaxpr"], box["pvals_out"], box["out_uks"]
    forced_vars = [core.Var(pv.aval) for pv, u in zip(pvals_out, out_uks) if u and pv.is_known]
    unknown_outs, forced_it = iter(jaxpr.outvars), iter(forced_vars)
    outvars = [next(forced_it) if pv.is_known else next(unknown_outs)
               for pv, u in zip(pvals_out, out_uks) if u]
    unknown = core.ClosedJaxpr(
        core.Jaxpr([], [*jaxpr.constvars, *forced_vars, *jaxpr.invars], jaxpr.eqns, outvars), [])
    return core.ClosedJaxpr(known_jaxpr, known_consts), unknown, out_uks, box["num_res"]


def linearize_flat(fun: Callable, primals):
    """Returns `(primals_out, linear_jaxpr, consts, out_tangent_avals)`."""
    n = len(primals)
    pvals_in = ([PartialVal.known(p) for p in primals]
                + [PartialVal.unknown(get_aval(p).to_tangent_aval()) for p in primals])

    def fun_jvp(*primals_and_tangents):
        outs, tangents = jvp_flat(fun, primals_and_tangents[:n], primals_and_tangents[n:])
        return [*outs, *tangents]

    jaxpr, pvals_out, consts = partial_eval_flat(fun_jvp, pvals_in)
    m = len(pvals_out) // 2
    primal_pvals, tangent_pvals = pvals_out[:m], pvals_out[m:]
    assert all(pv.is_known for pv in primal_pvals)
    return [pv.const for pv in primal_pvals], jaxpr, consts, tangent_pvals


# --- transposition ---------------------------------------------------------------------------

class UndefinedPrimal:
    """An operand of a linear function being transposed (its value is never needed)."""

    __slots__ = ("aval",)

    def __init__(self, aval):
        self.aval = aval

    def __repr__(self):
        return f"UndefinedPrimal({self.aval})"


def is_undefined_primal(x) -> bool:
    return type(x) is UndefinedPrimal


def backward_pass(jaxpr: core.Jaxpr, consts, args, cts_out) -> list:
    """Transposes the linear `jaxpr`: `args` holds `UndefinedPrimal` for linear inputs and
    values for the others. Returns one cotangent (or Zero) per UndefinedPrimal argument."""
    primal_env: dict = {}
    ct_env: dict = {}

    def read_primal(v):
        if type(v) is core.Literal:
            return v.value()
        return primal_env[v]

    for v, c in zip(jaxpr.constvars, consts):
        primal_env[v] = c
    linear_vars = set()
    for v, a in zip(jaxpr.invars, args):
        if is_undefined_primal(a):
            linear_vars.add(v)
        else:
            primal_env[v] = a
    # Evaluate the non-linear equations (those reading no linear variable) forwards.
    linear_eqns = []
    for eqn in jaxpr.eqns:
        if any(type(v) is core.Var and v in linear_vars for v in eqn.invars):
            linear_vars.update(eqn.outvars)
            linear_eqns.append(eqn)
        else:
            outs = eqn.primitive.bind(*map(read_primal, eqn.invars), **eqn.params)
            outs = outs if eqn.primitive.multiple_results else [outs]
            primal_env.update(zip(eqn.outvars, outs))

    def write_ct(v, ct):
        if type(v) is core.Var and type(ct) is not Zero and ct is not None and v in linear_vars:
            ct_env[v] = add_tangents(ct_env[v], ct) if v in ct_env else ct

    for v, ct in zip(jaxpr.outvars, cts_out):
        write_ct(v, ct)
    for eqn in reversed(linear_eqns):
        cts = [ct_env.pop(v, None) for v in eqn.outvars]
        if all(ct is None for ct in cts):
            continue
        cts = [Zero(v.aval) if ct is None else ct for v, ct in zip(eqn.outvars, cts)]
        invals = [UndefinedPrimal(v.aval) if type(v) is core.Var and v in linear_vars
                  else read_primal(v) for v in eqn.invars]
        rule = primitive_transposes.get(eqn.primitive)
        if rule is None:
            raise NotImplementedError(
                f"Transpose rule (for reverse-mode differentiation) for '{eqn.primitive.name}' "
                "not implemented.")
        cts_in = rule(cts if eqn.primitive.multiple_results else cts[0], *invals, **eqn.params)
        for v, ct in zip(eqn.invars, cts_in):
            write_ct(v, ct)
    return [ct_env.get(v, Zero(v.aval)) if is_undefined_primal(a) else None
            for v, a in zip(jaxpr.invars, args)]


class Pullback:
    """The transpose of a linearized function: `pullback(*output cotangents)` returns the
    input cotangents. Its residuals (the constants of the linear program) are its only
    array data, so a pytree built on it can carry them across `jit`."""

    __slots__ = ("jaxpr", "residuals", "unknown", "in_avals")

    def __init__(self, jaxpr: core.Jaxpr, residuals, unknown, in_avals):
        self.jaxpr, self.residuals = jaxpr, list(residuals)
        self.unknown, self.in_avals = tuple(unknown), tuple(in_avals)

    def __call__(self, *cts):
        unknown_cts = [ct for ct, u in zip(cts, self.unknown) if u]
        args = [UndefinedPrimal(a) for a in self.in_avals]
        cts_in = backward_pass(self.jaxpr, self.residuals, args, unknown_cts)
        return [_instantiate_tangent(ct) for ct in cts_in]


def vjp_flat(fun: Callable, primals):
    """Returns `(primals_out, pullback)`: `pullback(*cts_out)` returns the input cotangents."""
    primals_out, jaxpr, consts, tangent_pvals = linearize_flat(fun, primals)
    return primals_out, Pullback(jaxpr, consts, [not pv.is_known for pv in tangent_pvals],
                                 [get_aval(p).to_tangent_aval() for p in primals])
