"""Linear layers: Dense, DenseGeneral, Conv, ConvTranspose and Embed."""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

import corejax
import corejax.numpy as jnp
from corejax import lax
from corejax.lax.conv import conv_general_dilated, conv_transpose
from corejax.nn import initializers
from nn.dtypes import promote_dtype
from nn.module import Module, compact

__all__ = ["Dense", "DenseGeneral", "Conv", "ConvTranspose", "ConvLocal", "Embed", "Einsum",
           "promote_dtype"]

default_kernel_init = initializers.lecun_normal()
default_embed_init = initializers.variance_scaling(1.0, "fan_in", "normal", out_axis=0)


def _rank_error(module: Module, what: str, shape) -> ValueError:
    return ValueError(f'{type(module).__name__} "{module.path}": {what}; got input of shape '
                      f"{tuple(shape)}.")


class Dense(Module):
    """y = x @ kernel + bias over the last axis of x."""
    features: int
    use_bias: bool = True
    dtype: Any = None
    param_dtype: Any = jnp.float32
    precision: Any = None
    kernel_init: Callable = default_kernel_init
    bias_init: Callable = initializers.zeros

    @compact
    def __call__(self, inputs):
        inputs = jnp.asarray(inputs)
        if inputs.ndim == 0:
            raise _rank_error(self, "inputs need at least one dimension (the features)",
                              inputs.shape)
        kernel = self.param("kernel", self.kernel_init, (inputs.shape[-1], self.features),
                            self.param_dtype)
        bias = (self.param("bias", self.bias_init, (self.features,), self.param_dtype)
                if self.use_bias else None)
        inputs, kernel, bias = promote_dtype(inputs, kernel, bias, dtype=self.dtype)
        y = lax.dot_general(inputs, kernel, (((inputs.ndim - 1,), (0,)), ((), ())))
        return y + bias if bias is not None else y


def _canonical_axes(axes, ndim):
    axes = (axes,) if isinstance(axes, int) else tuple(axes)
    return tuple(a % ndim for a in axes)


class DenseGeneral(Module):
    """A linear map contracting `axis` of the input to `features` (ints or a tuple)."""
    features: Any
    axis: Any = -1
    batch_dims: Sequence[int] = ()
    use_bias: bool = True
    dtype: Any = None
    param_dtype: Any = jnp.float32
    precision: Any = None
    kernel_init: Callable = default_kernel_init
    bias_init: Callable = initializers.zeros

    @compact
    def __call__(self, inputs):
        inputs = jnp.asarray(inputs)
        features = (self.features,) if isinstance(self.features, int) else tuple(self.features)
        if self.batch_dims:
            raise NotImplementedError("DenseGeneral: batch_dims is not supported; use vmap.")
        axis = _canonical_axes(self.axis, max(inputs.ndim, 1))
        if inputs.ndim == 0 or len(set(axis)) != len(axis):
            raise _rank_error(self, f"axis {self.axis} is invalid for the input", inputs.shape)
        in_shape = tuple(inputs.shape[a] for a in axis)
        kernel_shape = in_shape + features

        def kernel_init(rng, shape, dtype):
            # Fans are those of the flattened (inputs, features) matrix.
            flat = self.kernel_init(rng, (math.prod(in_shape), math.prod(features)), dtype)
            return jnp.reshape(flat, shape)

        kernel = self.param("kernel", kernel_init, kernel_shape, self.param_dtype)
        bias = None
        if self.use_bias:
            bias = self.param("bias", lambda rng, shape, dtype: jnp.reshape(
                self.bias_init(rng, (math.prod(features),), dtype), shape), features,
                self.param_dtype)
        inputs, kernel, bias = promote_dtype(inputs, kernel, bias, dtype=self.dtype)
        y = lax.dot_general(inputs, kernel, ((axis, tuple(range(len(axis)))), ((), ())))
        return y + bias if bias is not None else y


def _tuple(value, n: int, name: str, module: Module):
    if value is None:
        return (1,) * n
    if isinstance(value, int):
        return (value,) * n
    value = tuple(value)
    if len(value) != n:
        raise ValueError(f'{type(module).__name__} "{module.path}": {name} {value} must have '
                         f"{n} entries (one per spatial dimension).")
    return value


