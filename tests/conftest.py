import contextlib
import os

import numpy as np
import pytest

# Every eager primitive call is checked against its abstract evaluation (what jit would
# stage), so a rule that only runs eagerly fails here.
os.environ.setdefault("COREJAX_CHECK_EAGER_AVALS", "1")

import corejax  # noqa: E402


@pytest.fixture
def x64():
    """Runs a test with 64-bit types enabled (for finite differences), restoring the flag."""
    prev = corejax.config.enable_x64
    corejax.config.update("jax_enable_x64", True)
    try:
        yield
    finally:
        corejax.config.update("jax_enable_x64", prev)


@pytest.fixture
def mnist_dir():
    """The MNIST folder: $COREJAX_DATA_DIR, else ../shared/data/mnist beside the repo."""
    path = os.environ.get("COREJAX_DATA_DIR") or os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "..", "shared", "data",
        "mnist")
    if not os.path.isdir(path):
        pytest.skip(f"MNIST folder not found at {path}; set COREJAX_DATA_DIR")
    return path


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@contextlib.contextmanager
def cpu_devices(n):
    """n CPU devices (as XLA_FLAGS=--xla_force_host_platform_device_count=n gives JAX). The
    device list is fixed per process, so this swaps it and then puts the previous one back."""
    from corejax import array as _array, core
    prev_list, prev_value = _array._cpu_device_list, corejax.config.num_cpu_devices
    _array._cpu_device_list = None
    corejax.config.update("jax_num_cpu_devices", n)
    try:
        yield
    finally:
        _array._cpu_device_list = None
        corejax.config.update("jax_num_cpu_devices", prev_value)
        _array._cpu_device_list = prev_list
        # (arrays committed to cpu:2 installed the placing eager evaluation: the other modules
        # run with the plain one, as a process that never commits an array does)
        _array._Placement.cpu_committed = False
        core.eval_hooks.apply_primitive = _array.apply_primitive


@pytest.fixture
def four_devices():
    """4 CPU devices for one test."""
    with cpu_devices(4):
        yield
