"""corejax.lax: the primitive operations, each with all its transformation rules."""
from corejax.lax.elementwise import (
    neg, sign, floor, ceil, round, is_finite, exp, exp2, log, log1p, expm1, tanh, logistic,
    sin, cos, tan, asin, acos, atan, sinh, cosh, asinh, acosh, atanh, sqrt, rsqrt, cbrt, erf,
    erfc, erf_inv, lgamma, abs, bitwise_not, population_count, add, sub, mul, div, rem, pow, max,
    min, atan2, nextafter, bitwise_and, bitwise_or, bitwise_xor, shift_left,
    shift_right_logical, shift_right_arithmetic, eq, ne, lt, le, gt, ge, integer_pow, square,
    reciprocal, select_n, select, clamp, convert_element_type, bitcast_convert_type, full,
    full_like, stop_gradient,
)
from corejax.lax.elementwise import bitwise_not as not_
from corejax.lax._complex import real, imag, conj, complex
from corejax.lax.fft import fft, FftType
from corejax.lax.elementwise import bitwise_and as and_, bitwise_or as or_, bitwise_xor as xor
from corejax.lax.structural import (
    broadcast_in_dim, broadcast, reshape, transpose, squeeze, expand_dims, rev, slice,
    slice_in_dim, index_in_dim, pad, concatenate, split, iota, broadcasted_iota, dynamic_slice,
    dynamic_update_slice, dynamic_slice_in_dim, dynamic_update_slice_in_dim,
    dynamic_index_in_dim,
)
from corejax.lax.reductions import (
    reduce_sum, reduce_max, reduce_min, reduce_prod, reduce_and, reduce_or, argmax, argmin,
    cumsum, cumprod, cummax, cummin, cumlogsumexp,
)
from corejax.lax.dot import dot_general, dot, Precision
from corejax.lax._precision import AccuracyMode, DotAlgorithm, DotAlgorithmPreset, Tolerance
from corejax.lax.ragged import RaggedDotDimensionNumbers, ragged_dot, ragged_dot_general
from corejax.lax.sorting import sort, sort_key_val, top_k
from corejax.lax.control_flow import (
    cond, switch, while_loop, fori_loop, scan, map, associative_scan,
)
from corejax.lax.indexing import (
    GatherDimensionNumbers, ScatterDimensionNumbers, GatherScatterMode, gather, scatter,
    scatter_add, scatter_sub, scatter_mul, scatter_min, scatter_max,
)
from corejax.lax.conv import (
    ConvDimensionNumbers, conv_dimension_numbers, conv_general_dilated, conv,
    conv_with_general_padding, conv_transpose, padtype_to_pads, conv_general_permutations,
    conv_shape_tuple, conv_general_shape_tuple, conv_transpose_shape_tuple,
    reduce_window_shape_tuple, conv_general_dilated_patches, conv_general_dilated_local,
)
from corejax.lax.windowed import (
    reduce_window, reduce_window_sum, reduce_window_max, reduce_window_min,
)
from corejax.lax.prng import threefry2x32
from corejax.lax.rng_bits import RandomAlgorithm, rng_bit_generator, rng_uniform
from corejax.lax.composite import composite
from corejax.lax.tokens import create_token, after_all
from corejax.lax.identities import stage, optimization_barrier, dce_sink
from corejax.lax.stacking import stack, unstack, tile
from corejax.lax import total_order as _total_order
from corejax.lax.special import (
    digamma, polygamma, igamma, igammac, igamma_grad_a, random_gamma_grad, zeta, betainc,
    bessel_i0e, bessel_i1e,
)
from corejax.lax.reductions import reduce_xor
from corejax.lax.bits import clz, mulhi, reduce_precision
from corejax.lax._composed import (
    reduce, batch_matmul, broadcast_shapes, broadcast_to_rank, broadcast_like, collapse,
    index_take, dynamic_update_index_in_dim, empty, shape_as_value,
    scatter_apply, approx_max_k, approx_min_k, RoundingMethod, dtype,
    with_sharding_constraint, platform_dependent, DotDimensionNumbers,
    ConvGeneralDilatedDimensionNumbers, PrecisionLike,
)
from corejax.lax import linalg
from corejax.lax._linalg_solves import custom_linear_solve, custom_root
from corejax.parallel import (
    psum, pmean, pmax, pmin, all_gather, psum_scatter, all_to_all, ppermute, pshuffle,
    pswapaxes, axis_index, axis_size,
)

# The primitive objects themselves, under JAX's names (`lax.exp_p`): imported last, once every
# module defining one has run.
from corejax.lax import _primitive_names
globals().update(_primitive_names.primitives_by_attribute())
del _primitive_names
