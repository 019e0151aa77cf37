"""jnp.linalg's decompositions, solves, inverses and determinants, composed from lax.linalg's
primitives, with leading batch dimensions wherever NumPy allows them.

det, slogdet and pinv carry the custom derivative rules JAX gives them (det's stays finite at
singular matrices); solve is a custom_linear_solve around one LU factorization, as in JAX.
`eig` and `eigvals` need complex numbers, which corejax does not have yet: they raise
NotImplementedError.
"""
from __future__ import annotations

import operator
from typing import NamedTuple

import numpy as np

from corejax import lax
from corejax.core import get_aval
from corejax.custom_derivatives import custom_jvp
from corejax.lax import linalg as lax_linalg
from corejax.lax import _linalg_util as _u
from corejax.lax import _linalg_solves as lax_linalg_solves
from corejax.numpy._core import asarray, check_arraylike, promote_dtypes_inexact, broadcast_shapes
from corejax.numpy._linalg_norms import norm, trace, matmul
from corejax.numpy._shape import reshape, moveaxis, expand_dims, broadcast_to
from corejax.numpy._reductions import sum as _sum, any as _any
import corejax.numpy as jnp

__all__ = [
    "cholesky", "cond", "det", "eig", "eigh", "eigvals", "eigvalsh", "inv", "lstsq",
    "matrix_power", "matrix_rank", "pinv", "qr", "slogdet", "solve", "svd", "svdvals",
    "tensorinv", "tensorsolve", "EighResult", "QRResult", "SlogdetResult", "SVDResult",
    "EigResult",
]


class EighResult(NamedTuple):
    eigenvalues: object
    eigenvectors: object


class QRResult(NamedTuple):
    Q: object
    R: object


class SlogdetResult(NamedTuple):
    sign: object
    logabsdet: object


class SVDResult(NamedTuple):
    U: object
    S: object
    Vh: object


class EigResult(NamedTuple):
    eigenvalues: object
    eigenvectors: object


def _inexact(name, *args):
    check_arraylike(name, *args)
    return promote_dtypes_inexact(*args)


def _square(name, a, what=None):
    shape = get_aval(a).shape
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"Argument to {what or name} must have shape [..., n, n], got "
                         f"{shape}.")


# --- decompositions --------------------------------------------------------------------------

def cholesky(a, *, upper: bool = False, symmetrize_input: bool = True):
    """The Cholesky factor of Hermitian (symmetric) positive definite matrices: lower L with
    a = L L^H, or upper U = L^H with a = U^H U. NaN where a is not positive definite."""
    (a,) = _inexact("jnp.linalg.cholesky", a)
    factor = lax_linalg.cholesky(a, symmetrize_input=symmetrize_input)
    return _u.conj_mT(factor) if upper else factor


def _lower_flag(uplo):
    if uplo not in (None, "L", "U"):
        raise ValueError(f"UPLO must be one of None, 'L', or 'U', got {uplo}")
    return uplo != "U"


def eigh(a, UPLO: str | None = None, symmetrize_input: bool = True) -> EighResult:
    """Eigenvalues (ascending) and eigenvectors (columns) of symmetric matrices."""
    (a,) = _inexact("jnp.linalg.eigh", a)
    v, w = lax_linalg.eigh(a, lower=_lower_flag(UPLO), symmetrize_input=symmetrize_input)
    return EighResult(w, v)


def eigvalsh(a, UPLO: str | None = "L", *, symmetrize_input: bool = True):
    """Eigenvalues (ascending) of symmetric matrices."""
    return eigh(a, UPLO, symmetrize_input).eigenvalues


def eig(a):
    """Eigenvalues and right eigenvectors of general square matrices: EigResult(eigenvalues,
    eigenvectors), complex, each eigenvector of unit norm (LAPACK's geev)."""
    check_arraylike("jnp.linalg.eig", a)
    (a,) = promote_dtypes_inexact(a)
    w, v = lax_linalg.eig(a, compute_left_eigenvectors=False)
    return EigResult(w, v)


def eigvals(a):
    """Eigenvalues of general square matrices (complex)."""
    check_arraylike("jnp.linalg.eigvals", a)
    (a,) = promote_dtypes_inexact(a)
    return lax_linalg.eig(a, compute_left_eigenvectors=False,
                          compute_right_eigenvectors=False)[0]


