"""Code generation: a FusedGroup becomes the source of one Numba loop nest.

Kernels are shape-generic: loop sizes are arguments, so one kernel serves every shape with the
same structure (and its source, the kernel's IR, is the disk-cache key). Dimensions are
collapsed first: output dims of size 1 are dropped and adjacent dims that every operand spans
alike, in the same memory order (and that are alike reduced or kept), merge into one loop. Every array is passed flat
(1-D, C-contiguous) and indexed with offsets over the loop indices of the dims it spans, in its
own memory order, so a broadcast or transposed operand is read without being materialized, and loads are placed at the outermost
loop level they depend on.

Reductions: a trailing run of reduced loops accumulates in a scalar; reduced loops outside it
accumulate into the (pre-initialized) result array. Reduction kernels are compiled with
fastmath `reassoc` (LLVM then vectorizes the accumulation with several partial sums, as XLA
does; results differ from a sequential sum by rounding only); elementwise kernels use no
fastmath flags at all, so their results are those of the scalar expressions. Loops over at
least PARALLEL_MIN elements use `prange` on their outermost kept dimension (with Numba's
`workqueue` threading layer unless NUMBA_THREADING_LAYER says otherwise: OpenMP's spinning
workers collapse when the machine is oversubscribed).
"""
from __future__ import annotations

import numpy as np

from corejax.core import Literal
from corejax.compiler import registry
from corejax.compiler.fusion import FusedGroup, Virtual
from corejax.compiler.scalar_ctx import ScalarCtx, literal

__all__ = ["KernelPlan", "generate", "collapse", "emit_eqns", "monoid", "flat_offset",
           "PARALLEL_MIN", "ADAPTIVE_MIN"]

# Loops of at least PARALLEL_MIN elements always use threads. On the 2-core shared machine,
# with other processes running, (x - mean)/std over 4000x4000 took 52 ms with prange and 40
# ms without, selu over 1M 0.68 ms vs 0.62 ms (OpenMP: 8 ms); on a quiet one selu over 1M
# took 308 us with prange, 433 us without. So groups from ADAPTIVE_MIN elements get a second
# kernel over a part of their outer loop, run in parts on this thread and briefly spinning
# helper threads, and their call site runs the way it measures faster (compiler/cpu.py):
# selu over 10^6 elements then takes 290 us, over 2^18 elements 75 us against 110 us.
PARALLEL_MIN = 1 << 25
ADAPTIVE_MIN = 1 << 18


class KernelPlan:
    """What the executor needs to call a generated kernel."""

    def __init__(self, source, sizes, arrays, outputs, reduction_out, needs_init,
                 written=None):
        self.source = source              # module source (without the cache header)
        self.sizes = sizes                # loop sizes, passed first
        self.arrays = arrays              # materialized Vars passed next (flattened)
        self.outputs = outputs            # full-shape output Vars passed after them
        self.reduction_out = reduction_out  # the reduction's output Var, or None
        self.needs_init = needs_init
        # {output Var: index in `arrays`}: outputs written into the array they are computed
        # from, element for element (`generate`'s `in_place`), not passed
        self.written = written or {}


def _np_name(dt) -> str:
    dt = np.dtype(dt)
    return "np.bool_" if dt == np.bool_ else f"np.{dt.name}"


def monoid(name, dt, select_minmax: bool = False, ieee: bool = False):
    """(identity literal, combine template with {a} and {b}) of a reduction monoid.
    `select_minmax` writes integer max/min as conditional expressions (for CUDA, where the
    two-argument builtins do not compile); `ieee` combines float max/min with LLVM's IEEE
    maximum / minimum (NaN-propagating, -0 below +0, as XLA and the eager impls; CPU)."""
    dt = np.dtype(dt)
    if name == "add":
        return literal(0, dt), "({a} + {b})"
    if name == "mul":
        return literal(1, dt), "({a} * {b})"
    if name in ("and", "or"):
        return literal(name == "and", dt), "({a} & {b})" if name == "and" else "({a} | {b})"
    big = np.inf if dt.kind == "f" else (True if dt == np.bool_ else np.iinfo(dt).max)
    small = -np.inf if dt.kind == "f" else (False if dt == np.bool_ else np.iinfo(dt).min)
    init = literal(small if name == "max" else big, dt)
    if dt.kind == "f" and ieee:
        return init, ("fmaximum" if name == "max" else "fminimum") + "({a}, {b})"
    if dt.kind == "f":
        return init, ("fmax" if name == "max" else "fmin") + "({a}, {b})"
    if select_minmax:
        return init, ("({a} if {a} >= {b} else {b})" if name == "max"
                      else "({a} if {a} <= {b} else {b})")
    return init, ("max" if name == "max" else "min") + "({a}, {b})"


