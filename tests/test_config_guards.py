"""The config options that guard or steer the runtime, against JAX 0.10.2's behaviour
(tests/golden/config_guards.json, from tests/golden/gen_config_guards.py with the cases of
tests/golden/config_guard_cases.py): transfer_guard and its three directions, default_device,
allow_f16_reductions, softmax_custom_jvp, array_garbage_collection_guard, and the options JAX
reads nowhere (jax2tf_associative_scan_reductions). thread_guard needs several processes:
tests/test_distributed.py."""
import gc
import json
import logging
import os
import subprocess
import sys

import numpy as np
import pytest

import corejax as jax
import corejax.numpy as jnp
from corejax import lax
from corejax.errors import JaxRuntimeError

from conftest import cpu_devices

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "golden"))
import config_guard_cases as cases  # noqa: E402

with open(os.path.join(HERE, "golden", "config_guards.json")) as fh:
    GOLDEN = json.load(fh)

LEVELS = ("allow", "log", "disallow", "log_explicit", "disallow_explicit")

# JAX's eager mode transfers every constant it creates (here grad's seed cotangent) to the
# device one by one, so a disallow guard refuses eager grad; corejax creates its constants
# where they are used, and guards what the user hands over (corejax/_transfer_guard.py)
H2D_DIFFERENCES = {"eager_grad"}


@pytest.fixture
def two_devices():
    with cpu_devices(2):
        yield


@pytest.mark.parametrize("level", LEVELS)
def test_host_to_device_guard(level):
    table = cases.host_to_device_cases(jax, jnp, lax)
    with jax.transfer_guard(level):
        got = {k: cases.outcome(f) for k, f in table.items()}
    want = GOLDEN["host_to_device"][level]
    assert set(got) == set(want)
    differ = {k for k in got if got[k] != want[k]}
    assert differ <= H2D_DIFFERENCES, {k: (got[k], want[k]) for k in differ}
    if level in ("disallow", "disallow_explicit"):
        assert differ == H2D_DIFFERENCES      # still a difference (else drop it from the set)


def test_host_to_device_log_levels_log_what_disallow_refuses(caplog):
    x = jnp.ones(3)
    with caplog.at_level(logging.WARNING, logger="corejax"):
        with jax.transfer_guard("log"):
            jax.device_put(np.ones(2))           # explicit: not logged at 'log'
            jnp.asarray(np.ones(2))
            x + 1
        assert [r.getMessage().split(":")[0] for r in caplog.records] == [
            "host-to-device transfer"] * 2
        caplog.clear()
        with jax.transfer_guard("log_explicit"):
            jax.device_put(np.ones(2))
        assert len(caplog.records) == 1 and "float32[2]" in caplog.records[0].getMessage()


def test_guard_error_names_the_transfer_and_the_fix():
    with jax.transfer_guard("disallow"), pytest.raises(JaxRuntimeError) as info:
        jax.jit(lambda a: a * 2)(np.ones((2, 3), np.float32))
    msg = str(info.value)
    assert "Disallowed host-to-device transfer" in msg and "float32[2,3]" in msg
    assert "device_put" in msg
    assert isinstance(info.value, RuntimeError)


@pytest.mark.parametrize("level", LEVELS)
def test_device_to_device_guard(two_devices, level):
    table = cases.device_to_device_cases(jax, jnp)
    with jax.transfer_guard_device_to_device(level):
        got = {k: cases.outcome(f) for k, f in table.items()}
    assert got == GOLDEN["device_to_device"][level]


def test_default_device_places_uncommitted_results(two_devices):
    table = cases.default_device_cases(jax, jnp)
    got = {}
    with jax.default_device(jax.devices()[1]):
        for k, f in table.items():
            got[k] = cases.placement(f())
    with jax.default_device("cpu"):
        got["platform_name_cpu"] = cases.placement(jnp.ones(2))
    assert got == GOLDEN["default_device"]
    # outside the block new arrays go to cpu:0 again; values are unaffected by placement
    assert cases.placement(jnp.ones(2)) == [[0], False]
    with jax.default_device(jax.devices()[1]):
        y = jax.jit(lambda a: jnp.sin(a) * 2)(jnp.arange(4.0))
    np.testing.assert_allclose(np.asarray(y), np.sin(np.arange(4.0)) * 2, rtol=1e-6)


