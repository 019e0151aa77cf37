"""Reductions of fused groups on the CUDA backend (compiler/cuda_codegen.py), in every mode:
"serial" (short), "row" (long, reduced elements innermost) and "cols" (long, kept elements
innermost: a bias gradient's sum over the batch), that one with its reduction whole or split
over blocks, against float64 sums (within float32 rounding in any order: the order depends on
the GPU's size) and the CPU backend's max / min / integer results exactly; elementwise
outputs of the same group alongside; the same bits at every call. Simulator and GPU: `NUMBA_ENABLE_CUDASIM=1 python -m pytest -q
tests/test_cuda_reductions.py`."""
import numpy as np
import pytest
from numba import cuda

if not cuda.is_available():
    pytest.skip("needs a CUDA GPU or NUMBA_ENABLE_CUDASIM=1", allow_module_level=True)

import corejax as jax
import corejax.numpy as jnp
from corejax.compiler import compile_jaxpr, cuda_codegen, cuda_kernels

from test_cuda_compiler import _host, run_both

pytestmark = pytest.mark.filterwarnings("ignore::numba.core.errors.NumbaPerformanceWarning")


def _rand(shape, seed, dtype=np.float32):
    x = np.random.default_rng(seed).standard_normal(shape)
    return (x * 3).astype(dtype) if np.dtype(dtype).kind in "iu" else x.astype(dtype)


@pytest.fixture(params=["whole", "split"])
def chunks(request, monkeypatch):
    monkeypatch.setattr(cuda_kernels, "target_blocks",
                        lambda: 1 if request.param == "whole" else 10_000)
    return request.param


def _cuda_run(fn, *args):
    closed = jax.make_jaxpr(fn)(*args)
    exe = compile_jaxpr(closed, "cuda")
    return exe, [_host(o) for o in exe(*args)]


def _assert_sum(got, terms, axis):
    """A float32 sum against float64's, within a bound for float32 rounding in any order:
    1e-5 of the sum of the terms' magnitudes (one term left out or counted twice is off by
    about 1/n of that, a hundred times more for the sizes here)."""
    terms = np.asarray(terms, np.float64)
    want, scale = terms.sum(axis), np.abs(terms).sum(axis)
    assert got.shape == want.shape
    assert np.all(np.abs(got - want) <= 1e-5 * scale), np.max(np.abs(got - want) / scale)


def _modes(exe):
    return [line.split("(fused, ")[1].split(")")[0] for line in exe.plan if "(fused, " in line]


# longer than a serial reduction, and long enough to split in a few chunks
LONG = max(cuda_codegen.SERIAL_MAX + 1, 3 * cuda_codegen.COLS_MIN) + 7


@pytest.mark.parametrize("red", ["sum", "max", "prod"])
def test_column_reductions_match_cpu(red, chunks):
    """Sums against float64 (their rounding depends on the order, which depends on the GPU's
    size); max, min and the product of terms near 1 against the CPU backend (tanh's ulp)."""
    x = _rand((LONG, 5), 1) * (0.05 if red == "prod" else 1.0)
    f = lambda a: getattr(jnp, red)(jnp.tanh(a) + 0.5, axis=0)
    if red == "sum":
        exe, (got,) = _cuda_run(f, x)
        _assert_sum(got, np.tanh(x.astype(np.float64)) + 0.5, 0)
    else:
        exe = run_both(f, (x,), rtol=2e-5 if red != "prod" else 1e-4, atol=0)
    assert _modes(exe) == ["cols"]
    assert any("chunks combined" in k[0] for k in exe.kernels) == (chunks == "split")


def test_column_reduction_with_elementwise_outputs_and_kept_dims(chunks):
    """A bias gradient's shape: (N, H, W, C) summed over N, H, W with the relu mask applied
    and the masked gradient also an output; and a middle reduced dim with two kept ones."""
    g, x = _rand((4, 6, 5, 7), 2), _rand((4, 6, 5, 7), 3)

    def bias_grad(g, x):
        d = jnp.where(x > 0, g, 0.0)
        return d, jnp.sum(d, axis=(0, 1, 2))
    exe, (d, db) = _cuda_run(bias_grad, g, x)
    assert "cols" in _modes(exe)
    want = np.where(x > 0, g, 0.0)
    np.testing.assert_array_equal(d, want)
    _assert_sum(db, want, (0, 1, 2))
    y = _rand((3, LONG, 5), 4)
    exe, (got,) = _cuda_run(lambda a: jnp.sum(a * 2.0, axis=1), y)
    assert _modes(exe) == ["cols"]
    _assert_sum(got, y.astype(np.float64) * 2.0, 1)


def test_column_reductions_of_nan_integers_and_booleans(monkeypatch):
    monkeypatch.setattr(cuda_kernels, "target_blocks", lambda: 10_000)     # split
    x = _rand((LONG, 6), 5)
    x[7, 1], x[LONG - 1, 4] = np.nan, np.nan
    run_both(lambda a: (jnp.max(a * 1.0, axis=0), jnp.min(a * 1.0, axis=0)), (x,))
    i = _rand((LONG, 3), 6, np.int32)
    run_both(lambda a: (jnp.sum(a + 1, axis=0), jnp.max(a * 2, axis=0)), (i,))   # exact
    b = _rand((LONG, 4), 7) > 1.5
    run_both(lambda a: (jnp.any(a, axis=0), jnp.all(~a, axis=0)), (b,))


def test_row_and_serial_modes_still_serve_their_shapes():
    x = _rand((5, LONG), 8)
    exe, (got,) = _cuda_run(lambda a: jnp.sum(jnp.exp(a), axis=1), x)
    assert _modes(exe) == ["row"]
    _assert_sum(got, np.exp(x.astype(np.float64)), 1)
    y = _rand((9, 5), 9)
    exe, (got,) = _cuda_run(lambda a: jnp.sum(jnp.exp(a), axis=0), y)
    assert _modes(exe) == ["serial"]
    _assert_sum(got, np.exp(y.astype(np.float64)), 0)


def test_split_column_reduction_gives_the_same_bits_every_call(monkeypatch):
    monkeypatch.setattr(cuda_kernels, "target_blocks", lambda: 10_000)
    x = _rand((LONG, 3), 10)
    closed = jax.make_jaxpr(lambda a: jnp.sum(jnp.sin(a), axis=0))(x)
    exe = compile_jaxpr(closed, "cuda")
    first = _host(exe(x)[0])
    for _ in range(3):
        np.testing.assert_array_equal(_host(exe(x)[0]), first)


def test_empty_column_reductions():
    x = np.zeros((LONG, 0), np.float32)
    closed = jax.make_jaxpr(lambda a: jnp.sum(a * 2.0, axis=0))(x)
    (got,) = compile_jaxpr(closed, "cuda")(x)
    assert _host(got).shape == (0,)
