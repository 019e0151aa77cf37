"""Factories that define whole families of primitives with all their rules in one call."""
from __future__ import annotations

from typing import Callable

import numpy as np

from corejax import core, dtypes
from corejax.core import Primitive, ShapedArray
from corejax.compiler import registry
from corejax.lax._narrow import widened
from corejax.transforms import batching

__all__ = ["check_dtype", "unop", "naryop", "FLOATING", "NUMERIC", "INTEGRAL", "BOOL_OR_INT",
           "ANY", "shape_str"]

FLOATING = ("floating", "complexfloating")
NUMERIC = ("integer", "floating", "complexfloating")
INTEGRAL = ("integer",)
BOOL_OR_INT = ("bool", "integer")
ANY = ("bool", "integer", "floating", "complexfloating")

_KIND_GROUP = {"b": "bool", "i": "integer", "u": "integer", "f": "floating", "c": "complexfloating"}


def shape_str(shape) -> str:
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def check_dtype(name: str, aval: ShapedArray, accepted) -> None:
    if _KIND_GROUP.get(dtypes.kind_of(aval.dtype)) not in accepted:
        raise TypeError(f"{name} does not accept dtype {aval.dtype.name}. Accepted dtypes are "
                        f"subtypes of {', '.join(accepted)}.")


def _np_impl(fn: Callable, quiet: bool) -> Callable:
    if not quiet:
        return fn

    def impl(*args, **params):
        with np.errstate(all="ignore"):
            return fn(*args, **params)

    return impl


def accurate(np_fn: Callable) -> Callable:
    """Evaluates a transcendental function in float64 and rounds once, so float32 results are
    correctly rounded (NumPy's own float32 SIMD kernels may be off by an ulp, JAX's are not)."""
    def impl(x, **params):
        if x.dtype.kind == "f" and x.dtype.itemsize < 8:
            return np_fn(x.astype(np.float64), **params).astype(x.dtype)
        return np_fn(x, **params)
    return impl


def unop(name: str, np_fn: Callable, accepted=NUMERIC, lowering=None, result_dtype=None,
         quiet: bool = False, transcendental: bool = False) -> Primitive:
    """An elementwise unary primitive. `result_dtype(dtype)` defaults to the input's dtype."""
    prim = Primitive(name)
    # bfloat16, float8, int4 ... are computed in a wider type, as XLA does (see _narrow.py)
    prim.def_impl(widened(name, _np_impl(accurate(np_fn) if transcendental else np_fn, quiet),
                          result_dtype))

    def abstract_eval(x, **params):
        check_dtype(name, x, accepted)
        if result_dtype is None:
            return ShapedArray(x.shape, x.dtype, x.weak_type)
        return ShapedArray(x.shape, result_dtype(x.dtype), False)

    prim.def_abstract_eval(abstract_eval)
    if result_dtype is not None:
        prim.weak_type_rule = lambda *a, **p: False
    batching.defvectorized(prim)
    if lowering is not None:
        registry.def_elementwise(prim, lowering)
    return prim


def naryop(name: str, np_fn: Callable, accepted_per_arg, lowering=None, result_dtype=None,
           quiet: bool = False) -> Primitive:
    """An elementwise n-ary primitive: operands of equal shapes and equal dtypes."""
    prim = Primitive(name)
    np_impl = widened(name, _np_impl(np_fn, quiet), result_dtype)

    def impl(*args, **params):
        # Eager calls skip abstract evaluation; NumPy would silently broadcast or promote,
        # so mismatches are reported here with the same error abstract evaluation gives.
        a0 = args[0]
        for a in args[1:]:
            if a.shape != a0.shape or a.dtype != a0.dtype:
                abstract_eval(*[ShapedArray(x.shape, x.dtype) for x in args], **params)
        return np_impl(*args, **params)

    prim.def_impl(impl)
    # The impl on NumPy values without its equal-operands check (broadcasting and promoting
    # as NumPy does): the jnp layer's short paths call it on operands it has checked
    # (numpy/_core.plain_binary), so they compute what the primitive computes.
    prim.numpy_impl = np_impl

    def abstract_eval(*avals, **params):
        for aval, accepted in zip(avals, accepted_per_arg):
            check_dtype(name, aval, accepted)
        shapes = {a.shape for a in avals}
        if len(shapes) != 1:
            raise TypeError(f"{name} got incompatible shapes for broadcasting: "
                            f"{', '.join(shape_str(a.shape) for a in avals)}.")
        dts = {a.dtype for a in avals}
        if len(dts) != 1:
            raise TypeError(f"{name} requires arguments to have the same dtypes, got "
                            f"{', '.join(a.dtype.name for a in avals)}.")
        a0 = avals[0]
        if result_dtype is None:
            return ShapedArray(a0.shape, a0.dtype, all(a.weak_type for a in avals))
        return ShapedArray(a0.shape, result_dtype(a0.dtype), False)

    prim.def_abstract_eval(abstract_eval)
    if result_dtype is not None:
        prim.weak_type_rule = lambda *a, **p: False
    batching.defbroadcasting(prim)
    if lowering is not None:
        registry.def_elementwise(prim, lowering)
    return prim


def get_aval(x) -> ShapedArray:
    return core.get_aval(x)


def bool_result(_dtype) -> np.dtype:
    return dtypes.bool_
