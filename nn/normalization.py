"""Normalization layers: BatchNorm, LayerNorm, GroupNorm and RMSNorm.

Statistics are computed in at least float32 with the fast variance formula
E[x^2] - E[x]^2 (clipped at 0), as Flax does by default. With `axis_name` they are averaged
over that named axis of a vmap/pmap (lax.pmean), so every replica normalizes with the
statistics of the whole batch.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

import corejax.numpy as jnp
from corejax import lax, random
from corejax.nn import initializers
from nn.dtypes import promote_dtype
from nn.module import Module, compact, merge_param

__all__ = ["BatchNorm", "LayerNorm", "GroupNorm", "RMSNorm", "InstanceNorm", "WeightNorm",
           "SpectralNorm"]


def _canonical_axes(ndim: int, axes, module: Module) -> tuple:
    axes = (axes,) if isinstance(axes, int) else tuple(axes)
    for a in axes:
        if not -ndim <= a < ndim:
            raise ValueError(f'{type(module).__name__} "{module.path}": axis {a} is out of range '
                             f"for an input of rank {ndim}.")
    return tuple(sorted({a % ndim for a in axes}))


def _stats(x, axes, dtype, use_fast_variance: bool = True, axis_name=None,
           axis_index_groups=None):
    """(mean, var) over `axes` of x, and over the named axis `axis_name` too when given."""
    def across(v):
        if axis_name is None:
            return v
        return lax.pmean(v, axis_name, axis_index_groups=axis_index_groups)

    dt = jnp.promote_types(dtype or x.dtype, jnp.float32)
    x = jnp.asarray(x, dt)
    if use_fast_variance:
        mean, mean_sq = across((jnp.mean(x, axes), jnp.mean(jnp.square(x), axes)))
        var = jnp.maximum(0.0, mean_sq - jnp.square(mean))
    else:
        mean = across(jnp.mean(x, axes))
        var = across(jnp.mean(jnp.square(x - jnp.expand_dims(mean, axes)), axes))
    return mean, var


def _normalize(module, x, mean, var, reduction_axes, feature_axes, dtype, param_dtype,
               epsilon, use_bias, use_scale, bias_init, scale_init):
    """(x - mean) / sqrt(var + eps) * scale + bias; stats lack `reduction_axes`, parameters
    have the shape of x's `feature_axes`."""
    feature_shape = [1] * x.ndim
    param_shape = []
    for ax in feature_axes:
        feature_shape[ax] = x.shape[ax]
        param_shape.append(x.shape[ax])
    param_shape = tuple(param_shape)
    mean = jnp.expand_dims(mean, reduction_axes)
    var = jnp.expand_dims(var, reduction_axes)
    y = x - mean
    mul = lax.rsqrt(var + epsilon)
    args = [x]
    if use_scale:
        scale = jnp.reshape(module.param("scale", scale_init, param_shape, param_dtype),
                            feature_shape)
        mul = mul * scale
        args.append(scale)
    y = y * mul
    if use_bias:
        bias = jnp.reshape(module.param("bias", bias_init, param_shape, param_dtype),
                           feature_shape)
        y = y + bias
        args.append(bias)
    (y,) = promote_dtype(y, dtype=dtype or jnp.result_type(*args))
    return y