def svd(a, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False,
        subset_by_index=None):
    """Singular value decomposition a = U diag(S) Vh (S descending); only S without
    `compute_uv`. `hermitian` computes it from a symmetric eigendecomposition."""
    (a,) = _inexact("jnp.linalg.svd", a)
    if hermitian:
        return _svd_hermitian(a, compute_uv)
    out = lax_linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv,
                         subset_by_index=subset_by_index)
    return SVDResult(*out) if compute_uv else out


def _svd_hermitian(a, compute_uv):
    """For symmetric a = V diag(w) V^T: singular values |w| in descending order, U = V and
    Vh = sign(w) V^T, both in that order."""
    v, w = lax_linalg.eigh(a)
    s = lax.abs(w)
    order = jnp.argsort(lax.neg(s), axis=-1)
    s = jnp.take_along_axis(s, order, axis=-1)
    if not compute_uv:
        return s
    nd = get_aval(v).ndim
    cols = jnp.broadcast_to(jnp.expand_dims(order, -2), get_aval(v).shape)
    u = jnp.take_along_axis(v, cols, axis=nd - 1)
    signed = jnp.take_along_axis(_u.scale_columns(v, lax.sign(w)), cols, axis=nd - 1)
    return SVDResult(u, s, _u.mT(signed))


def svdvals(x, /):
    """The singular values of x, descending."""
    return svd(x, compute_uv=False)


def qr(a, mode: str = "reduced"):
    """QR decomposition. mode 'reduced' / 'complete': QRResult(Q, R); 'r': R alone; 'raw':
    QRResult(h, tau), LAPACK's Householder form with h transposed, as NumPy returns it."""
    (a,) = _inexact("jnp.linalg.qr", a)
    if mode not in ("reduced", "complete", "r", "raw"):
        raise ValueError(f"Unsupported QR decomposition mode {mode!r}")
    if mode == "raw":
        from corejax.lax._linalg_factor import geqrf_p
        h, taus = geqrf_p.bind(a)
        return QRResult(_u.mT(h), taus)
    q, r = lax_linalg.qr(a, full_matrices=mode == "complete")
    return r if mode == "r" else QRResult(q, r)


# --- solves, inverses, determinants ----------------------------------------------------------

def _lu_solve(lu, perm, b):
    """x with A x = b for each column of b (..., n, k), from A's factors P A = L U."""
    permuted = _u.permute_rows(b, perm)
    y = lax_linalg.triangular_solve(lu, permuted, left_side=True, lower=True,
                                    unit_diagonal=True)
    return lax_linalg.triangular_solve(lu, y, left_side=True, lower=False)


def _lu_solve_transposed(lu, perm, b):
    """x with A^T x = b, from A's factors P A = L U (A^T = U^T L^T P)."""
    y = lax_linalg.triangular_solve(lu, b, left_side=True, lower=False, transpose_a=True)
    y = lax_linalg.triangular_solve(lu, y, left_side=True, lower=True, transpose_a=True,
                                    unit_diagonal=True)
    return _u.permute_rows(y, jnp.argsort(perm, axis=-1).astype(np.int32))


def _solve(a, b):
    """As JAX does: a custom_linear_solve around one LU factorization of a, so derivatives
    (to b, and to a through the matvec) come from the linear system, and the solve is linear
    in b (transposable) wherever it appears, tangents included."""
    lu, _, perm = lax_linalg.lu(lax.stop_gradient(a))
    return lax_linalg_solves.custom_linear_solve(
        lambda x: _u.matmul(a, x), b, lambda matvec, y: _lu_solve(lu, perm, y),
        transpose_solve=lambda vecmat, y: _lu_solve_transposed(lu, perm, y))


