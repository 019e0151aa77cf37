"""jnp.linalg's norms (norm, vector_norm, matrix_norm) and its array-API products and views
(vecdot, cross, outer, multi_dot, matmul, tensordot, trace, diagonal, matrix_transpose)."""
from __future__ import annotations

import numpy as np

from corejax import lax
from corejax.core import get_aval
from corejax.lax import linalg as lax_linalg
from corejax.numpy._core import (broadcast_shapes, canonicalize_axis, check_arraylike,
                                 promote_dtypes, promote_dtypes_inexact)
from corejax.numpy import _shape, _linalg_ops
from corejax.numpy._reductions import sum as _sum, max as _max, min as _min
import corejax.numpy as jnp

__all__ = []


def _norm_axes(axis, ndim):
    if isinstance(axis, (tuple, list)):
        axes = tuple(canonicalize_axis(a, ndim) for a in axis)
    else:
        axes = (canonicalize_axis(axis, ndim),)
    return axes


def _abs2(x):
    """|x|**2 elementwise, real for complex x (so norms of complex arrays are real)."""
    if get_aval(x).dtype.kind == "c":
        re, im = lax.real(x), lax.imag(x)
        return lax.add(lax.mul(re, re), lax.mul(im, im))
    return lax.mul(x, x)


def _restore(out, axes, ndim, keepdims):
    if not keepdims:
        return out
    return lax.expand_dims(out, tuple(sorted(axes)))


def _vector_norm(x, ord, axis, keepdims):
    """The norm `ord` of x along the single axis `axis`."""
    if isinstance(ord, str):
        raise ValueError(f"Invalid order '{ord}' for vector norm.")
    ax = (axis,)
    if ord is None or ord == 2:
        return jnp.sqrt(_sum(_abs2(x), axis=ax, keepdims=keepdims))
    if ord == np.inf:
        return _max(jnp.abs(x), axis=ax, keepdims=keepdims, initial=0.0)
    if ord == -np.inf:
        return _min(jnp.abs(x), axis=ax, keepdims=keepdims)
    if ord == 0:
        return _sum(lax.ne(x, lax.full(get_aval(x).shape, 0, get_aval(x).dtype)),
                    axis=ax, keepdims=keepdims).astype(get_aval(x).dtype)
    if ord == 1:
        return _sum(jnp.abs(x), axis=ax, keepdims=keepdims)
    p = jnp.asarray(ord, get_aval(x).dtype)
    return jnp.power(_sum(jnp.power(jnp.abs(x), p), axis=ax, keepdims=keepdims), 1 / p)


def _matrix_norm(x, ord, axes, keepdims):
    """The matrix norm `ord` over the (row, column) axes `axes`."""
    row, col = axes
    ndim = get_aval(x).ndim
    if ord is None or ord == "fro":
        return jnp.sqrt(_sum(_abs2(x), axis=axes, keepdims=keepdims))
    if ord in (1, -1, np.inf, -np.inf):
        # 1-norms are column sums, inf-norms row sums; then the max (min for -1 / -inf)
        summed_axis, then_axis = (row, col) if ord in (1, -1) else (col, row)
        sums = _sum(jnp.abs(x), axis=summed_axis, keepdims=True)
        pick = _max if ord in (1, np.inf) else _min
        out = pick(sums, axis=then_axis, keepdims=True)
        return out if keepdims else lax.squeeze(out, tuple(sorted(axes)))
    if ord in (2, -2, "nuc"):
        moved = _shape.moveaxis(x, (row, col), (-2, -1))
        s = lax_linalg.svd(moved, compute_uv=False)
        out = _max(s, axis=-1) if ord == 2 else _min(s, axis=-1) if ord == -2 else \
            _sum(s, axis=-1)
        return _restore(out, axes, ndim, keepdims)
    raise ValueError(f"Invalid order '{ord}' for matrix norm.")


