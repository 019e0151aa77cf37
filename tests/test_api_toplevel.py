"""Top-level config names added against JAX 0.10.2: no_tracing, no_execution, legacy_prng_key,
default_prng_impl, enable_checks and make_user_context. Expected behaviour is JAX's, recorded by
tests/golden/gen_api_toplevel.py into tests/golden/api_toplevel.json."""
import json
import os
import sys
import warnings

import numpy as np
import pytest

import corejax
import corejax.numpy as jnp
from corejax import core
from corejax.config import Config, config

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden"))
from api_toplevel_cases import (leak_cases, leak_outcome, legacy_cases,  # noqa: E402
                                outcome, user_context_blocks)

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden",
                       "api_toplevel.json")) as f:
    GOLDEN = json.load(f)


# --- the options as objects ------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(GOLDEN["states"]))
def test_state_names_and_defaults(name):
    state, want = getattr(corejax, name), GOLDEN["states"][name]
    assert state.name == want["name"]
    if name == "enable_checks":
        # the same option as check_eager_avals, which the test suite turns on
        # (tests/conftest.py): its default outside the suite is JAX's
        assert state.value == config.check_eager_avals
        env = os.environ.pop("COREJAX_CHECK_EAGER_AVALS", None)
        try:
            assert Config._defaults["check_eager_avals"]() is want["default"]
        finally:
            if env is not None:
                os.environ["COREJAX_CHECK_EAGER_AVALS"] = env
    else:
        assert state.value == want["default"]
        assert getattr(config, want["name"]) == want["default"]


def test_states_restore_their_value_after_a_block():
    with corejax.no_tracing(True):
        assert corejax.no_tracing.value is True
        with corejax.no_tracing(False):
            assert corejax.no_tracing.value is False
        assert corejax.no_tracing.value is True
    assert corejax.no_tracing.value is False
    with corejax.legacy_prng_key("warn"):
        assert config.jax_legacy_prng_key == "warn"
    assert corejax.legacy_prng_key.value == "allow"


# --- no_tracing / no_execution ---------------------------------------------------------------

def _no_tracing_cases(g):
    return {
        "cached_call": lambda: g(1.0),
        "new_signature": lambda: g(np.ones(3, np.float32)),
        "new_function": lambda: corejax.jit(lambda x: x * 3)(1.0),
        "make_jaxpr": lambda: corejax.make_jaxpr(lambda x: x * 2)(1.0),
        "eval_shape": lambda: corejax.eval_shape(lambda x: x * 2, 1.0),
        "jit_trace": lambda: corejax.jit(lambda x: x * 4).trace(1.0),
    }


def test_no_tracing_refuses_what_jax_refuses():
    g = corejax.jit(lambda x: x + 1)
    g(1.0)
    with corejax.no_tracing(True):
        got = {k: outcome(f) for k, f in _no_tracing_cases(g).items()}
    assert got == GOLDEN["guards"]["no_tracing"]
    assert outcome(lambda: g(np.ones(3, np.float32))) == GOLDEN["guards"]["no_tracing_after"]


def test_no_tracing_message_names_the_function_and_the_fix():
    def my_step(x):
        return x * 2
    with corejax.no_tracing(True), pytest.raises(RuntimeError, match=r"jit\(my_step\).*"
                                                  r"no_tracing"):
        corejax.jit(my_step)(1.0)


def test_no_tracing_leaves_eager_code_alone():
    # corejax evaluates eager operations without tracing them (see corejax/_guards.py)
    with corejax.no_tracing(True):
        np.testing.assert_array_equal(np.asarray(jnp.ones(3) + 1), [2, 2, 2])


def test_no_execution_refuses_what_jax_refuses():
    g = corejax.jit(lambda x: x + 1)
    g(1.0)
    with corejax.no_execution(True):
        got = {
            "cached_jit": outcome(lambda: g(1.0)),
            "eager_op": outcome(lambda: jnp.ones(3) + 1),
            "make_jaxpr": outcome(lambda: corejax.make_jaxpr(lambda x: x * 2)(1.0)),
            "eval_shape": outcome(lambda: corejax.eval_shape(lambda x: x * 2, 1.0)),
            "device_put": outcome(lambda: corejax.device_put(np.ones(3, np.float32))),
        }
        jaxpr = str(corejax.make_jaxpr(lambda x: x * 2)(1.0))
    assert got == GOLDEN["guards"]["no_execution"]
    assert jaxpr == GOLDEN["guards"]["no_execution_jaxpr"]
    assert float(g(2.0)) == GOLDEN["guards"]["no_execution_after"]


