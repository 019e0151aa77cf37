"""The CUDA backend's layout steps and reductions along one axis: broadcasts, transposes,
reshapes, reversals, slices (static and dynamic), updates, concatenation, padding, iota,
argmax / argmin, cumulative sums, top_k and sort, each a kernel of compiler/cuda_kernels.py.
A mixin of CudaExecutable (compiler/cuda.py), whose slots, kernels and buffers they use: each
`_k_<primitive>(eqn)` returns the step's run(env), or None for the host fallback."""
from __future__ import annotations

import numpy as np

from corejax.core import Literal
from corejax.compiler import cuda_kernels as K

__all__ = ["LayoutSteps"]


def _cuda():
    from numba import cuda
    return cuda


def _size(shape) -> int:
    return int(np.prod(shape, dtype=np.int64))


def _cstrides(shape) -> list[int]:
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= n
    return out[::-1]


class LayoutSteps:
    # --- layout kernels ------------------------------------------------------------------

    def _copy_step(self, label, src_slot, dst_slot, out_aval, shape, sstrides, soff,
                   dyn=None):
        """A step running the strided copy kernel into a fresh output buffer."""
        rank = max(1, len(shape))
        shape, sstrides = list(shape) or [1], list(sstrides) or [0]
        dstrides = _cstrides(shape)
        dt = np.dtype(out_aval.dtype)
        src = K.copy_source(rank, dt, dyn_src=dyn is not None)
        total = _size(shape)
        scal = [total, soff, 0] + shape + sstrides + dstrides
        launch = self._kernel(label, src, self._types(src_slot, None, dt, len(scal), dyn))
        grid = K.grid_for(total)
        alloc = self._alloc

        def run(env):
            out = env[dst_slot] = alloc(out_aval, dst_slot)
            args = [env[src_slot], out] + scal
            if dyn is not None:
                args += [env[q] for q in dyn[0]] + list(dyn[1])
            launch(grid, K.BLOCK, *args)
        return run

    def _types(self, src_slot, _unused, dt, nscal, dyn):
        from numba import types, from_dtype
        arr = lambda d: types.Array(from_dtype(np.dtype(d)), 1, "C")
        src_dt = self._dtype_of_slot(src_slot)
        ts = [arr(src_dt), arr(dt)] + [types.int64] * nscal
        if dyn is not None:
            ts += [arr(self._dtype_of_slot(q)) for q in dyn[0]] + [types.int64] * len(dyn[1])
        return ts

    def _dtype_of_slot(self, slot):
        for v, s in self._slots.items():
            if s == slot:
                return v.aval.dtype
        return self._host_template[slot].dtype

    def _k_broadcast_in_dim(self, eqn):
        x, out = eqn.invars[0], eqn.outvars[0]
        xs = _cstrides(x.aval.shape)
        bd = eqn.params["broadcast_dimensions"]
        if type(x) is Literal or not x.aval.shape:
            return self._fill(self._atom(x), out)
        strides = [0] * len(out.aval.shape)
        for k, d in enumerate(bd):
            if x.aval.shape[k] != 1:
                strides[d] = xs[k]
        return self._copy_step("broadcast_in_dim", self._slot(x), self._slot(out), out.aval,
                               out.aval.shape, strides, 0)

    def _fill(self, value_slot, out):
        dt = np.dtype(out.aval.dtype)
        src = K.fill_source(dt)
        total = _size(out.aval.shape)
        from numba import types, from_dtype
        launch = self._kernel("fill", src, [types.Array(from_dtype(dt), 1, "C"), types.int64,
                                   types.Array(from_dtype(np.dtype(
                                       self._dtype_of_slot(value_slot))), 1, "C")])
        s_o, alloc = self._slot(out), self._alloc

        def run(env):
            o = env[s_o] = alloc(out.aval, s_o)
            launch(K.grid_for(total), K.BLOCK, o, total, env[value_slot])
        return run

    def _k_transpose(self, eqn):
        x, out = eqn.invars[0], eqn.outvars[0]
        xs = _cstrides(x.aval.shape)
        perm = eqn.params["permutation"]
        return self._copy_step("transpose", self._slot(x), self._slot(out), out.aval,
                               out.aval.shape, [xs[p] for p in perm], 0)

    def _alias(self, eqn):
        x, out = eqn.invars[0], eqn.outvars[0]
        if type(x) is Literal:
            return None
        s_in, s_out = self._slot(x), self._slot(out)

        def run(env):
            env[s_out] = env[s_in]
        return run

    def _k_reshape(self, eqn):
        dims = eqn.params.get("dimensions")
        if dims is None:
            return self._alias(eqn)
        x, out = eqn.invars[0], eqn.outvars[0]
        xs = _cstrides(x.aval.shape)
        return self._copy_step("reshape", self._slot(x), self._slot(out), out.aval,
                               [x.aval.shape[d] for d in dims], [xs[d] for d in dims], 0)

    _k_squeeze = _alias
    _k_expand_dims = _alias
    _k_stop_gradient = _alias

    def _k_rev(self, eqn):
        x, out = eqn.invars[0], eqn.outvars[0]
        xs = _cstrides(x.aval.shape)
        strides, off = list(xs), 0
        for d in eqn.params["dimensions"]:
            strides[d] = -xs[d]
            off += (x.aval.shape[d] - 1) * xs[d] if x.aval.shape[d] else 0
        return self._copy_step("rev", self._slot(x), self._slot(out), out.aval,
                               x.aval.shape, strides, off)

    def _k_slice(self, eqn):
        x, out = eqn.invars[0], eqn.outvars[0]
        xs = _cstrides(x.aval.shape)
        p = eqn.params
        steps = p["strides"] or (1,) * len(xs)
        off = sum(s * st for s, st in zip(p["start_indices"], xs))
        return self._copy_step("slice", self._slot(x), self._slot(out), out.aval,
                               out.aval.shape, [a * b for a, b in zip(xs, steps)], off)

    def _k_dynamic_slice(self, eqn):
        x, *starts = eqn.invars
        out = eqn.outvars[0]
        sizes = eqn.params["slice_sizes"]
        lims = [n - s for n, s in zip(x.aval.shape, sizes)]
        return self._copy_step("dynamic_slice", self._slot(x), self._slot(out), out.aval,
                               out.aval.shape, _cstrides(x.aval.shape), 0,
                               dyn=([self._atom(q) for q in starts], lims))

    def _k_dynamic_update_slice(self, eqn):
        x, upd, *starts = eqn.invars
        out = eqn.outvars[0]
        if type(x) is Literal or type(upd) is Literal:
            return None
        rank = max(1, len(x.aval.shape))
        dt = np.dtype(out.aval.dtype)
        s_x, s_u, s_o = self._slot(x), self._slot(upd), self._slot(out)
        qs = [self._atom(q) for q in starts]
        lims = [n - s for n, s in zip(x.aval.shape, upd.aval.shape)]
        full = K.copy_source(1, dt)
        part = K.copy_source(rank, dt, dyn_dst=True)
        n_x, n_u = _size(x.aval.shape), _size(upd.aval.shape)
        ushape = list(upd.aval.shape) or [1]
        scal = [n_u, 0, 0] + ushape + (_cstrides(upd.aval.shape) or [0]) + \
            (_cstrides(x.aval.shape) or [0])
        from numba import types, from_dtype
        arr = types.Array(from_dtype(dt), 1, "C")
        launch_full = self._kernel("dynamic_update_slice (copy)", full,
                                   [arr, arr] + [types.int64] * 6)
        launch_part = self._kernel("dynamic_update_slice (update)", part,
                     [arr, arr] + [types.int64] * len(scal) +
                     [types.Array(from_dtype(np.dtype(q.aval.dtype)), 1, "C") for q in starts] +
                     [types.int64] * len(lims))
        alloc = self._alloc

        def run(env):
            o = env[s_o] = alloc(out.aval, s_o)
            launch_full(K.grid_for(n_x), K.BLOCK, env[s_x], o, n_x, 0, 0, n_x, 1, 1)
            launch_part(K.grid_for(n_u), K.BLOCK, env[s_u], o, *scal, *[env[q] for q in qs],
                        *lims)
        return run

    def _k_concatenate(self, eqn):
        out = eqn.outvars[0]
        dim = eqn.params["dimension"]
        dt = np.dtype(out.aval.dtype)
        rank = len(out.aval.shape)
        os_ = _cstrides(out.aval.shape)
        pieces, at = [], 0
        from numba import types, from_dtype
        for x in eqn.invars:
            src = K.copy_source(rank, dt)
            n = _size(x.aval.shape)
            scal = [n, 0, at * os_[dim]] + list(x.aval.shape) + _cstrides(x.aval.shape) + os_
            launch = self._kernel("concatenate", src, [types.Array(from_dtype(np.dtype(x.aval.dtype)), 1,
                                                          "C"),
                                              types.Array(from_dtype(dt), 1, "C")] +
                                  [types.int64] * len(scal))
            pieces.append((self._atom(x), launch, n, scal))
            at += x.aval.shape[dim]
        s_o, alloc = self._slot(out), self._alloc

        def run(env):
            o = env[s_o] = alloc(out.aval, s_o)
            for s, launch, n, scal in pieces:
                if n:
                    launch(K.grid_for(n), K.BLOCK, env[s], o, *scal)
        return run

    def _k_pad(self, eqn):
        x, pv = eqn.invars
        out = eqn.outvars[0]
        if type(x) is Literal or not x.aval.shape:
            return None
        cfg = eqn.params["padding_config"]
        rank = len(x.aval.shape)
        dt = np.dtype(out.aval.dtype)
        src = K.pad_source(rank, dt)
        total = _size(out.aval.shape)
        scal = [total] + list(out.aval.shape) + list(x.aval.shape) + [lo for lo, _, _ in cfg] + \
            [i + 1 for _, _, i in cfg]
        from numba import types, from_dtype
        arr = types.Array(from_dtype(dt), 1, "C")
        launch = self._kernel("pad", src, [arr, arr, arr] + [types.int64] * len(scal))
        s_x, s_p, s_o, alloc = self._slot(x), self._atom(pv), self._slot(out), self._alloc

        def run(env):
            o = env[s_o] = alloc(out.aval, s_o)
            launch(K.grid_for(total), K.BLOCK, env[s_x], env[s_p], o, *scal)
        return run

    def _k_iota(self, eqn):
        out = eqn.outvars[0]
        shape, d = out.aval.shape, eqn.params["dimension"]
        dt = np.dtype(out.aval.dtype)
        src = K.iota_source(dt)
        total = _size(shape)
        inner, n = _size(shape[d + 1:]), shape[d]
        from numba import types, from_dtype
        launch = self._kernel("iota", src, [types.Array(from_dtype(dt), 1, "C")] + [types.int64] * 3)
        s_o, alloc = self._slot(out), self._alloc

        def run(env):
            o = env[s_o] = alloc(out.aval, s_o)
            launch(K.grid_for(total), K.BLOCK, o, total, inner, max(n, 1))
        return run

    # --- reductions along an axis -------------------------------------------------------

    def _axis_step(self, label, src, x, out, axis):
        shape = x.aval.shape
        n, inner = shape[axis], _size(shape[axis + 1:])
        total = _size(shape[:axis]) * inner
        from numba import types, from_dtype
        launch = self._kernel(label, src, [types.Array(from_dtype(np.dtype(x.aval.dtype)), 1,
                                                       "C"),
                                  types.Array(from_dtype(np.dtype(out.aval.dtype)), 1, "C")] +
                     [types.int64] * 3)
        s_x, s_o, alloc = self._slot(x), self._slot(out), self._alloc

        def run(env):
            o = env[s_o] = alloc(out.aval, s_o)
            launch(K.grid_for(total), K.BLOCK, env[s_x], o, total, n, inner)
        return run

    def _k_argmax(self, eqn, kind="argmax"):
        x, out = eqn.invars[0], eqn.outvars[0]
        if type(x) is Literal:
            return None
        src = K.argreduce_source(kind, x.aval.dtype, out.aval.dtype)
        return self._axis_step(kind, src, x, out, eqn.params["axes"][0])

    def _k_argmin(self, eqn):
        return self._k_argmax(eqn, "argmin")

    def _k_cumsum(self, eqn):
        x, out = eqn.invars[0], eqn.outvars[0]
        if type(x) is Literal:
            return None
        src = K.cumsum_source(out.aval.dtype, eqn.params["reverse"])
        return self._axis_step("cumsum", src, x, out, eqn.params["axis"])

    def _k_top_k(self, eqn):
        x = eqn.invars[0]
        if type(x) is Literal:
            return None
        k, axis, shape = eqn.params["k"], eqn.params["axis"], x.aval.shape
        n, post, total = shape[axis], _size(shape[axis + 1:]), _size(shape)
        from numba import types, from_dtype
        arr = lambda d: types.Array(from_dtype(np.dtype(d)), 1, "C")
        launch = self._kernel("top_k", K.top_k_source(x.aval.dtype),
                              [arr(x.aval.dtype), arr(x.aval.dtype), arr(np.int32)] +
                              [types.int64] * 4)
        s_x, outs = self._slot(x), [self._slot(v) for v in eqn.outvars]
        avals, alloc = [v.aval for v in eqn.outvars], self._alloc

        def run(env):
            ys = [alloc(a, s) for a, s in zip(avals, outs)]
            for s, y in zip(outs, ys):
                env[s] = y
            if total and k:
                launch(K.grid_for(total), K.BLOCK, env[s_x], *ys, total, n, post, k)
        return run

    def _k_sort(self, eqn):
        """lax.sort as one bitonic-sort kernel, a block per lane (cuda_kernels.sort_plan)."""
        if any(type(v) is Literal for v in eqn.invars):
            return None
        src, lanes, n, post, P = K.sort_plan(eqn)
        from numba import types, from_dtype
        arr = lambda d: types.Array(from_dtype(np.dtype(d)), 1, "C")
        launch = self._kernel("sort", src, [arr(v.aval.dtype) for v in eqn.invars] +
                     [arr(v.aval.dtype) for v in eqn.outvars] + [arr(np.int64)] +
                     [types.int64] * 4)
        ins, outs = [self._slot(v) for v in eqn.invars], [self._slot(v) for v in eqn.outvars]
        avals = [v.aval for v in eqn.outvars]
        alloc, grid = self._alloc, max(1, min(K.MAX_GRID, lanes))

        def run(env):
            ys = [alloc(a, s) for a, s in zip(avals, outs)]
            for s, y in zip(outs, ys):
                env[s] = y
            if lanes and n:
                perm = _cuda().device_array(lanes * P, np.int64)
                launch(grid, K.BLOCK, *[env[s] for s in ins], *ys, perm, lanes, n, post, P)
        return run

