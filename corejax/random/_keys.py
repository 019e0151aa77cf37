"""PRNG keys and the Threefry-2x32 counter hash: seeding, typed key arrays, split, fold_in and
the raw random bits every sampler consumes.

Functions named `_xxx` are the traceable bodies, composed freely by the samplers; `_xxx_jit` is
the jitted entry point a public function calls (one compiled program per signature, inlined into
an enclosing jit). Bodies never call jitted entry points, so a sampler stages to one flat program.

A key is either a legacy uint32 array whose trailing axis holds the two Threefry words
(`PRNGKey`) or a typed key array (`key`, `wrap_key_data`), a pytree over those same words. Inside
the samplers a key is always its words: `_key_words` / `_single_key` unwrap and check it.

`config.threefry_partitionable` picks how counters are laid out, as JAX's flag of that name:
False hashes one flat run of counters split in halves; True hashes each element's own index, so
a sample does not depend on how the array is split up.
"""
from __future__ import annotations

import math
import operator
from functools import partial

import numpy as np

from corejax import dtypes, lax
from corejax import numpy as jnp
from corejax.api import jit
from corejax.config import config
from corejax._guards import check_legacy_key
from corejax.core import get_aval
from corejax.lax.prng import threefry2x32_p
from corejax._tree_traced import register_transparent_leaf
from corejax import _key_reuse
from corejax._key_reuse import config_values as _config_values
from corejax._key_reuse import open_scopes as _open_scopes

_UINT = {8: np.dtype("uint8"), 16: np.dtype("uint16"), 32: np.dtype("uint32"),
         64: np.dtype("uint64")}
_MAX_COUNTERS = 2 ** 32 - 1

# JAX's registered implementations; corejax reproduces threefry2x32, JAX's default.
_IMPLEMENTED = "threefry2x32"
_JAX_IMPLS = ("philox2x32", "philox4x32", "threefry2x32", "rbg", "unsafe_rbg", "threefry4x32")


# --- key dtypes and typed key arrays -----------------------------------------------------------

class PRNGKeyDType:
    """The element type of typed key arrays (JAX's `key<fry>` for threefry2x32)."""

    __slots__ = ()
    name = "key<fry>"
    impl = _IMPLEMENTED

    def __repr__(self):
        return self.name

    __str__ = __repr__

    def __eq__(self, other):
        return isinstance(other, PRNGKeyDType)

    def __hash__(self):
        return hash(self.name)


_KEY_DTYPE = PRNGKeyDType()


def _resolve_impl(spec):
    """The implementation name for an `impl=` / `dtype=` argument, with JAX's errors."""
    if spec is None or isinstance(spec, PRNGKeyDType):
        return _IMPLEMENTED
    if type(spec) is not str:
        raise TypeError(f"unrecognized type {type(spec)} for specifying PRNG implementation.")
    if spec not in _JAX_IMPLS:
        names = ", ".join(f'"{n}"' for n in _JAX_IMPLS)
        raise ValueError(f'unrecognized PRNG implementation "{spec}". Did you mean one of: '
                         f"{names}?")
    if spec != _IMPLEMENTED:
        raise ValueError(f"Unsupported PRNG implementation {spec!r}: corejax implements "
                         "'threefry2x32' only (JAX's default); create keys without `impl`.")
    return spec


def _impl_argument(ctor: str, impl, dtype):
    if dtype is not None:
        if impl is not None:
            raise ValueError(f"Cannot specify both `impl` and `dtype` arguments to {ctor}")
        impl = dtype
    return _resolve_impl(impl)


