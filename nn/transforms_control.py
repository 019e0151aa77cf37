"""Lifted control flow (cond, switch, while_loop) and differentiation (grad, value_and_grad,
vjp, jvp, custom_vjp) of functions whose first argument is a module. See nn/transforms.py for
how a module call becomes a pure function of its variables."""
from __future__ import annotations

import functools

import corejax
import corejax.numpy as jnp
from corejax import lax, random
from nn.module import Module

__all__ = ["while_loop", "cond", "switch", "grad", "value_and_grad", "vjp", "jvp",
           "custom_vjp"]


def _t():
    import nn.transforms as t
    return t


def _frame(mdl, what):
    if not isinstance(mdl, Module):
        raise TypeError(f"nn.{what}: mdl must be a Module, got {type(mdl).__name__}.")
    return _t()._Frame(mdl, what)


# --- cond / switch --------------------------------------------------------------------------

def _branches(what, selector, branches, mdl, operands, variables, rngs, use_cond):
    t = _t()
    frame = _frame(mdl, what)
    vpred, rpred = t._filter(variables), t._filter(rngs)
    vars_in = t._read(frame.scope, vpred)
    keys = frame.rngs(rpred)
    mutable = frame.store.is_mutable
    # As Flax (lax.cond traces the branches in order, sharing the PRNG counters), branch i
    # draws after the draws of the branches before it; `starts` are the counters each begins
    # with. During init every branch creates its variables before the staged choice.
    starts = [None] * len(branches)
    if frame.store.initializing or keys:
        for i, br in enumerate(branches):
            starts[i] = frame.counts()
            _, made = frame.run(br, vars_in, keys, mutable, operands, {})
            frame.advance()
            if frame.store.initializing:
                vars_in = made

    def make(br, start):
        def run(vars_, keys_, ops):
            out, new = frame.run(br, vars_, keys_, mutable, ops, {},
                                 rng_counts=None if start is None else dict(start))
            return out, {c: new.get(c, tr) for c, tr in vars_.items() if mutable(c)}
        return run

    fns = [make(br, st) for br, st in zip(branches, starts)]
    if use_cond:
        out, new = lax.cond(selector, fns[0], fns[1], vars_in, keys, tuple(operands))
    else:
        out, new = lax.switch(selector, fns, vars_in, keys, tuple(operands))
    frame.advance()
    frame.write_back(new)
    return out


def cond(pred, true_fun, false_fun, mdl, *operands, variables=True, rngs=True):
    """lax.cond over `true_fun(mdl, *operands)` and `false_fun(mdl, *operands)`; during init
    both branches create their variables."""
    return _branches("cond", pred, [true_fun, false_fun], mdl, operands, variables, rngs, True)


def switch(index, branches, mdl, *operands, variables=True, rngs=True):
    """lax.switch over `branches[i](mdl, *operands)`; during init every branch runs."""
    return _branches("switch", index, list(branches), mdl, operands, variables, rngs, False)


# --- while_loop -----------------------------------------------------------------------------

