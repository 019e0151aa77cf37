"""Classification losses: logistic / softmax cross entropies, hinge, perceptron, sparsemax,
focal, poly-1 and the Kullback-Leibler divergences. Per example: no reduction over the batch."""
from __future__ import annotations

import operator
import warnings

import corejax as jax
import corejax.numpy as jnp
from corejax import lax
from optim.losses._regression import check_floating, check_shapes_equal
from optim.projections import projection_simplex

__all__ = ["sigmoid_binary_cross_entropy", "hinge_loss", "perceptron_loss", "sparsemax_loss",
           "safe_softmax_cross_entropy", "softmax_cross_entropy",
           "softmax_cross_entropy_with_integer_labels", "multiclass_hinge_loss",
           "multiclass_perceptron_loss", "poly_loss_cross_entropy", "kl_divergence",
           "kl_divergence_with_log_targets", "generalized_kl_divergence",
           "convex_kl_divergence", "sigmoid_focal_loss", "multiclass_sparsemax_loss"]


def _check_integer(name, labels):
    dtype = jnp.result_type(labels)
    if not jnp.issubdtype(dtype, jnp.integer):
        raise TypeError(f"{name}: labels must be integers (a subdtype of integer), got dtype "
                        f"{dtype}; for probability labels use softmax_cross_entropy.")


def sigmoid_binary_cross_entropy(logits, labels):
    """Elementwise cross entropy of `sigmoid(logits)` against labels in [0, 1]."""
    check_floating("sigmoid_binary_cross_entropy", logits=logits)
    labels = jnp.astype(labels, jnp.result_type(logits))
    return -labels * jax.nn.log_sigmoid(logits) - (1.0 - labels) * jax.nn.log_sigmoid(-logits)


def hinge_loss(predictor_outputs, targets):
    """`max(0, 1 - predictor_outputs * targets)`, targets in {-1, 1}."""
    return jnp.maximum(0, 1 - predictor_outputs * targets)


def perceptron_loss(predictor_outputs, targets):
    """`max(0, -predictor_outputs * targets)`, targets in {-1, 1}."""
    check_shapes_equal("perceptron_loss", predictor_outputs, targets)
    return jnp.maximum(0, -predictor_outputs * targets)


def sparsemax_loss(logits, labels):
    """Binary sparsemax loss: `sparse_plus(-logits)` where the label is 1, else
    `sparse_plus(logits)`."""
    return jax.nn.sparse_plus(jnp.where(labels, -logits, logits))


@jax.custom_jvp
def _weighted_log_softmax(x, weights):
    log_p = jax.nn.log_softmax(x, axis=-1)
    return jnp.where(weights != 0.0, weights * log_p, jnp.zeros_like(log_p))


@_weighted_log_softmax.defjvp
def _weighted_log_softmax_jvp(primals, tangents):
    (x, weights), (dx, dweights) = primals, tangents
    log_p = jax.nn.log_softmax(x, axis=-1)
    out = jnp.where(weights != 0.0, weights * log_p, jnp.zeros_like(log_p))
    expected_dx = jnp.sum(dx * jax.nn.softmax(x, axis=-1), axis=-1, keepdims=True)
    return out, weights * dx - weights * expected_dx + dweights * log_p


def safe_softmax_cross_entropy(logits, labels):
    """Softmax cross entropy over the last axis that stays finite (value and gradient) where
    a logit is -inf and its label 0."""
    check_floating("safe_softmax_cross_entropy", logits=logits)
    return -jnp.sum(_weighted_log_softmax(logits, labels), axis=-1)


def _expand_where(where, logits, axis):
    if where is not None and jnp.ndim(where) != jnp.ndim(logits):
        where = jnp.expand_dims(where, axis)
    return where


def _masked_log_softmax(logits, axis, where):
    if where is None:
        return jax.nn.log_softmax(logits, axis=axis)
    top = lax.stop_gradient(jnp.max(jnp.where(where, logits, -jnp.inf), axis=axis,
                                    keepdims=True))
    # Left-out classes become -inf before exp, so a huge excluded logit can not overflow.
    shifted = jnp.where(where, logits - top, -jnp.inf)
    return shifted - jnp.log(jnp.sum(jnp.exp(shifted), axis=axis, keepdims=True))


def softmax_cross_entropy(logits, labels, axis=-1, where=None):
    """`-sum(labels * log_softmax(logits))` over `axis` (an int or tuple), with `labels` a
    distribution; `where` (like logits, or without `axis`) leaves classes out. A class with
    label 0 contributes 0 even where its logit is -inf (Optax gives NaN there)."""
    check_floating("softmax_cross_entropy", logits=logits)
    where = _expand_where(where, logits, axis)
    log_probs = _masked_log_softmax(logits, axis, where)
    return -jnp.sum(labels * jnp.where(labels == 0, 0.0, log_probs), axis=axis, where=where)


def _canonical_axis(axis, ndim):
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    return axis % ndim


