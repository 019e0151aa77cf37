"""lax.composite: a function traced as one named operation (`composite` equations in jaxprs),
whose meaning is its decomposition.

JAX keeps the name for compilers that recognise it and falls back to the decomposition; this
compiler has no named kernels, so a composite runs its decomposition, inlined (registry's
call-like primitives). Derivatives and batching go through the decomposition: JAX 0.10 raises
for jvp ("JVP rule for composite not implemented") and vmap of a composite, corejax computes
them as for the decomposition written out (the transformed program no longer carries the name,
which described the original operation, not its derivative).
"""
from __future__ import annotations

import functools

import numpy as np

from corejax import core
from corejax.compiler import registry
from corejax.core import ClosedJaxpr, Primitive, get_aval
from corejax.errors import UnexpectedTracerError
from corejax.transforms import ad, batching
from corejax.transforms.jit import closed_call
from corejax.transforms.staging import convert_constvars, trace_to_jaxpr
from corejax.tree_util import tree_flatten, tree_unflatten

__all__ = ["composite", "composite_p"]

composite_p = Primitive("composite")
composite_p.multiple_results = True


def _impl(*args, jaxpr: ClosedJaxpr, **_):
    return [core.full_lower(o) for o in closed_call(jaxpr, *args)]


composite_p.def_impl(_impl)
composite_p.def_abstract_eval(lambda *avals, jaxpr, **_: jaxpr.out_avals)
composite_p.weak_type_rule = lambda *args, jaxpr, **_: [a.weak_type for a in jaxpr.out_avals]
registry.def_call(composite_p, "jaxpr")


def _jvp(primals, tangents, *, jaxpr, **_):
    return ad.jvp_flat(lambda *xs: closed_call(jaxpr, *xs), primals, tangents,
                       instantiate=False)


def _batch(axis_size, vals, dims, *, jaxpr, **_):
    return batching.vmap_flat(lambda *xs: closed_call(jaxpr, *xs), axis_size, dims, args=vals)


_batch.needs_axis_size = True
ad.primitive_jvps[composite_p] = _jvp
batching.primitive_batchers[composite_p] = _batch


class _HashableArray:
    """A NumPy array attribute, hashable by value (equation parameters must be)."""

    def __init__(self, value: np.ndarray):
        self.value = value

    def __eq__(self, other):
        return (type(other) is _HashableArray and self.value.dtype == other.value.dtype
                and self.value.shape == other.value.shape
                and np.array_equal(self.value, other.value))

    def __hash__(self):
        return hash((self.value.shape, self.value.dtype.str, self.value.tobytes()))

    def __repr__(self):
        return repr(self.value)


def _tracer_error(name: str, what: str, note: str = "") -> UnexpectedTracerError:
    return UnexpectedTracerError(
        f"Found a JAX Tracer as {what} in the decomposition for the composite op '{name}'. "
        "This means that the decomposition function closes over a value that is involved in "
        "a JAX transformation. Any values that aren't explicitly known at compile time must "
        "be explicitly passed as arguments to the composite." + note)


def composite(decomposition, name: str, version: int = 0):
    """`decomposition` as one named operation: calling the result traces it into a single
    `composite` equation (name, version, the keyword arguments as attributes). Positional
    arguments are the operation's inputs (pytrees of arrays), keyword arguments its static
    attributes."""

    @functools.wraps(decomposition)
    def wrapped(*args, **kwargs):
        if any(isinstance(v, core.Tracer) for v in tree_flatten(kwargs)[0]):
            raise _tracer_error(name, "an attribute", "\n\nNote: If you are passing jax "
                                "arrays as attributes, use numpy arrays instead.")
        flat_args, in_tree = tree_flatten(args)
        in_avals = [get_aval(x) for x in flat_args]
        out_trees = []

        def flat_fun(*flat):
            outs = decomposition(*tree_unflatten(in_tree, list(flat)), **kwargs)
            leaves, out_tree = tree_flatten(outs)
            out_trees.append(out_tree)
            return leaves

        jaxpr, consts = trace_to_jaxpr(flat_fun, in_avals, fun_name=name)
        if any(isinstance(c, core.Tracer) for c in consts):
            raise _tracer_error(name, "a constant")
        attributes = []
        for key, value in kwargs.items():
            leaves, treedef = tree_flatten(value)
            leaves = tuple(_HashableArray(v) if isinstance(v, np.ndarray) else v
                           for v in leaves)
            attributes.append((key, leaves, treedef))
        outs = composite_p.bind(*consts, *flat_args, name=name, attributes=tuple(attributes),
                                version=version,
                                jaxpr=ClosedJaxpr(convert_constvars(jaxpr), []))
        return tree_unflatten(out_trees[0], outs)

    return wrapped
