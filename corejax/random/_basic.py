"""The basic samplers (bits, uniform, normal, integers, choices, permutations and the
one-uniform transforms) and the argument checks every sampler shares.

The samplers' cores are jitted, as JAX's are: an eager call runs one compiled program (the
hash and the transform of its bits fused into one loop), under jit they inline into the caller.
Everything is composed of lax/jnp operations on top of the `threefry2x32` primitive, so samplers
work unchanged under jit, vmap and grad (gradients flow through `minval`/`maxval`,
`lower`/`upper`, `logits`...).
"""
from __future__ import annotations

import math
import operator
import warnings
from collections.abc import Sequence

import numpy as np

from corejax import core, dtypes, lax
from corejax import numpy as jnp
from corejax.api import jit
from corejax.core import get_aval
from corejax.lax.elementwise import _fma
from corejax.numpy._core import canonicalize_axis, check_arraylike, promote_dtypes_inexact
from corejax.random._keys import (_MAX_COUNTERS, _UINT, _random_bits, _random_bits_jit, _shape,
                                  _single_key, _split_n)


# --- argument checking -----------------------------------------------------------------------

def _check_shape(name: str, shape, *param_shapes) -> None:
    result = jnp.broadcast_shapes(shape, *param_shapes)
    if tuple(result) != tuple(shape):
        raise ValueError(f"{name} parameter shapes must be broadcast-compatible with shape "
                         "argument, and the result of broadcasting the shapes must equal the "
                         f"shape argument. Got result shape {tuple(result)} for shape argument "
                         f"{tuple(shape)}.")


def _check_broadcast_shapes(name: str, shape, *args) -> tuple:
    """`shape` checked against the parameters' shapes, or their broadcast shape if None."""
    arg_shapes = [np.shape(a) if not hasattr(a, "shape") else tuple(a.shape) for a in args]
    if shape is None:
        return tuple(jnp.broadcast_shapes(*arg_shapes)) if arg_shapes else ()
    shape = _shape(name, shape)
    _check_shape(name, shape, *arg_shapes)
    return shape


def _check_all_safe_to_cast(name: str, dt, *args) -> None:
    for arg in args:
        src = dtypes.dtype(arg)
        if src != dt and dtypes.result_type(arg, dt) != dt:
            raise dtypes.TypePromotionError(
                f"In arguments to {name}, cannot safely cast argument of type "
                f"{jnp.asarray(arg).dtype} to {dt}. Pass parameters of a dtype no wider than "
                "`dtype`, or a wider `dtype`.")


def _sample_float(name: str, sampler, key, params: tuple, shape, dtype):
    """A float sampler's public half: one key, a float `dtype`, `shape` checked against (or
    broadcast from) the parameters' shapes, the parameters safe to cast to `dtype`, then the
    jitted `sampler(words, *params, shape, dtype)`."""
    words, _ = _single_key(name, key)
    dt = _float_dtype(name, dtype)
    shape = _check_broadcast_shapes(name, shape, *params)
    _check_all_safe_to_cast(name, dt, *params)
    return sampler(words, *params, shape, dt)


def _dtype(name: str, dtype, default, kinds: str, what: str) -> np.dtype:
    dt = dtypes.canonicalize_dtype(default() if dtype is None else dtype)
    if dt.kind not in kinds:
        raise ValueError(f"dtype argument to `{name}` must be {what} dtype, got {dt}")
    return dt


def _float_dtype(name: str, dtype) -> np.dtype:
    return _dtype(name, dtype, dtypes.default_float_dtype, "f", "a float")


def _int_dtype(name: str, dtype) -> np.dtype:
    return _dtype(name, dtype, dtypes.default_int_dtype, "iu", "an int")


def _check_mode(mode, default="low"):
    mode = default if mode is None else mode
    if mode not in ("high", "low"):
        raise ValueError(f"got mode={mode!r}, expected 'high' or 'low'")
    return mode


def _gumbel_mode(mode):
    mode = "low" if mode is None else mode
    if mode not in ("highest", "high", "low"):
        raise ValueError(f"Must provide valid mode for gumbel got: {mode}. Use 'low' (the "
                         "default), 'high' or 'highest'.")
    return mode


