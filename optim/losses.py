"""Losses, elementwise or per example (no reduction over the batch: take the mean yourself)."""
from __future__ import annotations

import corejax as jax
import corejax.numpy as jnp
from corejax import lax

__all__ = ["squared_error", "l2_loss", "huber_loss", "softmax_cross_entropy",
           "softmax_cross_entropy_with_integer_labels", "sigmoid_binary_cross_entropy",
           "cosine_similarity", "cosine_distance"]


def _check_float(name: str, **arrays) -> None:
    for arg, x in arrays.items():
        if not jnp.issubdtype(jnp.asarray(x).dtype, jnp.floating):
            raise TypeError(f"{name}: {arg} must be a floating-point array, got dtype "
                            f"{jnp.asarray(x).dtype}.")


def _errors(name: str, predictions, targets):
    _check_float(name, predictions=predictions)
    if targets is None:
        return predictions
    if jnp.shape(predictions) != jnp.shape(targets):
        raise ValueError(f"{name}: predictions of shape {jnp.shape(predictions)} and targets of "
                         f"shape {jnp.shape(targets)} differ; broadcast them explicitly.")
    return predictions - targets


def squared_error(predictions, targets=None):
    """`(predictions - targets) ** 2`, elementwise (targets default to zeros)."""
    return jnp.square(_errors("squared_error", predictions, targets))


def l2_loss(predictions, targets=None):
    """Half the squared error, elementwise."""
    return 0.5 * jnp.square(_errors("l2_loss", predictions, targets))


def huber_loss(predictions, targets=None, delta=1.0):
    """Quadratic for errors up to `delta`, linear beyond, elementwise."""
    abs_errors = jnp.abs(_errors("huber_loss", predictions, targets))
    quadratic = jnp.minimum(abs_errors, delta)
    return 0.5 * jnp.square(quadratic) + delta * (abs_errors - quadratic)


def _log_softmax(logits, axis, where):
    if where is None:
        return jax.nn.log_softmax(logits, axis=axis)
    # jnp.max(..., where=, initial=) is refused by corejax today, so mask by hand.
    top = lax.stop_gradient(jnp.max(jnp.where(where, logits, -jnp.inf), axis=axis,
                                    keepdims=True))
    # Left-out classes become -inf before exp, so a huge excluded logit can not overflow.
    shifted = jnp.where(where, logits - top, -jnp.inf)
    total = jnp.sum(jnp.exp(shifted), axis=axis, keepdims=True)
    return shifted - jnp.log(total)


def softmax_cross_entropy(logits, labels, axis=-1, where=None):
    """`-sum(labels * log_softmax(logits))` over `axis`, with `labels` a distribution;
    `where` (bool, like logits) leaves classes out. Zero-probability classes contribute 0 even
    where the logit is -inf."""
    _check_float("softmax_cross_entropy", logits=logits)
    log_probs = _log_softmax(logits, axis, where)
    terms = labels * jnp.where(labels == 0, 0.0, log_probs)
    return -jnp.sum(terms, axis=axis, where=where)


def softmax_cross_entropy_with_integer_labels(logits, labels, axis=-1, where=None):
    """Cross entropy against integer class labels (shape: logits without `axis`)."""
    _check_float("softmax_cross_entropy_with_integer_labels", logits=logits)
    labels = jnp.asarray(labels)
    if not jnp.issubdtype(labels.dtype, jnp.integer):
        raise TypeError("softmax_cross_entropy_with_integer_labels: labels must be integers, "
                        f"got dtype {labels.dtype}; for probability labels use "
                        "softmax_cross_entropy.")
    logits = jnp.asarray(logits)
    axis = axis % logits.ndim
    if labels.shape != logits.shape[:axis] + logits.shape[axis + 1:]:
        raise TypeError(f"softmax_cross_entropy_with_integer_labels: labels of shape "
                        f"{labels.shape} do not match logits of shape {logits.shape} without "
                        f"axis {axis}.")
    log_probs = _log_softmax(logits, axis, where)
    classes = lax.broadcasted_iota(labels.dtype, logits.shape, axis)
    picked = jnp.expand_dims(labels, axis) == classes
    return -jnp.sum(jnp.where(picked, log_probs, 0.0), axis=axis)


def sigmoid_binary_cross_entropy(logits, labels):
    """Elementwise binary cross entropy of `sigmoid(logits)` against labels in [0, 1]."""
    _check_float("sigmoid_binary_cross_entropy", logits=logits)
    log_p = jax.nn.log_sigmoid(logits)
    log_not_p = jax.nn.log_sigmoid(-logits)
    return -labels * log_p - (1.0 - labels) * log_not_p


def cosine_similarity(predictions, targets, epsilon=0.0):
    """Cosine of the angle between `predictions` and `targets` along the last axis; norms
    are floored at `epsilon`."""
    _check_float("cosine_similarity", predictions=predictions, targets=targets)

    def unit(x):
        norm = jnp.sqrt(jnp.maximum(jnp.sum(jnp.square(x), axis=-1, keepdims=True),
                                    epsilon * epsilon))
        return x / norm
    return jnp.sum(unit(predictions) * unit(targets), axis=-1)


def cosine_distance(predictions, targets, epsilon=0.0):
    """`1 - cosine_similarity`."""
    return 1.0 - cosine_similarity(predictions, targets, epsilon)
