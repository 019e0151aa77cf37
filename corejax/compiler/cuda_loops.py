"""Small loops on CUDA compiled whole: a while / scan (fori lowers to either) whose values are
small becomes ONE kernel launch of one thread block that runs every iteration on the device,
instead of a host loop launching the body's kernels and reading the predicate back. A small
cond likewise becomes one launch that picks its branch on the device (no read-back).

A small loop on a GPU is bound by launches and read-backs, not arithmetic (a few microseconds
each, per step and per iteration); one block of REDUCE_BLOCK threads holding the whole loop
pays one launch. Bigger loops keep the host-driven form (compiler/cuda.py), whose kernels use
the whole grid.

The cond / body Jaxprs go through the usual passes and fusion; every step becomes code of the
loop kernel, each followed by `cuda.syncthreads()`:
- fused groups call their generated kernels (cuda_codegen's source, compiled as device
  functions): their grid-stride loops and per-block reductions run on the one block, so they
  compute exactly what their own launches compute;
- reshape / squeeze are aliases; broadcast_in_dim, transpose, slice, rev, pad, concatenate
  are gathers through index maps computed at build time by the primitives' own impls applied
  to `arange`; dynamic_slice / dynamic_update_slice add a clamped run-time offset to such a
  map; iota and layout ops of literals are constants;
- dot_general: one thread per output element, at most DOT_MAX_MACS multiply-adds;
- gather, scatter / scatter-add, sort, cumsum, argmax / argmin: the CUDA backend's own
  kernels (compiler/cuda_kernels.py), whose grid-stride and block-per-lane loops run on the
  one block as device functions;
- nested cond / while / scan are emitted inline (every thread reads the same predicate or
  branch index after a barrier, so all of them take the same path through the barriers).
Anything else (scatter-mul/min/max, host callbacks, convolutions, windows, ...) raises
`Unsupported`, and the caller keeps the host-driven loop.

Intermediate values live in one scratch buffer per dtype (views sliced in the kernel: a
kernel's parameter space holds a few dozen arrays), constants (index maps, the bodies'
consts, literals) in one buffer per dtype uploaded once. The carries are the kernel's output
buffers; each iteration copies the body's results over them.
"""
from __future__ import annotations

import threading

import numpy as np

from corejax.core import ShapedArray
from corejax.compiler import cuda_codegen, cuda_kernels as K
from corejax.compiler.loop_lowerings import LayoutLowerings
from corejax.compiler.loops import JaxprEmitter, Unsupported, check_dtype

__all__ = ["CudaLoop", "Unsupported", "compile_loop", "LOOP_MAX_SIZE", "DOT_MAX_MACS", "stats"]

# Any value of the loop (per iteration) with more elements than this keeps the host-driven
# loop: one block would be too narrow for it.
LOOP_MAX_SIZE = 1 << 15
DOT_MAX_MACS = 1 << 18
# Kernel parameters are limited (4 KiB, about 56 bytes per array argument).
MAX_ARGS = 60

stats = {"compiled": 0, "unsupported": 0}


def _size(shape) -> int:
    return int(np.prod(shape, dtype=np.int64))


def _check(aval):
    check_dtype(aval)
    if _size(aval.shape) > LOOP_MAX_SIZE:
        raise Unsupported(f"a value of {_size(aval.shape)} elements (more than {LOOP_MAX_SIZE})")


