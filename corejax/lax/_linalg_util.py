"""What the linear-algebra primitives share: input checks with JAX's errors, the definition of
a LAPACK-backed primitive (batched over leading dimensions), and the small batched-matrix
helpers their derivative rules are written in (products, transposes, triangles, identities).

Every helper works on arrays whose last two dimensions are the matrix and whose leading
dimensions are a batch, and is built from lax primitives only, so the rules that use it
differentiate, batch and stage like any other lax code.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from corejax import dtypes
from corejax.core import Primitive, ShapedArray, get_aval
from corejax.transforms import ad, batching
from corejax.lax._factories import shape_str

__all__ = []


# --- input checks ----------------------------------------------------------------------------

def check_rank(name: str, position: int, aval: ShapedArray, rank: int) -> None:
    if aval.ndim < rank:
        raise TypeError(f"Input {position} to {name} must have rank at least {rank}, but got "
                        f"shape={shape_str(aval.shape)}")


def check_float(name: str, position: int, aval: ShapedArray, complex_ok: bool = False) -> None:
    """LAPACK works in float32 and float64 here: integers are a TypeError (as in JAX); float16
    (which LAPACK lacks) and complex matrices (unless `complex_ok`: the primitives with a
    complex path, such as eig, cholesky and triangular_solve) are NotImplementedError."""
    dt = aval.dtype
    if dt.kind == "c" and complex_ok:
        return
    if dt.kind == "c":
        raise NotImplementedError(f"{name}: complex matrices ({dt.name}) are not supported by "
                                  f"corejax's {name} yet (only eig, cholesky and "
                                  "triangular_solve take them); use float32 or float64.")
    if dt.kind != "f":
        raise TypeError(f"{name} does not accept dtype {dt.name} at position {position}. "
                        f"Accepted dtypes at position {position} are subtypes of floating, "
                        "complexfloating.")
    if dt.itemsize < 4:
        raise NotImplementedError(f"{name}: unsupported dtype {dt.name} (LAPACK computes in "
                                  "float32 or float64): convert the input with "
                                  ".astype(jnp.float32) first.")


def check_square(name: str, aval: ShapedArray, what: str = "The input") -> None:
    if aval.shape[-1] != aval.shape[-2]:
        raise ValueError(f"{what} to {name} must be a square matrix. Got shape "
                         f"{shape_str(aval.shape)}.")


def check_batch(name: str, avals, core_ranks) -> tuple:
    """Operands with `core_ranks` trailing (non-batch) dimensions must share their batch
    dimensions, as JAX requires of every multi-operand linear-algebra primitive."""
    nbatch = [a.ndim - r for a, r in zip(avals, core_ranks)]
    if len(set(nbatch)) != 1:
        raise TypeError(f"All inputs to {name} must have the same number of batch dimensions, "
                        f"but got {nbatch} batch dimensions for the inputs.")
    batch = avals[0].shape[:nbatch[0]]
    for a in avals[1:]:
        for i, (x, y) in enumerate(zip(batch, a.shape)):
            if x != y:
                raise ValueError(f"Batching dimension {i} of {name} corresponds to two sizes: "
                                 f"{x} and {y}")
    return batch


# --- defining a LAPACK-backed primitive ------------------------------------------------------

def batch_leading(prim: Primitive) -> None:
    """The batching rule of a primitive that maps over the leading dimensions of all its
    operands: the vmapped axis becomes the first batch dimension of every operand."""

    def rule(vals, dims, **params):
        size = next(get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not None)
        vals = [batching.bdim_at_front(v, d, size) for v, d in zip(vals, dims)]
        out = prim.bind(*vals, **params)
        return out, ([0] * len(out) if prim.multiple_results else 0)

    batching.primitive_batchers[prim] = rule


def define(name: str, impl: Callable, abstract_eval: Callable, multiple_results=False,
           batch=True) -> Primitive:
    """A primitive evaluated on the host (NumPy / LAPACK impl, no compiled lowering: under jit
    it runs as a host step). Results are never weakly typed, as in JAX."""
    prim = Primitive(name)
    prim.multiple_results = multiple_results

    def checked_impl(*args, **params):
        # Eager binds skip abstract evaluation; LAPACK would fail on a bad shape or dtype with
        # an error of its own, so the checks (and JAX's exception types) run here too.
        abstract_eval(*[ShapedArray(a.shape, a.dtype) for a in args], **params)
        return impl(*args, **params)

    prim.def_impl(checked_impl)
    prim.def_abstract_eval(abstract_eval)
    prim.weak_type_rule = lambda *args, **params: False
    if batch:
        batch_leading(prim)
    return prim


def no_derivative(prim: Primitive) -> None:
    """JAX defines no derivative for `prim`: differentiating it raises JAX's error."""

    def rule(primals, tangents, **params):
        if all(type(t) is ad.Zero for t in tangents):
            outs = prim.bind(*primals, **params)
            zeros = [ad.Zero(get_aval(o).to_tangent_aval()) for o in
                     (outs if prim.multiple_results else [outs])]
            return outs, (zeros if prim.multiple_results else zeros[0])
        raise NotImplementedError(f"Differentiation rule for '{prim.name}' not implemented "
                                  "(JAX defines none either).")

    ad.primitive_jvps[prim] = rule


