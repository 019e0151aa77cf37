"""Key-based pseudo-random numbers with JAX's API and JAX's exact bits (Threefry-2x32).

State is explicit: a key is a uint32 array of shape (2,) (`PRNGKey`, the legacy form) or a
typed key array (`key`); `split` and `fold_in` derive new keys, samplers consume one key.
Everything is composed of lax/jnp operations on top of the `threefry2x32` primitive, so
samplers work unchanged under jit, vmap and grad (gradients flow through `minval`/`maxval`,
`lower`/`upper`, `logits`...).

The samplers' cores are jitted, as JAX's are: an eager call runs one compiled program (the
hash and the transform of its bits fused into one loop), under jit they inline into the caller.

`config.threefry_partitionable` picks how counters are laid out, as JAX's flag of that name:
False (corejax's default) hashes one flat run of counters split in halves; True hashes each
element's own index, so a sample does not depend on how the array is split up.
"""
from __future__ import annotations

import math
import operator
from functools import partial
import warnings

import numpy as np

from corejax import dtypes, lax
from corejax import numpy as jnp
from corejax.api import jit
from corejax.config import config
from corejax.core import get_aval
from corejax.lax.prng import threefry2x32_p
from corejax.tree_util import register_pytree_node

__all__ = [
    "PRNGKey", "key", "key_data", "wrap_key_data", "PRNGKeyArray", "split", "fold_in", "bits",
    "uniform", "normal", "truncated_normal", "bernoulli", "randint", "choice", "permutation",
    "shuffle", "categorical", "gumbel", "exponential", "laplace", "logistic",
]

_UINT = {8: np.dtype("uint8"), 16: np.dtype("uint16"), 32: np.dtype("uint32"),
         64: np.dtype("uint64")}
_MAX_COUNTERS = 2 ** 32 - 1


# --- keys ------------------------------------------------------------------------------------

class _KeyDType:
    name = "key<fry>"

    def __repr__(self):
        return self.name

    __str__ = __repr__


class PRNGKeyArray:
    """An array of typed keys (from `key`/`wrap_key_data`): `shape` keys whose Threefry words
    are the trailing axis of `key_data(keys)`. A pytree with that uint32 data as its one leaf, so
    transformations see a plain array."""

    __slots__ = ("_data",)
    dtype = _KeyDType()

    def __init__(self, data):
        self._data = data

    shape = property(lambda self: tuple(self._data.shape[:-1]))
    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: math.prod(self.shape))

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __getitem__(self, index):
        # The trailing full slice keeps the key words whether or not `index` has an Ellipsis.
        index = index if isinstance(index, tuple) else (index,)
        return PRNGKeyArray(self._data[index + (slice(None),)])

    def reshape(self, *shape):
        shape = shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape
        return PRNGKeyArray(jnp.reshape(self._data, tuple(shape) + (2,)))

    def __repr__(self):
        return f"Array({self.shape}, dtype={self.dtype}) overlaying:\n{self._data}"


register_pytree_node(PRNGKeyArray, lambda k: ((k._data,), None),
                     lambda _, children: PRNGKeyArray(children[0]))


def _key_words(name: str, keys):
    """(uint32 data [..., 2], whether `keys` was typed), or the error JAX raises for bad keys."""
    if isinstance(keys, PRNGKeyArray):
        return keys._data, True
    try:
        aval = get_aval(keys)
    except TypeError:
        raise TypeError(f"{name}: expected a PRNG key (from random.PRNGKey or random.key), got "
                        f"{keys!r}.") from None
    if aval.dtype != np.uint32:
        raise TypeError(f"{name} encountered invalid PRNG key data: expected key_data.dtype = "
                        f"uint32; got dtype={aval.dtype.name}. Make keys with random.PRNGKey(seed)"
                        " or random.key(seed).")
    if aval.shape[-1:] != (2,):
        raise TypeError(f"{name} encountered invalid PRNG key data: expected key_data.shape to "
                        f"end with (2,); got shape={aval.shape}.")
    return keys, False


def _single_key(name: str, keys):
    data, typed = _key_words(name, keys)
    shape = get_aval(data).shape
    if shape != (2,):
        raise ValueError(f"{name} accepts a single key, but was given a key array of shape "
                         f"{shape[:-1] if typed else shape} != (). Use jax.vmap for batching.")
    return data, typed


