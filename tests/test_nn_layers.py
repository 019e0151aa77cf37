"""Layers of Flax linen 0.12.8 (Einsum, InstanceNorm, WeightNorm, SpectralNorm, PReLU,
ConvLocal, SelfAttention with the mask helpers, dot_product_attention with bias, mask and
dropout, pool / avg_pool(count_include_pad) / max_pool, the activation names) against Flax's
init variables, outputs, variable updates and gradients. Golden data:
tests/golden/gen_flax_layers.py."""
import importlib.util
import os

import numpy as np
import pytest

import corejax
import corejax.numpy as jnp
from corejax import random
import nn

HERE = os.path.join(os.path.dirname(__file__), "golden")
_spec = importlib.util.spec_from_file_location("flax_layers_cases",
                                               os.path.join(HERE, "flax_layers_cases.py"))
cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cases)
GOLD = np.load(os.path.join(HERE, "flax_layers.npz"))

NAMES = ["einsum", "instance_norm", "weight_norm", "spectral_norm", "prelu", "conv_local",
         "self_attention", "attention_bias_dropout", "pooling", "activations"]


@pytest.fixture(autouse=True)
def _partitionable():
    prev = corejax.config.threefry_partitionable
    corejax.config.update("jax_threefry_partitionable", True)
    yield
    corejax.config.update("jax_threefry_partitionable", prev)


@pytest.mark.parametrize("name", NAMES)
def test_matches_flax(name):
    init_bad, apply_bad = cases.compare_with_golden(getattr(cases, name), nn, jnp, corejax,
                                                    GOLD)
    assert not init_bad, init_bad
    assert not apply_bad, apply_bad


def test_einsum_errors_and_flax_names():
    x = jnp.ones((2, 3))
    with pytest.raises(ValueError, match="explicit"):
        nn.Einsum((3, 4), "ab,bc").init(random.PRNGKey(0), x)
    with pytest.raises(ValueError, match="exactly two operands"):
        nn.Einsum((3, 4), "ab,bc,cd->ad").init(random.PRNGKey(0), x)
    for name in cases.ACTIVATIONS + ["PReLU", "SelfAttention", "make_causal_mask", "ConvLocal"]:
        assert hasattr(nn, name), name
