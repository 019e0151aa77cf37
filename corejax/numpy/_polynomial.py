"""Polynomials (coefficients highest power first) and 1-D convolution: poly, polyval, polyfit,
polyadd, polysub, polymul, polydiv, polyder, polyint, vander, convolve, correlate."""
from __future__ import annotations

import operator

import numpy as np

from corejax import core, dtypes, lax
from corejax.core import get_aval
from corejax.numpy._core import (asarray, broadcast_to_shape, check_arraylike, promote_dtypes,
                                 promote_dtypes_inexact)

__all__ = []


def _strong(x):
    return lax.convert_element_type(x, get_aval(x).dtype)


def _vector(name, x):
    x = asarray(x)
    if get_aval(x).ndim != 1:
        raise ValueError(f"{name}() only support 1-dimensional inputs.")
    return x


# --- 1-D convolution -------------------------------------------------------------------------

_MODES = ("full", "same", "valid")


def _conv1d(x, y, mode, name, flip_kernel, precision=None, preferred_element_type=None):
    """A 1-D convolution (flip_kernel) or cross-correlation of x and y through
    lax.conv_general_dilated; the shorter operand is the kernel."""
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {list(_MODES)}")
    check_arraylike(name, x, y)
    x, y = _vector(name, x), _vector(name, y)
    if get_aval(x).shape[0] == 0 or get_aval(y).shape[0] == 0:
        raise ValueError(f"{name}: inputs cannot be empty, got shapes {get_aval(x).shape} and "
                         f"{get_aval(y).shape}.")
    x, y = (_strong(v) for v in promote_dtypes_inexact(x, y))
    swapped = get_aval(x).shape[0] < get_aval(y).shape[0]
    if swapped:
        x, y = y, x
    k = get_aval(y).shape[0]
    if flip_kernel:
        y = lax.rev(y, (0,))
    padding = {"valid": (0, 0), "same": (k // 2, k - k // 2 - 1), "full": (k - 1, k - 1)}[mode]
    out = lax.conv_general_dilated(lax.reshape(x, (1, 1) + get_aval(x).shape),
                                   lax.reshape(y, (1, 1, k)), (1,), [padding])
    out = lax.reshape(out, (get_aval(out).shape[-1],))
    if preferred_element_type is not None:
        out = lax.convert_element_type(out, dtypes.canonicalize_dtype(preferred_element_type))
    # convolution commutes; a cross-correlation of the swapped operands runs backwards
    return lax.rev(out, (0,)) if swapped and not flip_kernel else out


def convolve(a, v, mode="full", *, precision=None, preferred_element_type=None):
    """The discrete linear convolution of two 1-D arrays ('full', 'same' or 'valid')."""
    return _conv1d(a, v, mode, "convolve", True, precision, preferred_element_type)


def correlate(a, v, mode="valid", *, precision=None, preferred_element_type=None):
    """The cross-correlation of two 1-D arrays: convolve(a, v[::-1]) up to centering."""
    return _conv1d(a, v, mode, "correlate", False, precision, preferred_element_type)


# --- polynomial arithmetic -------------------------------------------------------------------

def poly(seq_of_zeros):
    """The monic polynomial with the given roots (a 1-D array)."""
    check_arraylike("poly", seq_of_zeros)
    (roots,) = promote_dtypes_inexact(seq_of_zeros)
    roots = _strong(roots)
    nd = get_aval(roots).ndim
    if nd == 2:  # a square matrix: its characteristic polynomial, from its eigenvalues
        from corejax.numpy.linalg import eigvals
        roots = eigvals(roots)
        nd = 1
    if nd == 0:
        roots = lax.reshape(roots, (1,))
    elif nd != 1:
        raise ValueError("Input must be a rank-1 array.")
    dt = get_aval(roots).dtype
    n = get_aval(roots).shape[0]
    if n == 0:
        return lax.full((), 1, dt)
    coeffs = lax.full((1,), 1, dt)
    for i in range(n):
        root = lax.neg(lax.slice_in_dim(roots, i, i + 1, 1, 0))
        coeffs = convolve(coeffs, lax.concatenate([lax.full((1,), 1, dt), root], 0))
    return coeffs


def polyval(p, x, *, unroll=16):
    """p[0] * x**(n-1) + ... + p[n-1], by Horner's scheme (p may have trailing dimensions that
    broadcast with x)."""
    check_arraylike("polyval", p, x)
    p, x = promote_dtypes(p, x)
    p, x = _strong(p), _strong(x)
    n = get_aval(p).shape[0] if get_aval(p).ndim else 1
    p = p if get_aval(p).ndim else lax.reshape(p, (1,))
    from corejax.numpy._core import broadcast_shapes
    shape = broadcast_shapes(get_aval(p).shape[1:], get_aval(x).shape)
    y = lax.full(shape, 0, get_aval(x).dtype)
    x = broadcast_to_shape(x, shape)
    for i in range(n):
        coeff = broadcast_to_shape(lax.index_in_dim(p, i, 0, keepdims=False), shape)
        y = lax.add(lax.mul(y, x), coeff)
    return y


def _align(a1, a2):
    """Both coefficient vectors left-padded with zeros to a common length."""
    a1, a2 = (_strong(v) for v in promote_dtypes(a1, a2))
    n1, n2 = get_aval(a1).shape[0], get_aval(a2).shape[0]
    zero = lax.full((), 0, get_aval(a1).dtype)
    if n1 < n2:
        a1 = lax.pad(a1, zero, [(n2 - n1, 0, 0)])
    elif n2 < n1:
        a2 = lax.pad(a2, zero, [(n1 - n2, 0, 0)])
    return a1, a2


def _poly_vector(name, *args):
    check_arraylike(name, *args)
    out = [asarray(a) for a in args]
    for a in out:
        if get_aval(a).ndim != 1:
            raise TypeError(f"{name}() requires 1-D coefficient arrays, got shape "
                            f"{get_aval(a).shape}")
    return out


def polyadd(a1, a2):
    """The sum of two polynomials."""
    a1, a2 = _poly_vector("polyadd", a1, a2)
    return lax.add(*_align(a1, a2))


def polysub(a1, a2):
    """The difference of two polynomials."""
    a1, a2 = _poly_vector("polysub", a1, a2)
    return lax.sub(*_align(a1, a2))


def _trim_leading_zeros(a):
    from corejax.numpy._arrangement import trim_zeros
    return trim_zeros(a, "f")


def polymul(a1, a2, *, trim_leading_zeros=False):
    """The product of two polynomials (a full convolution of their coefficients)."""
    a1, a2 = _poly_vector("polymul", a1, a2)
    if trim_leading_zeros:
        a1, a2 = _trim_leading_zeros(a1), _trim_leading_zeros(a2)
    if get_aval(a1).shape[0] == 0:
        a1 = lax.full((1,), 0, get_aval(a1).dtype)
    if get_aval(a2).shape[0] == 0:
        a2 = lax.full((1,), 0, get_aval(a2).dtype)
    return convolve(a1, a2)


def polydiv(u, v, *, trim_leading_zeros=False):
    """(quotient, remainder) of u / v by long division; the remainder keeps u's length unless
    trim_leading_zeros removes its leading (near-)zeros, |r| < sqrt(eps) (as NumPy's shorter
    remainder; the output shape then depends on the values, so not under jit)."""
    u, v = _poly_vector("polydiv", u, v)
    u, v = (_strong(x) for x in promote_dtypes_inexact(u, v))
    q, r = _long_division(u, v)
    if trim_leading_zeros:
        tol = float(np.sqrt(np.finfo(get_aval(r).dtype).eps))
        value = core.concrete_or_error(np.asarray, r, "polydiv with trim_leading_zeros=True "
                                       "needs concrete inputs (its output shape depends on them)")
        big = np.flatnonzero(~(np.abs(value) < tol))  # NaN is not a zero
        start = int(big[0]) if big.size else get_aval(r).shape[0]
        r = lax.slice_in_dim(r, start, get_aval(r).shape[0], 1, 0)
    return q, r


def _long_division(u, v):
    m, n = get_aval(u).shape[0], get_aval(v).shape[0]
    dt = get_aval(u).dtype
    if m < n:
        return lax.full((1,), 0, dt), u
    lead = lax.index_in_dim(v, 0, 0, keepdims=False)
    quotient = []
    for k in range(m - n + 1):
        d = lax.div(lax.index_in_dim(u, k, 0, keepdims=False), lead)
        quotient.append(lax.reshape(d, (1,)))
        step = lax.pad(lax.mul(v, lax.broadcast_in_dim(d, (n,), ())),
                       lax.full((), 0, dt), [(k, m - n - k, 0)])
        u = lax.sub(u, step)
    return lax.concatenate(quotient, 0), u


def polyder(p, m=1):
    """The m-th derivative of a polynomial."""
    (p,) = _poly_vector("polyder", p)
    m = core.concrete_or_error(operator.index, m, "The order of the derivative must be static")
    if m < 0:
        raise ValueError("Order of derivative must be positive")
    (p,) = promote_dtypes_inexact(p)
    p = _strong(p)
    dt = get_aval(p).dtype
    for _ in range(m):
        n = get_aval(p).shape[0]
        if n == 0:
            break
        powers = lax.convert_element_type(lax.rev(lax.iota(np.int32, n - 1), (0,)), dt)
        p = lax.mul(lax.slice_in_dim(p, 0, n - 1, 1, 0), lax.add(powers, lax.full((), 1, dt)))
    return p


def polyint(p, m=1, k=None):
    """The m-th antiderivative of a polynomial; k gives the integration constants (one, or m
    of them, the first used first)."""
    (p,) = _poly_vector("polyint", p)
    m = core.concrete_or_error(operator.index, m, "The order of the integral must be static")
    if m < 0:
        raise ValueError("Order of integral must be positive (see polyder)")
    (p,) = promote_dtypes_inexact(p)
    p = _strong(p)
    dt = get_aval(p).dtype
    if m == 0:
        return p
    k = lax.full((m,), 0, dt) if k is None else lax.convert_element_type(asarray(k), dt)
    if get_aval(k).ndim == 0 or get_aval(k).shape == (1,):
        k = broadcast_to_shape(lax.reshape(k, ()), (m,))
    if get_aval(k).shape != (m,):
        raise ValueError("k must be a scalar or a rank-1 array of length 1 or m.")
    for i in range(m):
        n = get_aval(p).shape[0]
        powers = lax.convert_element_type(lax.rev(lax.iota(np.int32, n), (0,)), dt)
        p = lax.concatenate([lax.div(p, lax.add(powers, lax.full((), 1, dt))),
                             lax.slice_in_dim(k, i, i + 1, 1, 0)], 0)
    return p


def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of x: columns x**(N-1), ..., x**0 (reversed if increasing)."""
    check_arraylike("vander", x)
    x = asarray(x)
    if get_aval(x).ndim != 1:
        raise ValueError("x must be a one-dimensional array")
    n = get_aval(x).shape[0]
    N = n if N is None else core.concrete_or_error(operator.index, N, "N must be static")
    if N < 0:
        raise ValueError("N must be nonnegative")
    if N == 0:
        return lax.full((n, 0), 0, get_aval(x).dtype)
    cols = lax.broadcast_in_dim(x, (n, N), (0,))
    from corejax.numpy._reductions import cumprod
    powers = cumprod(lax.concatenate([lax.full((n, 1), 1, get_aval(x).dtype),
                                      lax.slice_in_dim(cols, 0, N - 1, 1, 1)], 1), axis=1)
    powers = lax.convert_element_type(powers, get_aval(x).dtype, weak_type=get_aval(x).weak_type)
    return powers if increasing else lax.rev(powers, (1,))


def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
    """The least-squares polynomial of degree deg through (x, y) (y may have several columns):
    coefficients; with full=True also (residuals, rank, singular values, rcond); with cov=True
    the coefficients' covariance matrix."""
    from corejax.numpy import linalg
    check_arraylike("polyfit", x, y)
    deg = core.concrete_or_error(operator.index, deg, "The degree of the polynomial must be "
                                 "static")
    if deg < 0:
        raise ValueError("expected deg >= 0")
    x, y = (_strong(v) for v in promote_dtypes_inexact(x, y))
    if get_aval(x).ndim != 1:
        raise TypeError("expected 1D vector for x")
    if get_aval(x).shape[0] == 0:
        raise TypeError("expected non-empty vector for x")
    if get_aval(y).ndim < 1 or get_aval(y).ndim > 2:
        raise TypeError("expected 1D or 2D array for y")
    if get_aval(x).shape[0] != get_aval(y).shape[0]:
        raise TypeError("expected x and y to have same length")
    dt = get_aval(x).dtype
    order = deg + 1
    rcond = get_aval(x).shape[0] * float(np.finfo(dt).eps) if rcond is None else rcond
    lhs = vander(x, order)
    rhs = y
    if w is not None:
        (w,) = promote_dtypes_inexact(w)
        w = lax.convert_element_type(w, dt)
        if get_aval(w).ndim != 1:
            raise TypeError("expected a 1-d array for weights")
        if get_aval(w).shape[0] != get_aval(y).shape[0]:
            raise TypeError("expected w and y to have the same length")
        lhs = lax.mul(lhs, lax.broadcast_in_dim(w, get_aval(lhs).shape, (0,)))
        rhs = lax.mul(rhs, lax.broadcast_in_dim(w, get_aval(rhs).shape, (0,)))
    # scale the columns for a better-conditioned problem
    from corejax.numpy._reductions import sum as _sum
    scale = lax.sqrt(_sum(lax.mul(lhs, lhs), axis=0))
    lhs = lax.div(lhs, lax.broadcast_in_dim(scale, get_aval(lhs).shape, (1,)))
    c, resids, rank, s = linalg.lstsq(lhs, rhs, rcond)
    c = lax.div(c, broadcast_to_shape(scale, get_aval(c).shape) if get_aval(c).ndim == 1 else
                lax.broadcast_in_dim(scale, get_aval(c).shape, (0,)))
    if full:
        return c, resids, rank, s, asarray(rcond)
    if cov:
        lhs_t = lax.transpose(lhs, (1, 0))
        inv = linalg.inv(lax.dot_general(lhs_t, lhs, (((1,), (0,)), ((), ()))))
        inv = lax.div(inv, lax.mul(lax.broadcast_in_dim(scale, (order, order), (0,)),
                                   lax.broadcast_in_dim(scale, (order, order), (1,))))
        n = get_aval(x).shape[0]
        if n <= order:
            raise ValueError("the number of data points must exceed order to scale the "
                             "covariance matrix")
        fac = lax.div(resids, lax.full((), n - order, dt))
        if get_aval(y).ndim == 1:
            return c, lax.mul(inv, lax.reshape(fac, ()) if get_aval(fac).ndim else fac)
        return c, lax.mul(lax.broadcast_in_dim(inv, (order, order, get_aval(fac).shape[0]),
                                               (0, 1)),
                          lax.broadcast_in_dim(fac, (order, order, get_aval(fac).shape[0]),
                                               (2,)))
    return c
