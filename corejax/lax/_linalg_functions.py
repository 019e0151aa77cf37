"""The public functions of lax.linalg (re-exported by corejax/lax/linalg.py), and the
cholesky_update primitive. The factorization and spectral primitives with their rules are in
_linalg_factor.py and _linalg_spectral.py."""
from __future__ import annotations

import numpy as np

from corejax.core import ShapedArray, get_aval
from corejax.lax import _linalg_util as _util
from corejax.lax._linalg_factor import (
    cholesky_p, triangular_solve_p, lu_p, lu_pivots_to_permutation_p, qr_p,
    householder_product_p, tridiagonal_solve_p)
from corejax.lax._linalg_spectral import (
    eigh_p, svd_p, hessenberg_p, tridiagonal_p, schur_p, SvdAlgorithm, EighImplementation,
    EigImplementation)
from corejax.lax._linalg_qdwh import qdwh

__all__ = [
    "cholesky", "cholesky_update", "eig", "eigh", "hessenberg", "householder_product", "lu",
    "lu_pivots_to_permutation", "ormqr", "qdwh", "qr", "schur", "svd", "symmetric_product",
    "triangular_solve", "tridiagonal", "tridiagonal_solve", "SvdAlgorithm",
    "EighImplementation", "EigImplementation", "cholesky_p", "cholesky_update_p", "eigh_p",
    "hessenberg_p", "householder_product_p", "lu_p", "lu_pivots_to_permutation_p", "qr_p",
    "schur_p", "svd_p", "triangular_solve_p", "tridiagonal_p", "tridiagonal_solve_p",
]


def _lax():
    from corejax import lax
    return lax


def cholesky(x, *, symmetrize_input: bool = True):
    """The lower-triangular L with x = L L^H (L L^T for real x; NaN where x is not positive
    definite). `symmetrize_input` first replaces x by (x + x^H) / 2; otherwise only x's lower
    triangle (and the real part of its diagonal) is read."""
    if symmetrize_input:
        _util.check_rank("cholesky", 0, get_aval(x), 2)
        x = _util.symmetrize(x)
    return cholesky_p.bind(x)


def eigh(x, *, lower: bool = True, symmetrize_input: bool = True,
         sort_eigenvalues: bool = True, subset_by_index=None, implementation=None):
    """Eigenvectors and eigenvalues `(v, w)` of symmetric matrices, eigenvalues ascending
    (`subset_by_index=(start, end)` keeps that range of them). Reads the `lower` triangle
    unless `symmetrize_input`."""
    if symmetrize_input:
        _util.check_rank("eigh", 0, get_aval(x), 2)
        x = _util.symmetrize(x)
    subset = None if subset_by_index is None else tuple(int(i) for i in subset_by_index)
    v, w = eigh_p.bind(x, lower=bool(lower), sort_eigenvalues=bool(sort_eigenvalues),
                       subset_by_index=subset, algorithm=implementation)
    return v, w


def eig(x, *, compute_left_eigenvectors: bool = True, compute_right_eigenvectors: bool = True,
        enable_eigvec_derivs: bool = False, implementation=None, use_magma=None):
    """Eigenvalues and eigenvectors of general square matrices: a list [w, vl?, vr?] of
    complex arrays (see _linalg_eig.py)."""
    from corejax.lax._linalg_eig import eig as _eig
    return _eig(x, compute_left_eigenvectors=compute_left_eigenvectors,
                compute_right_eigenvectors=compute_right_eigenvectors,
                enable_eigvec_derivs=enable_eigvec_derivs, implementation=implementation,
                use_magma=use_magma)


def lu(x):
    """LU decomposition with partial pivoting: `[lu, pivots, permutation]` with
    x[permutation] = L U, L unit lower triangular (below lu's diagonal) and U upper (lu's
    upper triangle); pivots are LAPACK's row swaps, 0-based, int32."""
    return list(lu_p.bind(x))