def _param(value, dt):
    return lax.convert_element_type(jnp.asarray(value), dt)


def _rows(x, n: int):
    """The `n` slices of `x` along its first axis (JAX's `a, b = x` unpacking)."""
    return [lax.index_in_dim(x, i, keepdims=False) for i in range(n)]


# --- bits, uniform, normal ---------------------------------------------------------------------

def bits(key, shape=(), dtype=None):
    """Uniform random unsigned integers (uint32 by default, uint64 with x64)."""
    words, _ = _single_key("bits", key)
    dt = dtypes.canonicalize_dtype(np.uint64 if dtype is None else dtype)
    if dt.kind != "u":
        raise ValueError(f"dtype argument to `bits` must be an unsigned int dtype, got {dt}")
    return _random_bits_jit(words, dt.itemsize * 8, _shape("bits", shape))


def _uniform(words, shape, dt, minval, maxval):
    shape = tuple(shape)
    minval, maxval = _param(minval, dt), _param(maxval, dt)
    _check_shape("uniform", shape, minval.shape, maxval.shape)
    info = np.finfo(dt)
    width = info.bits
    # Random mantissa bits under the exponent of 1.0 give a float in [1, 2); minus 1 is [0, 1).
    mantissa = lax.shift_right_logical(_random_bits(words, width, shape), width - info.nmant)
    one_bits = int(np.array(1.0, dt).view(_UINT[width]))
    floats = lax.bitcast_convert_type(lax.bitwise_or(mantissa, one_bits), dt) - 1
    # XLA's CPU backend fuses this multiply-add (one rounding) for float32/64; the narrow floats
    # are computed op by op in a wider type and round twice.
    span = maxval - minval
    if dt.itemsize >= 4:
        scaled = _fma(floats, jnp.broadcast_to(span, shape), jnp.broadcast_to(minval, shape))
    else:
        scaled = floats * span + minval
    return jnp.maximum(minval, scaled)


_uniform_jit = jit(_uniform, static_argnums=(1, 2))


def _unit(words, shape, dt):
    """Uniform floats in [0, 1)."""
    return _uniform(words, shape, dt, 0.0, 1.0)


def uniform(key, shape=(), dtype=None, minval=0.0, maxval=1.0):
    """Floats uniform in [minval, maxval)."""
    words, _ = _single_key("uniform", key)
    shape = _shape("uniform", shape)
    return _uniform_jit(words, shape, _float_dtype("uniform", dtype), minval, maxval)


def _normal_real(words, shape, dt):
    # Uniform on the open interval (-1, 1), through the inverse error function.
    low = np.nextafter(np.array(-1.0, dt), np.array(0.0, dt))
    u = _uniform(words, shape, dt, low, 1.0)
    return lax.erf_inv(u) * np.array(np.sqrt(2), dt)


def _normal(words, shape, dt):
    if not dtypes.is_complex(dt):
        return _normal_real(words, shape, dt)
    # Real and imaginary parts from two keys, each of variance 1/2.
    real_dt = np.finfo(dt).dtype
    parts = [lax.convert_element_type(_normal_real(k, shape, real_dt), dt)
             for k in _split_n(words, 2)]
    return (parts[0] + 1j * parts[1]) / np.array(np.sqrt(2), dt)


_normal_jit = jit(_normal, static_argnums=(1, 2))


def normal(key, shape=(), dtype=None):
    """Standard normal floats (complex dtypes: independent real and imaginary parts, each of
    variance 1/2)."""
    words, _ = _single_key("normal", key)
    shape = _shape("normal", shape)
    dt = _dtype("normal", dtype, dtypes.default_float_dtype, "fc", "a float or complex")
    return _normal_jit(words, shape, dt)


