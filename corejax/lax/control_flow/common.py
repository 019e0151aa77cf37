"""Helpers shared by the control-flow primitives in conditionals.py, loops.py and scans.py.

User functions are staged to jaxprs once; values they close over (tracers of enclosing
transformations) are passed as explicit leading operands, so every rule sees them. The
jaxpr-level jvp, vmap and partial evaluation below are memoized per sub-jaxpr and pattern:
the loop rules call them repeatedly while growing loop-carried facts to a fixpoint.
"""
from __future__ import annotations

from functools import partial
from typing import NamedTuple

import numpy as np

from corejax import core, dtypes
from corejax.core import ClosedJaxpr, ShapedArray, Tracer, get_aval
from corejax.lax.elementwise import convert_element_type, full
from corejax.transforms import ad, batching
from corejax.transforms.ad import Zero
from corejax.transforms.jit import closed_call, memoized, stage
from corejax.transforms.staging import trace_to_jaxpr
from corejax._tree_traced import tree_flatten, tree_unflatten


# --- staging user functions ----------------------------------------------------------------------

def _canon(x):
    """A leaf as an operand: NumPy values become Arrays of the canonical dtype."""
    if isinstance(x, Tracer) or type(x) in (int, float, complex, bool):
        return x
    from corejax.array import Array
    if type(x) is Array:
        return x
    arr = np.asarray(x)
    core.get_aval(arr)  # raises a TypeError naming the value for non-array leaves
    # A copy: Array freezes its buffer, which must not be the caller's array.
    return Array(np.array(arr, dtypes.canonicalize_dtype(arr.dtype)))


def _trace(fun, in_tree, in_avals, name, reuse=None):
    """Stages `fun(*tree_unflatten(in_tree, leaves))`. Returns `(jaxpr, consts, out)` where
    `jaxpr` takes the closed-over tracers `consts` first, then the leaves (concrete closed-over
    values stay inside it), and `out` is whatever `fun` returned, for its pytree structure.
    `reuse`: a list from `_key_reuse.signatures()` that gets what `fun` does with PRNG keys."""
    store = []
    if reuse is not None:
        from corejax import _key_reuse
        fun = _key_reuse.watch(fun, reuse)

    def flat(*leaves):
        out = fun(*tree_unflatten(in_tree, leaves))
        store.append(out)
        return tree_flatten(out)[0]

    jaxpr, consts = trace_to_jaxpr(flat, in_avals, fun_name=getattr(fun, "__name__", name))
    is_tracer = [isinstance(c, Tracer) for c in consts]
    tracer_vars = [v for v, t in zip(jaxpr.constvars, is_tracer) if t]
    inner = core.Jaxpr([v for v, t in zip(jaxpr.constvars, is_tracer) if not t],
                       tracer_vars + jaxpr.invars, jaxpr.eqns, jaxpr.outvars)
    closed = ClosedJaxpr(inner, [c for c, t in zip(consts, is_tracer) if not t])
    return closed, [c for c, t in zip(consts, is_tracer) if t], store[0]


