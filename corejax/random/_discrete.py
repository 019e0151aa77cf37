"""Counting distributions: poisson, binomial and multinomial (rejection samplers with
whole-array while loops, JAX's algorithms and draw order) and geometric.

Poisson: Knuth's multiplication of uniforms for lam < 10, Hormann's transformed rejection
(PTRS) above; both loops run over the whole array (every element draws each round; an element
keeps its first accepted value) until no element is left, and both start from the same key.
Binomial: the inversion of sums of geometric variates where count * min(p, 1 - p) <= 10, the
BTRS transformed rejection of Hormann (with a table of Stirling-series tails) above; p > 1/2
samples count - Binomial(count, 1 - p). Multinomial: a scan of conditional binomials over the
categories.

These samplers are not jitted when called eagerly: their loops then run op by op on NumPy
arrays, which costs far less than compiling them; under a caller's jit they are staged (and
compiled) like any other loop. Their outputs are integers (poisson, geometric) or integral
floats, so the two paths agree.
"""
from __future__ import annotations

import numpy as np

from corejax import dtypes, lax
from corejax import numpy as jnp
from corejax.api import jit
from corejax.numpy._core import check_arraylike, promote_dtypes_inexact
from corejax.random._basic import (_check_broadcast_shapes, _check_shape, _float_dtype,
                                   _int_dtype, _unit)
from corejax.random._keys import _shape, _single_key, _split, _split_n


def _isnan(x):
    return lax.ne(x, x)


# --- poisson -------------------------------------------------------------------------------------

def _poisson_knuth(words, lam, shape, dt, max_iters):
    """Multiply uniforms until the product falls below exp(-lam); the count of factors - 1."""
    def body(carry):
        i, k, key, log_prod = carry
        key, sub = _split_n(key, 2)
        k = lax.select(log_prod > -lam, k + 1, k)
        u = _unit(sub, shape, np.dtype(np.float32))
        return i + 1, k, key, log_prod + jnp.log(u)

    def cond(carry):
        i, log_prod = carry[0], carry[3]
        return jnp.any(log_prod > -lam) & (i < max_iters)

    k0 = lax.full(shape, 0, dt)
    log_prod0 = lax.full(shape, 0, np.float32)
    k = lax.while_loop(cond, body, (0, k0, words, log_prod0))[1]
    return lax.convert_element_type(k - 1, dt)


def _poisson_rejection(words, lam, shape, dt, max_iters):
    """Hormann's transformed rejection with squeeze (PTRS), for lam >= 10."""
    log_lam = lax.log(lam)
    b = 0.931 + 2.53 * lax.sqrt(lam)
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    v_r = 0.9277 - 3.6224 / (b - 2)

    def body(carry):
        i, k_out, accepted, key = carry
        key, sub0, sub1 = _split_n(key, 3)
        u = _unit(sub0, shape, lam.dtype) - 0.5
        v = _unit(sub1, shape, lam.dtype)
        u_shifted = 0.5 - abs(u)
        k = lax.floor((2 * a / u_shifted + b) * u + lam + 0.43)
        s = lax.log(v * inv_alpha / (a / (u_shifted * u_shifted) + b))
        t = -lam + k * log_lam - lax.lgamma(k + 1)
        accept1 = (u_shifted >= 0.07) & (v <= v_r)
        reject = (k < 0) | ((u_shifted < 0.013) & (v > u_shifted))
        accept2 = s <= t
        accept = accept1 | (~reject & accept2)
        return i + 1, lax.select(accept, k, k_out), accepted | accept, key

    def cond(carry):
        i, _, accepted, _ = carry
        return jnp.any(~accepted) & (i < max_iters)

    k0 = lax.full(shape, -1, lam.dtype)
    accepted0 = lax.full(shape, False, np.bool_)
    k = lax.while_loop(cond, body, (0, k0, accepted0, words))[1]
    return lax.convert_element_type(k, dt)


def _poisson(words, lam, shape, dt):
    use_knuth = _isnan(lam) | (lam < 10)
    lam_knuth = lax.select(use_knuth, lam, lax.full_like(lam, 0.0))
    # The rejection sampler accepts at least 89% of its proposals as lam grows: any large
    # value keeps its lanes busy for few rounds where the other method applies.
    lam_rejection = lax.select(use_knuth, lax.full_like(lam, 1e5), lam)
    max_iters = dt.type(np.iinfo(dt).max)
    result = lax.select(use_knuth,
                        _poisson_knuth(words, lam_knuth, shape, dt, max_iters),
                        _poisson_rejection(words, lam_rejection, shape, dt, max_iters))
    return lax.select(lam == 0, jnp.zeros_like(result), result)


