"""corejax's own float32 matrix product: every float32 GEMM of the CPU backend (compiler/blas.py,
eager and compiled, convolutions' products included) runs here, not in OpenBLAS.

Why: where OpenBLAS runs its AVX2 kernels (`OPENBLAS_CORETYPE=Haswell`, as on the 2-core
Zen 5 test machines) a core reaches about 130 GFLOP/s in sgemm while its 512-bit FMA units
give twice that, and XLA and oneDNN use them (issue #32). And OpenBLAS's results depend on
how many threads run it, which compiler/blas.py had to work around with tested plans and
fixed blocks.

The bits are a function of the operands and k alone: each element of C is

    s_p = fma(a[i, k], b[k, j], ... fma(a[i, k0], b[k0, j], +0))   over each panel p of the
                                                                   reduction, k ascending
    c = alpha * s_0 (+ beta * c)   then   c = c + alpha * s_p      for the panels after it

where the reduction's P = ceil(k / KC) panels are [k p / P, k (p + 1) / P) (integer division:
as deep as can be, at most KC = 256, and no shallow last one); c = beta * c, or zeros where
beta is 0, for k = 0. No split of the rows or columns over
threads or tiles, no transposition of the problem, no vector width changes that: blocks of
the output run on any thread in any order with the bits of the whole product, and a host
without AVX-512 (narrower vectors, smaller tiles) computes the same bits as one with it.

The micro-kernel keeps an MR x NR tile of C in registers (AVX-512: 12 x 32 in 24 16-lane
accumulators; otherwise 6 x 16 in 12 8-lane ones), written as explicit LLVM vector IR through
a Numba intrinsic (`_micro`): per k, NR / VW vector loads of packed B, one broadcast of A per
row, MR * NR / VW fused multiply-adds. The driver (`gemm`) packs B in slivers of NR columns
(zero-padded; a B stored transposed in VW x VW blocks turned in registers) and reads A in
place with any strides (its last rows packed and zero-padded), and runs the micro-kernel over
the tiles; edge columns and outputs whose columns are not contiguous go through a scratch
tile. A product with fewer than NR columns and more rows than columns is computed as its
transpose (C^T = B^T A^T: the same multiply-adds in the same order). One thread per call;
compiler/blas.py shares the blocks of big products out over the cores.

`cblas_sgemm` is the same product behind cblas_sgemm's C signature (64-bit integers), for
compiled code to call by address as it calls a BLAS.
"""
from __future__ import annotations

import os

import numpy as np
from llvmlite import binding as _llvm
from llvmlite import ir
from numba import carray, cfunc, njit, types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["product", "gemm", "cblas_sgemm", "address", "KC"]

# The deepest reduction panel: part of the definition of the bits (see the docstring);
# changing it changes results.
KC = 256

# The vector width follows the host (COREJAX_SGEMM_LANES=8 or 16 forces one, for tests of
# the bits' independence from it; such a process compiles the kernels afresh instead of
# sharing Numba's disk cache, whose entries do not record the width)
_LANES = os.environ.get("COREJAX_SGEMM_LANES")
if _LANES not in (None, "8", "16"):
    raise ValueError(f"COREJAX_SGEMM_LANES={_LANES!r}: use 8 or 16 (or unset it)")
_WIDE = bool(_llvm.get_host_cpu_features().get("avx512f", False)) if _LANES is None \
    else _LANES == "16"
VW = 16 if _WIDE else 8          # lanes of a vector
NV = 2                           # vectors per tile row
NR = VW * NV                     # columns of a tile
MR = 12 if _WIDE else 6          # rows of a tile: MR * NV accumulators (of 32 / 16 registers)
MC = 8 * MR                      # rows of A run against one packed B panel
NC = 64 * NR                     # columns of B packed at a time

_F32 = ir.FloatType()
_V = ir.VectorType(_F32, VW)
_I64 = ir.IntType(64)
_I32 = ir.IntType(32)

# what the micro-kernel does with a finished tile s (modes of `_micro`)
SET, SET_BETA, ADD, RAW = 0, 1, 2, 3