class _Module:
    """The kernel being generated: device functions, scratch and constant layout, lines."""

    def __init__(self):
        self.defs: list = []
        self.fn_names: dict = {}          # device function source -> name
        self.scratch: dict = {}           # dtype name -> elements
        self.consts: dict = {}            # dtype name -> list of flat host arrays
        self.const_sizes: dict = {}
        self.views: list = []
        self._n = 0

    def fresh(self, prefix: str) -> str:
        self._n += 1
        return f"{prefix}_{self._n}"

    def alloc(self, aval, check: bool = True) -> str:
        if check:
            _check(aval)
        dt = np.dtype(aval.dtype).name
        n = _size(aval.shape)
        off = self.scratch.get(dt, 0)
        self.scratch[dt] = off + max(n, 1)
        name = self.fresh("b")
        self.views.append(f"{name} = s_{dt}[{off}:{off + n}]")
        return name

    def const(self, value, dtype) -> str:
        dt = np.dtype(dtype).name
        flat = np.ascontiguousarray(np.asarray(value, dtype)).reshape(-1)
        off = self.const_sizes.get(dt, 0)
        self.consts.setdefault(dt, []).append(flat)
        self.const_sizes[dt] = off + max(flat.size, 1)
        if flat.size == 0:
            self.consts[dt].append(np.zeros(1, dt))
        name = self.fresh("c")
        self.views.append(f"{name} = c_{dt}[{off}:{off + flat.size}]")
        return name

    def index_map(self, idx) -> str:
        return self.const(idx, np.int64)

    def device_fn(self, source: str) -> str:
        name = self.fn_names.get(source)
        if name is None:
            name = self.fn_names[source] = self.fresh("k")
            self.defs.append(source.replace("def kernel(", f"def {name}(", 1) +
                             f"{name} = cuda.jit(device=True)({name})\n")
        return name


def _clamp(name, value, hi, ind) -> list:
    """`name` = int(value) clamped into [0, hi] (conditional expressions: numba.cuda's
    builtin min / max reject mixed integer types)."""
    return [f"{ind}{name} = int({value})", f"{ind}{name} = {name} if {name} > 0 else 0",
            f"{ind}{name} = {name} if {name} < {hi} else {hi}"]


def _sync(ind) -> str:
    return f"{ind}cuda.syncthreads()"


def _np(dt) -> str:
    return K.np_name(np.dtype(dt))


