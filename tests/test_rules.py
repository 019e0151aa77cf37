"""Every primitive has an entry in every rule table it needs, so a missing rule is a failing
test rather than a user's surprise."""
import importlib
import pkgutil

import pytest

import corejax
from corejax.core import Primitive
from corejax.transforms import ad, batching


def _all_primitives():
    prims = {}
    for mod_info in pkgutil.walk_packages(corejax.__path__, "corejax."):
        try:
            mod = importlib.import_module(mod_info.name)
        except ImportError:
            continue  # optional backends (e.g. CUDA) may not import here
        for value in vars(mod).values():
            if isinstance(value, Primitive):
                prims[id(value)] = value
    return sorted(prims.values(), key=lambda p: p.name)


PRIMITIVES = _all_primitives()

# Primitives without a derivative, each with the reason.
NOT_DIFFERENTIABLE = {
    "lgamma": "its derivative (digamma) is not provided yet",
    "custom_lin": "the linear part of a custom_vjp function: forward mode through it is an error "
                  "by design, as in JAX",
    "pmax": "as in JAX, pmax / pmin have no derivative ('Differentiation rule for 'pmax' not "
            "implemented')",
    "pmin": "as in JAX, pmax / pmin have no derivative",
    "rng_uniform": "as in JAX: a stateful random draw has no derivative",
}
NOT_BATCHABLE = {
    "iota": "takes no operands, so no batched operand ever reaches it",
    "create_token": "takes no operands, so no batched operand ever reaches it",
    "rng_uniform": "as in JAX ('Batching rule for 'rng_uniform' not implemented')",
    "custom_lin": "appears only in linearized programs, which are transposed, never vmapped",
}
LINEAR = {"add", "sub", "neg", "add_any", "mul", "div", "reduce_sum", "broadcast_in_dim",
          "reshape", "transpose", "squeeze", "rev", "slice", "pad", "concatenate",
          "dynamic_slice", "dynamic_update_slice", "select_n", "convert_element_type", "cumsum",
          "dot_general", "jit", "custom_lin", "conv_general_dilated", "reduce_window_sum",
          "gather", "scatter-add", "sort", "cond", "scan", "real", "imag", "conj", "complex",
          "fft"}


def test_primitives_were_found():
    names = {p.name for p in PRIMITIVES}
    assert {"add", "dot_general", "jit", "custom_jvp_call"} <= names


@pytest.mark.parametrize("prim", PRIMITIVES, ids=lambda p: p.name)
def test_primitive_has_all_rules(prim):
    assert prim.impl is not None, f"{prim.name}: no impl"
    assert prim.abstract_eval is not None, f"{prim.name}: no abstract_eval"
    if prim.name not in NOT_DIFFERENTIABLE:
        assert prim in ad.primitive_jvps, f"{prim.name}: no jvp rule"
    if prim.name not in NOT_BATCHABLE:
        assert prim in batching.primitive_batchers, f"{prim.name}: no batching rule"
    if prim.name in LINEAR:
        assert prim in ad.primitive_transposes, f"{prim.name}: linear but no transpose rule"
