"""Arrays from and to bytes, strings and files (NumPy does the parsing; the results become
corejax arrays), packbits / unpackbits, and NumPy's printing helpers."""
from __future__ import annotations

import operator

import numpy as np

from corejax import core, lax
from corejax.core import get_aval
from corejax.numpy._core import asarray, canonicalize_axis, check_arraylike

__all__ = []

save, savez = np.save, np.savez
array_repr, array_str = np.array_repr, np.array_str
get_printoptions, set_printoptions, printoptions = (np.get_printoptions, np.set_printoptions,
                                                    np.printoptions)


def load(file, *args, **kwargs):
    """np.load; an array result becomes a corejax array (object arrays stay NumPy)."""
    out = np.load(file, *args, **kwargs)
    if isinstance(out, np.ndarray) and out.dtype != object:
        return asarray(out)
    return out


def frombuffer(buffer, dtype=float, count=-1, offset=0):
    """A 1-D array interpreting a bytes-like object's memory as `dtype`."""
    return asarray(np.frombuffer(buffer, dtype=dtype, count=count, offset=offset))


def fromstring(string, dtype=float, count=-1, *, sep):
    """A 1-D array parsed from text whose numbers are separated by `sep`."""
    return asarray(np.fromstring(string, dtype=dtype, count=count, sep=sep))


def _impure(name):
    def fn(*args, **kwargs):
        raise NotImplementedError(
            f"jnp.{name}() is not implemented because it may be non-pure and thus unsafe for "
            f"use with JIT and other transformations. Consider using jnp.asarray(np.{name}(...)) "
            f"instead, although care should be taken if np.{name} is used within a "
            "transformation because of its side effect of consuming its input.")
    fn.__name__ = name
    return fn


fromfile = _impure("fromfile")
fromiter = _impure("fromiter")


def from_dlpack(x, /, *, device=None, copy=None):
    """An array from an object exporting the DLPack protocol (__dlpack__)."""
    return asarray(np.from_dlpack(x), device=device)


def einsum_path(subscripts, /, *operands, optimize="auto"):
    """The contraction order of einsum's operands and a report, from NumPy's path search on
    the operands' shapes ('auto': the optimal order for up to four operands, else greedy)."""
    shaped = [np.broadcast_to(np.zeros((), dtype=np.float32), get_aval(asarray(o)).shape)
              if not isinstance(o, (list, tuple)) else o for o in operands]
    strategy = optimize
    if optimize in ("auto", True):
        strategy = "optimal" if len(operands) <= 4 else "greedy"
    path, report = np.einsum_path(subscripts, *shaped, optimize=strategy)
    return path[1:], report


def _bit_axis(a, axis):
    if axis is None:
        return lax.reshape(a, (get_aval(a).size,)), 0
    return a, canonicalize_axis(axis, get_aval(a).ndim)


def _bit_weights(bitorder, dt):
    if bitorder not in ("big", "little"):
        raise ValueError("'order' must be either 'little' or 'big'")
    weights = [1 << (7 - i) for i in range(8)] if bitorder == "big" else [1 << i for i in range(8)]
    return lax.convert_element_type(asarray(np.array(weights, np.uint8)), dt)


def packbits(a, axis=None, bitorder="big"):
    """Packs the (non-zero) elements of a into bits of uint8 along axis, padding with zeros to
    a multiple of 8."""
    check_arraylike("packbits", a)
    a = asarray(a)
    if get_aval(a).dtype.kind not in "biu":
        raise TypeError("Expected an input array of integer or boolean data type")
    bits = lax.ne(a, lax.full((), 0, get_aval(a).dtype)) if get_aval(a).dtype != np.bool_ else a
    bits, axis = _bit_axis(bits, axis)
    shape = get_aval(bits).shape
    n = shape[axis]
    pad = -n % 8
    cfg = [(0, 0, 0)] * len(shape)
    cfg[axis] = (0, pad, 0)
    bits = lax.pad(lax.convert_element_type(bits, np.uint8), lax.full((), 0, np.uint8), cfg)
    groups = shape[:axis] + ((n + pad) // 8, 8) + shape[axis + 1:]
    bits = lax.reshape(bits, groups)
    weights = lax.broadcast_in_dim(_bit_weights(bitorder, np.uint8), groups, (axis + 1,))
    return lax.reduce_sum(lax.mul(bits, weights), (axis + 1,))


def unpackbits(a, axis=None, count=None, bitorder="big"):
    """Unpacks each uint8 of a into 8 bits (uint8 0 / 1) along axis; `count` keeps that many
    bits (from the end if negative)."""
    check_arraylike("unpackbits", a)
    a = asarray(a)
    if get_aval(a).dtype != np.uint8:
        raise TypeError("Expected an input array of unsigned byte data type")
    a, axis = _bit_axis(a, axis)
    shape = get_aval(a).shape
    expanded = shape[:axis + 1] + (8,) + shape[axis + 1:]
    shifts = _bit_weights(bitorder, np.uint8)
    values = lax.broadcast_in_dim(a, expanded, tuple(i for i in range(len(expanded))
                                                    if i != axis + 1))
    bits = lax.ne(lax.bitwise_and(values, lax.broadcast_in_dim(shifts, expanded, (axis + 1,))),
                  lax.full((), 0, np.uint8))
    bits = lax.convert_element_type(bits, np.uint8)
    out_shape = shape[:axis] + (shape[axis] * 8,) + shape[axis + 1:]
    bits = lax.reshape(bits, out_shape)
    if count is None:
        return bits
    count = core.concrete_or_error(operator.index, count, "count argument of jnp.unpackbits")
    total = out_shape[axis]
    keep = count if count >= 0 else total + count
    if keep <= total:
        return lax.slice_in_dim(bits, 0, max(keep, 0), 1, axis)
    cfg = [(0, 0, 0)] * len(out_shape)
    cfg[axis] = (0, keep - total, 0)
    return lax.pad(bits, lax.full((), 0, np.uint8), cfg)



