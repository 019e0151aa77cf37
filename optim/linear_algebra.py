"""Linear-algebra helpers Optax exports: power_iteration (dominant eigenpair, of a matrix or
of a matrix-vector product on pytrees), matrix_inverse_pth_root (coupled Newton iteration,
as Shampoo uses) and nnls (non-negative least squares by accelerated projected gradient)."""
from __future__ import annotations


import corejax as jax
import corejax.numpy as jnp
from corejax import lax
from optim import _tree_math as tm

__all__ = ["power_iteration", "matrix_inverse_pth_root", "nnls"]


def _normalize(tree):
    return tm.tree_scale(1.0 / tm.tree_norm(tree), tree)


def power_iteration(matrix, *, v0=None, num_iters: int = 100, error_tolerance: float = 1e-6,
                    precision=lax.Precision.HIGHEST, key=None):
    """`(eigenvalue, unit eigenvector)` of largest magnitude of a symmetric `matrix` (an
    array, or a function v -> M v on pytrees, which then needs `v0`). Iterates until the
    residual `|Mv - lambda v| / |lambda|` is below `error_tolerance` or `num_iters` steps.
    Without `v0`, starts from uniform(-1, 1) draws of `key` (default PRNGKey(0))."""
    if callable(matrix):
        product = matrix
        if v0 is None:
            raise ValueError("v0 must be provided when `matrix` is a callable.")
    else:
        def product(v):
            return jnp.matmul(matrix, v, precision=precision)
        if v0 is None:
            key = jax.random.PRNGKey(0) if key is None else key
            v0 = jax.random.uniform(key, shape=matrix.shape[-1:], dtype=matrix.dtype,
                                    minval=-1.0, maxval=1.0)
    v0 = _normalize(v0)

    def keep_going(state):
        vec, image, eig, step = state
        residual = tm.tree_norm(tm.tree_sub(image, tm.tree_scale(eig, vec)))
        return ~(jnp.abs(residual / eig) < error_tolerance) & (step < num_iters)

    def body(state):
        _, image, _, step = state
        vec = _normalize(image)
        image = product(vec)
        return vec, image, tm.tree_vdot(vec, image), step + 1

    state = (v0, product(v0), jnp.asarray(0.0), jnp.asarray(0))
    _, image, eig, _ = lax.while_loop(keep_going, body, state)
    return eig, _normalize(image)


def _matrix_power(mat, p, precision):
    # p is 1, 2, 4 or 8 (rounded log2 picks the branch), by repeated squaring.
    def square(m):
        return jnp.matmul(m, m, precision=precision)
    branches = [lambda m: m, square, lambda m: square(square(m)),
                lambda m: square(square(square(m)))]
    return lax.switch(jnp.asarray(jnp.round(jnp.log2(p)), jnp.int32), branches, mat)


def matrix_inverse_pth_root(matrix, p: int, num_iters: int = 100, ridge_epsilon: float = 1e-6,
                            error_tolerance: float = 1e-6, precision=lax.Precision.HIGHEST):
    """`(matrix + eps * I) ** (-1/p)` for a symmetric positive semi-definite matrix and p in
    {1, 2, 4, 8}, by the coupled Newton iteration; `eps` is `ridge_epsilon` times the largest
    eigenvalue. Returns `(root, error)`, error = max |M_k - I| of the iteration."""
    size = matrix.shape[0]
    alpha = jnp.asarray(-1.0 / p, jnp.float32)
    identity = jnp.eye(size, dtype=jnp.float32)
    max_ev, _ = power_iteration(matrix=matrix, num_iters=100, error_tolerance=1e-6,
                                precision=precision)
    ridge = ridge_epsilon * jnp.maximum(max_ev, 1e-16)
    if size == 1:
        return (matrix + ridge) ** alpha, 0

    def keep_going(state):
        step, _, _, _, error, improving = state
        return jnp.logical_and(step < num_iters,
                               jnp.logical_and(error > error_tolerance, improving))

    def body(state):
        step, mat_m, mat_h, _, error, _ = state
        mat_m_i = (1 - alpha) * identity + alpha * mat_m
        new_m = jnp.matmul(_matrix_power(mat_m_i, p, precision), mat_m, precision=precision)
        new_h = jnp.matmul(mat_h, mat_m_i, precision=precision)
        new_error = jnp.max(jnp.abs(new_m - identity))
        return step + 1, new_m, new_h, mat_h, new_error, new_error < error * 1.2

    damped = matrix + ridge * identity
    z = (1 + p) / (2 * jnp.linalg.norm(damped))
    m0 = damped * z
    h0 = identity * jnp.power(z, 1.0 / p)
    state = (0, m0, h0, h0, jnp.max(jnp.abs(m0 - identity)), True)
    _, mat_m, mat_h, old_h, _, converged = lax.while_loop(keep_going, body, state)
    error = jnp.max(jnp.abs(mat_m - identity))
    # The last step made the error grow: keep the root of the step before.
    converged = jnp.asarray(converged, old_h.dtype)
    root = converged * mat_h + (1 - converged) * old_h
    return jnp.asarray(root, matrix.dtype), error


def _spectral_radius_bound(matrix):
    fro = jnp.linalg.norm(matrix, ord="fro")
    one = jnp.linalg.norm(matrix, ord=1) if matrix.size != 0 else 0
    return jnp.minimum(fro, one)


def nnls(A, b, iters: int, unroll=1, L=None):
    """`argmin_{x >= 0} ||A x - b||^2` approximately, by `iters` steps of accelerated
    projected gradient descent (FISTA) with step 1/L (L defaults to a bound on the largest
    eigenvalue of A^T A). `b` is a vector or a matrix of right-hand sides."""
    A, b = jnp.asarray(A), jnp.asarray(b)
    if A.ndim != 2:
        raise ValueError(f"nnls: A must be a matrix, got shape {A.shape}.")
    if b.ndim not in (1, 2) or b.shape[0] != A.shape[0]:
        raise ValueError(f"nnls: b must have shape ({A.shape[0]},) or ({A.shape[0]}, k), got "
                         f"{b.shape}.")
    gram = A.mT @ A
    rhs = A.mT @ b
    L = _spectral_radius_bound(gram) if L is None else L
    L = jnp.where(L == 0, 1, L)

    def step(carry, _):
        x, y, t = carry
        t_next = (1 + jnp.sqrt(1 + 4 * t ** 2)) / 2
        momentum = (t - 1) / t_next
        x_next = (y - (gram @ y - rhs) / L).clip(0)
        return (x_next, x_next + momentum * (x_next - x), t_next), None

    x0 = jnp.zeros(A.shape[-1:] + b.shape[1:], b.dtype)
    (x, _, _), _ = lax.scan(step, (x0, x0, 0.0), length=iters, unroll=unroll)
    return x


