"""Spectral and Hessenberg-type decompositions: eigh, svd, hessenberg, tridiagonal, schur,
each a primitive followed by all of its rules (see _linalg_factor.py for the conventions).

eigh and svd run NumPy's batched LAPACK gufuncs (syevd, gesdd); their derivative rules are
the classical perturbation formulas. hessenberg (gehrd), tridiagonal (sytrd) and schur (gees)
call SciPy's wrappers per matrix; JAX defines no derivative for them, and neither does this.
"""
from __future__ import annotations

import enum

import numpy as np
import scipy.linalg
import scipy.linalg.lapack

from corejax.core import ShapedArray, get_aval
from corejax.transforms import ad
from corejax.transforms.ad import Zero
from corejax.lax._linalg_util import (
    check_batch, check_float, check_rank, check_square, define, batch_loop, nan_on_failure,
    no_derivative, mT, matmul, diag_mask, where_mask, diagonal, scale_columns, scale_rows,
    symmetrize, zeros_tangent)
from corejax.lax._factories import shape_str

__all__ = ["SvdAlgorithm", "EighImplementation", "EigImplementation"]


def _lax():
    from corejax import lax
    return lax


class SvdAlgorithm(enum.Enum):
    """Which SVD algorithm to use (on the CPU: DEFAULT and DIVIDE_AND_CONQUER are LAPACK's
    gesdd, QR is gesvd; JACOBI and POLAR exist on accelerators only)."""
    DEFAULT = "default"
    QR = "QR"
    JACOBI = "Jacobi"
    POLAR = "polar"
    DIVIDE_AND_CONQUER = "divide_and_conquer"


class EighImplementation(enum.Enum):
    QR = "qr"
    JACOBI = "jacobi"
    QDWH = "qdwh"


class EigImplementation(enum.Enum):
    CUSOLVER = "cusolver"
    MAGMA = "magma"
    LAPACK = "lapack"


def _check_subset(name, subset_by_index, size):
    if subset_by_index is None:
        return None
    lo, hi = (int(i) for i in subset_by_index)
    if not 0 <= lo < hi <= size:
        raise ValueError(f"{name}: subset_by_index={tuple(subset_by_index)} must be a range "
                         f"(start, end) with 0 <= start < end <= {size}.")
    return lo, hi


# --- eigh ------------------------------------------------------------------------------------

def _eigh_impl(x, *, lower, sort_eigenvalues, subset_by_index, algorithm):
    n = x.shape[-1]
    if x.size == 0:
        w, v = np.zeros(x.shape[:-1], x.dtype), np.zeros(x.shape, x.dtype)
    else:
        with np.errstate(all="ignore"):
            w, v = nan_on_failure(lambda a: tuple(np.linalg.eigh(a, UPLO="L" if lower else "U")),
                                  x)
    lo, hi = subset_by_index or (0, n)      # LAPACK's order is already ascending
    return [v[..., lo:hi], w[..., lo:hi]]


def _eigh_abstract(x, *, lower, sort_eigenvalues, subset_by_index, algorithm):
    check_rank("eigh", 0, x, 2)
    if x.shape[-1] != x.shape[-2]:
        raise ValueError(f"Argument to symmetric eigendecomposition must have shape [..., n, n], "
                         f"got shape {shape_str(x.shape)}")
    check_float("eigh", 0, x)
    if algorithm == EighImplementation.JACOBI:
        raise NotImplementedError("Jacobi implementation is not supported on CPU")
    if algorithm == EighImplementation.QDWH:
        raise NotImplementedError("QDWH implementation is only supported on TPU")
    n = x.shape[-1]
    lo, hi = _check_subset("eigh", subset_by_index, n) or (0, n)
    return [ShapedArray(x.shape[:-1] + (hi - lo,), x.dtype),
            ShapedArray(x.shape[:-2] + (hi - lo,), x.dtype)]


eigh_p = define("eigh", _eigh_impl, _eigh_abstract, multiple_results=True)


def _inverse_gaps(w):
    """F[..., i, j] = 1 / (w[j] - w[i]) off the diagonal, 0 on it."""
    lax = _lax()
    aval = get_aval(w)
    shape = aval.shape + aval.shape[-1:]
    nd = len(shape)
    cols = lax.broadcast_in_dim(w, shape, tuple(range(nd - 2)) + (nd - 1,))
    rows = lax.broadcast_in_dim(w, shape, tuple(range(nd - 1)))
    diag = diag_mask(shape)
    gaps = lax.select_n(diag, lax.sub(cols, rows), lax.full(shape, 1, aval.dtype))
    return where_mask(lax.bitwise_not(diag), lax.div(lax.full(shape, 1, aval.dtype), gaps))


