"""The PRNG on the CUDA backend gives JAX's bits: the golden cases of tests/test_random.py for
split, fold_in, bits, uniform, normal and randint (both threefry layouts), jitted for CUDA and
eagerly with the default platform set to cuda. Runs under Numba's CUDA simulator in CI
(`NUMBA_ENABLE_CUDASIM=1`) and on a real GPU where there is one."""
import numpy as np
import pytest

from numba import cuda

if not cuda.is_available():
    pytest.skip("no CUDA device (set NUMBA_ENABLE_CUDASIM=1 to use Numba's simulator)",
                allow_module_level=True)

import corejax                                                     # noqa: E402
from corejax import random                                         # noqa: E402
from test_random import (SAMPLER_CASES, _run, _sampler, assert_matches_golden,  # noqa: E402
                         flags)

GPU = corejax.devices("cuda")[0]
FNS = ("split", "fold_in", "bits", "uniform", "normal", "randint")


def _some_cases(per_group=4):
    """A few small cases per (function, bit layout): the simulator runs a Python thread per
    CUDA thread."""
    picked, seen = [], {}
    for c in SAMPLER_CASES:
        group = (c["fn"], c["partitionable"])
        if c["fn"] in FNS and not c["x64"] and c["expected"].size <= 64 and \
                seen.get(group, 0) < per_group:
            seen[group] = seen.get(group, 0) + 1
            picked.append(c)
    return picked


CASES = _some_cases()


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["id"])
def test_sampler_jitted_for_cuda_matches_jax(case):
    with flags(case["partitionable"], case["x64"]):
        sample, key = _sampler(case)
        got = _run(lambda: corejax.jit(sample, backend="cuda")(key))
        assert all(leaf.device == GPU for leaf in corejax.tree_util.tree_leaves(got))
        assert_matches_golden(got, case["expected"])


@pytest.mark.parametrize("case", [c for c in CASES if c["fn"] in ("uniform", "normal")][:8],
                         ids=lambda c: c["id"])
def test_sampler_eager_on_cuda_matches_jax(case):
    prev = corejax.config.platform
    corejax.config.update("platform", "cuda")
    try:
        with flags(case["partitionable"], case["x64"]):
            sample, key = _sampler(case)
            got = _run(lambda: sample(corejax.device_put(key, GPU)))
        assert got.device == GPU
        assert_matches_golden(got, case["expected"])
    finally:
        corejax.config.update("platform", prev)


def test_vmap_of_keys_on_cuda_matches_cpu():
    """The same bits; the normals within a few ulp (fused multiply-adds in erf_inv's
    polynomial round differently on each backend and in the simulator)."""
    keys = random.split(random.PRNGKey(3), 4)
    for sample, ulps in ((lambda k: random.bits(k, (3,)), 0),
                         (lambda k: random.normal(k, (3,)), 4)):
        got = corejax.jit(corejax.vmap(sample), backend="cuda")(keys)
        assert got.device == GPU
        want = np.asarray(corejax.jit(corejax.vmap(sample))(keys))
        np.testing.assert_allclose(np.asarray(got), want, rtol=ulps * np.finfo(np.float32).eps,
                                   atol=0)
