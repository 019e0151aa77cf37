"""corejax.numpy: the NumPy API on corejax arrays, composed only of lax primitives."""
import numpy as _np

from corejax import dtypes as _dtypes
from corejax.array import Array as ndarray
from corejax.dtypes import result_type, promote_types, iinfo, finfo, issubdtype

bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64 = map(_dtypes.scalar_type, (
    _np.bool_, _np.int8, _np.int16, _np.int32, _np.int64, _np.uint8, _np.uint16, _np.uint32,
    _np.uint64))
float16, float32, float64, complex64, complex128 = map(_dtypes.scalar_type, (
    _np.float16, _np.float32, _np.float64, _np.complex64, _np.complex128))
(bfloat16, float4_e2m1fn, float6_e2m3fn, float6_e3m2fn, float8_e3m4, float8_e4m3,
 float8_e4m3b11fnuz, float8_e4m3fn, float8_e4m3fnuz, float8_e5m2, float8_e5m2fnuz, float8_e8m0fnu,
 int1, int2, int4, uint1, uint2, uint4) = map(_dtypes.scalar_type, (
    _dtypes.bfloat16, *map(_np.dtype, (
        "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn", "float8_e3m4", "float8_e4m3",
        "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz",
        "float8_e8m0fnu", "int1", "int2", "int4", "uint1", "uint2", "uint4"))))
bool, single, double, csingle, cdouble, complex_, uint = (
    bool_, float32, float64, complex64, complex128, complex128, uint64)