def _data(context, builder, aryty, ary):
    return context.make_array(aryty)(context, builder, ary).data


@intrinsic
def _micro(typingctx, a, a_off, a_rs, a_ks, b, b_off, c, c_off, ldc, kc, h, mode, alpha,
           beta):
    """The tile s[i, j] = sum over kk < kc of a[a_off + i*a_rs + kk*a_ks] * b[b_off + kk*NR + j]
    (an FMA chain from +0, kk ascending; kc >= 1), stored into the first `h` rows (h >= 1) of
    c[c_off + i*ldc + j], j < NR, as `mode` says: SET alpha*s, SET_BETA alpha*s + beta*c,
    ADD c + alpha*s, RAW s."""
    sig = types.void(a, a_off, a_rs, a_ks, b, b_off, c, c_off, ldc, kc, h, mode, alpha, beta)

    def codegen(context, builder, sig, args):
        aty, _, _, _, bty, _, cty = sig.args[:7]
        (a_, a_off_, a_rs_, a_ks_, b_, b_off_, c_, c_off_, ldc_, kc_, h_, mode_, alpha_,
         beta_) = args
        pa = builder.gep(_data(context, builder, aty, a_), [a_off_])
        pb = builder.gep(_data(context, builder, bty, b_), [b_off_])
        pc = _data(context, builder, cty, c_)
        fma = cgutils.get_or_insert_function(builder.module, ir.FunctionType(_V, [_V, _V, _V]),
                                             f"llvm.fma.v{VW}f32")
        splat_index = ir.Constant(ir.VectorType(_I32, VW), [0] * VW)
        zero = ir.Constant(_V, [0.0] * VW)

        def splat(scalar):
            v = builder.insert_element(ir.Constant(_V, ir.Undefined), scalar,
                                       ir.Constant(_I32, 0))
            return builder.shuffle_vector(v, ir.Constant(_V, ir.Undefined), splat_index)

        pre = builder.block
        loop = builder.append_basic_block("k_loop")
        builder.branch(loop)
        builder.position_at_end(loop)
        k = builder.phi(_I64)
        k.add_incoming(ir.Constant(_I64, 0), pre)
        accs = []
        for _i in range(MR):
            row = []
            for _v in range(NV):
                p = builder.phi(_V)
                p.add_incoming(zero, pre)
                row.append(p)
            accs.append(row)
        kb = builder.mul(k, ir.Constant(_I64, NR))
        ka = builder.mul(k, a_ks_)
        bvs = []
        for v in range(NV):
            ptr = builder.gep(pb, [builder.add(kb, ir.Constant(_I64, v * VW))])
            bvs.append(builder.load(builder.bitcast(ptr, _V.as_pointer()), align=4))
        new = []
        for i in range(MR):
            row = builder.mul(ir.Constant(_I64, i), a_rs_)
            s = splat(builder.load(builder.gep(pa, [builder.add(ka, row)])))
            new.append([builder.call(fma, [s, bvs[v], accs[i][v]]) for v in range(NV)])
        k1 = builder.add(k, ir.Constant(_I64, 1))
        end = builder.block
        k.add_incoming(k1, end)
        for i in range(MR):
            for v in range(NV):
                accs[i][v].add_incoming(new[i][v], end)
        done = builder.append_basic_block("k_done")
        builder.cbranch(builder.icmp_signed("<", k1, kc_), loop, done)
        builder.position_at_end(done)
        va, vb = splat(alpha_), splat(beta_)
        is_set = builder.icmp_signed("==", mode_, ir.Constant(_I64, SET))
        is_beta = builder.icmp_signed("==", mode_, ir.Constant(_I64, SET_BETA))
        is_add = builder.icmp_signed("==", mode_, ir.Constant(_I64, ADD))
        finish = builder.append_basic_block("stored")
        for i in range(MR):         # row 0 always (h >= 1), row i + 1 where h > i + 1
            base = builder.add(c_off_, builder.mul(ir.Constant(_I64, i), ldc_))
            for v in range(NV):
                ptr = builder.bitcast(
                    builder.gep(pc, [builder.add(base, ir.Constant(_I64, v * VW))]),
                    _V.as_pointer())
                s = new[i][v]
                old = builder.load(ptr, align=4)
                t = builder.fmul(va, s)
                value = builder.select(
                    is_set, t, builder.select(
                        is_beta, builder.fadd(t, builder.fmul(vb, old)),
                        builder.select(is_add, builder.fadd(old, t), s)))
                builder.store(value, ptr, align=4)
            if i + 1 < MR:
                go = builder.append_basic_block(f"row{i + 1}")
                builder.cbranch(builder.icmp_signed(">", h_, ir.Constant(_I64, i + 1)),
                                go, finish)
                builder.position_at_end(go)
            else:
                builder.branch(finish)
        builder.position_at_end(finish)
        return context.get_dummy_value()
    return sig, codegen


