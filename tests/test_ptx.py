"""Every CUDA kernel the CUDA backend emits for a suite of programs compiles to real PTX.

Numba's CUDA simulator runs kernels as Python and type-checks nothing, so this is the check
that generated and hand-written kernels are valid numba.cuda code before real hardware sees
them: each program's CudaExecutable is built in plan-only mode (no device) and every kernel
source it would launch goes through `numba.cuda.compile_ptx(..., cc=(8, 0))` with the argument
types of its launch. Needs NVVM (the CUDA toolkit), not a GPU. The program suite (`CASES`) is
shared with tests/test_cuda_compiler.py, which runs it under the simulator.
"""
import numpy as np
import pytest

import corejax as jax
import corejax.numpy as jnp
from corejax import lax
from corejax.compiler import registry
from corejax.lax import elementwise as ew

pytestmark = pytest.mark.filterwarnings("ignore::numba.core.errors.NumbaPerformanceWarning")

BINARY = {"add", "add_any", "sub", "mul", "div", "rem", "pow", "max", "min", "atan2", "nextafter", "and",
          "or", "xor", "shift_left", "shift_right_logical", "shift_right_arithmetic", "eq", "ne",
          "lt", "le", "gt", "ge", "eq_to", "le_to", "lt_to"}
TERNARY = {"clamp", "fma"}
DTYPES = ("float32", "float64", "int32", "uint32", "bool")

_FLOATS = [-2.5, -1.0, -0.5, -0.0, 0.0, 0.3, 0.5, 0.9, 1.5, 2.5, 3.0, np.inf, -np.inf, np.nan]
_INTS = [-7, -3, -1, 0, 1, 2, 5, 31, 32, 40, 100, -100, 2 ** 31 - 1, -2 ** 31]


def sample(dtype, reverse=False):
    dt = np.dtype(dtype)
    if dt.kind == "f":
        v = np.array(_FLOATS, dt)
    elif dt == np.bool_:
        v = np.array([True, False, True, True, False, False, True, False, True, False, False,
                      True, True, False])
    else:
        v = np.array(_INTS, np.int64).astype(dt)
    return v[::-1].copy() if reverse else v


def elementwise_cases():
    """(label, fn, args) for every primitive with an elementwise lowering, in every dtype of
    DTYPES it accepts."""
    cases = []
    for prim in sorted(registry.elementwise_lowerings, key=lambda p: p.name):
        name = prim.name
        for dt in DTYPES:
            if name == "select_n":
                args = (sample("bool"), sample(dt), sample(dt, True))
            elif name == "convert_element_type":
                for to in DTYPES:
                    if to != dt:
                        cases.append((f"{name}:{dt}->{to}",
                                      lambda x, to=to: lax.convert_element_type(x, to),
                                      (sample(dt),)))
                continue
            elif name == "bitcast_convert_type":
                to = {"float32": "int32", "int32": "float32", "uint32": "int32",
                      "float64": "int64"}.get(dt)
                if to is None:
                    continue
                cases.append((f"{name}:{dt}->{to}",
                              lambda x, to=to: ew.bitcast_convert_type_p.bind(
                                  x, new_dtype=np.dtype(to)), (sample(dt),)))
                continue
            elif name == "integer_pow":
                for y in (3, -2, 7) if dt.startswith("float") else (3, 7):
                    cases.append((f"{name}:{dt}:{y}", lambda x, y=y: lax.integer_pow(x, y),
                                  (sample(dt),)))
                continue
            elif name == "threefry2x32":
                if dt == "uint32":
                    cases.append((name, lambda *a, prim=prim: prim.bind(*a), (sample(dt),) * 4))
                continue
            elif name == "name":           # ad_checkpoint.checkpoint_name's identity
                cases.append((f"{name}:{dt}", lambda x, prim=prim: prim.bind(x, name="n"),
                              (sample(dt),)))
                continue
            elif name == "round":
                for m in (0, 1):
                    cases.append((f"{name}:{dt}:{m}",
                                  lambda x, m=m: ew.round_p.bind(x, rounding_method=m),
                                  (sample(dt),)))
                continue
            elif name in BINARY:
                args = (sample(dt), sample(dt, True))
            elif name in TERNARY:
                args = (sample(dt, True), sample(dt), sample(dt, True))
            else:
                args = (sample(dt),)
            cases.append((f"{name}:{dt}", lambda *a, prim=prim: prim.bind(*a), args))
    accepted = []
    for label, fn, args in cases:
        try:
            jax.make_jaxpr(fn)(*args)
        except TypeError:
            continue            # dtype not accepted by this primitive
        accepted.append((label, fn, args))
    return accepted


