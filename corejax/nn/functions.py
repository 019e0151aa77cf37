"""Activation functions and friends (jax.nn): relu, gelu, softmax, one_hot, ..."""
from __future__ import annotations

import functools
import math

from corejax import dtypes, lax
from corejax.api import jit
from corejax.config import config
from corejax.core import get_aval
from corejax.custom_derivatives import custom_jvp
from corejax.numpy._core import asarray, canonicalize_axes, promote_dtypes_inexact
from corejax.numpy._eager_fusion import fuse_eagerly
from corejax.scipy.special import logsumexp
import corejax.numpy as jnp

__all__ = ["relu", "relu6", "sigmoid", "log_sigmoid", "softplus", "soft_sign", "silu", "swish",
           "gelu", "elu", "selu", "celu", "leaky_relu", "hard_tanh", "hard_sigmoid",
           "hard_silu", "hard_swish", "glu", "tanh", "softmax", "log_softmax", "logsumexp",
           "one_hot", "standardize", "sparse_plus", "squareplus", "mish", "identity",
           "log1mexp", "logmeanexp", "sparse_sigmoid", "dot_product_attention"]


@custom_jvp
def relu(x):
    """max(x, 0); its derivative at 0 is taken to be 0, as in JAX."""
    x = asarray(x)
    return jnp.maximum(x, jnp.zeros_like(x))


# the zero tangent keeps g's weak type (grad of relu at a Python float is weak, as in JAX)
relu.defjvps(lambda g, ans, x: lax.select(x > 0, g, lax.full_like(g, 0)))


@fuse_eagerly(1)
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


@fuse_eagerly(1)
def soft_sign(x):
    (x,) = promote_dtypes_inexact(x)
    return x / (jnp.abs(x) + 1)


@fuse_eagerly(1)
def silu(x):
    """x * sigmoid(x); integer inputs are a TypeError, as in JAX."""
    x = asarray(x)
    return x * lax.logistic(x)


swish = silu


@fuse_eagerly(1)
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

@fuse_eagerly(1)
def elu(x, alpha=1.0):
    x = asarray(x)
    # (NaN takes the x branch: returned as given, not through expm1 and the product, which
    # may quiet a signaling NaN one way op by op and another in a fused loop)
    negative = x <= 0
    return jnp.where(negative, alpha * jnp.expm1(jnp.where(negative, x, 0.0)), x)


@fuse_eagerly(1)
def selu(x):
    alpha = 1.6732632423543772848170429916717
    scale = 1.0507009873554804934193349852946
    return scale * elu(x, alpha)


@fuse_eagerly(1)
def celu(x, alpha=1.0):
    x = asarray(x)
    return jnp.maximum(x, 0.0) + alpha * jnp.expm1(jnp.minimum(x, 0.0) / alpha)


@fuse_eagerly(1)
def leaky_relu(x, negative_slope=1e-2):
    x = asarray(x)
    return jnp.where(x >= 0, x, negative_slope * x)


@fuse_eagerly(1)
def hard_tanh(x):
    x = asarray(x)
    return jnp.where(x > 1, 1, jnp.where(x < -1, -1, x))


@fuse_eagerly(1)
def hard_sigmoid(x):
    return relu6(asarray(x) + 3.0) / 6.0


@fuse_eagerly(1)
def hard_silu(x):
    x = asarray(x)
    return x * hard_sigmoid(x)


hard_swish = hard_silu


@fuse_eagerly(1)
def mish(x):
    (x,) = promote_dtypes_inexact(x)
    return x * jnp.tanh(softplus(x))


@fuse_eagerly(1)
def squareplus(x, b=4):
    (x,) = promote_dtypes_inexact(x)
    return (x + jnp.sqrt(x * x + b)) / 2


@fuse_eagerly(1)
def sparse_plus(x):
    x = asarray(x)
    return jnp.where(x <= -1.0, 0.0, jnp.where(x >= 1.0, x, (x + 1.0) ** 2 / 4))


def glu(x, axis=-1):
    a, b = jnp.split(x, 2, axis)
    return a * sigmoid(b)


tanh = jnp.tanh


def softmax(x, axis=-1, where=None, initial=-jnp.inf):
    """exp(x) / sum(exp(x)) along `axis`, stable for large inputs; 0 where `where` is False.

    Its derivative is that of this computation (the max taken as a constant), or, with the
    `softmax_custom_jvp` option set, the custom rule y * (dx - sum(y * dx)), as JAX's.
    Compiled, as JAX's is: an eager call is one program, not five operations (16 floats:
    16 us against 48 op by op)."""
    return _softmax(x, _static_axis(axis), where, initial, bool(config.softmax_custom_jvp))


def _static_axis(axis):
    """`axis` as a hashable static argument (a list of axes as a tuple)."""
    return tuple(axis) if isinstance(axis, list) else axis


