"""What a float32 GEMM of corejax's own could reach on this machine: an AVX-512 micro-kernel
emitted as explicit LLVM vector IR through a Numba intrinsic, with packing and blocking in Numba,
against np.matmul on NumPy's OpenBLAS (one thread each; asserts nothing).

    OPENBLAS_NUM_THREADS=1 python bench/bench_sgemm_kernel.py [--micro]

Why (issue #32): where the environment pins OpenBLAS to its AVX2 kernels
(`OPENBLAS_CORETYPE=Haswell`, as on the 2-core Zen 5 machines of 2026-11-30), every float32
product runs at about 128 GFLOP/s a core while the core's 512-bit FMA units give about twice
that, and XLA and oneDNN use them: the matrix-product rows (MLP epoch, CNN, LSTM) stay above
JAX and PyTorch there. A kernel of corejax's own would also have one set of bits whatever the
thread count (each output tile summed in a fixed order), which OpenBLAS's AVX2 sgemm does not.

The micro-kernel: a tile of MR = 12 rows by NR = 32 columns of C held in 24 <16 x float>
accumulators; for each k, two vector loads of the packed B sliver, one broadcast per row of the
packed A sliver, 24 llvm.fma.v16f32; C += the tile at the end. The driver packs B in slivers of
32 columns (KC = 256 rows deep) and A in slivers of 12 rows (MC = 96), zero-padding the edges
(edge tiles go through a scratch tile). This is a prototype for measurement, not used by corejax:
no threading, no transposed or strided operands, and on a host without AVX-512 LLVM splits the
vectors in two and spills the accumulators (correct, slow).

--micro times the micro-kernel alone on packed operands that stay in L1 (the peak to aim for).
"""
import argparse
import os
import time

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

MR = 12
VW = 16          # lanes per vector
NV = 2           # vectors per row
NR = VW * NV

F32 = ir.FloatType()
V = ir.VectorType(F32, VW)
I64 = ir.IntType(64)


def _data(context, builder, aryty, ary):
    return context.make_array(aryty)(context, builder, ary).data


@intrinsic
def micro(typingctx, a, a_off, b, b_off, c, c_off, ldc, kc):
    """c[c_off + i*ldc + j] += sum_k a[a_off + k*MR + i] * b[b_off + k*NR + j], i < MR, j < NR."""
    sig = types.void(a, a_off, b, b_off, c, c_off, ldc, kc)

    def codegen(context, builder, sig, args):
        # entry -> k_loop (phis: k and the 24 accumulators; two B loads, 12 broadcasts of A,
        # 24 FMAs) -> k_done (C tile += accumulators). kc <= 0 adds zeros.
        aty, _, bty, _, cty, _, _, _ = sig.args
        a_, a_off_, b_, b_off_, c_, c_off_, ldc_, kc_ = args
        pa = _data(context, builder, aty, a_)
        pb = _data(context, builder, bty, b_)
        pc = _data(context, builder, cty, c_)
        pa = builder.gep(pa, [a_off_])
        pb = builder.gep(pb, [b_off_])
        fma = cgutils.get_or_insert_function(builder.module, ir.FunctionType(V, [V, V, V]),
                                             "llvm.fma.v16f32")
        splat = ir.Constant(ir.VectorType(ir.IntType(32), VW), [0] * VW)
        zero = ir.Constant(V, [0.0] * VW)
        pre = builder.block
        loop = builder.append_basic_block("k_loop")
        done = builder.append_basic_block("k_done")
        has = builder.icmp_signed(">", kc_, ir.Constant(I64, 0))
        builder.cbranch(has, loop, done)
        builder.position_at_end(loop)
        k = builder.phi(I64)
        k.add_incoming(ir.Constant(I64, 0), pre)
        accs = []
        for i in range(MR):
            row = []
            for v in range(NV):
                p = builder.phi(V)
                p.add_incoming(zero, pre)
                row.append(p)
            accs.append(row)
        kb = builder.mul(k, ir.Constant(I64, NR))
        ka = builder.mul(k, ir.Constant(I64, MR))
        bvs = []
        for v in range(NV):
            ptr = builder.gep(pb, [builder.add(kb, ir.Constant(I64, v * VW))])
            ptr = builder.bitcast(ptr, V.as_pointer())
            bvs.append(builder.load(ptr, align=4))
        new = []
        for i in range(MR):
            s = builder.load(builder.gep(pa, [builder.add(ka, ir.Constant(I64, i))]))
            sv = builder.insert_element(ir.Constant(V, ir.Undefined), s,
                                        ir.Constant(ir.IntType(32), 0))
            sv = builder.shuffle_vector(sv, ir.Constant(V, ir.Undefined), splat)   # broadcast
            new.append([builder.call(fma, [sv, bvs[v], accs[i][v]]) for v in range(NV)])
        k1 = builder.add(k, ir.Constant(I64, 1))
        end = builder.block
        k.add_incoming(k1, end)
        for i in range(MR):
            for v in range(NV):
                accs[i][v].add_incoming(new[i][v], end)
        builder.cbranch(builder.icmp_signed("<", k1, kc_), loop, done)
        builder.position_at_end(done)
        results = []
        for i in range(MR):
            for v in range(NV):
                res = builder.phi(V)
                res.add_incoming(zero, pre)
                res.add_incoming(new[i][v], end)
                results.append(res)
        for i in range(MR):
            for v in range(NV):
                res = results[i * NV + v]
                row = builder.mul(ir.Constant(I64, i), ldc_)
                off = builder.add(c_off_, builder.add(row, ir.Constant(I64, v * VW)))
                ptr = builder.bitcast(builder.gep(pc, [off]), V.as_pointer())
                builder.store(builder.fadd(builder.load(ptr, align=4), res), ptr, align=4)
        return context.get_dummy_value()
    return sig, codegen


