"""optim.tree / optim.tree_utils and optim.projections against Optax 0.2.8
(tests/golden/optax_losses.json, written by tests/golden/gen_optax_losses.py): tree
arithmetic, norms, casting, dtypes, random draws, get / set / map_params on an optimizer
state, and every projection's value and gradient."""
import numpy as np
import pytest

import corejax as jax
import corejax.numpy as jnp
import optim
from _optax_golden import GOLDEN, assert_close, dec

TREE = GOLDEN["tree"]
PROJECTIONS = GOLDEN["projections"]


def test_tree_and_tree_utils_names():
    for name in optim.tree.__all__:
        assert getattr(optim.tree_utils, "tree_" + name) is getattr(optim.tree, name), name
    assert optim.tree_utils.NamedTupleKey is optim.tree.get.__globals__["NamedTupleKey"]


@pytest.mark.parametrize("record", TREE["cases"], ids=[r["id"] for r in TREE["cases"]])
def test_tree_function_matches_optax(record):
    args = dec(record["args"])
    got = getattr(optim.tree, record["name"])(*args, **dec(record["kwargs"]))
    if record["name"] == "size":
        assert isinstance(got, int) and got == record["value"]
        return
    assert_close(got, record["value"], rtol=3e-6, atol=1e-6)


def test_tree_dtype_and_random_like_optax():
    mixed = dec(TREE["dtype"]["mixed"])
    for handler, want in TREE["dtype"]["results"].items():
        handler = None if handler == "None" else handler
        tree = mixed if handler else {"f": jnp.ones(2)}
        assert str(np.dtype(optim.tree.dtype(tree, handler))) == want, handler
    with pytest.raises(ValueError, match="Expected dtype"):
        optim.tree.dtype(mixed)
    with pytest.raises(ValueError, match="mixed_dtype_handler"):
        optim.tree.dtype(mixed, "widest")
    rand = TREE["random"]
    target = dec(rand["tree"])
    # The golden draws are JAX 0.10's, whose default is the partitionable threefry layout.
    previous = jax.config.threefry_partitionable
    jax.config.update("jax_threefry_partitionable", True)
    try:
        keys = optim.tree.split_key_like(jax.random.key(7), target)
        assert_close(jax.tree_util.tree_map(jax.random.key_data, keys), rand["split_key_like"])
        assert_close(optim.tree.random_like(jax.random.key(3), target),
                     rand["random_like_normal"])
        assert_close(optim.tree.random_like(jax.random.key(3), target,
                                            sampler=jax.random.uniform),
                     rand["random_like_uniform"])
    finally:
        jax.config.update("jax_threefry_partitionable", previous)
    raw = optim.tree.unwrap_random_key_data({"k": jax.random.key(7), "x": jnp.ones(2)})
    np.testing.assert_array_equal(np.asarray(raw["k"]),
                                  np.asarray(jax.random.key_data(jax.random.key(7))))
    with pytest.raises(ValueError, match="Unsupported ord"):
        optim.tree.norm(target, ord=3)


def _adam_state(rec):
    opt = optim.chain(optim.add_decayed_weights(1e-2), optim.scale_by_adam(),
                      optim.scale_by_learning_rate(0.1))
    params = dec(rec["params"])
    _, state = opt.update(dec(rec["grads"]), opt.init(params), params)
    return opt, state


def test_get_set_map_params_on_a_state_like_optax():
    rec = GOLDEN["tree_state"]
    opt, state = _adam_state(rec)
    assert_close(jax.tree_util.tree_leaves(state), rec["state_leaves"], rtol=1e-6, atol=1e-7)
    for key, found in rec["get_all_with_path"].items():
        got = optim.tree.get_all_with_path(state, key)
        assert [[str(k) for k in path] for path, _ in got] == [p for p, _ in found], key
        assert_close([v for _, v in got], [v for _, v in found], rtol=1e-6, atol=1e-7)
    assert_close(optim.tree.get(state, "nu"), rec["get_nu"], rtol=1e-6, atol=1e-7)
    assert optim.tree.get(state, "no_such_entry", default=3) == 3
    new = optim.tree.set(state, count=jnp.asarray(7, jnp.int32))
    assert_close(jax.tree_util.tree_leaves(new), rec["set_count_leaves"], rtol=1e-6, atol=1e-7)
    mapped = optim.tree.map_params(opt, lambda v: v * 2.0 + 1.0, state)
    assert_close(jax.tree_util.tree_leaves(mapped), rec["map_params_leaves"], rtol=1e-6,
                 atol=1e-6)
    with pytest.raises(KeyError, match="no values matching 'nothing'"):
        optim.tree.set(state, nothing=1)
    with pytest.raises(KeyError, match="multiple values for 'w'"):
        optim.tree.get(state, "w")
    only_mu = optim.tree.get(state, "w", filtering=lambda path, _: "mu" in str(path))
    assert_close(only_mu, rec["get_all_with_path"]["w"][0][1], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("record", PROJECTIONS, ids=[r["id"] for r in PROJECTIONS])
def test_projection_matches_optax(record):
    fn = getattr(optim.projections, record["name"])
    args, kwargs = dec(record["args"]), dec(record["kwargs"])
    assert_close(fn(*args, **kwargs), record["value"], rtol=2e-6, atol=2e-6)
    if "grad" in record:
        weights = dec(record["grad_weights"])
        grad = jax.grad(lambda x: optim.tree.vdot(weights, fn(x, *args[1:], **kwargs)))(args[0])
        assert_close(grad, record["grad"], rtol=1e-5, atol=1e-5)


def test_projections_under_jit():
    # projection_l1_ball: a lax.cond around the simplex projection (inside and outside).
    project = jax.jit(optim.projections.projection_l1_ball, static_argnames="scale")
    for rec in [r for r in PROJECTIONS if r["name"] == "projection_l1_ball"]:
        assert_close(project(dec(rec["args"])[0], **rec["kwargs"]), rec["value"], rtol=2e-6,
                     atol=2e-6)


def test_tree_functions_under_jit():
    # One compilation for a batch of the golden cases, each compared with Optax's value.
    picked = [r for r in TREE["cases"] if r["name"] in
              ("add", "add_scale", "vdot", "sum", "max", "norm", "clip", "update_moment",
               "update_infinity_moment", "bias_correction", "where")]
    arrays = [dec(r["args"]) for r in picked]
    kwargs = [dec(r["kwargs"]) for r in picked]

    @jax.jit
    def run_all(all_args):
        return [getattr(optim.tree, r["name"])(*args, **kw)
                for r, args, kw in zip(picked, all_args, kwargs)]
    for record, got in zip(picked, run_all(arrays)):
        assert_close(got, record["value"], rtol=3e-6, atol=1e-6, what=record["id"])