def _canonical_padding(padding, n: int, module: Module):
    if isinstance(padding, str):
        return padding
    if isinstance(padding, int):
        return [(padding, padding)] * n
    pads = [(p, p) if isinstance(p, int) else tuple(p) for p in padding]
    if len(pads) != n:
        raise ValueError(f'{type(module).__name__} "{module.path}": padding {padding} must have '
                         f"{n} entries (one per spatial dimension).")
    return pads


def _conv_dimension_numbers(ndim: int):
    """Channels-last: (N, *spatial, C) inputs, (*spatial, in, out) kernels."""
    spatial = tuple(range(1, ndim - 1))
    return ((0, ndim - 1) + spatial, (ndim - 1, ndim - 2) + tuple(range(ndim - 2)),
            (0, ndim - 1) + spatial)


class _ConvBase(Module):
    def _batched(self, inputs, kernel_size):
        """Inputs reshaped to exactly one batch axis, and how to undo it."""
        inputs = jnp.asarray(inputs)
        n = len(kernel_size)
        if inputs.ndim < n + 1:
            raise _rank_error(
                self, f"a {n}-D convolution needs inputs of rank {n + 1} (unbatched) or "
                f"{n + 2} (batch, {n} spatial, features)", inputs.shape)
        if inputs.ndim == n + 1:
            return inputs[None], lambda y: y[0]
        batch = inputs.shape[:-(n + 1)]
        if len(batch) == 1:
            return inputs, lambda y: y
        flat = jnp.reshape(inputs, (-1,) + inputs.shape[-(n + 1):])
        return flat, lambda y: jnp.reshape(y, batch + y.shape[1:])

    def _kernel_size(self):
        ks = self.kernel_size
        return (ks,) if isinstance(ks, int) else tuple(ks)


