"""stax: neural-network layers as pairs of pure functions (jax.example_libraries.stax).

A layer is `(init_fun, apply_fun)`:

- `init_fun(rng, input_shape) -> (output_shape, params)` infers the output shape from the input
  shape (a leading -1 stands for an unknown batch size and is carried through) and draws the
  layer's parameters;
- `apply_fun(params, inputs, **kwargs) -> outputs`, where `rng=` feeds stochastic layers
  (Dropout) and other keyword arguments are passed along to every sub-layer by the combinators.

Layers with a configuration are constructors (`Dense(512)`); configuration-free layers are the
pairs themselves (`Relu`, `Flatten`, `Identity`, `FanInSum`). Convolution and pooling are the
corejax lax primitives; their output shapes come from those primitives' own shape rules (through
`eval_shape`), so no shape arithmetic is written twice.
"""
from __future__ import annotations

import functools
import operator

import numpy as np

from corejax import lax, random
from corejax.api import ShapeDtypeStruct, eval_shape
import corejax.numpy as jnp
from corejax.nn import (relu, log_softmax, softmax, softplus, sigmoid, elu, leaky_relu, selu,
                        gelu, standardize)
from corejax.nn.initializers import glorot_normal, normal, ones, zeros

__all__ = [
    "serial", "parallel", "shape_dependent", "elementwise",
    "Dense", "GeneralConv", "Conv", "Conv1D", "GeneralConvTranspose", "ConvTranspose",
    "Conv1DTranspose", "BatchNorm", "Dropout", "MaxPool", "SumPool", "AvgPool", "Flatten",
    "Identity", "FanOut", "FanInSum", "FanInConcat",
    "Tanh", "Relu", "Exp", "LogSoftmax", "Softmax", "Softplus", "Sigmoid", "Elu", "LeakyRelu",
    "Selu", "Gelu",
    # re-exported, as jax.example_libraries.stax does
    "relu", "log_softmax", "softmax", "softplus", "sigmoid", "elu", "leaky_relu", "selu", "gelu",
    "standardize", "glorot_normal", "normal", "ones", "zeros", "glorot", "randn", "logsoftmax",
]

# Older stax names, kept so that code written against them still runs.
glorot = glorot_normal
randn = normal
logsoftmax = log_softmax


def _static_shape(input_shape, passthrough):
    """`input_shape` with its unknown (negative) sizes at the pass-through axes replaced by 1, so
    that the layer's computation can be traced abstractly."""
    probe = list(input_shape)
    for axis in passthrough:
        if probe[axis] < 0:
            probe[axis] = 1
    return tuple(probe)


def _output_shape(fun, input_shape, other_shapes=(), passthrough=None):
    """The shape `fun(x, *others)` returns for an `x` of `input_shape`, by abstract evaluation.

    `passthrough` maps input axes to output axes that keep their size (a batch axis, the
    channels of a pooling layer): an unknown (-1) size there is carried through unchanged.
    """
    passthrough = passthrough or {}
    probe = _static_shape(input_shape, passthrough)
    if any(d < 0 for d in probe):
        raise ValueError(f"input shape {tuple(input_shape)}: only the batch axis may have an "
                         "unknown (-1) size.")
    avals = [ShapeDtypeStruct(s, np.float32) for s in (probe, *other_shapes)]
    out = list(eval_shape(fun, *avals).shape)
    for in_axis, out_axis in passthrough.items():
        out[out_axis] = input_shape[in_axis]
    return tuple(out)


# --- dense and convolutional layers ----------------------------------------------------------

def Dense(out_dim, W_init=glorot_normal(), b_init=normal()):
    """Fully connected layer: `inputs @ W + b` over the last axis."""
    def init_fun(rng, input_shape):
        output_shape = tuple(input_shape[:-1]) + (out_dim,)
        k1, k2 = random.split(rng)
        W, b = W_init(k1, (input_shape[-1], out_dim)), b_init(k2, (out_dim,))
        return output_shape, (W, b)

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        return jnp.dot(inputs, W) + b

    return init_fun, apply_fun


