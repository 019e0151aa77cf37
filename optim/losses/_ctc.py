"""Connectionist temporal classification (CTC) loss by the forward algorithm in log space.

The forward variables are split as Optax splits them: `phi[n]` is the log-probability of
having emitted the first n labels and sitting on a blank (n = 0..N), `emit[n]` that of sitting
on label n (n = 0..N-1). A `lax.scan` over time carries both; padded frames keep them."""
from __future__ import annotations

import corejax as jax
import corejax.numpy as jnp
from corejax import lax

__all__ = ["ctc_loss", "ctc_loss_with_forward_probs"]


def _check_rank(name, arg, x, rank):
    if jnp.ndim(x) != rank:
        raise ValueError(f"{name}: expected {arg} to have rank {rank}, got {jnp.ndim(x)} "
                         "instead.")


def _check_shape(name, arg, x, shape):
    if jnp.shape(x) != tuple(shape):
        raise ValueError(f"{name}: {arg} must have shape {tuple(shape)}, got "
                         f"{jnp.shape(x)}.")


def ctc_loss_with_forward_probs(logits, logit_paddings, labels, label_paddings, *,
                                blank_id=0, log_epsilon=-1e5):
    """Per-sequence CTC loss `(B,)` and the forward log-probabilities `(T, B, N + 1)` (blank
    states) and `(T, B, N)` (label states). logits `(B, T, K)`, logit_paddings `(B, T)`,
    labels `(B, N)` int, label_paddings `(B, N)`; paddings are 1.0 on padded positions and
    must be right-aligned; `log_epsilon` stands for log(0)."""
    name = "ctc_loss"
    _check_rank(name, "logits", logits, 3)
    _check_rank(name, "labels", labels, 2)
    _check_shape(name, "label_paddings", label_paddings, jnp.shape(labels))
    _check_shape(name, "logit_paddings", logit_paddings, jnp.shape(logits)[:2])
    batch, _, num_classes = jnp.shape(logits)
    if jnp.shape(labels)[0] != batch:
        raise ValueError(f"Expected `labels` to have batch size {batch}, got "
                         f"{jnp.shape(labels)[0]}.")
    max_labels = jnp.shape(labels)[1]
    log_probs = jax.nn.log_softmax(logits)
    label_lengths = max_labels - jnp.sum(label_paddings, axis=1).astype(jnp.int32)
    # 1.0 where a label repeats the next one: no direct label-to-label move there.
    repeat = (labels[:, :-1] == labels[:, 1:]).astype(jnp.float32)
    repeat = jnp.pad(repeat, ((0, 0), (0, 1)))
    blank_lp = jnp.transpose(log_probs[:, :, blank_id:blank_id + 1], (1, 0, 2))
    one_hot = jax.nn.one_hot(labels, num_classes=num_classes)
    emit_lp = jnp.transpose(jnp.einsum("btk,bnk->btn", log_probs, one_hot), (1, 0, 2))

    phi0 = (jnp.ones((batch, max_labels + 1)) * log_epsilon).at[:, 0].set(0.0)
    emit0 = jnp.ones((batch, max_labels)) * log_epsilon

    def add_to_phi(phi, score):
        return jnp.concatenate([phi[:, :1], jnp.logaddexp(phi[:, 1:], score)], axis=-1)

    def step(carry, frame):
        phi_prev, emit_prev = carry
        lp_emit, lp_blank, pad = frame
        # Label n may also be entered from the blank after label n-1 ... unless it repeats.
        phi_in = add_to_phi(phi_prev, emit_prev + log_epsilon * repeat)
        emit = jnp.logaddexp(phi_in[:, :-1] + lp_emit, emit_prev + lp_emit)
        phi = add_to_phi(phi_in + lp_blank, emit_prev + lp_blank + log_epsilon * (1.0 - repeat))
        pad = pad.reshape((batch, 1))
        emit = pad * emit_prev + (1.0 - pad) * emit
        phi = pad * phi_prev + (1.0 - pad) * phi
        return (phi, emit), (phi, emit)

    frames = (emit_lp, blank_lp, jnp.transpose(logit_paddings, (1, 0)))
    _, (phis, emits) = lax.scan(step, (phi0, emit0), frames)
    last = add_to_phi(phis[-1], emits[-1])
    phis = phis.at[-1].set(last)
    pick = jax.nn.one_hot(label_lengths, num_classes=max_labels + 1)
    return -jnp.einsum("bn,bn->b", last, pick), phis, emits


def ctc_loss(logits, logit_paddings, labels, label_paddings, *, blank_id=0, log_epsilon=-1e5):
    """Per-sequence CTC loss `(B,)`: minus the log-probability of `labels` summed over every
    alignment with `logits` (see ctc_loss_with_forward_probs for the shapes)."""
    return ctc_loss_with_forward_probs(logits, logit_paddings, labels, label_paddings,
                                       blank_id=blank_id, log_epsilon=log_epsilon)[0]
