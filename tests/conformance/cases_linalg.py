"""Conformance cases for linear algebra: jax.lax.linalg, jax.numpy.linalg, jax.scipy.linalg.

Inputs that must be well posed are built inside small framework-neutral wrappers (operators
only, so the very same code runs on JAX and corejax arrays), registered in cases.ARRAY_OPS
under "linalg_*" and given the function by Ref:
  linalg_spd        f(x @ x.mT / n + I, ...): symmetric positive definite (Cholesky & co.)
  linalg_dominant   f(x + 2n I, ...): a well-conditioned matrix (triangular solves)
  linalg_singular   f(x with its last column replaced by its first, ...): rank n - 1
  linalg_upper      f(triu(x) + 2n I, ...): an upper Cholesky factor (cholesky_update)
Decompositions are unique only up to the signs of their vectors: the "*_fixed" wrappers
multiply each eigen- / singular / Q column (and the matching row of vh or r) by the sign of
its first entry, so JAX's and corejax's factors compare entrywise (and their derivatives
too, since the signs are locally constant). Everything else (det, solve, cholesky, eigvalsh,
lu with its pivots, hessenberg, schur, qdwh...) is compared as returned: LAPACK's
conventions are deterministic and corejax calls the same routines.
"""
import numpy as np

import cases
from cases import BASIC, FULL, NOGRAD, SKIP_REASONS, Call, Ref, add, case

cases.MODULES.extend(["lax.linalg", "numpy.linalg", "scipy.linalg"])

NOHVP = ("eager", "jit", "vmap", "grad", "jvp", "vjp", "jit_grad")
DIFF = ("eager", "jit", "grad", "jvp")


def _eye(x):
    return np.eye(x.shape[-1], dtype=x.dtype)


def _spd(x):
    return x @ x.mT / x.shape[-1] + _eye(x)


def _dominant(x):
    return x + 2 * x.shape[-1] * _eye(x)


def _hpd(x):
    """Hermitian positive definite from a complex x: x x^H / n + I."""
    return x @ x.conj().mT / x.shape[-1] + _eye(x)


def _parts(out):
    """The real and imaginary parts of a complex result (what grad / jvp / vjp compare)."""
    return out.real, out.imag


def _singular(x):
    return x.at[..., -1].set(x[..., 0])


def _upper(x):
    n = x.shape[-1]
    return x * np.triu(np.ones((n, n), x.dtype)) + 2 * n * _eye(x)


def _signs(first_row):
    return first_row / abs(first_row)


def _fix_columns(v):
    return v * _signs(v[..., :1, :])


def _fix_usv(u, s, vh):
    d = _signs(u[..., :1, :])
    return u * d, s, vh * d.reshape(d.shape[:-2] + (d.shape[-1], 1))


def _fix_qr(q, r, *rest):
    d = _signs(q[..., :1, :])
    return (q * d, r * d.reshape(d.shape[:-2] + (d.shape[-1], 1)), *rest)


def _fix_vw(out):
    v, w = out
    return _fix_columns(v), w


def _fix_wv(out):
    w, v = out
    return w, _fix_columns(v)


cases.ARRAY_OPS.update({
    "linalg_spd": lambda f, x, *a, **kw: f(_spd(x), *a, **kw),
    "linalg_dominant": lambda f, x, *a, **kw: f(_dominant(x), *a, **kw),
    "linalg_singular": lambda f, x, *a, **kw: f(_singular(x), *a, **kw),
    # a singular value for x, with x's own tangent (derivatives at a singular matrix)
    "linalg_singular_point": lambda f, stop_gradient, x: f(x + stop_gradient(_singular(x) - x)),
    "linalg_upper": lambda f, x, *a, **kw: f(_upper(x), *a, **kw),
    # complex (Hermitian) inputs: built from a complex x, or, to differentiate with real
    # inputs and outputs, from real and imaginary parts (x + iy, b = u + iv) and returning parts
    "linalg_hpd": lambda f, x, *a, **kw: f(_hpd(x), *a, **kw),
    "linalg_hpd_parts": lambda f, x, y, **kw: _parts(f(_hpd(x + 1j * y), **kw)),
    "linalg_cdominant": lambda f, x, *a, **kw: f(_dominant(x), *a, **kw),
    "linalg_cdominant_parts": lambda f, x, y, u, v, **kw: _parts(
        f(_dominant(x + 1j * y), u + 1j * v, **kw)),
    "linalg_hpd_factor_solve_parts": lambda factor, solve, x, y, u, v, fkw=None: _parts(
        solve(factor(_hpd(x + 1j * y), **(fkw or {})), u + 1j * v)),
    "linalg_vw_fixed": lambda f, x, *a, **kw: _fix_vw(f(x, *a, **kw)),
    "linalg_wv_fixed": lambda f, x, *a, **kw: _fix_wv(f(x, *a, **kw)),
    "linalg_usv_fixed": lambda f, x, *a, **kw: _fix_usv(*f(x, *a, **kw)),
    "linalg_qr_fixed": lambda f, x, *a, **kw: _fix_qr(*f(x, *a, **kw)),
    "linalg_spd_wv_fixed": lambda f, x, *a, **kw: _fix_wv(f(_spd(x), *a, **kw)),
    # factor, then solve with the factors: cho_factor / cho_solve, lu_factor / lu_solve
    "linalg_factor_solve": lambda factor, solve, x, b, spd=False, fkw=None, **kw: solve(
        factor(_spd(x) if spd else x, **(fkw or {})), b, **kw),
    # reconstructions: the invariant part of decompositions with rotation freedom
    "linalg_schur_rebuild": lambda f, x: (lambda t, z: z @ t @ z.mT)(*f(x)),
    "linalg_tridiagonal_eigvals": lambda f, d, e, **kw: f(d, e, eigvals_only=True, **kw),
    # implicit derivatives: a dense solve behind custom_linear_solve (derivatives flow to the
    # matrix through the matvec's closure), Newton's square root behind custom_root
    "linalg_custom_linear_solve": lambda custom_linear_solve, solve, a, b, symmetric=False:
        custom_linear_solve(lambda x: a @ x, b, lambda mv, y: solve(a, y),
                            transpose_solve=None if symmetric else lambda vm, y: solve(a.T, y),
                            symmetric=symmetric),
    "linalg_sqrt_root": lambda custom_root, c: custom_root(
        lambda x: x * x - c, c * 0 + 1, _newton,
        lambda g, y: y / g(np.ones(y.shape, y.dtype))),
})