def solve(a, b):
    """x with a @ x = b. b is a vector (..., n) when it is one-dimensional, else a stack of
    matrices (..., n, k); batch dimensions broadcast."""
    a, b = _inexact("jnp.linalg.solve", a, b)
    _square("solve", a)
    a_aval, b_aval = get_aval(a), get_aval(b)
    n = a_aval.shape[-1]
    if b_aval.ndim == 0 or b_aval.shape[-1 if b_aval.ndim == 1 else -2] != n:
        raise ValueError(f"solve: the right-hand side of shape {b_aval.shape} does not match "
                         f"the matrices of shape {a_aval.shape}: b must be (n,) or (..., n, k) "
                         f"with n = {n}.")
    vector = b_aval.ndim == 1
    if vector:
        b = expand_dims(b, -1)
    batch = broadcast_shapes(a_aval.shape[:-2], get_aval(b).shape[:-2])
    a = broadcast_to(a, batch + a_aval.shape[-2:])
    b = broadcast_to(b, batch + get_aval(b).shape[-2:])
    x = _solve(a, b)
    return x[..., 0] if vector else x


def inv(a):
    """The inverses of square matrices (inf / nan entries for singular ones, as LAPACK's
    solve gives them)."""
    (a,) = _inexact("jnp.linalg.inv", a)
    _square("inv", a)
    shape = get_aval(a).shape
    return solve(a, jnp.broadcast_to(_u.eye(shape[-2:], get_aval(a).dtype), shape))


def _permutation_sign(pivots, dtype):
    """(-1) ** (number of LAPACK row swaps)."""
    k = get_aval(pivots).shape[-1]
    swaps = _sum(pivots != jnp.arange(k, dtype=np.int32), axis=-1)
    return jnp.where(swaps % 2 == 1, -1, 1).astype(dtype)


def _det_small(a):
    """The determinant of 2x2 and 3x3 matrices by the explicit formula (the rule of Sarrus
    summed left to right), as JAX computes them, so the values round as JAX's do and a
    singular matrix's determinant is +0 where an LU's signed product can give -0; None for
    other sizes."""
    n = get_aval(a).shape[-1]
    if n not in (2, 3):
        return None
    e = lambda i, j: a[..., i, j]  # noqa: E731
    if n == 2:
        return lax.sub(lax.mul(e(0, 0), e(1, 1)), lax.mul(e(0, 1), e(1, 0)))
    term = lambda i, j, k: lax.mul(lax.mul(e(0, i), e(1, j)), e(2, k))  # noqa: E731
    plus = lax.add(lax.add(term(0, 1, 2), term(1, 2, 0)), term(2, 0, 1))
    return lax.sub(lax.sub(lax.sub(plus, term(2, 1, 0)), term(0, 2, 1)), term(1, 0, 2))


@custom_jvp
def _det(a):
    small = _det_small(a)
    if small is not None:
        return small
    lu, pivots, _ = lax_linalg.lu(a)
    diag = _u.diagonal(lu)
    return lax.mul(_permutation_sign(pivots, get_aval(a).dtype), jnp.prod(diag, axis=-1))


@_det.defjvp
def _det_jvp(primals, tangents):
    """det'(A)[A'] = trace(adj(A) A'). With P A = L U and U = D U1 (D scales U's last row by
    u_nn, U1 has 1 there): adj(A) = det(P) det(U1) U1^-1 diag(u_nn, ..., u_nn, 1) L^-1 P,
    which stays finite (and right) when A is singular with its zero pivot last."""
    (a,), (a_dot,) = primals, tangents
    lu, pivots, perm = lax_linalg.lu(a)
    dtype = get_aval(a).dtype
    n = get_aval(a).shape[-1]
    diag = _u.diagonal(lu)
    sign = _permutation_sign(pivots, dtype)
    det = _det_small(a)
    if det is None:
        det = lax.mul(sign, jnp.prod(diag, axis=-1))
    if n == 0:
        return det, jnp.zeros_like(det)
    u_nn = diag[..., -1]
    last = lax.eq(lax.broadcasted_iota(np.int32, get_aval(diag).shape, get_aval(diag).ndim - 1),
                  lax.full(get_aval(diag).shape, n - 1, np.int32))
    ones = lax.full(get_aval(diag).shape, 1, dtype)
    u1_diag = lax.select(last, ones, diag)
    row_scale = lax.select(last, ones, jnp.broadcast_to(u_nn[..., None], get_aval(diag).shape))
    u1 = lax.add(_u.triu(lu, 1), _u.diag_embed(u1_diag))
    y = _u.permute_rows(a_dot, perm)
    y = lax_linalg.triangular_solve(lu, y, left_side=True, lower=True, unit_diagonal=True)
    y = lax_linalg.triangular_solve(u1, _u.scale_rows(y, row_scale), left_side=True,
                                    lower=False)
    adj_scale = lax.mul(sign, jnp.prod(u1_diag, axis=-1))
    return det, lax.mul(adj_scale, trace(y))


