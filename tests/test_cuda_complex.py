"""Complex values and FFTs on the CUDA backend (under Numba's CUDA simulator in CI): no CUDA
kernel handles complex numbers or the fft primitive, so each such step is a listed host
fallback and the results match the CPU backend's. Run with
`NUMBA_ENABLE_CUDASIM=1 python -m pytest -q tests/test_cuda_complex.py`."""
import numpy as np
import pytest
from numba import cuda

if not cuda.is_available():
    pytest.skip("needs a CUDA GPU or NUMBA_ENABLE_CUDASIM=1", allow_module_level=True)

import corejax as jax
import corejax.numpy as jnp
from corejax.compiler import compile_jaxpr


def test_complex_and_fft_steps_fall_back_to_the_host_and_match_cpu():
    def f(x, z):
        return (jnp.fft.rfft(x * 2.0) * z, jnp.abs(jnp.exp(z)) + x[:4],
                jnp.fft.irfft(z, n=6), jnp.real(z) * x[:4])

    x = np.arange(6, dtype=np.float32)
    z = (np.arange(4) + 1j * np.linspace(-1, 1, 4)).astype(np.complex64)
    closed = jax.make_jaxpr(f)(x, z)
    exe = compile_jaxpr(closed, "cuda")
    got, want = exe(x, z), compile_jaxpr(closed, "cpu")(x, z)
    for g, w in zip(got, want):
        assert g.device.platform == "cuda"
        host = g._value.copy_to_host() if hasattr(g._value, "copy_to_host") else np.asarray(g)
        assert host.dtype == np.asarray(w).dtype
        np.testing.assert_allclose(host, np.asarray(w), rtol=1e-5, atol=1e-6)
    plan = exe.as_text()
    assert "HOST FALLBACK fft" in plan and "HOST FALLBACK exp" in plan
