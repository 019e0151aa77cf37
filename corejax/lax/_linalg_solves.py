"""lax.custom_linear_solve and lax.custom_root: solves differentiated implicitly, from the
linear map (or the root condition) they solve, never through the solver's own iterations.

custom_linear_solve_p(*matvec consts, *vecmat consts, *solve consts, *transpose_solve consts,
*b) runs the staged `solve(matvec, b)`. Its rules:
- jvp: x' = solve(b' - matvec'(x)), where matvec' differentiates the matvec with respect to
  the values it closes over (the solver's own closure gets no derivative);
- transpose (it is linear in b): transpose_solve(vecmat, ct), vecmat being matvec's transpose
  (the same solve when `symmetric`);
- batching: every staged function is batched, with all operands batched.
custom_root runs the staged `solve(f, guess)`; its jvp is
the implicit function theorem, dx = -(df/dx)^-1 (df/dconsts) dconsts, solved by
custom_linear_solve with `tangent_solve` as both solve and transpose_solve (custom_root is a
custom_jvp function of f's closed-over values).
"""
from __future__ import annotations

from functools import partial
from typing import NamedTuple

from corejax import core
from corejax.core import ClosedJaxpr, Primitive, get_aval
from corejax.lax.control_flow.common import _batch, _canon, _run, _split_list, _trace
from corejax.transforms import ad, batching
from corejax.transforms.ad import Zero, is_undefined_primal
from corejax.transforms.jit import closed_call
from corejax._tree_traced import tree_flatten, tree_structure, tree_unflatten

__all__ = ["custom_linear_solve", "custom_root"]


def _lax():
    from corejax import lax
    return lax


class _SolveJaxprs(NamedTuple):
    matvec: ClosedJaxpr
    vecmat: ClosedJaxpr | None
    solve: ClosedJaxpr
    transpose_solve: ClosedJaxpr | None


def _eager() -> bool:
    """No transformation is active, so no value anywhere can be a tracer: the solve can just
    run (its implicit derivative rules would never be consulted)."""
    return core.cur_level() == 0 and core._trace_state.dynamic_level == 0


def _split(args, const_lengths):
    *consts, b = _split_list(list(args), const_lengths)
    return consts, b


# --- custom_linear_solve_p -------------------------------------------------------------------

linear_solve_p = Primitive("custom_linear_solve")
linear_solve_p.multiple_results = True


def _linear_solve_impl(*args, const_lengths, jaxprs, n_aux):
    consts, b = _split(args, const_lengths)
    return _run(jaxprs.solve, *consts[2], *b)


def _linear_solve_abstract(*avals, const_lengths, jaxprs, n_aux):
    return jaxprs.solve.out_avals


linear_solve_p.def_impl(_linear_solve_impl)
linear_solve_p.def_abstract_eval(_linear_solve_abstract)
linear_solve_p.weak_type_rule = lambda *args, jaxprs, **p: [a.weak_type for a in
                                                            jaxprs.solve.out_avals]


def _linear_solve_jvp(primals, tangents, const_lengths, jaxprs, n_aux):
    params = dict(const_lengths=const_lengths, jaxprs=jaxprs, n_aux=n_aux)
    outs = linear_solve_p.bind(*primals, **params)
    consts, b = _split(primals, const_lengths)
    t_consts, b_dot = _split(tangents, const_lengths)
    nx = len(b)
    x = outs[:nx]
    zero_outs = [Zero(get_aval(o).to_tangent_aval()) for o in outs]
    mv_nonzero = any(type(t) is not Zero for t in t_consts[0])
    if not mv_nonzero and all(type(t) is Zero for t in b_dot):
        return outs, zero_outs
    lax = _lax()
    rhs = [ad.instantiate_zeros(t) for t in b_dot]
    if mv_nonzero:
        # the matvec's derivative with respect to what it closes over, at the solution
        x_zero = [Zero(get_aval(v).to_tangent_aval()) for v in x]
        _, mv_dot = ad.jvp_flat(partial(closed_call, jaxprs.matvec), [*consts[0], *x],
                                [*t_consts[0], *x_zero])
        rhs = [lax.sub(r, ad.instantiate_zeros(m)) for r, m in zip(rhs, mv_dot)]
    x_dot = linear_solve_p.bind(*[c for cs in consts for c in cs], *rhs, **params)[:nx]
    return outs, x_dot + zero_outs[nx:]