def _kernel_shape(rhs_spec, lhs_spec, input_shape, out_chan, filter_shape):
    """The kernel's shape in `rhs_spec` layout: 'O' is out_chan, 'I' the input's channels and
    the spatial letters take `filter_shape` in order."""
    spatial = iter(filter_shape)
    return tuple(out_chan if c == "O" else input_shape[lhs_spec.index("C")] if c == "I"
                 else next(spatial) for c in rhs_spec)


def _bias_shape(out_spec, out_chan):
    return tuple(out_chan if c == "C" else 1 for c in out_spec)


def _general_conv_layer(conv_fun, dimension_numbers, out_chan, filter_shape, strides, padding,
                        W_init, b_init):
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    one = (1,) * len(filter_shape)
    strides = strides or one
    W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))

    def convolve(inputs, W):
        return conv_fun(inputs, W, strides, padding, dimension_numbers)

    def init_fun(rng, input_shape):
        kernel_shape = _kernel_shape(rhs_spec, lhs_spec, input_shape, out_chan, filter_shape)
        output_shape = _output_shape(convolve, input_shape, (kernel_shape,),
                                     {lhs_spec.index("N"): out_spec.index("N")})
        k1, k2 = random.split(rng)
        W, b = W_init(k1, kernel_shape), b_init(k2, _bias_shape(out_spec, out_chan))
        return output_shape, (W, b)

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        return convolve(inputs, W) + b

    return init_fun, apply_fun


def _conv(inputs, W, strides, padding, dimension_numbers):
    one = (1,) * len(strides)
    return lax.conv_general_dilated(inputs, W, strides, padding, one, one,
                                    dimension_numbers=dimension_numbers)


def _conv_transpose(inputs, W, strides, padding, dimension_numbers):
    return lax.conv_transpose(inputs, W, strides, padding, dimension_numbers=dimension_numbers)


def GeneralConv(dimension_numbers, out_chan, filter_shape, strides=None, padding="VALID",
                W_init=None, b_init=normal(1e-6)):
    """Convolution with explicit layouts, e.g. dimension_numbers=('NHWC', 'HWIO', 'NHWC').
    The kernel defaults to Glorot-normal over its 'I' and 'O' axes."""
    return _general_conv_layer(_conv, dimension_numbers, out_chan, filter_shape, strides,
                               padding, W_init, b_init)


def GeneralConvTranspose(dimension_numbers, out_chan, filter_shape, strides=None,
                         padding="VALID", W_init=None, b_init=normal(1e-6)):
    """Transposed convolution (lax.conv_transpose) with explicit layouts."""
    return _general_conv_layer(_conv_transpose, dimension_numbers, out_chan, filter_shape,
                               strides, padding, W_init, b_init)


Conv = functools.partial(GeneralConv, ("NHWC", "HWIO", "NHWC"))
Conv1D = functools.partial(GeneralConv, ("NHC", "HIO", "NHC"))
ConvTranspose = functools.partial(GeneralConvTranspose, ("NHWC", "HWIO", "NHWC"))
Conv1DTranspose = functools.partial(GeneralConvTranspose, ("NHC", "HIO", "NHC"))


# --- normalization and regularization --------------------------------------------------------

def BatchNorm(axis=(0, 1, 2), epsilon=1e-5, center=True, scale=True, beta_init=zeros,
              gamma_init=ones):
    """Normalizes over `axis` with the batch's own statistics (stax keeps no running averages),
    then applies a learned shift (beta, if `center`) and scale (gamma, if `scale`) that live on
    the remaining axes."""
    axis = (axis,) if isinstance(axis, int) else tuple(axis)

    def normalized_axes(ndim):
        return tuple(a % ndim for a in axis)

    def init_fun(rng, input_shape):
        reduced = normalized_axes(len(input_shape))
        shape = tuple(d for i, d in enumerate(input_shape) if i not in reduced)
        k1, k2 = random.split(rng)
        beta = beta_init(k1, shape) if center else ()
        gamma = gamma_init(k2, shape) if scale else ()
        return input_shape, (beta, gamma)

    def apply_fun(params, x, **kwargs):
        beta, gamma = params
        reduced = normalized_axes(jnp.ndim(x))
        # Parameters hold only the kept axes: give them size-1 axes where x was reduced.
        ed = tuple(None if i in reduced else slice(None) for i in range(jnp.ndim(x)))
        z = standardize(x, reduced, epsilon=epsilon)
        if scale:
            z = gamma[ed] * z
        if center:
            z = z + beta[ed]
        return z

    return init_fun, apply_fun


