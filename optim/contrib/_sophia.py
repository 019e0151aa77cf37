"""Sophia (Liu et al., 2023): clipped momentum preconditioned by an occasionally refreshed
estimate of the Hessian's diagonal (Hutchinson's estimator by default)."""
from __future__ import annotations

from typing import Any, NamedTuple, Optional

import corejax as jax
import corejax.numpy as jnp
from corejax import lax

from optim import tree_utils as tu
from optim.base import (GradientTransformationExtraArgs, safe_int32_increment,
                        with_extra_args_support, zero_count)
from optim.combine import chain
from optim.contrib._common import float_dtype
from optim.transform import add_decayed_weights, scale_by_learning_rate

__all__ = ["hutchinson_estimator_diag_hessian", "HutchinsonState", "sophia", "scale_by_sophia",
           "SophiaState"]

_map = jax.tree_util.tree_map


class HutchinsonState(NamedTuple):
    key: Any


def hutchinson_estimator_diag_hessian(random_seed=None) -> GradientTransformationExtraArgs:
    """A transform whose output is Hutchinson's estimate v * (H v) of the diagonal of the
    Hessian of `obj_fn` (an extra argument) at the params, v random signs."""
    def init(params):
        del params
        return HutchinsonState(random_seed if random_seed is not None
                               else jax.random.PRNGKey(0))

    def update(updates, state, params=None, obj_fn=None, **extra_args):
        del updates, extra_args
        if params is None:
            raise ValueError("hutchinson_estimator_diag_hessian needs the params: "
                             "update(updates, state, params, obj_fn=loss).")
        if obj_fn is None:
            raise ValueError("hutchinson_estimator_diag_hessian needs obj_fn=loss (params -> "
                             "scalar) as a keyword argument of update.")
        key, subkey = jax.random.split(state.key)
        leaves, treedef = jax.tree_util.tree_flatten(params)
        keys = jax.random.split(subkey, len(leaves))
        dtype = float_dtype(params, "lowest")
        signs = jax.tree_util.tree_unflatten(treedef, [
            jax.random.rademacher(k, jnp.shape(x), dtype=jnp.float32).astype(dtype)
            for k, x in zip(keys, leaves)])
        hvp = jax.jvp(jax.grad(obj_fn), (params,), (signs,))[1]
        return _map(lambda h, r: h * r, hvp, signs), HutchinsonState(key)
    return GradientTransformationExtraArgs(init, update)


class SophiaState(NamedTuple):
    count: Any
    mu: Any
    nu: Any
    hessian_fn_state: Any


def scale_by_sophia(b1=0.965, b2=0.99, eps=1e-8, gamma=0.01, clip_threshold=1.0,
                    update_interval=10, hessian_diagonal_fn=None, mu_dtype=None,
                    verbose: bool = False, print_win_rate_every_n_steps=0
                    ) -> GradientTransformationExtraArgs:
    """Sophia's rescaling: clip(m_hat / max(gamma * h, eps), +-clip_threshold), h the EMA (b2)
    of `hessian_diagonal_fn`'s output, refreshed every `update_interval` steps; update's extra
    arguments (e.g. obj_fn) go to `hessian_diagonal_fn`. With `verbose`, the share of
    coordinates not clipped is printed every `print_win_rate_every_n_steps` steps."""
    if hessian_diagonal_fn is None:
        hessian_diagonal_fn = hutchinson_estimator_diag_hessian()
    hessian_diagonal_fn = with_extra_args_support(hessian_diagonal_fn)

    def init(params):
        return SophiaState(zero_count(), tu.tree_zeros_like(params, mu_dtype),
                           tu.tree_zeros_like(params), hessian_diagonal_fn.init(params))

    def update(updates, state, params=None, **hess_fn_kwargs):
        if params is None:
            raise ValueError("sophia needs the params: update(updates, state, params, ...).")
        count_inc = safe_int32_increment(state.count)
        mu = tu.tree_update_moment(updates, state.mu, b1, 1)
        mu_hat = tu.tree_bias_correction(mu, b1, count_inc)
        new_updates = _map(lambda m, h: m / jnp.maximum(gamma * h, eps), mu_hat, state.nu)
        if clip_threshold is not None:
            if verbose:
                kept = sum(jnp.sum(jnp.abs(u) < clip_threshold)
                           for u in jax.tree_util.tree_leaves(new_updates))
                win_rate = kept / sum(jnp.size(u) for u in jax.tree_util.tree_leaves(new_updates))
                lax.cond(count_inc % print_win_rate_every_n_steps == 0,
                         lambda: jax.debug.print("Sophia optimizer win rate: {}", win_rate),
                         lambda: None)
            new_updates = _map(lambda u: jnp.clip(u, -clip_threshold, clip_threshold),
                               new_updates)

        def refresh():
            diag, hess_state = hessian_diagonal_fn.update(updates, state.hessian_fn_state,
                                                          params=params, **hess_fn_kwargs)
            return hess_state, tu.tree_update_moment(diag, state.nu, b2, 1)
        hess_state, nu = lax.cond(state.count % update_interval == 0, refresh,
                                  lambda: (state.hessian_fn_state, state.nu))
        if mu_dtype is not None:
            mu = tu.tree_cast(mu, mu_dtype)
        return new_updates, SophiaState(count_inc, mu, nu, hess_state)
    return GradientTransformationExtraArgs(init, update)


def sophia(learning_rate, b1=0.965, b2=0.99, eps=1e-8, weight_decay=1e-4,
           weight_decay_mask=None, gamma=0.01, clip_threshold: Optional[float] = 1.0,
           update_interval=10, hessian_diagonal_fn=None, mu_dtype=None, verbose: bool = False,
           print_win_rate_every_n_steps=0) -> GradientTransformationExtraArgs:
    """Sophia with decoupled weight decay; call update(..., obj_fn=loss) for the default
    Hutchinson estimator."""
    return chain(scale_by_sophia(b1=b1, b2=b2, eps=eps, gamma=gamma,
                                 clip_threshold=clip_threshold, update_interval=update_interval,
                                 hessian_diagonal_fn=hessian_diagonal_fn, mu_dtype=mu_dtype,
                                 verbose=verbose,
                                 print_win_rate_every_n_steps=print_win_rate_every_n_steps),
                 add_decayed_weights(weight_decay, mask=weight_decay_mask),
                 scale_by_learning_rate(learning_rate))