def norm(x, ord=None, axis=None, keepdims: bool = False):
    """Vector norms (one axis: ord None/2, 1, inf, -inf, 0, any p) and matrix norms (two axes:
    None/'fro', 'nuc', 1, -1, 2, -2, inf, -inf). Without axis, the 2-norm of the flattened
    array when ord is None, else the vector or matrix norm of a 1-D or 2-D x."""
    check_arraylike("jnp.linalg.norm", x)
    (x,) = promote_dtypes_inexact(x)
    ndim = get_aval(x).ndim
    if axis is None:
        if ord is None:
            out = jnp.sqrt(_sum(_abs2(x)))
            return lax.reshape(out, (1,) * ndim) if keepdims else out
        axes = tuple(range(ndim))
    else:
        axes = _norm_axes(axis, ndim)
    if len(axes) == 1:
        return _vector_norm(x, ord, axes[0], keepdims)
    if len(axes) == 2 and axes[0] != axes[1]:
        return _matrix_norm(x, ord, axes, keepdims)
    raise ValueError(f"Improper number of axes for norm: axis={axis if axis is not None else axes}"
                     ". Pass one axis to compute a vector-norm, or two axes to compute a "
                     "matrix-norm.")


def vector_norm(x, /, *, axis=None, keepdims: bool = False, ord=2):
    """The vector norm `ord` over `axis` (several axes count as one flattened vector; None:
    all of them)."""
    check_arraylike("jnp.linalg.vector_norm", x)
    (x,) = promote_dtypes_inexact(x)
    shape = get_aval(x).shape
    ndim = len(shape)
    axes = tuple(range(ndim)) if axis is None else _norm_axes(axis, ndim)
    kept = [d for d in range(ndim) if d not in axes]
    flat = lax.reshape(_shape.transpose(x, kept + list(axes)),
                       tuple(shape[d] for d in kept) + (int(np.prod([shape[d] for d in axes],
                                                                     dtype=np.int64)),))
    out = _vector_norm(flat, ord, len(kept), False)
    return _restore(out, axes, ndim, keepdims)


def matrix_norm(x, /, *, keepdims: bool = False, ord="fro"):
    """The matrix norm `ord` of the last two dimensions."""
    return norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)


def vecdot(x1, x2, /, *, axis: int = -1, precision=None, preferred_element_type=None):
    """Dot products of the vectors along `axis` of the broadcast operands."""
    check_arraylike("jnp.linalg.vecdot", x1, x2)
    x1, x2 = promote_dtypes(x1, x2)
    shape = broadcast_shapes(get_aval(x1).shape, get_aval(x2).shape)
    ax = canonicalize_axis(axis, len(shape))
    if get_aval(x1).dtype.kind == "c":  # the array API's vecdot conjugates its first operand
        x1 = lax.conj(x1)
    x1 = _shape.moveaxis(_shape.broadcast_to(x1, shape), ax, -1)
    x2 = _shape.moveaxis(_shape.broadcast_to(x2, shape), ax, -1)
    nd = len(shape)
    batch = tuple(range(nd - 1))
    return lax.dot_general(x1, x2, (((nd - 1,), (nd - 1,)), (batch, batch)),
                           preferred_element_type=preferred_element_type)


def cross(x1, x2, /, *, axis: int = -1):
    """Cross products of the 3-vectors along `axis`."""
    check_arraylike("jnp.linalg.cross", x1, x2)
    x1, x2 = promote_dtypes(x1, x2)
    s1, s2 = get_aval(x1).shape, get_aval(x2).shape
    if not s1 or not s2 or s1[axis] != 3 or s2[axis] != 3:
        raise ValueError("Both input arrays must be (arrays of) 3-dimensional vectors, but they "
                         f"have x1.shape[axis]={s1[axis] if s1 else None} and "
                         f"x2.shape[axis]={s2[axis] if s2 else None}")
    a = _shape.moveaxis(x1, axis, -1)
    b = _shape.moveaxis(x2, axis, -1)
    shape = broadcast_shapes(get_aval(a).shape, get_aval(b).shape)
    a, b = _shape.broadcast_to(a, shape), _shape.broadcast_to(b, shape)
    a0, a1, a2 = (a[..., i] for i in range(3))
    b0, b1, b2 = (b[..., i] for i in range(3))
    out = _shape.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)
    return _shape.moveaxis(out, -1, axis)


