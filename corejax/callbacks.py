"""`pure_callback` and `io_callback`: Python functions of array values called from
transformed code.

It binds `pure_callback`, whose impl calls the function on the concrete values of its
operands (corejax Arrays, as JAX passes its own) and checks the results against the declared
`result_shape_dtypes`. Under jit it runs as a host step of the compiled program; being pure,
passes may remove it when its results are unused. Under vmap its `vmap_method` says how the
function sees the batch: 'sequential' / 'sequential_unrolled' (one call per element, by
lax.map), 'expand_dims' (one call; unbatched operands get a leading axis of size 1),
'broadcast_all' (one call; every operand broadcast to the batch), 'legacy_vectorized' (one
call; unbatched operands unchanged). It has no derivative: wrap it in `custom_jvp` or
`custom_vjp`.

`io_callback` (public in corejax.experimental) binds `io_callback`, an effectful primitive:
never removed or merged by the compiler's passes and run in program order. Under vmap an
unordered one calls the function once per element, in order (an ordered one cannot be
vmapped, as in JAX); it has no derivative.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from corejax import dtypes
from corejax.array import Array
from corejax.compiler import registry
from corejax.core import Primitive, ShapedArray
from corejax.transforms import ad, batching
from corejax._tree_traced import tree_flatten, tree_leaves, tree_unflatten

__all__ = ["pure_callback", "io_callback"]

_VMAP_METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all",
                 "legacy_vectorized")

pure_callback_p = Primitive("pure_callback")
pure_callback_p.multiple_results = True


class _FlatCallback:
    """The user's function on flat operands, returning flat results."""

    def __init__(self, fn: Callable, in_tree):
        self.fn, self.in_tree = fn, in_tree

    def __call__(self, *leaves):
        args, kwargs = tree_unflatten(self.in_tree, list(leaves))
        return tree_leaves(self.fn(*args, **kwargs))

    def __repr__(self):
        return f"_FlatCallback({getattr(self.fn, '__name__', self.fn)})"


def _impl(*args, callback, result_avals, vmap_method):
    name = getattr(callback.fn, "__name__", "callback")
    outs = callback(*[Array(np.asarray(a)) for a in args])
    if len(outs) != len(result_avals):
        raise RuntimeError(
            f"pure_callback: the callback {name} returned {len(outs)} arrays, but "
            f"result_shape_dtypes declares {len(result_avals)}.")
    results = []
    for i, (out, aval) in enumerate(zip(outs, result_avals)):
        value = np.asarray(out)
        if value.shape != aval.shape:
            raise RuntimeError(
                f"pure_callback: the callback {name} returned an array of shape {value.shape} "
                f"for result {i}, declared {aval.str_short()} in result_shape_dtypes.")
        results.append(value.astype(aval.dtype, copy=False))
    return results


pure_callback_p.def_impl(_impl)
pure_callback_p.def_abstract_eval(lambda *avals, result_avals, **_: list(result_avals))
pure_callback_p.weak_type_rule = lambda *args, result_avals, **_: [False] * len(result_avals)


def _jvp(primals, tangents, **params):
    raise ValueError("Pure callbacks do not support JVP. Please use `jax.custom_jvp` to use "
                     "callbacks while taking gradients.")


def _batch(axis_size, vals, dims, *, callback, result_avals, vmap_method):
    from corejax import lax
    if vmap_method not in _VMAP_METHODS:
        raise NotImplementedError(
            "vmap is only supported for the pure_callback primitive when vmap_method is one "
            "of 'sequential', 'sequential_unrolled', 'expand_dims', 'broadcast_all', or "
            f"'legacy_vectorized'. Got vmap_method={vmap_method!r}.")
    front = [v if d is None else batching.moveaxis(v, d, 0) for v, d in zip(vals, dims)]
    params = dict(callback=callback, vmap_method=vmap_method)
    if vmap_method.startswith("sequential"):
        mapped = [i for i, d in enumerate(dims) if d is not None]

        def one(xs):
            ops = list(front)
            for i, x in zip(mapped, xs):
                ops[i] = x
            return pure_callback_p.bind(*ops, result_avals=result_avals, **params)

        outs = lax.map(one, [front[i] for i in mapped])
        return outs, [0] * len(outs)
    batched_avals = tuple(ShapedArray((axis_size,) + a.shape, a.dtype) for a in result_avals)
    ops = []
    for v, d in zip(front, dims):
        if d is None and vmap_method == "expand_dims":
            v = lax.expand_dims(v, (0,))
        elif d is None and vmap_method == "broadcast_all":
            v = batching.bdim_at_front(v, None, axis_size)
        ops.append(v)
    outs = pure_callback_p.bind(*ops, result_avals=batched_avals, **params)
    return outs, [0] * len(outs)


