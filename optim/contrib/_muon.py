"""Muon (Jordan et al., 2024): momentum whose matrix-shaped updates are orthogonalized by a
Newton-Schulz iteration; other parameters go to AdamW."""
from __future__ import annotations

import math
from typing import Any, NamedTuple, Sequence, Union

import corejax as jax
import corejax.numpy as jnp
from corejax import lax

from optim import tree_utils as tu
from optim.alias import adamw
from optim.base import EmptyState, GradientTransformation, safe_int32_increment, zero_count
from optim.combine import chain, partition
from optim.transform import add_decayed_weights, scale_by_learning_rate
from optim.wrappers import MaskedNode

__all__ = ["muon", "scale_by_muon", "MuonState", "MuonDimensionNumbers"]

_map = jax.tree_util.tree_map
_PRECONDITIONINGS = ("frobenius", "spectral", "aol", "schatten")
_DEFAULT_NS_COEFFS = (3.4445, -4.775, 2.0315)
# Per-step coefficients of the "dion" preset (Ahn et al., 2025), as Optax has them.
_DION_NS_COEFFS = ((4.0848, -6.8946, 2.927), (3.9505, -6.3029, 2.6377),
                   (3.7418, -5.5913, 2.3037), (2.8769, -3.1427, 1.2046),
                   (2.8366, -3.0525, 1.2012))
_NS_PRESETS = {"standard": _DEFAULT_NS_COEFFS, "dion": _DION_NS_COEFFS}


class MuonDimensionNumbers(NamedTuple):
    """Which axes of a weight are its input (reduction) and output axes; the others are
    batch axes, each slice orthogonalized on its own."""
    reduction_axis: Union[Sequence[int], int] = 0
    output_axis: Union[Sequence[int], int] = 1


def _is_dim_nums(x) -> bool:
    return isinstance(x, MuonDimensionNumbers)


def _axes(x, dim_nums):
    def norm(axes):
        axes = (axes,) if isinstance(axes, int) else tuple(axes)
        return tuple(a % x.ndim for a in axes)
    return norm(dim_nums.reduction_axis), norm(dim_nums.output_axis)


def _reshapers(x, dim_nums):
    if x.ndim < 2:
        raise ValueError(f"Muon optimized parameters must have rank >= 2, got x.ndim={x.ndim}; "
                         "route vectors to AdamW (muon does so for non-matrices by default).")
    reduction, output = _axes(x, dim_nums)
    if set(reduction) & set(output):
        raise ValueError(f"Muon: reduction axes {reduction} and output axes {output} must be "
                         f"disjoint (dimension numbers {dim_nums}, shape {x.shape}).")
    batch = tuple(sorted(set(range(x.ndim)) - set(reduction) - set(output)))
    order = batch + reduction + output
    inverse = tuple(sorted(range(x.ndim), key=lambda i: order[i]))
    sizes = [tuple(x.shape[a] for a in axes) for axes in (batch, reduction, output)]
    flat = tuple(math.prod(s) for s in sizes)
    unflat = sizes[0] + sizes[1] + sizes[2]
    return (lambda y: jnp.reshape(jnp.transpose(y, order), flat),
            lambda y: jnp.transpose(jnp.reshape(y, unflat), inverse))


def _fans(x, dim_nums):
    reduction, output = _axes(x, dim_nums)
    return math.prod(x.shape[a] for a in reduction), math.prod(x.shape[a] for a in output)


def _ns_step(x, coeffs):
    a = x @ jnp.conj(x.T)
    b = coeffs[1] * a + coeffs[2] * a @ a
    return coeffs[0] * x + b @ x


def _first_ns_step(x, coeffs, preconditioning, eps=1e-8):
    """AOL / Schatten rescale inside the first iteration (reusing its Gram matrix)."""
    a = x @ jnp.conj(x.T)
    if preconditioning == "aol":
        s = jnp.expand_dims(lax.rsqrt(jnp.clip(jnp.sum(jnp.abs(a), axis=-1), min=eps)), -1)
        x, a = x * s, a * s * jnp.swapaxes(s, -1, -2)
    else:
        s = lax.rsqrt(jnp.clip(jnp.linalg.norm(a, ord="fro", axis=(-2, -1)), min=eps))
        x, a = x * s, a * s ** 2
    b = coeffs[1] * a + coeffs[2] * a @ a
    return coeffs[0] * x + b @ x


