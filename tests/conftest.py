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