def det(a):
    """Determinants of square matrices (LU with partial pivoting)."""
    (a,) = _inexact("jnp.linalg.det", a)
    _square("det", a, "_det()")
    return _det(a)


@custom_jvp
def _slogdet_lu(a):
    lu, pivots, _ = lax_linalg.lu(a)
    diag = _u.diagonal(lu)
    dtype = get_aval(a).dtype
    sign = lax.mul(_permutation_sign(pivots, dtype), jnp.prod(lax.sign(diag), axis=-1))
    return sign, _sum(lax.log(lax.abs(diag)), axis=-1)


@custom_jvp
def _slogdet_qr(a):
    q, r = lax_linalg.qr(a)
    diag = _u.diagonal(r)
    sign = lax.mul(lax.sign(_det(q)), jnp.prod(lax.sign(diag), axis=-1))
    return sign, _sum(lax.log(lax.abs(diag)), axis=-1)


def _slogdet_jvp(fun):
    def rule(primals, tangents):
        """sign' = 0 and log|det|' = trace(A^-1 A') (one LU solve, linear in A')."""
        (a,), (a_dot,) = primals, tangents
        sign, logdet = fun(a)
        lu, _, perm = lax_linalg.lu(a)
        return (sign, logdet), (jnp.zeros_like(sign), trace(_lu_solve(lu, perm, a_dot)))
    return rule


_slogdet_lu.defjvp(_slogdet_jvp(_slogdet_lu))
_slogdet_qr.defjvp(_slogdet_jvp(_slogdet_qr))


def slogdet(a, *, method: str | None = None) -> SlogdetResult:
    """The sign and the log of the absolute value of determinants (0 and -inf for singular
    matrices), from an LU (method None or 'lu') or a QR ('qr') factorization."""
    (a,) = _inexact("jnp.linalg.slogdet", a)
    _square("slogdet", a, "_slogdet()")
    if method not in (None, "lu", "qr"):
        raise ValueError(f"Unknown slogdet method '{method}'. Supported methods are 'lu' "
                         "(`None`), and 'qr'.")
    return SlogdetResult(*(_slogdet_qr if method == "qr" else _slogdet_lu)(a))


def _default_rtol(a):
    shape = get_aval(a).shape
    return 10.0 * max(shape[-2:]) * float(np.finfo(get_aval(a).dtype).eps)


@custom_jvp
def _pinv(a, rtol):
    u, s, vt = lax_linalg.svd(a, full_matrices=False)
    cutoff = lax.mul(jnp.max(s, axis=-1, keepdims=True, initial=0.0), rtol[..., None])
    keep = lax.gt(s, jnp.broadcast_to(cutoff, get_aval(s).shape))
    inv_s = jnp.where(keep, 1 / jnp.where(keep, s, 1), 0)
    return _u.matmul(_u.scale_columns(_u.mT(vt), inv_s), _u.mT(u))


@_pinv.defjvp
def _pinv_jvp(primals, tangents):
    """The derivative of the pseudo-inverse at constant rank (Golub and Pereyra):
    P' = -P A' P + P P^T A'^T (I - A P) + (I - P A) A'^T P^T P."""
    a, rtol = primals
    a_dot, _ = tangents
    p = _pinv(a, rtol)
    pt, at_dot = _u.mT(p), _u.mT(a_dot)
    m, n = get_aval(a).shape[-2:]
    dt = get_aval(a).dtype
    left = lax.sub(_u.eye(get_aval(a).shape[:-2] + (m, m), dt), _u.matmul(a, p))
    right = lax.sub(_u.eye(get_aval(a).shape[:-2] + (n, n), dt), _u.matmul(p, a))
    p_dot = lax.add(lax.add(lax.neg(_u.matmul(_u.matmul(p, a_dot), p)),
                            _u.matmul(_u.matmul(p, pt), _u.matmul(at_dot, left))),
                    _u.matmul(right, _u.matmul(at_dot, _u.matmul(pt, p))))
    return p, p_dot


