"""The Gamma sampler and the distributions built on it: gamma, loggamma, beta, dirichlet, t,
chisquare, f, generalized_normal and ball.

`random_gamma_p` is a primitive, as in JAX: `random_gamma(keys, a, log_space)` draws one Gamma(a)
variate per element of `a` by Marsaglia and Tsang's rejection method, each element from its own
key (the key split into as many keys as it has elements, in row-major order) and its own
rejection loop. Its rules:

- impl: the vmapped per-element sampler (a while_loop around the rejection test, an inner one
  that redraws the normal until 1 + c x > 0), staged once per signature and run by the NumPy
  reference interpreter. Under jit the primitive is a host step running this same impl, so eager
  and jitted samples are the same bits, and no Numba compilation of the rejection loops is paid.
- jvp: JAX's implicit reparameterization, d sample / d a = random_gamma_grad(a, sample): how
  the sample moves with `a` at a fixed value of its CDF (lax.random_gamma_grad, the special
  functions' primitive). In log space the derivative is divided by the sample.
- batching: batch axes to the front (an unbatched key is broadcast, an unbatched `a` too), then
  the primitive again: each batch element splits its own key, so vmap equals a Python map.

The draws, their keys and their order are JAX's: the initial key gives (loop key, boost key);
each round splits the loop key into (next loop key, normal key, uniform key); the normal loop
splits its key into (next, sample) per draw.
"""
from __future__ import annotations

import functools
import math
import operator

import numpy as np

from corejax import core, dtypes, lax
from corejax import numpy as jnp
from corejax.api import jit, vmap
from corejax.compiler.reference import ReferenceExecutable
from corejax.config import config
from corejax.core import Primitive, ShapedArray, get_aval
from corejax.random._basic import (_sample_float, _check_all_safe_to_cast, _check_broadcast_shapes,
                                   _check_shape, _exponential, _float_dtype, _normal_real,
                                   _rademacher, _unit)
from corejax.random._keys import (PRNGKeyArray, _shape, _single_key, _split, _split_n)
from corejax.transforms import batching
from corejax.transforms.ad import defjvp
from corejax.transforms.jit import stage


# --- the per-element sampler -----------------------------------------------------------------

def _gamma_one(words, alpha, log_space: bool):
    """One Gamma(alpha) variate (its log if `log_space`), alpha a float scalar."""
    dt = get_aval(alpha).dtype

    def c(v):
        return np.array(v, dt)

    boost_mask = lax.ge(alpha, c(1))
    alpha_orig = alpha
    # alpha < 1: sample Gamma(alpha + 1) and scale by U ** (1 / alpha).
    alpha = lax.select(boost_mask, alpha, lax.add(alpha, c(1)))
    d = lax.sub(alpha, c(1 / 3))
    scale = lax.div(c(1 / 3), lax.sqrt(d))

    def rejected(state):
        _, x2, v, u = state
        # Both tests are evaluated, as in JAX (the squeeze alone would skip the logs).
        squeeze = lax.ge(u, lax.sub(c(1), lax.mul(c(0.0331), lax.mul(x2, x2))))
        exact = lax.ge(lax.log(u), lax.add(lax.mul(x2, c(0.5)),
                                           lax.mul(d, lax.add(lax.sub(c(1), v), lax.log(v)))))
        return lax.bitwise_and(squeeze, exact)

    def next_normal(state):
        key, sub = _split_n(state[0], 2)
        x = _normal_real(sub, (), dt)
        return key, x, lax.add(c(1), lax.mul(x, scale))

    def propose(state):
        key, x_key, u_key = _split_n(state[0], 3)
        _, x, v = lax.while_loop(lambda s: lax.le(s[2], c(0)), next_normal,
                                 (x_key, c(0), c(-1)))
        return key, lax.mul(x, x), lax.mul(lax.mul(v, v), v), _unit(u_key, (), dt)

    loop_key, boost_key = _split_n(words, 2)
    # The initial state fails the acceptance test (u = 2 > 1 - 0.0331 x^4 but log 2 < 0).
    _, _, v, _ = lax.while_loop(rejected, propose, (loop_key, c(0), c(1), c(2)))
    if log_space:
        log_u = lax.neg(_exponential(boost_key, (), dt))
        log_boost = lax.select(lax.bitwise_or(boost_mask, lax.eq(log_u, c(0))), c(0),
                               lax.mul(log_u, lax.div(c(1), alpha_orig)))
        return lax.add(lax.add(lax.log(d), lax.log(v)), log_boost)
    u = lax.sub(c(1), _unit(boost_key, (), dt))
    boost = lax.select(boost_mask, c(1), lax.pow(u, lax.div(c(1), alpha_orig)))
    return lax.mul(lax.mul(d, v), boost)


