"""flax.struct / flax.core / flax.serialization / flax.training equivalents and the Module API
(sow, perturb, capture_intermediates, bind/unbind, functional init/apply, path, clone, errors).
Serialization bytes are compared with Flax's (tests/golden/gen_flax_serialization.py)."""
import json
import os
import sys
from typing import Any, Callable

import numpy as np
import pytest

import corejax
import corejax.numpy as jnp
from corejax import random, tree_util
import nn
import optim
from nn import serialization, struct
from nn.core import FrozenDict, copy, freeze, pop, pretty_repr, unfreeze
from nn.training import checkpoints, common_utils, early_stopping, train_state

GOLDEN = os.path.join(os.path.dirname(__file__), "golden", "flax_serialization.json")


@struct.dataclass
class Point:
    xy: Any
    label: str = struct.field(pytree_node=False, default="p")


def _params():
    return {"Dense_0": {"kernel": jnp.asarray(np.arange(6).reshape(2, 3) * 0.25, jnp.float32),
                        "bias": jnp.asarray([0.5, -1.0, 2.0], jnp.float32)}}


def _grads():
    return {"Dense_0": {"kernel": jnp.asarray(np.ones((2, 3)) * 0.5, jnp.float32),
                        "bias": jnp.asarray([1.0, 2.0, -4.0], jnp.float32)}}


def _trees():
    mixed = {"a": jnp.asarray(np.arange(6).reshape(2, 3) / 8, jnp.float32),
             "b": jnp.asarray([[1, -2], [3, 4]], jnp.int32),
             "c": jnp.asarray([True, False, True]),
             "d": {"e": 1.5, "f": 3, "g": True, "h": None, "s": "text", "z": 2 - 1j},
             "l": [np.float32(2.5), np.int32(7), np.asarray(np.arange(3), np.float64)],
             "t": (1, 2.0, jnp.asarray(0.125, jnp.float32))}
    state = train_state.TrainState.create(apply_fn=None, params=_params(),
                                          tx=optim.sgd(0.1, momentum=0.9))
    state = state.apply_gradients(grads=_grads())
    return {
        "mixed": mixed,
        "frozen": freeze({"params": _params()}),
        "dataclass": [Point(jnp.asarray([1.0, 2.0])), Point(jnp.asarray([3.0, 4.0]), "q")],
        "train_state": state,
        "empty": {"params": {}, "list": [], "scalar": 0.0},
    }


def _same(a, b):
    la, ta = tree_util.tree_flatten(a)
    lb, tb = tree_util.tree_flatten(b)
    assert ta == tb
    for x, y in zip(la, lb):
        assert np.asarray(x).dtype == np.asarray(y).dtype
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_serialization_bytes_match_flax_both_ways():
    with open(GOLDEN) as f:
        golden = {k: bytes.fromhex(v) for k, v in json.load(f).items()}
    for name, tree in _trees().items():
        assert serialization.to_bytes(tree) == golden[name], name
        _same(serialization.from_bytes(tree, golden[name]), tree)
    raw = {"x": [1, 2, {"y": np.asarray([1.5], np.float32)}], "n": np.int32(3)}
    assert serialization.msgpack_serialize(raw) == golden["raw_msgpack"]
    back = serialization.msgpack_restore(golden["raw_msgpack"])
    assert back["x"][:2] == [1, 2] and back["n"] == 3 and back["n"].dtype == np.int32
    state = serialization.to_state_dict(_trees()["train_state"])
    assert sorted(state) == ["opt_state", "params", "step"]
    assert sorted(state["opt_state"]) == ["0", "1"] and "trace" in state["opt_state"]["0"]
    with pytest.raises(ValueError, match="do not match"):
        serialization.from_state_dict({"a": 1, "b": 2}, {"a": 1})
    with pytest.raises(ValueError, match='Unknown field'):
        serialization.from_state_dict(Point(1), {"xy": 1, "extra": 2})
    with pytest.raises(ValueError, match="already registered"):
        serialization.register_serialization_state(dict, None, None)


