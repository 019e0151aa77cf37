"""A convolution of one or two spatial dimensions as a single GEMM over an im2col matrix.

conv_general_dilated's impl and its CPU lowering (compiler/cpu.py, through the `("gemm", ...)`
kernel entry in compiler/registry.py) share `gemm_form`: it gathers every window of the input
into one matrix with a compiled loop (padding, strides, input and kernel dilation all resolved
in its indexing: no padded copy, no strided view copied by NumPy), views the kernel as the
other matrix, and says how the (rows, out features) product is the output. The caller runs the
product: np.matmul eagerly, the compiler's thread-adaptive BLAS call sites under jit.

Which matrix is gathered depends on where the input's feature and batch axes live:

- feature axis inside the batch axis (NHWC, and NCHW): rows are (batch, *out positions), the
  reduction is (*kernel taps, features), features innermost. The product (rows, O) is the
  output in NHWC order: a forward convolution or an input gradient writes its result in place.
- batch axis inside the feature axis (the kernel gradient of an NHWC convolution, whose
  "batch" is the forward pass's feature axis and whose "kernel" is the output gradient): the
  matrix is gathered transposed, (features, *taps) x (*out positions, batch), read by BLAS
  with its transpose flag; the kernel operand is then the output gradient as it is stored,
  and the product (positions, batch, O) is the kernel gradient in HWIO order.

- where multiplying the input as it is by every tap's kernel gives a smaller product than the
  gathered windows (fewer output than input features: the input gradient of a layer that
  widens), the product comes first, (batch, *in positions) x (taps, O), and a compiled loop
  sums each output's taps from it, in row-major tap order. An image's outputs read only its
  own rows of the product, so the form also offers the product and the sums in blocks of
  images (`ImageBlocks`): compiled programs run those blocks over the cores, each block's
  product still in cache when its taps are summed (compiler/conv_blocks.image_blocks). A forward
  convolution's gather can run in the same blocks, each block's windows gathered just before
  their product reads them (into the whole buffer: its kernel gradient reads it again).

Gathers and tap sums writing a million elements or more are split over the machine's cores
(`_split.over_cores`).

The choice depends only on shapes and dimension numbers, never on strides, so an eager call
and the same convolution inside a compiled program sum in the same order. Grouped
convolutions, three or more spatial dimensions and dtypes other than float32 / float64 /
complex keep the general impl (lax/conv.py).
"""
from __future__ import annotations

import functools
from typing import Callable, NamedTuple, Optional

import numpy as np

from corejax.lax._split import over_cores

__all__ = ["gemm_form", "GemmForm", "ImageBlocks"]


class ImageBlocks(NamedTuple):
    """A form whose product may also be made a block of images at a time: the product's rows
    for images [i0, i1) are rows [i0 * rows, i1 * rows) of a @ b and read only those images'
    rows of `a`, so blocks may run in any order and on any thread, each block's rows staying
    in cache from one stage to the next.

    - prepare(i0, i1), where given, writes a's rows for those images (their windows' gather)
      before their product; prepare(0, images) writes all of a (over the cores).
    - finish_block(product_rows, i0, i1), where given, writes those images' part of the
      output from their product rows, and result() is the output once every block is
      finished; where not, the product itself is the output's matrix: finish(product)."""
    images: int
    rows: int
    prepare: Optional[Callable] = None
    finish_block: Optional[Callable] = None
    result: Optional[Callable] = None


class GemmForm(NamedTuple):
    """The convolution is finish(a @ b); where `blocks` is given it is also the result of
    running the product in blocks (ImageBlocks), with the same bits where the blocks' products
    have the whole product's."""
    a: np.ndarray
    b: np.ndarray
    finish: Callable
    blocks: Optional[ImageBlocks] = None

    def whole(self, product):
        """The output through the whole product, `product(a, b)` (a deferred gather made
        first)."""
        if self.blocks is not None and self.blocks.prepare is not None:
            self.blocks.prepare(0, self.blocks.images)
        return self.finish(product(self.a, self.b))


