"""Reductions over axes (sum, max, min, prod, and, or), argmax/argmin and cumulative sums,
products, maxima, minima and log-sum-exps."""
from __future__ import annotations

import operator

import numpy as np

from corejax.config import config
from corejax import dtypes
from corejax.core import Primitive, ShapedArray, get_aval
from corejax.compiler import registry
from corejax.transforms import ad, batching
from corejax.transforms.ad import Zero, deflinear
from corejax.lax._factories import ANY, FLOATING, NUMERIC, check_dtype

__all__ = []


def _reduced_shape(shape, axes):
    return tuple(s for i, s in enumerate(shape) if i not in axes)


def _reduction(name, np_fn, accepted, monoid):
    """A reduction primitive `name(x, axes)`; `monoid` names the combining op for lowering."""
    prim = Primitive(name)
    prim.def_impl(lambda x, axes: np.asarray(np_fn(x, axis=axes)).astype(x.dtype, copy=False))

    def abstract_eval(x, axes):
        check_dtype(name, x, accepted)
        if monoid == "add":
            _check_half_sum(x, axes)
        for a in axes:
            if not 0 <= a < x.ndim:
                raise ValueError(f"{name}: axis {a} is out of bounds for array of dimension "
                                 f"{x.ndim}.")
        return ShapedArray(_reduced_shape(x.shape, axes), x.dtype, x.weak_type)

    prim.def_abstract_eval(abstract_eval)
    prim.weak_type_rule = lambda x, axes: dtypes.is_weakly_typed(x)

    def batch(vals, dims, axes):
        (x,), (d,) = vals, dims
        new_axes = tuple(a + (a >= d) for a in axes)
        out_d = d - sum(1 for a in axes if a < d)
        return prim.bind(x, axes=new_axes), out_d

    batching.primitive_batchers[prim] = batch
    registry.def_kernel(prim, ("reduce", monoid))
    return prim


def _canon(axes, ndim):
    if axes is None:
        return tuple(range(ndim))
    if isinstance(axes, (int, np.integer)):
        axes = (axes,)
    out = []
    for a in axes:
        a = int(a)
        if not -ndim <= a < ndim:
            raise ValueError(f"axis {a} is out of bounds for array of dimension {ndim}")
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"duplicate value in 'axis': {tuple(axes)}")
    return tuple(sorted(out))


# --- sum -------------------------------------------------------------------------------------

# (np.add.reduce is what np.sum runs for an ndarray, without its Python wrapper)
reduce_sum_p = _reduction("reduce_sum", np.add.reduce, NUMERIC, "add")


def _reduce_sum_transpose(ct, x, axes):
    if type(ct) is Zero:
        return [None]
    shape = x.aval.shape
    kept = tuple(i for i in range(len(shape)) if i not in axes)
    return [broadcast_in_dim(ct, shape, kept)]


deflinear(reduce_sum_p, _reduce_sum_transpose)


def _check_half_sum(aval, axes) -> None:
    """allow_f16_reductions=False: a sum of float16 / bfloat16 values over more than one
    element per output raises (it would accumulate in half precision), as in JAX."""
    if aval.dtype in (dtypes.float16, dtypes.bfloat16) and not config.allow_f16_reductions \
            and not all(aval.shape[a] == 1 for a in axes):
        raise ValueError(f"reduce_sum on operand {aval.str_short()} is not allowed when "
                         "jax_allow_f16_reductions=False. Sum in float32 (x.astype(jnp.float32)"
                         ", or jnp.sum, which accumulates half precision in float32), or set "
                         "allow_f16_reductions back to True.")


def reduce_sum(x, axes=None):
    aval = get_aval(x)
    axes = _canon(axes, aval.ndim)
    if not axes:
        return x
    if aval.dtype.itemsize == 2:
        _check_half_sum(aval, axes)
    return reduce_sum_p.bind(x, axes=axes)


# --- max / min -------------------------------------------------------------------------------