def batch_loop(fn: Callable, *arrays, core_ndims, out_core=None):
    """Applies a per-matrix LAPACK routine `fn(*matrices) -> array or tuple` over the leading
    batch dimensions of `arrays` (each with `core_ndims[i]` trailing dimensions). SciPy's
    LAPACK wrappers take one matrix at a time, so this is the loop NumPy's gufuncs avoid."""
    batch = arrays[0].shape[:arrays[0].ndim - core_ndims[0]]
    flat = [a.reshape((-1,) + a.shape[a.ndim - k:]) for a, k in zip(arrays, core_ndims)]
    n = int(np.prod(batch, dtype=np.int64))
    results = [fn(*[f[i] for f in flat]) for i in range(n)]
    if not results:
        return None
    single = not isinstance(results[0], tuple)
    columns = [[r] for r in results] if single else results
    outs = [np.stack([c[j] for c in columns]).reshape(batch + np.shape(columns[0][j]))
            for j in range(len(columns[0]))]
    return outs[0] if single else tuple(outs)


def nan_on_failure(fn, x):
    """fn(x) (a tuple or an array) for a batch of matrices x; where LAPACK fails on a matrix
    (an iteration that does not converge, as on NaN input), that matrix's results are NaN,
    which is how JAX reports it, instead of an exception for the whole batch."""
    try:
        return fn(x)
    except np.linalg.LinAlgError:
        pass

    def one(matrix):
        try:
            return fn(matrix)
        except np.linalg.LinAlgError:
            shaped = fn(np.zeros_like(matrix))
            if isinstance(shaped, tuple):
                return tuple(np.full_like(o, np.nan) for o in shaped)
            return np.full_like(shaped, np.nan)

    return batch_loop(one, x, core_ndims=(2,))


# --- batched matrix helpers for the rules ----------------------------------------------------

def _lax():
    from corejax import lax
    return lax


def mT(x):
    """Swaps the last two dimensions."""
    nd = get_aval(x).ndim
    return _lax().transpose(x, tuple(range(nd - 2)) + (nd - 1, nd - 2))


def matmul(a, b):
    """a @ b for operands with the same leading batch dimensions."""
    nd = get_aval(a).ndim
    batch = tuple(range(nd - 2))
    return _lax().dot_general(a, b, (((nd - 1,), (nd - 2,)), (batch, batch)))


def _index_masks(shape):
    lax = _lax()
    nd = len(shape)
    rows = lax.broadcasted_iota(np.int32, shape, nd - 2)
    cols = lax.broadcasted_iota(np.int32, shape, nd - 1)
    return rows, cols


def where_mask(mask, x):
    """x where `mask`, zero elsewhere."""
    lax = _lax()
    aval = get_aval(x)
    return lax.select_n(mask, lax.full(aval.shape, 0, aval.dtype), x)


def tril(x, k: int = 0):
    lax = _lax()
    rows, cols = _index_masks(get_aval(x).shape)
    return where_mask(lax.ge(lax.add(rows, lax.full(rows.shape, k, np.int32)), cols), x)


def triu(x, k: int = 0):
    lax = _lax()
    rows, cols = _index_masks(get_aval(x).shape)
    return where_mask(lax.le(lax.add(rows, lax.full(rows.shape, k, np.int32)), cols), x)


