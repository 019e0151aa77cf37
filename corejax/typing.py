"""Static type annotations, as jax.typing.

`ArrayLike`: anything corejax functions accept as an array (an Array, a value traced inside
a transformation, a NumPy array or scalar, a Python scalar). `DTypeLike`: anything that names
a dtype (a string, a scalar type, a NumPy dtype, an object with a `dtype`). Both are
`typing.Union`s, so `isinstance(x, ArrayLike)` works too.
"""
from __future__ import annotations

from typing import Any, Protocol, Union, runtime_checkable

import numpy as np

from corejax.array import Array
from corejax.core import Tracer

__all__ = ["ArrayLike", "DTypeLike"]


@runtime_checkable
class _SupportsDType(Protocol):
    @property
    def dtype(self) -> np.dtype: ...


# Traced values are arrays to the user (JAX's tracers are instances of jax.Array).
ArrayLike = Union[Array, Tracer, np.ndarray, np.bool_, np.number, bool, int, float, complex]

DTypeLike = Union[str, type[Any], np.dtype, _SupportsDType]
