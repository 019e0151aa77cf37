"""corejax.numpy.fft: NumPy's discrete Fourier transforms (as jax.numpy.fft has them) over
lax.fft: axes are moved last, inputs cropped or zero-padded to the requested lengths, and the
`norm` modes ("backward", "ortho", "forward") scale the result."""
from __future__ import annotations

import math
import operator

import numpy as np

from corejax import dtypes, lax
from corejax.core import get_aval
from corejax.lax.fft import FftType
from corejax.numpy._core import asarray, canonicalize_axis, check_arraylike

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2",
           "fftn", "ifftn", "rfftn", "irfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]

_NORMS = (None, "backward", "ortho", "forward")
_SWAPPED = {None: "forward", "backward": "forward", "ortho": "ortho", "forward": "backward"}


def _check_norm(norm):
    if norm not in _NORMS:
        raise ValueError(f'Invalid norm value {norm}; should be "backward","ortho" or '
                         '"forward".')


def _resize(x, axis, n):
    """`x` cropped or zero-padded along `axis` to length n."""
    aval = get_aval(x)
    have = aval.shape[axis]
    if have > n:
        return lax.slice_in_dim(x, 0, n, axis=axis)
    if have < n:
        config = [(0, 0, 0)] * aval.ndim
        config[axis] = (0, n - have, 0)
        return lax.pad(x, np.zeros((), aval.dtype), config)
    return x


def _scale(out, norm, kind, lengths):
    """The `norm` factor: lax.fft's forward transforms are unscaled and its inverses carry 1/N."""
    n = math.prod(lengths)
    inverse = kind in (FftType.IFFT, FftType.IRFFT)
    if norm in (None, "backward"):
        return out
    if norm == "ortho":
        factor = math.sqrt(n) if inverse else 1 / math.sqrt(n)
    else:
        factor = n if inverse else 1 / n
    dt = get_aval(out).dtype
    return lax.mul(out, lax.full((), factor, dt))


