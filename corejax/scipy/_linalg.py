"""jax.scipy.linalg's factorizations and solves (in SciPy's conventions: upper Cholesky
factors by default, LU with a permutation matrix, LAPACK-style pivot vectors), composed from
lax.linalg; expm (Higham's scaling-and-squaring Padé method), expm_frechet (forward mode
through it), polar (QDWH or the SVD), solve_sylvester. sqrtm, funm and rsf2csf (complex
results) go through the complex Schur form.
"""
from __future__ import annotations

import operator

import numpy as np

from corejax import dtypes, lax
from corejax.core import get_aval
from corejax.lax import linalg as lax_linalg
from corejax.lax import _linalg_util as _u
from corejax.lax import _linalg_eig
from corejax.lax._linalg_spectral import sylvester_p
from corejax.lax.linalg import SvdAlgorithm
from corejax.numpy._core import check_arraylike, promote_dtypes_inexact, broadcast_shapes
import corejax.numpy as jnp

__all__ = [
    "cho_factor", "cho_solve", "cholesky", "det", "eigh", "eigh_tridiagonal", "expm",
    "expm_frechet", "funm", "hessenberg", "inv", "lu", "lu_factor", "lu_solve", "polar", "qr",
    "qr_multiply", "rsf2csf", "schur", "solve", "solve_sylvester", "solve_triangular", "sqrtm",
    "svd",
]


def _inexact(name, *args):
    check_arraylike(name, *args)
    return promote_dtypes_inexact(*args)


def _square(name, a):
    shape = get_aval(a).shape
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"{name}: expected a square matrix (or a stack of them), got shape "
                         f"{shape}.")


def _solve_vectors(solve, a, b):
    """Applies `solve(a, b_matrix)` to b of shape (..., n) (vectors: one dimension fewer than a,
    or 1-D) or (..., n, k), broadcasting the batch dimensions."""
    a_aval, b_aval = get_aval(a), get_aval(b)
    vector = b_aval.ndim == 1 or b_aval.ndim == a_aval.ndim - 1
    if vector:
        b = b[..., None]
    batch = broadcast_shapes(a_aval.shape[:-2], get_aval(b).shape[:-2])
    a = jnp.broadcast_to(a, batch + a_aval.shape[-2:])
    b = jnp.broadcast_to(b, batch + get_aval(b).shape[-2:])
    x = solve(a, b)
    return x[..., 0] if vector else x


# --- Cholesky --------------------------------------------------------------------------------