def _seed_words(seed):
    if isinstance(seed, PRNGKeyArray):
        raise TypeError("PRNG key seed must be an integer; got a PRNG key. Use split or "
                        "fold_in to derive keys from a key.")
    if isinstance(seed, int):
        if not -(2 ** 63) <= seed < 2 ** 64:
            raise OverflowError(f"PRNG key seed {seed} does not fit in 64 bits.")
        bits64 = seed % 2 ** 64
        high = bits64 >> 32 if config.enable_x64 else 0
        return jnp.asarray(np.array([high, bits64 & 0xFFFFFFFF], np.uint32))
    if isinstance(seed, float):
        raise TypeError(f"PRNG key seed must be an integer; got {seed!r}")
    seed = jnp.asarray(seed)
    if seed.shape != ():
        raise TypeError(f"PRNGKey accepts a scalar seed, but was given an array of shape "
                        f"{seed.shape} != (). Use jax.vmap for batching.")
    if not (dtypes.is_integer(seed.dtype) or seed.dtype == np.bool_):
        raise TypeError(f"PRNG key seed must be an integer; got a {seed.dtype.name} array.")
    low = lax.convert_element_type(seed, np.uint32)
    if seed.dtype.itemsize == 8:
        high = lax.convert_element_type(lax.shift_right_logical(seed, 32), np.uint32)
    else:
        high = lax.full((), 0, np.uint32)
    return jnp.stack([high, low])


def _check_impl(impl):
    if impl not in (None, "threefry2x32"):
        raise ValueError(f"Unsupported PRNG implementation {impl!r}: corejax implements "
                         "'threefry2x32' only.")


def PRNGKey(seed, *, impl=None):
    """A legacy key: uint32[2] holding the 64-bit `seed` (high word first; only the low 32
    bits of a Python int while x64 is off, as in JAX)."""
    _check_impl(impl)
    return _seed_words(seed)


def key(seed, *, impl=None):
    """A typed key (shape ()), the same Threefry state as `PRNGKey(seed)`."""
    _check_impl(impl)
    return PRNGKeyArray(_seed_words(seed))


def key_data(keys):
    """The uint32 words of `keys` (trailing axis of size 2)."""
    return _key_words("key_data", keys)[0]


def wrap_key_data(key_bits_array, *, impl=None):
    """Typed keys from uint32 words whose trailing axis has size 2."""
    _check_impl(impl)
    return PRNGKeyArray(_key_words("wrap_key_data", key_bits_array)[0])


def _like(typed: bool, data):
    return PRNGKeyArray(data) if typed else data


# --- counters and the hash -------------------------------------------------------------------

def _threefry(words, x0, x1):
    shape = get_aval(x0).shape
    k0, k1 = (lax.broadcast_in_dim(lax.index_in_dim(words, i, keepdims=False), shape, ())
              for i in (0, 1))
    return threefry2x32_p.bind(k0, k1, x0, x1)


def _hash_counts(words, counts):
    """JAX's `threefry_2x32`: a flat uint32 vector hashed as (first half, second half) pairs,
    zero-padded to even length; returns a vector of the same length."""
    n = get_aval(counts).shape[0]
    if n % 2:
        counts = lax.concatenate([counts, lax.full((1,), 0, np.uint32)], 0)
    half = (n + n % 2) // 2
    y0, y1 = _threefry(words, lax.slice(counts, (0,), (half,)),
                       lax.slice(counts, (half,), (2 * half,)))
    return lax.slice(lax.concatenate([y0, y1], 0), (0,), (n,))


def _hash_iota(words, n: int):
    """`_hash_counts(words, iota(n))` element by element: element j < half is word 0 of pair j
    (counters j and j + half), element j >= half word 1 of pair j - half; the last counter of
    an odd n is the zero padding. Being elementwise in the iota, it fuses with whatever
    transforms the bits into one loop: each pair is hashed once per element it yields, which
    costs less than materializing both halves and concatenating them."""
    half = (n + 1) // 2
    j = _iota(n)
    first = lax.lt(j, np.uint32(half))
    pair = lax.sub(j, lax.select(first, lax.full((n,), 0, np.uint32),
                                 lax.full((n,), half, np.uint32)))
    second = lax.add(pair, np.uint32(half))
    if n % 2:
        second = lax.select(lax.eq(second, np.uint32(n)), lax.full((n,), 0, np.uint32), second)
    y0, y1 = _threefry(words, pair, second)
    return lax.select(first, y0, y1)


