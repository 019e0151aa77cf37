"""corejax.tree_util, corejax.tree and corejax.flatten_util against JAX 0.10.2.

The golden cases (tests/golden/tree.json, written by tests/golden/gen_tree.py) run the same
code on both frameworks: structures, key paths and their strings, flattening order
(sorted dicts, OrderedDict insertion order, defaultdict, namedtuples, None), registration,
Partial, map / reduce / transpose / broadcast, ravel_pytree's dtypes and weak types, and the
exception type of every error. The tests below them cover what golden data cannot: error
messages, jit's compiled flatten and unflatten, and pytrees under transformations.
"""
import collections
import dataclasses
import functools
import importlib.util
import json
import os
import pickle
from typing import NamedTuple

import numpy as np
import pytest

import corejax
import corejax.numpy as jnp
from corejax import tree, tree_util as tu
from corejax.flatten_util import ravel_pytree

_GOLDEN_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden")
_spec = importlib.util.spec_from_file_location("gen_tree",
                                               os.path.join(_GOLDEN_DIR, "gen_tree.py"))
gen_tree = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gen_tree)

with open(os.path.join(_GOLDEN_DIR, "tree.json")) as f:
    GOLDEN = json.load(f)["cases"]

ENV = dict(tu=tu, tree=tree, ravel_pytree=ravel_pytree, jax=corejax, jnp=jnp, np=np,
           collections=collections, dataclasses=dataclasses, functools=functools,
           NamedTuple=NamedTuple)


def test_every_case_has_golden_data():
    assert sorted(GOLDEN) == sorted(gen_tree.CASES), \
        "run tests/golden/gen_tree.py under JAX to record the new cases"


@pytest.mark.parametrize("name", sorted(gen_tree.CASES))
def test_matches_jax(name):
    assert gen_tree.run_case(name, ENV) == GOLDEN[name]


# --- messages --------------------------------------------------------------------------------

def test_map_mismatch_names_the_key_path_and_the_tree():
    with pytest.raises(ValueError, match=r"tree_map \(rest\[1\]\).*key path \['a'\]\[1\]"
                                         r".*expected tuple, got list"):
        tu.tree_map(lambda a, b, c: a, {"a": [1, (2,)]}, {"a": [1, (2,)]}, {"a": [1, [3]]})
    with pytest.raises(ValueError, match=r"at the root: dict keys differ: expected \['a'\], "
                                         r"got \['b'\]"):
        tu.tree_map(lambda a, b: a, {"a": 1}, {"b": 1})
    with pytest.raises(ValueError, match=r"key path \[0\]: expected list of length 2, got one "
                                         r"of length 3"):
        tu.tree_structure([[1, 2]]).flatten_up_to([[1, 2, 3]])


def test_key_path_through_custom_and_namedtuple_nodes():
    class P(NamedTuple):
        x: object
        y: object
    with pytest.raises(ValueError, match=r"key path \.y\[0\]: expected tuple, got list"):
        tu.tree_map(lambda a, b: a, P(1, [(2,)]), P(1, [[2]]))
    # (JAX 0.10.2 names both fields .x here; the fields are .x and .y)
    assert list(tu.flatten_one_level_with_keys(P(1, 2))[0]) == [(tu.GetAttrKey("x"), 1),
                                                          (tu.GetAttrKey("y"), 2)]


def test_unflatten_and_mixed_key_messages():
    with pytest.raises(ValueError, match="Too few leaves.*has 2 leaves, got 1"):
        tu.tree_unflatten(tu.tree_structure([1, 2]), [1])
    with pytest.raises(ValueError, match="must be sortable.*OrderedDict"):
        tu.tree_leaves({1: 1, "a": 2})
    with pytest.raises(ValueError, match="Duplicate pytree node registration"):
        tu.register_pytree_node(dict, lambda d: ((), None), lambda a, c: {})
    with pytest.raises(TypeError, match="identity"):
        tu.tree_reduce_associative(lambda a, b: a + b, [])


def test_dataclass_registration_messages():
    @dataclasses.dataclass
    class D:
        x: object
        y: object
    with pytest.raises(ValueError, match=r"\['y'\] are in neither.*drop_fields"):
        tu.register_dataclass(D, ["x"], [])
    with pytest.raises(TypeError, match="both data_fields and meta_fields"):
        tu.register_dataclass(D, ["x", "y"])


# --- jit's compiled flatten and unflatten keep the node types' semantics ----------------------

def test_compiled_unflatten_passes_tuples_and_keeps_ordered_dicts():
    seen = []

    class Cap:
        pass
    tu.register_pytree_node(Cap, lambda c: ((1,), None),
                            lambda aux, kids: seen.append(type(kids)) or Cap())
    od = collections.OrderedDict([("b", 1), ("a", 2)])
    treedef = tu.tree_structure([Cap(), od])
    for _ in range(3):          # the second use compiles the builder
        out = treedef.unflatten([5, 6, 7])
    assert treedef._builder
    assert seen == [tuple] * 3
    assert list(out[1].items()) == [("b", 6), ("a", 7)]


