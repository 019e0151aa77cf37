"""jax.scipy.linalg's special matrices: block_diag, circulant, companion, convolution_matrix,
fiedler, fiedler_companion, hadamard, hankel, helmert, hilbert, invhilbert, pascal, invpascal,
leslie, toeplitz (and dft, which is complex).

Matrices built from array arguments are gathers with static index patterns, batched over the
arguments' leading dimensions as in JAX; those of a given size n are NumPy constants of the
default float dtype."""
from __future__ import annotations

import math
import operator

import numpy as np

from corejax import dtypes
from corejax.core import get_aval
from corejax.numpy._core import asarray, check_arraylike, promote_dtypes, promote_dtypes_inexact
import corejax.numpy as jnp

__all__ = ["block_diag", "circulant", "companion", "convolution_matrix", "dft", "fiedler",
           "fiedler_companion", "hadamard", "hankel", "helmert", "hilbert", "invhilbert",
           "invpascal", "leslie", "pascal", "toeplitz"]


def _float_constant(values):
    return asarray(np.asarray(values, np.float64), dtypes.default_float_dtype())


def _size(n, name):
    n = operator.index(n)
    if n < 0:
        raise ValueError(f"{name}: n must be non-negative, got {n}.")
    return n


def block_diag(*arrs):
    """The block-diagonal matrix of the given arrays (0-d: 1 x 1, 1-d: one row)."""
    if not arrs:
        return jnp.zeros((1, 0), dtypes.default_float_dtype())
    check_arraylike("block_diag", *arrs)
    for i, a in enumerate(arrs):
        if np.ndim(a) > 2:
            raise ValueError(f"Arguments to jax.scipy.linalg.block_diag must have at most 2 "
                             f"dimensions, got {a!r} at argument {i}.")
    blocks = [jnp.atleast_2d(a) for a in promote_dtypes(*arrs)]
    rows = sum(get_aval(b).shape[0] for b in blocks)
    cols = sum(get_aval(b).shape[1] for b in blocks)
    out, r, c = [], 0, 0
    for b in blocks:
        h, w = get_aval(b).shape
        out.append(jnp.pad(b, ((r, rows - r - h), (c, cols - c - w))))
        r, c = r + h, c + w
    total = out[0]
    for b in out[1:]:
        total = total + b
    return total


def circulant(c):
    """C[..., i, j] = c[..., (i - j) % n]."""
    check_arraylike("circulant", c)
    c = asarray(c)
    n = get_aval(c).shape[-1]
    i, j = np.indices((n, n))
    return c[..., (i - j) % n]


def toeplitz(c, r=None):
    """T[..., i, j] = c[..., i - j] on and below the diagonal, r[..., j - i] above it (r[0] is
    ignored; r defaults to c)."""
    check_arraylike("toeplitz", c) if r is None else check_arraylike("toeplitz", c, r)
    c = asarray(c)
    r = c if r is None else asarray(r)
    c, r = promote_dtypes(c, r)
    m, n = get_aval(c).shape[-1], get_aval(r).shape[-1]
    batch = jnp.broadcast_shapes(get_aval(c).shape[:-1], get_aval(r).shape[:-1])
    values = jnp.concatenate([jnp.broadcast_to(c, batch + (m,)),
                              jnp.broadcast_to(r, batch + (n,))[..., 1:]], axis=-1)
    i, j = np.indices((m, n))
    return values[..., np.where(i >= j, i - j, m + j - i - 1)]


def hankel(c, r=None):
    """H[..., i, j] = c[..., i + j] while i + j < m, then r[..., i + j - m + 1] (r[0] is
    ignored; r defaults to zeros)."""
    check_arraylike("hankel", c) if r is None else check_arraylike("hankel", c, r)
    c = asarray(c)
    r = jnp.zeros_like(c) if r is None else asarray(r)
    c, r = promote_dtypes(c, r)
    m, n = get_aval(c).shape[-1], get_aval(r).shape[-1]
    batch = jnp.broadcast_shapes(get_aval(c).shape[:-1], get_aval(r).shape[:-1])
    values = jnp.concatenate([jnp.broadcast_to(c, batch + (m,)),
                              jnp.broadcast_to(r, batch + (n,))[..., 1:]], axis=-1)
    i, j = np.indices((m, n))
    return values[..., i + j]


