"""Choosing elements: select, choose, piecewise, extract, compress, place and flatnonzero."""
from __future__ import annotations

import numpy as np

from corejax import core, lax
from corejax.core import get_aval
from corejax.numpy._core import (asarray, broadcast_shapes, broadcast_to_shape, canonicalize_axis,
                                 check_arraylike, promote_dtypes)
from corejax.numpy._ufuncs import remainder, where

__all__ = []


def _as_bool(x):
    x = asarray(x)
    if get_aval(x).dtype == np.bool_:
        return x
    return lax.ne(x, lax.full((), 0, get_aval(x).dtype))


def select(condlist, choicelist, default=0):
    """For each element, the choice of the first true condition, else `default`."""
    if len(condlist) != len(choicelist):
        raise ValueError(f"condlist must have length equal to choicelist ({len(condlist)} vs "
                         f"{len(choicelist)})")
    if len(condlist) == 0:
        raise ValueError("condlist must be non-empty")
    check_arraylike("select", default, *condlist, *choicelist)
    default, *choices = promote_dtypes(default, *choicelist)
    out = default
    for cond, choice in reversed(list(zip(condlist, choices))):
        out = where(_as_bool(cond), choice, out)
    return out


def choose(a, choices, out=None, mode="raise"):
    """choices[a[i]][i] for every index i, with a and the choices broadcast together. mode
    'raise' checks the indices (they must then be concrete); 'clip' and 'wrap' work under jit."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.choose is not supported.")
    check_arraylike("choose", a, *choices)
    a = asarray(a)
    if get_aval(a).dtype.kind not in "iu":
        raise TypeError(f"jnp.choose: the index array must be integer, got "
                        f"{get_aval(a).dtype.name}")
    n = len(choices)
    if mode == "raise":
        value = core.concrete_or_error(np.asarray, a, "The error occurred because jnp.choose "
                                       "was jit-compiled with mode='raise'. Use mode='wrap' or "
                                       "mode='clip' instead.")
        if (value < 0).any() or (value >= n).any():
            raise ValueError("invalid entry in choice array")
    elif mode == "clip":
        a = lax.clamp(lax.full((), 0, get_aval(a).dtype), a, lax.full((), n - 1, get_aval(a).dtype))
    elif mode == "wrap":
        a = remainder(a, n)
    else:
        raise ValueError(f"mode={mode!r} not understood. Must be 'raise', 'wrap', or 'clip'")
    choices = promote_dtypes(*choices)
    shape = broadcast_shapes(get_aval(a).shape, *[get_aval(c).shape for c in choices])
    stacked = lax.concatenate([lax.expand_dims(broadcast_to_shape(c, shape), (0,))
                               for c in choices], 0)
    # the choices are stacked as one (strongly typed) array, as jnp.array(choices) in JAX
    stacked = lax.convert_element_type(stacked, get_aval(stacked).dtype)
    idx = lax.expand_dims(broadcast_to_shape(a, shape), (0,))
    from corejax.lax import indexing
    return lax.squeeze(indexing.take_along_axis(stacked, idx, 0), (0,))


def piecewise(x, condlist, funclist, *args, **kw):
    """Evaluates funclist[k] where condlist[k] holds (a later true condition wins); a function
    past the conditions is the default, else 0. Entries of funclist may be constants. Each
    element is computed by the branch it selects (lax.switch, vmapped)."""
    from corejax.lax import switch
    from corejax.numpy._functional import vectorize
    from corejax.numpy._reductions import argmax
    check_arraylike("piecewise", x)
    x = asarray(x)
    dt = get_aval(x).dtype
    if isinstance(condlist, (bool, np.bool_)) or (hasattr(condlist, "shape") and
                                                   np.ndim(condlist) == get_aval(x).ndim):
        condlist = [condlist]
    nc, nf = len(condlist), len(funclist)
    if nf == nc + 1:
        funcs = [funclist[-1]] + list(funclist[:-1])
    elif nf == nc:
        funcs = [0] + list(funclist)
    else:
        raise ValueError(f"with {nc} condition(s), either {nc} or {nc + 1} functions are "
                         f"expected; got {nf}")
    shape = get_aval(x).shape
    conds = [broadcast_to_shape(lax.convert_element_type(_as_bool(c), np.int32), shape)
             for c in condlist]
    stacked = lax.concatenate([lax.full((1,) + shape, 0, np.int32)] +
                              [lax.expand_dims(c, (0,)) for c in conds], 0)
    # the index of the last true condition (0: none) is where the running count peaks first
    index = argmax(lax.cumsum(stacked, 0), axis=0)

    def branch(f):
        if callable(f):
            return lambda v: lax.convert_element_type(asarray(f(v, *args, **kw)), dt)
        return lambda v: lax.full((), f, dt)

    branches = [branch(f) for f in funcs]
    return vectorize(lambda i, v: switch(i, branches, v))(index, x)


def _compress_along(cond, a, axis, size, fill_value):
    from corejax.numpy._reductions import nonzero
    from corejax.lax import indexing
    n = get_aval(cond).shape[0]
    if size is not None and not 0 <= size <= get_aval(a).shape[axis]:
        raise ValueError(f"size must be positive and not greater than the size of the array "
                         f"axis; got size={size} for a.shape[axis]={get_aval(a).shape[axis]}")
    a = lax.slice_in_dim(a, 0, n, 1, axis)
    (idx,) = nonzero(cond, size=size, fill_value=0)
    out = indexing.take(a, idx, axis=axis)
    if size is None:
        return out
    count = lax.reduce_sum(lax.convert_element_type(cond, np.int32), (0,))
    valid = lax.lt(lax.iota(np.int32, size), count)
    shape = get_aval(out).shape
    valid = lax.broadcast_in_dim(valid, shape, (axis,))
    fill = lax.convert_element_type(asarray(fill_value), get_aval(out).dtype)
    return where(valid, out, fill)


def compress(condition, a, axis=None, *, size=None, fill_value=0, out=None):
    """The slices of `a` along `axis` (flattened when None) where `condition` is true. Under
    jit, `size` fixes the output length (padded with fill_value)."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.compress is not supported.")
    check_arraylike("compress", condition, a)
    cond = _as_bool(condition)
    if get_aval(cond).ndim != 1:
        raise ValueError("condition must be a 1D array")
    a = asarray(a)
    if axis is None:
        a = lax.reshape(a, (get_aval(a).size,))
        axis = 0
    axis = canonicalize_axis(axis, get_aval(a).ndim)
    return _compress_along(_fit_condition(cond, get_aval(a).shape[axis]), a, axis, size,
                           fill_value)


