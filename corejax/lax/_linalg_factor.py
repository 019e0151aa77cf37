"""Factorizations and triangular / tridiagonal solves: cholesky, triangular_solve, lu,
lu_pivots_to_permutation, qr, householder_product and tridiagonal_solve, each a primitive
followed by all of its rules.

Every primitive maps over the leading (batch) dimensions of its operands. Its impl calls
LAPACK: NumPy's batched gufuncs where NumPy has the routine (cholesky, qr), else SciPy's
per-matrix wrappers (getrf, trsm, orgqr, gtsv) in a loop over the batch. None has a compiled
lowering: under jit each runs as a host step. The derivative rules are JAX's mathematical
definitions, written with lax primitives (and these solves), so they differentiate again.
"""
from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.linalg.blas
import scipy.linalg.lapack

from corejax.core import ShapedArray, get_aval
from corejax.transforms import ad, batching
from corejax.transforms.ad import Zero, is_undefined_primal
from corejax.lax._factories import shape_str
from corejax.lax._linalg_util import (
    check_batch, check_float, check_rank, check_square, define, batch_loop, no_derivative,
    mT, matmul, tril, triu, eye, diag_mask, where_mask, permute_rows, permute_columns, resize,
    zeros_tangent, scale_rows)

__all__ = []


def _lax():
    from corejax import lax
    return lax


# --- cholesky --------------------------------------------------------------------------------

def _cholesky_one(a):
    try:
        return np.linalg.cholesky(a)
    except np.linalg.LinAlgError:
        # Not positive definite: NaN factor (as JAX's LAPACK call reports it; NaN in both parts
        # of complex entries), zero above.
        nan = complex(np.nan, np.nan) if a.dtype.kind == "c" else np.nan
        return np.tril(np.full_like(a, nan))


def _cholesky_impl(x):
    if x.size == 0:
        return np.zeros_like(x)
    with np.errstate(all="ignore"):
        try:
            return np.linalg.cholesky(x)
        except np.linalg.LinAlgError:
            # One matrix of the batch failed: factor them one by one, NaN for the failures.
            return batch_loop(_cholesky_one, x, core_ndims=(2,))


def _cholesky_abstract(x):
    check_rank("cholesky", 0, x, 2)
    check_square("cholesky", x)
    check_float("cholesky", 0, x, complex_ok=True)
    return ShapedArray(x.shape, x.dtype)


cholesky_p = define("cholesky", _cholesky_impl, _cholesky_abstract)


def _cholesky_jvp(primals, tangents):
    """L' = L Phi(L^-1 A' L^-H), where Phi keeps the strict lower triangle and half the
    diagonal (the tangent is used as given: symmetrizing is the caller's choice; for complex
    input the diagonal is halved as it is, imaginary part included, as JAX does)."""
    (x,), (x_dot,) = primals, tangents
    lower = cholesky_p.bind(x)
    if type(x_dot) is Zero:
        return lower, zeros_tangent(lower)
    lax = _lax()
    tmp = triangular_solve_p.bind(lower, x_dot, **_params(left_side=True, lower=True))
    inner = triangular_solve_p.bind(lower, tmp, **_params(left_side=False, lower=True,
                                                          transpose_a=True, conjugate_a=True))
    shape = get_aval(inner).shape
    half = lax.full(shape, 0.5, get_aval(inner).dtype)
    phi = lax.add(tril(inner, -1), where_mask(diag_mask(shape), lax.mul(inner, half)))
    return lower, matmul(lower, phi)


ad.primitive_jvps[cholesky_p] = _cholesky_jvp


# --- triangular_solve ------------------------------------------------------------------------

def _params(left_side=False, lower=False, transpose_a=False, conjugate_a=False,
            unit_diagonal=False):
    return dict(left_side=left_side, lower=lower, transpose_a=transpose_a,
                conjugate_a=conjugate_a, unit_diagonal=unit_diagonal)