def poisson(key, lam, shape=None, dtype=None):
    """Poisson(lam) integers (int32 by default)."""
    words, _ = _single_key("poisson", key)
    dt = dtypes.canonicalize_dtype(dtypes.default_int_dtype() if dtype is None else dtype)
    shape = np.shape(lam) if shape is None else _shape("poisson", shape)
    if not dtypes.is_integer(dt):
        raise ValueError(f"Invalid integer data type '{dt.kind}'. poisson samples integers: "
                         "pass an integer dtype.")
    lam = lax.convert_element_type(jnp.broadcast_to(jnp.asarray(lam), shape), np.float32)
    return _poisson(words, lam, tuple(shape), dt)


# --- binomial ------------------------------------------------------------------------------------

def _stirling_approx_tail(k):
    """log k! - (Stirling's formula to the k + 1/2 term): a table for k <= 9, the series in
    1 / (k + 1) beyond (evaluated, as in JAX, at k clamped to [0, 9])."""
    table = jnp.array([0.0810614667953272, 0.0413406959554092, 0.0276779256849983,
                       0.02079067210376509, 0.0166446911898211, 0.0138761288230707,
                       0.0118967099458917, 0.0104112652619720, 0.00925546218271273,
                       0.00833056343336287], dtype=k.dtype)
    use_table = k <= 9
    k = lax.clamp(np.array(0.0, k.dtype), k, np.array(9.0, k.dtype))
    kp1sq = (k + 1) * (k + 1)
    approx = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)
    k = jnp.floor(k)
    return lax.select(use_table, table[lax.convert_element_type(k, np.int32)], approx)


def _binomial_inversion(words, count, prob, shape, dt, max_iters):
    """Count geometric waiting times until their sum passes `count`."""
    log1minusprob = jnp.log1p(-prob)

    def body(carry):
        i, num_geom, geom_sum, key = carry
        sub, key = _split_n(key, 2)
        num_geom_out = lax.select(geom_sum <= count, num_geom + 1, num_geom)
        u = _unit(sub, shape, prob.dtype)
        geom = jnp.ceil(jnp.log(u) / log1minusprob)
        return i + 1, num_geom_out, geom_sum + geom, key

    def cond(carry):
        i, geom_sum = carry[0], carry[2]
        return jnp.any(geom_sum <= count) & (i < max_iters)

    zeros = lax.full(shape, 0, prob.dtype)
    k = lax.while_loop(cond, body, (0, zeros, zeros, words))[1]
    return lax.convert_element_type(k - 1, dt)


def _btrs(words, count, prob, shape, dt, max_iters):
    """Hormann's transformed rejection with squeeze for the binomial (BTRS)."""
    stddev = jnp.sqrt(count * prob * (1 - prob))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * prob
    c = count * prob + 0.5
    v_r = 0.92 - 4.2 / b
    r = prob / (1 - prob)
    alpha = (2.83 + 5.1 / b) * stddev
    m = jnp.floor((count + 1) * prob)

    def body(carry):
        i, k_out, accepted, key = carry
        key, sub0, sub1 = _split_n(key, 3)
        u = _unit(sub0, shape, prob.dtype)
        v = _unit(sub1, shape, prob.dtype)
        u = u - 0.5
        us = 0.5 - jnp.abs(u)
        accept1 = (us >= 0.07) & (v <= v_r)
        k = jnp.floor((2 * a / us + b) * u + c)
        reject = (k < 0) | (k > count)
        v = jnp.log(v * alpha / (a / (us * us) + b))
        upper = ((m + 0.5) * jnp.log((m + 1) / (r * (count - m + 1)))
                 + (count + 1) * jnp.log((count - m + 1) / (count - k + 1))
                 + (k + 0.5) * jnp.log(r * (count - k + 1) / (k + 1))
                 + _stirling_approx_tail(m)
                 + _stirling_approx_tail(count - m)
                 - _stirling_approx_tail(k)
                 - _stirling_approx_tail(count - k))
        accept = accept1 | (~reject & (v <= upper))
        return i + 1, lax.select(accept, k, k_out), accepted | accept, key

    def cond(carry):
        i, accepted = carry[0], carry[2]
        return jnp.any(~accepted) & (i < max_iters)

    k0 = lax.full(shape, -1, prob.dtype)
    carry = (0, k0, jnp.full(shape, False, bool), words)
    return lax.convert_element_type(lax.while_loop(cond, body, carry)[1], dt)