def _polynomial(a, name, min_length):
    check_arraylike(name, a)
    (a,) = promote_dtypes_inexact(asarray(a))
    if get_aval(a).ndim == 0 or get_aval(a).shape[-1] < min_length:
        raise ValueError(f"The length of `a` along the last axis must be at least "
                         f"{min_length}; got shape {get_aval(a).shape}.")
    return a


def companion(a):
    """The companion matrix of the polynomial with coefficients a[..., :] (highest first):
    first row -a[1:] / a[0], ones below the diagonal."""
    a = _polynomial(a, "companion", 2)
    n = get_aval(a).shape[-1] - 1
    first = -a[..., 1:] / a[..., :1]
    batch = get_aval(a).shape[:-1]
    ones = np.eye(n, k=-1)[1:]
    below = jnp.broadcast_to(asarray(ones, get_aval(a).dtype), batch + (n - 1, n))
    return jnp.concatenate([first[..., None, :], below], axis=-2)


def fiedler(a):
    """F[..., i, j] = |a[..., i] - a[..., j]|."""
    check_arraylike("fiedler", a)
    a = asarray(a)
    return jnp.abs(a[..., :, None] - a[..., None, :])


def fiedler_companion(a):
    """Fiedler's pentadiagonal companion matrix of the polynomial a (highest coefficient
    first): its eigenvalues are the polynomial's roots."""
    a = _polynomial(a, "fiedler_companion", 1)
    batch = get_aval(a).shape[:-1]
    size = get_aval(a).shape[-1] - 1
    if size == 0:
        return jnp.zeros(batch + (0, 0), get_aval(a).dtype)
    c = a[..., 1:] / a[..., :1]           # c[k - 1] is the normalized coefficient c_k
    # Row 2k holds -c_{2k+1} in column 2k-1 (column 0 for k = 0), -c_{2k+2} in column 2k+1
    # and a one in column 2k+2; row 2k+1 a one in column 2k-1 (column 0 for k = 0).
    coef_at, ones_at = [], []
    for k in range((size + 1) // 2):
        prev = 2 * k - 1 if k else 0
        coef_at += [(2 * k, prev, 2 * k), (2 * k, 2 * k + 1, 2 * k + 1)]
        ones_at += [(2 * k, 2 * k + 2), (2 * k + 1, prev)]
    coef_at = np.array([t for t in coef_at if t[1] < size and t[2] < size], int)
    ones_at = np.array([t for t in ones_at if t[0] < size and t[1] < size], int).reshape(-1, 2)
    out = jnp.zeros(batch + (size, size), get_aval(a).dtype)
    out = out.at[..., coef_at[:, 0], coef_at[:, 1]].set(-c[..., coef_at[:, 2]])
    return out.at[..., ones_at[:, 0], ones_at[:, 1]].set(1)


def leslie(f, s):
    """The Leslie matrix: fecundities f[..., :] in the first row, survival rates s[..., :]
    on the subdiagonal."""
    check_arraylike("leslie", f, s)
    f, s = promote_dtypes_inexact(asarray(f), asarray(s))
    n = get_aval(f).shape[-1]
    if get_aval(s).shape[-1] != n - 1:
        raise ValueError(f"Incorrect lengths for f and s: the length of s must be one less "
                         f"than that of f, got {n} and {get_aval(s).shape[-1]}.")
    batch = jnp.broadcast_shapes(get_aval(f).shape[:-1], get_aval(s).shape[:-1])
    out = jnp.zeros(batch + (n, n), get_aval(f).dtype)
    out = out.at[..., 0, :].set(f)
    return out.at[..., np.arange(1, n), np.arange(n - 1)].set(s)


def convolution_matrix(a, n, mode: str = "full"):
    """The matrix A with A @ v = np.convolve(a, v, mode) for v of length n."""
    check_arraylike("convolution_matrix", a)
    a = asarray(a)
    n = operator.index(n)
    m = get_aval(a).shape[-1]
    if mode not in ("full", "same", "valid"):
        raise ValueError(f"mode must be 'full', 'same' or 'valid', got {mode!r}.")
    if n <= 0 or m == 0:
        raise ValueError(f"convolution_matrix needs a non-empty a and n > 0, got a of length "
                         f"{m} and n={n}.")
    if mode == "full":
        start, rows = 0, m + n - 1
    elif mode == "same":
        start, rows = (min(m, n) - 1) // 2, max(m, n)
    else:
        start, rows = min(m, n) - 1, max(m, n) - min(m, n) + 1
    i, j = np.indices((rows, n))
    k = i + start - j
    padded = jnp.concatenate([a, jnp.zeros(get_aval(a).shape[:-1] + (1,), get_aval(a).dtype)],
                             axis=-1)
    return padded[..., np.where((k >= 0) & (k < m), k, m)]


def hadamard(n, dtype=int):
    """The n x n Hadamard matrix (Sylvester's construction; n a power of 2)."""
    n = operator.index(n)
    if n < 1 or n & (n - 1):
        raise ValueError(f"n must be a positive power of 2; got {n}.")
    h = np.ones((1, 1))
    while h.shape[0] < n:
        h = np.block([[h, h], [h, -h]])
    return asarray(h, dtypes.canonicalize_dtype(dtype))


def helmert(n, full: bool = False):
    """The Helmert matrix (its first row, 1/sqrt(n) everywhere, only when `full`)."""
    n = _size(n, "helmert")
    h = np.tril(np.ones((n, n)), -1) - np.diag(np.arange(n))
    d = np.arange(n) * np.arange(1, n + 1)
    h[0] = 1
    d[0] = n
    h = h / np.sqrt(d)[:, None]
    return _float_constant(h if full else h[1:])


def hilbert(n):
    """H[i, j] = 1 / (i + j + 1)."""
    n = _size(n, "hilbert")
    i, j = np.indices((n, n))
    return _float_constant(1.0 / (i + j + 1))


def invhilbert(n):
    """The exact inverse of the n x n Hilbert matrix (entries grow fast: exact in float64 up to
    n = 14 or so)."""
    n = _size(n, "invhilbert")
    out = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            out[i, j] = ((-1) ** (i + j) * (i + j + 1) * math.comb(n + i, n - j - 1)
                         * math.comb(n + j, n - i - 1) * math.comb(i + j, i) ** 2)
    return _float_constant(out)


def _pascal_lower(n):
    return np.array([[math.comb(i, j) for j in range(n)] for i in range(n)], np.float64)


def pascal(n, kind=None):
    """The Pascal matrix: 'symmetric' (default, binomial(i + j, i)), 'lower' or 'upper'."""
    n = _size(n, "pascal")
    kind = "symmetric" if kind is None else kind
    if kind not in ("symmetric", "lower", "upper"):
        raise ValueError(f"kind must be 'symmetric', 'lower', or 'upper', got {kind!r}.")
    low = _pascal_lower(n)
    return _float_constant(low @ low.T if kind == "symmetric" else low if kind == "lower"
                           else low.T)


def invpascal(n, kind=None):
    """The exact inverse of pascal(n, kind)."""
    n = _size(n, "invpascal")
    kind = "symmetric" if kind is None else kind
    if kind not in ("symmetric", "lower", "upper"):
        raise ValueError(f"kind must be 'symmetric', 'lower', or 'upper', got {kind!r}.")
    i, j = np.indices((n, n))
    inv_low = _pascal_lower(n) * np.where((i + j) % 2, -1.0, 1.0)
    return _float_constant(inv_low.T @ inv_low if kind == "symmetric" else inv_low
                           if kind == "lower" else inv_low.T)


def dft(n, scale=None, *, dtype=None):
    """The n x n discrete Fourier transform matrix exp(-2 pi i j k / n), divided by sqrt(n)
    (scale='sqrtn') or n (scale='n'); complex (the default complex dtype unless `dtype`)."""
    n = _size(n, "dft")
    if scale not in (None, "sqrtn", "n"):
        raise ValueError(f"scale must be None, 'sqrtn', or 'n'; got {scale!r}.")
    dt = dtypes.canonicalize_dtype(dtype if dtype is not None else np.complex128)
    if dt.kind != "c":
        raise ValueError(f"dtype must be a complex floating-point type; got {dt.name}.")
    jk = np.outer(np.arange(n), np.arange(n)) % max(n, 1)  # exact phases: j k mod n
    m = np.exp(-2j * np.pi * jk / max(n, 1))
    if scale == "sqrtn":
        m = m / math.sqrt(n)
    elif scale == "n":
        m = m / n
    return asarray(m.astype(dt))