"""The CUDA backend's tiled GEMM (compiler/cuda_gemm.py): dot_general and conv_general_dilated
over edge tiles, operand layouts, batches, groups, dilations and a reduction split over
blocks, against NumPy in float64 (matmuls) and the CPU backend (convolutions); the split
reduction gives the same bits at every call. Runs in Numba's CUDA simulator (small tiles) and
on a GPU. `NUMBA_ENABLE_CUDASIM=1 python -m pytest -q tests/test_cuda_gemm.py`."""
import numpy as np
import pytest
from numba import cuda

if not cuda.is_available():
    pytest.skip("needs a CUDA GPU or NUMBA_ENABLE_CUDASIM=1", allow_module_level=True)

import corejax as jax
import corejax.numpy as jnp
from corejax import lax
from corejax.compiler import compile_jaxpr, cuda_gemm, cuda_kernels

from test_cuda_compiler import _host, run_both

pytestmark = pytest.mark.filterwarnings("ignore::numba.core.errors.NumbaPerformanceWarning")


def _rand(shape, seed, dtype=np.float32):
    x = np.random.default_rng(seed).standard_normal(shape)
    if np.dtype(dtype).kind in "iu":
        return (x * 4).astype(dtype)
    return x.astype(dtype)


@pytest.fixture(params=["whole", "split"])
def splitting(request, monkeypatch):
    """Plans with the reduction whole (one block is enough) or split (a target of more
    blocks than the tiles give)."""
    target = 1 if request.param == "whole" else 24
    monkeypatch.setattr(cuda_kernels, "target_blocks", lambda: target)
    return request.param


def _cuda_run(fn, *args):
    closed = jax.make_jaxpr(fn)(*args)
    exe = compile_jaxpr(closed, "cuda")
    return exe, [_host(o) for o in exe(*args)]


def _labels(exe):
    return " ".join(label for label, _, _ in exe.kernels)