def test_no_execution_covers_compiled_programs_and_names_the_culprit():
    def my_loss(x):
        return x * 2
    j = corejax.jit(my_loss)
    compiled = j.lower(1.0).compile()
    x = corejax.device_put(np.float32(1.0))
    with corejax.no_execution(True):
        with pytest.raises(RuntimeError, match=r"jit\(my_loss\).*no_execution"):
            j(1.0)
        with pytest.raises(RuntimeError, match="no_execution"):
            compiled(1.0)
        with pytest.raises(RuntimeError, match="primitive sin.*no_execution"):
            jnp.sin(x)
    assert float(compiled(1.0)) == 2.0


# --- legacy_prng_key -------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["allow", "warn", "error"])
def test_legacy_prng_key_modes(mode):
    raw = corejax.random.PRNGKey(0)
    with corejax.legacy_prng_key(mode):
        got = {n: outcome(f) for n, f in legacy_cases(corejax, jnp, raw).items()}
    assert got == GOLDEN["legacy"][mode]


def test_legacy_prng_key_warning_points_at_the_caller_and_keeps_the_values():
    raw = corejax.random.PRNGKey(0)
    with corejax.legacy_prng_key("warn"), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = corejax.random.normal(raw, (3,))
    np.testing.assert_allclose(np.asarray(out), GOLDEN["legacy"]["warn_normal_values"],
                               rtol=1e-6)
    [w] = [w for w in caught if w.category is UserWarning]
    assert w.filename == __file__
    assert "random.key" in str(w.message)


def test_legacy_prng_key_error_names_the_function_and_the_fix():
    with corejax.legacy_prng_key("error"):
        with pytest.raises(ValueError, match=r"split.*random\.key\(seed\).*'allow'"):
            corejax.random.split(corejax.random.PRNGKey(1))


def test_legacy_prng_key_rejects_unknown_values():
    assert outcome(lambda: config.update("jax_legacy_prng_key", "sometimes")) == \
        GOLDEN["legacy"]["bad_value"]
    assert config.legacy_prng_key == "allow"


# --- default_prng_impl -----------------------------------------------------------------------

def test_default_prng_impl_threefry_and_unknown_values():
    want = GOLDEN["prng_impl"]
    with corejax.default_prng_impl("threefry2x32"):
        assert list(corejax.random.PRNGKey(0).shape) == want["threefry_key_shape"]
        assert corejax.random.key_impl(corejax.random.key(0)) == want["threefry_key_impl"]
    assert outcome(lambda: config.update("jax_default_prng_impl", "mt19937")) == \
        want["bad_value"]
    assert outcome(lambda: corejax.default_prng_impl("mt19937").__enter__()) == \
        want["bad_value_ctx"]
    assert config.default_prng_impl == "threefry2x32"


@pytest.mark.parametrize("impl", sorted(set(GOLDEN["prng_impl"]["accepted"]) -
                                        {"threefry2x32"}))
def test_default_prng_impl_refuses_what_corejax_cannot_compute(impl):
    # JAX accepts these; corejax computes threefry2x32 only, so setting them is an error
    # rather than keys of one implementation under another's name
    with pytest.raises(ValueError, match=f"{impl}.*only 'threefry2x32'"):
        with corejax.default_prng_impl(impl):
            pass
    assert corejax.default_prng_impl.value == "threefry2x32"


# --- enable_checks ---------------------------------------------------------------------------

def test_enable_checks_values():
    got = {}
    for v in (True, False, 1, 0):
        with corejax.enable_checks(v):
            got[repr(v)] = corejax.enable_checks.value
    assert got == GOLDEN["enable_checks"]


