"""Recurrent cells and the RNN / Bidirectional layers that scan them over time.

A cell maps `(carry, inputs) -> (new_carry, output)` for one time step; every axis of the
inputs but the feature axes is a batch axis. `RNN` runs a cell over a sequence with nn.scan
(one lax.scan), sharing the cell's parameters across steps.
"""
from __future__ import annotations

import logging
from functools import partial
from typing import Any, Callable, Mapping

import numpy as np

import corejax.numpy as jnp
from corejax import random, tree_util
from corejax.nn import initializers, sigmoid, tanh
from nn import transforms
from nn.core import FrozenDict
from nn.dtypes import promote_dtype
from nn.linear import Conv, Dense, default_kernel_init
from nn.module import Module, compact, nowrap

__all__ = ["RNNCellBase", "LSTMCell", "OptimizedLSTMCell", "SimpleCell", "GRUCell", "MGUCell",
           "ConvLSTMCell", "RNN", "Bidirectional", "flip_sequences"]


class RNNCellBase(Module):
    """Base class of the recurrent cells."""

    @nowrap
    def initialize_carry(self, rng, input_shape):
        raise NotImplementedError(f"{type(self).__name__} must define initialize_carry.")

    @property
    def num_feature_axes(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} must define num_feature_axes.")


def _two_carries(cell, rng, input_shape):
    key1, key2 = random.split(rng)
    shape = tuple(input_shape[:-1]) + (cell.features,)
    return (cell.carry_init(key1, shape, cell.param_dtype),
            cell.carry_init(key2, shape, cell.param_dtype))


def _one_carry(cell, rng, input_shape):
    return cell.carry_init(rng, tuple(input_shape[:-1]) + (cell.features,), cell.param_dtype)


class LSTMCell(RNNCellBase):
    """LSTM: gates i, f, o = gate_fn(W_i* x + W_h* h + b_h*), g = activation_fn(...);
    c' = f c + i g, h' = o activation_fn(c'). Carry (c, h); parameters ii, if, ig, io (input
    kernels) and hi, hf, hg, ho (recurrent kernels with biases)."""
    features: int
    gate_fn: Callable[..., Any] = sigmoid
    activation_fn: Callable[..., Any] = tanh
    kernel_init: Callable = default_kernel_init
    recurrent_kernel_init: Callable = initializers.orthogonal()
    bias_init: Callable = initializers.zeros
    dtype: Any = None
    param_dtype: Any = jnp.float32
    carry_init: Callable = initializers.zeros

    @compact
    def __call__(self, carry, inputs):
        c, h = carry
        hidden = h.shape[-1]
        dense_h = partial(Dense, features=hidden, use_bias=True, dtype=self.dtype,
                          param_dtype=self.param_dtype, kernel_init=self.recurrent_kernel_init,
                          bias_init=self.bias_init)
        dense_i = partial(Dense, features=hidden, use_bias=False, dtype=self.dtype,
                          param_dtype=self.param_dtype, kernel_init=self.kernel_init)
        i = self.gate_fn(dense_i(name="ii")(inputs) + dense_h(name="hi")(h))
        f = self.gate_fn(dense_i(name="if")(inputs) + dense_h(name="hf")(h))
        g = self.activation_fn(dense_i(name="ig")(inputs) + dense_h(name="hg")(h))
        o = self.gate_fn(dense_i(name="io")(inputs) + dense_h(name="ho")(h))
        new_c = f * c + i * g
        new_h = o * self.activation_fn(new_c)
        return (new_c, new_h), new_h

    @nowrap
    def initialize_carry(self, rng, input_shape):
        """(c, h) of shape batch dims + (features,), from carry_init."""
        return _two_carries(self, rng, input_shape)

    @property
    def num_feature_axes(self) -> int:
        return 1


class _DenseParams(Module):
    """Creates a Dense layer's parameters (named like Dense's) without applying them."""
    features: int
    use_bias: bool = True
    param_dtype: Any = jnp.float32
    precision: Any = None
    kernel_init: Callable = default_kernel_init
    bias_init: Callable = initializers.zeros

    @compact
    def __call__(self, inputs):
        k = self.param("kernel", self.kernel_init, (inputs.shape[-1], self.features),
                       self.param_dtype)
        b = (self.param("bias", self.bias_init, (self.features,), self.param_dtype)
             if self.use_bias else None)
        return k, b


DenseParams = _DenseParams


