"""Ready-made optimizers, each a chain of building blocks ending in the learning rate.

Signatures, defaults and the order of the chained blocks follow Optax 0.2.8's aliases, so the
optimizer states have Optax's structure (tuples of the blocks' NamedTuple states)."""
from __future__ import annotations

import warnings
from typing import Any, Callable, Optional, Union

import corejax.numpy as jnp

from optim.base import GradientTransformation, GradientTransformationExtraArgs, identity
from optim.clipping import clip_by_block_rms
from optim.combine import chain
from optim.factorized import scale_by_factored_rms
from optim.transform import (add_decayed_weights, ema, scale, scale_by_adam, scale_by_adamax,
                             scale_by_learning_rate, scale_by_lion, scale_by_rms, scale_by_rss,
                             scale_by_stddev, scale_by_trust_ratio, trace)
from optim.transform_adaptive import (add_noise, scale_by_adadelta, scale_by_adan,
                                      scale_by_amsgrad, scale_by_belief, scale_by_novograd,
                                      scale_by_optimistic_gradient, scale_by_param_block_rms,
                                      scale_by_polyak, scale_by_radam, scale_by_rprop,
                                      scale_by_sign, scale_by_sm3, scale_by_yogi)
from optim.wrappers import masked

# A weight-decay mask: a pytree of bools shaped like (a prefix of) the params, or a callable
# params -> such a pytree.
MaskOrFn = Optional[Union[Any, Callable[[Any], Any]]]

__all__ = ["MaskOrFn", "sgd", "adam", "adamw", "nadam", "nadamw", "adamax", "adamaxw", "rmsprop",
           "adagrad", "lamb", "lion", "adabelief", "adadelta", "adafactor", "adan", "amsgrad",
           "fromage", "lars", "noisy_sgd", "novograd", "optimistic_gradient_descent",
           "optimistic_adam", "optimistic_adam_v2", "polyak_sgd", "radam", "rprop", "sign_sgd",
           "signum", "sm3", "yogi"]


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


def nadam(learning_rate, b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, mu_dtype=None, *,
          nesterov: bool = True) -> GradientTransformation:
    """Adam with Nesterov momentum (Dozat, 2016): `adam` with `nesterov=True` by default."""
    return adam(learning_rate, b1, b2, eps, eps_root, mu_dtype, nesterov=nesterov)


def nadamw(learning_rate, b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, mu_dtype=None,
           weight_decay=1e-4, mask=None, *, nesterov: bool = True) -> GradientTransformation:
    """AdamW with Nesterov momentum: `adamw` with `nesterov=True` by default."""
    return adamw(learning_rate, b1, b2, eps, eps_root, mu_dtype, weight_decay, mask,
                 nesterov=nesterov)


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


def adamaxw(learning_rate, b1=0.9, b2=0.999, eps=1e-8, weight_decay=1e-4,
            mask=None) -> GradientTransformation:
    """Adamax with decoupled weight decay."""
    return chain(scale_by_adamax(b1, b2, eps), add_decayed_weights(weight_decay, mask),
                 scale_by_learning_rate(learning_rate))


def adabelief(learning_rate, b1=0.9, b2=0.999, eps=1e-16, eps_root=1e-16, *,
              nesterov: bool = False) -> GradientTransformation:
    """AdaBelief (Zhuang et al., 2020): Adam whose step shrinks where gradients are
    predictable."""
    return chain(scale_by_belief(b1, b2, eps, eps_root, nesterov=nesterov),
                 scale_by_learning_rate(learning_rate))


def adadelta(learning_rate=None, rho=0.9, eps=1e-6, weight_decay=0.0,
             weight_decay_mask=None) -> GradientTransformation:
    """AdaDelta (Zeiler, 2012). With `learning_rate=None` there is no learning-rate block at
    all, as in Optax: the updates are then AdaDelta's steps with the gradient's sign."""
    return chain(add_decayed_weights(weight_decay, mask=weight_decay_mask),
                 scale_by_adadelta(rho, eps), scale_by_learning_rate(learning_rate))