def lu_pivots_to_permutation(pivots, permutation_size: int):
    """The permutation (int32, length `permutation_size`) that LAPACK-style row swaps
    `pivots` (row i swapped with row pivots[i], in order) apply."""
    return lu_pivots_to_permutation_p.bind(pivots, permutation_size=int(permutation_size))


def qr(x, *, pivoting: bool = False, full_matrices: bool = True, use_magma=None):
    """QR decomposition `(q, r)` (`(q, r, p)` with column `pivoting`, x[:, p] = q r);
    `full_matrices=False` gives the reduced factors."""
    outs = qr_p.bind(x, pivoting=bool(pivoting), full_matrices=bool(full_matrices),
                     use_magma=use_magma)
    return tuple(outs)


def svd(x, *, full_matrices: bool = True, compute_uv: bool = True, subset_by_index=None,
        algorithm=None):
    """Singular value decomposition: `(u, s, vh)` with x = u diag(s) vh, s descending, or just
    `s` without `compute_uv`."""
    subset = None if subset_by_index is None else tuple(int(i) for i in subset_by_index)
    if algorithm is not None and not isinstance(algorithm, SvdAlgorithm):
        # (JAX raises NotImplementedError here too: no CPU algorithm by that name)
        raise NotImplementedError(f"svd: algorithm must be a lax.linalg.SvdAlgorithm (the CPU "
                                  f"has DEFAULT, QR and DIVIDE_AND_CONQUER), got {algorithm!r}.")
    outs = svd_p.bind(x, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv),
                      subset_by_index=subset, algorithm=algorithm)
    if not compute_uv:
        return outs[0]
    s, u, vt = outs
    return u, s, vt


def triangular_solve(a, b, *, left_side: bool = False, lower: bool = False,
                     transpose_a: bool = False, conjugate_a: bool = False,
                     unit_diagonal: bool = False):
    """Solves op(a) x = b (`left_side`) or x op(a) = b for x, with a triangular (`lower` or
    upper; only that triangle is read, and its diagonal is taken as ones with
    `unit_diagonal`) and op(a) = a^T when `transpose_a`. A b with one dimension fewer than a
    is a single vector."""
    lax = _lax()
    a_aval, b_aval = get_aval(a), get_aval(b)
    vector = b_aval.ndim == a_aval.ndim - 1 and a_aval.ndim >= 2
    if vector:
        b = lax.expand_dims(b, (b_aval.ndim if left_side else b_aval.ndim - 1,))
    out = triangular_solve_p.bind(a, b, left_side=bool(left_side), lower=bool(lower),
                                  transpose_a=bool(transpose_a),
                                  conjugate_a=bool(conjugate_a),
                                  unit_diagonal=bool(unit_diagonal))
    if vector:
        out = lax.squeeze(out, (b_aval.ndim if left_side else b_aval.ndim - 1,))
    return out


def tridiagonal_solve(dl, d, du, b, *, perturb_singular: bool = False):
    """Solves A x = b for the tridiagonal A with subdiagonal dl (dl[0] unused), diagonal d and
    superdiagonal du (du[-1] unused); b is (..., n, k). A singular A gives NaN unless
    `perturb_singular`, which replaces zero pivots of its LU factorization by eps * max|U|."""
    return tridiagonal_solve_p.bind(dl, d, du, b, perturb_singular=bool(perturb_singular))


def householder_product(a, taus):
    """The first n columns of the product of Householder reflectors I - taus[i] v_i v_i^T,
    v_i being column i of `a` below its diagonal with a unit diagonal (LAPACK's orgqr)."""
    return householder_product_p.bind(a, taus)


def hessenberg(a):
    """Reduction to upper Hessenberg form (LAPACK's gehrd): `[a_out, taus]`, the Hessenberg
    matrix on and above the first subdiagonal of a_out, Householder vectors below it."""
    return list(hessenberg_p.bind(a))


