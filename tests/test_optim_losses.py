"""optim.losses against Optax 0.2.8: every loss's values and, for most, the gradient of its
sum (tests/golden/optax_losses.json, written by tests/golden/gen_optax_losses.py), eagerly and,
for a few, under jit; argument errors as Optax raises them."""
import os
import warnings

import numpy as np
import pytest

import corejax as jax
import corejax.numpy as jnp
import optim
from _optax_golden import GOLDEN, assert_close, dec

LOSSES = GOLDEN["losses"]
# Under jit too, the first record of each (one compilation each). Every loss with
# COREJAX_SLOW_TESTS=1 (ctc_loss's scan alone takes ~15 s to compile on a cold cache).
SLOW = os.environ.get("COREJAX_SLOW_TESTS") == "1"
JITTED = {"softmax_cross_entropy_with_integer_labels"}
NOT_JITTABLE = {"49-dice_loss"}   # apply_softmax=False checks the sums in Python, as Optax does


def loss_fn(name):
    if name == "fenchel_young_logsumexp":
        return optim.losses.make_fenchel_young_loss(jax.nn.logsumexp)
    return getattr(optim.losses, name)


def test_every_optax_loss_is_here():
    names = {r["name"] for r in LOSSES} - {"fenchel_young_logsumexp"}
    assert names | {"make_fenchel_young_loss"} == set(optim.losses.__all__)
    for name in optim.losses.__all__:
        if hasattr(optim, name):
            assert getattr(optim, name) is getattr(optim.losses, name), name


@pytest.mark.parametrize("record", LOSSES, ids=[r["id"] for r in LOSSES])
def test_loss_matches_optax(record):
    fn = loss_fn(record["name"])
    args, kwargs = dec(record["args"]), dec(record["kwargs"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        assert_close(fn(*args, **kwargs), record["value"], rtol=1e-5, atol=1e-5,
                     what="value")
        if "grad" in record:
            grad = jax.grad(lambda x: jnp.sum(fn(x, *args[1:], **kwargs)))(args[0])
            assert_close(grad, record["grad"], rtol=1e-5, atol=1e-5, what="grad")
        if (SLOW or record["name"] in JITTED and record["name"] not in _jitted_seen) and \
                record["id"] not in NOT_JITTABLE:
            _jitted_seen.add(record["name"])
            arrays = [a for a in args if not isinstance(a, (int, float))]
            jitted = jax.jit(lambda *xs: fn(*xs, *args[len(arrays):], **kwargs))
            assert_close(jitted(*arrays), record["value"], rtol=1e-5, atol=1e-5, what="jit")


_jitted_seen = set()


def test_loss_errors_and_warnings():
    x = jnp.ones((2, 3))
    with pytest.raises(TypeError, match="floating"):
        optim.losses.log_cosh(jnp.ones(3, jnp.int32))
    with pytest.raises(TypeError, match="integer"):
        optim.losses.softmax_cross_entropy_with_integer_labels(x, jnp.zeros(2))
    with pytest.raises(ValueError, match="out of bounds"):
        optim.losses.softmax_cross_entropy_with_integer_labels(x, jnp.zeros(2, jnp.int32),
                                                               axis=2)
    with pytest.raises(ValueError, match="'axis' must be of type"):
        optim.losses.softmax_cross_entropy_with_integer_labels(x, jnp.zeros(2, jnp.int32),
                                                               axis=[1])
    with pytest.raises(ValueError, match="shape"):
        optim.losses.perceptron_loss(x, jnp.ones(3))
    with pytest.raises(ValueError, match="rank 3"):
        optim.losses.ctc_loss(x, x, x, x)
    with pytest.raises(ValueError, match="batch size"):
        optim.losses.ctc_loss(jnp.ones((2, 4, 3)), jnp.zeros((2, 4)), jnp.ones((3, 2), int),
                              jnp.zeros((3, 2)))
    with pytest.raises(ValueError, match="leading dimension"):
        optim.losses.ntxent(jnp.ones((4, 2)), jnp.zeros(3, jnp.int32))
    with pytest.raises(ValueError, match="sum to 1"):
        optim.losses.binary_dice_loss(jnp.full((2, 3, 1), 0.5), jnp.ones((2, 3, 1)),
                                      apply_sigmoid=False)
    with pytest.raises(ValueError, match="Unsupported reduction"):
        optim.losses.dice_loss(jnp.ones((1, 2, 2)), jnp.ones((1, 2, 2)), reduction="max")
    with pytest.warns(DeprecationWarning, match="generalized_kl_divergence"):
        optim.losses.convex_kl_divergence(jnp.zeros(3), jnp.ones(3))
