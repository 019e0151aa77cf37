"""More building blocks: the Adam family's relatives (AMSGrad, AdaBelief, Yogi, RAdam, Adan,
AdaDelta, NovoGrad, SM3), sign-based and optimistic steps, Polyak's step size and
parameter-scaled updates. Each returns a GradientTransformation with a NamedTuple state whose
fields are named as Optax's."""
from __future__ import annotations

import functools
import warnings
from typing import Any, NamedTuple

import numpy as np

import corejax as jax
import corejax.numpy as jnp
from corejax import lax

from optim import tree_utils as tu
from optim.base import (GradientTransformation, GradientTransformationExtraArgs,
                        init_empty_state, params_required, zero_count)
from optim.numerics import abs_sq, safe_increment, safe_norm, safe_root_mean_squares
from optim.transform import ScaleByAdamState

__all__ = ["ScaleByAmsgradState", "scale_by_amsgrad", "ScaleByBeliefState", "scale_by_belief",
           "scale_by_yogi", "scale_by_radam", "ScaleByAdaDeltaState", "scale_by_adadelta",
           "ScaleByAdanState", "scale_by_adan", "ScaleByNovogradState", "scale_by_novograd",
           "ScaleBySM3State", "scale_by_sm3", "ScaleByRpropState", "scale_by_rprop",
           "scale_by_sign", "ScaleByOptimisticGradientState", "scale_by_optimistic_gradient",
           "ScaleByDistanceOverGradientsState", "scale_by_distance_over_gradients",
           "scale_by_polyak", "scale_by_param_block_norm", "scale_by_param_block_rms",
           "centralize", "normalize_by_update_norm", "AddNoiseState", "add_noise"]

_map = jax.tree_util.tree_map


def _divide_by_root(mu_hat, nu_hat, eps, eps_root):
    return _map(lambda m, v: m / (jnp.sqrt(v + eps_root) + eps), mu_hat, nu_hat)


def _nesterov_mu_hat(mu, updates, b1, count):
    """Bias-corrected momentum with Nesterov's look-ahead: b1 * m / (1 - b1^(t+1)) plus
    (1 - b1) * g / (1 - b1^t)."""
    return _map(lambda m, g: b1 * m + (1 - b1) * g,
                tu.tree_bias_correction(mu, b1, safe_increment(count)),
                tu.tree_bias_correction(updates, b1, count))


class ScaleByAmsgradState(NamedTuple):
    count: Any
    mu: Any
    nu: Any
    nu_max: Any


def scale_by_amsgrad(b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, mu_dtype=None,
                     bias_correction_mu: bool = True,
                     bias_correction_nu: bool = True) -> GradientTransformation:
    """AMSGrad: Adam whose denominator uses the running maximum of the second moment."""
    def init(params):
        return ScaleByAmsgradState(zero_count(), tu.tree_zeros_like(params, dtype=mu_dtype),
                                   tu.tree_zeros_like(params), tu.tree_zeros_like(params))

    def update(updates, state, params=None):
        del params
        mu = tu.tree_update_moment(updates, state.mu, b1, 1)
        nu = tu.tree_update_moment_per_elem_norm(updates, state.nu, b2, 2)
        count = safe_increment(state.count)
        mu_hat = tu.tree_bias_correction(mu, b1, count) if bias_correction_mu else mu
        nu_eff = tu.tree_bias_correction(nu, b2, count) if bias_correction_nu else nu
        nu_max = _map(jnp.maximum, state.nu_max, nu_eff)
        updates = _divide_by_root(mu_hat, nu_max, eps, eps_root)
        return updates, ScaleByAmsgradState(count, tu.tree_cast(mu, mu_dtype), nu, nu_max)
    return GradientTransformation(init, update)


class ScaleByBeliefState(NamedTuple):
    count: Any
    mu: Any
    nu: Any


def scale_by_belief(b1=0.9, b2=0.999, eps=1e-16, eps_root=1e-16, *,
                    nesterov: bool = False) -> GradientTransformation:
    """AdaBelief: the second moment tracks the squared surprise g - m, not g itself."""
    def init(params):
        return ScaleByBeliefState(zero_count(), tu.tree_zeros_like(params),
                                  tu.tree_zeros_like(params))

    def update(updates, state, params=None):
        del params
        mu = tu.tree_update_moment(updates, state.mu, b1, 1)
        surprise = _map(lambda g, m: g - m, updates, mu)
        nu = tu.tree_update_moment_per_elem_norm(surprise, state.nu, b2, 2)
        nu = _map(lambda v: v + eps_root, nu)
        count = safe_increment(state.count)
        if nesterov:
            mu_hat = _nesterov_mu_hat(mu, updates, b1, count)
        else:
            mu_hat = tu.tree_bias_correction(mu, b1, count)
        nu_hat = tu.tree_bias_correction(nu, b2, count)
        updates = _map(lambda m, v: m / (jnp.sqrt(v) + eps), mu_hat, nu_hat)
        return updates, ScaleByBeliefState(count, mu, nu)
    return GradientTransformation(init, update)


