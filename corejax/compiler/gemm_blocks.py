"""How a matrix product's operands are handed to a GEMM (in place, with a transpose flag and a
leading dimension) and how its output is cut into fixed blocks that threads claim
(compiler/blas.py runs them; corejax's own float32 GEMM, compiler/sgemm.py, and OpenBLAS alike).
"""
from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

__all__ = ["Blocks", "blocks_for", "BLOCK", "BLOCK_ALIGN", "BLOCK_MIN_FLOPS", "MAX_BLOCKS",
           "MIN_BLOCKS", "leading", "readable", "flat", "transposed", "bounds_array"]


class Blocks(NamedTuple):
    """A product made of fixed blocks of its output (`axis` 0: rows, 1: columns, cut at
    `bounds`), each block one GEMM call on one thread: its bits depend on the shape alone,
    not on how many threads run the blocks or how busy the machine is (compiler/blas.py: an
    OpenBLAS product no `Plan` passes for, and every big product of the own float32 GEMM)."""
    axis: int
    bounds: tuple


# A product's blocks hold about this many rows or columns (a multiple of BLOCK_ALIGN); a
# product of fewer flops than BLOCK_MIN_FLOPS is one block (some 150 us on one thread here:
# a shorter job does not wake sleeping helpers, and two blocks in turn on one thread cost
# half as much again as the whole: 54 against 37 us for 128^3)
BLOCK = 256
BLOCK_ALIGN = 16
BLOCK_MIN_FLOPS = 1 << 24
# at most this many blocks (longer ones on a longer side: a convolution's 25088 rows in 32
# blocks of 784), well within what one job of the helper threads holds (64 parts)
MAX_BLOCKS = 32
# and at least this many where the side has MIN_BLOCKS * BLOCK_ALIGN: a helper woken from
# sleep for a product does not start on its last part (eager_threads.claim_part), so of two
# blocks the caller would make both
MIN_BLOCKS = 4


@functools.lru_cache(maxsize=4096)
def blocks_for(m, k, n) -> Blocks:
    """The `Blocks` of an (m, k) @ (k, n) matrix product: the longer side of the output
    (columns on a tie) cut into ceil(side / BLOCK) blocks, MIN_BLOCKS to MAX_BLOCKS of them,
    at multiples of BLOCK_ALIGN; one block (the whole product on one thread) below
    BLOCK_MIN_FLOPS or MIN_BLOCKS * BLOCK_ALIGN rows or columns. A function of the shape
    only: eager and compiled code, on any load and any number of cores, cut the same
    blocks."""
    axis, side = (1, n) if n >= m else (0, m)
    if 2 * m * n * k < BLOCK_MIN_FLOPS or side < MIN_BLOCKS * BLOCK_ALIGN:
        return Blocks(axis, (0, side))
    parts = max(MIN_BLOCKS, min(MAX_BLOCKS, -(-side // BLOCK)))
    cuts = sorted({min(side, -(-side * i // parts) // BLOCK_ALIGN * BLOCK_ALIGN)
                   for i in range(1, parts)} - {0, side})
    return Blocks(axis, (0, *cuts, side))


def transposed(x) -> bool:
    """Whether BLAS reads the 2-D matrix x with its transpose flag: its columns contiguous,
    not its rows (a transposed C array, or a block of one's rows)."""
    if x.flags.c_contiguous:
        return False
    if x.flags.f_contiguous:
        return True
    return x.strides[1] != x.itemsize and x.strides[0] == x.itemsize


def leading(x, transposed):
    """The leading dimension with which BLAS reads the 2-D matrix x in place (with its
    transpose flag where `transposed`: its columns contiguous), or None where it cannot."""
    step = x.itemsize
    inner, outer = (x.strides[0], x.strides[1]) if transposed else (x.strides[1], x.strides[0])
    rows, cols = (x.shape[1], x.shape[0]) if transposed else x.shape
    if (inner != step and cols > 1) or outer % step or (rows > 1 and outer < cols * step):
        return None
    return max(outer // step, cols, 1)


def readable(x):
    """x, or a C copy of it where BLAS cannot read it in place (a broadcast operand, say)."""
    return x if leading(x, transposed(x)) is not None else np.ascontiguousarray(x)


def flat(x, transposed):
    """(a 1-D view of x's memory from its first element, its leading dimension) for BLAS,
    which reads x in place (`readable`)."""
    ld = leading(x, transposed)
    if ld is None:
        raise ValueError(f"a {x.shape} matrix of strides {x.strides} BLAS cannot read in place")
    rows, cols = (x.shape[1], x.shape[0]) if transposed else x.shape
    size = (rows - 1) * ld + cols if rows and cols else 0
    return np.lib.stride_tricks.as_strided(x, (size,), (x.itemsize,)), ld


@functools.lru_cache(maxsize=1024)
def bounds_array(chunks):
    """The chunk bounds as the int64 array kernel_lib.gemm_chunks takes (read-only, shared)."""
    bounds = np.array(chunks, np.int64)
    bounds.flags.writeable = False
    return bounds