def diag_mask(shape):
    rows, cols = _index_masks(shape)
    return _lax().eq(rows, cols)


def eye(shape, dtype):
    """Identity matrices of `shape` (..., m, n), batched."""
    lax = _lax()
    return lax.convert_element_type(diag_mask(tuple(shape)), dtype)


def diagonal(x):
    """The main diagonals (..., min(m, n)) of matrices (..., m, n)."""
    lax = _lax()
    shape = get_aval(x).shape
    k = min(shape[-2], shape[-1])
    x = lax.slice(x, (0,) * len(shape), shape[:-2] + (k, k))
    return lax.reduce_sum(where_mask(diag_mask(get_aval(x).shape), x), (len(shape) - 1,))


def diag_embed(d, n: int | None = None):
    """Square matrices with diagonals `d` (..., k)."""
    lax = _lax()
    aval = get_aval(d)
    k = aval.shape[-1]
    shape = aval.shape + (k,)
    full = lax.broadcast_in_dim(d, shape, tuple(range(aval.ndim)))
    return where_mask(diag_mask(shape), full)


def scale_columns(x, s):
    """x * s[..., None, :]."""
    lax = _lax()
    shape = get_aval(x).shape
    nd = len(shape)
    return lax.mul(x, lax.broadcast_in_dim(s, shape, tuple(range(nd - 2)) + (nd - 1,)))


def scale_rows(x, s):
    """x * s[..., :, None]."""
    lax = _lax()
    shape = get_aval(x).shape
    nd = len(shape)
    return lax.mul(x, lax.broadcast_in_dim(s, shape, tuple(range(nd - 1))))


def permutation_matrix(perm, dtype):
    """P with P[..., i, j] = (perm[..., i] == j): P @ x takes x's rows in `perm`'s order."""
    lax = _lax()
    shape = get_aval(perm).shape
    m = shape[-1]
    full_shape = shape + (m,)
    rows = lax.broadcast_in_dim(perm, full_shape, tuple(range(len(shape))))
    cols = lax.broadcasted_iota(get_aval(perm).dtype, full_shape, len(shape))
    return lax.convert_element_type(lax.eq(rows, cols), dtype)


def permute_rows(x, perm):
    """x[..., perm, :], with perm (..., m) of x's batch shape: a gather, not a product."""
    from corejax.lax.indexing import take_along_axis
    if get_aval(x).size == 0:
        return x
    return take_along_axis(x, _lax().expand_dims(perm, (get_aval(perm).ndim,)), axis=-2)


def permute_columns(x, perm):
    """x[..., :, perm], with perm (..., n) of x's batch shape."""
    from corejax.lax.indexing import take_along_axis
    if get_aval(x).size == 0:
        return x
    return take_along_axis(x, _lax().expand_dims(perm, (get_aval(perm).ndim - 1,)), axis=-1)


def resize(x, rows: int, cols: int):
    """The leading block of x (..., m, n) as (..., rows, cols): sliced or zero-padded."""
    lax = _lax()
    shape = get_aval(x).shape
    nd = len(shape)
    x = lax.slice(x, (0,) * nd, shape[:-2] + (min(rows, shape[-2]), min(cols, shape[-1])))
    pad = [(0, 0, 0)] * (nd - 2) + [(0, max(rows - shape[-2], 0), 0),
                                    (0, max(cols - shape[-1], 0), 0)]
    if any(p[1] for p in pad):
        x = lax.pad(x, lax.full((), 0, get_aval(x).dtype), pad)
    return x


def zeros_tangent(x):
    return ad.Zero(get_aval(x).to_tangent_aval())


def conj_mT(x):
    """The conjugate transpose x^H (the plain transpose for real x)."""
    xt = mT(x)
    return _lax().conj(xt) if get_aval(x).dtype.kind == "c" else xt


def symmetrize(x):
    """(x + x^H) / 2 (the Hermitian part; (x + x^T) / 2 for real x); integer input becomes the
    default float dtype, as JAX's division does."""
    lax = _lax()
    aval = get_aval(x)
    if not dtypes.is_inexact(aval.dtype):
        x = lax.convert_element_type(x, dtypes.default_float_dtype())
        aval = get_aval(x)
    half = lax.full(aval.shape, 0.5, aval.dtype)
    return lax.mul(lax.add(x, conj_mT(x)), half)