def adafactor(learning_rate=None, min_dim_size_to_factor: int = 128, decay_rate=0.8,
              decay_offset=0, multiply_by_parameter_scale: bool = True,
              clipping_threshold=1.0, momentum=None, dtype_momentum=jnp.float32,
              weight_decay_rate=None, eps=1e-30, factored: bool = True,
              weight_decay_mask=None) -> GradientTransformation:
    """Adafactor (Shazeer & Stern, 2018): factored second moments, per-block update clipping,
    steps relative to the parameters' RMS, optional momentum and weight decay."""
    blocks = [scale_by_factored_rms(factored, decay_rate, decay_offset,
                                    min_dim_size_to_factor, eps)]
    if clipping_threshold is not None:
        blocks.append(clip_by_block_rms(clipping_threshold))
    if learning_rate is not None:
        blocks.append(scale_by_learning_rate(learning_rate, flip_sign=False))
    if multiply_by_parameter_scale:
        blocks.append(scale_by_param_block_rms())
    if momentum is not None:
        blocks.append(ema(momentum, debias=False, accumulator_dtype=dtype_momentum))
    if weight_decay_rate is not None:
        blocks.append(add_decayed_weights(weight_decay_rate, mask=weight_decay_mask))
    blocks.append(scale(-1))
    return chain(*blocks)


def adan(learning_rate, b1=0.98, b2=0.92, b3=0.99, eps=1e-8, eps_root=1e-8, weight_decay=0.0,
         mask=None) -> GradientTransformation:
    """Adan (Xie et al., 2022): adaptive Nesterov momentum."""
    return chain(scale_by_adan(b1, b2, b3, eps, eps_root),
                 add_decayed_weights(weight_decay, mask),
                 scale_by_learning_rate(learning_rate))


def amsgrad(learning_rate, b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, mu_dtype=None,
            bias_correction_mu: bool = True,
            bias_correction_nu: bool = True) -> GradientTransformation:
    """AMSGrad (Reddi et al., 2018)."""
    return chain(scale_by_amsgrad(b1, b2, eps, eps_root, mu_dtype, bias_correction_mu,
                                  bias_correction_nu),
                 scale_by_learning_rate(learning_rate))


def fromage(learning_rate, min_norm=1e-6) -> GradientTransformation:
    """Fromage (Bernstein et al., 2020): trust-ratio steps, then the parameters shrunk by
    1 / sqrt(1 + lr^2)."""
    if not callable(learning_rate):
        shrink = 1 / (1 + learning_rate ** 2) ** 0.5
        return chain(scale_by_trust_ratio(min_norm),
                     scale_by_learning_rate(learning_rate * shrink),
                     add_decayed_weights(shrink - 1))

    def shrink_at(count):
        return 1 / (1 + learning_rate(count) ** 2) ** 0.5
    return chain(scale_by_trust_ratio(min_norm),
                 scale_by_learning_rate(lambda count: shrink_at(count) * learning_rate(count)),
                 add_decayed_weights(lambda count: shrink_at(count) - 1))


def lars(learning_rate, weight_decay=0.0, weight_decay_mask=True, trust_coefficient=0.001,
         eps=0.0, trust_ratio_mask=True, momentum=0.9,
         nesterov: bool = False) -> GradientTransformation:
    """LARS (You et al., 2017): layer-wise trust ratio with momentum."""
    return chain(add_decayed_weights(weight_decay, mask=weight_decay_mask),
                 masked(scale_by_trust_ratio(trust_coefficient=trust_coefficient, eps=eps),
                        trust_ratio_mask),
                 scale_by_learning_rate(learning_rate),
                 trace(decay=momentum, nesterov=nesterov))


def noisy_sgd(learning_rate, eta=0.01, gamma=0.55, key=None, *,
              seed=None) -> GradientTransformation:
    """SGD with annealed Gaussian gradient noise (Neelakantan et al., 2015)."""
    return chain(add_noise(eta, gamma, key, seed=seed), scale_by_learning_rate(learning_rate))


def novograd(learning_rate, b1=0.9, b2=0.25, eps=1e-6, eps_root=0.0,
             weight_decay=0.0) -> GradientTransformation:
    """NovoGrad (Ginsburg et al., 2019): layer-wise second moments."""
    return chain(scale_by_novograd(b1, b2, eps, eps_root, weight_decay),
                 scale_by_learning_rate(learning_rate))