def _linear_solve_transpose(cts, *args, const_lengths, jaxprs, n_aux):
    consts, b = _split(args, const_lengths)
    if any(is_undefined_primal(c) for cs in consts for c in cs):
        raise ValueError("custom_linear_solve is linear in b only, not in the values its "
                         "functions close over.")
    if jaxprs.transpose_solve is None:
        raise TypeError("transpose_solve required for backwards mode automatic "
                        "differentiation of custom_linear_solve.")
    nx = len(b)
    ct_x = [ad.instantiate_zeros(ct) if type(ct) is Zero else ct for ct in cts[:nx]]
    swapped = _SolveJaxprs(jaxprs.vecmat, jaxprs.matvec, jaxprs.transpose_solve, jaxprs.solve)
    lengths = (const_lengths[1], const_lengths[0], const_lengths[3], const_lengths[2])
    operands = [*consts[1], *consts[0], *consts[3], *consts[2]]
    ct_b = linear_solve_p.bind(*operands, *ct_x, const_lengths=lengths, jaxprs=swapped,
                               n_aux=n_aux)[:nx]
    return [None] * sum(const_lengths) + list(ct_b)


def _batch_all(axis_size, vals, dims, jaxprs, const_lengths):
    """Every operand batched along axis 0, and each staged function batched to match."""
    vals = [batching.bdim_at_front(v, d, axis_size) for v, d in zip(vals, dims)]
    new = []
    for jaxpr, n in zip(jaxprs, const_lengths):
        if jaxpr is None:
            new.append(None)
            continue
        n_in = len(jaxpr.in_avals)
        batched, _ = _batch(jaxpr, axis_size, [True] * n_in, [True] * len(jaxpr.out_avals))
        new.append(batched)
    return vals, type(jaxprs)(*new)


def _linear_solve_batch(axis_size, vals, dims, const_lengths, jaxprs, n_aux):
    vals, batched = _batch_all(axis_size, vals, dims, jaxprs, const_lengths)
    outs = linear_solve_p.bind(*vals, const_lengths=const_lengths, jaxprs=batched, n_aux=n_aux)
    return outs, [0] * len(outs)


_linear_solve_batch.needs_axis_size = True
ad.primitive_jvps[linear_solve_p] = _linear_solve_jvp
ad.primitive_transposes[linear_solve_p] = _linear_solve_transpose
batching.primitive_batchers[linear_solve_p] = _linear_solve_batch


def _check_like(what, out, tree, avals):
    leaves, out_tree = tree_flatten(out)
    if out_tree != tree or [(get_aval(x).shape, get_aval(x).dtype) for x in leaves] != \
            [(a.shape, a.dtype) for a in avals]:
        raise TypeError(f"custom_linear_solve: {what} must return a value with the structure, "
                        f"shapes and dtypes of b ({tree}, "
                        f"{[a.str_short() for a in avals]}), got {out_tree}, "
                        f"{[get_aval(x).str_short() for x in leaves]}.")


def _transpose_fn(matvec_jaxpr, mv_consts, tree, avals):
    """vecmat: the transpose of the (linear) staged matvec, as a Python function."""
    def vecmat(y):
        ys = tree_flatten(y)[0]
        args = [*mv_consts, *[ad.UndefinedPrimal(a) for a in avals]]
        cts = ad.backward_pass(matvec_jaxpr.jaxpr, matvec_jaxpr.consts, args, ys)
        return tree_unflatten(tree, [ad.instantiate_zeros(c) if type(c) is Zero else c
                                     for c in cts[len(mv_consts):]])
    return vecmat


def custom_linear_solve(matvec, b, solve, transpose_solve=None, symmetric=False,
                        has_aux=False):
    """x = solve(matvec, b), differentiated as the solution of matvec(x) = b (implicitly):
    derivatives flow to b and to values `matvec` closes over, not through `solve`.
    `transpose_solve(vecmat, b)` solves the transposed system for reverse mode (`symmetric`:
    solve does). With `has_aux`, the solves return `(x, aux)` and so does this."""
    if _eager():
        return solve(matvec, b)
    b_leaves, tree = tree_flatten(b)
    args_tree = tree_structure((b,))       # _trace calls fun(*unflattened args)
    b_leaves = [_canon(x) for x in b_leaves]
    avals = [core.raise_to_shaped(get_aval(x)) for x in b_leaves]
    mv_jaxpr, mv_consts, mv_out = _trace(matvec, args_tree, avals, "matvec")
    _check_like("matvec", mv_out, tree, avals)

    def staged_solve(solver, linear_fn, name):
        def fun(rhs):
            out = solver(linear_fn, rhs)
            x, aux = out if has_aux else (out, None)
            _check_like(name, x, tree, avals)
            return (x, aux) if has_aux else x
        jaxpr, consts, out = _trace(fun, args_tree, avals, name)
        aux_tree = tree_structure(out[1]) if has_aux else None
        return jaxpr, consts, aux_tree

    s_jaxpr, s_consts, aux_tree = staged_solve(solve, matvec, "solve")
    vm_jaxpr = ts_jaxpr = None
    vm_consts, ts_consts = [], []
    if symmetric:
        vm_jaxpr, vm_consts, ts_jaxpr, ts_consts = mv_jaxpr, mv_consts, s_jaxpr, s_consts
    elif transpose_solve is not None:
        vecmat = _transpose_fn(mv_jaxpr, mv_consts, tree, avals)
        vm_jaxpr, vm_consts, _ = _trace(vecmat, args_tree, avals, "vecmat")
        ts_jaxpr, ts_consts, _ = staged_solve(transpose_solve, vecmat, "transpose_solve")
    jaxprs = _SolveJaxprs(mv_jaxpr, vm_jaxpr, s_jaxpr, ts_jaxpr)
    lengths = (len(mv_consts), len(vm_consts), len(s_consts), len(ts_consts))
    n_aux = len(s_jaxpr.out_avals) - len(b_leaves)
    outs = linear_solve_p.bind(*mv_consts, *vm_consts, *s_consts, *ts_consts, *b_leaves,
                               const_lengths=lengths, jaxprs=jaxprs, n_aux=n_aux)
    x = tree_unflatten(tree, outs[:len(b_leaves)])
    return (x, tree_unflatten(aux_tree, outs[len(b_leaves):])) if has_aux else x