@functools.lru_cache(maxsize=None)
def _kernels():
    """The gather and tap-sum loops (Numba, imported and compiled on first use, cached on
    disk)."""
    from numba import njit

    jit = njit(cache=True, nogil=True, error_model="numpy")

    @jit
    def rows(x, out, lo_h, lo_w, s_h, s_w, d_h, d_w, l_h, l_w, a0, a1):
        # x (N, H, W, C) -> out (N, PH, PW, KH, KW, C) for N in [a0, a1); coordinates in
        # the dilated input
        h_, w_, c_ = x.shape[1], x.shape[2], x.shape[3]
        ph_, pw_, kh_, kw_ = out.shape[1], out.shape[2], out.shape[3], out.shape[4]
        for a in range(a0, a1):
            for ph in range(ph_):
                for kh in range(kh_):
                    hd = ph * s_h + kh * d_h - lo_h
                    hi = hd // l_h
                    h_in = hd >= 0 and hd - hi * l_h == 0 and hi < h_
                    for pw in range(pw_):
                        for kw in range(kw_):
                            wd = pw * s_w + kw * d_w - lo_w
                            wi = wd // l_w
                            if h_in and wd >= 0 and wd - wi * l_w == 0 and wi < w_:
                                # (unsigned: no negative-index wraparound per element)
                                hu, wu = np.uint64(hi), np.uint64(wi)
                                for b in range(c_):
                                    out[a, ph, pw, kh, kw, b] = x[a, hu, wu, b]
                            else:
                                for b in range(c_):
                                    out[a, ph, pw, kh, kw, b] = 0

    @jit
    def tap_sum(y, out, lo_h, lo_w, s_h, s_w, d_h, d_w, l_h, l_w, a0, a1):
        # y (N, H, W, KH, KW, O) -> out (N, PH, PW, O) for N in [a0, a1): each output the
        # sum, taps in row-major order, of the product rows its window's taps read. The
        # product is read in its own order, each row added where its taps land: an output's
        # taps arrive by increasing input position, which is increasing tap (3x faster than
        # gathering each output's taps, the same sums)
        h_, w_, kh_, kw_, o_ = y.shape[1], y.shape[2], y.shape[3], y.shape[4], y.shape[5]
        ph_, pw_ = out.shape[1], out.shape[2]
        yf, of = y.reshape(-1), out.reshape(-1)
        for a in range(a0, a1):
            start = a * ph_ * pw_ * o_
            for q in range(ph_ * pw_ * o_):
                of[np.uint64(start + q)] = 0
            for hi in range(h_):
                for kh in range(kh_):
                    # the output row this input row reaches through tap kh, if any
                    hp = hi * l_h + lo_h - kh * d_h
                    ph = hp // s_h
                    if hp < 0 or hp - ph * s_h != 0 or ph >= ph_:
                        continue
                    for wi in range(w_):
                        row = (((a * h_ + hi) * w_ + wi) * kh_ + kh) * kw_ * o_
                        for kw in range(kw_):
                            wp = wi * l_w + lo_w - kw * d_w
                            pw = wp // s_w
                            if wp < 0 or wp - pw * s_w != 0 or pw >= pw_:
                                continue
                            src = row + kw * o_
                            dst = ((a * ph_ + ph) * pw_ + pw) * o_
                            for b in range(o_):
                                of[np.uint64(dst + b)] += yf[np.uint64(src + b)]

    return rows, tap_sum


def _matrix(m):
    """m, or a C copy where BLAS cannot read it in place."""
    return m if m.flags.c_contiguous or m.flags.f_contiguous else np.ascontiguousarray(m)


def _dilated(n: int, d: int) -> int:
    return 0 if n == 0 else (n - 1) * d + 1


