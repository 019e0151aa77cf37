"""Dot-product attention and MultiHeadDotProductAttention / SelfAttention, with masks.

Shapes follow Flax: queries (batch..., q_length, num_heads, head_dim), keys and values
(batch..., kv_length, num_heads, head_dim), masks broadcastable to
(batch..., num_heads, q_length, kv_length) with True meaning "attend".
"""
from __future__ import annotations

from typing import Any, Callable

import corejax.numpy as jnp
from corejax import random
from corejax.nn import initializers, softmax
from nn.dtypes import promote_dtype
from nn.linear import DenseGeneral, default_kernel_init
from nn.module import Module, compact, merge_param

__all__ = ["dot_product_attention_weights", "dot_product_attention",
           "MultiHeadDotProductAttention", "MultiHeadAttention", "SelfAttention",
           "make_attention_mask", "make_causal_mask", "combine_masks"]


def dot_product_attention_weights(query, key, bias=None, mask=None, broadcast_dropout=True,
                                  dropout_rng=None, dropout_rate=0.0, deterministic=False,
                                  dtype=None, precision=None):
    """softmax(q k^T / sqrt(depth) + bias, masked) over the keys: (..., heads, q_len, kv_len)."""
    query, key = promote_dtype(query, key, dtype=dtype)
    if query.ndim != key.ndim or query.shape[-1] != key.shape[-1] or \
            query.shape[-2] != key.shape[-2]:
        raise ValueError(f"attention: query {tuple(query.shape)} and key {tuple(key.shape)} "
                         "must have the same rank, number of heads and head size.")
    query = query / jnp.sqrt(jnp.asarray(query.shape[-1], query.dtype))
    weights = jnp.einsum("...qhd,...khd->...hqk", query, key)
    if bias is not None:
        weights = weights + bias
    if mask is not None:
        weights = jnp.where(jnp.asarray(mask).astype(bool), weights,
                            jnp.finfo(weights.dtype).min)
    weights = softmax(weights)
    if not deterministic and dropout_rate > 0.0:
        if dropout_rng is None:
            raise ValueError("attention dropout needs dropout_rng when not deterministic.")
        keep = 1.0 - dropout_rate
        if broadcast_dropout:  # one mask shared by the batch and head axes
            shape = (1,) * (key.ndim - 2) + tuple(weights.shape[-2:])
        else:
            shape = tuple(weights.shape)
        keep_mask = random.bernoulli(dropout_rng, keep, shape)
        weights = weights * (keep_mask.astype(weights.dtype) / jnp.asarray(keep, weights.dtype))
    return weights


def dot_product_attention(query, key, value, bias=None, mask=None, broadcast_dropout=True,
                          dropout_rng=None, dropout_rate=0.0, deterministic=False, dtype=None,
                          precision=None):
    """The attention-weighted sum of values: (..., q_len, heads, head_dim)."""
    query, key, value = promote_dtype(query, key, value, dtype=dtype)
    if key.shape[:-3] != value.shape[:-3] or key.shape[-3:-1] != value.shape[-3:-1]:
        raise ValueError(f"attention: key {tuple(key.shape)} and value "
                         f"{tuple(value.shape)} must agree in batch, length and heads.")
    weights = dot_product_attention_weights(query, key, bias, mask, broadcast_dropout,
                                            dropout_rng, dropout_rate, deterministic, dtype,
                                            precision)
    return jnp.einsum("...hqk,...khd->...qhd", weights, value)