def _truncated_normal(words, lower, upper, shape, dt):
    lower, upper = _param(lower, dt), _param(upper, dt)
    if shape is None:
        shape = tuple(jnp.broadcast_shapes(lower.shape, upper.shape))
    else:
        _check_shape("truncated_normal", shape, lower.shape, upper.shape)
    sqrt2 = np.array(np.sqrt(2), dt)
    u = _uniform(words, shape, dt, lax.erf(lower / sqrt2), lax.erf(upper / sqrt2))
    out = lax.erf_inv(u) * sqrt2
    # Rounding can land on a bound; keep samples strictly inside.
    return jnp.clip(out, lax.nextafter(lax.stop_gradient(lower), np.inf),
                    lax.nextafter(lax.stop_gradient(upper), -np.inf))


_truncated_normal_jit = jit(_truncated_normal, static_argnums=(3, 4))


def truncated_normal(key, lower, upper, shape=None, dtype=None):
    """Standard normal floats conditioned on lower < x < upper."""
    if shape is not None:
        shape = _shape("truncated_normal", shape)
    words, _ = _single_key("truncated_normal", key)
    dt = _float_dtype("truncated_normal", dtype)
    return _truncated_normal_jit(words, lower, upper, shape, dt)


def _bernoulli(words, p, shape, mode):
    if shape is None:
        shape = p.shape
    else:
        _check_shape("bernoulli", shape, p.shape)
    if mode == "high":
        # A second draw refines the first below its resolution, for tiny p.
        coarse, fine = _rows(_unit(words, (2,) + tuple(shape), p.dtype), 2)
        return fine * 2.0 ** -np.finfo(p.dtype).nmant < p - coarse
    return _unit(words, shape, p.dtype) < p


_bernoulli_jit = jit(_bernoulli, static_argnums=(2, 3))


def _bernoulli_p(p):
    p = jnp.asarray(p)
    if not dtypes.is_float(p.dtype):
        raise TypeError(f"bernoulli probability `p` must have a floating dtype, got {p.dtype}.")
    return lax.convert_element_type(p, p.dtype)


def bernoulli(key, p=0.5, shape=None, mode="low"):
    """Booleans that are True with probability `p`."""
    if shape is not None:
        shape = _shape("bernoulli", shape)
    mode = _check_mode(mode)
    words, _ = _single_key("bernoulli", key)
    return _bernoulli_jit(words, _bernoulli_p(p), shape, mode)


def _rademacher(words, shape, dt):
    signs = lax.convert_element_type(_bernoulli(words, _bernoulli_p(0.5), shape, "low"), dt)
    return lax.convert_element_type(2 * signs - 1, dt)


_rademacher_jit = jit(_rademacher, static_argnums=(1, 2))


def rademacher(key, shape=(), dtype=None):
    """-1 or 1 with equal probability (integers by default)."""
    words, _ = _single_key("rademacher", key)
    dt = dtypes.canonicalize_dtype(dtypes.default_int_dtype() if dtype is None else dtype)
    return _rademacher_jit(words, _shape("rademacher", shape), dt)