def _newton(f, x):
    for _ in range(25):
        x = x - f(x) / (2 * x)
    return x


def wrap(kind, fn, *args, label=None, **kw):
    """A case calling `fn` through the wrapper `kind`; its label starts with fn's path."""
    tail = label or "_".join(cases._short(a) for a in args)
    return case(f"array.linalg_{kind}", Ref(fn), *args, label=f"{fn}_{tail}", **kw)


# ------------------------------------------------------------------ jax.lax.linalg

L = "lax.linalg."
add(case(L + "cholesky", "f32[4,4]", label="not_pd_nan"),
    wrap("spd", L + "cholesky", "f32[4,4]", transforms=FULL, ulp=16),
    wrap("spd", L + "cholesky", "f32[2,4,4]", transforms=NOHVP, ulp=16),
    wrap("spd", L + "cholesky", "f32[4,4]", kwargs={"symmetrize_input": False},
         transforms=FULL, ulp=16, label="nosym"),
    wrap("spd", L + "cholesky", "f64[5,5]", x64=True, transforms=DIFF, ulp=16),
    case(L + "cholesky", "f32[2,4]", label="not_square", transforms=("eager",)),
    case(L + "cholesky", "f32[4]", label="rank1", transforms=("eager",)),
    case(L + "cholesky", "i32[4,4]", kwargs={"symmetrize_input": False}, label="int_nosym",
         transforms=("eager",)))
add(case(L + "eigh", "f32[4,4]", transforms=BASIC, ulp=32),
    wrap("vw_fixed", L + "eigh", "f32[4,4]", transforms=FULL, ulp=32),
    wrap("vw_fixed", L + "eigh", "f32[2,4,4]", transforms=NOHVP, ulp=32),
    wrap("vw_fixed", L + "eigh", "f32[4,4]", kwargs={"symmetrize_input": False, "lower": False},
         transforms=NOHVP, ulp=32, label="upper_nosym"),
    wrap("vw_fixed", L + "eigh", "f64[5,5]", x64=True, transforms=DIFF, ulp=32),
    case(L + "eigh", "f32[2,4]", transforms=("eager",), label="not_square"),
    case(L + "eigh", "f32[4,4]", kwargs={"implementation": Call(
        "lax.linalg.EighImplementation", "jacobi")}, transforms=("eager",), label="jacobi"),
    case(L + "eigh", "f32[4,4]", kwargs={"implementation": Call(
        "lax.linalg.EighImplementation", "qr"), "sort_eigenvalues": False}, transforms=BASIC,
         ulp=32, label="qr_unsorted"))
add(case(L + "lu", "f32[4,4]", transforms=FULL, ulp=16),
    case(L + "lu", "f32[4,2]", transforms=NOHVP, ulp=16),
    case(L + "lu", "f32[2,4]", transforms=NOHVP, ulp=16),
    case(L + "lu", "f32[2,4,4]", transforms=NOHVP, ulp=16),
    case(L + "lu", "f64[5,5]", x64=True, transforms=DIFF, ulp=16),
    wrap("singular", L + "lu", "f32[4,4]", transforms=NOGRAD, ulp=16),
    case(L + "lu", "i32[4,4]", transforms=("eager",), label="int"),
    case(L + "lu", "f32[4]", transforms=("eager",), label="rank1"))
add(case(L + "lu_pivots_to_permutation", "i32[4]:idx5", 5, static=(1,)),
    case(L + "lu_pivots_to_permutation", "i32[2,4]:idx4", 4, static=(1,)),
    case(L + "lu_pivots_to_permutation", "i32[4]:idx4", 2, static=(1,), transforms=("eager",),
         label="too_small"))
add(case(L + "qr", "f32[4,4]", transforms=FULL, ulp=64),
    wrap("qr_fixed", L + "qr", "f32[4,4]", transforms=FULL, ulp=32),
    wrap("qr_fixed", L + "qr", "f32[4,2]", kwargs={"full_matrices": False}, transforms=FULL,
         ulp=32, label="reduced"),
    case(L + "qr", "f32[4,2]", kwargs={"full_matrices": True}, transforms=NOHVP, ulp=32,
         label="tall_full"),
    case(L + "qr", "f32[5,2]", kwargs={"full_matrices": True}, transforms=DIFF, ulp=32,
         x64=True, label="tall_full_x64"),
    wrap("qr_fixed", L + "qr", "f32[2,4]", transforms=NOHVP, ulp=32, label="wide"),
    wrap("qr_fixed", L + "qr", "f32[2,4,4]", transforms=NOHVP, ulp=32),
    case(L + "qr", "f32[4,4]", kwargs={"pivoting": True}, transforms=NOGRAD + ("jvp",),
         ulp=32, label="pivoting"),
    case(L + "qr", "f32[4,2]", kwargs={"pivoting": True, "full_matrices": False},
         transforms=NOGRAD, ulp=32, label="pivoting_reduced"))
add(case(L + "svd", "f32[4,4]", transforms=BASIC, ulp=32),
    wrap("usv_fixed", L + "svd", "f32[4,4]", transforms=FULL, ulp=32),
    wrap("usv_fixed", L + "svd", "f32[4,2]", kwargs={"full_matrices": False}, transforms=FULL,
         ulp=32, label="tall"),
    wrap("usv_fixed", L + "svd", "f32[2,4]", kwargs={"full_matrices": False},
         transforms=NOHVP, ulp=32, label="wide"),
    case(L + "svd", "f32[4,2]", kwargs={"compute_uv": False}, transforms=FULL, ulp=32,
         label="values"),
    case(L + "svd", "f32[2,4,2]", kwargs={"compute_uv": False}, transforms=NOHVP, ulp=32,
         label="values_batch"),
    wrap("usv_fixed", L + "svd", "f64[5,4]", kwargs={"full_matrices": False}, x64=True,
         transforms=DIFF, ulp=32, label="x64"),
    case(L + "svd", "f32[4,2]", transforms=("eager", "jit", "grad"), label="full_grad_error"),
    case(L + "svd", "f32[4,2]", kwargs={"full_matrices": False,
                                        "algorithm": Call("lax.linalg.SvdAlgorithm", "QR")},
         transforms=BASIC, ulp=32, label="gesvd"))
