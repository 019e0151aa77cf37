"""Mutable array references (corejax.new_ref, Ref indexing, freeze, ...) against JAX.

The cases live in tests/golden/ref_cases.py, written against the JAX API; their JAX results
(or the exception JAX raised) are in tests/golden/ref.json, made by tests/golden/gen_ref.py.
"""
import json
import os
import sys

import numpy as np
import pytest

import corejax
import corejax.numpy as jnp
from corejax import errors

_GOLDEN = os.path.join(os.path.dirname(__file__), "golden")
sys.path.insert(0, _GOLDEN)
from ref_cases import ERROR_MATCH, cases  # noqa: E402

with open(os.path.join(_GOLDEN, "ref.json")) as _f:
    GOLDEN = json.load(_f)["cases"]

CASES = cases(corejax, jnp)

_ERROR_TYPES = {"ValueError": ValueError, "TypeError": TypeError, "Exception": Exception,
                "UnexpectedTracerError": errors.UnexpectedTracerError,
                "NonConcreteBooleanIndexError": errors.NonConcreteBooleanIndexError}


def _compare(got, want, where):
    if want is None:
        assert got is None, where
        return
    if isinstance(want, list):
        assert isinstance(got, (tuple, list)), f"{where}: {got!r}"
        assert len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want)):
            _compare(g, w, f"{where}[{i}]")
        return
    if isinstance(got, corejax.Ref):
        got = got[...]
    a = np.asarray(got)
    assert str(a.dtype) == want["dtype"], f"{where}: dtype {a.dtype} != {want['dtype']}"
    assert list(a.shape) == want["shape"], f"{where}: shape {a.shape} != {want['shape']}"
    np.testing.assert_allclose(a.astype(np.float64).ravel(), want["value"], rtol=1e-6,
                               atol=1e-6, err_msg=where)
    assert bool(getattr(got, "weak_type", False)) == want["weak"], f"{where}: weak_type"


@pytest.mark.parametrize("name", sorted(n for n in CASES if not n.startswith("err_")))
def test_matches_jax(name):
    want = GOLDEN[name]
    assert "result" in want, want
    _compare(CASES[name](), want["result"], name)


@pytest.mark.parametrize("name", sorted(n for n in CASES if n.startswith("err_")))
def test_error_matches_jax(name):
    want = GOLDEN[name]
    exc_type = _ERROR_TYPES[want["error"]]
    with pytest.raises(exc_type, match=ERROR_MATCH[name].replace("`", ".")) as info:
        CASES[name]()
    if want["error"] == "Exception":   # JAX raises exactly Exception there
        assert type(info.value) is Exception


def test_golden_covers_every_case():
    assert sorted(GOLDEN) == sorted(CASES)


def test_repr_and_attributes():
    r = corejax.new_ref(jnp.zeros(3))
    assert repr(r) == "Ref([0., 0., 0.], dtype=float32)"
    assert repr(corejax.new_ref(2.)) == "Ref(2., dtype=float32, weak_type=True)"
    assert repr(corejax.new_ref(jnp.arange(3))) == "Ref([0, 1, 2], dtype=int32)"
    assert (r.shape, r.dtype, r.ndim, r.size, len(r)) == ((3,), np.float32, 1, 3, 3)
    assert str(r.aval) == "Ref{float32[3]}"
    assert isinstance(r.aval, corejax.ref.AbstractRef)
    assert not isinstance(r, corejax.Array)
    assert repr(corejax.ds(1, 2)) == "Slice(start=1, size=2, stride=1)"
    assert repr(corejax.ds(3)) == "Slice(start=0, size=3, stride=1)"
    with pytest.raises(TypeError):
        r + 1


def test_jit_cache_hits_still_read_and_write_the_box():
    r = corejax.new_ref(jnp.zeros(2))
    traces = []

    @corejax.jit
    def f(x):
        traces.append(1)
        r[0] += x
        return r[0]

    outs = [float(f(1.)) for _ in range(4)]
    assert outs == [1., 2., 3., 4.] and len(traces) == 1
    r[1] = 5.   # an eager write between calls is seen by the next call
    assert float(f(1.)) == 5. and np.asarray(r[...]).tolist() == [5., 5.]


def test_free_ref_then_use_raises():
    r = corejax.new_ref(jnp.ones(2))
    corejax.free_ref(r)
    with pytest.raises(ValueError, match="free_ref"):
        r[0]


def test_ref_module_names():
    for n in ["AbstractRef", "Ref", "addupdate", "empty_ref", "free_ref", "freeze", "get",
              "new_ref", "set", "swap"]:
        assert hasattr(corejax.ref, n), n
    assert corejax.Ref is corejax.ref.Ref


def test_empty_ref_eager_is_not_implemented_as_in_jax():
    with pytest.raises(NotImplementedError):
        corejax.empty_ref(corejax.ShapeDtypeStruct((2,), jnp.float32))