def _zero_ordered(np_fn, negative):
    """np.max / np.min with XLA's order of signed zeros (-0 below +0): a maximum that is zero
    is -0 only where every zero of its slice is (np.max returns whichever zero its loops meet
    first, in an order that depends on the layout and the SIMD path), a minimum is -0 where
    any is. NaN propagates as in np.max."""
    def impl(x, axis):
        out = np.asarray(np_fn(x, axis=axis))
        if x.dtype.kind != "f" or not x.size:
            return out
        zero = out == 0
        if not zero.any():
            return out
        # min: -0 where the slice holds a -0; max: -0 unless it holds a +0
        holds = np.any((x == 0) & (np.signbit(x) == negative), axis=axis)
        return np.where(zero, np.where(holds == negative, -0.0, 0.0).astype(out.dtype), out)
    return impl


reduce_max_p = _reduction("reduce_max", _zero_ordered(np.maximum.reduce, False), ANY, "max")
reduce_min_p = _reduction("reduce_min", _zero_ordered(np.minimum.reduce, True), ANY, "min")


def _chooser_jvp(prim):
    def jvp(primals, tangents, axes):
        (x,), (t,) = primals, tangents
        ans = prim.bind(x, axes=axes)
        if type(t) is Zero:
            return ans, Zero(get_aval(ans).to_tangent_aval())
        # The tangent at the chosen location, averaged over ties.
        shape = get_aval(x).shape
        kept = tuple(i for i in range(len(shape)) if i not in axes)
        location = eq(x, broadcast_in_dim(ans, shape, kept))
        location = convert_element_type(location, get_aval(t).dtype)
        counts = reduce_sum(location, axes)
        return ans, div(reduce_sum(mul(t, location), axes), counts)
    return jvp


ad.primitive_jvps[reduce_max_p] = _chooser_jvp(reduce_max_p)
ad.primitive_jvps[reduce_min_p] = _chooser_jvp(reduce_min_p)


def reduce_max(x, axes=None):
    axes = _canon(axes, get_aval(x).ndim)
    return reduce_max_p.bind(x, axes=axes) if axes else x


def reduce_min(x, axes=None):
    axes = _canon(axes, get_aval(x).ndim)
    return reduce_min_p.bind(x, axes=axes) if axes else x


# --- prod ------------------------------------------------------------------------------------

reduce_prod_p = _reduction("reduce_prod", np.multiply.reduce, NUMERIC, "mul")


def _exclusive_cumprod(x, axis):
    """Products of all earlier elements along `axis` (1 for the first), in log2(n) steps,
    built from differentiable primitives so that higher derivatives work too."""
    n = get_aval(x).shape[axis]
    one = full((), 1, get_aval(x).dtype)
    ndim = get_aval(x).ndim
    cfg = [(0, 0, 0)] * ndim
    cfg[axis] = (1, -1, 0)
    acc = pad(x, one, cfg)  # shift by one: exclusive
    shift = 1
    while shift < n:
        cfg = [(0, 0, 0)] * ndim
        cfg[axis] = (shift, -shift, 0)
        acc = mul(acc, pad(acc, one, cfg))
        shift *= 2
    return acc


def _reduce_prod_jvp(primals, tangents, axes):
    (x,), (t,) = primals, tangents
    ans = reduce_prod_p.bind(x, axes=axes)
    if type(t) is Zero:
        return ans, Zero(get_aval(ans).to_tangent_aval())
    aval = get_aval(x)
    kept = tuple(i for i in range(aval.ndim) if i not in axes)
    perm = kept + tuple(axes)
    xt = transpose(x, perm)
    tt = transpose(t, perm)
    lead = tuple(aval.shape[i] for i in kept)
    n = int(np.prod([aval.shape[a] for a in axes], dtype=np.int64))
    xf = reshape(xt, lead + (n,))
    tf = reshape(tt, lead + (n,))
    axis = len(lead)
    others = mul(_exclusive_cumprod(xf, axis), rev(_exclusive_cumprod(rev(xf, (axis,)), axis),
                                                    (axis,)))
    return ans, reduce_sum(mul(tf, others), (axis,))


ad.primitive_jvps[reduce_prod_p] = _reduce_prod_jvp


