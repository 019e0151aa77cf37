"""SciPy's spectral estimators as jax.scipy.signal has them: the short-time Fourier transform and
its inverse (stft, istft) and Welch's averaged modified periodograms (csd, welch).

A signal is cut into overlapping segments by one gather, each segment is detrended, windowed and
Fourier transformed along the last axis; istft adds the windowed inverse transforms back with one
scatter-add. Everything is composed from corejax.numpy, so jit, vmap and autodiff come for free.
Named windows (a string or a tuple, as scipy.signal.get_window takes them) are constants."""
from __future__ import annotations

import warnings

import numpy as np

from corejax import dtypes
import corejax.numpy as jnp
from corejax.numpy._core import (asarray, canonicalize_axis, check_arraylike,
                                 promote_dtypes_inexact)

__all__ = ["stft", "istft", "csd", "welch"]


# ---------------------------------------------------------------- shared pieces

def _named_window(window, nperseg):
    from scipy.signal import get_window  # a host-side constant, as SciPy defines it
    return get_window(window, nperseg) if nperseg else np.zeros(0)  # empty signals


def _is_named(window):
    return isinstance(window, (str, tuple))


def _segment_window(window, nperseg, input_length):
    """(window, nperseg) for a signal of `input_length` samples: a named window is computed
    for nperseg samples (256 by default, at most the signal's length); an array window sets
    nperseg itself."""
    if _is_named(window):
        if nperseg is None:
            nperseg = 256
        if nperseg > input_length:
            warnings.warn(f"nperseg={nperseg} is greater than input_length={input_length}, "
                          f"using nperseg={input_length}", stacklevel=3)
            nperseg = input_length
        return _named_window(window, nperseg), nperseg
    win = asarray(window)
    if win.ndim != 1:
        raise ValueError("window must be 1-D")
    if input_length < win.shape[0]:
        raise ValueError("window is longer than input signal")
    if nperseg is None:
        nperseg = win.shape[0]
    elif nperseg != win.shape[0]:
        raise ValueError("value specified for nperseg is different from length of window")
    return win, nperseg


def _frame_indices(n_frames, nperseg, nstep):
    return (nstep * np.arange(n_frames)[:, None] + np.arange(nperseg)[None, :]).astype(np.int32)


def _frames(x, nperseg, nstep):
    """The segments of x's last axis: shape (..., n_frames, nperseg), by one gather."""
    n_frames = (x.shape[-1] - nperseg) // nstep + 1
    return x[..., _frame_indices(n_frames, nperseg, nstep)]


def _overlap_add(frames, nstep):
    """The inverse of _frames' layout: frames (..., n_frames, nperseg) summed into a signal of
    nperseg + (n_frames - 1) * nstep samples where they overlap (one scatter-add)."""
    n_frames, nperseg = frames.shape[-2:]
    length = nperseg + (n_frames - 1) * nstep
    out = jnp.zeros(frames.shape[:-2] + (length,), frames.dtype)
    return out.at[..., _frame_indices(n_frames, nperseg, nstep)].add(frames)


def _is_concrete(fs):
    return isinstance(fs, (int, float, np.number)) and not isinstance(fs, bool)


def _over_fs(values, fs, dtype):
    """values / fs in `dtype`: on the host for a concrete fs, traced otherwise."""
    if _is_concrete(fs):
        return asarray((np.asarray(values, np.float64) / float(fs)).astype(dtype))
    return asarray(np.asarray(values), dtype) / jnp.asarray(fs).astype(dtype)


def _times_fs(values, fs, dtype):
    """values * fs in `dtype` (frequencies in cycles per sample, scaled to fs)."""
    if _is_concrete(fs):
        return asarray((np.asarray(values, np.float64) * float(fs)).astype(dtype))
    return asarray(np.asarray(values), dtype) * jnp.asarray(fs).astype(dtype)


def _extension(kind, x, n):
    """x extended by n samples at both ends of its last axis (SciPy's boundary extensions)."""
    if n == 0:
        return x
    if kind == "zeros":
        pad = jnp.zeros(x.shape[:-1] + (n,), x.dtype)
        return jnp.concatenate([pad, x, pad], axis=-1)
    first, last = x[..., :1], x[..., -1:]
    if kind == "constant":
        left = jnp.broadcast_to(first, x.shape[:-1] + (n,))
        right = jnp.broadcast_to(last, x.shape[:-1] + (n,))
    else:  # even / odd: mirrored about the end samples, odd also negated about them
        length = x.shape[-1]
        left = x[..., n:0:-1]
        right = x[..., length - 2:length - n - 2 if length - n - 2 >= 0 else None:-1]
        if kind == "odd":
            left, right = 2 * first - left, 2 * last - right
    return jnp.concatenate([left, x, right], axis=-1)


