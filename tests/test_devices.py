"""Devices and placement on a machine without a CUDA GPU (CI): the CPU is always there, CUDA is
refused with an error that says what to do, and nothing silently moves to another device."""
import pickle

import numpy as np
import pytest

import corejax as jax
import corejax.numpy as jnp
from corejax.array import CPU, Device, devices

try:
    from numba import cuda as _cuda
    _HAVE_CUDA = _cuda.is_available()
except Exception:  # pragma: no cover - numba is a dependency
    _HAVE_CUDA = False

no_gpu = pytest.mark.skipif(_HAVE_CUDA, reason="a CUDA device (or the simulator) is present")


@pytest.fixture
def platform():
    """Restores the default platform, and eager evaluation's placement checks with it: setting
    the platform to cuda turns them on for the rest of a process (arrays may live there from
    then on), which would leave the tests this worker runs next on the placing path."""
    from corejax.array import _Placement
    prev, checks = jax.config.platform, _Placement.cuda_in_use
    yield
    jax.config.update("platform", prev)
    _Placement.cuda_in_use = checks


def test_cpu_device_is_listed_first_and_arrays_live_there():
    assert jax.devices()[0] == CPU == Device("cpu", 0)
    assert jax.devices("cpu") == [CPU]
    x = jnp.arange(3.0)
    assert x.device == CPU and x.devices() == {CPU}
    assert str(CPU) == "cpu:0" and repr(CPU) == "CpuDevice(id=0)"


@no_gpu
def test_cuda_requested_without_gpu_is_a_clear_error():
    assert [d.platform for d in jax.devices()] == ["cpu"]
    with pytest.raises(RuntimeError, match="no usable CUDA GPU.*COREJAX_PLATFORM=cpu"):
        devices("cuda")
    with pytest.raises(RuntimeError, match="no usable CUDA GPU"):
        jax.device_put(np.ones(3), Device("cuda", 0))
    with pytest.raises(RuntimeError, match="no usable CUDA GPU"):
        jax.jit(lambda x: x + 1, backend="cuda")(np.ones(3, np.float32))


@no_gpu
def test_default_platform_cuda_without_gpu_fails_instead_of_falling_back(platform):
    jax.config.update("platform", "cuda")
    with pytest.raises(RuntimeError, match="no usable CUDA GPU"):
        jnp.ones(3) + 1
    with pytest.raises(RuntimeError, match="no usable CUDA GPU"):
        jax.device_put(np.ones(3))
    with pytest.raises(RuntimeError, match="no usable CUDA GPU"):
        jax.jit(lambda x: x * 2)(np.ones(3, np.float32))


def test_device_put_get_on_cpu():
    x = jax.device_put(np.arange(4, dtype=np.int64))
    assert x.dtype == np.int32 and x.device == CPU          # canonical dtype, x64 off
    y = jax.device_put({"a": x, "b": 2.0}, CPU)
    assert y["a"] is x and y["b"].weak_type
    got = jax.device_get({"a": x, "b": [jnp.ones(2)]})
    assert isinstance(got["a"], np.ndarray) and isinstance(got["b"][0], np.ndarray)
    np.testing.assert_array_equal(got["a"], [0, 1, 2, 3])
    with pytest.raises(TypeError, match="device_put expects a Device.*'cuda'"):
        jax.device_put(x, "cuda")


def test_arrays_pickle_as_host_values():
    x = jnp.linspace(0.0, 1.0, 5)
    y = pickle.loads(pickle.dumps(x))
    assert y.device == CPU and y.dtype == x.dtype
    np.testing.assert_array_equal(np.asarray(y), np.asarray(x))


def test_jit_runs_on_the_default_cpu_backend():
    f = jax.jit(lambda x: jnp.sin(x) * 2)
    out = f(jnp.arange(3.0))
    assert out.device == CPU
    np.testing.assert_allclose(np.asarray(out), np.sin(np.arange(3.0)) * 2, rtol=1e-6)
