"""Reductions: sum, mean, max, min, prod, argmax, argmin, var, std, all, any, cumsum, ..."""
from __future__ import annotations

import builtins
import math

import numpy as np

from corejax import core, dtypes, lax
from corejax.array import Array, plain_eager, wrap
from corejax.compiler.eager_kernels import FAST_MIN_SIZE
from corejax.core import get_aval
from corejax.numpy._core import (_PLAIN_DTYPES, asarray, canonicalize_axes, canonicalize_axis,
                                 check_arraylike)
from corejax.numpy._eager_fusion import fuse_eagerly, sum_of_squared_deviations
from corejax.numpy._ufuncs import reciprocal_dtypes

__all__ = []


def _kept_shape(shape, axes):
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


def _keep(out, axes, shape, keepdims):
    if not keepdims:
        return out
    return lax.reshape(out, _kept_shape(shape, axes))


def _upcast_small_ints(dt: np.dtype) -> np.dtype:
    """Sums and products of bools and small integers accumulate in the default int width."""
    if dt == np.bool_:
        return dtypes.default_int_dtype()
    kind, wide = dtypes.kind_of(dt), dtypes.default_int_dtype()
    if kind == "i" and dtypes.itemsize_bits(dt) < 8 * wide.itemsize:
        return wide
    if kind == "u" and dtypes.itemsize_bits(dt) < 8 * wide.itemsize:
        return np.dtype(f"u{wide.itemsize}")
    return dt


def _upcast_f16(dt: np.dtype) -> np.dtype:
    """float16 and bfloat16 sums, means and variances are computed in float32 (as JAX's)."""
    return np.dtype(np.float32) if dt in (dtypes.float16, dtypes.bfloat16) else dt


def _plain_reduction(prim, a, axis, keepdims, initial=None, combine=None):
    """(the values of) `prim` over `axis` of an eager float32 / float64 host Array below
    FAST_MIN_SIZE elements, where no eager kernel runs and the primitive's eager result is its
    impl's, with a Python scalar `initial` combined by the primitive `combine` (its impl on
    NumPy values) and the reduced dimensions kept if asked, as the full path below computes
    them; for a dtype of None and no `where`. Returns (NumPy result, reduced size), or None where the
    full path must decide (tests/test_numpy_dispatch.py compares the two bit for bit)."""
    v = a._value
    if type(v) is not np.ndarray or v.dtype not in _PLAIN_DTYPES or \
            not 0 < v.size < FAST_MIN_SIZE or not plain_eager() or \
            (initial is not None and type(initial) is not float and type(initial) is not int):
        return None
    axes = canonicalize_axes(axis, v.ndim)
    if not axes:            # (lax returns the operand itself: np.add.reduce would turn -0 to 0)
        return None
    r = prim.impl(v, axes=axes)
    if initial is not None:
        r = combine.numpy_impl(r, v.dtype.type(initial))
    if keepdims:
        r = np.reshape(r, _kept_shape(v.shape, axes))
    return r, _count(v.shape, axes)


