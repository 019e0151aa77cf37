"""Loops compiled whole: a while / scan (fori lowers to either) becomes ONE Numba function that
runs every iteration in nopython code, instead of a Python loop calling the body's executable.

The body (and cond) Jaxprs go through the usual passes and fusion; then every step is emitted
as nopython source over flat (1-D, C-contiguous) buffers of static size (the data steps'
lowerings are in compiler/loop_lowerings.py):

- fused groups call their generated kernels (codegen's source, inlined into the module, so the
  elementwise and reduction results are bit-for-bit those of the Python-driven path);
- reshape / squeeze are free (the same flat buffer); broadcast_in_dim, transpose, slice, rev,
  pad and concatenate are gathers through index maps computed once, at build time, with the
  primitives' own impls applied to `arange` (so they cannot disagree with them);
  dynamic_slice / dynamic_update_slice add a clamped run-time offset to such a map;
- dot_general becomes a loop matmul (numba's np.dot needs SciPy, which corejax does not depend
  on) up to DOT_MAX_MACS multiply-adds; a bigger float product calls what NumPy's matmul calls
  for it in the executor's BLAS step, on NumPy's OpenBLAS directly (kernel_lib.call_gemm /
  call_gemv / call_syrk), with the same arguments, so the bits stay the Python-driven loop's:
  cblas_?gemm for matrix products, cblas_?gemv for vector products (M or N == 1), cblas_?syrk
  plus a triangle copy for x @ x.T / x.T @ x, NumPy's own loop for outer products (K == 1);
  unbatched ones split over the reduction as the executor's BLAS step splits them
  (compiler/blas.py), batched ones one call per batch element on OpenBLAS's threads.
  NumPy picks an unbatched product's routine and arguments from its operands' strides and
  data pointers, so those are promised for operands the executor surely holds as C arrays of
  their own (values its kernels and BLAS steps write; the loop's operands, which the run
  checks first, running the Python-driven loop where they are laid out otherwise in a way that
  matters: see "the layouts of the executor's values" below). A loop with a BLAS-sized product
  whose bits that cannot promise ((1, K) @ (K, 1) dots, mixed dtypes, integers, an operand
  the executor may hold as a strided view or share, one buffer reached through two Vars read
  both ways, a thread-dependent syrk plan) stays Python-driven;
- nested cond / while / scan are emitted inline;
- gather, scatter / scatter-add / scatter-mul, argmax / argmin, cumsum and stable sorts
  (a merge sort) are loops following the impls' order of updates (so the same bits);
- anything else (unstable sorts, scatter-min/max, windowed reductions, convolutions, bool
  dots, ...) runs its NumPy impl (the executor's, so the bits are the Python-driven path's)
  through `host_call` from an objmode block: a few microseconds per call, inside the loop.

Every buffer is allocated once per call, before the loop; each iteration writes the body's
values into them, then a new carry value the body computed trades buffers with the old carry
(a swap of two local names, no copy), and any other (a passthrough, a constant, another
carry's old value) is copied over it. ys are written by index into preallocated stacks.
Bodies with effects (debug callbacks), BLAS-sized dots of the kinds above or values Numba
kernels do not handle (float16, complex) raise `Unsupported`, and the caller keeps the
Python-driven loop.

The module source (kernels, then `kernel`, the loop) is cached on disk by diskcache exactly
like fused kernels: keyed by its text, compiled with `cache=True`. Compile-time constants (the
bodies' consts, index maps, literals) are arguments, not text, so equal structures share code.
"""
from __future__ import annotations

import hashlib
import threading
import time
import weakref

import numba
import numpy as np

from corejax.array import to_numpy
from corejax.core import Literal, Var
from corejax.compiler import blas, codegen, diskcache, eager_threads, gemm_sites, registry
from corejax.compiler.fusion import Buffers, FusedGroup, HostStep, partition
from corejax.compiler.loop_lowerings import (DataLowerings, copy_lines, executor_matrix,
                                              np_name, size)
from corejax.compiler.passes import run_passes

__all__ = ["compile_loop", "loop_sources", "host_call", "Unsupported", "stats",
           "JaxprEmitter", "check_dtype"]

# Loops built compiled / left Python-driven (Unsupported), calls of each kind (the Python
# loops in control_flow.py count theirs), and host calls from inside compiled loops.
stats = {"compiled": 0, "unsupported": 0, "compiled_calls": 0, "python_calls": 0,
         "host_calls": 0}


# Index maps are arguments as big as the values they move: past this many elements, the step
# runs its NumPy impl from a host call instead (strided views there, no map).
INDEX_MAP_MAX = 1 << 20


class _IndexMapTooBig(Exception):
    pass


class Unsupported(Exception):
    """A loop body with a step that has no nopython form here; the message names it."""


_GATHERS = {"broadcast_in_dim", "transpose", "reshape", "squeeze", "slice", "rev"}
_LAYOUT_CONSTANT = _GATHERS | {"iota", "concatenate", "pad"}


