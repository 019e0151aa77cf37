"""corejax.scipy.signal: convolutions and correlations of n-dimensional arrays, as
jax.scipy.signal has them: by FFT (fftconvolve, method='fft') or directly (lax's convolution),
and detrend; SciPy's spectral estimators (stft, istft, csd, welch) live in _spectral.py."""
from __future__ import annotations

import numpy as np

from corejax import dtypes, lax
from corejax.core import get_aval
from corejax.numpy import fft as _fft
from corejax.numpy._core import (asarray, canonicalize_axis, check_arraylike,
                                 promote_dtypes_inexact)

__all__ = ["fftconvolve", "convolve", "correlate", "convolve2d", "correlate2d", "detrend",
           "stft", "istft", "csd", "welch"]

_MODES = ("same", "full", "valid")


def _check_mode(mode):
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {list(_MODES)}")


def _operands(name, in1, in2):
    check_arraylike(name, in1, in2)
    in1, in2 = promote_dtypes_inexact(asarray(in1), asarray(in2))
    if get_aval(in1).ndim != get_aval(in2).ndim:
        raise ValueError("in1 and in2 should have the same dimensionality")
    return in1, in2


def _valid_order(in1, in2, axes):
    """For 'valid' mode one operand must be at least as large as the other along every
    convolved axis; the larger one goes first (convolution commutes)."""
    s1, s2 = get_aval(in1).shape, get_aval(in2).shape
    if all(s1[a] >= s2[a] for a in axes):
        return in1, in2
    if all(s2[a] >= s1[a] for a in axes):
        return in2, in1
    raise ValueError("For 'valid' mode, One input must be at least as large as the other in "
                     "every dimension.")


def _crop(full, shape1, shape2, axes, mode):
    """The centered part of the full convolution that `mode` keeps."""
    if mode == "full":
        return full
    out = full
    for a in axes:
        n1, n2 = shape1[a], shape2[a]
        n = n1 if mode == "same" else abs(n1 - n2) + 1
        start = (n1 + n2 - 1 - n) // 2
        out = lax.slice_in_dim(out, start, start + n, axis=a)
    return out


def fftconvolve(in1, in2, mode="full", axes=None):
    """The convolution of in1 and in2 over `axes` (default all) by FFT; the other axes must
    have equal lengths and are mapped over."""
    in1, in2 = _operands("fftconvolve", in1, in2)
    _check_mode(mode)
    ndim = get_aval(in1).ndim
    s1, s2 = get_aval(in1).shape, get_aval(in2).shape
    axes = tuple(range(ndim)) if axes is None else tuple(
        canonicalize_axis(a, ndim) for a in ((axes,) if isinstance(axes, int) else axes))
    if any(s1[i] != s2[i] for i in range(ndim) if i not in axes):
        raise ValueError(f"mapped axes must have same shape; got in1.shape={s1} "
                         f"in2.shape={s2} axes={axes}")
    if ndim == 0:
        return lax.mul(in1, in2)
    if mode == "valid":
        in1, in2 = _valid_order(in1, in2, axes)
        s1, s2 = get_aval(in1).shape, get_aval(in2).shape
    if any(s1[a] == 0 or s2[a] == 0 for a in axes):
        shape = list(s1)
        for a in axes:
            shape[a] = s1[a] if mode == "same" else max(s1[a] + s2[a] - 1, 0) \
                if mode == "full" else abs(s1[a] - s2[a]) + 1
        return lax.full(tuple(shape), 0, get_aval(in1).dtype)
    lengths = tuple(s1[a] + s2[a] - 1 for a in axes)
    if get_aval(in1).dtype.kind == "c":
        full = _fft.ifftn(lax.mul(_fft.fftn(in1, lengths, axes), _fft.fftn(in2, lengths, axes)),
                          lengths, axes)
    else:
        full = _fft.irfftn(lax.mul(_fft.rfftn(in1, lengths, axes),
                                   _fft.rfftn(in2, lengths, axes)), lengths, axes)
    return _crop(full, s1, s2, axes, mode)


def _direct_real(a, b):
    """The full convolution of two real arrays of one rank by lax's (cross-correlating)
    convolution with b flipped."""
    shape_a, shape_b = get_aval(a).shape, get_aval(b).shape
    nd = len(shape_a)
    lhs = lax.reshape(a, (1, 1) + shape_a)
    rhs = lax.reshape(lax.rev(b, tuple(range(nd))), (1, 1) + shape_b)
    pads = [(k - 1, k - 1) for k in shape_b]
    out = lax.conv_general_dilated(lhs, rhs, (1,) * nd, pads)
    return lax.reshape(out, get_aval(out).shape[2:])


def _direct_full(a, b):
    if get_aval(a).dtype.kind != "c":
        return _direct_real(a, b)
    ar, ai, br, bi = lax.real(a), lax.imag(a), lax.real(b), lax.imag(b)
    return lax.complex(lax.sub(_direct_real(ar, br), _direct_real(ai, bi)),
                       lax.add(_direct_real(ar, bi), _direct_real(ai, br)))


