"""Differences, derivatives and integrals of sampled data: diff, ediff1d, gradient, trapezoid,
interp and unwrap. Composed of lax only."""
from __future__ import annotations

import operator

import numpy as np

from corejax import dtypes, lax
from corejax.core import get_aval
from corejax.numpy._core import (asarray, broadcast_to_shape, canonicalize_axis, check_arraylike,
                                 promote_dtypes, promote_dtypes_inexact)
from corejax.numpy._ufuncs import where

__all__ = []


def _strong(x):
    return lax.convert_element_type(x, get_aval(x).dtype)


def _slice(x, start, stop, axis):
    return lax.slice_in_dim(x, start, stop, 1, axis)


def _difference(x, axis):
    """x[1:] - x[:-1] along axis (not-equal for booleans, as NumPy)."""
    n = get_aval(x).shape[axis]
    hi, lo = _slice(x, 1, n, axis), _slice(x, 0, n - 1, axis)
    if get_aval(x).dtype == np.bool_:
        return lax.ne(hi, lo)
    return lax.sub(hi, lo)


def diff(a, n=1, axis=-1, prepend=None, append=None):
    """The n-th discrete difference along axis, after joining prepend / append (scalars are
    broadcast to one slice)."""
    check_arraylike("diff", a)
    a = asarray(a)
    nd = get_aval(a).ndim
    if nd == 0:
        raise ValueError(f"diff requires input that is at least one dimensional; got {a}")
    n = operator.index(n)
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n}")
    if n == 0:
        return a
    axis = canonicalize_axis(axis, nd)

    def one_slice(extra):
        extra = asarray(extra)
        if get_aval(extra).ndim == 0:
            shape = list(get_aval(a).shape)
            shape[axis] = 1
            extra = broadcast_to_shape(extra, tuple(shape))
        return extra

    if prepend is not None or append is not None:
        from corejax.numpy._shape import concatenate
        parts = ([one_slice(prepend)] if prepend is not None else []) + [a] + (
            [one_slice(append)] if append is not None else [])
        a = concatenate(parts, axis)
    for _ in range(n):
        if get_aval(a).shape[axis] == 0:
            break
        a = _difference(a, axis)
    return a


def ediff1d(ary, to_end=None, to_begin=None):
    """Differences of the flattened ary, with to_begin / to_end (cast to ary's dtype) joined
    on."""
    check_arraylike("ediff1d", ary)
    ary = asarray(ary)
    flat = lax.reshape(ary, (get_aval(ary).size,))
    out = _difference(flat, 0) if get_aval(flat).shape[0] else flat
    dt = get_aval(out).dtype
    pieces = []
    for extra, where_ in ((to_begin, "begin"), (to_end, "end")):
        if extra is None:
            continue
        check_arraylike("ediff1d", ary, extra)
        extra = asarray(extra)
        extra = lax.convert_element_type(lax.reshape(extra, (get_aval(extra).size,)), dt)
        pieces.append((where_, extra))
    begin = [e for w, e in pieces if w == "begin"]
    end = [e for w, e in pieces if w == "end"]
    if begin or end:
        out = lax.concatenate(begin + [out] + end, 0)
    return out


def gradient(f, *varargs, axis=None, edge_order=None):
    """The gradient of sampled f: central differences inside (second order accurate for
    uneven coordinates too), one-sided differences at the ends. varargs: one spacing for all
    axes, or one scalar spacing or coordinate array per axis."""
    if edge_order is not None:
        raise NotImplementedError("The 'edge_order' argument to jnp.gradient is not supported.")
    check_arraylike("gradient", f)
    (f,) = promote_dtypes_inexact(f)
    f = _strong(f)
    nd = get_aval(f).ndim
    if axis is None:
        axes = list(range(nd))
    elif isinstance(axis, (tuple, list)):
        axes = [canonicalize_axis(a, nd) for a in axis]
    else:
        axes = [canonicalize_axis(axis, nd)]
    if not varargs:
        spacings = [1.0] * len(axes)
    elif len(varargs) == 1 and np.ndim(varargs[0]) == 0:
        spacings = list(varargs) * len(axes)
    elif len(varargs) == len(axes):
        spacings = list(varargs)
    else:
        raise TypeError(f"Invalid number of spacing arguments {len(varargs)} for {len(axes)} "
                        "axes")
    out = [_gradient_along(f, ax, h) for ax, h in zip(axes, spacings)]
    return out[0] if len(out) == 1 else out