_EXTENSIONS = ("even", "odd", "constant", "zeros", None)


def _detrender(detrend, axis):
    """The function applied to the segments (..., n_frames, nperseg)."""
    if detrend is None or detrend is False:
        return lambda d: d
    if isinstance(detrend, str):
        from corejax.scipy.signal import detrend as _detrend
        return lambda d: _detrend(d, type=detrend, axis=-1)
    if callable(detrend):
        # a user's function sees the segments with `axis` (shifted past the new segment axis
        # when negative) moved last, and must return them in that layout, as JAX passes them
        moved = axis if axis >= 0 else axis - 1
        return lambda d: jnp.moveaxis(detrend(jnp.moveaxis(d, moved, -1)), -1, moved)
    raise ValueError(f"Unsupported detrend type: {detrend}")


def _segment_spectra(x, win, detrend_func, nperseg, nstep, nfft, onesided):
    frames = detrend_func(_frames(x, nperseg, nstep))
    frames = frames * win.astype(dtypes.real_dtype(frames.dtype))
    if onesided:
        if frames.dtype not in (np.float32, np.float64):
            raise ValueError(f"RFFT input must be float32 or float64, got {frames.dtype}")
        return jnp.fft.rfft(frames, n=nfft, axis=-1)
    return jnp.fft.fft(frames, n=nfft, axis=-1)


def _pad_last(x, length):
    if x.shape[-1] == length:
        return x
    pad = jnp.zeros(x.shape[:-1] + (length - x.shape[-1],), x.dtype)
    return jnp.concatenate([x, pad], axis=-1)