class BatchNorm(Module):
    """Normalizes with batch statistics (training) or running averages (evaluation); the
    averages live in the 'batch_stats' collection as 'mean' and 'var'."""
    use_running_average: Any = None
    axis: int = -1
    momentum: float = 0.99
    epsilon: float = 1e-5
    dtype: Any = None
    param_dtype: Any = jnp.float32
    use_bias: bool = True
    use_scale: bool = True
    bias_init: Callable = initializers.zeros
    scale_init: Callable = initializers.ones
    axis_name: Any = None
    axis_index_groups: Any = None
    use_fast_variance: bool = True

    @compact
    def __call__(self, x, use_running_average=None):
        use_running_average = merge_param("use_running_average", self.use_running_average,
                                          use_running_average, f'BatchNorm "{self.path}"')
        x = jnp.asarray(x)
        feature_axes = _canonical_axes(x.ndim, self.axis, self)
        reduction_axes = tuple(i for i in range(x.ndim) if i not in feature_axes)
        feature_shape = tuple(x.shape[ax] for ax in feature_axes)
        ra_mean = self.variable("batch_stats", "mean", lambda s: jnp.zeros(s, jnp.float32),
                                feature_shape)
        ra_var = self.variable("batch_stats", "var", lambda s: jnp.ones(s, jnp.float32),
                               feature_shape)
        if use_running_average:
            mean, var = ra_mean.value, ra_var.value
        else:
            mean, var = _stats(x, reduction_axes, self.dtype, self.use_fast_variance,
                               self.axis_name, self.axis_index_groups)
            if not self.is_initializing():
                m = self.momentum
                ra_mean.value = m * ra_mean.value + (1 - m) * mean
                ra_var.value = m * ra_var.value + (1 - m) * var
        return _normalize(self, x, mean, var, reduction_axes, feature_axes, self.dtype,
                          self.param_dtype, self.epsilon, self.use_bias, self.use_scale,
                          self.bias_init, self.scale_init)


class LayerNorm(Module):
    """Normalizes each example over `reduction_axes` (the features by default)."""
    epsilon: float = 1e-6
    dtype: Any = None
    param_dtype: Any = jnp.float32
    use_bias: bool = True
    use_scale: bool = True
    bias_init: Callable = initializers.zeros
    scale_init: Callable = initializers.ones
    reduction_axes: Any = -1
    feature_axes: Any = -1
    axis_name: Any = None
    axis_index_groups: Any = None
    use_fast_variance: bool = True

    @compact
    def __call__(self, x):
        x = jnp.asarray(x)
        if x.ndim == 0:
            raise ValueError(f'LayerNorm "{self.path}": inputs need at least one dimension.')
        reduction_axes = _canonical_axes(x.ndim, self.reduction_axes, self)
        feature_axes = _canonical_axes(x.ndim, self.feature_axes, self)
        mean, var = _stats(x, reduction_axes, self.dtype, self.use_fast_variance,
                           self.axis_name, self.axis_index_groups)
        return _normalize(self, x, mean, var, reduction_axes, feature_axes, self.dtype,
                          self.param_dtype, self.epsilon, self.use_bias, self.use_scale,
                          self.bias_init, self.scale_init)


class RMSNorm(Module):
    """x / sqrt(mean(x^2) + eps) * scale over `reduction_axes`."""
    epsilon: float = 1e-6
    dtype: Any = None
    param_dtype: Any = jnp.float32
    use_scale: bool = True
    scale_init: Callable = initializers.ones
    reduction_axes: Any = -1
    feature_axes: Any = -1
    axis_name: Any = None
    axis_index_groups: Any = None

    @compact
    def __call__(self, x):
        x = jnp.asarray(x)
        reduction_axes = _canonical_axes(x.ndim, self.reduction_axes, self)
        feature_axes = _canonical_axes(x.ndim, self.feature_axes, self)
        dt = jnp.promote_types(self.dtype or x.dtype, jnp.float32)
        mean_sq = jnp.mean(jnp.square(jnp.asarray(x, dt)), reduction_axes)
        if self.axis_name is not None:
            mean_sq = lax.pmean(mean_sq, self.axis_name,
                                axis_index_groups=self.axis_index_groups)
        return _normalize(self, x, jnp.zeros_like(mean_sq), mean_sq, reduction_axes,
                          feature_axes, self.dtype, self.param_dtype, self.epsilon, False,
                          self.use_scale, None, self.scale_init)