def test_jit_passes_ordered_and_default_dicts():
    f = corejax.jit(lambda t: tu.tree_map(lambda x: x * 2, t))
    od = collections.OrderedDict([("b", jnp.ones(2)), ("a", jnp.zeros(1))])
    dd = collections.defaultdict(list, {"y": jnp.ones(1), "x": jnp.ones(2)})
    for _ in range(2):
        out_od, out_dd = f((od, dd))
    assert list(out_od) == ["b", "a"] and type(out_od) is collections.OrderedDict
    assert out_dd.default_factory is list and sorted(out_dd) == ["x", "y"]
    np.testing.assert_allclose(out_od["b"], [2.0, 2.0])


def test_jit_matcher_rejects_a_different_ordered_dict_order():
    f = corejax.jit(lambda t: t["a"] - t["b"])
    ab = collections.OrderedDict([("a", jnp.float32(1)), ("b", jnp.float32(3))])
    ba = collections.OrderedDict([("b", jnp.float32(3)), ("a", jnp.float32(1))])
    assert float(f(ab)) == -2.0
    assert float(f(ba)) == -2.0       # another structure: traced again, same values


def test_matcher_of_one_type_or_a_tuple_of_types():
    """PyTreeDef.matcher: the leaves of a tree of this structure whose every leaf has the
    type (exactly), or one of the tuple's types; None otherwise."""
    import numpy as np
    treedef = tu.tree_structure({"a": [0, 0], "b": 0})
    only_ints, ints_or_floats = treedef.matcher(int), treedef.matcher((int, float))
    assert only_ints({"a": [1, 2], "b": 3}) == [1, 2, 3]
    assert only_ints({"a": [1, 2.0], "b": 3}) is None
    assert ints_or_floats({"a": [1, 2.0], "b": 3}) == [1, 2.0, 3]
    assert ints_or_floats({"a": [1, "x"], "b": 3}) is None
    assert ints_or_floats({"a": [1, True], "b": 3}) is None        # a subclass: no
    assert ints_or_floats({"a": [1, 2], "c": 3}) is None           # another structure
    assert treedef.matcher((int, np.ndarray))({"a": [1, np.ones(2)], "b": 3})[2] == 3


def test_static_node_and_dataclass_through_jit_and_grad():
    @tu.register_static
    class Mode:
        def __init__(self, name):
            self.name = name

        def __eq__(self, other):
            return isinstance(other, Mode) and other.name == self.name

        def __hash__(self):
            return hash(self.name)

    @tu.register_dataclass
    @dataclasses.dataclass
    class Params:
        w: object
        b: object
        act: str = tree.static(default="tanh")

    traces = []

    def loss(p, mode, x):
        traces.append(1)
        y = jnp.tanh(p.w * x + p.b) if p.act == "tanh" else p.w * x + p.b
        return jnp.sum(y ** 2) * (2.0 if mode.name == "double" else 1.0)

    p = Params(jnp.float32(0.5), jnp.float32(0.1))
    grad_loss = corejax.jit(corejax.grad(loss))
    g = grad_loss(p, Mode("double"), jnp.arange(3.0))
    grad_loss(p, Mode("double"), jnp.arange(3.0))
    assert isinstance(g, Params) and g.act == "tanh" and len(traces) == 1
    eps = 1e-3
    fd = (loss(Params(p.w + eps, p.b), Mode("double"), jnp.arange(3.0))
          - loss(Params(p.w - eps, p.b), Mode("double"), jnp.arange(3.0))) / (2 * eps)
    np.testing.assert_allclose(g.w, fd, rtol=1e-2)


def test_partial_crosses_jit_vmap_and_grad():
    def apply(f, x):
        return f(x)

    scale = tu.Partial(jnp.multiply, jnp.float32(3.0))
    assert float(corejax.jit(apply)(scale, 2.0)) == 6.0
    out = corejax.vmap(apply, in_axes=(0, None))(tu.Partial(jnp.multiply, jnp.arange(3.0)),
                                                2.0)
    np.testing.assert_allclose(out, [0.0, 2.0, 4.0])
    g = corejax.grad(lambda f: apply(f, 2.0))(scale)
    assert isinstance(g, tu.Partial) and float(g.args[0]) == 2.0
    returned = corejax.jit(lambda a: tu.Partial(jnp.add, a))(jnp.float32(1.0))
    assert float(returned(2.0)) == 3.0


def test_treedef_pickles_with_custom_nodes():
    td = tu.tree_structure({"a": [1, None], "p": tu.Partial(np.add, 1)})
    back = pickle.loads(pickle.dumps(td))
    assert back == td and hash(back) == hash(td)


def test_ravel_pytree_under_jit_vmap_and_grad():
    params = {"w": jnp.arange(6.0).reshape(2, 3), "b": jnp.ones(2, jnp.float16)}
    flat, unravel = ravel_pytree(params)
    assert flat.dtype == np.float32 and flat.shape == (8,)
    back = corejax.jit(unravel)(flat)
    assert back["b"].dtype == np.float16
    np.testing.assert_array_equal(back["w"], params["w"])

    def loss(v):
        p = unravel(v)
        return jnp.sum(p["w"] ** 2) + jnp.sum(p["b"].astype(jnp.float32))
    g = corejax.grad(loss)(flat)
    np.testing.assert_allclose(g, np.concatenate([np.ones(2), 2 * np.arange(6.0)]))
    batched = corejax.vmap(unravel)(jnp.stack([flat, 2 * flat]))
    assert batched["w"].shape == (2, 2, 3)
    assert corejax.jit(lambda v, u: u(v), static_argnums=1)(flat, unravel)["w"].shape == (2, 3)
