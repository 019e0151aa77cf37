"""optim's other top-level helpers against Optax 0.2.8 (the "misc" section of
tests/golden/optax_losses.json, written by tests/golden/gen_optax_losses.py):
incremental_update, periodic_update, scale_gradient, multi_normal, optim.second_order,
optim.perturbations, power_iteration, matrix_inverse_pth_root and nnls."""
import os
import warnings

import numpy as np
import pytest

import corejax as jax
import corejax.numpy as jnp
import optim
from _optax_golden import GOLDEN, assert_close, dec, to_numpy

MISC = GOLDEN["misc"]


def test_updates_and_scale_gradient():
    new, old = dec(MISC["new"]), dec(MISC["old"])
    assert_close(optim.incremental_update(new, old, 0.3), MISC["incremental_update"])
    for steps, want in zip((6, 7), MISC["periodic_update"]):
        assert_close(optim.periodic_update(new, old, jnp.asarray(steps), 3), want)
    x = dec(MISC["x"])
    grad = jax.grad(lambda z: jnp.sum(optim.scale_gradient(z, -2.5) ** 3))(x)
    assert_close(grad, MISC["scale_gradient_grad"], rtol=1e-6)
    assert optim.scale_gradient(x, 1.0) is x
    assert not np.asarray(jax.grad(lambda z: jnp.sum(optim.scale_gradient(z, 0.0)))(x)).any()


def test_multi_normal():
    dist = optim.multi_normal(dec(MISC["loc"]), dec(MISC["log_scale"]))
    previous = jax.config.threefry_partitionable   # the golden draws are JAX 0.10's
    jax.config.update("jax_threefry_partitionable", True)
    try:
        sample = dist.sample((4,), jax.random.key(5))
    finally:
        jax.config.update("jax_threefry_partitionable", previous)
    assert_close(sample, MISC["multi_normal_sample"], rtol=1e-6)
    assert_close(dist.log_prob(sample), MISC["multi_normal_log_prob"], rtol=1e-5)
    assert len(dist.params) == 2 and dist.log_scale.shape == (3,)


