"""The CPU backend: passes -> fusion -> Numba kernels, run by a small executor.

The executor is a list of closures over a flat environment (a Python list indexed by slot):
fused groups call their compiled kernel with preallocated output buffers; every other
equation is a *host step* running the primitive's NumPy impl (BLAS matmul for dot_general,
NumPy views and copies for layout ops, the impl's own evaluation of sub-jaxprs for control
flow, Python callbacks for debug prints), in program order. cond / while / scan host steps
run their sub-jaxprs as compiled executables of their own.
"""
from __future__ import annotations

import functools
import os
import sys
import threading
import time
import warnings
import weakref

import numpy as np

from corejax import core, dtypes
from corejax._machine import usable_cores
from corejax.array import Array, _Deleted, _NanChecks, to_numpy
from corejax.core import Literal, Var
from corejax.compiler import (blas, codegen, conv_blocks, diskcache, eager_kernels,
                              eager_threads, gemm_sites, registry)
from corejax.compiler.fusion import (Buffers, FusedGroup, HostStep, Virtual, partition,
                                     step_reads)
from corejax.compiler.control_flow import host_control_flow
from corejax.compiler.loop_lowerings import reshaped_view
from corejax.compiler.passes import PASSES, run_passes

__all__ = ["CpuExecutable"]

# Buffers at least this big are kept and reused across calls: a fresh large np.empty costs a
# page fault per 4 KiB on first write, which is most of an elementwise kernel's time.
_POOL_MIN_BYTES = 1 << 16
# A convolution's gathered windows and product are kept for the next call up to this size: a
# training step reuses them without page faults, while an evaluation over a whole data set in
# one call (gigabytes of windows) does not hold that memory for the life of the executable.
_SCRATCH_MAX_BYTES = 1 << 27
_POOL_PER_SLOT = 2


# id(buffer) -> (weak reference to it, its pool, its slot), for every pooled buffer: a donated
# Array's buffer may be a pooled one (a program output), which the donation takes out of its
# pool.
_pooled: dict = {}


def _forget(key, _ref, pooled=_pooled):
    # (the table is bound as a default: at interpreter exit the module's globals are gone
    # before the last weak-reference callbacks run)
    pooled.pop(key, None)


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
                _pooled[id(b)] = (weakref.ref(b, functools.partial(_forget, id(b))), self, slot)
            return b

    def release(self, slot, buf) -> None:
        """Takes `buf` out of the pool (it now belongs to whoever was donated it)."""
        with self._lock:
            bufs = self._buffers.get(slot, [])
            for i, b in enumerate(bufs):
                if b is buf:
                    del bufs[i]
                    break


def _take_donated(env, slot) -> bool:
    """Whether the buffer env[slot] of a donated Array (already deleted, so that it no longer
    holds it) may be written in place: a C-contiguous NumPy array owning its memory that
    nothing else refers to but the environment (and maybe a buffer pool, which then lets it
    go). Anything sharing it (a view, another Array, a user's NumPy name, the same Array
    passed twice) keeps it read-only: the program then writes a copy."""
    v = env[slot]
    if type(v) is not np.ndarray or not v.flags.owndata or not v.flags.c_contiguous:
        return False
    # References: the environment, `v` and getrefcount's argument.
    extra = sys.getrefcount(v) - 3
    if extra == 1:
        entry = _pooled.get(id(v))
        if entry is None or entry[0]() is not v:
            return False
        entry[1].release(entry[2], v)
    elif extra:
        return False
    v.flags.writeable = True
    return True


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
    return _DotStep(lhs.shape, lhs.dtype, rhs.shape, rhs.dtype, dimension_numbers,
                    preferred_element_type)(lhs, rhs, None)


# A 2-D value stored column-major (`_layouts`), and a 2-D operand read as its .T.
TRANSPOSED = (1, 0)