def while_loop(cond_fn, body_fn, mdl, init, carry_variables=False, broadcast_variables=True,
               split_rngs={}):
    """lax.while_loop with `cond_fn(mdl, c)` and `body_fn(mdl, c)`: collections in
    `carry_variables` are updated by each iteration, `broadcast_variables` are read only.
    Streams in `split_rngs` get a different key per iteration."""
    t = _t()
    frame = _frame(mdl, "while_loop")
    carried, bcast = t._filter(carry_variables), t._filter(broadcast_variables)
    split = t._split_pred(split_rngs)
    mutable = frame.store.is_mutable
    vars_in = t._read(frame.scope, lambda c: carried(c) or bcast(c))
    keys = frame.rngs()
    split_base = {k: v for k, v in keys.items() if split(k)}
    # Flax's lax.while_loop traces cond_fn once and then body_fn once, sharing the PRNG
    # counters: every call of cond_fn starts from the caller's counters, every call of body_fn
    # from those cond_fn ends with. Runs outside the loop find them (and, during init, create
    # the variables; Flax needs those to exist already).
    cond_start, body_start, end = frame.counts(), None, None
    if frame.store.initializing or keys:
        _, made = frame.run(cond_fn, vars_in, keys, mutable, (init,), {})
        body_start = frame.last_counts
        _, made = frame.run(body_fn, made if frame.store.initializing else vars_in, keys,
                            mutable, (init,), {}, rng_counts=dict(body_start))
        end = frame.last_counts
        if frame.store.initializing:
            vars_in = made
    fixed = {c: tr for c, tr in vars_in.items() if not carried(c)}
    cvars = {c: tr for c, tr in vars_in.items() if carried(c)}

    def step_keys(i):
        # As Flax: iteration i folds i into the stream's root key (the condition folds -i).
        out = dict(keys)
        out.update({k: random.fold_in(v, i) for k, v in split_base.items()})
        return out

    def cond_fun(state):
        i, c, cv = state
        variables = dict(fixed)
        variables.update(cv)
        out, _ = frame.run(cond_fn, variables, step_keys(-i), lambda col: False, (c,), {},
                           rng_counts=dict(cond_start))
        return out

    def body_fun(state):
        i, c, cv = state
        variables = dict(fixed)
        variables.update(cv)
        c, new = frame.run(body_fn, variables, step_keys(i),
                           lambda col: mutable(col) and carried(col), (c,), {},
                           rng_counts=None if body_start is None else dict(body_start))
        return i + 1, c, {col: new.get(col, tr) for col, tr in cv.items()}

    _, out, cvars = lax.while_loop(cond_fun, body_fun, (jnp.asarray(0, jnp.int32), init, cvars))
    frame.advance(end)
    if frame.store.initializing:
        frame.write_back(fixed)
    frame.write_back(cvars)
    return out


# --- differentiation ------------------------------------------------------------------------

def _diff_setup(what, mdl, diff_cols, variables, rngs):
    t = _t()
    frame = _frame(mdl, what)
    vpred = t._filter(variables)
    dpred = t._filter(diff_cols)
    vars_in = t._read(frame.scope, lambda c: vpred(c) or dpred(c))
    diff = {c: tr for c, tr in vars_in.items() if dpred(c)}
    other = {c: tr for c, tr in vars_in.items() if not dpred(c)}
    return frame, diff, other, frame.rngs(t._filter(rngs))


def vjp(fn, mdl, *primals, has_aux=False, reduce_axes=(), vjp_variables="params",
        variables=True, rngs=True, multi_scope=False):
    """(fn(mdl, *primals), vjp_fun[, aux]); vjp_fun(cotangent) returns
    (gradients of the `vjp_variables` collections, *gradients of primals)."""
    if reduce_axes:
        raise NotImplementedError("reduce_axes argument to vjp is deprecated")
    frame, diff, other, keys = _diff_setup("vjp", mdl, vjp_variables, variables, rngs)
    mutable = frame.store.is_mutable

    def f(diff_, *prims):
        v = dict(other)
        v.update(diff_)
        out, new = frame.run(fn, v, keys, mutable, prims, {})
        if has_aux:
            out, aux = out
            return out, (aux, new)
        return out, (None, new)

    y, vjp_fn, (aux, new) = corejax.vjp(f, diff, *primals, has_aux=True)
    frame.advance()
    frame.write_back({c: tr for c, tr in new.items() if c not in diff})
    if has_aux:
        return y, vjp_fn, aux
    return y, vjp_fn