def pinv(a, rtol=None, hermitian: bool = False, *, rcond=None):
    """The Moore-Penrose pseudo-inverse from the SVD: singular values at most
    rtol * max(s) count as zero (default rtol = 10 * max(m, n) * eps)."""
    (a,) = _inexact("jnp.linalg.pinv", a)
    if get_aval(a).ndim < 2:
        raise ValueError(f"pinv requires an array of at least two dimensions, got shape "
                         f"{get_aval(a).shape}.")
    if rcond is not None:
        if rtol is not None:
            raise ValueError("pinv: pass rtol, or its deprecated alias rcond, not both.")
        rtol = rcond
    dt = get_aval(a).dtype
    rtol = _default_rtol(a) if rtol is None else rtol
    rtol = jnp.broadcast_to(jnp.asarray(rtol, dt), get_aval(a).shape[:-2])
    return _pinv(a, lax.stop_gradient(rtol))


def matrix_rank(M, rtol=None, *, hermitian: bool = False, tol=None):
    """The number of singular values above a threshold: `tol`, or `rtol` (which JAX 0.10.2
    also applies as an absolute threshold), by default max(s) * max(m, n) * eps. 0-d and
    1-d input: 1 unless all zero."""
    (M,) = _inexact("jnp.linalg.matrix_rank", M)
    aval = get_aval(M)
    if aval.ndim < 2:
        return _any(lax.ne(M, lax.full(aval.shape, 0, aval.dtype))).astype(np.int32)
    s = svdvals(M) if not hermitian else lax.abs(eigvalsh(M))
    threshold = tol if tol is not None else rtol
    if threshold is None:
        eps = float(np.finfo(aval.dtype).eps)
        threshold = jnp.max(s, axis=-1, keepdims=True, initial=0.0) * (max(aval.shape[-2:]) * eps)
    else:
        threshold = jnp.asarray(threshold, aval.dtype)[..., None]
    return _sum(s > threshold, axis=-1).astype(np.int32)


def lstsq(a, b, rcond=None, *, numpy_resid: bool = False):
    """Least-squares solution of a x = b by the SVD: `(x, resid, rank, s)`. Singular values
    below rcond * max(s) (default rcond = eps * max(m, n)) count as zero. resid is the squared
    residual norm per column of b; with `numpy_resid`, as NumPy: empty unless a has full
    column rank and more rows than columns."""
    a, b = _inexact("jnp.linalg.lstsq", a, b)
    a_aval, b_aval = get_aval(a), get_aval(b)
    if a_aval.ndim != 2:
        raise ValueError(f"{a_aval.ndim}-dimensional array given. Array must be "
                         "two-dimensional (lstsq does not batch: use vmap)")
    if b_aval.ndim not in (1, 2):
        raise ValueError(f"{b_aval.ndim}-dimensional array given. Array must be one or "
                         "two-dimensional")
    m, n = a_aval.shape
    if b_aval.shape[0] != m:
        raise ValueError(f"Leading dimensions of input arrays must match, got {a_aval.shape} and "
                        f"{b_aval.shape}.")
    vector = b_aval.ndim == 1
    if vector:
        b = b[:, None]
    dt = a_aval.dtype
    if rcond is None:
        rcond = float(np.finfo(dt).eps) * max(n, m)
    else:
        rcond = jnp.where(jnp.asarray(rcond) < 0, float(np.finfo(dt).eps), rcond)
    u, s, vt = lax_linalg.svd(a, full_matrices=False)
    keep = s >= jnp.asarray(rcond, dt) * (s[0] if s.shape[0] else jnp.asarray(0, dt))
    rank = _sum(keep, dtype=np.int32)
    inv_s = jnp.where(keep, 1 / jnp.where(keep, s, 1), 0)
    x = _u.matmul(_u.mT(vt), _u.scale_rows(_u.matmul(_u.mT(u), b), inv_s))
    residual = _sum(jnp.square(b - _u.matmul(a, x)), axis=0)
    resid = residual
    if numpy_resid:
        # NumPy's residuals exist only for full column rank: the result's shape depends on
        # a value, so this needs concrete inputs (under jit: a TracerBoolConversionError).
        if m <= n or not bool(rank == n):
            resid = jnp.zeros((0,), dt)
    if vector:
        x = x[:, 0]
    return x, resid, rank, s


