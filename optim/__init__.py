"""optim: Optax-style gradient transformations, optimizers, schedules and losses on corejax."""
from optim import losses, schedules, tree_utils
from optim.alias import (adagrad, adam, adamax, adamw, lamb, lion, nadam, nadamw, rmsprop,
                         sgd)
from optim.base import (EmptyState, GradientTransformation, OptState, Params, Schedule,
                        ScalarOrSchedule, Updates, apply_updates, identity,
                        safe_int32_increment, set_to_zero, stateless, stateless_with_tree_map)
from optim.clipping import ClipByGlobalNormState, ClipState, clip, clip_by_global_norm
from optim.combine import MultiTransformState, chain, multi_transform
from optim.losses import (cosine_distance, cosine_similarity, huber_loss, l2_loss,
                          sigmoid_binary_cross_entropy, softmax_cross_entropy,
                          softmax_cross_entropy_with_integer_labels, squared_error)
from optim.schedules import (constant_schedule, cosine_decay_schedule, exponential_decay,
                             join_schedules, linear_schedule, piecewise_constant_schedule,
                             polynomial_schedule, warmup_cosine_decay_schedule,
                             warmup_exponential_decay_schedule)
from optim.transform import (AddDecayedWeightsState, EmaState, ScaleByAdamState,
                             ScaleByLionState, ScaleByRmsState, ScaleByRmsWithCountState,
                             ScaleByRssState, ScaleByRStdDevState, ScaleByRStdDevWithCountState,
                             ScaleByScheduleState, ScaleByTrustRatioState, ScaleState,
                             TraceState, add_decayed_weights, ema, scale, scale_by_adam,
                             scale_by_adamax, scale_by_learning_rate, scale_by_lion,
                             scale_by_rms, scale_by_rss, scale_by_schedule, scale_by_stddev,
                             scale_by_trust_ratio, trace)
from optim.tree_utils import global_norm
# optimizers, scale_by_* blocks, extra-args protocol, L-BFGS (helper C, #28)
from optim import numerics
from optim.alias import (MaskOrFn, adabelief, adadelta, adafactor, adamaxw, adan, amsgrad,
                         fromage, lars, noisy_sgd, novograd, optimistic_adam, optimistic_adam_v2,
                         optimistic_gradient_descent, polyak_sgd, radam, rprop, sign_sgd,
                         signum, sm3, yogi)
from optim.base import (GradientTransformationExtraArgs, TransformInitFn,
                        TransformUpdateExtraArgsFn, TransformUpdateFn, init_empty_state,
                        with_extra_args_support)
from optim.factorized import FactoredState, scale_by_factored_rms
from optim.numerics import safe_increment, safe_norm, safe_root_mean_squares
from optim.transform_adaptive import (AddNoiseState, ScaleByAdaDeltaState, ScaleByAdanState,
                                      ScaleByAmsgradState, ScaleByBeliefState,
                                      ScaleByNovogradState, ScaleByRpropState, ScaleBySM3State,
                                      add_noise, centralize, normalize_by_update_norm,
                                      scale_by_adadelta, scale_by_adan, scale_by_amsgrad,
                                      scale_by_belief, scale_by_distance_over_gradients,
                                      scale_by_novograd, scale_by_optimistic_gradient,
                                      scale_by_param_block_norm, scale_by_param_block_rms,
                                      scale_by_polyak, scale_by_radam, scale_by_rprop,
                                      scale_by_sign, scale_by_sm3, scale_by_yogi)
from optim.lbfgs import ScaleByLBFGSState, lbfgs, scale_by_lbfgs
from optim.linesearch import (ScaleByBacktrackingLinesearchState, ScaleByZoomLinesearchState,
                              ZoomLinesearchInfo, scale_by_backtracking_linesearch,
                              scale_by_zoom_linesearch, value_and_grad_from_state)
# end helper C block
from optim.wrappers import (InjectHyperparamsState, MaskedNode, MaskedState, MultiSteps,
                            MultiStepsState, freeze, inject_hyperparams, masked)
# wrappers and combinators (helper D, #28)
from optim import contrib, transforms
from optim.accumulation import (ApplyEvery, ShouldSkipUpdateFunction, apply_every,
                                skip_large_updates, skip_not_finite)
from optim.clipping import (AdaptiveGradClipState, adaptive_grad_clip, clip_by_block_rms,
                            per_example_global_norm_clip, per_example_layer_norm_clip)
from optim.combine import PartitionState, named_chain, partition, selective_transform
from optim.conditionality import (ApplyIfFiniteState, ConditionallyMaskState,
                                  ConditionallyTransformState, apply_if_finite,
                                  conditionally_mask, conditionally_transform)
from optim.constraining import (NonNegativeParamsState, ZeroNansState, keep_params_nonnegative,
                                zero_nans)
from optim.layouts import flatten
from optim.lookahead import LookaheadParams, LookaheadState, lookahead
from optim.monitoring import MonitorState, SnapshotState, measure_with_ema, monitor, snapshot
from optim.wrappers import (InjectStatefulHyperparamsState, MaskOrFn, WrappedSchedule,
                            inject_stateful_hyperparams)
# losses, schedules, optax.tree / tree_utils, projections (helper E, #28)
from optim import projections, tree
from optim.losses import (convex_kl_divergence, ctc_loss, ctc_loss_with_forward_probs,
                          generalized_kl_divergence, hinge_loss, kl_divergence, log_cosh, ntxent,
                          safe_softmax_cross_entropy, sigmoid_focal_loss, smooth_labels)
from optim.schedules import (cosine_onecycle_schedule, linear_onecycle_schedule,
                             piecewise_interpolate_schedule, sgdr_schedule,
                             warmup_constant_schedule)
from optim.tree_utils import tree_map_params
# Optax's top-level aliases of four optax.tree functions.
from optim.tree_utils import tree_bias_correction as bias_correction
from optim.tree_utils import tree_update_infinity_moment as update_infinity_moment
from optim.tree_utils import tree_update_moment as update_moment
from optim.tree_utils import tree_update_moment_per_elem_norm as update_moment_per_elem_norm
from optim import assignment, experimental, microbatching, perturbations, second_order
from optim.microbatching import microbatch
from optim.linear_algebra import matrix_inverse_pth_root, nnls, power_iteration
from optim.update import incremental_update, periodic_update
from optim.utils import MaskOrFn, multi_normal, scale_gradient
# end helper E block