def _typematch(a: ShapedArray, b: ShapedArray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype


def _aval_str(a: ShapedArray) -> str:
    return a.str_short()


def _promote_weak(vals, in_avals, out_avals):
    """Weakly typed carries whose dtype the body changes take the body's dtype (as in JAX)."""
    changed = False
    vals = list(vals)
    for i, (a, b) in enumerate(zip(in_avals, out_avals)):
        if a.weak_type and not _typematch(a, b) and a.shape == b.shape:
            vals[i] = convert_element_type(vals[i], dtypes.result_type(vals[i], b.dtype))
            changed = True
    return vals, changed


def _run(closed: ClosedJaxpr, *args) -> list:
    """Evaluates a jaxpr on NumPy values with each primitive's impl (the reference path)."""
    from corejax.array import to_numpy
    jaxpr = closed.jaxpr
    env = dict(zip(jaxpr.constvars, [to_numpy(c) for c in closed.consts]))
    env.update(zip(jaxpr.invars, args))

    def read(v):
        return np.asarray(v.val, v.aval.dtype) if type(v) is core.Literal else env[v]

    for eqn in jaxpr.eqns:
        outs = eqn.primitive.impl(*[read(v) for v in eqn.invars], **eqn.params)
        if not eqn.primitive.multiple_results:
            outs = (outs,)
        env.update(zip(eqn.outvars, [to_numpy(o) for o in outs]))
    return [read(v) for v in jaxpr.outvars]


def _reorder(closed: ClosedJaxpr, in_perm, out_perm=None) -> ClosedJaxpr:
    """The same program with its inputs (and outputs) listed in another order."""
    j = closed.jaxpr
    outvars = j.outvars if out_perm is None else [j.outvars[i] for i in out_perm]
    return ClosedJaxpr(core.Jaxpr(j.constvars, [j.invars[i] for i in in_perm], j.eqns, outvars),
                       closed.consts)


def _split_list(xs, sizes):
    out, start = [], 0
    for n in sizes:
        out.append(list(xs[start:start + n]))
        start += n
    out.append(list(xs[start:]))
    return out


def _nonzero(t) -> bool:
    return type(t) is not Zero


def _tangent_mask(primals, tangents) -> list[bool]:
    """Which tangents are nonzero; integer operands never have one."""
    return [_nonzero(t) and dtypes.is_inexact(get_aval(p).dtype)
            for p, t in zip(primals, tangents)]


def _zeros(aval: ShapedArray):
    return full(aval.shape, 0, aval.dtype, weak_type=aval.weak_type)


# --- jaxpr-level transformations shared by the rules ---------------------------------------------

def _jvp(closed: ClosedJaxpr, nonzeros, instantiate):
    """`((primals, nonzero tangents) -> (outputs, nonzero output tangents), out_nonzeros)`.
    Output tangents are nonzero when they depend on a nonzero input tangent, or are listed
    in `instantiate` (then materialized as zeros)."""
    nonzeros = tuple(bool(z) and dtypes.is_inexact(a.dtype)
                     for z, a in zip(nonzeros, closed.in_avals))
    key = (nonzeros, tuple(instantiate))
    return memoized("cf_jvp", closed, key, lambda: _build_jvp(closed, nonzeros, instantiate))


def _build_jvp(closed, nonzeros, instantiate):
    n, box = len(closed.in_avals), []

    def fun(*args):
        nz_tangents = iter(args[n:])
        tangents = [next(nz_tangents) if z else Zero(a.to_tangent_aval())
                    for z, a in zip(nonzeros, closed.in_avals)]
        outs, touts = ad.jvp_flat(partial(closed_call, closed), args[:n], tangents,
                                  instantiate=False)
        out_nz = [dtypes.is_inexact(a.dtype) and (_nonzero(t) or inst)
                  for t, a, inst in zip(touts, closed.out_avals, instantiate)]
        box.append(out_nz)
        return [*outs, *[ad.instantiate_zeros(t) for t, z in zip(touts, out_nz) if z]]

    t_avals = [a.to_tangent_aval() for a, z in zip(closed.in_avals, nonzeros) if z]
    jaxpr = stage(fun, [*closed.in_avals, *t_avals], "jvp")
    return jaxpr, box[0]


def _batch(closed: ClosedJaxpr, axis_size: int, in_batched, instantiate):
    """`(batched jaxpr, out_batched)`: batched inputs and outputs carry the batch at axis 0;
    outputs are batched when they depend on a batched input or are listed in `instantiate`."""
    key = (axis_size, tuple(in_batched), tuple(instantiate))
    return memoized("cf_vmap", closed, key,
                    lambda: _build_batch(closed, axis_size, in_batched, instantiate))


def _build_batch(closed, axis_size, in_batched, instantiate):
    box = []
    in_avals = [a.update(shape=(axis_size,) + a.shape) if b else a
                for a, b in zip(closed.in_avals, in_batched)]

    def fun(*args):
        outs, dims = batching.vmap_flat(partial(closed_call, closed), axis_size,
                                        [0 if b else None for b in in_batched], args=args)
        out_b = [d is not None or inst for d, inst in zip(dims, instantiate)]
        box.append(out_b)
        return [batching.bdim_at_front(o, d, axis_size) if b else o
                for o, d, b in zip(outs, dims, out_b)]

    jaxpr = stage(fun, in_avals, "vmap")
    return jaxpr, box[0]


class _Split(NamedTuple):
    known: ClosedJaxpr    # known inputs -> (known outputs, residuals)
    unknown: ClosedJaxpr  # (residuals, unknown inputs) -> unknown outputs
    out_uks: list
    num_res: int


def _split(closed: ClosedJaxpr, unknowns, instantiate=False) -> _Split:
    """Partial evaluation of a jaxpr (ad.partial_eval_jaxpr, which re-traces it so nested
    control flow is split by its own rule), built once per jaxpr and pattern."""
    if isinstance(instantiate, bool):
        instantiate = [instantiate] * len(closed.out_avals)
    key = (tuple(unknowns), tuple(instantiate))
    return memoized("cf_split", closed, key, lambda: _Split(
        *ad.partial_eval_jaxpr(closed, list(unknowns), list(instantiate))))


def _fixpoint(mask, step):
    """Grows the boolean `mask` with `step(mask)` until it is stable (loop-carried facts)."""
    mask = list(mask)
    while True:
        new = [a or b for a, b in zip(mask, step(mask))]
        if new == mask:
            return mask
        mask = new


# --- carry checks shared by while_loop and scan --------------------------------------------------

def _check_carry(what, paths, in_avals, out_avals):
    """Raises a TypeError naming every carry leaf (by its pytree path) whose type the body
    changes, so the message says which component to fix."""
    lines = []
    for p, a, b in zip(paths, in_avals, out_avals):
        if not _typematch(a, b):
            kind = "shapes" if a.shape != b.shape else "dtypes"
            lines.append(f"  * the input carry component {p} has type {_aval_str(a)} but the "
                         f"corresponding output carry component has type {_aval_str(b)}, so "
                         f"the {kind} do not match")
    if lines:
        raise TypeError(f"{what} function carry input and carry output must have equal types "
                        "(shape and dtype), but they differ:\n" + "\n".join(lines))