class OptimizedLSTMCell(RNNCellBase):
    """LSTMCell's math and parameters, computed with one matrix product for the four input
    kernels and one for the four recurrent kernels."""
    features: int
    gate_fn: Callable[..., Any] = sigmoid
    activation_fn: Callable[..., Any] = tanh
    kernel_init: Callable = default_kernel_init
    recurrent_kernel_init: Callable = initializers.orthogonal()
    bias_init: Callable = initializers.zeros
    dtype: Any = None
    param_dtype: Any = jnp.float32
    carry_init: Callable = initializers.zeros

    @compact
    def __call__(self, carry, inputs):
        c, h = carry
        hidden = h.shape[-1]
        gates = ("i", "f", "g", "o")
        p_i, p_h = {}, {}
        for g in gates:
            p_i[g] = _DenseParams(hidden, use_bias=False, param_dtype=self.param_dtype,
                                  kernel_init=self.kernel_init, bias_init=self.bias_init,
                                  name=f"i{g}")(inputs)
            p_h[g] = _DenseParams(hidden, use_bias=True, param_dtype=self.param_dtype,
                                  kernel_init=self.recurrent_kernel_init,
                                  bias_init=self.bias_init, name=f"h{g}")(h)

        def fused(x, params, use_bias):
            kernel = jnp.concatenate([params[g][0] for g in gates], axis=-1)
            bias = jnp.concatenate([params[g][1] for g in gates], axis=-1) if use_bias \
                else None
            x, kernel, bias = promote_dtype(x, kernel, bias, dtype=self.dtype)
            y = jnp.dot(x, kernel)
            if use_bias:
                y = y + jnp.reshape(bias, (1,) * (y.ndim - 1) + (-1,))
            return dict(zip(gates, jnp.split(y, np.cumsum([hidden] * 3), axis=-1)))

        zh = fused(h, p_h, True)
        zi = fused(inputs, p_i, False)
        i = self.gate_fn(zh["i"] + zi["i"])
        f = self.gate_fn(zh["f"] + zi["f"])
        g = self.activation_fn(zh["g"] + zi["g"])
        o = self.gate_fn(zh["o"] + zi["o"])
        new_c = f * c + i * g
        new_h = o * self.activation_fn(new_c)
        return (new_c, new_h), new_h

    @nowrap
    def initialize_carry(self, rng, input_shape):
        return _two_carries(self, rng, input_shape)

    @property
    def num_feature_axes(self) -> int:
        return 1


class SimpleCell(RNNCellBase):
    """h' = activation_fn(W_i x + b_i + W_h h) (+ h before the activation when residual)."""
    features: int
    activation_fn: Callable[..., Any] = tanh
    kernel_init: Callable = default_kernel_init
    recurrent_kernel_init: Callable = initializers.orthogonal()
    bias_init: Callable = initializers.zeros
    dtype: Any = None
    param_dtype: Any = jnp.float32
    carry_init: Callable = initializers.zeros
    residual: bool = False

    @compact
    def __call__(self, carry, inputs):
        hidden = carry.shape[-1]
        new = Dense(hidden, use_bias=True, dtype=self.dtype, param_dtype=self.param_dtype,
                    kernel_init=self.kernel_init, bias_init=self.bias_init, name="i")(inputs)
        new = new + Dense(hidden, use_bias=False, dtype=self.dtype,
                          param_dtype=self.param_dtype,
                          kernel_init=self.recurrent_kernel_init, name="h")(carry)
        if self.residual:
            new = new + carry
        new = self.activation_fn(new)
        return new, new

    @nowrap
    def initialize_carry(self, rng, input_shape):
        return _one_carry(self, rng, input_shape)

    @property
    def num_feature_axes(self) -> int:
        return 1


class GRUCell(RNNCellBase):
    """GRU: r, z = gate_fn(W_i* x + b_i* + W_h* h); n = activation_fn(W_in x + b_in +
    r (W_hn h + b_hn)); h' = (1 - z) n + z h."""
    features: int
    gate_fn: Callable[..., Any] = sigmoid
    activation_fn: Callable[..., Any] = tanh
    kernel_init: Callable = default_kernel_init
    recurrent_kernel_init: Callable = initializers.orthogonal()
    bias_init: Callable = initializers.zeros
    dtype: Any = None
    param_dtype: Any = jnp.float32
    carry_init: Callable = initializers.zeros

    @compact
    def __call__(self, carry, inputs):
        h = carry
        hidden = h.shape[-1]
        dense_h = partial(Dense, features=hidden, use_bias=False, dtype=self.dtype,
                          param_dtype=self.param_dtype, kernel_init=self.recurrent_kernel_init,
                          bias_init=self.bias_init)
        dense_i = partial(Dense, features=hidden, use_bias=True, dtype=self.dtype,
                          param_dtype=self.param_dtype, kernel_init=self.kernel_init,
                          bias_init=self.bias_init)
        r = self.gate_fn(dense_i(name="ir")(inputs) + dense_h(name="hr")(h))
        z = self.gate_fn(dense_i(name="iz")(inputs) + dense_h(name="hz")(h))
        n = self.activation_fn(dense_i(name="in")(inputs)
                               + r * dense_h(name="hn", use_bias=True)(h))
        new_h = (1.0 - z) * n + z * h
        return new_h, new_h

    @nowrap
    def initialize_carry(self, rng, input_shape):
        return _one_carry(self, rng, input_shape)

    @property
    def num_feature_axes(self) -> int:
        return 1