def gemm_form(lhs, rhs, scratch=None, *, window_strides, padding, lhs_dilation, rhs_dilation,
              dimension_numbers, feature_group_count, batch_group_count, precision=None,
              preferred_element_type=None, gathered=None, defer=False):
    """A GemmForm (a, b, finish, blocks) with the convolution equal to finish(a @ b), a and b
    2-D matrices BLAS reads in place (the first gathered into `scratch(shape, dtype)`'s
    buffer, np.empty by default), finish giving the output in its dimension numbers' layout,
    and, for the tap-sum form and (with `defer`) a forward convolution's, the same in blocks
    of images (ImageBlocks); or None where the general impl runs instead (see the module
    docstring). `gathered(src, shape, dtype, args,
    fill)`, where given, returns the gathered buffer: `fill(buffer)` writes it, and a caller
    that already holds the same gather of the same array (a forward convolution's windows,
    which its kernel gradient gathers again) may return that instead. With `defer`, a forward
    convolution's gather is left to its blocks' `prepare` (a caller that does not run the
    blocks calls prepare(0, images) before the product)."""
    dt = lhs.dtype
    if feature_group_count != 1 or batch_group_count != 1 or rhs.dtype != dt \
            or dt.char not in "fdFD" or lhs.ndim not in (3, 4) or \
            (preferred_element_type is not None and np.dtype(preferred_element_type) != dt):
        return None
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    x = lhs.transpose(lhs_spec)          # logical (N, C, *spatial) views
    w = rhs.transpose(rhs_spec)          # (O, I, *taps)
    strides, pads = tuple(window_strides), tuple(padding)
    ldil, rdil = tuple(lhs_dilation), tuple(rhs_dilation)
    if lhs.ndim == 3:                    # one spatial dimension: a unit height
        x, w = x[:, :, None, :], w[:, :, None, :]
        strides, pads, ldil, rdil = (1,) + strides, ((0, 0),) + pads, (1,) + ldil, (1,) + rdil
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    out_sp = []
    for size, k, s, (lo, hi), ld, rd in zip((h, wd), (kh, kw), strides, pads, ldil, rdil):
        extent = _dilated(size, ld) + lo + hi
        out_sp.append(max(0, (extent - _dilated(k, rd)) // s + 1))
    ph, pw = out_sp
    if 0 in (n, c, o, kh, kw, ph, pw):
        return None
    scratch = scratch or np.empty
    rows, tap_sum = _kernels()

    pending = []            # a deferred gather: (source, buffer)

    def gather(src, shape, args, later=False):
        def fill(buf):
            if later:
                pending.append((src, buf))
            else:
                over_cores(rows, src, buf, args)
            return buf
        if gathered is not None:
            return gathered(src, shape, dt, args, lambda: fill(scratch(shape, dt)))
        return fill(scratch(shape, dt))
    args = (pads[0][0], pads[1][0], strides[0], strides[1], rdil[0], rdil[1], ldil[0], ldil[1])
    # which axis of the input is the inner one (a unit axis counts as innermost)
    batch_inner = n == 1 or (c > 1 and lhs_spec[0] > lhs_spec[1])
    if not batch_inner and h * wd * o < ph * pw * c:
        # the product of the input (as it is) with every tap's kernel is smaller than the
        # gathered windows: multiply first, then sum each output's taps from the product
        a = x.transpose(0, 2, 3, 1).reshape(n * h * wd, c)
        b = w.transpose(1, 2, 3, 0).reshape(c, kh * kw * o)
        back = tuple(int(i) for i in np.argsort(out_spec))

        summed = scratch((n, ph, pw, o), dt)

        def result():
            logical = summed.transpose(0, 3, 1, 2)
            if lhs.ndim == 3:
                logical = logical[:, :, 0, :]
            out = logical.transpose(back)
            return out if out.flags.c_contiguous else np.ascontiguousarray(out)

        def finish_taps(product):
            over_cores(tap_sum, product.reshape(n, h, wd, kh, kw, o), summed, args)
            return result()

        def finish_block(product_rows, i0, i1):
            tap_sum(product_rows.reshape(i1 - i0, h, wd, kh, kw, o), summed[i0:i1], *args, 0,
                    i1 - i0)
        return GemmForm(_matrix(a), _matrix(b), finish_taps,
                        ImageBlocks(n, h * wd, finish_block=finish_block, result=result))
    blocks = None
    if not batch_inner:
        a6 = gather(x.transpose(0, 2, 3, 1), (n, ph, pw, kh, kw, c), args, later=defer)
        a = a6.reshape(n * ph * pw, kh * kw * c)
        if pending:
            src, buf = pending[0]

            def prepare(i0, i1):
                if i1 - i0 == n:
                    over_cores(rows, src, buf, args)
                else:
                    rows(src, buf, *args, i0, i1)
            blocks = ImageBlocks(n, ph * pw, prepare=prepare)
        b = w.transpose(2, 3, 1, 0).reshape(kh * kw * c, o)
        to_logical = lambda p: p.reshape(n, ph, pw, o).transpose(0, 3, 1, 2)
    else:
        # the same gather, with the batch axis as its channels, written in the buffer's own
        # order: the kernel's taps stand where the gather has its output positions, and the
        # outputs where it has its taps (their strides and dilations trade places). For a
        # kernel gradient this is the forward convolution's gather, element for element.
        swapped = args[:2] + args[4:6] + args[2:4] + args[6:]
        a6 = gather(x.transpose(1, 2, 3, 0), (c, kh, kw, ph, pw, n), swapped)
        a = a6.reshape(c * kh * kw, ph * pw * n).T
        b = w.transpose(1, 2, 3, 0).reshape(c * kh * kw, o)
        to_logical = lambda p: p.reshape(ph, pw, n, o).transpose(2, 3, 0, 1)
    b = _matrix(b)
    back = tuple(int(i) for i in np.argsort(out_spec))

    def finish(product):
        logical = to_logical(product)
        if lhs.ndim == 3:
            logical = logical[:, :, 0, :]
        out = logical.transpose(back)
        return out if out.flags.c_contiguous else np.ascontiguousarray(out)

    return GemmForm(a, b, finish, blocks)
