"""Bit-level operations: count leading zeros, the high half of integer products, and rounding
floats to fewer exponent / mantissa bits (reduce_precision)."""
from __future__ import annotations

import numpy as np

from corejax.core import get_aval
from corejax.transforms.ad import Zero, deflinear
from corejax.lax._factories import FLOATING, check_dtype, unop
from corejax.lax import elementwise as ew

__all__ = ["clz", "mulhi", "reduce_precision"]

_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _integer_operand(name, x):
    aval = get_aval(x)
    check_dtype(name, aval, ("integer",))
    return aval


def clz(x):
    """The number of leading zero bits of each integer (its width for 0)."""
    aval = _integer_operand("clz", x)
    width = aval.dtype.itemsize * 8
    u = ew.bitcast_convert_type(x, _UNSIGNED[aval.dtype.itemsize]) \
        if aval.dtype.kind == "i" else x
    # smear the highest set bit into every lower position: then the set bits are its width
    shift = 1
    while shift < width:
        u = ew.bitwise_or(u, ew.shift_right_logical(u, ew.full_like(u, shift)))
        shift *= 2
    zeros = ew.sub(ew.full_like(u, width), ew.population_count(u))
    return ew.convert_element_type(zeros, aval.dtype) if aval.dtype.kind == "i" else zeros


def mulhi(x, y, /):
    """The high half of the double-width product x * y (signed or unsigned, as the dtype)."""
    ax = _integer_operand("mulhi", x)
    ay = get_aval(y)
    if ax.dtype != ay.dtype:
        raise TypeError(f"lax.mulhi requires arguments to have the same dtypes, got "
                        f"{ax.dtype.name}, {ay.dtype.name}.")
    if ax.shape != ay.shape:
        raise TypeError(f"mulhi got incompatible shapes for broadcasting: {ax.shape}, "
                        f"{ay.shape}.")
    udt = _UNSIGNED[ax.dtype.itemsize]
    half = ax.dtype.itemsize * 4
    u = [ew.bitcast_convert_type(v, udt) if ax.dtype.kind == "i" else v for v in (x, y)]
    mask, h = ew.full_like(u[0], (1 << half) - 1), ew.full_like(u[0], half)
    lo = [ew.bitwise_and(v, mask) for v in u]
    hi = [ew.shift_right_logical(v, h) for v in u]
    lo_lo, hi_lo = ew.mul(lo[0], lo[1]), ew.mul(hi[0], lo[1])
    lo_hi, hi_hi = ew.mul(lo[0], hi[1]), ew.mul(hi[0], hi[1])
    cross = ew.add(ew.add(ew.shift_right_logical(lo_lo, h), ew.bitwise_and(hi_lo, mask)), lo_hi)
    out = ew.add(ew.add(hi_hi, ew.shift_right_logical(hi_lo, h)),
                 ew.shift_right_logical(cross, h))
    if ax.dtype.kind == "u":
        return out
    # signed: x*y = ux*uy - 2^n (x<0 ? uy : 0) - 2^n (y<0 ? ux : 0)  (mod 2^2n)
    zero = ew.full_like(u[0], 0)
    for neg_operand, other in ((x, u[1]), (y, u[0])):
        is_neg = ew.lt(neg_operand, ew.full_like(neg_operand, 0))
        out = ew.sub(out, ew.select(is_neg, other, zero))
    return ew.bitcast_convert_type(out, ax.dtype)


# --- reduce_precision ------------------------------------------------------------------------

def _reduce_precision_impl(x, exponent_bits, mantissa_bits):
    info = np.finfo(x.dtype)
    src_mant, src_exp = info.nmant, info.nexp
    udt = _UNSIGNED[x.dtype.itemsize]
    bits = np.ascontiguousarray(x).view(udt)
    one = udt(1)
    if mantissa_bits < src_mant:
        # round to nearest, ties to even, at the last kept mantissa bit
        drop = src_mant - mantissa_bits
        last_kept = udt(one << udt(drop))
        bias = (bits & last_kept) >> udt(drop)
        bias = bias + udt((last_kept >> one) - one)
        bits = (bits + bias) & ~udt(last_kept - one)
    if exponent_bits < src_exp:
        sign_mask = udt(one << udt(x.dtype.itemsize * 8 - 1))
        exp_mask = udt(((1 << src_exp) - 1) << src_mant)
        src_bias = (1 << (src_exp - 1)) - 1
        new_bias = (1 << (exponent_bits - 1)) - 1
        exponent = bits & exp_mask
        overflow = exponent > udt((src_bias + new_bias) << src_mant)
        # values below the reduced format's smallest normal become (signed) zero
        underflow = exponent <= udt((src_bias - new_bias) << src_mant)
        signed_zero = bits & sign_mask
        bits = np.where(overflow, signed_zero | exp_mask, np.where(underflow, signed_zero, bits))
    out = bits.astype(udt).view(x.dtype).reshape(x.shape)
    return np.where(np.isnan(x), x, out) if mantissa_bits > 0 else out


reduce_precision_p = unop("reduce_precision", _reduce_precision_impl, FLOATING)
deflinear(reduce_precision_p, lambda ct, x, exponent_bits, mantissa_bits: [
    None if type(ct) is Zero else reduce_precision_p.bind(
        ct, exponent_bits=exponent_bits, mantissa_bits=mantissa_bits)])


def reduce_precision(operand, exponent_bits: int, mantissa_bits: int):
    """`operand` rounded (to nearest even) to a float format with the given numbers of exponent
    and mantissa bits, overflowing to inf and flushing values below its smallest normal to 0;
    the dtype is unchanged. Its derivative is itself, as in JAX."""
    from corejax.lax._composed import _as_array
    operand = _as_array(operand)
    check_dtype("reduce_precision", get_aval(operand), ("floating",))
    exponent_bits, mantissa_bits = int(exponent_bits), int(mantissa_bits)
    if exponent_bits < 1 or mantissa_bits < 0:
        raise ValueError(f"reduce_precision: exponent_bits must be >= 1 and mantissa_bits >= 0, "
                         f"got {exponent_bits} and {mantissa_bits}.")
    return reduce_precision_p.bind(operand, exponent_bits=exponent_bits,
                                   mantissa_bits=mantissa_bits)
