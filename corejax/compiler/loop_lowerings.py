"""The nopython lowerings of compiled loops' data steps (compiler/loops.py emits the loop
itself, fused groups and control flow): layout ops as gathers through static index maps,
dynamic slices, gather / scatter, argmax / argmin, cumsum, stable sorts, small dots as loops
and big ones as direct BLAS calls.

Each `lower_<primitive>(eqn, env, lines, ind)` appends source lines to `lines` (indented by
`ind`) computing the equation on flat buffers named in `env`, and binds its outputs there. The
index maps are computed at build time by applying the primitives' own impls (or their layout
rules) to `arange`, so the generated loops move the same elements as the impls, in the same
order of updates.
"""
from __future__ import annotations

import numpy as np

from corejax.core import ShapedArray
from corejax.compiler.scalar_ctx import literal

__all__ = ["DataLowerings", "LayoutLowerings", "DOT_MAX_MACS", "np_name", "size", "copy_lines"]

# A 64x64 @ 64x64 product. Past this a BLAS call beats the loop matmul: float matrix products
# call cblas_?gemm from the compiled loop (DataLowerings._blas_dot); others keep the loop
# Python-driven.
DOT_MAX_MACS = 1 << 18


def np_name(dt) -> str:
    dt = np.dtype(dt)
    return "np.bool_" if dt == np.bool_ else f"np.{dt.name}"


def size(shape) -> int:
    return int(np.prod(shape, dtype=np.int64))


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
        "import numpy as np", "from numba import njit", "",
        "@njit(error_model=\"numpy\", nogil=True, cache=True)",
        f"def kernel({', '.join(xs + ys)}):",
        f"    perm = np.empty({n}, np.int64)", f"    tmp = np.empty({n}, np.int64)",
        f"    for p in range({pre}):", f"        for r in range({post}):",
        f"            base = p * {n * post} + r",
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
        "                perm, tmp = tmp, perm", "                width *= 2",
        f"            for i in range({n}):",
        f"                src = base + perm[i] * {post}",
        f"                dst = base + i * {post}",
        *[f"                y{i}[dst] = x{i}[src]" for i in range(n_operands)]]) + "\n"


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
        o, m = self.m.alloc(out.aval), self.m.index_map(idx)
        lines += self._loop(idx.size, lambda q: [f"{o}[{q}] = {src}[{m}[{q}]]"], ind)
        lines += self.barrier(ind)
        env[out] = o

    lower_broadcast_in_dim = lower_transpose = lower_reshape = lower_squeeze = \
        lower_slice = lower_rev = _static_gather

    def lower_pad(self, eqn, env, lines, ind):
        x, pv = eqn.invars
        out = eqn.outvars[0]
        idx = np.asarray(eqn.primitive.impl(np.arange(size(x.aval.shape)).reshape(x.aval.shape),
                                            np.int64(-1), **eqn.params)).reshape(-1)
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
    argmin, cumsum, sorts and dots. Needs also `self.host` and `self.unsupported`."""

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

    def _blas_dot(self, eqn, ldims, rdims, sizes, env, lines, ind) -> bool:
        """A BLAS-sized float matrix product as direct cblas_?gemm calls (kernel_lib.call_gemm
        on the address of the OpenBLAS NumPy uses), split over the reduction exactly as the
        executor's BLAS step splits it (blas.plan_for), with the operands read in place with
        the transpose flag where the executor's np.matmul reads a transposed view: the loop
        computes the bits the Python-driven loop computes. False where that cannot be
        promised (batched or vector products, mixed dtypes, no such BLAS)."""
        from corejax.compiler import blas
        lhs, rhs = eqn.invars
        out = eqn.outvars[0]
        (lf, lc), (rc, rf) = ldims, rdims
        B, M, N, K = sizes
        dt = np.dtype(out.aval.dtype)
        symbol = blas.gemm_symbol(dt)
        if symbol is None or B != 1 or min(M, N, K) < 2 or \
                lhs.aval.dtype != dt or rhs.aval.dtype != dt:
            return False

        def layout(x, rows, cols):
            """(buffer, transposed) of x as a (rows, cols) matrix; transposed: stored (cols,
            rows). A matrix that is neither gets a C-ordered copy, as _as_matrices makes."""
            ident = lambda perm: np.array_equal(
                np.transpose(np.arange(size(x.aval.shape)).reshape(x.aval.shape),
                             perm).reshape(-1), np.arange(size(x.aval.shape)))
            if ident(rows + cols):
                return self.buffer(x, env), False
            if ident(cols + rows):
                return self.buffer(x, env), True
            return self._as_matrices(x, rows + cols, env, lines, ind), False

        a, ta = layout(lhs, tuple(lf), tuple(lc))
        c, tc = layout(rhs, tuple(rc), tuple(rf))
        if a == c and ta != tc:
            return False        # x @ x.T: NumPy's matmul calls syrk there, not gemm
        chunks = blas.plan_for(M, K, N, ta, tc, dt)
        if chunks is None:
            # a small product, one unchunked call on one thread in the executor: the loop's
            # call (on OpenBLAS's threads) agrees where one chunk is a thread-invariant plan
            if blas.plan_for(M, K, N, ta, tc, dt, any_size=True) != (0, K):
                return False
            chunks = (0, K)
        elif not chunks:
            chunks = (0, K)         # unchunked on OpenBLAS's threads, as in the executor
        addr, ilp64 = symbol
        I = "np.int64" if ilp64 else "np.int32"
        T = np_name(dt)
        fn = self.m.index_map([addr])
        o = self.m.alloc(out.aval)
        partial = self.m.alloc(out.aval) if len(chunks) > 2 else None
        for j, (lo, hi) in enumerate(zip(chunks, chunks[1:])):
            # a chunk of the reduction: columns lo:hi of a (M, K) matrix, rows of a (K, N) one
            a_off = lo * M if ta else lo
            c_off = lo if tc else lo * N
            target = o if j == 0 else partial
            lines.append(
                f"{ind}call_gemm({fn}[0], np.int32(101), np.int32({112 if ta else 111}), "
                f"np.int32({112 if tc else 111}), {I}({M}), {I}({N}), {I}({hi - lo}), {T}(1), "
                f"{a}[{a_off}:], {I}({M if ta else K}), {c}[{c_off}:], {I}({K if tc else N}), "
                f"{T}(0), {target}, {I}({N}))")
            if j:
                q = self.m.fresh("q")
                lines += [f"{ind}for {q} in range({M * N}):",
                          f"{ind}    {o}[{q}] = {o}[{q}] + {partial}[{q}]"]
        self.m.imports.add("from corejax.compiler.kernel_lib import call_gemm")
        env[out] = o
        return True

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
            if self._blas_dot(eqn, (lf, lc), (rc, rf), (B, M, N, K), env, lines, ind):
                return
            self.unsupported(f"a BLAS-sized dot_general ({B * M * N * K} multiply-adds) "
                             "that BLAS cannot be called for from compiled code")
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