def test_struct_frozen_dict_and_meta():
    p = Point(jnp.ones(2), "a")
    leaves, treedef = tree_util.tree_flatten(p)
    assert len(leaves) == 1 and tree_util.tree_unflatten(treedef, [3]).label == "a"
    assert p.replace(label="b").label == "b"
    with pytest.raises(Exception, match="cannot assign"):
        p.label = "c"

    class Node(struct.PyTreeNode):
        a: Any
        b: int = struct.field(pytree_node=False, default=1)
    assert tree_util.tree_leaves(Node(5, 2)) == [5]

    d = freeze({"a": {"b": 1}, "x": "hi", "e": {}})
    assert isinstance(d["a"], FrozenDict) and hash(d) == hash(freeze(unfreeze(d)))
    assert repr(d) == "FrozenDict({\n    a: {\n        b: 1,\n    },\n    x: 'hi',\n    e: {},\n})"
    assert pretty_repr({"a": [1, 2]}) == "{\n    a: [1, 2],\n}" and repr(FrozenDict()) == \
        "FrozenDict({})"
    rest, value = d.pop("x")
    assert value == "hi" and "x" not in rest and "x" in d
    assert pop({"a": 1, "b": 2}, "a") == ({"b": 2}, 1)
    assert copy({"a": 1}, {"b": 2}) == {"a": 1, "b": 2}
    assert isinstance(copy(d, {"q": 1}), FrozenDict) and type(unfreeze(d)["a"]) is dict
    with pytest.raises(ValueError, match="immutable"):
        d["a"] = 2
    with pytest.raises(TypeError, match="Expected FrozenDict or dict"):
        pop([1], 0)
    paths = [tree_util.keystr(k) for k, _ in tree_util.tree_flatten_with_path(
        freeze({"b": 1, "a": 2}))[0]]
    assert paths == ["['a']", "['b']"]
    # params boxed with partitioning metadata: the variables keep the box, modules read values
    model = nn.Dense(3, kernel_init=nn.with_partitioning(nn.initializers.ones, (None, "model")))
    v = model.init(random.PRNGKey(0), jnp.ones((1, 2)))
    assert isinstance(v["params"]["kernel"], nn.Partitioned)
    assert str(nn.get_partition_spec(v)["params"]["kernel"]) == str(
        corejax.sharding.PartitionSpec(None, "model"))
    np.testing.assert_allclose(np.asarray(model.apply(v, jnp.ones((1, 2)))), [[2.0, 2.0, 2.0]])
    assert nn.unbox(v)["params"]["kernel"].shape == (2, 3)

    class Counter(nn.Module):
        @nn.compact
        def __call__(self):
            c = self.variable("state", "count",
                              nn.with_partitioning(lambda: jnp.zeros((2,)), ("data",)))
            c.value = c.value + 1  # read unboxed, written back into the box
            return c.value
    out, upd = Counter().apply({"state": {"count": nn.Partitioned(jnp.zeros((2,)), ("data",))}},
                               mutable=["state"])
    assert isinstance(upd["state"]["count"], nn.Partitioned)
    assert upd["state"]["count"].names == ("data",)
    np.testing.assert_array_equal(np.asarray(upd["state"]["count"].value), [1.0, 1.0])
    np.testing.assert_array_equal(np.asarray(out), [1.0, 1.0])


