"""CUDA code generation: a FusedGroup becomes the source of one numba.cuda kernel.

The group is laid out by the CPU code generator's `collapse` (compiler/codegen.py): operands are
materialized Vars or Virtuals (broadcasts, transposes, unit reshapes seen through indexing,
iotas, scalar literals); output dims of size 1 are dropped and adjacent dims every operand spans
alike (in its own memory order, alike reduced or kept) collapse into one loop dim; every buffer
is passed flat and indexed with offsets over the collapsed indices it spans.

- Elementwise: a grid-stride loop over the flattened output; each linear index is decomposed
  into the collapsed loop indices.
- Trailing reduction, "row" mode (long reductions): one block per kept output element (blocks
  loop over kept elements), threads stride over the reduced elements, then a tree reduction in
  shared memory. "serial" mode (short reductions): one thread per kept element. "cols" mode
  (long reductions whose kept elements are the innermost loop dim, as a bias gradient's sum
  over the batch and positions; only for kernels of their own, `columns=True`): a block's
  threads.x take consecutive kept elements (coalesced loads), its threads.y stride over a
  chunk of the reduced elements and combine in shared memory in a fixed order; where the
  kept elements are too few to fill the GPU the reduced elements are split in chunks over
  blocks, each writing a partial, and a second kernel (`finish_source`) combines the
  partials in chunk order: the same bits at every call.
Scalar expressions come from the registry's elementwise lowerings with `CudaScalarCtx`, which
names only math that compiles for CUDA (math.* / libdevice, the helpers of cuda_kernels).
"""
from __future__ import annotations

import numpy as np

from corejax.core import Literal
from corejax.compiler import registry
from corejax.compiler.codegen import collapse, emit_eqns, flat_offset, monoid
from corejax.compiler import cuda_kernels as K
from corejax.compiler.cuda_kernels import REDUCE_BLOCK, SIM, np_name
from corejax.compiler.fusion import FusedGroup
from corejax.compiler.scalar_ctx import ScalarCtx, literal

__all__ = ["CudaScalarCtx", "CudaKernelPlan", "generate", "SERIAL_MAX"]

# Reductions over at most this many elements per output run one thread per output.
SERIAL_MAX = 64
# "cols" mode: COLS_X kept elements by COLS_Y reduction lanes per block; a chunk of the
# reduction has at least COLS_MIN elements.
COLS_X, COLS_Y, COLS_MIN = (4, 2, 4) if SIM else (32, 8, 256)

_MATH = {n: f"math.{n}" for n in (
    "exp", "log", "log1p", "expm1", "tanh", "sin", "cos", "tan", "asin", "acos", "atan", "sinh",
    "cosh", "asinh", "acosh", "atanh", "sqrt", "erf", "erfc", "lgamma", "atan2", "log2",
    "log10")}
# Functions computed by cuda_kernels' device helpers instead of libdevice: float32 erf_inv by
# XLA's formula (as compiler/fastmath on the CPU), so random.normal agrees across backends.
_DEVICE_HELPERS = {("erf_inv", "float32"): "erf_inv_f32"}
_LIBDEVICE = {"exp2": "exp2", "cbrt": "cbrt", "floor": "floor", "ceil": "ceil",
              "nextafter": "nextafter", "rem": "fmod", "pow": "pow", "round_even": "rint",
              "erf_inv": "erfinv", "fma": "fma"}


class CudaScalarCtx(ScalarCtx):
    """ScalarCtx for CUDA kernels: math.* (libdevice) instead of the CPU fastmath polynomials
    and NumPy scalar ufuncs, and cuda_kernels' device helpers instead of kernel_lib's."""
    backend = "cuda"

    def _lib(self, name: str) -> str:
        return name            # every helper is in cuda_kernels.kernel_namespace()

    def math(self, name: str, *args) -> str:
        dt = self._dt()
        helper = _DEVICE_HELPERS.get((name, dt.name))
        if helper is not None:
            return f"np.{dt.name}({helper}({', '.join(args)}))"
        if dt.kind == "f" and name in _LIBDEVICE:
            fn = _LIBDEVICE[name] + ("f" if dt == np.float32 else "")
            return f"np.{dt.name}(libdevice.{fn}({', '.join(args)}))"
        handler = getattr(self, f"_m_{name}", None)
        if handler is not None:
            return handler(dt, *args)
        if name in _MATH:
            return f"np.{dt.name}({_MATH[name]}({', '.join(args)}))"
        raise NotImplementedError(f"no CUDA scalar lowering for math function {name!r}")

    def _m_isfinite(self, dt, x):
        return f"(abs({x}) < np.inf)"

    def _m_max(self, dt, x, y):
        if dt.kind in "fc":
            return f"fmax({x}, {y})"
        return f"({x} if {x} >= {y} else {y})"

    def _m_min(self, dt, x, y):
        if dt.kind in "fc":
            return f"fmin({x}, {y})"
        return f"({x} if {x} <= {y} else {y})"


