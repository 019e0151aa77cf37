"""corejax's own float32 GEMM (compiler/sgemm.py): the bits its docstring defines (an FMA
chain over each panel of the reduction, at most KC deep, the panels added in order), whatever the
operands' layouts, the cut of the output into blocks, the threads or the path (eager, jit,
compiled loops, convolutions) that runs it."""
import ctypes

import numpy as np
import pytest

import corejax as jax
import corejax.numpy as jnp
from corejax.compiler import blas, sgemm

pytestmark = pytest.mark.skipif(not blas.own_kernel(np.float32),
                                reason="float32 products run in OpenBLAS (COREJAX_SGEMM)")


def _spec(a, b, c=None, alpha=1.0, beta=0.0):
    """The product as the docstring defines it, written out independently in NumPy: each
    fused multiply-add in float64 (the float32 product is exact there; the sum is rounded
    once to float64, then to float32, which differs from one rounding only where the float64
    sum lies exactly between two float32s: not for these operands) over the panels."""
    m, k = a.shape
    n = b.shape[1]
    alpha, beta = np.float32(alpha), np.float32(beta)
    out = np.zeros((m, n), np.float32) if c is None else c.astype(np.float32).copy()
    if k == 0:
        return beta * out if beta != 0 else np.zeros((m, n), np.float32)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    parts = -(-k // sgemm.KC)
    for p in range(parts):
        s = np.zeros((m, n), np.float32)
        for kk in range(k * p // parts, k * (p + 1) // parts):
            with np.errstate(invalid="ignore"):         # (inf * 0 is meant where it is)
                s = (a64[:, kk, None] * b64[None, kk, :] + s).astype(np.float32)
        if p:
            out = out + alpha * s
        elif beta != 0:
            out = alpha * s + beta * out
        else:
            out = alpha * s
    return out


SHAPES = [(1, 1, 1), (3, 5, 7), (13, 300, 33), (128, 784, 40), (96, 512, 10), (1, 600, 70),
          (70, 600, 1), (25, 1, 3), (40, 257, 64), (12, 512, 32), (130, 70, 100)]


@pytest.mark.parametrize("m,k,n", SHAPES)
def test_bits_are_the_definitions(m, k, n):
    rng = np.random.default_rng(m * 7 + k * 3 + n)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    want = _spec(a, b)
    out = np.full((m, n), np.nan, np.float32)
    np.testing.assert_array_equal(sgemm.product(a, b, out), want)
    # against the exact product: the bound of k float32 roundings
    exact = a.astype(np.float64) @ b.astype(np.float64)
    bound = (k + 1) * np.finfo(np.float32).eps * (np.abs(a).astype(np.float64) @ np.abs(b))
    assert np.all(np.abs(out - exact) <= bound)
    c = rng.standard_normal((m, n)).astype(np.float32)
    for alpha, beta in ((-0.5, 1.0), (2.0, 0.25), (1.0, 1.0)):
        got = sgemm.product(a, b, c.copy(), alpha, beta)
        np.testing.assert_array_equal(got, _spec(a, b, c, alpha, beta))


@pytest.mark.parametrize("m,k,n", [(70, 600, 90), (128, 300, 10), (9, 40, 700)])
def test_layouts_and_blocks_do_not_change_the_bits(m, k, n):
    """Transposed and strided operands, a column-major output, and any cut of the output
    into row or column blocks give the bits of the whole product."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    want = sgemm.product(a, b, np.empty((m, n), np.float32))
    layouts = [(np.asfortranarray(a), b), (a, np.asfortranarray(b)),
               (np.asfortranarray(a), np.asfortranarray(b)),
               (np.repeat(a, 2, axis=1)[:, ::2], np.repeat(b, 3, axis=0)[::3])]
    for x, y in layouts:
        np.testing.assert_array_equal(sgemm.product(x, y, np.empty((m, n), np.float32)), want)
    np.testing.assert_array_equal(sgemm.product(a, b, np.empty((n, m), np.float32).T), want)
    for step in (1, 5, 16, 37):
        rows = np.empty((m, n), np.float32)
        cols = np.empty((m, n), np.float32)
        for lo in range(0, m, step):
            sgemm.product(a[lo:lo + step], b, rows[lo:lo + step])
        for lo in range(0, n, step):
            sgemm.product(a, b[:, lo:lo + step], cols[:, lo:lo + step])
        np.testing.assert_array_equal(rows, want)
        np.testing.assert_array_equal(cols, want)


def test_empty_and_zero_depth_products():
    a = np.ones((3, 0), np.float32)
    b = np.ones((0, 4), np.float32)
    np.testing.assert_array_equal(sgemm.product(a, b, np.full((3, 4), np.nan, np.float32)),
                                  np.zeros((3, 4), np.float32))
    c = np.full((3, 4), 2.0, np.float32)
    np.testing.assert_array_equal(sgemm.product(a, b, c, 1.0, 0.5), np.ones((3, 4)))
    sgemm.product(np.ones((0, 5), np.float32), np.ones((5, 4), np.float32),
                  np.empty((0, 4), np.float32))
    # special values propagate as the FMAs make them
    x = np.array([[np.inf, 1.0], [np.nan, 0.0]], np.float32)
    y = np.array([[0.0, 1.0], [2.0, 3.0]], np.float32)
    got = sgemm.product(x, y, np.empty((2, 2), np.float32))
    np.testing.assert_array_equal(got, _spec(x, y))
    assert np.isnan(got[0, 0]) and got[0, 1] == np.inf and np.isnan(got[1]).all()


def test_the_cblas_entry_point_in_both_storage_orders():
    """cblas_sgemm (what compiled code calls by address), row- and column-major, each
    transpose flag: the bits of `product` on the same matrices."""
    rng = np.random.default_rng(1)
    m, k, n = 37, 300, 45
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c0 = rng.standard_normal((m, n)).astype(np.float32)
    want = sgemm.product(a, b, c0.copy(), 0.5, 2.0)
    addr, ilp64 = sgemm.address()
    assert ilp64
    i64, f32 = ctypes.c_int64, ctypes.c_float
    fp = ctypes.POINTER(ctypes.c_float)
    call = ctypes.CFUNCTYPE(None, ctypes.c_int32, ctypes.c_int32, ctypes.c_int32, i64, i64, i64,
                            f32, fp, i64, fp, i64, f32, fp, i64)(addr)

    def ptr(x):
        return x.ctypes.data_as(fp)
    for order in (101, 102):
        row = order == 101
        for ta in (111, 112):
            for tb in (111, 112):
                # each operand stored so that the flag reads it back as a / b
                sa = a if (ta == 111) == row else a.T
                sb = b if (tb == 111) == row else b.T
                sa, sb = np.ascontiguousarray(sa), np.ascontiguousarray(sb)
                c = np.array(c0 if row else c0.T, order="C")     # a copy
                call(order, ta, tb, m, n, k, 0.5, ptr(sa), sa.shape[1], ptr(sb), sb.shape[1],
                     2.0, ptr(c), c.shape[1])
                np.testing.assert_array_equal(c if row else c.T, want)


@pytest.mark.parametrize("m,k,n", [(128, 784, 512), (512, 128, 784), (300, 70, 10)])
def test_every_path_gives_one_set_of_bits(m, k, n):
    """The product eagerly (blocks over the helper threads where it is big), from the
    compiler's call sites (one thread or the helpers as they are free), under jit, and a
    block at a time: the bits of one call of the kernel."""
    rng = np.random.default_rng(2)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    want = sgemm.product(a, b, np.empty((m, n), np.float32))
    np.testing.assert_array_equal(blas.matmul(a, b), want)
    np.testing.assert_array_equal(np.asarray(jnp.asarray(a) @ jnp.asarray(b)), want)
    np.testing.assert_array_equal(np.asarray(jax.jit(jnp.matmul)(a, b)), want)
    np.testing.assert_array_equal(np.asarray(jnp.dot(jnp.asarray(b).T, jnp.asarray(a).T)),
                                  want.T)
    blocks = blas.blocks_for(m, k, n)
    if len(blocks.bounds) > 2:
        # the compiled job of blocks, forced (the helpers may be busy or asleep otherwise)
        out = np.full((m, n), np.nan, np.float32)
        if blas._own_blocks(a, b, out, blocks, 1.0, 0.0):
            np.testing.assert_array_equal(out, want)
        else:       # the helpers were taken: nothing ran
            assert np.isnan(out).all()
    # accumulating (the SGD update fused into the weight-gradient product)
    c0 = rng.standard_normal((m, n)).astype(np.float32)
    c = c0.copy()
    blas.accumulate(a, b, c, -0.01, None)
    np.testing.assert_array_equal(c, _spec(a, b, c0, -0.01, 1.0) if k < 200 else
                                  sgemm.product(a, b, c0.copy(), -0.01, 1.0))


def test_a_compiled_loop_calls_the_same_kernel():
    """Products inside a fori_loop (compiled code calling the kernel by address, where they
    are big enough for BLAS) have the bits of the eager products, a vector one and x @ x.T
    included."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((96, 96)).astype(np.float32)
    w = rng.standard_normal((96, 96)).astype(np.float32) / 10
    u = rng.standard_normal((1, 1024)).astype(np.float32)
    big = rng.standard_normal((1024, 1024)).astype(np.float32) / 32

    def body(i, carry):
        h, g, v = carry
        return jnp.tanh(h @ w), jnp.tanh(g @ g.T / 96), jnp.tanh(v @ big)

    h, g, v = jax.jit(lambda h, g, v: jax.lax.fori_loop(0, 3, body, (h, g, v)))(x, x, u)
    he, ge, ve = jnp.asarray(x), jnp.asarray(x), jnp.asarray(u)
    for i in range(3):
        he, ge, ve = body(i, (he, ge, ve))
    np.testing.assert_array_equal(np.asarray(h), np.asarray(he))
    np.testing.assert_array_equal(np.asarray(g), np.asarray(ge))
    np.testing.assert_array_equal(np.asarray(v), np.asarray(ve))


def test_an_output_sharing_memory_with_an_operand():
    """blas.matmul / accumulate / batched_matmul into a buffer an operand reads (as NumPy's
    matmul allows): the product of the operands as they were."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((64, 64)).astype(np.float32)
    y = rng.standard_normal((64, 64)).astype(np.float32)
    want = sgemm.product(x, y, np.empty((64, 64), np.float32))
    a = x.copy()
    np.testing.assert_array_equal(blas.matmul(a, y, a), want)
    b = y.copy()
    np.testing.assert_array_equal(blas.matmul(x, b, b), want)
    c = x.copy()
    blas.accumulate(c, y, c, 0.5, None)
    np.testing.assert_array_equal(c, sgemm.product(x, y, x.copy(), 0.5, 1.0))
    xs, ys = np.stack([x, y]), np.stack([y, x])
    wants = np.stack([want, sgemm.product(y, x, np.empty((64, 64), np.float32))])
    np.testing.assert_array_equal(blas.batched_matmul(xs, ys, xs), wants)


def test_the_bits_do_not_depend_on_the_vector_width(tmp_path):
    """A host without AVX-512 (8-lane vectors: 6 x 16 tiles, forced here) computes the bits
    this one does, through every path of the driver (edges, scratch tiles, the transposed
    product, a transposed B, alpha and beta)."""
    import os
    import subprocess
    import sys
    shapes = [(13, 300, 33), (128, 784, 40), (96, 512, 10), (70, 600, 1), (40, 257, 64),
              (130, 70, 100), (7, 513, 17)]
    script = "\n".join([
        "import numpy as np, sys",
        "from corejax.compiler import sgemm",
        f"shapes = {shapes!r}",
        "assert sgemm.VW == int(sys.argv[2]), sgemm.VW",
        "outs = {}",
        "for i, (m, k, n) in enumerate(shapes):",
        "    rng = np.random.default_rng(i)",
        "    a = rng.standard_normal((m, k)).astype(np.float32)",
        "    b = rng.standard_normal((k, n)).astype(np.float32)",
        "    c = rng.standard_normal((m, n)).astype(np.float32)",
        "    outs[f'p{i}'] = sgemm.product(a, b, np.empty((m, n), np.float32))",
        "    outs[f't{i}'] = sgemm.product(np.asfortranarray(a), b, c.copy(), -0.5, 2.0)",
        "    outs[f'b{i}'] = sgemm.product(a, np.asfortranarray(b), np.empty((m, n), np.float32))",
        "np.savez(sys.argv[1], **outs)"])
    results = []
    for lanes in ("16", "8"):
        path = tmp_path / f"lanes{lanes}.npz"
        env = dict(os.environ, COREJAX_SGEMM_LANES=lanes)
        done = subprocess.run([sys.executable, "-c", script, str(path), lanes], env=env,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        results.append(np.load(path))
    assert sorted(results[0].files) == sorted(results[1].files)
    for name in results[0].files:
        np.testing.assert_array_equal(results[0][name], results[1][name], err_msg=name)


def test_negative_strides_are_read_through_a_copy():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((40, 300)).astype(np.float32)
    b = rng.standard_normal((300, 50)).astype(np.float32)
    for x, y in ((a[::-1], b), (a, b[:, ::-1]), (a[:, ::-1], b[::-1])):
        want = sgemm.product(np.ascontiguousarray(x), np.ascontiguousarray(y),
                             np.empty((40, 50), np.float32))
        np.testing.assert_array_equal(sgemm.product(x, y, np.empty((40, 50), np.float32)),
                                      want)
    with pytest.raises(ValueError, match="cannot write in place"):
        sgemm.product(a, b, np.empty((40, 50), np.float32)[::-1])


def test_openblas_can_be_asked_for():
    """COREJAX_SGEMM=openblas: float32 products go back to OpenBLAS (its plans and blocks),
    eagerly and under jit with one set of bits, and compiled code calls OpenBLAS's gemm."""
    import os
    import subprocess
    import sys
    script = "\n".join([
        "import numpy as np, corejax as jax, corejax.numpy as jnp",
        "from corejax.compiler import blas",
        "assert not blas.own_kernel(np.float32)",
        "assert blas.gemm_symbol(np.float32) in (None, blas._cblas_address(np.dtype('f'), 'gemm'))",
        "rng = np.random.default_rng(0)",
        "a = rng.standard_normal((128, 784)).astype(np.float32)",
        "b = rng.standard_normal((784, 512)).astype(np.float32)",
        "eager = np.asarray(jnp.asarray(a) @ jnp.asarray(b))",
        "assert np.array_equal(eager, np.asarray(jax.jit(jnp.matmul)(a, b)))",
        "exact = a.astype(np.float64) @ b",
        "assert np.abs(eager - exact).max() < 1e-4 * np.abs(exact).max()",
        "print('ok')"])
    env = dict(os.environ, COREJAX_SGEMM="openblas")
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]
