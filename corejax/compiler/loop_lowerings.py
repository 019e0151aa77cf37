"""The nopython lowerings of compiled loops' data steps (compiler/loops.py emits the loop
itself, fused groups and control flow): layout ops as gathers through static index maps,
dynamic slices, gather / scatter, argmax / argmin, cumsum, stable sorts, small dots as loops
and big float ones as the direct BLAS calls NumPy's matmul makes in the executor (gemm, gemv
for vector products, syrk for x @ x.T; per batch element for batched ones), so the bits are the
Python-driven loop's.

Each `lower_<primitive>(eqn, env, lines, ind)` appends source lines to `lines` (indented by
`ind`) computing the equation on flat buffers named in `env`, and binds its outputs there. The
index maps are computed at build time by applying the primitives' own impls (or their layout
rules) to `arange`, so the generated loops move the same elements as the impls, in the same
order of updates.
"""
from __future__ import annotations

import numpy as np

from corejax.core import ShapedArray, Var
from corejax.compiler.scalar_ctx import literal

__all__ = ["DataLowerings", "LayoutLowerings", "DOT_MAX_MACS", "np_name", "size", "copy_lines",
           "executor_matrix"]

# A 64x64 @ 64x64 product. Past this a BLAS call beats the loop matmul: float products call
# what NumPy's matmul calls in the executor (cblas_?gemm / ?gemv / ?syrk, or its own loop for
# outer products) from the compiled loop (DataLowerings._blas_dot); the others (integer ones,
# mixed dtypes, (1, K) @ (K, 1) dots, operands the executor may hold as strided views, one
# buffer aliased through two Vars, ...) keep the loop Python-driven.
DOT_MAX_MACS = 1 << 18


def np_name(dt) -> str:
    dt = np.dtype(dt)
    return "np.bool_" if dt == np.bool_ else f"np.{dt.name}"


def size(shape) -> int:
    return int(np.prod(shape, dtype=np.int64))


def reshaped_view(x, rows, cols):
    """x as a (rows, cols) view where NumPy makes one, else None."""
    try:
        return x.reshape((rows, cols), copy=False)
    except ValueError:              # a copy would be needed
        return None
    except TypeError:               # NumPy < 2.1: no copy= argument
        w = x.reshape(rows, cols)
        return w if x.size == 0 or np.may_share_memory(w, x) else None


def executor_matrix(x, perm, rows, cols):
    """How the executor's unbatched BLAS step hands x (dims in `perm` order) to np.matmul as a
    (rows, cols) matrix (cpu._as_matrices: a reshaped view where NumPy makes one that is C- or
    F-contiguous, else a C copy): (a view of x, read with the transpose flag)."""
    v = reshaped_view(np.transpose(x, perm), rows, cols)
    if v is None:                   # the reshape copies: C
        return False, False
    if v.flags.c_contiguous:
        return True, False
    if v.flags.f_contiguous:
        return True, True
    return False, False


def matmul_source(B, M, N, K, dt, rows: bool) -> str:
    """A kernel computing o[b, m, n] = sum_k a[b, m, k] * c'[b, ...] (flat operands): with
    `rows`, c' is c[b, k, n] and each output row accumulates over k, vectorized along n (for
    narrow outputs); otherwise c' is c[b, n, k] and each output element is one dot product
    over k, vectorized along k (1.3-3.6x faster for n >= 8). Floats may reassociate and
    contract (FMA), as BLAS does; the rounding differs from BLAS's by a few ulps either way."""
    cast = np_name(dt)
    flags = ", fastmath={'reassoc', 'contract'}" if np.dtype(dt).kind == "f" else ""
    if rows:
        loop = [f"            for n in range({N}):",
                f"                o[row * {N} + n] = 0",
                f"            for k in range({K}):",
                f"                s = {cast}(a[row * {K} + k])",
                f"                cb = (b * {K} + k) * {N}",
                f"                for n in range({N}):",
                f"                    o[row * {N} + n] += s * {cast}(c[cb + n])"]
    else:
        loop = [f"            for n in range({N}):",
                f"                acc = {cast}(0)",
                f"                cb = (b * {N} + n) * {K}",
                f"                for k in range({K}):",
                f"                    acc += {cast}(a[row * {K} + k]) * {cast}(c[cb + k])",
                f"                o[row * {N} + n] = acc"]
    return "\n".join([
        "import numpy as np", "from numba import njit", "",
        f"@njit(error_model=\"numpy\", nogil=True, cache=True{flags})",
        "def kernel(a, c, o):", f"    for b in range({B}):", f"        for m in range({M}):",
        f"            row = b * {M} + m", *loop]) + "\n"


def _merge_sort_lines(n, post, compare) -> list:
    """The loop body of a stable bottom-up merge sort of one lane's positions `perm` (lane start
    `base`, stride `post`): `compare` is the lines (at 24 spaces) that set `right = True` when
    the element at flat index `a` (from the right run) must come before the one at `b`."""
    return [
        f"            for i in range({n}):", "                perm[i] = i",
        "            width = 1", f"            while width < {n}:", "                lo = 0",
        f"                while lo < {n}:",
        f"                    mid = min(lo + width, {n})",
        f"                    hi = min(lo + 2 * width, {n})",
        "                    i = lo", "                    j = mid", "                    t = lo",
        "                    while i < mid and j < hi:",
        f"                        a = base + perm[j] * {post}",
        f"                        b = base + perm[i] * {post}",
        "                        right = False", *compare,
        "                        if right:", "                            tmp[t] = perm[j]",
        "                            j += 1", "                        else:",
        "                            tmp[t] = perm[i]", "                            i += 1",
        "                        t += 1",
        "                    while i < mid:", "                        tmp[t] = perm[i]",
        "                        i += 1", "                        t += 1",
        "                    while j < hi:", "                        tmp[t] = perm[j]",
        "                        j += 1", "                        t += 1",
        "                    lo += 2 * width",
        "                perm, tmp = tmp, perm", "                width *= 2"]