def _gradient_along(f, axis, h):
    n = get_aval(f).shape[axis]
    if n < 2:
        raise ValueError("Shape of array too small to calculate a numerical gradient, at least "
                         "2 elements are required.")
    dt = get_aval(f).dtype
    shape = get_aval(f).shape
    along = lambda v: lax.broadcast_in_dim(v, shape[:axis] + (get_aval(v).shape[0],) +
                                           shape[axis + 1:], (axis,))
    h = asarray(h)
    if get_aval(h).ndim == 0:
        h = lax.convert_element_type(h, dt)
        first = lax.div(lax.sub(_slice(f, 1, 2, axis), _slice(f, 0, 1, axis)), h)
        last = lax.div(lax.sub(_slice(f, n - 1, n, axis), _slice(f, n - 2, n - 1, axis)), h)
        parts = [first]
        if n > 2:
            inner = lax.div(lax.sub(_slice(f, 2, n, axis), _slice(f, 0, n - 2, axis)),
                            lax.mul(lax.full((), 2, dt), h))
            parts.append(inner)
        parts.append(last)
        return lax.concatenate(parts, axis)
    if get_aval(h).shape != (n,):
        raise ValueError(f"jnp.gradient: a coordinate array must be 1-D with the axis' length "
                         f"{n}, got shape {get_aval(h).shape}")
    x = lax.convert_element_type(h, dt)
    dx = _difference(x, 0)
    first = lax.div(lax.sub(_slice(f, 1, 2, axis), _slice(f, 0, 1, axis)), along(_slice(dx, 0, 1,
                                                                                        0)))
    last = lax.div(lax.sub(_slice(f, n - 1, n, axis), _slice(f, n - 2, n - 1, axis)),
                   along(_slice(dx, n - 2, n - 1, 0)))
    parts = [first]
    if n > 2:
        h_d, h_s = _slice(dx, 0, n - 2, 0), _slice(dx, 1, n - 1, 0)
        total = lax.add(h_d, h_s)
        a = lax.neg(lax.div(h_s, lax.mul(h_d, total)))
        b = lax.div(lax.sub(h_s, h_d), lax.mul(h_d, h_s))
        c = lax.div(h_d, lax.mul(h_s, total))
        inner = lax.add(lax.add(lax.mul(along(a), _slice(f, 0, n - 2, axis)),
                                lax.mul(along(b), _slice(f, 1, n - 1, axis))),
                        lax.mul(along(c), _slice(f, 2, n, axis)))
        parts.append(inner)
    parts.append(last)
    return lax.concatenate(parts, axis)


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """The integral of sampled y by the trapezoidal rule, with sample points x (1-D, or of y's
    shape) or a constant spacing dx."""
    check_arraylike("trapezoid", y)
    from corejax.numpy._shape import moveaxis
    if x is None:
        y, dx = promote_dtypes_inexact(y, dx)
        y = moveaxis(_strong(y), axis, -1)
        dx = _strong(dx)
    else:
        check_arraylike("trapezoid", y, x)
        y, x = promote_dtypes_inexact(y, x)
        y = moveaxis(_strong(y), axis, -1)
        x = _strong(x)
        x = x if get_aval(x).ndim == 1 else moveaxis(x, axis, -1)
        dx = _difference(x, get_aval(x).ndim - 1)
    n = get_aval(y).shape[-1]
    last = get_aval(y).ndim - 1
    pair_sum = lax.add(_slice(y, 1, n, last), _slice(y, 0, n - 1, last))
    dx = broadcast_to_shape(dx, get_aval(pair_sum).shape) if get_aval(dx).ndim <= 1 else dx
    dt = get_aval(pair_sum).dtype
    return lax.mul(lax.full((), 0.5, dt), lax.reduce_sum(lax.mul(dx, pair_sum), (last,)))


