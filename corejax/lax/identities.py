"""Primitives that compute nothing but say something to the compiler: stage (lift a value into
the active trace), optimization_barrier (keep computations on either side apart) and dce_sink
(mark values as used, so dead-code elimination keeps what computes them)."""
from __future__ import annotations

import numpy as np

from corejax import dtypes
from corejax.compiler import registry
from corejax.core import Primitive, Tracer, get_aval
from corejax.transforms import ad, batching
from corejax.transforms.ad import instantiate_zeros
from corejax.tree_util import tree_flatten, tree_unflatten

__all__ = ["stage", "optimization_barrier", "dce_sink", "stage_p", "optimization_barrier_p",
           "dce_sink_p"]


# --- stage -------------------------------------------------------------------------------------

stage_p = Primitive("stage")
stage_p.def_impl(lambda x: x)
stage_p.def_abstract_eval(lambda x: x)
ad.deflinear(stage_p, lambda ct, x: [ct])
batching.defvectorized(stage_p)
registry.def_elementwise(stage_p, lambda ctx, x: x)


def _value(x, where: str, position: int = 0):
    """`x` as an operand: a Python scalar becomes a weakly typed array; anything that is not
    an array-like value is a TypeError naming `where`."""
    if isinstance(x, Tracer):
        return x
    try:
        get_aval(x)
    except TypeError:
        raise TypeError(f"Error interpreting argument to {where} as a JAX value. The "
                        f"problematic value is of type {type(x)} and was passed to {where} at "
                        f"position {position}.") from None
    if type(x) in (bool, int, float, complex):
        from corejax.lax.elementwise import convert_element_type
        return convert_element_type(x, dtypes.python_scalar_dtype(x), weak_type=True)
    if isinstance(x, (np.ndarray, np.generic)):   # NumPy values in their canonical dtype
        return np.asarray(x, dtypes.canonicalize_dtype(x.dtype))
    return x


def stage(x, /):
    """`x` lifted into the active trace: the identity on a traced value, an array (weakly typed
    for a Python scalar) for a constant, eagerly too."""
    x = _value(x, "stage")
    return x if isinstance(x, Tracer) else stage_p.bind(x)


# --- optimization_barrier ----------------------------------------------------------------------

optimization_barrier_p = Primitive("optimization_barrier")
optimization_barrier_p.multiple_results = True
optimization_barrier_p.def_impl(lambda *xs: list(xs))
optimization_barrier_p.def_abstract_eval(lambda *avals: list(avals))
optimization_barrier_p.weak_type_rule = lambda *xs: [getattr(x, "weak_type", False) for x in xs]


def _barrier_jvp(primals, tangents):
    # the tangents pass a barrier of their own, as in JAX (every tangent, zeros included)
    return (optimization_barrier_p.bind(*primals),
            optimization_barrier_p.bind(*map(instantiate_zeros, tangents)))


ad.primitive_jvps[optimization_barrier_p] = _barrier_jvp
ad.primitive_transposes[optimization_barrier_p] = lambda cts, *xs: optimization_barrier_p.bind(
    *map(instantiate_zeros, cts))
batching.primitive_batchers[optimization_barrier_p] = lambda vals, dims: (
    optimization_barrier_p.bind(*vals), list(dims))


def optimization_barrier(operand, /):
    """`operand` (a pytree) unchanged, as one `optimization_barrier` equation: in JAX it stops
    XLA from moving computations across it. Here the compiler runs it as a step of its own,
    so no fused kernel spans it either. Python scalars become weakly typed arrays."""
    leaves, tree = tree_flatten(operand)
    if not leaves:
        return operand
    return tree_unflatten(tree, optimization_barrier_p.bind(
        *[_value(x, "optimization_barrier", i) for i, x in enumerate(leaves)]))


# --- dce_sink ----------------------------------------------------------------------------------

dce_sink_p = Primitive("dce_sink")
dce_sink_p.multiple_results = True
dce_sink_p.def_impl(lambda x, **params: [])
dce_sink_p.def_abstract_eval(lambda x, **params: [])
registry.def_effectful(dce_sink_p)     # never removed: that is its purpose


def _sink_jvp(primals, tangents, **params):
    dce_sink_p.bind(*primals, **params)
    return [], []


ad.primitive_jvps[dce_sink_p] = _sink_jvp
batching.primitive_batchers[dce_sink_p] = lambda vals, dims, **params: (
    dce_sink_p.bind(*vals, **params), [])


def dce_sink(val, *, prevent_mlir_dce: bool = False):
    """Marks every leaf of `val` as used: dead-code elimination keeps the computations that
    produce them even when the function's results do not need them. Returns None."""
    for leaf in tree_flatten(val)[0]:
        dce_sink_p.bind(leaf, prevent_mlir_dce=prevent_mlir_dce)