def check_dtype(aval):
    dt = np.dtype(aval.dtype)
    if not (dt.kind in "biu" or (dt.kind == "f" and dt.itemsize >= 4)):
        raise Unsupported(f"a {dt} value")


class _Module:
    """The source being generated: kernels, constant arguments and the loop function's lines."""

    def __init__(self):
        self.imports = {"import math", "import numpy as np", "from numba import njit, prange"}
        self.kernel_defs: list = []
        self.kernel_names: dict = {}     # kernel source -> function name
        self.prelude: list = []          # allocations, run once per call
        self.consts: list = []           # (name, flat array): trailing arguments
        self.allocated: list = []        # buffers from alloc, in order
        self.host_prims: list = []       # primitives run through host_call
        # what the run checks of the operands' layouts first (_layouts_hold)
        self.checks: list = []
        # the variant whose BLAS products run on one OpenBLAS thread over their plans'
        # one-thread chunks (loops._build), and whether a product's plan makes one worth it
        self.one_thread = False
        self.thread_modes = False
        self.needs_one_thread = False   # a BLAS call whose executor bits are one thread's
        self._n = 0

    def fresh(self, prefix: str) -> str:
        self._n += 1
        return f"{prefix}_{self._n}"

    def alloc(self, aval) -> str:
        check_dtype(aval)
        name = self.fresh("b")
        self.prelude.append(f"{name} = np.empty({size(aval.shape)}, {np_name(aval.dtype)})")
        self.allocated.append(name)
        return name

    def const(self, value, dtype) -> str:
        name = self.fresh("c")
        self.consts.append((name, np.ascontiguousarray(np.asarray(value, dtype)).reshape(-1)))
        return name

    def index_map(self, idx) -> str:
        idx = np.asarray(idx).reshape(-1)
        if idx.size > INDEX_MAP_MAX:
            raise _IndexMapTooBig
        return self.const(idx, np.int64)

    def kernel(self, source: str) -> str:
        name = self.kernel_names.get(source)
        if name is None:
            head, sep, rest = source.partition("@njit(")
            self.imports.update(line for line in head.splitlines() if line.strip())
            name = self.kernel_names[source] = self.fresh("k")
            self.kernel_defs.append(sep + rest.replace("def kernel(", f"def {name}(", 1))
        return name

    def source(self, args, body, outs) -> str:
        lines = sorted(self.imports) + ["", ""]
        for d in self.kernel_defs:
            lines += [d.rstrip("\n"), "", ""]
        params = ", ".join(list(args) + [n for n, _ in self.consts])
        # (no GIL round trip around each host call: measured faster, and much faster when
        # the host call runs multithreaded BLAS)
        nogil = "" if self.host_prims else "nogil=True, "
        lines += [f'@njit(error_model="numpy", {nogil}cache=True)', f"def kernel({params}):"]
        lines += ["    " + line for line in self.prelude] + body
        lines.append(f"    return ({''.join(o + ', ' for o in outs)})")
        return "\n".join(lines) + "\n"


_UPDATES = {"dynamic_update_slice", "scatter", "scatter-add", "scatter-mul"}


def _in_place_updates(jaxpr, steps, donated) -> set:
    """ids of the update equations (dynamic_update_slice, scatter) that may write into their
    operand: a value held in a donated buffer (a donated Var, or an in-place update's result)
    that no later step and no output reads, through any view."""
    if not donated:
        return set()
    buffers = Buffers(jaxpr, steps, lambda s: s.eqn.invars[:1] if isinstance(s, HostStep) and
                      s.eqn.primitive.name in _GATHERS and type(s.eqn.invars[0]) is Var else ())
    ok, owned = set(), set(donated)
    for i, s in enumerate(steps):
        if isinstance(s, HostStep) and s.eqn.primitive.name in _UPDATES:
            x, *rest = s.eqn.invars
            roots = buffers.roots_of(x) if type(x) is Var else frozenset((None,))
            if roots <= owned and buffers.free_after(x, i) and \
                    all(type(v) is not Var or not roots & buffers.roots_of(v) for v in rest):
                ok.add(id(s.eqn))
                owned.add(s.eqn.outvars[0])
    return ok


# --- the layouts of the executor's values ------------------------------------------------
#
# An unbatched BLAS-sized product calls what the executor's np.matmul calls on its operands
# (DataLowerings._blas_dot), and NumPy picks the routine and its arguments from the operands'
# strides and data pointers: a transposed view is read with the transpose flag, other strided
# ones are copied, x @ x.T of one data pointer goes to syrk. The compiled loop's flat buffers
# say nothing of those, so such a product is promised only for operands the Python-driven
# loop's executor surely holds as C arrays sharing memory with no other value but their own
# views (`_Emitter.c`: Var -> root, the value whose memory it is): values its fused kernels and
# BLAS steps write, and the loop's own operands (`_Operand` roots), which the compiled loop's
# run checks before it runs (`_layouts_hold`), running the Python-driven loop where they are
# laid out otherwise in a way that matters.


