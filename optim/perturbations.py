"""optax.perturbations: smoothing a function by random perturbations of its input, with a
Monte-Carlo (score-function) gradient, so piecewise-constant functions such as argmax get
useful gradients."""
from __future__ import annotations

import corejax as jax
import corejax.numpy as jnp
from corejax import lax
from optim import _tree_math as tm

__all__ = ["Normal", "Gumbel", "make_perturbed_fun"]


class Normal:
    """Standard normal noise: `sample(key, sample_shape, dtype)` and an unnormalized
    `log_prob`."""

    def sample(self, key, sample_shape=(), dtype=float):
        return jax.random.normal(key, sample_shape, dtype)

    def log_prob(self, inputs):
        return -0.5 * inputs ** 2


class Gumbel:
    """Standard Gumbel noise: `sample(key, sample_shape, dtype)` and `log_prob`."""

    def sample(self, key, sample_shape=(), dtype=float):
        return jax.random.gumbel(key, sample_shape, dtype)

    def log_prob(self, inputs):
        return -inputs - jnp.exp(-inputs)


def _magic_box(x):
    # 1 in value, d/dx = 1 in gradient: turns log-probabilities into score-function gradients.
    return jnp.exp(x - lax.stop_gradient(x))


def make_perturbed_fun(fun, num_samples: int = 1000, sigma: float = 0.1, noise=Gumbel(),
                       use_baseline: bool = True):
    """`(key, x) -> mean over num_samples draws z of fun(x + sigma * z)`, differentiable in
    `x` through the noise's log-density (with `fun(x)` as a control variate when
    `use_baseline`)."""
    def estimate(key, x):
        def one_draw(draw_key, x, baseline):
            z = tm.tree_random_like(draw_key, x, sampler=noise.sample)
            shifted = lax.stop_gradient(
                jax.tree_util.tree_map(lambda a, b: a + sigma * b, x, z))
            z = jax.tree_util.tree_map(lambda a, s: (s - a) / sigma, x, shifted)
            box = _magic_box(tm.tree_sum(jax.tree_util.tree_map(noise.log_prob, z)))
            out = tm.tree_scale(box, fun(shifted))
            if use_baseline:
                out = tm.tree_add_scale(out, 1 - box, baseline)
            return out

        baseline = fun(lax.stop_gradient(x)) if use_baseline else None
        outs = jax.vmap(one_draw, in_axes=(0, None, None))(
            jax.random.split(key, num_samples), x, baseline)
        return jax.tree_util.tree_map(lambda v: jnp.mean(v, axis=0), outs)
    return estimate