def test_default_device_rejects_what_jax_rejects():
    with pytest.raises(ValueError, match="Device object"):
        with jax.default_device(3):
            pass
    assert GOLDEN["invalid"]["default_device"] == "raise:ValueError"
    assert jax.default_device.value is None


@pytest.mark.parametrize("allow", [True, False])
def test_allow_f16_reductions(allow):
    table = cases.half_sum_cases(jax, jnp, lax)
    with jax.allow_f16_reductions(allow):
        got = {k: cases.outcome(f) for k, f in table.items()}
    assert got == GOLDEN["half_sums"][str(allow)]


@pytest.mark.parametrize("flag", [False, True])
def test_softmax_custom_jvp(flag):
    table = cases.softmax_values(jax, jnp)
    want = GOLDEN["softmax"][str(flag)]
    with jax.softmax_custom_jvp(flag):
        for k, f in table.items():
            if k == "custom_jvp_staged":
                assert f() == want[k], k
            else:
                np.testing.assert_allclose(np.asarray(f()), np.asarray(want[k], np.float32),
                                           rtol=2e-6, atol=1e-7, err_msg=k)


def test_defaults_and_invalid_values_as_jax():
    for name, value in GOLDEN["defaults"].items():
        assert getattr(jax, name).value == value, name
    for name, want in GOLDEN["invalid"].items():
        def enter(name=name):
            with getattr(jax, name)({"transfer_guard": "bogus", "default_device": 3,
                                     "array_garbage_collection_guard": "maybe"}[name]):
                pass
        assert cases.outcome(enter) == want, name


def test_jax2tf_associative_scan_reductions_changes_nothing():
    # JAX 0.10.2 reads this option nowhere but in its jax2tf test harness; the cumulative
    # reductions give the same values and programs with it set
    x = jnp.arange(1.0, 9.0).reshape(2, 4)
    off = [np.asarray(f(x)) for f in (jnp.cumsum, jnp.cumprod, lambda a: lax.cummax(a, 1))]
    program = str(jax.make_jaxpr(jnp.cumsum)(x))
    with jax.jax2tf_associative_scan_reductions(True):
        on = [np.asarray(f(x)) for f in (jnp.cumsum, jnp.cumprod, lambda a: lax.cummax(a, 1))]
        assert str(jax.make_jaxpr(jnp.cumsum)(x)) == program
    for a, b in zip(off, on):
        np.testing.assert_array_equal(a, b)


def _cycle_with_array():
    holder = [jnp.ones(3)]
    holder.append(holder)


def test_array_garbage_collection_guard_logs_arrays_freed_by_the_collector(caplog):
    gc.collect()
    with caplog.at_level(logging.ERROR, logger="corejax"):
        with jax.array_garbage_collection_guard("log"):
            y = jnp.ones(2)
            del y                                   # freed by reference counting: fine
            assert not caplog.records
            _cycle_with_array()
            gc.collect()                            # freed by the cycle collector
    assert len(caplog.records) == 1
    assert "garbage collector" in caplog.records[0].getMessage()
    assert "shape=(3,)" in caplog.records[0].getMessage()
    caplog.clear()
    _cycle_with_array()
    gc.collect()                                     # guard off again: nothing
    assert not caplog.records
    assert "__del__" not in jax.Array.__dict__       # arrays pay nothing while it is off


def test_array_garbage_collection_guard_fatal_aborts():
    code = ("import gc, corejax as jax, corejax.numpy as jnp\n"
            "jax.config.update('jax_array_garbage_collection_guard', 'fatal')\n"
            "h = [jnp.ones(3)]; h.append(h); del h\n"
            "gc.collect()\nprint('survived')\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode != 0 and "survived" not in proc.stdout
    assert "garbage collector" in proc.stderr