@functools.partial(jit, static_argnums=(1, 4))
def _softmax(x, axis, where, initial, custom_rule):
    (x,) = promote_dtypes_inexact(x)
    axes = canonicalize_axes(axis, get_aval(x).ndim)
    if custom_rule:
        return _softmax_with_rule(x, axes, where, initial)
    x_max = lax.stop_gradient(jnp.max(x, axes, keepdims=True, where=where, initial=initial))
    unnormalized = jnp.exp(x - x_max)
    if where is not None:
        unnormalized = jnp.where(where, unnormalized, 0.0)
    return unnormalized / jnp.sum(unnormalized, axes, keepdims=True)


@functools.partial(custom_jvp, nondiff_argnums=(1,))
def _softmax_with_rule(x, axes, where, initial):
    x_max = jnp.max(x, axes, where=where, initial=initial, keepdims=True)
    shifted = x if where is None else jnp.where(where, x, initial)
    unnormalized = jnp.exp(shifted - x_max)
    out = unnormalized / jnp.sum(unnormalized, axes, where=where, keepdims=True)
    return out if where is None else jnp.where(where, out, 0)


@_softmax_with_rule.defjvp
def _softmax_with_rule_jvp(axes, primals, tangents):
    (x, where, initial), (x_dot, _, _) = primals, tangents
    y = _softmax_with_rule(x, axes, where, initial)
    return y, y * (x_dot - jnp.sum(y * x_dot, axes, where=where, keepdims=True))


def log_softmax(x, axis=-1, where=None, initial=-jnp.inf):
    """x - logsumexp(x) along `axis`, stable for large inputs; -inf where `where` is False.
    Compiled, as JAX's is (see softmax)."""
    return _log_softmax(x, _static_axis(axis), where, initial)


@functools.partial(jit, static_argnums=(1,))
def _log_softmax(x, axis, where, initial):
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


def identity(x):
    """x itself, as an array (Python scalars become weakly typed arrays)."""
    from corejax.numpy._core import check_arraylike
    check_arraylike("identity", x)
    return asarray(x)


@custom_jvp
def log1mexp(x):
    """log(1 - exp(-x)), accurate for small and large x (-inf at 0, nan below)."""
    (x,) = promote_dtypes_inexact(x)
    # below log(2) 1 - exp(-x) = -expm1(-x) keeps its digits; above, log1p does
    return jnp.where(x < math.log(2), jnp.log(-jnp.expm1(-x)), jnp.log1p(-jnp.exp(-x)))


# d/dx log(1 - e^-x) = 1 / expm1(x), as JAX's rule (the branches' own derivatives would leak
# the NaN of the unselected one)
log1mexp.defjvps(lambda g, ans, x: g / jnp.expm1(x))


def logmeanexp(x, axis=None, where=None, keepdims: bool = False):
    """log(mean(exp(x))) over `axis`, computed stably (over the `where` elements only)."""
    (x,) = promote_dtypes_inexact(x)
    lse = logsumexp(x, axis=axis, where=where, keepdims=keepdims)
    if where is None:
        axes = canonicalize_axes(axis, get_aval(x).ndim)
        count = math.prod(get_aval(x).shape[a] for a in axes)
    else:
        count = jnp.sum(jnp.broadcast_to(where, get_aval(x).shape), axis=axis,
                        keepdims=keepdims, dtype=get_aval(x).dtype)
    return lse - jnp.log(count)


@fuse_eagerly(1)
def sparse_sigmoid(x):
    """The sparse sigmoid: (x + 1) / 2 clipped to [0, 1] (0 below -1, 1 above 1)."""
    return 0.5 * jnp.clip(x + 1.0, 0.0, 2.0)


def _attention_mask(b, t, s, *, mask, is_causal, query_seq_lengths, key_value_seq_lengths,
                    local_window_size):
    """The (B, 1|N, T, S) boolean mask of allowed (query, key) pairs, or None."""
    out = None if mask is None else asarray(mask).astype(bool)

    def both(m):
        return m if out is None else jnp.logical_and(out, m)

    rows = lax.broadcasted_iota(jnp.int32, (t, s), 0)
    cols = lax.broadcasted_iota(jnp.int32, (t, s), 1)
    if is_causal:
        out = both((cols <= rows)[None, None])
    if local_window_size is not None:
        left, right = ((local_window_size, local_window_size)
                       if isinstance(local_window_size, int) else local_window_size)
        out = both(((cols >= rows - left) & (cols <= rows + right))[None, None])
    if query_seq_lengths is not None or key_value_seq_lengths is not None:
        q_ok = jnp.ones((b, t), bool) if query_seq_lengths is None else (
            jnp.arange(t)[None, :] < asarray(query_seq_lengths)[:, None])
        k_ok = jnp.ones((b, s), bool) if key_value_seq_lengths is None else (
            jnp.arange(s)[None, :] < asarray(key_value_seq_lengths)[:, None])
        out = both((q_ok[:, :, None] & k_ok[:, None, :])[:, None])
    return out