@functools.lru_cache(maxsize=256)
def _gamma_program(key_shape, a_shape, dt, log_space, partitionable, x64):
    """The staged sampler for one signature (the flags are part of it: they change the
    counters' layout and the dtypes staged)."""
    del partitionable, x64
    n_keys = math.prod(key_shape[:-1])
    per_key = math.prod(a_shape[len(key_shape) - 1:])

    def sample(keys, a):
        keys = jnp.reshape(keys, (n_keys, 2))
        keys = jnp.reshape(vmap(lambda k: _split(k, (per_key,)))(keys), (n_keys * per_key, 2))
        out = vmap(lambda k, x: _gamma_one(k, x, log_space))(keys, jnp.reshape(a, (-1,)))
        return [jnp.reshape(out, a_shape)]

    closed = stage(sample, [ShapedArray(key_shape, np.dtype(np.uint32)),
                            ShapedArray(a_shape, dt)], "random_gamma")
    return ReferenceExecutable(closed)


class _RandomGammaPrimitive(Primitive):
    """Binds typed keys by their words (JAX's random_gamma_p takes typed keys)."""

    def bind(self, keys, a, **params):
        if isinstance(keys, PRNGKeyArray):
            keys = keys._data
        return super().bind(keys, a, **params)


random_gamma_p = _RandomGammaPrimitive("random_gamma")


def _random_gamma_impl(keys, a, *, log_space):
    keys, a = np.asarray(keys), np.asarray(a)
    _random_gamma_abstract_eval(ShapedArray(keys.shape, keys.dtype), ShapedArray(a.shape, a.dtype),
                                log_space=log_space)
    run = _gamma_program(keys.shape, a.shape, a.dtype, bool(log_space),
                         bool(config.threefry_partitionable), bool(config.enable_x64))
    return np.asarray(run(keys, a)[0])


def _random_gamma_abstract_eval(keys, a, *, log_space):
    if keys.dtype != np.uint32 or keys.shape[-1:] != (2,):
        raise TypeError(f"random_gamma: keys must be uint32 key data with a trailing axis of 2, "
                        f"got {keys.dtype.name}{list(keys.shape)}.")
    if not dtypes.is_float(a.dtype):
        raise TypeError(f"random_gamma: a must be floating, got {a.dtype.name}.")
    batch = keys.shape[:-1]
    if a.shape[:len(batch)] != batch:
        raise TypeError(f"random_gamma: the key batch shape {batch} must be a prefix of the "
                        f"shape of a, {a.shape}.")
    return ShapedArray(a.shape, a.dtype)


def _gamma_grad(sample, a, log_space):
    """d sample / d a at a fixed CDF value (log space: of the log of the sample)."""
    if not log_space:
        return lax.random_gamma_grad(a, sample)
    # exp(log sample) can underflow to 0, where the derivative would divide by zero.
    x = lax.exp(sample)
    x = lax.select(lax.eq(x, lax.full_like(x, 0)), lax.full_like(x, np.finfo(x.dtype).tiny), x)
    return lax.div(lax.random_gamma_grad(a, x), x)


