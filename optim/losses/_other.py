"""Ranking, self-supervised (NT-Xent, triplet margin), segmentation (Dice) and Fenchel-Young
losses, and label smoothing."""
from __future__ import annotations

import corejax as jax
import corejax.numpy as jnp
from corejax import lax
from optim.losses._regression import check_floating, check_shapes_equal, cosine_similarity

__all__ = ["ranking_softmax_loss", "ntxent", "triplet_margin_loss", "smooth_labels",
           "make_fenchel_young_loss", "dice_loss", "multiclass_generalized_dice_loss",
           "binary_dice_loss"]


def _reduce_safely(loss, where, reduce_fn):
    out = reduce_fn(loss, where=where) if reduce_fn is not None else loss
    if reduce_fn is jnp.mean:
        # The mean over no valid list is 0, not NaN (a NaN already in the losses stays).
        no_nan_in = jnp.logical_not(jnp.any(jnp.isnan(loss)))
        out = jnp.where(jnp.isnan(out) & no_nan_in, 0.0, out)
    if reduce_fn is None and where is not None:
        out = jnp.where(where, out, 0.0)
    return out


def ranking_softmax_loss(logits, labels, *, where=None, weights=None, reduce_fn=jnp.mean):
    """Listwise softmax cross entropy of item scores `logits` (..., list) against relevance
    `labels`; `where` masks items, `weights` scales labels, `reduce_fn` (None: per list)
    reduces over lists."""
    check_floating("ranking_softmax_loss", logits=logits)
    labels = jnp.asarray(labels).astype(jnp.result_type(logits))
    if where is not None:
        labels = jnp.where(where, labels, jnp.zeros_like(labels))
        logits = jnp.where(where, logits, -jnp.ones_like(logits) * jnp.inf)
    if weights is not None:
        labels = labels * weights
    loss = -jnp.sum(labels * jax.nn.log_softmax(logits, axis=-1), axis=-1, where=where)
    if where is not None:
        where = jnp.any(where, axis=-1)
    return _reduce_safely(loss, where, reduce_fn)


def ntxent(embeddings, labels, temperature=0.07):
    """Normalized temperature-scaled cross entropy (SimCLR's contrastive loss) of a batch of
    embeddings (batch, dim); rows with equal `labels` are positive pairs. A scalar."""
    check_floating("ntxent", embeddings=embeddings)
    if jnp.shape(labels)[0] != jnp.shape(embeddings)[0]:
        raise ValueError(f"Labels and embeddings must have the same leading dimension, found "
                         f"{jnp.shape(labels)[0]} for labels and {jnp.shape(embeddings)[0]} "
                         "for embeddings.")
    eps = jnp.finfo(jnp.result_type(embeddings)).eps
    sims = cosine_similarity(embeddings[None, :, :], embeddings[:, None, :],
                             epsilon=eps) / temperature
    same = jnp.expand_dims(labels, 1) == jnp.expand_dims(labels, 0)
    negatives = jnp.logical_not(same)
    positives = same & jnp.logical_not(jnp.eye(same.shape[0], dtype=bool))
    neg_sims = jnp.where(negatives, sims, -jnp.inf)
    pos_sims = jnp.where(positives, sims, -jnp.inf)
    top = lax.stop_gradient(jnp.max(jnp.concatenate((neg_sims, pos_sims), axis=-1), axis=1,
                                    keepdims=True))
    neg_shift, pos_shift = neg_sims - top, pos_sims - top
    denom = jnp.sum(jnp.exp(neg_shift), axis=1, keepdims=True) + jnp.exp(pos_shift)
    log_ratio = pos_shift - jnp.log(denom)
    return -jnp.where(positives, log_ratio, 0.0).sum() / positives.sum()


def triplet_margin_loss(anchors, positives, negatives, axis=-1, norm_degree=2, margin=1.0,
                        eps=1e-6):
    """`max(d(a, p) - d(a, n) + margin, 0)` with `d` the `norm_degree`-norm along `axis`
    (`eps` added inside the root)."""
    check_floating("triplet_margin_loss", anchors=anchors, positives=positives,
                   negatives=negatives)

    def distance(other):
        return jnp.power(jnp.power(anchors - other, norm_degree).sum(axis) + eps,
                         1 / norm_degree)
    return jnp.maximum(distance(positives) - distance(negatives) + margin, 0)


def smooth_labels(labels, alpha, *, axis=-1, where=None):
    """`(1 - alpha) * labels + alpha / K`, K the number of classes along `axis` (those where
    `where` holds)."""
    check_floating("smooth_labels", labels=labels)
    if where is None:
        count = jnp.size(labels, axis)
    else:
        count = jnp.sum(where, axis, keepdims=True)
    return (1.0 - alpha) * labels + alpha / count