def outer(x1, x2, /):
    """The outer product of two vectors."""
    check_arraylike("jnp.linalg.outer", x1, x2)
    n1, n2 = np.ndim(x1), np.ndim(x2)
    if n1 != 1 or n2 != 1:
        raise ValueError(f"Input arrays must be one-dimensional, but they are x1.ndim={n1} "
                         f"x2.ndim={n2}")
    return _linalg_ops.outer(x1, x2)


def trace(x, /, *, offset: int = 0, dtype=None):
    """Sums of the diagonals (with `offset`) of the last two dimensions."""
    check_arraylike("jnp.linalg.trace", x)
    return _shape.trace(x, offset, -2, -1, dtype)


def diagonal(x, /, *, offset: int = 0):
    """The diagonals (with `offset`) of the last two dimensions."""
    check_arraylike("jnp.linalg.diagonal", x)
    return _shape.diagonal(x, offset, -2, -1)


def matmul(x1, x2, /, *, precision=None, preferred_element_type=None):
    """The matrix product (jnp.matmul)."""
    return _linalg_ops.matmul(x1, x2, precision=precision,
                              preferred_element_type=preferred_element_type)


def matrix_transpose(x, /):
    """Swaps the last two dimensions."""
    return _shape.matrix_transpose(x)


def tensordot(x1, x2, /, *, axes=2, precision=None, preferred_element_type=None,
              out_sharding=None):
    """jnp.tensordot with the array API's keyword-only axes."""
    return _linalg_ops.tensordot(x1, x2, axes, precision=precision,
                                 preferred_element_type=preferred_element_type)


def _chain_order(dims):
    """split[i][j]: where the cheapest product of matrices i..j splits (matrix chain order)."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def multi_dot(arrays, *, precision=None):
    """The product of a chain of matrices in the cheapest order; the first and last may be
    vectors."""
    arrays = list(arrays)
    if len(arrays) < 2:
        raise ValueError(f"multi_dot: expecting at least two arrays, got {len(arrays)}.")
    check_arraylike("jnp.linalg.multi_dot", *arrays)
    arrays = promote_dtypes(*arrays)
    shapes = [get_aval(a).shape for a in arrays]
    first_vec, last_vec = len(shapes[0]) == 1, len(shapes[-1]) == 1
    if (any(len(s) != 2 for s in shapes[1:-1]) or len(shapes[0]) not in (1, 2)
            or len(shapes[-1]) not in (1, 2)):
        raise ValueError("multi_dot: input arrays must all be two-dimensional, except for the "
                         "first and last array which may be 1 or 2 dimensional. Got array "
                         f"shapes {shapes}")
    if first_vec:
        arrays[0] = lax.reshape(arrays[0], (1,) + shapes[0])
    if last_vec:
        arrays[-1] = lax.reshape(arrays[-1], shapes[-1] + (1,))
    mats = [get_aval(a).shape for a in arrays]
    for s, t in zip(mats, mats[1:]):
        if s[1] != t[0]:
            raise ValueError(f"multi_dot: shapes {s} and {t} are not aligned.")
    split = _chain_order([mats[0][0]] + [s[1] for s in mats])

    def product(i, j):
        if i == j:
            return arrays[i]
        k = split[i][j]
        return _linalg_ops.matmul(product(i, k), product(k + 1, j))

    out = product(0, len(arrays) - 1)
    if first_vec:
        out = lax.squeeze(out, (0,))
    if last_vec:
        out = lax.squeeze(out, (get_aval(out).ndim - 1,))
    return out