def scale_by_yogi(b1=0.9, b2=0.999, eps=1e-3, eps_root=0.0,
                  initial_accumulator_value=1e-6) -> GradientTransformation:
    """Yogi: the second moment moves additively, by (1 - b2) * g^2 towards g^2."""
    def init(params):
        return ScaleByAdamState(zero_count(),
                                tu.tree_full_like(params, initial_accumulator_value),
                                tu.tree_full_like(params, initial_accumulator_value))

    def update(updates, state, params=None):
        del params
        mu = tu.tree_update_moment(updates, state.mu, b1, 1)
        nu = _map(lambda g, v: v - (1 - b2) * jnp.sign(v - abs_sq(g)) * abs_sq(g),
                  updates, state.nu)
        count = safe_increment(state.count)
        mu_hat = tu.tree_bias_correction(mu, b1, count)
        nu_hat = tu.tree_bias_correction(nu, b2, count)
        return _divide_by_root(mu_hat, nu_hat, eps, eps_root), ScaleByAdamState(count, mu, nu)
    return GradientTransformation(init, update)


def scale_by_radam(b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, threshold=5.0, *,
                   nesterov: bool = False) -> GradientTransformation:
    """Rectified Adam: plain momentum until the variance estimate's length of memory (rho)
    reaches `threshold`, then Adam scaled by the rectification term r."""
    rho_inf = 2.0 / (1.0 - b2) - 1.0

    def init(params):
        return ScaleByAdamState(zero_count(), tu.tree_zeros_like(params),
                                tu.tree_zeros_like(params))

    def update(updates, state, params=None):
        del params
        mu = tu.tree_update_moment(updates, state.mu, b1, 1)
        nu = tu.tree_update_moment_per_elem_norm(updates, state.nu, b2, 2)
        count = safe_increment(state.count)
        b2t = b2 ** count
        rho = rho_inf - 2 * count * b2t / (1 - b2t)
        if nesterov:
            mu_hat = _nesterov_mu_hat(mu, updates, b1, count)
        else:
            mu_hat = tu.tree_bias_correction(mu, b1, count)
        nu_hat = tu.tree_bias_correction(nu, b2, count)
        r = jnp.sqrt((rho - 4.0) * (rho - 2.0) * rho_inf
                     / ((rho_inf - 4.0) * (rho_inf - 2.0) * rho))
        rectified = _map(lambda m, v: r.astype(m.dtype) * m / (jnp.sqrt(v + eps_root) + eps),
                         mu_hat, nu_hat)
        updates = _map(lambda a, m: jnp.where(rho >= threshold, a, m), rectified, mu_hat)
        return updates, ScaleByAdamState(count, mu, nu)
    return GradientTransformation(init, update)


class ScaleByAdaDeltaState(NamedTuple):
    e_g: Any
    e_x: Any


def scale_by_adadelta(rho=0.9, eps=1e-6) -> GradientTransformation:
    """AdaDelta: steps of RMS(previous steps) / RMS(gradients) times the gradient."""
    def init(params):
        return ScaleByAdaDeltaState(tu.tree_zeros_like(params), tu.tree_zeros_like(params))

    def update(updates, state, params=None):
        del params
        e_g = tu.tree_update_moment(updates, state.e_g, rho, 2)
        updates = _map(lambda g, eg, ex: jnp.sqrt(ex + eps) / jnp.sqrt(eg + eps) * g,
                       updates, e_g, state.e_x)
        e_x = tu.tree_update_moment(updates, state.e_x, rho, 2)
        return updates, ScaleByAdaDeltaState(e_g, e_x)
    return GradientTransformation(init, update)


class ScaleByAdanState(NamedTuple):
    m: Any
    v: Any
    n: Any
    g: Any
    t: Any


