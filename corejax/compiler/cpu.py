"""The CPU backend: passes -> fusion -> Numba kernels, run by a small executor.

The executor is a list of closures over a flat environment (a Python list indexed by slot):
fused groups call their compiled kernel with preallocated output buffers; every other
equation is a *host step* running the primitive's NumPy impl (BLAS matmul for dot_general,
NumPy views and copies for layout ops, the impl's own evaluation of sub-jaxprs for control
flow, Python callbacks for debug prints), in program order. cond / while / scan host steps
run their sub-jaxprs as compiled executables of their own.
"""
from __future__ import annotations

import os
import sys
import threading
import warnings

import numpy as np

from corejax import core
from corejax.array import Array, _NanChecks, to_numpy
from corejax.core import Literal, Var
from corejax.compiler import blas, codegen, diskcache, registry
from corejax.compiler.fusion import FusedGroup, HostStep, Virtual, partition
from corejax.compiler.control_flow import host_control_flow
from corejax.compiler.passes import PASSES, run_passes

__all__ = ["CpuExecutable"]

# Buffers at least this big are kept and reused across calls: a fresh large np.empty costs a
# page fault per 4 KiB on first write, which is most of an elementwise kernel's time.
_POOL_MIN_BYTES = 1 << 16
_POOL_PER_SLOT = 2


class _BufferPool:
    """Output buffers of one executable, reused once nothing outside the pool refers to them
    (checked with the reference count, under a lock, so concurrent calls never share one)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._buffers: dict = {}

    @staticmethod
    def worth_pooling(shape, dtype) -> bool:
        return int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize >= _POOL_MIN_BYTES

    def get(self, slot, shape, dtype):
        with self._lock:
            bufs = self._buffers.setdefault(slot, [])
            for b in bufs:
                # References: the list, the loop variable and getrefcount's argument.
                if sys.getrefcount(b) == 3:
                    b.flags.writeable = True
                    return b
            b = np.empty(shape, dtype)
            if len(bufs) < _POOL_PER_SLOT:
                bufs.append(b)
            return b


def _materialize_virtual(vv: Virtual, base_val):
    """A Virtual's value on the host (fallback path)."""
    if vv.src is None:
        return vv.eqn.primitive.impl(**vv.eqn.params)
    if type(vv.src) is Literal:
        return np.full(vv.aval.shape, vv.src.val, vv.aval.dtype)
    kept = sorted((d, k) for k, d in enumerate(vv.dims) if d is not None)
    x = np.transpose(base_val.reshape([base_val.shape[k] for k, d in enumerate(vv.dims)
                                       if d is not None]),
                     np.argsort([d for k, d in enumerate(vv.dims) if d is not None]))
    shape = [1] * len(vv.aval.shape)
    for d, k in kept:
        shape[d] = base_val.shape[k]
    return np.broadcast_to(x.reshape(shape), vv.aval.shape)


def _blas_dot_general(lhs, rhs, dimension_numbers, precision=None,
                      preferred_element_type=None):
    """dot_general as one np.matmul (see `_DotStep`), into a fresh buffer."""
    return _DotStep(lhs.shape, lhs.dtype, rhs.shape, dimension_numbers,
                    preferred_element_type)(lhs, rhs, None)


class _DotStep:
    """dot_general of fixed operand shapes as np.matmul on (batch, m, k) @ (batch, k, n)
    operands, writing into a given (pooled) buffer. Transposed operands stay views when they
    are 2-D (BLAS reads them with its transpose flag); only operands that cannot be viewed
    that way are copied, so matmul never takes NumPy's non-BLAS loop."""

    def __init__(self, lhs_shape, lhs_dtype, rhs_shape, dimension_numbers,
                 preferred_element_type):
        (lc, rc), (lb, rb) = dimension_numbers
        lnd, rnd = len(lhs_shape), len(rhs_shape)
        lf = tuple(i for i in range(lnd) if i not in lc and i not in lb)
        rf = tuple(i for i in range(rnd) if i not in rc and i not in rb)
        batch = tuple(lhs_shape[i] for i in lb)
        m_shape = tuple(lhs_shape[i] for i in lf)
        n_shape = tuple(rhs_shape[i] for i in rf)
        self.b = int(np.prod(batch, dtype=np.int64))
        self.m = int(np.prod(m_shape, dtype=np.int64))
        self.n = int(np.prod(n_shape, dtype=np.int64))
        self.k = int(np.prod([lhs_shape[i] for i in lc], dtype=np.int64))
        self.lperm = tuple(lb) + lf + tuple(lc)
        self.rperm = tuple(rb) + tuple(rc) + rf
        self.out_shape = batch + m_shape + n_shape
        self.dtype = np.dtype(preferred_element_type or lhs_dtype)
        self.mat_shape = (self.m, self.n) if self.b == 1 else (self.b, self.m, self.n)
        self.site = blas.GemmSite()

    def __call__(self, lhs, rhs, out):
        """lhs . rhs, written into `out` (a C-contiguous buffer of mat_shape) if given."""
        b, dt = self.b, self.dtype
        a = _as_matrices(np.transpose(lhs, self.lperm), b, self.m, self.k, dt)
        c = _as_matrices(np.transpose(rhs, self.rperm), b, self.k, self.n, dt)
        if out is None:
            out = np.empty(self.mat_shape, dt)
        if b == 1:
            blas.matmul(a, c, out, self.site)
        else:
            np.matmul(a, c, out=out)
        return out.reshape(self.out_shape)