def test_second_order():
    params, inputs, targets = dec(MISC["params"]), dec(MISC["inputs"]), dec(MISC["targets"])

    def loss(p, xs, ys):
        return jnp.mean(jnp.sum(jnp.tanh(xs @ p["w"] + p["b"]) - ys, axis=-1) ** 2)
    so = optim.second_order
    with pytest.warns(DeprecationWarning, match="deprecated"):
        assert_close(so.hvp(loss, dec(MISC["v"]), params, inputs, targets), MISC["hvp"],
                     rtol=1e-5, atol=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        assert_close(so.hessian_diag(loss, params, inputs, targets), MISC["hessian_diag"],
                     rtol=1e-5, atol=1e-6)
        assert_close(so.fisher_diag(loss, params, inputs, targets), MISC["fisher_diag"],
                     rtol=1e-5, atol=1e-6)


def test_perturbed_argmax():
    x = dec(MISC["x"])
    noises = {"normal": optim.perturbations.Normal(), "gumbel": optim.perturbations.Gumbel()}
    previous = jax.config.threefry_partitionable
    jax.config.update("jax_threefry_partitionable", True)
    try:
        for name, noise in noises.items():
            fn = optim.perturbations.make_perturbed_fun(
                lambda z: jax.nn.one_hot(jnp.argmax(z), 4), num_samples=64, sigma=0.5,
                noise=noise)
            want = MISC["perturbed_argmax"][name]
            assert_close(fn(jax.random.key(11), x), want["value"], rtol=1e-5, atol=1e-6)
            grad = jax.grad(lambda z: jnp.vdot(jnp.arange(4.0), fn(jax.random.key(11), z)))(x)
            assert_close(grad, want["grad"], rtol=1e-4, atol=1e-5)
    finally:
        jax.config.update("jax_threefry_partitionable", previous)


def test_linear_algebra():
    spd = dec(MISC["spd"])
    eig, vec = optim.power_iteration(spd, num_iters=200)
    want_eig, want_vec = to_numpy(MISC["power_iteration"])
    assert_close(eig, want_eig, rtol=1e-5)
    assert_close(vec * jnp.sign(vec[0]) * np.sign(want_vec[0]), want_vec, rtol=1e-4,
                 atol=1e-5)
    for p, want in zip((1, 2, 4), MISC["matrix_inverse_pth_root"]):
        assert_close(optim.matrix_inverse_pth_root(spd, p)[0], want, rtol=1e-4, atol=1e-5)
    A = dec(MISC["A"])
    assert_close(optim.nnls(A, dec(MISC["b"]), 200), MISC["nnls"], rtol=1e-4, atol=1e-6)
    assert_close(optim.nnls(A, dec(MISC["B"]), 200), MISC["nnls_matrix"], rtol=1e-4,
                 atol=1e-6)
    with pytest.raises(ValueError, match="v0 must be provided"):
        optim.power_iteration(lambda v: v)


def test_hungarian_algorithms():
    for rec in GOLDEN["assignment"]:
        cost = dec(rec["cost"])
        for name in ("hungarian_algorithm", "base_hungarian_algorithm"):
            got = getattr(optim.assignment, name)(cost)
            assert_close(got, rec[name], what=f"{name} {cost.shape}")
        if os.environ.get("COREJAX_SLOW_TESTS") == "1":   # ~20 s of compilation (nested loops)
            assert_close(jax.jit(optim.assignment.hungarian_algorithm)(cost),
                         rec["hungarian_algorithm"], what="jit")
    empty = optim.assignment.hungarian_algorithm(jnp.zeros((0, 3)))
    assert [x.shape for x in empty] == [(0,), (0,)]


def test_microbatching():
    rec, mb = GOLDEN["microbatching"], optim.microbatching
    x, y, params = dec(rec["x"]), dec(rec["y"]), dec(rec["params"])
    assert_close(mb.reshape_batch_axis(x, 2), rec["reshape"])

    def stats(xs, ys):
        return {"sq": jnp.sum(xs ** 2, axis=0), "dot": jnp.sum(xs, axis=1) * ys}

    def loss(p, xs, ys):
        return jnp.mean((xs @ p["w"] + p["b"] - ys) ** 2)

    def clip(g):
        return optim.tree.scale(1.0 / jnp.maximum(1.0, optim.tree.norm(g)), g)
    for name in ["SUM", "MEAN", "RUNNING_MEAN"]:
        acc = {"sq": getattr(mb.AccumulationType, name), "dot": mb.AccumulationType.CONCAT}
        fn = mb.microbatch(stats, argnums=(0, 1), microbatch_size=2, accumulator=acc)
        assert_close(fn(x, y), rec["microbatch_" + name], rtol=1e-5, atol=1e-6, what=name)
    fn = mb.microbatch(stats, argnums=0, argnames="ys", microbatch_size=4,
                       accumulator={"sq": mb.AccumulationType.SUM,
                                    "dot": mb.AccumulationType.CONCAT},
                       num_real_microbatches=1)
    assert_close(fn(x, ys=y), rec["microbatch_early_stop"], rtol=1e-5, atol=1e-6)
    assert_close(mb.micro_vmap(lambda row, s: jnp.sum(row) * s, in_axes=(0, None),
                               microbatch_size=4)(x, 3.0), rec["micro_vmap"], rtol=1e-5)
    grad_fn = mb.micro_grad(loss, batch_argnums=(1, 2), microbatch_size=2, transform_fn=clip,
                            metrics_fn=optim.tree.norm)
    total, aux = grad_fn(params, x, y)
    assert_close(total, rec["micro_grad"]["total"], rtol=1e-5, atol=1e-6)
    assert_close(aux.values, rec["micro_grad"]["values"], rtol=1e-5, atol=1e-6)
    assert_close(aux.metrics, rec["micro_grad"]["metrics"], rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="divisible"):
        mb.microbatch(stats, argnums=(0, 1), microbatch_size=3)(x, y)
    with pytest.raises(ValueError, match="floating-point"):
        mb.microbatch(lambda v: v, argnums=0, microbatch_size=2,
                      accumulator=mb.AccumulationType.MEAN)(jnp.arange(4))


def test_experimental_aggregating():
    rec, ag = GOLDEN["aggregating"], optim.experimental.aggregating
    params, per_elt = dec(rec["params"]), dec(rec["per_elt"])
    runs = {"mean_variance_1": ag.add_mean_variance_to_opt(optim.sgd(0.1), ema_decay=0.8),
            "mean_variance_2": ag.add_mean_variance_to_opt(optim.adam(0.05),
                                                           accumulation_steps=2),
            "incremental_3": ag.average_incrementally_updates(0, 3)}
    for name, opt in runs.items():
        state = opt.init(params)
        for g, want in zip(per_elt, rec["runs"][name]["updates"]):
            updates, state = opt.update(g, state, params)
            assert_close(updates, want, rtol=1e-5, atol=1e-6, what=name)
        if "unbiased" in rec["runs"][name]:
            assert_close(ag.get_unbiased_mean_and_variance_ema(state),
                         rec["runs"][name]["unbiased"], rtol=1e-5, atol=1e-6, what=name)
    with pytest.raises(ValueError, match="same batch size"):
        ag.get_batch_size_from_per_elt_updates({"a": jnp.ones((2, 3)), "b": jnp.ones(3)}, 0)
    with pytest.raises(ValueError, match="larger than or equal to 1"):
        ag.accumulate_avg_updates(0)
