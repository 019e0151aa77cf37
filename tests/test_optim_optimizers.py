"""optim's optimizers and scale_by_* blocks against Optax 0.2.8 (issue #28).

tests/golden/optax_optimizers.json (written by tests/golden/gen_optax_optimizers.py with real
Optax on JAX 0.10.2) holds, per case, the parameters after each of ten steps on fixed gradients
and the final optimizer state (NamedTuple class names, field names, dtypes, shapes, values).
Both are compared eagerly; the step is also compiled with corejax.jit (the cases in one jitted
function, so one compilation) and must agree with Optax to float32 rounding. Compiling all 48
cases costs about a minute on a cold kernel cache, so by default the jitted check covers SM3
(per-axis accumulators: reshapes, minima and maxima over axes) and noisy SGD (PRNG draws);
set COREJAX_SLOW_TESTS=1 to compile every case. Tolerance: a few float32 ulps relative, 1e-6
absolute (sign-based steps are exact either way).
"""
import contextlib
import json
import os
import warnings

import numpy as np
import pytest

import corejax as jax
import corejax.numpy as jnp
import optim

GOLDEN = json.load(open(os.path.join(os.path.dirname(__file__), "golden",
                                     "optax_optimizers.json")))
TOL = dict(rtol=2e-6, atol=1e-6)
EXTRA_ARGS = {"polyak_sgd"}
CASES = GOLDEN["cases"]
SLOW = os.environ.get("COREJAX_SLOW_TESTS") == "1"
JIT_DEFAULT = {"sm3", "noisy_sgd"}


def as_tree(tree):
    return jax.tree_util.tree_map(lambda v: jnp.asarray(np.asarray(v, np.float32)), tree,
                                  is_leaf=lambda v: isinstance(v, list))


PARAMS = as_tree(GOLDEN["params"])
GRADS = [as_tree(g) for g in GOLDEN["grads"]]
VALUES = [jnp.asarray(v, jnp.float32) for v in GOLDEN["values"]]


@contextlib.contextmanager
def jax_0_10_random():
    """Noise-adding cases draw JAX 0.10's numbers (its default threefry layout)."""
    saved = jax.config.threefry_partitionable
    jax.config.update("jax_threefry_partitionable", True)
    try:
        yield
    finally:
        jax.config.update("jax_threefry_partitionable", saved)


