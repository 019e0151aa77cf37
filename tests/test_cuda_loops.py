"""Small loops on CUDA as one single-block kernel (compiler/cuda_loops.py), under Numba's CUDA
simulator: every loop gives the CPU backend's values and its plan says it runs in one launch;
loops the kernel cannot hold keep the host-driven form and say why. (tests/test_ptx.py
compiles the same loop kernels to PTX.) Run with
`NUMBA_ENABLE_CUDASIM=1 python -m pytest -q tests/test_cuda_loops.py`."""
import numpy as np
import pytest
from numba import cuda

if not cuda.is_available():
    pytest.skip("needs a CUDA GPU or NUMBA_ENABLE_CUDASIM=1", allow_module_level=True)

import corejax as jax
import corejax.numpy as jnp
from corejax import lax
from corejax.compiler import compile_jaxpr, cuda_loops

from test_ptx import loop_cases

pytestmark = pytest.mark.filterwarnings("ignore::numba.core.errors.NumbaPerformanceWarning")

ONE_LAUNCH = "the whole loop in one launch"


def _host(x):
    return x._value.copy_to_host().reshape(x.shape)


def run_both(fn, *args, one_launch=True, rtol=1e-5):
    closed = jax.make_jaxpr(fn)(*args)
    exe = compile_jaxpr(closed, "cuda")
    got = exe(*args)
    want = compile_jaxpr(closed, "cpu")(*args)
    for g, w in zip(got, want):
        g, w = _host(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        if w.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=rtol, atol=1e-6)
        else:
            np.testing.assert_array_equal(g, w)
    loops = [line for line in exe.plan if " while" in line or " scan" in line]
    assert loops
    assert all((ONE_LAUNCH in line) == one_launch for line in loops), exe.plan
    return exe


@pytest.mark.parametrize("label", [c[0] for c in loop_cases()])
def test_loop_matches_cpu_in_one_launch(label):
    fn, args = {c[0]: c[1:] for c in loop_cases()}[label]
    exe = run_both(fn, *args, rtol=1e-4)
    if label == "rnn_grad":          # the forward and the transposed scan
        assert sum(ONE_LAUNCH in line for line in exe.plan) == 2


def test_data_dependent_while_counts_collatz_steps():
    fn = {c[0]: c[1] for c in loop_cases()}["collatz"]
    exe = compile_jaxpr(jax.make_jaxpr(fn)(jnp.int32(1)), "cuda")
    for n in (1, 6, 7):
        want, m = 0, n
        while m != 1:
            m, want = (m // 2 if m % 2 == 0 else 3 * m + 1), want + 1
        assert int(_host(exe(jnp.int32(n))[0])) == want


def test_big_or_unsupported_loops_stay_host_driven():
    big = jnp.ones(cuda_loops.LOOP_MAX_SIZE + 1)
    exe = run_both(lambda p: lax.fori_loop(0, 2, lambda i, v: v + 1.0, p), big,
                   one_launch=False)
    assert any("host-driven: a value of" in line for line in exe.plan)
    x = jnp.asarray(np.random.default_rng(0).standard_normal(6).astype(np.float32))
    exe = run_both(lambda p: lax.fori_loop(0, 2, lambda i, v: v.at[i].max(0.5), p), x,
                   one_launch=False)
    assert any("host-driven: the primitive scatter-max" in line for line in exe.plan)


def test_small_cond_picks_its_branch_on_the_device():
    x = jnp.asarray(np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32))
    f = lambda p, i: lax.switch(i, [lambda v: jnp.sin(v), lambda v: v @ jnp.ones((4, 4)),
                                    lambda v: jnp.cumsum(v, axis=0) * 0 + jnp.max(v)], p)
    closed = jax.make_jaxpr(f)(x, jnp.int32(0))
    exe = compile_jaxpr(closed, "cuda")
    assert any("the whole branch in one launch" in line for line in exe.plan), exe.plan
    cpu = compile_jaxpr(closed, "cpu")
    for i in (-1, 0, 1, 2, 7):                 # out-of-range indices clamp, as lax.switch
        np.testing.assert_allclose(_host(exe(x, jnp.int32(i))[0]),
                                   np.asarray(cpu(x, jnp.int32(i))[0]), rtol=1e-5)
    big = jnp.ones(cuda_loops.LOOP_MAX_SIZE + 1)
    exe = compile_jaxpr(jax.make_jaxpr(lambda p, i: lax.cond(i > 0, jnp.sin, jnp.cos, p))(
        big, 1), "cuda")
    assert any("cond (host-driven: a value of" in line for line in exe.plan), exe.plan