def collapse(group: FusedGroup, order=None, layouts=None):
    """How a group is laid out as loops, for every code generator: `(arrays, operand,
    collapsed, red_axes)` where `arrays` lists the distinct (base Var, spanned S dims in the
    base's memory order) the kernel reads, `operand` maps each input atom to ("array", i),
    ("literal", Literal) or ("iota", S dim, dtype), and `collapsed` groups the non-unit S dims,
    in iteration order, into loop dims (adjacent dims every array spans alike, in the same
    memory order, alike reduced or kept).

    `order`: the S dims from the outermost loop to the innermost (default: S's own order);
    the group's full-shape outputs are written in that order. `layouts`: {Var: its dims from
    the slowest-varying in memory to the fastest} for materialized inputs not stored in
    row-major order (a product computed transposed, `cpu._layouts`)."""
    S = group.shape
    red = group.reduction
    red_axes = set(red.params["axes"]) if red is not None else set()
    order = tuple(range(len(S))) if order is None else tuple(order)
    layouts = layouts or {}

    def memory(v):
        return layouts.get(v, range(len(v.aval.shape)))

    loop_dims = [d for d in order if S[d] != 1]
    arrays: list = []
    operand: dict = {}
    for atom, src in group.inputs.items():
        if isinstance(src, Virtual) and type(src.src) is Literal:
            operand[atom] = ("literal", src.src)
            continue
        if isinstance(src, Virtual) and src.src is None:
            operand[atom] = ("iota", src.iota_dim, src.aval.dtype)
            continue
        if isinstance(src, Virtual):
            base = src.src
            spans = tuple(src.dims[k] for k in memory(base) if src.dims[k] is not None and
                          base.aval.shape[k] != 1 and S[src.dims[k]] != 1)
        else:
            base, spans = atom, tuple(d for d in memory(atom) if S[d] != 1)
        key = (base, spans)
        if key not in arrays:
            arrays.append(key)
        operand[atom] = ("array", arrays.index(key))
    iota_dims = {o[1] for o in operand.values() if o[0] == "iota"}

    def mergeable(a, b):
        if (a in red_axes) != (b in red_axes) or a in iota_dims or b in iota_dims:
            return False
        for _, spans in arrays:
            if (a in spans) != (b in spans):
                return False
            if a in spans and spans.index(b) != spans.index(a) + 1:
                return False
        return True

    collapsed: list[list[int]] = []
    for d in loop_dims:
        if collapsed and mergeable(collapsed[-1][-1], d):
            collapsed[-1].append(d)
        else:
            collapsed.append([d])
    return arrays, operand, collapsed, red_axes


def flat_offset(cdims) -> str:
    """The row-major offset expression over loop indices i<c> with sizes n<c>."""
    expr = None
    for c in cdims:
        expr = f"i{c}" if expr is None else f"({expr} * n{c} + i{c})"
    return expr or "0"


def _index(cdims) -> str:
    """flat_offset as an index Numba reads without its negative-index wraparound: a signed
    index computed from several loop indices gets a run-time `if i < 0: i += n` per access,
    which keeps LLVM from vectorizing the loop (a broadcast copy ran 7x slower). The offsets
    are never negative."""
    return f"np.uint64({flat_offset(cdims)})"


def emit_eqns(group: FusedGroup, ctx: ScalarCtx, expr_of, names: dict) -> list[str]:
    """The group's equations as scalar statements, one each, for every code generator: `v<n> =`
    the rule's expression cast to the result dtype, or for several results (a rule returning a
    tuple, as threefry2x32's) `v<n>_0, v<n>_1 = ...`. Records each result's name in `names`."""
    body = []
    for n, eqn in enumerate(group.eqns):
        rule = registry.elementwise_lowerings[eqn.primitive]
        ctx.in_dtypes = [v.aval.dtype for v in eqn.invars]
        ctx.out_dtype = eqn.outvars[0].aval.dtype
        expr = rule(ctx, *map(expr_of, eqn.invars), **eqn.params)
        if len(eqn.outvars) == 1:
            body.append(f"v{n} = {_np_name(ctx.out_dtype)}({expr})")
            names[eqn.outvars[0]] = f"v{n}"
        else:
            results = [f"v{n}_{i}" for i in range(len(eqn.outvars))]
            body.append(f"{', '.join(results)} = {expr}")
            names.update(zip(eqn.outvars, results))
    return body