def _lanes_header(n, pre, post, signature) -> list:
    return ["import numpy as np", "from numba import njit", "",
            "@njit(error_model=\"numpy\", nogil=True, cache=True)", f"def kernel({signature}):",
            f"    perm = np.empty({n}, np.int64)", f"    tmp = np.empty({n}, np.int64)",
            f"    for p in range({pre}):", f"        for r in range({post}):",
            f"            base = p * {n * post} + r"]


def sort_source(pre, n, post, key_dtypes, n_operands) -> str:
    """A stable bottom-up merge sort of every lane (pre, ., post) by the first keys,
    lexicographically, NaN after every number (np.argsort / np.lexsort's order, and with
    stability the same permutation), applied to every operand."""
    xs = [f"x{i}" for i in range(n_operands)]
    ys = [f"y{i}" for i in range(n_operands)]

    def less(u, v, dt):
        nan = f" or ({u} == {u} and {v} != {v})" if np.dtype(dt).kind == "f" else ""
        return f"{u} < {v}{nan}"

    compare, ind = [], " " * 24
    for k, dt in enumerate(key_dtypes):
        compare += [f"{ind}u = x{k}[a]", f"{ind}v = x{k}[b]",
                    f"{ind}if {less('u', 'v', dt)}:", f"{ind}    right = True"]
        if k + 1 < len(key_dtypes):
            compare += [f"{ind}elif not ({less('v', 'u', dt)}):"]
            ind += "    "
    return "\n".join([
        *_lanes_header(n, pre, post, ", ".join(xs + ys)),
        *_merge_sort_lines(n, post, compare),
        f"            for i in range({n}):",
        f"                src = base + perm[i] * {post}",
        f"                dst = base + i * {post}",
        *[f"                y{i}[dst] = x{i}[src]" for i in range(n_operands)]]) + "\n"


def top_k_source(pre, n, post, k, dtype) -> str:
    """lax.top_k along the middle axis of a (pre, n, post) operand: a stable merge sort of each
    lane, descending in IEEE's total order (top_k's impl: NaN first, +0.0 before -0.0, ties
    by position), of which the first k are written out with their positions."""
    dt = np.dtype(dtype)
    if dt.kind == "f":   # the total order's integer key (lax/total_order.py), from the bits
        signed = np.dtype(f"int{dt.itemsize * 8}")
        flip = f"{np_name(signed)}({np.iinfo(signed).max})"
        keys = [f"    bits = np.ascontiguousarray(x).view({np_name(signed)})",
                f"    keys = np.where(bits < 0, bits ^ {flip}, bits)"]
    else:
        keys = ["    keys = x"]
    header = _lanes_header(n, pre, post, "x, values, indices")
    compare = [" " * 24 + "right = keys[a] > keys[b]"]
    return "\n".join([
        *header[:6], *keys, *header[6:],
        *_merge_sort_lines(n, post, compare),
        f"            for i in range({k}):",
        f"                dst = p * {k * post} + i * {post} + r",
        f"                values[dst] = x[base + perm[i] * {post}]",
        "                indices[dst] = perm[i]"]) + "\n"


def copy_lines(dst, src, n, ind) -> list:
    if n == 1:
        return [f"{ind}{dst}[0] = {src}[0]"]
    return [f"{ind}{dst}[:] = {src}"]