def reduce_prod(x, axes=None):
    axes = _canon(axes, get_aval(x).ndim)
    return reduce_prod_p.bind(x, axes=axes) if axes else x


# --- and / or --------------------------------------------------------------------------------

reduce_and_p = _reduction("reduce_and", np.all, ("bool",), "and")
reduce_or_p = _reduction("reduce_or", np.any, ("bool",), "or")
ad.defjvp_zero(reduce_and_p)
ad.defjvp_zero(reduce_or_p)


def reduce_and(x, axes=None):
    axes = _canon(axes, get_aval(x).ndim)
    return reduce_and_p.bind(x, axes=axes) if axes else x


def reduce_or(x, axes=None):
    axes = _canon(axes, get_aval(x).ndim)
    return reduce_or_p.bind(x, axes=axes) if axes else x


# --- xor ------------------------------------------------------------------------------------

reduce_xor_p = _reduction("reduce_xor", np.bitwise_xor.reduce, ("bool", "integer"), "xor")
ad.defjvp_zero(reduce_xor_p)


def reduce_xor(operand, axes):
    """The bitwise (logical, for bools) exclusive or of `operand` over `axes`."""
    aval = get_aval(operand)
    if aval.dtype.kind not in "biu":
        raise TypeError(f"logical reduction requires operand dtype bool or int, got "
                        f"{aval.dtype.name}.")
    axes = _canon(axes, aval.ndim)
    if not axes:
        return convert_element_type(operand, aval.dtype)
    return reduce_xor_p.bind(operand, axes=axes)


# --- argmax / argmin -------------------------------------------------------------------------

def _arg_reduction(name, np_fn):
    prim = Primitive(name)
    prim.def_impl(lambda x, axes, index_dtype: np_fn(x, axis=axes[0]).astype(index_dtype))

    def abstract_eval(x, axes, index_dtype):
        check_dtype(name, x, ANY)
        (axis,) = axes
        if not 0 <= axis < x.ndim:
            raise ValueError(f"{name}: axis {axis} is out of bounds for array of dimension "
                             f"{x.ndim}.")
        if x.shape[axis] == 0:
            raise ValueError(f"{name}: attempt to get {name} of an empty sequence.")
        return ShapedArray(_reduced_shape(x.shape, axes), index_dtype)

    prim.def_abstract_eval(abstract_eval)
    prim.weak_type_rule = lambda *a, **p: False
    ad.defjvp_zero(prim)

    def batch(vals, dims, axes, index_dtype):
        (x,), (d,) = vals, dims
        (axis,) = axes
        new_axis = axis + (axis >= d)
        return prim.bind(x, axes=(new_axis,), index_dtype=index_dtype), d - (axis < d)

    batching.primitive_batchers[prim] = batch
    registry.def_kernel(prim, ("argreduce", name))
    return prim


argmax_p = _arg_reduction("argmax", np.argmax)
argmin_p = _arg_reduction("argmin", np.argmin)


def argmax(x, axis: int, index_dtype=np.int32):
    axis = _canon(axis, get_aval(x).ndim)
    return argmax_p.bind(x, axes=axis, index_dtype=dtypes.canonicalize_dtype(index_dtype))


def argmin(x, axis: int, index_dtype=np.int32):
    axis = _canon(axis, get_aval(x).ndim)
    return argmin_p.bind(x, axes=axis, index_dtype=dtypes.canonicalize_dtype(index_dtype))


# --- cumulative sum --------------------------------------------------------------------------

cumsum_p = Primitive("cumsum")


def _cumsum_impl(x, axis, reverse):
    _xla_axis("cumsum", axis, x.ndim)
    if reverse:
        return np.flip(np.cumsum(np.flip(x, axis), axis=axis, dtype=x.dtype), axis)
    return np.cumsum(x, axis=axis, dtype=x.dtype)


def _cumsum_abstract(x, axis, reverse):
    check_dtype("cumsum", x, NUMERIC)
    if not 0 <= _xla_axis("cumsum", axis, x.ndim) < x.ndim:
        raise ValueError(f"cumsum: axis {axis} is out of bounds for array of dimension {x.ndim}.")
    return ShapedArray(x.shape, x.dtype, x.weak_type)