class _Operand:
    """The root of a value that is a compiled loop's operand (a step's slice of it, `sliced`,
    for scan xs) in the Python-driven loop, at least in its first iteration; `shape`: the
    value's."""
    __slots__ = ("index", "sliced", "shape")

    def __init__(self, index, sliced, shape):
        self.index, self.sliced, self.shape = index, sliced, tuple(shape)


def _c_inputs(jaxpr, consts, in_roots) -> dict:
    """{Var: root} of a Jaxpr's inputs the executor surely holds as C arrays of their own: those
    with a root in `in_roots` (None: unknown), and C-contiguous constants sharing memory with
    no other constant (their own roots)."""
    c = {v: r for v, r in zip(jaxpr.invars, in_roots) if r is not None}
    arrays = [to_numpy(x) for x in consts]
    for i, (v, a) in enumerate(zip(jaxpr.constvars, arrays)):
        if isinstance(a, np.ndarray) and a.flags.c_contiguous and \
                not any(np.may_share_memory(a, b) for j, b in enumerate(arrays) if j != i):
            c[v] = v
    return c


def _c_step(step, c: dict):
    """Updates `c` with a step's outputs: fused kernels, BLAS steps and concatenations write
    fresh C buffers (their own roots); a reshape / squeeze of such a value is a C view of it
    (its root); what any other step returns is unknown (NumPy impls may return strided views,
    control flow its operands)."""
    if isinstance(step, FusedGroup):
        c.update((v, v) for v in step.outputs)
        return
    eqn = step.eqn
    name, outs, ins = eqn.primitive.name, eqn.outvars, eqn.invars
    if name in ("dot_general", "concatenate") and len(outs) == 1:
        c[outs[0]] = outs[0]
    elif (name == "squeeze" or (name == "reshape" and eqn.params.get("dimensions") is None)) \
            and len(outs) == 1 and type(ins[0]) is Var and ins[0] in c:
        c[outs[0]] = c[ins[0]]
    else:
        for v in outs:
            c.pop(v, None)


def _c_carries(body, before, carry, after) -> list:
    """The carries' roots (None: unknown) in a loop body whose other inputs have the roots
    `before` and `after`, from the operands' (`carry`) as a fixed point: a carry keeps its
    operand's root where every iteration replaces it with a C value of its own (a fresh one,
    or a view of itself; not another carry's new value, not another input or constant)."""
    opt = run_passes(body)
    jaxpr = opt.jaxpr
    steps = partition(jaxpr)
    carry, nk, first = list(carry), len(carry), len(before)
    while True:
        ins = list(before) + carry + list(after)
        c = _c_inputs(jaxpr, opt.consts, ins)
        for step in steps:
            _c_step(step, c)
        consts = [c[v] for v in jaxpr.constvars if v in c]
        outs = [c.get(v) if type(v) is Var else None for v in jaxpr.outvars[:nk]]
        new = []
        for k, r in enumerate(outs):
            others = [q for i, q in enumerate(ins) if i != first + k] + consts
            own = r is not None and sum(r is q for q in outs) == 1 and \
                all(r is not q for q in others)
            new.append(carry[k] if own else None)
        if all(a is b for a, b in zip(new, carry)):
            return carry
        carry = new


def _unshared(roots) -> list:
    """The roots (None: unknown) of operands whose root is no other operand's."""
    return [r if r is not None and sum(r is q for q in roots) == 1 else None for r in roots]


def _layouts_hold(checks, operands) -> bool:
    """Whether the Python-driven loop's BLAS steps would read these operands as the compiled
    loop's calls assumed (`_Emitter.blas_operands`' checks): each as its flag said (a C
    operand always does), a syrk operand C, and no two operands of a product that a shared
    data pointer would turn into a syrk sharing memory."""
    values = {}

    def value(index, sliced):
        if (index, sliced) not in values:
            x = to_numpy(operands[index])
            values[index, sliced] = None if sliced and not len(x) else x[0] if sliced else x
        return values[index, sliced]

    for kind, *sides in checks:
        xs = [value(i, s) for i, s, *_ in sides]
        if any(x is None for x in xs):
            continue                        # a scan of no steps
        if kind == "c":
            if not xs[0].flags.c_contiguous:
                return False
        elif kind == "flag":
            (_, _, perm, rows, cols, flag), x = sides[0], xs[0]
            if not x.flags.c_contiguous and executor_matrix(x, perm, rows, cols)[1] != flag:
                return False
        elif np.may_share_memory(*xs):      # "distinct"
            return False
    return True