class MultiHeadDotProductAttention(Module):
    """Projects inputs to num_heads queries, keys and values ('query', 'key', 'value'), attends,
    and projects the heads back ('out')."""
    num_heads: int
    dtype: Any = None
    param_dtype: Any = jnp.float32
    qkv_features: Any = None
    out_features: Any = None
    broadcast_dropout: bool = True
    dropout_rate: float = 0.0
    deterministic: Any = None
    precision: Any = None
    kernel_init: Callable = default_kernel_init
    bias_init: Callable = initializers.zeros
    use_bias: bool = True
    attention_fn: Callable = dot_product_attention

    @compact
    def __call__(self, inputs_q, inputs_k=None, inputs_v=None, *, inputs_kv=None, mask=None,
                 deterministic=None, dropout_rng=None):
        inputs_q = jnp.asarray(inputs_q)
        if inputs_kv is not None:
            inputs_k = inputs_v = inputs_kv
        if inputs_k is None:
            inputs_k = inputs_q
        if inputs_v is None:
            inputs_v = inputs_k
        features = self.out_features or inputs_q.shape[-1]
        qkv_features = self.qkv_features or inputs_q.shape[-1]
        if qkv_features % self.num_heads:
            raise ValueError(f'{type(self).__name__} "{self.path}": qkv_features '
                             f"({qkv_features}) must be divisible by num_heads "
                             f"({self.num_heads}).")
        head_dim = qkv_features // self.num_heads
        dense = lambda name: DenseGeneral((self.num_heads, head_dim), axis=-1, dtype=self.dtype,
                                          param_dtype=self.param_dtype,
                                          kernel_init=self.kernel_init,
                                          bias_init=self.bias_init, use_bias=self.use_bias,
                                          name=name)
        query = dense("query")(inputs_q)
        key = dense("key")(inputs_k)
        value = dense("value")(inputs_v)
        no_dropout = True
        if self.dropout_rate > 0.0:
            no_dropout = merge_param("deterministic", self.deterministic, deterministic,
                                     f'{type(self).__name__} "{self.path}"')
            if not no_dropout and dropout_rng is None:
                dropout_rng = self.make_rng("dropout")
        x = self.attention_fn(query, key, value, mask=mask, dropout_rng=dropout_rng,
                              dropout_rate=self.dropout_rate,
                              broadcast_dropout=self.broadcast_dropout,
                              deterministic=no_dropout, dtype=self.dtype,
                              precision=self.precision)
        return DenseGeneral(features, axis=(-2, -1), dtype=self.dtype,
                            param_dtype=self.param_dtype, kernel_init=self.kernel_init,
                            bias_init=self.bias_init, use_bias=self.use_bias, name="out")(x)


MultiHeadAttention = MultiHeadDotProductAttention


class SelfAttention(MultiHeadDotProductAttention):
    """Attention of the inputs to themselves."""

    @compact
    def __call__(self, inputs_q, mask=None, deterministic=None, dropout_rng=None):
        return super().__call__(inputs_q, mask=mask, deterministic=deterministic,
                                dropout_rng=dropout_rng)


def make_attention_mask(query_input, key_input, pairwise_fn=jnp.multiply, extra_batch_dims=0,
                        dtype=jnp.float32):
    """A (batch..., 1, q_len, kv_len) mask from per-position query and key flags."""
    mask = pairwise_fn(jnp.expand_dims(jnp.asarray(query_input), -1),
                       jnp.expand_dims(jnp.asarray(key_input), -2))
    mask = jnp.expand_dims(mask, -3)
    mask = jnp.reshape(mask, (1,) * extra_batch_dims + mask.shape)
    return jnp.asarray(mask, dtype)


def make_causal_mask(x, extra_batch_dims=0, dtype=jnp.float32):
    """A mask letting position i attend to positions <= i of x's last axis."""
    idxs = jnp.broadcast_to(jnp.arange(x.shape[-1], dtype=jnp.int32), x.shape)
    return make_attention_mask(idxs, idxs, jnp.greater_equal, extra_batch_dims, dtype)


def combine_masks(*masks, dtype=jnp.float32):
    """The logical and of the given masks (None entries are skipped)."""
    masks = [m for m in masks if m is not None]
    if not masks:
        return None
    if len({m.ndim for m in masks}) != 1:
        raise ValueError(f"combine_masks: masks must have the same rank, got "
                         f"{[tuple(m.shape) for m in masks]}.")
    out = masks[0]
    for m in masks[1:]:
        out = jnp.logical_and(out, m)
    return jnp.asarray(out, dtype)