class MGUCell(RNNCellBase):
    """Minimal gated unit: f = gate_fn(W_if x + b_if + W_hf h); n = activation_fn(W_in x +
    b_in + f (W_hn h + b_hn)) (without f and b_hn when reset_gate is False);
    h' = (1 - f) n + f h."""
    features: int
    gate_fn: Callable[..., Any] = sigmoid
    activation_fn: Callable[..., Any] = tanh
    kernel_init: Callable = default_kernel_init
    recurrent_kernel_init: Callable = initializers.orthogonal()
    forget_bias_init: Callable = initializers.ones
    activation_bias_init: Callable = initializers.zeros
    dtype: Any = None
    param_dtype: Any = jnp.float32
    carry_init: Callable = initializers.zeros
    reset_gate: bool = True

    @compact
    def __call__(self, carry, inputs):
        h = carry
        hidden = h.shape[-1]
        dense_h = partial(Dense, features=hidden, use_bias=False, dtype=self.dtype,
                          param_dtype=self.param_dtype, kernel_init=self.recurrent_kernel_init,
                          bias_init=self.activation_bias_init)
        dense_i = partial(Dense, features=hidden, use_bias=True, dtype=self.dtype,
                          param_dtype=self.param_dtype, kernel_init=self.kernel_init)
        f = self.gate_fn(dense_i(name="if", bias_init=self.forget_bias_init)(inputs)
                         + dense_h(name="hf")(h))
        x = dense_h(name="hn", use_bias=self.reset_gate)(h)
        if self.reset_gate:
            x = x * f
        n = self.activation_fn(dense_i(name="in", bias_init=self.activation_bias_init)(inputs)
                               + x)
        new_h = (1.0 - f) * n + f * h
        return new_h, new_h

    @nowrap
    def initialize_carry(self, rng, input_shape):
        return _one_carry(self, rng, input_shape)

    @property
    def num_feature_axes(self) -> int:
        return 1


class ConvLSTMCell(RNNCellBase):
    """Convolutional LSTM: the gates come from convolutions 'ih' (inputs) and 'hh' (hidden
    state) with 4 * features channels, split as i, g, f, o; the forget gate gets +1."""
    features: int
    kernel_size: Any
    strides: Any = None
    padding: Any = "SAME"
    use_bias: bool = True
    dtype: Any = None
    param_dtype: Any = jnp.float32
    carry_init: Callable = initializers.zeros

    @compact
    def __call__(self, carry, inputs):
        c, h = carry
        conv = partial(Conv, features=4 * self.features, kernel_size=self.kernel_size,
                       strides=self.strides, padding=self.padding, use_bias=self.use_bias,
                       dtype=self.dtype, param_dtype=self.param_dtype)
        gates = conv(name="ih")(inputs) + conv(name="hh")(h)
        i, g, f, o = jnp.split(gates, 4, axis=-1)
        f = sigmoid(f + 1)
        new_c = f * c + sigmoid(i) * jnp.tanh(g)
        new_h = sigmoid(o) * jnp.tanh(new_c)
        return (new_c, new_h), new_h

    @nowrap
    def initialize_carry(self, rng, input_shape):
        """(c, h) of shape batch dims + signal dims + (features,)."""
        n = self.num_feature_axes
        shape = tuple(input_shape[:-n]) + tuple(input_shape[-n:-1]) + (self.features,)
        key1, key2 = random.split(rng)
        return (self.carry_init(key1, shape, self.param_dtype),
                self.carry_init(key2, shape, self.param_dtype))

    @property
    def num_feature_axes(self) -> int:
        return len(self.kernel_size) + 1


def flip_sequences(inputs, seq_lengths, num_batch_dims: int, time_major: bool):
    """Reverses each sequence along the time axis, keeping padding (steps at or after
    seq_lengths) at the end."""
    time_axis = 0 if time_major else num_batch_dims
    steps = inputs.shape[time_axis]
    if seq_lengths is None:
        return jnp.flip(inputs, axis=time_axis)
    lengths = jnp.expand_dims(jnp.asarray(seq_lengths), time_axis)
    idxs = jnp.arange(steps - 1, -1, -1)
    idxs = jnp.reshape(idxs, [steps] + [1] * num_batch_dims if time_major
                       else [1] * num_batch_dims + [steps])
    idxs = (idxs + lengths) % steps
    idxs = jnp.reshape(idxs, idxs.shape + (1,) * (inputs.ndim - idxs.ndim))
    return jnp.take_along_axis(inputs, idxs, axis=time_axis)