def _check_count(count: int):
    if count > _MAX_COUNTERS:
        raise ValueError(f"corejax.random draws at most {_MAX_COUNTERS} 32-bit words from one "
                         f"key in one call; {count} were requested. Split the key and draw in "
                         "pieces.")


def _iota(count: int):
    _check_count(count)
    return lax.iota(np.uint32, count)


def _element_counters(shape):
    """Per-element counters for the partitionable layout: (high, low) words of the row-major
    index of each element."""
    low = lax.reshape(_iota(math.prod(shape)), shape)
    return lax.full(shape, 0, np.uint32), low


@partial(jit, static_argnums=1)
def _split(words, shape):
    if config.threefry_partitionable:
        y0, y1 = _threefry(words, *_element_counters(shape))
        return jnp.stack([y0, y1], axis=-1)
    return lax.reshape(_hash_iota(words, 2 * math.prod(shape)), shape + (2,))


@partial(jit, static_argnums=(1, 2))
def _random_bits(words, width: int, shape):
    """`width`-bit unsigned random integers of `shape`."""
    if config.threefry_partitionable:
        b0, b1 = _threefry(words, *_element_counters(shape))
        if width == 64:
            return lax.bitwise_or(lax.shift_left(lax.convert_element_type(b0, _UINT[64]), 32),
                                  lax.convert_element_type(b1, _UINT[64]))
        mixed = lax.bitwise_xor(b0, b1)
        return mixed if width == 32 else lax.convert_element_type(mixed, _UINT[width])
    size = math.prod(shape)
    count = -(-width * size // 32)
    if width == 64:
        # Words j and j + size of the 2 * size counters: the two words of pair j.
        _check_count(count)
        pair = lax.iota(np.uint32, size)
        high, low = (lax.convert_element_type(w, _UINT[64]) for w in
                     _threefry(words, pair, lax.add(pair, np.uint32(size))))
        return lax.reshape(lax.bitwise_or(lax.shift_left(high, np.uint64(32)), low), shape)
    words32 = _hash_iota(words, count)
    if width < 32:
        # Each 32-bit word yields 32 // width values, least significant bits first.
        per_word = 32 // width
        spread = lax.broadcast_in_dim(words32, (count, per_word), (0,))
        shifts = lax.mul(lax.broadcasted_iota(np.uint32, (count, per_word), 1), width)
        pieces = lax.bitwise_and(lax.shift_right_logical(spread, shifts), (1 << width) - 1)
        flat = lax.reshape(pieces, (count * per_word,))
        out = lax.convert_element_type(lax.slice(flat, (0,), (size,)), _UINT[width])
    else:
        out = words32
    return lax.reshape(out, shape)


# --- argument checking -----------------------------------------------------------------------

def _shape(name: str, shape) -> tuple:
    try:
        dims = (operator.index(shape),)
    except TypeError:
        try:
            dims = tuple(operator.index(d) for d in shape)
        except TypeError:
            raise TypeError(f"{name}: shapes must be 1D sequences of concrete values of integer "
                            f"type, got {shape!r}. If using `jit`, try using `static_argnums` "
                            "or applying `jit` to smaller subfunctions.") from None
    if any(d < 0 for d in dims):
        raise ValueError(f"{name}: shape {dims} has a negative dimension.")
    return dims


def _check_shape(name: str, shape, *param_shapes) -> None:
    result = jnp.broadcast_shapes(shape, *param_shapes)
    if tuple(result) != tuple(shape):
        raise ValueError(f"{name} parameter shapes must be broadcast-compatible with shape "
                         "argument, and the result of broadcasting the shapes must equal the "
                         f"shape argument. Got result shape {tuple(result)} for shape argument "
                         f"{tuple(shape)}.")


def _float_dtype(name: str, dtype) -> np.dtype:
    dt = dtypes.canonicalize_dtype(dtypes.default_float_dtype() if dtype is None else dtype)
    if not dtypes.is_float(dt):
        raise ValueError(f"dtype argument to `{name}` must be a float dtype, got {dt}")
    return dt


def _check_mode(mode, default="low"):
    mode = default if mode is None else mode
    if mode not in ("high", "low"):
        raise ValueError(f"got mode={mode!r}, expected 'high' or 'low'")
    return mode


def _param(value, dt):
    return lax.convert_element_type(jnp.asarray(value), dt)


# --- samplers --------------------------------------------------------------------------------

def split(key, num=2):
    """`num` new keys (a shape tuple is allowed) derived from `key`."""
    words, typed = _single_key("split", key)
    return _like(typed, _split(words, _shape("split", num)))


def fold_in(key, data):
    """A new key from `key` and a 32-bit integer `data`."""
    words, typed = _single_key("fold_in", key)
    if isinstance(data, int):
        if not 0 <= data < 2 ** 32:
            raise OverflowError(f"Python integer {data} out of bounds for uint32")
        data = np.uint32(data)
    data = jnp.asarray(data)
    if data.shape != ():
        raise TypeError(f"fold_in data must be a scalar, got an array of shape {data.shape}.")
    return _like(typed, _fold_in(words, data))


@jit
def _fold_in(words, data):
    counts = lax.concatenate([lax.full((1,), 0, np.uint32),
                              lax.reshape(lax.convert_element_type(data, np.uint32), (1,))], 0)
    return _hash_counts(words, counts)


def bits(key, shape=(), dtype=None):
    """Uniform random unsigned integers (uint32 by default, uint64 with x64)."""
    words, _ = _single_key("bits", key)
    dt = dtypes.canonicalize_dtype(np.uint64 if dtype is None else dtype)
    if dt.kind != "u":
        raise ValueError(f"dtype argument to `bits` must be an unsigned int dtype, got {dt}")
    return _random_bits(words, dt.itemsize * 8, _shape("bits", shape))


@partial(jit, static_argnums=(1, 2))
def _uniform(words, shape, dt, minval, maxval):
    minval, maxval = _param(minval, dt), _param(maxval, dt)
    _check_shape("uniform", shape, minval.shape, maxval.shape)
    info = np.finfo(dt)
    width = info.bits
    # Random mantissa bits under the exponent of 1.0 give a float in [1, 2); minus 1 is [0, 1).
    mantissa = lax.shift_right_logical(_random_bits(words, width, shape), width - info.nmant)
    one_bits = int(np.array(1.0, dt).view(_UINT[width]))
    floats = lax.bitcast_convert_type(lax.bitwise_or(mantissa, one_bits), dt) - 1
    return jnp.maximum(minval, floats * (maxval - minval) + minval)


def uniform(key, shape=(), dtype=None, minval=0.0, maxval=1.0):
    """Floats uniform in [minval, maxval)."""
    words, _ = _single_key("uniform", key)
    shape = _shape("uniform", shape)
    return _uniform(words, shape, _float_dtype("uniform", dtype), minval, maxval)


@partial(jit, static_argnums=(1, 2))
def _normal(words, shape, dt):
    # Uniform on the open interval (-1, 1), through the inverse error function.
    low = np.nextafter(np.array(-1.0, dt), np.array(0.0, dt))
    u = _uniform(words, shape, dt, low, 1.0)
    return lax.erf_inv(u) * np.array(np.sqrt(2), dt)


def normal(key, shape=(), dtype=None):
    """Standard normal floats."""
    words, _ = _single_key("normal", key)
    shape = _shape("normal", shape)
    return _normal(words, shape, _float_dtype("normal", dtype))


def truncated_normal(key, lower, upper, shape=None, dtype=None):
    """Standard normal floats conditioned on lower < x < upper."""
    words, _ = _single_key("truncated_normal", key)
    dt = _float_dtype("truncated_normal", dtype)
    lower, upper = _param(lower, dt), _param(upper, dt)
    if shape is None:
        shape = tuple(jnp.broadcast_shapes(lower.shape, upper.shape))
    else:
        shape = _shape("truncated_normal", shape)
        _check_shape("truncated_normal", shape, lower.shape, upper.shape)
    sqrt2 = np.array(np.sqrt(2), dt)
    u = _uniform(words, shape, dt, lax.erf(lower / sqrt2), lax.erf(upper / sqrt2))
    out = lax.erf_inv(u) * sqrt2
    # Rounding can land on a bound; keep samples strictly inside.
    return jnp.clip(out, lax.nextafter(lax.stop_gradient(lower), np.inf),
                    lax.nextafter(lax.stop_gradient(upper), -np.inf))


def bernoulli(key, p=0.5, shape=None, mode="low"):
    """Booleans that are True with probability `p`."""
    words, _ = _single_key("bernoulli", key)
    mode = _check_mode(mode)
    p = jnp.asarray(p)
    if not dtypes.is_float(p.dtype):
        raise TypeError(f"bernoulli probability `p` must have a floating dtype, got {p.dtype}.")
    if shape is None:
        shape = p.shape
    else:
        shape = _shape("bernoulli", shape)
        _check_shape("bernoulli", shape, p.shape)
    if mode == "high":
        # A second draw refines the first below its resolution, for tiny p.
        u = _uniform(words, (2,) + tuple(shape), p.dtype, 0.0, 1.0)
        coarse, fine = (lax.index_in_dim(u, i, keepdims=False) for i in (0, 1))
        return fine * 2.0 ** -np.finfo(p.dtype).nmant < p - coarse
    return _uniform(words, shape, p.dtype, 0.0, 1.0) < p


def _convert_and_clip_integer(val, dt):
    """`val` converted to integer dtype `dt`, saturating at the bounds both dtypes share."""
    src = val.dtype
    if src != dt:
        lo = max(np.iinfo(src).min, np.iinfo(dt).min)
        hi = min(np.iinfo(src).max, np.iinfo(dt).max)
        val = jnp.clip(val, lo, hi)
    return lax.convert_element_type(val, dt)


def _as_int(x):
    return x if dtypes.is_integer(x.dtype) else lax.convert_element_type(
        x, dtypes.default_int_dtype())


def _randint(words, shape, minval, maxval, dt):
    minval, maxval = _as_int(minval), _as_int(maxval)
    maxval_beyond_dtype = maxval > _convert_and_clip_integer(
        jnp.asarray(np.iinfo(dt).max, dt), maxval.dtype)
    minval = jnp.broadcast_to(_convert_and_clip_integer(minval, dt), shape)
    maxval = jnp.broadcast_to(_convert_and_clip_integer(maxval, dt), shape)
    width = dt.itemsize * 8
    udt = _UINT[width]
    keys = _split(words, (2,))
    high, low = (_random_bits(lax.index_in_dim(keys, i, keepdims=False), width, shape)
                 for i in (0, 1))
    # 2 * width random bits reduced modulo the span: biased only when the span is not a power
    # of two, negligibly for small spans. 2**width % span is computed as (2**(width/2))^2 % span.
    span = lax.convert_element_type(maxval - minval, udt)
    span = jnp.where(maxval <= minval, 1, span)
    span = jnp.where(maxval_beyond_dtype & (maxval > minval), span + 1, span)
    multiplier = lax.rem(lax.full(shape, 2 ** (width // 2), udt), span)
    multiplier = lax.rem(multiplier * multiplier, span)
    offset = lax.rem(lax.rem(high, span) * multiplier + lax.rem(low, span), span)
    return minval + lax.convert_element_type(offset, dt)


def randint(key, shape, minval, maxval, dtype=None):
    """Integers uniform in [minval, maxval). 8- and 16-bit dtypes are sampled at 32 bits."""
    words, _ = _single_key("randint", key)
    shape = _shape("randint", shape)
    dt = dtypes.canonicalize_dtype(dtypes.default_int_dtype() if dtype is None else dtype)
    if not dtypes.is_integer(dt):
        raise TypeError(f"randint only accepts integer dtypes, got {dt}")
    minval, maxval = jnp.asarray(minval), jnp.asarray(maxval)
    _check_shape("randint", shape, minval.shape, maxval.shape)
    if dt.itemsize >= 4:
        return _randint(words, shape, minval, maxval, dt)
    info = np.iinfo(dt)
    minval = jnp.clip(lax.convert_element_type(minval, np.int32), int(info.min), int(info.max))
    maxval = jnp.clip(lax.convert_element_type(maxval, np.int32), int(info.min),
                      int(info.max) + 1)
    return lax.convert_element_type(_randint(words, shape, minval, maxval, np.dtype("int32")), dt)


def _gumbel(words, shape, dt, mode):
    info = np.finfo(dt)
    if mode == "high":
        u = _uniform(words, (2,) + tuple(shape), dt, 0.0, 1.0)
        high, low = (lax.index_in_dim(u, i, keepdims=False) for i in (0, 1))
        # Below 1/2 the second draw fills in the bits the first lacks.
        x = jnp.where(high >= 0.5, high, high + low * 2.0 ** -info.nmant + info.tiny)
        return -jnp.log(-jnp.log1p(-x))
    return -jnp.log(-jnp.log(_uniform(words, shape, dt, info.tiny, 1.0)))


def gumbel(key, shape=(), dtype=None, mode=None):
    """Standard Gumbel floats; mode='high' uses twice the random bits for a longer tail."""
    words, _ = _single_key("gumbel", key)
    shape = _shape("gumbel", shape)
    return _gumbel(words, shape, _float_dtype("gumbel", dtype), _check_mode(mode))


def exponential(key, shape=(), dtype=None):
    """Standard exponential floats."""
    words, _ = _single_key("exponential", key)
    shape = _shape("exponential", shape)
    u = _uniform(words, shape, _float_dtype("exponential", dtype), 0.0, 1.0)
    return -jnp.log1p(-u)


def laplace(key, shape=(), dtype=None):
    """Standard Laplace floats."""
    words, _ = _single_key("laplace", key)
    shape = _shape("laplace", shape)
    dt = _float_dtype("laplace", dtype)
    u = _uniform(words, shape, dt, -1.0 + np.finfo(dt).epsneg, 1.0)
    return jnp.sign(u) * jnp.log1p(-jnp.abs(u))


def logistic(key, shape=(), dtype=None):
    """Standard logistic floats."""
    words, _ = _single_key("logistic", key)
    shape = _shape("logistic", shape)
    dt = _float_dtype("logistic", dtype)
    x = _uniform(words, shape, dt, np.finfo(dt).tiny, 1.0)
    return jnp.log(x) - jnp.log1p(-x)


def categorical(key, logits, axis=-1, shape=None, replace=True, mode=None):
    """Indices drawn with probabilities softmax(logits) along `axis` (Gumbel-max)."""
    words, _ = _single_key("categorical", key)
    mode = _check_mode(mode)
    logits = jnp.asarray(logits)
    axis = operator.index(axis)
    if not -logits.ndim <= axis < logits.ndim:
        raise ValueError(f"categorical: axis {axis} is out of bounds for logits of dimension "
                         f"{logits.ndim}.")
    axis = axis % logits.ndim
    batch_shape = logits.shape[:axis] + logits.shape[axis + 1:]
    if shape is None:
        shape = batch_shape
    else:
        shape = _shape("categorical", shape)
        _check_shape("categorical", shape, batch_shape)
    n_prefix = len(shape) - len(batch_shape)
    if not replace:
        return _categorical_without_replacement(words, logits, axis, shape, n_prefix, mode)
    sample_shape = shape[:n_prefix] + batch_shape[:axis] + logits.shape[axis:axis + 1] + \
        batch_shape[axis:]
    noise = _gumbel(words, sample_shape, logits.dtype, mode)
    return jnp.argmax(noise + lax.expand_dims(logits, tuple(range(n_prefix))),
                      axis=n_prefix + axis)


def _sort_op(name: str):
    op = getattr(lax, name, None)
    if op is None:
        raise NotImplementedError(f"This sampler needs lax.{name}, which corejax does not "
                                  "implement yet.")
    return op


def _categorical_without_replacement(words, logits, axis, shape, n_prefix, mode):
    draws = math.prod(shape[:n_prefix])
    if draws > logits.shape[axis]:
        raise ValueError(f"Number of samples without replacement ({draws}) cannot exceed the "
                         f"number of categories ({logits.shape[axis]}).")
    perturbed = logits + _gumbel(words, logits.shape, logits.dtype, mode)
    _, indices = _sort_op("top_k")(jnp.moveaxis(perturbed, axis, -1), draws)
    return jnp.reshape(jnp.moveaxis(indices, -1, 0), shape)


def _shuffle(words, x, axis):
    # Sorting by random 32-bit keys; enough rounds that ties (which keep their order) are
    # unlikely even for large arrays.
    rounds = math.ceil(3 * math.log(max(1, x.size)) / math.log(_MAX_COUNTERS))
    sort_key_val = _sort_op("sort_key_val") if rounds else None
    for _ in range(rounds):
        keys = _split(words, (2,))
        words, sub = (lax.index_in_dim(keys, i, keepdims=False) for i in (0, 1))
        _, x = sort_key_val(_random_bits(sub, 32, x.shape), x, axis)
    return x


def _population(name: str, x):
    """(`x` as an array, or None for an int, and whether it was an int)."""
    try:
        return None, operator.index(x)
    except TypeError:
        arr = jnp.asarray(x)
        if arr.ndim == 0:
            raise TypeError(f"{name}: x must be an integer or at least 1-dimensional, got a "
                            "0-d array.") from None
        return arr, None


def permutation(key, x, axis=0, independent=False):
    """A random permutation of range(x), or of `x` along `axis` (each slice on its own when
    `independent`)."""
    words, _ = _single_key("permutation", key)
    arr, n = _population("permutation", x)
    if arr is None:
        return _shuffle(words, jnp.arange(n), 0)
    axis = operator.index(axis) % arr.ndim
    if independent or arr.ndim == 1:
        return _shuffle(words, arr, axis)
    order = _shuffle(words, jnp.arange(arr.shape[axis]), 0)
    return jnp.take(arr, order, axis=axis)


def shuffle(key, x, axis=0):
    """Deprecated in JAX: use `permutation(key, x, axis, independent=True)`."""
    warnings.warn("random.shuffle is deprecated; use random.permutation with "
                  "independent=True.", DeprecationWarning, stacklevel=2)
    words, _ = _single_key("shuffle", key)
    arr = jnp.asarray(x)
    return _shuffle(words, arr, operator.index(axis) % max(arr.ndim, 1))


def choice(key, a, shape=(), replace=True, p=None, axis=0, mode=None):
    """Samples from range(a), or from `a` along `axis`, optionally with probabilities `p`."""
    words, _ = _single_key("choice", key)
    shape = _shape("choice", shape)
    mode = _check_mode(mode)
    arr, n_inputs = _population("choice", a)
    if arr is not None:
        axis = operator.index(axis) % arr.ndim
        n_inputs = arr.shape[axis]
    n_draws = math.prod(shape)
    out_shape = shape if arr is None else arr.shape[:axis] + shape + arr.shape[axis + 1:]
    if n_draws == 0:
        return jnp.zeros(out_shape, dtypes.default_int_dtype() if arr is None else arr.dtype)
    if n_inputs <= 0:
        raise ValueError("a must be greater than 0 unless no samples are taken")
    if not replace and n_draws > n_inputs:
        raise ValueError(f"Cannot take a larger sample (size {n_draws}) than population (size "
                         f"{n_inputs}) when 'replace=False'")
    if p is None:
        if not replace:
            perm = permutation(words, n_inputs if arr is None else arr, axis)
            return jnp.reshape(lax.slice_in_dim(perm, 0, n_draws, axis=axis), out_shape)
        index = randint(words, shape, 0, n_inputs)
    else:
        p = jnp.asarray(p)
        if p.shape != (n_inputs,):
            raise ValueError("p must be None or a 1D vector with the same size as a.shape[axis]."
                             f" p has shape {p.shape} and a.shape[axis] is {n_inputs}.")
        if replace:
            cdf = jnp.cumsum(p)
            total = lax.index_in_dim(cdf, n_inputs - 1, keepdims=False)
            r = total * (1 - _uniform(words, shape, cdf.dtype, 0.0, 1.0))
            # The first index whose cumulative probability reaches r (searchsorted, left).
            index = jnp.sum(cdf < jnp.expand_dims(r, -1), axis=-1, dtype=dtypes.default_int_dtype())
        else:
            # Gumbel top-k: the k largest perturbed log-probabilities.
            perturbed = _gumbel(words, (n_inputs,), p.dtype, mode) + jnp.log(p)
            index = _sort_op("top_k")(perturbed, n_draws)[1]
    return jnp.reshape(index if arr is None else jnp.take(arr, index, axis=axis), out_shape)
