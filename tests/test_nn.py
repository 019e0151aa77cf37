"""nn: the Module system (names, collections, init/apply, errors), the layers against NumPy
references and finite differences, initializers, golden Flax data, and small models that learn."""
import json
import math
import os

import numpy as np
import pytest

import corejax
import corejax.numpy as jnp
from corejax import random, tree_util
from corejax.nn import initializers as jinit
import nn

GOLDEN = os.path.join(os.path.dirname(__file__), "golden", "flax.json")


def shapes(tree):
    return tree_util.tree_map(lambda a: tuple(a.shape), tree)


def key(i=0):
    return random.PRNGKey(i)


# --- golden Flax models ----------------------------------------------------------------------

class GoldenMLP(nn.Module):
    @nn.compact
    def __call__(self, tokens):
        x = nn.Embed(num_embeddings=10, features=8)(tokens)
        x = nn.Dense(16)(x)
        x = nn.LayerNorm()(x)
        x = nn.relu(x)
        return nn.Dense(4)(x)


class GoldenCNN(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = nn.Conv(features=8, kernel_size=(3, 3))(x)
        x = nn.BatchNorm(use_running_average=False)(x)
        x = nn.relu(x)
        x = nn.Conv(features=16, kernel_size=(3, 3), strides=(2, 2), padding="VALID")(x)
        x = nn.GroupNorm(num_groups=4)(x)
        x = nn.avg_pool(x, window_shape=(2, 2), strides=(2, 2))
        x = x.reshape((x.shape[0], -1))
        return nn.Dense(10)(x)


def _golden():
    if not os.path.exists(GOLDEN):
        pytest.skip("tests/golden/flax.json not present")
    with open(GOLDEN) as f:
        return json.load(f)


@pytest.mark.parametrize("name,cls", [("mlp", GoldenMLP), ("cnn", GoldenCNN)])
def test_models_match_flax_golden(name, cls):
    rec = _golden()["models"][name]
    x = jnp.asarray(np.asarray(rec["input"], rec["input_dtype"]))
    model = cls()
    variables = model.init(key(0), x)
    assert tree_util.tree_map(lambda a: list(a.shape), variables) == rec["variable_shapes"]
    leaves, treedef = tree_util.tree_flatten(variables["params"])
    fixed = [np.float32(0.5 * np.sin(0.37 * np.arange(leaf.size) + i)).reshape(leaf.shape)
             for i, leaf in enumerate(leaves)]
    variables = dict(variables, params=tree_util.tree_unflatten(treedef, fixed))
    if "updated_batch_stats" in rec:
        y, updates = model.apply(variables, x, mutable=["batch_stats"])
        for stat in ("mean", "var"):
            np.testing.assert_allclose(
                np.asarray(updates["batch_stats"]["BatchNorm_0"][stat]),
                rec["updated_batch_stats"]["BatchNorm_0"][stat], rtol=1e-5, atol=1e-6)
    else:
        y = model.apply(variables, x)
    assert list(y.shape) == rec["output_shape"]
    np.testing.assert_allclose(np.asarray(y), rec["output"], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("partitionable", [False, True])
def test_initializers_match_jax_golden(partitionable):
    recs = _golden()["initializers"][f"partitionable={partitionable}"]
    inits = {"lecun_normal": jinit.lecun_normal(), "he_normal": jinit.he_normal(),
             "glorot_uniform": jinit.glorot_uniform(), "normal(0.01)": jinit.normal(0.01)}
    prev = corejax.config.threefry_partitionable
    corejax.config.update("jax_threefry_partitionable", partitionable)
    try:
        for name, init in inits.items():
            for shape, expected in recs[name].items():
                out = init(key(0), tuple(json.loads(shape.replace("(", "[").replace(")", "]"))),
                           jnp.float32)
                assert out.dtype == np.float32
                np.testing.assert_allclose(np.asarray(out), expected, rtol=2e-6, atol=1e-6,
                                           err_msg=f"{name} {shape}")
    finally:
        corejax.config.update("jax_threefry_partitionable", prev)


# --- naming and the module system --------------------------------------------------------------

class Block(nn.Module):
    features: int

    @nn.compact
    def __call__(self, x):
        return nn.relu(nn.Dense(self.features)(x))


class SetupModel(nn.Module):
    hidden: int = 5

    def setup(self):
        self.encoder = Block(self.hidden)
        self.heads = [nn.Dense(4), nn.Dense(2)]
        self.offset = self.param("offset", jinit.zeros, (2,))

    def __call__(self, x):
        x = self.encoder(x)
        for head in self.heads:
            x = head(x)
        return x + self.offset

    def encode(self, x):
        return self.encoder(x)


def test_compact_names_nesting_and_reuse():
    class Net(nn.Module):
        @nn.compact
        def __call__(self, x):
            shared = nn.Dense(3)
            x = shared(shared(x))
            x = Block(4)(x)
            x = Block(4, name="last")(x)
            return nn.Conv(2, (1,))(x[..., None, :])

    v = Net().init(key(), jnp.ones((2, 3)))
    assert shapes(v) == {"params": {
        "Dense_0": {"kernel": (3, 3), "bias": (3,)},
        "Block_0": {"Dense_0": {"kernel": (3, 4), "bias": (4,)}},
        "last": {"Dense_0": {"kernel": (4, 4), "bias": (4,)}},
        "Conv_0": {"kernel": (1, 4, 2), "bias": (2,)}}}
    # A second call of the compact method finds the same parameters.
    out1, out2 = Net().apply(v, jnp.ones((2, 3))), Net().apply(v, jnp.ones((2, 3)))
    np.testing.assert_array_equal(np.asarray(out1), np.asarray(out2))


def test_setup_names_methods_and_bind():
    model = SetupModel()
    x = jnp.ones((4, 3))
    v = model.init(key(), x)
    assert shapes(v["params"]) == {
        "offset": (2,), "encoder": {"Dense_0": {"kernel": (3, 5), "bias": (5,)}},
        "heads_0": {"kernel": (5, 4), "bias": (4,)}, "heads_1": {"kernel": (4, 2), "bias": (2,)}}
    assert model.apply(v, x).shape == (4, 2)
    assert model.apply(v, x, method="encode").shape == (4, 5)
    assert model.apply(v, x, method=SetupModel.encode).shape == (4, 5)
    bound = model.bind(v)
    np.testing.assert_array_equal(np.asarray(bound.encode(x)),
                                  np.asarray(model.apply(v, x, method="encode")))
    assert bound.encoder.path == ("encoder",) and str(bound.encoder.path) == "encoder"
    assert bound.path == ()


def test_sequential_and_module_attributes():
    seq = nn.Sequential([nn.Dense(4), nn.relu, nn.Dense(2)])
    v = seq.init(key(), jnp.ones((1, 3)))
    assert shapes(v["params"]) == {"layers_0": {"kernel": (3, 4), "bias": (4,)},
                                   "layers_2": {"kernel": (4, 2), "bias": (2,)}}
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    p = v["params"]
    ref = np.maximum(x @ p["layers_0"]["kernel"] + p["layers_0"]["bias"], 0)
    ref = ref @ p["layers_2"]["kernel"] + p["layers_2"]["bias"]
    np.testing.assert_allclose(np.asarray(seq.apply(v, x)), ref, rtol=1e-6)

    class Wrapper(nn.Module):
        inner: nn.Module

        @nn.compact
        def __call__(self, x):
            return self.inner(x)

    v = Wrapper(nn.Dense(3)).init(key(), jnp.ones((1, 2)))
    assert shapes(v["params"]) == {"inner": {"kernel": (2, 3), "bias": (3,)}}


def test_modules_are_dataclasses():
    d = nn.Dense(3, use_bias=False)
    assert d.features == 3 and not d.use_bias and d.name is None
    assert "features=3" in repr(d)
    with pytest.raises(nn.SetAttributeFrozenModuleError, match="frozen"):
        d.features = 4
    assert d.clone(features=7).features == 7
    with pytest.raises(TypeError):
        nn.Dense()


def test_rngs_variables_sow_and_init_with_output():
    class Noisy(nn.Module):
        @nn.compact
        def __call__(self, x):
            count = self.variable("counters", "calls", lambda: jnp.zeros((), jnp.int32))
            if not self.is_initializing():
                count.value = count.value + 1
            self.sow("intermediates", "x", x)
            return x + random.normal(self.make_rng("noise"), x.shape)

    model = Noisy()
    out, v = model.init_with_output({"params": key(0), "noise": key(1)}, jnp.zeros(3))
    assert out.shape == (3,) and set(v) == {"counters"}  # init leaves out intermediates
    _, v_all = model.init_with_output({"params": key(0), "noise": key(1)}, jnp.zeros(3),
                                      mutable=True)
    assert set(v_all) == {"counters", "intermediates"}
    y1, upd = model.apply({"counters": v["counters"]}, jnp.zeros(3), rngs={"noise": key(2)},
                          mutable=["counters", "intermediates"])
    y2 = model.apply(v, jnp.zeros(3), rngs={"noise": key(2)}, mutable=True)[0]
    assert int(upd["counters"]["calls"]) == 1 and len(upd["intermediates"]["x"]) == 1
    np.testing.assert_array_equal(np.asarray(y1), np.asarray(y2))  # same key, same stream
    y3 = model.apply(v, jnp.zeros(3), rngs={"noise": key(3)}, mutable=True)[0]
    assert not np.allclose(np.asarray(y1), np.asarray(y3))


def test_tabulate_and_param_count():
    x = jnp.ones((2, 8, 8, 1))
    table = GoldenCNN().tabulate(key(), x)
    for token in ("Conv_0", "BatchNorm_0", "GroupNorm_0", "Dense_0", "float32[2,10]",
                  "params: 1,466", "batch_stats: 16"):
        assert token in table, token
    assert nn.param_count(GoldenCNN().init(key(), x)["params"]) == 1466


# --- errors ------------------------------------------------------------------------------------

def test_errors_name_the_module():
    class Net(nn.Module):
        @nn.compact
        def __call__(self, x, train=False):
            x = nn.Dense(4)(x)
            x = nn.Dropout(0.5, deterministic=not train)(x)
            return nn.BatchNorm(use_running_average=not train)(x)

    x = jnp.ones((2, 3))
    v = Net().init(key(), x)
    with pytest.raises(nn.InvalidRngError, match='"Dropout_0" needs PRNG for "dropout"'):
        Net().apply(v, x, train=True, mutable=["batch_stats"])
    with pytest.raises(nn.ModifyScopeVariableError,
                       match=r'"mean" in "/BatchNorm_0".*mutable=\["batch_stats"\]'):
        Net().apply(v, x, train=True, rngs={"dropout": key(1)})
    with pytest.raises(nn.ScopeCollectionNotFound, match='"batch_stats" in "/BatchNorm_0"'):
        Net().apply({"params": v["params"]}, x)
    with pytest.raises(nn.ScopeParamShapeError, match=r'"kernel" in "/Dense_0"'):
        Net().apply(v, jnp.ones((2, 5)))
    with pytest.raises(nn.ScopeParamNotFoundError, match=r"\{'params': params\}"):
        Net().apply(v["params"], x)
    with pytest.raises(nn.ScopeParamNotFoundError, match='"kernel" in scope "/" \\(Dense\\)'):
        nn.Dense(3).apply({"params": {}}, x)
    with pytest.raises(ValueError, match=r'Conv "Conv_0".*rank 3.*\(5,\)'):
        Net2 = type("Net2", (nn.Module,), {"__call__": nn.compact(
            lambda self, x: nn.Conv(2, (3, 3))(x))})
        Net2().init(key(), jnp.ones((5,)))
    with pytest.raises(ValueError, match='Dense "/"|Dense "Dense"'):
        nn.Dense(2).init(key(), jnp.ones(()))
    with pytest.raises(nn.CallCompactUnboundModuleError, match="unbound"):
        nn.Dense(3)(x)
    with pytest.raises(nn.InvalidRngError, match='"params"'):
        nn.Dense(3).init({"dropout": key()}, x)
    with pytest.raises(ValueError, match="deterministic"):
        nn.Dropout(0.5).init(key(), x)
    with pytest.raises(nn.ApplyScopeInvalidVariablesTypeError):
        nn.Dense(3).apply([1, 2], x)


def test_structural_errors():
    class Dup(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.Dense(2, name="a")(nn.Dense(2, name="a")(x))

    with pytest.raises(nn.NameInUseError, match='"a"'):
        Dup().init(key(), jnp.ones((1, 2)))

    class NotCompact(nn.Module):
        def __call__(self, x):
            return nn.Dense(2)(x)

    with pytest.raises(nn.AssignSubModuleError, match="setup"):
        NotCompact().init(key(), jnp.ones((1, 2)))
    with pytest.raises(TypeError, match="only one method"):
        class TwoCompact(nn.Module):  # noqa: F841
            @nn.compact
            def a(self, x):
                return x

            @nn.compact
            def b(self, x):
                return x


# --- layer numerics against NumPy --------------------------------------------------------------

def _np_conv_nhwc(x, k, stride, pads, groups=1):
    x = np.pad(x, [(0, 0)] + list(pads) + [(0, 0)])
    kh, kw, cin, cout = k.shape
    oh = (x.shape[1] - kh) // stride + 1
    ow = (x.shape[2] - kw) // stride + 1
    out = np.zeros((x.shape[0], oh, ow, cout))
    og = cout // groups
    for i in range(kh):
        for j in range(kw):
            patch = x[:, i:i + (oh - 1) * stride + 1:stride, j:j + (ow - 1) * stride + 1:stride]
            for g in range(groups):
                out[..., g * og:(g + 1) * og] += patch[..., g * cin:(g + 1) * cin] @ \
                    k[i, j, :, g * og:(g + 1) * og]
    return out


def _apply_np(module, x, **kw):
    v = module.init(key(3), x)
    return v, np.asarray(module.apply(v, x, **kw)), tree_util.tree_map(np.asarray, v)


def test_dense_and_dense_general(rng):
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    v, y, p = _apply_np(nn.Dense(5), x)
    np.testing.assert_allclose(y, x @ p["params"]["kernel"] + p["params"]["bias"], rtol=1e-5)
    v, y, p = _apply_np(nn.DenseGeneral((2, 3), axis=(-2, -1)), x)
    assert p["params"]["kernel"].shape == (3, 4, 2, 3)
    ref = np.einsum("bij,ijkl->bkl", x, p["params"]["kernel"]) + p["params"]["bias"]
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-6)
    assert nn.Dense(3, use_bias=False).init(key(), x)["params"].keys() == {"kernel"}
    y16 = nn.Dense(3, dtype=jnp.float16).apply(nn.Dense(3).init(key(), x), x)
    assert y16.dtype == np.float16


@pytest.mark.parametrize("kw,pads", [
    (dict(kernel_size=(3, 3)), [(1, 1), (1, 1)]),
    (dict(kernel_size=(3, 2), strides=2, padding="VALID"), [(0, 0), (0, 0)]),
    (dict(kernel_size=(2, 2), padding=((1, 0), (0, 1))), [(1, 0), (0, 1)]),
    (dict(kernel_size=(3, 3), feature_group_count=2, padding=1), [(1, 1), (1, 1)]),
])
def test_conv_layer_matches_numpy(kw, pads, rng):
    x = rng.standard_normal((2, 6, 5, 4)).astype(np.float32)
    v, y, p = _apply_np(nn.Conv(6, **kw), x)
    groups = kw.get("feature_group_count", 1)
    assert p["params"]["kernel"].shape == tuple(kw["kernel_size"]) + (4 // groups, 6)
    ref = _np_conv_nhwc(x, p["params"]["kernel"], kw.get("strides", 1), pads, groups)
    np.testing.assert_allclose(y, ref + p["params"]["bias"], rtol=1e-4, atol=1e-5)
    # Unbatched inputs and extra batch axes.
    conv = nn.Conv(6, **kw)
    np.testing.assert_allclose(np.asarray(conv.apply(v, x[0])), y[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(conv.apply(v, x[None])), y[None], rtol=1e-5,
                               atol=1e-6)


def test_conv_transpose_and_padding_modes(rng):
    x = rng.standard_normal((1, 4, 4, 2)).astype(np.float32)
    v = nn.ConvTranspose(3, (3, 3), strides=(2, 2)).init(key(), x)
    assert shapes(v["params"]) == {"kernel": (3, 3, 2, 3), "bias": (3,)}
    assert nn.ConvTranspose(3, (3, 3), strides=(2, 2)).apply(v, x).shape == (1, 8, 8, 3)
    v = nn.Conv(2, (3,), padding="CAUSAL").init(key(), x[:, 0])
    assert nn.Conv(2, (3,), padding="CAUSAL").apply(v, x[:, 0]).shape == (1, 4, 2)
    v = nn.Conv(2, (3, 3), padding="CIRCULAR").init(key(), x)
    y = nn.Conv(2, (3, 3), padding="CIRCULAR").apply(v, x)
    k = np.asarray(v["params"]["kernel"])
    wrapped = np.pad(x, [(0, 0), (1, 1), (1, 1), (0, 0)], mode="wrap")
    np.testing.assert_allclose(np.asarray(y), _np_conv_nhwc(wrapped, k, 1, [(0, 0), (0, 0)]),
                               rtol=1e-4, atol=1e-5)


def _np_norm(x, axes, eps):
    mean = x.mean(axes, keepdims=True)
    var = x.var(axes, keepdims=True)
    return (x - mean) / np.sqrt(var + eps)


def test_batch_norm_train_and_eval(rng):
    x = (3 + 2 * rng.standard_normal((4, 3, 3, 5))).astype(np.float32)
    bn = nn.BatchNorm(use_running_average=False, momentum=0.9)
    v = bn.init(key(), x)
    assert shapes(v) == {"params": {"scale": (5,), "bias": (5,)},
                         "batch_stats": {"mean": (5,), "var": (5,)}}
    y, upd = bn.apply(v, x, mutable=["batch_stats"])
    np.testing.assert_allclose(np.asarray(y), _np_norm(x, (0, 1, 2), 1e-5), rtol=1e-4,
                               atol=1e-4)
    stats = upd["batch_stats"]
    np.testing.assert_allclose(np.asarray(stats["mean"]), 0.1 * x.mean((0, 1, 2)), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(stats["var"]), 0.9 + 0.1 * x.var((0, 1, 2)),
                               rtol=1e-5)
    ev = nn.BatchNorm(use_running_average=True).apply(dict(v, batch_stats=stats), x)
    ref = (x - np.asarray(stats["mean"])) / np.sqrt(np.asarray(stats["var"]) + 1e-5)
    np.testing.assert_allclose(np.asarray(ev), ref, rtol=1e-5, atol=1e-5)
    # The call argument overrides nothing when the attribute is unset.
    y2 = nn.BatchNorm().apply(v, x, use_running_average=False, mutable=["batch_stats"])[0]
    np.testing.assert_allclose(np.asarray(y2), np.asarray(y), rtol=1e-6)


def test_layer_group_rms_norm(rng):
    x = (1 + rng.standard_normal((2, 3, 4, 6))).astype(np.float32)
    _, y, _ = _apply_np(nn.LayerNorm(), x)
    np.testing.assert_allclose(y, _np_norm(x, -1, 1e-6), rtol=1e-4, atol=1e-4)
    _, y, _ = _apply_np(nn.LayerNorm(reduction_axes=(1, 2, 3), feature_axes=-1), x)
    np.testing.assert_allclose(y, _np_norm(x, (1, 2, 3), 1e-6), rtol=1e-4, atol=1e-4)
    _, y, p = _apply_np(nn.GroupNorm(num_groups=3), x)
    assert shapes(p["params"]) == {"scale": (6,), "bias": (6,)}
    grouped = x.reshape(2, 3, 4, 3, 2)
    ref = _np_norm(grouped, (1, 2, 4), 1e-6).reshape(x.shape)
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)
    _, y2, _ = _apply_np(nn.GroupNorm(num_groups=None, group_size=2), x)
    np.testing.assert_allclose(y2, y, rtol=1e-6)
    _, y, _ = _apply_np(nn.RMSNorm(), x)
    np.testing.assert_allclose(y, x / np.sqrt((x ** 2).mean(-1, keepdims=True) + 1e-6),
                               rtol=1e-5)
    with pytest.raises(ValueError, match='GroupNorm "/"|GroupNorm "GroupNorm".*groups'):
        nn.GroupNorm(num_groups=4).init(key(), x)


def test_pooling_matches_numpy(rng):
    x = rng.standard_normal((2, 5, 6, 3)).astype(np.float32)
    y = np.asarray(nn.max_pool(x, (2, 2), strides=(2, 2)))
    np.testing.assert_array_equal(y, x[:, :4].reshape(2, 2, 2, 3, 2, 3).max((2, 4)))
    y = np.asarray(nn.avg_pool(x, (2, 3), strides=(2, 3)))
    np.testing.assert_allclose(y, x[:, :4].reshape(2, 2, 2, 2, 3, 3).mean((2, 4)), rtol=1e-6)
    y = np.asarray(nn.min_pool(x, (3, 3), padding="SAME"))
    padded = np.pad(x, [(0, 0), (1, 1), (1, 1), (0, 0)], constant_values=np.inf)
    ref = np.min([padded[:, i:i + 5, j:j + 6] for i in range(3) for j in range(3)], axis=0)
    np.testing.assert_array_equal(y, ref)
    zero_padded = np.pad(x, [(0, 0), (1, 1), (1, 1), (0, 0)])
    sums = np.sum([zero_padded[:, i:i + 5, j:j + 6] for i in range(3) for j in range(3)], 0)
    counts = np.sum([np.pad(np.ones((5, 6)), 1)[i:i + 5, j:j + 6]
                     for i in range(3) for j in range(3)], 0)[None, :, :, None]
    np.testing.assert_allclose(np.asarray(nn.avg_pool(x, (3, 3), padding=((1, 1), (1, 1)))),
                               sums / 9, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(nn.avg_pool(x, (3, 3), padding="SAME",
                                                      count_include_pad=False)),
                               sums / counts, rtol=1e-5, atol=1e-6)
    assert nn.max_pool(x[0], (2, 2)).shape == (4, 5, 3)  # unbatched
    assert nn.max_pool(x[None], (2, 2)).shape == (1, 2, 4, 5, 3)  # extra batch axis


def test_embed_and_dropout(rng):
    ids = jnp.asarray([[0, 3], [9, 3]], jnp.int32)
    emb = nn.Embed(10, 4)
    v = emb.init(key(), ids)
    table = np.asarray(v["params"]["embedding"])
    np.testing.assert_array_equal(np.asarray(emb.apply(v, ids)), table[np.asarray(ids)])
    assert emb.apply(v, jnp.ones((3, 4)), method="attend").shape == (3, 10)
    with pytest.raises(ValueError, match="integer"):
        emb.apply(v, jnp.ones((2,)))
    x = jnp.ones((200, 50))
    drop = nn.Dropout(0.3)
    np.testing.assert_array_equal(np.asarray(drop.apply({}, x, deterministic=True)),
                                  np.asarray(x))
    y = np.asarray(drop.apply({}, x, deterministic=False, rngs={"dropout": key(5)}))
    kept = y != 0
    assert abs(kept.mean() - 0.7) < 0.02
    np.testing.assert_allclose(y[kept], 1 / 0.7, rtol=1e-6)
    y_b = np.asarray(nn.Dropout(0.5, broadcast_dims=(0,)).apply(
        {}, x, deterministic=False, rngs={"dropout": key(5)}))
    assert (y_b == y_b[:1]).all()


def test_vmap_and_jit_of_apply(rng):
    model = GoldenCNN()
    x = rng.standard_normal((3, 2, 8, 8, 1)).astype(np.float32)
    v = model.init(key(), x[0])
    f = lambda v, x: model.apply(v, x, mutable=["batch_stats"])[0]
    out = corejax.vmap(f, in_axes=(None, 0))(v, x)
    np.testing.assert_allclose(np.asarray(out), np.stack([np.asarray(f(v, xi)) for xi in x]),
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.asarray(corejax.jit(f)(v, x[0])), np.asarray(f(v, x[0])),
                               rtol=1e-5, atol=1e-6)


# --- gradients through every layer -------------------------------------------------------------

class PoolNet(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = nn.Conv(3, (2, 2))(x)
        return nn.avg_pool(nn.max_pool(x, (2, 2), (1, 1), "SAME"), (2, 2), (2, 2))


LAYERS = {
    "dense": (lambda: nn.Dense(3), (2, 4)),
    "dense_general": (lambda: nn.DenseGeneral((2, 2), axis=(1, 2)), (2, 3, 2)),
    "conv": (lambda: nn.Conv(4, (3, 2), strides=(2, 1), kernel_dilation=(1, 2),
                             padding="SAME"), (2, 5, 6, 2)),
    "conv_groups": (lambda: nn.Conv(4, (2, 2), feature_group_count=2, input_dilation=2,
                                    padding=((1, 0), (0, 1))),
                    (1, 3, 3, 4)),
    "conv_transpose": (lambda: nn.ConvTranspose(2, (3, 3), strides=(2, 2)), (1, 3, 3, 2)),
    "batch_norm": (lambda: nn.BatchNorm(use_running_average=False), (4, 3, 2)),
    "layer_norm": (lambda: nn.LayerNorm(), (3, 5)),
    "group_norm": (lambda: nn.GroupNorm(num_groups=2), (2, 3, 4)),
    "rms_norm": (lambda: nn.RMSNorm(), (3, 5)),
    "pooling": (lambda: PoolNet(), (1, 5, 5, 2)),
    "dropout": (lambda: nn.Sequential([nn.Dense(6), nn.Dropout(0.5, deterministic=False)]),
                (3, 4)),
}


@pytest.mark.parametrize("name", LAYERS)
def test_layer_gradients_match_finite_differences(name, rng, x64):
    make, in_shape = LAYERS[name]
    model = make()
    x = rng.standard_normal(in_shape)
    rngs = {"params": key(1), "dropout": key(2)}
    params = tree_util.tree_map(lambda a: jnp.asarray(a, jnp.float64),
                                model.init(rngs, x)["params"])

    def loss(params, x):
        out = model.apply({"params": params}, x, rngs={"dropout": key(7)},
                          mutable=["batch_stats"])[0]
        return jnp.sum(jnp.sin(out) * jnp.cos(0.3 * out))

    gp, gx = corejax.grad(loss, argnums=(0, 1))(params, x)
    dp = tree_util.tree_map(lambda a: rng.standard_normal(a.shape), params)
    dx = rng.standard_normal(x.shape)
    eps = 1e-6
    shift = lambda s: (tree_util.tree_map(lambda a, d: a + s * d, params, dp), x + s * dx)
    fd = (float(loss(*shift(eps))) - float(loss(*shift(-eps)))) / (2 * eps)
    analytic = sum(float(jnp.sum(g * d)) for g, d in
                   zip(tree_util.tree_leaves(gp), tree_util.tree_leaves(dp)))
    analytic += float(jnp.sum(gx * dx))
    np.testing.assert_allclose(analytic, fd, rtol=1e-6, atol=1e-8)


def test_embed_gradient_is_a_scatter_add(x64):
    ids = jnp.asarray([1, 3, 1], jnp.int32)
    emb = nn.Embed(5, 2)
    v = emb.init(key(), ids)
    g = corejax.grad(lambda p: jnp.sum(emb.apply({"params": p}, ids)))(v["params"])
    np.testing.assert_array_equal(np.asarray(g["embedding"]),
                                  [[0, 0], [2, 2], [0, 0], [1, 1], [0, 0]])


# --- initializers ------------------------------------------------------------------------------

def test_fan_computations():
    assert jinit.compute_fans((3, 4)) == (3, 4)
    assert jinit.compute_fans((2, 5, 3, 4)) == (30, 40)  # receptive field 10
    assert jinit.compute_fans((3, 4, 5), in_axis=0, out_axis=1) == (15, 20)
    assert jinit.compute_fans((6, 3, 4), batch_axis=0) == (3, 4)
    assert jinit.compute_fans((2, 3, 4), in_axis=(0, 1)) == (6, 4)
    with pytest.raises(ValueError, match="at least 2-D"):
        jinit.lecun_normal()(key(), (5,))
    with pytest.raises(ValueError, match="mode"):
        jinit.variance_scaling(1.0, "fan_max", "normal")
    with pytest.raises(ValueError, match="distribution"):
        jinit.variance_scaling(1.0, "fan_in", "cauchy")


@pytest.mark.parametrize("init,variance", [
    (jinit.lecun_normal(), 1 / 200), (jinit.lecun_uniform(), 1 / 200),
    (jinit.he_normal(), 2 / 200), (jinit.he_uniform(), 2 / 200),
    (jinit.kaiming_normal(), 2 / 200), (jinit.glorot_normal(), 2 / 500),
    (jinit.xavier_uniform(), 2 / 500), (jinit.variance_scaling(3.0, "fan_out", "normal"), 3 / 300),
    (jinit.variance_scaling(1.0, "fan_geo_avg", "uniform"), 1 / math.sqrt(200 * 300)),
])
def test_variance_scaling_statistics(init, variance):
    w = np.asarray(init(key(4), (200, 300), jnp.float32))
    assert w.shape == (200, 300) and w.dtype == np.float32
    assert abs(w.mean()) < 0.02 * math.sqrt(variance) * 10
    np.testing.assert_allclose(w.var(), variance, rtol=0.03)


def test_simple_initializers():
    assert np.asarray(jinit.zeros(key(), (2, 3))).sum() == 0
    assert np.asarray(jinit.ones(key(), (2,), jnp.float32)).tolist() == [1, 1]
    assert np.asarray(jinit.constant(0.5)(key(), (3,))).tolist() == [0.5] * 3
    n = np.asarray(jinit.normal(0.1)(key(), (400, 100)))
    np.testing.assert_allclose(n.std(), 0.1, rtol=0.03)
    u = np.asarray(jinit.uniform(2.0)(key(), (400, 100)))
    assert 0 <= u.min() and u.max() < 2 and abs(u.mean() - 1) < 0.02
    t = np.asarray(jinit.truncated_normal(1.0)(key(), (400, 100)))
    assert np.abs(t).max() <= 2.0
    np.testing.assert_allclose(t.std(), 0.87962566, rtol=0.03)
    for shape, axis in [((6, 4), -1), ((3, 8), -1), ((2, 3, 5), -1), ((6, 2, 2), 0)]:
        q = np.asarray(jinit.orthogonal(column_axis=axis)(key(2), shape, jnp.float32))
        q = np.moveaxis(q, axis, -1).reshape(-1, shape[axis])
        small = q.T @ q if q.shape[0] >= q.shape[1] else q @ q.T
        np.testing.assert_allclose(small, np.eye(small.shape[0]), atol=1e-5)
    d = np.asarray(jinit.delta_orthogonal()(key(), (3, 3, 2, 4)))
    assert np.abs(d[0]).sum() == 0 and np.abs(d[1, 1]).sum() > 0
    assert nn.initializers.zeros_init() is jinit.zeros
    with pytest.raises(TypeError, match="floating"):
        jinit.normal()(key(), (2,), jnp.int32)


def test_initializer_dtype_follows_x64(x64):
    assert jinit.lecun_normal()(key(), (3, 4)).dtype == np.float64
    assert nn.Dense(2).init(key(), jnp.ones((1, 3)))["params"]["kernel"].dtype == np.float32


# --- small models that learn -------------------------------------------------------------------

def _sgd_train(model, variables, x, y, steps, lr, mutable=()):
    def loss_fn(params, rest, x, y):
        out = model.apply({"params": params, **rest}, x, mutable=list(mutable) or False)
        logits, updates = out if mutable else (out, {})
        logp = nn.log_softmax(logits)
        # stop_gradient: corejax's has_aux does not yet lower aux values that depend on the
        # differentiated inputs (they escape as JVP tracers).
        updates = tree_util.tree_map(corejax.lax.stop_gradient, updates)
        return -jnp.mean(jnp.sum(logp * nn.one_hot(y, logits.shape[-1]), -1)), updates

    @corejax.jit
    def step(params, rest, x, y):
        (loss, updates), grads = corejax.value_and_grad(loss_fn, has_aux=True)(params, rest,
                                                                               x, y)
        params = tree_util.tree_map(lambda p, g: p - lr * g, params, grads)
        return params, {**rest, **updates}, loss

    params = variables["params"]
    rest = {k: v for k, v in variables.items() if k != "params"}
    losses = []
    for _ in range(steps):
        params, rest, loss = step(params, rest, x, y)
        losses.append(float(loss))
    return losses


def test_mlp_learns(rng):
    centers = np.array([[2, 0], [-1, 2], [-1, -2]], np.float32)
    labels = rng.integers(0, 3, 120)
    x = centers[labels] + 0.6 * rng.standard_normal((120, 2)).astype(np.float32)

    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.Dense(3)(nn.gelu(nn.Dense(16)(x)))

    model = MLP()
    losses = _sgd_train(model, model.init(key(), x), x, jnp.asarray(labels, jnp.int32), 40,
                        0.3)
    assert losses[-1] < 0.4 * losses[0], losses[::8]


def test_cnn_learns(rng):
    n = 48
    labels = rng.integers(0, 2, n)
    images = 0.3 * rng.standard_normal((n, 8, 8, 1)).astype(np.float32)
    where = rng.integers(1, 7, n)
    for i in range(n):  # horizontal bars for class 0, vertical for class 1
        if labels[i] == 0:
            images[i, where[i], :, 0] += 1.5
        else:
            images[i, :, where[i], 0] += 1.5

    class CNN(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.relu(nn.BatchNorm(use_running_average=False)(nn.Conv(6, (3, 3))(x)))
            x = nn.max_pool(x, (2, 2), strides=(2, 2))
            x = nn.relu(nn.Conv(8, (3, 3), padding="VALID")(x))
            x = nn.avg_pool(x, (2, 2))
            return nn.Dense(2)(x.reshape((x.shape[0], -1)))

    model = CNN()
    losses = _sgd_train(model, model.init(key(), images), images,
                        jnp.asarray(labels, jnp.int32), 30, 0.2, mutable=["batch_stats"])
    assert losses[-1] < 0.5 * losses[0], losses[::6]


# --- attention ---------------------------------------------------------------------------------

def _np_softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_multi_head_attention_matches_numpy(rng):
    x = rng.standard_normal((2, 5, 6)).astype(np.float32)
    kv = rng.standard_normal((2, 3, 6)).astype(np.float32)
    mha = nn.MultiHeadDotProductAttention(num_heads=2, qkv_features=8, out_features=7)
    mask = nn.make_attention_mask(jnp.ones((2, 5)), jnp.asarray([[1, 1, 0], [1, 1, 1]]))
    v = mha.init(key(), x, kv, mask=mask)
    assert shapes(v["params"]) == {
        "query": {"kernel": (6, 2, 4), "bias": (2, 4)}, "key": {"kernel": (6, 2, 4),
                                                              "bias": (2, 4)},
        "value": {"kernel": (6, 2, 4), "bias": (2, 4)}, "out": {"kernel": (2, 4, 7),
                                                              "bias": (7,)}}
    p = tree_util.tree_map(np.asarray, v["params"])
    proj = lambda name, a: np.einsum("bld,dhk->blhk", a, p[name]["kernel"]) + p[name]["bias"]
    q, k, val = proj("query", x), proj("key", kv), proj("value", kv)
    logits = np.einsum("bqhd,bkhd->bhqk", q / 2.0, k)
    logits = np.where(np.asarray(mask) > 0, logits, np.finfo(np.float32).min)
    att = np.einsum("bhqk,bkhd->bqhd", _np_softmax(logits), val)
    ref = np.einsum("bqhd,hdo->bqo", att, p["out"]["kernel"]) + p["out"]["bias"]
    np.testing.assert_allclose(np.asarray(mha.apply(v, x, kv, mask=mask)), ref, rtol=1e-4,
                               atol=1e-5)
    # Self-attention with a causal mask: position 0 sees only itself.
    causal = nn.make_causal_mask(jnp.ones((2, 5)))
    assert causal.shape == (2, 1, 5, 5) and float(causal[0, 0, 0, 1]) == 0.0
    sa = nn.SelfAttention(num_heads=2, qkv_features=8)
    vs = sa.init(key(), x, mask=causal)
    y = np.asarray(sa.apply(vs, x, mask=causal))
    later_zeroed = np.concatenate([x[:, :1], np.zeros_like(x[:, 1:])], 1)
    y2 = np.asarray(sa.apply(vs, later_zeroed, mask=causal))
    np.testing.assert_allclose(y[:, 0], y2[:, 0], rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="num_heads"):
        nn.MultiHeadDotProductAttention(num_heads=3, qkv_features=8).init(key(), x)


def test_attention_dropout_and_gradients(rng, x64):
    x = rng.standard_normal((2, 4, 6))
    mha = nn.MultiHeadDotProductAttention(num_heads=2, dropout_rate=0.5)
    v = mha.init(key(), x, deterministic=True)
    params = tree_util.tree_map(lambda a: jnp.asarray(a, jnp.float64), v["params"])
    with pytest.raises(nn.InvalidRngError, match="dropout"):
        mha.apply({"params": params}, x, deterministic=False)
    loss = lambda p, x: jnp.sum(jnp.sin(mha.apply({"params": p}, x, deterministic=False,
                                                  rngs={"dropout": key(3)})))
    gp, gx = corejax.grad(loss, argnums=(0, 1))(params, x)
    dx = rng.standard_normal(x.shape)
    eps = 1e-6
    fd = (float(loss(params, x + eps * dx)) - float(loss(params, x - eps * dx))) / (2 * eps)
    np.testing.assert_allclose(float(jnp.sum(gx * dx)), fd, rtol=1e-6)


def test_softmax_runs_compiled_and_follows_the_custom_jvp_option_per_call():
    """nn.softmax and nn.log_softmax are compiled functions, as JAX's are: an eager call gives
    the bits of the same call under jit, a list of axes is taken as a tuple, and the
    softmax_custom_jvp option is read at each call (not frozen in the first trace)."""
    import corejax
    x = jnp.asarray(np.random.default_rng(0).standard_normal((3, 16)).astype(np.float32))
    for f in (nn.softmax, nn.log_softmax):
        np.testing.assert_array_equal(np.asarray(f(x)), np.asarray(corejax.jit(f)(x)))
        np.testing.assert_array_equal(np.asarray(f(x, axis=[0, 1])),
                                      np.asarray(f(x, axis=(0, 1))))
    for flag in (False, True, False):
        with corejax.softmax_custom_jvp(flag):
            staged = str(corejax.make_jaxpr(nn.softmax)(x))
        assert ("custom_jvp" in staged) == flag, staged