class _DotStep:
    """dot_general of fixed operand shapes as np.matmul on (batch, m, k) @ (batch, k, n)
    operands, writing into a given (pooled) buffer. Transposed operands stay views when they
    are 2-D (BLAS reads them with its transpose flag); only operands that cannot be viewed
    that way are copied, so matmul never takes NumPy's non-BLAS loop."""

    def __init__(self, lhs_shape, lhs_dtype, rhs_shape, rhs_dtype, dimension_numbers,
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
        self.site = gemm_sites.GemmSite()
        # 2-D operands of this dtype, one free and one contracted dim each: the matrices are
        # the operands or their .T (`matrices` skips the general reshaping then)
        self.plain = lnd == rnd == 2 and not lb and len(lc) == len(rc) == 1 and \
            np.dtype(lhs_dtype) == np.dtype(rhs_dtype) == self.dtype
        self.plain_t = (self.lperm == TRANSPOSED, self.rperm == TRANSPOSED)

    @classmethod
    def of(cls, eqn):
        lhs, rhs = eqn.invars
        return cls(lhs.aval.shape, lhs.aval.dtype, rhs.aval.shape, rhs.aval.dtype,
                   eqn.params["dimension_numbers"], eqn.params.get("preferred_element_type"))

    def matrices(self, lhs, rhs):
        """The operands as (batch,) m x k and k x n matrices BLAS reads."""
        dt = self.dtype
        if self.plain and lhs.dtype == dt and rhs.dtype == dt:
            a = lhs.T if self.plain_t[0] else lhs
            c = rhs.T if self.plain_t[1] else rhs
            fa, fc = a.flags, c.flags
            if (fa.c_contiguous or fa.f_contiguous) and (fc.c_contiguous or fc.f_contiguous):
                return a, c
        b = self.b
        return (_as_matrices(np.transpose(lhs, self.lperm), b, self.m, self.k, dt),
                _as_matrices(np.transpose(rhs, self.rperm), b, self.k, self.n, dt))

    def __call__(self, lhs, rhs, out):
        """lhs . rhs, written into `out` (a C-contiguous buffer of mat_shape) if given."""
        a, c = self.matrices(lhs, rhs)
        b, dt = self.b, self.dtype
        if out is None:
            out = np.empty(self.mat_shape, dt)
        if b == 1:
            blas.matmul(a, c, out, self.site)
        else:
            blas.batched_matmul(a, c, out)
        # (the buffer itself where it has the shape: a view would hide it from a donation)
        return out if out.shape == self.out_shape else out.reshape(self.out_shape)

    def transposed_into(self, lhs, rhs, out_t):
        """lhs . rhs (an (m, n) product of one free dim a side, no batch) computed as its
        transpose rhs^T . lhs^T into the C-contiguous (n, m) buffer `out_t`; returns the
        (m, n) result, a column-major view of it (see `_layouts`)."""
        a, c = self.matrices(lhs, rhs)
        blas.matmul(c.T, a.T, out_t, self.site)
        return out_t.T


def _is_dot(eqn) -> bool:
    """Whether an equation is a BLAS product (the ("dot_general",) kernel lowering). A product
    of bfloat16, float8, int4 ... is not: BLAS has no such types, its impl runs."""
    return registry.kernel_lowerings.get(eqn.primitive) == ("dot_general",) and \
        not dtypes.is_narrow(eqn.outvars[0].aval.dtype)


def _dot_of_vars(eqn) -> bool:
    """Whether an equation is a BLAS product of two materialized operands (`_DotStep` into
    a pooled buffer, `CpuExecutable._dot`)."""
    return _is_dot(eqn) and all(type(v) is Var for v in eqn.invars)


def _writes_fresh(step) -> bool:
    """Whether the executor writes a step's results into buffers of their own: fused groups
    (their kernels, or `_group_on_host`'s copies) and BLAS products do; any other host step's
    results may be views of its operands (reshape, transpose, slice, a loop's passthrough
    carry...), conservatively."""
    return isinstance(step, FusedGroup) or _is_dot(step.eqn)


def _buffers(jaxpr, steps) -> Buffers:
    """The executor's buffers (see `_writes_fresh`)."""
    return Buffers(jaxpr, steps, lambda st: () if _writes_fresh(st) else st.eqn.invars)



def _transposes_well(step) -> bool:
    """Whether a host step is an (m, k) @ (k, n) product with fewer rows than columns, which
    OpenBLAS computes faster as its transpose: on the 2-core test machine, interleaved
    medians, (128, 512) @ (512, 512) took 386 us as such and 372 us as (512, 512) @
    (512, 128) into the transposed buffer, (128, 512) @ (512, 512)^T 424 us against 364 us
    (in the machine's slower spells the gap grew to 25-35%), and on one thread
    (128, 10) @ (10, 512) 33 us against 26 us. Products with more rows than columns (the
    784 x 512 weight gradient) were the faster as they are. A reduction longer than the
    columns ((128, 784) @ (784, 512)) ran about 4% slower transposed, but is transposed all
    the same: the backward mask of the relu over it would otherwise read one transposed and
    one row-major input, with strides (80-110 us against 10-15 us)."""
    if not isinstance(step, HostStep) or not _dot_of_vars(step.eqn):
        return False
    dot = _DotStep.of(step.eqn)
    # (m, n) as it is: one free dimension a side, no batch
    return dot.out_shape == (dot.m, dot.n) and dot.m < dot.n and dot.dtype.kind == "f" and \
        all(np.dtype(v.aval.dtype) == dot.dtype for v in step.eqn.invars)


def _layouts(steps, outvars, fused) -> tuple[dict, dict]:
    """Layout assignment (XLA's, in small): ({Var: TRANSPOSED} for the 2-D values stored
    column-major, {id(group): TRANSPOSED} for the fused groups iterating column by column).
    A product `_transposes_well` writes its transpose; a 2-D group most of whose full-shape
    direct inputs are stored transposed iterates in their order and writes its full-shape
    results transposed too (a relu over such a product, then its backward pass), so that
    they stream through memory and feed the next product as transposed operands, which BLAS
    reads as they are. Program outputs stay row-major, as callers expect."""
    results = {v for v in outvars if type(v) is Var}
    layout, order = {}, {}
    for st in steps:
        if id(st) in fused:
            continue
        if _transposes_well(st):
            if st.eqn.outvars[0] not in results:
                layout[st.eqn.outvars[0]] = TRANSPOSED
        elif isinstance(st, FusedGroup) and len(st.shape) == 2:
            full = [v for v, src in st.inputs.items()
                    if src is v and v.aval.shape == st.shape]
            outs = [o for o in st.outputs if o.aval.shape == st.shape and
                    (st.reduction is None or o is not st.reduction.outvars[0])]
            if 2 * sum(v in layout for v in full) > len(full) and \
                    not any(o in results for o in outs):
                order[id(st)] = TRANSPOSED
                layout.update(dict.fromkeys(outs, TRANSPOSED))
    return layout, order


def _axpy(group: FusedGroup):
    """(w, d, scale, sign) when the group computes exactly w + sign * scale * d of materialized
    same-shape inputs w and d, scale a scalar (a Literal, or a Var broadcast from a 0-d one;
    None: 1): the shape of an SGD update, params + (-lr) * grads; else None."""
    if group.reduction is not None or len(group.outputs) != 1 or not 1 <= len(group.eqns) <= 2:
        return None
    *first, last = group.eqns
    name = last.primitive.name
    if name not in ("add", "sub") or last.outvars[0] is not group.outputs[0]:
        return None

    def materialized(atom):
        return type(atom) is Var and group.inputs.get(atom) is atom and \
            atom.aval.shape == group.shape

    x, y = last.invars
    if first:
        t = first[0].outvars[0]
        if first[0].primitive.name != "mul" or t not in (x, y) or x is y:
            return None
        w = y if t is x else x
        if name == "sub" and w is not x:
            return None
        p, q = first[0].invars
        d, scale = (p, q) if materialized(p) else (q, p)
        if not materialized(d):
            return None
        if type(scale) is Literal:
            if np.ndim(scale.val) != 0:
                return None
        else:
            src = group.inputs.get(scale)
            if not isinstance(src, Virtual) or src.iota_dim is not None or \
                    src.src is None or src.src.aval.shape != ():
                return None
            scale = src.src
    else:
        w, d, scale = x, y, None
        if name == "add" and not materialized(w):
            w, d = d, w
    if not (materialized(w) and materialized(d)) or w is d:
        return None
    return w, d, scale, (-1.0 if name == "sub" else 1.0)


def _accumulate_fusions(steps, donated, buffers: Buffers) -> dict:
    """{id(step): ...} of the SGD-update shape `w + alpha * dot(a, b)` with w a donated input
    no later step reads and the product read by nothing else: the update group maps to (the
    dot's equation, w, scale or None for 1, sign), run as one accumulating gemm where the
    group ran (CpuExecutable._accumulate), and the dot's step to None (dropped). The
    product's operands are then read where the group runs: `buffers` learns so, and no
    step in between writes into them in place."""
    fused = {}
    for j, group in enumerate(steps):
        found = _axpy(group) if isinstance(group, FusedGroup) and donated else None
        if found is None:
            continue
        w, d, scale, sign = found
        readers = [k for k, st in enumerate(steps) if d in step_reads(st)]
        producer = [k for k, st in enumerate(steps[:j])
                    if isinstance(st, HostStep) and d in st.eqn.outvars]
        if w not in donated or readers != [j] or not producer or \
                not buffers.free_after(d, j) or not buffers.free_after(w, j):
            continue
        dot = steps[producer[0]].eqn
        if not _is_dot(dot):
            continue
        lhs, rhs = dot.invars
        dt = np.dtype(d.aval.dtype)
        (lc, rc), (lb, rb) = dot.params["dimension_numbers"]
        if lb or type(lhs) is not Var or type(rhs) is not Var or w in (lhs, rhs) or \
                lhs.aval.dtype != dt or rhs.aval.dtype != dt or \
                np.dtype(w.aval.dtype) != dt or blas.gemm_symbol(dt) is None or \
                (type(scale) is Var and np.dtype(scale.aval.dtype).kind not in "fiub"):
            continue
        fused[id(steps[producer[0]])] = None
        fused[id(group)] = (dot, w, scale, sign)
        buffers.read_at(lhs, j)
        buffers.read_at(rhs, j)
    return fused


def _in_place_outputs(steps, donated, fused, buffers: Buffers, layout, order) -> dict:
    """{id(group): {output Var: input Var}}: a fused group's output may be written into the
    buffer of an input of its shape and dtype that the group reads element for element (a
    direct input, and no other input, direct or through a broadcast or transpose, may be a
    view of it: each element is read in the iteration that overwrites it) and nothing reads
    afterwards, when that buffer may be the program's to overwrite: a donated input (the
    in-place elementwise updates of optimizer states and parameters), or a value one of the
    program's kernels or BLAS products wrote (the buffer reuse of XLA's buffer assignment:
    a relu's backward pass masks its incoming gradient in place, where the lines still are
    in cache, instead of faulting in another buffer). The input must be laid out in the
    group's iteration order (`_layouts`)."""
    taken = {f[1] for f in fused.values() if f is not None}
    written = {v for st in steps if _writes_fresh(st)
               for v in (st.outputs if isinstance(st, FusedGroup) else st.eqn.outvars)}
    found = {}
    for j, group in enumerate(steps):
        if not isinstance(group, FusedGroup) or id(group) in fused:
            continue
        mapping = {}
        # a donated buffer first: a parameter then stays where it was
        candidates = sorted(group.inputs, key=lambda w: w not in donated)
        for out in group.outputs:
            for w in candidates:
                if (w in donated or w in written) and w not in taken and \
                        group.inputs[w] is w and \
                        out.aval.shape == group.shape == w.aval.shape and \
                        w.aval.dtype == out.aval.dtype and buffers.free_after(w, j) and \
                        layout.get(w) == order.get(id(group)) and \
                        sum(w in buffers.roots_of(v) for v in step_reads(group)) == 1:
                    mapping[out] = w
                    taken.add(w)
                    break
        if mapping:
            found[id(group)] = mapping
    return found


def _as_matrices(x, b, rows, cols, dtype):
    """x (its dims already in (batch,) rows, cols order) as matrices np.matmul reads: for an
    unbatched product a (rows, cols) view where NumPy makes one that is C- or F-contiguous
    (BLAS reads the latter with its transpose flag: the weight gradient of a (batch, seq,
    features) activation is such a view, and copying it took twice the product's own time),
    else a C copy."""
    if x.dtype != dtype:
        x = x.astype(dtype)
    if b == 1:
        x2 = reshaped_view(x, rows, cols)
        if x2 is not None and (x2.flags.c_contiguous or x2.flags.f_contiguous):
            return x2
        return np.ascontiguousarray(x).reshape(rows, cols)
    return np.ascontiguousarray(x).reshape(b, rows, cols)


class CpuExecutable:
    """`donated`: a bool per input (or None). A donated input the caller's Array alone holds
    is the program's to overwrite: `W + alpha * dot(a, b)` (an SGD update) is then ONE gemm
    accumulating into W's buffer in place (`_accumulate_fusions`). The caller deletes
    donated Arrays; this program deletes them at dispatch, before writing any. `row_major`:
    no value is stored transposed (`_layouts`)."""

    consumes_donations = True       # deleted here, at dispatch: the caller need not

    def __init__(self, closed: core.ClosedJaxpr, donated=None, row_major=False):
        self.closed = closed
        self.out_weak = [a.weak_type for a in closed.out_avals]
        self.optimized = run_passes(closed)
        self.steps = partition(self.optimized.jaxpr)
        self.kernels: list = []          # (step, KernelPlan, cache key) for as_text
        self.thread_sites: dict = {}     # id(step) -> the GemmSite choosing its threads
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
        # Donated inputs: (argument index, slot, slot of "its buffer is ours this call" or
        # None, the _Deleted its Array holds from the call on: built once, shared, immutable).
        self._donations, self._owned = [], {}
        for i, (v, d) in enumerate(zip(jaxpr.invars, donated or ())):
            if not d:
                continue
            own = None
            if type(v) is Var and v not in self._owned:
                own = self._owned[v] = len(template)
                template.append(False)
            self._donations.append((i, self._in_slots[i], own,
                                    _Deleted(v.aval.shape, v.aval.dtype)))
        buffers = _buffers(jaxpr, self.steps)
        self._fused = _accumulate_fusions(self.steps, set(self._owned), buffers)
        self._layout, self._order = ({}, {}) if row_major else \
            _layouts(self.steps, jaxpr.outvars, self._fused)
        self._in_place = _in_place_outputs(self.steps, set(self._owned), self._fused, buffers,
                                           self._layout, self._order)
        self._program = [self._build(step, template) for step in self.steps
                         if id(step) not in self._fused or self._fused[id(step)] is not None]
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
        fused = self._fused.get(id(step))
        if fused is not None:
            return self._accumulate(*fused, step.outputs[0], template)
        if isinstance(step, HostStep):
            return self._host(step.eqn, template)
        in_place = self._in_place.get(id(step), {})
        try:
            plan = codegen.generate(step, in_place, self._order.get(id(step)),
                                    self._layout)
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
        threaded, site = self._threaded_variant(step, plan, in_place, sig, fn)
        # per array argument: (slot, dtype, None or, when the kernel writes an output into it,
        # (the output's slot, the ownership slot of a donated input or None), whether it is
        # stored transposed: passed flat in memory order)
        into = {j: (self._slot(o, template), self._owned.get(in_place[o]))
                for o, j in plan.written.items()}
        in_slots = [(self._slot(v, template), v.aval.dtype, into.get(j), v in self._layout)
                    for j, v in enumerate(plan.arrays)]
        out_vars = plan.outputs + ([plan.reduction_out] if plan.reduction_out is not None else [])
        outs = []
        for v in out_vars:
            t = v in self._layout
            shape = v.aval.shape[::-1] if t else v.aval.shape
            outs.append((self._slot(v, template), shape, v.aval.dtype,
                         _BufferPool.worth_pooling(shape, v.aval.dtype), t))
        pool = self._pool

        def run(env):
            args = list(sizes)
            for s, dt, out, t in in_slots:
                a = env[s]
                if a.dtype != dt:
                    a = a.astype(dt)
                elif out is not None and out[1] is not None and not env[out[1]]:
                    a = a.copy()    # a donated buffer this call does not own: others see it
                if out is not None:
                    env[out[0]] = a
                args.append(a.T.ravel() if t else a.ravel())
            for s, shape, dt, pooled, t in outs:
                o = pool.get(s, shape, dt) if pooled else np.empty(shape, dt)
                env[s] = o.T if t else o
                args.append(o.reshape(-1))
            if site is None:
                fn(*args)
                return
            adaptive = blas._adaptive
            if adaptive is not None and adaptive.sharing:
                fn(*args)           # several devices' programs share the cores
                return
            mode = site.mode()
            # (a threaded call that wakes the helpers measures their waking: recorded only
            # as the first time of the threads)
            awake = mode != 0 or eager_threads.helpers_awake() or site.seconds[0] == 0.0
            start = time.perf_counter()
            if mode == 0:
                threaded(args)
            else:
                fn(*args)
            if awake:
                site.record(mode, time.perf_counter() - start)

        return run

    def _threaded_variant(self, step, plan, in_place, sig, fn):
        """(`threaded(args)`: the group's kernel run over parts of its outer loop by this
        thread and eager_threads' briefly spinning helpers, the call site choosing between
        that and the one-thread kernel `fn`), or (None, None): for groups of ADAPTIVE_MIN to
        PARALLEL_MIN elements on a machine with cores to spare. Threads win on a quiet
        machine and lose beside a busy process; the site (`gemm_sites.GemmSite`: mode 0 threads,
        1 one thread) measures both and runs the faster. Each part writes its own elements
        and sums its own reductions in loop order: the same bits either way. The parts are
        claimed and run in compiled code (eager_threads.native_source), or, where that cannot
        be built, by Python calls of the kernel over [p0, p1). (Numba's prange hands its work
        to threads that sleep between kernels: on the shared 2-core VM their waking cost more
        than the second core gained at 1M elements.)"""
        n = int(np.prod(plan.sizes, dtype=np.int64)) if plan.sizes else 0
        if not codegen.ADAPTIVE_MIN <= n < codegen.PARALLEL_MIN or usable_cores() < 2 or \
                plan.sizes[0] < 2:
            return None, None
        try:
            other = codegen.generate(step, in_place, self._order.get(id(step)), self._layout,
                                     parts=True)
        except NotImplementedError:
            return None, None
        bounds = eager_kernels.parts(plan.sizes[0], usable_cores(),
                                     int(np.prod(plan.sizes[1:], dtype=np.int64)))
        arrays = [(f"a{j}", v) for j, v in enumerate(other.arrays)] + \
            [(f"o{j}", v) for j, v in enumerate(other.outputs)] + \
            ([("r0", other.reduction_out)] if other.reduction_out is not None else [])
        params = ["lo", "hi"] + [("int", f"n{c}") for c in range(len(other.sizes))] + \
            [("array", name, v.aval.dtype, False) for name, v in arrays]
        native = eager_kernels.native_kernel(other.source, params, sig)
        if native is not None:
            native_bounds = np.asarray(bounds, np.int64)

            def threaded(args):
                if not eager_kernels.run_native(native, native_bounds, args, site.seconds[1]):
                    fn(*args)
        else:
            try:
                part, _ = diskcache.load_kernel(other.source,
                                                (numba.int64, numba.int64) + tuple(sig))
            except diskcache.KernelCompileError:
                return None, None

            def threaded(args):
                eager_kernels.run_parts(lambda lo, hi: part(lo, hi, *args), bounds)
        site = self.thread_sites[id(step)] = gemm_sites.GemmSite()
        eager_kernels.start_helpers()
        return threaded, site

    def _host(self, eqn, template):
        prim, params = eqn.primitive, eqn.params
        compiled_control_flow = host_control_flow(prim.name, params)
        if compiled_control_flow is not None:
            self._control_flow[id(eqn)] = compiled_control_flow
        if _dot_of_vars(eqn):
            return self._dot(eqn, template)
        kernel = registry.kernel_lowerings.get(prim)
        if kernel is not None and kernel[0] == "gemm" and compiled_control_flow is None:
            return self._gemm_form(eqn, kernel[1], template)
        if _is_dot(eqn):
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
        dot = _DotStep.of(eqn)
        ls, rs, os_ = self._slot(lhs, template), self._slot(rhs, template), self._slot(out, template)
        transposed = out in self._layout
        shape, dt = (dot.mat_shape[::-1] if transposed else dot.mat_shape), dot.dtype
        pool = self._pool
        pooled = _BufferPool.worth_pooling(shape, dt)
        product = dot.transposed_into if transposed else dot

        def run(env):
            buf = pool.get(os_, shape, dt) if pooled else np.empty(shape, dt)
            env[os_] = product(env[ls], env[rs], buf)

        return run

    def _gemm_form(self, eqn, form_of, template):
        """A primitive computed as one GEMM (a convolution, registry's ("gemm", form_of)):
        `form_of` gathers its first matrix into a pooled scratch buffer and returns (a, b,
        finish, blocks), the product runs on this step's BLAS call site into a pooled buffer,
        and `finish` makes it the output (`GemmForm.whole`); a form with `blocks` runs them
        over the cores instead where that gives the same bits (conv_blocks.image_blocks: a
        forward convolution's gather is deferred to its blocks, and made whole first where they
        do not run); where form_of returns None the impl runs."""
        prim, params = eqn.primitive, eqn.params
        getters = [(None, np.asarray(v.val, v.aval.dtype)) if type(v) is Literal
                   else (self._slot(v, template), None) for v in eqn.invars]
        os_, dt = self._slot(eqn.outvars[0], template), np.dtype(eqn.outvars[0].aval.dtype)
        pool, site = self._pool, gemm_sites.GemmSite()
        scratch_key = ("gemm scratch", os_)

        def buffer(key, shape, dtype):
            nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
            return pool.get(key, shape, dtype) \
                if _POOL_MIN_BYTES <= nbytes <= _SCRATCH_MAX_BYTES else np.empty(shape, dtype)

        def scratch(shape, dtype):
            return buffer(scratch_key, shape, dtype)

        gathers_slot = self._slot(("conv gathers",), template)

        def gathered(env):
            """A form's gathered matrix, made once per call of the program for each source
            array and geometry: a kernel gradient reads its forward convolution's. Entries
            hold their source array, so its memory is not another array's while they live
            (they die with the call's env)."""
            def get(src, shape, dtype, args, fill):
                cache = env[gathers_slot]
                if cache is None:
                    cache = env[gathers_slot] = {}
                key = (src.__array_interface__["data"][0], src.shape, src.strides,
                       tuple(shape), np.dtype(dtype).str, tuple(args))
                hit = cache.get(key)
                if hit is not None and hit[0].dtype == src.dtype:
                    return hit[1]
                buf = fill()
                for k in [k for k, (_, b) in cache.items() if b is buf]:
                    del cache[k]            # that buffer holds this gather now
                cache[key] = (src, buf)
                return buf
            return get

        def product(a, b):
            buf = buffer(os_, (a.shape[0], b.shape[1]), a.dtype)
            blas.matmul(a, b, buf, site)
            return buf

        def run(env):
            args = [env[s] if s is not None else c for s, c in getters]
            form = form_of(*args, scratch, gathered=gathered(env), defer=True, **params)
            if form is None:
                out = to_numpy(prim.impl(*args, **params))
            else:
                out = None if form.blocks is None else \
                    conv_blocks.image_blocks(form, lambda shape, dtype: buffer(os_, shape, dtype))
                if out is None:
                    out = form.whole(product)
            env[os_] = out if out.dtype == dt else out.astype(dt)

        return run

    def _accumulate(self, dot_eqn, w, scale, sign, out, template):
        """out = w + sign * scale * dot_eqn's product as one BLAS call accumulating into w's
        buffer when the call owns it (a donation), else into a copy of w."""
        lhs, rhs = dot_eqn.invars
        dot = _DotStep.of(dot_eqn)
        ls, rs = self._slot(lhs, template), self._slot(rhs, template)
        ws, own, os_ = self._slot(w, template), self._owned[w], self._slot(out, template)
        shape, dt = out.aval.shape, np.dtype(out.aval.dtype)
        pool, pooled = self._pool, _BufferPool.worth_pooling(shape, dt)
        if scale is None or type(scale) is Literal:
            const, scale_slot = sign * (1.0 if scale is None else float(scale.val)), None
        else:
            const, scale_slot = None, self._slot(scale, template)
        m, n = dot.m, dot.n

        def run(env):
            c = env[ws]
            if not env[own]:
                w = c
                c = pool.get(os_, shape, dt) if pooled else np.empty(shape, dt)
                np.copyto(c, w)
            a, b = dot.matrices(env[ls], env[rs])
            alpha = const if scale_slot is None else sign * float(env[scale_slot])
            blas.accumulate(a, b, c.reshape(m, n), alpha, dot.site)
            env[os_] = c

        return run

    def _group_on_host(self, group: FusedGroup, template):
        """A group the code generator cannot lower, evaluated equation by equation; its
        results are copied into buffers of their own, as its kernel would have written them
        (NumPy impls may return views of their operands: `_writes_fresh`)."""
        virt = [(self._slot(a, template), vv, self._slot(vv.src, template)
                 if type(vv.src) is Var else None)
                for a, vv in group.inputs.items() if isinstance(vv, Virtual)]
        eqns = list(group.eqns) + ([group.reduction] if group.reduction is not None else [])
        runs = [self._host(e, template) for e in eqns]
        outs = [(self._slot(v, template), "F" if v in self._layout else "C")
                for v in group.outputs]

        def run(env):
            for s, vv, base in virt:
                env[s] = _materialize_virtual(vv, env[base] if base is not None else None)
            for r in runs:
                r(env)
            for s, order in outs:
                env[s] = np.array(env[s], order=order)

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
            # (no local name for the buffer: it would hold a donated one beyond the donation)
            env[s] = x._value if type(x) is Array else to_numpy(x)
            if type(env[s]) is _Deleted:
                raise env[s].error()
        for i, s, own, deleted in self._donations:
            x = args[i]
            if type(x) is Array:
                # Array.delete (live, as the loop above checked): it no longer holds its
                # buffer, so the program may own it now
                x._value = deleted
                if own is not None:
                    env[own] = _take_donated(env, s)
        for step in self._program:
            step(env)
        outs = [Array(env[s] if s is not None else c, w)
                for (s, c), w in zip(self._outs, self.out_weak)]
        if _NanChecks.enabled:
            self._check_nans(outs, args)
        return outs

    def _check_nans(self, outs, args):
        for o in outs:
            kind = _NanChecks.bad(o._value)
            if kind is not None:
                from corejax.compiler.reference import find_nan_source
                find_nan_source(self.closed, args)
                raise FloatingPointError(f"invalid value ({kind}) encountered in the output "
                                         "of a jitted function")

    def as_text(self) -> str:
        lines = ["# passes: " + ", ".join(n for n, _ in PASSES), "# optimized IR:",
                 str(self.optimized), "# execution plan:"]
        kernel_of = {id(step): (plan, key) for step, plan, key in self.kernels}
        loop_sources = []
        for i, step in enumerate(self.steps):
            if id(step) in self._fused:
                fused = self._fused[id(step)]
                if fused is None:
                    lines.append(f"step {i}: host step dot_general [fused into the gemm of the "
                                 "update it feeds]")
                else:
                    dot, w, scale, sign = fused
                    lines.append(f"step {i}: host step gemm [BLAS, beta=1: accumulates "
                                 f"{'-' if sign < 0 else ''}{1 if scale is None else scale}"
                                 " * dot_general into the "
                                 f"donated {w.aval.str_short()} input, in place] {step!r}")
                continue
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
                outs = " ".join(f"{v.aval.str_short()}" +
                                (" (stored transposed)" if v in self._layout else "")
                                for v in step.eqn.outvars)
                lines.append(f"step {i}: host step {name} [{kind}] -> {outs}")
            elif id(step) in kernel_of:
                plan, key = kernel_of[id(step)]
                into = [f"{o.aval.str_short()} into the buffer of its "
                        f"{'donated input' if w in self._owned else 'dying operand'}"
                        for o, w in self._in_place.get(id(step), {}).items()
                        if o in plan.written]
                order = " column by column" if id(step) in self._order else ""
                lines.append(f"step {i}: fused kernel k_{key} over {step.shape}{order} "
                             f"(loop sizes {plan.sizes}): {step!r}"
                             + "".join(f" [in place: {t}]" for t in into))
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