def matrix_power(a, n):
    """a to the integer power n by repeated squaring (n = 0: the identity; n < 0: powers of
    the inverse)."""
    check_arraylike("jnp.linalg.matrix_power", a)
    a = asarray(a)
    aval = get_aval(a)
    if aval.ndim < 2 or aval.shape[-1] != aval.shape[-2]:
        raise TypeError("Last 2 dimensions of the array must be square")
    try:
        n = operator.index(n)
    except TypeError as err:
        raise TypeError(f"exponent must be an integer, got {n}") from err
    if n == 0:
        return jnp.broadcast_to(_u.eye(aval.shape[-2:], aval.dtype), aval.shape)
    if n < 0:
        a, n = inv(a), -n
    result = square = None
    while n > 0:
        square = a if square is None else matmul(square, square)
        n, bit = divmod(n, 2)
        if bit:
            result = square if result is None else matmul(result, square)
    return result


def cond(x, p=None):
    """The condition number of matrices in norm `p` (None / 2: s_max / s_min; -2: its
    reciprocal; other norms: ||x|| * ||x^-1||, square x only); inf for singular matrices
    whose norms give nan, unless x itself holds nan."""
    (x,) = _inexact("jnp.linalg.cond", x)
    aval = get_aval(x)
    if aval.ndim < 2:
        raise ValueError(f"jnp.linalg.cond: input array must be at least 2D; got "
                         f"x.shape={aval.shape}")
    if p is None or p == 2:
        s = svdvals(x)
        r = s[..., 0] / s[..., -1]
    elif p == -2:
        s = svdvals(x)
        r = s[..., -1] / s[..., 0]
    else:
        if aval.shape[-1] != aval.shape[-2]:
            raise ValueError(f"jnp.linalg.cond: for p={p}, array must be square; got "
                             f"arr.shape={aval.shape}")
        r = norm(x, p, axis=(-2, -1)) * norm(inv(x), p, axis=(-2, -1))
    return jnp.where(jnp.isnan(r) & ~_any(jnp.isnan(x), axis=(-2, -1)), jnp.inf, r)


def tensorinv(a, ind: int = 2):
    """The inverse of a as a linear map from its last dims to its first `ind`:
    tensordot(tensorinv(a, ind), a, ind) is the identity."""
    (a,) = _inexact("jnp.linalg.tensorinv", a)
    ind = operator.index(ind)
    if ind <= 0:
        raise ValueError(f"ind must be a positive integer, got {ind}.")
    shape = get_aval(a).shape
    out_shape, in_shape = shape[:ind], shape[ind:]
    rows, cols = int(np.prod(out_shape)), int(np.prod(in_shape))
    if rows != cols:
        raise ValueError(f"tensorinv: the first {ind} dimensions {out_shape} and the rest "
                         f"{in_shape} of a must have equal products.")
    return reshape(inv(reshape(a, (rows, cols))), in_shape + out_shape)


def tensorsolve(a, b, axes=None):
    """x with tensordot(a, x, x.ndim) = b; `axes` of a move to its end first."""
    a, b = _inexact("jnp.linalg.tensorsolve", a, b)
    if axes is not None:
        a_nd = get_aval(a).ndim
        axes = [operator.index(i) % a_nd for i in axes]
        a = moveaxis(a, axes, list(range(a_nd - len(axes), a_nd)))
    a_shape, b_shape = get_aval(a).shape, get_aval(b).shape
    out_shape = a_shape[len(b_shape):]
    if a_shape[:len(b_shape)] != b_shape:
        raise ValueError(f"tensorsolve: the leading dimensions of a {a_shape} must equal b's "
                         f"shape {b_shape}.")
    rows, cols = int(np.prod(b_shape)), int(np.prod(out_shape))
    if rows != cols:
        raise ValueError(f"tensorsolve: a of shape {a_shape} does not give a square system "
                         f"for b of shape {b_shape}.")
    return reshape(solve(reshape(a, (rows, cols)), reshape(b, (rows,))), out_shape)
