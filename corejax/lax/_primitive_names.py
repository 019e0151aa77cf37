"""The primitives behind lax's functions, under the names JAX exports them by (`lax.exp_p`,
`lax.scatter_add_p`, ...), so a jaxpr interpreter written for JAX (`eqn.primitive is lax.exp_p`)
runs unchanged.

Only primitives corejax stages under JAX's own name are exported. Where corejax composes an
operation from other primitives (lax.square is a mul, lax.clamp a max and a min, top_k a sort),
JAX's `*_p` name is absent rather than bound to something a jaxpr never contains.
"""
import sys

from corejax.core import Primitive

# JAX's attribute names; each resolves to the corejax primitive of the same name, with the two
# spellings JAX uses for names that are not identifiers.
NAMES = (
    'abs_p', 'acos_p', 'acosh_p', 'add_p', 'after_all_p', 'all_gather_p', 'all_to_all_p', 'and_p',
    'argmax_p', 'argmin_p', 'asin_p', 'asinh_p', 'atan2_p', 'atan_p', 'atanh_p', 'axis_index_p',
    'bessel_i0e_p', 'bessel_i1e_p', 'bitcast_convert_type_p', 'broadcast_in_dim_p', 'cbrt_p',
    'ceil_p', 'clamp_p', 'clz_p', 'complex_p', 'concatenate_p', 'cond_p', 'conj_p',
    'conv_general_dilated_p', 'convert_element_type_p', 'cos_p', 'cosh_p', 'create_token_p',
    'cumlogsumexp_p', 'cummax_p', 'cummin_p', 'cumprod_p', 'cumsum_p', 'dce_sink_p', 'digamma_p',
    'div_p', 'dot_general_p', 'dynamic_slice_p', 'dynamic_update_slice_p', 'eq_p', 'eq_to_p',
    'erf_inv_p', 'erf_p', 'erfc_p', 'exp2_p', 'exp_p', 'expm1_p', 'fft_p', 'floor_p', 'gather_p',
    'ge_p', 'gt_p', 'igamma_grad_a_p', 'igamma_p', 'igammac_p', 'imag_p', 'integer_pow_p',
    'iota_p', 'is_finite_p', 'le_p', 'le_to_p', 'lgamma_p', 'linear_solve_p', 'log1p_p', 'log_p',
    'logistic_p', 'lt_p', 'lt_to_p', 'max_p', 'min_p', 'mul_p', 'mulhi_p', 'ne_p', 'neg_p',
    'nextafter_p', 'not_p', 'optimization_barrier_p', 'or_p', 'pad_p', 'pmax_p', 'pmin_p',
    'polygamma_p', 'population_count_p', 'pow_p', 'ppermute_p', 'psum_p', 'real_p', 'reduce_and_p',
    'reduce_max_p', 'reduce_min_p', 'reduce_or_p', 'reduce_precision_p', 'reduce_prod_p',
    'reduce_sum_p', 'reduce_window_max_p', 'reduce_window_min_p', 'reduce_window_sum_p',
    'reduce_xor_p', 'regularized_incomplete_beta_p', 'rem_p', 'reshape_p', 'rev_p',
    'rng_bit_generator_p', 'rng_uniform_p', 'round_p', 'rsqrt_p', 'scan_p', 'scatter_add_p',
    'scatter_max_p', 'scatter_min_p', 'scatter_mul_p', 'scatter_p', 'scatter_sub_p', 'select_n_p',
    'shift_left_p', 'shift_right_arithmetic_p', 'shift_right_logical_p', 'sign_p', 'sin_p',
    'sinh_p', 'slice_p', 'sort_p', 'split_p', 'sqrt_p', 'square_p', 'squeeze_p', 'stack_p',
    'stage_p', 'stop_gradient_p', 'sub_p', 'tan_p', 'tanh_p', 'tile_p', 'top_k_p', 'transpose_p',
    'unstack_p', 'while_p', 'xor_p', 'zeta_p',
)
_RENAMED = {"linear_solve_p": "custom_linear_solve"}


def _jax_name(attribute: str) -> str:
    if attribute in _RENAMED:
        return _RENAMED[attribute]
    stem = attribute[:-2]
    return stem.replace("_", "-", 1) if stem.startswith("scatter_") else stem


def primitives_by_attribute() -> dict:
    """{attribute: Primitive} over the primitives defined in corejax.lax and corejax.parallel
    (imported by now: lax/__init__ imports this module last)."""
    defined = {}
    for name, module in list(sys.modules.items()):
        if module is None or not (name.startswith("corejax.lax") or name == "corejax.parallel"):
            continue
        for value in vars(module).values():
            if isinstance(value, Primitive):
                defined.setdefault(value.name, value)
    missing = [a for a in NAMES if _jax_name(a) not in defined]
    if missing:
        raise ImportError(f"corejax.lax: no primitive defined for {missing}")
    return {a: defined[_jax_name(a)] for a in NAMES}