def _fftn(name, kind, a, s, axes, norm):
    check_arraylike(f"jnp.fft.{name}", a)
    _check_norm(norm)
    a = asarray(a)
    dt = get_aval(a).dtype
    if kind == FftType.RFFT:
        if dt.kind == "c":
            raise ValueError(f"only real valued inputs supported for {name}")
        if dt.kind != "f":
            a = lax.convert_element_type(a, dtypes.default_float_dtype())
    elif dt.kind != "c":
        a = lax.convert_element_type(
            a, dtypes.complex_dtype(dt if dt.kind == "f" else dtypes.default_float_dtype()))
    ndim = get_aval(a).ndim
    if s is not None:
        s = tuple(operator.index(n) for n in s)
        if any(n < 1 for n in s):
            raise ValueError(f"jnp.fft.{name}: every transform length in s must be positive, "
                             f"got s={s}.")
    if axes is None:
        axes = tuple(range(ndim)) if s is None else tuple(range(ndim - len(s), ndim))
    axes = tuple(canonicalize_axis(ax, ndim) for ax in axes)
    if len(set(axes)) != len(axes):
        raise ValueError(f"jax.numpy.fft.{name} does not support repeated axes. Got axes "
                         f"{axes}.")
    if s is not None and len(s) != len(axes):
        raise ValueError(f"jnp.fft.{name}: s={s} and axes={axes} must have the same length.")
    if not axes:
        return a
    if len(axes) > 3:
        # lax.fft transforms at most 3 dimensions at once; the others are complex transforms
        # applied before (inverse) or after (forward) the last three axes' transform
        head, tail = axes[:-3], axes[-3:]
        s_head, s_tail = (None, None) if s is None else (s[:-3], s[-3:])
        if kind == FftType.IRFFT:
            a = _fftn(name, FftType.IFFT, a, s_head, head, norm)
            return _fftn(name, kind, a, s_tail, tail, norm)
        a = _fftn(name, kind, a, s_tail, tail, norm)
        return _fftn(name, FftType.FFT if kind == FftType.RFFT else kind, a, s_head, head, norm)
    rest = [d for d in range(ndim) if d not in axes]
    perm = rest + list(axes)
    x = lax.transpose(a, perm)
    k = len(axes)
    shape = get_aval(x).shape
    lengths = list(shape[ndim - k:]) if s is None else list(s)
    if kind == FftType.IRFFT:
        if s is None:
            lengths[-1] = 2 * (shape[-1] - 1)
            if lengths[-1] < 1:
                raise ValueError(f"jnp.fft.{name}: the last axis has length {shape[-1]}; it "
                                 "needs at least 2 entries, or pass the output length n / s.")
        for i in range(k - 1):
            x = _resize(x, ndim - k + i, lengths[i])
        x = _resize(x, ndim - 1, lengths[-1] // 2 + 1)
    else:
        for i in range(k):
            x = _resize(x, ndim - k + i, lengths[i])
    out = _scale(lax.fft(x, kind, tuple(lengths)), norm, kind, lengths)
    return lax.transpose(out, np.argsort(perm).tolist())


def fftn(a, s=None, axes=None, norm=None):
    """The n-dimensional discrete Fourier transform over `axes` (default: all, or the last
    len(s)), each axis cropped or zero-padded to its length in `s`."""
    return _fftn("fftn", FftType.FFT, a, s, axes, norm)


def ifftn(a, s=None, axes=None, norm=None):
    """The n-dimensional inverse discrete Fourier transform."""
    return _fftn("ifftn", FftType.IFFT, a, s, axes, norm)


def rfftn(a, s=None, axes=None, norm=None):
    """The n-dimensional transform of a real array; the last axis keeps s[-1] // 2 + 1
    frequencies."""
    return _fftn("rfftn", FftType.RFFT, a, s, axes, norm)


def irfftn(a, s=None, axes=None, norm=None):
    """The inverse of rfftn: a real array (the last axis of length s[-1], by default
    2 * (a.shape[axes[-1]] - 1))."""
    return _fftn("irfftn", FftType.IRFFT, a, s, axes, norm)


def _two_axes(fn, name):
    def two(a, s=None, axes=(-2, -1), norm=None):
        if len(axes) != 2:
            raise ValueError(f"jnp.fft.{name} only supports 2 axes. Got axes = {axes}.")
        return fn(a, s, axes, norm)
    two.__name__ = name
    two.__doc__ = f"{fn.__name__} over two axes (default: the last two)."
    return two


fft2 = _two_axes(fftn, "fft2")
ifft2 = _two_axes(ifftn, "ifft2")
rfft2 = _two_axes(rfftn, "rfft2")
irfft2 = _two_axes(irfftn, "irfft2")


def _one_axis(kind, name):
    def one(a, n=None, axis=-1, norm=None):
        return _fftn(name, kind, a, None if n is None else (n,), (axis,), norm)
    one.__name__ = name
    one.__doc__ = f"The one-dimensional {name} along `axis`, of length n (crop or zero-pad)."
    return one


fft = _one_axis(FftType.FFT, "fft")
ifft = _one_axis(FftType.IFFT, "ifft")
rfft = _one_axis(FftType.RFFT, "rfft")
irfft = _one_axis(FftType.IRFFT, "irfft")


def hfft(a, n=None, axis=-1, norm=None):
    """The transform of a Hermitian-symmetric signal given by its first half: a real array of
    length n (default 2 * (a.shape[axis] - 1))."""
    _check_norm(norm)
    check_arraylike("jnp.fft.hfft", a)
    a = asarray(a)
    if n is None:
        n = 2 * (get_aval(a).shape[canonicalize_axis(axis, get_aval(a).ndim)] - 1)
    conj = lax.conj(a) if get_aval(a).dtype.kind == "c" else a
    return _fftn("hfft", FftType.IRFFT, conj, (n,), (axis,), _SWAPPED[norm])


def ihfft(a, n=None, axis=-1, norm=None):
    """The inverse of hfft: the first n // 2 + 1 coefficients of a real signal's inverse
    transform."""
    _check_norm(norm)
    out = _fftn("ihfft", FftType.RFFT, a, None if n is None else (n,), (axis,), _SWAPPED[norm])
    return lax.conj(out)


def _frequency_dtype(dtype):
    if dtype is None:
        return dtypes.default_float_dtype()
    dt = dtypes.canonicalize_dtype(dtype)
    if dt.kind != "f":
        raise ValueError(f"jnp.fft frequencies are real numbers: dtype must be a floating "
                         f"dtype, got {np.dtype(dtype).name}.")
    return dt


def _frequencies(name, n, d, dtype, ks):
    if not isinstance(n, (int, np.integer)):
        raise ValueError(f"The n argument of jax.numpy.fft.{name} only takes an int. Got "
                         f"n = {n!r}.")
    dt = _frequency_dtype(dtype)
    k = asarray(np.asarray(ks, dt))
    from corejax.numpy._ufuncs import true_divide, multiply
    return lax.convert_element_type(true_divide(k, multiply(d, n)), dt)


def fftfreq(n, d=1.0, *, dtype=None, device=None):
    """The sample frequencies of an n-point FFT with sample spacing d: [0, 1, ..., -1] / (n d).
    """
    n_int = int(n) if isinstance(n, (int, np.integer)) else n
    ks = np.concatenate([np.arange(0, (n_int - 1) // 2 + 1), np.arange(-(n_int // 2), 0)]) \
        if isinstance(n_int, int) else None
    return _frequencies("fftfreq", n, d, dtype, ks)


def rfftfreq(n, d=1.0, *, dtype=None, device=None):
    """The non-negative sample frequencies of an n-point rfft: [0, 1, ..., n // 2] / (n d)."""
    ks = np.arange(0, int(n) // 2 + 1) if isinstance(n, (int, np.integer)) else None
    return _frequencies("rfftfreq", n, d, dtype, ks)


def _shift(name, x, axes, sign):
    from corejax.numpy._shape import roll
    check_arraylike(f"jnp.fft.{name}", x)
    x = asarray(x)
    shape = get_aval(x).shape
    if axes is None:
        axes = tuple(range(len(shape)))
    elif isinstance(axes, (int, np.integer)):
        axes = (int(axes),)
    axes = tuple(canonicalize_axis(ax, len(shape)) for ax in axes)
    shifts = tuple(sign * (shape[ax] // 2) for ax in axes)
    return roll(x, shifts, axes) if axes else x


def fftshift(x, axes=None):
    """Moves the zero frequency to the middle: rolls each axis by half its length."""
    return _shift("fftshift", x, axes, 1)


def ifftshift(x, axes=None):
    """The inverse of fftshift."""
    return _shift("ifftshift", x, axes, -1)