for _kw in ({"left_side": True, "lower": True}, {"left_side": True, "lower": False,
                                                  "transpose_a": True},
            {"left_side": False, "lower": True, "unit_diagonal": True},
            {"left_side": False, "lower": False, "transpose_a": True, "unit_diagonal": True}):
    _b = "f32[4,2]" if _kw["left_side"] else "f32[2,4]"
    add(wrap("dominant", L + "triangular_solve", "f32[4,4]", _b, kwargs=_kw, transforms=FULL,
             ulp=16, label="_".join(k for k, v in _kw.items() if v) or "right"))
add(wrap("dominant", L + "triangular_solve", "f32[2,4,4]", "f32[2,4,2]",
         kwargs={"left_side": True}, transforms=NOHVP, ulp=16, label="batch"),
    wrap("dominant", L + "triangular_solve", "f32[4,4]", "f32[4]",
         kwargs={"left_side": True, "lower": True}, transforms=NOHVP, ulp=16, label="vector"),
    case(L + "triangular_solve", "f32[4,4]", "f32[4,2]", kwargs={"left_side": True},
         transforms=NOGRAD, ulp=64, label="direct"),
    case(L + "triangular_solve", "f32[4,4]", "f32[2,4]", kwargs={"left_side": True},
         transforms=("eager",), label="bad_shapes"),
    case(L + "triangular_solve", "f32[4,2]", "f32[2,4]", transforms=("eager",),
         label="not_square"),
    case(L + "triangular_solve", "f32[4,4]", "f32[2,4,4]", transforms=("eager",),
         label="batch_mismatch"))
add(case(L + "tridiagonal_solve", "f32[4]:unit", "f32[4]:gt1", "f32[4]:unit", "f32[4,2]",
         transforms=FULL, ulp=16),
    case(L + "tridiagonal_solve", "f32[2,5]:unit", "f32[2,5]:gt1", "f32[2,5]:unit",
         "f32[2,5,1]", transforms=NOHVP, ulp=16),
    case(L + "tridiagonal_solve", "f32[4]", "f32[5]", "f32[4]", "f32[4,2]",
         transforms=("eager",), label="bad_shapes"))
add(case(L + "householder_product", "f32[4,2]", "f32[2]:unit", transforms=NOGRAD + ("grad",),
         ulp=16),
    case(L + "householder_product", "f32[4,4]", "f32[2]:unit", ulp=16, label="fewer_taus"),
    case(L + "householder_product", "f32[2,4]", "f32[2]", transforms=("eager",), label="wide"))
add(case(L + "hessenberg", "f32[4,4]", transforms=NOGRAD + ("jvp",), ulp=32),
    case(L + "hessenberg", "f32[2,5,5]", ulp=32),
    case(L + "tridiagonal", "f32[4,4]", transforms=NOGRAD + ("jvp",), ulp=32),
    case(L + "tridiagonal", "f32[4,4]", kwargs={"lower": False}, ulp=32, label="upper"),
    case(L + "schur", "f32[4,4]", transforms=BASIC, ulp=64),
    case(L + "schur", "f32[4,4]", kwargs={"compute_schur_vectors": False}, transforms=BASIC,
         ulp=64, label="novectors"),
    wrap("schur_rebuild", L + "schur", "f32[4,4]", transforms=NOGRAD, ulp=64),
    case(L + "schur", "f32[4,4]", kwargs={"sort_eig_vals": True}, transforms=("eager",),
         label="sort"))
add(case(L + "symmetric_product", "f32[4,2]", "f32[4,4]", ulp=8),
    case(L + "symmetric_product", "f32[4,2]", "f32[4,4]",
         kwargs={"alpha": 2.0, "beta": 0.5, "symmetrize_output": True}, ulp=8, label="scaled"),
    wrap("upper", L + "cholesky_update", "f32[4,4]", "f32[4]", transforms=BASIC, ulp=32),
    case(L + "ormqr", "f32[4,2]", "f32[2]:unit", "f32[4,2]", ulp=16),
    case(L + "ormqr", "f32[4,2]", "f32[2]:unit", "f32[5,4]",
         kwargs={"left": False, "transpose": True}, ulp=16, label="right_t"),
    case(L + "qdwh", "f32[4,2]", transforms=("eager", "jit", "vmap", "jvp"), ulp=256),
    case(L + "qdwh", "f32[2,4]", transforms=("eager",), label="wide"))

add(wrap("custom_linear_solve", "lax.custom_linear_solve", Ref("numpy.linalg.solve"),
         "f32[4,4]", "f32[4]", transforms=FULL, ulp=64, label="dense"),
    wrap("custom_linear_solve", "lax.custom_linear_solve", Ref("numpy.linalg.solve"),
         "f32[4,4]", "f32[4,2]", kwargs={"symmetric": True}, transforms=NOHVP, ulp=64,
         label="symmetric"),
    case("lax.custom_linear_solve", lambda x: x * 2.0, "f32[4]", lambda mv, b: b / 2.0,
         static=(0, 2), kwargs={"symmetric": True}, transforms=FULL, label="scaling"),
    case("lax.custom_linear_solve", lambda x: x * 2.0, "f32[4]", lambda mv, b: b / 2.0,
         static=(0, 2), transforms=("eager", "jit", "jvp", "grad"), label="no_transpose"),
    wrap("sqrt_root", "lax.custom_root", "f32[4]:pos", transforms=FULL, ulp=16),
    case("lax.custom_root", lambda x: x * x - 2.0, "f32[]:pos", _newton,
         lambda g, y: y / g(1.0), static=(0, 2, 3), transforms=("eager", "jit", "vmap", "grad"),
         ulp=16, label="sqrt2"))

