"""dot_general: tensor contraction with batch dimensions, the one primitive behind dot,
matmul, einsum and tensordot.

dimension_numbers = ((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch)); the result's
dimensions are (batch..., lhs free..., rhs free...).
"""
from __future__ import annotations

import enum

import ml_dtypes
import numpy as np

from corejax import dtypes
from corejax.core import Primitive, ShapedArray, get_aval
from corejax.compiler import registry
from corejax.transforms import ad, batching
from corejax.transforms.ad import Zero, is_undefined_primal
from corejax.lax._factories import shape_str
from corejax.lax._narrow import matmul as narrow_matmul
from corejax.lax._precision import DotAlgorithm, DotAlgorithmPreset, cpu_dot_algorithm

__all__ = []


def _free_dims(ndim, contracting, batch):
    return tuple(i for i in range(ndim) if i not in contracting and i not in batch)


def _dot_general_impl(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None):
    (lc, rc), (lb, rb) = dimension_numbers
    lf = _free_dims(lhs.ndim, lc, lb)
    rf = _free_dims(rhs.ndim, rc, rb)
    batch_shape = tuple(lhs.shape[i] for i in lb)
    m_shape = tuple(lhs.shape[i] for i in lf)
    n_shape = tuple(rhs.shape[i] for i in rf)
    k = int(np.prod([lhs.shape[i] for i in lc], dtype=np.int64))
    b = int(np.prod(batch_shape, dtype=np.int64))
    m = int(np.prod(m_shape, dtype=np.int64))
    n = int(np.prod(n_shape, dtype=np.int64))
    a = np.transpose(lhs, lb + lf + lc).reshape(b, m, k)
    c = np.transpose(rhs, rb + rc + rf).reshape(b, k, n)
    out_dtype = preferred_element_type or lhs.dtype
    if dtypes.is_narrow(out_dtype):  # bfloat16, float8, int4 ...: accumulated as XLA's
        return narrow_matmul(a.astype(out_dtype), c.astype(out_dtype), out_dtype).reshape(
            batch_shape + m_shape + n_shape)
    if a.dtype != out_dtype:
        a, c = a.astype(out_dtype), c.astype(out_dtype)
    # the compiler's BLAS products (compiler/blas.py), which compiled programs call too: one
    # set of bits eagerly and under jit, whatever the load
    from corejax.compiler import blas
    out = blas.matmul(a[0], c[0]) if b == 1 else blas.batched_matmul(a, c)
    return out.reshape(batch_shape + m_shape + n_shape)


def _dot_general_abstract(lhs, rhs, dimension_numbers, precision=None,
                          preferred_element_type=None):
    (lc, rc), (lb, rb) = dimension_numbers
    if len(lc) != len(rc) or len(lb) != len(rb):
        raise TypeError(f"dot_general requires equal numbers of lhs and rhs contracting and batch "
                        f"dimensions, got {dimension_numbers}.")
    for dims, nd, side in ((lc + lb, lhs.ndim, "lhs"), (rc + rb, rhs.ndim, "rhs")):
        if any(not 0 <= d < nd for d in dims) or len(set(dims)) != len(dims):
            raise TypeError(f"dot_general {side} dimension numbers {dims} are invalid for a "
                            f"{side} of rank {nd}.")
    lb_shape = tuple(lhs.shape[i] for i in lb)
    rb_shape = tuple(rhs.shape[i] for i in rb)
    if lb_shape != rb_shape:
        raise TypeError(f"dot_general requires lhs batch dimensions and rhs batch dimensions to "
                        f"have the same shape, got {shape_str(lb_shape)} and {shape_str(rb_shape)}.")
    lc_shape = tuple(lhs.shape[i] for i in lc)
    rc_shape = tuple(rhs.shape[i] for i in rc)
    if lc_shape != rc_shape:
        raise TypeError(f"dot_general requires contracting dimensions to have the same shape, "
                        f"got {shape_str(lc_shape)} and {shape_str(rc_shape)}.")
    if lhs.dtype != rhs.dtype and preferred_element_type is None:
        raise TypeError(f"dot_general requires operands of the same dtype, got {lhs.dtype} "
                        f"and {rhs.dtype}.")
    shape = (lb_shape + tuple(lhs.shape[i] for i in _free_dims(lhs.ndim, lc, lb))
             + tuple(rhs.shape[i] for i in _free_dims(rhs.ndim, rc, rb)))
    dtype = preferred_element_type or lhs.dtype
    return ShapedArray(shape, dtype, lhs.weak_type and rhs.weak_type)


dot_general_p = Primitive("dot_general")
dot_general_p.def_impl(_dot_general_impl)
dot_general_p.def_abstract_eval(_dot_general_abstract)
dot_general_p.weak_type_rule = lambda lhs, rhs, **p: (dtypes.is_weakly_typed(lhs)
                                                      and dtypes.is_weakly_typed(rhs))


