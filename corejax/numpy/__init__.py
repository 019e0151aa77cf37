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
from corejax.numpy._core import asarray, array, broadcast_shapes
from corejax.numpy._creation import (
    zeros, ones, empty, full, zeros_like, ones_like, empty_like, full_like, arange, linspace,
    logspace, eye, identity, tri,
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
    count_nonzero, nonzero, argwhere,
)
from corejax.numpy._shape import (
    reshape, ravel, transpose, matrix_transpose, swapaxes, moveaxis, expand_dims, squeeze,
    broadcast_to, broadcast_arrays, atleast_1d, atleast_2d, atleast_3d, concatenate, concat,
    stack, vstack, hstack, dstack, column_stack, split, array_split, hsplit, vsplit, tile, repeat,
    flip, fliplr, flipud, roll, pad, tril, triu, diagonal, diag, trace, meshgrid, shape, ndim,
    size,
)
from corejax.numpy._linalg_ops import dot, matmul, vdot, inner, outer, tensordot, einsum
from corejax.numpy._sorting import sort, argsort, median
from corejax.numpy._indexing import (
    unravel_index, ravel_multi_index, ix_, indices, diag_indices, tril_indices, triu_indices,
    put, put_along_axis,
)
from corejax.numpy import _methods  # noqa: F401  (installs operators on Array and Tracer)
from corejax.numpy import linalg  # noqa: E402

pi = _np.pi
e = _np.e
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