def tridiagonal(a, *, lower: bool = True):
    """Reduction of a symmetric matrix to tridiagonal form (LAPACK's sytrd):
    `[a_out, d, e, taus]` with diagonal d, off-diagonal e and the reflectors in a_out."""
    return list(tridiagonal_p.bind(a, lower=bool(lower)))


def schur(x, *, compute_schur_vectors: bool = True, sort_eig_vals: bool = False,
          select_callable=None):
    """Real Schur decomposition x = Z T Z^T: `[T, Z]` (`[T]` without the vectors), T quasi
    upper triangular (2x2 blocks for complex conjugate eigenvalue pairs)."""
    return list(schur_p.bind(x, compute_schur_vectors=bool(compute_schur_vectors),
                             sort_eig_vals=bool(sort_eig_vals),
                             select_callable=select_callable))


def symmetric_product(a_matrix, c_matrix, *, alpha: float = 1.0, beta: float = 0.0,
                      symmetrize_output: bool = False):
    """alpha * a a^T + beta * c; `symmetrize_output` mirrors the lower triangle upwards."""
    lax = _lax()
    aval = get_aval(a_matrix)
    product = _util.matmul(a_matrix, _util.mT(a_matrix))
    shape, dt = get_aval(product).shape, aval.dtype
    out = lax.add(lax.mul(lax.full(shape, alpha, dt), product),
                  lax.mul(lax.full(shape, beta, dt), lax.convert_element_type(c_matrix, dt)))
    if symmetrize_output:
        out = lax.add(_util.tril(out), _util.mT(_util.tril(out, -1)))
    return out


def _cholesky_update_impl(r, w):
    """Givens rotations fold w into the upper-triangular r row by row (vectorized over the
    batch): r'^T r' = r^T r + w w^T."""
    r, w = np.array(r), np.array(w)
    n = r.shape[-1]
    with np.errstate(all="ignore"):
        for k in range(n):
            rkk, wk = r[..., k, k], w[..., k]
            radius = np.hypot(rkk, wk)
            c, s = radius / rkk, wk / rkk
            r[..., k, k] = radius
            r[..., k, k + 1:] = (r[..., k, k + 1:] + s[..., None] * w[..., k + 1:]) / c[..., None]
            w[..., k + 1:] = c[..., None] * w[..., k + 1:] - s[..., None] * r[..., k, k + 1:]
    return r


def _cholesky_update_abstract(r, w):
    _util.check_rank("cholesky_update", 0, r, 2)
    _util.check_rank("cholesky_update", 1, w, 1)
    _util.check_float("cholesky_update", 0, r)
    _util.check_float("cholesky_update", 1, w)
    _util.check_square("cholesky_update", r, "The first input")
    _util.check_batch("cholesky_update", [r, w], [2, 1])
    if w.shape[-1] != r.shape[-1] or r.dtype != w.dtype:
        raise TypeError(f"cholesky_update requires a vector of the matrix's size and dtype, got "
                        f"{r.str_short()} and {w.str_short()}.")
    return ShapedArray(r.shape, r.dtype)


cholesky_update_p = _util.define("cholesky_update", _cholesky_update_impl,
                                 _cholesky_update_abstract)
_util.no_derivative(cholesky_update_p)


def cholesky_update(r_matrix, w_vector):
    """The upper Cholesky factor of r^T r + w w^T, given the upper factor r (a rank-one
    update by Givens rotations)."""
    return cholesky_update_p.bind(r_matrix, w_vector)


def ormqr(a, taus, c, *, left: bool = True, transpose: bool = False):
    """Multiplies c by the orthogonal Q of Householder reflectors (a, taus) as geqrf leaves
    them: Q c, Q^T c (`transpose`), or c Q, c Q^T with `left=False`."""
    m = get_aval(a).shape[-2]
    q = householder_product(_util.resize(a, m, m), taus)
    if transpose:
        q = _util.mT(q)
    return _util.matmul(q, c) if left else _util.matmul(c, q)