cumsum_p.def_impl(_cumsum_impl)
cumsum_p.def_abstract_eval(_cumsum_abstract)
cumsum_p.weak_type_rule = lambda x, **p: dtypes.is_weakly_typed(x)
deflinear(cumsum_p, lambda ct, x, axis, reverse: [
    None if type(ct) is Zero else cumsum(ct, axis, not reverse)])
batching.primitive_batchers[cumsum_p] = lambda vals, dims, axis, reverse: (
    cumsum_p.bind(vals[0], axis=axis + (axis >= dims[0]), reverse=reverse), dims[0])
registry.def_kernel(cumsum_p, ("scan", "add"))


def _scan_axis(axis, aval):
    """The cumulative ops' axis as given (negative axes are refused where XLA would see them,
    by _xla_axis: evaluating, compiling or batching the primitive, but not differentiating
    cumprod/cummax/cummin/cumlogsumexp, whose jvp is an associative scan, as in JAX)."""
    axis = operator.index(axis)
    if not -aval.ndim <= axis < aval.ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of shape {aval.shape}")
    return axis


def _xla_axis(name, axis, ndim):
    if axis < 0:
        raise ValueError(f"XLA operations do not allow negative axes: lax.{name} got "
                         f"axis={axis}; pass axis={axis % ndim} (jnp.{name} accepts negative "
                         f"axes)")
    return axis


def cumsum(x, axis: int = 0, reverse: bool = False):
    axis = _scan_axis(axis, get_aval(x))
    return cumsum_p.bind(x, axis=axis, reverse=bool(reverse))


# --- cumulative products, maxima, minima and log-sum-exps ------------------------------------

def _cumulative(name, np_accumulate, accepted, monoid):
    """A scan primitive `name(x, axis, reverse)` with cumsum's shape, dtype and batching rules;
    its jvp (set by the caller) differentiates the same associative scan JAX differentiates."""
    prim = Primitive(name)

    def impl(x, axis, reverse):
        _xla_axis(name, axis, x.ndim)
        if reverse:
            x = np.flip(x, axis)
        with np.errstate(all="ignore"):
            out = np_accumulate(x, axis)
        return np.flip(out, axis) if reverse else out

    def abstract_eval(x, axis, reverse):
        check_dtype(name, x, accepted)
        if not 0 <= _xla_axis(name, axis, x.ndim) < x.ndim:
            raise ValueError(f"{name}: axis {axis} is out of bounds for array of dimension "
                             f"{x.ndim}.")
        return ShapedArray(x.shape, x.dtype, x.weak_type)

    prim.def_impl(impl)
    prim.def_abstract_eval(abstract_eval)
    prim.weak_type_rule = lambda x, **p: dtypes.is_weakly_typed(x)
    batching.primitive_batchers[prim] = lambda vals, dims, axis, reverse: (
        prim.bind(vals[0], axis=axis + (axis >= dims[0]), reverse=reverse), dims[0])
    registry.def_kernel(prim, ("scan", monoid))
    return prim


def _accumulate_in(ufunc):
    def accumulate(x, axis):
        return ufunc.accumulate(x, axis=axis, dtype=x.dtype)
    return accumulate


def _logaddexp_accumulate(x, axis):
    # float16 / bfloat16 accumulate in float32 and round once per element
    wide = x.astype(np.float32) if x.dtype.itemsize < 4 else x
    return np.logaddexp.accumulate(wide, axis=axis).astype(x.dtype)


cumprod_p = _cumulative("cumprod", _accumulate_in(np.multiply), NUMERIC, "mul")
cummax_p = _cumulative("cummax", _accumulate_in(np.maximum), NUMERIC, "max")
cummin_p = _cumulative("cummin", _accumulate_in(np.minimum), NUMERIC, "min")
cumlogsumexp_p = _cumulative("cumlogsumexp", _logaddexp_accumulate, FLOATING, "logaddexp")


def _finite_or_zero(x):
    """x with its infinities replaced by 0, so that exp(x - out) is exp(0) = 1 for x = out."""
    return select(eq(x, full_like(x, np.inf)), full_like(x, 0), x)


