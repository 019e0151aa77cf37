"""Activation functions and friends (jax.nn): relu, gelu, softmax, one_hot, ..."""
from __future__ import annotations

import math

from corejax import dtypes, lax
from corejax.core import get_aval
from corejax.custom_derivatives import custom_jvp
from corejax.numpy._core import asarray, canonicalize_axes, promote_dtypes_inexact
from corejax.scipy.special import logsumexp
import corejax.numpy as jnp

__all__ = ["relu", "relu6", "sigmoid", "log_sigmoid", "softplus", "soft_sign", "silu", "swish",
           "gelu", "elu", "selu", "celu", "leaky_relu", "hard_tanh", "hard_sigmoid",
           "hard_silu", "hard_swish", "glu", "tanh", "softmax", "log_softmax", "logsumexp",
           "one_hot", "standardize", "sparse_plus", "squareplus", "mish"]


@custom_jvp
def relu(x):
    """max(x, 0); its derivative at 0 is taken to be 0, as in JAX."""
    x = asarray(x)
    return jnp.maximum(x, jnp.zeros_like(x))


# the zero tangent keeps g's weak type (grad of relu at a Python float is weak, as in JAX)
relu.defjvps(lambda g, ans, x: lax.select(x > 0, g, lax.full_like(g, 0)))


def relu6(x):
    x = asarray(x)
    return jnp.minimum(jnp.maximum(x, 0), 6.0)


def sigmoid(x):
    """1 / (1 + exp(-x)); like JAX, integer inputs are a TypeError (convert them first)."""
    return lax.logistic(asarray(x))


def log_sigmoid(x):
    return -softplus(-asarray(x))


def softplus(x):
    """log(1 + exp(x)), computed without overflow."""
    (x,) = promote_dtypes_inexact(x)
    return jnp.logaddexp(x, 0)


def soft_sign(x):
    (x,) = promote_dtypes_inexact(x)
    return x / (jnp.abs(x) + 1)


def silu(x):
    """x * sigmoid(x); integer inputs are a TypeError, as in JAX."""
    x = asarray(x)
    return x * lax.logistic(x)


swish = silu


def gelu(x, approximate: bool = True):
    """Gaussian error linear unit; the tanh approximation by default, as in JAX."""
    (x,) = promote_dtypes_inexact(x)
    dt = get_aval(x).dtype
    if approximate:
        c = lax.full((), math.sqrt(2 / math.pi), dt)
        cdf = 0.5 * (1.0 + jnp.tanh(c * (x + 0.044715 * (x ** 3))))
        return x * cdf
    return x * (lax.erfc(-x * lax.full((), 1 / math.sqrt(2), dt)) / 2)


# elu, celu, leaky_relu, sparse_plus and hard_tanh promote an integer input only through their
# Python float constants, as JAX's do: elu(int32) is a weak float32, hard_tanh(int32) stays int32.

def elu(x, alpha=1.0):
    x = asarray(x)
    safe = jnp.where(x > 0, 0.0, x)
    return jnp.where(x > 0, x, alpha * jnp.expm1(safe))


def selu(x):
    alpha = 1.6732632423543772848170429916717
    scale = 1.0507009873554804934193349852946
    return scale * elu(x, alpha)


def celu(x, alpha=1.0):
    x = asarray(x)
    return jnp.maximum(x, 0.0) + alpha * jnp.expm1(jnp.minimum(x, 0.0) / alpha)


def leaky_relu(x, negative_slope=1e-2):
    x = asarray(x)
    return jnp.where(x >= 0, x, negative_slope * x)


def hard_tanh(x):
    x = asarray(x)
    return jnp.where(x > 1, 1, jnp.where(x < -1, -1, x))


def hard_sigmoid(x):
    return relu6(asarray(x) + 3.0) / 6.0


def hard_silu(x):
    x = asarray(x)
    return x * hard_sigmoid(x)


hard_swish = hard_silu


def mish(x):
    (x,) = promote_dtypes_inexact(x)
    return x * jnp.tanh(softplus(x))


def squareplus(x, b=4):
    (x,) = promote_dtypes_inexact(x)
    return (x + jnp.sqrt(x * x + b)) / 2


def sparse_plus(x):
    x = asarray(x)
    return jnp.where(x <= -1.0, 0.0, jnp.where(x >= 1.0, x, (x + 1.0) ** 2 / 4))


def glu(x, axis=-1):
    a, b = jnp.split(x, 2, axis)
    return a * sigmoid(b)


tanh = jnp.tanh


def softmax(x, axis=-1, where=None, initial=-jnp.inf):
    """exp(x) / sum(exp(x)) along `axis`, stable for large inputs; 0 where `where` is False."""
    (x,) = promote_dtypes_inexact(x)
    axes = canonicalize_axes(axis, get_aval(x).ndim)
    x_max = lax.stop_gradient(jnp.max(x, axes, keepdims=True, where=where, initial=initial))
    unnormalized = jnp.exp(x - x_max)
    if where is not None:
        unnormalized = jnp.where(where, unnormalized, 0.0)
    return unnormalized / jnp.sum(unnormalized, axes, keepdims=True)


def log_softmax(x, axis=-1, where=None, initial=-jnp.inf):
    """x - logsumexp(x) along `axis`, stable for large inputs; -inf where `where` is False."""
    (x,) = promote_dtypes_inexact(x)
    axes = canonicalize_axes(axis, get_aval(x).ndim)
    x_max = lax.stop_gradient(jnp.max(x, axes, keepdims=True, where=where, initial=initial))
    shifted = x - x_max
    exp_shifted = jnp.exp(shifted)
    if where is not None:
        exp_shifted = jnp.where(where, exp_shifted, 0.0)
    out = shifted - jnp.log(jnp.sum(exp_shifted, axes, keepdims=True))
    return out if where is None else jnp.where(where, out, -jnp.inf)


def one_hot(x, num_classes: int, *, dtype=None, axis=-1):
    """One-hot encodings of the labels `x`; out-of-range labels give all-zero rows."""
    from corejax.numpy._core import concrete_int
    num_classes = concrete_int(num_classes, "num_classes")
    x = asarray(x)
    dt = dtypes.canonicalize_dtype(dtype) if dtype is not None else dtypes.default_float_dtype()
    aval = get_aval(x)
    out_ndim = aval.ndim + 1
    axis = axis % out_ndim
    shape = list(aval.shape)
    shape.insert(axis, num_classes)
    # classes counted in x's own dtype: a float label matches only if it equals a class
    # exactly (0.7 matches none), as in JAX; boolean labels are a TypeError
    classes = lax.broadcasted_iota(aval.dtype, tuple(shape), axis)
    x_b = lax.broadcast_in_dim(x, tuple(shape),
                               tuple(i for i in range(out_ndim) if i != axis))
    return lax.convert_element_type(lax.eq(x_b, classes), dt)


def standardize(x, axis=-1, mean=None, variance=None, epsilon=1e-5, where=None):
    (x,) = promote_dtypes_inexact(x)
    if mean is None:
        mean = jnp.mean(x, axis, keepdims=True)
    if variance is None:
        variance = jnp.mean(jnp.square(x), axis, keepdims=True) - jnp.square(mean)
    return (x - mean) * lax.rsqrt(variance + epsilon)
