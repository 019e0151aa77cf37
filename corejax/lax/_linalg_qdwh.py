"""QDWH: the polar decomposition x = u h by the QR-based dynamically weighted Halley
iteration (Nakatsukasa, Bai and Gygi, SIAM J. Matrix Anal. Appl. 31(5), 2010; Nakatsukasa and
Higham, SIAM J. Sci. Comput. 35(3), 2013).

Each step maps the singular values of x towards 1 with a rational function whose weights
(a, b, c) come from a lower bound l on the smallest singular value; l -> 1 in at most about six
steps in double precision. A step is a QR factorization of [sqrt(c) x; I], or, once c is small
enough that I + c x^T x is well conditioned, a cheaper Cholesky factorization of that matrix.
"""
from __future__ import annotations

import numpy as np

from corejax.core import get_aval, concrete_or_error

__all__ = ["qdwh"]


def _lax():
    from corejax import lax
    return lax


def _weights(l):
    """(a, b, c) of the Halley step for the lower bound l on the singular values."""
    lax = _lax()
    dt = get_aval(l).dtype
    one = lax.full((), 1, dt)
    l2 = lax.mul(l, l)
    d = lax.cbrt(lax.div(lax.mul(lax.full((), 4, dt), lax.sub(one, l2)), lax.mul(l2, l2)))
    sqd = lax.sqrt(lax.add(one, d))
    a = lax.add(sqd, lax.mul(lax.full((), 0.5, dt), lax.sqrt(lax.add(
        lax.sub(lax.full((), 8, dt), lax.mul(lax.full((), 4, dt), d)),
        lax.div(lax.mul(lax.full((), 8, dt), lax.sub(lax.full((), 2, dt), l2)),
                lax.mul(l2, sqd))))))
    b = lax.div(lax.mul(lax.sub(a, one), lax.sub(a, one)), lax.full((), 4, dt))
    c = lax.sub(lax.add(a, b), one)
    return a, b, c


def _step(x, a, b, c):
    """One weighted Halley step: b/c x + (a - b/c) x (I + c x^T x)^-1."""
    from corejax.lax import _linalg_util as u
    from corejax.lax._linalg_factor import cholesky_p, qr_p, triangular_solve_p
    lax = _lax()
    aval = get_aval(x)
    m, n = aval.shape[-2:]
    dt = aval.dtype
    ratio = lax.div(b, c)
    coef = lax.sub(a, ratio)

    def by_qr(x):
        stacked = lax.concatenate([lax.mul(x, lax.full(aval.shape, lax.sqrt(c), dt)),
                                   u.eye((n, n), dt)], 0)
        q = qr_p.bind(stacked, pivoting=False, full_matrices=False, use_magma=None)[0]
        q1 = lax.slice(q, (0, 0), (m, n))
        q2 = lax.slice(q, (m, 0), (m + n, n))
        scale = lax.div(coef, lax.sqrt(c))
        return lax.add(lax.mul(lax.full(aval.shape, ratio, dt), x),
                       lax.mul(lax.full(aval.shape, scale, dt), u.matmul(q1, u.mT(q2))))

    def by_cholesky(x):
        gram = lax.add(u.eye((n, n), dt),
                       lax.mul(lax.full((n, n), c, dt), u.matmul(u.mT(x), x)))
        chol = cholesky_p.bind(gram)
        solve = dict(left_side=False, lower=True, conjugate_a=False, unit_diagonal=False)
        y = triangular_solve_p.bind(chol, x, transpose_a=True, **solve)
        y = triangular_solve_p.bind(chol, y, transpose_a=False, **solve)
        return lax.add(lax.mul(lax.full(aval.shape, ratio, dt), x),
                       lax.mul(lax.full(aval.shape, coef, dt), y))

    return lax.cond(lax.gt(c, lax.full((), 100, dt)), by_qr, by_cholesky, x)


def _frobenius(x):
    lax = _lax()
    return lax.sqrt(lax.reduce_sum(lax.mul(x, x)))


def _qdwh(x, max_iterations, eps):
    lax = _lax()
    aval = get_aval(x)
    dt = aval.dtype
    eps = float(np.finfo(dt).eps) if eps is None else float(eps)
    norm = _frobenius(x)
    safe = lax.select(lax.gt(norm, lax.full((), 0, dt)), norm, lax.full((), 1, dt))
    x0 = lax.div(x, lax.full(aval.shape, safe, dt))
    tol_l = 10.0 * eps / 2
    tol_norm = np.cbrt(tol_l)

    def cond(state):
        _, l, k, change = state
        not_done = lax.bitwise_or(lax.gt(lax.abs(lax.sub(lax.full((), 1, dt), l)),
                                         lax.full((), tol_l, dt)),
                                  lax.gt(change, lax.full((), tol_norm, dt)))
        return lax.bitwise_and(lax.lt(k, max_iterations), not_done)

    def body(state):
        x, l, k, _ = state
        a, b, c = _weights(l)
        x_new = _step(x, a, b, c)
        l_new = lax.div(lax.mul(l, lax.add(a, lax.mul(b, lax.mul(l, l)))),
                        lax.add(lax.full((), 1, dt), lax.mul(c, lax.mul(l, l))))
        change = _frobenius(lax.sub(x_new, x))
        return x_new, lax.min(l_new, lax.full((), 1, dt)), k + 1, change

    l0 = lax.full((), 0.9 * eps, dt)
    state = (x0, l0, 0, lax.full((), np.inf, dt))
    u, l, k, change = lax.while_loop(cond, body, state)
    converged = lax.bitwise_and(lax.le(lax.abs(lax.sub(lax.full((), 1, dt), l)),
                                       lax.full((), tol_l, dt)),
                                lax.le(change, lax.full((), tol_norm, dt)))
    from corejax.lax import _linalg_util as util
    h = util.symmetrize(util.matmul(util.mT(u), x))
    return u, h, k, converged


def qdwh(x, *, is_hermitian: bool = False, max_iterations: int | None = None,
         eps: float | None = None, dynamic_shape=None):
    """Polar decomposition x = u h of an (m, n) matrix with m >= n by QDWH: u has orthonormal
    columns, h is symmetric positive semidefinite. Returns `(u, h, num_iters, is_converged)`.
    `dynamic_shape=(m, n)` decomposes only the leading m x n block of x and pads the factors
    with zeros; `is_hermitian` is accepted for JAX compatibility (the iteration is the same)."""
    from corejax.lax._linalg_util import check_float, check_rank, resize
    aval = get_aval(x)
    check_rank("qdwh", 0, aval, 2)
    if aval.ndim != 2:
        raise ValueError(f"qdwh takes a single matrix, got shape {aval.shape}; use vmap for a "
                         "batch.")
    check_float("qdwh", 0, aval)
    m, n = aval.shape
    if dynamic_shape is not None:
        dm, dn = (concrete_or_error(int, v, "qdwh's dynamic_shape must be concrete")
                  for v in dynamic_shape)
        if m < n or dm < dn:
            raise ValueError("The input matrix of shape M x N must have M >= N.")
        u, h, k, ok = _qdwh(resize(x, dm, dn), 10 if max_iterations is None else
                            int(max_iterations), eps)
        return resize(u, m, n), resize(h, n, n), k, ok
    if m < n:
        raise ValueError("The input matrix of shape M x N must have M >= N.")
    return _qdwh(x, 10 if max_iterations is None else int(max_iterations), eps)
