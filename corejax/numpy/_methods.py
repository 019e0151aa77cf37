"""Operators and methods shared by `Array` and every `Tracer`, defined once here."""
from __future__ import annotations

from corejax import lax
from corejax.array import Array
from corejax.core import Tracer
from corejax.numpy import (
    _creation, _indexing, _linalg_ops, _reductions, _shape, _sorting, _ufuncs)

__all__ = ["install"]


def _swap(fn):
    return lambda self, other: fn(other, self)


def _defer(fn):
    """Binary operators return NotImplemented for types we do not know, as NumPy does."""
    def op(self, other):
        from corejax.numpy._core import is_arraylike
        if not is_arraylike(other):
            return NotImplemented
        return fn(self, other)
    return op


def _astype(self, dtype, copy=False, device=None):
    from corejax import dtypes
    from corejax.lax._complex import astype_real
    dtypes.check_user_dtype_supported(dtype, "astype")
    dt = dtypes.canonicalize_dtype(dtype)
    return lax.convert_element_type(astype_real(self, dt), dt)


def _reshape(self, *shape, order="C"):
    if len(shape) == 1 and not isinstance(shape[0], int):
        shape = shape[0]
    return _shape.reshape(self, shape, order)


def _transpose(self, *axes):
    if len(axes) == 1 and (axes[0] is None or not isinstance(axes[0], int)):
        axes = axes[0]
    return _shape.transpose(self, axes or None)


_OPERATORS = {
    "__add__": _ufuncs.add, "__sub__": _ufuncs.subtract, "__mul__": _ufuncs.multiply,
    "__truediv__": _ufuncs.true_divide, "__floordiv__": _ufuncs.floor_divide,
    "__mod__": _ufuncs.remainder, "__pow__": _ufuncs.power, "__matmul__": _linalg_ops.matmul,
    "__and__": _ufuncs.bitwise_and, "__or__": _ufuncs.bitwise_or, "__xor__": _ufuncs.bitwise_xor,
    "__lshift__": _ufuncs.left_shift, "__rshift__": _ufuncs.right_shift,
    "__eq__": _ufuncs.equal, "__ne__": _ufuncs.not_equal, "__lt__": _ufuncs.less,
    "__le__": _ufuncs.less_equal, "__gt__": _ufuncs.greater, "__ge__": _ufuncs.greater_equal,
    "__divmod__": _ufuncs.divmod,
}
_REFLECTED = {
    "__radd__": _ufuncs.add, "__rsub__": _ufuncs.subtract, "__rmul__": _ufuncs.multiply,
    "__rtruediv__": _ufuncs.true_divide, "__rfloordiv__": _ufuncs.floor_divide,
    "__rmod__": _ufuncs.remainder, "__rpow__": _ufuncs.power, "__rmatmul__": _linalg_ops.matmul,
    "__rand__": _ufuncs.bitwise_and, "__ror__": _ufuncs.bitwise_or,
    "__rxor__": _ufuncs.bitwise_xor, "__rlshift__": _ufuncs.left_shift,
    "__rrshift__": _ufuncs.right_shift, "__rdivmod__": _ufuncs.divmod,
}
_UNARY = {
    "__neg__": _ufuncs.negative, "__pos__": _ufuncs.positive, "__abs__": _ufuncs.absolute,
    "__invert__": _ufuncs.invert,
}
_METHODS = {
    "sum": _reductions.sum, "mean": _reductions.mean, "max": _reductions.max,
    "min": _reductions.min, "prod": _reductions.prod, "argmax": _reductions.argmax,
    "argmin": _reductions.argmin, "var": _reductions.var, "std": _reductions.std,
    "all": _reductions.all, "any": _reductions.any, "cumsum": _reductions.cumsum,
    "ptp": _reductions.ptp, "nonzero": _reductions.nonzero,
    "ravel": _shape.ravel, "flatten": _shape.ravel, "squeeze": _shape.squeeze,
    "swapaxes": _shape.swapaxes, "repeat": _shape.repeat, "diagonal": _shape.diagonal,
    "trace": _shape.trace, "dot": _linalg_ops.dot, "clip": _ufuncs.clip, "round": _ufuncs.round,
    "conj": _ufuncs.conjugate, "conjugate": _ufuncs.conjugate,
    "astype": _astype, "reshape": _reshape, "transpose": _transpose,
    "__getitem__": _indexing.getitem,
    "sort": _sorting.sort, "argsort": _sorting.argsort,
    "take": _indexing.take,
}


def _T(self):
    return _shape.transpose(self)


def _mT(self):
    return _shape.matrix_transpose(self)


def _at(self):
    return _indexing._IndexUpdateHelper(self)


def _real(self):
    return _ufuncs.real(self)


def _imag(self):
    from corejax.numpy._math import imag
    return imag(self)


def install(cls) -> None:
    for name, fn in _OPERATORS.items():
        setattr(cls, name, _defer(fn))
    for name, fn in _REFLECTED.items():
        setattr(cls, name, _defer(_swap(fn)))
    for name, fn in {**_UNARY, **_METHODS}.items():
        setattr(cls, name, fn)
    cls.T = property(_T)
    cls.mT = property(_mT)
    cls.at = property(_at)
    cls.real = property(_real)
    cls.imag = property(_imag)


install(Array)
install(Tracer)