def optimistic_gradient_descent(learning_rate, alpha=1.0,
                                beta=1.0) -> GradientTransformation:
    """Optimistic gradient descent (Mokhtari et al., 2019), for min-max games."""
    return chain(scale_by_optimistic_gradient(alpha, beta),
                 scale_by_learning_rate(learning_rate))


def optimistic_adam(learning_rate, optimism=None, b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0,
                    mu_dtype=None, *, nesterov: bool = True) -> GradientTransformation:
    """Optimistic Adam (Daskalakis et al., 2017); deprecated in Optax for optimistic_adam_v2.
    The learning rate must be a number (it is the optimistic step's alpha)."""
    warnings.warn("`optimistic_adam` is deprecated, please use `optimistic_adam_v2` instead.",
                  category=DeprecationWarning)
    if callable(learning_rate):
        raise ValueError("This version of `optimistic_adam` does not support learning rate "
                         "schedules but `optimistic_adam_v2` does.")
    if optimism is None:
        optimism = learning_rate
    return chain(scale_by_adam(b1, b2, eps, eps_root, mu_dtype, nesterov=nesterov),
                 scale_by_optimistic_gradient(alpha=learning_rate, beta=optimism),
                 scale_by_learning_rate(1.0))


def optimistic_adam_v2(learning_rate, *, alpha=1.0, beta=1.0, b1=0.9, b2=0.999, eps=1e-8,
                       eps_root=0.0, mu_dtype=None,
                       nesterov: bool = True) -> GradientTransformation:
    """Optimistic Adam with a learning rate (number or schedule) separate from the optimistic
    step's alpha and beta."""
    return chain(scale_by_adam(b1, b2, eps, eps_root, mu_dtype, nesterov=nesterov),
                 scale_by_optimistic_gradient(alpha=alpha, beta=beta),
                 scale_by_learning_rate(learning_rate))


def polyak_sgd(max_learning_rate=1.0, scaling=1.0, f_min=0.0, eps=0.0,
               variant: str = "sps") -> GradientTransformationExtraArgs:
    """SGD with Polyak's step size (Loizou et al., 2021); `update` needs `value=loss`."""
    return chain(sgd(learning_rate=scaling),
                 scale_by_polyak(max_learning_rate=max_learning_rate, f_min=f_min, eps=eps,
                                 variant=variant))


def radam(learning_rate, b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, threshold=5.0, *,
          nesterov: bool = False) -> GradientTransformation:
    """Rectified Adam (Liu et al., 2020)."""
    return chain(scale_by_radam(b1, b2, eps, eps_root, threshold, nesterov=nesterov),
                 scale_by_learning_rate(learning_rate))


def rprop(learning_rate, eta_minus=0.5, eta_plus=1.2, min_step_size=1e-6,
          max_step_size=50.0) -> GradientTransformation:
    """Rprop (Riedmiller & Braun, 1993); `learning_rate` is the initial step size."""
    return chain(scale_by_rprop(learning_rate, eta_minus, eta_plus, min_step_size,
                                max_step_size),
                 scale(-1.0))


def sign_sgd(learning_rate) -> GradientTransformation:
    """signSGD (Bernstein et al., 2018): steps of the gradient's sign."""
    return chain(scale_by_sign(), scale_by_learning_rate(learning_rate))


def signum(learning_rate, beta=0.9, accumulator_dtype=None) -> GradientTransformation:
    """Signum: the sign of an exponential moving average of the gradients."""
    return chain(ema(beta, debias=False, accumulator_dtype=accumulator_dtype),
                 scale_by_sign(), scale_by_learning_rate(learning_rate))


def sm3(learning_rate, momentum=0.9) -> GradientTransformation:
    """SM3 (Anil et al., 2019): memory-efficient Adagrad with momentum."""
    return chain(scale_by_sm3(momentum), scale(-learning_rate))


def yogi(learning_rate, b1=0.9, b2=0.999, eps=1e-3) -> GradientTransformation:
    """Yogi (Zaheer et al., 2018)."""
    return chain(scale_by_yogi(b1, b2, eps), scale_by_learning_rate(learning_rate))