class LayoutLowerings:
    """Layout steps as gathers through index maps computed at build time, shared by the CPU
    loop emitter (serial loops, the defaults here) and the CUDA one (compiler/cuda_loops.py:
    grid-stride loops over the block's threads, a barrier after each step), which override
    the loop flavour: `each`, `barrier`, `copy`, `clamp`. Needs `self.m` (alloc, index_map,
    fresh), `self.buffer`, `self.scalar` and `self.in_place`."""

    def each(self, n, ind):
        """(header lines, element index name) of a loop over n elements."""
        q = self.m.fresh("q")
        return [f"{ind}for {q} in range({n}):"], q

    def barrier(self, ind) -> list:
        return []

    def copy(self, dst, src, n, ind) -> list:
        return copy_lines(dst, src, n, ind)

    def clamp(self, name, value, hi, ind) -> list:
        """`name` = int(value) clamped into [0, hi]."""
        return [f"{ind}{name} = min(max(int({value}), 0), {hi})"]

    def _loop(self, n, body, ind) -> list:
        """A loop over n elements whose body lines `body(q)` use the element index q."""
        head, q = self.each(n, ind)
        return head + [f"{ind}    {line}" for line in body(q)]

    def _runs(self, dst, src, ind):
        """Lines copying `src` positions to `dst` positions (flat index arrays of one length)
        as slice copies, where both are R runs of L consecutive elements at constant strides
        (a slice, a pad, a block of a concatenation; serial loops only), else None: an index
        map read per element costs more than the elements it moves."""
        if self.each.__func__ is not LayoutLowerings.each or dst.size < 2:
            return None
        breaks = np.nonzero((np.diff(src) != 1) | (np.diff(dst) != 1))[0]
        L = int(breaks[0]) + 1 if breaks.size else dst.size
        if dst.size % L or L < 8:
            return None
        R = dst.size // L
        r = np.arange(R)[:, None]
        j = np.arange(L)[None, :]
        ds = int(dst[L] - dst[0]) if R > 1 else 0
        ss = int(src[L] - src[0]) if R > 1 else 0
        if not (np.array_equal(dst.reshape(R, L), dst[0] + ds * r + j) and
                np.array_equal(src.reshape(R, L), src[0] + ss * r + j)):
            return None
        d0, s0 = int(dst[0]), int(src[0])
        return lambda o, x: self._run_lines(o, x, R, L, d0, ds, s0, ss, ind)

    def _run_lines(self, o, x, R, L, d0, ds, s0, ss, ind):
        if R == 1:
            return [f"{ind}{o}[{d0}:{d0 + L}] = {x}[{s0}:{s0 + L}]"]
        r = self.m.fresh("r")
        return [f"{ind}for {r} in range({R}):",
                f"{ind}    {o}[{d0} + {r} * {ds}:{d0 + L} + {r} * {ds}] = "
                f"{x}[{s0} + {r} * {ss}:{s0 + L} + {r} * {ss}]"]

    def _static_gather(self, eqn, env, lines, ind):
        x, out = eqn.invars[0], eqn.outvars[0]
        src = self.buffer(x, env)
        if eqn.primitive.name == "squeeze" or (eqn.primitive.name == "reshape"
                                               and eqn.params["dimensions"] is None):
            env[out] = src                      # the same elements in the same order
            return
        idx = np.asarray(eqn.primitive.impl(np.arange(size(x.aval.shape)).reshape(x.aval.shape),
                                            **eqn.params)).reshape(-1)
        if np.array_equal(idx, np.arange(size(x.aval.shape))):
            env[out] = src                      # same elements in the same order: an alias
            return
        runs = self._runs(np.arange(idx.size), idx, ind)
        if runs is not None:
            o = self.m.alloc(out.aval)
            lines += runs(o, src)
            env[out] = o
            return
        o, m = self.m.alloc(out.aval), self.m.index_map(idx)
        lines += self._loop(idx.size, lambda q: [f"{o}[{q}] = {src}[{m}[{q}]]"], ind)
        lines += self.barrier(ind)
        env[out] = o

    lower_broadcast_in_dim = lower_transpose = lower_reshape = lower_squeeze = \
        lower_slice = lower_rev = _static_gather

    def lower_split(self, eqn, env, lines, ind):
        x = eqn.invars[0]
        src, n = self.buffer(x, env), size(x.aval.shape)
        pieces = eqn.primitive.impl(np.arange(n).reshape(x.aval.shape), **eqn.params)
        for out, idx in zip(eqn.outvars, pieces):
            idx = np.asarray(idx).reshape(-1)
            o, m = self.m.alloc(out.aval), self.m.index_map(idx)
            lines += self._loop(idx.size, lambda q: [f"{o}[{q}] = {src}[{m}[{q}]]"], ind)
            env[out] = o
        lines += self.barrier(ind)

    def lower_pad(self, eqn, env, lines, ind):
        x, pv = eqn.invars
        out = eqn.outvars[0]
        idx = np.asarray(eqn.primitive.impl(np.arange(size(x.aval.shape)).reshape(x.aval.shape),
                                            np.int64(-1), **eqn.params)).reshape(-1)
        dst = np.nonzero(idx >= 0)[0]
        runs = self._runs(dst, idx[dst], ind) if dst.size else None
        if runs is not None:
            src, o = self.buffer(x, env), self.m.alloc(out.aval)
            lines.append(f"{ind}{o}[:] = {self.scalar(pv, env)}")
            lines += runs(o, src)
            env[out] = o
            return
        src, o, m = self.buffer(x, env), self.m.alloc(out.aval), self.m.index_map(idx)
        j, fill = self.m.fresh("j"), self.scalar(pv, env)
        lines += self._loop(idx.size, lambda q: [f"{j} = {m}[{q}]",
                                                 f"{o}[{q}] = {src}[{j}] if {j} >= 0 else {fill}"],
                            ind)
        lines += self.barrier(ind)
        env[out] = o

    def lower_concatenate(self, eqn, env, lines, ind):
        out, axis = eqn.outvars[0], eqn.params["dimension"]
        tags = np.concatenate([np.full(v.aval.shape, k) for k, v in enumerate(eqn.invars)],
                              axis).reshape(-1)
        pos = np.concatenate([np.arange(size(v.aval.shape)).reshape(v.aval.shape)
                              for v in eqn.invars], axis).reshape(-1)
        o = self.m.alloc(out.aval)
        for k, v in enumerate(eqn.invars):
            dst = np.nonzero(tags == k)[0]
            if dst.size == 0:
                continue
            runs = self._runs(dst, pos[dst], ind)
            if runs is not None:
                lines += runs(o, self.buffer(v, env))
                continue
            src, d, s = self.buffer(v, env), self.m.index_map(dst), self.m.index_map(pos[dst])
            lines += self._loop(dst.size, lambda q: [f"{o}[{d}[{q}]] = {src}[{s}[{q}]]"], ind)
        lines += self.barrier(ind)
        env[out] = o

    def _window(self, x_aval, sizes, starts, env, lines, ind):
        """The flat offset of a clamped dynamic window, and the window's index map from it."""
        from corejax.lax.indexing import _window_offsets
        shape = x_aval.shape
        strides = [size(shape[d + 1:]) for d in range(len(shape))]
        off = self.m.fresh("off")
        lines.append(f"{ind}{off} = 0")
        for d, s in enumerate(starts):
            if shape[d] == sizes[d]:
                continue                # the start clamps to 0
            st = self.m.fresh("st")
            lines += self.clamp(st, self.scalar(s, env), shape[d] - sizes[d], ind)
            lines.append(f"{ind}{off} += {st} * {strides[d]}")
        return off, _window_offsets(shape, sizes)

    def lower_dynamic_slice(self, eqn, env, lines, ind):
        x, *starts = eqn.invars
        out = eqn.outvars[0]
        off, rel = self._window(x.aval, eqn.params["slice_sizes"], starts, env, lines, ind)
        src, o, m = self.buffer(x, env), self.m.alloc(out.aval), self.m.index_map(rel)
        lines += self._loop(rel.size, lambda q: [f"{o}[{q}] = {src}[{off} + {m}[{q}]]"], ind)
        lines += self.barrier(ind)
        env[out] = o

    def lower_dynamic_update_slice(self, eqn, env, lines, ind):
        x, upd, *starts = eqn.invars
        out = eqn.outvars[0]
        off, rel = self._window(x.aval, upd.aval.shape, starts, env, lines, ind)
        o, m = self.updated_copy(eqn, env, lines, ind), self.m.index_map(rel)
        u = self.buffer(upd, env)
        lines += self.barrier(ind)
        lines += self._loop(rel.size, lambda q: [f"{o}[{off} + {m}[{q}]] = {u}[{q}]"], ind)
        lines += self.barrier(ind)
        env[out] = o

    def updated_copy(self, eqn, env, lines, ind) -> str:
        """The buffer an update of operand 0 writes: that operand's own where it is a dead
        carry (an in-place update), else a copy of it."""
        x = eqn.invars[0]
        if id(eqn) in self.in_place:
            return env[x]
        o = self.m.alloc(eqn.outvars[0].aval)
        lines += self.copy(o, self.buffer(x, env), size(x.aval.shape), ind)
        return o