class _Emitter(LayoutLowerings, JaxprEmitter):
    """JaxprEmitter and the layout lowerings, with a grid-stride loop over the block's threads
    for each step and a barrier after it."""

    check = staticmethod(_check)
    in_place = frozenset()           # every update writes a copy

    def __init__(self, module: _Module):
        self.m = module

    def each(self, n, ind):
        return [f"{ind}for t in range(cuda.grid(1), {n}, cuda.gridsize(1)):"], "t"

    def barrier(self, ind) -> list:
        return [_sync(ind)]

    def copy(self, dst, src, n, ind) -> list:
        return self._loop(n, lambda t: [f"{dst}[{t}] = {src}[{t}]"], ind) if n else []

    def clamp(self, name, value, hi, ind) -> list:
        return _clamp(name, value, hi, ind)

    generate = staticmethod(cuda_codegen.generate)

    def group_call(self, plan, outs, env, ind) -> list:
        args = [str(s) for s in plan.sizes] + [self.buffer(v, env) for v in plan.arrays] + \
            outs + [str(e) for e in plan.extra]
        return [f"{ind}{self.m.device_fn(plan.source)}({', '.join(args)})", _sync(ind)]

    # --- data steps (layout ones: LayoutLowerings) --------------------------------------------

    def lower_copy(self, eqn, env, lines, ind):
        env[eqn.outvars[0]] = self.buffer(eqn.invars[0], env)

    def lower_dot_general(self, eqn, env, lines, ind):
        lhs, rhs = eqn.invars
        out = eqn.outvars[0]
        dt = np.dtype(out.aval.dtype)
        if dt.kind == "b" or np.dtype(lhs.aval.dtype).kind == "b":
            raise Unsupported("a boolean dot_general")
        (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
        ls, rs = lhs.aval.shape, rhs.aval.shape
        lf = [d for d in range(len(ls)) if d not in lc and d not in lb]
        rf = [d for d in range(len(rs)) if d not in rc and d not in rb]
        B, M = _size([ls[d] for d in lb]), _size([ls[d] for d in lf])
        N, Kd = _size([rs[d] for d in rf]), _size([ls[d] for d in lc])
        if B * M * N * Kd > DOT_MAX_MACS:
            raise Unsupported(f"a dot_general of {B * M * N * Kd} multiply-adds")

        def reader(x, perm, inner_index):
            buf = self.buffer(x, env)
            idx = np.transpose(np.arange(_size(x.aval.shape)).reshape(x.aval.shape),
                               perm).reshape(-1)
            if np.array_equal(idx, np.arange(idx.size)):
                return f"{buf}[{inner_index}]"
            return f"{buf}[{self.m.const(idx, np.int64)}[{inner_index}]]"

        a = reader(lhs, list(lb) + lf + list(lc), f"(b * {M} + i) * {Kd} + p")
        c = reader(rhs, list(rb) + list(rc) + rf, f"(b * {Kd} + p) * {N} + j")
        T = _np(dt)
        o, acc = self.m.alloc(out.aval), self.m.fresh("acc")    # (one name per dtype)
        lines += self._loop(B * M * N, lambda t: [
            f"b = {t} // {M * N}", f"r = {t} - b * {M * N}", f"i = r // {N}",
            f"j = r - i * {N}", f"{acc} = {T}(0)", f"for p in range({Kd}):",
            f"    {acc} += {T}({a}) * {T}({c})", f"{o}[{t}] = {acc}"], ind) + [_sync(ind)]
        env[out] = o

    # --- steps with hand-written kernels: their grid-stride sources as device functions -------

    def _axis(self, eqn, src, axis, env, lines, ind):
        x, out = eqn.invars[0], eqn.outvars[0]
        shape = x.aval.shape
        n, inner = shape[axis], _size(shape[axis + 1:])
        o = self.m.alloc(out.aval)
        fn = self.m.device_fn(src)
        lines += [f"{ind}{fn}({self.buffer(x, env)}, {o}, {_size(shape[:axis]) * inner}, {n}, "
                  f"{inner})", _sync(ind)]
        env[out] = o

    def lower_cumsum(self, eqn, env, lines, ind):
        src = K.cumsum_source(eqn.outvars[0].aval.dtype, eqn.params["reverse"])
        self._axis(eqn, src, eqn.params["axis"], env, lines, ind)

    def lower_argmax(self, eqn, env, lines, ind, kind="argmax"):
        src = K.argreduce_source(kind, eqn.invars[0].aval.dtype, eqn.outvars[0].aval.dtype)
        self._axis(eqn, src, eqn.params["axes"][0], env, lines, ind)

    def lower_argmin(self, eqn, env, lines, ind):
        self.lower_argmax(eqn, env, lines, ind, "argmin")

    def lower_gather(self, eqn, env, lines, ind):
        op, idx = eqn.invars
        out = eqn.outvars[0]
        if not op.aval.shape:
            raise Unsupported("a gather from a rank-0 operand")
        src, fill = K.gather_plan(eqn)
        fn, o = self.m.device_fn(src), self.m.alloc(out.aval)
        lines += [f"{ind}{fn}({self.buffer(op, env)}, {self.buffer(idx, env)}, {o}, "
                  f"{self.m.const(fill, fill.dtype)})", _sync(ind)]
        env[out] = o

    def lower_scatter(self, eqn, env, lines, ind):
        operand, indices, updates = eqn.invars
        out = eqn.outvars[0]
        plan = K.scatter_plan(eqn)
        if plan is None or plan.view:      # (mul/min/max need an integer view of the output)
            raise Unsupported(f"the primitive {eqn.primitive.name} on {out.aval.str_short()}")
        o = self.m.alloc(out.aval)
        lines += self.copy(o, self.buffer(operand, env), _size(out.aval.shape), ind)
        lines.append(_sync(ind))
        if plan.total:
            args = [o, self.buffer(indices, env), self.buffer(updates, env)] + \
                [self.m.const(m, np.int64) for m in plan.maps] + [str(plan.total),
                                                                   str(plan.window)]
            lines += [f"{ind}{self.m.device_fn(plan.source)}({', '.join(args)})", _sync(ind)]
        env[out] = o

    lower_scatter_add = lower_scatter

    def lower_sort(self, eqn, env, lines, ind):
        src, lanes, n, post, P = K.sort_plan(eqn, self.m.fresh("less"))
        outs = [self.m.alloc(v.aval) for v in eqn.outvars]
        if lanes and n:
            perm = self.m.alloc(ShapedArray((lanes * P,), np.int64), check=False)
            args = [self.buffer(v, env) for v in eqn.invars] + outs + \
                [perm, str(lanes), str(n), str(post), str(P)]
            lines += [f"{ind}{self.m.device_fn(src)}({', '.join(args)})", _sync(ind)]
        env.update(zip(eqn.outvars, outs))

    # --- control flow --------------------------------------------------------------------------

    def carry_update(self, carry, outs, avals, ind) -> list:
        """The body's results copied over the carries (through temporaries where a result is
        another carry's old buffer), then a barrier."""
        lines, outs = [], list(outs)
        for k, o in enumerate(outs):
            if o in carry and o != carry[k]:
                t = self.m.alloc(avals[k])
                lines += self.copy(t, o, _size(avals[k].shape), ind)
                outs[k] = t
        if lines:
            lines.append(_sync(ind))
        for k, o in enumerate(outs):
            if o != carry[k]:
                lines += self.copy(carry[k], o, _size(avals[k].shape), ind)
        return lines + [_sync(ind)]

    def init_carry(self, carry, ins, avals, ind) -> list:
        lines = []
        for c, x, a in zip(carry, ins, avals):
            lines += self.copy(c, x, _size(a.shape), ind)
        return lines + [_sync(ind)]

    def while_loop(self, params, ins, carry, ind) -> list:
        nc, nb = params["cond_nconsts"], params["body_nconsts"]
        body = params["body_jaxpr"]
        avals = body.in_avals[nb:]
        for a in avals:
            _check(a)
        lines = self.init_carry(carry, ins[nc + nb:], avals, ind)
        cond_lines, (pred,) = self.closed(params["cond_jaxpr"], ins[:nc] + carry, ind + "    ")
        body_lines, outs = self.closed(body, ins[nc:nc + nb] + carry, ind + "    ")
        return lines + [f"{ind}while True:", *cond_lines, f"{ind}    if not {pred}[0]:",
                        f"{ind}        break", *body_lines,
                        *self.carry_update(carry, outs, avals, ind + "    ")]

    def scan(self, params, ins, carry, ys, ind) -> list:
        closed, length = params["jaxpr"], params["length"]
        nc, nk = params["num_consts"], params["num_carry"]
        avals = closed.in_avals[nc:nc + nk]
        x_avals, y_avals = closed.in_avals[nc + nk:], closed.out_avals[nk:]
        for a in list(avals) + list(x_avals) + list(y_avals):
            _check(a)
        lines = self.init_carry(carry, ins[nc:nc + nk], avals, ind)
        it = self.m.fresh("it")
        order = f"range({length - 1}, -1, -1)" if params["reverse"] else f"range({length})"
        lines.append(f"{ind}for {it} in {order}:")
        inner = ind + "    "
        xs = []
        for x, a in zip(ins[nc + nk:], x_avals):
            n = _size(a.shape)
            name = self.m.fresh("x")
            lines.append(f"{inner}{name} = {x}[{it} * {n}:({it} + 1) * {n}]")
            xs.append(name)
        body_lines, outs = self.closed(closed, ins[:nc] + carry + xs, inner)
        lines += body_lines
        for y, o, a in zip(ys, outs[nk:], y_avals):
            n = _size(a.shape)
            if n:
                lines += self._loop(n, lambda t: [f"{y}[{it} * {n} + {t}] = {o}[{t}]"], inner)
        if ys:
            lines.append(_sync(inner))
        return lines + self.carry_update(carry, outs[:nk], avals, inner)

    def lower_while(self, eqn, env, lines, ind):
        carry = [self.m.alloc(v.aval) for v in eqn.outvars]
        lines += self.while_loop(eqn.params, [self.buffer(v, env) for v in eqn.invars], carry,
                                 ind)
        env.update(zip(eqn.outvars, carry))

    def lower_scan(self, eqn, env, lines, ind):
        nk = eqn.params["num_carry"]
        outs = [self.m.alloc(v.aval) for v in eqn.outvars]
        lines += self.scan(eqn.params, [self.buffer(v, env) for v in eqn.invars], outs[:nk],
                           outs[nk:], ind)
        env.update(zip(eqn.outvars, outs))

    def cond(self, params, ins, outs, ind) -> list:
        """The branch `ins[0]` selects (clamped into range), computing into `outs`: every
        thread reads the same index after a barrier, so all take the same branch."""
        branches = params["branches"]
        br = self.m.fresh("br")
        lines = _clamp(br, f"{ins[0]}[0]", len(branches) - 1, ind)
        for k, closed in enumerate(branches):
            head = "if" if k == 0 else "elif" if k + 1 < len(branches) else "else"
            lines.append(f"{ind}{head}{'' if head == 'else' else f' {br} == {k}'}:")
            body, res = self.closed(closed, ins[1:], ind + "    ")
            for o, r, a in zip(outs, res, closed.out_avals):
                body += self.copy(o, r, _size(a.shape), ind + "    ")
            lines += body or [f"{ind}    pass"]
        return lines + [_sync(ind)]

    def lower_cond(self, eqn, env, lines, ind):
        outs = [self.m.alloc(v.aval) for v in eqn.outvars]
        lines += self.cond(eqn.params, [self.buffer(v, env) for v in eqn.invars], outs, ind)
        env.update(zip(eqn.outvars, outs))


_compiled: dict = {}
_lock = threading.Lock()


class CudaLoop:
    """A while / scan / cond equation as one single-block kernel: `run(operands) -> results` on
    flat device buffers (no synchronization)."""

    def __init__(self, eqn):
        name = eqn.primitive.name
        for v in list(eqn.invars) + list(eqn.outvars):
            if np.dtype(v.aval.dtype).kind not in "biuf":
                raise Unsupported(f"a {v.aval.dtype} operand")
        m = _Module()
        em = _Emitter(m)
        ins = [f"in{k}" for k in range(len(eqn.invars))]
        outs = [f"out{k}" for k in range(len(eqn.outvars))]
        if name == "while":
            body = em.while_loop(eqn.params, ins, outs, "    ")
        elif name == "scan":
            nk = eqn.params["num_carry"]
            body = em.scan(eqn.params, ins, outs[:nk], outs[nk:], "    ")
        elif name == "cond":
            for a in eqn.params["branches"][0].out_avals:
                _check(a)
            body = em.cond(eqn.params, ins, outs, "    ")
        else:
            raise Unsupported(f"the primitive {name}")
        self.scratch = sorted(m.scratch.items())
        self.consts = sorted((dt, np.concatenate(parts)) for dt, parts in m.consts.items())
        params = ins + outs + [f"s_{dt}" for dt, _ in self.scratch] + \
            [f"c_{dt}" for dt, _ in self.consts]
        if len(params) > MAX_ARGS:
            raise Unsupported(f"{len(params)} kernel arguments (more than {MAX_ARGS})")
        self.in_dtypes = [np.dtype(v.aval.dtype) for v in eqn.invars]
        self.out_avals = [v.aval for v in eqn.outvars]
        self.source = "".join(m.defs) + f"def kernel({', '.join(params)}):\n" + \
            "".join(f"    {line}\n" for line in m.views) + "".join(f"{line}\n" for line in body)
        self._device_consts = None

    def argtypes(self):
        from numba import types, from_dtype
        arr = lambda dt: types.Array(from_dtype(np.dtype(dt)), 1, "C")
        return tuple([arr(d) for d in self.in_dtypes] + [arr(a.dtype) for a in self.out_avals] +
                     [arr(dt) for dt, _ in self.scratch] + [arr(dt) for dt, _ in self.consts])

    def kernel(self):
        k = _compiled.get(self.source)
        if k is None:
            from numba import cuda
            with _lock:
                k = _compiled.get(self.source)
                if k is None:
                    k = _compiled[self.source] = cuda.jit(K.pyfunc(self.source))
        return k

    def run(self, operands) -> list:
        from numba import cuda
        if self._device_consts is None:
            self._device_consts = [cuda.to_device(c) for _, c in self.consts]
        outs = [cuda.device_array(max(0, _size(a.shape)), np.dtype(a.dtype))
                for a in self.out_avals]
        scratch = [cuda.device_array(n, np.dtype(dt)) for dt, n in self.scratch]
        self.kernel()[1, K.REDUCE_BLOCK](*operands, *outs, *scratch, *self._device_consts)
        return outs


def compile_loop(eqn):
    """The loop as a CudaLoop, or (None, reason) when it keeps the host-driven form."""
    try:
        loop = CudaLoop(eqn)
    except Unsupported as e:
        stats["unsupported"] += 1
        return None, str(e)
    stats["compiled"] += 1
    return loop, None
