"""How JAX's CPU backend (XLA) computes with ml_dtypes' narrow types, mirrored on NumPy arrays.

XLA has no arithmetic of its own for bfloat16, the float8/6/4 formats or the 1/2/4-bit integers:
it widens each operation's operands, computes in the wide type and rounds (or wraps) the result
back, one operation at a time. Observed with JAX 0.10.2 (tests/golden/ml_dtypes.json):

- bfloat16 and float8_e8m0fnu compute in float32, whose arithmetic on XLA's CPU flushes
  subnormal operands and results to zero (DAZ / FTZ; a sign flip or |x| is a bit operation and
  keeps them);
- the other float8, float6 and float4 formats compute in float16 (itself computed in float32
  and rounded to float16 per operation), so their results are rounded twice;
- narrow integers compute in a wide integer type and wrap around on the way back;
- float4_e2m1fn has no NaN: XLA writes a NaN result as -0.

ml_dtypes' own NumPy loops round once and answer some integer ops in int8, so the primitives'
eager impls go through `widened` instead.
"""
from __future__ import annotations

import numpy as np

from corejax import dtypes

__all__ = ["widened", "to_narrow", "matmul"]

_F32, _F16 = np.dtype(np.float32), np.dtype(np.float16)
_FLOAT4 = np.dtype("float4_e2m1fn")
_IN_F32 = frozenset({dtypes.bfloat16, np.dtype("float8_e8m0fnu")})
_TINY32 = np.float32(np.finfo(np.float32).tiny)
# ops XLA emits as bit operations (no flush of subnormals)
_BITWISE = frozenset({"neg", "abs", "copysign"})
# ops XLA computes on the narrow type's own bits (ml_dtypes' loop does the same)
_ON_BITS = frozenset({"nextafter"})


def _flush(x):
    """Subnormal float32 values to zero of the same sign (XLA's CPU float32 arithmetic)."""
    return np.where(np.abs(x) < _TINY32, np.copysign(np.float32(0), x), x)


def to_narrow(x, dt: np.dtype, flush: bool = False):
    """Wide values rounded (floats) or wrapped (integers) to the narrow type dt, as XLA's
    conversions do; `flush`: subnormal float32 results become zeros first."""
    if dtypes.kind_of(dt) in "iu":
        return np.asarray(x).astype(np.int64).astype(dt)
    x = np.asarray(x)
    if flush and x.dtype == _F32:
        x = _flush(x)
    with np.errstate(all="ignore"):  # overflow to inf / NaN is the conversion's result
        out = x.astype(dt)
    if dt == _FLOAT4:
        out = np.where(np.isnan(x), _FLOAT4.type(-0.0), out)
    return out


def widened(name: str, np_impl, result_dtype=None):
    """np_impl(*args) for a primitive named `name`, computing narrow-typed operands as XLA's
    CPU backend does (see the module docstring); other operands go straight through.
    `result_dtype` is the primitive's result dtype rule (None: the operand's dtype)."""
    flush = name not in _BITWISE
    if name in _ON_BITS:
        return np_impl

    def impl(*args, **params):
        dt = args[0].dtype
        if not dtypes.is_narrow(dt):
            return np_impl(*args, **params)
        if dtypes.is_float(dt):
            in_f32 = dt in _IN_F32
            wide = [a.astype(_F32) if a.dtype == dt else a for a in args]
            if in_f32 and flush:
                wide = [_flush(a) if a.dtype == _F32 else a for a in wide]
            out = np.asarray(np_impl(*wide, **params))
            if result_dtype is not None and result_dtype(dt) != dt:
                return out.astype(result_dtype(dt), copy=False)
            if not in_f32:
                with np.errstate(all="ignore"):
                    out = out.astype(_F16)
            return to_narrow(out, dt, in_f32 and flush)
        wide = [a.astype(np.int32) if a.dtype == dt else a for a in args]
        out = np.asarray(np_impl(*wide, **params))
        if result_dtype is not None and result_dtype(dt) != dt:
            return out.astype(result_dtype(dt), copy=False)
        return to_narrow(out, dt)
    return impl


def matmul(a, c, dt: np.dtype):
    """a @ c for (batch, m, k) and (batch, k, n) operands of a narrow type, with a result of
    the narrow type dt, as XLA's CPU dot computes it: integers in int32; bfloat16 and
    float8_e8m0fnu in float32; the other narrow floats in float16, each product and each partial
    sum (in order along k) rounded to float16."""
    if dtypes.kind_of(dt) in "iu":
        return to_narrow(np.matmul(a.astype(np.int32), c.astype(np.int32)), dt)
    if dt in _IN_F32:
        # (the float32 product as the backend makes every one: compiler/blas.py)
        from corejax.compiler import blas
        return to_narrow(blas.batched_matmul(_flush(a.astype(_F32)), _flush(c.astype(_F32))),
                         dt, True)
    a16, c16 = a.astype(_F16), c.astype(_F16)
    acc = np.zeros(a.shape[:-1] + c.shape[-1:], _F16)
    with np.errstate(all="ignore"):
        for k in range(a.shape[-1]):
            acc = acc + a16[..., :, k:k + 1] * c16[..., k:k + 1, :]
    return to_narrow(acc, dt)