def _as_matrices(x, b, rows, cols, dtype):
    if x.dtype != dtype:
        x = x.astype(dtype)
    if b == 1:
        x2 = x.reshape(rows, cols) if x.flags.c_contiguous or x.flags.f_contiguous \
            else np.ascontiguousarray(x).reshape(rows, cols)
        if x2.flags.c_contiguous or x2.flags.f_contiguous:
            return x2
        return np.ascontiguousarray(x2)
    return np.ascontiguousarray(x).reshape(b, rows, cols)


class CpuExecutable:
    def __init__(self, closed: core.ClosedJaxpr):
        self.closed = closed
        self.out_weak = [a.weak_type for a in closed.out_avals]
        self.optimized = run_passes(closed)
        self.steps = partition(self.optimized.jaxpr)
        self.kernels: list = []          # (step, KernelPlan, cache key) for as_text
        self._control_flow: dict = {}    # id(eqn) -> its cond/while/scan callable, for as_text
        self._slots: dict = {}
        self._pool = _BufferPool()
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
        out_vars = plan.outputs + ([plan.reduction_out] if plan.reduction_out is not None else [])
        outs = [(self._slot(v, template), v.aval.shape, v.aval.dtype,
                 _BufferPool.worth_pooling(v.aval.shape, v.aval.dtype)) for v in out_vars]

        pool = self._pool

        def run(env):
            args = list(sizes)
            for s, dt in in_slots:
                a = env[s]
                if a.dtype != dt:
                    a = a.astype(dt)
                args.append(a.ravel())
            for s, shape, dt, pooled in outs:
                o = pool.get(s, shape, dt) if pooled else np.empty(shape, dt)
                env[s] = o
                args.append(o.reshape(-1))
            fn(*args)

        return run

    def _host(self, eqn, template):
        prim, params = eqn.primitive, eqn.params
        compiled_control_flow = host_control_flow(prim.name, params)
        if compiled_control_flow is not None:
            self._control_flow[id(eqn)] = compiled_control_flow
        if registry.kernel_lowerings.get(prim) == ("dot_general",) \
                and type(eqn.invars[0]) is Var and type(eqn.invars[1]) is Var:
            return self._dot(eqn, template)
        if registry.kernel_lowerings.get(prim) == ("dot_general",):
            params = dict(params)
            impl = _blas_dot_general
        elif compiled_control_flow is not None:
            impl, params = compiled_control_flow, {}
        else:
            impl = prim.impl
        getters = [(None, np.asarray(v.val, v.aval.dtype)) if type(v) is Literal else (self._slot(v, template),
                                                                          None)
                   for v in eqn.invars]
        out_slots = [(self._slot(v, template), v.aval.dtype) for v in eqn.outvars]
        multiple = prim.multiple_results

        def run(env):
            args = [env[s] if s is not None else c for s, c in getters]
            outs = impl(*args, **params)
            if not multiple:
                outs = (outs,)
            for (s, dt), o in zip(out_slots, outs):
                o = to_numpy(o)
                env[s] = o if o.dtype == dt else o.astype(dt)

        return run

    def _dot(self, eqn, template):
        """dot_general on BLAS, into a pooled buffer (a fresh large one page-faults)."""
        lhs, rhs = eqn.invars
        out = eqn.outvars[0]
        dot = _DotStep(lhs.aval.shape, lhs.aval.dtype, rhs.aval.shape,
                       eqn.params["dimension_numbers"], eqn.params.get("preferred_element_type"))
        ls, rs, os_ = self._slot(lhs, template), self._slot(rhs, template), self._slot(out, template)
        shape, dt = dot.mat_shape, dot.dtype
        pool = self._pool
        pooled = _BufferPool.worth_pooling(shape, dt)

        def run(env):
            buf = pool.get(os_, shape, dt) if pooled else np.empty(shape, dt)
            env[os_] = dot(env[ls], env[rs], buf)

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

    def run_numpy(self, *args) -> list:
        """The outputs as NumPy arrays (for host steps running sub-programs)."""
        env = list(self._template)
        for s, x in zip(self._in_slots, args):
            env[s] = x._value if type(x) is Array else to_numpy(x)
        for step in self._program:
            step(env)
        return [env[s] if s is not None else c for s, c in self._outs]

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
        loop_sources = []
        for i, step in enumerate(self.steps):
            if isinstance(step, HostStep):
                name = step.eqn.primitive.name
                flow = self._control_flow.get(id(step.eqn))
                if getattr(flow, "source", None) is not None:
                    kind = f"compiled loop k_{flow.key}"
                    loop_sources.append(f"\n# loop k_{flow.key}\n{flow.source}")
                else:
                    kind = ("BLAS (np.matmul)" if name == "dot_general" else
                            "NumPy impl" if flow is None else
                            "branches compiled" if name == "cond" else
                            "Python-driven loop, body compiled")
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
        lines += loop_sources
        return "\n".join(lines)


from numba import types as codegen_types  # noqa: E402  (numba's import is the slow part)
import numba  # noqa: E402

if "NUMBA_THREADING_LAYER" not in os.environ:
    numba.config.THREADING_LAYER = "workqueue"
