"""Windowed reductions: reduce_window_sum, reduce_window_max and reduce_window_min.

Each output element reduces one window of the operand, padded with the reduction's identity and
dilated (`base_dilation` spreads the operand, `window_dilation` spreads the window's taps).
Where the windows move over at most two dimensions (pooling over height and width, in any
layout) the impl is one compiled loop over output elements, taps innermost in row-major order
and out-of-range taps taken as the identity, with no padded copy (`_loop`); elsewhere (three
or more windowed dimensions, float16, complex, bool) it pads once and combines one strided
view per tap. The two combine the same values in the same order.

Rules: the sum is linear; its transpose is another windowed sum over the cotangent spread out
by the strides (a "full" correlation with an all-ones window). max and min differentiate
through a mask: each output takes the tangent of the first tap (in window order) that attains
the extremum, which is exactly what XLA's select-and-scatter gives for ties. The mask formulation
is built from pad, slice, eq and select, so its transpose (a scatter-add into the chosen
positions) and its batching come from those primitives' rules. Windows that tile the operand
(2x2 pooling with stride 2) take the same choice from a reshape that makes each window a block
of axes: the transpose is then one select and a reshape, not a padded copy per tap.
"""
from __future__ import annotations

import functools
import operator

import numpy as np

from corejax import dtypes
from corejax.core import Primitive, ShapedArray, get_aval
from corejax.transforms import ad, batching
from corejax.transforms.ad import Zero, deflinear
from corejax.lax._factories import ANY, NUMERIC, check_dtype, shape_str
from corejax.lax.structural import _pad_impl
from corejax.lax.elementwise import _max_impl, _min_impl
from corejax.lax.conv import padtype_to_pads
from corejax.lax._split import over_cores

__all__ = ["reduce_window", "reduce_window_sum", "reduce_window_max", "reduce_window_min",
           "reduce_window_sum_p", "reduce_window_max_p", "reduce_window_min_p"]


def _dilate(n: int, d: int) -> int:
    return 0 if n == 0 else (n - 1) * d + 1


def _identity(kind: str, dtype: np.dtype):
    dtype = np.dtype(dtype)
    if kind == "sum":
        return dtype.type(0)
    if dtype == np.bool_:
        return np.bool_(kind == "min")
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return dtype.type(info.min if kind == "max" else info.max)
    return dtype.type(-np.inf if kind == "max" else np.inf)


def _pad_config(padding, base_dilation):
    return [(lo, hi, d - 1) for (lo, hi), d in zip(padding, base_dilation)]