_batch.needs_axis_size = True
ad.primitive_jvps[pure_callback_p] = _jvp
batching.primitive_batchers[pure_callback_p] = _batch


def pure_callback(callback: Callable[..., Any], result_shape_dtypes: Any, *args: Any,
                  sharding=None, vmap_method: str | None = None, **kwargs: Any):
    """Calls the pure function `callback(*args, **kwargs)` on concrete array values, from
    eager code or inside jit/vmap, and returns its results as arrays of the shapes and dtypes
    of `result_shape_dtypes` (a pytree of ShapeDtypeStruct or arrays)."""
    if vmap_method is not None and vmap_method not in _VMAP_METHODS:
        raise ValueError(f"vmap_method must be one of {_VMAP_METHODS} or None, got "
                         f"{vmap_method!r}")
    leaves, in_tree = tree_flatten((args, kwargs))
    res_leaves, res_tree = tree_flatten(result_shape_dtypes)
    outs = pure_callback_p.bind(*leaves, callback=_FlatCallback(callback, in_tree),
                                result_avals=_result_avals(res_leaves), vmap_method=vmap_method)
    return tree_unflatten(res_tree, outs)


def _result_avals(res_leaves) -> tuple:
    avals = []
    for r in res_leaves:
        if not hasattr(r, "shape") or not hasattr(r, "dtype"):
            raise TypeError("a callback's result_shape_dtypes must be a pytree of "
                            f"ShapeDtypeStruct or arrays; got a leaf {r!r}")
        avals.append(ShapedArray(tuple(r.shape), dtypes.canonicalize_dtype(r.dtype)))
    return tuple(avals)


io_callback_p = Primitive("io_callback")
io_callback_p.multiple_results = True
io_callback_p.def_impl(lambda *args, callback, result_avals, ordered: _impl(
    *args, callback=callback, result_avals=result_avals, vmap_method=None))
io_callback_p.def_abstract_eval(lambda *avals, result_avals, **_: list(result_avals))
io_callback_p.weak_type_rule = lambda *args, result_avals, **_: [False] * len(result_avals)


def _io_jvp(primals, tangents, **params):
    raise ValueError("IO callbacks do not support JVP.")


class _PerElement:
    """A batched io_callback's function: the user's, once per batch element, in order."""

    def __init__(self, callback, dims, axis_size):
        self.callback, self.dims, self.axis_size = callback, tuple(dims), axis_size
        self.fn = callback.fn

    def __call__(self, *leaves):
        per = [self.callback(*[x if d is None else np.take(np.asarray(x), i, axis=d)
                               for x, d in zip(leaves, self.dims)])
               for i in range(self.axis_size)]
        return [np.stack([np.asarray(p[j]) for p in per]) for j in range(len(per[0]))] \
            if per else []


def _io_batch(axis_size, vals, dims, *, callback, result_avals, ordered):
    if ordered:
        raise ValueError("Cannot `vmap` ordered IO callback.")
    batched_avals = tuple(ShapedArray((axis_size,) + a.shape, a.dtype) for a in result_avals)
    outs = io_callback_p.bind(*vals, callback=_PerElement(callback, dims, axis_size),
                              result_avals=batched_avals, ordered=ordered)
    return outs, [0] * len(outs)


_io_batch.needs_axis_size = True
ad.primitive_jvps[io_callback_p] = _io_jvp
batching.primitive_batchers[io_callback_p] = _io_batch
registry.def_effectful(io_callback_p)
registry.def_kernel(io_callback_p, ("host",))


def io_callback(callback: Callable[..., Any], result_shape_dtypes: Any, *args: Any,
                sharding=None, ordered: bool = False, **kwargs: Any):
    """Calls `callback(*args, **kwargs)`, which may have side effects, on concrete array
    values (also inside jit/vmap) and returns its results shaped like `result_shape_dtypes`.
    The call is never removed when its results are unused; `ordered=True` keeps the calls of
    a program in program order (corejax runs every io_callback in program order)."""
    leaves, in_tree = tree_flatten((args, kwargs))
    res_leaves, res_tree = tree_flatten(result_shape_dtypes)
    outs = io_callback_p.bind(*leaves, callback=_FlatCallback(callback, in_tree),
                              result_avals=_result_avals(res_leaves), ordered=bool(ordered))
    return tree_unflatten(res_tree, outs)