# M x K @ K x N with every operand layout: each operand's contiguous axis is its rows or its
# reduction axis (the loads switch which axis consecutive threads read).
@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (9, 33, 3), (13, 2, 17)])
@pytest.mark.parametrize("layout", ["nn", "tn", "nt", "tt"])
def test_matmul_layouts_and_edges(m, k, n, layout, splitting):
    a = _rand((m, k) if layout[0] == "n" else (k, m), 1)
    b = _rand((k, n) if layout[1] == "n" else (n, k), 2)
    fa = (lambda x: x) if layout[0] == "n" else (lambda x: x.T)
    fb = (lambda x: x) if layout[1] == "n" else (lambda x: x.T)
    exe, (got,) = _cuda_run(lambda p, q: fa(p) @ fb(q), a, b)
    want = fa(a).astype(np.float64) @ fb(b).astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert not exe.fallbacks
    split = "split reduction" in _labels(exe)
    assert split == (splitting == "split" and -(-k // cuda_gemm.BK) >= 2 * cuda_gemm.MIN_KT)


def test_batched_and_middle_batch_products(splitting):
    a, b = _rand((3, 6, 11), 3), _rand((3, 11, 5), 4)
    _, (got,) = _cuda_run(lambda p, q: jnp.einsum("bij,bjk->bik", p, q), a, b)
    np.testing.assert_allclose(got, np.einsum("bij,bjk->bik", a.astype(np.float64), b),
                               rtol=1e-5, atol=1e-5)
    c, d = _rand((5, 2, 9), 5), _rand((9, 2, 3), 6)
    _, (got,) = _cuda_run(lambda p, q: jnp.einsum("ibj,jbk->bik", p, q), c, d)
    np.testing.assert_allclose(got, np.einsum("ibj,jbk->bik", c.astype(np.float64), d),
                               rtol=1e-5, atol=1e-5)


def test_float64_and_integer_products(splitting):
    prev = jax.config.enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        a, b = _rand((6, 10), 7, np.float64), _rand((10, 7), 8, np.float64)
        _, (got,) = _cuda_run(lambda p, q: p @ q, a, b)
        assert got.dtype == np.float64
        np.testing.assert_allclose(got, a @ b, rtol=1e-13, atol=1e-13)
        for dt in (np.int32, np.int64):
            a, b = _rand((5, 9), 9, dt), _rand((9, 4), 10, dt)
            _, (got,) = _cuda_run(lambda p, q: p @ q, a, b)
            assert got.dtype == dt
            np.testing.assert_array_equal(got, a @ b)
    finally:
        jax.config.update("jax_enable_x64", prev)


def test_empty_reduction_and_empty_output():
    a, b = np.zeros((3, 0), np.float32), np.zeros((0, 4), np.float32)
    _, (got,) = _cuda_run(lambda p, q: p @ q + 1.0, a, b)
    np.testing.assert_array_equal(got, np.ones((3, 4), np.float32))
    _, (got,) = _cuda_run(lambda p, q: p @ q, np.ones((0, 3), np.float32),
                          np.ones((3, 4), np.float32))
    assert got.shape == (0, 4)


def test_split_reduction_gives_the_same_bits_every_call(monkeypatch):
    monkeypatch.setattr(cuda_kernels, "target_blocks", lambda: 10_000)
    k = 3 * cuda_gemm.MIN_KT * cuda_gemm.BK + 5           # long enough to split at any tile size
    a, b = _rand((6, k), 11), _rand((k, 5), 12)
    closed = jax.make_jaxpr(lambda p, q: p @ q)(a, b)
    exe = compile_jaxpr(closed, "cuda")
    assert "split reduction" in _labels(exe)
    first = _host(exe(a, b)[0])
    for _ in range(3):
        np.testing.assert_array_equal(_host(exe(a, b)[0]), first)


def test_plan_splits_only_when_blocks_are_few(monkeypatch):
    monkeypatch.setattr(cuda_kernels, "target_blocks", lambda: 16)
    bm, bn, bk = cuda_gemm.BM, cuda_gemm.BN, cuda_gemm.BK
    many = cuda_gemm.gemm_plan(1, 64 * bm, 64 * bn, 64 * bk)
    assert many.nsplit == 1 and many.scratch == 0
    few = cuda_gemm.gemm_plan(1, bm, bn, 64 * bk)
    assert few.nsplit == 16 and few.kchunk * few.nsplit >= 64 * bk
    assert (few.nsplit - 1) * few.kchunk < 64 * bk          # no empty chunk
    assert few.scratch == few.nsplit * bm * bn
    short = cuda_gemm.gemm_plan(1, bm, bn, bk)   # too short to split
    assert short.nsplit == 1


def test_split_loop_parts_are_contiguous_and_never_empty(monkeypatch):
    """cuda_kernels.split_loop, shared by the GEMM's reduction and the column reductions."""
    monkeypatch.setattr(cuda_kernels, "target_blocks", lambda: 16)
    for blocks, n, min_part in [(1, 100, 4), (3, 100, 4), (1, 7, 4), (16, 1000, 1), (2, 0, 4),
                                (1, 64, 1), (5, 1001, 8)]:
        parts, length = cuda_kernels.split_loop(blocks, n, min_part)
        assert parts >= 1 and (parts - 1) * length < max(n, 1) and parts * length >= n
        assert parts == 1 or (length >= min_part and blocks * parts <= 16 + blocks)
    assert cuda_kernels.split_loop(16, 1000, 1) == (1, 1000)      # the blocks fill the GPU
    assert cuda_kernels.split_loop(1, 7, 4) == (1, 7)             # too short to split
    assert cuda_kernels.split_loop(1, 64, 1) == (16, 4)


# --- convolutions -----------------------------------------------------------------------------

NHWC = ("NHWC", "HWIO", "NHWC")


def _conv(**kw):
    return lambda p, q: lax.conv_general_dilated(p, q, **kw)


# (tests/test_cuda_compiler.py's program cases run more convolutions with the default plans)
CONVS = {
    "strided_dilated": ((2, 9, 8, 3), (3, 2, 3, 4),
                        dict(window_strides=(2, 1), padding=((1, 0), (2, 1)),
                             lhs_dilation=(1, 2), rhs_dilation=(2, 1), dimension_numbers=NHWC)),
    "nchw_feature_groups": ((2, 6, 5, 5), (9, 2, 2, 2),
                            dict(window_strides=(1, 1), padding="VALID", feature_group_count=3)),
    "batch_groups": ((6, 2, 5, 4), (6, 2, 2, 2),
                     dict(window_strides=(1, 1), padding="VALID", batch_group_count=3)),
    "conv_3d": ((1, 2, 4, 5, 3), (3, 2, 2, 3, 2),
                dict(window_strides=(1, 2, 1), padding="SAME")),
    # a weight gradient's shape: few outputs, a reduction over the batch and positions
    "long_reduction": ((2, 5, 9, 9), (3, 5, 8, 8),
                       dict(window_strides=(1, 1), padding="VALID")),
}


@pytest.fixture
def split(monkeypatch):
    monkeypatch.setattr(cuda_kernels, "target_blocks", lambda: 24)


@pytest.mark.parametrize("name", list(CONVS))
def test_convolutions_match_cpu(name, split):
    ls, rs, kw = CONVS[name]
    exe = run_both(_conv(**kw), (_rand(ls, 20), _rand(rs, 21)), rtol=1e-4, atol=1e-5)
    assert not exe.fallbacks


@pytest.mark.parametrize("stride", [1, 2])
def test_convolution_gradients_match_cpu(stride, split):
    """The input gradient (an lhs-dilated convolution when strided) and the kernel gradient
    (batch as the reduction) of a NHWC convolution."""
    def grads(x, w):
        f = lambda x, w: jnp.sum(jnp.tanh(lax.conv_general_dilated(
            x, w, (stride, stride), "SAME", dimension_numbers=NHWC)))
        return jax.grad(f, argnums=(0, 1))(x, w)
    exe = run_both(grads, (_rand((2, 5, 5, 2), 22), _rand((3, 3, 2, 3), 23)),
                   rtol=1e-4, atol=1e-5)
    assert not exe.fallbacks


def test_empty_convolutions():
    x, w = np.zeros((0, 5, 5, 2), np.float32), _rand((3, 3, 2, 4), 24)
    _, (got,) = _cuda_run(_conv(window_strides=(1, 1), padding="SAME",
                                dimension_numbers=NHWC), x, w)
    assert got.shape == (0, 5, 5, 4)
    x, w = _rand((2, 5, 5, 0), 25), np.zeros((3, 3, 0, 4), np.float32)
    _, (got,) = _cuda_run(_conv(window_strides=(1, 1), padding="SAME",
                                dimension_numbers=NHWC), x, w)
    np.testing.assert_array_equal(got, np.zeros((2, 5, 5, 4), np.float32))


def test_conv_table_offsets():
    t = cuda_gemm.conv_table(2, (2, 3), ls_c=7, rs_i=100, rd=(2, 5), rs=(30, 10))
    t = t.reshape(2, 6, 4)
    c, k0, k1 = 1, 1, 2                       # q = c * 6 + k0 * 3 + k1
    np.testing.assert_array_equal(t[c, k0 * 3 + k1], [7, 2, 10, 100 + 30 + 20])
