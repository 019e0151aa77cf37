"""Regression losses, elementwise (squared error, l2, Huber, log-cosh) or along an axis
(cosine similarity / distance)."""
from __future__ import annotations

import corejax.numpy as jnp

__all__ = ["squared_error", "l2_loss", "huber_loss", "log_cosh", "cosine_similarity",
           "cosine_distance"]


def check_floating(name: str, **arrays) -> None:
    for arg, x in arrays.items():
        dtype = jnp.result_type(x)
        if not jnp.issubdtype(dtype, jnp.floating):
            raise TypeError(f"{name}: {arg} must be a floating-point array (a subdtype of "
                            f"floating), got dtype {dtype} instead.")


def check_shapes_equal(name: str, a, b) -> None:
    if jnp.shape(a) != jnp.shape(b):
        raise ValueError(f"{name}: shape mismatch: got {jnp.shape(a)} and {jnp.shape(b)}; "
                         "broadcast them explicitly.")


def _errors(predictions, targets):
    return predictions if targets is None else predictions - targets


def squared_error(predictions, targets=None):
    """`(predictions - targets) ** 2`, elementwise (targets default to zeros; shapes must
    agree)."""
    check_floating("squared_error", predictions=predictions)
    if targets is not None:
        check_shapes_equal("squared_error", predictions, targets)
    return _errors(predictions, targets) ** 2


def l2_loss(predictions, targets=None):
    """Half the squared error, elementwise."""
    predictions = jnp.asarray(predictions)
    check_floating("l2_loss", predictions=predictions)
    if targets is not None:
        check_shapes_equal("l2_loss", predictions, targets)
    return 0.5 * _errors(predictions, targets) ** 2


def huber_loss(predictions, targets=None, *, delta=1.0):
    """Quadratic for errors up to `delta`, linear beyond, elementwise."""
    check_floating("huber_loss", predictions=predictions)
    abs_errors = jnp.abs(_errors(predictions, targets))
    quadratic = jnp.minimum(abs_errors, delta)
    return 0.5 * quadratic ** 2 + delta * (abs_errors - quadratic)


def log_cosh(predictions, targets=None):
    """`log(cosh(predictions - targets))`, elementwise, computed without overflow."""
    check_floating("log_cosh", predictions=predictions)
    errors = _errors(predictions, targets)
    return jnp.logaddexp(errors, -errors) - jnp.log(2.0).astype(errors.dtype)


def cosine_similarity(predictions, targets, *, epsilon=0.0, axis=-1, where=None):
    """Cosine of the angle between `predictions` and `targets` along `axis` (entries where
    `where` is False left out); squared norms are floored at `epsilon`."""
    check_floating("cosine_similarity", predictions=predictions, targets=targets)
    a_sq = jnp.sum(jnp.square(predictions), axis=axis, where=where, keepdims=True)
    b_sq = jnp.sum(jnp.square(targets), axis=axis, where=where, keepdims=True)
    a_unit = predictions / jnp.sqrt(jnp.clip(a_sq, epsilon))
    b_unit = targets / jnp.sqrt(jnp.clip(b_sq, epsilon))
    return jnp.sum(a_unit * b_unit, axis=axis, where=where)


def cosine_distance(predictions, targets, *, epsilon=0.0, axis=-1, where=None):
    """`1 - cosine_similarity`."""
    check_floating("cosine_distance", predictions=predictions, targets=targets)
    return 1.0 - cosine_similarity(predictions, targets, epsilon=epsilon, axis=axis,
                                   where=where)