class GroupNorm(Module):
    """Normalizes each example over its spatial axes and groups of channels (the last axis);
    the first axis is the batch."""
    num_groups: Any = 32
    group_size: Any = None
    epsilon: float = 1e-6
    dtype: Any = None
    param_dtype: Any = jnp.float32
    use_bias: bool = True
    use_scale: bool = True
    bias_init: Callable = initializers.zeros
    scale_init: Callable = initializers.ones
    use_fast_variance: bool = True

    @compact
    def __call__(self, x):
        x = jnp.asarray(x)
        if x.ndim < 2:
            raise ValueError(f'GroupNorm "{self.path}": inputs need a batch axis and a feature '
                             f"axis; got input of shape {tuple(x.shape)}.")
        channels = x.shape[-1]
        if (self.num_groups is None) == (self.group_size is None):
            raise ValueError(f'GroupNorm "{self.path}": set exactly one of num_groups and '
                             f"group_size (got {self.num_groups} and {self.group_size}).")
        num_groups = self.num_groups
        if num_groups is None:
            if channels % self.group_size:
                raise ValueError(f'GroupNorm "{self.path}": {channels} channels are not a '
                                 f"multiple of group_size {self.group_size}.")
            num_groups = channels // self.group_size
        if channels % num_groups:
            raise ValueError(f'GroupNorm "{self.path}": {channels} channels cannot be split '
                             f"into {num_groups} groups.")
        size = channels // num_groups
        grouped = jnp.reshape(x, x.shape[:-1] + (num_groups, size))
        spatial = tuple(range(1, x.ndim - 1))
        mean, var = _stats(grouped, spatial + (x.ndim,), self.dtype, self.use_fast_variance)
        # (N, groups) -> (N, channels): every channel of a group shares its statistics.
        per_channel = lambda s: jnp.reshape(jnp.broadcast_to(s[..., None], s.shape + (size,)),
                                            s.shape[:-1] + (channels,))
        return _normalize(self, x, per_channel(mean), per_channel(var), spatial, (x.ndim - 1,),
                          self.dtype, self.param_dtype, self.epsilon, self.use_bias,
                          self.use_scale, self.bias_init, self.scale_init)


class InstanceNorm(Module):
    """Normalizes each example and feature over the remaining axes (the spatial ones); the
    first axis is the batch."""
    epsilon: float = 1e-6
    dtype: Any = None
    param_dtype: Any = jnp.float32
    use_bias: bool = True
    use_scale: bool = True
    bias_init: Callable = initializers.zeros
    scale_init: Callable = initializers.ones
    feature_axes: Any = -1
    axis_name: Any = None
    axis_index_groups: Any = None
    use_fast_variance: bool = True
    force_float32_reductions: bool = True

    @compact
    def __call__(self, x, *, mask=None):
        if mask is not None:
            raise NotImplementedError(f'InstanceNorm "{self.path}": mask is not supported.')
        x = jnp.asarray(x)
        feature_axes = _canonical_axes(x.ndim, self.feature_axes, self)
        reduction_axes = tuple(i for i in range(1, x.ndim) if i not in feature_axes)
        mean, var = _stats(x, reduction_axes, self.dtype, self.use_fast_variance,
                           self.axis_name, self.axis_index_groups)
        return _normalize(self, x, mean, var, reduction_axes, feature_axes, self.dtype,
                          self.param_dtype, self.epsilon, self.use_bias, self.use_scale,
                          self.bias_init, self.scale_init)


def _l2_normalize(x, axis=None, eps=1e-12):
    return x * lax.rsqrt(jnp.sum(x * x, axis=axis, keepdims=True) + eps)


def _key_path_names(path):
    return [getattr(k, "key", getattr(k, "name", getattr(k, "idx", k))) for k in path]


def _map_leaves_with_path(fn, tree, prefix=()):
    if isinstance(tree, dict):
        return {k: _map_leaves_with_path(fn, v, prefix + (k,)) for k, v in tree.items()}
    return fn(prefix, tree)