# ------------------------------------------------------------------ jax.numpy.linalg

N = "numpy.linalg."
add(case(N + "cholesky", "f32[4,4]", label="not_pd_nan"),
    wrap("spd", N + "cholesky", "f32[4,4]", transforms=FULL, ulp=16),
    wrap("spd", N + "cholesky", "f32[2,4,4]", kwargs={"upper": True}, transforms=NOHVP, ulp=16,
         label="upper"),
    case(N + "cholesky", "i32[2,2]", label="int"))
add(case(N + "det", "f32[4,4]", transforms=FULL, ulp=32),
    case(N + "det", "f32[2,4,4]", transforms=NOHVP, ulp=32),
    case(N + "det", "f64[5,5]", x64=True, transforms=DIFF, ulp=32),
    wrap("singular", N + "det", "f32[4,4]", transforms=BASIC, ulp=64),
    case("array.linalg_singular_point", Ref(N + "det"), Ref("lax.stop_gradient"), "f32[4,4]",
         transforms=NOHVP, ulp=64, label="det_at_singular"),
    case(N + "det", "f32[1,1]", transforms=DIFF, label="one"),
    case(N + "det", "f32[0,0]", transforms=BASIC, label="empty"),
    case(N + "det", "i32[2,2]", label="int"),
    case(N + "det", "f32[4]", transforms=("eager",), label="rank1"),
    case(N + "det", "f32[2,4]", transforms=("eager",), label="not_square"))
add(case(N + "slogdet", "f32[4,4]", transforms=FULL, ulp=32),
    case(N + "slogdet", "f32[2,4,4]", kwargs={"method": "qr"}, transforms=NOHVP, ulp=32,
         label="qr"),
    wrap("singular", N + "slogdet", "f32[4,4]", transforms=NOGRAD, ulp=64),
    case(N + "slogdet", "f32[4,4]", kwargs={"method": "cholesky"}, transforms=("eager",),
         label="bad_method"))
add(case(N + "inv", "f32[4,4]", transforms=FULL, ulp=64),
    case(N + "inv", "f32[2,4,4]", transforms=NOHVP, ulp=64),
    case(N + "inv", "i32[2,2]:pos", label="int", ulp=64),
    case(N + "inv", "f32[2,4]", transforms=("eager",), label="not_square"),
    wrap("singular", N + "inv", "f32[2,2]", transforms=BASIC, label="singular"))
add(case(N + "solve", "f32[4,4]", "f32[4]", transforms=FULL, ulp=64),
    case(N + "solve", "f32[4,4]", "f32[4,2]", transforms=FULL, ulp=64),
    case(N + "solve", "f32[2,4,4]", "f32[4,5]", transforms=NOHVP, ulp=64, label="bcast"),
    case(N + "solve", "f32[4,4]", "f32[2,4,1]", transforms=NOHVP, ulp=64, label="bcast_b"),
    case(N + "solve", "f64[5,5]", "f64[5]", x64=True, transforms=DIFF, ulp=64),
    case(N + "solve", "f32[2,4,4]", "f32[2,4]", transforms=("eager",), label="batched_vector"),
    case(N + "solve", "f32[4,4]", "f32[5]", transforms=("eager",), label="bad_shapes"))
add(case(N + "eigh", "f32[4,4]", transforms=BASIC, ulp=32),
    wrap("wv_fixed", N + "eigh", "f32[4,4]", transforms=FULL, ulp=32),
    wrap("wv_fixed", N + "eigh", "f32[4,4]", kwargs={"UPLO": "U", "symmetrize_input": False},
         transforms=NOHVP, ulp=32, label="upper"),
    case(N + "eigh", "f32[4,4]", kwargs={"UPLO": "X"}, transforms=("eager",), label="bad_uplo"),
    case(N + "eigvalsh", "f32[4,4]", transforms=FULL, ulp=32),
    case(N + "eigvalsh", "f32[2,4,4]", kwargs={"UPLO": "U"}, transforms=NOHVP, ulp=32,
         label="upper"),
    case(N + "eigvalsh", "i32[4,4]", ulp=32, label="int"))
add(case(N + "svd", "f32[4,4]", transforms=BASIC, ulp=32),
    wrap("usv_fixed", N + "svd", "f32[4,4]", transforms=FULL, ulp=32),
    wrap("usv_fixed", N + "svd", "f32[4,2]", kwargs={"full_matrices": False},
         transforms=NOHVP, ulp=32, label="reduced"),
    case(N + "svd", "f32[2,4,2]", kwargs={"compute_uv": False}, transforms=FULL, ulp=32,
         label="values"),
    wrap("usv_fixed", N + "svd", "f32[4,4]", kwargs={"hermitian": True}, transforms=NOGRAD,
         ulp=32, label="hermitian"),
    case(N + "svd", "f32[4,4]", kwargs={"hermitian": True, "compute_uv": False},
         transforms=NOGRAD, ulp=32, label="hermitian_values"),
    case(N + "svdvals", "f32[4,2]", transforms=FULL, ulp=32))
add(case(N + "qr", "f32[4,4]", transforms=FULL, ulp=32),
    case(N + "qr", "f32[4,2]", transforms=NOHVP, ulp=32, label="reduced"),
    case(N + "qr", "f32[4,2]", kwargs={"mode": "complete"}, transforms=NOHVP, ulp=32,
         label="complete"),
    case(N + "qr", "f32[2,4]", kwargs={"mode": "r"}, transforms=NOHVP, ulp=32, label="r"),
    case(N + "qr", "f32[4,2]", kwargs={"mode": "raw"}, transforms=NOGRAD, ulp=32, label="raw"),
    case(N + "qr", "f32[4,2]", kwargs={"mode": "economic"}, transforms=("eager",),
         label="bad_mode"))
