"""Wrapper / combinator cases (see optax_problem.py): ox is optax or optim."""
import functools

import numpy as np

def _add_bias(ox):
    """A transform taking an extra argument shaped like the updates: updates + bias."""
    return ox.GradientTransformationExtraArgs(
        lambda params: ox.EmptyState(),
        lambda updates, state, params=None, *, bias, **extra: (
            ox.tree_utils.tree_add(updates, bias), state))


CASES = {
    "lookahead": dict(build=lambda ox, jnp: ox.lookahead(
        ox.sgd(0.1, momentum=0.9), sync_period=3, slow_step_size=0.5, reset_state=True),
        lookahead=True),
    "lookahead_adam": dict(build=lambda ox, jnp: ox.lookahead(ox.adam(0.05), 2, 0.3),
                           lookahead=True),
    "partition": dict(build=lambda ox, jnp: ox.partition(
        {"a": ox.adam(0.05), "s": ox.sgd(0.1, momentum=0.5)}, {"w": "a", "b": "s"})),
    "partition_fn": dict(build=lambda ox, jnp: ox.partition(
        {"a": ox.adam(0.05), "s": ox.set_to_zero()},
        lambda p: {k: "a" if v.ndim == 2 else "s" for k, v in p.items()})),
    "multi_transform": dict(build=lambda ox, jnp: ox.multi_transform(
        {"a": ox.adam(0.05), "s": ox.sgd(0.1)}, {"w": "s", "b": "a"})),
    "partition_masked_extra_args": dict(build=lambda ox, jnp: ox.chain(ox.partition(
        {"a": ox.chain(_add_bias(ox), ox.adam(0.05)), "s": ox.sgd(0.1)}, {"w": "a", "b": "s"},
        mask_compatible_extra_args=True)), extra=("bias",)),
    "masked_extra_args": dict(build=lambda ox, jnp: ox.masked(
        ox.chain(_add_bias(ox), ox.sgd(0.1)), {"w": False, "b": True},
        mask_compatible_extra_args=True), extra=("bias",)),
    "selective_transform": dict(build=lambda ox, jnp: ox.transforms.selective_transform(
        ox.adam(0.05), freeze_mask={"w": False, "b": True})),
    "named_chain": dict(build=lambda ox, jnp: ox.named_chain(
        ("clip", ox.clip_by_global_norm(0.5)), ("adam", ox.adam(0.05)))),
    "masked": dict(build=lambda ox, jnp: ox.masked(ox.adam(0.05), {"w": True, "b": False})),
    "apply_if_finite": dict(build=lambda ox, jnp: ox.apply_if_finite(ox.adam(0.05), 2),
                            nan_steps=(2, 4, 5, 6, 7)),
    "apply_every": dict(build=lambda ox, jnp: ox.chain(ox.sgd(0.1), ox.apply_every(3))),
    "conditionally_mask": dict(build=lambda ox, jnp: ox.conditionally_mask(
        ox.adam(0.05), lambda step: step % 3 != 1)),
    "conditionally_transform": dict(build=lambda ox, jnp: ox.conditionally_transform(
        ox.chain(ox.adam(0.05), ox.scale(-1.0)), lambda step: step % 2 == 0)),
    "flatten": dict(build=lambda ox, jnp: ox.flatten(ox.adam(0.05))),
    "multisteps_skip_not_finite": dict(
        build=lambda ox, jnp: ox.MultiSteps(ox.adam(0.05), 3,
                                            should_skip_update_fn=ox.skip_not_finite),
        nan_steps=(4,)),
    "multisteps_skip_large": dict(build=lambda ox, jnp: ox.MultiSteps(
        ox.sgd(0.1), 2, use_grad_mean=False,
        should_skip_update_fn=functools.partial(ox.skip_large_updates, max_squared_norm=1.0))),
    "inject_hyperparams": dict(build=lambda ox, jnp: ox.inject_hyperparams(ox.adamw)(
        learning_rate=ox.cosine_decay_schedule(0.1, 8, alpha=0.1), weight_decay=0.01,
        b1=0.8)),
    "inject_hyperparams_int": dict(build=lambda ox, jnp: ox.MultiSteps(
        ox.inject_hyperparams(ox.sgd, static_args="nesterov")(
            learning_rate=0.1, momentum=0.9, nesterov=True), every_k_schedule=2)),
    "inject_hyperparams_dtypes": dict(build=lambda ox, jnp: ox.inject_hyperparams(
        ox.adamw, hyperparam_dtype=jnp.float16)(
            learning_rate=jnp.asarray(0.05, jnp.float32), b1=np.float64(0.8), weight_decay=1,
            eps=1e-3, b2=np.float32(0.99))),     # a NumPy float32 scalar stays static
    "keep_params_nonnegative": dict(build=lambda ox, jnp: ox.chain(
        ox.sgd(0.5), ox.keep_params_nonnegative()), abs_params=True),
    "zero_nans": dict(build=lambda ox, jnp: ox.chain(ox.zero_nans(), ox.adam(0.05)),
                      nan_steps=(1, 5)),
    "monitor": dict(build=lambda ox, jnp: ox.chain(
        ox.monitor({"norm": ox.global_norm,
                    "ema": ox.measure_with_ema(ox.global_norm, 0.8)}),
        ox.snapshot("max", lambda u: jnp.max(u["w"])), ox.adam(0.05))),
    "adaptive_grad_clip": dict(build=lambda ox, jnp: ox.chain(
        ox.adaptive_grad_clip(0.05), ox.sgd(0.1)),
        post=lambda ox, state, p: [
            ox.transforms.unitwise_norm(p["w"]), ox.transforms.unitwise_norm(p["b"]),
            ox.transforms.unitwise_norm(p["w"], axis=1),
            ox.transforms.unitwise_clip(ox.transforms.unitwise_norm(p["w"]),
                                        0.5 + 0 * p["w"], p["w"])]),
    "adaptive_grad_clip_axis": dict(build=lambda ox, jnp: ox.chain(
        ox.adaptive_grad_clip(0.1, eps=0.01, axis=0), ox.adam(0.05))),
    "clip_by_block_rms": dict(build=lambda ox, jnp: ox.chain(
        ox.clip_by_block_rms(0.3), ox.adam(0.05))),
    "per_example_global_norm_clip": dict(build=lambda ox, jnp: ox.chain(
        ox.stateless(lambda u, p: ox.transforms.per_example_global_norm_clip(u, 0.7)[0]),
        ox.sgd(0.05)), per_example=True),
    "per_example_layer_norm_clip": dict(build=lambda ox, jnp: ox.chain(
        ox.stateless(lambda u, p: ox.transforms.per_example_layer_norm_clip(
            u, 1.0, uniform=False)[0]), ox.sgd(0.05)), per_example=True,
        post=lambda ox, state, p: [
            ox.transforms.per_example_layer_norm_clip({"a": p["w"], "c": p["w"] ** 2}, 0.5),
            ox.transforms.per_example_global_norm_clip({"a": p["w"], "c": p["w"] ** 2}, 0.5)]),
}