def _orthogonalize(x, ns_coeffs, ns_steps, preconditioning, eps, dim_nums):
    if x.ndim != 2 and not _is_dim_nums(dim_nums):
        raise ValueError(f"Muon: input must have shape (m, n) or dimension numbers must be "
                         f"given, got shape={x.shape} and dimension_numbers={dim_nums!r}.")
    if x.ndim == 2:
        dim_nums = MuonDimensionNumbers(0, 1)
    if preconditioning not in _PRECONDITIONINGS:
        raise ValueError(f"Unknown preconditioning {preconditioning!r}; use one of "
                         f"{_PRECONDITIONINGS}.")

    def one(m):
        transposed = m.shape[0] > m.shape[1]
        if transposed:
            m = m.T
        if preconditioning == "frobenius":
            m = m / (jnp.linalg.norm(m, ord="fro") + eps)
        elif preconditioning == "spectral":
            m = m / (jnp.linalg.norm(m, ord=2) + eps)
        coeffs = ns_coeffs.astype(m.dtype)
        rows = [coeffs] * ns_steps if coeffs.ndim == 1 else [coeffs[i]
                                                             for i in range(coeffs.shape[0])]
        for i, c in enumerate(rows):
            if i == 0 and preconditioning in ("aol", "schatten"):
                m = _first_ns_step(m, c, preconditioning)
            else:
                m = _ns_step(m, c)
        return m.T if transposed else m
    flatten, unflatten = _reshapers(x, dim_nums)
    return unflatten(jax.vmap(one)(flatten(x)))


class MuonState(NamedTuple):
    count: Any
    mu: Any
    ns_coeffs: Any


def scale_by_muon(ns_coeffs=_DEFAULT_NS_COEFFS, ns_steps: int = 5, beta=0.95, eps=1e-8,
                  mu_dtype=None, *, nesterov: bool = True, adaptive: bool = False,
                  preconditioning: str = "frobenius", weight_dimension_numbers=None
                  ) -> GradientTransformation:
    """Muon's rescaling: (Nesterov) bias-corrected momentum, orthogonalized by `ns_steps`
    Newton-Schulz iterations with coefficients `ns_coeffs` ((3,) or one row per step)."""
    def init(params):
        coeffs = jnp.asarray(ns_coeffs)
        if coeffs.ndim > 2 or coeffs.shape[-1] != 3:
            raise ValueError(f"ns_coeffs must have shape (3,) or (n, 3), got {coeffs.shape}.")
        if coeffs.ndim == 2:
            if coeffs.shape[0] > ns_steps:
                raise ValueError(f"Not enough coeffs to perform {ns_steps} steps")
            coeffs = coeffs[-ns_steps:]
        return MuonState(zero_count(), tu.tree_zeros_like(params, mu_dtype), coeffs)

    def update(updates, state, params=None):
        del params
        dim_nums = (weight_dimension_numbers(updates) if callable(weight_dimension_numbers)
                    else weight_dimension_numbers)
        mu = tu.tree_update_moment(updates, state.mu, beta, 1)
        count_inc = safe_int32_increment(state.count)
        if nesterov:
            mu_hat = _map(lambda m, g: beta * m + (1 - beta) * g,
                          tu.tree_bias_correction(mu, beta, safe_int32_increment(count_inc)),
                          tu.tree_bias_correction(updates, beta, count_inc))
        else:
            mu_hat = tu.tree_bias_correction(mu, beta, count_inc)
        if dim_nums is None:
            dim_nums = _map(lambda _: None, mu_hat)
        new_updates = _map(lambda d, x: _orthogonalize(x, state.ns_coeffs, ns_steps,
                                                       preconditioning, eps, d),
                           dim_nums, mu_hat, is_leaf=lambda v: v is None or _is_dim_nums(v))
        if adaptive:
            new_updates = _map(lambda m, o: jnp.sum(jnp.conj(m) * o) * o, mu_hat, new_updates)
        if mu_dtype is not None:
            mu = tu.tree_cast(mu, mu_dtype)
        return new_updates, MuonState(count_inc, mu, state.ns_coeffs)
    return GradientTransformation(init, update)