@intrinsic
def _move(typingctx, src, src_off, dst, dst_off):
    """dst[dst_off:dst_off + NR] = src[src_off:src_off + NR] as NV vector moves (a loop over
    NumPy indices vectorizes into gathers here: every index is checked for wraparound)."""
    sig = types.void(src, src_off, dst, dst_off)

    def codegen(context, builder, sig, args):
        sty, _, dty, _ = sig.args
        ps = builder.gep(_data(context, builder, sty, args[0]), [args[1]])
        pd = builder.gep(_data(context, builder, dty, args[2]), [args[3]])
        for v in range(NV):
            off = [ir.Constant(_I64, v * VW)]
            value = builder.load(builder.bitcast(builder.gep(ps, off), _V.as_pointer()),
                                 align=4)
            builder.store(value, builder.bitcast(builder.gep(pd, off), _V.as_pointer()),
                          align=4)
        return context.get_dummy_value()
    return sig, codegen


@intrinsic
def _strided(typingctx, src, src_off, src_step, dst, dst_off, dst_step, count):
    """dst[dst_off + t*dst_step] = src[src_off + t*src_step] for t < count, a plain loop
    (NumPy indices would each be checked for wraparound)."""
    sig = types.void(src, src_off, src_step, dst, dst_off, dst_step, count)

    def codegen(context, builder, sig, args):
        sty, _, _, dty = sig.args[:4]
        src_, src_off_, src_step_, dst_, dst_off_, dst_step_, count_ = args
        ps = builder.gep(_data(context, builder, sty, src_), [src_off_])
        pd = builder.gep(_data(context, builder, dty, dst_), [dst_off_])
        pre = builder.block
        loop = builder.append_basic_block("copy")
        done = builder.append_basic_block("copied")
        builder.cbranch(builder.icmp_signed(">", count_, ir.Constant(_I64, 0)), loop, done)
        builder.position_at_end(loop)
        t = builder.phi(_I64)
        t.add_incoming(ir.Constant(_I64, 0), pre)
        value = builder.load(builder.gep(ps, [builder.mul(t, src_step_)]))
        builder.store(value, builder.gep(pd, [builder.mul(t, dst_step_)]))
        t1 = builder.add(t, ir.Constant(_I64, 1))
        t.add_incoming(t1, builder.block)
        builder.cbranch(builder.icmp_signed("<", t1, count_), loop, done)
        builder.position_at_end(done)
        return context.get_dummy_value()
    return sig, codegen