def _reduction(name, lax_fn, upcast, identity=None, bool_op=None, upcast_f16=False,
               prim=None, combine=None):
    def fn(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
        if type(a) is Array and dtype is None and out is None and where is None:
            got = _plain_reduction(prim, a, axis, keepdims, initial, combine)
            if got is not None:
                return wrap(got[0], False)
        if type(a) is Array and axis is None and dtype is None and out is None and \
                not keepdims and initial is None and where is None and not a.weak_type and \
                a._value.dtype in _PLAIN_DTYPES and a._value.size:
            # the commonest call (a whole float32 / float64 array): what the steps below
            # reduce to for it, without them (each conversion below would return `a` as it is)
            return lax_fn(a, tuple(range(a._value.ndim)))
        if out is not None:
            raise NotImplementedError(f"The 'out' argument to jnp.{name} is not supported: "
                                      "corejax arrays are immutable.")
        check_arraylike(name, a)
        a = asarray(a)
        aval = get_aval(a)
        axes = canonicalize_axes(axis, aval.ndim)
        dt = dtypes.canonicalize_dtype(dtype) if dtype is not None else \
            (upcast(aval.dtype) if upcast else aval.dtype)
        result_dt = dt
        if upcast_f16 and dtype is None:
            dt = _upcast_f16(dt)
        if dt != aval.dtype or aval.weak_type:
            # a reduction's result is strongly typed, as in JAX (jnp.sum(3.0) is float32); the
            # conversion's transpose gives a weak input its weak cotangent back
            a = lax.convert_element_type(a, dt)
        if where is not None:
            if identity is None and initial is None:
                raise ValueError(f"jnp.{name} with where= requires an initial value.")
            from corejax.numpy._ufuncs import where as _where
            a = _where(where, a, lax.full((), identity(dt) if initial is None else initial, dt))
        empty = builtins.any(aval.shape[i] == 0 for i in axes)
        if dt == np.bool_ and bool_op is not None:
            result = bool_op(a, axes)
        elif empty and identity is None:
            if initial is None:
                raise ValueError(f"zero-size array to reduction operation {name} which has no "
                                 "identity")
            # an empty max / min is its initial value
            shape = tuple(n for i, n in enumerate(aval.shape) if i not in axes)
            return _keep(lax.full(shape, initial, result_dt), axes, aval.shape, keepdims)
        else:
            result = lax_fn(a, axes)
        if initial is not None:
            from corejax.numpy import _ufuncs
            join = {"sum": _ufuncs.add, "prod": _ufuncs.multiply, "max": _ufuncs.maximum,
                    "min": _ufuncs.minimum}[name]
            result = lax.convert_element_type(join(result, initial), dt)
        result = lax.convert_element_type(result, result_dt)
        return _keep(result, axes, aval.shape, keepdims)

    fn.__name__ = name
    fn.__doc__ = f"jnp.{name}: reduce over `axis` (all axes by default)."
    return fn


sum = _reduction("sum", lax.reduce_sum, _upcast_small_ints, lambda dt: 0, lax.reduce_or, True,
                 prim=lax.reduce_sum_p, combine=lax.add_p)
prod = _reduction("prod", lax.reduce_prod, _upcast_small_ints, lambda dt: 1, lax.reduce_and,
                  True, prim=lax.reduce_prod_p, combine=lax.mul_p)
max = _reduction("max", lax.reduce_max, None, None, lax.reduce_or, prim=lax.reduce_max_p,
                 combine=lax.max_p)
min = _reduction("min", lax.reduce_min, None, None, lax.reduce_and, prim=lax.reduce_min_p,
                 combine=lax.min_p)
amax, amin = max, min


def _bool_reduction(name, lax_fn):
    def fn(a, axis=None, out=None, keepdims=False, *, where=None):
        a = asarray(a)
        aval = get_aval(a)
        if aval.dtype != np.bool_:
            a = lax.ne(a, lax.full((), 0, aval.dtype))
        if where is not None:
            from corejax.numpy._ufuncs import where as _where
            a = _where(where, a, name == "all")
        axes = canonicalize_axes(axis, aval.ndim)
        return _keep(lax_fn(a, axes), axes, aval.shape, keepdims)
    fn.__name__ = name
    return fn


all = _bool_reduction("all", lax.reduce_and)
any = _bool_reduction("any", lax.reduce_or)


def _count(shape, axes):
    return math.prod(shape[i] for i in axes)


def _inexact_operand(name, a, axis, dtype):
    """`a` converted to the floating dtype a mean-like reduction accumulates in, and its axes."""
    check_arraylike(name, a)
    a = asarray(a)
    aval = get_aval(a)
    axes = canonicalize_axes(axis, aval.ndim)
    dt = dtypes.canonicalize_dtype(dtype) if dtype is not None else \
        dtypes.to_inexact_dtype(aval.dtype)
    return lax.convert_element_type(a, dt), aval.shape, axes, dt     # strong, as sum's


def _where_count(where, shape, axes, dt, keepdims):
    from corejax.numpy._core import broadcast_to_shape
    return sum(broadcast_to_shape(asarray(where), shape), axes, dtype=dt, keepdims=keepdims)


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    if type(a) is Array and dtype is None and out is None and where is None:
        got = _plain_reduction(lax.reduce_sum_p, a, axis, keepdims)
        if got is not None:     # the sum times its count's reciprocal, as _div_by_count does
            dt = a._value.dtype
            return wrap(lax.mul_p.numpy_impl(got[0], _reciprocal(got[1], dt)), False)
    a, shape, axes, result_dt = _inexact_operand("mean", a, axis, dtype)
    dt = _upcast_f16(result_dt)
    total = sum(a, axes, dtype=dt, keepdims=keepdims, where=where)
    if where is None:
        out = _div_by_count(total, _count(shape, axes), dt)
    else:
        out = lax.div(total, _where_count(where, shape, axes, dt, keepdims))
    return lax.convert_element_type(out, result_dt)


def _div_by_count(total, count, dt):
    """total / count for a constant count: times its reciprocal for the float types whose
    division by a constant XLA turns into that product (so means round as JAX's)."""
    dt = np.dtype(dt)
    if dt in reciprocal_dtypes:
        with np.errstate(divide="ignore"):
            return lax.mul(total, lax.full((), _reciprocal(count, dt), dt))
    return lax.div(total, lax.full((), count, dt))


def _reciprocal(count, dt):
    """1 / count rounded in `dt`."""
    return dt.type(1) / dt.type(count)


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
        correction=None):
    if correction is not None:
        ddof = correction
    a, shape, axes, result_dt = _inexact_operand("var", a, axis, dtype)
    dt = _upcast_f16(result_dt)
    a = lax.convert_element_type(a, dt)
    m = mean(a, axes, keepdims=True, where=where)
    dt = dtypes.real_dtype(dt)      # the variance of complex data is real
    # (eagerly, on a large array reduced whole: one pass, no squares' array, the same bits)
    total = None if where is not None else sum_of_squared_deviations(a, m, axes, keepdims)
    if total is None:
        total = sum(_squared_deviations(a, m), axes, keepdims=keepdims, where=where)
    if where is None:
        out = _div_by_count(total, _count(shape, axes) - ddof, dt)
    else:
        n = _where_count(where, shape, axes, dt, keepdims)
        out = lax.div(total, lax.sub(n, lax.full((), ddof, dt)))
    return lax.convert_element_type(out, dtypes.real_dtype(result_dt))