class JaxprEmitter:
    """What the CPU and the CUDA loop emitters share: a Jaxpr's constants and inputs bound to
    buffers, its steps walked in order (fused groups to `group`, equations to `eqn`), layout
    ops of literals folded into constants, literal operands as constant buffers, and the
    `lower_<primitive>` dispatch, where an equation with no lowering goes to `no_lowering`.
    Needs `self.m` (const, index_map, alloc), `check(aval)`, `generate` (a fused group's
    kernel plan) and `group_call` (the lines calling it); `jaxpr_state` /
    `set_jaxpr_state` carry what one Jaxpr's steps need (the CPU's in-place updates), and
    `note_jaxpr` / `note_step` see the Jaxpr's inputs and each step (the CPU's executor
    layouts)."""

    check = staticmethod(check_dtype)

    def buffer(self, atom, env) -> str:
        if type(atom) is Literal:
            return self.m.const(np.full(atom.aval.shape, atom.val), atom.aval.dtype)
        return env[atom]

    def scalar(self, atom, env) -> str:
        if type(atom) is Literal:
            return repr(np.asarray(atom.val).item())
        return f"{env[atom]}[0]"

    def jaxpr_state(self, jaxpr, steps, in_names, donated):
        return None

    def set_jaxpr_state(self, state):
        pass

    def note_jaxpr(self, jaxpr, consts, in_roots):
        pass

    def note_step(self, step):
        pass

    def closed(self, closed, in_names, ind, donated=(), in_roots=None):
        """Lines computing `closed` on the buffers `in_names`, and its output buffers. Buffers
        in `donated` (a loop's own carries) may be updated in place once their old value is
        dead, where the emitter does that. `in_roots`: the roots of the inputs the executor
        surely holds as C arrays of their own (see `_Emitter.c`; None: unknown)."""
        opt = run_passes(closed)
        jaxpr = opt.jaxpr
        steps = partition(jaxpr)
        state = self.jaxpr_state(jaxpr, steps, in_names, donated)
        self.note_jaxpr(jaxpr, opt.consts, in_roots or [None] * len(jaxpr.invars))
        env: dict = {}
        for v, c in zip(jaxpr.constvars, opt.consts):
            self.check(v.aval)
            env[v] = self.m.const(to_numpy(c), v.aval.dtype)
        for v, n in zip(jaxpr.invars, in_names):
            self.check(v.aval)
            env[v] = n
        lines: list = []
        for step in steps:
            self.set_jaxpr_state(state)     # (nested Jaxprs set their own)
            if isinstance(step, FusedGroup):
                self.group(step, env, lines, ind)
            else:
                self.eqn(step.eqn, env, lines, ind)
            self.note_step(step)
        return lines, [self.buffer(v, env) for v in jaxpr.outvars]

    def eqn(self, eqn, env, lines, ind):
        name = eqn.primitive.name
        for v in eqn.outvars:
            self.check(v.aval)
        if name in _LAYOUT_CONSTANT and all(type(v) is Literal for v in eqn.invars):
            value = eqn.primitive.impl(*[np.asarray(v.val, v.aval.dtype) for v in eqn.invars],
                                       **eqn.params)
            env[eqn.outvars[0]] = self.m.const(to_numpy(value), eqn.outvars[0].aval.dtype)
            return
        handler = getattr(self, "lower_" + name.replace("-", "_"), None)
        if handler is not None:
            emitted: list = []
            try:
                handler(eqn, env, emitted, ind)
            except _IndexMapTooBig:
                pass
            else:
                lines += emitted
                return
        self.no_lowering(eqn, env, lines, ind)

    def group(self, group, env, lines, ind):
        """A fused group: its kernel (`generate`), outputs in fresh buffers, the call
        (`group_call`)."""
        try:
            plan = self.generate(group)
        except NotImplementedError as e:
            raise Unsupported(f"a fused group the code generator cannot lower ({e})") from e
        outs = plan.outputs + ([plan.reduction_out] if plan.reduction_out is not None else [])
        for v in outs:
            env[v] = self.m.alloc(v.aval)
        lines += self.group_call(plan, [env[v] for v in outs], env, ind)

    def no_lowering(self, eqn, env, lines, ind):
        raise Unsupported(f"the primitive {eqn.primitive.name}")