class DataLowerings(LayoutLowerings):
    """The CPU loop emitter's lowerings: the layout steps, then scatters, gathers, argmax /
    argmin, cumsum, sorts and dots. Needs also `self.host`, `self.unsupported`,
    `self.executor_root` (whether, and as which memory, the Python-driven loop's executor
    surely holds a value as a C array) and `self.blas_operands` (compiler/loops.py)."""

    # --- scatter, argmax / argmin ------------------------------------------------------------

    def window_starts(self, shape, window, indices, index_dims, batching, env, lines, ind,
                      check):
        """Opens the loop over windows: each one's flat start `off` in the operand, clamped
        into range, and whether it was wholly inside (`ok`, under `check`); a batching dim's
        start is the window's own coordinate along its indices batch dim (`batching`: pairs
        of operand dim, indices dim). Returns (window counter, off, ok, lines' indent)."""
        from corejax.lax.indexing import _window_bases
        batch = indices.aval.shape[:-1]
        n, n_idx = size(batch), indices.aval.shape[-1]
        strides = [size(shape[d + 1:]) for d in range(len(shape))]
        base = _window_bases(shape, batch, batching)
        idx = self.buffer(indices, env)
        j, st, off, ok = (self.m.fresh(c) for c in ("j", "st", "off", "ok"))
        start = f"{self.m.index_map(base)}[{j}]" if batching else "0"
        lines += [f"{ind}for {j} in range({n}):", f"{ind}    {off} = {start}",
                  f"{ind}    {ok} = True"]
        for k, d in enumerate(index_dims):
            hi = shape[d] - window[d]
            lines.append(f"{ind}    {st} = int({idx}[{j} * {n_idx} + {k}])")
            if check:
                lines.append(f"{ind}    {ok} = {ok} and 0 <= {st} <= {hi}")
            lines.append(f"{ind}    {off} += min(max({st}, 0), {hi}) * {strides[d]}")
        return j, off, ok, ind + "    "

    def lower_scatter(self, eqn, env, lines, ind):
        """Each update window, in order, lands at its start (clamped under CLIP, dropped when
        not wholly inside otherwise), as the impl does."""
        operand, indices, updates = eqn.invars
        dn, out = eqn.params["dimension_numbers"], eqn.outvars[0]
        combine = {"scatter": "{u}", "scatter-add": "{o} + {u}", "scatter-mul": "{o} * {u}"}
        shape = operand.aval.shape
        if not shape or eqn.primitive.name not in combine:
            self.host(eqn, eqn.primitive.impl, env, lines, ind)
            return
        from corejax.lax.indexing import (GatherScatterMode, _scatter_update_perm,
                                          _scatter_window, _window_offsets)
        window = _scatter_window(dn, len(shape), updates.aval.shape)
        upd_order = np.transpose(np.arange(size(updates.aval.shape)).reshape(updates.aval.shape),
                                 _scatter_update_perm(dn, updates.aval.ndim)).reshape(-1)
        rel = _window_offsets(shape, window)
        upd = self.buffer(updates, env)
        um, rm, q = self.m.index_map(upd_order), self.m.index_map(rel), self.m.fresh("q")
        cast = np_name(out.aval.dtype)
        o = self.updated_copy(eqn, env, lines, ind)
        j, off, ok, inner = self.window_starts(
            shape, window, indices, dn.scatter_dims_to_operand_dims,
            list(zip(dn.operand_batching_dims, dn.scatter_indices_batching_dims)), env, lines,
            ind, check=eqn.params["mode"] is not GatherScatterMode.CLIP)
        value = combine[eqn.primitive.name].format(o=f"{o}[{off} + {rm}[{q}]]",
                                                   u=f"{upd}[{um}[{j} * {rel.size} + {q}]]")
        lines += [f"{inner}if {ok}:", f"{inner}    for {q} in range({rel.size}):",
                  f"{inner}        {o}[{off} + {rm}[{q}]] = {cast}({value})"]
        env[out] = o

    def lower_gather(self, eqn, env, lines, ind):
        """Each window's clamped start (a window not wholly inside reads the fill value under
        FILL_OR_DROP), then every output element through static maps to (window, element of
        the window), laid out as the impl does."""
        operand, indices = eqn.invars
        dn, out, sizes = eqn.params["dimension_numbers"], eqn.outvars[0], eqn.params["slice_sizes"]
        shape = operand.aval.shape
        if not shape:
            self.host(eqn, eqn.primitive.impl, env, lines, ind)
            return
        from corejax.lax.indexing import GatherScatterMode, _default_fill, _window_offsets
        batch = indices.aval.shape[:-1]
        n, w = size(batch), size(sizes)
        # where each output element comes from: the impl's own layout steps applied to ids
        ids = np.arange(n * w).reshape((n,) + tuple(sizes))
        dropped = set(dn.collapsed_slice_dims) | set(dn.operand_batching_dims)
        kept = tuple(k for d, k in enumerate(sizes) if d not in dropped)
        ids = ids.reshape(batch + kept)
        rank = len(batch) + len(kept)
        positions = [p for p in range(rank) if p not in dn.offset_dims]
        ids = np.transpose(ids, [len(batch) + dn.offset_dims.index(p) if p in dn.offset_dims
                                 else positions.index(p) for p in range(rank)]).reshape(-1)
        rel = _window_offsets(shape, sizes)
        fill = eqn.params["fill_value"]
        fill = literal(_default_fill(out.aval.dtype) if fill is None else fill, out.aval.dtype)
        src = self.buffer(operand, env)
        offs = self.m.alloc(ShapedArray((n,), np.int64))
        wm, qm = self.m.index_map(ids // w), self.m.index_map(rel[ids % w])
        o, p = self.m.alloc(out.aval), self.m.fresh("p")
        j, off, ok, inner = self.window_starts(
            shape, sizes, indices, dn.start_index_map,
            list(zip(dn.operand_batching_dims, dn.start_indices_batching_dims)), env, lines,
            ind, check=eqn.params["mode"] is GatherScatterMode.FILL_OR_DROP)
        lines += [f"{inner}{offs}[{j}] = {off} if {ok} else -1",
                  f"{ind}for {p} in range({ids.size}):",
                  f"{ind}    {off} = {offs}[{wm}[{p}]]",
                  f"{ind}    {o}[{p}] = {src}[{off} + {qm}[{p}]] if {off} >= 0 else {fill}"]
        env[out] = o

    def lower_argmax(self, eqn, env, lines, ind, better="{v} > {b}"):
        """The first index of the extreme along the axis; a NaN beats any number (np.argmax)."""
        x, out = eqn.invars[0], eqn.outvars[0]
        (axis,) = eqn.params["axes"]
        shape = x.aval.shape
        pre, n, post = size(shape[:axis]), shape[axis], size(shape[axis + 1:])
        if x.aval.dtype.kind == "f":
            better = f"({better}) or ({{v}} != {{v}} and {{b}} == {{b}})"
        src, o = self.buffer(x, env), self.m.alloc(out.aval)
        p, r, k, b, bi, v = (self.m.fresh(c) for c in ("p", "r", "k", "best", "bi", "v"))
        cond = better.format(v=v, b=b)
        lines += [f"{ind}for {p} in range({pre}):", f"{ind}    for {r} in range({post}):",
                  f"{ind}        {b} = {src}[{p} * {n * post} + {r}]", f"{ind}        {bi} = 0",
                  f"{ind}        for {k} in range(1, {n}):",
                  f"{ind}            {v} = {src}[{p} * {n * post} + {k} * {post} + {r}]",
                  f"{ind}            if {cond}:", f"{ind}                {b} = {v}",
                  f"{ind}                {bi} = {k}",
                  f"{ind}        {o}[{p} * {post} + {r}] = {bi}"]
        env[out] = o

    def lower_argmin(self, eqn, env, lines, ind):
        self.lower_argmax(eqn, env, lines, ind, better="{v} < {b}")

    lower_scatter_add = lower_scatter_mul = lower_scatter

    def lower_sort(self, eqn, env, lines, ind):
        dim, num_keys = eqn.params["dimension"], eqn.params["num_keys"]
        if not eqn.params["is_stable"]:     # numpy's quicksort orders ties its own way
            self.host(eqn, eqn.primitive.impl, env, lines, ind)
            return
        shape = eqn.invars[0].aval.shape
        fn = self.m.kernel(sort_source(size(shape[:dim]), shape[dim], size(shape[dim + 1:]),
                                       [v.aval.dtype for v in eqn.invars[:num_keys]],
                                       len(eqn.invars)))
        outs = [self.m.alloc(v.aval) for v in eqn.outvars]
        lines.append(f"{ind}{fn}({', '.join([self.buffer(v, env) for v in eqn.invars] + outs)})")
        env.update(zip(eqn.outvars, outs))

    def lower_top_k(self, eqn, env, lines, ind):
        x, k, axis = eqn.invars[0], eqn.params["k"], eqn.params["axis"]
        shape = x.aval.shape
        fn = self.m.kernel(top_k_source(size(shape[:axis]), shape[axis], size(shape[axis + 1:]),
                                        k, x.aval.dtype))
        outs = [self.m.alloc(v.aval) for v in eqn.outvars]
        lines.append(f"{ind}{fn}({', '.join([self.buffer(x, env)] + outs)})")
        env.update(zip(eqn.outvars, outs))

    def lower_cumsum(self, eqn, env, lines, ind):
        """A running sum along the axis in the operand's dtype, element after element (as
        np.cumsum adds)."""
        x, out = eqn.invars[0], eqn.outvars[0]
        axis, shape = eqn.params["axis"], x.aval.shape
        pre, n, post = size(shape[:axis]), shape[axis], size(shape[axis + 1:])
        cast = np_name(out.aval.dtype)
        src, o = self.buffer(x, env), self.m.alloc(out.aval)
        p, r, k, acc, at = (self.m.fresh(c) for c in ("p", "r", "k", "acc", "at"))
        order = f"range({n} - 1, -1, -1)" if eqn.params["reverse"] else f"range({n})"
        lines += [f"{ind}for {p} in range({pre}):", f"{ind}    for {r} in range({post}):",
                  f"{ind}        {acc} = {cast}(0)", f"{ind}        for {k} in {order}:",
                  f"{ind}            {at} = {p} * {n * post} + {k} * {post} + {r}",
                  f"{ind}            {acc} = {cast}({acc} + {src}[{at}])",
                  f"{ind}            {o}[{at}] = {acc}"]
        env[out] = o

    # --- dot ---------------------------------------------------------------------------------

    def _as_matrices(self, x, perm, env, lines, ind):
        """x's elements in the order of dims `perm` (batch, rows, cols)."""
        src = self.buffer(x, env)
        idx = np.transpose(np.arange(size(x.aval.shape)).reshape(x.aval.shape), perm).reshape(-1)
        if np.array_equal(idx, np.arange(idx.size)):
            return src
        o = self.m.alloc(x.aval)
        m, q = self.m.index_map(idx), self.m.fresh("q")
        lines += [f"{ind}for {q} in range({idx.size}):", f"{ind}    {o}[{q}] = {src}[{m}[{q}]]"]
        return o

    def _executor_layout(self, x, rows, cols, env, lines, ind):
        """(buffer, transposed) of x as the (rows, cols) matrix the executor's unbatched BLAS
        step hands np.matmul (`executor_matrix` of a C array of x's shape): x's own buffer,
        read as it is (transposed: stored (cols, rows)), or a C-ordered copy (_as_matrices)."""
        shape, perm = x.aval.shape, tuple(rows) + tuple(cols)
        R, C = size([shape[d] for d in rows]), size([shape[d] for d in cols])
        view, transposed = executor_matrix(np.empty(shape, np.uint8), perm, R, C)
        if view:
            return self.buffer(x, env), transposed
        return self._as_matrices(x, perm, env, lines, ind), False

    def _blas_dot(self, eqn, dims, sizes, env, lines, ind):
        """A BLAS-sized float product as the executor's BLAS step computes it (np.matmul; for
        an unbatched product through blas.matmul), for the same bits, by calling what NumPy's
        matmul calls (numpy/_core/src/umath/matmul.c.src) on the address of the OpenBLAS NumPy
        uses (kernel_lib.call_gemm / call_gemv / call_syrk), with the same arguments:

        - unbatched: split over the reduction exactly as blas.matmul splits it (blas.plan_for),
          the operands read in place with the transpose flag (or the storage order, for gemv)
          where the executor's np.matmul reads a transposed view; a matrix product calls
          cblas_?gemm, or, for x @ x.T and x.T @ x (one buffer read both ways), cblas_?syrk
          (upper triangle) and copies the triangle; a vector product (M or N == 1) calls
          cblas_?gemv;
        - batched: per batch element, in order, on OpenBLAS's threads, of C-ordered
          (b, m, k) @ (b, k, n) operands: cblas_?gemm (NoTrans both), or cblas_?gemv for
          vector products;
        - K == 1 (an outer product): NumPy's own loop, o = 0 + a * c (no BLAS).

        Returns None, or why the bits cannot be promised (the loop then stays Python-driven).
        Unbatched products depend on the operands' layouts in the executor: they are promised
        for C arrays of their own there (`executor_root`), and the loop's run checks its
        operands (`blas_operands`, loops._layouts_hold)."""
        from corejax.compiler import blas
        lhs, rhs = eqn.invars
        out = eqn.outvars[0]
        (lb, lf, lc), (rb, rc, rf) = dims
        B, M, N, K = sizes
        dt = np.dtype(out.aval.dtype)
        if dt not in (np.float32, np.float64) or lhs.aval.dtype != dt or rhs.aval.dtype != dt:
            return "not float32 / float64 operands of its dtype"  # (the executor casts them)
        if M == 1 and N == 1:
            # a (1, K) @ (K, 1) dot: NumPy's matmul runs its own loop of cblas_?dot chunks
            # summed in double (TYPE_dot), possibly threaded; not mirrored here
            return "a (1, K) @ (K, 1) dot (NumPy's own cblas_?dot loop)"
        if K == 1:
            # NumPy's matmul computes it without BLAS, single-threaded (matmul_inner_noblas:
            # o = 0, then o += a * c), whatever the executor's thread settings or chunks
            a = self._as_matrices(lhs, tuple(lb) + tuple(lf) + tuple(lc), env, lines, ind)
            c = self._as_matrices(rhs, tuple(rb) + tuple(rc) + tuple(rf), env, lines, ind)
            o, T = self.m.alloc(out.aval), np_name(dt)
            p, i, j, s = (self.m.fresh(n) for n in ("p", "i", "j", "s"))
            lines += [f"{ind}for {p} in range({B}):",
                      f"{ind}    for {i} in range({M}):",
                      f"{ind}        {s} = {a}[{p} * {M} + {i}]",
                      f"{ind}        for {j} in range({N}):",
                      f"{ind}            {o}[({p} * {M} + {i}) * {N} + {j}] = "
                      f"{T}(0) + {s} * {c}[{p} * {N} + {j}]"]
            env[out] = o
            return None
        # (corejax's own float32 GEMM, blas.own_kernel, computes every product itself)
        own = blas.own_kernel(dt)
        kind = "gemv" if (M == 1 or N == 1) and not own else "gemm"
        if B == 1:
            # NumPy picks the routine and its arguments from the operands' strides (and data
            # pointers): promised only for C arrays of their own in the executor (loops._c_step)
            if self.executor_root(lhs) is None or self.executor_root(rhs) is None:
                return "an operand the executor may hold as a strided view or share"
            a, ta = self._executor_layout(lhs, lf, lc, env, lines, ind)
            c, tc = self._executor_layout(rhs, rc, rf, env, lines, ind)
            if a == c and ta != tc and not own:
                # x @ x.T: NumPy's matmul sees one data pointer read both ways and calls syrk.
                # Promised only for one Var: one buffer reached through two Vars (an alias,
                # a reshape) may be a copy in the executor, or not
                if type(lhs) is not Var or lhs is not rhs:
                    return "one buffer through two Vars, read both ways"
                kind = "syrk"
            if kind == "gemv" and (ta if M == 1 else tc):
                return "a transposed vector"        # (never: a vector is C and F at once)
            # the loop's own operands among them: their layouts are checked at run time
            self.blas_operands(kind, ((lhs, tuple(lf) + tuple(lc), M, K, ta),
                                      (rhs, tuple(rc) + tuple(rf), K, N, tc)),
                               kind == "gemm" and M == N and ta != tc and not own)
        plan = blas.plan_for(M, K, N, ta, tc, dt) if B == 1 else None
        if type(plan) is blas.Blocks:
            if len(plan.bounds) > 2:
                # the executor shares the blocks out over the cores, which a loop on one
                # thread would give up: (32, 512) @ (512, 2048) in an LSTM's scan, 64 steps,
                # took the step 171 ms compiled, 137 ms Python-driven (Flax 107)
                return "a product in blocks over the cores (blas.Blocks)"
            plan = None     # one block: whole on one thread, as a small product
        symbol = {"gemm": blas.gemm_symbol, "gemv": blas.gemv_symbol,
                  "syrk": blas.syrk_symbol}[kind](dt)
        if symbol is None:
            return f"no cblas_?{kind} in NumPy's OpenBLAS"
        addr, ilp64 = symbol
        I, T = ("np.int64" if ilp64 else "np.int32"), np_name(dt)
        fn = f"{self.m.index_map([addr])}[0]"
        self.m.imports.add(f"from corejax.compiler.kernel_lib import call_{kind}")
        o = self.m.alloc(out.aval)
        env[out] = o
        if B > 1:
            # the executor runs each element whole on one OpenBLAS thread (blas.batched_matmul;
            # the own GEMM's bits do not depend on threads)
            if not own:
                self.m.needs_one_thread = True
            a = self._as_matrices(lhs, tuple(lb) + tuple(lf) + tuple(lc), env, lines, ind)
            c = self._as_matrices(rhs, tuple(rb) + tuple(rc) + tuple(rf), env, lines, ind)
            p = self.m.fresh("p")
            if kind == "gemm":
                call = (f"call_gemm({fn}, np.int32(101), np.int32(111), np.int32(111), {I}({M}), "
                        f"{I}({N}), {I}({K}), {T}(1), {a}[{p} * {M * K}:], {I}({K}), "
                        f"{c}[{p} * {K * N}:], {I}({N}), {T}(0), {o}[{p} * {M * N}:], {I}({N}))")
            elif M == 1:        # vector @ matrix: gemv of the matrix, transposed
                call = (f"call_gemv({fn}, np.int32(101), np.int32(112), {I}({K}), {I}({N}), "
                        f"{T}(1), {c}[{p} * {K * N}:], {I}({N}), {a}[{p} * {K}:], {I}(1), "
                        f"{T}(0), {o}[{p} * {N}:], {I}(1))")
            else:               # matrix @ vector: the C matrix as a column-major (K, M) one
                call = (f"call_gemv({fn}, np.int32(102), np.int32(112), {I}({K}), {I}({M}), "
                        f"{T}(1), {a}[{p} * {M * K}:], {I}({K}), {c}[{p} * {K}:], {I}(1), "
                        f"{T}(0), {o}[{p} * {M}:], {I}(1))")
            lines += [f"{ind}for {p} in range({B}):", f"{ind}    {call}"]
            return None
        # the loop's one-thread variant (loops._build) runs each product over its plan's
        # one-thread chunks on one OpenBLAS thread: the bits of the threaded variant
        one_thread = getattr(self.m, "one_thread", False)
        if plan:
            self.m.thread_modes = True
        if plan is None:
            # a small product (or one block): whole on one OpenBLAS thread in the executor;
            # the loop may call it on OpenBLAS's threads only where that gives the same bits
            if not one_thread and not blas.one_thread_keeps_bits(M, K, N, ta, tc, dt,
                                                                 kind == "syrk"):
                self.m.needs_one_thread = True
            chunks = (0, K)
        elif not plan:
            if one_thread:
                return "a product with no plan of the same bits on one thread"
            chunks = (0, K)         # unchunked on OpenBLAS's threads, as in the executor
        elif kind == "syrk" and not blas.syrk_thread_invariant(M, K, ta, dt, plan):
            # the executor runs the plan (tested with gemm) on one thread or on all, as its
            # timings say, and syrk's bits differ between the two: nothing to mirror
            return "a syrk whose executor bits depend on its thread count"
        else:
            # the loop runs on OpenBLAS's threads, or on one in its one-thread variant
            chunks = plan.one if one_thread else plan.threads
        # the executor's gemm adds the chunks after the first itself (beta = 1)
        accumulates = kind == "gemm" and blas.gemm_accumulates(M, N, dt)
        partial = self.m.alloc(out.aval) if len(chunks) > 2 and not accumulates else None
        for j, (lo, hi) in enumerate(zip(chunks, chunks[1:])):
            # a chunk of the reduction: columns lo:hi of a (M, K) matrix, rows of a (K, N) one
            a_off = lo * M if ta else lo
            c_off = lo if tc else lo * N
            target = o if j == 0 or accumulates else partial
            if kind == "gemm":
                lines.append(
                    f"{ind}call_gemm({fn}, np.int32(101), np.int32({112 if ta else 111}), "
                    f"np.int32({112 if tc else 111}), {I}({M}), {I}({N}), {I}({hi - lo}), "
                    f"{T}(1), {a}[{a_off}:], {I}({M if ta else K}), {c}[{c_off}:], "
                    f"{I}({K if tc else N}), {T}({1 if j and accumulates else 0}), {target}, "
                    f"{I}({N}))")
            elif kind == "syrk":
                # NumPy: syrk(RowMajor, Upper, trans of the left operand, M, k, 1, x, its
                # leading dimension, 0, o, M), then the upper triangle copied to the lower
                lines.append(
                    f"{ind}call_syrk({fn}, np.int32(101), np.int32(121), "
                    f"np.int32({112 if ta else 111}), {I}({M}), {I}({hi - lo}), {T}(1), "
                    f"{a}[{a_off}:], {I}({M if ta else K}), {T}(0), {target}, {I}({M}))")
                r, q = self.m.fresh("r"), self.m.fresh("q")
                lines += [f"{ind}for {r} in range({M}):",
                          f"{ind}    for {q} in range({r} + 1, {M}):",
                          f"{ind}        {target}[{q} * {M} + {r}] = {target}[{r} * {M} + {q}]"]
            elif M == 1:
                # vector @ matrix: gemv(order of the matrix's storage, Trans, k, N, 1, matrix,
                # its leading dimension, the vector, 1, 0, o, 1), as NumPy calls it
                lines.append(
                    f"{ind}call_gemv({fn}, np.int32({102 if tc else 101}), np.int32(112), "
                    f"{I}({hi - lo}), {I}({N}), {T}(1), {c}[{c_off}:], {I}({K if tc else N}), "
                    f"{a}[{a_off}:], {I}(1), {T}(0), {target}, {I}(1))")
            else:
                # matrix @ vector: the (M, k) matrix is a column-major (k, M) one (C storage)
                # or a row-major one (transposed storage), read Trans
                lines.append(
                    f"{ind}call_gemv({fn}, np.int32({101 if ta else 102}), np.int32(112), "
                    f"{I}({hi - lo}), {I}({M}), {T}(1), {a}[{a_off}:], {I}({M if ta else K}), "
                    f"{c}[{c_off}:], {I}(1), {T}(0), {target}, {I}(1))")
            if j and not accumulates:
                q = self.m.fresh("q")
                lines += [f"{ind}for {q} in range({M * N}):",
                          f"{ind}    {o}[{q}] = {o}[{q}] + {partial}[{q}]"]
        return None

    def lower_dot_general(self, eqn, env, lines, ind):
        lhs, rhs = eqn.invars
        out = eqn.outvars[0]
        (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
        ls, rs = lhs.aval.shape, rhs.aval.shape
        lf = tuple(i for i in range(len(ls)) if i not in lc and i not in lb)
        rf = tuple(i for i in range(len(rs)) if i not in rc and i not in rb)
        B, K = size([ls[i] for i in lb]), size([ls[i] for i in lc])
        M, N = size([ls[i] for i in lf]), size([rs[i] for i in rf])
        dt = np.dtype(out.aval.dtype)
        if B * M * N * K > DOT_MAX_MACS:
            why = self._blas_dot(eqn, ((lb, lf, lc), (rb, rc, rf)), (B, M, N, K), env, lines,
                                 ind)
            if why is None:
                return
            self.unsupported(f"a BLAS-sized dot_general ({B * M * N * K} multiply-adds) "
                             f"whose executor bits compiled code cannot promise: {why}")
        if dt.kind not in "iuf":
            from corejax.compiler import cpu   # the executor's BLAS call, for the same bits
            self.host(eqn, getattr(cpu, "_blas_dot_general", eqn.primitive.impl), env, lines,
                      ind)
            return
        rows = 1 < N < 8
        a = self._as_matrices(lhs, tuple(lb) + lf + tuple(lc), env, lines, ind)
        c = self._as_matrices(rhs, tuple(rb) + (tuple(rc) + rf if rows else rf + tuple(rc)),
                              env, lines, ind)
        o = self.m.alloc(out.aval)
        fn = self.m.kernel(matmul_source(B, M, N, K, dt, rows))
        lines.append(f"{ind}{fn}({a}, {c}, {o})")
        env[out] = o