class RNN(Module):
    """Runs `cell` over the time axis of the inputs ((*batch, time, *features), or
    (time, *batch, *features) when time_major) with nn.scan; returns the outputs (and the
    final carry with return_carry)."""
    cell: Any
    time_major: bool = False
    return_carry: bool = False
    reverse: bool = False
    keep_order: bool = False
    unroll: int = 1
    variable_axes: Mapping = FrozenDict()
    variable_broadcast: Any = "params"
    variable_carry: Any = False
    split_rngs: Mapping = FrozenDict({"params": False})

    def __call__(self, inputs, *, initial_carry=None, init_key=None, seq_lengths=None,
                 return_carry=None, time_major=None, reverse=None, keep_order=None):
        return_carry = self.return_carry if return_carry is None else return_carry
        time_major = self.time_major if time_major is None else time_major
        reverse = self.reverse if reverse is None else reverse
        keep_order = self.keep_order if keep_order is None else keep_order
        inputs = jnp.asarray(inputs)
        nfa = self.cell.num_feature_axes
        time_axis = 0 if time_major else inputs.ndim - (nfa + 1)
        if time_axis < 0:
            raise ValueError(f'RNN "{self.path}": inputs of shape {tuple(inputs.shape)} have no '
                             f"time axis before the cell's {nfa} feature axes.")
        batch_dims = inputs.shape[1:-nfa] if time_major else inputs.shape[:time_axis]
        if reverse:
            inputs = flip_sequences(inputs, seq_lengths, len(batch_dims), time_major)
        if initial_carry is None:
            if init_key is None:
                init_key = random.key(0)
            shape = inputs.shape[:time_axis] + inputs.shape[time_axis + 1:]
            carry = self.cell.initialize_carry(init_key, shape)
        else:
            carry = initial_carry
        slice_carry = seq_lengths is not None and return_carry

        def scan_fn(cell, carry, x):
            carry, y = cell(carry, x)
            return (carry, (carry, y)) if slice_carry else (carry, y)

        scan = transforms.scan(
            scan_fn, in_axes=time_axis, out_axes=(0, time_axis) if slice_carry else time_axis,
            unroll=self.unroll, variable_axes=self.variable_axes,
            variable_broadcast=self.variable_broadcast, variable_carry=self.variable_carry,
            split_rngs=self.split_rngs)
        carry, outputs = scan(self.cell, carry, inputs)
        if slice_carry:
            carries, outputs = outputs
            last = jnp.asarray(seq_lengths) - 1
            carry = tree_util.tree_map(lambda x: x[last, jnp.arange(x.shape[1])], carries)
        if reverse and keep_order:
            outputs = flip_sequences(outputs, seq_lengths, len(batch_dims), time_major)
        return (carry, outputs) if return_carry else outputs


def _concatenate(a, b):
    return jnp.concatenate([a, b], axis=-1)


class Bidirectional(Module):
    """Runs `forward_rnn` left to right and `backward_rnn` right to left (outputs realigned)
    and merges their outputs with merge_fn (concatenation by default)."""
    forward_rnn: Any
    backward_rnn: Any
    merge_fn: Callable = _concatenate
    time_major: bool = False
    return_carry: bool = False

    def __call__(self, inputs, *, initial_carry=None, init_key=None, seq_lengths=None,
                 return_carry=None, time_major=None, reverse=None, keep_order=None):
        time_major = self.time_major if time_major is None else time_major
        return_carry = self.return_carry if return_carry is None else return_carry
        if init_key is not None:
            key_f, key_b = random.split(init_key)
        else:
            key_f = key_b = None
        carry_f, carry_b = (None, None) if initial_carry is None else initial_carry
        if self.forward_rnn is self.backward_rnn:
            logging.warning("forward_rnn and backward_rnn is the same object, so they will "
                            "share parameters.")
        carry_f, out_f = self.forward_rnn(inputs, initial_carry=carry_f, init_key=key_f,
                                          seq_lengths=seq_lengths, return_carry=True,
                                          time_major=time_major, reverse=False)
        carry_b, out_b = self.backward_rnn(inputs, initial_carry=carry_b, init_key=key_b,
                                           seq_lengths=seq_lengths, return_carry=True,
                                           time_major=time_major, reverse=True,
                                           keep_order=True)
        outputs = tree_util.tree_map(self.merge_fn, out_f, out_b)
        return ((carry_f, carry_b), outputs) if return_carry else outputs