def _fit_condition(cond, n):
    """A condition longer than the axis may only have False past it (checked concretely)."""
    if get_aval(cond).shape[0] <= n:
        return cond
    extra = lax.slice_in_dim(cond, n, get_aval(cond).shape[0], 1, 0)
    if core.concrete_or_error(np.asarray, extra, "the condition is longer than the array axis, "
                              "so its extra entries must be concrete").any():
        raise ValueError("condition contains entries that are out of bounds")
    return lax.slice_in_dim(cond, 0, n, 1, 0)


def extract(condition, arr, *, size=None, fill_value=0):
    """The elements of the flattened `arr` where the flattened `condition` is true."""
    check_arraylike("extract", condition, arr)
    cond = lax.reshape(_as_bool(condition), (get_aval(asarray(condition)).size,))
    arr = asarray(arr)
    arr = lax.reshape(arr, (get_aval(arr).size,))
    nc, na = get_aval(cond).shape[0], get_aval(arr).shape[0]
    cond = _fit_condition(cond, na)
    if nc < na:
        cond = lax.pad(cond, False, [(0, na - nc, 0)])
    return _compress_along(cond, arr, 0, size, fill_value)


def place(arr, mask, vals, *, inplace=True):
    """`arr` with its masked elements replaced by `vals`, cycled in order. Returns a new
    array: inplace=False is required."""
    if inplace:
        raise ValueError("jax.numpy.place cannot modify arrays in-place, because JAX arrays are "
                         "immutable. Pass inplace=False to instead return an updated array.")
    check_arraylike("place", arr, mask, vals)
    arr = asarray(arr)
    aval = get_aval(arr)
    flat = lax.reshape(arr, (aval.size,))
    m = lax.reshape(broadcast_to_shape(_as_bool(mask), aval.shape), (aval.size,))
    vals = asarray(vals)
    vals = lax.convert_element_type(lax.reshape(vals, (get_aval(vals).size,)), aval.dtype)
    nv = get_aval(vals).shape[0]
    if nv == 0:
        raise ValueError("Cannot place values from an empty array")
    rank = lax.sub(lax.cumsum(lax.convert_element_type(m, np.int32), 0), lax.full((), 1, np.int32))
    from corejax.lax import indexing
    picked = indexing.take(vals, remainder(lax.max(rank, lax.full_like(rank, 0)), nv))
    return lax.reshape(where(m, picked, flat), aval.shape)


def flatnonzero(a, *, size=None, fill_value=None):
    """The indices of the non-zero elements of the flattened `a`."""
    from corejax.numpy._reductions import nonzero
    check_arraylike("flatnonzero", a)
    a = asarray(a)
    return nonzero(lax.reshape(a, (get_aval(a).size,)), size=size, fill_value=fill_value)[0]