def _eigh_jvp(primals, tangents, *, lower, sort_eigenvalues, subset_by_index, algorithm):
    """With V^T A' V = M: w' = diag(M), V' = V (F o M), F_ij = 1/(w_j - w_i). As in JAX, the
    tangent is used as given (unsymmetrized) and the primal decomposes (A + A^T) / 2."""
    (x,), (x_dot,) = primals, tangents
    params = dict(lower=lower, sort_eigenvalues=sort_eigenvalues,
                  subset_by_index=subset_by_index, algorithm=algorithm)
    if type(x_dot) is Zero:
        v, w = outs = eigh_p.bind(x, **params)
        return outs, [zeros_tangent(v), zeros_tangent(w)]
    v, w = outs = eigh_p.bind(symmetrize(x), **params)
    if subset_by_index is not None and tuple(subset_by_index) != (0, get_aval(x).shape[-1]):
        raise NotImplementedError("eigh's derivative needs every eigenpair: differentiate "
                                  "without subset_by_index and slice the result.")
    lax = _lax()
    m = matmul(mT(v), matmul(x_dot, v))
    return outs, [matmul(v, lax.mul(_inverse_gaps(w), m)), diagonal(m)]


ad.primitive_jvps[eigh_p] = _eigh_jvp


# --- svd -------------------------------------------------------------------------------------

def _svd_one_gesvd(a, full_matrices, compute_uv):
    out = scipy.linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv,
                           check_finite=False, lapack_driver="gesvd")
    return (out,) if not compute_uv else (out[1], out[0], out[2])


def _svd_impl(x, *, full_matrices, compute_uv, subset_by_index, algorithm):
    m, n = x.shape[-2:]
    k = min(m, n)
    batch = x.shape[:-2]
    if x.size == 0:
        s = np.zeros(batch + (k,), x.dtype)
        ucols, vrows = (m, n) if full_matrices else (k, k)
        u = np.broadcast_to(np.eye(m, ucols, dtype=x.dtype), batch + (m, ucols))
        vt = np.broadcast_to(np.eye(vrows, n, dtype=x.dtype), batch + (vrows, n))
        outs = [s, u, vt]
    else:
        with np.errstate(all="ignore"):
            if algorithm == SvdAlgorithm.QR:
                outs = list(batch_loop(lambda a: nan_on_failure(
                    lambda m: _svd_one_gesvd(m, full_matrices, compute_uv), a), x,
                    core_ndims=(2,)))
            elif compute_uv:
                u, s, vt = nan_on_failure(
                    lambda a: tuple(np.linalg.svd(a, full_matrices=full_matrices)), x)
                outs = [s, u, vt]
            else:
                outs = [nan_on_failure(lambda a: np.linalg.svd(a, compute_uv=False), x)]
    if subset_by_index is not None:
        lo, hi = subset_by_index
        outs = [outs[0][..., lo:hi]] + ([outs[1][..., lo:hi], outs[2][..., lo:hi, :]]
                                        if compute_uv else [])
    return outs if compute_uv else outs[:1]


def _svd_abstract(x, *, full_matrices, compute_uv, subset_by_index, algorithm):
    check_rank("svd", 0, x, 2)
    check_float("svd", 0, x)
    if algorithm in (SvdAlgorithm.JACOBI, SvdAlgorithm.POLAR):
        raise NotImplementedError("The SVD Jacobi and Polar algorithms are not implemented on "
                                  "CPU.")
    m, n = x.shape[-2:]
    k = min(m, n)
    batch = x.shape[:-2]
    if subset_by_index is not None:
        if full_matrices:
            raise ValueError("full_matrices and subset_by_index cannot both be set")
        lo, hi = _check_subset("svd", subset_by_index, k)
        k = hi - lo
    s = ShapedArray(batch + (k,), x.dtype)
    if not compute_uv:
        return [s]
    ucols, vrows = (m, n) if full_matrices else (k, k)
    return [s, ShapedArray(batch + (m, ucols), x.dtype), ShapedArray(batch + (vrows, n), x.dtype)]


svd_p = define("svd", _svd_impl, _svd_abstract, multiple_results=True)