add(case(N + "pinv", "f32[4,2]", transforms=FULL, ulp=64),
    case(N + "pinv", "f32[2,4]", transforms=NOHVP, ulp=64, label="wide"),
    case(N + "pinv", "f32[2,4,4]", kwargs={"rtol": 0.1}, transforms=NOHVP, ulp=64,
         label="rtol"),
    case(N + "pinv", "i32[2,2]", ulp=64, label="int"),
    case(N + "matrix_rank", "f32[4,2]"),
    case(N + "matrix_rank", "f32[2,4,4]", kwargs={"rtol": 0.5}, label="rtol"),
    wrap("singular", N + "matrix_rank", "f32[4,4]"),
    case(N + "matrix_rank", "f32[4]", label="vector"),
    case(N + "matrix_rank", "f32[4,4]", kwargs={"hermitian": True}, label="hermitian"),
    case(N + "cond", "f32[4,4]", transforms=FULL, ulp=64),
    case(N + "cond", "f32[4,2]", transforms=NOHVP, ulp=64, label="tall"),
    wrap("singular", N + "cond", "f32[4,4]", 1, static=(2,), transforms=BASIC),
    case(N + "cond", "f32[4,2]", 1, static=(1,), transforms=("eager",), label="p1_not_square"))
for _p in (1, -1, np.inf, "fro", "nuc", -2):
    add(case(N + "cond", "f32[4,4]", _p, static=(1,), transforms=("eager", "jit", "grad"),
             ulp=128))
add(case(N + "lstsq", "f32[4,2]", "f32[4]", transforms=NOHVP, ulp=64),
    case(N + "lstsq", "f32[4,2]", "f32[4,2]", kwargs={"numpy_resid": True},
         transforms=BASIC, ulp=64, label="numpy_resid"),
    case(N + "lstsq", "f32[2,4]", "f32[2]", kwargs={"numpy_resid": True},
         transforms=("eager",), ulp=64, label="wide_numpy_resid"),
    case(N + "lstsq", "f32[4,2]", "f32[4]", kwargs={"rcond": 0.5}, transforms=BASIC, ulp=64,
         label="rcond"),
    case(N + "lstsq", "f32[2,4,2]", "f32[4]", transforms=("eager",), label="batched"))
add(case(N + "matrix_power", "f32[4,4]", 3, static=(1,), transforms=FULL, ulp=16),
    case(N + "matrix_power", "f32[2,4,4]", -2, static=(1,), transforms=NOHVP, ulp=64,
         label="neg"),
    case(N + "matrix_power", "f32[4,4]", 0, static=(1,), label="zero"),
    case(N + "matrix_power", "i32[2,2]", 5, static=(1,), label="int"),
    case(N + "matrix_power", "f32[2,4]", 2, static=(1,), transforms=("eager",),
         label="not_square"),
    case(N + "matrix_power", "f32[2,2]", 2.0, static=(1,), transforms=("eager",),
         label="float_n"))
add(case(N + "multi_dot", ["f32[4]", "f32[4,2]", "f32[2,5]", "f32[5]"], transforms=FULL, ulp=16),
    case(N + "multi_dot", ["f32[5,4]", "f32[4,2]", "f32[2,5]"], transforms=NOHVP, ulp=16,
         label="matrices"),
    case(N + "multi_dot", ["f32[4]"], transforms=("eager",), label="one"))
add(case(N + "tensorinv", "f32[4,2,2]", kwargs={"ind": 1}, transforms=FULL, ulp=64),
    case(N + "tensorinv", "f32[2,2,4]", transforms=NOHVP, ulp=64, label="ind2"),
    case(N + "tensorsolve", "f32[2,2,4]", "f32[2,2]", transforms=FULL, ulp=64),
    case(N + "tensorsolve", "f32[4,2,2]", "f32[2,2]", kwargs={"axes": (0,)}, transforms=NOHVP,
         ulp=64, label="axes"))
for _ord in (None, 1, 2, -1, -2, np.inf, -np.inf, 0, 3, 0.5):
    add(case(N + "norm", "f32[5]:nz", _ord, static=(1,), ulp=16,
             transforms=FULL if _ord in (None, 3) else ("eager", "jit", "grad")))
for _ord in (None, 1, 2, -1, -2, np.inf, -np.inf, "fro", "nuc", 3):
    add(case(N + "norm", "f32[4,2]:distinct", _ord, static=(1,), ulp=32,
             transforms=FULL if _ord in ("nuc", 2) else ("eager", "jit", "grad"),
             label=f"mat_{_ord}"))
add(case(N + "norm", "f32[2,4,2]", kwargs={"axis": (2, 0), "ord": 1}, transforms=NOHVP,
         label="axes"),
    case(N + "norm", "f32[2,4]", kwargs={"axis": 1, "keepdims": True}, transforms=NOHVP,
         label="keepdims"),
    case(N + "norm", "f32[2,4]", kwargs={"keepdims": True}, label="keepdims_all"),
    case(N + "norm", "f32[2,2,2]", kwargs={"ord": 2}, transforms=("eager",), label="3d_ord"),
    case(N + "norm", "f32[2,4]", kwargs={"axis": 2}, transforms=("eager",), label="bad_axis"),
    case(N + "norm", "f32[4]", "fro", static=(1,), transforms=("eager",), label="vec_fro"),
    case(N + "norm", "i32[4]", label="int"),
    case(N + "norm", 3.0, label="scalar"),
    case(N + "vector_norm", "f32[2,4]", transforms=FULL),
    case(N + "vector_norm", "f32[2,4]", kwargs={"axis": 1, "ord": 1}, transforms=NOHVP,
         label="axis1"),
    case(N + "vector_norm", "f32[2,4,2]:distinct", kwargs={"axis": (0, 2), "ord": np.inf,
                                                          "keepdims": True},
         transforms=NOHVP, label="axes_inf"),
    case(N + "vector_norm", "f32[2,4]", kwargs={"ord": 0}, label="ord0"),
    case(N + "vector_norm", "f32[2,4]", kwargs={"ord": "fro"}, transforms=("eager",),
         label="fro"),
    case(N + "matrix_norm", "f32[2,4,2]", transforms=FULL),
    case(N + "matrix_norm", "f32[2,4,2]", kwargs={"ord": "nuc", "keepdims": True},
         transforms=NOHVP, ulp=32, label="nuc"),
    case(N + "matrix_norm", "f32[4]", transforms=("eager",), label="vector"))
