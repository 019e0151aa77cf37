"""Lifted transformations (nn.scan, vmap, jit, remat, remat_scan, cond, switch, while_loop,
map_variables, grad / value_and_grad / vjp / jvp, custom_vjp) against Flax linen 0.12.8: with
Flax's variables loaded, outputs and gradients agree, and init gives Flax's variables for the
same key (to float32 rounding of the initializers), nested transformations included: as in
Flax, every trace Flax makes of a lifted body (nn.scan traces its body twice, so nested
remat_scan loops multiply the traces) draws after the traces before it from the same PRNG
counters. Golden data: tests/golden/gen_flax_layers.py."""
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

NAMES = ["scan_stacked_layers", "vmap_ensemble", "vmap_shared", "jit_dense", "remat_mlp",
         "cond_branches", "switch_branches", "while_counter", "map_variables_causal",
         "lifted_grad_vjp", "custom_vjp_sign", "scan_sow_and_dropout", "vmap_batchnorm_ensemble",
         "remat_static_sequential", "while_carry_state", "jit_in_setup", "remat_scan_blocks",
         "while_split_rngs", "scan_broadcast_reverse", "custom_vjp_nondiff"] + [
    case.__name__ for case in cases.NESTED_CASES]
_results = {}


@pytest.fixture(autouse=True)
def _partitionable():
    prev = corejax.config.threefry_partitionable
    corejax.config.update("jax_threefry_partitionable", True)
    yield
    corejax.config.update("jax_threefry_partitionable", prev)


def _compare(name):
    if name not in _results:
        _results[name] = cases.compare_with_golden(getattr(cases, name), nn, jnp, corejax,
                                                   GOLD)
    return _results[name]


@pytest.mark.parametrize("name", NAMES)
def test_matches_flax(name):
    init_bad, apply_bad = _compare(name)
    assert not apply_bad, apply_bad
    assert not init_bad, init_bad


@pytest.mark.parametrize("name", ["remat_scan_blocks", "remat_scan_single",
                                  "remat_scan_deep_dropout", "remat_scan_broadcast",
                                  "remat_scan_unsplit"])
def test_init_matches_flax_nested_remat_scan(name):
    """Flax draws the k-th key of a scope inside d nested remat_scan loops after the draws of
    the 2**d - 1 traces of the body before the one whose values it keeps."""
    init_bad, _ = _compare(name)
    assert not init_bad, init_bad


def test_lifted_scan_compiles_to_one_program():
    """nn.scan(OptimizedLSTMCell) stages one scan equation; under COREJAX_SLOW_TESTS=1 also
    corejax.jit of it equals eager."""
    class LM(nn.Module):
        @nn.compact
        def __call__(self, carry, xs):
            return nn.scan(nn.OptimizedLSTMCell, variable_broadcast="params",
                           split_rngs={"params": False}, in_axes=1, out_axes=1)(6)(carry, xs)

    xs = random.normal(random.PRNGKey(2), (2, 9, 3))
    carry = (jnp.zeros((2, 6)), jnp.zeros((2, 6)))
    model = LM()
    v = model.init(random.PRNGKey(0), carry, xs)
    prims = [e.primitive.name for e in corejax.make_jaxpr(model.apply)(v, carry, xs).jaxpr.eqns]
    assert prims.count("scan") == 1 and "while" not in prims, prims
    if not os.environ.get("COREJAX_SLOW_TESTS"):
        return  # compiling the scan costs ~15 s with a cold kernel cache
    eager = model.apply(v, carry, xs)
    jitted = corejax.jit(model.apply)(v, carry, xs)
    for a, b in zip(corejax.tree_util.tree_leaves(eager), corejax.tree_util.tree_leaves(jitted)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)


def test_errors():
    with pytest.raises(TypeError, match="Module class or a function"):
        nn.vmap(3)
    with pytest.raises(TypeError, match="not bound"):
        nn.scan(lambda m, c, x: (c, x))(nn.Dense(2), 0.0, jnp.ones((3,)))
    with pytest.raises(ValueError, match="scalar-valued"):
        class M(nn.Module):
            @nn.compact
            def __call__(self, x):
                return nn.grad(lambda mdl, x: mdl(x), nn.Dense(2), x)
        M().init(random.PRNGKey(0), jnp.ones((1, 2)))