def value_and_grad(fn, mdl, *primals, has_aux=False, reduce_axes=(), variables=True,
                   rngs=True):
    """(fn(mdl, *primals), gradients with respect to the primals); the module's variables are
    available inside but get no gradient. With has_aux: ((value, aux), grads)."""
    if reduce_axes:
        raise NotImplementedError("reduce_axes argument to value_and_grad is deprecated")
    frame, _, other, keys = _diff_setup("value_and_grad", mdl, False, variables, rngs)
    mutable = frame.store.is_mutable

    def f(*prims):
        out, new = frame.run(fn, other, keys, mutable, prims, {})
        if has_aux:
            out, aux = out
            return out, (aux, new)
        return out, (None, new)

    out, vjp_fn, (aux, new) = corejax.vjp(f, *primals, has_aux=True)
    frame.advance()
    if jnp.shape(out) != ():
        raise ValueError("grad can only work on functions with scalar-valued outputs. out "
                         f"shape={jnp.shape(out)}")
    grads = vjp_fn(jnp.ones_like(out))
    frame.write_back(new)
    if has_aux:
        return (out, aux), grads
    return out, grads


def grad(fn, mdl, *primals, has_aux=False, reduce_axes=(), variables=True, rngs=True):
    """Gradients of the scalar fn(mdl, *primals) with respect to the primals (a tuple, one per
    primal); with has_aux, (grads, aux)."""
    if reduce_axes:
        raise NotImplementedError("reduce_axes argument to grad is deprecated")
    out = value_and_grad(fn, mdl, *primals, has_aux=has_aux, variables=variables, rngs=rngs)
    if has_aux:
        (_, aux), grads = out
        return grads, aux
    return out[1]


def jvp(fn, mdl, primals, tangents, variable_tangents, variables=True, rngs=True):
    """(fn(mdl, *primals), its Jacobian-vector product) with tangents for the primals and for
    the variable collections in `variable_tangents` ({collection: tangent tree})."""
    cols = tuple(variable_tangents)
    frame, diff, other, keys = _diff_setup("jvp", mdl, cols, variables, rngs)
    mutable = frame.store.is_mutable
    for c in cols:
        diff.setdefault(c, {})
    diff = {c: diff[c] for c in cols}

    def f(diff_, *prims):
        v = dict(other)
        v.update(diff_)
        out, _ = frame.run(fn, v, keys, mutable, prims, {})
        return out

    tangents_in = ({c: variable_tangents[c] for c in cols},) + tuple(tangents)
    out = corejax.jvp(f, (diff,) + tuple(primals), tangents_in)
    frame.advance()
    return out


def custom_vjp(fn, forward_fn, backward_fn, grad_vars="params", nondiff_argnums=()):
    """A lifted function (mdl, *args) with a custom backward pass:
    forward_fn(mdl, *args) -> (out, residuals); backward_fn(*nondiff_args, residuals, g) ->
    (gradients of the `grad_vars` collections, *gradients of the differentiable args).
    `nondiff_argnums` count the module as argument 0."""
    nondiff = tuple(nondiff_argnums)  # positions counted with the module as argument 0

    @functools.wraps(fn)
    def wrapper(mdl, *args):
        frame, diff, other, keys = _diff_setup("custom_vjp", mdl, grad_vars, True, True)
        mutable = frame.store.is_mutable
        if frame.store.initializing:
            out, new = frame.run(fn, dict(other, **diff), keys, mutable, args, {})
            frame.advance()
            frame.write_back(new)
            return out
        read_only = lambda col: False

        def primal(diff_, *a):
            return frame.run(fn, dict(other, **diff_), keys, read_only, a, {})[0]

        def fwd(diff_, *a):
            out, res = frame.run(forward_fn, dict(other, **diff_), keys, read_only, a, {})[0]
            return out, res

        def bwd(*rest):
            *nondiff_args, res, g = rest
            return tuple(backward_fn(*nondiff_args, res, g))

        f = corejax.custom_vjp(primal, nondiff_argnums=nondiff)
        f.defvjp(fwd, bwd)
        return f(diff, *args)

    return wrapper