@fuse_eagerly(2)
def _squared_deviations(a, m):
    """|a - m|**2, m broadcast from its kept axes: one pass over `a` when fused (the sums
    around it stay NumPy's, whose pairwise order a compiled sum does not follow)."""
    shape = get_aval(a).shape
    centered = lax.sub(a, lax.broadcast_in_dim(m, shape, tuple(range(len(shape)))))
    if dtypes.is_complex(get_aval(centered).dtype):
        re, im = lax.real(centered), lax.imag(centered)
        return lax.add(lax.mul(re, re), lax.mul(im, im))
    return lax.mul(centered, centered)


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
        correction=None):
    return lax.sqrt(var(a, axis, dtype, out, ddof, keepdims, where=where, correction=correction))


def _arg(name, lax_fn):
    def fn(a, axis=None, out=None, keepdims=False):
        a = asarray(a)
        aval = get_aval(a)
        if axis is None:
            flat = lax.reshape(a, (aval.size,))
            result = lax_fn(flat, 0, dtypes.default_int_dtype())
            return lax.reshape(result, (1,) * aval.ndim) if keepdims else result
        ax = canonicalize_axis(axis, aval.ndim)
        result = lax_fn(a, ax, dtypes.default_int_dtype())
        return _keep(result, (ax,), aval.shape, keepdims)
    fn.__name__ = name
    return fn


argmax = _arg("argmax", lax.argmax)
argmin = _arg("argmin", lax.argmin)


def cumsum(a, axis=None, dtype=None, out=None):
    """Cumulative sum along `axis` (flattened when None); unlike sum, small integers keep
    their dtype (only bool becomes int)."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.cumsum is not supported.")
    return _cumulative(lax.add, a, axis, dtype, upcast=False)


def cumprod(a, axis=None, dtype=None, out=None):
    """Cumulative product along `axis` (flattened when None); small integers keep their dtype,
    booleans become int."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.cumprod is not supported.")
    check_arraylike("cumprod", a)
    return _cumulative(lax.mul, a, axis, dtype, upcast=False)