class Conv(_ConvBase):
    """Convolution over channels-last inputs; kernel shape (*kernel_size, in // groups, out)."""
    features: int
    kernel_size: Any
    strides: Any = 1
    padding: Any = "SAME"
    input_dilation: Any = 1
    kernel_dilation: Any = 1
    feature_group_count: int = 1
    use_bias: bool = True
    mask: Any = None
    dtype: Any = None
    param_dtype: Any = jnp.float32
    precision: Any = None
    kernel_init: Callable = default_kernel_init
    bias_init: Callable = initializers.zeros

    def _prepare(self, inputs, kernel_size):
        """Batched inputs (CIRCULAR / CAUSAL padding applied), the unbatching function,
        strides, lax padding, input and kernel dilations."""
        n = len(kernel_size)
        inputs, unbatch = self._batched(inputs, kernel_size)
        strides = _tuple(self.strides, n, "strides", self)
        input_dilation = _tuple(self.input_dilation, n, "input_dilation", self)
        kernel_dilation = _tuple(self.kernel_dilation, n, "kernel_dilation", self)
        padding = _canonical_padding(self.padding, n, self)
        if padding == "CIRCULAR":
            eff = [(k - 1) * d + 1 for k, d in zip(kernel_size, kernel_dilation)]
            pads = [(0, 0)] + [((k - 1) // 2, k // 2) for k in eff] + [(0, 0)]
            inputs = jnp.pad(inputs, pads, mode="wrap")
            padding = "VALID"
        elif padding == "CAUSAL":
            if n != 1:
                raise ValueError(f'Conv "{self.path}": CAUSAL padding is only defined for 1-D '
                                 "convolutions.")
            inputs = jnp.pad(inputs, [(0, 0), ((kernel_size[0] - 1) * kernel_dilation[0], 0),
                                      (0, 0)])
            padding = "VALID"
        return inputs, unbatch, strides, padding, input_dilation, kernel_dilation

    @compact
    def __call__(self, inputs):
        kernel_size = self._kernel_size()
        inputs, unbatch, strides, padding, input_dilation, kernel_dilation = \
            self._prepare(inputs, kernel_size)
        in_features = inputs.shape[-1]
        if in_features % self.feature_group_count:
            raise ValueError(f'Conv "{self.path}": input features ({in_features}) must be a '
                             f"multiple of feature_group_count ({self.feature_group_count}).")
        kernel_shape = kernel_size + (in_features // self.feature_group_count, self.features)
        kernel = self.param("kernel", self.kernel_init, kernel_shape, self.param_dtype)
        if self.mask is not None:
            kernel = kernel * self.mask
        bias = (self.param("bias", self.bias_init, (self.features,), self.param_dtype)
                if self.use_bias else None)
        inputs, kernel, bias = promote_dtype(inputs, kernel, bias, dtype=self.dtype)
        y = conv_general_dilated(inputs, kernel, strides, padding, lhs_dilation=input_dilation,
                                 rhs_dilation=kernel_dilation,
                                 dimension_numbers=_conv_dimension_numbers(inputs.ndim),
                                 feature_group_count=self.feature_group_count)
        if bias is not None:
            y = y + bias
        return unbatch(y)


class ConvTranspose(_ConvBase):
    """Transposed convolution (the input is dilated by `strides`); kernel
    (*kernel_size, in, out)."""
    features: int
    kernel_size: Any
    strides: Any = None
    padding: Any = "SAME"
    kernel_dilation: Any = None
    use_bias: bool = True
    dtype: Any = None
    param_dtype: Any = jnp.float32
    precision: Any = None
    kernel_init: Callable = default_kernel_init
    bias_init: Callable = initializers.zeros
    transpose_kernel: bool = False

    @compact
    def __call__(self, inputs):
        kernel_size = self._kernel_size()
        n = len(kernel_size)
        inputs, unbatch = self._batched(inputs, kernel_size)
        strides = _tuple(self.strides, n, "strides", self)
        kernel_dilation = _tuple(self.kernel_dilation, n, "kernel_dilation", self)
        padding = _canonical_padding(self.padding, n, self)
        if padding in ("CIRCULAR", "CAUSAL"):
            raise NotImplementedError(f'ConvTranspose "{self.path}": {padding} padding is not '
                                      "supported; use 'SAME', 'VALID' or explicit pairs.")
        in_features = inputs.shape[-1]
        kernel_shape = (kernel_size + (self.features, in_features) if self.transpose_kernel
                        else kernel_size + (in_features, self.features))
        kernel = self.param("kernel", self.kernel_init, kernel_shape, self.param_dtype)
        bias = (self.param("bias", self.bias_init, (self.features,), self.param_dtype)
                if self.use_bias else None)
        inputs, kernel, bias = promote_dtype(inputs, kernel, bias, dtype=self.dtype)
        y = conv_transpose(inputs, kernel, strides, padding, rhs_dilation=kernel_dilation,
                           dimension_numbers=_conv_dimension_numbers(inputs.ndim),
                           transpose_kernel=self.transpose_kernel)
        if bias is not None:
            y = y + bias
        return unbatch(y)


class Embed(Module):
    """A table of `num_embeddings` vectors of size `features`, looked up by integer ids."""
    num_embeddings: int
    features: int
    dtype: Any = None
    param_dtype: Any = jnp.float32
    embedding_init: Callable = default_embed_init

    def setup(self):
        self.embedding = self.param("embedding", self.embedding_init,
                                    (self.num_embeddings, self.features), self.param_dtype)

    def __call__(self, inputs):
        inputs = jnp.asarray(inputs)
        if not jnp.issubdtype(inputs.dtype, np.integer):
            raise ValueError(f'Embed "{self.path}": inputs must be integer ids, got dtype '
                             f"{inputs.dtype}.")
        (table,) = promote_dtype(self.embedding, dtype=self.dtype)
        return jnp.take(table, inputs, axis=0)

    def attend(self, query):
        """Dot products of `query` with every embedding (for tied output layers)."""
        query, table = promote_dtype(query, self.embedding, dtype=self.dtype)
        return jnp.dot(query, table.T)


class ConvLocal(Conv):
    """A locally connected convolution: a separate kernel at every output position; kernel
    shape (*output_spatial, prod(kernel_size) * in, out), bias (*output_spatial, out)."""

    @compact
    def __call__(self, inputs):
        kernel_size = self._kernel_size()
        inputs, unbatch, strides, padding, input_dilation, kernel_dilation = \
            self._prepare(inputs, kernel_size)
        if self.feature_group_count != 1:
            raise NotImplementedError("`lax.conv_general_dilated_local` does not support "
                                      "`feature_group_count != 1`, got "
                                      f"`{self.feature_group_count}`.")
        in_features = inputs.shape[-1]
        dn = _conv_dimension_numbers(inputs.ndim)
        out_shape = corejax.eval_shape(
            lambda lhs, rhs: conv_general_dilated(
                lhs, rhs, strides, padding, lhs_dilation=input_dilation,
                rhs_dilation=kernel_dilation, dimension_numbers=dn),
            corejax.ShapeDtypeStruct(inputs.shape, inputs.dtype),
            corejax.ShapeDtypeStruct(kernel_size + (in_features, self.features),
                                     inputs.dtype)).shape
        kernel_shape = tuple(out_shape[1:-1]) + (math.prod(kernel_size) * in_features,
                                                 self.features)
        if self.mask is not None and tuple(self.mask.shape) != kernel_shape:
            raise ValueError("Mask needs to have the same shape as weights. Shapes are: "
                             f"{tuple(self.mask.shape)}, {kernel_shape}")
        kernel = self.param("kernel", self.kernel_init, kernel_shape, self.param_dtype)
        if self.mask is not None:
            kernel = kernel * self.mask
        bias = (self.param("bias", self.bias_init, tuple(out_shape[1:]), self.param_dtype)
                if self.use_bias else None)
        inputs, kernel, bias = promote_dtype(inputs, kernel, bias, dtype=self.dtype)
        y = lax.conv_general_dilated_local(inputs, kernel, strides, padding, kernel_size,
                                           lhs_dilation=input_dilation,
                                           rhs_dilation=kernel_dilation, dimension_numbers=dn,
                                           precision=self.precision)
        if bias is not None:
            y = y + jnp.reshape(bias, (1,) * (y.ndim - bias.ndim) + tuple(bias.shape))
        return unbatch(y)


def _einsum_bias_shapes(einsum_str, lhs, rhs_shape):
    """The bias shape (the kernel's axes kept in the output) and its broadcast shape."""
    operands, result = einsum_str.split("->")
    lhs_str, rhs_str = operands.split(",")
    if "..." in lhs_str or "..." in rhs_str or "..." in result:
        n_ell = lhs.ndim - len(lhs_str.replace("...", ""))
        letters = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in einsum_str][:n_ell]
        fill = "".join(letters)
        rhs_str, result = rhs_str.replace("...", ""), result.replace("...", fill)
    rhs_pos = {c: i for i, c in enumerate(rhs_str)}
    broadcast, shape = [1] * len(result), []
    for i, c in enumerate(result):
        if c in rhs_pos:
            broadcast[i] = rhs_shape[rhs_pos[c]]
            shape.append(rhs_shape[rhs_pos[c]])
    return shape, broadcast


class Einsum(Module):
    """y = einsum(einsum_str, inputs, kernel) (+ bias over the kernel axes kept in the
    output); the kernel has shape `shape`."""
    shape: Sequence[int]
    einsum_str: Any = None
    use_bias: bool = True
    dtype: Any = None
    param_dtype: Any = jnp.float32
    precision: Any = None
    kernel_init: Callable = default_kernel_init
    bias_init: Callable = initializers.zeros
    promote_dtype: Callable = promote_dtype
    preferred_element_type: Any = None

    @compact
    def __call__(self, inputs, einsum_str=None):
        from nn.module import merge_param
        einsum_str = merge_param("einsum_str", self.einsum_str, einsum_str)
        einsum_str = einsum_str.replace(" ", "")
        if "->" not in einsum_str:
            raise ValueError('`einsum_str` equation must be explicit and include "->".')
        if einsum_str.count(",") != 1:
            raise ValueError("`einsum_str` equation must have exactly two operands and "
                             "therefore, exactly one comma character, instead of "
                             f'{einsum_str.count(",")}')
        inputs = jnp.asarray(inputs)
        kernel = self.param("kernel", self.kernel_init, tuple(self.shape), self.param_dtype)
        bias = None
        if self.use_bias:
            bias_shape, bshape = _einsum_bias_shapes(einsum_str, inputs, tuple(self.shape))
            bias = self.param("bias", self.bias_init, tuple(bias_shape), self.param_dtype)
        inputs, kernel, bias = self.promote_dtype(inputs, kernel, bias, dtype=self.dtype)
        y = jnp.einsum(einsum_str, inputs, kernel, precision=self.precision,
                       preferred_element_type=self.preferred_element_type)
        if bias is not None:
            y = y + jnp.reshape(bias, bshape)
        return y