class _Emitter(DataLowerings, JaxprEmitter):
    def __init__(self, module: _Module):
        self.m = module
        self.in_place: set = set()      # ids of update equations writing their operand
        # Var -> root: values the executor surely holds as C arrays of their own (see _c_step)
        self.c: dict = {}

    def note_jaxpr(self, jaxpr, consts, in_roots):
        for v in list(jaxpr.invars) + list(jaxpr.constvars):
            self.c.pop(v, None)
        self.c.update(_c_inputs(jaxpr, consts, in_roots))

    def note_step(self, step):
        _c_step(step, self.c)

    def executor_root(self, atom):
        """The root of a C array the executor surely holds for `atom` (see _c_step), or None."""
        return self.c.get(atom) if type(atom) is Var else None

    def _operand_roots(self, atoms) -> list:
        return _unshared([self.executor_root(v) for v in atoms])

    def blas_operands(self, kind, sides, pair):
        """Notes the operands (atom, dims order, rows, cols, transposed) of an unbatched BLAS
        call chosen for their executor layouts: those that are the loop's operands (or their
        slices) get checks for the run (`_layouts_hold`): a syrk operand, or one reached
        through a reshape, must be C; another must be read with the same flag; and `pair`
        (a square gemm reading one operand transposed) operands must share no memory."""
        ops = []
        for atom, perm, rows, cols, flag in sides:
            root = self.executor_root(atom)
            if not isinstance(root, _Operand):
                continue                # a value the loop computes: a fresh C array
            if kind == "syrk" or atom.aval.shape != root.shape:
                self.m.checks.append(("c", (root.index, root.sliced)))
            else:
                self.m.checks.append(("flag", (root.index, root.sliced, tuple(perm), rows,
                                                cols, flag)))
            ops.append(root)
        if pair and len(ops) == 2 and ops[0] is not ops[1]:
            self.m.checks.append(("distinct", (ops[0].index, ops[0].sliced),
                                  (ops[1].index, ops[1].sliced)))

    def jaxpr_state(self, jaxpr, steps, in_names, donated):
        return _in_place_updates(
            jaxpr, steps, {v for v, n in zip(jaxpr.invars, in_names) if n in donated})

    def set_jaxpr_state(self, state):
        self.in_place = state

    generate = staticmethod(codegen.generate)

    def group_call(self, plan, outs, env, ind) -> list:
        # Loop sizes are read from an argument, not written as literals: with constant trip
        # counts LLVM would vectorize the inlined kernels' reductions differently (other
        # partial sums, other roundings) from the executor's shape-generic kernels.
        sizes = self.m.index_map(plan.sizes) if plan.sizes else None
        args = [f"{sizes}[{j}]" for j in range(len(plan.sizes))] + \
            [env[v] for v in plan.arrays] + outs
        return [f"{ind}{self.m.kernel(plan.source)}({', '.join(args)})"]

    def no_lowering(self, eqn, env, lines, ind):
        self.host(eqn, eqn.primitive.impl, env, lines, ind)

    @staticmethod
    def unsupported(reason: str):
        raise Unsupported(reason)

    def host(self, eqn, impl, env, lines, ind):
        """The equation run by `impl` on NumPy arrays, from an objmode block inside the loop (a
        few microseconds a call, where the Python-driven loop pays for the whole body)."""
        if eqn.primitive in registry.effectful:
            raise Unsupported(f"the effectful primitive {eqn.primitive.name}")
        if any(k.endswith("jaxpr") or k == "branches" for k in eqn.params):
            raise Unsupported(f"the primitive {eqn.primitive.name} with sub-jaxprs")
        key = _register_host_fn(eqn, impl)
        ins = [self.buffer(v, env) for v in eqn.invars]
        outs = [self.m.fresh("h") for _ in eqn.outvars]
        self.m.host_prims.append(eqn.primitive.name)
        fn = self.m.kernel(_host_call_source(key, len(ins), [v.aval.dtype for v in eqn.outvars]))
        lines.append(f"{ind}({''.join(o + ', ' for o in outs)}) = {fn}({', '.join(ins)})")
        env.update(zip(eqn.outvars, outs))

    # --- control flow --------------------------------------------------------------------------

    def carry_update(self, carry, outs, avals, fresh, ind) -> list:
        """The body's outputs become the carries: a buffer the body allocated (`fresh`: written
        anew every iteration) trades places with its carry's buffer; any other is copied over
        the carry (through a temporary first when it is another carry's old buffer)."""
        lines, outs = [], list(outs)
        for k, o in enumerate(outs):
            if o in carry and o != carry[k]:
                t = self.m.alloc(avals[k])
                lines += copy_lines(t, o, size(avals[k].shape), ind)
                outs[k] = t
        for k, o in enumerate(outs):
            if o in fresh and outs.count(o) == 1:
                lines.append(f"{ind}{carry[k]}, {o} = {o}, {carry[k]}")
            elif o != carry[k]:
                lines += copy_lines(carry[k], o, size(avals[k].shape), ind)
        return lines

    def while_loop(self, params, ins, ind, ins_roots=None):
        """`ins_roots`: the operands' roots (see `_Emitter.c`; None: the loop's own operands,
        which its run checks)."""
        nc, nb = params["cond_nconsts"], params["body_nconsts"]
        body = params["body_jaxpr"]
        avals = body.in_avals[nb:]
        if ins_roots is None:
            ins_roots = [_Operand(i, False, a.shape) for i, a in
                         enumerate(params["cond_jaxpr"].in_avals[:nc] + body.in_avals)]
        carry_c = _c_carries(body, ins_roots[nc:nc + nb], ins_roots[nc + nb:], [])
        carry = [self.m.alloc(a) for a in avals]
        lines = []
        for c, x, a in zip(carry, ins[nc + nb:], avals):
            lines += copy_lines(c, x, size(a.shape), ind)
        cond_lines, (pred,) = self.closed(params["cond_jaxpr"], ins[:nc] + carry, ind + "    ",
                                          in_roots=ins_roots[:nc] + carry_c)
        mark = len(self.m.allocated)
        body_lines, outs = self.closed(body, ins[nc:nc + nb] + carry, ind + "    ", carry,
                                       in_roots=ins_roots[nc:nc + nb] + carry_c)
        fresh = set(self.m.allocated[mark:])
        lines += [f"{ind}while True:", *cond_lines, f"{ind}    if not {pred}[0]:",
                  f"{ind}        break", *body_lines,
                  *self.carry_update(carry, outs, avals, fresh, ind + "    ")]
        return lines, carry

    def scan(self, params, ins, ind, ins_roots=None):
        """`ins_roots` as for while_loop (an xs' root stands for its steps' slices too: C
        arrays where the stack is one)."""
        closed, length = params["jaxpr"], params["length"]
        nc, nk = params["num_consts"], params["num_carry"]
        if ins_roots is None:
            ins_roots = [_Operand(i, i >= nc + nk, a.shape)
                         for i, a in enumerate(closed.in_avals)]
        carry_c = _c_carries(closed, ins_roots[:nc], ins_roots[nc:nc + nk], ins_roots[nc + nk:])
        avals = closed.in_avals[nc:nc + nk]
        x_avals, y_avals = closed.in_avals[nc + nk:], closed.out_avals[nk:]
        carry = [self.m.alloc(a) for a in avals]
        ys = [self.m.alloc(type(a)((length,) + a.shape, a.dtype)) for a in y_avals]
        lines = []
        for c, x, a in zip(carry, ins[nc:nc + nk], avals):
            lines += copy_lines(c, x, size(a.shape), ind)
        it, i = self.m.fresh("it"), self.m.fresh("i")
        inner = ind + "    "
        lines += [f"{ind}for {it} in range({length}):",
                  f"{inner}{i} = {length - 1} - {it}" if params["reverse"] else f"{inner}{i} = {it}"]
        xs = []
        for x, a in zip(ins[nc + nk:], x_avals):
            s, name = size(a.shape), self.m.fresh("x")
            lines.append(f"{inner}{name} = {x}[{i} * {s}:({i} + 1) * {s}]")
            xs.append(name)
        mark = len(self.m.allocated)
        body_lines, outs = self.closed(closed, ins[:nc] + carry + xs, inner, carry,
                                       in_roots=ins_roots[:nc] + carry_c + ins_roots[nc + nk:])
        fresh = set(self.m.allocated[mark:])
        lines += body_lines
        for y, o, a in zip(ys, outs[nk:], y_avals):
            s = size(a.shape)
            lines.append(f"{inner}{y}[{i}] = {o}[0]" if s == 1 else
                         f"{inner}{y}[{i} * {s}:({i} + 1) * {s}] = {o}")
        lines += self.carry_update(carry, outs[:nk], avals, fresh, inner)
        return lines, carry + ys

    def lower_while(self, eqn, env, lines, ind):
        body, outs = self.while_loop(eqn.params, [self.buffer(v, env) for v in eqn.invars], ind,
                                     self._operand_roots(eqn.invars))
        lines += body
        env.update(zip(eqn.outvars, outs))

    def lower_scan(self, eqn, env, lines, ind):
        body, outs = self.scan(eqn.params, [self.buffer(v, env) for v in eqn.invars], ind,
                               self._operand_roots(eqn.invars))
        lines += body
        env.update(zip(eqn.outvars, outs))

    def lower_cond(self, eqn, env, lines, ind):
        index, *ops = eqn.invars
        branches = eqn.params["branches"]
        ops_roots = self._operand_roots(ops)
        ops = [self.buffer(v, env) for v in ops]
        outs = [self.m.alloc(v.aval) for v in eqn.outvars]
        if type(index) is Literal:
            chosen = min(max(int(index.val), 0), len(branches) - 1)
            branches = [branches[chosen]]
        ix = self.m.fresh("ix")
        lines.append(f"{ind}{ix} = min(max(int({self.scalar(index, env)}), 0), "
                     f"{len(branches) - 1})")
        for k, br in enumerate(branches):
            head = "else:" if k == len(branches) - 1 and k > 0 else \
                f"{'if' if k == 0 else 'elif'} {ix} == {k}:"
            br_lines, br_outs = self.closed(br, ops, ind + "    ", in_roots=ops_roots)
            lines += [f"{ind}{head}", f"{ind}    pass", *br_lines]
            for o, b, v in zip(outs, br_outs, eqn.outvars):
                lines += copy_lines(o, b, size(v.aval.shape), ind + "    ")
        env.update(zip(eqn.outvars, outs))