def _random_gamma_batch(axis_size, vals, dims, *, log_space):
    keys, a = (batching.bdim_at_front(v, d, axis_size) for v, d in zip(vals, dims))
    return random_gamma_p.bind(keys, a, log_space=log_space), 0


_random_gamma_batch.needs_axis_size = True
random_gamma_p.def_impl(_random_gamma_impl)
random_gamma_p.def_abstract_eval(_random_gamma_abstract_eval)
random_gamma_p.weak_type_rule = lambda *args, **params: False
defjvp(random_gamma_p, None,
       lambda t, ans, keys, a, *, log_space: lax.mul(t, _gamma_grad(ans, a, log_space)))
batching.primitive_batchers[random_gamma_p] = _random_gamma_batch


# --- gamma and loggamma --------------------------------------------------------------------------

def _gamma(words, a, shape, dt, log_space=False):
    if shape is None:
        shape = np.shape(a)
    else:
        _check_shape("gamma", shape, np.shape(a))
    a = lax.convert_element_type(jnp.asarray(a), dt)
    if a.shape != tuple(shape):
        a = jnp.broadcast_to(a, shape)
    return random_gamma_p.bind(words, a, log_space=log_space)


def _gamma_args(name, key, shape, dtype):
    words, _ = _single_key(name, key)
    dt = _float_dtype("gamma", dtype)
    return words, (None if shape is None else _shape(name, shape)), dt


def gamma(key, a, shape=None, dtype=None):
    """Standard Gamma(a) floats (unit scale), differentiable in `a` (implicit
    reparameterization)."""
    words, shape, dt = _gamma_args("gamma", key, shape, dtype)
    return _gamma(words, a, shape, dt)


def loggamma(key, a, shape=None, dtype=None):
    """log of Gamma(a) samples, computed in log space: accurate where small `a` makes the
    samples underflow. exp(loggamma(...)) matches gamma(...) for the same arguments."""
    words, shape, dt = _gamma_args("loggamma", key, shape, dtype)
    return _gamma(words, a, shape, dt, log_space=True)


# --- distributions built on gamma -----------------------------------------------------------------

def _beta(words, a, b, shape, dt):
    a, b = (jnp.broadcast_to(lax.convert_element_type(x, dt), shape) for x in (a, b))
    key_a, key_b = _split_n(words, 2)
    log_a = _gamma(key_a, a, shape, dt, log_space=True)
    log_b = _gamma(key_b, b, shape, dt, log_space=True)
    # gamma_a / (gamma_a + gamma_b) without underflow: both scaled by the larger one.
    log_max = lax.max(log_a, log_b)
    scaled_a, scaled_b = jnp.exp(log_a - log_max), jnp.exp(log_b - log_max)
    return scaled_a / (scaled_a + scaled_b)


_beta_jit = jit(_beta, static_argnums=(3, 4))


def beta(key, a, b, shape=None, dtype=None):
    """Beta(a, b) floats in [0, 1]."""
    words, _ = _single_key("beta", key)
    dt = _float_dtype("beta", dtype)
    _check_all_safe_to_cast("beta", dt, a, b)
    shape = _check_broadcast_shapes("beta", shape, a, b)
    return _beta_jit(words, a, b, shape, dt)


def _dirichlet(words, alpha, shape, dt):
    from corejax.nn import softmax
    alpha = lax.convert_element_type(alpha, dt)
    # In log space, so that small concentrations do not underflow to an all-zero draw.
    log_samples = _gamma(words, alpha, shape + alpha.shape[-1:], dt, log_space=True)
    return softmax(log_samples, -1)


_dirichlet_jit = jit(_dirichlet, static_argnums=(2, 3))


