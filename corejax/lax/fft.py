"""The fft primitive (lax.fft): complex and real discrete Fourier transforms over an array's
trailing dimensions, with JAX's rules.

The four kinds (FftType) are FFT and IFFT (complex -> complex), RFFT (real -> the non-negative
frequency half, complex) and IRFFT (that half -> real). The inverse kinds include the 1/N
factor. All are linear; the transposes follow JAX's conventions (transposes, not adjoints):
the DFT matrix is symmetric, so FFT and IFFT are their own transposes; RFFT transposes to the
real part of an FFT of the zero-padded cotangent; IRFFT to the conjugate of an RFFT with the
frequencies that stand for two (all but 0 and, for even lengths, N/2) counted twice, over N."""
from __future__ import annotations

import enum
import math
import os

import numpy as np

from corejax import dtypes
from corejax.array import Array
from corejax.core import Primitive, ShapedArray, get_aval
from corejax.transforms import ad, batching
from corejax.transforms.ad import Zero

__all__ = ["FftType", "fft", "fft_p"]


class FftType(enum.IntEnum):
    """The kind of transform lax.fft computes."""
    FFT = 0
    IFFT = 1
    RFFT = 2
    IRFFT = 3


def _fft_type(fft_type) -> FftType:
    if isinstance(fft_type, str):
        try:
            return FftType[fft_type.upper()]
        except KeyError:
            raise ValueError(f"Unknown FFT type {fft_type!r}: use one of 'fft', 'ifft', 'rfft', "
                             "'irfft' or a lax.FftType.") from None
    return FftType(fft_type)


fft_p = Primitive("fft")


def _host_fft(x, fft_type, fft_lengths):
    """SciPy's pocketfft: single precision stays single (NumPy's computes float32 inputs about
    four times slower), and batches split over the cores."""
    import scipy.fft
    axes = tuple(range(x.ndim - len(fft_lengths), x.ndim))
    workers = os.cpu_count() if x.size >= 1 << 16 and x.ndim > len(fft_lengths) else 1
    if fft_type == FftType.FFT:
        return scipy.fft.fftn(x, axes=axes, workers=workers)
    if fft_type == FftType.IFFT:
        return scipy.fft.ifftn(x, axes=axes, workers=workers)
    if fft_type == FftType.RFFT:
        return scipy.fft.rfftn(x, s=fft_lengths, axes=axes, workers=workers)
    return scipy.fft.irfftn(x, s=fft_lengths, axes=axes, workers=workers)


def _fft_impl(x, fft_type, fft_lengths):
    out_aval = _fft_abstract(ShapedArray(x.shape, x.dtype), fft_type, fft_lengths)
    return np.asarray(_host_fft(x, fft_type, fft_lengths)).astype(out_aval.dtype, copy=False)