def interp(x, xp, fp, left=None, right=None, period=None):
    """Piecewise-linear interpolation of the points (xp, fp) (xp increasing) at x. Outside
    xp, left / right (default fp's end values, or 'extrapolate'); with a period, x and xp are
    taken modulo it."""
    check_arraylike("interp", x, xp, fp)
    xp_a, fp_a = asarray(xp), asarray(fp)
    if get_aval(xp_a).ndim != 1 or get_aval(fp_a).ndim != 1 or \
            get_aval(xp_a).shape[0] != get_aval(fp_a).shape[0]:
        raise ValueError("xp and fp must be one-dimensional arrays of equal size")
    x, xp, fp = (_strong(v) for v in promote_dtypes_inexact(x, xp_a, fp_a))
    dt = get_aval(x).dtype
    for name, val in (("left", left), ("right", right)):
        if isinstance(val, str) and val != "extrapolate":
            raise ValueError(f"the only valid string value of `{name}` is 'extrapolate', got "
                             f"{val!r}")
    from corejax.lax import indexing
    from corejax.numpy._sorting import searchsorted
    from corejax.numpy._ufuncs import remainder
    if period is not None:
        period = lax.abs(lax.convert_element_type(asarray(period), dt))
        x, xp = remainder(x, period), remainder(xp, period)
        from corejax.lax import sorting
        xp, fp = sorting.sort((xp, fp), 0, True, 1)
        m = get_aval(xp).shape[0]
        xp = lax.concatenate([lax.sub(_slice(xp, m - 1, m, 0), lax.broadcast_in_dim(
            period, (1,), ())), xp, lax.add(_slice(xp, 0, 1, 0), lax.broadcast_in_dim(
                period, (1,), ()))], 0)
        fp = lax.concatenate([_slice(fp, m - 1, m, 0), fp, _slice(fp, 0, 1, 0)], 0)
    m = get_aval(xp).shape[0]
    i = searchsorted(xp, x, side="right")
    i = lax.clamp(lax.full((), 1, get_aval(i).dtype), i, lax.full((), m - 1, get_aval(i).dtype))
    take = lambda v, k: indexing.take(v, k)
    one = lax.full((), 1, get_aval(i).dtype)
    x0, x1 = take(xp, lax.sub(i, one)), take(xp, i)
    f0, f1 = take(fp, lax.sub(i, one)), take(fp, i)
    dx = lax.sub(x1, x0)
    eps = np.spacing(np.finfo(dt).eps)
    flat = lax.le(lax.abs(dx), lax.full((), eps, dt))
    slope = lax.div(lax.sub(f1, f0), where(flat, lax.full((), 1, dt), dx))
    out = where(flat, f1, lax.add(f0, lax.mul(lax.sub(x, x0), slope)))
    if period is None:
        if not (isinstance(left, str)):
            below = take(fp, lax.full((), 0, np.int32)) if left is None else \
                lax.convert_element_type(asarray(left), dt)
            out = where(lax.lt(x, take(xp, lax.full((), 0, np.int32))), below, out)
        if not (isinstance(right, str)):
            above = take(fp, lax.full((), m - 1, np.int32)) if right is None else \
                lax.convert_element_type(asarray(right), dt)
            out = where(lax.gt(x, take(xp, lax.full((), m - 1, np.int32))), above, out)
    return out


def unwrap(p, discont=None, axis=-1, period=2 * np.pi):
    """p with jumps of more than max(discont, period / 2) between neighbours along axis
    replaced by their complement modulo period."""
    check_arraylike("unwrap", p)
    p = asarray(p)
    period_a = asarray(period)
    if dtypes.is_integer(get_aval(p).dtype) and dtypes.is_integer(get_aval(period_a).dtype):
        p, period_a = promote_dtypes(p, period_a)
    else:
        p, period_a = promote_dtypes_inexact(p, period_a)
    p, period_a = _strong(p), _strong(period_a)
    dt = get_aval(p).dtype
    axis = canonicalize_axis(axis, get_aval(p).ndim)
    half = lax.div(period_a, lax.full((), 2, dt))
    discont = half if discont is None else lax.convert_element_type(asarray(discont), dt)
    dd = _difference(p, axis)
    from corejax.numpy._ufuncs import remainder
    high = half
    low = lax.neg(high)
    ddmod = lax.add(remainder(lax.sub(dd, low), period_a), low)
    # a jump landing on the lower end of the interval goes to its upper end when positive; as
    # JAX, also for odd integer periods (NumPy only when the boundary is ambiguous)
    fix = lax.bitwise_and(lax.eq(ddmod, low), lax.gt(dd, lax.full((), 0, dt)))
    ddmod = where(fix, high, ddmod)
    correction = lax.sub(ddmod, dd)
    correction = where(lax.lt(lax.abs(dd), discont), lax.full((), 0, dt), correction)
    n = get_aval(p).shape[axis]
    if n < 2:
        return p
    up = lax.add(_slice(p, 1, n, axis), lax.cumsum(correction, axis))
    return lax.concatenate([_slice(p, 0, 1, axis), up], axis)
