"""jax.scipy.special's complex-valued functions: the Faddeeva function wofz and the spherical
harmonics sph_harm_y."""
from __future__ import annotations

import math
import operator

import numpy as np

from corejax import core, dtypes, lax
from corejax.custom_derivatives import custom_jvp
from corejax.numpy._core import asarray, check_arraylike, promote_dtypes_inexact
from corejax.numpy._eager_fusion import fuse_eagerly
from corejax.scipy._special_gamma import strong
import corejax.numpy as jnp

__all__ = ["wofz", "sph_harm_y"]


# ---------------------------------------------------------------- wofz


def _weideman_coefficients(n):
    """Weideman's (1994) rational approximation of w(z) in the upper half-plane: with
    L = sqrt(n / sqrt 2) and Z = (L + iz) / (L - iz),
        w(z) ~ 2 p(Z) / (L - iz)^2 + 1 / (sqrt(pi) (L - iz)),
    where p's n coefficients are the Fourier coefficients of (L^2 + t^2) exp(-t^2) on the
    mapped grid t = L tan(theta / 2). Returns (L, p's coefficients, highest degree first)."""
    m = 2 * n
    length = math.sqrt(n / math.sqrt(2))
    t = length * np.tan(np.arange(-m + 1, m) * np.pi / (2 * m))
    samples = np.concatenate([[0.0], np.exp(-t * t) * (length ** 2 + t * t)])
    coefficients = np.real(np.fft.fft(np.fft.fftshift(samples))) / (2 * m)
    return length, coefficients[1:n + 1][::-1]


_WEIDEMAN_L, _WEIDEMAN_COEFFICIENTS = _weideman_coefficients(32)
_INV_SQRT_PI = 1 / math.sqrt(math.pi)


def _wofz_upper(x, y):
    """w(x + iy) for y >= 0 as its real and imaginary parts (arrays of one real dtype), with
    real arithmetic only, so that a compiled loop over it vectorizes (relative error about
    1e-13 with 32 terms, before rounding). With D = L - iz, w = (1/D) (2 p(N/D) (1/D) +
    1/sqrt(pi)), N = L + iz; 1/D is formed from D scaled by its larger part (>= L, as y >= 0),
    so that |D|^2 cannot overflow."""
    length = _WEIDEMAN_L
    dr, di = length + y, -x                     # D = L - iz, iz = -y + ix
    scale = jnp.maximum(dr, jnp.abs(di))
    ar, ai = dr / scale, di / scale
    norm = scale * (ar * ar + ai * ai)
    inv_r, inv_i = ar / norm, -ai / norm        # 1/D
    nr, ni = length - y, x                      # N = L + iz
    rr, ri = nr * inv_r - ni * inv_i, nr * inv_i + ni * inv_r
    pr = pi = jnp.zeros_like(x)
    for c in _WEIDEMAN_COEFFICIENTS:
        pr, pi = pr * rr - pi * ri + float(c), pr * ri + pi * rr
    qr = 2 * (pr * inv_r - pi * inv_i) + _INV_SQRT_PI
    qi = 2 * (pr * inv_i + pi * inv_r)
    return qr * inv_r - qi * inv_i, qr * inv_i + qi * inv_r


@fuse_eagerly(1)
def _wofz_value(z):
    # the lower half-plane by reflection: w(z) = 2 exp(-z^2) - w(-z), exp(-z^2) =
    # exp(y^2 - x^2) (cos 2xy - i sin 2xy)
    x, y = jnp.real(z), jnp.imag(z)
    lower = y < 0
    ur, ui = _wofz_upper(jnp.where(lower, -x, x), jnp.where(lower, -y, y))
    e = jnp.exp(y * y - x * x)
    two_xy = 2 * x * y
    wr = jnp.where(lower, 2 * e * jnp.cos(two_xy) - ur, ur)
    wi = jnp.where(lower, -2 * e * jnp.sin(two_xy) - ui, ui)
    return lax.complex(wr, wi)


@custom_jvp
def _wofz(z):
    return _wofz_value(z)


@_wofz.defjvp
def _wofz_jvp(primals, tangents):
    (z,), (t,) = primals, tangents
    w = _wofz(z)
    # w'(z) = -2 z w(z) + 2i / sqrt(pi)
    return w, (-2 * z * w + 2j * _INV_SQRT_PI) * t


