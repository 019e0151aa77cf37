"""corejax's type promotion against JAX's table (tests/golden/promotion.json, written by
tests/golden/gen_promotion.py): jnp.result_type(x, y), and the dtype and weak type of x + y,
for every pair of operand kinds, with x64 disabled and enabled. A type is a dtype name with a
trailing "*" when weakly typed."""
import contextlib
import json
import os

import numpy as np
import pytest

import corejax.numpy as jnp
from corejax.config import config

with open(os.path.join(os.path.dirname(__file__), "golden", "promotion.json")) as f:
    GOLDEN = json.load(f)

MODES = {"x64_disabled": False, "x64_enabled": True}
PY_SCALARS = {"py_bool": True, "py_int": 1, "py_float": 1.5, "py_complex": 1 + 1j}
UNSUPPORTED = {"bfloat16"}  # corejax has no bfloat16


@contextlib.contextmanager
def x64(enabled):
    saved = config.enable_x64
    config.update("enable_x64", enabled)
    try:
        yield
    finally:
        config.update("enable_x64", saved)


def operand(name):
    return PY_SCALARS[name] if name in PY_SCALARS else jnp.ones((), dtype=name)


def type_name(x):
    return np.dtype(x.dtype).name + ("*" if x.weak_type else "")


def _pairs():
    out = []
    for mode, table in GOLDEN.items():
        if mode not in MODES:
            continue
        for a, row in table["binary"].items():
            for b, expected in row.items():
                if not UNSUPPORTED & {a, b}:
                    out.append(pytest.param(mode, a, b, expected, id=f"{mode}-{a}-{b}"))
    return out


def _unary():
    return [pytest.param(mode, a, expected, id=f"{mode}-{a}")
            for mode in MODES for a, expected in GOLDEN[mode]["unary"].items()
            if a not in UNSUPPORTED]


@pytest.mark.parametrize("mode,a,b,expected", _pairs())
def test_result_type_matches_jax(mode, a, b, expected):
    with x64(MODES[mode]):
        assert np.dtype(jnp.result_type(operand(a), operand(b))).name == expected["result_type"]


@pytest.mark.parametrize("mode,a,b,expected", _pairs())
def test_add_dtype_and_weak_type_match_jax(mode, a, b, expected):
    with x64(MODES[mode]):
        assert type_name(jnp.add(operand(a), operand(b))) == expected["add"]


@pytest.mark.parametrize("mode,a,b,expected", [p for p in _pairs()
                                               if not {p.values[1], p.values[2]} <= set(PY_SCALARS)])
def test_plus_operator_matches_jnp_add(mode, a, b, expected):
    with x64(MODES[mode]):
        assert type_name(operand(a) + operand(b)) == expected["add"]


@pytest.mark.parametrize("mode,a,expected", _unary())
def test_asarray_dtype_and_weak_type_match_jax(mode, a, expected):
    with x64(MODES[mode]):
        assert type_name(jnp.asarray(operand(a))) == expected


def test_golden_table_is_complete():
    names = set(GOLDEN["x64_enabled"]["binary"])
    assert {"bool", "uint8", "int32", "float16", "float32", "complex64", "int64", "uint64",
            "float64", "py_int", "py_float", "py_bool", "py_complex"} <= names
    assert UNSUPPORTED <= names, "the golden table covers bfloat16 for when corejax adds it"
