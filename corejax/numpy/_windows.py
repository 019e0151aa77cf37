"""Window functions for signal processing: bartlett, blackman, hamming, hanning, kaiser."""
from __future__ import annotations

import operator

import numpy as np

from corejax import core, dtypes, lax
from corejax.numpy._core import asarray

__all__ = []


def _length(M, name):
    return core.concrete_or_error(operator.index, M, f"M argument of jnp.{name}")


def _centered(M):
    """n = 1 - M, 3 - M, ..., M - 1 (as floats), and M - 1."""
    dt = dtypes.default_float_dtype()
    n = lax.sub(lax.mul(lax.iota(dt, M), lax.full((), 2, dt)), lax.full((), M - 1, dt))
    return n, lax.full((), M - 1, dt), dt


def _window(name, M, body):
    M = _length(M, name)
    dt = dtypes.default_float_dtype()
    if M < 1:
        return lax.full((0,), 0, dt)
    if M == 1:
        return lax.full((1,), 1, dt)
    return body(*_centered(M))


def _cosine_sum(name, M, coeffs):
    """sum_k coeffs[k] * cos(k * pi * n / (M - 1)) over the centered n."""
    def body(n, m1, dt):
        phase = lax.div(lax.mul(n, lax.full((), np.pi, dt)), m1)
        out = lax.full(phase.shape, coeffs[0], dt)
        for k, c in enumerate(coeffs[1:], start=1):
            out = lax.add(out, lax.mul(lax.full((), c, dt),
                                       lax.cos(lax.mul(lax.full((), k, dt), phase))))
        return out
    return _window(name, M, body)


def bartlett(M):
    """The triangular window: 1 - |n| / (M - 1) over the centered n."""
    def body(n, m1, dt):
        return lax.sub(lax.full((), 1, dt), lax.div(lax.abs(n), m1))
    return _window("bartlett", M, body)


def blackman(M):
    """0.42 + 0.5 cos(pi n / (M-1)) + 0.08 cos(2 pi n / (M-1))."""
    return _cosine_sum("blackman", M, (0.42, 0.5, 0.08))


def hamming(M):
    """0.54 + 0.46 cos(pi n / (M-1))."""
    return _cosine_sum("hamming", M, (0.54, 0.46))


def hanning(M):
    """0.5 + 0.5 cos(pi n / (M-1))."""
    return _cosine_sum("hanning", M, (0.5, 0.5))


def kaiser(M, beta):
    """The Kaiser window: i0(beta * sqrt(1 - (n / (M-1))**2)) / i0(beta) over the centered n."""
    from corejax.numpy._math import i0
    M = _length(M, "kaiser")
    dt = dtypes.default_float_dtype()
    beta = lax.convert_element_type(asarray(beta), dt)
    if M < 1:
        return lax.full((0,), 0, dt)
    if M == 1:
        return lax.full((1,), 1, dt)
    n, m1, dt = _centered(M)
    ratio = lax.div(n, m1)
    arg = lax.mul(beta, lax.sqrt(lax.sub(lax.full((), 1, dt), lax.mul(ratio, ratio))))
    return lax.div(i0(arg), i0(beta))