def build(spec):
    kwargs = {k: build(v) if isinstance(v, dict) and "name" in v else v
              for k, v in spec["kwargs"].items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return getattr(optim, spec["name"])(**kwargs)


def case_id(case):
    spec = case["spec"]
    return spec["name"] + "".join(f"-{k}={v}" for k, v in spec["kwargs"].items()
                                  if not isinstance(v, dict))


def step(opt, name):
    def one(params, state, grads, value):
        extra = {"value": value} if name in EXTRA_ARGS else {}
        updates, state = opt.update(grads, state, params, **extra)
        return optim.apply_updates(params, updates), state
    return one


def assert_state_matches(actual, expected, where="state"):
    if "type" in expected and "fields" in expected:
        assert type(actual).__name__ == expected["type"], (where, type(actual).__name__)
        assert tuple(actual._fields) == tuple(expected["fields"]), (where, actual._fields)
        for f, sub in expected["fields"].items():
            assert_state_matches(getattr(actual, f), sub, f"{where}.{f}")
    elif isinstance(expected, list):
        assert isinstance(actual, (tuple, list)) and len(actual) == len(expected), where
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_state_matches(a, e, f"{where}[{i}]")
    elif "dtype" not in expected:
        assert isinstance(actual, dict) and set(map(str, actual)) == set(expected), where
        for k, v in actual.items():
            assert_state_matches(v, expected[str(k)], f"{where}[{k!r}]")
    else:
        if expected["dtype"].startswith("key"):
            actual = jax.random.key_data(actual)
            assert np.asarray(actual).tolist() == expected["value"], where
            return
        a = np.asarray(actual)
        assert str(a.dtype) == expected["dtype"] and list(a.shape) == expected["shape"], \
            (where, a.dtype, a.shape, expected["dtype"], expected["shape"])
        np.testing.assert_allclose(a.astype(np.float64),
                                   np.asarray(expected["value"], np.float64),
                                   rtol=1e-5, atol=1e-6, err_msg=where)


def assert_params_close(actual, expected, where):
    expected = as_tree(expected)
    for name in ("w", "b"):
        np.testing.assert_allclose(np.asarray(actual[name], np.float64),
                                   np.asarray(expected[name], np.float64), **TOL,
                                   err_msg=where)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_eager_matches_optax(case):
    with jax_0_10_random():
        check_eager(case)


def check_eager(case):
    opt = build(case["spec"])
    one = step(opt, case["spec"]["name"])
    params, state = PARAMS, opt.init(PARAMS)
    for t, (g, v) in enumerate(zip(GRADS, VALUES)):
        params, state = one(params, state, g, v)
        assert_params_close(params, case["params"][t], f"{case_id(case)} step {t + 1}")
    assert_state_matches(state, case["state"])


def test_jit_matches_optax():
    """The cases' steps compiled together: one corejax.jit of all updates, run ten times."""
    cases = [c for c in CASES if SLOW or c["spec"]["name"] in JIT_DEFAULT]
    opts = [build(c["spec"]) for c in cases]
    steps = [step(o, c["spec"]["name"]) for o, c in zip(opts, cases)]

    @jax.jit
    def all_steps(params, states, grads, value):
        out = [s(p, st, grads, value) for s, p, st in zip(steps, params, states)]
        return [o[0] for o in out], [o[1] for o in out]

    params = [PARAMS] * len(cases)
    with jax_0_10_random():
        states = [o.init(PARAMS) for o in opts]
        trajectory = []
        for g, v in zip(GRADS, VALUES):
            params, states = all_steps(params, states, g, v)
            trajectory.append((params, states))
    for t, (params, states) in enumerate(trajectory):
        for p, c in zip(params, cases):
            assert_params_close(p, c["params"][t], f"jit {case_id(c)} step {t + 1}")
    for st, c in zip(states, cases):
        assert_state_matches(st, c["state"], f"jit {case_id(c)}")


def test_inject_hyperparams_exposes_learning_rate():
    spec = next(c for c in CASES if c["spec"]["name"] == "adabelief")
    opt = optim.inject_hyperparams(optim.adabelief)(**spec["spec"]["kwargs"])
    state = opt.init(PARAMS)
    np.testing.assert_allclose(state.hyperparams["learning_rate"], 0.05)
    params = PARAMS
    for g in GRADS:
        updates, state = opt.update(g, state, params)
        params = optim.apply_updates(params, updates)
    assert_params_close(params, spec["params"][-1], "inject_hyperparams(adabelief)")


def test_signatures_and_errors():
    with pytest.raises(ValueError, match="variant"):
        optim.polyak_sgd(variant="sps-")
    with pytest.raises(ValueError, match="Unknown lion mode"):
        optim.scale_by_lion(mode="soft")
    with pytest.raises(ValueError, match="optimistic_adam_v2"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            optim.optimistic_adam(lambda c: 0.1)
    with pytest.warns(DeprecationWarning):
        optim.optimistic_adam(0.1)
    with pytest.raises(ValueError, match="Only one of seed or key"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            optim.add_noise(0.1, 0.5, key=1, seed=2)
    opt = optim.polyak_sgd()
    with pytest.raises(TypeError, match="value="):
        opt.update(GRADS[0], opt.init(PARAMS), PARAMS)
    with pytest.raises(ValueError, match="params"):
        tx = optim.scale_by_param_block_rms()
        tx.update(GRADS[0], tx.init(PARAMS))
    assert isinstance(optim.adam(0.1), optim.GradientTransformationExtraArgs)
    assert isinstance(optim.scale_by_polyak(), optim.GradientTransformationExtraArgs)
    wrapped = optim.with_extra_args_support(optim.scale(2.0))
    out, _ = wrapped.update({"a": jnp.ones(2)}, wrapped.init(None), None, value=1.0)
    np.testing.assert_array_equal(out["a"], [2.0, 2.0])
    assert optim.with_extra_args_support(wrapped) is wrapped
    assert optim.init_empty_state({"a": 1}) == optim.EmptyState()
    np.testing.assert_array_equal(optim.safe_increment(jnp.asarray(2**31 - 1, jnp.int32)),
                                  2**31 - 1)
    np.testing.assert_allclose(optim.safe_norm(jnp.zeros(3), 0.5), 0.5)


def test_signatures_match_optax():
    """Parameter names, kinds and (JSON-representable) defaults of every optimizer, block and
    line search against Optax 0.2.8's."""
    import inspect
    mismatches = []
    for name, expected in GOLDEN["signatures"].items():
        actual = []
        for p in inspect.signature(getattr(optim, name)).parameters.values():
            d = p.default
            if d is inspect.Parameter.empty:
                d = "<empty>"
            elif not (d is None or isinstance(d, (bool, int, float, str))):
                d = "<object>"
            actual.append([p.name, p.kind.name, d])
        if actual != expected:
            mismatches.append(f"{name}: optim {actual} != optax {expected}")
    assert not mismatches, "\n".join(mismatches)