def _trsm(a, b, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    """BLAS trsm solving op(a) x = b (or x op(a) = b): op is a, a^T, a^H (trsm's trans_a 0, 1,
    2) or conj(a), which trsm lacks: that one solves with the conjugated matrix."""
    trans = int(transpose_a)
    if conjugate_a and a.dtype.kind == "c":
        if transpose_a:
            trans = 2
        else:
            a = np.conj(a)
    trsm = scipy.linalg.blas.get_blas_funcs("trsm", (a, b))
    return trsm(1.0, a, b, side=0 if left_side else 1, lower=int(lower), trans_a=trans,
                diag=int(unit_diagonal))


def _triangular_solve_impl(a, b, *, left_side, lower, transpose_a, conjugate_a,
                           unit_diagonal):
    if a.size == 0 or b.size == 0:
        return np.zeros(b.shape, b.dtype)
    with np.errstate(all="ignore"):
        return batch_loop(lambda x, y: _trsm(x, y, left_side, lower, transpose_a, conjugate_a,
                                             unit_diagonal), a, b, core_ndims=(2, 2))


def _triangular_solve_abstract(a, b, *, left_side, lower, transpose_a, conjugate_a,
                               unit_diagonal):
    check_rank("triangular_solve", 0, a, 2)
    check_rank("triangular_solve", 1, b, 2)
    check_float("triangular_solve", 0, a, complex_ok=True)
    check_float("triangular_solve", 1, b, complex_ok=True)
    if a.dtype != b.dtype:
        raise TypeError(f"lax.triangular_solve requires arguments to have the same dtypes, got "
                        f"{a.dtype.name}, {b.dtype.name}.")
    check_square("triangular_solve", a, "The first input")
    check_batch("triangular_solve", [a, b], [2, 2])
    common = b.shape[-2] if left_side else b.shape[-1]
    if a.shape[-1] != common:
        raise ValueError(f"Incompatible shapes for arguments to triangular_solve: "
                         f"{shape_str(a.shape)} and {shape_str(b.shape)}.")
    return ShapedArray(b.shape, b.dtype)


triangular_solve_p = define("triangular_solve", _triangular_solve_impl,
                            _triangular_solve_abstract, batch=False)


def _triangular_solve_jvp_a(a_dot, out, a, b, *, left_side, lower, transpose_a, conjugate_a,
                            unit_diagonal):
    """op(A) X = B gives X' = -op(A)^-1 op(A') X (and X' = -X op(A') op(A)^-1 on the right),
    where A' counts only in the triangle the solve reads (op: transpose and / or conjugate)."""
    params = _params(left_side, lower, transpose_a, conjugate_a, unit_diagonal)
    k = -1 if unit_diagonal else 0
    a_dot = tril(a_dot, k) if lower else triu(a_dot, -k)
    if conjugate_a and get_aval(a_dot).dtype.kind == "c":
        a_dot = _lax().conj(a_dot)
    op = mT(a_dot) if transpose_a else a_dot
    rhs = matmul(op, out) if left_side else matmul(out, op)
    return _lax().neg(triangular_solve_p.bind(a, rhs, **params))


def _triangular_solve_jvp_b(b_dot, out, a, b, **params):
    return triangular_solve_p.bind(a, b_dot, **params)


def _triangular_solve_transpose(ct, a, b, *, left_side, lower, transpose_a, conjugate_a,
                                unit_diagonal):
    if is_undefined_primal(a):
        raise ValueError("triangular_solve is linear in its right-hand side only: cannot "
                         "transpose with respect to the matrix.")
    if type(ct) is Zero:
        return [None, None]
    params = _params(left_side, lower, not transpose_a, conjugate_a, unit_diagonal)
    return [None, triangular_solve_p.bind(a, ct, **params)]


def _triangular_solve_batch(vals, dims, **params):
    a, b = vals
    da, db = dims
    lax = _lax()
    if da is None:
        # One matrix for the whole batch: the batch joins b's columns (left) or rows (right),
        # so a single solve covers it.
        b_shape = get_aval(b).shape
        nd = len(b_shape)
        size = b_shape[db]
        if params["left_side"]:
            b = batching.moveaxis(b, db, nd - 2)
            shape = get_aval(b).shape
            out = triangular_solve_p.bind(a, lax.reshape(b, shape[:-2] + (size * shape[-1],)),
                                          **params)
            return lax.reshape(out, shape), nd - 2
        b = batching.moveaxis(b, db, nd - 3)
        shape = get_aval(b).shape
        out = triangular_solve_p.bind(
            a, lax.reshape(b, shape[:-3] + (size * shape[-2], shape[-1])), **params)
        return lax.reshape(out, shape), nd - 3
    size = get_aval(a).shape[da]
    a = batching.bdim_at_front(a, da, size)
    b = batching.bdim_at_front(b, db, size)
    return triangular_solve_p.bind(a, b, **params), 0


ad.defjvp(triangular_solve_p, _triangular_solve_jvp_a, _triangular_solve_jvp_b)
ad.primitive_transposes[triangular_solve_p] = _triangular_solve_transpose
batching.primitive_batchers[triangular_solve_p] = _triangular_solve_batch


# --- lu_pivots_to_permutation ----------------------------------------------------------------

def _pivots_to_permutation(pivots, size):
    batch, k = pivots.shape[:-1], pivots.shape[-1]
    perm = np.array(np.broadcast_to(np.arange(size, dtype=np.int32), batch + (size,)))
    if perm.size == 0 or k == 0:
        return perm
    flat, piv = perm.reshape(-1, size), pivots.reshape(-1, k)
    rows = np.arange(flat.shape[0])
    for i in range(k):
        # Row i swaps with row pivots[i]; an out-of-range pivot reads the nearest row and
        # writes nowhere (the clamped gather / dropped scatter of JAX's definition).
        j = piv[:, i]
        old_i = flat[rows, i].copy()
        flat[rows, i] = flat[rows, np.clip(j, 0, size - 1)]
        ok = (j >= 0) & (j < size)
        flat[rows[ok], j[ok]] = old_i[ok]
    return perm


def _lu_pivots_to_permutation_abstract(pivots, *, permutation_size):
    check_rank("lu_pivots_to_permutation", 0, pivots, 1)
    if pivots.dtype != np.int32:
        raise TypeError(f"lu_pivots_to_permutation does not accept dtype {pivots.dtype.name} at "
                        "position 0. Accepted dtypes at position 0 are subtypes of int32.")
    if permutation_size < pivots.shape[-1]:
        raise ValueError(f"Output permutation size {permutation_size} has to exceed the trailing "
                         f"dimension of the pivots. Got pivots size {pivots.shape[-1]}")
    return ShapedArray(pivots.shape[:-1] + (permutation_size,), np.int32)


lu_pivots_to_permutation_p = define(
    "lu_pivots_to_permutation",
    lambda pivots, *, permutation_size: _pivots_to_permutation(pivots, permutation_size),
    _lu_pivots_to_permutation_abstract)
ad.defjvp_zero(lu_pivots_to_permutation_p)


# --- lu --------------------------------------------------------------------------------------

def _lu_impl(x):
    m, n = x.shape[-2:]
    k = min(m, n)
    batch = x.shape[:-2]
    if x.size == 0:
        pivots = np.zeros(batch + (k,), np.int32)
        return [np.array(x), pivots, _pivots_to_permutation(pivots, m)]
    getrf = scipy.linalg.lapack.get_lapack_funcs("getrf", (x,))

    def one(a):
        lu, piv, _ = getrf(a)     # a singular matrix keeps its zero pivot, as in JAX
        return lu, piv.astype(np.int32)

    with np.errstate(all="ignore"):
        lu, pivots = batch_loop(one, x, core_ndims=(2,))
    return [lu, pivots, _pivots_to_permutation(pivots, m)]


def _lu_abstract(x):
    check_rank("lu", 0, x, 2)
    check_float("lu", 0, x)
    m, n = x.shape[-2:]
    batch = x.shape[:-2]
    return [ShapedArray(x.shape, x.dtype), ShapedArray(batch + (min(m, n),), np.int32),
            ShapedArray(batch + (m,), np.int32)]


lu_p = define("lu", _lu_impl, _lu_abstract, multiple_results=True)


def _unit_lower_square(lu, m):
    """L (m x m) of P A = L U, completed with the identity where A is wide... or tall."""
    lax = _lax()
    return lax.add(tril(resize(lu, m, m), -1),
                   eye(get_aval(lu).shape[:-2] + (m, m), get_aval(lu).dtype))


def _upper_square(lu, m, n):
    """U (n x n) of P A = L U, with an identity block below the rows of a wide A."""
    lax = _lax()
    u = triu(resize(lu, n, n))
    if m >= n:
        return u
    shape = get_aval(u).shape
    rows = lax.broadcasted_iota(np.int32, shape, len(shape) - 2)
    extra = lax.bitwise_and(diag_mask(shape), lax.ge(rows, lax.full(shape, m, np.int32)))
    return lax.add(u, lax.convert_element_type(extra, get_aval(u).dtype))


def _lu_jvp(primals, tangents):
    """With L and U squared up by identity blocks, X = L^-1 P A' U^-1 splits into
    L^-1 L' (strictly lower) and U' U^-1 (upper)."""
    (x,), (x_dot,) = primals, tangents
    lu, pivots, perm = outs = lu_p.bind(x)
    zeros = [zeros_tangent(pivots), zeros_tangent(perm)]
    if type(x_dot) is Zero:
        return outs, [zeros_tangent(lu)] + zeros
    lax = _lax()
    m, n = get_aval(x).shape[-2:]
    k = min(m, n)
    l_sq, u_sq = _unit_lower_square(lu, m), _upper_square(lu, m, n)
    permuted = permute_rows(x_dot, perm)
    y = triangular_solve_p.bind(l_sq, permuted, **_params(left_side=True, lower=True,
                                                          unit_diagonal=True))
    inner = triangular_solve_p.bind(u_sq, y, **_params(left_side=False, lower=False))
    l_dot = matmul(l_sq, resize(tril(inner, -1), m, k))
    u_dot = matmul(resize(triu(inner), k, n), u_sq)
    return outs, [lax.add(resize(l_dot, m, n), resize(u_dot, m, n))] + zeros


ad.primitive_jvps[lu_p] = _lu_jvp


# --- qr --------------------------------------------------------------------------------------

def _qr_pivoted_one(a, full_matrices):
    q, r, p = scipy.linalg.qr(a, mode="full" if full_matrices else "economic", pivoting=True,
                              check_finite=False)
    return q, r, p.astype(np.int32)


def _qr_impl(x, *, pivoting, full_matrices, use_magma):
    m, n = x.shape[-2:]
    k = min(m, n)
    batch = x.shape[:-2]
    qcols, rrows = (m, m) if full_matrices else (k, k)
    if x.size == 0:
        q = np.zeros(batch + (m, qcols), x.dtype)
        q[..., np.arange(min(m, qcols)), np.arange(min(m, qcols))] = 1
        out = [q, np.zeros(batch + (rrows, n), x.dtype)]
        return out + [np.broadcast_to(np.arange(n, dtype=np.int32), batch + (n,))] \
            if pivoting else out
    with np.errstate(all="ignore"):
        if pivoting:
            return list(batch_loop(lambda a: _qr_pivoted_one(a, full_matrices), x,
                                   core_ndims=(2,)))
        q, r = np.linalg.qr(x, mode="complete" if full_matrices else "reduced")
    return [q, r]


def _qr_abstract(x, *, pivoting, full_matrices, use_magma):
    check_rank("qr", 0, x, 2)
    check_float("qr", 0, x)
    m, n = x.shape[-2:]
    batch = x.shape[:-2]
    k = m if full_matrices else min(m, n)
    out = [ShapedArray(batch + (m, k), x.dtype), ShapedArray(batch + (k, n), x.dtype)]
    if pivoting:
        out.append(ShapedArray(batch + (n,), np.int32))
    return out


qr_p = define("qr", _qr_impl, _qr_abstract, multiple_results=True)


def _skew_lower(c):
    low = tril(c, -1)
    return _lax().sub(low, mT(low))


def _qr_jvp(primals, tangents, *, pivoting, full_matrices, use_magma):
    """With C = Q^T A' R^-1 and Omega its strictly-lower part minus its transpose:
    Q' = Q Omega + (I - Q Q^T) A' R^-1 and R' = (C - Omega) R (tall or square A); a wide A
    factors its leading square block the same way and R' = Q^T A' - Omega R. The extra
    columns of a tall A's full Q follow its Householder construction (_householder_q_dot)."""
    (x,), (x_dot,) = primals, tangents
    outs = qr_p.bind(x, pivoting=pivoting, full_matrices=full_matrices, use_magma=use_magma)
    q, r = outs[:2]
    extra = [zeros_tangent(outs[2])] if pivoting else []
    if type(x_dot) is Zero:
        return outs, [zeros_tangent(q), zeros_tangent(r)] + extra
    lax = _lax()
    m, n = get_aval(x).shape[-2:]
    if pivoting:   # A P = Q R: the tangent's columns move with A's
        x_dot = permute_columns(x_dot, outs[2])
    solve_r = _params(left_side=False, lower=False)
    if m >= n:
        q1, r1 = resize(q, m, n), resize(r, n, n)
        dx_rinv = triangular_solve_p.bind(r1, x_dot, **solve_r)
        c = matmul(mT(q1), dx_rinv)
        omega = _skew_lower(c)
        q1_dot = lax.add(matmul(q1, lax.sub(omega, c)), dx_rinv)
        r_dot = resize(matmul(lax.sub(c, omega), r1), get_aval(r).shape[-2], n)
        q_dot = q1_dot if get_aval(q).shape[-1] == n else _householder_q_dot(q, q1_dot, n)
        return outs, [q_dot, r_dot] + extra
    dx_rinv = triangular_solve_p.bind(resize(r, m, m), resize(x_dot, m, m), **solve_r)
    omega = _skew_lower(matmul(mT(q), dx_rinv))
    q_dot = matmul(q, omega)
    r_dot = lax.sub(matmul(mT(q), x_dot), matmul(omega, r))
    return outs, [q_dot, r_dot] + extra


def _householder_q_dot(q, q1_dot, n):
    """The tangent of a tall matrix's full Q (m x m) from that of its first n columns.

    LAPACK's Q = I - V T V^T, with V (m x n) unit lower trapezoidal and T upper triangular,
    is a function of its first n columns Q1: V1 U = I - Q11 is an LU factorization without
    pivoting (U = T V1^T; the reflectors' entries are at most 1 in magnitude, so partial
    pivoting picks the same pivots), V2 = -Q21 U^-1 and T = U V1^-T. Differentiating these
    relations gives Q's tangent, the derivative of the completion LAPACK computes."""
    lax = _lax()
    shape = get_aval(q).shape
    m, dtype = shape[-1], get_aval(q).dtype
    batch = shape[:-2]

    def rows(x, lo, hi):
        s = get_aval(x).shape
        return lax.slice(x, (0,) * (len(s) - 2) + (lo, 0), s[:-2] + (hi, s[-1]))

    q1 = resize(q, m, n)
    q11, q21 = rows(q1, 0, n), rows(q1, n, m)
    dq11, dq21 = rows(q1_dot, 0, n), rows(q1_dot, n, m)
    ident = eye(batch + (n, n), dtype)
    lu = lu_p.bind(lax.sub(ident, q11))[0]
    v1, u = lax.add(tril(lu, -1), ident), triu(lu)
    lower_unit = _params(left_side=True, lower=True, unit_diagonal=True)
    right_upper = _params(left_side=False, lower=False)
    v2 = triangular_solve_p.bind(u, lax.neg(q21), **right_upper)
    t = triangular_solve_p.bind(v1, u, **_params(left_side=False, lower=True, transpose_a=True,
                                                unit_diagonal=True))
    inner = triangular_solve_p.bind(
        u, triangular_solve_p.bind(v1, lax.neg(dq11), **lower_unit), **right_upper)
    dv1 = matmul(v1, tril(inner, -1))
    du = matmul(triu(inner), u)
    dv2 = lax.neg(triangular_solve_p.bind(u, lax.add(dq21, matmul(v2, du)), **right_upper))
    dt = triangular_solve_p.bind(v1, lax.sub(du, matmul(t, mT(dv1))),
                                 **_params(left_side=False, lower=True, transpose_a=True,
                                           unit_diagonal=True))
    v = lax.concatenate([v1, v2], len(shape) - 2)
    dv = lax.concatenate([dv1, dv2], len(shape) - 2)
    # Q = I - V T V^T
    dq = lax.neg(lax.add(lax.add(matmul(matmul(dv, t), mT(v)), matmul(matmul(v, dt), mT(v))),
                         matmul(matmul(v, t), mT(dv))))
    tail = lax.slice(dq, (0,) * (len(shape) - 1) + (n,), shape)
    return lax.concatenate([q1_dot, tail], len(shape) - 1)


ad.primitive_jvps[qr_p] = _qr_jvp


# --- geqrf (Householder QR in LAPACK's compact form) -----------------------------------------

def _geqrf_impl(x):
    m, n = x.shape[-2:]
    if x.size == 0:
        return [np.array(x), np.zeros(x.shape[:-2] + (min(m, n),), x.dtype)]
    with np.errstate(all="ignore"):
        h, taus = np.linalg.qr(x, mode="raw")     # NumPy returns h transposed
    return [np.ascontiguousarray(np.swapaxes(h, -1, -2)), taus.astype(x.dtype)]


def _geqrf_abstract(x):
    check_rank("geqrf", 0, x, 2)
    check_float("geqrf", 0, x)
    m, n = x.shape[-2:]
    return [ShapedArray(x.shape, x.dtype), ShapedArray(x.shape[:-2] + (min(m, n),), x.dtype)]


geqrf_p = define("geqrf", _geqrf_impl, _geqrf_abstract, multiple_results=True)
no_derivative(geqrf_p)


# --- householder_product ---------------------------------------------------------------------

def _householder_product_impl(a, taus):
    m, n = a.shape[-2:]
    if a.size == 0 or taus.shape[-1] == 0:
        out = np.zeros(a.shape, a.dtype)
        idx = np.arange(min(m, n))
        out[..., idx, idx] = 1
        return out
    orgqr = scipy.linalg.lapack.get_lapack_funcs("orgqr", (a,))
    return batch_loop(lambda x, t: orgqr(x, t)[0], a, taus, core_ndims=(2, 1))


def _householder_product_abstract(a, taus):
    check_rank("householder_product", 0, a, 2)
    check_rank("householder_product", 1, taus, 1)
    check_float("householder_product", 0, a)
    check_float("householder_product", 1, taus)
    check_batch("householder_product", [a, taus], [2, 1])
    m, n = a.shape[-2:]
    if m < n:
        raise ValueError(f"The first argument to householder_product must have at least as many "
                         f"rows as columns, got shape {shape_str(a.shape)}")
    if taus.shape[-1] > min(m, n):
        raise ValueError("The second argument to householder_product must not have more rows "
                         "than the minimum of the first argument's rows and columns.")
    return ShapedArray(a.shape, a.dtype)


householder_product_p = define("householder_product", _householder_product_impl,
                               _householder_product_abstract)
no_derivative(householder_product_p)


# --- tridiagonal_solve -----------------------------------------------------------------------

def _tridiagonal_one(dl, d, du, b):
    n = d.shape[0]
    if n == 1:
        return b / d[0]
    gtsv = scipy.linalg.lapack.get_lapack_funcs("gtsv", (d, b))
    *_, x, info = gtsv(dl[1:], d, du[:-1], b)
    return np.full_like(b, np.nan) if info > 0 else x


def _tridiagonal_perturbed(dl, d, du, b):
    """Gaussian elimination with partial pivoting (rows swap when the subdiagonal entry is
    the larger, as in LAPACK's gttrf), vectorized over the batch; a zero pivot of U becomes
    eps * max|U|, so a singular system gets a large but finite solution (perturb_singular)."""
    batch, n = d.shape[:-1], d.shape[-1]

    def flat(v):
        return np.array(v.reshape((-1,) + v.shape[len(batch):]))

    dl, diag, sup, rhs = flat(dl), flat(d), flat(du), flat(b)
    sup[:, -1] = 0
    sup2 = np.zeros_like(diag)
    for i in range(n - 1):
        row_i = np.stack([diag[:, i], sup[:, i], sup2[:, i]])
        row_next = np.stack([dl[:, i + 1], diag[:, i + 1], sup[:, i + 1]])
        swap = np.abs(row_next[0]) > np.abs(row_i[0])
        top, bottom = np.where(swap, row_next, row_i), np.where(swap, row_i, row_next)
        b_top = np.where(swap[:, None], rhs[:, i + 1], rhs[:, i])
        b_bottom = np.where(swap[:, None], rhs[:, i], rhs[:, i + 1])
        fact = np.divide(bottom[0], top[0], out=np.zeros_like(top[0]), where=top[0] != 0)
        diag[:, i], sup[:, i], sup2[:, i] = top
        diag[:, i + 1] = bottom[1] - fact * top[1]
        sup[:, i + 1] = bottom[2] - fact * top[2]
        rhs[:, i], rhs[:, i + 1] = b_top, b_bottom - fact[:, None] * b_top
    scale = np.max(np.abs(np.concatenate([diag, sup, sup2], 1)), axis=1, keepdims=True)
    tiny = np.finfo(d.dtype).eps * np.where(scale > 0, scale, 1)
    pivots = np.where(diag == 0, tiny, diag)
    x = np.zeros_like(rhs)
    for i in range(n - 1, -1, -1):
        acc = rhs[:, i].copy()
        if i + 1 < n:
            acc -= sup[:, i, None] * x[:, i + 1]
        if i + 2 < n:
            acc -= sup2[:, i, None] * x[:, i + 2]
        x[:, i] = acc / pivots[:, i, None]
    return x.reshape(b.shape)


def _tridiagonal_solve_impl(dl, d, du, b, *, perturb_singular):
    if b.size == 0:
        return np.zeros(b.shape, b.dtype)
    with np.errstate(all="ignore"):
        if perturb_singular:
            return _tridiagonal_perturbed(dl, d, du, b)
        return batch_loop(_tridiagonal_one, dl, d, du, b, core_ndims=(1, 1, 1, 2))


def _tridiagonal_solve_abstract(dl, d, du, b, *, perturb_singular):
    for i, a in enumerate((dl, d, du)):
        check_rank("tridiagonal_solve", i, a, 1)
    check_rank("tridiagonal_solve", 3, b, 2)
    for i, a in enumerate((dl, d, du, b)):
        check_float("tridiagonal_solve", i, a)
    if not dl.shape == d.shape == du.shape:
        raise TypeError("tridiagonal_solve requires that all diagonal arguments have the same "
                        f"shape, got {shape_str(dl.shape)}, {shape_str(d.shape)} and "
                        f"{shape_str(du.shape)}.")
    if len({a.dtype for a in (dl, d, du, b)}) != 1:
        raise TypeError("tridiagonal_solve requires that all arguments have the same dtype, "
                        f"got {', '.join(a.dtype.name for a in (dl, d, du, b))}.")
    check_batch("tridiagonal_solve", [dl, d, du, b], [1, 1, 1, 2])
    if b.shape[-2] != d.shape[-1]:
        raise TypeError(f"tridiagonal_solve requires that the leading dimension of the "
                        f"right-hand side ({b.shape[-2]}) match the size of the diagonals "
                        f"({d.shape[-1]}).")
    return ShapedArray(b.shape, b.dtype)


tridiagonal_solve_p = define("tridiagonal_solve", _tridiagonal_solve_impl,
                             _tridiagonal_solve_abstract)


def _shift(v, down: bool, axis: int):
    """v moved one place along `axis` (towards higher indices when `down`), zero-filled."""
    lax = _lax()
    shape = get_aval(v).shape
    pad = [(0, 0, 0)] * len(shape)
    pad[axis] = (1, -1, 0) if down else (-1, 1, 0)
    return lax.pad(v, lax.full((), 0, get_aval(v).dtype), pad)


def _tridiagonal_matmul(dl, d, du, x):
    """A x for the tridiagonal A of (dl, d, du) and x (..., n, k)."""
    lax = _lax()
    axis = get_aval(x).ndim - 2
    return lax.add(lax.add(scale_rows(_shift(x, True, axis), dl), scale_rows(x, d)),
                   scale_rows(_shift(x, False, axis), du))


def _tridiagonal_solve_jvp(primals, tangents, *, perturb_singular):
    """x' = A^-1 (b' - A' x)."""
    dl, d, du, b = primals
    out = tridiagonal_solve_p.bind(dl, d, du, b, perturb_singular=perturb_singular)
    if all(type(t) is Zero for t in tangents):
        return out, zeros_tangent(out)
    lax = _lax()
    dl_dot, d_dot, du_dot, b_dot = (ad.instantiate_zeros(t) for t in tangents)
    rhs = lax.sub(b_dot, _tridiagonal_matmul(dl_dot, d_dot, du_dot, out))
    return out, tridiagonal_solve_p.bind(dl, d, du, rhs, perturb_singular=perturb_singular)


def _tridiagonal_solve_transpose(ct, dl, d, du, b, *, perturb_singular):
    if any(is_undefined_primal(v) for v in (dl, d, du)):
        raise ValueError("tridiagonal_solve is linear in its right-hand side only: cannot "
                         "transpose with respect to the diagonals.")
    if type(ct) is Zero:
        return [None] * 4
    axis = get_aval(d).ndim - 1
    # A^T has A's superdiagonal below its diagonal and A's subdiagonal above it.
    dl_t, du_t = _shift(du, True, axis), _shift(dl, False, axis)
    return [None, None, None,
            tridiagonal_solve_p.bind(dl_t, d, du_t, ct, perturb_singular=perturb_singular)]


ad.primitive_jvps[tridiagonal_solve_p] = _tridiagonal_solve_jvp
ad.primitive_transposes[tridiagonal_solve_p] = _tridiagonal_solve_transpose
