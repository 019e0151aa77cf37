"""corejax.lax: the primitive operations, each with all its transformation rules."""
from corejax.lax.elementwise import (
    neg, sign, floor, ceil, round, is_finite, exp, exp2, log, log1p, expm1, tanh, logistic,
    sin, cos, tan, asin, acos, atan, sinh, cosh, asinh, acosh, atanh, sqrt, rsqrt, cbrt, erf,
    erfc, erf_inv, lgamma, abs, bitwise_not, population_count, add, sub, mul, div, rem, pow, max,
    min, atan2, nextafter, bitwise_and, bitwise_or, bitwise_xor, shift_left,
    shift_right_logical, shift_right_arithmetic, eq, ne, lt, le, gt, ge, integer_pow, square,
    reciprocal, select_n, select, clamp, convert_element_type, bitcast_convert_type, full,
    stop_gradient,
)
from corejax.lax.elementwise import bitwise_not as not_
from corejax.lax.elementwise import bitwise_and as and_, bitwise_or as or_, bitwise_xor as xor
from corejax.lax.structural import (
    broadcast_in_dim, broadcast, reshape, transpose, squeeze, expand_dims, rev, slice,
    slice_in_dim, index_in_dim, pad, concatenate, iota, broadcasted_iota, dynamic_slice,
    dynamic_update_slice,
)
from corejax.lax.reductions import (
    reduce_sum, reduce_max, reduce_min, reduce_prod, reduce_and, reduce_or, argmax, argmin,
    cumsum,
)
from corejax.lax.dot import dot_general, dot