def scale_by_adan(b1=0.98, b2=0.92, b3=0.99, eps=1e-8, eps_root=0.0) -> GradientTransformation:
    """Adan: Nesterov-like momentum from moving averages of gradients and of their changes."""
    def init(params):
        zeros = functools.partial(tu.tree_zeros_like, params)
        return ScaleByAdanState(zeros(), zeros(), zeros(), zeros(), zero_count())

    def update(updates, state, params=None):
        del params
        g = updates
        diff = tu.tree_where(state.t == 0, tu.tree_zeros_like(g), tu.tree_sub(g, state.g))
        m = tu.tree_update_moment(g, state.m, b1, 1)
        v = tu.tree_update_moment(diff, state.v, b2, 1)
        n = tu.tree_update_moment_per_elem_norm(tu.tree_add_scalar_mul(g, 1 - b2, diff),
                                                state.n, b3, 2)
        t = safe_increment(state.t)
        m_hat = tu.tree_bias_correction(m, b1, t)
        v_hat = tu.tree_bias_correction(v, b2, t)
        n_hat = tu.tree_bias_correction(n, b3, t)
        direction = tu.tree_add_scalar_mul(m_hat, 1 - b2, v_hat)
        out = _map(lambda u, nh: u / (jnp.sqrt(nh + eps_root) + eps), direction, n_hat)
        return out, ScaleByAdanState(m, v, n, g, t)
    return GradientTransformation(init, update)


class ScaleByNovogradState(NamedTuple):
    count: Any
    mu: Any
    nu: Any


def scale_by_novograd(b1=0.9, b2=0.25, eps=1e-8, eps_root=0.0, weight_decay=0.0,
                      mu_dtype=None) -> GradientTransformation:
    """NovoGrad: a per-layer (per-leaf) second moment of the gradient's squared norm; the
    first step takes that norm as it is instead of averaging it with zero."""
    def init(params):
        return ScaleByNovogradState(zero_count(), tu.tree_zeros_like(params, dtype=mu_dtype),
                                    _map(lambda p: jnp.asarray(0.0, dtype=p.dtype), params))

    def update(updates, state, params=None):
        params_required("scale_by_novograd", params)
        count = safe_increment(state.count)
        first = count == 1
        sq_norms = _map(lambda g: jnp.linalg.norm(g) ** 2, updates)
        nu = _map(lambda s, n: jnp.where(first, s.astype(n.dtype), (1 - b2) * s + b2 * n),
                  sq_norms, state.nu)
        step = _map(lambda g, p, n: g / (jnp.sqrt(n + eps_root) + eps) + weight_decay * p,
                    updates, params, nu)
        mu = _map(lambda s, m: jnp.where(first, s, b1 * m + s), step, state.mu)
        mu = tu.tree_cast(mu, mu_dtype)
        return mu, ScaleByNovogradState(count, mu, nu)
    return GradientTransformation(init, update)


class ScaleBySM3State(NamedTuple):
    mu: Any
    nu: Any


def _per_axis_zeros(x):
    """One zero vector per axis of `x`, as long as that axis."""
    return [jnp.zeros((x.shape[i],), x.dtype) for i in range(x.ndim)]


def scale_by_sm3(b1=0.9, b2=1.0, eps=1e-8) -> GradientTransformation:
    """SM3: Adagrad with one accumulator per row/column/... (the min over the covering sets),
    memory linear in the sum of the dimensions; then momentum `b1`."""
    def init(params):
        for leaf in jax.tree_util.tree_leaves(params):
            if jnp.iscomplexobj(leaf):
                raise ValueError("scale_by_sm3 does not support complex parameters; split "
                                 "them into real and imaginary parts.")
        return ScaleBySM3State(_map(_per_axis_zeros, params), tu.tree_zeros_like(params))

    def broadcastable(g, i):
        return [1] * i + [g.shape[i]] + [1] * (g.ndim - i - 1)

    def accumulate(g, vs):
        fresh, kept = (1.0 - b2 if b2 != 1.0 else 1.0), b2
        cover = vs[0] if g.ndim < 2 else functools.reduce(jnp.minimum, vs)
        return fresh * g ** 2 + kept * cover

    def per_axis_max(a):
        if a.ndim < 2:
            return [a]
        return [jnp.max(a, axis=tuple(j for j in range(a.ndim) if j != i))
                for i in range(a.ndim)]

    def update(updates, state, params=None):
        del params
        expanded = jax.tree_util.tree_map(
            lambda g, vs: [jnp.reshape(v, broadcastable(g, i)) for i, v in enumerate(vs)],
            updates, state.mu)
        accum = _map(accumulate, updates, expanded)
        scaled = _map(lambda g, a: g * jnp.where(a > 0, lax.rsqrt(a + eps), 0.0),
                      updates, accum)
        nu = tu.tree_update_moment(scaled, state.nu, b1, 1)
        mu = _map(per_axis_max, accum)
        return nu, ScaleBySM3State(mu, nu)
    return GradientTransformation(init, update)