def _binomial(words, count, prob, shape, dt):
    if shape is None:
        shape = tuple(jnp.broadcast_shapes(np.shape(count), np.shape(prob)))
    else:
        _check_shape("binomial", shape, np.shape(count), np.shape(prob))
    (prob,) = promote_dtypes_inexact(prob)
    count = jnp.broadcast_to(lax.convert_element_type(count, prob.dtype), shape)
    prob = jnp.broadcast_to(prob, shape)
    p_lt_half = prob < 0.5
    q = lax.select(p_lt_half, prob, 1.0 - prob)
    count_nan_or_neg = _isnan(count) | (count < 0.0)
    count_inf = jnp.isinf(count)
    q_is_nan = _isnan(q)
    q_l_0 = q < 0.0
    q = lax.select(q_is_nan | q_l_0, lax.full_like(q, 0.01), q)
    use_inversion = count_nan_or_neg | (count * q <= 10.0)
    # As NumPy, a fractional count is rounded down.
    count = jnp.floor(count)
    count_inv = lax.select(use_inversion, count, lax.full_like(count, 0.0))
    count_btrs = lax.select(use_inversion, lax.full_like(count, 1e4), count)
    q_btrs = lax.select(use_inversion, lax.full_like(q, 0.5), q)
    max_iters = dt.type(np.finfo(dt).max)
    samples = lax.select(use_inversion,
                         _binomial_inversion(words, count_inv, q, shape, dt, max_iters),
                         _btrs(words, count_btrs, q_btrs, shape, dt, max_iters))
    # NaN for a NaN or negative probability or count; inf for an infinite count.
    invalid = q_l_0 | q_is_nan | count_nan_or_neg
    samples = lax.select(invalid, jnp.full_like(samples, np.nan, dt), samples)
    samples = lax.select(count_inf & ~invalid, jnp.full_like(samples, np.inf, dt), samples)
    return lax.select(p_lt_half | count_nan_or_neg | q_is_nan | count_inf, samples,
                      lax.convert_element_type(count, dt) - samples)


def binomial(key, n, p, shape=None, dtype=None):
    """Binomial(n, p) counts as floats (a fractional `n` is rounded down)."""
    words, _ = _single_key("binomial", key)
    check_arraylike("binomial", n, p)
    dt = _float_dtype("binomial", dtype)
    if shape is not None:
        shape = _shape("binomial", shape)
    return _binomial(words, jnp.asarray(n), jnp.asarray(p), shape, dt)


# --- multinomial ---------------------------------------------------------------------------------

def multinomial(key, n, p, *, shape=None, dtype=None, unroll=1):
    """Counts of `n` draws among the categories of the last axis of `p` (shape: the full
    result shape, categories last)."""
    words, _ = _single_key("multinomial", key)
    check_arraylike("multinomial", n, p)
    n, p = promote_dtypes_inexact(n, p)
    shape = p.shape if shape is None else _shape("multinomial", shape)
    n = jnp.broadcast_to(n, shape[:-1])
    p = jnp.broadcast_to(p, shape)

    def step(remainder, ratio_key):
        ratio, sub = ratio_key
        count = _binomial(sub, remainder, jnp.clip(ratio, 0, 1), None, remainder.dtype)
        return remainder - count, count

    p = jnp.moveaxis(p, -1, 0)
    # Each category's share of what the categories from it on leave: a binomial of the rest.
    remaining = lax.cumsum(p, 0, reverse=True)
    ratios = p / jnp.where(remaining == 0, 1, remaining)
    keys = _split(words, (ratios.shape[0],))
    _, counts = lax.scan(step, n, (ratios, keys), unroll=unroll)
    dt = dtypes.canonicalize_dtype(dtypes.default_float_dtype() if dtype is None else dtype)
    return lax.convert_element_type(jnp.moveaxis(counts, 0, -1), dt)


# --- geometric -----------------------------------------------------------------------------------

def _geometric(words, p, shape, dt):
    check_arraylike("geometric", p)
    (p,) = promote_dtypes_inexact(p)
    u = _unit(words, shape, p.dtype)
    # u = 0 would give log 0; JAX maps it to 1 (the sample 1), leaving the others unchanged.
    u = jnp.where(u == 0, 1, u)
    log_one_minus_p = jnp.broadcast_to(lax.log1p(-p), shape)
    g = lax.floor(lax.div(lax.log(u), log_one_minus_p)) + 1
    return lax.convert_element_type(g, dt)


_geometric_jit = jit(_geometric, static_argnums=(2, 3))


def geometric(key, p, shape=None, dtype=None):
    """Geometric(p) integers >= 1: the number of trials until the first success."""
    words, _ = _single_key("geometric", key)
    dt = _int_dtype("geometric", dtype)
    shape = _check_broadcast_shapes("geometric", shape, p)
    return _geometric_jit(words, p, shape, dt)
