"""Arrays on a CUDA device: placement, transfers, eager ops, jit, grad and train.py with
`backend: cuda`, each compared with the CPU.

Runs where numba.cuda finds a device: a real GPU, or Numba's simulator in CI
(`NUMBA_ENABLE_CUDASIM=1 python -m pytest -q tests/test_cuda*.py`), which runs every CUDA
thread as a Python thread, hence the tiny shapes.
"""
import json
import os
import pickle

import numpy as np
import pytest

from numba import cuda

if not cuda.is_available():
    pytest.skip("no CUDA device (set NUMBA_ENABLE_CUDASIM=1 to use Numba's simulator)",
                allow_module_level=True)

import corejax as jax                       # noqa: E402
import corejax.numpy as jnp                 # noqa: E402
from corejax import random                  # noqa: E402
from corejax.array import CPU               # noqa: E402

GPU = jax.devices("cuda")[0]


@pytest.fixture
def cuda_platform():
    prev = jax.config.platform
    jax.config.update("platform", "cuda")
    yield
    jax.config.update("platform", prev)


def on_cpu(x):
    return jax.device_put(x, CPU)


def test_devices_list_cpu_then_cuda():
    assert jax.devices() == [CPU, *jax.devices("cuda")]
    assert str(GPU) == "cuda:0" and repr(GPU) == "CudaDevice(id=0)" and GPU.platform == "cuda"


def test_device_put_get_round_trip():
    host = np.arange(6.0).reshape(2, 3)
    x = jax.device_put(host, GPU)
    assert x.device == GPU and x.devices() == {GPU}
    assert (x.shape, x.dtype, x.ndim, x.size, x.nbytes) == ((2, 3), np.float32, 2, 6, 24)
    np.testing.assert_array_equal(np.asarray(x), host)
    got = jax.device_get({"x": x})["x"]
    assert type(got) is np.ndarray
    np.testing.assert_array_equal(got, host)
    back = jax.device_put(x, CPU)
    assert back.device == CPU and repr(back) == repr(x)
    assert float(x[1, 2]) == 5.0 and x[0, 1].item() == 1.0 and x.tolist() == host.tolist()
    assert jax.device_put(x, GPU) is x and jax.device_put(x) is x
    y = pickle.loads(pickle.dumps(x))                  # host values: loads without a GPU
    assert y.device == CPU
    np.testing.assert_array_equal(np.asarray(y), host)
    c = x.copy()
    assert c.device == GPU and c._value is not x._value
    assert x.block_until_ready() is x and jax.block_until_ready({"a": x})["a"] is x


def test_eager_ops_run_on_the_operands_device():
    host = np.linspace(-1.0, 1.0, 6, dtype=np.float32).reshape(2, 3)
    x = jax.device_put(host, GPU)
    y = jnp.tanh(x) * 2.0 + jnp.ones(3)             # a CPU operand joins the GPU one
    assert y.device == GPU and y.dtype == np.float32 and not y.weak_type
    # libdevice's tanhf may differ from NumPy's by an ulp (1.2e-7 here), which the
    # cancellation near -0.074 makes a relative 1.6e-6: an absolute bound for that ulp.
    np.testing.assert_allclose(np.asarray(y), np.tanh(host) * 2 + 1, rtol=1e-6, atol=5e-7)
    s = x.sum(axis=0)
    assert s.device == GPU
    np.testing.assert_allclose(np.asarray(s), host.sum(0), rtol=1e-6)
    rows = list(x)
    assert [r.device for r in rows] == [GPU, GPU]
    np.testing.assert_array_equal(np.asarray(rows[1]), host[1])


def test_jit_follows_the_operands_device():
    f = jax.jit(lambda a, b: jnp.maximum(a @ b + 1.0, 0.0))
    a = np.arange(12, dtype=np.float32).reshape(3, 4) / 7
    b = np.arange(8, dtype=np.float32).reshape(4, 2) - 3
    out = f(jax.device_put(a, GPU), jax.device_put(b, GPU))
    assert out.device == GPU
    np.testing.assert_allclose(np.asarray(out), np.asarray(f(a, b)), rtol=1e-6)
    cpu = jax.jit(lambda a: a * 2, backend="cpu")(jax.device_put(a, GPU))
    assert cpu.device == CPU


def test_donated_arrays_on_the_gpu_are_consumed():
    step = jax.jit(lambda w, g: w - 0.5 * g, donate_argnums=0)
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    g = np.ones((2, 3), np.float32)
    wd = jax.device_put(w, GPU)
    out = step(wd, jax.device_put(g, GPU))
    assert out.device == GPU and wd.is_deleted()
    np.testing.assert_array_equal(np.asarray(out), w - 0.5 * g)
    with pytest.raises(RuntimeError, match="Array has been deleted"):
        np.asarray(wd)


def test_grad_on_device_matches_cpu():
    def loss(w, x):
        return jnp.mean(jnp.tanh(x @ w) ** 2)

    w = np.linspace(-0.5, 0.5, 6, dtype=np.float32).reshape(3, 2)
    x = np.linspace(0, 1, 12, dtype=np.float32).reshape(4, 3)
    g_gpu = jax.jit(jax.grad(loss))(jax.device_put(w, GPU), jax.device_put(x, GPU))
    g_cpu = jax.jit(jax.grad(loss))(w, x)
    assert g_gpu.device == GPU
    np.testing.assert_allclose(np.asarray(g_gpu), np.asarray(g_cpu), rtol=1e-5, atol=1e-7)