_DROPOUT_NEEDS_RNG = (
    "Dropout layer requires apply_fun to be called with a PRNG key argument. That is, instead "
    "of `apply_fun(params, inputs)`, call it like `apply_fun(params, inputs, rng=rng)` where "
    "`rng` is a corejax.random.PRNGKey value.")


def Dropout(rate, mode="train"):
    """Dropout where `rate` is the probability of KEEPING a unit (stax's convention): in 'train'
    mode each input survives with probability `rate` and is scaled by 1/rate; any other mode is
    the identity. As in stax, apply_fun always needs `rng=`."""
    def init_fun(rng, input_shape):
        return input_shape, ()

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.get("rng", None)
        if rng is None:
            raise ValueError(_DROPOUT_NEEDS_RNG)
        if mode == "train":
            keep = random.bernoulli(rng, rate, jnp.shape(inputs))
            return jnp.where(keep, inputs / rate, 0)
        return inputs

    return init_fun, apply_fun


# --- pooling ---------------------------------------------------------------------------------

def _non_spatial_axes(spec, ndim):
    """Batch and channel axes: NHWC-style (first and last) unless `spec` names them."""
    if spec is None:
        return 0, ndim - 1
    return spec.index("N"), spec.index("C")


def _pooling_layer(reduce_fn, rescaler=None):
    def PoolingLayer(window_shape, strides=None, padding="VALID", spec=None):
        window_shape = tuple(window_shape)
        strides = tuple(strides) if strides else (1,) * len(window_shape)
        rescale = rescaler(window_shape, strides, padding) if rescaler else None
        # The window covers the spatial axes only: insert size-1 (stride-1) batch and channels.
        non_spatial = sorted(_non_spatial_axes(spec, len(window_shape) + 2))
        full_window, full_strides = list(window_shape), list(strides)
        for i in non_spatial:
            full_window.insert(i, 1)
            full_strides.insert(i, 1)
        full_window, full_strides = tuple(full_window), tuple(full_strides)

        def pool(inputs):
            return reduce_fn(inputs, full_window, full_strides, padding)

        def init_fun(rng, input_shape):
            return _output_shape(pool, input_shape, passthrough={i: i for i in non_spatial}), ()

        def apply_fun(params, inputs, **kwargs):
            out = pool(inputs)
            return rescale(out, inputs, spec) if rescale else out

        return init_fun, apply_fun

    PoolingLayer.__doc__ = ("Pooling over the spatial axes of NHWC inputs (or the layout in "
                            "`spec`), with 'VALID', 'SAME' or explicit padding.")
    return PoolingLayer


def _normalize_by_window_size(window_shape, strides, padding):
    """Divides each pooled sum by the number of input elements in its window, so that windows
    hanging over the padding average only the real elements."""
    def rescale(outputs, inputs, spec):
        ndim = jnp.ndim(inputs)
        non_spatial = sorted(_non_spatial_axes(spec, ndim))
        spatial_shape = tuple(d for i, d in enumerate(jnp.shape(inputs)) if i not in non_spatial)
        counts = lax.reduce_window_sum(np.ones(spatial_shape, jnp.result_type(inputs)),
                                       window_shape, strides, padding)
        for i in non_spatial:
            counts = jnp.expand_dims(counts, i)
        return outputs / counts
    return rescale


MaxPool = _pooling_layer(lax.reduce_window_max)
SumPool = _pooling_layer(lax.reduce_window_sum)
AvgPool = _pooling_layer(lax.reduce_window_sum, _normalize_by_window_size)


# --- shape plumbing and combinators ----------------------------------------------------------

def _flatten_layer():
    def init_fun(rng, input_shape):
        return (input_shape[0], functools.reduce(operator.mul, input_shape[1:], 1)), ()

    def apply_fun(params, inputs, **kwargs):
        return jnp.reshape(inputs, (jnp.shape(inputs)[0], -1))

    return init_fun, apply_fun