def convolve(in1, in2, mode="full", method="auto", precision=None):
    """The n-dimensional convolution of in1 and in2: directly ('auto' / 'direct', lax's
    convolution) or by FFT ('fft')."""
    if method not in ("auto", "fft", "direct"):
        raise ValueError(f"Got method={method!r}; expected 'auto', 'fft', or 'direct'.")
    if method == "fft":
        return fftconvolve(in1, in2, mode)
    in1, in2 = _operands("convolve", in1, in2)
    _check_mode(mode)
    nd = get_aval(in1).ndim
    if nd == 0:
        return lax.mul(in1, in2)
    axes = tuple(range(nd))
    if mode == "valid":
        in1, in2 = _valid_order(in1, in2, axes)
    s1, s2 = get_aval(in1).shape, get_aval(in2).shape
    return _crop(_direct_full(in1, in2), s1, s2, axes, mode)


def correlate(in1, in2, mode="full", method="auto", precision=None):
    """The n-dimensional cross-correlation: convolve(in1, conj(in2) reversed)."""
    check_arraylike("correlate", in1, in2)
    in1, in2 = promote_dtypes_inexact(asarray(in1), asarray(in2))
    flipped = lax.rev(in2, tuple(range(get_aval(in2).ndim)))
    if get_aval(flipped).dtype.kind == "c":
        flipped = lax.conj(flipped)
    return convolve(in1, flipped, mode, method, precision)


def _check_2d(name, in1, in2, boundary, fillvalue):
    if boundary != "fill" or fillvalue != 0:
        raise NotImplementedError(f"{name}() only supports boundary='fill', fillvalue=0")
    if np.ndim(in1) != 2 or np.ndim(in2) != 2:
        raise ValueError(f"{name}() only supports 2-dimensional inputs.")
    s1, s2 = np.shape(in1), np.shape(in2)
    if not (all(a <= b for a, b in zip(s1, s2)) or all(a >= b for a, b in zip(s1, s2))):
        raise ValueError("One input must be smaller than the other in every dimension.")


def convolve2d(in1, in2, mode="full", boundary="fill", fillvalue=0, precision=None):
    """The 2-D convolution (zero fill at the boundary)."""
    check_arraylike("convolve2d", in1, in2)
    _check_2d("convolve2d", in1, in2, boundary, fillvalue)
    return convolve(in1, in2, mode, "direct", precision)


def correlate2d(in1, in2, mode="full", boundary="fill", fillvalue=0, precision=None):
    """The 2-D cross-correlation (zero fill at the boundary)."""
    check_arraylike("correlate2d", in1, in2)
    _check_2d("correlate2d", in1, in2, boundary, fillvalue)
    # as JAX computes it: in1 reversed, convolved with conj(in2), the result reversed (so an
    # even-sized in2's 'same' window sits one step later than correlate's)
    in1, in2 = promote_dtypes_inexact(asarray(in1), asarray(in2))
    if get_aval(in2).dtype.kind == "c":
        in2 = lax.conj(in2)
    out = convolve(lax.rev(in1, (0, 1)), in2, mode, "direct", precision)
    return lax.rev(out, (0, 1))


def detrend(data, axis=-1, type="linear", bp=0, overwrite_data=None):
    """`data` minus its least-squares line along `axis` (type 'linear', piecewise between the
    breakpoints `bp`) or minus its mean (type 'constant')."""
    check_arraylike("detrend", data)
    if type not in ("linear", "l", "constant", "c"):
        raise ValueError("Trend type must be 'linear' or 'constant'.")
    (data,) = promote_dtypes_inexact(asarray(data))
    from corejax.numpy._reductions import mean
    from corejax.numpy._shape import moveaxis
    ndim = get_aval(data).ndim
    axis = canonicalize_axis(axis, ndim)
    if type in ("constant", "c"):
        from corejax.numpy._ufuncs import subtract
        return subtract(data, mean(data, axis=axis, keepdims=True))
    x = moveaxis(data, axis, -1)
    n = get_aval(x).shape[-1]
    breaks = np.unique(np.concatenate([[0], np.atleast_1d(np.asarray(bp, np.int64)), [n]]))
    if np.any(breaks > n) or np.any(breaks < 0):
        raise ValueError("Breakpoints must be non-negative and less than length of data along "
                         "given axis.")
    pieces = []
    dt = get_aval(x).dtype
    for lo, hi in zip(breaks[:-1], breaks[1:]):
        seg = lax.slice_in_dim(x, int(lo), int(hi), axis=ndim - 1)
        m = int(hi - lo)
        t = np.arange(1, m + 1, dtype=np.float64) / m  # scipy's regressor: (1..m) / m
        design = np.stack([t, np.ones(m)], axis=1)
        # the least-squares fit's hat matrix is a constant: seg - seg @ H^T removes the line
        residual_maker = (np.eye(m) - design @ np.linalg.pinv(design)).astype(
            dtypes.real_dtype(dt))
        nd = get_aval(seg).ndim
        pieces.append(lax.dot_general(seg, asarray(residual_maker.T).astype(dt),
                                      (((nd - 1,), (0,)), ((), ()))))
    out = pieces[0] if len(pieces) == 1 else lax.concatenate(pieces, ndim - 1)
    return moveaxis(out, -1, axis)


from corejax.scipy._spectral import csd, istft, stft, welch  # noqa: E402