# host_call's equations, by a key derived from the equation alone (so that generated source,
# and Numba's cache of it, is the same in every process that builds the same loop).
_host_fns: dict = {}


def _register_host_fn(eqn, impl) -> str:
    text = repr((eqn.primitive.name, getattr(impl, "__qualname__", repr(impl)),
                 sorted(eqn.params.items()), [str(v.aval) for v in eqn.invars],
                 [str(v.aval) for v in eqn.outvars]))
    key = hashlib.sha256(text.encode()).hexdigest()[:20]
    _host_fns[key] = (impl, dict(eqn.params), [v.aval.shape for v in eqn.invars],
                      [np.dtype(v.aval.dtype) for v in eqn.outvars],
                      eqn.primitive.multiple_results)
    return key


def _host_call_source(key, n_in, out_dtypes) -> str:
    """A function of its own around each objmode block: inlined into the loop's control flow,
    objmode blocks can fail to compile ("Instruction does not dominate all uses")."""
    args = ", ".join(f"x{i}" for i in range(n_in))
    outs = "".join(f"y{i}, " for i in range(len(out_dtypes)))
    types = ", ".join(f'y{i}="{numba.from_dtype(np.dtype(dt))}[::1]"'
                      for i, dt in enumerate(out_dtypes))
    return "\n".join([
        "from numba import njit, objmode", "from corejax.compiler.loops import host_call", "",
        "@njit(cache=True)", f"def kernel({args}):", f"    with objmode({types}):",
        f"        ({outs}) = host_call({key!r}, {args})", f"    return ({outs})"]) + "\n"