@intrinsic
def _transpose_block(typingctx, src, src_off, ld, dst, dst_off):
    """dst[dst_off + t*NR + j] = src[src_off + j*ld + t] for j, t < VW: a VW x VW block of a
    matrix stored with its reduction contiguous (a transposed B) turned into VW rows of packed
    B, with VW vector loads, log2(VW) rounds of interleaving (after them vector t holds
    element t of every loaded vector) and VW vector stores."""
    sig = types.void(src, src_off, ld, dst, dst_off)

    def codegen(context, builder, sig, args):
        sty, _, _, dty, _ = sig.args
        src_, src_off_, ld_, dst_, dst_off_ = args
        ps = builder.gep(_data(context, builder, sty, src_), [src_off_])
        pd = builder.gep(_data(context, builder, dty, dst_), [dst_off_])
        rows = [builder.load(builder.bitcast(
            builder.gep(ps, [builder.mul(ir.Constant(_I64, j), ld_)]), _V.as_pointer()),
            align=4) for j in range(VW)]
        half = VW // 2
        lo = ir.Constant(ir.VectorType(_I32, VW),
                         [i // 2 + (VW if i % 2 else 0) for i in range(VW)])
        hi = ir.Constant(ir.VectorType(_I32, VW),
                         [half + i // 2 + (VW if i % 2 else 0) for i in range(VW)])
        for _ in range(VW.bit_length() - 1):
            new = [None] * VW
            for i in range(half):
                new[2 * i] = builder.shuffle_vector(rows[i], rows[i + half], lo)
                new[2 * i + 1] = builder.shuffle_vector(rows[i], rows[i + half], hi)
            rows = new
        for t in range(VW):
            ptr = builder.gep(pd, [ir.Constant(_I64, t * NR)])
            builder.store(rows[t], builder.bitcast(ptr, _V.as_pointer()), align=4)
        return context.get_dummy_value()
    return sig, codegen


@intrinsic
def _flat1d(typingctx, x, extent):
    """A 1-D float32 C array of `extent` elements over x's memory from its first element
    (x any float32 array; a view sharing x's memory and keeping it alive)."""
    if not isinstance(x, types.Array) or x.dtype != types.float32:
        return None
    retty = types.Array(types.float32, 1, "C")
    sig = retty(x, extent)

    def codegen(context, builder, sig, args):
        from numba.core.imputils import impl_ret_borrowed
        from numba.np.arrayobj import populate_array
        src = context.make_array(sig.args[0])(context, builder, args[0])
        out = context.make_array(retty)(context, builder)
        extent_ = context.cast(builder, args[1], sig.args[1], types.intp)
        populate_array(out, data=src.data, shape=[extent_],
                       strides=[context.get_constant(types.intp, 4)], itemsize=src.itemsize,
                       meminfo=src.meminfo, parent=src.parent)
        return impl_ret_borrowed(context, builder, retty, out._getvalue())
    return sig, codegen


_jit = njit(cache=_LANES is None, nogil=True, error_model="numpy")


@njit(cache=_LANES is None, nogil=True, error_model="numpy", inline="always")
def _extent(rows, cols, rs, cs):
    """How many elements from the first a rows x cols matrix of strides rs, cs spans."""
    return (rows - 1) * rs + (cols - 1) * cs + 1 if rows > 0 and cols > 0 else 0


@_jit
def _pack_lines(src, first, line_step, step, lines, count, dst, base, width):
    """dst[base + t*width + l] = src[first + l*line_step + t*step] for l < lines, t < count:
    `lines` strided lines of `count` elements into a packed sliver `width` wide (k-major);
    its lines past `lines` are zeros."""
    for l in range(lines):
        _strided(src, first + l * line_step, step, dst, base + l, width, count)
    for l in range(lines, width):
        for t in range(count):
            dst[base + t * width + l] = 0.0


@_jit
def _pack_b(b, sbk, sbj, pc, kc, jc, nc, bp):
    """b's rows pc:pc+kc, columns jc:jc+nc (element (k, j) at b[k*sbk + j*sbj]) into bp as
    slivers of NR columns, each kc rows of NR, k-major; columns past nc are zeros. Rows of a
    row-major b are read whole, in order (a sliver at a time, its rows 2 KB apart, ran at a
    tenth of the copy's speed)."""
    full = nc // NR
    rest = nc - full * NR
    if sbj == 1:
        for kk in range(kc):
            src = (pc + kk) * sbk + jc
            for s in range(full):
                _move(b, src + s * NR, bp, s * kc * NR + kk * NR)
            if rest:
                dst = full * kc * NR + kk * NR
                at = src + full * NR
                for j in range(rest):
                    bp[dst + j] = b[at + j]
                for j in range(rest, NR):
                    bp[dst + j] = 0.0
        return
    for s in range(full + (1 if rest else 0)):
        j0 = jc + s * NR
        w = min(NR, jc + nc - j0)
        base = s * kc * NR
        if sbk == 1 and w == NR:
            # b stored transposed (its rows contiguous in k): VW x VW blocks turned in
            # registers, the last kc % VW rows element by element
            whole = kc - kc % VW
            for h in range(NV):
                row = (j0 + h * VW) * sbj + pc
                for kk in range(0, whole, VW):
                    _transpose_block(b, row + kk, sbj, bp, base + kk * NR + h * VW)
            _pack_lines(b, j0 * sbj + pc + whole, sbj, 1, NR, kc - whole, bp,
                        base + whole * NR, NR)
            continue
        _pack_lines(b, j0 * sbj + pc * sbk, sbj, sbk, w, kc, bp, base, NR)


@_jit
def _from_tile(tile, h, w, c, i0, j0, csr, csc, mode, alpha, beta):
    """A tile's raw sums into rows i0:i0+h, columns j0:j0+w of c (element (i, j) at
    c[i*csr + j*csc]) as `_micro` would store them in `mode`."""
    for i in range(h):
        for j in range(w):
            s = tile[i * NR + j]
            at = (i0 + i) * csr + (j0 + j) * csc
            if mode == SET:
                c[at] = alpha * s
            elif mode == SET_BETA:
                c[at] = alpha * s + beta * c[at]
            else:
                c[at] = c[at] + alpha * s


@_jit
def gemm(m, n, k, alpha, a, sai, sak, b, sbk, sbj, beta, c, csr, csc):
    """c = alpha a @ b + beta c for float32 a (m, k), b (k, n), c (m, n) held in the flat
    arrays a, b, c from their first elements, element (i, k) of a at a[i*sai + k*sak], (k, j)
    of b at b[k*sbk + j*sbj], (i, j) of c at c[i*csr + j*csc] (strides in elements, >= 0;
    c's elements distinct and apart from a's and b's). With beta 0, c is not read. The bits
    are those of the module docstring."""
    if m <= 0 or n <= 0:
        return
    if k <= 0:
        for i in range(m):
            for j in range(n):
                at = i * csr + j * csc
                c[at] = beta * c[at] if beta != 0 else np.float32(0.0)
        return
    if n < NR and m > n:
        # few columns: the transposed product, C^T = B^T A^T (the same FMAs in the same
        # order), its rows the few columns (a row-major A, as A^T, packs in register-turned
        # blocks: 128x512 @ 512x10 took 18 us, 29 untransposed)
        m, n, a, sai, sak, b, sbk, sbj, csr, csc = n, m, b, sbj, sbk, a, sak, sai, csc, csr
    ncap = min(NC, (n + NR - 1) // NR * NR)
    bp = np.empty(KC * ncap, np.float32)
    ap = np.empty(KC * MR, np.float32)        # the last rows of A, zero-padded (`_pack_lines`)
    tile = np.empty(MR * NR, np.float32)
    for jc in range(0, n, NC):
        nc = min(NC, n - jc)
        parts = (k + KC - 1) // KC
        for p in range(parts):
            pc = k * p // parts
            kc = k * (p + 1) // parts - pc
            mode = ADD if p > 0 else (SET if beta == 0 else SET_BETA)
            _pack_b(b, sbk, sbj, pc, kc, jc, nc, bp)
            for ic in range(0, m, MC):
                mc = min(MC, m - ic)
                for sj in range((nc + NR - 1) // NR):
                    j0 = jc + sj * NR
                    w = min(NR, n - j0)
                    for si in range((mc + MR - 1) // MR):
                        i0 = ic + si * MR
                        h = min(MR, m - i0)
                        if h == MR:     # A read in place: (i, kk) at i*sai + kk*sak
                            aa, a_off, a_rs, a_ks = a, i0 * sai + pc * sak, sai, sak
                        else:           # the last rows, zero-padded to MR
                            if sj == 0:
                                _pack_lines(a, i0 * sai + pc * sak, sai, sak, h, kc, ap, 0, MR)
                            aa, a_off, a_rs, a_ks = ap, 0, 1, MR
                        if csc == 1 and w == NR:
                            _micro(aa, a_off, a_rs, a_ks, bp, sj * kc * NR, c, i0 * csr + j0,
                                   csr, kc, h, mode, alpha, beta)
                        else:
                            _micro(aa, a_off, a_rs, a_ks, bp, sj * kc * NR, tile, 0, NR, kc, MR,
                                   RAW, alpha, beta)
                            _from_tile(tile, h, w, c, i0, j0, csr, csc, mode, alpha, beta)


_F32P = types.CPointer(types.float32)


@cfunc(types.void(types.int32, types.int32, types.int32, types.int64, types.int64, types.int64,
                  types.float32, _F32P, types.int64, _F32P, types.int64, types.float32, _F32P,
                  types.int64), cache=_LANES is None, error_model="numpy")
def cblas_sgemm(order, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):
    """`gemm` behind cblas_sgemm's arguments (CblasRowMajor 101 / ColMajor 102, NoTrans 111 /
    Trans 112), with 64-bit integers."""
    row = order == 101
    if row == (transa == 111):
        sai, sak = lda, 1
    else:
        sai, sak = 1, lda
    if row == (transb == 111):
        sbk, sbj = ldb, 1
    else:
        sbk, sbj = 1, ldb
    csr, csc = (ldc, 1) if row else (1, ldc)
    gemm(m, n, k, alpha, carray(a, (_extent(m, k, sai, sak),)), sai, sak,
         carray(b, (_extent(k, n, sbk, sbj),)), sbk, sbj, beta,
         carray(c, (_extent(m, n, csr, csc),)), csr, csc)


def address():
    """(address, ilp64) of `cblas_sgemm`, as compiler/blas.py's gemm_symbol gives a BLAS's."""
    return cblas_sgemm.address, True


@_jit
def _flat_of(x):
    """(1-D float32 array over the 2-D x's memory from its first element, row stride, column
    stride), strides in elements; over a C copy of x where its strides are negative or not
    whole elements."""
    rows, cols = x.shape
    rs, cs = x.strides
    if rs >= 0 and cs >= 0 and rs % 4 == 0 and cs % 4 == 0:
        rs, cs = rs // 4, cs // 4
        return _flat1d(x, _extent(rows, cols, rs, cs)), rs, cs
    y = np.ascontiguousarray(x)
    return _flat1d(y, rows * cols), cols, 1


# `_product`'s one signature: operands of any layout, read-only or not (a C or Fortran array,
# or a writeable one, converts to it as it is passed), so one compilation serves every call
# (each layout of its own cost about a second to compile)
_IN = types.Array(types.float32, 2, "A", readonly=True)
_OUT = types.Array(types.float32, 2, "A")


@njit(types.void(_IN, _IN, _OUT, types.float32, types.float32), cache=_LANES is None,
      nogil=True, error_model="numpy")
def _product(a, b, c, alpha, beta):
    """`product`, compiled (one call from Python: its overhead is that of a small product)."""
    m, k = a.shape
    n = b.shape[1]
    rs, cs = c.strides
    if rs < 0 or cs < 0 or rs % 4 or cs % 4:
        raise ValueError("an output sgemm cannot write in place (negative or partial strides)")
    fa, sai, sak = _flat_of(a)
    fb, sbk, sbj = _flat_of(b)
    rs, cs = rs // 4, cs // 4
    fc = _flat1d(c, _extent(m, n, rs, cs))
    gemm(m, n, k, alpha, fa, sai, sak, fb, sbk, sbj, beta, fc, rs, cs)


def product(a, b, out, alpha=1.0, beta=0.0):
    """out = alpha a @ b + beta out for 2-D float32 NumPy arrays of any strides (out
    writeable, its elements distinct and apart from a's and b's); returns out."""
    _product(a, b, out, np.float32(alpha), np.float32(beta))
    return out