def test_train_state_checkpoints_and_utils(tmp_path):
    model = nn.Dense(2)
    x = jnp.ones((4, 3))
    v = model.init(random.PRNGKey(0), x)
    state = train_state.TrainState.create(apply_fn=model.apply, params=v["params"],
                                          tx=optim.sgd(0.1, momentum=0.9))
    grads = corejax.grad(lambda p: jnp.sum(state.apply_fn({"params": p}, x) ** 2))(
        state.params)
    new = state.apply_gradients(grads=grads)
    assert new.step == 1 and new.tx is state.tx
    np.testing.assert_allclose(np.asarray(new.params["bias"]),
                               np.asarray(state.params["bias"] - 0.1 * grads["bias"]), rtol=1e-6)
    for step in (1, 2, 10):
        checkpoints.save_checkpoint(tmp_path, new.replace(step=step), step, keep=2)
    assert sorted(os.listdir(tmp_path)) == ["checkpoint_10", "checkpoint_2"]
    assert checkpoints.latest_checkpoint(tmp_path) == str(tmp_path / "checkpoint_10")
    assert checkpoints.available_steps(tmp_path) == [2, 10]
    with pytest.raises(checkpoints.InvalidCheckpointError):
        checkpoints.save_checkpoint(tmp_path, new, 5)
    restored = checkpoints.restore_checkpoint(tmp_path, state)
    assert int(restored.step) == 10
    _same(restored.params, new.params)
    assert checkpoints.restore_checkpoint(tmp_path, None, step=2)["step"] == 2
    assert checkpoints.restore_checkpoint(tmp_path / "none", state) is state

    oh = common_utils.onehot(jnp.asarray([0, 2]), 3, on_value=5.0)
    np.testing.assert_array_equal(np.asarray(oh), [[5, 0, 0], [0, 0, 5]])
    assert oh.dtype == np.float32
    assert common_utils.shard(jnp.ones((4, 3))).shape == (1, 4, 3)
    assert common_utils.shard_prng_key(random.PRNGKey(0)).shape[0] == 1
    stacked = common_utils.get_metrics([{"loss": jnp.ones((1,))}, {"loss": jnp.zeros((1,))}])
    np.testing.assert_array_equal(np.asarray(stacked["loss"]), [1.0, 0.0])
    es = early_stopping.EarlyStopping(min_delta=0.1, patience=1)
    es = es.update(1.0)
    assert es.has_improved and es.best_metric == 1.0
    es = es.update(0.95).update(0.99)
    assert es.patience_count == 2 and es.should_stop and not es.has_improved
    assert not es.reset().should_stop


class _Probe(nn.Module):
    @nn.compact
    def __call__(self, x):
        h = nn.Dense(2)(x)
        self.sow("intermediates", "h", h)
        h = self.perturb("p", h)
        assert self.is_mutable_collection("params") == self.is_initializing()
        return h.sum()

    def double(self, x):
        return 2 * self(x)


def test_module_api():
    m, x = _Probe(), jnp.ones((1, 3))
    v = m.init(random.PRNGKey(0), x)
    assert sorted(v) == ["params", "perturbations"]  # sown intermediates are not kept by init
    assert v["perturbations"]["p"].shape == (1, 2)
    y, inter = m.apply(v, x, capture_intermediates=True)
    assert sorted(inter["intermediates"]) == ["Dense_0", "__call__", "h"]
    assert inter["intermediates"]["Dense_0"]["__call__"][0].shape == (1, 2)
    # d out / d perturbation is the gradient at the perturbed activation
    g = corejax.grad(lambda pert: m.apply({"params": v["params"], "perturbations": pert}, x))(
        v["perturbations"])
    np.testing.assert_array_equal(np.asarray(g["p"]), np.ones((1, 2)))
    assert float(nn.apply(lambda mod, x: mod.double(x), m)(v, x)) == pytest.approx(2 * float(y))
    v2 = nn.init(lambda mod, x: mod(x), m)(random.PRNGKey(0), x)
    _same(v2["params"], v["params"])
    shapes = corejax.eval_shape(m.init, random.PRNGKey(0), x)
    assert shapes["params"]["Dense_0"]["kernel"].shape == (3, 2)
    bound = m.bind(v)
    unbound, variables = bound.unbind()
    assert unbound.scope is None and sorted(variables) == ["params", "perturbations"]
    with pytest.raises(nn.errors.CallUnbindOnUnboundModuleError):
        m.unbind()
    with pytest.raises(ValueError, match="unbound"):
        m.path
    cloned = nn.Dense(3, name="d").clone(features=4)
    assert cloned.features == 4 and cloned.name == "d"
    with pytest.raises(nn.ScopeParamNotFoundError, match='"kernel" in scope "/Dense_0"'):
        m.apply({"params": {"Dense_0": {"bias": jnp.zeros(2)}}, "perturbations": {}}, x)
    assert issubclass(nn.ScopeParamShapeError, nn.errors.FlaxError)
    # an interceptor sees every method call (outermost first) and may change results
    seen = []

    def zero_dense(next_fun, args, kwargs, context):
        seen.append((type(context.module).__name__, context.method_name))
        out = next_fun(*args, **kwargs)
        return out * 0 if isinstance(context.module, nn.Dense) else out
    with nn.intercept_methods(zero_dense):
        assert float(m.apply(v, x)) == 0.0
    assert seen == [("_Probe", "__call__"), ("Dense", "__call__")]
    # tabulate with depth
    table = m.tabulate(random.PRNGKey(0), x, depth=0)
    assert "Dense_0" not in table and "_Probe" in table
    assert "Dense_0" in m.tabulate(random.PRNGKey(0), x)