def softmax_cross_entropy_with_integer_labels(logits, labels, axis=-1, where=None):
    """Cross entropy against integer class labels (shape: logits without `axis`; a tuple
    `axis` flattens those axes into one class axis); `where` leaves classes out, and rows with
    no class left give 0."""
    name = "softmax_cross_entropy_with_integer_labels"
    check_floating(name, logits=logits)
    _check_integer(name, labels)
    logits, labels = jnp.asarray(logits), jnp.asarray(labels)
    where = _expand_where(where, logits, axis)
    if isinstance(axis, int):
        axis = _canonical_axis(axis, logits.ndim)
    elif isinstance(axis, tuple):
        class_axes = tuple(_canonical_axis(a, logits.ndim) for a in axis)
        batch_axes = tuple(a for a in range(logits.ndim) if a not in class_axes)
        order = batch_axes + class_axes
        logits = logits.transpose(order).reshape(
            tuple(logits.shape[a] for a in batch_axes) + (-1,))
        if where is not None:
            where = jnp.asarray(where).transpose(order).reshape(logits.shape)
        axis = len(batch_axes)
    else:
        raise ValueError(f"Keyword argument 'axis' must be of type 'int' or 'tuple[int, ...]' "
                         f"but actual type is {type(axis)}.")
    if labels.shape != logits.shape[:axis] + logits.shape[axis + 1:]:
        raise TypeError(f"{name}: labels of shape {labels.shape} do not match logits of shape "
                        f"{logits.shape} without axis {axis}.")
    picked = jnp.take_along_axis(logits, jnp.expand_dims(labels, axis), axis=axis)
    out = jax.nn.logsumexp(logits, axis=axis, where=where) - jnp.take(picked, 0, axis=axis)
    if where is not None:
        out = jnp.where(jnp.any(where, axis), out, 0.0)
    return out


def _dot_last(a, b):
    return jnp.sum(a * b, axis=-1)


def multiclass_hinge_loss(scores, labels):
    """`max_k(scores_k + 1 - [k == label]) - scores_label`."""
    one_hot = jax.nn.one_hot(labels, scores.shape[-1])
    return jnp.max(scores + 1.0 - one_hot, axis=-1) - _dot_last(scores, one_hot)


def multiclass_perceptron_loss(scores, labels):
    """`max_k scores_k - scores_label`."""
    one_hot = jax.nn.one_hot(labels, scores.shape[-1])
    return jnp.max(scores, axis=-1) - _dot_last(scores, one_hot)


def poly_loss_cross_entropy(logits, labels, *, epsilon=2.0, axis=-1, where=None):
    """Poly-1 loss: softmax cross entropy plus `epsilon * sum(labels * (1 - softmax))`."""
    check_floating("poly_loss_cross_entropy", logits=logits, labels=labels)
    p = jax.nn.softmax(logits, axis=axis, where=where)
    one_minus_pt = jnp.sum(labels * (1 - p), axis=axis, where=where)
    return softmax_cross_entropy(logits, labels, axis=axis, where=where) + epsilon * one_minus_pt


def kl_divergence(log_predictions, targets, axis=-1, where=None):
    """`sum(targets * (log(targets) - log_predictions))` over `axis` (0 log 0 = 0)."""
    check_floating("kl_divergence", log_predictions=log_predictions, targets=targets)
    terms = targets * (jnp.where(targets == 0, 0, jnp.log(targets)) - log_predictions)
    return jnp.sum(terms, axis=axis, where=where)


def kl_divergence_with_log_targets(log_predictions, log_targets, axis=-1, where=None):
    """KL divergence with the targets given as log-probabilities too."""
    check_floating("kl_divergence_with_log_targets", log_predictions=log_predictions,
                   log_targets=log_targets)
    terms = jnp.exp(log_targets) * (log_targets - log_predictions)
    return jnp.sum(terms, axis=axis, where=where)


def generalized_kl_divergence(log_predictions, targets, axis=-1, where=None):
    """KL divergence plus `sum(exp(log_predictions) - targets)`: convex in the predictions,
    for unnormalized distributions."""
    kl = kl_divergence(log_predictions, targets, axis=axis, where=where)
    return kl + jnp.sum(jnp.exp(log_predictions) - targets, axis=axis, where=where)


def convex_kl_divergence(log_predictions, targets, axis=-1, where=None):
    """Deprecated name of generalized_kl_divergence (warns, as Optax does)."""
    warnings.warn("convex_kl_divergence is deprecated; use generalized_kl_divergence "
                  "instead.", DeprecationWarning, stacklevel=2)
    return generalized_kl_divergence(log_predictions, targets, axis=axis, where=where)


def sigmoid_focal_loss(logits, labels, *, alpha=None, gamma=2.0):
    """Binary cross entropy weighted by `(1 - p_t) ** gamma` (and by `alpha` for positives,
    `1 - alpha` for negatives, when given)."""
    check_floating("sigmoid_focal_loss", logits=logits)
    labels = jnp.astype(labels, jnp.result_type(logits))
    ce = sigmoid_binary_cross_entropy(logits, labels)
    log_p, log_q = jax.nn.log_sigmoid(logits), jax.nn.log_sigmoid(-logits)
    log_one_minus_pt = jax.scipy.special.logsumexp(
        jnp.stack([log_p, log_q], axis=-1), axis=-1,
        b=jnp.stack([1 - labels, labels], axis=-1))
    loss = ce * jnp.exp(gamma * log_one_minus_pt)
    if alpha is None:
        return loss
    return (alpha * labels + (1.0 - alpha) * (1.0 - labels)) * loss


def _one_sparsemax_loss(scores, label):
    scores = jnp.asarray(scores)
    proba = projection_simplex(scores)
    centered = (scores - scores[label]).at[label].set(0.0)
    return jnp.dot(proba, jnp.where(proba, centered, 0.0)) + 0.5 * (1.0 - jnp.dot(proba, proba))


def multiclass_sparsemax_loss(scores, labels):
    """Sparsemax loss of each row of `scores` (batch, classes) against its integer label."""
    return jax.vmap(_one_sparsemax_loss)(scores, labels)
