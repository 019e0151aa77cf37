"""Array conversion, dtype promotion and NumPy-style broadcasting for the jnp layer."""
from __future__ import annotations

import builtins
import functools
import operator
import warnings

import numpy as np

from corejax import core, dtypes, lax, _transfer_guard
from corejax.array import (Array, _Placement, place_new, default_device, place_constants,
                           plain_eager, wrap)
from corejax._transfer_guard import Guarded as _TransferGuarded
from corejax.compiler.eager_kernels import FAST_MIN_SIZE
from corejax.config import config
from corejax.core import Tracer, get_aval

__all__ = []

_SCALARS = (int, float, complex, bool)


def is_arraylike(x) -> bool:
    return isinstance(x, (Array, Tracer, np.ndarray, np.generic)) or type(x) in _SCALARS


def check_arraylike(name: str, *args) -> None:
    for i, a in enumerate(args):
        if type(a) is Array:
            continue
        if not is_arraylike(a):
            raise TypeError(f"{name} requires ndarray or scalar arguments, got {type(a)} "
                            f"at position {i}.")


def _canonical_np(x: np.ndarray, dtype=None) -> np.ndarray:
    dt = dtypes.canonicalize_dtype(dtype if dtype is not None else x.dtype)
    return np.array(x, dtype=dt, copy=True) if x.dtype != dt or x.flags.writeable else x


def asarray(a, dtype=None, copy=None, *, device=None) -> Array:
    """Converts `a` (array, scalar, nested lists) to an Array, without copying an Array; host
    data goes to `device` (default: the default device)."""
    dtypes.check_user_dtype_supported(dtype, "asarray")
    return _placed_asarray(a, dtype, device)


def _placed_asarray(a, dtype, device) -> Array:
    if device is not None or _Placement.cuda_in_use or _Placement.cpu_default is not None:
        out = _asarray(a, dtype)
        return out if out is a else place_new(out, device)
    return _asarray(a, dtype)


def _asarray(a, dtype=None) -> Array:
    if dtype is not None:
        dtype = dtypes.canonicalize_dtype(dtype)
    t = type(a)
    if t is Array or isinstance(a, Tracer):
        if dtype is None or a.dtype == dtype:
            return a
        return lax.convert_element_type(a, dtype)
    if t in _SCALARS:
        dt, weak = dtypes.result_type_and_weakness(a)
        if dtype is not None:
            dt, weak = dtype, False
        out = Array(np.asarray(a, dt), weak)
        if _TransferGuarded.host_to_device:
            _guard_host_value(out)
        return out
    if isinstance(a, (list, tuple)):
        leaves = list(_nested_leaves(a))
        if any(isinstance(x, (Tracer, Array)) for x in leaves):
            return _stack_nested(a, dtype)
        if leaves and all(type(x) in _SCALARS for x in leaves):
            dt = dtypes.result_type(*leaves)
            if dtype is None:
                dtype = dt
        elif not leaves:
            dtype = dtype or dtypes.default_float_dtype()
    if isinstance(a, (np.ndarray, np.generic, list, tuple)) or hasattr(a, "__array__"):
        val = np.asarray(a)
        if val.dtype == object:
            raise TypeError(f"Cannot convert {a!r} to a corejax array (ragged or object data).")
        dt = dtypes.canonicalize_dtype(dtype if dtype is not None else val.dtype)
        out = Array(np.array(val, dtype=dt, copy=True))
        if _TransferGuarded.host_to_device:
            _guard_host_value(out)
        return out
    raise TypeError(f"Cannot convert value of type {type(a).__name__} to a corejax array.")


def _guard_host_value(out: Array) -> None:
    """The host-to-device transfer guard, for host data the user handed over that became
    `out`: a transfer outside a staged trace (inside one it is a constant of the program)."""
    if core._trace_state.dynamic_level == 0:
        _transfer_guard.host_to_device(lambda: _transfer_guard.describe_transfer(
            out.aval, dst=default_device()))


def array(object, dtype=None, copy=True, order=None, ndmin=0, *, device=None) -> Array:
    """Creates an Array from `object` (always a copy of NumPy data, as in JAX)."""
    dtypes.check_user_dtype_supported(dtype, "array")
    out = _placed_asarray(object, dtype, device)
    if ndmin > get_aval(out).ndim:
        out = lax.reshape(out, (1,) * (ndmin - get_aval(out).ndim) + get_aval(out).shape)
    return out


