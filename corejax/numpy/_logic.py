"""Whole-array comparisons and dtype predicates: isclose, allclose, array_equal, array_equiv,
isdtype, can_cast, iterable."""
from __future__ import annotations

import numpy as np

from corejax import dtypes, lax
from corejax.core import get_aval
from corejax.numpy._core import (asarray, broadcast_shapes, check_arraylike,
                                 promote_and_broadcast)
from corejax.numpy._eager_fusion import fuse_eagerly
from corejax.numpy._reductions import all as _all
from corejax.numpy._ufuncs import equal, isinf, isnan, where

__all__ = []


def _strong_bool(x):
    return lax.convert_element_type(x, np.bool_)


@fuse_eagerly(2)
def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|a - b| <= atol + rtol * |b| elementwise, in the operands' promoted dtype; infinities
    are close only to themselves, NaN only to NaN when equal_nan is True."""
    check_arraylike("isclose", a, b)
    a, b = promote_and_broadcast(a, b)
    dt = get_aval(a).dtype
    if not dtypes.is_inexact(dt):
        return _strong_bool(lax.eq(a, b))
    # |a - b| and |b| are real for complex operands: the tolerances take that real dtype
    tol_dt = np.finfo(dt).dtype if np.issubdtype(dt, np.complexfloating) else dt
    rtol = lax.convert_element_type(asarray(rtol), tol_dt, weak_type=True)
    atol = lax.convert_element_type(asarray(atol), tol_dt, weak_type=True)
    diff = lax.abs(lax.sub(a, b))
    out = lax.le(diff, lax.add(atol, lax.mul(rtol, lax.abs(b))))
    out = where(lax.bitwise_or(isinf(a), isinf(b)), lax.eq(a, b), out)
    if equal_nan:
        out = lax.bitwise_or(out, lax.bitwise_and(isnan(a), isnan(b)))
    return _strong_bool(out)


@fuse_eagerly(2)
def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether every element of a is close to b (see isclose), as a bool array."""
    check_arraylike("allclose", a, b)
    return _all(isclose(a, b, rtol, atol, equal_nan))


def array_equal(a1, a2, equal_nan=False):
    """True if a1 and a2 have the same shape and elements (NaN equal to NaN if equal_nan)."""
    try:
        a1, a2 = asarray(a1), asarray(a2)
    except TypeError:
        return asarray(False)
    if get_aval(a1).shape != get_aval(a2).shape:
        return asarray(False)
    eq = equal(a1, a2)
    if equal_nan:
        eq = lax.bitwise_or(eq, lax.bitwise_and(isnan(a1), isnan(a2)))
    return _strong_bool(_all(eq))


def array_equiv(a1, a2):
    """True if a1 and a2 broadcast to a common shape with equal elements."""
    try:
        a1, a2 = asarray(a1), asarray(a2)
        broadcast_shapes(get_aval(a1).shape, get_aval(a2).shape)
    except (TypeError, ValueError):
        return asarray(False)
    return _strong_bool(_all(equal(a1, a2)))


_KINDS = {  # (ml_dtypes' bfloat16, float8 ... are real floating; int4 ... signed integers)
    "bool": lambda dt: dt == np.bool_,
    "signed integer": lambda dt: dtypes.kind_of(dt) == "i",
    "unsigned integer": lambda dt: dtypes.kind_of(dt) == "u",
    "integral": lambda dt: dtypes.kind_of(dt) in "iu",
    "real floating": lambda dt: dtypes.kind_of(dt) == "f",
    "complex floating": lambda dt: dt.kind == "c",
    "numeric": lambda dt: dtypes.kind_of(dt) in "iufc",
}


def isdtype(dtype, kind):
    """Whether `dtype` is of `kind`: a dtype, one of the array API's kind names ('bool',
    'signed integer', 'unsigned integer', 'integral', 'real floating', 'complex floating',
    'numeric') or a tuple of those."""
    dt = np.dtype(dtype)
    kinds = kind if isinstance(kind, tuple) else (kind,)
    for k in kinds:
        if isinstance(k, str) and k in _KINDS:
            if _KINDS[k](dt):
                return True
            continue
        try:
            other = np.dtype(k)
        except TypeError:
            raise ValueError(f"Unrecognized kind={k!r} expected one of {list(_KINDS)}, or a "
                             "compatible input for jnp.dtype()") from None
        if dt == other:
            return True
    return False


def can_cast(from_, to, casting="safe"):
    """NumPy's casting rules between dtypes (values are not inspected)."""
    if hasattr(from_, "aval"):
        from_ = get_aval(from_).dtype
    return bool(np.can_cast(np.dtype(from_), np.dtype(to), casting=casting))


def iterable(y):
    """Whether iter(y) works (a 0-d array is not iterable)."""
    try:
        iter(y)
    except TypeError:
        return False
    return True
