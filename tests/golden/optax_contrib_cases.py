"""optax.contrib cases (see optax_problem.py): ox is optax or optim; C is ox.contrib."""


def _c(ox):
    return ox.contrib


def _eval_params(ox, state, params):
    return ox.contrib.schedule_free_eval_params(state, params)


CASES = {
    "reduce_on_plateau": dict(build=lambda ox, jnp: ox.chain(
        ox.adam(0.2), _c(ox).reduce_on_plateau(factor=0.5, patience=1, rtol=0.0, atol=0.2,
                                               cooldown=1, accumulation_size=2,
                                               min_scale=0.2)), extra=("value",)),
    "reduce_on_plateau_injected": dict(build=lambda ox, jnp: ox.chain(
        ox.adam(0.2), ox.inject_hyperparams(_c(ox).reduce_on_plateau)(
            factor=0.5, patience=1, atol=0.2, rtol=0.0)), extra=("value",),
        eager_only=True),  # its argument checks need concrete values, in Optax too
    "reduce_on_plateau_multisteps": dict(build=lambda ox, jnp: ox.MultiSteps(ox.chain(
        ox.sgd(0.05), _c(ox).reduce_on_plateau(factor=0.3, patience=0, atol=0.5, rtol=0.0)),
        every_k_schedule=2), extra=("value",)),
    "sam": dict(build=lambda ox, jnp: _c(ox).sam(
        ox.sgd(0.1), ox.chain(_c(ox).normalize(), ox.sgd(0.05)), sync_period=2)),
    "sam_adam_no_reset": dict(build=lambda ox, jnp: _c(ox).sam(
        ox.adam(0.05), ox.chain(_c(ox).normalize(), ox.adam(0.02)), sync_period=3,
        reset_state=False)),
    "sam_opaque": dict(build=lambda ox, jnp: _c(ox).sam(
        ox.sgd(0.1, momentum=0.5), ox.chain(_c(ox).normalize(), ox.sgd(0.05)), sync_period=3,
        opaque_mode=True), extra=("grad_fn",)),
    "schedule_free_sgd": dict(build=lambda ox, jnp: _c(ox).schedule_free_sgd(
        0.3, warmup_steps=3, b1=0.8, weight_decay=0.01), post=_eval_params),
    "schedule_free_adamw": dict(build=lambda ox, jnp: _c(ox).schedule_free_adamw(
        0.05, warmup_steps=2, b1=0.85, b2=0.99, weight_decay=0.01, weight_lr_power=1.5),
        post=_eval_params),
    "schedule_free_base": dict(build=lambda ox, jnp: _c(ox).schedule_free(
        ox.adam(0.05), learning_rate=0.05, b1=0.7), post=_eval_params),
    "prodigy": dict(build=lambda ox, jnp: _c(ox).prodigy(
        betas=(0.8, 0.95), estim_lr0=1e-3, weight_decay=0.01)),
    "prodigy_safeguard": dict(build=lambda ox, jnp: _c(ox).prodigy(
        0.5, beta3=0.9, estim_lr0=1e-2, estim_lr_coef=0.5, safeguard_warmup=True)),
    "dadapt_adamw": dict(build=lambda ox, jnp: _c(ox).dadapt_adamw(
        betas=(0.8, 0.95), estim_lr0=1e-3, weight_decay=0.01)),
    "mechanize": dict(build=lambda ox, jnp: _c(ox).mechanize(
        ox.adam(1.0), weight_decay=0.01, s_init=1e-3, num_betas=4)),
    "cocob": dict(build=lambda ox, jnp: _c(ox).cocob(alpha=50.0, weight_decay=0.01)),
    "cocob_masked": dict(build=lambda ox, jnp: _c(ox).cocob(
        0.5, weight_decay=0.1, mask={"w": True, "b": False})),
    "dog_heuristic": dict(build=lambda ox, jnp: _c(ox).dog(init_step=("heuristic", 1e-3))),
    "dog_lr": dict(build=lambda ox, jnp: _c(ox).dog(
        0.8, init_step=("learning_rate", 0.05), weight_decay=0.01)),
    "dog_distance": dict(build=lambda ox, jnp: _c(ox).dog(init_step=("distance", 0.1))),
    "dowg": dict(build=lambda ox, jnp: _c(ox).dowg(init_estim_sq_dist=0.01, weight_decay=0.01)),
    "dowg_default": dict(build=lambda ox, jnp: _c(ox).dowg()),
    "momo": dict(build=lambda ox, jnp: _c(ox).momo(
        0.5, beta=0.8, lower_bound=0.1, weight_decay=0.01), extra=("value",)),
    "momo_adapt": dict(build=lambda ox, jnp: _c(ox).momo(
        0.5, weight_decay=0.01, adapt_lower_bound=True), extra=("value",)),
    "momo_adam": dict(build=lambda ox, jnp: _c(ox).momo_adam(
        0.1, b1=0.8, b2=0.95, lower_bound=0.05, weight_decay=0.01), extra=("value",)),
    "momo_adam_adapt": dict(build=lambda ox, jnp: _c(ox).momo_adam(
        0.1, adapt_lower_bound=True), extra=("value",)),
    "muon": dict(build=lambda ox, jnp: _c(ox).muon(
        0.05, beta=0.9, weight_decay=0.01, adam_b1=0.8, adam_weight_decay=0.02)),
    "muon_spectral_dion": dict(build=lambda ox, jnp: _c(ox).muon(
        0.05, ns_coeffs="dion", preconditioning="spectral", nesterov=False,
        consistent_rms=0.2)),
    "muon_aol_adaptive": dict(build=lambda ox, jnp: _c(ox).muon(
        0.05, ns_steps=3, preconditioning="aol", adaptive=True, adam_learning_rate=0.02)),
    "muon_schatten_dims": dict(build=lambda ox, jnp: _c(ox).muon(
        0.05, preconditioning="schatten",
        muon_weight_dimension_numbers={"w": _c(ox).MuonDimensionNumbers(1, 0), "b": None})),
    "sophia": dict(build=lambda ox, jnp: _c(ox).sophia(
        0.05, b1=0.9, gamma=0.05, update_interval=2, weight_decay=1e-3, clip_threshold=0.5),
        extra=("obj_fn",)),
    "acprop": dict(build=lambda ox, jnp: _c(ox).acprop(0.05, b1=0.8, weight_decay=0.01)),
    "ademamix": dict(build=lambda ox, jnp: _c(ox).ademamix(
        0.05, b3=0.99, alpha=2.0, weight_decay=0.01)),
    "ademamix_scheduled": dict(build=lambda ox, jnp: _c(ox).ademamix(
        0.05, b3=ox.linear_schedule(0.9, 0.99, 5), alpha=ox.linear_schedule(0.0, 5.0, 8))),
    "simplified_ademamix": dict(build=lambda ox, jnp: _c(ox).simplified_ademamix(
        0.02, b1=0.9, b2=0.9, alpha=1.0, weight_decay=0.01)),
    "adopt": dict(build=lambda ox, jnp: _c(ox).adopt(0.05, b2=0.99)),
    "adopt_nesterov_noclip": dict(build=lambda ox, jnp: _c(ox).adopt(
        0.05, b1=0.8, nesterov=True, use_clipping=False)),
    "madgrad": dict(build=lambda ox, jnp: _c(ox).madgrad(0.05, momentum=0.8,
                                                          weight_decay=0.01)),
    "galore": dict(build=lambda ox, jnp: _c(ox).galore(
        0.05, rank=1, update_proj_gap=4, scale=0.5, weight_decay=0.01),
        compare_state=False),    # singular vectors are defined up to sign
    "dpsgd": dict(build=lambda ox, jnp: _c(ox).dpsgd(
        0.1, l2_norm_clip=0.5, noise_multiplier=0.3, seed=3, momentum=0.9), per_example=True),
    "dp_aggregate": dict(build=lambda ox, jnp: ox.chain(
        _c(ox).differentially_private_aggregate(1.0, 0.1, key=7), ox.sgd(0.2)),
        per_example=True),
    "split_real_and_imaginary": dict(build=lambda ox, jnp: _c(ox).split_real_and_imaginary(
        ox.adam(0.05)), complex=True),
}
