"""The CUDA backend under Numba's CUDA simulator: every program of tests/test_ptx.py's suite
gives the CPU backend's numbers, and the MNIST MLP / CNN training steps run with no host
fallback. Run with `NUMBA_ENABLE_CUDASIM=1 python -m pytest -q tests/test_cuda*.py`.

Host fallbacks of the CUDA backend (each listed in `as_text()` with its reason):

| primitive                          | reason                                           |
|------------------------------------|--------------------------------------------------|
| scatters with a rank-0 or literal  | nothing to index; scatter-add of int8/16, bool,  |
| operand, or of small dtypes        | mul/min/max of 8/16-bit: no atomic for them      |
| gather with a rank-0 operand       | nothing to index (NumPy broadcast)               |
| effectful primitives (debug print) | a host callback by nature                        |
| any primitive not listed in cuda.py| no CUDA kernel (e.g. float16/complex groups that |
|                                    | fusion leaves unfused)                           |
"""
import numpy as np
import pytest
from numba import cuda

if not cuda.is_available():
    pytest.skip("needs a CUDA GPU or NUMBA_ENABLE_CUDASIM=1", allow_module_level=True)

import corejax as jax
import corejax.numpy as jnp
from corejax import tree_util
from corejax.compiler import compile_jaxpr

from test_ptx import elementwise_cases, mlp_and_cnn_steps, program_cases

pytestmark = pytest.mark.filterwarnings("ignore::numba.core.errors.NumbaPerformanceWarning",
                                        "ignore::RuntimeWarning")


def _host(x):
    return x._value.copy_to_host() if hasattr(x._value, "copy_to_host") else np.asarray(x)


def run_both(fn, args, rtol=2e-5, atol=1e-6):
    flat, _ = tree_util.tree_flatten(args)
    closed = jax.make_jaxpr(lambda *a: fn(*tree_util.tree_unflatten(_, a)))(*flat)
    exe = compile_jaxpr(closed, "cuda")
    got = exe(*flat)
    want = compile_jaxpr(closed, "cpu")(*flat)
    assert len(got) == len(want)
    for g, w, aval in zip(got, want, closed.out_avals):
        assert g.device.platform == "cuda"
        assert g.weak_type == aval.weak_type
        gv, wv = _host(g), np.asarray(w)
        assert gv.shape == wv.shape and gv.dtype == wv.dtype
        if wv.dtype.kind == "f":
            np.testing.assert_allclose(gv, wv, rtol=rtol, atol=atol)
        else:
            np.testing.assert_array_equal(gv, wv)
    return exe


@pytest.fixture
def x64_on():
    prev = jax.config.enable_x64
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", prev)


