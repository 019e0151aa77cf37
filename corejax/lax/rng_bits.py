"""rng_bit_generator: XLA's stateless bit generator, as a primitive that draws the very bits
JAX draws on CPU.

The state is a uint32[4] key, read as two little-endian uint64 words (s0, s1). XLA's
published generators (xla/hlo/builder/lib/prng.cc, expanded for a two-word state):

* THREE_FRY: s0 is the Threefry-2x32 key and s1 a 64-bit counter. The requested shape is cut in
  halves along its first even dimension (else its largest, else a scalar becomes [1]): each
  counter s1 + i over the half shape (row-major) is hashed into two words, the first filling
  the even positions of that dimension and the second the odd ones. 64-bit outputs hash one
  counter per element (first word low); narrower ones keep the low bits of 32-bit words. The
  new counter is s1 plus the number of counters used.
* PHILOX: Philox-4x32 with 10 rounds under the key s0, on a 128-bit counter whose low word is
  s1 and high word s0: counter + i gives four words per i, laid out one after the other (two
  64-bit words for 64-bit outputs). The new state keeps s0 and the low word of counter + n.
* DEFAULT: what XLA's CPU backend picks, Philox.

rng_uniform is XLA's stateful generator: each evaluation draws new numbers (from one stream
per process here, as from XLA's per-process state in JAX: the numbers themselves differ).
"""
from __future__ import annotations

import enum
import math
import operator
import warnings

import numpy as np

from corejax import dtypes
from corejax.compiler import registry
from corejax.core import Primitive, ShapedArray, Tracer, get_aval
from corejax.transforms import ad, batching
from corejax.lax.prng import threefry2x32_numpy

__all__ = ["RandomAlgorithm", "rng_bit_generator", "rng_uniform"]


class RandomAlgorithm(enum.IntEnum):
    """The bit generators of rng_bit_generator."""
    RNG_DEFAULT = 0
    RNG_THREE_FRY = 1
    RNG_PHILOX = 2

    def __str__(self):
        return self.name


_U32 = np.uint64(0xFFFFFFFF)
_PHILOX_ROUND_MULTIPLIERS = (np.uint64(0xD2511F53), np.uint64(0xCD9E8D57))
_PHILOX_KEY_INCREMENTS = (np.uint32(0x9E3779B9), np.uint32(0xBB67AE85))


def _words(key):
    """The uint32[4] key as two uint64 words."""
    k = key.astype(np.uint64)
    return k[0] | (k[1] << np.uint64(32)), k[2] | (k[3] << np.uint64(32))


def _key_of(s0, s1):
    return np.array([s0 & _U32, s0 >> np.uint64(32), s1 & _U32, s1 >> np.uint64(32)], np.uint32)


def _split_dim(shape):
    for i, d in enumerate(shape):
        if d % 2 == 0:
            return i
    return max(range(len(shape)), key=lambda i: (shape[i], -i))


