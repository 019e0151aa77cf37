"""eig: eigenvalues and (left / right) eigenvectors of general square matrices, a primitive
with its rules (LAPACK's geev through SciPy, one matrix at a time).

Results are complex (complex64 for float32 / complex64 input, complex128 for 64-bit), in
LAPACK's order; each eigenvector has unit Euclidean norm and its largest component real, as
JAX's CPU eig returns them. The derivative of the eigenvalues is diag(V^-1 dA V); that of the
right eigenvectors V (F o (V^-1 dA V)) with F_ij = 1 / (w_j - w_i) off the diagonal, which JAX
only gives with enable_eigvec_derivs=True (it is valid for distinct eigenvalues only). V^-1 is
formed from the left eigenvectors (rows u_i^H / (u_i^H v_i)), so no complex solve is needed."""
from __future__ import annotations

import numpy as np
import scipy.linalg

from corejax import dtypes
from corejax.core import ShapedArray, get_aval
from corejax.transforms import ad
from corejax.transforms.ad import Zero
from corejax.lax._factories import shape_str
from corejax.lax._linalg_util import (batch_loop, check_rank, define, diagonal, matmul, mT,
                                     no_derivative)

__all__ = ["eig", "eig_p"]


def _lax():
    from corejax import lax
    return lax


def _eig_abstract(x, *, compute_left_eigenvectors, compute_right_eigenvectors,
                  enable_eigvec_derivs=False, implementation=None):
    check_rank("eig", 0, x, 2)
    if x.dtype.kind not in "fc":
        raise TypeError(f"eig does not accept dtype {x.dtype.name} at position 0. Accepted "
                        "dtypes at position 0 are subtypes of floating, complexfloating.")
    if x.dtype.kind == "f" and x.dtype.itemsize < 4:
        raise NotImplementedError(f"eig: unsupported dtype {x.dtype.name} (LAPACK computes in "
                                  "float32 or float64): convert the input first.")
    if x.shape[-1] != x.shape[-2]:
        raise ValueError(f"The input to eig must be a square matrix. Got shape "
                         f"{shape_str(x.shape)}.")
    dt = dtypes.complex_dtype(x.dtype)
    n = x.shape[-1]
    out = [ShapedArray(x.shape[:-1], dt)]
    if compute_left_eigenvectors:
        out.append(ShapedArray(x.shape, dt))
    if compute_right_eigenvectors:
        out.append(ShapedArray(x.shape[:-2] + (n, n), dt))
    return out


def _eig_impl(x, *, compute_left_eigenvectors, compute_right_eigenvectors,
              enable_eigvec_derivs=False, implementation=None):
    dt = dtypes.complex_dtype(x.dtype)
    left, right = compute_left_eigenvectors, compute_right_eigenvectors

    def one(a):
        if not np.all(np.isfinite(a)):
            nan = np.full(a.shape, np.nan, dt)
            return (nan[0],) + (nan,) * (left + right)
        res = scipy.linalg.eig(a, left=left, right=right, check_finite=False)
        w, vs = (res, ()) if not (left or right) else (res[0], res[1:])
        return (w.astype(dt),) + tuple(np.asarray(v, dt) for v in vs)

    if x.shape[-1] == 0:
        shapes = _eig_abstract(ShapedArray(x.shape, x.dtype), compute_left_eigenvectors=left,
                               compute_right_eigenvectors=right)
        return [np.zeros(s.shape, dt) for s in shapes]
    out = batch_loop(one, x, core_ndims=(2,))
    if out is None:
        shapes = _eig_abstract(ShapedArray(x.shape, x.dtype), compute_left_eigenvectors=left,
                               compute_right_eigenvectors=right)
        return [np.zeros(s.shape, dt) for s in shapes]
    return list(out)


eig_p = define("eig", _eig_impl, _eig_abstract, multiple_results=True)


def _eig_jvp(primals, tangents, *, compute_left_eigenvectors, compute_right_eigenvectors,
             enable_eigvec_derivs=False, implementation=None):
    lax = _lax()
    (a,), (da,) = primals, tangents
    params = dict(compute_left_eigenvectors=compute_left_eigenvectors,
                  compute_right_eigenvectors=compute_right_eigenvectors,
                  enable_eigvec_derivs=enable_eigvec_derivs, implementation=implementation)
    outs = eig_p.bind(a, **params)
    if type(da) is Zero:
        return outs, [Zero(get_aval(o).to_tangent_aval()) for o in outs]
    if compute_left_eigenvectors or (compute_right_eigenvectors and not enable_eigvec_derivs):
        raise NotImplementedError(
            "Derivatives of non-symmetric eigenvectors are only valid under assumptions on the "
            "input that corejax (like JAX) cannot check: pass enable_eigvec_derivs=True to "
            "lax.linalg.eig to opt in (right eigenvectors only), or differentiate the "
            "eigenvalues alone (jnp.linalg.eigvals).")
    w, u, v = eig_p.bind(a, compute_left_eigenvectors=True, compute_right_eigenvectors=True,
                         enable_eigvec_derivs=False, implementation=implementation)
    dt = get_aval(w).dtype
    da = lax.convert_element_type(da, dt)
    uh = lax.conj(mT(u))
    # rows of V^-1: u_i^H / (u_i^H v_i)
    norms = diagonal(matmul(uh, v))
    vinv = lax.div(uh, lax.broadcast_in_dim(norms, get_aval(uh).shape,
                                            tuple(range(get_aval(norms).ndim))))
    vinv_da_v = matmul(matmul(vinv, da), v)
    dw = diagonal(vinv_da_v)
    if not compute_right_eigenvectors:
        return outs, [dw]
    n = get_aval(a).shape[-1]
    shape = get_aval(vinv_da_v).shape
    nd = len(shape)
    wj = lax.broadcast_in_dim(w, shape, tuple(range(nd - 2)) + (nd - 1,))
    wi = lax.broadcast_in_dim(w, shape, tuple(range(nd - 2)) + (nd - 2,))
    eye = lax.broadcast_in_dim(lax.convert_element_type(np.eye(n), dt), shape, (nd - 2, nd - 1))
    # F_ij = 1 / (w_j - w_i) off the diagonal, 0 on it (the identity keeps it finite there)
    f = lax.sub(lax.integer_pow(lax.add(eye, lax.sub(wj, wi)), -1), eye)
    dv = matmul(v, lax.mul(f, vinv_da_v))
    return outs, [dw, dv]