def generate(group: FusedGroup, in_place=None, order=None, layouts=None,
             threads=None, parts=False) -> KernelPlan:
    """`in_place`: {output Var: input Var} for outputs to be written into the buffer of an
    input the group reads directly (of the group's shape and the output's dtype, laid out in
    the iteration order), at the element just read. The kernel stores through that input's
    own argument, not a second one: LLVM vectorizes a loop only when it can prove its stores
    do not overlap its loads, and two arguments sharing memory fail its run-time check (the
    scalar loop is some 4x slower). `order`, `layouts`: see `collapse`; every array is passed
    flat in its own memory order. `threads`: whether the outermost kept loop is a `prange`
    (None: from PARALLEL_MIN elements); each thread then writes its own outputs, and every
    reduced value is still summed by one thread in loop order, so the bits do not change.
    `parts`: the kernel runs the outermost loop over [p0, p1) only (its first two arguments),
    so that threads can each run a part (cpu.py); raises NotImplementedError where the
    outermost loop is reduced or the reduction's result needs initializing first."""
    S = group.shape
    red = group.reduction
    arrays, operand, collapsed, red_axes = collapse(group, order, layouts)
    k = len(collapsed)
    sizes = [int(np.prod([S[d] for d in c], dtype=np.int64)) for c in collapsed]
    cdim_of = {d: i for i, c in enumerate(collapsed) for d in c}
    reduced = [collapsed[i][0] in red_axes for i in range(k)]
    kept_dims = [d for c in collapsed for d in c if d not in red_axes]
    if red is not None and kept_dims != sorted(kept_dims):
        # the reduction's result is written in iteration order: it would come out permuted
        raise NotImplementedError("a reduction whose kept dims are iterated out of order")

    offset = _index
    ctx = ScalarCtx()
    loads: list[list[str]] = [[] for _ in range(k + 1)]
    names: dict = {}
    for j, (base, spans) in enumerate(arrays):
        cdims = list(dict.fromkeys(cdim_of[d] for d in spans))     # memory order, merged once
        level = (max(cdims) + 1) if cdims else 0
        loads[level].append(f"x{j} = a{j}[{offset(cdims)}]")
    for atom, op in operand.items():
        if op[0] == "array":
            names[atom] = f"x{op[1]}"
        elif op[0] == "literal":
            names[atom] = literal(op[1].val, atom.aval.dtype)
        else:
            _, d, dt = op
            names[atom] = f"{_np_name(dt)}(i{cdim_of[d]})" if d in cdim_of else literal(0, dt)

    def expr_of(atom):
        if type(atom) is Literal:
            return literal(atom.val, atom.aval.dtype)
        return names[atom]

    body = emit_eqns(group, ctx, expr_of, names)
    loop_dims = tuple(d for c in collapsed for d in c)
    written = {v: arrays.index((w, loop_dims)) for v, w in (in_place or {}).items()}
    outputs = [o for o in group.outputs
               if (red is None or o is not red.outvars[0]) and o not in written]
    for v, j in written.items():
        body.append(f"a{j}[{offset(range(k))}] = {names[v]}")
    for j, v in enumerate(outputs):
        body.append(f"o{j}[{offset(range(k))}] = {names[v]}")

    needs_init = False
    suffix = k
    init = combine = None
    if red is not None:
        dt = red.outvars[0].aval.dtype
        init, combine = monoid(registry.kernel_lowerings[red.primitive][1], dt, ieee=True)
        if "fmaximum" in combine or "fminimum" in combine:
            ctx.imports.add("from corejax.compiler.kernel_lib import fmaximum, fminimum")
        while suffix > 0 and reduced[suffix - 1]:
            suffix -= 1
        kept = [c for c in range(k) if not reduced[c]]
        needs_init = suffix == k or any(reduced[:suffix])
        val = expr_of(red.invars[0])
        if suffix == k:
            target = f"r0[{offset(kept)}]"
            body.append(f"{target} = {combine.format(a=target, b=val)}")
        else:
            body.append(f"acc = {combine.format(a='acc', b=val)}")

    big = int(np.prod(sizes, dtype=np.int64)) >= PARALLEL_MIN if threads is None else threads
    parallel = big and k > 0 and not reduced[0] and not parts
    if parts and (k == 0 or reduced[0] or needs_init):
        raise NotImplementedError("no outer loop that parts of the kernel can share")

    def level(c, ind):
        out = [ind + line for line in loads[c]]
        if c == k:
            return out + [ind + line for line in body]
        if red is not None and c == suffix:
            out.append(f"{ind}acc = {init}")
        loop = "prange" if (c == 0 and parallel) else "range"
        bounds = "p0, p1" if (c == 0 and parts) else f"n{c}"
        out.append(f"{ind}for i{c} in {loop}({bounds}):")
        out += level(c + 1, ind + "    ")
        if red is not None and c == suffix:
            target = f"r0[{offset(kept)}]"
            value = combine.format(a=target, b="acc") if needs_init else "acc"
            out.append(f"{ind}{target} = {value}")
        return out

    args = ["p0", "p1"] * parts + [f"n{c}" for c in range(k)] + \
        [f"a{j}" for j in range(len(arrays))] + \
        [f"o{j}" for j in range(len(outputs))] + (["r0"] if red is not None else [])
    lines = level(0, "    ")
    if needs_init:
        lines = ["    for q in range(r0.size):", f"        r0[q] = {init}"] + lines
    flags = [f"parallel={parallel}", 'error_model="numpy"', "nogil=True", "cache=True"]
    if red is not None and red.outvars[0].aval.dtype.kind == "f":
        flags.append("fastmath={'reassoc'}")
    header = ["import math", "import numpy as np", "from numba import njit, prange",
              *sorted(ctx.imports), "", "", f"@njit({', '.join(flags)})",
              f"def kernel({', '.join(args)}):"]
    source = "\n".join(header + lines) + "\n"
    return KernelPlan(source, sizes, [b for b, _ in arrays], outputs,
                      red.outvars[0] if red is not None else None, needs_init, written)