class ScaleByRpropState(NamedTuple):
    step_sizes: Any
    prev_updates: Any


def scale_by_rprop(learning_rate, eta_minus=0.5, eta_plus=1.2, min_step_size=1e-6,
                   max_step_size=50.0) -> GradientTransformation:
    """Rprop: per-coordinate step sizes that grow while the gradient keeps its sign and
    shrink (skipping the step) when it flips; the update is the step size times sign(g)."""
    def init(params):
        return ScaleByRpropState(tu.tree_full_like(params, learning_rate),
                                 tu.tree_zeros_like(params))

    def update(updates, state, params=None):
        del params
        agreement = _map(lambda g, prev: g * prev, updates, state.prev_updates)
        step_sizes = _map(
            lambda s, size: jnp.where(
                s == 0, size,
                jnp.clip(size * jnp.where(s > 0, eta_plus, eta_minus),
                         min=min_step_size, max=max_step_size)),
            agreement, state.step_sizes)
        prev_updates = _map(
            lambda s, g, size: jnp.where(s < 0, jnp.zeros_like(g), size * jnp.sign(g)),
            agreement, updates, step_sizes)
        # As Optax 0.2.8 does: the step emitted is the one stored at the previous update
        # (zero on the first), skipped where the gradient changed sign.
        updates = _map(lambda s, old: jnp.where(s < 0, jnp.zeros_like(old), old),
                       agreement, state.prev_updates)
        return updates, ScaleByRpropState(step_sizes, prev_updates)
    return GradientTransformation(init, update)


def scale_by_sign() -> GradientTransformation:
    """Replaces every update by its sign."""
    def update(updates, state, params=None):
        del params
        return _map(jnp.sign, updates), state
    return GradientTransformation(init_empty_state, update)


class ScaleByOptimisticGradientState(NamedTuple):
    is_initial_step: Any
    previous_gradient: Any


def scale_by_optimistic_gradient(alpha=1.0, beta=1.0) -> GradientTransformation:
    """Optimistic gradient: `(alpha + beta) * g_t - beta * g_{t-1}` (g_0 on the first step)."""
    def init(params):
        return ScaleByOptimisticGradientState(jnp.array(True), tu.tree_zeros_like(params))

    def update(updates, state, params=None):
        del params

        def extrapolate(g, prev):
            prev = jnp.where(state.is_initial_step, g, prev)
            return (alpha + beta) * g - beta * prev
        new_updates = _map(extrapolate, updates, state.previous_gradient)
        return new_updates, ScaleByOptimisticGradientState(jnp.array(False), updates)
    return GradientTransformation(init, update)


class ScaleByDistanceOverGradientsState(NamedTuple):
    max_dist: Any
    grad_sum_of_squares: Any
    init_params: Any


def scale_by_distance_over_gradients(reps_rel=1e-6, eps=1e-8, param_dtype=jnp.float32,
                                     global_scale=1.0) -> GradientTransformation:
    """DoG (layer-wise): step size = largest distance travelled from the initial params over
    the root of the summed squared gradient norms."""
    def l2(x, y=0.0):
        return jnp.sqrt(jnp.square(x - y).sum())

    def init(params):
        return ScaleByDistanceOverGradientsState(
            _map(lambda x: reps_rel * (1 + l2(x)), params),
            _map(lambda x: jnp.zeros(1), params),
            tu.tree_cast(params, param_dtype))

    def update(updates, state, params=None):
        params_required("scale_by_distance_over_gradients", params)
        max_dist = _map(lambda d, x, y: jnp.maximum(d, l2(x, y)),
                        state.max_dist, params, state.init_params)
        g_sos = _map(lambda s, g: s + jnp.square(g).sum(), state.grad_sum_of_squares, updates)
        updates = _map(lambda g, d, s: global_scale * (d / jnp.sqrt(s + eps)) * g,
                       updates, max_dist, g_sos)
        return updates, ScaleByDistanceOverGradientsState(max_dist, g_sos, state.init_params)
    return GradientTransformation(init, update)


_FLOAT_EPS = 2.220446049250313e-16  # machine epsilon of Python's float


