"""Image resampling, as jax.image: `resize` and `scale_and_translate`.

Each resampled dimension is a matrix product with a weight matrix (output samples x input
pixels). Output sample `i` sits at `(i + 0.5 - translation) / scale` in input coordinates
(pixel `j` covering `[j, j + 1]`); its weights are a kernel evaluated at the distances to the
input pixel centers, divided by their sum (only pixels inside the image count). With
`antialias`, a kernel widens by `1 / scale` when downsampling, so every input pixel
contributes. A sample outside the image is 0. AREA weighs each input pixel by its overlap
with the output pixel's interval; NEAREST (resize only) picks pixel
`floor((i + 0.5) * in / out)`. Weights depend smoothly on `scale` and `translation`, so
both are differentiable, and everything batches and compiles like any jnp code.
"""
from __future__ import annotations

import enum
from typing import Sequence

import numpy as np

from corejax import core, dtypes
from corejax import numpy as jnp

__all__ = ["ResizeMethod", "resize", "scale_and_translate"]


class ResizeMethod(enum.Enum):
    """The resampling kernels. Strings name them in `resize` / `scale_and_translate`:
    'nearest'; 'linear' ('bilinear', 'trilinear', 'triangle'); 'lanczos3'; 'lanczos5';
    'cubic' ('bicubic', 'tricubic': Keys' cubic, a = -0.5); 'area'. CUBIC_PYTORCH (enum
    only) is the cubic with a = -0.75 when antialias is off, else CUBIC."""
    NEAREST = 0
    LINEAR = 1
    LANCZOS3 = 2
    LANCZOS5 = 3
    CUBIC = 4
    CUBIC_PYTORCH = 5
    AREA = 6

    @staticmethod
    def from_string(s: str) -> "ResizeMethod":
        try:
            return _BY_NAME[s]
        except KeyError:
            raise ValueError(f'Unknown resize method "{s}": use one of '
                             f'{", ".join(sorted(_BY_NAME))}.') from None


_BY_NAME = {
    "nearest": ResizeMethod.NEAREST, "linear": ResizeMethod.LINEAR,
    "bilinear": ResizeMethod.LINEAR, "trilinear": ResizeMethod.LINEAR,
    "triangle": ResizeMethod.LINEAR, "lanczos3": ResizeMethod.LANCZOS3,
    "lanczos5": ResizeMethod.LANCZOS5, "cubic": ResizeMethod.CUBIC,
    "bicubic": ResizeMethod.CUBIC, "tricubic": ResizeMethod.CUBIC, "area": ResizeMethod.AREA,
}


def _method(method) -> ResizeMethod:
    if isinstance(method, ResizeMethod):
        return method
    if isinstance(method, str):
        return ResizeMethod.from_string(method)
    raise AssertionError(f"method must be a string or a ResizeMethod, got {method!r}.")


# --- kernels of a distance x >= 0 --------------------------------------------------------------

def _triangle(x):
    return jnp.maximum(0.0, 1.0 - x)


def _keys_cubic(a: float):
    def kernel(x):
        near = ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
        far = ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a
        return jnp.where(x <= 1.0, near, jnp.where(x < 2.0, far, 0.0))
    return kernel


def _lanczos(radius: float):
    def kernel(x):
        # sinc(x) * sinc(x / radius), 1 at 0; the safe argument keeps its derivative finite
        safe = jnp.where(x == 0.0, 1.0, x)
        pi_x = np.pi * safe
        value = radius * jnp.sin(pi_x) * jnp.sin(pi_x / radius) / (pi_x * pi_x)
        return jnp.where(x == 0.0, 1.0, jnp.where(x < radius, value, 0.0))
    return kernel


def _kernel(method: ResizeMethod, antialias: bool):
    if method is ResizeMethod.LINEAR:
        return _triangle
    if method is ResizeMethod.LANCZOS3:
        return _lanczos(3.0)
    if method is ResizeMethod.LANCZOS5:
        return _lanczos(5.0)
    if method is ResizeMethod.CUBIC_PYTORCH and not antialias:
        return _keys_cubic(-0.75)
    return _keys_cubic(-0.5)


