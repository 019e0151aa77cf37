"""nn.recurrent against Flax linen 0.12.8: the cells, RNN (lengths, reverse, keep_order,
time_major, return_carry) and Bidirectional give Flax's init variables for PRNGKey(0) and, with
Flax's variables loaded, Flax's outputs and gradients. Golden data:
tests/golden/gen_flax_layers.py (cases in tests/golden/flax_layers_cases.py)."""
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

NAMES = ["lstm_cell", "optimized_lstm_cell", "gru_cell", "simple_cell", "mgu_cell",
         "mgu_cell_no_reset", "conv_lstm_cell", "rnn_lstm_lengths",
         "rnn_gru_reverse_time_major", "bidirectional", "scan_lstm", "bidirectional_lengths_carry"]


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


def test_scan_over_lstm_is_one_lax_scan():
    """RNN / nn.scan stage one scan equation whose body does not grow with the length."""
    def staged(length):
        model = nn.RNN(nn.OptimizedLSTMCell(8))
        x = jnp.ones((2, length, 3))
        v = model.init(random.PRNGKey(0), x)
        return corejax.make_jaxpr(lambda v, x: model.apply(v, x))(v, x).jaxpr

    short, long = staged(3), staged(11)
    prims = [e.primitive.name for e in long.eqns]
    assert prims.count("scan") == 1, prims
    assert "while" not in prims
    assert len(short.eqns) == len(long.eqns)
    (eqn,) = [e for e in long.eqns if e.primitive.name == "scan"]
    assert eqn.params["length"] == 11


def test_carry_shapes_and_errors():
    key = random.PRNGKey(1)
    c, h = nn.LSTMCell(5).initialize_carry(key, (2, 7, 3))
    assert c.shape == h.shape == (2, 7, 5)
    c, h = nn.ConvLSTMCell(4, (3, 3)).initialize_carry(key, (2, 6, 6, 3))
    assert c.shape == (2, 6, 6, 4)
    assert nn.ConvLSTMCell(4, (3, 3)).num_feature_axes == 3
    assert nn.GRUCell(3).initialize_carry(key, (4, 2)).shape == (4, 3)
    assert nn.LSTMCell(2).num_feature_axes == 1
    with pytest.raises(ValueError, match="time axis"):
        nn.RNN(nn.ConvLSTMCell(4, (3, 3))).init(key, jnp.ones((5, 5, 3)))
