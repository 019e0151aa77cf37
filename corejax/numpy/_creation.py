"""Array creation: zeros, ones, full, *_like, arange, linspace, eye, identity, tri."""
from __future__ import annotations

import operator

import numpy as np

from corejax import core, dtypes, lax
from corejax.array import place_new
from corejax.core import get_aval
from corejax.numpy._core import asarray, concrete_int

__all__ = []


def _shape(shape) -> tuple:
    if isinstance(shape, (int, np.integer)) or (hasattr(shape, "shape") and np.ndim(shape) == 0):
        shape = (shape,)
    try:
        out = tuple(concrete_int(s, "shape") for s in shape)
    except TypeError:   # (a traced entry too: JAX's TypeError, not a ConcretizationTypeError)
        raise TypeError(f"Shapes must be 1D sequences of concrete values of integer type, got "
                        f"{shape!r}.") from None
    if any(s < 0 for s in out):
        raise TypeError(f"broadcast_in_dim shape must have every element be nonnegative, got "
                        f"{out}: array dimensions cannot be negative.")
    return out


def _dtype(dtype, default_fn):
    return dtypes.canonicalize_dtype(dtype) if dtype is not None else default_fn()


def zeros(shape, dtype=None, *, device=None):
    dtypes.check_user_dtype_supported(dtype, 'zeros')
    return place_new(lax.full(_shape(shape), 0, _dtype(dtype, dtypes.default_float_dtype)), device)


def ones(shape, dtype=None, *, device=None):
    dtypes.check_user_dtype_supported(dtype, 'ones')
    return place_new(lax.full(_shape(shape), 1, _dtype(dtype, dtypes.default_float_dtype)), device)


def empty(shape, dtype=None, *, device=None):
    dtypes.check_user_dtype_supported(dtype, 'empty')
    return place_new(lax.full(_shape(shape), 0, _dtype(dtype, dtypes.default_float_dtype)), device)


def full(shape, fill_value, dtype=None, *, device=None):
    dtypes.check_user_dtype_supported(dtype, 'full')
    return place_new(_full(shape, fill_value, dtype), device)


def _full(shape, fill_value, dtype):
    shape = _shape(shape)
    if dtype is None:
        fill = asarray(fill_value)
        aval = get_aval(fill)
        if aval.ndim:
            from corejax.numpy._shape import broadcast_to
            return broadcast_to(fill, shape)
        return lax.full(shape, fill, aval.dtype, aval.weak_type) if not isinstance(
            fill, core.Tracer) else lax.broadcast_in_dim(fill, shape, ())
    dt = dtypes.canonicalize_dtype(dtype)
    fill = asarray(fill_value, dt)
    if get_aval(fill).weak_type:
        fill = lax.convert_element_type(fill, dt)  # an explicit dtype is a strong type
    if get_aval(fill).ndim:
        from corejax.numpy._shape import broadcast_to
        return broadcast_to(fill, shape)
    return lax.broadcast_in_dim(fill, shape, ()) if shape else fill


def _like(a, shape, dtype):
    if not hasattr(a, "aval") and hasattr(a, "shape") and hasattr(a, "dtype") \
            and not isinstance(a, np.ndarray):
        # A shape/dtype description (ShapeDtypeStruct, eval_shape's results): its shape and
        # dtype, strongly typed, as JAX's *_like take it.
        shape = tuple(a.shape) if shape is None else _shape(shape)
        dt = np.dtype(a.dtype) if dtype is None else dtypes.canonicalize_dtype(dtype)
        return shape, dtypes.canonicalize_dtype(dt), False
    aval = get_aval(asarray(a)) if not hasattr(a, "aval") else a.aval
    shape = aval.shape if shape is None else _shape(shape)
    dt = aval.dtype if dtype is None else dtypes.canonicalize_dtype(dtype)
    return shape, dt, aval.weak_type and dtype is None


def zeros_like(a, dtype=None, shape=None, *, device=None):
    dtypes.check_user_dtype_supported(dtype, 'zeros_like')
    shape, dt, weak = _like(a, shape, dtype)
    return place_new(lax.full(shape, 0, dt, weak), device, like=a)


