"""The `optax.transforms` namespace: building blocks and wrappers, re-exported from the modules
where they live (one import path per object; these are the same objects as `optim.<name>`)."""
from optim.accumulation import ShouldSkipUpdateFunction, skip_large_updates, skip_not_finite
from optim.clipping import clip, clip_by_global_norm
from optim.clipping_extra import (adaptive_grad_clip, clip_by_block_rms,
                                  per_example_global_norm_clip, per_example_layer_norm_clip,
                                  unitwise_clip, unitwise_norm)
from optim.combine import PartitionState, chain, named_chain, partition, selective_transform
from optim.conditionality import (ApplyIfFiniteState, ConditionallyMaskState,
                                  ConditionallyTransformState, ConditionFn, apply_if_finite,
                                  conditionally_mask, conditionally_transform)
from optim.constraining import (NonNegativeParamsState, ZeroNansState, keep_params_nonnegative,
                                zero_nans)
from optim.layouts import flatten
from optim.monitoring import MonitorState, SnapshotState, measure_with_ema, monitor, snapshot
from optim.transform import EmaState, TraceState, add_decayed_weights, ema, trace
from optim.transform_adaptive import AddNoiseState, add_noise
from optim.wrappers import (MaskedNode, MaskedState, MultiSteps, MultiStepsState, freeze,
                            masked)
