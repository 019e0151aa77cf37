"""Matrix products and convolutions on the GPU: one register-blocked, shared-memory tiled GEMM
kernel, generated per operand access pattern, with a deterministic split over the reduction.

`dot_general` is C[b, i, j] = sum_p A[b, i, p] B[b, p, j] with each operand read through
strides. `conv_general_dilated` is the same product read implicitly (no im2col buffer): per
group g, rows are the output positions (n, y...), columns the group's output features and the
reduction runs over (input feature c, kernel tap k...):

    out[n, g*Og + o, y] = sum_{c, k} lhs[n', g*cbm + c, y*st + k*rd - lo] * rhs[g*Og + o, c, k]

(n' = g*nbm + n: batch groups split the lhs batch; cbm = Cg for feature groups). A table per
reduction index q = (c, k...) holds the offsets that do not depend on the row (c's lhs offset,
each tap's dilated displacement, the rhs offset), so the inner loads do no division. Weight
gradients are such convolutions with few outputs and a reduction over the whole batch.

Each block computes a BM x BN tile of C with TX x TY threads, each thread RM x RN outputs (rows
ty + i*TY, columns tx + j*TX: conflict-free shared-memory reads and coalesced stores); the
reduction advances BK at a time through shared memory. When the tiles are too few to fill the
GPU, the reduction is split into `nsplit` contiguous chunks (cuda_kernels.split_loop): each
writes its partial tile to a scratch buffer, and a second kernel (cuda_kernels.partials_source)
sums the partials in split order. Every element's sum is
therefore formed in the same order at every call (no atomics): the same bits run after run.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from corejax.compiler import cuda_kernels as K
from corejax.compiler.cuda_kernels import MAX_GRID, SIM, _kernel, np_name

__all__ = ["GemmPlan", "gemm_plan", "dot_source", "conv_source", "reduce_source",
           "conv_reduce_source", "conv_table", "BLOCK_DIM"]

# Threads per block (TX x TY) and outputs per thread (RM x RN); the simulator runs each thread
# as Python, so it gets a small block that still has several threads and several outputs each.
TX, TY, RM, RN, BK = (2, 2, 2, 2, 4) if SIM else (16, 16, 4, 4, 16)
BM, BN, NT = TY * RM, TX * RN, TX * TY
BLOCK_DIM = (TX, TY)
# Splitting the reduction: at least MIN_KT tiles of BK per chunk, and enough blocks to fill the
# GPU (cuda_kernels.target_blocks).
MIN_KT = 1 if SIM else 4
assert NT % BM == 0 and NT % BN == 0 and NT % BK == 0
assert (BM * BK) % NT == 0 and (BK * BN) % NT == 0


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


class GemmPlan(NamedTuple):
    """How one product of `nb` batches (or groups) of M x N outputs over a reduction of K is
    launched: grid, block, the split of the reduction, and the scratch size for partials."""
    grid: tuple
    block: tuple
    nsplit: int
    kchunk: int
    scratch: int                  # elements of partial sums (0 when the reduction is whole)
    reduce_total: int             # outputs (nb * M * N): the split reduction's second pass
    inner: int                    # outputs of one batch or group (M * N)


def gemm_plan(nb: int, m: int, n: int, k: int) -> GemmPlan:
    tm, tn = _cdiv(m, BM), _cdiv(n, BN)
    nsplit, ktiles = K.split_loop(tm * tn * nb, _cdiv(k, BK), MIN_KT)
    kchunk = max(1, ktiles) * BK
    grid = (max(1, min(MAX_GRID, tn)), max(1, min(MAX_GRID, tm)),
            max(1, min(MAX_GRID, nb * nsplit)))
    scratch = nb * nsplit * m * n if nsplit > 1 else 0
    return GemmPlan(grid, BLOCK_DIM, nsplit, kchunk, scratch, nb * m * n, m * n)


# --- the kernel's skeleton ------------------------------------------------------------------

def _indent(lines, n):
    return [" " * n + ln for ln in lines]


def _gemm(args, nt, tile_setup, a_loads, b_loads, store_row, store_at):
    """The kernel text. `tile_setup`: lines once per output tile (after tm, tn, b are known);
    `a_loads` / `b_loads`: lines filling sA[q, r] / sB[q, c] for the step at t0 (they may use
    k1, the end of this chunk); `store_row(i)`: lines once per output row `row` of the thread;
    `store_at`: the flat output index of (b, row, col)."""
    body = [
        f"sA = cuda.shared.array(({BK}, {BM + 1}), {nt})",
        f"sB = cuda.shared.array(({BK}, {BN + 1}), {nt})",
        "tx = cuda.threadIdx.x",
        "ty = cuda.threadIdx.y",
        f"lid = ty * {TX} + tx",
        f"zero = {nt}(0)",
        f"tiles_m = (M + {BM - 1}) // {BM}",
        f"tiles_n = (N + {BN - 1}) // {BN}",
        "for z in range(cuda.blockIdx.z, nb * nsplit, cuda.gridDim.z):",
        "    b = z // nsplit",
        "    k0 = (z % nsplit) * kchunk",
        "    k1 = K if K < k0 + kchunk else k0 + kchunk",
        "    for tm in range(cuda.blockIdx.y, tiles_m, cuda.gridDim.y):",
        "        for tn in range(cuda.blockIdx.x, tiles_n, cuda.gridDim.x):",
    ]
    inner = list(tile_setup)
    inner += [f"c{i}_{j} = zero" for i in range(RM) for j in range(RN)]
    inner += [f"for t0 in range(k0, k1, {BK}):"]
    inner += _indent(a_loads + b_loads + ["cuda.syncthreads()",
                                          f"for q in range({BK}):"], 4)
    inner += [f"        a{i} = sA[q, ty + {i * TY}]" for i in range(RM)]
    inner += [f"        b{j} = sB[q, tx + {j * TX}]" for j in range(RN)]
    inner += [f"        c{i}_{j} += a{i} * b{j}" for i in range(RM) for j in range(RN)]
    inner += ["    cuda.syncthreads()"]
    for i in range(RM):
        inner += [f"row = tm * {BM} + ty + {i * TY}", "if row < M:"]
        rows = list(store_row(i))
        for j in range(RN):
            rows += [f"col = tn * {BN} + tx + {j * TX}",
                     "if col < N:",
                     "    if nsplit == 1:",
                     f"        C[{store_at}] = c{i}_{j}",
                     "    else:",
                     f"        P[(z * M + row) * N + col] = c{i}_{j}"]
        inner += _indent(rows, 4)
    body += _indent(inner, 12)
    return _kernel(args, body)


def _tile_loads(sname, nfixed, fixed_ok, load_expr, fixed_fast: bool):
    """Lines staging one operand's BK x nfixed tile into shared memory `sname`[q, f] for the
    step at t0. `fixed_ok(slot)` checks the bound of a slot's index along the fixed axis (rows
    of A, columns of B: `_fixed_setup`'s); `load_expr(slot, q)` reads the element (q the
    global reduction index). Consecutive threads take consecutive
    fixed-axis indices (fixed_fast) or consecutive reduction indices (for an operand whose
    reduction axis is its contiguous one)."""
    lines = []
    slots = (BK * nfixed) // NT
    for u in range(slots):
        if fixed_fast:
            f_loc, q_loc = f"lid % {nfixed}", f"lid // {nfixed} + {u * (NT // nfixed)}"
            slot = 0                       # the fixed index is the same in every slot
        else:
            f_loc, q_loc = f"lid // {BK} + {u * (NT // BK)}", f"lid % {BK}"
            slot = u
        lines += [f"q = t0 + {q_loc}",
                  "v = zero",
                  f"if {fixed_ok(slot)} and q < k1:"]
        lines += _indent(load_expr(slot, "q"), 4)
        lines += [f"{sname}[{q_loc}, {f_loc}] = v"]
    return lines


def _fixed_setup(prefix, nfixed, tile_start, fixed_fast, per_slot):
    """Per-tile lines computing each load slot's fixed-axis index `{prefix}{u}` and whatever
    `per_slot(u)` derives from it (base offsets), once per tile rather than per step."""
    lines = []
    slots = 1 if fixed_fast else (BK * nfixed) // NT
    for u in range(slots):
        loc = f"lid % {nfixed}" if fixed_fast else f"lid // {BK} + {u * (NT // BK)}"
        lines.append(f"{prefix}{u} = {tile_start} + {loc}")
        lines += per_slot(u)
    return lines


# --- dot_general ----------------------------------------------------------------------------

DOT_SCALARS = ["nb", "M", "N", "K", "nsplit", "kchunk", "sab", "sam", "sak", "sbb", "sbk",
               "sbn"]


def dot_source(dtype, a_rows_fast: bool = True, b_cols_fast: bool = True) -> str:
    """C[(b*M + row)*N + col] = sum_p A[b*sab + row*sam + p*sak] * B[b*sbb + p*sbk + col*sbn],
    accumulated in `dtype`. `a_rows_fast` / `b_cols_fast`: which axis consecutive threads load
    (choose the operand's contiguous one)."""
    nt = np_name(dtype)
    setup = _fixed_setup("ar", BM, f"tm * {BM}", a_rows_fast,
                         lambda u: [f"ab{u} = b * sab + ar{u} * sam"])
    setup += _fixed_setup("bc", BN, f"tn * {BN}", b_cols_fast,
                          lambda u: [f"bb{u} = b * sbb + bc{u} * sbn"])
    a = _tile_loads("sA", BM, lambda u: f"ar{u} < M",
                    lambda u, q: [f"v = {nt}(A[ab{u} + {q} * sak])"], a_rows_fast)
    b = _tile_loads("sB", BN, lambda u: f"bc{u} < N",
                    lambda u, q: [f"v = {nt}(B[bb{u} + {q} * sbk])"], b_cols_fast)
    args = ["A", "B", "C", "P"] + DOT_SCALARS
    return _gemm(args, nt, setup, a, b, lambda i: [], "(b * M + row) * N + col")


def reduce_source(dtype) -> str:
    """The product's split reduction: partials summed in split order (cuda_kernels'
    partials_source) into C, (b * M + row) * N + col."""
    return K.partials_source(np_name(dtype), "{a} + {b}")


# --- conv_general_dilated -------------------------------------------------------------------

def conv_scalars(nsp: int) -> list[str]:
    S = range(nsp)
    return (["nb", "M", "N", "K", "nsplit", "kchunk", "nbm", "cbm", "ls_n", "ls_c", "rs_o",
             "os_n", "os_c"] + [f"osz{d}" for d in S] + [f"lsz{d}" for d in S] +
            [f"ls{d}" for d in S] + [f"os{d}" for d in S] + [f"st{d}" for d in S] +
            [f"lo{d}" for d in S] + [f"ld{d}" for d in S])


def _conv_row(nsp: int, row: str, n: str, y: str) -> list[str]:
    """Lines decomposing an output row index into its batch `n` and positions `y`d."""
    lines = [f"rr = {row}"]
    for d in reversed(range(nsp)):
        lines += [f"{y}{d} = rr % osz{d}", f"rr = rr // osz{d}"]
    return lines + [f"{n} = rr"]


def conv_source(nsp: int, dtype, lhs_dilated: bool) -> str:
    """The implicit-GEMM convolution (module docstring) over `nsp` spatial dims. `tab` holds
    (nsp + 2) int64 per reduction index q = (c, k...): c*ls_c, each k_d*rd_d, and the rhs
    offset c*rs_i + sum k_d*rs_d. Without lhs dilation (ld == 1 everywhere) a tap's position
    is checked against the bounds alone."""
    nt, S, W = np_name(dtype), range(nsp), nsp + 2

    def a_setup(u):
        lines = _conv_row(nsp, f"ar{u}", "an", "ay")
        lines += [f"ab{u} = (b * nbm + an) * ls_n + b * cbm * ls_c"]
        lines += [f"yb{u}_{d} = ay{d} * st{d} - lo{d}" for d in S]
        return lines

    def a_load(u, q):
        lines = [f"tq = {q} * {W}"] + [f"p{d} = yb{u}_{d} + tab[tq + {d + 1}]" for d in S]
        if lhs_dilated:
            ok = " and ".join(f"p{d} >= 0 and p{d} % ld{d} == 0 and p{d} // ld{d} < lsz{d}"
                              for d in S)
            idx = " + ".join([f"ab{u}", "tab[tq]"] + [f"(p{d} // ld{d}) * ls{d}" for d in S])
        else:
            ok = " and ".join(f"p{d} >= 0 and p{d} < lsz{d}" for d in S)
            idx = " + ".join([f"ab{u}", "tab[tq]"] + [f"p{d} * ls{d}" for d in S])
        return lines + [f"if {ok or 'True'}:", f"    v = {nt}(A[{idx}])"]

    setup = _fixed_setup("ar", BM, f"tm * {BM}", True, a_setup)
    setup += _fixed_setup("bc", BN, f"tn * {BN}", True,
                          lambda u: [f"bb{u} = (b * N + bc{u}) * rs_o"])
    a = _tile_loads("sA", BM, lambda u: f"ar{u} < M", a_load, True)
    b = _tile_loads("sB", BN, lambda u: f"bc{u} < N",
                    lambda u, q: [f"v = {nt}(B[bb{u} + tab[{q} * {W} + {W - 1}]])"], True)

    def store_row(i):
        return _conv_row(nsp, "row", "on", "oy") + \
            ["ob = on * os_n" + "".join(f" + oy{d} * os{d}" for d in S)]

    args = ["A", "B", "C", "P", "tab"] + conv_scalars(nsp)
    return _gemm(args, nt, setup, a, b, store_row, "ob + (b * N + col) * os_c")


def conv_reduce_source(nsp: int, dtype) -> str:
    """The convolution's split reduction: partials summed in split order (cuda_kernels'
    partials_source), stored through the output's strides (r = row * N + col)."""
    S = range(nsp)
    store = ["row = r // N", "col = r % N"] + _conv_row(nsp, "row", "on", "oy")
    store += ["C[on * os_n + (b * N + col) * os_c" + "".join(f" + oy{d} * os{d}" for d in S) +
              "] = acc"]
    args = ["N", "os_n", "os_c"] + [f"osz{d}" for d in S] + [f"os{d}" for d in S]
    return K.partials_source(np_name(dtype), "{a} + {b}", args, store)


def conv_table(cg: int, ksz, ls_c: int, rs_i: int, rd, rs) -> np.ndarray:
    """The per-reduction-index offsets (see conv_source), int64, flat: q = c*prod(ksz) + k."""
    nsp = len(ksz)
    taps = np.indices(tuple(ksz), dtype=np.int64).reshape(nsp, -1).T        # (T, nsp)
    c = np.arange(cg, dtype=np.int64)[:, None]
    t = np.empty((cg, taps.shape[0], nsp + 2), np.int64)
    t[:, :, 0] = c * ls_c
    for d in range(nsp):
        t[:, :, d + 1] = taps[None, :, d] * rd[d]
    t[:, :, nsp + 1] = c * rs_i + (taps * np.asarray(rs, np.int64)).sum(1)[None, :]
    # (an empty reduction still gets one row: the kernel reads none, and the device buffer
    # is never empty)
    return t.reshape(-1) if t.size else np.zeros(nsp + 2, np.int64)