def dot_product_attention(query, key, value, bias=None, mask=None, *, scale=None,
                          is_causal: bool = False, query_seq_lengths=None,
                          key_value_seq_lengths=None, local_window_size=None,
                          implementation=None, return_residual: bool = False):
    """softmax(Q K^T * scale + bias, masked) V per head, for (B, T, N, H) queries and (B, S, K, H)
    keys and values (or without the batch axis); K must divide N (grouped-query attention).
    Logits and softmax are float32 (masked logits are -0.7 * float32 max, as in JAX's 'xla'
    implementation); the probabilities are cast to the value dtype for the second product."""
    if implementation not in (None, "xla"):
        if implementation == "cudnn":
            raise RuntimeError("cuDNN is not detected.")
        raise ValueError(f"Unsupported implementation option: {implementation}")
    query, key, value = asarray(query), asarray(key), asarray(value)
    qa, ka, va = get_aval(query), get_aval(key), get_aval(value)
    if qa.ndim not in (3, 4) or ka.ndim != qa.ndim or va.ndim != qa.ndim:
        raise ValueError(f"dot_product_attention: query, key and value must all be 4D (BTNH) or "
                         f"3D (TNH), got shapes {qa.shape}, {ka.shape} and {va.shape}.")
    for name, a in (("key", ka), ("value", va)):
        if a.dtype != qa.dtype:
            raise ValueError(f"{name} dtype should be {qa.dtype}, but got {a.dtype}")
    unbatched = qa.ndim == 3
    if unbatched:
        query, key, value = query[None], key[None], value[None]
        for name, arr in (("bias", bias), ("mask", mask)):
            if arr is not None and jnp.ndim(arr) == 4:
                raise ValueError(f"{name} must be at most 3D for 3D query/key/value.")
        bias = None if bias is None else jnp.expand_dims(asarray(bias), 0) \
            if jnp.ndim(bias) == 3 else bias
        mask = None if mask is None else jnp.expand_dims(asarray(mask), 0) \
            if jnp.ndim(mask) == 3 else mask
    b, t, n, h = get_aval(query).shape
    _, s, k, _ = get_aval(key).shape
    if get_aval(key).shape[0] != b or get_aval(key).shape[3] != h:
        raise ValueError(f"key shape should be {[b, s, k, h]}: but got {get_aval(key).shape}")
    if get_aval(value).shape != get_aval(key).shape:
        raise ValueError(f"value shape should be {list(get_aval(key).shape)}: but got "
                         f"{get_aval(value).shape}")
    if n % k:
        raise ValueError(f"The number of query heads must be a multiple of key/value heads, "
                         f"but got {n} vs {k}")
    g = n // k
    scale = 1.0 / math.sqrt(h) if scale is None else scale
    q5 = jnp.reshape(query, (b, t, k, g, h))
    # logits (B, K, G, T, S) in float32
    logits = jnp.einsum("btkgh,bskh->bkgts", q5, key, preferred_element_type=jnp.float32)
    logits = logits * jnp.asarray(scale, jnp.float32)
    if bias is not None:
        bias = jnp.broadcast_to(asarray(bias), (b, n, t, s) if jnp.ndim(bias) == 4 else
                                jnp.shape(bias))
        logits = logits + jnp.reshape(bias, (b, k, g, t, s)).astype(jnp.float32)
    allowed = _attention_mask(b, t, s, mask=mask, is_causal=is_causal,
                              query_seq_lengths=query_seq_lengths,
                              key_value_seq_lengths=key_value_seq_lengths,
                              local_window_size=local_window_size)
    if allowed is not None:
        allowed = jnp.broadcast_to(allowed, (b, n, t, s)).reshape(b, k, g, t, s)
        big_negative = -0.7 * float(jnp.finfo(jnp.float32).max)
        logits = jnp.where(allowed, logits, jnp.float32(big_negative))
    probs = softmax(logits, axis=-1).astype(qa.dtype)
    out = jnp.einsum("bkgts,bskh->btkgh", probs, value, preferred_element_type=qa.dtype)
    if query_seq_lengths is not None:
        valid = jnp.arange(t)[None, :] < asarray(query_seq_lengths)[:, None]
        out = out * valid[:, :, None, None, None].astype(qa.dtype)
    out = jnp.reshape(out, (b, t, n, h))
    if unbatched:
        out = out[0]
    if not return_residual:
        return out
    # the log-sum-exp is returned as a saved statistic, not a differentiable output: JAX's
    # derivatives (jvp and vjp) through it are zero, so it is cut from the graph here too
    residual = lax.stop_gradient(logsumexp(logits, axis=-1))  # (B, K, G, T)
    residual = jnp.transpose(jnp.reshape(residual, (b, n, t)), (0, 2, 1))
    return out, residual[0] if unbatched else residual
