"""The CPU backend: passes -> fusion -> Numba kernels, run by a small executor.

The executor is a list of closures over a flat environment (a Python list indexed by slot):
fused groups call their compiled kernel with preallocated output buffers; every other
equation is a *host step* running the primitive's NumPy impl (BLAS matmul for dot_general,
NumPy views and copies for layout ops, the impl's own evaluation of sub-jaxprs for control
flow, Python callbacks for debug prints), in program order.
"""
from __future__ import annotations

import warnings

import numpy as np

from corejax import core
from corejax.array import Array, _NanChecks, to_numpy
from corejax.core import Literal, Var
from corejax.compiler import codegen, diskcache
from corejax.compiler.fusion import FusedGroup, HostStep, Virtual, partition
from corejax.compiler.passes import PASSES, run_passes

__all__ = ["CpuExecutable"]


def _materialize_virtual(vv: Virtual, base_val):
    """A Virtual's value on the host (fallback path)."""
    if vv.src is None:
        return vv.eqn.primitive.impl(**vv.eqn.params)
    if type(vv.src) is Literal:
        return np.full(vv.aval.shape, vv.src.val, vv.aval.dtype)
    kept = [k for k, d in enumerate(vv.dims) if d is not None]
    shape = [1] * len(vv.aval.shape)
    for k in kept:
        shape[vv.dims[k]] = base_val.shape[k]
    return np.broadcast_to(base_val.reshape(shape), vv.aval.shape)


class CpuExecutable:
    def __init__(self, closed: core.ClosedJaxpr):
        self.closed = closed
        self.out_weak = [a.weak_type for a in closed.out_avals]
        self.optimized = run_passes(closed)
        self.steps = partition(self.optimized.jaxpr)
        self.kernels: list = []          # (step, KernelPlan, cache key) for as_text
        self._slots: dict = {}
        jaxpr = self.optimized.jaxpr
        template = []
        for v, c in zip(jaxpr.constvars, self.optimized.consts):
            self._slots[v] = len(template)
            template.append(to_numpy(c))
        self._in_slots = []
        for v in jaxpr.invars:
            self._in_slots.append(self._slot(v, template))
        self._program = [self._build(step, template) for step in self.steps]
        self._outs = []
        for v in jaxpr.outvars:
            if type(v) is Literal:
                self._outs.append((None, np.asarray(v.val, v.aval.dtype)))
            else:
                self._outs.append((self._slot(v, template), None))
        self._template = template

    def _slot(self, v, template):
        s = self._slots.get(v)
        if s is None:
            s = self._slots[v] = len(template)
            template.append(None)
        return s

    # --- building steps ------------------------------------------------------------------

    def _build(self, step, template):
        if isinstance(step, HostStep):
            return self._host(step.eqn, template)
        try:
            plan = codegen.generate(step)
        except NotImplementedError:
            return self._group_on_host(step, template)
        sig = [codegen_types.int64] * len(plan.sizes)
        sig += [diskcache.numba_type(v.aval.dtype) for v in plan.arrays]
        sig += [diskcache.numba_type(v.aval.dtype) for v in plan.outputs]
        if plan.reduction_out is not None:
            sig.append(diskcache.numba_type(plan.reduction_out.aval.dtype))
        try:
            fn, key = diskcache.load_kernel(plan.source, sig)
        except diskcache.KernelCompileError as e:
            warnings.warn(f"corejax: running a fused group on the host instead: {e}")
            return self._group_on_host(step, template)
        self.kernels.append((step, plan, key))
        sizes = plan.sizes
        in_slots = [(self._slot(v, template), v.aval.dtype) for v in plan.arrays]
        outs = [(self._slot(v, template), v.aval.shape, v.aval.dtype) for v in plan.outputs]
        if plan.reduction_out is not None:
            r = plan.reduction_out
            outs.append((self._slot(r, template), r.aval.shape, r.aval.dtype))

        def run(env):
            args = list(sizes)
            for s, dt in in_slots:
                a = env[s]
                if a.dtype != dt:
                    a = a.astype(dt)
                args.append(a.ravel())
            for s, shape, dt in outs:
                o = np.empty(shape, dt)
                env[s] = o
                args.append(o.reshape(-1))
            fn(*args)

        return run

    def _host(self, eqn, template):
        prim, params = eqn.primitive, eqn.params
        getters = [(None, np.asarray(v.val, v.aval.dtype)) if type(v) is Literal else (self._slot(v, template),
                                                                          None)
                   for v in eqn.invars]
        out_slots = [(self._slot(v, template), v.aval.dtype) for v in eqn.outvars]
        multiple = prim.multiple_results

        def run(env):
            args = [env[s] if s is not None else c for s, c in getters]
            outs = prim.impl(*args, **params)
            if not multiple:
                outs = (outs,)
            for (s, dt), o in zip(out_slots, outs):
                o = to_numpy(o)
                env[s] = o if o.dtype == dt else o.astype(dt)

        return run

    def _group_on_host(self, group: FusedGroup, template):
        """A group the code generator cannot lower, evaluated equation by equation."""
        virt = [(self._slot(a, template), vv, self._slot(vv.src, template)
                 if type(vv.src) is Var else None)
                for a, vv in group.inputs.items() if isinstance(vv, Virtual)]
        eqns = list(group.eqns) + ([group.reduction] if group.reduction is not None else [])
        runs = [self._host(e, template) for e in eqns]

        def run(env):
            for s, vv, base in virt:
                env[s] = _materialize_virtual(vv, env[base] if base is not None else None)
            for r in runs:
                r(env)

        return run

    # --- running ---------------------------------------------------------------------------

    def __call__(self, *args) -> list:
        env = list(self._template)
        for s, x in zip(self._in_slots, args):
            env[s] = x._value if type(x) is Array else to_numpy(x)
        for step in self._program:
            step(env)
        outs = [Array(env[s] if s is not None else c, w)
                for (s, c), w in zip(self._outs, self.out_weak)]
        if _NanChecks.enabled:
            self._check_nans(outs, args)
        return outs

    def _check_nans(self, outs, args):
        for o in outs:
            v = o._value
            if v.dtype.kind in "fc" and np.isnan(v).any():
                from corejax.compiler.reference import find_nan_source
                find_nan_source(self.closed, args)
                raise FloatingPointError("invalid value (nan) encountered in the output of a "
                                         "jitted function")

    def as_text(self) -> str:
        lines = ["# passes: " + ", ".join(n for n, _ in PASSES), "# optimized IR:",
                 str(self.optimized), "# execution plan:"]
        kernel_of = {id(step): (plan, key) for step, plan, key in self.kernels}
        for i, step in enumerate(self.steps):
            if isinstance(step, HostStep):
                name = step.eqn.primitive.name
                kind = "BLAS (NumPy matmul)" if name == "dot_general" else "NumPy impl"
                outs = " ".join(f"{v.aval.str_short()}" for v in step.eqn.outvars)
                lines.append(f"step {i}: host step {name} [{kind}] -> {outs}")
            elif id(step) in kernel_of:
                plan, key = kernel_of[id(step)]
                lines.append(f"step {i}: fused kernel k_{key} over {step.shape} "
                             f"(loop sizes {plan.sizes}): {step!r}")
            else:
                lines.append(f"step {i}: host-evaluated group {step!r}")
        for step, plan, key in self.kernels:
            lines.append(f"\n# kernel k_{key}\n{plan.source}")
        return "\n".join(lines)


from numba import types as codegen_types  # noqa: E402  (numba's import is the slow part)
