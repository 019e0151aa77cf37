"""The CUDA backend: the CPU pipeline's passes and fusion, then numba.cuda kernels.

Every value of a program lives in a flat (1-D, C-contiguous) numba device array; shapes are
static, so reshapes and squeezes are aliases and every kernel indexes flat buffers. Steps:
- fused groups: one generated kernel each (compiler/cuda_codegen.py), threefry2x32 included;
- dot_general and conv_general_dilated: one tiled GEMM kernel (compiler/cuda_gemm.py);
- layout ops, gather, scatters, sort, argmax/argmin, cumsum and windowed reductions:
  hand-written kernels (compiler/cuda_kernels.py);
- cond / while / scan with small values: the whole loop (or the branch choice) as one
  single-block kernel launch (compiler/cuda_loops.py);
- bigger cond / while / scan: driven from the host (the predicate / branch index is read
  back, the sub-programs run as CUDA executables of their own; scan slices xs as device views
  and writes ys with the copy kernel);
- anything else: a *host fallback* (operands copied to the host, the NumPy impl, results
  copied back), listed in `as_text()` with its reason.
Kernels go on the default stream and nothing synchronizes except reading a predicate/index, a
host fallback, or a transfer to the host.
"""
from __future__ import annotations

import threading

import numpy as np

from corejax import _cuda_driver, _cuda_memory, core
from corejax.core import Literal, Var
from corejax.compiler import cuda_codegen, cuda_gemm as G, cuda_kernels as K, cuda_loops, registry
from corejax.compiler.cuda_layout import LayoutSteps, _cstrides, _cuda, _size
from corejax.compiler.fusion import FusedGroup, HostStep, Virtual, partition
from corejax.compiler.passes import PASSES, run_passes

__all__ = ["CudaExecutable", "CudaLoweringError"]


class CudaLoweringError(NotImplementedError):
    """A primitive that has neither a CUDA kernel nor a host fallback."""


def _flat_host(x, dtype) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(x, dtype=dtype)).reshape(-1)