def _f32(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def program_cases():
    """(label, fn, args): reductions, matmuls, layout ops, windows, convs, threefry, control
    flow (tiny shapes, for the simulator)."""
    x = _f32((3, 5))
    x3 = _f32((2, 3, 4), 1)
    xi = np.arange(12, dtype=np.int32).reshape(3, 4) - 5
    xb = x > 0
    c = []
    for red in ("sum", "max", "min", "prod"):
        for axis in (0, 1, None, (0, 2)):
            arr = x3 if axis == (0, 2) else x
            c.append((f"reduce_{red}:{axis}",
                      lambda a, red=red, axis=axis: getattr(jnp, red)(jnp.exp(a) * 0.5, axis=axis),
                      (arr,)))
        c.append((f"reduce_{red}:int", lambda a, red=red: getattr(jnp, red)(a, axis=1), (xi,)))
    c.append(("reduce_and_or", lambda a: (jnp.all(a, axis=0), jnp.any(a, axis=1)), (xb,)))
    c.append(("reduce_long_row", lambda a: jnp.sum(a * 2.0, axis=1), (_f32((3, 150)),)))
    c.append(("reduce_long_max", lambda a: jnp.max(a, axis=0), (_f32((140, 2)),)))
    c.append(("reduce_empty", lambda a: (jnp.sum(a, axis=0), jnp.max(a, axis=1)),
              (np.zeros((0, 3), np.float32),)))
    c.append(("reduce_keep_empty", lambda a: jnp.sum(a, axis=1), (np.zeros((0, 3), np.float32),)))
    c.append(("mean_var", lambda a: (a - a.mean(0)) / (a.std(0) + 1.0), (x,)))
    # dot_general
    a, b = _f32((5, 7), 2), _f32((7, 6), 3)
    c.append(("dot", lambda p, q: p @ q, (a, b)))
    c.append(("dot_tn", lambda p, q: p.T @ q, (_f32((7, 5)), b)))
    c.append(("dot_nt", lambda p, q: p @ q.T, (a, _f32((6, 7)))))
    c.append(("dot_batched", lambda p, q: jnp.einsum("bij,bjk->bik", p, q),
              (_f32((2, 3, 5)), _f32((2, 5, 4)))))
    c.append(("dot_batch_middle", lambda p, q: jnp.einsum("ibj,jbk->bik", p, q),
              (_f32((3, 2, 5)), _f32((5, 2, 4)))))
    c.append(("dot_vec", lambda p, q: p @ q, (a, _f32((7,)))))
    c.append(("dot_int", lambda p, q: p @ q, (xi, xi.T.copy())))
    # layout
    c.append(("transpose_rev_slice", lambda p: jnp.transpose(p)[::-1, 1:3] * 1, (x,)))
    c.append(("broadcast", lambda p: jnp.broadcast_to(p[:, None, :], (3, 2, 5)) + 0.0, (x,)))
    c.append(("reshape_squeeze", lambda p: jnp.reshape(p, (5, 3)).T[None], (x,)))
    c.append(("pad", lambda p: lax.pad(p, jnp.float32(-1), ((1, 2, 1), (-1, 1, 0))), (x,)))
    c.append(("concatenate", lambda p, q: jnp.concatenate([p, q, p], axis=1),
              (x, _f32((3, 2)))))
    c.append(("iota", lambda p: p + jnp.arange(5, dtype=jnp.float32)[None, :] +
              lax.broadcasted_iota(jnp.int32, (3, 5), 0), (x,)))
    c.append(("dynamic_slice", lambda p, i: lax.dynamic_slice(p, (i, i + 1), (2, 3)),
              (x, np.int32(1))))
    c.append(("dynamic_slice_clamped", lambda p, i: lax.dynamic_slice(p, (i, -i), (2, 3)),
              (x, np.int32(7))))
    c.append(("dynamic_update_slice",
              lambda p, u, i: lax.dynamic_update_slice(p, u, (i, jnp.int32(2))),
              (x, _f32((2, 2)), np.int32(5))))
    c.append(("argmax_argmin", lambda p: (jnp.argmax(p, axis=1), jnp.argmin(p, axis=0)), (x,)))
    c.append(("cumsum", lambda p: (jnp.cumsum(p, axis=1), lax.cumsum(p, axis=0, reverse=True)),
              (x,)))
    # gathers (jnp indexing, take, take_along_axis)
    c.append(("gather_take", lambda p, i: jnp.take(p, i, axis=1), (x, np.array([4, 0, 2, 2],
                                                                             np.int32))))
    c.append(("gather_getitem", lambda p, i: p[i, 1:4], (x, np.array([[2, 0], [1, 1]], np.int32))))
    c.append(("gather_along_axis", lambda p, i: jnp.take_along_axis(p, i, axis=1),
              (x, np.array([[0, 4], [1, 3], [2, 2]], np.int32))))
    c.append(("gather_fill", lambda p, i: jnp.take(p, i, axis=0, mode="fill", fill_value=-1.0),
              (x, np.array([0, 5, -1, 2], np.int32))))
    c.append(("gather_clip", lambda p, i: jnp.take(p, i, axis=0, mode="clip"),
              (x, np.array([0, 5, -1, 2], np.int32))))
    # windows, convolutions
    img = _f32((2, 6, 6, 3), 4)
    c.append(("max_pool", lambda p: lax.reduce_window(p, -jnp.inf, lax.max, (1, 2, 2, 1),
                                                      (1, 2, 2, 1), "VALID"), (img,)))
    c.append(("avg_pool_pad", lambda p: lax.reduce_window(p, 0.0, lax.add, (1, 3, 3, 1),
                                                          (1, 2, 2, 1), "SAME"), (img,)))
    c.append(("reduce_window_min_dil",
              lambda p: lax.reduce_window(p, jnp.inf, lax.min, (1, 2, 2, 1), (1, 1, 1, 1),
                                          ((0, 0), (1, 1), (0, 1), (0, 0)),
                                          window_dilation=(1, 2, 1, 1)), (img,)))
    w = _f32((3, 3, 3, 4), 5)
    nhwc = ("NHWC", "HWIO", "NHWC")
    c.append(("conv_same", lambda p, q: lax.conv_general_dilated(
        p, q, (1, 1), "SAME", dimension_numbers=nhwc), (img, w)))
    c.append(("conv_strided_dilated", lambda p, q: lax.conv_general_dilated(
        p, q, (2, 1), ((1, 0), (2, 1)), lhs_dilation=(1, 2), rhs_dilation=(2, 1),
        dimension_numbers=nhwc), (img, w)))
    c.append(("conv_nchw_groups", lambda p, q: lax.conv_general_dilated(
        p, q, (1, 1), "VALID", feature_group_count=2),
        (_f32((2, 4, 5, 5), 6), _f32((6, 2, 2, 2), 7))))
    c.append(("conv_batch_groups", lambda p, q: lax.conv_general_dilated(
        p, q, (1, 1), "VALID", batch_group_count=2),
        (_f32((4, 2, 4, 4), 8), _f32((4, 2, 2, 2), 9))))
    c.append(("conv_1d", lambda p, q: lax.conv_general_dilated(p, q, (1,), "SAME"),
              (_f32((2, 3, 7), 10), _f32((4, 3, 3), 11))))

    def conv_grad(p, q):
        f = lambda p, q: jnp.sum(jnp.tanh(lax.conv_general_dilated(
            p, q, (2, 2), "SAME", dimension_numbers=nhwc)))
        return jax.grad(f, argnums=(0, 1))(p, q)
    c.append(("conv_grad", conv_grad, (img, w)))
    # scatters: .at[] stores (unique indices: with repeats the winner is unspecified on a GPU),
    # sums with repeats, out-of-bound windows clipped or dropped, vmap's batching dims, and
    # the scatter-add transposing a gather
    v, rows = _f32((6, 4), 12), np.array([4, 0, 2], np.int32)
    c.append(("scatter_set", lambda p, i: p.at[i].set(p[i] * 3.0 + 1.0), (v, rows)))
    c.append(("scatter_add_repeats", lambda p, i: p.at[i].add(jnp.ones((5, 4))),
              (v, np.array([1, 3, 1, 1, 5], np.int32))))
    c.append(("scatter_add_int", lambda p, i: p.at[i].add(7), (xi, np.array([2, 0, 2], np.int32))))
    c.append(("scatter_clip", lambda p, i: p.at[i].set(-1.0, mode="clip"),
              (v, np.array([-3, 9], np.int32))))
    c.append(("scatter_drop", lambda p, i: p.at[i, 1:3].add(5.0, mode="drop"),
              (v, np.array([2, 7], np.int32))))
    c.append(("scatter_vmap", jax.vmap(lambda p, i: p.at[i].add(2.0)),
              (_f32((3, 5), 13), np.array([4, 0, 4], np.int32))))
    c.append(("gather_grad", jax.grad(lambda p, i: jnp.sum(jnp.tanh(p[i]) ** 2)),
              (v, np.array([5, 1, 5, 2], np.int32))))
    vn = v.copy()
    vn[1, 2] = np.nan
    rep = np.array([1, 3, 1, 1], np.int32)
    c.append(("scatter_min_max_nan", lambda p, i: (p.at[i].min(jnp.full((4, 4), 0.25)),
                                                   p.at[i].max(-p[i[::-1]])), (vn, rep)))
    c.append(("scatter_mul", lambda p, i: p.at[i].multiply(1.5), (v, rep)))
    c.append(("scatter_int_min_mul", lambda p, i: (p.at[i].min(-2), p.at[i].multiply(3)),
              (xi, np.array([2, 0, 2], np.int32))))
    # sorts: NaN last, ties in input order (stable), several keys, lanes along an inner axis,
    # lengths that are not powers of two, integer and boolean keys
    srt = np.array([[3.0, np.nan, -1.0, 3.0, 0.5, -np.inf, 2.0],
                    [1.0, 1.0, np.nan, 0.0, -2.0, 1.0, 7.0]], np.float32)
    c.append(("sort", lambda p: jnp.sort(p, axis=1), (srt,)))
    c.append(("argsort_ties", lambda p: jnp.argsort(p, axis=1), (srt,)))
    c.append(("sort_axis0", lambda p: jnp.sort(p, axis=0), (_f32((5, 3), 14),)))
    c.append(("sort_two_keys", lambda a, b, v: lax.sort((a, b, v), num_keys=2),
              (np.array([2, 1, 2, 1, 0], np.int32), np.array([0.5, 0.1, -1.0, 0.1, 3.0],
                                                              np.float32), _f32((5,), 15))))
    c.append(("sort_bool_unstable", lambda k, v: lax.sort((k, v), num_keys=1, is_stable=False),
              (np.array([True, False, True, False], bool), np.arange(4, dtype=np.int32))))
    c.append(("top_k", lambda p: lax.top_k(p, 3), (_f32((2, 9), 16),)))
    c.append(("sort_one", lambda p: jnp.sort(p), (np.array([4.0], np.float32),)))
    # random bits
    c.append(("threefry", lambda k: jax.random.uniform(k, (3, 4)),
              (np.asarray(jax.random.PRNGKey(3)),)))
    c.append(("threefry_split_normal", lambda k: jax.random.normal(jax.random.split(k)[1], (5,)),
              (np.asarray(jax.random.PRNGKey(7)),)))
    # control flow
    c.append(("cond", lambda p, i: lax.cond(i > 0, lambda v: jnp.sin(v), lambda v: v * 2.0, p),
              (x, np.int32(1))))
    c.append(("cond_false", lambda p, i: lax.cond(i > 0, lambda v: jnp.sin(v),
                                                  lambda v: v * 2.0, p), (x, np.int32(0))))
    c.append(("while", lambda p: lax.while_loop(lambda s: s[0] < 5,
                                                lambda s: (s[0] + 1, s[1] * 1.5), (0, p))[1],
              (x,)))
    c.append(("fori", lambda p: lax.fori_loop(0, 3, lambda i, v: v + i, p), (x,)))

    def scan(p):
        def body(carry, xi):
            carry = carry + xi
            return carry, carry * 2.0
        return lax.scan(body, jnp.zeros(5), p)
    c.append(("scan", scan, (x,)))
    c.append(("scan_reverse", lambda p: lax.scan(lambda cr, xi: (cr * xi, cr), jnp.ones(5), p,
                                                 reverse=True), (x,)))
    return c


def loop_cases():
    """(label, fn, args): loops small enough to run as one single-block CUDA kernel, covering
    every in-kernel lowering of compiler/cuda_loops.py."""
    r = np.random.default_rng(7)
    f32 = lambda *shape: r.standard_normal(shape).astype(np.float32)
    x, m, xs = f32(5), f32(6, 4), f32(6, 5)
    w, u, seq = f32(8, 8) * 0.3, f32(3, 8) * 0.3, f32(10, 3)
    table = np.linspace(0.0, 1.0, 7).astype(np.float32)

    def rnn(w, u, h0, xs):
        return lax.scan(lambda h, x: (jnp.tanh(h @ w + x @ u),) * 2, h0, xs)

    def rows(m):
        def body(i, acc):
            row = lax.dynamic_slice(m, (i, 0), (1, 4))[0]
            row = lax.cond(i % 2 == 0, lambda q: jnp.sin(q), lambda q: q * 3.0, row)
            inner = lax.fori_loop(0, i, lambda j, q: q + 1.0, row)
            return lax.dynamic_update_slice(acc, inner[None, :], (5 - i, 0))
        return lax.fori_loop(0, 6, body, jnp.zeros_like(m))

    def layouts(i, v):
        t = jnp.transpose(v)[::-1]
        c = jnp.concatenate([t[:, :1], t[:, 1:] * 2.0], axis=1)
        p = lax.pad(c, 0.5, ((1, -1, 0), (0, 0, 1)))[:4, :3]
        return (v + jnp.broadcast_to(jnp.sum(p), v.shape) * 1e-3
                + jnp.reshape(jnp.arange(24.0), (6, 4)) * i)

    def collatz(n):
        def body(s):
            n, k = s
            return jnp.where(n % 2 == 0, n // 2, 3 * n + 1), k + 1
        return lax.while_loop(lambda s: s[0] != 1, body, (n, 0))[1]

    return [
        ("fori", lambda p: lax.fori_loop(0, 7, lambda i, v: v * 0.5 + i, p), (x,)),
        ("while", lambda p: lax.while_loop(lambda s: s[0] < 6,
                                           lambda s: (s[0] + 1, s[1] * 1.5), (0, p)), (x,)),
        ("scan", lambda c, xs: lax.scan(lambda c, xi: (c * 0.9 + xi, c * xi), c, xs), (x, xs)),
        ("scan_reverse", lambda c, xs: lax.scan(lambda c, xi: (c * 0.9 + xi, c * xi), c, xs,
                                                reverse=True), (x, xs)),
        ("collatz", collatz, (np.int32(7),)),
        ("reductions", lambda v: lax.fori_loop(
            0, 3, lambda i, v: v - jnp.mean(v, axis=1, keepdims=True) * 0.5 + jnp.max(v), v),
         (f32(4, 100),)),
        ("rnn", rnn, (w, u, np.zeros(8, np.float32), seq)),
        ("rnn_grad", jax.grad(lambda w, u, xs: jnp.sum(rnn(w, u, jnp.zeros(8), xs)[1] ** 2)),
         (w, u, seq)),
        ("rows", rows, (m,)),
        ("layouts", lambda v: lax.fori_loop(0, 4, layouts, v), (m,)),
        ("constants", lambda v: lax.fori_loop(0, 5, lambda i, q: q * jnp.asarray(table)[i] + 1.0,
                                              v), (np.ones(7, np.float32),)),
        ("indexing", lambda v, i: lax.fori_loop(
            0, 3, lambda k, q: q.at[i].add(q[i[::-1]] * 0.5).at[k].set(-1.0), v),
         (m, np.array([4, 1, 4], np.int32))),
        ("sort_cumsum_argmax", lambda v: lax.fori_loop(
            0, 2, lambda k, q: jnp.cumsum(jnp.sort(q, axis=1), axis=1) * 0.1
            + jnp.argmax(q, axis=1)[:, None] - jnp.argmin(q, axis=0)[None, :], v), (m,)),
    ]


def mlp_and_cnn_steps():
    """(label, step fn, args) for MNIST-style MLP (sgd) and CNN (adam; max and avg pooling)
    training steps with accuracy, at tiny sizes."""
    import nn
    import optim
    import train
    out = []
    for label, model, xshape, tx in (
            ("mlp_sgd", train.MLP(features=(8,)), (4, 12), optim.sgd(0.1)),
            ("cnn_adam_max", train.CNN(features=(2,), dense=8), (2, 6, 6, 1), optim.adam(1e-3)),
            ("cnn_adam_avg", train.CNN(features=(2,), dense=8, pool="avg"), (2, 6, 6, 1),
             optim.adam(1e-3))):
        x = jnp.asarray(_f32(xshape, 12))
        params = model.init(jax.random.PRNGKey(0), x)
        state = tx.init(params)
        y = jax.nn.one_hot(jnp.arange(xshape[0]) % 10, 10)

        def step(p, s, x, y, model=model, tx=tx):
            def loss_fn(p):
                return -jnp.mean(model.apply(p, x) * y)
            loss, g = jax.value_and_grad(loss_fn)(p)
            u, s = tx.update(g, s, p)
            acc = jnp.mean(jnp.argmax(model.apply(p, x), -1) == jnp.argmax(y, -1))
            return optim.apply_updates(p, u), s, loss, acc
        out.append((label, step, (params, state, x, y)))
    return out


# --- the PTX check ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def ptx():
    """compile(source, argtypes): compile_ptx for cc 8.0; skips the module without NVVM."""
    from numba import config
    if config.ENABLE_CUDASIM:
        pytest.skip("compile_ptx needs the real numba.cuda target (unset NUMBA_ENABLE_CUDASIM)")
    from numba import cuda, types
    import numba.cuda.dispatcher as dispatcher
    from corejax.compiler import cuda_kernels as K
    try:
        cuda.compile_ptx(lambda a: None, (types.float32[::1],), cc=(8, 0))
    except Exception as e:  # pragma: no cover - machines without the CUDA toolkit
        pytest.skip(f"NVVM (CUDA toolkit) not available for compile_ptx: {e}")

    class _CC80:
        # Device functions ask the current device for its compute capability when they
        # are compiled for a caller; without a GPU, answer as compile_ptx's cc does.
        compute_capability = (8, 0)

    real = dispatcher.get_current_device
    dispatcher.get_current_device = lambda: _CC80
    done = set()

    def compile_all(exe):
        for label, src, argtypes in exe.kernels:
            key = (src, argtypes)
            if key in done:
                continue
            try:
                cuda.compile_ptx(K.pyfunc(src), argtypes, cc=(8, 0))
            except Exception as e:
                raise AssertionError(f"kernel {label!r} does not compile to PTX: "
                                     f"{str(e)[:2000]}\n{src}") from None
            done.add(key)
    yield compile_all
    dispatcher.get_current_device = real


def _plan(fn, args):
    from corejax.compiler.cuda import CudaExecutable
    return CudaExecutable(jax.make_jaxpr(fn)(*args), None)


@pytest.fixture
def x64_on():
    prev = jax.config.enable_x64
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", prev)


def test_elementwise_kernels_compile(ptx, x64_on):
    cases = elementwise_cases()
    covered = {label.split(":")[0] for label, _, _ in cases}
    # lowerings marked cpu_only (the special functions' float64 scalar kernels) have no device
    # version: on CUDA a group holding one runs on the host, so there is no PTX to compile
    device = {p.name for p, rule in registry.elementwise_lowerings.items()
              if not getattr(rule, "cpu_only", False)}
    assert covered >= device
    cases = [c for c in cases if c[0].split(":")[0] in device]
    for label, fn, args in cases:
        exe = _plan(fn, args)
        ptx(exe)


@pytest.mark.parametrize("label", [c[0] for c in program_cases()])
def test_program_kernels_compile(ptx, label):
    fn, args = {c[0]: c[1:] for c in program_cases()}[label]
    ptx(_plan(fn, args))


def test_float64_programs_compile(ptx, x64_on):
    a = np.random.default_rng(0).standard_normal((5, 7))
    ptx(_plan(lambda p, q: (p @ q, jnp.sum(jnp.exp(p), axis=1), jnp.max(p, axis=0)),
              (a, a.T.copy())))
    ptx(_plan(lambda p: jnp.sum(p * 2.0, axis=1), (np.ones((2, 200)),)))


def test_gemm_kernel_variants_compile(ptx, monkeypatch):
    """cuda_gemm's kernels for the variants the program cases leave out: float16 and int8
    products, 3-D and float16 convolutions, each with its reduction whole and split."""
    from corejax import lax
    from corejax.compiler import cuda_kernels
    rng = np.random.default_rng(0)
    h = lambda *s: rng.standard_normal(s).astype(np.float16)
    i8 = np.arange(40, dtype=np.int8).reshape(5, 8)
    for target in (1, 10_000):
        monkeypatch.setattr(cuda_kernels, "target_blocks", lambda: target)
        exe = _plan(lambda p, q, a, b: (p @ q, a @ b), (h(5, 300), h(300, 6), i8, i8.T.copy()))
        exe3 = _plan(lambda x, w: lax.conv_general_dilated(x, w, (1, 2, 1), "SAME"),
                     (_f32((1, 2, 4, 5, 3)), _f32((3, 2, 2, 3, 2))))
        exe16 = _plan(lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "SAME"),
                      (h(2, 300, 4, 4), h(3, 300, 3, 3)))
        for e in (exe, exe3, exe16):
            assert not e.fallbacks, e.fallbacks
            ptx(e)
        labels = " ".join(k[0] for k in exe.kernels + exe16.kernels)
        assert ("split reduction" in labels) == (target > 1)


def test_column_reduction_kernels_compile(ptx, monkeypatch):
    """cuda_codegen's "cols" mode (long reductions over the outer dims), with its reduction
    whole and split in chunks combined by a second kernel, for float, integer and bool."""
    from corejax.compiler import cuda_kernels
    x = np.random.default_rng(0).standard_normal((1000, 5)).astype(np.float32)
    f = lambda a, i, b: (jnp.sum(jnp.tanh(a), axis=0), jnp.max(a, axis=0),
                         jnp.sum(i * 2, axis=0), jnp.any(b, axis=0))
    args = (x, (x * 4).astype(np.int32), x > 1)
    for target in (1, 10_000):
        monkeypatch.setattr(cuda_kernels, "target_blocks", lambda: target)
        exe = _plan(f, args)
        assert sum("(fused, cols)" in line for line in exe.plan) == 4, exe.plan
        assert any("chunks combined" in k[0] for k in exe.kernels) == (target > 1)
        ptx(exe)


def test_training_step_kernels_compile(ptx):
    for label, fn, args in mlp_and_cnn_steps():
        exe = _plan(fn, args)
        assert not exe.fallbacks, (label, exe.fallbacks)
        ptx(exe)


@pytest.mark.parametrize("label", [c[0] for c in loop_cases()])
def test_compiled_loop_kernels_compile(ptx, label):
    fn, args = {c[0]: c[1:] for c in loop_cases()}[label]
    exe = _plan(fn, args)
    assert any("the whole loop, one block" in k[0] for k in exe.kernels), exe.plan
    ptx(exe)


def test_scatter_add_kernels_compile_for_every_atomic_dtype(ptx, x64_on):
    from corejax.compiler import cuda_kernels as K
    for name in K.SCATTER_ATOMIC_ADD:
        x = np.arange(12).reshape(6, 2).astype(name)
        exe = _plan(lambda p, i: p.at[i].add(p[i]), (x, np.array([1, 4, 1], np.int32)))
        assert not exe.fallbacks, (name, exe.fallbacks)
        ptx(exe)


def test_scatter_cas_kernels_compile_for_every_dtype(ptx, x64_on):
    from corejax.compiler import cuda_kernels as K
    for name in K.SCATTER_CAS:
        x = np.arange(12).reshape(6, 2).astype(name)
        i = np.array([1, 4, 1], np.int32)
        exe = _plan(lambda p, i: (p.at[i].min(p[i]), p.at[i].max(p[i]), p.at[i].multiply(p[i])),
                    (x, i))
        assert not exe.fallbacks, (name, exe.fallbacks)
        ptx(exe)
