"""Sorting: jnp.sort, argsort, and the functions built on them."""
from __future__ import annotations

from corejax import lax
from corejax.core import get_aval
from corejax.lax import sorting
from corejax.numpy._core import asarray, canonicalize_axis

__all__ = []


def _flat_axis(a, axis):
    a = asarray(a)
    if axis is None:
        return lax.reshape(a, (get_aval(a).size,)), 0
    return a, canonicalize_axis(axis, get_aval(a).ndim)


def sort(a, axis=-1, *, kind=None, order=None, stable=True, descending=False):
    """A sorted copy of `a` along `axis` (flattened when axis is None)."""
    if order is not None:
        raise TypeError("jnp.sort does not support the 'order' argument (no structured dtypes).")
    a, axis = _flat_axis(a, axis)
    if descending:
        return lax.rev(sorting.sort(lax.rev(a, (axis,)), axis, stable), (axis,))
    return sorting.sort(a, axis, stable)


def argsort(a, axis=-1, *, kind=None, order=None, stable=True, descending=False):
    """The indices that sort `a` along `axis`; stable ties keep their original order."""
    if order is not None:
        raise TypeError("jnp.argsort does not support the 'order' argument.")
    a, axis = _flat_axis(a, axis)
    return sorting.argsort(a, axis, stable, descending)


def median(a, axis=None, keepdims=False):
    from corejax.numpy._reductions import mean
    a, ax = _flat_axis(a, axis)
    n = get_aval(a).shape[ax]
    s = sorting.sort(a, ax)
    mid = lax.slice_in_dim(s, (n - 1) // 2, n // 2 + 1, 1, ax)
    out = mean(mid, axis=ax, keepdims=True)
    if keepdims and axis is not None:
        return out
    if keepdims:
        return lax.reshape(out, (1,) * get_aval(asarray(a)).ndim)
    return lax.squeeze(out, (ax,))