def _window_shape(shape, window_dimensions, window_strides, padding, base_dilation,
                  window_dilation, name):
    nd = len(shape)
    for what, val in (("window_dimensions", window_dimensions),
                      ("window_strides", window_strides), ("padding", padding),
                      ("base_dilation", base_dilation), ("window_dilation", window_dilation)):
        if len(val) != nd:
            raise TypeError(f"{name}: {what} {tuple(val)} must have one entry per operand "
                            f"dimension; the operand has shape {shape_str(shape)}.")
    for what, val in (("window_dimensions", window_dimensions),
                      ("window_strides", window_strides), ("base_dilation", base_dilation),
                      ("window_dilation", window_dilation)):
        if any(v < 1 for v in val):
            raise TypeError(f"{name}: {what} must be positive, got {tuple(val)}.")
    out = []
    for n, w, s, (lo, hi), bd, wd in zip(shape, window_dimensions, window_strides, padding,
                                        base_dilation, window_dilation):
        padded = _dilate(n, bd) + lo + hi
        out.append(max(0, (padded - _dilate(w, wd)) // s + 1))
    return tuple(out)


def _tap_slices(window_dimensions, window_strides, window_dilation, out_shape):
    """For each window tap, the strided slice (start, limit, stride) of the padded operand that
    lines that tap up with every output element."""
    for tap in np.ndindex(*window_dimensions):
        starts = tuple(t * wd for t, wd in zip(tap, window_dilation))
        limits = tuple(st + (o - 1) * s + 1 for st, o, s in
                       zip(starts, out_shape, window_strides))
        yield starts, limits


_KINDS = {"sum": 0, "max": 1, "min": 2}


@functools.lru_cache(maxsize=None)
def _loop():
    """The windowed reduction of an operand viewed as (A, H, M, W, B), windows over H and W:
    every output element combines its window's taps in row-major order, a tap outside the
    operand (padding, or a hole of the base dilation) contributing the identity, starting
    from the first tap's value: tap for tap what the strided views of the NumPy form combine
    (lax.max's and lax.min's NaN and signed-zero rules), without a padded copy. Numba, compiled on first use and
    cached on disk; the innermost loop runs over B, contiguous."""
    from numba import njit

    inline = njit(cache=True, nogil=True, error_model="numpy", inline="always")

    # lax.max: NaN propagates (u's where both are), -0 below +0 (the sum of two zeros is
    # their maximum); written as one expression of selects, which LLVM vectorizes over the
    # contiguous axis (as three branches, max pooling's forward over (128, 28, 28, 32) took
    # 1.29-1.37 ms on one thread, so 0.89-0.90: the same bits)
    @inline
    def _ieee_max(u, v):
        return (u + v) if (u == 0 and v == 0) else (u if (u != u or u > v) else v)

    @inline
    def _ieee_min(u, v):
        return -((-u) + (-v)) if (u == 0 and v == 0) else (u if (u != u or u < v) else v)

    @njit(cache=True, nogil=True, error_model="numpy")
    def window(x, out, kind, init, lo_h, lo_w, kh_, kw_, s_h, s_w, d_h, d_w, l_h, l_w, a0, a1):
        h_, m_, w_, b_ = x.shape[1], x.shape[2], x.shape[3], x.shape[4]
        ph_, pw_ = out.shape[1], out.shape[3]
        xf, of = x.reshape(-1), out.reshape(-1)
        for a in range(a0, a1):
            for ph in range(ph_):
                for m in range(m_):
                    for pw in range(pw_):
                        dst = (((a * ph_ + ph) * m_ + m) * pw_ + pw) * b_
                        first = True
                        for kh in range(kh_):
                            hd = ph * s_h + kh * d_h - lo_h
                            hi = hd if l_h == 1 else hd // l_h   # (no division undilated)
                            h_in = hd >= 0 and hd - hi * l_h == 0 and hi < h_
                            for kw in range(kw_):
                                wd = pw * s_w + kw * d_w - lo_w
                                wi = wd if l_w == 1 else wd // l_w
                                if h_in and wd >= 0 and wd - wi * l_w == 0 and wi < w_:
                                    src = (((a * h_ + hi) * m_ + m) * w_ + wi) * b_
                                    if first:
                                        for b in range(b_):
                                            of[np.uint64(dst + b)] = xf[np.uint64(src + b)]
                                    elif kind == 0:
                                        for b in range(b_):
                                            of[np.uint64(dst + b)] += xf[np.uint64(src + b)]
                                    elif kind == 1:
                                        for b in range(b_):
                                            u, v = of[np.uint64(dst + b)], xf[np.uint64(src + b)]
                                            of[np.uint64(dst + b)] = _ieee_max(u, v)
                                    else:
                                        for b in range(b_):
                                            u, v = of[np.uint64(dst + b)], xf[np.uint64(src + b)]
                                            of[np.uint64(dst + b)] = _ieee_min(u, v)
                                elif first:
                                    for b in range(b_):
                                        of[np.uint64(dst + b)] = init
                                elif kind == 0:
                                    for b in range(b_):
                                        of[np.uint64(dst + b)] += init
                                elif kind == 1:
                                    for b in range(b_):
                                        u = of[np.uint64(dst + b)]
                                        of[np.uint64(dst + b)] = _ieee_max(u, init)
                                else:
                                    for b in range(b_):
                                        u = of[np.uint64(dst + b)]
                                        of[np.uint64(dst + b)] = _ieee_min(u, init)
                                first = False

    return window


# dtypes the loop takes (float16 / bfloat16, complex and bool keep the NumPy form)
_LOOP_DTYPES = frozenset("fdbhilqBHILQ")


def _looped(kind, x, init, out_shape, window_dimensions, window_strides, padding,
            base_dilation, window_dilation):
    """The reduction by `_loop`, or None where the operand is not one it takes: windows over
    at most two dimensions, a dtype Numba computes as NumPy does."""
    if x.dtype.char not in _LOOP_DTYPES or x.size == 0:
        return None
    moving = [i for i in range(x.ndim) if window_dimensions[i] != 1 or window_strides[i] != 1
              or tuple(padding[i]) != (0, 0) or base_dilation[i] != 1]
    if not moving or len(moving) > 2:
        return None
    h_dim = moving[0]
    w_dim = moving[1] if len(moving) == 2 else None
    prod = lambda dims: int(np.prod([x.shape[i] for i in dims], dtype=np.int64))
    if w_dim is None:
        a_, m_, b_ = prod(range(h_dim)), 1, prod(range(h_dim + 1, x.ndim))
        dims = (h_dim, None)
    else:
        a_, m_ = prod(range(h_dim)), prod(range(h_dim + 1, w_dim))
        b_ = prod(range(w_dim + 1, x.ndim))
        dims = (h_dim, w_dim)
    size = lambda d, t: 1 if d is None else t[d]
    x5 = np.ascontiguousarray(x).reshape(a_, size(h_dim, x.shape), m_,
                                         size(dims[1], x.shape), b_)
    out = np.empty((a_, out_shape[h_dim], m_, size(dims[1], out_shape), b_), x.dtype)
    pad = lambda d: (0, 0) if d is None else tuple(padding[d])
    args = (_KINDS[kind], x.dtype.type(init), pad(dims[0])[0], pad(dims[1])[0],
            size(dims[0], window_dimensions), size(dims[1], window_dimensions),
            size(dims[0], window_strides), size(dims[1], window_strides),
            size(dims[0], window_dilation), size(dims[1], window_dilation),
            size(dims[0], base_dilation), size(dims[1], base_dilation))
    # split by the elements read, a window's taps for each one written (max pooling's 2x2
    # windows over (128, 28, 28, 32): 0.85-0.87 ms on one thread, 0.47-0.48 on two)
    over_cores(_loop(), x5, out, args,
               work=out.size * size(dims[0], window_dimensions) * size(dims[1], window_dimensions))
    return out.reshape(out_shape)


def _make_reduce_window(kind: str, np_op, accepted):
    name = f"reduce_window_{kind}"
    prim = Primitive(name)

    def impl(x, *, window_dimensions, window_strides, padding, base_dilation, window_dilation):
        check_dtype(name, x, accepted)  # eager evaluation skips abstract_eval
        out_shape = _window_shape(x.shape, window_dimensions, window_strides, padding,
                                  base_dilation, window_dilation, name)
        init = _identity(kind, x.dtype)
        if 0 in out_shape:
            return np.full(out_shape, init, x.dtype)
        looped = _looped(kind, x, init, out_shape, window_dimensions, window_strides, padding,
                         base_dilation, window_dilation)
        if looped is not None:
            return looped
        cfg = _pad_config(padding, base_dilation)
        xp = _pad_impl(x, init, cfg) if any(any(c) for c in cfg) else x
        acc = None
        for starts, limits in _tap_slices(window_dimensions, window_strides, window_dilation,
                                          out_shape):
            view = xp[tuple(slice(a, b, s) for a, b, s in zip(starts, limits, window_strides))]
            acc = view.copy() if acc is None else np_op(acc, view, out=acc)
        return acc

    def abstract_eval(x, *, window_dimensions, window_strides, padding, base_dilation,
                      window_dilation):
        check_dtype(name, x, accepted)
        shape = _window_shape(x.shape, window_dimensions, window_strides, padding,
                              base_dilation, window_dilation, name)
        return ShapedArray(shape, x.dtype, x.weak_type)

    def batch(vals, dims, *, window_dimensions, window_strides, padding, base_dilation,
              window_dilation):
        (x,), (d,) = vals, dims
        ins = lambda t, v: tuple(t[:d]) + (v,) + tuple(t[d:])
        return prim.bind(x, window_dimensions=ins(window_dimensions, 1),
                         window_strides=ins(window_strides, 1), padding=ins(padding, (0, 0)),
                         base_dilation=ins(base_dilation, 1),
                         window_dilation=ins(window_dilation, 1)), d

    prim.def_impl(impl)
    prim.def_abstract_eval(abstract_eval)
    prim.weak_type_rule = lambda x, **params: dtypes.is_weakly_typed(x)
    batching.primitive_batchers[prim] = batch
    return prim


reduce_window_sum_p = _make_reduce_window("sum", np.add, NUMERIC)
def _ordered(impl):
    """lax.max / lax.min's impl (XLA's order of signed zeros) as a ufunc-like `op(a, b, out)`."""
    def op(a, b, out=None):
        r = impl(a, b)
        if out is None:
            return r
        out[...] = r
        return out
    return op


reduce_window_max_p = _make_reduce_window("max", _ordered(_max_impl), ANY)
reduce_window_min_p = _make_reduce_window("min", _ordered(_min_impl), ANY)


def _reduce_window_sum_transpose(ct, x, *, window_dimensions, window_strides, padding,
                                 base_dilation, window_dilation):
    if type(ct) is Zero:
        return [None]
    in_shape = x.aval.shape
    out_shape = get_aval(ct).shape
    if 0 in out_shape:
        return [ad.zeros_like_aval(x.aval)]
    if _tiles(in_shape, window_dimensions=window_dimensions, window_strides=window_strides,
              padding=padding, base_dilation=base_dilation, window_dilation=window_dilation):
        # each element is in exactly one window: the cotangent broadcast over its window
        split, out_axes = _tiled_split(in_shape, window_dimensions)
        return [reshape(broadcast_in_dim(ct, split, out_axes), in_shape)]
    # Spread ct by the strides, then sum every window that touched each padded position.
    cfg = []
    for n, w, s, (lo, hi), bd, wd, o in zip(in_shape, window_dimensions, window_strides, padding,
                                           base_dilation, window_dilation, out_shape):
        padded = _dilate(n, bd) + lo + hi
        extent = _dilate(w, wd)
        cfg.append((extent - 1, padded - _dilate(o, s), s - 1))
    spread = pad(ct, 0, cfg)
    ones = (1,) * len(in_shape)
    ct_padded = reduce_window_sum_p.bind(
        spread, window_dimensions=tuple(window_dimensions), window_strides=ones,
        padding=((0, 0),) * len(in_shape), base_dilation=ones,
        window_dilation=tuple(window_dilation))
    # Undo the operand's padding and base dilation: crop, then take every bd-th element.
    uncrop = pad(ct_padded, 0, [(-lo, -hi, 0) for lo, hi in padding])
    limits = tuple(_dilate(n, bd) for n, bd in zip(in_shape, base_dilation))
    return [lax_slice(uncrop, (0,) * len(in_shape), limits, tuple(base_dilation))]


deflinear(reduce_window_sum_p, _reduce_window_sum_transpose)


def _chooser_jvp(prim, kind):
    def jvp(primals, tangents, *, window_dimensions, window_strides, padding, base_dilation,
            window_dilation):
        (x,), (t,) = primals, tangents
        params = dict(window_dimensions=window_dimensions, window_strides=window_strides,
                      padding=padding, base_dilation=base_dilation,
                      window_dilation=window_dilation)
        out = prim.bind(x, **params)
        if type(t) is Zero:
            return out, Zero(get_aval(out).to_tangent_aval())
        x_aval = get_aval(x)
        if _tiles(x_aval.shape, **params):
            return out, _tiled_tangent(x, t, out, window_dimensions)
        cfg = _pad_config(padding, base_dilation)
        xp = pad(x, full((), _identity(kind, x_aval.dtype), x_aval.dtype), cfg)
        tp = pad(t, 0, cfg)
        out_shape = get_aval(out).shape
        zero = full(out_shape, 0, get_aval(t).dtype)
        taken, tangent = None, None
        for starts, limits in _tap_slices(window_dimensions, window_strides, window_dilation,
                                          out_shape):
            hit = eq(lax_slice(xp, starts, limits, window_strides), out)
            if taken is None:
                taken = hit
            else:
                hit = bitwise_and(hit, bitwise_not(taken))
                taken = bitwise_or(taken, hit)
            chosen = select(hit, lax_slice(tp, starts, limits, window_strides), zero)
            tangent = chosen if tangent is None else add(tangent, chosen)
        return out, tangent
    return jvp


def _tiles(shape, *, window_dimensions, window_strides, padding, base_dilation,
           window_dilation) -> bool:
    """Whether the windows tile the operand: no padding, no dilation, strides equal to the
    window, and every dimension a whole number of windows (2x2 pooling with stride 2)."""
    return tuple(window_dimensions) == tuple(window_strides) and \
        all(lo == hi == 0 for lo, hi in padding) and set(base_dilation) <= {1} and \
        set(window_dilation) <= {1} and all(n % w == 0 for n, w in zip(shape, window_dimensions))


def _tiled_split(shape, window_dimensions):
    """The operand's shape with each dimension split into (windows, window size), and the
    axes of the windows' counts (a window's taps are the axis after each)."""
    split = []
    for n, w in zip(shape, window_dimensions):
        split += [n // w, w]
    return tuple(split), tuple(range(0, 2 * len(shape), 2))


def _tiled_tangent(x, t, out, window_dimensions):
    """The chooser's tangent where the windows tile x: x and t reshaped so each window is a
    block of axes, the first tap (row-major) equal to the window's result chosen by a minimum
    over the taps' indices. The same choice as the tap-by-tap mask, without a padded copy per
    tap in the transpose: that is a select of the broadcast cotangent and a reshape."""
    split, out_axes = _tiled_split(get_aval(x).shape, window_dimensions)
    win_axes = [a + 1 for a in out_axes]
    xr, tr = reshape(x, split), reshape(t, split)
    hit = eq(xr, broadcast_in_dim(out, split, out_axes))
    tap, scale = None, 1
    for axis, w in reversed(list(zip(win_axes, window_dimensions))):
        if w > 1:
            term = broadcasted_iota(np.int32, split, axis)
            term = term if scale == 1 else mul(term, full(split, scale, np.int32))
            tap = term if tap is None else add(tap, term)
        scale *= w
    if tap is None:
        tap = full(split, 0, np.int32)
    first = reduce_min(select(hit, tap, full(split, scale, np.int32)), tuple(win_axes))
    chosen = eq(tap, broadcast_in_dim(first, split, out_axes))
    taken = select(chosen, tr, full(split, 0, get_aval(t).dtype))
    return reduce_sum(taken, tuple(win_axes))


ad.primitive_jvps[reduce_window_max_p] = _chooser_jvp(reduce_window_max_p, "max")
ad.primitive_jvps[reduce_window_min_p] = _chooser_jvp(reduce_window_min_p, "min")


# --- public functions ------------------------------------------------------------------------

def _canon_params(operand, window_dimensions, window_strides, padding, base_dilation,
                  window_dilation):
    shape = get_aval(operand).shape
    nd = len(shape)
    as_tuple = lambda v, d: (d,) * nd if v is None else tuple(operator.index(i) for i in v)
    dims = as_tuple(window_dimensions, 1)
    strides = as_tuple(window_strides, 1)
    base = as_tuple(base_dilation, 1)
    wdil = as_tuple(window_dilation, 1)
    if isinstance(padding, str):
        pads = padtype_to_pads([_dilate(n, b) for n, b in zip(shape, base)],
                               [_dilate(w, d) for w, d in zip(dims, wdil)], strides, padding)
    else:
        pads = padding
    try:
        pads = tuple((operator.index(lo), operator.index(hi)) for lo, hi in pads)
    except (TypeError, ValueError):
        raise ValueError(f"reduce_window padding must be 'SAME', 'VALID' or a sequence of "
                         f"(low, high) pairs, got {padding!r}.") from None
    return dict(window_dimensions=dims, window_strides=strides, padding=pads,
                base_dilation=base, window_dilation=wdil)


def reduce_window_sum(operand, window_dimensions, window_strides=None, padding="VALID",
                      base_dilation=None, window_dilation=None):
    return reduce_window_sum_p.bind(operand, **_canon_params(
        operand, window_dimensions, window_strides, padding, base_dilation, window_dilation))


def reduce_window_max(operand, window_dimensions, window_strides=None, padding="VALID",
                      base_dilation=None, window_dilation=None):
    return reduce_window_max_p.bind(operand, **_canon_params(
        operand, window_dimensions, window_strides, padding, base_dilation, window_dilation))


def reduce_window_min(operand, window_dimensions, window_strides=None, padding="VALID",
                      base_dilation=None, window_dilation=None):
    return reduce_window_min_p.bind(operand, **_canon_params(
        operand, window_dimensions, window_strides, padding, base_dilation, window_dilation))


def reduce_window(operand, init_value, computation, window_dimensions, window_strides,
                  padding, base_dilation=None, window_dilation=None):
    """lax.reduce_window for the monoids add, max and min with their identities as init."""
    from corejax import lax
    kinds = {lax.add: ("sum", reduce_window_sum), lax.max: ("max", reduce_window_max),
             lax.min: ("min", reduce_window_min)}
    if computation not in kinds:
        raise NotImplementedError("reduce_window supports computation=lax.add, lax.max or "
                                  f"lax.min, got {computation!r}.")
    kind, fn = kinds[computation]
    dtype = get_aval(operand).dtype
    try:
        init = np.asarray(init_value)
    except TypeError:
        raise NotImplementedError("reduce_window needs a concrete init_value (the identity of "
                                  "its computation).") from None
    if init.shape != () or init.astype(dtype) != _identity(kind, dtype):
        raise NotImplementedError(
            f"reduce_window with lax.{'add' if kind == 'sum' else kind} supports only its "
            f"identity ({_identity(kind, dtype)!r}) as init_value, got {init_value!r}.")
    return fn(operand, window_dimensions, window_strides, padding, base_dilation,
              window_dilation)


from corejax.lax.elementwise import (  # noqa: E402
    add, bitwise_and, bitwise_not, bitwise_or, eq, full, mul, select)
from corejax.lax.reductions import reduce_min, reduce_sum  # noqa: E402
from corejax.lax.structural import (  # noqa: E402
    broadcast_in_dim, broadcasted_iota, pad, reshape, slice as lax_slice)