# --- integers ----------------------------------------------------------------------------------

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
    minval, maxval = _as_int(jnp.asarray(minval)), _as_int(jnp.asarray(maxval))
    maxval_beyond_dtype = maxval > _convert_and_clip_integer(
        jnp.asarray(np.iinfo(dt).max, dt), maxval.dtype)
    minval = jnp.broadcast_to(_convert_and_clip_integer(minval, dt), shape)
    maxval = jnp.broadcast_to(_convert_and_clip_integer(maxval, dt), shape)
    width = dt.itemsize * 8
    udt = _UINT[width]
    high, low = (_random_bits(k, width, shape) for k in _split_n(words, 2))
    # 2 * width random bits reduced modulo the span: biased only when the span is not a power
    # of two, negligibly for small spans. 2**width % span is computed as (2**(width/2))^2 % span.
    span = lax.convert_element_type(maxval - minval, udt)
    span = jnp.where(maxval <= minval, 1, span)
    span = jnp.where(maxval_beyond_dtype & (maxval > minval), span + 1, span)
    multiplier = lax.rem(lax.full(shape, 2 ** (width // 2), udt), span)
    multiplier = lax.rem(multiplier * multiplier, span)
    offset = lax.rem(lax.rem(high, span) * multiplier + lax.rem(low, span), span)
    return minval + lax.convert_element_type(offset, dt)


_randint_jit = jit(_randint, static_argnums=(1, 4))


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
        return _randint_jit(words, shape, minval, maxval, dt)
    info = np.iinfo(dt)
    minval = jnp.clip(lax.convert_element_type(minval, np.int32), int(info.min), int(info.max))
    maxval = jnp.clip(lax.convert_element_type(maxval, np.int32), int(info.min),
                      int(info.max) + 1)
    return lax.convert_element_type(
        _randint_jit(words, shape, minval, maxval, np.dtype("int32")), dt)


# --- Gumbel and the one-uniform transforms --------------------------------------------------------

def _clz32(x):
    """Leading zero bits of uint32 values: smear the highest set bit down, count the ones."""
    for s in (1, 2, 4, 8, 16):
        x = lax.bitwise_or(x, lax.shift_right_logical(x, np.uint32(s)))
    return lax.sub(np.uint32(32), lax.convert_element_type(lax.population_count(x), np.uint32))


def _bits_to_open_unit_float32(pair):
    """uint32[2, ...] as 64-bit fixed-point fractions, rounded down to float32 in (0, 1) with
    full relative precision: the exponent comes from the leading zeros, the mantissa from the
    next 23 bits (JAX's construction, bit for bit)."""
    info = np.finfo(np.float32)
    hi, lo = _rows(pair, 2)
    hiclz, loclz = _clz32(hi), _clz32(lo)
    hi_empty = lax.eq(hiclz, np.uint32(32))
    mantissa = lax.bitwise_or(
        lax.shift_left(hi, hiclz),
        lax.select(hi_empty, lax.shift_left(lo, loclz),
                   lax.shift_right_logical(lo, lax.sub(np.uint32(32), hiclz))))
    mantissa = lax.shift_right_logical(mantissa, np.uint32(info.bits - info.nmant - 1))
    mantissa = lax.bitwise_and(mantissa, np.uint32((1 << info.nmant) - 1))
    zeros = lax.select(hi_empty, lax.add(loclz, np.uint32(32)), hiclz)
    exponent = lax.shift_left(lax.sub(np.uint32(-info.minexp), zeros), np.uint32(info.nmant))
    exponent = lax.bitwise_and(exponent,
                               np.uint32((1 << (info.bits - 2)) - (1 << (info.nmant - 1))))
    return lax.bitcast_convert_type(lax.bitwise_or(exponent, mantissa), np.float32)


def _gumbel(words, shape, dt, mode):
    shape = tuple(shape)
    info = np.finfo(dt)
    if mode == "highest" and dt == np.float32:
        raw = _random_bits(words, 32, (2,) + shape)
        neg_hi, neg_lo = _rows(lax.bitwise_not(raw), 2)
        # 2**64 - raw in 64-bit fixed point: add one to the low word, carrying into the high.
        carry = lax.convert_element_type(lax.eq(neg_lo, np.uint32(0xFFFFFFFF)), np.uint32)
        neg = jnp.stack([neg_hi + carry, neg_lo + np.uint32(1)])
        flip = lax.lt(_rows(raw, 1)[0], np.uint32(1 << 31))
        x = _bits_to_open_unit_float32(jnp.where(flip, raw, neg))
        # Below 1/2 the fraction is u itself (log1p(-u) is accurate), above it 1 - u.
        return jnp.where(flip, -jnp.log(-jnp.log1p(-x)), -jnp.log(-jnp.log(x)))
    if mode in ("high", "highest"):
        high, low = _rows(_unit(words, (2,) + shape, dt), 2)
        # Below 1/2 the second draw fills in the bits the first lacks.
        x = jnp.where(high >= 0.5, high, high + low * 2.0 ** -info.nmant + info.tiny)
        return -jnp.log(-jnp.log1p(-x))
    return -jnp.log(-jnp.log(_uniform(words, shape, dt, info.tiny, 1.0)))


_gumbel_jit = jit(_gumbel, static_argnums=(1, 2, 3))


def gumbel(key, shape=(), dtype=None, mode=None):
    """Standard Gumbel floats; mode='high' ('highest' for float32) spends more random bits on
    a longer tail."""
    words, _ = _single_key("gumbel", key)
    dt = _float_dtype("gumbel", dtype)
    shape = _shape("gumbel", shape)
    return _gumbel_jit(words, shape, dt, _gumbel_mode(mode))


def _exponential(words, shape, dt):
    return -jnp.log1p(-_unit(words, shape, dt))


_exponential_jit = jit(_exponential, static_argnums=(1, 2))


def exponential(key, shape=(), dtype=None):
    """Standard exponential floats."""
    words, _ = _single_key("exponential", key)
    dt = _float_dtype("exponential", dtype)
    return _exponential_jit(words, _shape("exponential", shape), dt)


def _laplace(words, shape, dt):
    u = _uniform(words, shape, dt, -1.0 + np.finfo(dt).epsneg, 1.0)
    return jnp.sign(u) * jnp.log1p(-jnp.abs(u))


_laplace_jit = jit(_laplace, static_argnums=(1, 2))


def laplace(key, shape=(), dtype=None):
    """Standard Laplace floats."""
    words, _ = _single_key("laplace", key)
    dt = _float_dtype("laplace", dtype)
    return _laplace_jit(words, _shape("laplace", shape), dt)


def _logistic(words, shape, dt):
    x = _uniform(words, shape, dt, np.finfo(dt).tiny, 1.0)
    return jnp.log(x) - jnp.log1p(-x)


_logistic_jit = jit(_logistic, static_argnums=(1, 2))


def logistic(key, shape=(), dtype=None):
    """Standard logistic floats."""
    words, _ = _single_key("logistic", key)
    dt = _float_dtype("logistic", dtype)
    return _logistic_jit(words, _shape("logistic", shape), dt)


# --- categorical, permutations, choice ------------------------------------------------------------

def categorical(key, logits, axis=-1, shape=None, replace=True, mode=None):
    """Indices drawn with probabilities softmax(logits) along `axis` (Gumbel-max)."""
    words, _ = _single_key("categorical", key)
    check_arraylike("categorical", logits)
    logits = jnp.asarray(logits)
    axis = canonicalize_axis(axis, logits.ndim)
    batch_shape = logits.shape[:axis] + logits.shape[axis + 1:]
    if shape is None:
        shape = batch_shape
    else:
        shape = _shape("categorical", shape)
        _check_shape("categorical", shape, batch_shape)
    mode = _gumbel_mode(mode)
    n_prefix = len(shape) - len(batch_shape)
    if not replace:
        return _categorical_without_replacement(words, logits, axis, shape, n_prefix, mode)
    sample_shape = shape[:n_prefix] + batch_shape[:axis] + logits.shape[axis:axis + 1] + \
        batch_shape[axis:]
    noise = _gumbel_jit(words, sample_shape, logits.dtype, mode)
    return jnp.argmax(noise + lax.expand_dims(logits, tuple(range(n_prefix))),
                      axis=n_prefix + axis)


def _categorical_without_replacement(words, logits, axis, shape, n_prefix, mode):
    perturbed = logits + _gumbel_jit(words, logits.shape, logits.dtype, mode)
    draws = math.prod(shape[:n_prefix])
    if draws > logits.shape[axis]:
        raise ValueError(f"Number of samples without replacement ({draws}) cannot exceed the "
                         f"number of categories ({logits.shape[axis]}).")
    _, indices = lax.top_k(jnp.moveaxis(perturbed, axis, -1), draws)
    return jnp.reshape(jnp.moveaxis(indices, -1, 0), shape)


def _shuffle(words, x, axis):
    # Sorting by random 32-bit keys; enough rounds that ties (which keep their order) are
    # unlikely even for large arrays.
    rounds = math.ceil(3 * math.log(max(1, x.size)) / math.log(_MAX_COUNTERS))
    for _ in range(rounds):
        words, sub = _split_n(words, 2)
        _, x = lax.sort_key_val(_random_bits(sub, 32, x.shape), x, axis)
    return x


_shuffle_jit = jit(_shuffle, static_argnums=2)


def permutation(key, x, axis=0, independent=False):
    """A random permutation of range(x), or of `x` along `axis` (each slice on its own when
    `independent`)."""
    words, _ = _single_key("permutation", key)
    check_arraylike("permutation", x)
    axis = canonicalize_axis(axis, np.ndim(x) or 1)
    if not np.ndim(x):
        if not dtypes.is_integer(dtypes.dtype(x)):
            raise TypeError("x must be an integer or at least 1-dimensional")
        n = core.concrete_or_error(int, x, "argument x of jax.random.permutation()")
        return _shuffle_jit(words, jnp.arange(n), axis)
    arr = jnp.asarray(x)
    if independent or arr.ndim == 1:
        return _shuffle_jit(words, arr, axis)
    order = _shuffle_jit(words, jnp.arange(arr.shape[axis]), 0)
    return jnp.take(arr, order, axis=axis)


def shuffle(key, x, axis=0):
    """Deprecated in JAX: use `permutation(key, x, axis, independent=True)`."""
    warnings.warn("random.shuffle is deprecated; use random.permutation with "
                  "independent=True.", DeprecationWarning, stacklevel=2)
    words, _ = _single_key("shuffle", key)
    arr = jnp.asarray(x)
    return _shuffle_jit(words, arr, canonicalize_axis(axis, max(arr.ndim, 1)))


def choice(key, a, shape=(), replace=True, p=None, axis=0, mode=None):
    """Samples from range(a), or from `a` along `axis`, optionally with probabilities `p`."""
    words, _ = _single_key("choice", key)
    if not isinstance(shape, Sequence):
        raise TypeError(f"shape argument of jax.random.choice must be a sequence, got {shape}")
    shape = _shape("choice", shape)
    check_arraylike("choice", a)
    arr = jnp.asarray(a)
    if arr.ndim == 0:
        n_inputs = core.concrete_or_error(int, a, "The error occurred in jax.random.choice()")
    else:
        axis = canonicalize_axis(axis, arr.ndim)
        n_inputs = arr.shape[axis]
    n_draws = math.prod(shape)
    if n_draws == 0:
        return jnp.zeros(shape, dtype=arr.dtype)
    if n_inputs <= 0:
        raise ValueError("a must be greater than 0 unless no samples are taken")
    if not replace and n_draws > n_inputs:
        raise ValueError(f"Cannot take a larger sample (size {n_draws}) than population (size "
                         f"{n_inputs}) when 'replace=False'")
    int_dt = dtypes.default_int_dtype()
    if p is None:
        if replace:
            index = randint(words, shape, 0, n_inputs)
            result = index if arr.ndim == 0 else jnp.take(arr, index, axis=axis)
        else:
            perm = permutation(words, n_inputs if arr.ndim == 0 else arr, axis)
            result = lax.slice_in_dim(perm, 0, n_draws, axis=axis)
    else:
        check_arraylike("choice", p)
        p, = promote_dtypes_inexact(p)
        if p.shape != (n_inputs,):
            raise ValueError("p must be None or a 1D vector with the same size as a.shape[axis]."
                             f" p has shape {p.shape} and a.shape[axis] is {n_inputs}.")
        if replace:
            cdf = jnp.cumsum(p)
            total = lax.index_in_dim(cdf, n_inputs - 1, keepdims=False)
            r = total * (1 - _uniform_jit(words, shape, cdf.dtype, 0.0, 1.0))
            # The first index whose cumulative probability reaches r (searchsorted, left).
            index = jnp.sum(cdf < jnp.expand_dims(r, -1), axis=-1, dtype=int_dt)
        else:
            # Gumbel top-k: the k largest perturbed log-probabilities.
            perturbed = _gumbel_jit(words, (n_inputs,), p.dtype, _gumbel_mode(mode)) + jnp.log(p)
            index = lax.convert_element_type(lax.top_k(perturbed, n_draws)[1], int_dt)
        result = index if arr.ndim == 0 else jnp.take(arr, index, axis=axis)
    out_shape = shape if arr.ndim == 0 else arr.shape[:axis] + shape + arr.shape[axis + 1:]
    return jnp.reshape(result, out_shape)