def _fft_abstract(x, fft_type, fft_lengths):
    k = len(fft_lengths)
    name = fft_type.name
    if not 1 <= k <= 3:
        raise ValueError(f"lax.fft transforms 1 to 3 trailing dimensions, got fft_lengths "
                         f"{fft_lengths}.")
    if x.ndim < k:
        raise ValueError(f"{name} input shape {x.shape} must have at least as many input "
                         f"dimensions as fft_lengths {fft_lengths}.")
    minor = tuple(x.shape[x.ndim - k:])
    if fft_type == FftType.RFFT:
        if x.dtype.kind != "f":
            raise ValueError(f"RFFT input must be a real floating array, got {x.dtype.name}.")
        if minor != fft_lengths:
            raise ValueError(f"RFFT input shape {x.shape} minor dimensions must be equal to "
                             f"fft_lengths {fft_lengths}")
        shape = x.shape[:x.ndim - 1] + (fft_lengths[-1] // 2 + 1,)
        return ShapedArray(shape, dtypes.complex_dtype(x.dtype), False)
    if x.dtype.kind != "c":
        raise ValueError(f"{name} input must be complex, got {x.dtype.name}; convert it "
                         "first (jnp.fft does so for you).")
    if fft_type == FftType.IRFFT:
        expected = fft_lengths[:-1] + (fft_lengths[-1] // 2 + 1,)
        if minor != expected:
            raise ValueError(f"IRFFT input shape {x.shape} minor dimensions must be equal to "
                             f"all except the last fft_length, got fft_lengths={fft_lengths}; "
                             f"the last dimension must be fft_lengths[-1] // 2 + 1 "
                             f"= {expected[-1]}.")
        shape = x.shape[:x.ndim - k] + fft_lengths
        return ShapedArray(shape, dtypes.real_dtype(x.dtype), False)
    if minor != fft_lengths:
        raise ValueError(f"{name} input shape {x.shape} minor dimensions must be equal to "
                         f"fft_lengths {fft_lengths}")
    return ShapedArray(x.shape, x.dtype, False)


fft_p.def_impl(_fft_impl)
fft_p.def_abstract_eval(_fft_abstract)
fft_p.weak_type_rule = lambda *args, **params: False


def _rfft_transpose(ct, fft_lengths):
    """RFFT is a slice of the full FFT of a real input: pad the cotangent back to N, FFT it
    (the DFT matrix is its own transpose) and keep the real part (the transpose of the
    real -> complex embedding)."""
    from corejax.lax._complex import real
    from corejax.lax.structural import pad
    aval = get_aval(ct)
    missing = fft_lengths[-1] - aval.shape[-1]
    config = [(0, 0, 0)] * (aval.ndim - 1) + [(0, missing, 0)]
    full = pad(ct, np.zeros((), aval.dtype), config)
    return real(fft(full, FftType.FFT, fft_lengths))


def _irfft_transpose(ct, fft_lengths):
    """IRFFT(y) = (1/N) Re(sum over all N frequencies of the Hermitian extension of y): each
    stored frequency other than 0 and (for even N) N/2 stands for two, so its cotangent is
    twice the RFFT coefficient; conjugated, as JAX's convention for complex cotangents has it."""
    from corejax.lax._complex import conj
    from corejax.lax.elementwise import mul
    from corejax.lax.structural import broadcast_in_dim
    y = fft(ct, FftType.RFFT, fft_lengths)
    aval = get_aval(y)
    m, n = aval.shape[-1], fft_lengths[-1]
    weights = np.full(m, 2.0)
    weights[0] = 1.0
    if n % 2 == 0:
        weights[-1] = 1.0
    weights = Array((weights / math.prod(fft_lengths)).astype(aval.dtype))
    return conj(mul(y, broadcast_in_dim(weights, aval.shape, (aval.ndim - 1,))))


def _fft_transpose(ct, x, fft_type, fft_lengths):
    if type(ct) is Zero:
        return [None]
    if fft_type == FftType.RFFT:
        return [_rfft_transpose(ct, fft_lengths)]
    if fft_type == FftType.IRFFT:
        return [_irfft_transpose(ct, fft_lengths)]
    return [fft(ct, fft_type, fft_lengths)]


ad.deflinear(fft_p, _fft_transpose)


def _fft_batch(vals, dims, fft_type, fft_lengths):
    (x,), (d,) = vals, dims
    ndim = get_aval(x).ndim
    if d >= ndim - len(fft_lengths):  # the batch axis must not be a transformed one
        x, d = batching.moveaxis(x, d, 0), 0
    return fft_p.bind(x, fft_type=fft_type, fft_lengths=fft_lengths), d


batching.primitive_batchers[fft_p] = _fft_batch


def fft(x, fft_type, fft_lengths):
    """The discrete Fourier transform of kind `fft_type` (an FftType or its name) over the
    last len(fft_lengths) dimensions of `x` (lax.fft). FFT and IFFT convert a real `x` to
    complex; IFFT and IRFFT include the 1/N normalization."""
    from corejax.lax.elementwise import convert_element_type
    fft_type = _fft_type(fft_type)
    fft_lengths = tuple(int(n) for n in (fft_lengths if np.ndim(fft_lengths) else
                                         (fft_lengths,)))
    aval = get_aval(x)
    if fft_type in (FftType.FFT, FftType.IFFT) and aval.dtype.kind != "c":
        x = convert_element_type(x, dtypes.complex_dtype(aval.dtype))
    return fft_p.bind(x, fft_type=fft_type, fft_lengths=fft_lengths)