def make_fenchel_young_loss(max_fun):
    """The Fenchel-Young loss `max_fun(scores) - <targets, scores>` of a convex `max_fun`
    (a function of a 1-d score vector, e.g. logsumexp), applied along the last axis."""
    vdot_last = jnp.vectorize(jnp.vdot, signature="(n),(n)->()")
    max_last = jnp.vectorize(max_fun, signature="(n)->()")

    def fenchel_young_loss(scores, targets, *args, **kwargs):
        return max_last(scores, *args, **kwargs) - vdot_last(targets, scores)
    return fenchel_young_loss


def _reduce(loss, reduction, axis=None):
    if reduction == "mean":
        return jnp.mean(loss, axis=axis)
    if reduction == "sum":
        return jnp.sum(loss, axis=axis)
    if reduction == "none":
        return loss
    raise ValueError(f"Unsupported reduction: {reduction!r}; use 'mean', 'sum' or 'none'.")


def dice_loss(predictions, targets, *, class_weights=None, smooth=1.0, alpha=0.5, beta=0.5,
              apply_softmax=True, reduction="mean", ignore_background=False, axis=None):
    """Dice (Tversky, for alpha != beta) loss per example of segmentation predictions
    (batch, ..., classes) against one-hot or soft targets: `1 - (I + smooth) / (I + alpha FP +
    beta FN + smooth)` per class, weighted and reduced over classes (`reduction`)."""
    predictions, targets = jnp.asarray(predictions), jnp.asarray(targets)
    if predictions.ndim == targets.ndim - 1:
        predictions = predictions[..., None]
    if targets.ndim == predictions.ndim - 1:
        targets = targets[..., None]
    check_shapes_equal("dice_loss", predictions, targets)
    if not apply_softmax:
        sums = jnp.sum(predictions, axis=-1)
        if not bool(jnp.allclose(sums, 1.0, rtol=1e-5)):
            raise ValueError("When apply_softmax=False, predictions must be valid probability "
                             "distributions that sum to 1 along the class axis. Found sum "
                             f"range: [{float(jnp.min(sums)):.6f}, {float(jnp.max(sums)):.6f}]")
    probs = predictions
    if apply_softmax:
        probs = (jax.nn.sigmoid(predictions) if predictions.shape[-1] == 1
                 else jax.nn.softmax(predictions, axis=-1))
    axis = tuple(range(1, probs.ndim - 1)) if axis is None else axis
    inter = jnp.sum(probs * targets, axis=axis)
    pred_sum, target_sum = jnp.sum(probs, axis=axis), jnp.sum(targets, axis=axis)
    denom = inter + alpha * (pred_sum - inter) + beta * (target_sum - inter) + smooth
    loss = 1.0 - (inter + smooth) / denom
    if class_weights is not None:
        if jnp.ndim(class_weights) != 1:
            raise ValueError(f"dice_loss: expected class_weights to have rank 1, got "
                             f"{jnp.ndim(class_weights)} instead.")
        loss = loss * class_weights
    if ignore_background and probs.shape[-1] > 1:
        loss = loss[..., 1:]
    return _reduce(loss, reduction, axis=-1)


def multiclass_generalized_dice_loss(predictions, targets, *, smooth=1.0, apply_softmax=True,
                                     ignore_background=False):
    """Dice loss with classes weighted by their inverse squared frequency in `targets`
    (normalized to sum to the number of classes), averaged: a scalar."""
    check_shapes_equal("multiclass_generalized_dice_loss", predictions, targets)
    targets = jnp.asarray(targets)
    freq = jnp.sum(targets, axis=tuple(range(targets.ndim - 1)))
    weights = 1.0 / (freq ** 2 + 1e-7)
    weights = weights / jnp.sum(weights) * weights.shape[0]
    return jnp.mean(dice_loss(predictions, targets, class_weights=weights, smooth=smooth,
                              apply_softmax=apply_softmax, reduction="none",
                              ignore_background=ignore_background))


def binary_dice_loss(predictions, targets, *, smooth=1.0, apply_sigmoid=True):
    """Dice loss of binary segmentation logits (or probabilities with apply_sigmoid=False),
    one value per example."""
    predictions, targets = jnp.asarray(predictions), jnp.asarray(targets)
    if predictions.ndim == targets.ndim and predictions.shape[-1] != 1:
        predictions, targets = predictions[..., None], targets[..., None]
    return dice_loss(predictions, targets, smooth=smooth, apply_softmax=apply_sigmoid,
                     reduction="mean")