class PRNGKeyArray:
    """An array of typed keys (from `key`/`wrap_key_data`): `shape` keys whose Threefry words
    are the trailing axis of `key_data(keys)`. A pytree with that uint32 data as its one leaf, so
    transformations see a plain array. `_consumed`: the key-reuse checker's state (False, True
    or a mask over the keys; corejax/_key_reuse.py)."""

    __slots__ = ("_data", "_consumed", "__weakref__")
    __hash__ = None
    dtype = _KEY_DTYPE

    def __init__(self, data):
        self._data = data
        self._consumed = False
        if _open_scopes:   # the key-reuse checker is staging a control-flow body
            _open_scopes[-1].add_born(self)

    shape = property(lambda self: tuple(get_aval(self._data).shape[:-1]))
    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: math.prod(self.shape))
    T = property(lambda self: self.transpose())

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d key array")
        return (self[i] for i in range(len(self)))

    def __getitem__(self, index):
        # The trailing full slice keeps the key words whether or not `index` has an Ellipsis.
        index = index if isinstance(index, tuple) else (index,)
        if _config_values["debug_key_reuse"]:
            # JAX's checker: slicing sinks the keys it selects and returns fresh ones
            _key_reuse.consume(self, "slice", _key_reuse.index_mask(self.shape, index))
        return PRNGKeyArray(self._data[index + (slice(None),)])

    def _carrying(self, data, transform):
        """Keys over `data`, the consumed state carried over by `transform` (of a mask)."""
        out = PRNGKeyArray(data)
        if self._consumed is not False:
            out._consumed = _key_reuse.carried(self._consumed, transform)
        return out

    def reshape(self, *shape):
        shape = shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape
        return self._carrying(jnp.reshape(self._data, tuple(shape) + (2,)),
                              lambda m: np.reshape(m, shape))

    def ravel(self):
        return self.reshape(self.size)

    flatten = ravel

    def squeeze(self, axis=None):
        axes = _key_axes(tuple(i for i, d in enumerate(self.shape) if d == 1)
                         if axis is None else axis, self.ndim)
        return self._carrying(jnp.squeeze(self._data, axes), lambda m: np.squeeze(m, axes))

    def transpose(self, *axes):
        axes = axes[0] if len(axes) == 1 and not isinstance(axes[0], int) else axes
        perm = tuple(range(self.ndim))[::-1] if not axes else _key_axes(axes, self.ndim)
        return self._carrying(jnp.transpose(self._data, tuple(perm) + (self.ndim,)),
                              lambda m: np.transpose(m, perm))

    def swapaxes(self, axis1, axis2):
        axes = _key_axes((axis1, axis2), self.ndim)
        return self._carrying(jnp.swapaxes(self._data, *axes), lambda m: np.swapaxes(m, *axes))

    def copy(self):
        """The same keys, fresh to the key-reuse checker (as JAX's copy)."""
        return PRNGKeyArray(self._data)

    def __eq__(self, other):
        return jnp.all(self._data == _key_words("==", other)[0], axis=-1)

    def __ne__(self, other):
        return jnp.logical_not(self == other)

    def __repr__(self):
        return f"Array({self.shape}, dtype={self.dtype}) overlaying:\n{self._data}"


def _key_axes(axes, ndim):
    """Key-array axes as axes of the key data (negative ones counted from the key dims)."""
    axes = (axes,) if isinstance(axes, int) else tuple(axes)
    out = []
    for a in axes:
        a = operator.index(a)
        if not -ndim <= a < ndim:
            raise ValueError(f"axis {a} is out of bounds for a key array of dimension {ndim}")
        out.append(a % ndim)
    return tuple(out)


def _flatten_keys(keys):
    if _config_values["debug_key_reuse"]:
        _key_reuse.note_flattened(keys)
    return (keys._data,), None