KC, MC, NC = 256, 96, 2048      # depth of a packed panel, rows of packed A, columns of packed B


@njit(cache=False, error_model="numpy")
def sgemm(a, b, c):
    """c = a @ b for C-contiguous float32 a (m, k), b (k, n), c (m, n): each element of c is
    the sum, in KC-deep panels taken in order, of an FMA chain over the panel (fixed order:
    the bits do not depend on how tiles would be shared among threads)."""
    m, k = a.shape
    n = b.shape[1]
    cf = c.reshape(-1)
    cf[:] = 0.0
    ncap = min(NC, ((n + NR - 1) // NR) * NR)
    bp = np.empty(KC * ncap, np.float32)
    ap = np.empty(KC * MC, np.float32)
    tmp = np.empty(MR * NR, np.float32)
    for jc in range(0, n, NC):
        nc = min(NC, n - jc)
        nslv = (nc + NR - 1) // NR
        for pc in range(0, k, KC):
            kc = min(KC, k - pc)
            # pack B[pc:pc+kc, jc:jc+nc] as slivers of NR columns, k-major, zero-padded
            for s in range(nslv):
                j0 = jc + s * NR
                w = min(NR, n - j0)
                base = s * kc * NR
                if w == NR:
                    for kk in range(kc):
                        row = base + kk * NR
                        bp[row:row + NR] = b[pc + kk, j0:j0 + NR]
                else:
                    for kk in range(kc):
                        row = base + kk * NR
                        for j in range(w):
                            bp[row + j] = b[pc + kk, j0 + j]
                        for j in range(w, NR):
                            bp[row + j] = 0.0
            for ic in range(0, m, MC):
                mc = min(MC, m - ic)
                mslv = (mc + MR - 1) // MR
                for s in range(mslv):
                    i0 = ic + s * MR
                    h = min(MR, m - i0)
                    base = s * kc * MR
                    for i in range(h):
                        for kk in range(kc):
                            ap[base + kk * MR + i] = a[i0 + i, pc + kk]
                    for i in range(h, MR):
                        for kk in range(kc):
                            ap[base + kk * MR + i] = 0.0
                for sj in range(nslv):
                    j0 = jc + sj * NR
                    w = min(NR, n - j0)
                    for si in range(mslv):
                        i0 = ic + si * MR
                        h = min(MR, m - i0)
                        if h == MR and w == NR:
                            micro(ap, si * kc * MR, bp, sj * kc * NR, cf, i0 * n + j0, n, kc)
                        else:
                            tmp[:] = 0.0
                            micro(ap, si * kc * MR, bp, sj * kc * NR, tmp, 0, NR, kc)
                            for i in range(h):
                                for j in range(w):
                                    c[i0 + i, j0 + j] += tmp[i * NR + j]


def compare(m, k, n, reps=15):
    """Medians of sgemm and np.matmul on (m, k) @ (k, n) float32, alternating; one line."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    c = np.empty((m, n), np.float32)
    sgemm(a, b, c)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    err = np.abs(c - ref).max() / np.abs(ref).max()
    ours, theirs = [], []
    for _ in range(reps):
        t = time.perf_counter()
        sgemm(a, b, c)
        ours.append(time.perf_counter() - t)
        t = time.perf_counter()
        np.matmul(a, b)
        theirs.append(time.perf_counter() - t)
    flop = 2.0 * m * k * n
    o, p = np.median(ours), np.median(theirs)
    print(f"{m:5d}x{k:<5d}@ {k:5d}x{n:<5d} {o * 1e6:9.0f} {flop / o / 1e9:7.0f} "
          f"{p * 1e6:11.0f} {flop / p / 1e9:7.0f} {o / p:6.2f} {err:9.1e}")


@njit(cache=False)
def _micro_loop(a, b, c, kc, reps, tiles):
    for _ in range(reps):
        for t in range(tiles):
            micro(a, t * kc * MR, b, 0, c, 0, NR, kc)


def micro_peak(kc=256, tiles=8, reps=2000):
    """GFLOP/s of the micro-kernel alone on packed operands in L1 (median of 7)."""
    rng = np.random.default_rng(0)
    a = rng.random(kc * MR * tiles, dtype=np.float32)
    b = rng.random(kc * NR, dtype=np.float32)
    c = np.zeros(MR * NR, np.float32)
    _micro_loop(a, b, c, kc, 1, 1)
    times = []
    for _ in range(7):
        t = time.perf_counter()
        _micro_loop(a, b, c, kc, reps, tiles)
        times.append(time.perf_counter() - t)
    print(f"micro-kernel alone: {2.0 * MR * NR * kc * tiles * reps / np.median(times) / 1e9:.0f} "
          "GFLOP/s on one core")


SHAPES = [(128, 784, 512), (128, 512, 512), (784, 128, 512), (512, 128, 784),
          (1024, 1024, 1024), (128, 512, 10)]

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--micro", action="store_true", help="also time the micro-kernel alone")
    args = ap.parse_args()
    print(f"OpenBLAS kernels: OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE')}, "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}")
    if args.micro:
        micro_peak()
    print(f"{'product':24s} {'ours us':>9s} {'GFLOP/s':>7s} {'np.matmul us':>11s} {'GFLOP/s':>7s} "
          f"{'ratio':>6s} {'rel err':>9s}")
    for shape in SHAPES:
        compare(*shape)
