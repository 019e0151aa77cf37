"""Parameter initializers (jax.nn.initializers).

Every initializer is a function `init(key, shape, dtype=<default float>) -> Array`. The
variance-scaling family scales unit-variance samples so that `Var[w] = scale / fan`, where the
fans come from the weight's shape: by default the last axis holds the outputs, the one before it
the inputs, and all other axes form the receptive field (a conv kernel's spatial window).
"""
from __future__ import annotations

import math
import operator
from typing import Sequence

import numpy as np

from corejax import dtypes
import corejax.numpy as jnp

__all__ = ["zeros", "ones", "constant", "normal", "uniform", "truncated_normal",
           "variance_scaling", "lecun_normal", "lecun_uniform", "he_normal", "he_uniform",
           "kaiming_normal", "kaiming_uniform", "glorot_normal", "glorot_uniform",
           "xavier_normal", "xavier_uniform", "orthogonal", "delta_orthogonal"]

# The standard deviation of a unit normal truncated to (-2, 2): dividing by it gives the
# truncated samples unit variance.
_TRUNCATED_STDDEV = 0.87962566103423978


def _dtype(dtype):
    dt = dtypes.default_float_dtype() if dtype is None else dtypes.canonicalize_dtype(dtype)
    if not dtypes.is_inexact(dt):
        raise TypeError(f"initializers need a floating dtype, got {np.dtype(dt).name}.")
    return dt


def _shape(shape) -> tuple:
    if isinstance(shape, int):
        return (shape,)
    try:
        return tuple(operator.index(d) for d in shape)
    except TypeError:
        raise TypeError(f"initializer shape must be a sequence of integers, got {shape!r}.") \
            from None


def _random():
    from corejax import random
    return random


def zeros(key, shape, dtype=None):
    return jnp.zeros(_shape(shape), _dtype(dtype))


def ones(key, shape, dtype=None):
    return jnp.ones(_shape(shape), _dtype(dtype))


def constant(value, dtype=None):
    def init(key, shape, dtype=dtype):
        return jnp.full(_shape(shape), value, _dtype(dtype))
    return init


def normal(stddev=1e-2, dtype=None):
    def init(key, shape, dtype=dtype):
        dt = _dtype(dtype)
        return _random().normal(key, _shape(shape), dt) * jnp.asarray(stddev, dt)
    return init


def uniform(scale=1e-2, dtype=None):
    """Uniform on [0, scale)."""
    def init(key, shape, dtype=dtype):
        dt = _dtype(dtype)
        return _random().uniform(key, _shape(shape), dt) * jnp.asarray(scale, dt)
    return init


def truncated_normal(stddev=1e-2, dtype=None, lower=-2.0, upper=2.0):
    """Normal with standard deviation `stddev` before truncation to [lower, upper] stddevs."""
    def init(key, shape, dtype=dtype):
        dt = _dtype(dtype)
        sample = _random().truncated_normal(key, lower, upper, _shape(shape), dt)
        return sample * jnp.asarray(stddev, dt)
    return init


def _axes_size(shape, axes) -> int:
    if isinstance(axes, int):
        axes = (axes,)
    return math.prod(shape[a] for a in axes)


def compute_fans(shape: Sequence[int], in_axis=-2, out_axis=-1, batch_axis=()):
    """(fan_in, fan_out): input and output sizes times the receptive field size."""
    shape = _shape(shape)
    if len(shape) <= 1:
        raise ValueError(f"Can't compute input and output sizes of a {len(shape)}-dimensional "
                         f"weights tensor (shape {shape}): it must be at least 2-D. Use "
                         "another initializer (e.g. zeros or normal) for biases.")
    try:
        in_size = _axes_size(shape, in_axis)
        out_size = _axes_size(shape, out_axis)
        batch_size = _axes_size(shape, batch_axis)
    except IndexError:
        raise ValueError(f"initializer axes in_axis={in_axis}, out_axis={out_axis}, "
                         f"batch_axis={batch_axis} are out of range for shape {shape}.") from None
    receptive_field = math.prod(shape) / in_size / out_size / batch_size
    return in_size * receptive_field, out_size * receptive_field


_MODES = ("fan_in", "fan_out", "fan_avg", "fan_geo_avg")
_DISTRIBUTIONS = ("truncated_normal", "normal", "uniform")


