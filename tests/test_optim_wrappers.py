"""optim's wrappers and combinators (optax.transforms and the top-level wrappers) against
Optax 0.2.8: tests/golden/optax_wrappers.json holds ten steps of each case of
tests/golden/optax_wrapper_cases.py on the problem of tests/golden/optax_problem.py, run by
tests/golden/gen_optax_wrappers.py with real Optax; here the same code runs on optim. The final
optimizer states are compared leaf by leaf with their key paths (NamedTuple field names
included). Tolerance: float32 rounding along ten steps (rtol 2e-5, atol 1e-6)."""
import json
import os
import sys

import numpy as np
import pytest

import corejax as jax
import corejax.numpy as jnp
import optim

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "golden"))
import optax_problem  # noqa: E402
from optax_wrapper_cases import CASES  # noqa: E402

GOLDEN = json.load(open(os.path.join(HERE, "golden", "optax_wrappers.json")))
# Each jitted case costs seconds of kernel compilation: two by default, all of them with
# COREJAX_SLOW_TESTS=1.
JITTED = (("lookahead", "apply_if_finite") if not os.environ.get("COREJAX_SLOW_TESTS")
          else tuple(CASES))


def check_case(name, jit=False):
    optax_problem.check(GOLDEN, name, CASES[name], optim, jax, jnp, jit=jit)


# apply_if_finite lets NaN updates through after max_consecutive_errors, as Optax does: the
# loss of the NaN params then warns in NumPy's matmul
NAN_WARNINGS = pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning",
                                          "ignore:overflow encountered:RuntimeWarning")


@NAN_WARNINGS
def test_cases_match_optax_eagerly():
    assert set(GOLDEN["cases"]) == set(CASES)
    for name in CASES:
        check_case(name)


@NAN_WARNINGS
@pytest.mark.parametrize("name", JITTED)
def test_cases_match_optax_under_jit(name):
    check_case(name, jit=True)


def test_transforms_namespace_is_optax_s():
    ours = {n for n in dir(optim.transforms) if not n.startswith("_")}
    theirs = set(GOLDEN["namespace"])
    missing, extra = sorted(theirs - ours), sorted(ours - theirs)
    assert not missing and not extra, f"optim.transforms lacks {missing}, has extra {extra}"
    assert optim.transforms.masked is optim.masked and optim.multi_transform is optim.partition


def test_inject_hyperparams_state_and_deprecated_alias():
    opt = optim.inject_hyperparams(optim.sgd)(learning_rate=0.1, momentum=3)
    state = opt.init({"w": jnp.ones(2, jnp.float32)})
    assert type(state).__name__ == "InjectStatefulHyperparamsState"
    assert state._fields == ("count", "hyperparams", "hyperparams_states", "inner_state")
    assert state.hyperparams["learning_rate"].dtype == np.float32
    assert state.hyperparams["momentum"].dtype == np.int32        # ints stay ints
    with pytest.warns(DeprecationWarning):
        optim.inject_stateful_hyperparams(optim.sgd)


def test_errors_name_the_problem():
    with pytest.raises(ValueError, match="unique"):
        optim.named_chain(("a", optim.sgd(0.1)), ("a", optim.adam(0.1)))
    with pytest.raises(ValueError, match="sync_period"):
        optim.lookahead(optim.sgd(0.1), 0, 0.5)
    with pytest.raises(ValueError, match="no transform has that label"):
        optim.partition({"a": optim.sgd(0.1)}, {"w": "b"}).init({"w": jnp.ones(2)})
    with pytest.raises(ValueError, match="params"):
        optim.keep_params_nonnegative().update({"w": jnp.ones(2)}, optim.EmptyState())
    ms = optim.MultiSteps(optim.sgd(0.1), 2,
                          should_skip_update_fn=lambda u, s, p: (jnp.asarray(1.0), ()))
    with pytest.raises(ValueError, match="boolean scalar"):
        ms.update({"w": jnp.ones(2)}, ms.init({"w": jnp.ones(2)}))