def _svd_jvp(primals, tangents, *, full_matrices, compute_uv, subset_by_index, algorithm):
    """A = U S V^T (reduced), dP = U^T A' V: S' = diag(dP),
    U' = U (F o (dP S + S dP^T)) + (I - U U^T) A' V S^-1,
    V' = V (F o (S dP + dP^T S)) + (I - V V^T) A'^T U S^-1, F_ij = 1/(s_j^2 - s_i^2)."""
    (x,), (x_dot,) = primals, tangents
    params = dict(full_matrices=full_matrices, compute_uv=compute_uv,
                  subset_by_index=subset_by_index, algorithm=algorithm)
    outs = svd_p.bind(x, **params)
    if type(x_dot) is Zero:
        return outs, [zeros_tangent(o) for o in outs]
    m, n = get_aval(x).shape[-2:]
    if compute_uv and full_matrices and m != n:
        raise NotImplementedError("Singular value decomposition JVP not implemented for full "
                                  "matrices")
    if subset_by_index is not None and tuple(subset_by_index) != (0, min(m, n)):
        raise NotImplementedError("svd's derivative needs every singular triplet: "
                                  "differentiate without subset_by_index and slice the result.")
    lax = _lax()
    s, u, vt = svd_p.bind(x, full_matrices=False, compute_uv=True, subset_by_index=None,
                          algorithm=algorithm)
    v = mT(vt)
    a_v = matmul(x_dot, v)
    dp = matmul(mT(u), a_v)
    s_dot = diagonal(dp)
    if not compute_uv:
        return outs, [s_dot]
    gaps = _inverse_gaps(lax.mul(s, s))
    dpt = mT(dp)
    u_dot = matmul(u, lax.mul(gaps, lax.add(scale_columns(dp, s), scale_rows(dpt, s))))
    v_dot = matmul(v, lax.mul(gaps, lax.add(scale_rows(dp, s), scale_columns(dpt, s))))
    inv_s = lax.div(lax.full(get_aval(s).shape, 1, get_aval(s).dtype), s)
    if m > n:     # the part of A' outside U's column space
        u_dot = lax.add(u_dot, scale_columns(lax.sub(a_v, matmul(u, dp)), inv_s))
    if n > m:
        at_u = matmul(mT(x_dot), u)
        v_dot = lax.add(v_dot, scale_columns(lax.sub(at_u, matmul(v, mT(dp))), inv_s))
    return outs, [s_dot, u_dot, mT(v_dot)]


ad.primitive_jvps[svd_p] = _svd_jvp


# --- hessenberg, tridiagonal, schur ----------------------------------------------------------

def _square_float(name, x):
    check_rank(name, 0, x, 2)
    check_float(name, 0, x)
    check_square(name, x, "The input")


def _hessenberg_impl(a):
    n = a.shape[-1]
    if a.size == 0 or n < 2:
        return [np.array(a), np.zeros(a.shape[:-2] + (max(n - 1, 0),), a.dtype)]
    gehrd = scipy.linalg.lapack.get_lapack_funcs("gehrd", (a,))
    return list(batch_loop(lambda x: gehrd(x)[:2], a, core_ndims=(2,)))


def _hessenberg_abstract(a):
    _square_float("hessenberg", a)
    n = a.shape[-1]
    return [ShapedArray(a.shape, a.dtype), ShapedArray(a.shape[:-2] + (max(n - 1, 0),), a.dtype)]


hessenberg_p = define("hessenberg", _hessenberg_impl, _hessenberg_abstract, multiple_results=True)
no_derivative(hessenberg_p)


def _tridiagonal_impl(a, *, lower):
    n = a.shape[-1]
    batch = a.shape[:-2]
    if a.size == 0 or n < 2:
        d = np.diagonal(a, axis1=-2, axis2=-1).copy()
        empty = np.zeros(batch + (max(n - 1, 0),), a.dtype)
        return [np.array(a), d, empty, empty]
    sytrd = scipy.linalg.lapack.get_lapack_funcs("sytrd", (a,))
    return list(batch_loop(lambda x: sytrd(x, lower=int(lower))[:4], a, core_ndims=(2,)))


def _tridiagonal_abstract(a, *, lower):
    _square_float("tridiagonal", a)
    n = a.shape[-1]
    batch = a.shape[:-2]
    off = ShapedArray(batch + (max(n - 1, 0),), a.dtype)
    return [ShapedArray(a.shape, a.dtype), ShapedArray(batch + (n,), a.dtype), off, off]


tridiagonal_p = define("tridiagonal", _tridiagonal_impl, _tridiagonal_abstract,
                       multiple_results=True)