def cholesky(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """The Cholesky factor from a's `lower` (else upper) triangle: L with a = L L^H, or U with
    a = U^H U (^T for real a; NaN where that triangle is not positive definite)."""
    (a,) = _inexact("cholesky", a)
    if lower:
        return lax_linalg.cholesky(a, symmetrize_input=False)
    return _u.conj_mT(lax_linalg.cholesky(_u.conj_mT(a), symmetrize_input=False))


def cho_factor(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """`(c, lower)`: the Cholesky factor of a's lower or upper triangle, for cho_solve."""
    return cholesky(a, lower=lower), lower


def cho_solve(c_and_lower, b, overwrite_b: bool = False, check_finite: bool = True):
    """x with a x = b, given cho_factor(a)."""
    c, lower = c_and_lower
    c, b = _inexact("cho_solve", c, b)

    def solve(c, b):
        # a = c c^H (lower) or c^H c (upper): one solve with c, one with c^H
        y = lax_linalg.triangular_solve(c, b, left_side=True, lower=lower,
                                        transpose_a=not lower, conjugate_a=not lower)
        return lax_linalg.triangular_solve(c, y, left_side=True, lower=lower,
                                           transpose_a=lower, conjugate_a=lower)

    return _solve_vectors(solve, c, b)


# --- LU --------------------------------------------------------------------------------------

def lu_factor(a, overwrite_a: bool = False, check_finite: bool = True):
    """`(lu, piv)`: L (unit diagonal, below) and U packed in lu, LAPACK's 0-based pivots."""
    (a,) = _inexact("lu_factor", a)
    lu_, pivots, _ = lax_linalg.lu(a)
    return lu_, pivots


def lu(a, permute_l: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """`(p, l, u)` with a = p @ l @ u (p a permutation matrix, l unit lower trapezoidal, u
    upper trapezoidal), or `(p @ l, u)` with `permute_l`."""
    (a,) = _inexact("lu", a)
    if get_aval(a).ndim != 2:
        raise ValueError(f"scipy.linalg.lu takes one matrix, got shape {get_aval(a).shape} (use "
                         "vmap for a batch).")
    lu_, _, perm = lax_linalg.lu(a)
    shape = get_aval(a).shape
    m, n = shape[-2:]
    k = min(m, n)
    dt = get_aval(a).dtype
    l = lax.add(_u.tril(_u.resize(lu_, m, k), -1), _u.eye(shape[:-2] + (m, k), dt))
    u = _u.triu(_u.resize(lu_, k, n))
    p = _u.mT(_u.permutation_matrix(perm, dt))
    return (_u.matmul(p, l), u) if permute_l else (p, l, u)


def lu_solve(lu_and_piv, b, trans: int = 0, overwrite_b: bool = False,
             check_finite: bool = True):
    """x with a x = b (trans 0), a^T x = b (1) or a^H x = b (2), given lu_factor(a)."""
    lu_, pivots = lu_and_piv
    lu_, b = _inexact("lu_solve", lu_, b)
    if trans not in (0, 1, 2):
        raise ValueError(f"'trans' value must be 0, 1, or 2, got {trans!r}")
    m = get_aval(lu_).shape[-1]
    perm = lax_linalg.lu_pivots_to_permutation(pivots, m)

    def solve(lu_, b):
        rows = jnp.broadcast_to(perm, get_aval(lu_).shape[:-1])
        if trans == 0:      # a = P^T L U: x = U^-1 L^-1 (b in P's row order)
            y = lax_linalg.triangular_solve(lu_, _u.permute_rows(b, rows), left_side=True,
                                            lower=True, unit_diagonal=True)
            return lax_linalg.triangular_solve(lu_, y, left_side=True, lower=False)
        y = lax_linalg.triangular_solve(lu_, b, left_side=True, lower=False, transpose_a=True)
        y = lax_linalg.triangular_solve(lu_, y, left_side=True, lower=True, transpose_a=True,
                                        unit_diagonal=True)
        return _u.permute_rows(y, jnp.argsort(rows, axis=-1).astype(np.int32))

    return _solve_vectors(solve, lu_, b)


# --- solves, inverse, determinant ------------------------------------------------------------

def solve(a, b, lower: bool = False, overwrite_a: bool = False, overwrite_b: bool = False,
          debug: bool = False, check_finite: bool = True, assume_a: str = "gen"):
    """x with a x = b: by LU, or by Cholesky of a's `lower` / upper triangle when
    assume_a='pos'."""
    if assume_a not in ("gen", "sym", "her", "pos"):
        raise ValueError(f"Expected assume_a to be one of ['gen', 'sym', 'her', 'pos']; got "
                         f"{assume_a!r}")
    a, b = _inexact("solve", a, b)
    _square("solve", a)
    if assume_a == "pos":
        return cho_solve(cho_factor(a, lower), b)
    return _solve_vectors(jnp.linalg.solve, a, b)


def solve_triangular(a, b, trans=0, lower: bool = False, unit_diagonal: bool = False,
                     overwrite_b: bool = False, debug=None, check_finite: bool = True):
    """x with op(a) x = b for triangular a (only its `lower` / upper triangle is read);
    op is the identity (trans 0 / 'N'), the transpose (1 / 'T') or the conjugate transpose
    (2 / 'C')."""
    modes = {0: False, "N": False, 1: True, "T": True, 2: True, "C": True}
    if trans not in modes:
        raise ValueError(f"Invalid 'trans' value {trans!r}: expected one of 0, 1, 2, 'N', 'T', "
                         "'C'.")
    a, b = _inexact("solve_triangular", a, b)
    _square("solve_triangular", a)
    return _solve_vectors(
        lambda a, b: lax_linalg.triangular_solve(a, b, left_side=True, lower=lower,
                                                 transpose_a=modes[trans],
                                                 conjugate_a=trans in (2, "C"),
                                                 unit_diagonal=unit_diagonal), a, b)


def inv(a, overwrite_a: bool = False, check_finite: bool = True):
    """The inverses of square matrices."""
    return jnp.linalg.inv(a)


def det(a, overwrite_a: bool = False, check_finite: bool = True):
    """Determinants of square matrices."""
    return jnp.linalg.det(a)


def solve_sylvester(A, B, C, *, method: str = "schur", tol: float = 1e-8):
    """X with A X + X B = C (Bartels-Stewart on real Schur forms; NaN when eigenvalues of A and
    -B come within `tol` of each other). Batch dimensions broadcast."""
    if method not in ("schur", "eigen"):
        raise ValueError(f"method must be 'schur' or 'eigen', got {method!r}.")
    A, B, C = _inexact("solve_sylvester", A, B, C)
    _square("solve_sylvester", A)
    _square("solve_sylvester", B)
    avals = [get_aval(x) for x in (A, B, C)]
    batch = broadcast_shapes(*(x.shape[:-2] for x in avals))
    A, B, C = (jnp.broadcast_to(x, batch + v.shape[-2:]) for x, v in zip((A, B, C), avals))
    return sylvester_p.bind(A, B, C, tol=float(tol))


# --- decompositions --------------------------------------------------------------------------

def qr(a, overwrite_a: bool = False, lwork=None, mode: str = "full", pivoting: bool = False,
       check_finite: bool = True):
    """QR decomposition as a tuple: (q, r) for mode 'full' or 'economic', (r,) for 'r'; with
    `pivoting`, the column permutation p is appended (a[:, p] = q r)."""
    if mode not in ("full", "r", "economic"):
        raise ValueError(f"Unsupported QR decomposition mode '{mode}'")
    (a,) = _inexact("qr", a)
    out = lax_linalg.qr(a, pivoting=pivoting, full_matrices=mode != "economic")
    return out[1:] if mode == "r" else out


def qr_multiply(a, c, mode: str = "right", pivoting: bool = False, conjugate: bool = False,
                overwrite_a: bool = False, overwrite_c: bool = False):
    """`(c @ q, r)` (mode 'right') or `(q @ c, r)` ('left') for the economic QR of a, with the
    permutation appended when `pivoting`. A 1-D c is a row ('right') or column ('left')."""
    if mode not in ("right", "left"):
        raise ValueError(f"mode must be 'right' or 'left', got {mode!r}.")
    a, c = _inexact("qr_multiply", a, c)
    q, r, *p = lax_linalg.qr(a, pivoting=pivoting, full_matrices=False)
    m, k = get_aval(q).shape[-2:]
    c_shape = get_aval(c).shape
    if mode == "right":
        if c_shape[-1] != m:
            raise ValueError(f"Array shapes are not compatible for c @ Q operation: a has shape "
                             f"{get_aval(a).shape} so Q has {m} rows, but c has {c_shape[-1]} "
                             f"columns (expected {m}).")
        cq = jnp.matmul(c, q)
    else:
        if c_shape[0] != k:
            raise ValueError(f"Array shapes are not compatible for Q @ c operation: a has shape "
                             f"{get_aval(a).shape} so Q has {k} columns, but c has {c_shape[0]} "
                             f"rows (expected {k}).")
        cq = jnp.matmul(q, c)
    return (cq, r, *p)


def svd(a, full_matrices: bool = True, compute_uv: bool = True, overwrite_a: bool = False,
        check_finite: bool = True, lapack_driver: str = "gesdd"):
    """Singular value decomposition `(u, s, vh)`, or s alone; lapack_driver 'gesdd' (divide and
    conquer) or 'gesvd' (QR iteration)."""
    if lapack_driver not in ("gesdd", "gesvd"):
        raise ValueError(f"lapack_driver must be 'gesdd' or 'gesvd', got {lapack_driver!r}.")
    (a,) = _inexact("svd", a)
    algorithm = SvdAlgorithm.QR if lapack_driver == "gesvd" else None
    return lax_linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv,
                          algorithm=algorithm)


def eigh(a, b=None, lower: bool = True, eigvals_only: bool = False, overwrite_a: bool = False,
         overwrite_b: bool = False, turbo: bool = True, eigvals=None, type: int = 1,
         check_finite: bool = True):
    """Eigenvalues (ascending) and eigenvectors `(w, v)` of symmetric matrices (w alone with
    `eigvals_only`). The generalized problem (b) is not supported, as in JAX."""
    if b is not None:
        raise NotImplementedError("Only the b=None case of eigh is implemented")
    if type != 1:
        raise NotImplementedError("Only the type=1 case of eigh is implemented.")
    if eigvals is not None:
        raise NotImplementedError("Only the eigvals=None case of eigh is implemented.")
    (a,) = _inexact("eigh", a)
    w, v = jnp.linalg.eigh(a, UPLO="L" if lower else "U")
    return w if eigvals_only else (w, v)


def eigh_tridiagonal(d, e, *, eigvals_only: bool = False, select: str = "a",
                     select_range=None, tol=None, key=None):
    """Eigenvalues (and eigenvectors) of the symmetric tridiagonal matrix with diagonal d and
    off-diagonal e; select='i' keeps the eigenvalues with indices select_range[0] ..
    select_range[1] (inclusive)."""
    d, e = _inexact("eigh_tridiagonal", d, e)
    n = get_aval(d).shape[-1]
    if get_aval(e).shape[-1] != n - 1:
        raise ValueError(f"eigh_tridiagonal: e must have one element fewer than d, got "
                         f"{get_aval(e).shape} and {get_aval(d).shape}.")
    if select == "v":
        raise NotImplementedError("eigh_tridiagonal(..., select='v') is not implemented")
    if select not in ("a", "i"):
        raise ValueError(f"select must be 'a', 'i' or 'v', got {select!r}.")
    upper = jnp.pad(_u.diag_embed(e), [(0, 0)] * (get_aval(e).ndim - 1) + [(0, 1), (1, 0)])
    t = lax.add(_u.diag_embed(d), lax.add(upper, _u.mT(upper)))
    v, w = lax_linalg.eigh(t, symmetrize_input=False)
    if select == "i":
        lo, hi = (operator.index(i) for i in select_range)
        w, v = w[..., lo:hi + 1], v[..., lo:hi + 1]
    return w if eigvals_only else (w, v)


def hessenberg(a, *, calc_q: bool = False, overwrite_a: bool = False,
               check_finite: bool = True):
    """The upper Hessenberg form h of a (a = q h q^T), with q when `calc_q`."""
    (a,) = _inexact("hessenberg", a)
    packed, taus = lax_linalg.hessenberg(a)
    h = _u.triu(packed, -1)
    if not calc_q:
        return h
    n = get_aval(a).shape[-1]
    batch = get_aval(a).shape[:-2]
    dt = get_aval(a).dtype
    if n < 2:
        return h, _u.eye(batch + (n, n), dt)
    reflectors = packed[..., 1:, :-1]
    q_sub = lax_linalg.householder_product(reflectors, taus)
    q = jnp.pad(q_sub, [(0, 0)] * len(batch) + [(1, 0), (1, 0)])
    return h, q.at[..., 0, 0].set(1)


def schur(a, output: str = "real"):
    """The Schur decomposition `[t, z]` with a = z t z^H: real (t quasi upper triangular) or,
    with output='complex', complex (t upper triangular, z unitary)."""
    if output not in ("real", "complex"):
        raise ValueError(f"output must be 'real' or 'complex', got {output!r}.")
    (a,) = _inexact("schur", a)
    if output == "complex":
        a = lax.convert_element_type(a, dtypes.complex_dtype(get_aval(a).dtype))
    return lax_linalg.schur(a)


def polar(a, side: str = "right", *, method: str = "qdwh", eps=None, max_iterations=None):
    """The polar decomposition `(u, p)`: a = u p (side 'right', p n x n) or a = p u ('left',
    p m x m), u with orthonormal columns (rows), p symmetric positive semidefinite; by QDWH
    or the SVD."""
    if side not in ("right", "left"):
        raise ValueError(f"side must be either 'right' or 'left', got {side!r}")
    if method not in ("qdwh", "svd"):
        raise ValueError(f"method must be either 'qdwh' or 'svd', got {method!r}")
    (a,) = _inexact("polar", a)
    m, n = get_aval(a).shape[-2:]
    if method == "svd":
        u_svd, s, vh = lax_linalg.svd(a, full_matrices=False)
        unitary = _u.matmul(u_svd, vh)
        if side == "right":
            return unitary, _u.matmul(_u.scale_columns(_u.mT(vh), s), vh)
        return unitary, _u.matmul(_u.scale_columns(u_svd, s), _u.mT(u_svd))
    if (side == "right" and m < n) or (side == "left" and m >= n):
        raise NotImplementedError(f"method='qdwh' only supports mxn matrices where m < n where "
                                  f"side='right' and m >= n side='left', got {(m, n)} with "
                                  f"side={side!r}")
    if side == "right":
        u, p, *_ = lax_linalg.qdwh(a, max_iterations=max_iterations, eps=eps)
        return u, p
    u, p, *_ = lax_linalg.qdwh(_u.mT(a), max_iterations=max_iterations, eps=eps)
    return _u.mT(u), p


def _complex_schur(name, a):
    (a,) = _inexact(name, a)
    _square(name, a)
    return lax_linalg.schur(lax.convert_element_type(a, dtypes.complex_dtype(get_aval(a).dtype)))


def sqrtm(A, blocksize: int = 1):
    """The principal matrix square root (complex), from the complex Schur form: the
    triangular factor's square root by the column recurrence, transformed back (no
    derivative: the Schur decomposition has none, as in JAX)."""
    if blocksize > 1:
        raise NotImplementedError("Blocked version is not implemented yet.")
    t, z = _complex_schur("sqrtm", A)
    r = _linalg_eig.triangular_sqrt_p.bind(t)
    return _u.matmul(_u.matmul(z, r), lax.conj(_u.mT(z)))


def funm(A, func, disp: bool = True):
    """The matrix function f(A) (complex) for an elementwise `func`: the complex Schur form
    (the real one made complex by rsf2csf, as JAX does), Parlett's recurrence (distinct
    eigenvalues), transformed back. With disp=False also JAX's error estimate,
    min(1, max(eps, eps / min|T_jj - T_ii| * ||triu(T, 1)||_1))."""
    (a,) = _inexact("funm", A)
    if get_aval(a).ndim != 2 or get_aval(a).shape[0] != get_aval(a).shape[1]:
        raise ValueError("expected square array_like input")
    if get_aval(a).dtype.kind == "c":
        t, z = lax_linalg.schur(a)
    else:
        t, z = rsf2csf(*lax_linalg.schur(a))
    f_diag = func(_u.diagonal(t))
    f_t, min_den = _linalg_eig.parlett_p.bind(
        t, lax.convert_element_type(f_diag, get_aval(t).dtype))
    out = _u.matmul(_u.matmul(z, f_t), lax.conj(_u.mT(z)))
    if disp:
        return out
    # JAX's tolerance: float32's eps for complex64 results, float64's otherwise
    tol = np.finfo(np.float32 if get_aval(out).dtype == np.complex64 else np.float64).eps
    rdt = dtypes.real_dtype(get_aval(out).dtype)
    min_den = jnp.where(min_den == 0, jnp.asarray(tol, rdt), min_den)
    strict_upper = jnp.triu(t, 1)
    spread = jnp.max(jnp.sum(jnp.abs(strict_upper), axis=0))
    err = jnp.minimum(1, jnp.maximum(tol, (tol / min_den) * spread))
    err = jnp.where(jnp.any(jnp.isinf(out)), jnp.inf, err)
    return out, err


def rsf2csf(T, Z, check_finite: bool = True):
    """The complex Schur form (T, Z) from the real one: each 2x2 diagonal block of T (a
    conjugate eigenvalue pair) is made triangular by a complex Givens rotation, applied to T
    from both sides and to Z from the right (SciPy's algorithm, in lax ops: differentiable and
    batched over leading axes, Z's broadcast with T's)."""
    T, Z = _inexact("rsf2csf", T, Z)
    t_shape, z_shape = get_aval(T).shape, get_aval(Z).shape
    for name, shape in (("T", t_shape), ("Z", z_shape)):
        if len(shape) < 2 or shape[-1] != shape[-2]:
            raise ValueError(f"Input '{name}' must be square.")
    if t_shape[-1] != z_shape[-1]:
        raise ValueError(f"Input array shapes must match: Z: {z_shape} vs. T: {t_shape}")
    batch = broadcast_shapes(t_shape[:-2], z_shape[:-2])
    dt = dtypes.complex_dtype(get_aval(T).dtype)
    n = t_shape[-1]
    T, Z = (jnp.broadcast_to(lax.convert_element_type(x, dt), batch + (n, n)) for x in (T, Z))
    if n < 2:
        return T, Z
    eps = float(np.finfo(dtypes.real_dtype(dt)).eps)
    at = (0,) * len(batch)

    def triangularize(i, carry):
        t, z = carry
        m = n - 1 - i  # the block in rows and columns m-1, m
        block = lax.dynamic_slice(t, at + (m - 1, m - 1), batch + (2, 2))
        a, b, c, d = block[..., 0, 0], block[..., 0, 1], block[..., 1, 0], block[..., 1, 1]
        rotate = jnp.abs(c) > eps * (jnp.abs(a) + jnp.abs(d))
        # mu = the block's first eigenvalue (in LAPACK's order) - d: of a complex pair the one
        # with positive imaginary part; of real ones the one on the side of (a - d) / 2.
        # Blocks left alone get harmless values (their derivative must not be NaN).
        half = (a - d) / 2
        disc = jnp.where(rotate, half * half + b * c, jnp.ones_like(c))
        root = jnp.sqrt(disc)
        flip = jnp.where(jnp.real(disc) >= 0, jnp.real(half) < 0, jnp.imag(root) < 0)
        mu = half + jnp.where(flip, -root, root)
        r = jnp.sqrt(jnp.real(mu * jnp.conj(mu)) + jnp.real(c * jnp.conj(c)))
        r = jnp.where(rotate, r, jnp.ones_like(r)).astype(dt)
        cs, sn = mu / r, c / r
        g = jnp.stack([jnp.stack([jnp.conj(cs), sn], -1), jnp.stack([-sn, cs], -1)], -2)
        g_h = jnp.conj(_u.mT(g))
        rows = lax.dynamic_slice(t, at + (m - 1, 0), batch + (2, n))
        rows = jnp.where(jnp.arange(n) >= m - 1, _u.matmul(g, rows), rows)
        t_new = lax.dynamic_update_slice(t, rows, at + (m - 1, 0))
        cols = lax.dynamic_slice(t_new, at + (0, m - 1), batch + (n, 2))
        cols = jnp.where((jnp.arange(n) <= m)[:, None], _u.matmul(cols, g_h), cols)
        t_new = lax.dynamic_update_slice(t_new, cols, at + (0, m - 1))
        z_cols = _u.matmul(lax.dynamic_slice(z, at + (0, m - 1), batch + (n, 2)), g_h)
        z_new = lax.dynamic_update_slice(z, z_cols, at + (0, m - 1))
        keep = rotate[..., None, None]
        t = jnp.where(keep, t_new, t)
        # the subdiagonal entry is zeroed whether or not the block was rotated, as in JAX (a
        # negligible one is dropped, and has no derivative)
        t = lax.dynamic_update_slice(t, jnp.zeros(batch + (1, 1), dt), at + (m, m - 1))
        return t, jnp.where(keep, z_new, z)

    return lax.fori_loop(0, n - 1, triangularize, (T, Z))


# --- the matrix exponential ------------------------------------------------------------------

# Padé coefficients b_0..b_m and the 1-norm bounds theta_m below which the degree-m
# approximant is accurate to the working precision (Higham, SIAM J. Matrix Anal. Appl.
# 26(4), 2005, Table 2.3 and Algorithm 2.3).
_PADE = {
    3: (120., 60., 12., 1.),
    5: (30240., 15120., 3360., 420., 30., 1.),
    7: (17297280., 8648640., 1995840., 277200., 25200., 1512., 56., 1.),
    9: (17643225600., 8821612800., 2075673600., 302702400., 30270240., 2162160., 110880.,
        3960., 90., 1.),
    13: (64764752532480000., 32382376266240000., 7771770303897600., 1187353796428800.,
         129060195264000., 10559470521600., 670442572800., 33522128640., 1323241920.,
         40840800., 960960., 16380., 182., 1.),
}
_THETA_64 = ((3, 1.495585217958292e-2), (5, 2.539398330063230e-1), (7, 9.504178996162932e-1),
             (9, 2.097847961257068e0), (13, 5.371920351148152e0))
_THETA_32 = ((3, 4.258730016922831e-1), (5, 1.880152677804762e0), (7, 3.925724783138660e0))


def _pade(a, degree):
    """(U, V) with exp(a) ~ (V - U)^-1 (V + U)."""
    b = _PADE[degree]
    n = get_aval(a).shape[-1]
    ident = _u.eye((n, n), get_aval(a).dtype)
    a2 = a @ a
    if degree == 13:
        a4 = a2 @ a2
        a6 = a4 @ a2
        u = a @ (a6 @ (b[13] * a6 + b[11] * a4 + b[9] * a2)
                 + b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * ident)
        v = a6 @ (b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2 \
            + b[0] * ident
        return u, v
    powers = [ident, a2]
    while len(powers) < (degree + 1) // 2:
        powers.append(powers[-1] @ a2)
    u = a @ sum(b[2 * i + 1] * p for i, p in enumerate(powers))
    v = sum(b[2 * i] * p for i, p in enumerate(powers))
    return u, v


def _expm_single(a, max_squarings):
    dt = get_aval(a).dtype
    thetas = _THETA_64 if dt == np.float64 else _THETA_32
    top_degree, top_theta = thetas[-1]
    norm = jnp.max(jnp.sum(jnp.abs(a), axis=0))
    ratio = norm / top_theta
    squarings = jnp.ceil(jnp.log(ratio) / np.log(2.0))
    # the smallest s with ratio <= 2^s (the division by log 2 may round up past it)
    squarings = jnp.where(ratio <= jnp.exp2(squarings - 1), squarings - 1, squarings)
    squarings = jnp.maximum(0, squarings).astype(np.int32)
    squarings = jnp.where(jnp.isfinite(norm), squarings, 0)
    small = [jnp.asarray(norm < theta) for _, theta in thetas[:-1]]
    # the smallest degree whose bound holds; the top degree (after scaling) otherwise
    index = sum((~ok).astype(np.int32) for ok in small) if small else jnp.asarray(0, np.int32)
    scaled = a / lax.convert_element_type(jnp.exp2(squarings.astype(dt)), dt)

    def branch(degree, use_scaled):
        def run(x):
            u, v = _pade(x, degree)
            return jnp.linalg.solve(v - u, v + u)
        return lambda operands: run(operands[1] if use_scaled else operands[0])

    branches = [branch(d, False) for d, _ in thetas[:-1]] + [branch(top_degree, True)]
    result = lax.switch(index, branches, (a, scaled))
    result = lax.fori_loop(0, squarings, lambda i, r: r @ r, result)
    return jnp.where(squarings > max_squarings, jnp.nan, result)


def expm(A, *, upper_triangular: bool = False, max_squarings: int = 16):
    """The matrix exponential by scaling and squaring with a Padé approximant (degree 3 to 13
    in float64, 3 to 7 in float32, chosen by the 1-norm); NaN when more than `max_squarings`
    squarings would be needed. `upper_triangular` is accepted as a hint (the general method
    is used)."""
    (A,) = _inexact("expm", A)
    _square("expm", A)
    shape = get_aval(A).shape
    if len(shape) == 2:
        return _expm_single(A, max_squarings)
    from corejax.api import vmap
    flat = jnp.reshape(A, (-1,) + shape[-2:])
    return jnp.reshape(vmap(lambda x: _expm_single(x, max_squarings))(flat), shape)


def expm_frechet(A, E, *, method=None, compute_expm: bool = True):
    """The Fréchet derivative of expm at A in the direction E (the forward-mode derivative of
    expm's scaling-and-squaring algorithm), with expm(A) first when `compute_expm`."""
    if method not in (None, "SPS", "blockEnlarge"):
        raise ValueError(f"Unknown implementation {method!r}: expected 'SPS' or "
                         "'blockEnlarge'.")
    A, E = _inexact("expm_frechet", A, E)
    if get_aval(A).shape != get_aval(E).shape or get_aval(A).ndim != 2:
        raise ValueError(f"expected A and E to be square matrices of the same shape, got "
                         f"{get_aval(A).shape} and {get_aval(E).shape}.")
    _square("expm_frechet", A)
    from corejax.api import jvp
    expm_a, frechet = jvp(expm, (A,), (E,))
    return (expm_a, frechet) if compute_expm else frechet
