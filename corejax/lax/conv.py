"""conv_general_dilated: N-dimensional convolution (cross-correlation, as in XLA) with strides,
padding, input ("lhs") and kernel ("rhs") dilation, feature groups and batch groups.

Dimension numbers say where each logical axis lives: `lhs_spec = (batch, feature, *spatial)`,
`rhs_spec = (out_feature, in_feature, *spatial)`, `out_spec = (batch, feature, *spatial)`, each an
axis index of the corresponding array. Groups are laid out group-major on their axis: with
`feature_group_count=G` the lhs features are `(G, C/G)` and the kernel's output features
`(G, O/G)`; with `batch_group_count=B` the lhs batch is `(B, N/B)` and the kernel's output
features `(B, O/B)`.

The impl is im2col. Ungrouped convolutions of one or two spatial dimensions (float or complex)
gather their windows with a compiled loop and run one GEMM (lax/_conv_gemm.py, which the CPU
compiler also runs on its thread-adaptive BLAS call sites); the others take one strided
sliding-window view of the (padded, dilated) input, copied once so the contraction axes (taps,
channels) are last, then one GEMM per group. Reverse mode follows
from two transpose rules that are themselves convolutions, so gradients of any order stay
convolutions.
"""
from __future__ import annotations

import operator
from typing import NamedTuple

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from corejax import dtypes
from corejax.compiler import registry
from corejax.core import Primitive, ShapedArray, get_aval
from corejax.transforms import ad, batching
from corejax.transforms.ad import Zero, is_undefined_primal
from corejax.lax._factories import shape_str
from corejax.lax.structural import _pad_impl

__all__ = ["ConvDimensionNumbers", "conv_dimension_numbers", "conv_general_dilated", "conv",
           "conv_with_general_padding", "conv_transpose", "padtype_to_pads",
           "conv_general_dilated_p", "conv_general_permutations", "conv_shape_tuple",
           "conv_general_shape_tuple", "conv_transpose_shape_tuple", "reduce_window_shape_tuple",
           "conv_general_dilated_patches", "conv_general_dilated_local"]


class ConvDimensionNumbers(NamedTuple):
    """Axis indices of (batch, feature, *spatial) for lhs and out, (out, in, *spatial) for rhs."""
    lhs_spec: tuple
    rhs_spec: tuple
    out_spec: tuple


def _spec_from_string(spec: str, first: str, second: str, spatial_order: str, what: str):
    if len(set(spec)) != len(spec) or first not in spec or second not in spec:
        raise ValueError(f"conv dimension numbers: {what} spec {spec!r} must name each axis once "
                         f"and contain {first!r} and {second!r}.")
    rest = [c for c in spec if c not in (first, second)]
    if sorted(rest) != sorted(spatial_order):
        raise ValueError(f"conv dimension numbers: {what} spec {spec!r} has spatial axes "
                         f"{''.join(rest)!r}, which do not match the kernel's "
                         f"{spatial_order!r}.")
    return (spec.index(first), spec.index(second)) + tuple(spec.index(c) for c in spatial_order)


def conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers) -> ConvDimensionNumbers:
    """Normalizes None, a ConvDimensionNumbers, or strings like ('NHWC', 'HWIO', 'NHWC')."""
    ndim = len(lhs_shape)
    if len(rhs_shape) != ndim:
        raise TypeError(f"conv_general_dilated lhs and rhs must have the same rank, got shapes "
                        f"{shape_str(lhs_shape)} and {shape_str(rhs_shape)}.")
    if ndim < 2:
        raise TypeError(f"conv_general_dilated needs operands of rank at least 2, got shapes "
                        f"{shape_str(lhs_shape)} and {shape_str(rhs_shape)}.")
    if dimension_numbers is None:
        default = tuple(range(ndim))
        return ConvDimensionNumbers(default, default, default)
    if isinstance(dimension_numbers, ConvDimensionNumbers):
        specs = dimension_numbers
    else:
        if len(dimension_numbers) != 3:
            raise TypeError(f"conv dimension_numbers must have three entries (lhs, rhs, out), "
                            f"got {dimension_numbers!r}.")
        lhs, rhs, out = dimension_numbers
        if all(isinstance(s, str) for s in (lhs, rhs, out)):
            for spec, what in ((lhs, "lhs"), (rhs, "rhs"), (out, "out")):
                if len(spec) != ndim:
                    raise TypeError(f"conv dimension numbers: {what} spec {spec!r} has length "
                                    f"{len(spec)}, but the operands have rank {ndim}.")
            spatial = "".join(c for c in rhs if c not in "OI")
            specs = ConvDimensionNumbers(_spec_from_string(lhs, "N", "C", spatial, "lhs"),
                                         _spec_from_string(rhs, "O", "I", spatial, "rhs"),
                                         _spec_from_string(out, "N", "C", spatial, "out"))
        else:
            specs = ConvDimensionNumbers(*(tuple(operator.index(i) for i in s)
                                           for s in dimension_numbers))
    for spec, what in zip(specs, ("lhs", "rhs", "out")):
        if sorted(spec) != list(range(ndim)):
            raise TypeError(f"conv dimension numbers: {what} spec {spec} must be a permutation "
                            f"of range({ndim}).")
    return ConvDimensionNumbers(*(tuple(s) for s in specs))