def _nested_leaves(a):
    if isinstance(a, (list, tuple)):
        for x in a:
            yield from _nested_leaves(x)
    else:
        yield a


def _stack_nested(a, dtype):
    if isinstance(a, (list, tuple)):
        items = [_stack_nested(x, dtype) for x in a]
        if not items:
            raise TypeError("Cannot stack an empty nested sequence containing tracers.")
        items = promote_dtypes(*items)
        items = [lax.expand_dims(x, (0,)) for x in items]
        return lax.concatenate(items, 0)
    return asarray(a, dtype)


def promote_dtypes(*args):
    """Converts args to arrays of their common (promoted) dtype; weak if all were weak."""
    if len(args) == 1 and type(args[0]) not in _SCALARS:
        return [asarray(args[0])]
    dt, weak = dtypes.result_type_and_weakness(*args)
    return [_convert(a, dt, weak) for a in args]


def _convert(a, dt, weak):
    if type(a) in _SCALARS:
        out = Array(np.asarray(a, dt), weak)
        if _TransferGuarded.host_to_device:
            _guard_host_value(out)
        return out
    a = asarray(a)
    aval = get_aval(a)
    if aval.dtype == dt and aval.weak_type == weak:
        return a
    return lax.convert_element_type(a, dt, weak_type=weak)


def promote_dtypes_inexact(*args):
    """Promotes, then converts integer and boolean results to the default float dtype."""
    arrs = promote_dtypes(*args)
    aval = get_aval(arrs[0])
    dt = dtypes.to_inexact_dtype(aval.dtype)
    if dt != aval.dtype:
        arrs = [lax.convert_element_type(a, dt, weak_type=aval.weak_type) for a in arrs]
    return arrs


def broadcast_shapes(*shapes):
    shapes = [tuple(s) for s in shapes]
    ndim = builtins.max((len(s) for s in shapes), default=0)
    out = []
    for i in range(ndim):
        sizes = {s[i - ndim + len(s)] for s in shapes if i - ndim + len(s) >= 0}
        sizes.discard(1)
        if len(sizes) > 1:
            raise ValueError(f"Incompatible shapes for broadcasting: shapes={list(shapes)}")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def broadcast_to_shape(x, shape):
    aval = get_aval(x)
    shape = tuple(shape)
    if aval.shape == shape:
        return x
    nd = len(shape)
    if aval.ndim > nd:
        raise ValueError(f"Incompatible shapes for broadcasting: {aval.shape} and requested "
                         f"shape {shape}")
    for src, dst in zip(aval.shape, shape[nd - aval.ndim:]):
        if src not in (1, dst):
            raise ValueError(f"Incompatible shapes for broadcasting: {aval.shape} and requested "
                             f"shape {shape}")
    return lax.broadcast_in_dim(x, shape, tuple(range(nd - aval.ndim, nd)))


class _RankPromotion:
    mode = config.numpy_rank_promotion


config.watch("numpy_rank_promotion", lambda v: setattr(_RankPromotion, "mode", v))


def _rank_promotion(shapes) -> None:
    """jax_numpy_rank_promotion='warn' / 'raise' for operands of different (nonzero) ranks."""
    shown = " ".join(map(str, shapes))
    if _RankPromotion.mode == "raise":
        raise ValueError(
            f"Operands could not be broadcast together on shapes {shown} and with the config "
            "option jax_numpy_rank_promotion='raise'. For more information, see "
            "https://docs.jax.dev/en/latest/rank_promotion_warning.html.")
    warnings.warn(f"Following NumPy automatic rank promotion on shapes {shown}. Set the "
                  "jax_numpy_rank_promotion config option to 'allow' to disable this warning; "
                  "for more information, see "
                  "https://docs.jax.dev/en/latest/rank_promotion_warning.html.", stacklevel=4)


_FAST_SCALARS = (float, int)


def _small_scalar(s) -> bool:
    """Whether `s` is a Python float, or an int in int32's range: a weakly typed scalar that
    the eager short paths convert to their Array's float dtype as lax.full would."""
    t = type(s)
    return t is float or (t is int and -(1 << 31) <= s < (1 << 31))


