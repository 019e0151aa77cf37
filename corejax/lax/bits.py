"""Bit-level operations: count leading zeros, the high half of integer products, and rounding
floats to fewer exponent / mantissa bits (reduce_precision)."""
from __future__ import annotations

import numpy as np

from corejax.core import get_aval
from corejax.transforms.ad import Zero, deflinear, defjvp_zero
from corejax.lax._factories import FLOATING, check_dtype, naryop, unop

__all__ = ["clz", "mulhi", "reduce_precision"]

_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _integer_operand(name, x):
    aval = get_aval(x)
    check_dtype(name, aval, ("integer",))
    return aval


def _unsigned(x):
    return x.view(_UNSIGNED[x.dtype.itemsize]) if x.dtype.kind == "i" else x


def _clz_impl(x):
    width = x.dtype.itemsize * 8
    u = _unsigned(np.asarray(x)).copy()
    # smear the highest set bit into every lower position: then the set bits are its width
    shift = 1
    while shift < width:
        u |= u >> u.dtype.type(shift)
        shift *= 2
    return (width - np.bitwise_count(u)).astype(x.dtype)


clz_p = unop("clz", _clz_impl, ("integer",))
defjvp_zero(clz_p)


def clz(x):
    """The number of leading zero bits of each integer (its width for 0)."""
    _integer_operand("clz", x)
    return clz_p.bind(x)


def _mulhi_impl(x, y):
    bits = x.dtype.itemsize * 8
    if bits < 64:  # the whole product fits in 64 bits
        wide = np.int64 if x.dtype.kind == "i" else np.uint64
        return ((x.astype(wide) * y.astype(wide)) >> wide(bits)).astype(x.dtype)
    # 64 x 64 -> 128 bits from 32-bit halves (wrapping uint64 arithmetic), then the signed
    # correction x*y = ux*uy - 2^64 ((x<0) uy + (y<0) ux)  (mod 2^128)
    ux, uy = _unsigned(x), _unsigned(y)
    half, mask = np.uint64(32), np.uint64(0xFFFFFFFF)
    lo = [ux & mask, uy & mask]
    hi = [ux >> half, uy >> half]
    with np.errstate(over="ignore"):
        lo_lo, hi_lo, lo_hi, hi_hi = lo[0] * lo[1], hi[0] * lo[1], lo[0] * hi[1], hi[0] * hi[1]
        cross = (lo_lo >> half) + (hi_lo & mask) + lo_hi
        out = hi_hi + (hi_lo >> half) + (cross >> half)
        if x.dtype.kind == "i":
            out = out - np.where(x < 0, uy, np.uint64(0)) - np.where(y < 0, ux, np.uint64(0))
    return out.view(x.dtype) if x.dtype.kind == "i" else out


mulhi_p = naryop("mulhi", _mulhi_impl, (("integer",), ("integer",)))
defjvp_zero(mulhi_p)


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
    return mulhi_p.bind(x, y)


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