def test_logical_axis_rules_match_flax_and_batch_apply():
    with open(os.path.join(os.path.dirname(__file__), "golden", "flax_surface.json")) as f:
        cases = json.load(f)["logical_to_mesh_axes"]

    def tuples(x):
        return tuple(tuples(v) for v in x) if isinstance(x, list) else x
    for case in cases:
        spec = nn.logical_to_mesh_axes(tuple(case["names"]), tuples(case["rules"]))
        assert tuple(spec) == tuples(case["spec"]), case
    with nn.logical_axis_rules([("batch", "data")]):
        assert tuple(nn.logical_to_mesh_axes(("batch", None))) == ("data", None)
    assert nn.get_logical_axis_rules() == ()
    with pytest.raises(ValueError, match="more than once"):
        nn.logical_to_mesh_axes(("a", "a"), [("a", "data")])
    a = jnp.asarray(np.arange(24.0).reshape(2, 3, 4))
    out = nn.BatchApply(lambda a, b: a @ b)(a, jnp.ones(4))
    np.testing.assert_array_equal(np.asarray(out), np.arange(24.0).reshape(2, 3, 4).sum(-1))
    with pytest.raises(ValueError, match="ndim >= 2"):
        nn.BatchApply(lambda v: v)(jnp.ones(3))


def test_linen_mnist_example_trains():
    """examples/linen_mnist.py (a linen CNN with TrainState and optim.sgd) imports; with
    COREJAX_SLOW_TESTS=1 its jitted step runs two SGD steps and an evaluation on a tiny
    synthetic batch, and the loss on that batch falls."""
    import importlib.util
    path = os.path.join(os.path.dirname(__file__), os.pardir, "examples", "linen_mnist.py")
    spec = importlib.util.spec_from_file_location("linen_mnist", path)
    example = importlib.util.module_from_spec(spec)
    sys.modules["linen_mnist"] = example   # (dataclasses look their module up by name)
    try:
        spec.loader.exec_module(example)
    finally:
        del sys.modules["linen_mnist"]
    assert issubclass(example.ConvNet, nn.Module)
    if not os.environ.get("COREJAX_SLOW_TESTS"):
        return  # the CNN's kernels cost most of a minute to compile on a cold cache
    rng = np.random.default_rng(0)
    images, labels = example.as_inputs(rng.integers(0, 256, (16, 28, 28), np.uint8),
                                       rng.integers(0, 10, 16))
    state = example.initial_state(random.key(0))
    assert state.params["Dense_0"]["kernel"].shape == (3136, 256)
    before, _ = example.evaluate(state, images, labels)
    state, loss, accuracy = example.run_epoch(state, images, labels, random.key(1), 8)
    assert int(state.step) == 2 and np.isfinite(loss) and 0.0 <= accuracy <= 1.0
    after, _ = example.evaluate(state, images, labels)
    assert float(after) < float(before)
