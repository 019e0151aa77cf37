"""How precisely dots and transcendental functions compute: the dot algorithms that `precision=`
accepts besides lax.Precision (DotAlgorithm, DotAlgorithmPreset) and the `accuracy=` of the
unary functions (Tolerance, AccuracyMode), with what JAX's CPU backend does with each.

On CPU, JAX runs a dot algorithm preset only where XLA's CPU backend supports it: an operand
of a floating dtype the preset does not list is rounded to the first type it lists, the
product is accumulated in the preset's accumulation type, and the result is converted to the
dtype the dot would have had anyway. Other presets, and every explicit DotAlgorithm, are
refused with ValueError. Accuracy requests are accepted and change nothing on CPU.
"""
from __future__ import annotations

import enum
from typing import Any, NamedTuple

import ml_dtypes
import numpy as np

__all__ = ["AccuracyMode", "Tolerance", "DotAlgorithm", "DotAlgorithmPreset",
           "check_accuracy", "cpu_dot_algorithm"]


class AccuracyMode(enum.Enum):
    """A named accuracy for lax's transcendental functions (`accuracy=`)."""
    HIGHEST = 1
    DEFAULT = 2


class Tolerance:
    """Tolerances asked of a unary function's result (`accuracy=`): absolute, relative and
    in units in the last place."""

    def __init__(self, atol: float = 0.0, rtol: float = 0.0, ulps: int = 0):
        if atol < 0.0 or rtol < 0.0 or ulps < 0.0:
            raise ValueError("Tolerances must be non-negative.")
        if atol == 0.0 and rtol == 0.0 and ulps == 0:
            raise ValueError("At least one of atol, rtol, or ulps must be set.")
        self.atol, self.rtol, self.ulps = atol, rtol, ulps


def check_accuracy(accuracy: Any) -> None:
    """Validates a function's `accuracy=` (None, a Tolerance or an AccuracyMode). CPU kernels
    have one implementation each, so a valid request leaves the result as it is (as JAX's)."""
    if accuracy is not None and not isinstance(accuracy, (Tolerance, AccuracyMode)):
        raise NotImplementedError(f"Accuracy {accuracy} not supported")


class DotAlgorithm(NamedTuple):
    """A dot product algorithm: the types the operands are rounded to, the accumulation type,
    how many components each operand is split into and how many products are summed (for
    algorithms emulating a higher precision), and whether imprecise accumulation is allowed.
    JAX's CPU backend runs none of these (only some DotAlgorithmPreset members)."""
    lhs_precision_type: Any
    rhs_precision_type: Any
    accumulation_type: Any
    lhs_component_count: int = 1
    rhs_component_count: int = 1
    num_primitive_operations: int = 1
    allow_imprecise_accumulation: bool = False


_BF16 = ml_dtypes.bfloat16
_ANY_F8_OUTPUTS = (np.float32, np.float16, _BF16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2,
                   ml_dtypes.float8_e5m2fnuz, ml_dtypes.float8_e4m3fnuz,
                   ml_dtypes.float8_e4m3b11fnuz)


class DotAlgorithmPreset(enum.Enum):
    """The dot algorithms known to some backend, named LHS_RHS_ACCUMULATION (a suffix _X3 /
    _X6 / _X9 counts the products summed to emulate a higher precision, FAST_ACCUM allows an
    imprecise accumulation). Pass a member, or its name, as `precision=`."""
    DEFAULT = 1
    ANY_F8_ANY_F8_F32 = 2
    ANY_F8_ANY_F8_F32_FAST_ACCUM = 3
    ANY_F8_ANY_F8_ANY = 4
    ANY_F8_ANY_F8_ANY_FAST_ACCUM = 5
    F16_F16_F16 = 6
    F16_F16_F32 = 7
    BF16_BF16_BF16 = 8
    BF16_BF16_F32 = 9
    BF16_BF16_F32_X3 = 10
    BF16_BF16_F32_X6 = 11
    BF16_BF16_F32_X9 = 12
    TF32_TF32_F32 = 13
    TF32_TF32_F32_X3 = 14
    F32_F32_F32 = 15
    F64_F64_F64 = 16

    def __repr__(self) -> str:
        return f"{type(self).__name__}.{self.name}"

    def __str__(self) -> str:
        return self.name

    @property
    def supported_lhs_types(self):
        """The operand types the algorithm takes as they are (None: any)."""
        name = self.name
        if name == "DEFAULT" or name.startswith("ANY_F8"):
            return None
        if name.startswith("F16_"):
            return (np.float16,)
        if name in ("BF16_BF16_BF16", "BF16_BF16_F32"):
            return (_BF16, np.float32)
        if name == "F64_F64_F64":
            return (np.float64,)
        return (np.float32,)

    @property
    def supported_rhs_types(self):
        return self.supported_lhs_types

    @property
    def accumulation_type(self):
        """The type products are summed in (None: the backend's choice)."""
        name = self.name
        if name == "DEFAULT" or name.startswith("ANY_F8_ANY_F8_ANY"):
            return None
        return {"F16_F16_F16": np.float16, "BF16_BF16_BF16": _BF16,
                "F64_F64_F64": np.float64}.get(name, np.float32)

    def supported_output_types(self, lhs_dtype, rhs_dtype):
        """The result types the algorithm can produce for operands of these dtypes."""
        name = self.name
        if name in ("ANY_F8_ANY_F8_F32", "ANY_F8_ANY_F8_F32_FAST_ACCUM"):
            return _ANY_F8_OUTPUTS
        if name in ("F16_F16_F32", "BF16_BF16_F32"):
            narrow = np.float16 if name == "F16_F16_F32" else _BF16
            from corejax import dtypes
            if dtypes.promote_types(lhs_dtype, rhs_dtype) == np.dtype(narrow):
                return (np.float32, narrow)
            return (np.float32,)
        accumulation = self.accumulation_type
        return None if accumulation is None else (accumulation,)


# The presets XLA's CPU backend compiles (the others raise, as in JAX).
_CPU_PRESETS = frozenset({
    DotAlgorithmPreset.DEFAULT, DotAlgorithmPreset.F16_F16_F16, DotAlgorithmPreset.BF16_BF16_F32,
    DotAlgorithmPreset.BF16_BF16_F32_X3, DotAlgorithmPreset.BF16_BF16_F32_X6,
    DotAlgorithmPreset.F32_F32_F32, DotAlgorithmPreset.F64_F64_F64})


def cpu_dot_algorithm(algorithm, operand_dtype):
    """(operand type, accumulation type) with which a CPU dot of floating operands of
    `operand_dtype` runs `algorithm`; (None, None) where it changes nothing. ValueError for an
    algorithm the CPU backend does not run."""
    if algorithm not in _CPU_PRESETS:
        raise ValueError(f"The precision '{algorithm}' is not supported by dot_general on CPU")
    supported = algorithm.supported_lhs_types
    if supported is None or np.dtype(operand_dtype) in {np.dtype(t) for t in supported}:
        return None, None
    return np.dtype(supported[0]), np.dtype(algorithm.accumulation_type)