def ones_like(a, dtype=None, shape=None, *, device=None):
    dtypes.check_user_dtype_supported(dtype, 'ones_like')
    shape, dt, weak = _like(a, shape, dtype)
    return place_new(lax.full(shape, 1, dt, weak), device, like=a)


def empty_like(a, dtype=None, shape=None, *, device=None):
    return zeros_like(a, dtype, shape, device=device)


def full_like(a, fill_value, dtype=None, shape=None, *, device=None):
    dtypes.check_user_dtype_supported(dtype, 'full_like')
    shape, dt, weak = _like(a, shape, dtype)
    out = _full(shape, fill_value, dt)
    if weak:  # weakly typed like `a` (the fill's own type never decides)
        out = lax.convert_element_type(out, dt, weak_type=True)
    return place_new(out, device, like=a)


def arange(start, stop=None, step=None, dtype=None, *, device=None):
    """Evenly spaced values in [start, stop); the bounds must be concrete (static)."""
    dtypes.check_user_dtype_supported(dtype, 'arange')
    return place_new(_arange(start, stop, step, dtype), device)


def _arange(start, stop, step, dtype):
    ctx = "jnp.arange's bounds determine its output shape, so they must be static"
    start = core.concrete_or_error(lambda x: np.asarray(x).item(), start, ctx)
    stop = None if stop is None else core.concrete_or_error(lambda x: np.asarray(x).item(),
                                                            stop, ctx)
    step = None if step is None else core.concrete_or_error(lambda x: np.asarray(x).item(),
                                                            step, ctx)
    if stop is None and step is None:
        values = np.arange(start)
    else:
        values = np.arange(start, stop, 1 if step is None else step)
    if dtype is None:
        args = [v for v in (start, stop, step) if v is not None]
        dt = dtypes.result_type(*[np.asarray(v).dtype if not isinstance(v, (int, float, bool))
                                  else type(v) for v in args])
        if all(isinstance(v, int) and not isinstance(v, bool) for v in args):
            dt = dtypes.default_int_dtype()
        elif any(isinstance(v, float) for v in args) and dt.kind != "f":
            dt = dtypes.default_float_dtype()
    else:
        dt = dtypes.canonicalize_dtype(dtype)
    if stop is None and step is None and dt.kind in "iu" and np.ndim(start) == 0:
        return lax.iota(dt, int(np.ceil(start)) if start > 0 else 0)
    return asarray(values.astype(dt))


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *,
             device=None):
    dtypes.check_user_dtype_supported(dtype, 'linspace')
    out = _linspace(start, stop, num, endpoint, retstep, dtype, axis)
    if retstep:
        return place_new(out[0], device), out[1]
    return place_new(out, device)


