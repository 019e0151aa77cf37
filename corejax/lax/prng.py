"""The Threefry-2x32 counter-based hash (Salmon et al., "Parallel random numbers: as easy as
1, 2, 3", SC 2011; 20 rounds), the primitive behind corejax.random. It must agree with JAX's
threefry bit for bit.

`threefry2x32_p(k0, k1, x0, x1) -> [y0, y1]` hashes counter pairs (x0, x1) under the key
(k0, k1); all four operands are uint32 arrays of one shape. It is elementwise (with two results),
has integer outputs (no derivative), and batches by aligning batch axes. Its NumPy impl hashes
whole arrays round by round; compiled kernels call `threefry2x32_scalar` per element.
"""
from __future__ import annotations

import numpy as np

from corejax import dtypes
from corejax.core import Primitive, ShapedArray, get_aval
from corejax.compiler import registry
from corejax.transforms import ad, batching
from corejax.lax._factories import shape_str

__all__ = ["threefry2x32_p", "threefry2x32", "threefry2x32_scalar"]

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_KEY_SCHEDULE_PARITY = np.uint32(0x1BD11BDA)


def _rotate_left_inplace(x, r, scratch):
    np.left_shift(x, np.uint32(r), out=scratch)
    np.right_shift(x, np.uint32(32 - r), out=x)
    np.bitwise_or(x, scratch, out=x)


def threefry2x32_numpy(k0, k1, x0, x1):
    """The NumPy reference: uint32 arrays (or scalars) that broadcast together -> (y0, y1)."""
    for x in (k0, k1, x0, x1):
        if np.asarray(x).dtype != np.uint32:
            raise TypeError(f"threefry2x32 requires uint32 arguments, got {np.asarray(x).dtype}")
    shape = np.broadcast_shapes(*(np.shape(x) for x in (k0, k1, x0, x1)))
    # The counters become working buffers, at least 1-d: NumPy warns when a 0-d scalar
    # overflows but wraps arrays silently, and wrapping is the arithmetic we want.
    work_shape = shape or (1,)
    x0 = np.array(np.broadcast_to(x0, work_shape), dtype=np.uint32)
    x1 = np.array(np.broadcast_to(x1, work_shape), dtype=np.uint32)
    k0 = np.asarray(k0, np.uint32).reshape(np.shape(k0) or (1,))
    k1 = np.asarray(k1, np.uint32).reshape(np.shape(k1) or (1,))
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


def threefry2x32_scalar(k0, k1, x0, x1):
    """The hash of one counter pair, (y0, y1), as compiled kernels compute it: kernel_lib (CPU)
    and cuda_kernels (CUDA device function) compile this very function, and the fusion pass
    inlines it into the loop that transforms its words (random.normal's bits, mantissa and
    erf_inv become one loop). Each 32-bit sum is formed in 64 bits and masked, so it wraps alike
    in compiled code (LLVM narrows it back to 32-bit lanes) and in Numba's CUDA simulator, which
    runs this as Python on NumPy scalars (a wrapping uint32 addition there would warn)."""
    m = np.uint64(0xFFFFFFFF)
    ks0, ks1 = np.uint64(k0), np.uint64(k1)
    keys = (ks0, ks1, ks0 ^ ks1 ^ np.uint64(_KEY_SCHEDULE_PARITY))
    a = (np.uint64(x0) + ks0) & m
    b = (np.uint64(x1) + ks1) & m
    for injection in range(1, 6):
        for r in _ROTATIONS[(injection - 1) % 2]:
            a = (a + b) & m
            b = (((b << np.uint64(r)) & m) | (b >> np.uint64(32 - r))) ^ a
        a = (a + keys[injection % 3]) & m
        b = (b + keys[(injection + 1) % 3] + np.uint64(injection)) & m
    return np.uint32(a), np.uint32(b)


threefry2x32_p = Primitive("threefry2x32")
threefry2x32_p.multiple_results = True


def _threefry2x32_abstract_eval(k0, k1, x0, x1):
    avals = (k0, k1, x0, x1)
    if any(a.dtype != dtypes.uint32 for a in avals):
        raise TypeError("threefry2x32 requires uint32 operands, got "
                        f"{', '.join(a.dtype.name for a in avals)}.")
    if len({a.shape for a in avals}) != 1:
        raise TypeError("threefry2x32 requires operands of equal shapes, got "
                        f"{', '.join(shape_str(a.shape) for a in avals)}.")
    return [ShapedArray(x0.shape, dtypes.uint32), ShapedArray(x0.shape, dtypes.uint32)]


def _threefry2x32_impl(k0, k1, x0, x1):
    # Eager calls skip abstract evaluation, and NumPy would broadcast or cast silently.
    _threefry2x32_abstract_eval(*(ShapedArray(x.shape, x.dtype) for x in (k0, k1, x0, x1)))
    return list(threefry2x32_numpy(k0, k1, x0, x1))


threefry2x32_p.def_impl(_threefry2x32_impl)
threefry2x32_p.def_abstract_eval(_threefry2x32_abstract_eval)
threefry2x32_p.weak_type_rule = lambda *args, **params: False
ad.defjvp_zero(threefry2x32_p)


def _threefry2x32_batch(vals, dims):
    size = next(get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not None)
    outs = threefry2x32_p.bind(*[batching.bdim_at_front(v, d, size) for v, d in zip(vals, dims)])
    return outs, [0, 0]


batching.primitive_batchers[threefry2x32_p] = _threefry2x32_batch
# Elementwise with two results: fused groups bind both words from one call.
registry.def_elementwise(threefry2x32_p, lambda ctx, *words: ctx.call("threefry2x32", *words))


def threefry2x32(k0, k1, x0, x1):
    """Threefry-2x32 on uint32 operands; scalars (rank 0) broadcast to the others' shape."""
    from corejax.lax.structural import broadcast_in_dim
    args = (k0, k1, x0, x1)
    shape = max((get_aval(a).shape for a in args), key=len)
    args = [broadcast_in_dim(a, shape, ()) if get_aval(a).shape == () and shape else a
            for a in args]
    return threefry2x32_p.bind(*args)
