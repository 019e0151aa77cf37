"""Threefry-2x32 with 20 rounds (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3",
SC 2011), vectorized over NumPy uint32 arrays.

This is the counter-based hash behind JAX's default PRNG; it must agree with JAX bit for bit.
"""
import numpy as np

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_KEY_SCHEDULE_PARITY = np.uint32(0x1BD11BDA)


def _as_uint32_arrays(*xs):
    for x in xs:
        dtype = np.asarray(x).dtype
        if dtype != np.uint32:
            raise TypeError(f"threefry2x32 requires uint32 arguments, got {dtype}")
    shape = np.broadcast_shapes(*(np.shape(x) for x in xs))
    # At least 1-d so that wrapping uint32 arithmetic stays array arithmetic: NumPy warns on
    # overflow of 0-d scalars but wraps arrays silently.
    work_shape = shape if shape else (1,)
    return shape, [np.array(np.broadcast_to(x, work_shape), dtype=np.uint32) for x in xs]


def _rotate_left_inplace(x, r, scratch):
    np.left_shift(x, np.uint32(r), out=scratch)
    np.right_shift(x, np.uint32(32 - r), out=x)
    np.bitwise_or(x, scratch, out=x)


def threefry2x32(k0, k1, x0, x1):
    """Hash the counter pairs (x0, x1) under the key (k0, k1); returns (y0, y1).

    All four arguments are uint32 arrays (or scalars) that broadcast together; the outputs have
    the broadcast shape.
    """
    shape, (k0, k1, x0, x1) = _as_uint32_arrays(k0, k1, x0, x1)
    keys = (k0, k1, k0 ^ k1 ^ _KEY_SCHEDULE_PARITY)
    scratch = np.empty_like(x0)
    x0 += keys[0]
    x1 += keys[1]
    for injection in range(1, 6):
        for r in _ROTATIONS[(injection - 1) % 2]:
            x0 += x1
            _rotate_left_inplace(x1, r, scratch)
            x1 ^= x0
        x0 += keys[injection % 3]
        x1 += keys[(injection + 1) % 3]
        x1 += np.uint32(injection)
    return x0.reshape(shape), x1.reshape(shape)