def _linspace(start, stop, num, endpoint, retstep, dtype, axis):
    num = concrete_int(num, "num")
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    start, stop = asarray(start), asarray(stop)
    dt = dtypes.canonicalize_dtype(dtype) if dtype is not None else \
        dtypes.result_type(start, stop, dtypes.default_float_dtype())
    calc_dt = dt if dt.kind == "f" else dtypes.default_float_dtype()
    start_f = lax.convert_element_type(start, calc_dt)
    stop_f = lax.convert_element_type(stop, calc_dt)
    div = (num - 1) if endpoint else num
    shape = np.broadcast_shapes(get_aval(start).shape, get_aval(stop).shape)
    from corejax.numpy._shape import broadcast_to
    start_b, stop_b = broadcast_to(start_f, shape), broadcast_to(stop_f, shape)
    delta = lax.sub(stop_b, start_b)
    steps = lax.broadcasted_iota(calc_dt, (num,) + shape, 0)
    if div > 0:
        step = lax.div(delta, lax.full((), div, calc_dt))
        out = lax.add(lax.broadcast_in_dim(start_b, (num,) + shape, tuple(range(1, len(shape) + 1))),
                      lax.mul(steps, lax.broadcast_in_dim(step, (num,) + shape,
                                                          tuple(range(1, len(shape) + 1)))))
        if endpoint and num > 1:
            last = lax.broadcast_in_dim(stop_b, (1,) + shape, tuple(range(1, len(shape) + 1)))
            out = lax.concatenate([lax.slice_in_dim(out, 0, num - 1, 1, 0), last], 0)
    else:
        step = lax.full(shape, np.nan, calc_dt)
        out = lax.broadcast_in_dim(start_b, (num,) + shape, tuple(range(1, len(shape) + 1)))
    if axis != 0:
        from corejax.numpy._shape import moveaxis
        out = moveaxis(out, 0, axis)
    if dt.kind in "iu":
        out = lax.floor(out)
    out = lax.convert_element_type(out, dt)
    return (out, step) if retstep else out


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    dtypes.check_user_dtype_supported(dtype, 'logspace')
    lin = linspace(start, stop, num, endpoint, dtype=None, axis=axis)
    from corejax.numpy._ufuncs import power
    out = power(base, lin)
    return out if dtype is None else lax.convert_element_type(out, dtypes.canonicalize_dtype(dtype))


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """Numbers spaced evenly on a log scale from start to stop (both of the same sign): their
    magnitudes are 10 ** linspace(log10|start|, log10|stop|), with start's sign."""
    dtypes.check_user_dtype_supported(dtype, 'geomspace')
    from corejax.numpy._math import log10
    from corejax.numpy._ufuncs import sign
    start, stop = asarray(start), asarray(stop)
    dt = dtypes.canonicalize_dtype(dtype) if dtype is not None else \
        dtypes.result_type(start, stop, dtypes.default_float_dtype())
    calc_dt = dt if dt.kind in "fc" else dtypes.default_float_dtype()
    from corejax.numpy._shape import broadcast_to
    shape = np.broadcast_shapes(get_aval(start).shape, get_aval(stop).shape)
    start_f = broadcast_to(lax.convert_element_type(start, calc_dt), shape)
    stop_f = broadcast_to(lax.convert_element_type(stop, calc_dt), shape)
    s = sign(start_f)
    mags = logspace(log10(lax.div(start_f, s)), log10(lax.div(stop_f, s)), num, endpoint,
                    base=10.0, dtype=calc_dt, axis=0)
    out = lax.mul(lax.broadcast_in_dim(s, get_aval(mags).shape,
                                       tuple(range(1, get_aval(mags).ndim))), mags)
    if axis != 0:
        from corejax.numpy._shape import moveaxis
        out = moveaxis(out, 0, axis)
    return lax.convert_element_type(out, dt)


def eye(N, M=None, k=0, dtype=None, *, device=None):
    dtypes.check_user_dtype_supported(dtype, 'eye')
    return place_new(_eye(N, M, k, dtype), device)


def _eye(N, M, k, dtype):
    N = concrete_int(N, "N")
    M = N if M is None else concrete_int(M, "M")
    k = operator.index(k)
    dt = _dtype(dtype, dtypes.default_float_dtype)
    rows = lax.broadcasted_iota(np.int32, (N, M), 0)
    cols = lax.broadcasted_iota(np.int32, (N, M), 1)
    mask = lax.eq(lax.add(rows, lax.full((), k, np.int32)), cols)
    return lax.convert_element_type(mask, dt)


def identity(n, dtype=None, *, device=None):
    return eye(n, dtype=dtype, device=device)


def tri(N, M=None, k=0, dtype=None):
    dtypes.check_user_dtype_supported(dtype, 'tri')
    N = concrete_int(N, "N")
    M = N if M is None else concrete_int(M, "M")
    rows = lax.broadcasted_iota(np.int32, (N, M), 0)
    cols = lax.broadcasted_iota(np.int32, (N, M), 1)
    mask = lax.ge(lax.add(rows, lax.full((), k, np.int32)), cols)
    return lax.convert_element_type(mask, _dtype(dtype, dtypes.default_float_dtype))