def host_call(key, *flat):
    """Runs a registered equation on flat buffers; its outputs flat and C-contiguous."""
    impl, params, shapes, dtypes, multiple = _host_fns[key]
    stats["host_calls"] += 1
    outs = impl(*[x.reshape(s) for x, s in zip(flat, shapes)], **params)
    if not multiple:
        outs = (outs,)
    flat_outs = []
    for o, dt in zip(outs, dtypes):
        o = np.ascontiguousarray(to_numpy(o), dt).reshape(-1)
        # The loop copies carries in place: an output must not be a view of an operand.
        if not o.flags.writeable or any(np.may_share_memory(o, x) for x in flat):
            o = o.copy()
        flat_outs.append(o)
    return tuple(flat_outs)


# Built loops by their body Jaxpr: (name, other params) -> runner, or the Unsupported message.
_built: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_lock = threading.RLock()


def _operand_avals(name, params):
    if name == "while":
        nc, nb = params["cond_nconsts"], params["body_nconsts"]
        return (params["cond_jaxpr"].in_avals[:nc] + params["body_jaxpr"].in_avals[:nb]
                + params["body_jaxpr"].in_avals[nb:])
    closed, n = params["jaxpr"], params["num_consts"] + params["num_carry"]
    return closed.in_avals[:n] + [type(a)((params["length"],) + a.shape, a.dtype)
                                  for a in closed.in_avals[n:]]


# compile_loop refuses the params held here (while _python_driven builds their Python loop)
_refusing = threading.local()


def compile_loop(name, params):
    """A callable `(*numpy_operands) -> outputs` running the whole while / scan loop in one
    compiled function; raises Unsupported (naming the culprit) when the body has a step
    without a nopython form here."""
    if getattr(_refusing, "params", None) is params:
        raise Unsupported("its operands are not the C arrays its BLAS calls were chosen for")
    body = params["body_jaxpr"] if name == "while" else params["jaxpr"]
    key = (name,) + tuple((k, id(v) if k.endswith("jaxpr") else v)
                          for k, v in sorted(params.items()))
    with _lock:
        per_body = _built.setdefault(body, {})
        got = per_body.get(key)
        if got is None:
            try:
                got = _build(name, params)
                stats["compiled"] += 1
            except Unsupported as e:
                got = str(e)
                stats["unsupported"] += 1
            per_body[key] = got
    if isinstance(got, str):
        raise Unsupported(got)
    return got


def _python_driven(name, params):
    """The Python-driven loop the CPU executor runs where compile_loop refuses (for operands
    whose layouts the compiled loop's BLAS calls were not chosen for)."""
    from corejax.compiler import control_flow
    _refusing.params = params
    try:
        return control_flow.host_control_flow(name, params)
    finally:
        _refusing.params = None


def _emit(name, params, in_avals, one_thread=False):
    """(module, source, loaded function, its key) of the loop; `one_thread`: the variant
    whose BLAS products run over their plans' one-thread chunks (to be run on one thread)."""
    module = _Module()
    module.one_thread = one_thread
    emitter = _Emitter(module)
    args = [module.fresh("a") for _ in in_avals]
    loop = emitter.while_loop if name == "while" else emitter.scan
    lines, outs = loop(params, args, "    ")
    source = module.source(args, lines, outs)
    sig = [diskcache.numba_type(a.dtype) for a in in_avals] + \
        [diskcache.numba_type(c.dtype) for _, c in module.consts]
    try:
        fn, key = diskcache.load_kernel(source, sig)
    except diskcache.KernelCompileError as e:
        raise Unsupported(f"Numba could not compile the loop ({e})") from e
    return module, source, fn, key