def scale_by_polyak(f_min=0.0, max_learning_rate=1.0, eps=0.0,
                    variant: str = "sps") -> GradientTransformationExtraArgs:
    """Polyak's step size `min((f(x) - f_min) / ||g||^2, max_learning_rate)`; `update` needs
    the loss as the keyword `value=`. variant 'sps+' clips a negative gap to zero."""
    if variant not in ("sps", "sps+"):
        raise ValueError(f"Invalid argument value for Polyak SGD: variant={variant!r}; "
                         "use 'sps' or 'sps+'.")

    def update(updates, state, params=None, *, value=None, **extra_args):
        del params, extra_args
        if value is None:
            raise TypeError("scale_by_polyak's update needs the loss at the current params: "
                            "call update(updates, state, params, value=loss).")
        grad_sq_norm = tu.tree_l2_norm(updates, squared=True)
        gap = jnp.array(value - f_min).astype(grad_sq_norm.dtype)
        if variant == "sps+":
            gap = jnp.maximum(gap, 0.0)
        step = jnp.where(grad_sq_norm + eps <= _FLOAT_EPS, jnp.array(0.0),
                         jnp.minimum(gap / (grad_sq_norm + eps), max_learning_rate))
        return _map(lambda u: step * u, updates), state
    return GradientTransformationExtraArgs(init_empty_state, update)


def scale_by_param_block_norm(min_scale=1e-3) -> GradientTransformation:
    """Multiplies each leaf's update by the l2 norm of its parameter (at least `min_scale`)."""
    def update(updates, state, params=None):
        params_required("scale_by_param_block_norm", params)
        return _map(lambda u, p: u * safe_norm(p, min_scale), updates, params), state
    return GradientTransformation(init_empty_state, update)


def scale_by_param_block_rms(min_scale=1e-3) -> GradientTransformation:
    """Multiplies each leaf's update by the RMS of its parameter (at least `min_scale`)."""
    def update(updates, state, params=None):
        params_required("scale_by_param_block_rms", params)
        return _map(lambda u, p: u * safe_root_mean_squares(p, min_scale),
                    updates, params), state
    return GradientTransformation(init_empty_state, update)


def _subtract_mean(g):
    if g.ndim > 1:
        return g - g.mean(tuple(range(1, g.ndim)), keepdims=True)
    return g


def centralize() -> GradientTransformation:
    """Gradient centralization: leaves of rank >= 2 lose their mean over all axes but the
    first."""
    def update(updates, state, params=None):
        del params
        return _map(_subtract_mean, updates), state
    return GradientTransformation(init_empty_state, update)


def normalize_by_update_norm(scale_factor=1.0, eps=1e-6) -> GradientTransformation:
    """Divides the updates by their global l2 norm (plus `eps`), times `scale_factor`."""
    def update(updates, state, params=None):
        del params
        g_norm = (tu.tree_l2_norm(updates) + eps) / scale_factor
        return _map(lambda g: g / g_norm, updates), state
    return GradientTransformation(init_empty_state, update)



class AddNoiseState(NamedTuple):
    count: Any
    rng_key: Any


def add_noise(eta, gamma, key=None, *, seed=None) -> GradientTransformation:
    """Adds Gaussian noise of variance `eta / (1 + t) ** gamma` at step t (Neelakantan et al.,
    2015); `key` is a PRNG key or an integer seed (`seed=` is its deprecated spelling)."""
    if seed is not None:
        warnings.warn('"seed" is deprecated and will be removed in optax 0.2.7, use "key".',
                      DeprecationWarning)
        if key is not None:
            raise ValueError("Only one of seed or key can be specified.")
        key = seed
    if key is None:
        warnings.warn("Specifying a key will be required in optax 0.2.7.")
        key = 0

    def init(params):
        del params
        is_seed = isinstance(key, (int, np.integer))
        return AddNoiseState(zero_count(), jax.random.key(key) if is_seed else key)

    def update(updates, state, params=None):
        del params
        count = safe_increment(state.count)
        stddev = jnp.sqrt(eta / count ** gamma)
        rng_key, sample_key = jax.random.split(state.rng_key)
        leaves, treedef = jax.tree_util.tree_flatten(updates)
        keys = jax.random.split(sample_key, len(leaves))
        noise = [jax.random.normal(keys[i], leaf.shape, leaf.dtype)
                 for i, leaf in enumerate(leaves)]
        noisy = [leaf + stddev * z for leaf, z in zip(leaves, noise)]
        return (jax.tree_util.tree_unflatten(treedef, noisy),
                AddNoiseState(count, rng_key))
    return GradientTransformation(init, update)
