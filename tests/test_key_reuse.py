"""The key-reuse checker (config debug_key_reuse) and enable_custom_prng against JAX 0.10.2's
recorded behaviour (tests/golden/gen_key_reuse.py writes tests/golden/key_reuse.json)."""
import json
import os

import numpy as np
import pytest

import corejax
from corejax import errors, random
from corejax._config_states import debug_key_reuse, enable_custom_prng
from corejax.config import config

with open(os.path.join(os.path.dirname(__file__), "golden", "key_reuse.json")) as f:
    GOLDEN = json.load(f)

# JAX programs whose outcome corejax does not reproduce yet.
KNOWN_GAPS: set = set()


def run_program(src):
    names = {"jax": corejax, "jnp": corejax.numpy, "lax": corejax.lax, "random": random,
             "reuse": debug_key_reuse}
    try:
        with debug_key_reuse(True):
            exec(src, names)
    except Exception as e:  # noqa: BLE001 (the outcome is compared)
        return type(e).__name__, str(e).splitlines()[0]
    return None, None


@pytest.mark.parametrize("name", sorted(GOLDEN["programs"]))
def test_program_outcome(name):
    if name in KNOWN_GAPS:
        pytest.xfail("not reproduced yet")
    want = GOLDEN["programs"][name]
    raised, message = run_program(want["source"])
    assert raised == want["raises"], (raised, message)
    if raised is not None:
        assert message == want["message"]


@pytest.mark.parametrize("name", sorted(KNOWN_GAPS))
def test_known_gaps_still_differ(name):
    """Once one of these matches JAX, move it out of KNOWN_GAPS."""
    want = GOLDEN["programs"][name]
    assert run_program(want["source"])[0] != want["raises"]


def test_error_class():
    assert issubclass(errors.KeyReuseError, errors.JAXTypeError)
    assert issubclass(errors.KeyReuseError, TypeError)
    with debug_key_reuse(True):
        k = random.key(0)
        random.normal(k)
        with pytest.raises(errors.KeyReuseError, match="random.clone"):
            random.uniform(k)


def test_option_off_by_default_and_restored():
    assert config.debug_key_reuse is False
    k = random.key(0)
    random.normal(k)
    random.normal(k)
    with debug_key_reuse(True):
        assert config.debug_key_reuse is True
    assert config.debug_key_reuse is False


def test_checker_leaves_values_unchanged():
    k = random.key(3)
    plain = np.asarray(random.normal(random.split(k)[1], (3,)))
    with debug_key_reuse(True):
        checked = np.asarray(random.normal(random.split(k)[1], (3,)))
        jitted = np.asarray(corejax.jit(lambda k: random.normal(random.split(k)[1], (3,)))(
            random.clone(k)))
    np.testing.assert_array_equal(plain, checked)
    np.testing.assert_array_equal(plain, jitted)


def test_jit_signature_per_call():
    """A jitted consumer sinks each fresh key it is given, on cache hits too."""
    with debug_key_reuse(True):
        f = corejax.jit(lambda x, k: x + random.normal(k))
        k1, k2 = random.key(1), random.key(2)
        f(1.0, k1)
        f(1.0, k2)
        with pytest.raises(errors.KeyReuseError, match="at index 1"):
            f(1.0, k2)
        with pytest.raises(errors.KeyReuseError, match="at index 0"):
            random.normal(k1)


@pytest.mark.parametrize("on", ["False", "True"])
def test_enable_custom_prng(on):
    want = GOLDEN["enable_custom_prng"][on]
    raw = corejax.numpy.asarray(np.array([0, 0], np.uint32))
    with enable_custom_prng(on == "True"):
        got = {"PRNGKey": str(random.PRNGKey(0).dtype), "key": str(random.key(0).dtype),
               "split_raw": str(random.split(raw).dtype),
               "fold_in_raw": str(random.fold_in(raw, 1).dtype),
               "clone_raw": str(random.clone(raw).dtype),
               "normal_raw": float(random.normal(raw)),
               "normal_PRNGKey": float(random.normal(random.PRNGKey(0)))}
    assert got == pytest.approx(want)


def test_custom_prng_keys_are_tracked():
    with enable_custom_prng(True), debug_key_reuse(True):
        k = random.PRNGKey(0)
        random.normal(k)
        with pytest.raises(errors.KeyReuseError):
            random.normal(k)