def _threefry_32(s0, s1, shape):
    """(uint32 bits of `shape`, new counter)."""
    k0, k1 = np.uint32(s0 & _U32), np.uint32(s0 >> np.uint64(32))
    if not shape:
        half, dim = (1,), 0
    else:
        dim = _split_dim(shape)
        half = shape[:dim] + (-(-shape[dim] // 2),) + shape[dim + 1:]
    n = math.prod(half)
    with np.errstate(over="ignore"):
        counters = s1 + np.arange(n, dtype=np.uint64)
    y0, y1 = threefry2x32_numpy(k0, k1, (counters & _U32).astype(np.uint32),
                                (counters >> np.uint64(32)).astype(np.uint32))
    if not shape:
        return y0.reshape(()), _wrapping_add(s1, n)
    pair = np.stack([y0.reshape(half), y1.reshape(half)], axis=dim + 1)
    even = shape[:dim] + (2 * half[dim],) + shape[dim + 1:]
    bits = pair.reshape(even)[tuple(slice(0, d) for d in shape)]
    return bits, _wrapping_add(s1, n)


def _threefry_64(s0, s1, shape):
    k0, k1 = np.uint32(s0 & _U32), np.uint32(s0 >> np.uint64(32))
    n = math.prod(shape)
    with np.errstate(over="ignore"):
        counters = s1 + np.arange(n, dtype=np.uint64)
    y0, y1 = threefry2x32_numpy(k0, k1, (counters & _U32).astype(np.uint32),
                                (counters >> np.uint64(32)).astype(np.uint32))
    bits = y0.astype(np.uint64) | (y1.astype(np.uint64) << np.uint64(32))
    return bits.reshape(shape), _wrapping_add(s1, n)


def _wrapping_add(a, n):
    return np.uint64((int(a) + n) % (1 << 64))


def _philox_words(s0, s1, count):
    """4 * count uint32 words (interleaved) from the 128-bit counter (low s1, high s0)."""
    i = np.arange(count, dtype=np.uint64)
    with np.errstate(over="ignore"):
        low = s1 + i
    high = np.where(low < s1, _wrapping_add(s0, 1), s0).astype(np.uint64)
    x = [(low & _U32), (low >> np.uint64(32)), (high & _U32), (high >> np.uint64(32))]
    key = [np.uint64(s0 & _U32), np.uint64(s0 >> np.uint64(32))]
    for _ in range(10):
        p0 = x[0] * _PHILOX_ROUND_MULTIPLIERS[0]
        p1 = x[2] * _PHILOX_ROUND_MULTIPLIERS[1]
        x = [(p1 >> np.uint64(32)) ^ x[1] ^ key[0], p1 & _U32,
             (p0 >> np.uint64(32)) ^ x[3] ^ key[1], p0 & _U32]
        key = [np.uint64((int(k) + int(inc)) & 0xFFFFFFFF)
               for k, inc in zip(key, _PHILOX_KEY_INCREMENTS)]
    return np.stack(x, axis=1).astype(np.uint32).reshape(-1)


def _philox(s0, s1, shape, bits64):
    n = math.prod(shape)
    words = 2 * n if bits64 else n
    count = -(-words // 4)
    flat = _philox_words(s0, s1, count)
    if bits64:
        pairs = flat.reshape(-1, 2).astype(np.uint64)
        flat = pairs[:, 0] | (pairs[:, 1] << np.uint64(32))
    return flat[:n].reshape(shape), _wrapping_add(s1, count)


def _generate(key, shape, dtype, algorithm):
    s0, s1 = _words(key)
    bits64 = dtype.itemsize == 8
    if algorithm == RandomAlgorithm.RNG_THREE_FRY:
        bits, s1 = (_threefry_64 if bits64 else _threefry_32)(s0, s1, shape)
    else:
        bits, s1 = _philox(s0, s1, shape, bits64)
    return _key_of(s0, s1), bits.astype(dtype)


rng_bit_generator_p = Primitive("rng_bit_generator")
rng_bit_generator_p.multiple_results = True


def _abstract(key, *, shape, dtype, algorithm):
    if key.dtype != dtypes.uint32 or key.shape != (4,):
        raise TypeError(f"rng_bit_generator requires a uint32[4] key (XLA's two 64-bit state "
                        f"words), got {key.dtype.name}{list(key.shape)}.")
    return [ShapedArray((4,), dtypes.uint32), ShapedArray(shape, dtype)]


def _impl(key, *, shape, dtype, algorithm):
    _abstract(ShapedArray(key.shape, key.dtype), shape=shape, dtype=dtype, algorithm=algorithm)
    return list(_generate(np.asarray(key), shape, np.dtype(dtype), algorithm))


rng_bit_generator_p.def_impl(_impl)
rng_bit_generator_p.def_abstract_eval(_abstract)
rng_bit_generator_p.weak_type_rule = lambda *args, **params: [False, False]
ad.defjvp_zero(rng_bit_generator_p)


def _batch(vals, dims, *, shape, dtype, algorithm):
    # As JAX's rule: one draw of (batch, *shape) bits from the first key of the batch, whose
    # advanced state replaces that first key (the other keys pass through unchanged).
    from corejax.lax.structural import (broadcast_in_dim, dynamic_update_slice, index_in_dim)
    keys = batching.moveaxis(vals[0], dims[0], 0)
    size = get_aval(keys).shape[0]
    new_key, bits = rng_bit_generator_p.bind(index_in_dim(keys, 0, 0, keepdims=False),
                                             shape=(size,) + shape, dtype=dtype,
                                             algorithm=algorithm)
    keys = dynamic_update_slice(keys, broadcast_in_dim(new_key, (1, 4), (1,)),
                                (np.int32(0), np.int32(0)))
    return [keys, bits], [0, 0]


batching.primitive_batchers[rng_bit_generator_p] = _batch


def rng_bit_generator(key, shape, dtype=np.uint32, algorithm=RandomAlgorithm.RNG_DEFAULT, *,
                      out_sharding=None):
    """(new key, random bits of `shape` and the unsigned `dtype`) from a uint32[4] `key`, by
    `algorithm` (DEFAULT is Philox on CPU, as XLA picks). Deterministic: the same key gives
    the same bits, as JAX's."""
    shape = tuple(operator.index(d) for d in shape)
    requested = np.dtype(dtype)
    dtype = dtypes.canonicalize_dtype(requested)
    if dtype != requested:
        warnings.warn(f"Explicitly requested dtype {requested.name} requested in "
                      f"rng_bit_generator is not available, and will be truncated to dtype "
                      f"{dtype.name}. To enable more dtypes, set the jax_enable_x64 "
                      f"configuration option or the JAX_ENABLE_X64 shell environment variable.",
                      stacklevel=2)
    if dtype not in (dtypes.uint8, dtypes.uint16, dtypes.uint32, dtypes.uint64):
        raise TypeError(f"rng_bit_generator: unsupported dtype {dtype.name}")
    algorithm = RandomAlgorithm(algorithm)
    return tuple(rng_bit_generator_p.bind(key, shape=shape, dtype=dtype, algorithm=algorithm))


# --- rng_uniform -------------------------------------------------------------------------------

rng_uniform_p = Primitive("rng_uniform")
_uniform_stream = np.random.default_rng()


def _rng_uniform_abstract(a, b, *, shape):
    if a.dtype != b.dtype:
        raise ValueError(f"Arguments to rng_uniform must have identical dtypes, got "
                         f"{a.dtype.name} and {b.dtype.name}.")
    if a.shape != () or b.shape != ():
        raise ValueError(f"Arguments to rng_uniform must be scalars; got shapes {a.shape} and "
                         f"{b.shape}.")
    if a.dtype.kind not in "fiu" or a.dtype.itemsize < 2 or (
            a.dtype.kind in "iu" and a.dtype.itemsize < 4):
        raise TypeError(f"rng_uniform does not accept dtype {a.dtype.name}: use a float16, "
                        f"float32, float64 or a 32- or 64-bit integer dtype.")
    return ShapedArray(shape, a.dtype, a.weak_type and b.weak_type)


def _rng_uniform_impl(a, b, *, shape):
    _rng_uniform_abstract(ShapedArray(a.shape, a.dtype), ShapedArray(b.shape, b.dtype),
                          shape=shape)
    dtype = a.dtype
    if dtype.kind in "iu":
        if b <= a:
            return np.full(shape, a, dtype)
        return _uniform_stream.integers(int(a), int(b), size=shape).astype(dtype)
    lo, hi = float(a), float(b)
    out = (lo + (hi - lo) * _uniform_stream.random(shape)).astype(dtype)
    # rounding to a narrow float may reach b: the interval stays half-open
    return np.where(out >= dtype.type(hi), np.nextafter(dtype.type(hi), dtype.type(lo)),
                    out) if hi > lo else out


rng_uniform_p.def_impl(_rng_uniform_impl)
rng_uniform_p.def_abstract_eval(_rng_uniform_abstract)
registry.def_effectful(rng_uniform_p)   # a new draw each time: never merged nor folded


def rng_uniform(a, b, shape):
    """Uniform random numbers in [a, b) of `shape`, from a stateful generator: each call (and
    each run of a jitted function) draws new ones. As in JAX, prefer jax.random; a and b are
    scalars of one dtype (Python scalars keep their own dtypes, weakly typed)."""
    from corejax.lax.elementwise import convert_element_type

    def operand(x):
        if type(x) in (bool, int, float, complex):
            return convert_element_type(x, dtypes.python_scalar_dtype(x), weak_type=True)
        return x if isinstance(x, Tracer) else np.asarray(x)
    return rng_uniform_p.bind(operand(a), operand(b),
                              shape=tuple(operator.index(d) for d in shape))