def test_every_elementwise_primitive_matches_cpu(x64_on):
    failures = []
    for label, fn, args in elementwise_cases():
        # The CPU backend's float32 polynomials are within a few ulp of libdevice.
        try:
            run_both(fn, args, rtol=3e-6 if "float64" in label else 2e-5, atol=1e-30)
        except AssertionError as e:
            failures.append(f"{label}: {str(e)[:300]}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("label", [c[0] for c in program_cases()])
def test_program_matches_cpu(label):
    fn, args = {c[0]: c[1:] for c in program_cases()}[label]
    exe = run_both(fn, args, rtol=1e-4, atol=1e-5)
    assert not exe.fallbacks, exe.fallbacks


def test_threefry_bits_match_cpu():
    key = jax.random.PRNGKey(42)
    f = lambda k: jax.random.bits(k, (7,))
    closed = jax.make_jaxpr(f)(np.asarray(key))
    got = _host(compile_jaxpr(closed, "cuda")(np.asarray(key))[0])
    np.testing.assert_array_equal(got, np.asarray(f(key)))


def test_training_steps_run_on_device_without_fallback():
    for label, step, args in mlp_and_cnn_steps():
        exe = run_both(step, args, rtol=2e-4, atol=1e-6)
        assert not exe.fallbacks, (label, exe.fallbacks)
        assert "HOST FALLBACK" not in exe.as_text() and "host fallbacks: none" in exe.as_text()


def test_outputs_stay_on_device_and_feed_the_next_call():
    f = jax.make_jaxpr(lambda x: jnp.tanh(x) * 2.0)(np.ones(5, np.float32))
    exe = compile_jaxpr(f, "cuda")
    (y,) = exe(np.arange(5, dtype=np.float32))
    (z,) = exe(y)                      # a device Array in: used in place
    np.testing.assert_allclose(_host(z), np.tanh(np.tanh(np.arange(5.0)) * 2) * 2, rtol=1e-5)


def test_as_text_lists_kernels_and_fallbacks():
    idx = np.array([2, 0, 2], np.int32)
    # int16 has no atomic add: that scatter-add runs on the host
    f = lambda x, c, i: (jnp.exp(x) @ jnp.ones((4, 2)), c.at[i].add(jnp.int16(3)))
    c = np.arange(4, dtype=np.int16)
    closed = jax.make_jaxpr(f)(np.ones((3, 4), np.float32), c, idx)
    exe = compile_jaxpr(closed, "cuda")
    text = exe.as_text()
    assert "HOST FALLBACK scatter-add" in text and "device kernel dot_general" in text
    assert "def kernel(" in text and "cuda.shared.array" in text
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    got = exe(x, c, idx)
    np.testing.assert_allclose(_host(got[0]), np.exp(x) @ np.ones((4, 2)), rtol=1e-5)
    want = c.copy()
    np.add.at(want, idx, 3)
    np.testing.assert_array_equal(_host(got[1]), want)


# --- buffers reused from call to call (CudaExecutable._alloc / _stage) ---------------------------

def _cuda_jit(fn):
    return jax.jit(fn, backend="cuda")


def test_results_of_a_call_survive_the_next_calls():
    """Intermediates keep their buffers across calls; outputs never are one of them."""
    f = _cuda_jit(lambda x: (jnp.tanh(x) * 2.0 + 1.0).sum(axis=0) + x[0])
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((6, 5), dtype=np.float32) for _ in range(2))
    ra = f(a)
    want_a = np.asarray(ra).copy()
    rb = f(b)
    f(a)
    np.testing.assert_array_equal(np.asarray(ra), want_a)
    np.testing.assert_allclose(np.asarray(rb), (np.tanh(b) * 2 + 1).sum(0) + b[0], rtol=1e-5)


def test_outputs_aliasing_reused_buffers_are_copied_out():
    """A host input passed through (its staging buffer) and a reshape of an intermediate
    (an alias of its buffer) come back as buffers of their own."""
    f = _cuda_jit(lambda x, y: (x, jnp.reshape(y * 2.0, (-1,)), jnp.sum(y)))
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    x1, y1, _ = f(a, a + 1)
    x2, y2, _ = f(a + 10, a + 20)
    np.testing.assert_array_equal(np.asarray(x1), a)
    np.testing.assert_array_equal(np.asarray(y1), ((a + 1) * 2).reshape(-1))
    np.testing.assert_array_equal(np.asarray(x2), a + 10)
    np.testing.assert_array_equal(np.asarray(y2), ((a + 20) * 2).reshape(-1))


def test_a_loop_carry_of_a_reused_buffer_is_copied_out():
    """A host-driven while loop (its carry is over the one-launch limit of 32768 elements)
    whose body passes an intermediate through returns that buffer as the program's output."""
    def f(x):
        h = x * 3.0
        _, out = jax.lax.while_loop(lambda c: c[0] < 2, lambda c: (c[0] + 1, c[1]), (0, h))
        return out
    g = _cuda_jit(f)
    a = np.ones((33000,), np.float32)
    r1 = g(a)
    g(a * 5)
    np.testing.assert_array_equal(np.asarray(r1), a * 3)


def test_calls_from_threads_do_not_share_buffers_midway():
    import threading
    f = _cuda_jit(lambda x: jnp.exp(x) * 0.5 + jnp.sum(x))
    inputs = [np.full((3, 4), i, np.float32) for i in range(6)]
    results = [None] * len(inputs)

    def work(i):
        results[i] = np.asarray(f(inputs[i]))
    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(inputs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for x, r in zip(inputs, results):
        np.testing.assert_allclose(r, np.exp(x) * 0.5 + x.sum(), rtol=1e-6)