add(case(N + "cross", "f32[2,3]", "f32[3]", transforms=FULL),
    case(N + "cross", "f32[3,2]", "f32[3,2]", kwargs={"axis": 0}, transforms=NOHVP,
         label="axis0"),
    case(N + "cross", "i32[3]", "i32[3]", label="int"),
    case(N + "cross", "f32[2]", "f32[2]", transforms=("eager",), label="not_3d"),
    case(N + "outer", "f32[4]", "f32[2]", transforms=FULL),
    case(N + "outer", "f32[4,1]", "f32[2]", transforms=("eager",), label="2d"),
    case(N + "trace", "f32[2,4,4]", transforms=FULL),
    case(N + "trace", "i32[4,4]", kwargs={"offset": 1}, label="int_offset"),
    case(N + "diagonal", "f32[2,4,5]", kwargs={"offset": -1}, transforms=FULL),
    case(N + "vecdot", "f32[2,4]", "f32[4]", transforms=FULL),
    case(N + "vecdot", "f32[4,2]", "f32[4,1]", kwargs={"axis": 0}, transforms=NOHVP,
         label="axis0"),
    case(N + "matmul", "f32[2,4]", "f32[4,5]", transforms=FULL),
    case(N + "matrix_transpose", "f32[2,4,5]", transforms=FULL),
    case(N + "matrix_transpose", "f32[4]", transforms=("eager",), label="1d"),
    case(N + "tensordot", "f32[2,4]", "f32[4,5]", kwargs={"axes": 1}, transforms=FULL),
    case(N + "tensordot", "f32[2,4]", "f32[2,4]", kwargs={"axes": ([0, 1], [0, 1])},
         transforms=NOHVP, label="pairs"))

# ------------------------------------------------------------------ jax.scipy.linalg

S = "scipy.linalg."
add(wrap("spd", S + "cholesky", "f32[4,4]", transforms=FULL, ulp=16),
    wrap("spd", S + "cholesky", "f32[2,4,4]", kwargs={"lower": True}, transforms=NOHVP,
         ulp=16, label="lower"),
    case(S + "cholesky", "f32[4,4]", label="not_pd_nan"),
    wrap("spd", S + "cho_factor", "f32[4,4]", transforms=NOHVP, ulp=16),
    case(S + "cho_factor", "f32[4,4]", kwargs={"lower": True}, label="not_pd_nan"),
    case("array.linalg_factor_solve", Ref(S + "cho_factor"), Ref(S + "cho_solve"), "f32[4,4]",
         "f32[4,2]", kwargs={"spd": True}, transforms=FULL, ulp=64, label="cho_solve"),
    case("array.linalg_factor_solve", Ref(S + "cho_factor"), Ref(S + "cho_solve"), "f32[4,4]",
         "f32[4]", kwargs={"spd": True, "fkw": {"lower": True}}, transforms=NOHVP, ulp=64,
         label="cho_solve_lower_vector"),
    case(S + "cho_solve", ("f32[4,4]:gt1", False), "f32[4]", transforms=("eager", "vmap"), ulp=64,
         label="direct"))
add(case(S + "lu", "f32[4,4]", transforms=FULL, ulp=16),
    case(S + "lu", "f32[4,2]", kwargs={"permute_l": True}, transforms=NOHVP, ulp=16,
         label="permute_l"),
    case(S + "lu", "f32[2,2,4]", transforms=NOHVP, ulp=16, label="wide_batch"),
    case(S + "lu_factor", "f32[4,4]", transforms=FULL, ulp=16),
    case("array.linalg_factor_solve", Ref(S + "lu_factor"), Ref(S + "lu_solve"), "f32[4,4]",
         "f32[4,2]", transforms=FULL, ulp=64, label="lu_solve"),
    case("array.linalg_factor_solve", Ref(S + "lu_factor"), Ref(S + "lu_solve"), "f32[4,4]",
         "f32[4]", kwargs={"trans": 1}, transforms=NOHVP, ulp=64, label="lu_solve_trans"),
    case(S + "lu_solve", ("f32[4,4]:gt1", "i32[4]:idx4"), "f32[4]", transforms=BASIC, ulp=64,
         label="direct"))
add(case(S + "solve", "f32[4,4]", "f32[4,2]", transforms=FULL, ulp=64),
    wrap("spd", S + "solve", "f32[4,4]", "f32[4]", kwargs={"assume_a": "pos"},
         transforms=FULL, ulp=64, label="pos"),
    case(S + "solve", "f32[4,4]", "f32[4]", kwargs={"assume_a": "pos", "lower": True},
         transforms=BASIC, label="pos_not_pd"),
    case(S + "solve", "f32[4,4]", "f32[4]", kwargs={"assume_a": "sym"}, transforms=NOHVP,
         ulp=64, label="sym"),
    case(S + "solve", "f32[4,4]", "f32[4]", kwargs={"assume_a": "banded"},
         transforms=("eager",), label="bad_assume"))
for _trans in (0, 1, "T"):
    add(wrap("dominant", S + "solve_triangular", "f32[4,4]", "f32[4,2]",
             kwargs={"trans": _trans, "lower": _trans == 1}, transforms=FULL, ulp=16,
             label=f"trans{_trans}"))
add(wrap("dominant", S + "solve_triangular", "f32[2,4,4]", "f32[2,4]",
         kwargs={"unit_diagonal": True}, transforms=NOHVP, ulp=16, label="batched_vector"),
    case(S + "solve_triangular", "f32[4,4]", "f32[4]", kwargs={"trans": 3},
         transforms=("eager",), label="bad_trans"))