generic, character, flexible, object_ = _np.generic, _np.character, _np.flexible, _np.object_
ComplexWarning = _np.exceptions.ComplexWarning
from corejax.numpy._core import asarray, array, broadcast_shapes
from corejax.numpy._creation import (
    zeros, ones, empty, full, zeros_like, ones_like, empty_like, full_like, arange, linspace,
    logspace, geomspace, eye, identity, tri,
)
from corejax.numpy._ufuncs import (
    exp, exp2, log, log1p, expm1, tanh, sin, cos, tan, arcsin, arccos, arctan, sinh, cosh,
    arcsinh, arccosh, arctanh, sqrt, cbrt, negative, absolute, abs, sign, arctan2, add, subtract,
    multiply, maximum, minimum, nextafter, equal, not_equal, less, less_equal, greater,
    greater_equal, bitwise_and, bitwise_or, bitwise_xor, left_shift, right_shift, bitwise_not,
    invert, logical_and, logical_or, logical_xor, logical_not, true_divide, divide, floor_divide,
    remainder, mod, fmod, divmod, power, pow, float_power, square, reciprocal, positive, floor,
    ceil, trunc, rint, fix, round, around, isfinite, isinf, isnan, isposinf, isneginf, signbit,
    copysign, logaddexp, where, clip, heaviside, deg2rad, rad2deg, radians, degrees, sinc,
    nan_to_num, conjugate, conj, real,
)
from corejax.numpy._reductions import (
    sum, prod, max, min, amax, amin, all, any, mean, var, std, argmax, argmin, cumsum, ptp,
    count_nonzero, nonzero, argwhere, cumprod, cumulative_sum, cumulative_prod,
)
from corejax.numpy._shape import (
    reshape, ravel, transpose, matrix_transpose, swapaxes, moveaxis, expand_dims, squeeze,
    broadcast_to, broadcast_arrays, atleast_1d, atleast_2d, atleast_3d, concatenate, concat,
    stack, vstack, hstack, dstack, column_stack, split, array_split, hsplit, vsplit, tile, repeat,
    flip, fliplr, flipud, roll, pad, tril, triu, diagonal, diag, trace, meshgrid, shape, ndim,
    size,
)
from corejax.numpy._linalg_ops import (
    dot, matmul, vdot, inner, outer, tensordot, einsum, kron, cross, vecdot, matvec, vecmat,
)
from corejax.numpy._sorting import (
    sort, argsort, partition, argpartition, lexsort, searchsorted, digitize,
)
from corejax.numpy._indexing import (
    unravel_index, ravel_multi_index, ix_, indices, diag_indices, tril_indices, triu_indices,
    put, put_along_axis,
)
from corejax.numpy._math import (
    log2, log10, hypot, ldexp, frexp, gcd, lcm, logaddexp2, fabs, fmax, fmin, modf, spacing,
    bitwise_count, bitwise_invert, bitwise_left_shift, bitwise_right_shift, acos, acosh, asin,
    asinh, atan, atanh, atan2, imag, angle, iscomplex, isreal, iscomplexobj, isrealobj, i0,
)
from corejax.numpy._math import sort_complex, roots
from corejax.numpy import fft  # noqa: E402  (the jnp.fft submodule)
from corejax.numpy._logic import (
    isclose, allclose, array_equal, array_equiv, isdtype, can_cast, iterable,
)
from corejax.numpy._arrangement import (
    copy, astype, rot90, rollaxis, permute_dims, unstack, dsplit, block, diagflat, trim_zeros,
    resize, append, delete, insert,
)
from corejax.numpy._index_tricks import (
    r_, c_, mgrid, ogrid, s_, index_exp, fill_diagonal, diag_indices_from, tril_indices_from,
    triu_indices_from, mask_indices,
)
from corejax.numpy._functional import vectorize, apply_along_axis, apply_over_axes, fromfunction
from corejax.numpy._selection import (
    select, choose, piecewise, extract, compress, place, flatnonzero,
)
from corejax.numpy._nan import (
    nansum, nanprod, nanmax, nanmin, nanmean, nanvar, nanstd, nanargmax, nanargmin, nancumsum,
    nancumprod,
)
from corejax.numpy._statistics import (
    average, quantile, nanquantile, percentile, nanpercentile, median, nanmedian, cov, corrcoef,
    bincount, histogram_bin_edges, histogram, histogram2d, histogramdd,
)
from corejax.numpy._differences import diff, ediff1d, gradient, trapezoid, interp, unwrap
from corejax.numpy._sets import (
    unique, unique_all, unique_counts, unique_inverse, unique_values, isin, setdiff1d, union1d,
    intersect1d, setxor1d,
)
from corejax.numpy._polynomial import (
    poly, polyval, polyfit, polyadd, polysub, polymul, polydiv, polyder, polyint, vander,
    convolve, correlate,
)
from corejax.numpy._windows import bartlett, blackman, hamming, hanning, kaiser
from corejax.numpy._io import (
    save, savez, load, array_repr, array_str, get_printoptions, set_printoptions, printoptions,
    frombuffer, fromstring, fromfile, fromiter, from_dlpack, einsum_path, packbits, unpackbits,
)
# the functions JAX makes ufunc objects (add.reduce, multiply.outer, ...) replace the plain ones
from corejax.numpy._ufunc_objects import (
    ufunc, frompyfunc, add, subtract, multiply, maximum, minimum, logaddexp, logaddexp2,
    logical_and, logical_or, logical_xor, bitwise_and, bitwise_or, bitwise_xor, negative,
)
from corejax.numpy import _methods  # noqa: F401  (installs operators on Array and Tracer)
from corejax.numpy import linalg  # noqa: E402

pi = _np.pi
e = _np.e
euler_gamma = _np.euler_gamma
inf = _np.inf
nan = _np.nan
newaxis = None
dtype = _np.dtype
integer, floating, inexact, number, signedinteger, unsignedinteger, complexfloating = (
    _np.integer, _np.floating, _np.inexact, _np.number, _np.signedinteger, _np.unsignedinteger,
    _np.complexfloating)
float_ = float64
int_ = int64


def isscalar(element):
    return _np.ndim(element) == 0 if not hasattr(element, "aval") else element.ndim == 0


def issubsctype(a, b):
    return _np.issubdtype(a, b)


def take(a, indices, axis=None, mode=None, fill_value=None):
    from corejax.lax import indexing
    return indexing.take(a, indices, axis=axis, mode=mode, fill_value=fill_value)


def take_along_axis(arr, indices, axis=-1, mode=None, fill_value=None):
    from corejax.lax import indexing
    return indexing.take_along_axis(arr, indices, axis, mode=mode, fill_value=fill_value)