def wofz(z):
    """The Faddeeva function w(z) = exp(-z^2) erfc(-iz), complex-valued for real or complex z
    (Weideman's rational approximation, reflected into the lower half-plane)."""
    check_arraylike("wofz", z)
    z = asarray(z)
    return _wofz(z.astype(dtypes.result_type(z, np.complex64)))


# ---------------------------------------------------------------- sph_harm_y


def sph_harm_y(n, m, theta, phi, diff_n=None, n_max=None):
    """The spherical harmonic Y_n^m(theta, phi) = N_n^m P_n^m(cos theta) exp(i m phi), theta
    the colatitude and phi the longitude, with the Condon-Shortley phase, orthonormal on the
    sphere. `n_max` (static; default max(n), which needs a concrete n) bounds the degree: n
    and |m| above it are clipped to it, as in JAX; |m| > n gives 0."""
    if diff_n is not None:
        raise NotImplementedError(
            "The 'diff_n' argument to jax.scipy.special.sph_harm_y is not supported.")
    check_arraylike("sph_harm_y", n, m, theta, phi)
    n, m = asarray(n), asarray(m)
    for name, value in (("n", n), ("m", m)):
        if not dtypes.is_integer(value.dtype):
            raise TypeError(f"sph_harm_y: the {name} argument must be an integer array, got "
                            f"{value.dtype}")
    if n.ndim == 0:
        raise TypeError("sph_harm_y: n must be an array of degrees (at least one dimension), "
                        "got a scalar; pass jnp.atleast_1d(n)")
    theta, phi = promote_dtypes_inexact(theta, phi)
    real = np.dtype(theta.dtype)
    if real not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise TypeError(f"sph_harm_y: theta and phi must be float32 or float64 (or integers), "
                        f"got {real.name}")
    if n_max is None:
        n_max = core.concrete_or_error(
            lambda v: int(np.max(np.asarray(v))), n,
            "The `n_max` argument of `jnp.scipy.special.sph_harm` must be statically "
            "specified to use `sph_harm` within JAX transformations")
    n_max = operator.index(n_max)
    shape = jnp.broadcast_shapes(n.shape, m.shape, theta.shape, phi.shape)
    n, m, theta, phi = (jnp.broadcast_to(a, shape) for a in (n, m, theta, phi))
    theta, phi = strong(theta), strong(phi)

    degree = jnp.clip(n, 0, n_max)
    order = jnp.clip(jnp.abs(m), 0, n_max)
    order_f = order.astype(real)
    # P_n^m is a function of cos theta: sin theta as sqrt((1 - x)(1 + x)), never negative (JAX
    # computes it so too; theta outside [0, pi] folds back, and the poles' derivatives are NaN)
    cos_t = jnp.cos(theta)
    sin_t = jnp.sqrt((1 - cos_t) * (1 + cos_t))
    # the sectoral value P_m^m (normalized): (-sin theta)^m sqrt((2m+1)!! / (4 pi (2m)!!))
    diagonal = jnp.full(shape, 1 / math.sqrt(4 * math.pi), real)
    for k in range(1, n_max + 1):
        factor = -math.sqrt((2 * k + 1) / (2 * k)) * sin_t
        diagonal = jnp.where(order >= k, diagonal * factor, diagonal)
    # upward in degree d = m + k from P_m^m (P_{m-1}^m = 0), at every point's own order
    previous, current = jnp.zeros(shape, real), diagonal
    value = jnp.where(degree == order, diagonal, jnp.zeros(shape, real))
    for k in range(1, n_max + 1):
        d = order_f + k
        a = jnp.sqrt((4 * d * d - 1) / (d * d - order_f * order_f))
        b = jnp.sqrt(((d - 1) ** 2 - order_f * order_f) / (4 * (d - 1) ** 2 - 1))
        previous, current = current, a * (cos_t * current - b * previous)
        value = jnp.where(order + k == degree, current, value)
    # Y_n^-m = (-1)^m conj(Y_n^m)
    value = jnp.where((m < 0) & (m % 2 != 0), -value, value)
    angle = m.astype(real) * phi
    return lax.complex(value * jnp.cos(angle), value * jnp.sin(angle))