add(case(S + "det", "f32[4,4]", transforms=FULL, ulp=32),
    case(S + "inv", "f32[4,4]", transforms=FULL, ulp=64),
    wrap("wv_fixed", S + "eigh", "f32[4,4]", transforms=FULL, ulp=32),
    case(S + "eigh", "f32[4,4]", kwargs={"eigvals_only": True}, transforms=FULL, ulp=32,
         label="values"),
    case(S + "eigh", "f32[4,4]", "f32[4,4]", transforms=("eager",), label="generalized"),
    wrap("usv_fixed", S + "svd", "f32[4,4]", transforms=FULL, ulp=32),
    wrap("usv_fixed", S + "svd", "f32[4,2]", kwargs={"full_matrices": False,
                                                     "lapack_driver": "gesvd"},
         transforms=BASIC, ulp=32, label="gesvd"),
    case(S + "svd", "f32[4,2]", kwargs={"compute_uv": False}, transforms=FULL, ulp=32,
         label="values"),
    case(S + "qr", "f32[4,4]", transforms=FULL, ulp=32),
    case(S + "qr", "f32[4,2]", kwargs={"mode": "economic"}, transforms=NOHVP, ulp=32,
         label="economic"),
    case(S + "qr", "f32[4,2]", kwargs={"mode": "r"}, transforms=NOHVP, ulp=32, label="r"),
    case(S + "qr", "f32[4,2]", kwargs={"pivoting": True}, transforms=BASIC, ulp=32,
         label="pivoting"),
    case(S + "qr", "f32[4,2]", kwargs={"mode": "raw"}, transforms=("eager",), label="raw"),
    case(S + "qr_multiply", "f32[4,2]", "f32[5,4]", transforms=NOGRAD, ulp=32),
    case(S + "qr_multiply", "f32[4,2]", "f32[2]", kwargs={"mode": "left"}, transforms=BASIC,
         ulp=32, label="left_vector"),
    case(S + "qr_multiply", "f32[4,2]", "f32[2,2]", transforms=("eager",), label="bad"),
    case(S + "hessenberg", "f32[4,4]", transforms=NOGRAD, ulp=32),
    case(S + "hessenberg", "f32[4,4]", kwargs={"calc_q": True}, transforms=NOGRAD, ulp=32,
         label="calc_q"),
    case(S + "schur", "f32[4,4]", transforms=BASIC, ulp=64),
    case(S + "polar", "f32[4,2]", transforms=("eager", "jit", "vmap", "jvp"), ulp=256),
    case(S + "polar", "f32[2,4]", kwargs={"side": "left"}, transforms=BASIC, ulp=256,
         label="left"),
    case(S + "polar", "f32[4,4]", kwargs={"method": "svd"}, transforms=NOHVP, ulp=64,
         label="svd"),
    case(S + "polar", "f32[4,4]", kwargs={"side": "left"}, transforms=("eager",),
         label="left_square"),
    case(S + "solve_sylvester", "f32[4,4]:unit", "f32[2,2]:gt1", "f32[4,2]", transforms=NOGRAD,
         ulp=256),
    case(S + "solve_sylvester", "f32[2,2,2]", "f32[2,2]", "f32[2,2]", transforms=("eager",),
         ulp=256, label="batch"))
add(case(S + "expm", "f64[4,4]", x64=True, transforms=("eager", "jit", "vmap", "grad", "jvp"),
         ulp=64),
    case(S + "expm", "f64[4,4]:unit", x64=True, transforms=BASIC, ulp=64, label="small_norm"),
    case(S + "expm", "f32[2,2]:unit", transforms=BASIC, ulp=256, label="f32"),
    case(S + "expm", "f64[2,2]", kwargs={"max_squarings": 0}, x64=True, transforms=BASIC,
         label="max_squarings"),
    case(S + "expm_frechet", "f64[4,4]", "f64[4,4]", x64=True, transforms=BASIC, ulp=256),
    case(S + "expm_frechet", "f64[4,4]:unit", "f64[4,4]", kwargs={"compute_expm": False},
         x64=True, transforms=BASIC, ulp=256, label="no_expm"))
add(case(S + "eigh_tridiagonal", "f32[5]", "f32[4]", kwargs={"eigvals_only": True},
         transforms=NOGRAD, ulp=64),
    wrap("wv_fixed", S + "eigh_tridiagonal", "f32[5]", "f32[4]", transforms=BASIC, ulp=64),
    case(S + "eigh_tridiagonal", "f32[5]", "f32[4]",
         kwargs={"eigvals_only": True, "select": "i", "select_range": (1, 3)},
         transforms=BASIC, ulp=64, label="select_i"),
    case(S + "eigh_tridiagonal", "f32[5]", "f32[4]",
         kwargs={"eigvals_only": True, "select": "v", "select_range": (0.0, 1.0)},
         transforms=("eager",), label="select_v"))
add(case(S + "block_diag", "f32[2,2]", "f32[4]", 2.0, "i32[1,2]", transforms=BASIC),
    case(S + "block_diag", "f32[2,2]", "f32[1,2]", transforms=FULL, label="floats"),
    case(S + "block_diag", "f32[2,2,2]", transforms=("eager",), label="3d"),
    case(S + "circulant", "f32[4]", transforms=FULL),
    case(S + "circulant", "i32[2,4]", label="int_batch"),
    case(S + "toeplitz", "f32[4]", "f32[5]", transforms=FULL),
    case(S + "toeplitz", "f32[2,4]", transforms=NOHVP, label="batch"),
    case(S + "hankel", "f32[4]", "f32[5]", transforms=FULL),
    case(S + "hankel", "f32[4]", transforms=NOHVP, label="c_only"),
    case(S + "companion", "f32[5]:nz", transforms=FULL),
    case(S + "companion", "i32[2,4]:pos", label="int_batch"),
    case(S + "companion", "f32[1]", transforms=("eager",), label="short"),
    case(S + "fiedler", "f32[5]", transforms=("eager", "jit", "vmap", "jvp")),
    case(S + "fiedler_companion", "f32[6]:nz", transforms=FULL),
    case(S + "fiedler_companion", "f32[2,5]:nz", transforms=NOGRAD, label="batch"),
    case(S + "leslie", "f32[4]", "f32[2]:prob", transforms=("eager",), label="bad_lengths"),
    case(S + "leslie", "f32[5]", "f32[4]:prob", transforms=FULL),
    case(S + "convolution_matrix", "f32[4]", 5, static=(1,), transforms=FULL),
    case(S + "convolution_matrix", "f32[5]", 4, static=(1,), kwargs={"mode": "same"},
         transforms=NOHVP, label="same"),
    case(S + "convolution_matrix", "f32[4]", 5, static=(1,), kwargs={"mode": "valid"},
         transforms=NOHVP, label="valid"))