def test_enable_checks_turns_on_corejax_eager_aval_checks():
    # a primitive whose eager result disagrees with its abstract evaluation is caught only
    # while checks are on
    p = core.Primitive("toplevel_wrong_shape")
    p.def_impl(lambda x: np.concatenate([x, x]))
    p.def_abstract_eval(lambda x: core.ShapedArray(x.shape, x.dtype))
    x = corejax.device_put(np.ones(2, np.float32))
    prev = config.check_eager_avals
    with corejax.enable_checks(True):
        assert config.check_eager_avals
        with pytest.raises(TypeError, match="toplevel_wrong_shape"):
            p.bind(x)
    with corejax.enable_checks(False):
        assert not config.check_eager_avals
        assert p.bind(x).shape == (4,)
    config.update("jax_enable_checks", True)
    try:
        assert config.check_eager_avals and corejax.enable_checks.value
    finally:
        config.update("check_eager_avals", prev)


# --- make_user_context -----------------------------------------------------------------------

def test_user_context_retraces_as_jax_does():
    want = GOLDEN["user_context"]
    ctx = corejax.make_user_context(default_value=None)
    assert ctx.value == want["default"]
    traces = []

    @corejax.jit
    def f(x):
        traces.append(ctx.value)
        return x * 2

    counts = []
    for v in [None, 0, 0.0, 1, "a", 1, None]:
        with ctx(v):
            assert float(f(1.0)) == 2.0
        counts.append(len(traces))
    assert [repr(v) for v in [None, 0, 0.0, 1, "a", 1, None]] == want["sequence"]
    assert counts == want["trace_counts"]
    assert [repr(v) for v in traces] == want["traced_values"]


def test_user_context_retraces_on_the_eager_fast_path():
    ctx = corejax.make_user_context(0)
    n = []

    @corejax.jit
    def f(x):
        n.append(1)
        return x + ctx.value

    a = jnp.ones(2)
    assert float(f(a)[0]) == 1.0 and float(f(a)[0]) == 1.0
    with ctx(5):
        assert float(f(a)[0]) == 6.0
    assert float(f(a)[0]) == 1.0
    assert len(n) == 2


def test_user_context_blocks_threads_and_global():
    want = GOLDEN["user_context"]
    got = user_context_blocks(corejax)
    for key, value in got.items():
        assert value == want[key], key


def test_user_context_errors():
    want = GOLDEN["user_context"]
    ctx = corejax.make_user_context()
    f = corejax.jit(lambda x: x * 2)

    def unhashable():
        with ctx([1, 2]):
            f(1.0)
    assert outcome(unhashable) == want["unhashable"]
    with pytest.raises(TypeError, match=r"unhashable value \[1, 2\].*tuple"):
        unhashable()
    assert outcome(lambda: corejax.make_user_context(1, 2)) == want["two_positional"]
    assert outcome(lambda: ctx(3)(lambda: 0)()) == want["as_decorator"]
    assert ctx.value is None


# --- check_tracer_leaks ----------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(GOLDEN["leaks"]))
def test_tracer_leaks_are_caught_where_jax_catches_them(name):
    """Under checking_leaks(), a jit / vmap / make_jaxpr / control-flow trace whose tracer the
    user's function kept raises "Leaked trace ..." as JAX's does (the kind of trace named: JAX's
    DynamicJaxprTrace is corejax's StagingTrace), and nothing else does (grad, jvp, a tracer
    taken out again)."""
    leaked = []
    got = leak_outcome(corejax, leak_cases(corejax, jnp, leaked)[name])
    leaked.clear()
    assert got == GOLDEN["leaks"][name]


def test_leak_error_names_what_holds_the_tracer():
    leaked = []
    with corejax.checking_leaks(), pytest.raises(Exception, match="Leaked trace StagingTrace"
                                                  ) as info:
        corejax.jit(lambda x: leaked.append(x) or x * 2)(1.0)
    assert "is referred to by <list" in str(info.value)
    leaked.clear()
    assert corejax.check_tracer_leaks.value is False
    corejax.jit(lambda x: leaked.append(x) or x * 3)(1.0)   # not checked outside the block
    assert len(leaked) == 1