def _weights(in_size: int, out_size: int, scale, translation, method: ResizeMethod,
             antialias: bool, dtype):
    """The (out_size, in_size) weights of one dimension; scale / translation: 0-d arrays."""
    scale = scale.astype(dtype)
    translation = translation.astype(dtype)
    centers = (jnp.arange(out_size, dtype=dtype) + 0.5 - translation) / scale
    pixels = jnp.arange(in_size, dtype=dtype)
    if method is ResizeMethod.AREA:
        lo = (jnp.arange(out_size, dtype=dtype) - translation) / scale
        hi = lo + 1.0 / scale
        w = jnp.maximum(0.0, jnp.minimum(hi[:, None], pixels[None, :] + 1.0)
                        - jnp.maximum(lo[:, None], pixels[None, :]))
    else:
        width = jnp.maximum(1.0 / scale, 1.0) if antialias else jnp.asarray(1.0, dtype)
        w = _kernel(method, antialias)(
            jnp.abs(pixels[None, :] + 0.5 - centers[:, None]) / width)
    total = jnp.sum(w, axis=1, keepdims=True)
    usable = jnp.abs(total) > 1000 * np.finfo(dtype).eps
    w = jnp.where(usable, w / jnp.where(usable, total, 1.0), 0.0)
    inside = (centers >= 0.0) & (centers <= in_size)
    return jnp.where(inside[:, None], w, 0.0)


def _contract(x, dim: int, w, precision):
    return jnp.moveaxis(jnp.tensordot(w, x, axes=(1, dim), precision=precision), 0, dim)


def _compute_dtype(dtype):
    """Weights and products in float32, or float64 for float64 images."""
    return np.dtype(np.float64) if np.dtype(dtype) == np.float64 else np.dtype(np.float32)


def _checked_shape(image, shape) -> tuple:
    shape = tuple(int(d) for d in shape)
    if len(shape) != image.ndim:
        raise ValueError(f"shape must have one size per dimension of the image: got {shape} "
                         f"for an image of shape {image.shape}.")
    return tuple(max(0, d) for d in shape)


def scale_and_translate(image, shape: Sequence[int], spatial_dims: Sequence[int], scale,
                        translation, method, antialias: bool = True, precision=None):
    """Resamples the `spatial_dims` of `image`: output pixel `i` of dimension `d` takes the
    input around `(i + 0.5 - translation[k]) / scale[k]` (k the position of d in
    spatial_dims); `scale` and `translation` are arrays of one value per spatial dimension,
    and differentiable. The output has `image`'s shape with each spatial dimension's size
    taken from `shape`. An integer image is resampled as float32. NEAREST is not
    supported here (use resize)."""
    image = jnp.asarray(image)
    shape = _checked_shape(image, shape)
    method = _method(method)
    if method is ResizeMethod.NEAREST:
        raise ValueError("scale_and_translate does not support nearest-neighbour "
                         "resampling: use resize(..., method='nearest').")
    for name, value in (("scale", scale), ("translation", translation)):
        if not core.valid_jaxtype(value) or np.ndim(value) != 1:
            raise TypeError(f"scale_and_translate: {name} must be a 1-D array with one value "
                            f"per spatial dimension, got {value!r}.")
        if np.shape(value)[0] != len(spatial_dims):
            raise ValueError(f"scale_and_translate: {name} has {np.shape(value)[0]} values "
                             f"for {len(spatial_dims)} spatial dimensions.")
    scale, translation = jnp.asarray(scale), jnp.asarray(translation)
    out_dtype = image.dtype if dtypes.is_inexact(image.dtype) else np.dtype(np.float32)
    compute = _compute_dtype(out_dtype)
    x = image.astype(compute)
    for k, dim in enumerate(spatial_dims):
        dim = dim % image.ndim
        w = _weights(image.shape[dim], shape[dim], scale[k], translation[k], method,
                     antialias, compute)
        x = _contract(x, dim, w, precision)
    return x.astype(out_dtype)


def resize(image, shape: Sequence[int], method, antialias: bool = True, precision=None):
    """`image` resampled to `shape` (one size per dimension; a dimension whose size does
    not change is left as it is). `method`: a ResizeMethod or its name. Except with
    'nearest', which keeps the dtype, integer images come back as float32."""
    image = jnp.asarray(image)
    shape = _checked_shape(image, shape)
    method = _method(method)
    dims = [d for d in range(image.ndim) if shape[d] != image.shape[d]]
    for d in dims:
        if image.shape[d] == 0:
            raise ZeroDivisionError(f"resize: dimension {d} of the image is empty, so it "
                                    f"cannot be resampled to size {shape[d]}.")
    if method is ResizeMethod.NEAREST:
        for d in dims:
            n_in, n_out = image.shape[d], shape[d]
            picks = (2 * np.arange(n_out) + 1) * n_in // (2 * n_out)
            image = jnp.take(image, jnp.asarray(picks, np.int32), axis=d)
        return image
    out_dtype = image.dtype if dtypes.is_inexact(image.dtype) else np.dtype(np.float32)
    if not dims:
        return image.astype(out_dtype) if image.dtype != out_dtype else image
    compute = _compute_dtype(out_dtype)
    x = image.astype(compute)
    for d in dims:
        scale = jnp.asarray(shape[d] / image.shape[d], compute)
        w = _weights(image.shape[d], shape[d], scale, jnp.zeros((), compute), method,
                     antialias, compute)
        x = _contract(x, d, w, precision)
    return x.astype(out_dtype)