class CudaExecutable(LayoutSteps):
    """`__call__(*args) -> list[Array]` on `device`; `run_device(*flat device buffers)` for
    sub-programs. With device=None only the plan is built (kernel sources, fallbacks):
    tests/test_ptx.py compiles those sources without a GPU."""

    consumes_donations = False      # the caller deletes donated Arrays after the call

    def __init__(self, closed: core.ClosedJaxpr, device=None):
        self.closed = closed
        self.device = device
        self.out_avals = list(closed.out_avals)
        self.out_weak = [a.weak_type for a in closed.out_avals]
        self.optimized = run_passes(closed)
        self.steps = partition(self.optimized.jaxpr)
        self.kernels: list = []       # (label, source, argtypes) of every launch
        self.plan: list = []          # one line per step for as_text
        self.fallbacks: list = []     # (primitive name, reason)
        self._slots: dict = {}
        jaxpr = self.optimized.jaxpr
        self._host_template: list = []
        for v, c in zip(jaxpr.constvars, self.optimized.consts):
            self._slot(v, _flat_host(np.asarray(c._value if hasattr(c, "_value") else c),
                                     v.aval.dtype))
        self._in = [(self._slot(v), v.aval) for v in jaxpr.invars]
        self._program = []
        for i, step in enumerate(self.steps):
            self._program.append(self._build(i, step))
        self._outs = [self._atom(v) for v in jaxpr.outvars]
        self._template = None
        self._fresh = set(self._outs)   # slots allocated anew at every call (see _alloc)
        self._arena: dict = {}          # slot -> the buffer it reuses from call to call
        self._factories: dict = {}      # fresh slot -> its ArrayFactory
        self._arena_ids: set = set()    # ids of those buffers and of the input staging ones
        self._lock = threading.RLock()

    # --- slots ---------------------------------------------------------------------------

    def _slot(self, v, host_value=None):
        s = self._slots.get(v)
        if s is None:
            s = self._slots[v] = len(self._host_template)
            self._host_template.append(host_value)
        return s

    def _atom(self, v) -> int:
        """The slot of a Var, or of a Literal's constant buffer."""
        if type(v) is Literal:
            s = len(self._host_template)
            self._host_template.append(_flat_host(v.val, v.aval.dtype))
            return s
        return self._slot(v)

    def _env(self):
        if self._template is None:
            cuda = _cuda()
            self._template = [None if h is None else cuda.to_device(h)
                              for h in self._host_template]
        return list(self._template)

    # --- kernels ---------------------------------------------------------------------------

    def _kernel(self, label, source, argtypes) -> K.LaunchSite:
        """Records a kernel of the program (for as_text and test_ptx) and returns its launch
        site: `site(grid, block, *args)`."""
        self.kernels.append((label, source, tuple(argtypes)))
        return K.LaunchSite(source, argtypes)

    def _alloc(self, aval, slot=None):
        """A device buffer for a value of `aval`. The value of `slot`, unless it is an output
        of the program, gets the same buffer at every call: kernels run in order on one
        stream, so a call's writes into it wait for the previous call's reads, and calls run
        one at a time (run_device's lock)."""
        if slot is None:
            return _new_buffer(aval)
        if slot in self._fresh:
            make = self._factories.get(slot)
            if make is None:
                make = self._factories[slot] = _cuda_memory.ArrayFactory(
                    max(0, _size(aval.shape)), aval.dtype)
            return make()
        b = self._arena.get(slot)
        if b is None:
            b = self._arena[slot] = _new_buffer(aval)
            self._arena_ids.add(id(b))
        return b

    # --- building steps ------------------------------------------------------------------

    def _build(self, i, step):
        if isinstance(step, FusedGroup):
            return self._group(i, step)
        eqn = step.eqn
        name = eqn.primitive.name
        builder = getattr(self, "_k_" + name.replace("-", "_"), None)
        outs = " ".join(v.aval.str_short() for v in eqn.outvars)
        if builder is not None and eqn.primitive not in registry.effectful:
            run = builder(eqn)
            if run is not None:
                note = getattr(run, "note", None)         # (control flow: compiled or not)
                note = f" ({note})" if note else ""
                self.plan.append(f"step {i}: device kernel {name}{note} -> {outs}")
                return run
        reason = _FALLBACK_REASONS.get(name, "no CUDA kernel for this primitive")
        if eqn.primitive in registry.effectful:
            reason = "side effect (host callback)"
        self.fallbacks.append((name, reason))
        self.plan.append(f"step {i}: HOST FALLBACK {name} ({reason}) -> {outs}")
        return self._host(eqn)

    def _group(self, i, group):
        try:
            plan = cuda_codegen.generate(group, columns=True)
        except NotImplementedError as e:
            self.fallbacks.append((repr(group), f"no CUDA scalar lowering: {e}"))
            self.plan.append(f"step {i}: HOST FALLBACK group {group!r} ({e})")
            return self._group_on_host(group)
        launch = self._kernel(f"fused {group!r}", plan.source, plan.argtypes())
        self.plan.append(f"step {i}: device kernel (fused, {plan.mode}) over {group.shape} "
                         f"(loop sizes {plan.sizes}): {group!r}")
        in_slots = [self._slot(v) for v in plan.arrays]
        out_vars = plan.outputs + ([plan.reduction_out] if plan.reduction_out is not None else [])
        outs = [(self._slot(v), v.aval) for v in out_vars]
        grid, block = plan.launch_config()
        head, tail = list(plan.sizes), list(plan.extra)
        alloc = self._alloc
        # "cols" mode takes a buffer of partials after the outputs: its scratch where the
        # reduction is split (then combined by a second kernel), else the reduction's own
        # output, which the kernel writes directly
        cols, finish = plan.mode == "cols", None
        if cols and plan.chunks > 1:
            nk = plan.extra[0]
            finish = self._kernel(f"fused {group!r} (chunks combined)", plan.finish_source,
                                  plan.finish_argtypes())
            p_slot = len(self._host_template)
            self._host_template.append(None)
            p_aval = core.ShapedArray((plan.chunks * nk,), plan.reduction_out.aval.dtype)
            fgrid, fin = K.grid_for(nk), [nk, nk, plan.chunks]

        def run(env):
            args = head + [env[s] for s in in_slots]
            for s, aval in outs:
                env[s] = alloc(aval, s)
                args.append(env[s])
            if not cols:
                launch(grid, block, *args, *tail)
                return
            part = args[-1] if finish is None else alloc(p_aval, p_slot)
            launch(grid, block, *args, part, *tail)
            if finish is not None:
                finish(fgrid, K.BLOCK, part, args[-1], *fin)
        return run

    def _group_on_host(self, group):
        from corejax.compiler.cpu import _materialize_virtual
        virt = [(self._slot(a), vv, self._slot(vv.src) if type(vv.src) is Var else None)
                for a, vv in group.inputs.items() if isinstance(vv, Virtual)]
        eqns = list(group.eqns) + ([group.reduction] if group.reduction is not None else [])
        runs = [self._host(e) for e in eqns]
        cuda = _cuda()

        def run(env):
            for s, vv, base in virt:
                b = None
                if base is not None:
                    b = env[base].copy_to_host().reshape(vv.src.aval.shape)
                env[s] = cuda.to_device(_flat_host(_materialize_virtual(vv, b), vv.aval.dtype))
            for r in runs:
                r(env)
        return run

    def _host(self, eqn):
        """Host fallback: operands to the host, the NumPy impl, results back."""
        prim, params = eqn.primitive, eqn.params
        ins = [(self._atom(v), v.aval) for v in eqn.invars]
        outs = [(self._slot(v), v.aval) for v in eqn.outvars]
        cuda = _cuda()

        def run(env):
            args = [env[s].copy_to_host().reshape(a.shape) for s, a in ins]
            try:
                res = prim.impl(*args, **params)
            except NotImplementedError as e:
                raise CudaLoweringError(
                    f"{prim.name} has no CUDA kernel and its host fallback failed: {e}. Run "
                    f"this computation on the CPU backend (jit(..., backend='cpu')).") from e
            if not prim.multiple_results:
                res = (res,)
            for (s, aval), o in zip(outs, res):
                o = o._value if hasattr(o, "_value") else o
                env[s] = cuda.to_device(_flat_host(o, aval.dtype))
        return run

    # --- dot_general ---------------------------------------------------------------------

    def _k_dot_general(self, eqn):
        lhs, rhs = eqn.invars
        out = eqn.outvars[0]
        if type(lhs) is Literal or type(rhs) is Literal:
            return None
        (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
        dt = np.dtype(out.aval.dtype)
        if dt.kind not in "fiu":
            return None
        ls, rs = lhs.aval.shape, rhs.aval.shape
        lf = [i for i in range(len(ls)) if i not in lc and i not in lb]
        rf = [i for i in range(len(rs)) if i not in rc and i not in rb]
        steps = []
        # Each operand's (batch, rows, cols) groups need one stride each; where they do not
        # (several dims that are not adjacent in memory), the operand is first copied into
        # (batch, rows, cols) order by the copy kernel.
        views = []
        for v, groups in ((lhs, (lb, lf, lc)), (rhs, (rb, rc, rf))):
            st = _group_strides(v.aval.shape, groups)
            slot = self._slot(v)
            if st is None:
                perm = [d for g in groups for d in g]
                tmp = core.ShapedArray(tuple(v.aval.shape[d] for d in perm), v.aval.dtype)
                tslot = len(self._host_template)
                self._host_template.append(None)
                xs = _cstrides(v.aval.shape)
                steps.append(self._copy_step("dot_general operand layout", slot, tslot, tmp,
                                             tmp.shape, [xs[d] for d in perm], 0))
                st = _group_strides(tmp.shape, [list(range(len(lb))),
                                                list(range(len(lb), len(lb) + len(groups[1]))),
                                                list(range(len(lb) + len(groups[1]), len(perm)))])
                slot = tslot
            views.append((slot, st))
        nb = _size([ls[i] for i in lb])
        m = _size([ls[i] for i in lf])
        n = _size([rs[i] for i in rf])
        k = _size([ls[i] for i in lc])
        (sa, (sab, sam, sak)), (sb, (sbb, sbk, sbn)) = views
        # Consecutive threads load along an operand's contiguous axis.
        src = G.dot_source(dt, a_rows_fast=not (sak == 1 and sam != 1),
                           b_cols_fast=not (sbk == 1 and sbn != 1))
        plan = G.gemm_plan(nb, m, n, k)
        scal = [nb, m, n, k, plan.nsplit, plan.kchunk, sab, sam, sak, sbb, sbk, sbn]
        return self._gemm_steps("dot_general", eqn, steps, src, G.reduce_source(dt), plan,
                                [sa, sb], [], scal, [])

    def _gemm_steps(self, name, eqn, steps, src, reduce_src, plan, operand_slots, const_slots,
                    scal, store_scal):
        """The run of a GEMM-shaped step (cuda_gemm): the tiled kernel, and where its
        reduction is split, the scratch of partials and the kernel summing them (its store
        taking `store_scal`)."""
        from numba import types, from_dtype
        out = eqn.outvars[0]
        dt = np.dtype(out.aval.dtype)
        arr = lambda d: types.Array(from_dtype(np.dtype(d)), 1, "C")
        in_types = [arr(v.aval.dtype) for v in eqn.invars]
        ctypes_ = [types.Array(types.int64, 1, "C")] * len(const_slots)
        launch = self._kernel(f"{name} (tiled GEMM, {plan.nsplit} split)", src,
                              in_types + [arr(dt), arr(dt)] + ctypes_ +
                              [types.int64] * len(scal))
        s_o, alloc = self._slot(out), self._alloc
        total = plan.reduce_total
        ins = list(operand_slots) + list(const_slots)
        reduce = None
        if plan.nsplit > 1:
            rscal = [total, plan.inner, plan.nsplit] + list(store_scal)
            reduce = self._kernel(f"{name} (split reduction)", reduce_src,
                                  [arr(dt), arr(dt)] + [types.int64] * len(rscal))
            s_p = len(self._host_template)
            self._host_template.append(None)
            p_aval = core.ShapedArray((plan.scratch,), dt)
            rgrid = K.grid_for(total)

        def run(env):
            for s in steps:
                s(env)
            o = env[s_o] = alloc(out.aval, s_o)
            if total:
                a, b, *rest = [env[s] for s in ins]
                part = o if reduce is None else alloc(p_aval, s_p)
                launch(plan.grid, plan.block, a, b, o, part, *rest, *scal)
                if reduce is not None:
                    reduce(rgrid, K.BLOCK, part, o, *rscal)
        return run

    # --- windowed reductions and convolution ---------------------------------------------

    def _window(self, eqn, kind):
        x, out = eqn.invars[0], eqn.outvars[0]
        if type(x) is Literal or not x.aval.shape:
            return None
        from corejax.lax.windowed import _identity
        p = eqn.params
        rank = len(x.aval.shape)
        dt = np.dtype(x.aval.dtype)
        src = K.reduce_window_source(rank, kind, dt)
        total = _size(out.aval.shape)
        scal = [total] + list(out.aval.shape) + list(x.aval.shape) + \
            list(p["window_dimensions"]) + list(p["window_strides"]) + \
            [lo for lo, _ in p["padding"]] + list(p["base_dilation"]) + \
            list(p["window_dilation"])
        init = self._const(np.asarray([_identity(kind, dt)], dt))
        from numba import types, from_dtype
        arr = types.Array(from_dtype(dt), 1, "C")
        launch = self._kernel(f"reduce_window_{kind}", src, [arr, arr, arr] + [types.int64] * len(scal))
        s_x, s_o, alloc = self._slot(x), self._slot(out), self._alloc

        def run(env):
            o = env[s_o] = alloc(out.aval, s_o)
            launch(K.grid_for(total), K.BLOCK, env[s_x], env[init], o, *scal)
        return run

    def _const(self, host):
        s = len(self._host_template)
        self._host_template.append(host)
        return s

    def _k_reduce_window_sum(self, eqn):
        return self._window(eqn, "sum")

    def _k_reduce_window_max(self, eqn):
        return self._window(eqn, "max")

    def _k_reduce_window_min(self, eqn):
        return self._window(eqn, "min")

    def _k_conv_general_dilated(self, eqn):
        lhs, rhs = eqn.invars
        out = eqn.outvars[0]
        if type(lhs) is Literal or type(rhs) is Literal:
            return None
        p = eqn.params
        dt = np.dtype(out.aval.dtype)
        if dt.kind != "f":
            return None
        lspec, rspec, ospec = p["dimension_numbers"]
        nsp = len(lspec) - 2
        lst, rst, ost = (_cstrides(v.aval.shape) for v in (lhs, rhs, out))
        L = [lhs.aval.shape[d] for d in lspec]          # logical (N, C, spatial...)
        R = [rhs.aval.shape[d] for d in rspec]          # (O, I, spatial...)
        Ot = [out.aval.shape[d] for d in ospec]         # (N/B, O, spatial...)
        fg, bg = p["feature_group_count"], p["batch_group_count"]
        O, Cg = R[0], R[1]
        groups = max(fg, bg)
        Og = O // groups
        Nout = Ot[0]
        if _size(out.aval.shape) == 0:
            s_o, alloc = self._slot(out), self._alloc

            def run(env):
                env[s_o] = alloc(out.aval, s_o)
            return run
        ksz = R[2:]
        m = Nout * _size(Ot[2:])
        kk = Cg * _size(ksz)
        plan = G.gemm_plan(groups, m, Og, kk)
        tab = self._const(G.conv_table(Cg, ksz, lst[lspec[1]], rst[rspec[1]],
                                       p["rhs_dilation"], [rst[d] for d in rspec[2:]]))
        ld = list(p["lhs_dilation"])
        # Feature groups offset the lhs features by g * Cg; batch groups its batch by g * Nout.
        scal = [groups, m, Og, kk, plan.nsplit, plan.kchunk, Nout if bg > 1 else 0,
                Cg if fg > 1 else 0, lst[lspec[0]], lst[lspec[1]], rst[rspec[0]],
                ost[ospec[0]], ost[ospec[1]]]
        scal += Ot[2:] + L[2:] + [lst[d] for d in lspec[2:]] + [ost[d] for d in ospec[2:]]
        scal += list(p["window_strides"]) + [lo for lo, _ in p["padding"]] + ld
        src = G.conv_source(nsp, dt, lhs_dilated=any(d != 1 for d in ld))
        store = [Og, ost[ospec[0]], ost[ospec[1]]] + Ot[2:] + [ost[d] for d in ospec[2:]]
        return self._gemm_steps("conv_general_dilated", eqn, [], src,
                                G.conv_reduce_source(nsp, dt), plan,
                                [self._slot(lhs), self._slot(rhs)], [tab], scal, store)

    def _k_gather(self, eqn):
        op, idx = eqn.invars
        out = eqn.outvars[0]
        if type(op) is Literal or type(idx) is Literal or not op.aval.shape:
            return None
        dt = np.dtype(out.aval.dtype)
        src, fill = K.gather_plan(eqn)
        fslot = self._const(fill)
        from numba import types, from_dtype
        arr = lambda d: types.Array(from_dtype(np.dtype(d)), 1, "C")
        launch = self._kernel("gather", src, [arr(dt), arr(idx.aval.dtype), arr(dt), arr(dt)])
        total = _size(out.aval.shape)
        s_op, s_idx, s_o, alloc = self._slot(op), self._slot(idx), self._slot(out), self._alloc

        def run(env):
            o = env[s_o] = alloc(out.aval, s_o)
            launch(K.grid_for(total), K.BLOCK, env[s_op], env[s_idx], o, env[fslot])
        return run

    def _k_scatter(self, eqn):
        """A scatter as one kernel over the update elements (cuda_kernels' scatter_plan),
        after a device copy of the operand."""
        operand, indices, updates = eqn.invars
        out = eqn.outvars[0]
        if any(type(v) is Literal for v in eqn.invars):
            return None
        plan = K.scatter_plan(eqn)
        if plan is None:
            return None
        dt, view = np.dtype(out.aval.dtype), plan.view
        from numba import types, from_dtype
        arr = lambda d: types.Array(from_dtype(np.dtype(d)), 1, "C")
        launch = self._kernel(eqn.primitive.name, plan.source,
                     [arr(dt), arr(indices.aval.dtype), arr(dt)] + [arr(np.int64)] * 3 +
                     [types.int64, types.int64] + ([arr(view)] if view else []))
        maps = [self._const(m) for m in plan.maps]
        s_op, s_idx, s_upd, s_o = (self._slot(v) for v in (operand, indices, updates, out))
        alloc, total, w = self._alloc, plan.total, plan.window

        def run(env):
            o = env[s_o] = alloc(out.aval, s_o)
            o.copy_to_device(env[s_op])
            if total:
                launch(K.grid_for(total), K.BLOCK,
                    o, env[s_idx], env[s_upd], *[env[m] for m in maps], total, w,
                    *([o.view(view)] if view else []))
        return run

    _k_scatter_add = _k_scatter_mul = _k_scatter_min = _k_scatter_max = _k_scatter

    # --- control flow ----------------------------------------------------------------------

    def _sub(self, closed):
        return CudaExecutable(closed, self.device)

    def _k_cond(self, eqn):
        return self._control_flow(eqn, self._host_cond)

    def _host_cond(self, eqn):
        branches = [self._sub(b) for b in eqn.params["branches"]]
        for b in branches:
            self._adopt(b, "cond branch")
        idx, *ops = [self._atom(v) for v in eqn.invars]
        outs = [self._slot(v) for v in eqn.outvars]

        def run(env):
            i = int(env[idx].copy_to_host()[0])        # synchronizes
            res = branches[min(max(i, 0), len(branches) - 1)].run_device(*[env[s] for s in ops])
            for s, r in zip(outs, res):
                env[s] = r
        return run

    def _control_flow(self, eqn, host_driven):
        """A cond / while / scan as one single-block kernel (compiler/cuda_loops.py), else as
        `host_driven` builds it; the run's `note` says which (and why) in the plan."""
        loop, reason = cuda_loops.compile_loop(eqn)
        if loop is None:
            run = host_driven(eqn)
            run.note = f"host-driven: {reason}"
            return run
        what = "branch" if eqn.primitive.name == "cond" else "loop"
        self._kernel(f"{eqn.primitive.name}: the whole {what}, one block", loop.source,
                     loop.argtypes())
        ins = [self._atom(v) for v in eqn.invars]
        outs = [self._slot(v) for v in eqn.outvars]

        def run(env):
            for s, r in zip(outs, loop.run([env[s] for s in ins])):
                env[s] = r
        run.note = f"the whole {what} in one launch"
        return run

    def _k_while(self, eqn):
        return self._control_flow(eqn, self._host_while)

    def _host_while(self, eqn):
        p = eqn.params
        cond, body = self._sub(p["cond_jaxpr"]), self._sub(p["body_jaxpr"])
        self._adopt(cond, "while cond")
        self._adopt(body, "while body")
        nc, nb = p["cond_nconsts"], p["body_nconsts"]
        ins = [self._atom(v) for v in eqn.invars]
        outs = [self._slot(v) for v in eqn.outvars]

        def run(env):
            args = [env[s] for s in ins]
            cc, bc, carry = args[:nc], args[nc:nc + nb], args[nc + nb:]
            while bool(cond.run_device(*cc, *carry)[0].copy_to_host()[0]):
                carry = body.run_device(*bc, *carry)
            for s, r in zip(outs, carry):
                env[s] = r
        return run

    def _k_scan(self, eqn):
        return self._control_flow(eqn, self._host_scan)

    def _host_scan(self, eqn):
        p = eqn.params
        body = self._sub(p["jaxpr"])
        self._adopt(body, "scan body")
        length, reverse = p["length"], p["reverse"]
        nc, nk = p["num_consts"], p["num_carry"]
        ins = [self._atom(v) for v in eqn.invars]
        xs_sizes = [_size(v.aval.shape[1:]) for v in eqn.invars[nc + nk:]]
        y_avals = [v.aval for v in eqn.outvars[nk:]]
        outs = [self._slot(v) for v in eqn.outvars]
        from numba import types, from_dtype
        writes = []
        for a in y_avals:
            arr = types.Array(from_dtype(np.dtype(a.dtype)), 1, "C")
            writes.append(self._kernel("scan ys write", K.copy_source(1, a.dtype),
                                       [arr, arr] + [types.int64] * 6))
        alloc = self._alloc

        def run(env):
            args = [env[s] for s in ins]
            consts, carry, xs = args[:nc], args[nc:nc + nk], args[nc + nk:]
            ys = [alloc(a, s) for a, s in zip(y_avals, outs[nk:])]
            for i in (range(length - 1, -1, -1) if reverse else range(length)):
                x_i = [x[i * n:(i + 1) * n] for x, n in zip(xs, xs_sizes)]
                res = body.run_device(*consts, *carry, *x_i)
                carry = res[:nk]
                for y, r, write in zip(ys, res[nk:], writes):
                    n = r.size
                    if n:
                        write(K.grid_for(n), K.BLOCK, r, y, n, 0, i * n, n, 1, 1)
            for s, r in zip(outs, list(carry) + ys):
                env[s] = r
        return run

    def _adopt(self, sub, label):
        self.kernels += [(f"{label}: {lab}", src, ts) for lab, src, ts in sub.kernels]
        self.fallbacks += [(name, f"{reason} (in {label})") for name, reason in sub.fallbacks]

    # --- running ---------------------------------------------------------------------------

    def run_device(self, *buffers) -> list:
        """Flat device buffers in, flat device buffers out (no synchronization). An output
        that would be one of the program's reused buffers (an input passed through, say) is
        copied out first, so what the caller holds is never overwritten by a later call."""
        with self._lock:
            env = self._env()
            for (s, _), b in zip(self._in, buffers):
                env[s] = b
            for step in self._program:
                step(env)
            outs = [env[s] for s in self._outs]
            reused = self._arena_ids
            for i, o in enumerate(outs):
                if id(o) in reused:
                    fresh = _cuda().device_array(o.shape, o.dtype)
                    fresh.copy_to_device(o)
                    outs[i] = fresh
            return outs

    def __call__(self, *args) -> list:
        from corejax.array import Array, cuda_array, to_device_buffer
        if self.device is None:
            raise RuntimeError("this CudaExecutable was built without a device (plan only)")
        staged = self.device.id == 0
        with self._lock:
            bufs = []
            for (s, aval), x in zip(self._in, args):
                if type(x) is Array and x._device is not None and x._device.platform == "cuda":
                    b = to_device_buffer(x, self.device)
                    if b.dtype != aval.dtype:
                        b = _cuda().to_device(b.copy_to_host().astype(aval.dtype))
                else:
                    host = np.asarray(x._value if type(x) is Array else x, dtype=aval.dtype)
                    if staged:
                        b = self._stage(s, aval, host)
                    else:
                        b = to_device_buffer(host, self.device)
                bufs.append(b.reshape(-1) if b.ndim != 1 else b)
            outs = self.run_device(*bufs)
        return [cuda_array(o.reshape(a.shape), w, self.device)
                for o, a, w in zip(outs, self.out_avals, self.out_weak)]

    def _stage(self, slot, aval, host):
        """A host operand copied into the input's own device buffer, reused from call to call
        (a batch of a training loop): the copy is ordered after the previous call's kernels,
        which may still be reading it."""
        b = self._alloc(aval, slot)
        host = np.ascontiguousarray(host).reshape(-1)
        if not host.size:
            return b
        if _cuda_driver.enabled():
            _cuda_driver.from_host(b, host)
        else:
            b.copy_to_device(host)
        return b

    def as_text(self) -> str:
        lines = ["# passes: " + ", ".join(n for n, _ in PASSES), "# optimized IR:",
                 str(self.optimized), "# execution plan (cuda):"] + self.plan
        if self.fallbacks:
            lines.append("# host fallbacks:")
            lines += [f"#   {name}: {reason}" for name, reason in self.fallbacks]
        else:
            lines.append("# host fallbacks: none")
        for label, src, _ in self.kernels:
            lines.append(f"\n# kernel: {label}\n{src}")
        return "\n".join(lines)


def _new_buffer(aval):
    return _cuda().device_array(max(0, _size(aval.shape)), np.dtype(aval.dtype))


def _group_strides(shape, groups):
    """One element stride per group of dims of a C-contiguous array (ignoring size-1 dims),
    or None when a group's dims are not adjacent in memory order."""
    cs = _cstrides(shape)
    out = []
    for g in groups:
        dims = [d for d in g if shape[d] != 1]
        if not dims:
            out.append(0)
            continue
        for a, b in zip(dims, dims[1:]):
            if cs[a] != cs[b] * shape[b]:
                return None
        out.append(cs[dims[-1]])
    return out


_FALLBACK_REASONS = {
    "gather": "rank-0 operand or literal operands",
    "scatter": "literal or rank-0 operands",
    "scatter-add": "literal or rank-0 operands, or a dtype without an atomic add",
    "scatter-mul": "literal or rank-0 operands, or a dtype of other than 32 or 64 bits",
    "scatter-min": "literal or rank-0 operands, or a dtype of other than 32 or 64 bits",
    "scatter-max": "literal or rank-0 operands, or a dtype of other than 32 or 64 bits",
}