class WeightNorm(Module):
    """Runs `layer_instance` with its variables (those whose path contains an entry of
    `variable_filter`) divided by their l2-norm over the non-feature axes and multiplied by a
    learned scale (a parameter named '<layer>/<path>/scale')."""
    layer_instance: Module
    epsilon: float = 1e-12
    dtype: Any = None
    param_dtype: Any = jnp.float32
    use_scale: bool = True
    scale_init: Callable = initializers.ones
    feature_axes: Any = -1
    variable_filter: Any = dataclasses.field(default_factory=lambda: {"kernel"})

    @compact
    def __call__(self, *args, **kwargs):
        from nn.transforms import map_variables
        return map_variables(
            lambda layer: layer(*args, **kwargs),
            trans_in_fn=lambda vs: _map_leaves_with_path(self._l2_normalize, vs),
            init=self.is_initializing())(self.layer_instance)

    def _l2_normalize(self, path, value):
        value = jnp.asarray(value)
        str_path = self.layer_instance.name + "/" + "/".join(str(p) for p in path[1:])
        if self.variable_filter and not any(v in str_path for v in self.variable_filter):
            return value
        if self.feature_axes is None:
            feature_axes, reduction_axes = (), tuple(range(value.ndim))
        else:
            feature_axes = _canonical_axes(value.ndim, self.feature_axes, self)
            reduction_axes = tuple(i for i in range(value.ndim) if i not in feature_axes)
        feature_shape = [1] * value.ndim
        reduced = []
        for ax in feature_axes:
            feature_shape[ax] = value.shape[ax]
            reduced.append(value.shape[ax])
        value_bar = _l2_normalize(value, axis=reduction_axes, eps=self.epsilon)
        args = [value]
        if self.use_scale:
            scale = jnp.reshape(self.param(str_path + "/scale", self.scale_init, tuple(reduced),
                                           self.param_dtype), feature_shape)
            value_bar = value_bar * scale
            args.append(scale)
        return jnp.asarray(value_bar, self.dtype or jnp.result_type(*args))


class SpectralNorm(Module):
    """Runs `layer_instance` with its matrices divided by their largest singular value,
    estimated by `n_steps` of power iteration from a vector kept (with the estimate) in
    `collection_name` as '<layer>/<path>/u' and '.../sigma' (updated when update_stats)."""
    layer_instance: Module
    n_steps: int = 1
    epsilon: float = 1e-12
    dtype: Any = None
    param_dtype: Any = jnp.float32
    error_on_non_matrix: bool = False
    collection_name: str = "batch_stats"

    @compact
    def __call__(self, *args, update_stats, **kwargs):
        from nn.transforms import map_variables
        return map_variables(
            lambda layer: layer(*args, **kwargs),
            trans_in_fn=lambda vs: _map_leaves_with_path(
                lambda p, v: self._spectral_normalize(p, v, update_stats), vs),
            init=self.is_initializing(), mutable=True)(self.layer_instance)

    def _spectral_normalize(self, path, vs, update_stats):
        value = jnp.asarray(vs)
        shape = value.shape
        if value.ndim <= 1 or self.n_steps < 1:
            return value
        if value.ndim > 2:
            if self.error_on_non_matrix:
                raise ValueError(f"Input is {value.ndim}D but error_on_non_matrix is True")
            value = jnp.reshape(value, (-1, value.shape[-1]))
        base = self.layer_instance.name + "/" + "/".join(str(p) for p in path[1:])
        u_name, sigma_name = base + "/u", base + "/sigma"
        u_var = self.variable(self.collection_name, u_name, random.normal,
                              self.make_rng("params") if not self.has_variable(
                                  self.collection_name, u_name) else None,
                              (1, value.shape[-1]), self.param_dtype)
        sigma_var = self.variable(self.collection_name, sigma_name, jnp.ones, (),
                                  self.param_dtype)
        u0 = u_var.value
        for _ in range(self.n_steps):
            v0 = _l2_normalize(jnp.matmul(u0, value.T), eps=self.epsilon)
            u0 = _l2_normalize(jnp.matmul(v0, value), eps=self.epsilon)
        u0 = lax.stop_gradient(u0)
        v0 = lax.stop_gradient(v0)
        sigma = jnp.matmul(jnp.matmul(v0, value), u0.T)[0, 0]
        value = value / jnp.where(sigma != 0, sigma, 1)
        if update_stats:
            u_var.value = u0
            sigma_var.value = sigma
        dtype = self.dtype or jnp.result_type(vs, u0, v0, sigma)
        return jnp.asarray(jnp.reshape(value, shape), dtype)