def _build(name, params):
    in_avals = list(_operand_avals(name, params))
    for a in in_avals:
        check_dtype(a)
    module, source, fn, key = _emit(name, params, in_avals)
    out_avals = (params["body_jaxpr"].out_avals if name == "while" else
                 params["jaxpr"].out_avals[:params["num_carry"]] +
                 [type(a)((params["length"],) + a.shape, a.dtype)
                  for a in params["jaxpr"].out_avals[params["num_carry"]:]])
    adaptive = blas._adaptive
    if module.needs_one_thread and adaptive is not None:
        # products the executor runs on one OpenBLAS thread (small ones, blocks, batches):
        # only the one-thread variant, run on one thread (holding the BLAS lock, which a
        # host step's own products would wait for)
        if module.host_prims:
            raise Unsupported("products on one OpenBLAS thread beside host steps")
        module, source, fn, key = _emit(name, params, in_avals, one_thread=True)
        return _runner(module, source, key, [(fn, [c for _, c in module.consts])], None,
                       in_avals, out_avals, name, params, adaptive)
    consts = [c for _, c in module.consts]
    # Products with a plan (gemm_sites.GemmSite) run on OpenBLAS's threads in this function; its
    # one-thread variant runs them over the plans' one-thread chunks, with the same bits.
    # The loop, like an executor call site, times both and runs the faster (a threaded GEMM
    # while another process holds a core can take several times as long), or the one-thread
    # one while several devices' programs share the cores (blas.devices_at_once).
    variants = [(fn, consts)]
    if module.thread_modes and adaptive is not None and not module.host_prims:
        try:
            m1, _, fn1, _ = _emit(name, params, in_avals, one_thread=True)
        except Unsupported:
            pass
        else:
            variants.append((fn1, [c for _, c in m1.consts]))
    site = gemm_sites.GemmSite() if len(variants) == 2 else None
    return _runner(module, source, key, variants, site, in_avals, out_avals, name, params,
                   adaptive)


def _runner(module, source, key, variants, site, in_avals, out_avals, name, params, adaptive):
    """The loop's entry: variants [(function, consts)] of the threaded form and, where `site`
    times the two, the one-thread form; a single variant of a one-thread module
    (`needs_one_thread`) runs with OpenBLAS on one thread."""
    fn, consts = variants[0]
    one = module.one_thread and adaptive is not None
    dtypes = [np.dtype(a.dtype) for a in in_avals]
    shapes = [a.shape for a in out_avals]
    checks, fallback = module.checks, []

    def run(*operands):
        # the loop reads C arrays: a strided view (a transposed input) is copied first, so
        # the layouts its BLAS calls were chosen for hold for it as for any C operand
        c_ops = [np.ascontiguousarray(x, dt) for x, dt in zip(operands, dtypes)]
        if checks and not _layouts_hold(checks, c_ops):
            # the Python-driven loop's BLAS steps would see other layouts: run that loop
            if not fallback:
                fallback.append(_python_driven(name, params))
            return fallback[0](*operands)
        flat = [x.reshape(-1) for x in c_ops]
        if one:
            with adaptive.lock:
                if not adaptive.sharing:
                    adaptive._set(1)
                try:
                    outs = fn(*flat, *consts)
                finally:
                    if not adaptive.sharing:
                        adaptive._set(adaptive.threads)
        elif site is None:
            outs = fn(*flat, *consts)
        else:
            with adaptive.lock:
                mode = 1 if adaptive.sharing else site.mode()
                f, cs = variants[mode]
                if mode == 1 and not adaptive.sharing:
                    adaptive._set(1)
                elif mode == 0:
                    eager_threads.rest()    # (OpenBLAS's threads want both cores)
                try:
                    start = time.perf_counter()
                    outs = f(*flat, *cs)
                    if not adaptive.sharing:
                        site.record(mode, time.perf_counter() - start)
                finally:
                    if mode == 1 and not adaptive.sharing:
                        adaptive._set(adaptive.threads)
        stats["compiled_calls"] += 1
        return [o.reshape(s) for o, s in zip(outs, shapes)]

    run.source, run.key, run.host_prims = source, key, sorted(set(module.host_prims))
    return run


def loop_sources(executable) -> str:
    """The generated source of every compiled loop among a CPU executable's top-level steps
    (its as_text shows them as "sub-jaxprs compiled" host steps)."""
    parts = []
    for i, step in enumerate(getattr(executable, "steps", [])):
        eqn = getattr(step, "eqn", None)
        if eqn is None or eqn.primitive.name not in ("while", "scan"):
            continue
        try:
            run = compile_loop(eqn.primitive.name, eqn.params)
        except Unsupported as e:
            parts.append(f"# step {i}: {eqn.primitive.name} runs Python-driven: {e}")
        else:
            parts.append(f"# step {i}: {eqn.primitive.name} compiled as loop k_{run.key}\n"
                         f"{run.source}")
    return "\n".join(parts)