def _with_scalar(x, scalar):
    """(x, scalar as a constant like x) for an eager float Array and a Python float or small
    int outside any trace, the commonest operand pair of notebooks (`x + 1.0`, `2 * x`): a
    Python scalar is weakly typed, so the result keeps x's dtype and weak type, and the
    constant is what lax.full makes on the slow path. None where the slow path must decide."""
    v = x._value
    if type(v) is not np.ndarray or v.dtype.kind != "f" or _Placement.cpu_committed or \
            _TransferGuarded.host_to_device or core._trace_state.dynamic_level != 0 or \
            not _small_scalar(scalar):
        return None
    shape = v.shape
    if len(shape) <= 1 and (not shape or shape[0] <= 4096):    # as lax.full fills these
        return x, Array(np.full(shape, scalar, v.dtype), x.weak_type)
    return x, lax.full(shape, scalar, v.dtype, x.weak_type)


# The commonest eager binary operations of a notebook (`x + 1.0`, `2 * x`, `x / y`, `x > 0.5`),
# on arrays below the size from which eager kernels may run compiled loops
# (compiler/eager_kernels.FAST_MIN_SIZE): there a float32 / float64 primitive's eager result is
# its NumPy impl's, and the operation costs mostly its dispatch.
_PLAIN_DTYPES = frozenset(map(np.dtype, (np.float32, np.float64)))
_PLAIN_MAX_SIZE = FAST_MIN_SIZE


def plain_binary(prim, x, y, *, times=None):
    """`prim(x, y)` as an Array where its operands are eager float32 / float64 host Arrays
    below _PLAIN_MAX_SIZE elements (their result too) of one dtype, or one such Array and a
    Python float or int (either side): what the jnp function's full path computes, for a
    fraction of its dispatch: the primitive's own impl on the NumPy values (its numpy_impl).
    Shapes broadcast as the full path broadcasts them; a Python scalar is weakly typed, so it
    is converted to the Array's dtype as lax.full converts it; the result (a comparison's too,
    as in JAX) is weak where every Array operand is. `times` (the mul primitive, prim being
    div): a broadcast divisor (a Python scalar under an Array of rank 1 or more, an Array of
    another shape than the result) is turned into its reciprocal, which multiplies, as
    true_divide does. None where anything else must decide
    (other types or dtypes, a trace, a guard, a check, a device, a rank promotion to warn of);
    tests/test_numpy_dispatch.py compares the two paths bit for bit."""
    op = prim.numpy_impl
    tx, ty = type(x), type(y)
    if tx is Array:
        v = x._value
        if ty is Array:
            w = y._value
            if type(v) is not np.ndarray or type(w) is not np.ndarray or \
                    v.dtype not in _PLAIN_DTYPES or w.dtype != v.dtype or \
                    v.size >= _PLAIN_MAX_SIZE or w.size >= _PLAIN_MAX_SIZE or \
                    not plain_eager():
                return None
            if w.shape != v.shape:
                if _RankPromotion.mode != "allow" and v.ndim and w.ndim and v.ndim != w.ndim:
                    return None             # (the full path warns or raises)
                try:
                    out = op(v, w)
                except ValueError:          # shapes that do not broadcast: the full path
                    return None             # raises its own error
                if out.size >= _PLAIN_MAX_SIZE:
                    return None
                if times is not None and out.shape != w.shape:
                    out = times.numpy_impl(v, op(v.dtype.type(1), w))
            else:
                out = op(v, w)
            return wrap(out, x.weak_type and y.weak_type)
        a, s, swapped = x, y, False
    elif ty is Array:
        a, s, swapped = y, x, True
        v = y._value
    else:
        return None
    if not _small_scalar(s):
        return None
    if type(v) is not np.ndarray or v.dtype not in _PLAIN_DTYPES or \
            v.size >= _PLAIN_MAX_SIZE or not plain_eager():
        return None
    c = v.dtype.type(s)
    if swapped:
        out = op(c, v)
    elif times is not None and v.ndim:
        out = times.numpy_impl(v, _reciprocal(prim, v.dtype, s, repr(s)))
    else:
        out = op(v, c)
    return wrap(out, a.weak_type)


@functools.lru_cache(maxsize=256)
def _reciprocal(div, dt, s, key):
    """1 / s in `dt` by the div primitive's impl (quiet: it warns of nothing), for a Python
    scalar divisor `s`; cached (by `key`, s's repr, which tells -0.0 from 0.0): a loop that
    divides by one constant pays the division's floating-point error state once."""
    return div.numpy_impl(dt.type(1), dt.type(s))