def _identity_layer():
    def init_fun(rng, input_shape):
        return input_shape, ()

    def apply_fun(params, inputs, **kwargs):
        return inputs

    return init_fun, apply_fun


def FanOut(num):
    """Copies its input into a list of `num` outputs (feeds a `parallel`)."""
    def init_fun(rng, input_shape):
        return [input_shape] * num, ()

    def apply_fun(params, inputs, **kwargs):
        return [inputs] * num

    return init_fun, apply_fun


def _fan_in_sum_layer():
    def init_fun(rng, input_shape):
        return input_shape[0], ()

    def apply_fun(params, inputs, **kwargs):
        return sum(inputs)

    return init_fun, apply_fun


def FanInConcat(axis=-1):
    """Concatenates a list of inputs along `axis`."""
    def init_fun(rng, input_shape):
        ax = axis % len(input_shape[0])
        size = sum(shape[ax] for shape in input_shape)
        first = tuple(input_shape[0])
        return first[:ax] + (size,) + first[ax + 1:], ()

    def apply_fun(params, inputs, **kwargs):
        return jnp.concatenate(inputs, axis)

    return init_fun, apply_fun


Flatten = _flatten_layer()
Identity = _identity_layer()
FanInSum = _fan_in_sum_layer()


def serial(*layers):
    """Composes layers in sequence; params is a list with one entry per layer. An `rng` passed
    to apply_fun is split into one key per layer."""
    nlayers = len(layers)
    init_funs, apply_funs = zip(*layers) if layers else ((), ())

    def init_fun(rng, input_shape):
        params = []
        for init in init_funs:
            rng, layer_rng = random.split(rng)
            input_shape, param = init(layer_rng, input_shape)
            params.append(param)
        return input_shape, params

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.pop("rng", None)
        rngs = random.split(rng, nlayers) if rng is not None else (None,) * nlayers
        for fun, param, layer_rng in zip(apply_funs, params, rngs):
            inputs = fun(param, inputs, rng=layer_rng, **kwargs)
        return inputs

    return init_fun, apply_fun


def parallel(*layers):
    """Applies layer i to input i of a sequence of inputs (use with FanOut and a FanIn*);
    params is a tuple with one entry per layer."""
    nlayers = len(layers)
    init_funs, apply_funs = zip(*layers) if layers else ((), ())

    def init_fun(rng, input_shape):
        rngs = random.split(rng, nlayers)
        pairs = [init(r, shape) for init, r, shape in zip(init_funs, rngs, input_shape)]
        return tuple(zip(*pairs)) if pairs else ((), ())

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.pop("rng", None)
        rngs = random.split(rng, nlayers) if rng is not None else (None,) * nlayers
        return [f(p, x, rng=r, **kwargs) for f, p, x, r in zip(apply_funs, params, inputs, rngs)]

    return init_fun, apply_fun


def shape_dependent(make_layer):
    """A layer built from its input's shape: `make_layer(input_shape) -> (init_fun, apply_fun)`."""
    def init_fun(rng, input_shape):
        return make_layer(input_shape)[0](rng, input_shape)

    def apply_fun(params, inputs, **kwargs):
        return make_layer(jnp.shape(inputs))[1](params, inputs, **kwargs)

    return init_fun, apply_fun


# --- elementwise layers ----------------------------------------------------------------------

def elementwise(fun, **fun_kwargs):
    """A parameter-free layer applying `fun(inputs, **fun_kwargs)`."""
    def init_fun(rng, input_shape):
        return input_shape, ()

    def apply_fun(params, inputs, **kwargs):
        return fun(inputs, **fun_kwargs)

    return init_fun, apply_fun


Tanh = elementwise(jnp.tanh)
Relu = elementwise(relu)
Exp = elementwise(jnp.exp)
LogSoftmax = elementwise(log_softmax, axis=-1)
Softmax = elementwise(softmax, axis=-1)
Softplus = elementwise(softplus)
Sigmoid = elementwise(sigmoid)
Elu = elementwise(elu)
LeakyRelu = elementwise(leaky_relu)
Selu = elementwise(selu)
Gelu = elementwise(gelu)