ad.primitive_jvps[eig_p] = _eig_jvp


def eig(x, *, compute_left_eigenvectors: bool = True, compute_right_eigenvectors: bool = True,
        enable_eigvec_derivs: bool = False, implementation=None, use_magma=None):
    """Eigenvalues and eigenvectors of general square matrices (lax.linalg.eig):
    [w] + [vl if compute_left_eigenvectors] + [vr if compute_right_eigenvectors], complex.
    Left eigenvectors satisfy vl^H a = w vl^H, right ones a vr = vr w."""
    return eig_p.bind(x, compute_left_eigenvectors=bool(compute_left_eigenvectors),
                      compute_right_eigenvectors=bool(compute_right_eigenvectors),
                      enable_eigvec_derivs=bool(enable_eigvec_derivs),
                      implementation=implementation)


# --- functions of triangular matrices (private: behind jax.scipy.linalg's sqrtm and funm) ----

def _triangular_sqrt_one(t):
    """The upper-triangular square root R of an upper-triangular T (R @ R = T), column by
    column: R_jj = sqrt(T_jj), R_ij = (T_ij - R_i,(i+1..j-1) R_(i+1..j-1),j) / (R_ii + R_jj)."""
    n = t.shape[-1]
    r = np.zeros_like(t)
    for j in range(n):
        r[j, j] = np.sqrt(t[j, j])
        for i in range(j - 1, -1, -1):
            inner = r[i, i + 1:j] @ r[i + 1:j, j]
            r[i, j] = 0 if t[i, j] == inner else (t[i, j] - inner) / (r[i, i] + r[j, j])
    return r


def _parlett_one(t, f_diag):
    """Parlett's recurrence: F = f(T) for upper-triangular T with distinct diagonal entries,
    from F's diagonal f(T_ii), superdiagonal by superdiagonal (T F = F T). Also the smallest
    denominator |T_jj - T_ii| met, starting from |T_00| (JAX's error estimate uses it; a zero
    denominator leaves its numerator undivided, as JAX does)."""
    n = t.shape[-1]
    f = np.diag(f_diag).astype(t.dtype)
    min_den = np.abs(t[0, 0]) if n else np.zeros((), t.real.dtype)
    for p in range(1, n):
        for i in range(n - p):
            j = i + p
            s = t[i, j] * (f[j, j] - f[i, i])
            s += t[i, i + 1:j] @ f[i + 1:j, j] - f[i, i + 1:j] @ t[i + 1:j, j]
            den = t[j, j] - t[i, i]
            f[i, j] = s / den if den != 0 else s
            min_den = min(min_den, np.abs(den))
    return f, np.asarray(min_den, t.real.dtype)


def _square_complex_abstract(name):
    def abstract(t, *rest):
        check_rank(name, 0, t, 2)
        if t.dtype.kind != "c" or t.shape[-1] != t.shape[-2]:
            raise TypeError(f"{name}: expected square complex matrices, got {t.str_short()}.")
        return ShapedArray(t.shape, t.dtype)
    return abstract


def _host_loop(one, *arrays, core_ndims):
    if arrays[0].size == 0:
        return np.zeros(arrays[0].shape, arrays[0].dtype)
    with np.errstate(all="ignore"):
        return batch_loop(one, *arrays, core_ndims=core_ndims)


triangular_sqrt_p = define(
    "triangular_sqrt", lambda t: _host_loop(_triangular_sqrt_one, t, core_ndims=(2,)),
    _square_complex_abstract("triangular_sqrt"))
def _parlett_impl(t, d):
    if t.size == 0:
        return [np.zeros(t.shape, t.dtype), np.zeros(t.shape[:-2], t.real.dtype)]
    with np.errstate(all="ignore"):
        return list(batch_loop(_parlett_one, t, d, core_ndims=(2, 1)))


def _parlett_abstract(t, d):
    out = _square_complex_abstract("parlett")(t)
    return [out, ShapedArray(t.shape[:-2], dtypes.real_dtype(t.dtype))]


parlett_p = define("parlett", _parlett_impl, _parlett_abstract, multiple_results=True)


for _p in (triangular_sqrt_p, parlett_p):
    no_derivative(_p)