def _scale_by_shape(weight_dimension_numbers, consistent_rms=None) -> GradientTransformation:
    """Muon's width-transfer scale sqrt(max(1, fan_out / fan_in)), or with `consistent_rms`
    sqrt(max(fan_in, fan_out)) * consistent_rms."""
    def scale_one(d, u):
        fan_in, fan_out = _fans(u, d)
        if consistent_rms is not None:
            return jnp.sqrt(jnp.maximum(fan_in, fan_out)) * consistent_rms * u
        return jnp.sqrt(jnp.maximum(1, fan_out / fan_in)) * u

    def init(params):
        del params
        return EmptyState()

    def update(updates, state, params=None):
        del params
        dim_nums = (weight_dimension_numbers(updates) if callable(weight_dimension_numbers)
                    else weight_dimension_numbers)
        return _map(scale_one, dim_nums, updates, is_leaf=_is_dim_nums), state
    return GradientTransformation(init, update)


def muon(learning_rate, ns_coeffs=_DEFAULT_NS_COEFFS, ns_steps: int = 5, beta=0.95, eps=1e-8,
         weight_decay=0.0, weight_decay_mask=None, mu_dtype=None, *, nesterov: bool = True,
         adaptive: bool = False, preconditioning: str = "frobenius", adam_b1=0.9,
         adam_b2=0.999, adam_eps_root=0.0, adam_weight_decay=0.0, adam_learning_rate=None,
         muon_weight_dimension_numbers=None, consistent_rms=None) -> GradientTransformation:
    """Muon on the 2-D parameters (or those given dimension numbers), AdamW on the rest.
    `ns_coeffs` may be a preset name: 'standard' or 'dion'."""
    if adam_learning_rate is None:
        adam_learning_rate = learning_rate
    if isinstance(ns_coeffs, str):
        if ns_coeffs not in _NS_PRESETS:
            raise ValueError(f"Unknown ns_coeff preset string: {ns_coeffs!r}; use one of "
                             f"{sorted(_NS_PRESETS)}.")
        ns_coeffs = _NS_PRESETS[ns_coeffs]
    dim_spec = muon_weight_dimension_numbers
    if dim_spec is None:
        dim_spec = MuonDimensionNumbers()

        def param_labels(params):
            return _map(lambda x: "muon" if x.ndim == 2 else "adam", params)
    else:
        def param_labels(params):
            dims = dim_spec(params) if callable(dim_spec) else dim_spec
            return _map(lambda d, sub: _map(lambda _: "muon" if d is not None else "adam", sub),
                        dims, params, is_leaf=lambda v: v is None or _is_dim_nums(v))

    def muon_dim_nums(params):
        dims = dim_spec(params) if callable(dim_spec) else dim_spec
        mask = _map(lambda label: label == "muon", param_labels(params))
        return _map(lambda d, sub: _map(lambda m: d if m else MaskedNode(), sub), dims, mask,
                    is_leaf=lambda v: v is None or _is_dim_nums(v) or isinstance(v, MaskedNode))

    return partition(
        {"muon": chain(scale_by_muon(ns_coeffs=ns_coeffs, ns_steps=ns_steps, beta=beta, eps=eps,
                                     mu_dtype=mu_dtype, nesterov=nesterov, adaptive=adaptive,
                                     preconditioning=preconditioning,
                                     weight_dimension_numbers=muon_dim_nums),
                       _scale_by_shape(muon_dim_nums, consistent_rms),
                       add_decayed_weights(weight_decay, weight_decay_mask),
                       scale_by_learning_rate(learning_rate)),
         "adam": adamw(learning_rate=adam_learning_rate, b1=adam_b1, b2=adam_b2, eps=eps,
                       eps_root=adam_eps_root, weight_decay=adam_weight_decay,
                       mu_dtype=mu_dtype, nesterov=nesterov)},
        param_labels=param_labels)
