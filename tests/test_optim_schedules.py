"""optim.schedules against Optax 0.2.8 (tests/golden/optax_losses.json, written by
tests/golden/gen_optax_losses.py): every schedule at steps around its boundaries, eagerly on
int32 steps and (a few) under jit; inject_hyperparams driving sgd with a one-cycle schedule;
the names optax.schedules exports; errors."""
import numpy as np
import pytest

import corejax as jax
import corejax.numpy as jnp
import optim
from _optax_golden import GOLDEN, assert_close, dec

RECORDS = GOLDEN["schedules"]


def build(spec):
    kwargs = {}
    for name, value in spec["kwargs"].items():
        if name == "schedules":
            value = [build(s) for s in value]
        elif name == "boundaries_and_scales":
            value = {int(step): scale for step, scale in value.items()}
        kwargs[name] = value
    return getattr(optim.schedules, spec["name"])(**kwargs)


@pytest.mark.parametrize("record", RECORDS, ids=[r["id"] for r in RECORDS])
def test_schedule_matches_optax(record):
    fn = build(record["spec"])
    got = [np.float32(fn(jnp.asarray(s, jnp.int32))) for s in record["steps"]]
    np.testing.assert_allclose(got, np.float32(record["values"]), rtol=2e-6, atol=1e-7)
    # Python int steps give the same values.
    np.testing.assert_allclose([np.float32(fn(s)) for s in record["steps"][:6]],
                               np.float32(record["values"][:6]), rtol=2e-6, atol=1e-7)


def test_schedules_under_jit_and_vmap():
    steps = jnp.asarray(RECORDS[0]["steps"], jnp.int32)
    for record in RECORDS:
        if record["spec"]["name"] == "sgdr_schedule":
            fn = build(record["spec"])
            np.testing.assert_allclose(np.asarray(jax.jit(jax.vmap(fn))(steps)),
                                       np.float32(record["values"]), rtol=2e-6, atol=1e-7)


def test_inject_hyperparams_runs_a_onecycle_schedule_like_optax():
    rec = GOLDEN["inject"]
    opt = optim.schedules.inject_hyperparams(optim.sgd)(learning_rate=build(rec["schedule"]),
                                                        momentum=rec["momentum"])
    params = dec(rec["params"])
    state = opt.init(params)
    # Optax 0.2.8 builds the stateful variant for inject_hyperparams too.
    assert isinstance(state, optim.schedules.InjectStatefulHyperparamsState)
    update = jax.jit(opt.update)
    for lr, g, want in zip(rec["learning_rates"], dec(rec["grads"]), rec["trajectory"]):
        np.testing.assert_allclose(np.float32(state.hyperparams["learning_rate"]), lr,
                                   rtol=2e-6)
        updates, state = update(g, state, params)
        params = optim.apply_updates(params, updates)
        assert_close(params, want, rtol=1e-5, atol=1e-6)


def test_schedule_names_and_errors():
    assert optim.schedules.InjectHyperparamsState is optim.InjectHyperparamsState
    assert optim.schedules.inject_hyperparams is optim.inject_hyperparams
    wrapped = optim.schedules.WrappedSchedule(optim.schedules.linear_schedule(1.0, 0.0, 4))
    state = wrapped.init()
    for _ in range(3):
        state = wrapped.update(state)
    assert float(wrapped(state)) == pytest.approx(0.25)
    assert isinstance(wrapped, optim.schedules.StatefulSchedule)
    with pytest.raises(ValueError, match="'cosine' or 'linear'"):
        optim.schedules.piecewise_interpolate_schedule("cubic", 1.0)
    with pytest.raises(ValueError, match="non-negative"):
        optim.schedules.piecewise_interpolate_schedule("linear", 1.0, {5: -1.0})
    with pytest.raises(ValueError, match="transition_steps"):
        optim.schedules.linear_onecycle_schedule(0, 1.0)
    with pytest.raises(ValueError, match="transition_steps"):
        optim.schedules.cosine_onecycle_schedule(-3, 1.0)
    assert float(optim.schedules.piecewise_interpolate_schedule("linear", 0.3)(50)) == \
        pytest.approx(0.3)