def dirichlet(key, alpha, shape=None, dtype=None):
    """Dirichlet(alpha) vectors along the last axis of `alpha` (shape: the batch shape)."""
    words, _ = _single_key("dirichlet", key)
    dt = _float_dtype("dirichlet", dtype)
    if shape is not None:
        shape = _shape("dirichlet", shape)
    alpha = jnp.asarray(alpha)
    if alpha.ndim < 1:
        raise ValueError(f"dirichlet requires alpha.ndim >= 1, got alpha.ndim == {alpha.ndim}")
    if shape is None:
        shape = alpha.shape[:-1]
    else:
        _check_shape("dirichlet", shape, alpha.shape[:-1])
    return _dirichlet_jit(words, alpha, tuple(shape), dt)


def _t(words, df, shape, dt):
    df = lax.convert_element_type(df, dt)
    key_n, key_g = _split_n(words, 2)
    n = _normal_real(key_n, shape, dt)
    half_df = lax.div(df, np.array(2, dt))
    g = _gamma(key_g, half_df, shape, dt)
    return n * jnp.sqrt(half_df / g)


_t_jit = jit(_t, static_argnums=(2, 3))


def t(key, df, shape=None, dtype=None):
    """Student's t floats with `df` degrees of freedom."""
    return _sample_float("t", _t_jit, key, (df,), shape, dtype)


def _chisquare(words, df, shape, dt):
    df = lax.convert_element_type(df, dt)
    two = np.array(2, dt)
    log_g = _gamma(words, lax.div(df, two), shape, dt, log_space=True)
    return lax.mul(jnp.exp(log_g), two)


_chisquare_jit = jit(_chisquare, static_argnums=(2, 3))


def chisquare(key, df, shape=None, dtype=None):
    """Chi-square floats with `df` degrees of freedom."""
    return _sample_float("chisquare", _chisquare_jit, key, (df,), shape, dtype)


def _f(words, dfnum, dfden, shape, dt):
    dfden = lax.convert_element_type(dfden, dt)
    dfnum = lax.convert_element_type(dfnum, dt)
    key_dfd, key_dfn = _split_n(words, 2)
    chi2_dfn = _chisquare(key_dfn, dfnum, shape, dt)
    chi2_dfd = _chisquare(key_dfd, dfden, shape, dt)
    return lax.div(lax.div(chi2_dfn, dfnum), lax.div(chi2_dfd, dfden))


_f_jit = jit(_f, static_argnums=(3, 4))


def f(key, dfnum, dfden, shape=None, dtype=None):
    """F-distribution floats with `dfnum` and `dfden` degrees of freedom."""
    return _sample_float("f", _f_jit, key, (dfnum, dfden), shape, dtype)


def _generalized_normal(words, p, shape, dt):
    key_g, key_r = _split_n(words, 2)
    g = _gamma(key_g, 1 / p, shape, dt)
    r = _rademacher(key_r, shape, dt)
    return r * g ** (1 / p)


_generalized_normal_jit = jit(_generalized_normal, static_argnums=(2, 3))


def generalized_normal(key, p, shape=(), dtype=None):
    """Floats with density proportional to exp(-|x|^p)."""
    shape = _shape("generalized_normal", shape)
    words, _ = _single_key("generalized_normal", key)
    # The gamma draw checks the dtype (JAX's message names gamma).
    dt = _float_dtype("gamma", dtype)
    return _generalized_normal_jit(words, p, shape, dt)


def _ball(words, p, d, shape, dt):
    k1, k2 = _split_n(words, 2)
    g = _generalized_normal(k1, p, (*shape, d), dt)
    e = _exponential(k2, shape, dt)
    return g / (((jnp.abs(g) ** p).sum(-1) + e) ** (1 / p))[..., None]


_ball_jit = jit(_ball, static_argnums=(2, 3, 4))


def ball(key, d, p=2, shape=(), dtype=None):
    """Points uniform in the unit Lp ball of dimension `d` (shape: the batch shape)."""
    shape = _shape("ball", shape)
    words, _ = _single_key("ball", key)
    dt = _float_dtype("gamma", dtype)
    d = core.concrete_or_error(operator.index, d, "The error occurred in jax.random.ball()")
    return _ball_jit(words, p, d, shape, dt)
