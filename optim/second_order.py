"""optax.second_order (deprecated in Optax 0.2.8, as here): Hessian-vector products, the
Hessian's diagonal and the empirical Fisher diagonal of a loss `loss(params, inputs,
targets)`, with params flattened to one vector."""
from __future__ import annotations

import warnings

import corejax as jax
import corejax.numpy as jnp
from corejax import flatten_util

__all__ = ["hvp", "hessian_diag", "fisher_diag"]


def _deprecated(name):
    warnings.warn(f"optax.second_order.{name} is deprecated (Optax removes it in 0.2.9).",
                  DeprecationWarning, stacklevel=3)


def _flat(tree):
    return flatten_util.ravel_pytree(tree)[0]


def _hvp(loss, v, params, inputs, targets):
    _, unravel = flatten_util.ravel_pytree(params)
    return jax.jvp(jax.grad(lambda p: loss(p, inputs, targets)), [params], [unravel(v)])[1]


def hvp(loss, v, params, inputs, targets):
    """The Hessian of `loss` in the params times the flat vector `v` (a params-shaped tree)."""
    _deprecated("hvp")
    return _hvp(loss, v, params, inputs, targets)


def hessian_diag(loss, params, inputs, targets):
    """The diagonal of the Hessian of `loss` in the flattened params (one hvp per entry)."""
    _deprecated("hessian_diag")
    basis = jnp.eye(_flat(params).size)
    return jax.vmap(lambda v: jnp.vdot(v, _flat(_hvp(loss, v, params, inputs, targets))))(basis)


def fisher_diag(negative_log_likelihood, params, inputs, targets):
    """The squared gradient of `negative_log_likelihood` in the flattened params."""
    _deprecated("fisher_diag")
    return jnp.square(_flat(jax.grad(negative_log_likelihood)(params, inputs, targets)))