def _spectral_helper(name, x, y, fs, window, nperseg, noverlap, nfft, detrend,
                     return_onesided, scaling, axis, mode, boundary=None, padded=False):
    """(freqs, times, result): the windowed segment spectra of x (mode 'stft'), or the
    cross-spectra conj(X) * Y of x and y (mode 'psd'; y None: x's own, real), scaled by
    `scaling`, with the frequency axis where x's `axis` was and the segments last."""
    if boundary not in _EXTENSIONS:
        raise ValueError(f"Unknown boundary option '{boundary}', must be one of: "
                         f"{list(_EXTENSIONS)}")
    same_data = y is None
    if same_data:
        check_arraylike(name, x)
        x = asarray(x)
        out_dtype = dtypes.result_type(x, np.complex64)
        (x,) = promote_dtypes_inexact(x)
    else:
        check_arraylike(name, x, y)
        x, y = asarray(x), asarray(y)
        out_dtype = dtypes.result_type(x, y, np.complex64)
        x, y = promote_dtypes_inexact(x, y)
        if x.ndim != y.ndim:
            raise ValueError(f"two-arguments must have the same rank ({x.ndim} vs {y.ndim}).")
    real_dtype = dtypes.real_dtype(out_dtype)
    axis = int(axis)
    canonicalize_axis(axis, x.ndim)
    x = jnp.moveaxis(x, axis, -1)
    if not same_data:
        y = jnp.moveaxis(y, axis, -1)
        try:
            outer = np.broadcast_shapes(x.shape[:-1], y.shape[:-1])
        except ValueError as e:
            raise ValueError("x and y cannot be broadcast together.") from e
        length = max(x.shape[-1], y.shape[-1])
        x = jnp.broadcast_to(_pad_last(x, length), outer + (length,))
        y = jnp.broadcast_to(_pad_last(y, length), outer + (length,))

    if nperseg is not None:
        nperseg = int(nperseg)
        if nperseg < 1:
            raise ValueError("nperseg must be a positive integer")
    elif mode == "psd" and _is_named(window):
        nperseg = x.shape[-1]  # JAX's csd and welch: one segment the signal's length
    win, nperseg = _segment_window(window, nperseg, x.shape[-1])
    if x.size == 0 or (not same_data and y.size == 0):
        shape = jnp.moveaxis(x, -1, axis).shape
        empty = jnp.zeros(shape, real_dtype)
        return empty, empty, jnp.zeros(shape, real_dtype if (
            same_data and mode == "psd") else out_dtype)
    if nfft is None:
        nfft = nperseg
    elif nfft < nperseg:
        raise ValueError("nfft must be greater than or equal to nperseg.")
    else:
        nfft = int(nfft)
    noverlap = nperseg // 2 if noverlap is None else int(noverlap)
    if noverlap >= nperseg:
        raise ValueError("noverlap must be less than nperseg.")
    nstep = nperseg - noverlap

    if boundary is not None:
        x = _extension(boundary, x, nperseg // 2)
        if not same_data:
            y = _extension(boundary, y, nperseg // 2)
    if padded:
        # zeros after the extension, so that the extended signal ends in zeros
        length = x.shape[-1] + (-(x.shape[-1] - nperseg) % nstep) % nperseg
        x = _pad_last(x, length)
        if not same_data:
            y = _pad_last(y, length)

    detrend_func = _detrender(detrend, axis)
    # the window, and the scale computed from it, in the (promoted) input's precision
    win = asarray(win).astype(dtypes.real_dtype(x.dtype))
    if scaling == "density":
        scale = 1.0 / (jnp.asarray(fs).astype(win.dtype) * jnp.sum(win * win))
    elif scaling == "spectrum":
        scale = 1.0 / jnp.sum(win) ** 2
    else:
        raise ValueError(f"Unknown scaling: {scaling}")
    if mode == "stft":
        scale = jnp.sqrt(scale)

    onesided = bool(return_onesided)
    if onesided and (dtypes.is_complex(x.dtype) or (
            not same_data and dtypes.is_complex(y.dtype))):
        onesided = False
        warnings.warn("Input data is complex, switching to return_onesided=False",
                      stacklevel=3)
    freqs = _times_fs(np.fft.rfftfreq(nfft) if onesided else np.fft.fftfreq(nfft), fs,
                      real_dtype)

    result = _segment_spectra(x, win, detrend_func, nperseg, nstep, nfft, onesided)
    if not same_data:
        result_y = _segment_spectra(y, win, detrend_func, nperseg, nstep, nfft, onesided)
        result = jnp.conj(result) * result_y
    elif mode == "psd":
        result = jnp.conj(result) * result
    result = result * scale.astype(result.dtype)
    if onesided and mode == "psd":
        # every bin but DC (and the unpaired Nyquist bin of an even nfft) stands for two
        doubled = np.full(result.shape[-1], 2.0)
        doubled[0] = 1.0
        if nfft % 2 == 0:
            doubled[-1] = 1.0
        result = result * asarray(doubled.astype(dtypes.real_dtype(result.dtype)))

    times = np.arange(nperseg / 2, x.shape[-1] - nperseg / 2 + 1, nstep)
    if boundary is not None:
        times = times - nperseg / 2
    times = _over_fs(times, fs, real_dtype)
    result = result.astype(out_dtype)
    if same_data and mode == "psd":
        result = jnp.real(result)
    # the frequency axis goes back where the data's axis was; the segment axis stays last
    result = jnp.moveaxis(result, -1, axis - 1 if axis < 0 else axis)
    return freqs, times, result


# ---------------------------------------------------------------- the public functions

def stft(x, fs=1.0, window="hann", nperseg=256, noverlap=None, nfft=None, detrend=False,
         return_onesided=True, boundary="zeros", padded=True, axis=-1):
    """The short-time Fourier transform of x along `axis`: (f, t, Zxx), with Zxx's frequency
    axis where x's `axis` was and its segment axis last (SciPy's 'spectrum' scaling)."""
    return _spectral_helper("stft", x, None, fs, window, nperseg, noverlap, nfft, detrend,
                            return_onesided, "spectrum", axis, "stft", boundary, padded)


def csd(x, y, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
        detrend="constant", return_onesided=True, scaling="density", axis=-1, average="mean"):
    """Welch's estimate of the cross power spectral density of x and y: (f, Pxy), the mean
    (or the bias-corrected median) over segments of conj(X) * Y. y None: x's own PSD."""
    if average not in ("mean", "median"):
        raise ValueError(f'average must be "median" or "mean", got {average}')
    freqs, _, pxy = _spectral_helper("csd", x, y, fs, window, nperseg, noverlap, nfft, detrend,
                                     return_onesided, scaling, axis, "psd")
    if pxy.ndim >= 2 and pxy.size > 0:
        n_frames = pxy.shape[-1]
        if n_frames == 1:
            pxy = pxy.reshape(pxy.shape[:-1])
        elif average == "mean":
            pxy = jnp.mean(pxy, axis=-1)
        else:
            bias = _median_bias(n_frames)
            if dtypes.is_complex(pxy.dtype):
                pxy = jnp.median(jnp.real(pxy), axis=-1) + 1j * jnp.median(jnp.imag(pxy),
                                                                           axis=-1)
            else:
                pxy = jnp.median(pxy, axis=-1)
            pxy = pxy / np.asarray(bias, dtypes.real_dtype(pxy.dtype))
    return freqs, pxy


def _median_bias(n):
    """The expected ratio of the median to the mean of n chi-squared(2) periodogram values."""
    k = 2.0 * np.arange(1, (n - 1) // 2 + 1)
    return 1 + np.sum(1.0 / (k + 1) - 1.0 / k)


def welch(x, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
          detrend="constant", return_onesided=True, scaling="density", axis=-1,
          average="mean"):
    """Welch's estimate of x's power spectral density: (f, Pxx), real."""
    freqs, pxx = csd(x, None, fs, window, nperseg, noverlap, nfft, detrend, return_onesided,
                     scaling, axis, average)
    return freqs, jnp.real(pxx)


def istft(Zxx, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
          input_onesided=True, boundary=True, time_axis=-1, freq_axis=-2):
    """The inverse of stft by weighted overlap-add: (t, x). As in JAX, nperseg=0 and
    noverlap=0 mean their defaults (the size of Zxx's frequency axis; nperseg // 2)."""
    check_arraylike("istft", Zxx)
    Zxx = asarray(Zxx)
    if Zxx.ndim < 2:
        raise ValueError("Input stft must be at least 2d!")
    freq_axis = canonicalize_axis(freq_axis, Zxx.ndim)
    time_axis = canonicalize_axis(time_axis, Zxx.ndim)
    if freq_axis == time_axis:
        raise ValueError("Must specify differing time and frequency axes!")
    n_frames = Zxx.shape[time_axis]
    n_default = 2 * (Zxx.shape[freq_axis] - 1) if input_onesided else Zxx.shape[freq_axis]
    if not nperseg:
        nperseg = n_default
    else:
        nperseg = int(nperseg)
        if nperseg < 1:
            raise ValueError("nperseg must be a positive integer")
    if nfft is None:
        nfft = nperseg if input_onesided and nperseg == n_default + 1 else n_default
    else:
        nfft = int(nfft)
    if nfft < nperseg:
        raise ValueError(f"FFT length ({nfft}) must be longer than nperseg ({nperseg}).")
    noverlap = nperseg // 2 if not noverlap else int(noverlap)
    if noverlap >= nperseg:
        raise ValueError("noverlap must be less than nperseg.")
    nstep = nperseg - noverlap

    Zxx = Zxx.astype(dtypes.result_type(Zxx, np.complex64))
    outer = [a for a in range(Zxx.ndim) if a not in (freq_axis, time_axis)]
    Zxx = jnp.transpose(Zxx, outer + [freq_axis, time_axis])
    real_dtype = dtypes.real_dtype(Zxx.dtype)
    if _is_named(window):
        win = asarray(_named_window(window, nperseg).astype(real_dtype))
    else:
        win = asarray(window)
        if win.ndim != 1:
            raise ValueError("window must be 1-D")
        if win.shape[0] != nperseg:
            raise ValueError(f"window must have length of {nperseg}")
        (win,) = promote_dtypes_inexact(win)
        real_dtype = dtypes.result_type(real_dtype, win.dtype)
    inverse = jnp.fft.irfft if input_onesided else jnp.fft.ifft
    segments = inverse(Zxx, n=nfft, axis=-2)[..., :nperseg, :]
    out_dtype = dtypes.result_type(segments.dtype, real_dtype)
    segments, win = segments.astype(out_dtype), win.astype(real_dtype)
    # SciPy's 'spectrum' scaling undone, the window applied again, the overlaps added
    frames = jnp.swapaxes(segments, -1, -2) * (win * jnp.sum(win))
    x = _overlap_add(frames, nstep)
    norm = _overlap_add(jnp.broadcast_to(win * win, (n_frames, nperseg)), nstep)
    if boundary:
        half = nperseg // 2
        stop = x.shape[-1] - half if half else 0  # SciPy's x[..., half:-half]
        x, norm = x[..., half:stop], norm[..., half:stop]
    x = x / jnp.where(norm > 1e-10, norm, jnp.ones_like(norm)).astype(x.dtype)
    if x.ndim > 1 and time_axis != Zxx.ndim - 1:
        x = jnp.moveaxis(x, -1, time_axis - 1 if freq_axis < time_axis else time_axis)
    times = _over_fs(np.arange(x.shape[0]), fs, dtypes.real_dtype(x.dtype))
    return times, x
