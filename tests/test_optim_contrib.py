"""optim.contrib against Optax 0.2.8: tests/golden/optax_contrib.json holds ten steps of each
case of tests/golden/optax_contrib_cases.py (every optimizer of optax.contrib, most with
non-default hyperparameters) on the problem of tests/golden/optax_problem.py, recorded by
tests/golden/gen_optax_contrib.py with real Optax; here the same code runs on optim. Params
after every step, losses, and the final states' key paths and leaves must agree to float32
rounding (rtol 2e-5, atol 1e-6); GaLore's state is left out (singular vectors have a free
sign), its trajectory is not."""
import json
import os
import sys

import pytest

import corejax as jax
import corejax.numpy as jnp
import optim

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "golden"))
import optax_problem  # noqa: E402
from optax_contrib_cases import CASES  # noqa: E402

GOLDEN = json.load(open(os.path.join(HERE, "golden", "optax_contrib.json")))
# Each jitted case costs seconds of kernel compilation: two by default (both with a lax.cond
# and an extra argument), all of them with COREJAX_SLOW_TESTS=1.
JITTED = (("reduce_on_plateau", "momo_adam") if not os.environ.get("COREJAX_SLOW_TESTS")
          else tuple(n for n in CASES if not CASES[n].get("eager_only")))


def check_case(name, jit=False):
    optax_problem.check(GOLDEN, name, CASES[name], optim, jax, jnp, jit=jit)


@pytest.mark.filterwarnings("ignore:\"seed\" is deprecated:DeprecationWarning")
def test_contrib_matches_optax_eagerly():
    assert set(GOLDEN["cases"]) == set(CASES)
    for name in CASES:
        check_case(name)


@pytest.mark.filterwarnings("ignore:\"seed\" is deprecated:DeprecationWarning")
@pytest.mark.parametrize("name", JITTED)
def test_contrib_matches_optax_under_jit(name):
    check_case(name, jit=True)


def test_contrib_namespace_is_optax_s():
    ours = {n for n in dir(optim.contrib) if not n.startswith("_")}
    theirs = set(GOLDEN["namespace"])
    missing, extra = sorted(theirs - ours), sorted(ours - theirs)
    assert not missing and not extra, f"optim.contrib lacks {missing}, has extra {extra}"


def test_injected_reduce_on_plateau_cannot_be_jitted_as_in_optax():
    """reduce_on_plateau checks its arguments in Python; injected, they are traced under jit,
    and Optax 0.2.8 raises jax's TracerBoolConversionError there (checked with real Optax)."""
    opt = optim.inject_hyperparams(optim.contrib.reduce_on_plateau)(factor=0.5, atol=0.2)
    params = {"w": jnp.ones(2)}
    with pytest.raises(jax.errors.TracerBoolConversionError):
        jax.jit(lambda g, s: opt.update(g, s, params, value=1.0))(params, opt.init(params))


def test_contrib_errors_name_the_problem():
    c = optim.contrib
    params = {"w": jnp.ones((2, 2)), "b": jnp.ones(2)}
    for kwargs, match in [(dict(factor=1.5), "factor"), (dict(rtol=-1.0), "non-negative"),
                          (dict(rtol=0.0, atol=0.0), "at least one"), (dict(rtol=2.0), "rtol")]:
        with pytest.raises(ValueError, match=match):
            c.reduce_on_plateau(**kwargs)
    with pytest.raises(ValueError, match="sync_period"):
        c.sam(optim.sgd(0.1), optim.sgd(0.1), sync_period=0)
    opaque = c.sam(optim.sgd(0.1), optim.sgd(0.1), opaque_mode=True)
    with pytest.raises(ValueError, match="grad_fn"):
        opaque.update(params, opaque.init(params), params)
    momo = c.momo()
    with pytest.raises(ValueError, match="value="):
        momo.update(params, momo.init(params), params)
    with pytest.raises(ValueError, match="params"):
        c.prodigy().update(params, c.prodigy().init(params))
    with pytest.raises(ValueError, match="schedule_free_eval_params"):
        c.schedule_free_eval_params(optim.EmptyState(), params)
    with pytest.raises(ValueError, match="preset"):
        c.muon(0.1, ns_coeffs="nope")
    with pytest.raises(TypeError, match="rank"):
        c.galore(0.1, rank=1.5)
    with pytest.raises(ValueError, match="init_step"):
        c.dog(init_step=("nope", 1.0))
    with pytest.raises(ValueError, match="batch dimension"):
        dp = c.differentially_private_aggregate(1.0, 0.1, key=0)
        dp.update({"w": jnp.ones((2, 2)), "b": jnp.ones(3)}, dp.init(params))
    sophia = c.sophia(0.1)
    with pytest.raises(ValueError, match="obj_fn"):
        sophia.update(params, sophia.init(params), params)


def test_sophia_verbose_prints_optax_s_win_rate(capsys):
    """Optax 0.2.8 prints these two lines for this run (checked by hand with real Optax)."""
    def loss(p):
        return jnp.sum(p["w"] ** 4)
    opt = optim.contrib.sophia(0.1, b2=0.1, gamma=0.05, update_interval=1, verbose=True,
                               print_win_rate_every_n_steps=2)
    params = {"w": jnp.asarray([1.0, 2.0, 0.1, -0.5])}
    state = opt.init(params)
    for _ in range(4):
        _, state = opt.update(jax.grad(loss)(params), state, params, obj_fn=loss)
    assert capsys.readouterr().out == "Sophia optimizer win rate: 0.25\n" * 2