for _fn, _args in [("hadamard", (4,)), ("hadamard", (8, "float32")), ("hadamard", (6,)),
                   ("helmert", (5,)), ("helmert", (4, True)), ("hilbert", (4,)),
                   ("hilbert", (0,)), ("invhilbert", (4,)), ("pascal", (4,)),
                   ("pascal", (5, "lower")), ("pascal", (4, "upper")), ("invpascal", (5,)),
                   ("invpascal", (4, "lower")), ("pascal", (4, "bad"))]:
    # JAX computes these in the working precision: its float32 entries are off by a few ulp
    add(case(S + _fn, *_args, static=tuple(range(len(_args))), transforms=BASIC, ulp=64))
add(case(S + "hilbert", 4, static=(0,), x64=True, transforms=("eager",), label="x64"))

# ------------------------------------------------------------------ complex (Hermitian) input

_R4, _R42 = ("f32[4,4]", "f32[4,4]"), ("f32[4,2]", "f32[4,2]")
add(wrap("hpd", L + "cholesky", "c64[4,4]", ulp=16),
    wrap("hpd", L + "cholesky", "c64[2,4,4]", kwargs={"symmetrize_input": False}, ulp=16,
         label="nosym"),
    wrap("hpd", L + "cholesky", "c128[4,4]", x64=True, ulp=16),
    wrap("hpd_parts", L + "cholesky", *_R4, transforms=FULL, ulp=32),
    wrap("hpd_parts", L + "cholesky", *_R4, kwargs={"symmetrize_input": False},
         transforms=NOHVP, ulp=32, label="nosym"),
    wrap("hpd_parts", L + "cholesky", "f64[3,3]", "f64[3,3]", x64=True, transforms=DIFF,
         ulp=32),
    case(L + "cholesky", "c64[4,4]", label="cplxchol_not_pd_nan"),
    case(L + "cholesky", "c64[2,4]", label="cplxchol_not_square", transforms=("eager",)),
    case(L + "cholesky", "c64[2,4]", kwargs={"symmetrize_input": False},
         label="cplxchol_not_square_nosym", transforms=("eager",)),
    wrap("hpd", N + "cholesky", "c64[2,4,4]", kwargs={"upper": True}, ulp=16, label="upper"),
    wrap("hpd_parts", N + "cholesky", *_R4, kwargs={"upper": True}, transforms=NOHVP, ulp=32,
         label="upper"),
    wrap("hpd", S + "cholesky", "c64[4,4]", ulp=16),
    wrap("hpd_parts", S + "cholesky", *_R4, kwargs={"lower": True}, transforms=NOHVP, ulp=32,
         label="lower"),
    case("array.linalg_hpd_factor_solve_parts", Ref(S + "cho_factor"), Ref(S + "cho_solve"),
         *_R4, *_R42, transforms=NOHVP, ulp=64, label="cho_solve"),
    case("array.linalg_hpd_factor_solve_parts", Ref(S + "cho_factor"), Ref(S + "cho_solve"),
         *_R4, *_R42, kwargs={"fkw": {"lower": True}}, transforms=NOHVP, ulp=64,
         label="cho_solve_lower"))
for _kw in ({"left_side": True, "lower": True, "conjugate_a": True},
            {"left_side": True, "lower": True, "transpose_a": True, "conjugate_a": True},
            {"left_side": False, "lower": False, "transpose_a": True, "conjugate_a": True},
            {"left_side": False, "lower": True, "unit_diagonal": True}):
    _lab = "_".join(k for k, v in _kw.items() if v)
    _b = ("c64[4,2]", _R42) if _kw["left_side"] else ("c64[2,4]", ("f32[2,4]", "f32[2,4]"))
    add(wrap("cdominant", L + "triangular_solve", "c64[4,4]", _b[0], kwargs=_kw, ulp=16,
             label=_lab),
        wrap("cdominant_parts", L + "triangular_solve", *_R4, *_b[1], kwargs=_kw,
             transforms=FULL if _kw.get("transpose_a") else NOHVP, ulp=16, label=_lab))
add(wrap("cdominant", L + "triangular_solve", "c128[2,4,4]", "c128[2,4,2]",
         kwargs={"left_side": True, "transpose_a": True, "conjugate_a": True}, x64=True,
         ulp=16, label="batch_x64"),
    wrap("cdominant_parts", S + "solve_triangular", *_R4, *_R42,
         kwargs={"trans": 2, "lower": True}, transforms=NOHVP, ulp=16, label="trans2"),
    wrap("cdominant_parts", S + "solve_triangular", *_R4, *_R42, kwargs={"trans": "C"},
         transforms=NOHVP, ulp=16, label="transC"),
    case(L + "triangular_solve", "c64[4,4]", "f32[4,2]", kwargs={"left_side": True},
         transforms=("eager",), label="cplxchol_mixed_dtypes"))

SKIP_REASONS["lax"] = {**SKIP_REASONS.get("lax", {}), "linalg": "submodule (its functions are "
                                                                 "covered as lax.linalg.*)"}
_ENUM = "an enum of algorithm choices (passed as arguments in the svd / eigh cases)"
SKIP_REASONS["lax.linalg"] = {"SvdAlgorithm": _ENUM,
                              "EighImplementation": _ENUM, "EigImplementation": _ENUM,
                              "cholesky_update": "covered as array.linalg_upper (its input must "
                                                 "be an upper Cholesky factor)"}
SKIP_REASONS["numpy.linalg"] = {
    **{n: "a result type (NamedTuple), checked through the functions returning it" for n in (
        "EighResult", "QRResult", "SlogdetResult", "SVDResult", "EigResult")}}