def variance_scaling(scale, mode: str, distribution: str, in_axis=-2, out_axis=-1,
                     batch_axis=(), dtype=None):
    """Samples with variance `scale / n`, where n is the fan selected by `mode`."""
    if mode not in _MODES:
        raise ValueError(f"invalid mode for variance scaling initializer: {mode!r}; expected "
                         f"one of {_MODES}.")
    if distribution not in _DISTRIBUTIONS:
        raise ValueError(f"invalid distribution for variance scaling initializer: "
                         f"{distribution!r}; expected one of {_DISTRIBUTIONS}.")

    def init(key, shape, dtype=dtype):
        shape = _shape(shape)
        dt = _dtype(dtype)
        fan_in, fan_out = compute_fans(shape, in_axis, out_axis, batch_axis)
        denominator = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2,
                       "fan_geo_avg": math.sqrt(fan_in * fan_out)}[mode]
        # The factors are rounded to dt at each step, as JAX computes them (for the same bits).
        variance = jnp.asarray(scale / denominator, dt)
        random = _random()
        if distribution == "truncated_normal":
            stddev = jnp.sqrt(variance) / jnp.asarray(_TRUNCATED_STDDEV, dt)
            return random.truncated_normal(key, -2.0, 2.0, shape, dt) * stddev
        if distribution == "normal":
            return random.normal(key, shape, dt) * jnp.sqrt(variance)
        return random.uniform(key, shape, dt, -1.0, 1.0) * jnp.sqrt(3 * variance)

    return init


def glorot_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    return variance_scaling(1.0, "fan_avg", "uniform", in_axis, out_axis, batch_axis, dtype)


def glorot_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    return variance_scaling(1.0, "fan_avg", "truncated_normal", in_axis, out_axis, batch_axis,
                            dtype)


def lecun_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    return variance_scaling(1.0, "fan_in", "uniform", in_axis, out_axis, batch_axis, dtype)


def lecun_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    return variance_scaling(1.0, "fan_in", "truncated_normal", in_axis, out_axis, batch_axis,
                            dtype)


def he_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    return variance_scaling(2.0, "fan_in", "uniform", in_axis, out_axis, batch_axis, dtype)


def he_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    return variance_scaling(2.0, "fan_in", "truncated_normal", in_axis, out_axis, batch_axis,
                            dtype)


xavier_uniform, xavier_normal = glorot_uniform, glorot_normal
kaiming_uniform, kaiming_normal = he_uniform, he_normal


def _orthonormal_columns(a):
    """Q of the QR factorization of `a` (rows >= columns), with signs making R's diagonal
    positive (so Q is Haar-distributed when `a` is Gaussian): one qr primitive, as JAX's."""
    q, r = jnp.linalg.qr(a)
    return q * jnp.sign(jnp.diagonal(r))[None, :]


def orthogonal(scale=1.0, column_axis=-1, dtype=None):
    """A (semi-)orthogonal matrix: the shape is flattened to (rows, shape[column_axis])."""
    def init(key, shape, dtype=dtype):
        shape = _shape(shape)
        dt = _dtype(dtype)
        if len(shape) < 2:
            raise ValueError(f"orthogonal initializer requires at least a 2-D shape, got "
                             f"{shape}.")
        n_cols = shape[column_axis]
        n_rows = math.prod(shape) // n_cols
        tall = (max(n_rows, n_cols), min(n_rows, n_cols))
        q = _orthonormal_columns(_random().normal(key, tall, dt))
        if n_rows < n_cols:
            q = q.T
        rest = tuple(s for i, s in enumerate(shape) if i != column_axis % len(shape))
        q = jnp.moveaxis(jnp.reshape(q, rest + (n_cols,)), -1, column_axis)
        return q * jnp.asarray(scale, dt)
    return init


def delta_orthogonal(scale=1.0, column_axis=-1, dtype=None):
    """For conv kernels (*spatial, in, out): orthogonal at the window's center, zero elsewhere."""
    def init(key, shape, dtype=dtype):
        shape = _shape(shape)
        dt = _dtype(dtype)
        if len(shape) not in (3, 4, 5):
            raise ValueError(f"delta_orthogonal initializer requires a 3-D, 4-D or 5-D shape, "
                             f"got {shape}.")
        if shape[-2] > shape[-1]:
            raise ValueError(f"delta_orthogonal initializer requires in features <= out "
                             f"features, got shape {shape}.")
        center = orthogonal(scale, column_axis, dt)(key, shape[-2:], dt)
        middle = tuple(s // 2 for s in shape[:-2])
        mask = np.zeros(shape[:-2] + (1, 1), dt)
        mask[middle] = 1
        return jnp.asarray(mask) * center
    return init