# --- custom_root -----------------------------------------------------------------------------

def custom_root(f, initial_guess, solve, tangent_solve, has_aux=False):
    """The root x of f found by `solve(f, initial_guess)`, differentiated implicitly: with
    respect to the values f closes over, dx = -(df/dx)^-1 df, where `tangent_solve(g, y)`
    solves the linear g(x) = y for the linearization g of f at the root (for instance
    `lambda g, y: y / g(1.0)` for scalars). With `has_aux`, solve returns `(x, aux)`."""
    if _eager():
        return solve(f, initial_guess)
    from corejax.custom_derivatives import custom_jvp
    lax = _lax()
    guess_leaves, tree = tree_flatten(initial_guess)
    args_tree = tree_structure((initial_guess,))
    guess_leaves = [_canon(x) for x in guess_leaves]
    avals = [core.raise_to_shaped(get_aval(x)) for x in guess_leaves]
    f_jaxpr, f_consts, f_out = _trace(f, args_tree, avals, "f")
    if tree_structure(f_out) != tree:
        raise TypeError(f"custom_root: f must return a value with the structure of "
                        f"initial_guess ({tree}), got {tree_structure(f_out)}.")

    def f_of(consts, x):
        return tree_unflatten(tree, closed_call(f_jaxpr, *consts, *tree_flatten(x)[0]))

    def run_solve(guess):
        out = solve(f, guess)
        x = out[0] if has_aux else out
        if tree_structure(x) != tree:
            raise TypeError(f"custom_root: solve must return a value with the structure of "
                            f"initial_guess ({tree}), got {tree_structure(x)}.")
        return out

    # the solver is never differentiated: it runs on constants, and what it closes over is
    # passed in explicitly (so that staging the custom_jvp function closes over nothing)
    s_jaxpr, s_consts, s_out = _trace(run_solve, args_tree, avals, "solve")
    s_tree = tree_structure(s_out)

    @custom_jvp
    def root(f_consts, s_consts, guess):
        s_consts = [lax.stop_gradient(c) for c in s_consts]
        guess = [lax.stop_gradient(g) for g in guess]
        return tree_unflatten(s_tree, closed_call(s_jaxpr, *s_consts, *guess))

    @root.defjvp
    def root_jvp(primals, tangents):
        f_consts, s_consts, guess = primals
        out = root(f_consts, s_consts, guess)
        x = out[0] if has_aux else out
        _, f_dot = ad.jvp_flat(lambda *c: tree_flatten(f_of(c, x))[0], list(f_consts),
                               list(tangents[0]))
        rhs = tree_unflatten(tree, [lax.neg(t) for t in f_dot])

        def linearized(v):
            return tree_unflatten(tree, ad.jvp_flat(
                lambda *y: tree_flatten(f_of(f_consts, tree_unflatten(tree, y)))[0],
                tree_flatten(x)[0], tree_flatten(v)[0])[1])

        x_dot = custom_linear_solve(linearized, rhs, solve=tangent_solve,
                                    transpose_solve=tangent_solve)
        if has_aux:
            return out, (x_dot, tree_map_none(out[1]))
        return out, x_dot

    return root(list(f_consts), list(s_consts), guess_leaves)


def tree_map_none(tree):
    """A tangent of None (zero) for every leaf of `tree`."""
    leaves, t = tree_flatten(tree)
    return tree_unflatten(t, [None] * len(leaves))