def test_default_platform_cuda_puts_new_arrays_on_the_gpu(cuda_platform):
    assert jnp.ones(3).device == GPU
    assert jax.device_put(np.ones(2)).device == GPU
    key = random.PRNGKey(42)
    prev = jax.config.threefry_partitionable
    jax.config.update("jax_threefry_partitionable", False)  # the seed's layout
    try:
        u = random.uniform(key)
    finally:
        jax.config.update("jax_threefry_partitionable", prev)
    assert u.device == GPU
    # The same bits as on the CPU: the seed's printed value.
    np.testing.assert_allclose(float(u), 0.42672753, rtol=0, atol=1e-7)


def test_train_py_with_backend_cuda(tmp_path, monkeypatch, cuda_platform):
    """train.py end to end with `backend: cuda` (config -> placement -> jitted step -> eval ->
    checkpoint), on 4x4 stand-in images: the simulator is far too slow for 784-wide layers."""
    import train
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (48, 4, 4, 1), dtype=np.uint8)
    labels = rng.integers(0, 10, 48).astype(np.int64)
    monkeypatch.setattr(train, "load_data",
                        lambda cfg: (images[:32], labels[:32], images[32:], labels[32:]))
    out = tmp_path / "run"
    rc = train.main(["--config", "configs/mlp.yaml", "--quiet", "--output-dir", str(out),
                     "--set", "backend=cuda", "--set", "model.args.features=[8]",
                     "--set", "train.batch_size=16", "--set", "train.epochs=1",
                     "--set", "train.eval_batch_size=16", "--set", "output.plot=false"])
    assert rc == 0
    records = [json.loads(line) for line in open(out / "metrics.jsonl")]
    assert any(r.get("test_accuracy") is not None for r in records)
    assert os.path.exists(out / "checkpoint.npz")
    # The checkpoint holds host values: it restores on the CPU.
    from data import checkpoint
    restored = checkpoint.restore(str(out / "checkpoint.npz"))
    leaves = jax.tree_util.tree_leaves(restored)
    assert leaves and all(isinstance(x, (np.ndarray, np.generic, int, float)) for x in leaves)


def test_freed_device_buffers_are_reused_by_size_class():
    """The caching allocator (corejax/_cuda_memory.py): a block whose last array is gone
    serves the next allocation of its size class. Numba's simulator keeps its own allocator."""
    from corejax._cuda_memory import size_class
    assert [size_class(n) for n in (0, 1, 512, 513, 4096, (1 << 20) + 1)] == \
        [512, 512, 512, 1024, 4096, 2 << 20]
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        pytest.skip("the simulator keeps Numba's allocator")
    a = cuda.device_array(1000, np.float32)
    ptr = a.device_ctypes_pointer.value
    del a
    b = cuda.device_array(900, np.float32)          # 3600 B: the same 4 KiB class
    assert b.device_ctypes_pointer.value == ptr
    c = cuda.device_array(900, np.float32)
    assert c.device_ctypes_pointer.value != ptr     # b still holds it


def test_array_factory_makes_the_arrays_device_array_makes():
    """corejax/_cuda_memory.ArrayFactory (a compiled program's fresh outputs): each call is a
    new array with memory of its own, the same in every attribute as Numba's device_array,
    usable by kernels and transfers, its memory reused once it is gone."""
    from corejax._cuda_memory import ArrayFactory
    sim = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
    for n, dt in ((1000, np.float32), (7, np.int64), (0, np.float32), (1, np.bool_)):
        make = ArrayFactory(n, dt)
        assert (make._state is None) == (sim or n == 0)
        a, b = make(), make()
        ref = cuda.device_array(n, dt)
        for arr in (a, b):
            assert type(arr) is type(ref)
            assert (arr.shape, arr.strides, arr.dtype, arr.size, arr.ndim) == \
                (ref.shape, ref.strides, ref.dtype, ref.size, ref.ndim)
            if not sim:
                assert arr.alloc_size == ref.alloc_size and arr.nbytes == ref.nbytes
                assert arr.__cuda_array_interface__["shape"] == (n,)
        if n and not sim:
            assert a.device_ctypes_pointer.value != b.device_ctypes_pointer.value
        if n == 0:
            continue
        host = (np.arange(n) % 3).astype(dt)
        a.copy_to_device(host)
        b.copy_to_device(host[::-1].copy())
        np.testing.assert_array_equal(a.copy_to_host(), host)
        np.testing.assert_array_equal(b.copy_to_host(), host[::-1])
    if sim:
        return
    make = ArrayFactory(1000, np.float32)
    a = make()
    ptr = a.device_ctypes_pointer.value
    del a
    assert make().device_ctypes_pointer.value == ptr         # the freed block, reused


def test_fresh_outputs_of_a_program_are_distinct_arrays_at_every_call():
    f = jax.jit(lambda x: (x * 2.0, x + 1.0), backend="cuda")
    x = np.arange(6, dtype=np.float32)
    first = f(x)
    second = f(x + 10.0)
    np.testing.assert_array_equal(np.asarray(first[0]), x * 2.0)
    np.testing.assert_array_equal(np.asarray(first[1]), x + 1.0)
    np.testing.assert_array_equal(np.asarray(second[0]), (x + 10.0) * 2.0)
    np.testing.assert_array_equal(np.asarray(second[1]), x + 11.0)