# a leaf of the tree functions, as in JAX; the transformations trace its uint32 data
register_transparent_leaf(PRNGKeyArray, _flatten_keys,
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
    if name not in _RAW_DATA_TAKERS:
        check_legacy_key(name)     # config legacy_prng_key: 'allow', 'warn' or 'error'
    return keys, False


# functions whose argument is raw key data by design (legacy_prng_key does not apply)
_RAW_DATA_TAKERS = frozenset({"wrap_key_data", "clone", "=="})


def _single_key(name: str, keys):
    data, typed = _key_words(name, keys)
    shape = get_aval(data).shape
    if shape != (2,):
        raise ValueError(f"{name} accepts a single key, but was given a key array of shape "
                         f"{shape[:-1] if typed else shape} != (). Use jax.vmap for batching.")
    if typed and _config_values["debug_key_reuse"] and name not in _NOT_CONSUMING:
        _key_reuse.consume(keys, name)
    return data, typed


# single-key functions that leave their key usable (JAX's checker lets a key be folded in again)
_NOT_CONSUMING = frozenset({"fold_in"})


def _like(typed: bool, data):
    """Keys of the kind given: typed ones, or legacy uint32 data (typed under the option
    enable_custom_prng, as JAX)."""
    return PRNGKeyArray(data) if typed or _config_values["enable_custom_prng"] else data


# --- seeding and the key API --------------------------------------------------------------------

def _seed_words(ctor: str, seed):
    if isinstance(seed, PRNGKeyArray):
        raise TypeError(f"PRNG key seed must be an integer; got a PRNG key. {ctor} accepts a "
                        "scalar seed: use split or fold_in to derive keys from a key.")
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
        raise TypeError(f"{ctor} accepts a scalar seed, but was given an array of shape "
                        f"{seed.shape} != (). Use jax.vmap for batching.")
    if not (dtypes.is_integer(seed.dtype) or seed.dtype == np.bool_):
        raise TypeError(f"PRNG key seed must be an integer; got a {seed.dtype.name} array.")
    low = lax.convert_element_type(seed, np.uint32)
    if seed.dtype.itemsize == 8:
        high = lax.convert_element_type(lax.shift_right_logical(seed, 32), np.uint32)
    else:
        high = lax.full((), 0, np.uint32)
    return jnp.stack([high, low])


def PRNGKey(seed, *, impl=None):
    """A legacy key: uint32[2] holding the 64-bit `seed` (high word first; only the low 32
    bits of a Python int while x64 is off, as in JAX). Under the option enable_custom_prng, a
    typed key holding the same words, as JAX 0.10.2 returns then."""
    _resolve_impl(impl)
    return _like(False, _seed_words("PRNGKey", seed))


def key(seed, *, impl=None, dtype=None):
    """A typed key (shape ()), the same Threefry state as `PRNGKey(seed)`."""
    _impl_argument("jax.random.key", impl, dtype)
    return PRNGKeyArray(_seed_words("key", seed))


def key_data(keys):
    """The uint32 words of `keys` (trailing axis of size 2)."""
    return _key_words("key_data", keys)[0]


def wrap_key_data(key_bits_array, *, impl=None, dtype=None):
    """Typed keys from uint32 words whose trailing axis has size 2."""
    _impl_argument("jax.random.wrap_key_data", impl, dtype)
    return PRNGKeyArray(_key_words("wrap_key_data", key_bits_array)[0])


def key_impl(keys):
    """The name of the implementation behind `keys` (legacy uint32 keys: the default one)."""
    _key_words("key_impl", keys)
    return _IMPLEMENTED


def key_dtype(impl_spec=None):
    """The dtype of typed keys of an implementation (`key<fry>` for threefry2x32)."""
    _resolve_impl(impl_spec)
    return _KEY_DTYPE


def clone(key):
    """The same key, fresh to the key-reuse checker (debug_key_reuse): the way to use one key
    twice on purpose. Legacy uint32 keys, which the checker does not track, come back as is."""
    _, typed = _key_words("clone", key)
    return PRNGKeyArray(key._data) if typed else key


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


def _split(words, shape):
    if config.threefry_partitionable:
        y0, y1 = _threefry(words, *_element_counters(shape))
        return jnp.stack([y0, y1], axis=-1)
    return lax.reshape(_hash_iota(words, 2 * math.prod(shape)), shape + (2,))


_split_jit = jit(_split, static_argnums=1)


def _split_n(words, n: int):
    """`n` keys from `words`, as a list (JAX's `k1, k2, ... = split(key, n)`)."""
    keys = _split(words, (n,))
    return [lax.index_in_dim(keys, i, keepdims=False) for i in range(n)]


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


_random_bits_jit = jit(_random_bits, static_argnums=(1, 2))


# --- split and fold_in ---------------------------------------------------------------------------

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


def split(key, num=2):
    """`num` new keys (a shape tuple is allowed) derived from `key`."""
    words, typed = _single_key("split", key)
    return _like(typed, _split_jit(words, _shape("split", num)))


def fold_in(key, data):
    """A new key from `key` and a 32-bit integer `data`."""
    words, typed = _single_key("fold_in", key)
    if isinstance(data, int):
        if not 0 <= data < 2 ** 32:
            raise OverflowError(f"Python integer {data} out of bounds for uint32")
        data = np.uint32(data)
    data = jnp.asarray(data)
    if data.shape != ():
        raise TypeError(f"fold_in accepts a scalar, but was given an array of shape "
                        f"{data.shape} != (). Use jax.vmap for batching.")
    return _like(typed, _fold_in(words, data))


@jit
def _fold_in(words, data):
    counts = lax.concatenate([lax.full((1,), 0, np.uint32),
                              lax.reshape(lax.convert_element_type(data, np.uint32), (1,))], 0)
    return _hash_counts(words, counts)