class CudaKernelPlan:
    """A generated kernel and how to launch it."""

    def __init__(self, source, sizes, arrays, outputs, reduction_out, mode, extra,
                 chunks=1, finish_source=None):
        self.source = source
        self.sizes = sizes                  # collapsed loop sizes, passed first
        self.arrays = arrays                # materialized input Vars (flat buffers)
        self.outputs = outputs              # full-shape output Vars
        self.reduction_out = reduction_out
        self.mode = mode                    # "elementwise" | "row" | "serial" | "cols"
        self.extra = extra                  # trailing scalar arguments (total / nk, nr[, chunk])
        # "cols": chunks of the reduction; with more than one the kernel's partials (an
        # argument after the outputs: nk * chunks elements) are combined by finish_source
        # (cuda_kernels.partials_source: kernel(part, r0, nk, nk, chunks)).
        self.chunks = chunks
        self.finish_source = finish_source

    def argtypes(self):
        """Numba argument types of a launch (for compile_ptx)."""
        from numba import types, from_dtype
        arr = lambda v: types.Array(from_dtype(np.dtype(v.aval.dtype)), 1, "C")
        outs = self.outputs + ([self.reduction_out] if self.reduction_out is not None else [])
        part = [arr(self.reduction_out)] if self.mode == "cols" else []
        return tuple([types.int64] * len(self.sizes) + [arr(v) for v in self.arrays] +
                     [arr(v) for v in outs] + part + [types.int64] * len(self.extra))

    def finish_argtypes(self):
        from numba import types, from_dtype
        arr = types.Array(from_dtype(np.dtype(self.reduction_out.aval.dtype)), 1, "C")
        return (arr, arr, types.int64, types.int64, types.int64)

    def launch_config(self):
        from corejax.compiler.cuda_kernels import BLOCK, grid_for, MAX_GRID
        if self.mode == "row":
            return max(1, min(MAX_GRID, self.extra[0])), REDUCE_BLOCK
        if self.mode == "cols":
            tiles = -(-self.extra[0] // COLS_X)
            return ((max(1, min(MAX_GRID, tiles)), max(1, min(MAX_GRID, self.chunks))),
                    (COLS_X, COLS_Y))
        return grid_for(self.extra[0]), BLOCK


def generate(group: FusedGroup, columns: bool = False) -> CudaKernelPlan:
    """The kernel of `group`. columns=True allows "cols" mode (a 2-D block, and a second
    kernel where the reduction is split): for kernels launched on their own, not for the
    device functions of compiled loops (compiler/cuda_loops.py)."""
    S = group.shape
    red = group.reduction
    arrays, operand, collapsed, red_axes = collapse(group)
    k = len(collapsed)
    sizes = [int(np.prod([S[d] for d in c], dtype=np.int64)) for c in collapsed]
    cdim_of = {d: i for i, c in enumerate(collapsed) for d in c}
    reduced = [collapsed[i][0] in red_axes for i in range(k)]
    kept = [c for c in range(k) if not reduced[c]]
    reds = [c for c in range(k) if reduced[c]]

    offset = flat_offset

    def unravel(var, cdims):
        lines = [f"r = {var}"]
        for j in range(len(cdims) - 1, -1, -1):
            c = cdims[j]
            if j == 0:
                lines.append(f"i{c} = r")
            else:
                lines += [f"i{c} = r % n{c}", f"r = r // n{c}"]
        return lines

    ctx = CudaScalarCtx()
    names: dict = {}
    loads = []
    for j, (base, spans) in enumerate(arrays):
        cdims = list(dict.fromkeys(cdim_of[d] for d in spans))
        loads.append(f"x{j} = a{j}[{offset(cdims)}]")
    for atom, op in operand.items():
        if op[0] == "array":
            names[atom] = f"x{op[1]}"
        elif op[0] == "literal":
            names[atom] = literal(op[1].val, atom.aval.dtype)
        else:
            _, d, dt = op
            names[atom] = f"{np_name(dt)}(i{cdim_of[d]})" if d in cdim_of else literal(0, dt)

    def expr_of(atom):
        if type(atom) is Literal:
            return literal(atom.val, atom.aval.dtype)
        return names[atom]

    body = loads + emit_eqns(group, ctx, expr_of, names)
    outputs = [o for o in group.outputs if red is None or o is not red.outvars[0]]
    for j, v in enumerate(outputs):
        body.append(f"o{j}[{offset(range(k))}] = {names[v]}")

    args = [f"n{c}" for c in range(k)] + [f"a{j}" for j in range(len(arrays))] + \
        [f"o{j}" for j in range(len(outputs))]
    ind = lambda lines, n: ["    " * n + line for line in lines]
    chunks, finish = 1, None            # "cols": the split of its reduction
    if red is None:
        total = int(np.prod(sizes, dtype=np.int64))
        args.append("total")
        lines = ["for t in range(cuda.grid(1), total, cuda.gridsize(1)):"]
        lines += ind(unravel("t", list(range(k))) + body, 1)
        mode, extra = "elementwise", [total]
    else:
        dt = red.outvars[0].aval.dtype
        T = np_name(dt)
        init, combine = monoid(registry.kernel_lowerings[red.primitive][1], dt,
                               select_minmax=True)
        nk = int(np.prod([sizes[c] for c in kept], dtype=np.int64))
        nr = int(np.prod([sizes[c] for c in reds], dtype=np.int64))
        val = expr_of(red.invars[0])
        args += ["r0", "nk", "nr"]
        accumulate = body + [f"acc = {T}({combine.format(a='acc', b=val)})"]
        if nr <= SERIAL_MAX:
            mode = "serial"
            lines = ["for q in range(cuda.grid(1), nk, cuda.gridsize(1)):"]
            lines += ind(unravel("q", kept) + [f"acc = {init}", "for p in range(nr):"], 1)
            lines += ind(unravel("p", reds) + accumulate, 2)
            lines += ind(["r0[q] = acc"], 1)
        elif columns and k and not reduced[k - 1]:
            mode = "cols"
            X, Y = COLS_X, COLS_Y
            chunks, chunk = K.split_loop(-(-nk // X), nr, COLS_MIN)
            args.insert(args.index("nk"), "part")
            args.append("chunk")
            lines = [f"sh = cuda.shared.array(({Y}, {X}), {T})",
                     "tx = cuda.threadIdx.x", "ty = cuda.threadIdx.y",
                     "nch = (nr + chunk - 1) // chunk",
                     f"for kb in range(cuda.blockIdx.x, (nk + {X - 1}) // {X}, cuda.gridDim.x):",
                     f"    q = kb * {X} + tx",
                     "    for cb in range(cuda.blockIdx.y, nch, cuda.gridDim.y):",
                     f"        acc = {init}",
                     "        if q < nk:"]
            lines += ind(unravel("q", kept) +
                         ["p1 = nr if nr < (cb + 1) * chunk else (cb + 1) * chunk",
                          f"for p in range(cb * chunk + ty, p1, {Y}):"], 3)
            lines += ind(unravel("p", reds) + accumulate, 4)
            lines += ind(["sh[ty, tx] = acc", "cuda.syncthreads()",
                          "if ty == 0 and q < nk:",
                          "    s = sh[0, tx]",
                          f"    for j in range(1, {Y}):",
                          f"        s = {T}({combine.format(a='s', b='sh[j, tx]')})",
                          "    if nch == 1:",
                          "        r0[q] = s",
                          "    else:",
                          "        part[cb * nk + q] = s",
                          "cuda.syncthreads()"], 2)
            if chunks > 1:
                finish = K.partials_source(T, combine)
        else:
            mode = "row"
            B = REDUCE_BLOCK
            lines = [f"sh = cuda.shared.array({B}, {T})", "tid = cuda.threadIdx.x",
                     "for q in range(cuda.blockIdx.x, nk, cuda.gridDim.x):"]
            lines += ind(unravel("q", kept) + [f"acc = {init}", f"for p in range(tid, nr, {B}):"],
                         1)
            lines += ind(unravel("p", reds) + accumulate, 2)
            lines += ind(["sh[tid] = acc", "cuda.syncthreads()", f"s = {B // 2}",
                          "while s > 0:",
                          "    if tid < s:",
                          f"        sh[tid] = {T}({combine.format(a='sh[tid]', b='sh[tid + s]')})",
                          "    cuda.syncthreads()",
                          "    s = s // 2",
                          "if tid == 0:",
                          "    r0[q] = sh[0]",
                          "cuda.syncthreads()"], 1)
        extra = [nk, nr] + ([chunk] if mode == "cols" else [])
    source = f"def kernel({', '.join(args)}):\n" + "".join(f"    {l}\n" for l in lines)
    return CudaKernelPlan(source, sizes, [b for b, _ in arrays], outputs,
                          red.outvars[0] if red is not None else None, mode, extra,
                          chunks, finish)
