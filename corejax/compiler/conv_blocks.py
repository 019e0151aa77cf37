"""Convolutions run in blocks of images (lax/_conv_gemm's ImageBlocks) over this thread and
the eager helper threads, each block's gather, product and finish back to back while its
rows are in cache, where that gives the product's own bits (compiler/blas.py's one way of
making it). Eager convolutions (lax/conv.py) and compiled ones (compiler/cpu.py) both ask
`image_blocks` first."""
from __future__ import annotations

import threading

import numpy as np

from corejax.compiler import blas
from corejax.compiler.gemm_blocks import transposed

__all__ = ["image_blocks"]


_block_buffers = threading.local()


def _block_buffer(shape, dtype):
    """A scratch array of `shape` for the calling thread, reused across its blocks (a fresh
    megabyte-sized one page-faults)."""
    size = int(np.prod(shape))
    buf = getattr(_block_buffers, "buf", None)
    if buf is None or buf.dtype != dtype or buf.size < size:
        buf = _block_buffers.buf = np.empty(size, dtype)
    return buf[:size].reshape(shape)


def image_blocks(form, product_buffer):
    """A convolution (lax/_conv_gemm's GemmForm) run in its blocks of images (`form.blocks`)
    over this thread and the helper threads, each block's stages back to back while its rows
    are in cache: its gather (`prepare`), its product on one OpenBLAS thread (into the rows of
    `product_buffer(shape, dtype)`'s buffer where the product is the output's matrix, else into
    a per-thread buffer), its finish. A block holds about one L2 cache of operand and product
    rows; the threads claim blocks as they go (one sharing its core with another process takes
    fewer). A product made in `Blocks` (no plan) runs in those blocks where they hold whole
    images. Returns the output, or None, running nothing, where the blocks' products do not
    have the product's own bits (`blocks_agree`, tested once per shape; a product in `Blocks`
    whose blocks split images), where there is no adaptive BLAS to set to one thread, or
    where the product is too small to split: the caller then runs it whole (`form.whole`).

    In cnn.yaml's step (2 cores, OpenBLAS's workers not left spinning): the 64 -> 32 input
    gradient (a (25088, 64) @ (64, 288) product, then nine taps summed per output) 9.0-10.2
    ms whole, 6.1 ms in blocks; the 32 -> 64 forward convolution (the gather of 128 x 196
    windows of 288, then the product by the (288, 64) kernel) 8.3-8.4 ms whole, 6.9-7.6 ms
    in blocks (2 to 8 images a block)."""
    from corejax._machine import l2_bytes
    ad, a, b, blocks = blas._adaptive, form.a, form.b, form.blocks
    dt = a.dtype
    if ad is None or ad.sharing or dt.char not in "fd" or a.ndim != 2 or b.ndim != 2:
        return None
    m, k = a.shape
    n = b.shape[1]
    rows, prepare, finish_block = blocks.rows, blocks.prepare, blocks.finish_block
    if blas._small(m, k, n):
        return None
    way = blas.plan_for(m, k, n, transposed(a), transposed(b), dt)
    if type(way) is blas.Blocks:
        # the product's own blocks, where they hold whole images (cnn.yaml's 25088 rows: 32
        # blocks of 4 images): each block's gather, product and finish in turn
        if way.axis != 0 or len(way.bounds) < 3 or any(bound % rows for bound in way.bounds):
            return None
        bounds = [bound // rows for bound in way.bounds]
    else:
        per = max(1, l2_bytes() // (rows * ((k if prepare else 0) + n) * dt.itemsize))
        if blocks.images <= per:
            return None
        bounds = list(range(0, blocks.images, per)) + [blocks.images]
    out = None if finish_block is not None else product_buffer((m, n), dt)

    def task(lo, hi):
        if prepare is not None:
            prepare(lo, hi)
        target = _block_buffer(((hi - lo) * rows, n), dt) if out is None \
            else out[lo * rows:hi * rows]
        blas.product_here(a[lo * rows:hi * rows], b, target)
        if finish_block is not None:
            finish_block(target, lo, hi)

    from corejax.compiler import eager_kernels
    with ad.lock:
        if type(way) is not blas.Blocks and not ad.blocks_agree(
                m, k, n, per * rows, transposed(a), transposed(b), dt):
            return None
        ad.on_threads(1, lambda: eager_kernels.run_parts(task, bounds))
    return blocks.result() if finish_block is not None else form.finish(out)