def padtype_to_pads(in_shape, window_shape, window_strides, padding: str):
    """Explicit (low, high) pads for 'SAME', 'SAME_LOWER' or 'VALID' padding."""
    kind = padding.upper() if isinstance(padding, str) else padding
    if kind == "VALID":
        return [(0, 0)] * len(in_shape)
    if kind not in ("SAME", "SAME_LOWER"):
        raise ValueError(f"Unknown padding {padding!r}: expected 'SAME', 'SAME_LOWER', 'VALID' "
                         "or a sequence of (low, high) pairs.")
    pads = []
    for n, k, s in zip(in_shape, window_shape, window_strides):
        out = -(-n // s)
        total = max((out - 1) * s + k - n, 0)
        small, big = total // 2, total - total // 2
        pads.append((small, big) if kind == "SAME" else (big, small))
    return pads


def _dilate(n: int, d: int) -> int:
    return 0 if n == 0 else (n - 1) * d + 1


def _out_size(n, k, stride, pad, lhs_dil, rhs_dil) -> int:
    padded = _dilate(n, lhs_dil) + pad[0] + pad[1]
    return max(0, (padded - _dilate(k, rhs_dil)) // stride + 1)


def _logical(shape, spec):
    return tuple(shape[i] for i in spec)


def _physical(logical_shape, spec):
    out = [0] * len(spec)
    for size, axis in zip(logical_shape, spec):
        out[axis] = size
    return tuple(out)


# --- the primitive ---------------------------------------------------------------------------

def _conv_shape(lhs_shape, rhs_shape, window_strides, padding, lhs_dilation, rhs_dilation,
                dimension_numbers, feature_group_count, batch_group_count):
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    n, c, *in_sp = _logical(lhs_shape, lhs_spec)
    o, i, *k_sp = _logical(rhs_shape, rhs_spec)
    shapes = f"lhs shape {shape_str(lhs_shape)} and rhs shape {shape_str(rhs_shape)}"
    g, b = feature_group_count, batch_group_count
    if g < 1 or b < 1:
        raise ValueError(f"conv_general_dilated feature_group_count and batch_group_count must "
                         f"be positive, got {g} and {b}.")
    if g > 1 and b > 1:
        raise ValueError("conv_general_dilated: at most one of feature_group_count and "
                         f"batch_group_count may exceed 1, got {g} and {b}.")
    nsp = len(in_sp)
    for name, val in (("window_strides", window_strides), ("padding", padding),
                      ("lhs_dilation", lhs_dilation), ("rhs_dilation", rhs_dilation)):
        if len(val) != nsp:
            raise ValueError(f"conv_general_dilated {name} must have one entry per spatial "
                             f"dimension ({nsp}), got {tuple(val)}.")
    for name, val in (("window_strides", window_strides), ("lhs_dilation", lhs_dilation),
                      ("rhs_dilation", rhs_dilation)):
        if any(v < 1 for v in val):
            raise ValueError(f"conv_general_dilated {name} must be positive, got {tuple(val)}.")
    if c % g:
        raise ValueError(f"conv_general_dilated lhs feature dimension size ({c}) must be a "
                         f"multiple of feature_group_count ({g}); got {shapes}.")
    if c // g != i:
        raise ValueError(f"conv_general_dilated lhs feature dimension size divided by "
                         f"feature_group_count ({c} // {g} = {c // g}) must equal the rhs input "
                         f"feature dimension size ({i}); got {shapes}.")
    if o % g or o % b:
        raise ValueError(f"conv_general_dilated rhs output feature dimension size ({o}) must be a "
                         f"multiple of feature_group_count ({g}) and batch_group_count ({b}); "
                         f"got {shapes}.")
    if n % b:
        raise ValueError(f"conv_general_dilated lhs batch dimension size ({n}) must be a multiple "
                         f"of batch_group_count ({b}); got {shapes}.")
    out_sp = tuple(_out_size(*args) for args in
                   zip(in_sp, k_sp, window_strides, padding, lhs_dilation, rhs_dilation))
    return _physical((n // b, o) + out_sp, out_spec)


def _conv_abstract(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                   dimension_numbers, feature_group_count, batch_group_count, precision=None,
                   preferred_element_type=None):
    if lhs.ndim != rhs.ndim:
        raise TypeError(f"conv_general_dilated lhs and rhs must have the same rank, got shapes "
                        f"{shape_str(lhs.shape)} and {shape_str(rhs.shape)}.")
    if lhs.dtype != rhs.dtype and preferred_element_type is None:
        raise TypeError(f"conv_general_dilated requires operands of the same dtype, got "
                        f"{lhs.dtype} and {rhs.dtype}.")
    if lhs.dtype == np.bool_:
        raise TypeError("conv_general_dilated does not accept boolean operands.")
    shape = _conv_shape(lhs.shape, rhs.shape, window_strides, padding, lhs_dilation,
                        rhs_dilation, dimension_numbers, feature_group_count, batch_group_count)
    return ShapedArray(shape, preferred_element_type or lhs.dtype,
                       lhs.weak_type and rhs.weak_type)


def _conv_impl(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
               dimension_numbers, feature_group_count, batch_group_count, precision=None,
               preferred_element_type=None):
    # Eager evaluation skips abstract_eval; its checks give the clear errors.
    _conv_abstract(ShapedArray(lhs.shape, lhs.dtype), ShapedArray(rhs.shape, rhs.dtype),
                   window_strides=window_strides, padding=padding, lhs_dilation=lhs_dilation,
                   rhs_dilation=rhs_dilation, dimension_numbers=dimension_numbers,
                   feature_group_count=feature_group_count, batch_group_count=batch_group_count,
                   preferred_element_type=preferred_element_type)
    form = _gemm_form(lhs, rhs, window_strides=window_strides, padding=padding,
                      lhs_dilation=lhs_dilation, rhs_dilation=rhs_dilation,
                      dimension_numbers=dimension_numbers,
                      feature_group_count=feature_group_count,
                      batch_group_count=batch_group_count,
                      preferred_element_type=preferred_element_type)
    if form is not None:
        # as compiled programs run it (compiler/cpu.py's GEMM steps): the same bits
        from corejax.compiler import blas, conv_blocks
        out = None if form.blocks is None else conv_blocks.image_blocks(form, np.empty)
        return form.whole(blas.matmul) if out is None else out
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    out_dtype = np.dtype(preferred_element_type or lhs.dtype)
    # Channels-last internally, so every tap is a (N, *out, C) view and the GEMM is contiguous.
    x = np.transpose(lhs, (lhs_spec[0],) + tuple(lhs_spec[2:]) + (lhs_spec[1],))
    # (O, *kernel, I): the (tap, channel) order of the windows below.
    w = np.transpose(rhs, (rhs_spec[0],) + tuple(rhs_spec[2:]) + (rhs_spec[1],))
    w = w.astype(out_dtype, copy=False)
    x = x.astype(out_dtype, copy=False)
    nsp = x.ndim - 2
    cfg = [(0, 0, 0)] + [(lo, hi, d - 1) for (lo, hi), d in zip(padding, lhs_dilation)] \
        + [(0, 0, 0)]
    if any(any(c) for c in cfg):
        x = _pad_impl(x, out_dtype.type(0), cfg)
    n, c = x.shape[0], x.shape[-1]
    o, *k_sp, i = w.shape
    out_sp = tuple(max(0, (x.shape[1 + d] - _dilate(k_sp[d], rhs_dilation[d]))
                       // window_strides[d] + 1) for d in range(nsp))
    g, b = feature_group_count, batch_group_count
    groups = max(g, b)
    out_logical = (n // b, o) + out_sp
    if 0 in out_logical or c == 0 or 0 in k_sp:
        return np.zeros(_physical(out_logical, out_spec), out_dtype)
    # (N, *out, *kernel, C): one strided view of every window (sliding windows taken at the
    # stride, their taps at the kernel dilation), copied once so the contraction axes (kernel
    # taps, channels) are last and contiguous. No Python loop over taps or output positions:
    # a kernel gradient is a convolution whose "kernel" is a whole feature map.
    windows = sliding_window_view(x, [_dilate(k, d) for k, d in zip(k_sp, rhs_dilation)],
                                  axis=tuple(range(1, 1 + nsp)))
    windows = windows[(slice(None),) + tuple(slice(None, None, s) for s in window_strides)
                      + (slice(None),) + tuple(slice(None, None, d) for d in rhs_dilation)]
    cols = np.ascontiguousarray(windows.transpose(
        (0,) + tuple(range(1, 1 + nsp)) + tuple(range(2 + nsp, 2 + 2 * nsp)) + (1 + nsp,)))
    kk = int(np.prod(k_sp))
    p = int(np.prod(out_sp))
    # Kernel as (groups, O/groups, K*I), matching the (tap, channel) order of cols.
    wm = w.reshape(groups, o // groups, kk * i)
    if b > 1:
        a = cols.reshape(b, (n // b) * p, kk * c)
        rows = lambda gi: a[gi]
    elif g > 1:
        a = cols.reshape(n * p, kk, g, c // g)
        rows = lambda gi: a[:, :, gi].reshape(n * p, kk * (c // g))
    else:
        a = cols.reshape(1, n * p, kk * c)
        rows = lambda gi: a[gi]
    # One 2-D GEMM per group, made as every product of the backend is (compiler/blas.py:
    # corejax's own GEMM for float32)
    from corejax.compiler import blas
    out = np.empty((groups, (n // b) * p, o // groups), out_dtype)
    for gi in range(groups):
        blas.matmul(rows(gi), wm[gi].T, out[gi])
    out = out.transpose(1, 0, 2).reshape((n // b,) + out_sp + (o,))
    out = np.moveaxis(out, -1, 1)
    return np.ascontiguousarray(np.transpose(out, np.argsort(out_spec)))


def _gemm_form(lhs, rhs, scratch=None, **params):
    """The convolution as one GEMM where it has that form (lax/_conv_gemm.py), else None."""
    from corejax.lax._conv_gemm import gemm_form
    return gemm_form(lhs, rhs, scratch, **params)


conv_general_dilated_p = Primitive("conv_general_dilated")
conv_general_dilated_p.def_impl(_conv_impl)
# Under jit on CPU: the gathered matrix and the output in the executable's pooled buffers, the
# product on a thread-adaptive BLAS call site (compiler/cpu.py); other convolutions run _conv_impl.
registry.def_kernel(conv_general_dilated_p, ("gemm", _gemm_form))
conv_general_dilated_p.def_abstract_eval(_conv_abstract)
conv_general_dilated_p.weak_type_rule = lambda lhs, rhs, **p: (dtypes.is_weakly_typed(lhs)
                                                               and dtypes.is_weakly_typed(rhs))


def _split_axis_into(x, src: int, groups: int, dst: int):
    """Splits axis `src` (size groups*m, group-major) and makes the group factor the major
    factor of axis `dst`; the result has the same rank, with `src` of size m."""
    shape = get_aval(x).shape
    m = shape[src] // groups
    x = reshape(x, shape[:src] + (groups, m) + shape[src + 1:])
    # Without the group axis, `dst` is again at position dst; the group axis goes just before.
    x = batching.moveaxis(x, src, dst)
    s = get_aval(x).shape
    return reshape(x, s[:dst] + (s[dst] * s[dst + 1],) + s[dst + 2:])


def _transpose_params(ct, other, params):
    """Operands and dtype for a transpose conv: the cotangent's dtype rules, cast back after."""
    other_dt = get_aval(other).dtype
    ct_dt = get_aval(ct).dtype
    if other_dt != ct_dt:
        other = convert_element_type(other, ct_dt)
    return other, dict(params, preferred_element_type=None)


def _finish(out, aval):
    if get_aval(out).dtype != aval.dtype:
        out = convert_element_type(out, aval.dtype)
    return out


def _conv_transpose_lhs(ct, rhs, lhs_aval, *, window_strides, padding, lhs_dilation,
                        rhs_dilation, dimension_numbers, feature_group_count, batch_group_count,
                        precision=None, preferred_element_type=None):
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    groups = max(feature_group_count, batch_group_count)
    if groups > 1:
        # Kernel (G*Og, I) -> (Og, G*I): the transposed conv maps G*Og features to G*I.
        rhs = _split_axis_into(rhs, rhs_spec[0], groups, rhs_spec[1])
    rhs = rev(rhs, tuple(rhs_spec[2:]))
    in_sp = _logical(lhs_aval.shape, lhs_spec)[2:]
    k_sp = _logical(get_aval(rhs).shape, rhs_spec)[2:]
    out_sp = _logical(get_aval(ct).shape, out_spec)[2:]
    pads = []
    for n, k, o, s, (lo, _), ld, rd in zip(in_sp, k_sp, out_sp, window_strides, padding,
                                          lhs_dilation, rhs_dilation):
        ek = _dilate(k, rd)
        new_lo = ek - 1 - lo
        pads.append((new_lo, _dilate(n, ld) + ek - 1 - _dilate(o, s) - new_lo))
    t_rhs_spec = (rhs_spec[1], rhs_spec[0]) + tuple(rhs_spec[2:])
    out = conv_general_dilated_p.bind(
        ct, rhs, window_strides=tuple(lhs_dilation), padding=tuple(pads),
        lhs_dilation=tuple(window_strides), rhs_dilation=tuple(rhs_dilation),
        dimension_numbers=ConvDimensionNumbers(out_spec, t_rhs_spec, lhs_spec),
        feature_group_count=groups, batch_group_count=1, precision=precision,
        preferred_element_type=preferred_element_type)
    if batch_group_count > 1:
        # Output features (B, C) -> the batch axis (B, N/B).
        out = _split_axis_into(out, lhs_spec[1], batch_group_count, lhs_spec[0])
    return out


def _conv_transpose_rhs(ct, lhs, rhs_aval, *, window_strides, padding, lhs_dilation,
                        rhs_dilation, dimension_numbers, feature_group_count, batch_group_count,
                        precision=None, preferred_element_type=None):
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    in_sp = _logical(get_aval(lhs).shape, lhs_spec)[2:]
    k_sp = _logical(rhs_aval.shape, rhs_spec)[2:]
    out_sp = _logical(get_aval(ct).shape, out_spec)[2:]
    pads = []
    for n, k, o, s, (lo, _), ld, rd in zip(in_sp, k_sp, out_sp, window_strides, padding,
                                          lhs_dilation, rhs_dilation):
        pads.append((lo, _dilate(k, rd) - 1 + _dilate(o, s) - _dilate(n, ld) - lo))
    swap = lambda spec: (spec[1], spec[0]) + tuple(spec[2:])
    # lhs's features play the batch, ct plays the kernel; feature and batch groups trade places.
    return conv_general_dilated_p.bind(
        lhs, ct, window_strides=tuple(rhs_dilation), padding=tuple(pads),
        lhs_dilation=tuple(lhs_dilation), rhs_dilation=tuple(window_strides),
        dimension_numbers=ConvDimensionNumbers(swap(lhs_spec), swap(out_spec), swap(rhs_spec)),
        feature_group_count=batch_group_count, batch_group_count=feature_group_count,
        precision=precision, preferred_element_type=preferred_element_type)


def _conv_transpose(ct, lhs, rhs, **params):
    if type(ct) is Zero:
        return [None, None]
    if is_undefined_primal(lhs):
        rhs_, p = _transpose_params(ct, rhs, params)
        return [_finish(_conv_transpose_lhs(ct, rhs_, lhs.aval, **p), lhs.aval), None]
    lhs_, p = _transpose_params(ct, lhs, params)
    return [None, _finish(_conv_transpose_rhs(ct, lhs_, rhs.aval, **p), rhs.aval)]


def _fold_batch(x, bdim: int, axis: int, groups: int):
    """Removes the vmapped axis `bdim` of `x` by folding it into `axis` (numbered without the
    vmapped axis), whose size groups*m becomes groups*B*m laid out (group, B, m)."""
    x = batching.moveaxis(x, bdim, 0)
    shape = get_aval(x).shape
    vb, rest = shape[0], shape[1:]
    m = rest[axis] // groups
    x = reshape(x, (vb,) + rest[:axis] + (groups, m) + rest[axis + 1:])
    x = batching.moveaxis(x, 0, axis + 1)  # now (..., groups, B, m, ...)
    return reshape(x, rest[:axis] + (groups * vb * m,) + rest[axis + 1:])


def _unfold_batch(x, axis: int, groups: int, vb: int):
    """Inverse of _fold_batch: splits `axis` (group, B, m) and returns x with B in front."""
    shape = get_aval(x).shape
    m = shape[axis] // (groups * vb)
    x = reshape(x, shape[:axis] + (groups, vb, m) + shape[axis + 1:])
    x = batching.moveaxis(x, axis + 1, 0)
    return reshape(x, (vb,) + shape[:axis] + (groups * m,) + shape[axis + 1:])


def _conv_batch(axis_size, vals, dims, **params):
    lhs, rhs = vals
    dl, dr = dims
    lhs_spec, rhs_spec, out_spec = params["dimension_numbers"]
    g, b = params["feature_group_count"], params["batch_group_count"]
    if dl is not None and dr is not None:
        if b > 1:
            # Each (vmap index, batch group) pair becomes a batch group of its own.
            lhs = _fold_batch(lhs, dl, lhs_spec[0], 1)
            params = dict(params, batch_group_count=b * axis_size)
        else:
            lhs = _fold_batch(lhs, dl, lhs_spec[1], 1)
            params = dict(params, feature_group_count=g * axis_size)
        rhs = _fold_batch(rhs, dr, rhs_spec[0], 1)
        out = conv_general_dilated_p.bind(lhs, rhs, **params)
        return _unfold_batch(out, out_spec[1], 1, axis_size), 0
    if dl is not None:
        lhs = _fold_batch(lhs, dl, lhs_spec[0], b)
        out = conv_general_dilated_p.bind(lhs, rhs, **params)
        return _unfold_batch(out, out_spec[0], 1, axis_size), 0
    groups = max(g, b)
    rhs = _fold_batch(rhs, dr, rhs_spec[0], groups)
    out = conv_general_dilated_p.bind(lhs, rhs, **params)
    return _unfold_batch(out, out_spec[1], groups, axis_size), 0


_conv_batch.needs_axis_size = True
ad.defbilinear(conv_general_dilated_p, _conv_transpose)
batching.primitive_batchers[conv_general_dilated_p] = _conv_batch


# --- public functions ------------------------------------------------------------------------

def _int_tuple(val, n: int, name: str, default=1):
    if val is None:
        return (default,) * n
    if isinstance(val, int):
        return (val,) * n
    val = tuple(operator.index(v) for v in val)
    if len(val) != n:
        raise ValueError(f"conv_general_dilated {name} must have {n} entries (one per spatial "
                         f"dimension), got {val}.")
    return val


def _explicit_padding(padding, n: int):
    try:
        pads = tuple((operator.index(lo), operator.index(hi)) for lo, hi in padding)
    except (TypeError, ValueError):
        raise ValueError(f"padding must be 'SAME', 'SAME_LOWER', 'VALID' or a sequence of "
                         f"(low, high) integer pairs, got {padding!r}.") from None
    if len(pads) != n:
        raise ValueError(f"padding must have {n} (low, high) pairs (one per spatial dimension), "
                         f"got {padding!r}.")
    return pads


def conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=None,
                         rhs_dilation=None, dimension_numbers=None, feature_group_count=1,
                         batch_group_count=1, precision=None, preferred_element_type=None):
    """General dilated convolution, with JAX's (XLA's) semantics."""
    la, ra = get_aval(lhs), get_aval(rhs)
    dnums = conv_dimension_numbers(la.shape, ra.shape, dimension_numbers)
    nsp = la.ndim - 2
    strides = _int_tuple(window_strides, nsp, "window_strides")
    lhs_dil = _int_tuple(lhs_dilation, nsp, "lhs_dilation")
    rhs_dil = _int_tuple(rhs_dilation, nsp, "rhs_dilation")
    if isinstance(padding, str):
        if any(d != 1 for d in lhs_dil):
            raise ValueError("conv_general_dilated: string padding is not supported together with "
                             "lhs_dilation; give explicit (low, high) pairs or use "
                             "lax.conv_transpose.")
        k_sp = _logical(ra.shape, dnums.rhs_spec)[2:]
        pads = padtype_to_pads(_logical(la.shape, dnums.lhs_spec)[2:],
                               [_dilate(k, d) for k, d in zip(k_sp, rhs_dil)], strides, padding)
        pads = tuple(tuple(p) for p in pads)
    else:
        pads = _explicit_padding(padding, nsp)
    pet = None if preferred_element_type is None else \
        dtypes.canonicalize_dtype(preferred_element_type)
    return conv_general_dilated_p.bind(
        lhs, rhs, window_strides=strides, padding=pads, lhs_dilation=lhs_dil,
        rhs_dilation=rhs_dil, dimension_numbers=dnums,
        feature_group_count=operator.index(feature_group_count),
        batch_group_count=operator.index(batch_group_count), precision=None,
        preferred_element_type=pet)


def conv(lhs, rhs, window_strides, padding, precision=None, preferred_element_type=None):
    """Convolution in NCHW / OIHW layout without dilation."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_with_general_padding(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                              precision=None, preferred_element_type=None):
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                                precision=precision, preferred_element_type=preferred_element_type)


def _conv_transpose_pads(k: int, s: int, padding: str):
    """Padding that makes a stride-`s` transposed conv the gradient of a strided conv."""
    if padding == "SAME":
        total = k + s - 2
        lo = k - 1 if s > k - 1 else -(-total // 2)
    elif padding == "VALID":
        total = k + s - 2 + max(k - s, 0)
        lo = k - 1
    else:
        raise ValueError(f"conv_transpose padding must be 'SAME', 'VALID' or explicit pairs, got "
                         f"{padding!r}.")
    return lo, total - lo


def conv_transpose(lhs, rhs, strides, padding, rhs_dilation=None, dimension_numbers=None,
                   transpose_kernel: bool = False, precision=None, preferred_element_type=None):
    """Transposed ("fractionally strided") convolution: the input is dilated by `strides`."""
    la, ra = get_aval(lhs), get_aval(rhs)
    nsp = la.ndim - 2
    if dimension_numbers is None:
        if nsp > 3:
            raise ValueError(f"conv_transpose has no default dimension_numbers for {nsp} "
                             "spatial dimensions; pass them explicitly.")
        sp = "HWD"[:nsp]
        dimension_numbers = (f"N{sp}C", f"{sp}IO", f"N{sp}C")
    dnums = conv_dimension_numbers(la.shape, ra.shape, dimension_numbers)
    rhs_dil = _int_tuple(rhs_dilation, nsp, "rhs_dilation")
    strides = _int_tuple(strides, nsp, "strides")
    k_sp = _logical(ra.shape, dnums.rhs_spec)[2:]
    if isinstance(padding, str):
        pads = [_conv_transpose_pads(_dilate(k, d), s, padding.upper())
                for k, d, s in zip(k_sp, rhs_dil, strides)]
    else:
        pads = padding
    if transpose_kernel:
        rhs = rev(rhs, tuple(dnums.rhs_spec[2:]))
        perm = list(range(ra.ndim))
        perm[dnums.rhs_spec[0]], perm[dnums.rhs_spec[1]] = dnums.rhs_spec[1], dnums.rhs_spec[0]
        rhs = transpose(rhs, tuple(perm))
    return conv_general_dilated(lhs, rhs, (1,) * nsp, pads, strides, rhs_dil, dnums,
                                precision=precision, preferred_element_type=preferred_element_type)


# --- shape arithmetic ------------------------------------------------------------------------

def conv_general_permutations(dimension_numbers):
    """For string specs like ('NHWC', 'HWIO', 'NHWC'): the axis permutations taking each array
    to (batch, feature, *spatial) / (out, in, *spatial) order, spatial axes in the kernel's
    order."""
    try:
        lhs, rhs, out = dimension_numbers
    except (TypeError, ValueError):
        raise TypeError(f"conv_general_permutations expects three spec strings such as "
                        f"('NHWC', 'HWIO', 'NHWC'), got {dimension_numbers!r}.") from None
    for i, (spec, chars) in enumerate(((lhs, "NC"), (rhs, "OI"), (out, "NC"))):
        if not isinstance(spec, str) or any(spec.count(c) != 1 for c in chars):
            raise TypeError(f"convolution dimension_numbers[{i}] must contain the characters "
                            f"{chars[0]!r} and {chars[1]!r} exactly once, got {spec}.")
        if len(set(spec)) != len(spec):
            raise TypeError(f"convolution dimension_numbers[{i}] cannot have duplicate "
                            f"characters, got {spec}.")
    if not len(lhs) == len(rhs) == len(out):
        raise TypeError(f"convolution dimension_numbers must have the same length, got "
                        f"{len(lhs)}, {len(rhs)} and {len(out)}.")
    spatial = [c for c in rhs if c not in "OI"]
    for spec in (lhs, out):
        if sorted(c for c in spec if c not in "NC") != sorted(spatial):
            raise TypeError(f"convolution dimension_numbers: the spatial characters of {spec} "
                            f"do not match the kernel's {''.join(spatial)}.")
    perm = lambda spec, a, b: (spec.index(a), spec.index(b)) + tuple(spec.index(c)
                                                                     for c in spatial)
    return perm(lhs, "N", "C"), perm(rhs, "O", "I"), perm(out, "N", "C")


def _window_out(n, k, stride, lo, hi, base_dilation=1, window_dilation=1):
    padded = _dilate(n, base_dilation) + lo + hi
    return max(0, (padded - _dilate(k, window_dilation)) // stride + 1)


def conv_shape_tuple(lhs_shape, rhs_shape, strides, pads, batch_group_count=1):
    """The output shape of a convolution of NC... `lhs_shape` with OI... `rhs_shape`."""
    if isinstance(pads, str):
        pads = padtype_to_pads(lhs_shape[2:], rhs_shape[2:], strides, pads)
    if len(pads) != len(lhs_shape) - 2:
        raise TypeError(f"Wrong number of explicit pads for convolution: expected "
                        f"{len(lhs_shape) - 2}, got {len(pads)}.")
    spatial = tuple(_window_out(n, k, s, lo, hi) for n, k, s, (lo, hi) in
                    zip(lhs_shape[2:], rhs_shape[2:], strides, pads))
    return (lhs_shape[0] // batch_group_count, rhs_shape[0]) + spatial


def conv_general_shape_tuple(lhs_shape, rhs_shape, window_strides, padding, dimension_numbers):
    """The output shape of a convolution with string dimension numbers."""
    lhs_perm, rhs_perm, out_perm = conv_general_permutations(dimension_numbers)
    out = conv_shape_tuple(_logical(lhs_shape, lhs_perm), _logical(rhs_shape, rhs_perm),
                           window_strides, padding)
    return _physical(out, out_perm)


def conv_transpose_shape_tuple(lhs_shape, rhs_shape, window_strides, padding,
                               dimension_numbers):
    """The output shape of lax.conv_transpose with string dimension numbers."""
    lhs_perm, rhs_perm, out_perm = conv_general_permutations(dimension_numbers)
    lhs_l, rhs_l = _logical(lhs_shape, lhs_perm), _logical(rhs_shape, rhs_perm)
    if isinstance(padding, str):
        padding = [_conv_transpose_pads(k, s, padding.upper())
                   for k, s in zip(rhs_l[2:], window_strides)]
    spatial = tuple((n - 1) * s + 1 - k + 1 + lo + hi for n, k, s, (lo, hi) in
                    zip(lhs_l[2:], rhs_l[2:], window_strides, padding))
    return _physical((lhs_l[0], rhs_l[0]) + spatial, out_perm)


def reduce_window_shape_tuple(operand_shape, window_dimensions, window_strides, padding,
                              base_dilation=None, window_dilation=None):
    """The output shape of lax.reduce_window with explicit (low, high) padding pairs."""
    n = len(operand_shape)
    base_dilation = base_dilation or (1,) * n
    window_dilation = window_dilation or (1,) * n
    if isinstance(padding, str):
        dilated = [_dilate(k, d) for k, d in zip(window_dimensions, window_dilation)]
        padding = padtype_to_pads([_dilate(x, d) for x, d in zip(operand_shape, base_dilation)],
                                  dilated, window_strides, padding)
    return tuple(_window_out(*a) for a in zip(operand_shape, window_dimensions, window_strides,
                                              [p[0] for p in padding], [p[1] for p in padding],
                                              base_dilation, window_dilation))


# --- patches and unshared (locally connected) convolutions ---------------------------------

def _canonical_spec(n):
    return tuple(range(n))


def conv_general_dilated_patches(lhs, filter_shape, window_strides, padding, lhs_dilation=None,
                                 rhs_dilation=None, dimension_numbers=None, precision=None,
                                 preferred_element_type=None):
    """The patches a convolution with a kernel of spatial shape `filter_shape` sees, as the
    feature axis of the output (size C * prod(filter_shape), channel-major): a convolution
    with an identity kernel, one group per input channel."""
    la = get_aval(lhs)
    nsp = la.ndim - 2
    filter_shape = tuple(operator.index(k) for k in filter_shape)
    if len(filter_shape) != nsp:
        raise ValueError(f"conv_general_dilated_patches: filter_shape {filter_shape} must have "
                         f"one entry per spatial dimension ({nsp}).")
    taps = int(np.prod(filter_shape, dtype=np.int64))
    rhs_shape = (taps, 1) + filter_shape
    if dimension_numbers is None:
        dimension_numbers = ConvDimensionNumbers(_canonical_spec(la.ndim),
                                                 _canonical_spec(la.ndim),
                                                 _canonical_spec(la.ndim))
    dnums = conv_dimension_numbers(la.shape, la.shape, dimension_numbers)
    dnums = ConvDimensionNumbers(dnums.lhs_spec, _canonical_spec(la.ndim), dnums.out_spec)
    channels = _logical(la.shape, dnums.lhs_spec)[1]
    eye = np.eye(taps, dtype=la.dtype).reshape(rhs_shape)
    kernel = np.tile(eye, (channels,) + (1,) * (la.ndim - 1))
    return conv_general_dilated(lhs, convert_element_type(kernel, la.dtype), window_strides,
                                padding, lhs_dilation, rhs_dilation, dnums,
                                feature_group_count=channels, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_general_dilated_local(lhs, rhs, window_strides, padding, filter_shape,
                               lhs_dilation=None, rhs_dilation=None, dimension_numbers=None,
                               precision=None):
    """A locally connected ("unshared") convolution: a separate kernel at every output
    position. `rhs` has the output's spatial shape and C * prod(filter_shape) input features
    (channel-major, the order of conv_general_dilated_patches)."""
    la, ra = get_aval(lhs), get_aval(rhs)
    ndim = la.ndim
    if dimension_numbers is None:
        dimension_numbers = ConvDimensionNumbers(*(_canonical_spec(ndim),) * 3)
    dnums = conv_dimension_numbers(la.shape, ra.shape, dimension_numbers)
    canon = _canonical_spec(ndim)
    patches = conv_general_dilated_patches(
        lhs, filter_shape, window_strides, padding, lhs_dilation, rhs_dilation,
        ConvDimensionNumbers(dnums.lhs_spec, canon, canon), precision=precision)
    kernel = transpose(rhs, dnums.rhs_spec)  # (O, C*taps, *spatial)
    spatial = tuple(range(2, ndim))
    # one contraction per output position: the spatial axes are batch axes of dot_general
    out = dot_general(patches, kernel, (((1,), (1,)), (spatial, spatial)), precision=precision)
    out = transpose(out, (ndim - 2, ndim - 1) + tuple(range(ndim - 2)))  # (N, O, *spatial)
    return transpose(out, tuple(int(i) for i in np.argsort(dnums.out_spec)))


from corejax.lax.dot import dot_general  # noqa: E402
from corejax.lax.elementwise import convert_element_type  # noqa: E402
from corejax.lax.structural import reshape, rev, transpose  # noqa: E402
