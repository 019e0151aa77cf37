import contextlib
import importlib.util
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


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load_bench(name):
    """bench/<name>.py as a module (the benchmarks are scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "bench",
                                                                     name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def cache_dir(tmp_path):
    """A fresh kernel cache for one test (kernels compiled in this process, whose Numba
    dispatchers keep their assembly: none is kept for code loaded from a disk cache)."""
    prev = corejax.config.cache_dir
    corejax.config.update("cache_dir", str(tmp_path))
    try:
        yield tmp_path
    finally:
        corejax.config.update("cache_dir", prev)


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


def assert_described_close(got, want, path="out"):
    """A result as tests/golden/gen_pmap.py and gen_shard_map.py describe it (lists, dicts,
    {"raises": [...]}, {"text": ...}, or an array's value, dtype, shape and partition spec)
    against JAX's recorded one: arrays to float32 rounding, everything else exactly."""
    if isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), f"{path}: {got!r}"
        for i, (g, w) in enumerate(zip(got, want)):
            assert_described_close(g, w, f"{path}[{i}]")
        return
    assert isinstance(got, dict), f"{path}: {got!r} where JAX gives {want!r}"
    if "raises" in want or "text" in want:
        assert got == want, f"{path}: {got!r} where JAX gives {want!r}"
        return
    if "value" not in want:     # a dict of results
        assert sorted(got) == sorted(want), path
        for k in want:
            assert_described_close(got[k], want[k], f"{path}[{k!r}]")
        return
    assert "value" in got, f"{path}: {got!r} where JAX gives {want!r}"
    assert (got["dtype"], got["shape"], got.get("spec")) == \
        (want["dtype"], want["shape"], want.get("spec")), f"{path}: dtype, shape, spec"
    np.testing.assert_allclose(np.array(got["value"], dtype=float),
                               np.array(want["value"], dtype=float), rtol=2e-6, atol=1e-6,
                               err_msg=path)


# --- the collector's work over a long session ----------------------------------------------
# Numba keeps each compiled kernel's typed IR alive beside its machine code, so a process that
# has run a few thousand of these tests holds millions of objects, nearly all of them live for
# good, and every full collection (automatic, or a test's own gc.collect()) walked all of them:
# 100 s of each worker's 13 minutes. Every FREEZE_EVERY tests the cycles left behind are
# collected and what survives is moved out of the collector's generations (gc.freeze), so a
# collection walks only what the tests since then made. A frozen object that dies later in a
# reference cycle is not reclaimed: a bounded cost in a test process, never done in corejax.
FREEZE_EVERY = 100
_tests_run = 0


def pytest_runtest_logfinish(nodeid, location):
    global _tests_run
    _tests_run += 1
    if _tests_run % FREEZE_EVERY == 0:
        import gc
        gc.collect()
        gc.freeze()
