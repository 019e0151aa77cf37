"""Ready-made optimizers, each a chain of building blocks ending in the learning rate."""
from __future__ import annotations

from optim.base import GradientTransformation, identity
from optim.combine import chain
from optim.transform import (add_decayed_weights, scale_by_adam, scale_by_adamax,
                             scale_by_learning_rate, scale_by_lion, scale_by_rms, scale_by_rss,
                             scale_by_stddev, scale_by_trust_ratio, trace)

__all__ = ["sgd", "adam", "adamw", "nadam", "nadamw", "adamax", "rmsprop", "adagrad", "lamb",
           "lion"]


def sgd(learning_rate, momentum=None, nesterov: bool = False,
        accumulator_dtype=None) -> GradientTransformation:
    """Stochastic gradient descent, with optional (Nesterov) momentum."""
    return chain(
        trace(momentum, nesterov, accumulator_dtype) if momentum is not None else identity(),
        scale_by_learning_rate(learning_rate))


def adam(learning_rate, b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, mu_dtype=None, *,
         nesterov: bool = False) -> GradientTransformation:
    """Adam (Kingma & Ba, 2014)."""
    return chain(scale_by_adam(b1, b2, eps, eps_root, mu_dtype, nesterov=nesterov),
                 scale_by_learning_rate(learning_rate))


def adamw(learning_rate, b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, mu_dtype=None,
          weight_decay=1e-4, mask=None, *, nesterov: bool = False) -> GradientTransformation:
    """Adam with decoupled weight decay (Loshchilov & Hutter, 2019); `mask` picks the
    parameters that decay."""
    return chain(scale_by_adam(b1, b2, eps, eps_root, mu_dtype, nesterov=nesterov),
                 add_decayed_weights(weight_decay, mask),
                 scale_by_learning_rate(learning_rate))


def nadam(learning_rate, b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0,
          mu_dtype=None) -> GradientTransformation:
    """Adam with Nesterov momentum (Dozat, 2016)."""
    return adam(learning_rate, b1, b2, eps, eps_root, mu_dtype, nesterov=True)


def nadamw(learning_rate, b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, mu_dtype=None,
           weight_decay=1e-4, mask=None) -> GradientTransformation:
    """AdamW with Nesterov momentum."""
    return adamw(learning_rate, b1, b2, eps, eps_root, mu_dtype, weight_decay, mask,
                 nesterov=True)


def adamax(learning_rate, b1=0.9, b2=0.999, eps=1e-8) -> GradientTransformation:
    """Adamax: Adam with the infinity norm in the denominator."""
    return chain(scale_by_adamax(b1, b2, eps), scale_by_learning_rate(learning_rate))


def rmsprop(learning_rate, decay=0.9, eps=1e-8, initial_scale=0.0, eps_in_sqrt: bool = True,
            centered: bool = False, momentum=None, nesterov: bool = False,
            bias_correction: bool = False) -> GradientTransformation:
    """RMSProp (Hinton's lecture 6e); `centered` divides by the standard deviation instead of
    the root mean square; `momentum` adds a trace after the learning rate."""
    rescale = scale_by_stddev if centered else scale_by_rms
    return chain(rescale(decay, eps, initial_scale, eps_in_sqrt, bias_correction),
                 scale_by_learning_rate(learning_rate),
                 trace(momentum, nesterov) if momentum is not None else identity())


def adagrad(learning_rate, initial_accumulator_value=0.1, eps=1e-7) -> GradientTransformation:
    """Adagrad (Duchi et al., 2011)."""
    return chain(scale_by_rss(initial_accumulator_value, eps),
                 scale_by_learning_rate(learning_rate))


def lamb(learning_rate, b1=0.9, b2=0.999, eps=1e-6, eps_root=0.0, weight_decay=0.0,
         mask=None) -> GradientTransformation:
    """LAMB (You et al., 2020): Adam directions with a per-layer trust ratio."""
    return chain(scale_by_adam(b1, b2, eps, eps_root),
                 add_decayed_weights(weight_decay, mask),
                 scale_by_trust_ratio(),
                 scale_by_learning_rate(learning_rate))


def lion(learning_rate, b1=0.9, b2=0.99, mu_dtype=None, weight_decay=1e-3,
         mask=None) -> GradientTransformation:
    """Lion (Chen et al., 2023): sign of interpolated momentum, with decoupled weight decay."""
    return chain(scale_by_lion(b1, b2, mu_dtype),
                 add_decayed_weights(weight_decay, mask),
                 scale_by_learning_rate(learning_rate))