def _logaddexp_pair(a, b):
    """(log(exp(a) + exp(b)), and its jvp) over pairs (value, tangent), as JAX's logaddexp."""
    (x, tx), (y, ty) = a, b
    big = maximum(x, y)
    delta = sub(x, y)
    out = add(big, log1p(exp(neg(absolute(delta)))))
    out = select(ne(delta, delta), add(x, y), out)  # inf - inf: the sum carries the sign
    fin = _finite_or_zero(out)
    t = add(mul(tx, exp(sub(_finite_or_zero(x), fin))),
            mul(ty, exp(sub(_finite_or_zero(y), fin))))
    return out, t


def _cumulative_jvp(prim, combine):
    """The jvp of `prim` is that of the associative scan of `combine` (as in JAX), so ties of
    cummax/cummin split the tangent in halves at each pairwise step of JAX's scan tree."""
    def jvp(primals, tangents, axis, reverse):
        (x,), (t,) = primals, tangents
        axis %= get_aval(x).ndim
        ans = prim.bind(x, axis=axis, reverse=reverse)
        if type(t) is Zero:
            return ans, Zero(get_aval(ans).to_tangent_aval())
        from corejax.lax.control_flow import associative_scan

        def scan(v):
            return associative_scan(combine, v, reverse=reverse, axis=axis)
        _, (t_out,) = ad.jvp_flat(lambda v: [scan(v)], [x], [t])
        return ans, t_out
    return jvp


def _pair_jvp(combine_pairs):
    def jvp(primals, tangents, axis, reverse):
        (x,), (t,) = primals, tangents
        axis %= get_aval(x).ndim
        ans = cumlogsumexp_p.bind(x, axis=axis, reverse=reverse)
        if type(t) is Zero:
            return ans, Zero(get_aval(ans).to_tangent_aval())
        from corejax.lax.control_flow import associative_scan
        _, t_out = associative_scan(combine_pairs, (x, t), reverse=reverse, axis=axis)
        return ans, t_out
    return jvp


ad.primitive_jvps[cumprod_p] = _cumulative_jvp(cumprod_p, lambda a, b: mul(a, b))
ad.primitive_jvps[cummax_p] = _cumulative_jvp(cummax_p, lambda a, b: maximum(a, b))
ad.primitive_jvps[cummin_p] = _cumulative_jvp(cummin_p, lambda a, b: minimum(a, b))
ad.primitive_jvps[cumlogsumexp_p] = _pair_jvp(_logaddexp_pair)


def _cumulative_api(prim, accepted):
    def fn(operand, axis: int = 0, reverse: bool = False):
        aval = get_aval(operand)
        check_dtype(prim.name, aval, accepted)
        if prim is cumlogsumexp_p and aval.dtype.kind in "iu":
            # JAX fails here building the -inf identity in the integer dtype
            raise OverflowError(f"cumlogsumexp: cannot use the identity -inf in the integer "
                                f"dtype {aval.dtype.name}; convert the operand to a floating "
                                f"dtype first.")
        return prim.bind(operand, axis=_scan_axis(axis, aval), reverse=bool(reverse))
    fn.__name__ = fn.__qualname__ = prim.name
    fn.__doc__ = (f"The {prim.name[3:]} of `operand`'s elements up to each position along "
                  f"`axis` (from the end when `reverse`).")
    return fn


cumprod = _cumulative_api(cumprod_p, NUMERIC)
cummax = _cumulative_api(cummax_p, NUMERIC)
cummin = _cumulative_api(cummin_p, NUMERIC)
cumlogsumexp = _cumulative_api(cumlogsumexp_p, NUMERIC)


from corejax.lax.elementwise import (add, convert_element_type, div, eq, exp,  # noqa: E402
                                     full, full_like, log1p, mul, ne, neg, select, sub)
from corejax.lax.elementwise import (abs as absolute, max as maximum,  # noqa: E402
                                     min as minimum)
from corejax.lax.structural import (broadcast_in_dim, pad, reshape, rev,  # noqa: E402
                                    transpose)