no_derivative(tridiagonal_p)


def _schur_impl(x, *, compute_schur_vectors, sort_eig_vals, select_callable):
    if x.size == 0:
        outs = [np.array(x), np.broadcast_to(np.eye(x.shape[-1], dtype=x.dtype), x.shape)]
    else:
        output = "complex" if x.dtype.kind == "c" else "real"
        outs = list(batch_loop(lambda a: nan_on_failure(lambda m: tuple(
            np.asarray(o, x.dtype) for o in scipy.linalg.schur(
                m, output=output, check_finite=False)), a), x, core_ndims=(2,)))
    return outs if compute_schur_vectors else outs[:1]


def _schur_abstract(x, *, compute_schur_vectors, sort_eig_vals, select_callable):
    if x.dtype.kind == "c":  # the complex Schur form (triangular T, unitary Z)
        check_rank("schur", 0, x, 2)
        check_square("schur", x, "The input")
    else:
        _square_float("schur", x)
    if sort_eig_vals:
        raise NotImplementedError("The sort feature of LAPACK's gees routine is not "
                                  "implemented.")
    return [ShapedArray(x.shape, x.dtype)] * (2 if compute_schur_vectors else 1)


schur_p = define("schur", _schur_impl, _schur_abstract, multiple_results=True)
no_derivative(schur_p)


# --- sylvester (private: behind scipy.linalg.solve_sylvester) --------------------------------

def _sylvester_one(a, b, c, tol):
    """Bartels-Stewart (SciPy's real Schur forms and trsyl); NaN when an eigenvalue of a and
    one of b sum to within tol of zero, the equation then having no unique solution."""
    sums = np.linalg.eigvals(a)[:, None] + np.linalg.eigvals(b)[None, :]
    if sums.size and np.min(np.abs(sums)) < tol:
        return np.full(c.shape, np.nan, c.dtype)
    try:
        return scipy.linalg.solve_sylvester(a, b, c).astype(c.dtype)
    except (np.linalg.LinAlgError, ValueError):
        return np.full(c.shape, np.nan, c.dtype)


def _sylvester_impl(a, b, c, *, tol):
    if c.size == 0:
        return np.zeros(c.shape, c.dtype)
    with np.errstate(all="ignore"):
        return batch_loop(lambda x, y, z: _sylvester_one(x, y, z, tol), a, b, c,
                          core_ndims=(2, 2, 2))


def _sylvester_abstract(a, b, c, *, tol):
    for i, x in enumerate((a, b, c)):
        check_rank("solve_sylvester", i, x, 2)
        check_float("solve_sylvester", i, x)
    check_square("solve_sylvester", a, "The first input")
    check_square("solve_sylvester", b, "The second input")
    check_batch("solve_sylvester", [a, b, c], [2, 2, 2])
    if c.shape[-2:] != (a.shape[-1], b.shape[-1]) or len({a.dtype, b.dtype, c.dtype}) != 1:
        raise ValueError(f"solve_sylvester: C must be (m, n) = ({a.shape[-1]}, {b.shape[-1]}) "
                         f"for A {shape_str(a.shape)} and B {shape_str(b.shape)}, with one "
                         f"dtype; got C {c.str_short()}.")
    return ShapedArray(c.shape, c.dtype)


sylvester_p = define("sylvester", _sylvester_impl, _sylvester_abstract)


def _sylvester_jvp(primals, tangents, *, tol):
    """A X + X B = C gives A X' + X' B = C' - A' X - X B'."""
    a, b, c = primals
    x = sylvester_p.bind(a, b, c, tol=tol)
    if all(type(t) is Zero for t in tangents):
        return x, zeros_tangent(x)
    lax = _lax()
    a_dot, b_dot, c_dot = (ad.instantiate_zeros(t) for t in tangents)
    rhs = lax.sub(lax.sub(c_dot, matmul(a_dot, x)), matmul(x, b_dot))
    return x, sylvester_p.bind(a, b, rhs, tol=tol)


def _sylvester_transpose(ct, a, b, c, *, tol):
    if ad.is_undefined_primal(a) or ad.is_undefined_primal(b):
        raise ValueError("The Sylvester solve is linear in its right-hand side only.")
    if type(ct) is Zero:
        return [None, None, None]
    return [None, None, sylvester_p.bind(mT(a), mT(b), ct, tol=tol)]


ad.primitive_jvps[sylvester_p] = _sylvester_jvp
ad.primitive_transposes[sylvester_p] = _sylvester_transpose