def _ranges_like(*xs):
    start = 0
    for x in xs:
        yield tuple(range(start, start + len(x)))
        start += len(x)


def _transpose_lhs(ct, lhs_aval, rhs, dimension_numbers, preferred_element_type):
    """Cotangent of lhs: contract ct's rhs-free dims against rhs's free dims."""
    (lc, rc), (lb, rb) = dimension_numbers
    rhs_aval = get_aval(rhs)
    x_ndim, y_ndim = lhs_aval.ndim, rhs_aval.ndim
    x_kept = _free_dims(x_ndim, lc, lb)
    y_kept = _free_dims(y_ndim, rc, rb)
    ans_batch, ans_x, ans_y = _ranges_like(lb, x_kept, y_kept)
    dims = ((ans_y, y_kept), (ans_batch, rb))
    # The result has layout (batch, x free, x contracting in rhs's contracting order).
    x_contract_sorted_by_y = [c for _, c in sorted(zip(rc, lc))]
    out_axes = np.argsort(list(lb) + list(x_kept) + x_contract_sorted_by_y)
    out = dot_general_p.bind(ct, rhs, dimension_numbers=dims, precision=None,
                             preferred_element_type=preferred_element_type)
    out = transpose(out, tuple(int(a) for a in out_axes))
    if get_aval(out).dtype != lhs_aval.dtype:
        out = convert_element_type(out, lhs_aval.dtype)
    return out


def _dot_general_transpose(ct, lhs, rhs, dimension_numbers, precision=None,
                           preferred_element_type=None):
    if type(ct) is Zero:
        return [None, None]
    (lc, rc), (lb, rb) = dimension_numbers
    if is_undefined_primal(lhs):
        return [_transpose_lhs(ct, lhs.aval, rhs, dimension_numbers, preferred_element_type),
                None]
    # By symmetry: swap operands, which swaps the free-dim blocks of ct.
    rhs_aval = rhs.aval
    lhs_aval = get_aval(lhs)
    x_kept = _free_dims(lhs_aval.ndim, lc, lb)
    y_kept = _free_dims(rhs_aval.ndim, rc, rb)
    nb = len(lb)
    ct_swapped = transpose(ct, tuple(range(nb))
                           + tuple(range(nb + len(x_kept), nb + len(x_kept) + len(y_kept)))
                           + tuple(range(nb, nb + len(x_kept))))
    swapped = ((rc, lc), (rb, lb))
    return [None, _transpose_lhs(ct_swapped, rhs_aval, lhs, swapped, preferred_element_type)]


def _dot_general_batch(vals, dims, dimension_numbers, precision=None, preferred_element_type=None):
    lhs, rhs = vals
    dl, dr = dims
    (lc, rc), (lb, rb) = dimension_numbers
    shift = lambda ds: tuple(d + 1 for d in ds)
    params = dict(precision=precision, preferred_element_type=preferred_element_type)
    if dl is not None and dr is not None:
        lhs, rhs = batching.moveaxis(lhs, dl, 0), batching.moveaxis(rhs, dr, 0)
        dn = ((shift(lc), shift(rc)), ((0,) + shift(lb), (0,) + shift(rb)))
        return dot_general_p.bind(lhs, rhs, dimension_numbers=dn, **params), 0
    if dl is not None:
        lhs = batching.moveaxis(lhs, dl, 0)
        dn = ((shift(lc), rc), (shift(lb), rb))
        # The batch axis is lhs's first free dimension: it lands right after the batch dims.
        return dot_general_p.bind(lhs, rhs, dimension_numbers=dn, **params), len(lb)
    rhs = batching.moveaxis(rhs, dr, 0)
    dn = ((lc, shift(rc)), (lb, shift(rb)))
    n_lhs_free = get_aval(lhs).ndim - len(lc) - len(lb)
    return dot_general_p.bind(lhs, rhs, dimension_numbers=dn, **params), len(lb) + n_lhs_free


ad.defbilinear(dot_general_p, _dot_general_transpose)
batching.primitive_batchers[dot_general_p] = _dot_general_batch
registry.def_kernel(dot_general_p, ("dot_general",))


class Precision(enum.Enum):
    """Matmul / convolution precision (lax.Precision). On CPU corejax always computes in the
    operands' full precision, which satisfies every level; the argument is validated."""
    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2

    @classmethod
    def _missing_(cls, value):
        names = {"default": cls.DEFAULT, "bfloat16": cls.DEFAULT, "fastest": cls.DEFAULT,
                 "high": cls.HIGH, "bfloat16_3x": cls.HIGH, "tensorfloat32": cls.HIGH,
                 "highest": cls.HIGHEST, "float32": cls.HIGHEST}
        if isinstance(value, str) and value in names:
            return names[value]
        return None

    def __str__(self):
        return self.name

    def __repr__(self):
        return f"Precision.{self.name}"