def _cumulative(combine, a, axis, dtype, upcast):
    from corejax.lax import associative_scan
    a = asarray(a)
    aval = get_aval(a)
    if axis is None:
        a = lax.reshape(a, (aval.size,))
        axis = 0
    if dtype is not None:
        dt = dtypes.canonicalize_dtype(dtype)
    elif upcast:
        dt = _upcast_small_ints(aval.dtype)
    else:
        dt = dtypes.default_int_dtype() if aval.dtype == np.bool_ else aval.dtype
    a = lax.convert_element_type(a, dt)
    axis = canonicalize_axis(axis, get_aval(a).ndim)
    if combine is lax.add:
        return lax.cumsum(a, axis)
    if get_aval(a).shape[axis] == 0:
        return a
    return associative_scan(combine, a, axis=axis)


def _cumulative_api(name, combine, identity):
    def fn(x, /, *, axis=None, dtype=None, include_initial=False):
        check_arraylike(name, x)
        x = asarray(x)
        ndim = get_aval(x).ndim
        if ndim == 0:
            raise ValueError(f"The input must be non-scalar to take a cumulative "
                             f"{'sum' if combine is lax.add else 'product'}, however a scalar "
                             "value or scalar array was given.")
        if axis is None:
            if ndim > 1:
                raise ValueError(f"The input array has rank {ndim}, however axis was not set to "
                                 "an explicit value. The axis argument is only optional for "
                                 "one-dimensional arrays.")
            axis = 0
        axis = canonicalize_axis(axis, ndim)
        out = _cumulative(combine, x, axis, dtype, upcast=True)
        if include_initial:
            pads = [(0, 0, 0)] * ndim
            pads[axis] = (1, 0, 0)
            out = lax.pad(out, lax.full((), identity, get_aval(out).dtype), pads)
        return out
    fn.__name__ = name
    fn.__doc__ = (f"Array-API {name} along `axis` (required beyond one dimension); small "
                  "integers accumulate in the default int width; include_initial prepends "
                  f"{identity}.")
    return fn


cumulative_sum = _cumulative_api("cumulative_sum", lax.add, 0)
cumulative_prod = _cumulative_api("cumulative_prod", lax.mul, 1)


def ptp(a, axis=None, keepdims=False):
    return lax.sub(max(a, axis, keepdims=keepdims), min(a, axis, keepdims=keepdims))


def count_nonzero(a, axis=None, keepdims=False):
    a = asarray(a)
    nz = lax.ne(a, lax.full((), 0, get_aval(a).dtype))
    return sum(nz, axis, dtype=dtypes.default_int_dtype(), keepdims=keepdims)


def nonzero(a, *, size=None, fill_value=None):
    """Indices of non-zero elements. Needs a concrete array, or a static `size` under jit."""
    a = asarray(a)
    aval = get_aval(a)
    if size is None:
        concrete = core.concrete_or_error(
            np.asarray, a, "jnp.nonzero's output shape depends on the values of its input; pass "
                           "a static size= argument to use it inside jit")
        return tuple(asarray(i.astype(dtypes.default_int_dtype())) for i in np.nonzero(concrete))
    flat = lax.reshape(lax.ne(a, lax.full((), 0, aval.dtype)), (aval.size,))
    # The positions of the first `size` non-zeros, found with a cumulative count.
    idx_dt = dtypes.default_int_dtype()
    counts = lax.cumsum(lax.convert_element_type(flat, idx_dt))
    fill = 0 if fill_value is None else fill_value
    out_flat = []
    targets = lax.broadcasted_iota(idx_dt, (size,), 0)
    # For target k, the flat index is the number of elements whose count is <= k.
    le = lax.le(lax.broadcast_in_dim(counts, (size, aval.size), (1,)),
                lax.broadcast_in_dim(targets, (size, aval.size), (0,)))
    flat_idx = lax.reduce_sum(lax.convert_element_type(le, idx_dt), (1,))
    valid = lax.lt(targets, lax.reduce_max(lax.concatenate(
        [counts, lax.full((1,), 0, idx_dt)], 0), (0,)))
    for dim in reversed(aval.shape):
        out_flat.append(lax.rem(flat_idx, lax.full((), dim, idx_dt)))
        flat_idx = lax.div(flat_idx, lax.full((), dim, idx_dt))
    return tuple(lax.select(valid, i, lax.full((size,), fill, idx_dt))
                 for i in reversed(out_flat))


def argwhere(a, *, size=None, fill_value=None):
    from corejax.numpy._shape import stack
    return stack(nonzero(a, size=size, fill_value=fill_value), axis=-1)