def plain_select(condition, x, y):
    """jnp.where(condition, x, y) as an Array where `condition` is an eager bool host Array
    and x and y eager host Arrays of its shape and of one float32 / float64 dtype (or one of
    them a Python float or int, weakly typed), below _PLAIN_MAX_SIZE elements: the select's
    impl on NumPy values, as the full path computes it (tests/test_numpy_dispatch.py); None
    where the full path must decide."""
    if type(condition) is not Array:
        return None
    c = condition._value
    if type(c) is not np.ndarray or c.dtype != np.bool_ or c.size >= _PLAIN_MAX_SIZE:
        return None
    arrays = [a for a in (x, y) if type(a) is Array]
    if not arrays:
        return None
    v = arrays[0]._value
    dt = v.dtype
    if dt not in _PLAIN_DTYPES:
        return None
    vals = []
    for a in (x, y):
        if type(a) is Array:
            w = a._value
            if type(w) is not np.ndarray or w.dtype != dt or w.shape != c.shape:
                return None
            vals.append(w)
        elif _small_scalar(a):
            vals.append(dt.type(a))
        else:
            return None
    if not plain_eager():
        return None
    weak = all(a.weak_type for a in arrays)
    return wrap(np.where(c, vals[0], vals[1]), weak)


def promote_and_broadcast(*args):
    """jnp binary-op operands: promoted to a common dtype and broadcast to a common shape."""
    a0 = args[0]
    if type(a0) is Array:
        # Fast path for the common eager case: arrays that already agree.
        v0, w0 = a0._value, a0.weak_type
        for a in args:
            if type(a) is not Array or a.weak_type != w0 or a._value.dtype != v0.dtype or \
                    a._value.shape != v0.shape:
                break
        else:
            return args
        if len(args) == 2 and type(args[1]) in _FAST_SCALARS:
            pair = _with_scalar(a0, args[1])
            if pair is not None:
                return pair
    elif len(args) == 2 and type(args[1]) is Array and type(a0) in _FAST_SCALARS:
        pair = _with_scalar(args[1], a0)
        if pair is not None:
            return pair[::-1]
    dt, weak = dtypes.result_type_and_weakness(*args)
    shapes = [() if type(a) in _SCALARS else get_aval(asarray(a)).shape for a in args]
    if len(set(shapes)) == 1:
        shape = shapes[0]
    else:
        if _RankPromotion.mode != "allow" and len({len(s) for s in shapes if s}) > 1:
            _rank_promotion(shapes)
        try:
            shape = broadcast_shapes(*shapes)
        except ValueError:
            # As in JAX: operands of one rank reach the lax operation, which raises TypeError;
            # operands of different ranks fail in broadcast_shapes (ValueError, as NumPy's).
            if len({len(s) for s in shapes}) > 1:
                raise
            raise TypeError(f"Operands got incompatible shapes for broadcasting: "
                            f"{', '.join(map(str, shapes))}.") from None
    if _TransferGuarded.host_to_device:
        for a in args:
            if type(a) in _SCALARS:
                _asarray(a)          # the transfer guard's check of a Python scalar operand
    # Python scalars become constants of the final shape directly (no broadcast to stage).
    out = [lax.full(shape, a, dt, weak) if type(a) in _SCALARS
           else broadcast_to_shape(_convert(a, dt, weak), shape) for a in args]
    if _Placement.cpu_committed:
        # (arrays live on several CPU devices) the constants are made on the device the
        # computation runs on, not moved there
        out = place_constants(args, out, _SCALARS)
    return out


def canonicalize_axis(axis, ndim: int) -> int:
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    return axis % ndim


def canonicalize_axes(axis, ndim: int) -> tuple:
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        axes = tuple(canonicalize_axis(a, ndim) for a in axis)
        if len(set(axes)) != len(axes):
            raise ValueError(f"repeated axis: {tuple(axis)}")
        return axes
    return (canonicalize_axis(axis, ndim),)


def concrete_int(x, what: str) -> int:
    """A Python int from a static value; traced values get a clear concretization error."""
    return core.concrete_or_error(operator.index, x,
                                  f"The {what} argument must be a static (concrete) integer")