_PRECISION_STRINGS = ["highest", "float32", "high", "bfloat16_3x", "tensorfloat32", "default",
                      "bfloat16", "fastest", None]


def canonicalize_precision(precision):
    """None, a Precision, a pair of Precisions, a DotAlgorithmPreset or a DotAlgorithm, from
    what lax / jnp functions accept (strings name a Precision or a preset)."""
    if precision is None or isinstance(precision, (Precision, DotAlgorithmPreset, DotAlgorithm)):
        return precision
    if isinstance(precision, str) and precision in _PRECISION_STRINGS:
        return Precision(precision)
    if isinstance(precision, str) and precision in DotAlgorithmPreset.__members__:
        return DotAlgorithmPreset[precision]
    if isinstance(precision, (tuple, list)) and len(precision) == 2:
        if all(isinstance(p, Precision) for p in precision):
            return tuple(precision)
        if all(isinstance(p, str) and p in _PRECISION_STRINGS for p in precision):
            return tuple(Precision(p) for p in precision)
    raise ValueError(
        "Precision argument must be one of:\n- None,\n- a string in "
        f"{_PRECISION_STRINGS},\n- a lax.Precision value,\n- a tuple of two lax.Precision "
        "values or strings,\n- a lax.DotAlgorithmPreset or the name of one of these presets, "
        f"or\n- a lax.DotAlgorithm value;\nbut got {precision}.")


def apply_dot_algorithm(precision, lhs, rhs, preferred_element_type):
    """(lhs, rhs, preferred_element_type, result dtype) for a CPU dot under `precision`: a dot
    algorithm rounds inexact operands to the type it runs on and accumulates in its type, and
    the result keeps the dtype the dot would have had (see _precision.py); anything else
    leaves the dot as it is (result dtype None)."""
    if not isinstance(precision, (DotAlgorithmPreset, DotAlgorithm)):
        return lhs, rhs, preferred_element_type, None
    operand_dtype = get_aval(lhs).dtype
    to, accumulate = cpu_dot_algorithm(precision, operand_dtype)
    if to is None or not dtypes.is_inexact(operand_dtype):
        return lhs, rhs, preferred_element_type, None
    result = preferred_element_type or operand_dtype
    if to == np.dtype(ml_dtypes.bfloat16):
        # bfloat16 operands as float32 values rounded to bfloat16's 8 exponent / 7 mantissa bits
        lhs, rhs = (reduce_precision(convert_element_type(x, np.float32), 8, 7)
                    for x in (lhs, rhs))
    else:
        to = dtypes.canonicalize_dtype(to)
        lhs, rhs = convert_element_type(lhs, to), convert_element_type(rhs, to)
    accumulate = dtypes.canonicalize_dtype(accumulate)
    return lhs, rhs, (None if accumulate == get_aval(lhs).dtype else accumulate), result


def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None):
    # a Precision is validated only: CPU products are always full precision
    precision = canonicalize_precision(precision)
    (lc, rc), (lb, rb) = dimension_numbers
    dn = ((tuple(int(i) for i in lc), tuple(int(i) for i in rc)),
          (tuple(int(i) for i in lb), tuple(int(i) for i in rb)))
    pet = None if preferred_element_type is None else \
        dtypes.canonicalize_dtype(preferred_element_type)
    la, ra = get_aval(lhs), get_aval(rhs)
    if la.dtype != ra.dtype:  # like jax.lax.dot_general: operands of differing dtypes promote
        common = dtypes.result_type(lhs, rhs)
        lhs, rhs = convert_element_type(lhs, common), convert_element_type(rhs, common)
        la, ra = get_aval(lhs), get_aval(rhs)
    # shapes are checked here too: the eager impl would otherwise fail inside NumPy
    _dot_general_abstract(la, ra, dimension_numbers=dn, preferred_element_type=pet)
    lhs, rhs, pet, result = apply_dot_algorithm(precision, lhs, rhs, pet)
    out = dot_general_p.bind(lhs, rhs, dimension_numbers=dn, precision=None,
                             preferred_element_type=pet)
    return out if result is None else convert_element_type(out, result)


def dot(lhs, rhs, precision=None, preferred_element_type=None):
    """Vector/matrix products contracting lhs's last and rhs's first dimension (lax.dot)."""
    la, ra = get_aval(lhs), get_aval(rhs)
    if la.ndim not in (1, 2) or ra.ndim not in (1, 2):
        raise TypeError(f"dot requires 1- or 2-dimensional operands, got shapes "
                        f"{shape_str(la.shape)} and {shape_str(ra.shape)}.")
    return dot_general(lhs, rhs, (((la.ndim - 1,), (0,)), ((), ())), precision,
                       preferred_element_type)


from corejax.lax.elementwise import convert_element_type  # noqa: E402
from corejax.lax.structural import transpose  # noqa: E402
from corejax.lax.bits import reduce_precision  # noqa: E402
