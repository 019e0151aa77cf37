"""jnp.ufunc: a function of scalars with NumPy's ufunc methods (reduce, accumulate, at, outer,
reduceat), frompyfunc to make one from a Python function, and the jnp functions that are
ufuncs in JAX (add, multiply, maximum, logical_and, ...). Generic methods vectorize the
function with vmap and fold with lax.scan; the built-in ones use their dedicated reductions."""
from __future__ import annotations

import operator

import numpy as np

from corejax import core, dtypes, lax
from corejax.core import get_aval
from corejax.numpy._core import asarray, canonicalize_axis, check_arraylike

__all__ = []


class ufunc:
    """A universal function: func maps nin scalars to nout scalars; calls broadcast it over
    arrays. `call`, `reduce`, `accumulate`, `at` and `reduceat` may give faster versions of
    the methods (with the same signatures); the others are derived from func."""

    def __init__(self, func, /, nin, nout, *, name=None, nargs=None, identity=None, call=None,
                 reduce=None, accumulate=None, at=None, reduceat=None):
        self.nin, self.nout = operator.index(nin), operator.index(nout)
        self.nargs = self.nin if nargs is None else operator.index(nargs)
        self.identity = identity
        self._func = func
        self.__name__ = name if name is not None else getattr(func, "__name__", "ufunc")
        self.__doc__ = getattr(call or func, "__doc__", None)
        self._call, self._reduce, self._accumulate = call, reduce, accumulate
        self._at, self._reduceat = at, reduceat

    def __repr__(self):
        return f"<jnp.ufunc '{self.__name__}'>"

    def __hash__(self):
        return hash((self._func, self.__name__, self.identity, self.nin, self.nout))

    def __eq__(self, other):
        return isinstance(other, ufunc) and (self._func, self.__name__, self.identity, self.nin,
                                             self.nout) == (other._func, other.__name__,
                                                            other.identity, other.nin,
                                                            other.nout)

    def _vectorized(self, *args):
        from corejax.numpy._functional import vectorize
        return vectorize(self._func)(*args)

    def __call__(self, *args, out=None, where=None):
        if out is not None:
            raise NotImplementedError(f"out argument of {self}")
        if where is not None:
            raise NotImplementedError(f"where argument of {self}")
        if len(args) != self.nin:
            raise TypeError(f"{self} takes {self.nin} positional argument(s), got {len(args)}")
        if self._call is not None:
            return self._call(*args)
        return self._vectorized(*args)

    def _binary(self, method):
        if self.nin != 2:
            raise ValueError(f"{method} only supported for binary ufuncs")
        if self.nout != 1:
            raise ValueError(f"{method} only supported for functions returning a single value")

    def reduce(self, a, axis=0, dtype=None, out=None, keepdims=False, initial=None, where=None):
        """Folds the function along axis (all axes flattened when None), starting from initial,
        else the identity, else the first element; where= skips elements."""
        self._binary("reduce")
        if out is not None:
            raise NotImplementedError(f"out argument of {self.__name__}.reduce()")
        check_arraylike(f"{self.__name__}.reduce", a)
        if self._reduce is not None:
            return self._reduce(a, axis, dtype=dtype, keepdims=keepdims, initial=initial,
                                where=where)
        return self._fold(a, axis, dtype, keepdims, initial, where)

    def _fold(self, a, axis, dtype, keepdims, initial, where):
        from corejax.lax import scan
        from corejax.numpy._shape import moveaxis
        from corejax.numpy._ufuncs import where as select
        a = asarray(a)
        if dtype is not None:
            a = lax.convert_element_type(a, dtypes.canonicalize_dtype(dtype))
        shape = get_aval(a).shape
        if axis is None:
            a = lax.reshape(a, (get_aval(a).size,))
            mask = None if where is None else lax.reshape(
                _broadcast(where, shape), (get_aval(a).size,))
            axis_ = 0
        else:
            axis_ = canonicalize_axis(axis, len(shape))
            a = moveaxis(a, axis_, 0)
            mask = None if where is None else moveaxis(_broadcast(where, shape), axis_, 0)
            axis_ = 0
        n = get_aval(a).shape[0]
        rest = get_aval(a).shape[1:]
        dt = get_aval(a).dtype
        start = initial if initial is not None else self.identity
        if start is None and mask is not None:
            raise ValueError(f"reduction operation {self.__name__} does not have an identity, "
                             "so to use a where mask one has to specify 'initial'.")
        if start is None:
            if n == 0:
                raise ValueError(f"zero-size array to reduction operation {self.__name__} which "
                                 "has no identity")
            carry, xs = lax.index_in_dim(a, 0, 0, keepdims=False), lax.slice_in_dim(a, 1, n, 1,
                                                                                    0)
            mask = None if mask is None else lax.slice_in_dim(mask, 1, n, 1, 0)
        else:
            carry = lax.full(rest, start, dt)
            xs = a

        def body(c, step):
            x, keep = step
            new = asarray(self._vectorized(c, x))  # a changed dtype is scan's TypeError
            return (new if keep is None else select(keep, new, c)), None

        if get_aval(xs).shape[0]:
            carry, _ = scan(body, carry, (xs, mask))
        if keepdims:
            full = tuple(1 if axis is None or i == canonicalize_axis(axis, len(shape)) else d
                         for i, d in enumerate(shape))
            carry = lax.reshape(carry, full)
        return carry

    def accumulate(self, a, axis=0, dtype=None, out=None):
        """All the partial folds along axis (the first element, then f(first, second), ...)."""
        self._binary("accumulate")
        if out is not None:
            raise NotImplementedError(f"out argument of {self.__name__}.accumulate()")
        check_arraylike(f"{self.__name__}.accumulate", a)
        if self._accumulate is not None:
            return self._accumulate(a, axis, dtype=dtype)
        from corejax.lax import scan
        from corejax.numpy._shape import moveaxis
        a = asarray(a)
        if dtype is not None:
            a = lax.convert_element_type(a, dtypes.canonicalize_dtype(dtype))
        axis = canonicalize_axis(axis, get_aval(a).ndim)
        a = moveaxis(a, axis, 0)
        n = get_aval(a).shape[0]
        if n == 0:
            return moveaxis(a, 0, axis)
        first = lax.index_in_dim(a, 0, 0, keepdims=False)

        def body(c, x):
            new = asarray(self._vectorized(c, x))
            return new, new

        _, rest = scan(body, first, lax.slice_in_dim(a, 1, n, 1, 0))
        return moveaxis(lax.concatenate([lax.expand_dims(first, (0,)), rest], 0), 0, axis)

    def at(self, a, indices, b=None, /, *, inplace=True):
        """a with a[i] = f(a[i], b) (or f(a[i]) for a unary function) applied for every index
        in turn, repeated indices included. Returns a new array: inplace=False is required."""
        if inplace:
            raise NotImplementedError("jax.numpy.ufunc.at cannot modify arrays in-place, "
                                      "because JAX arrays are immutable. Pass inplace=False to "
                                      "instead return an updated array.")
        if self.nout != 1:
            raise ValueError("at() only supported for functions returning a single value")
        if b is None and self.nin != 1 or b is not None and self.nin != 2:
            raise ValueError(f"{self.__name__}.at() takes {self.nin - 1} value argument(s)")
        if self._at is not None:
            return self._at(a, indices, b)
        return self._at_by_scan(asarray(a), indices, b)

    def _at_by_scan(self, a, indices, b):
        from corejax.lax import scan
        from corejax.numpy._core import broadcast_shapes, broadcast_to_shape
        shape = get_aval(a).shape
        idx = indices if isinstance(indices, tuple) else (indices,)
        idx = [asarray(np.arange(n)[i] if isinstance(i, slice) else i)
               for i, n in zip(idx, shape)]
        bshape = broadcast_shapes(*[get_aval(i).shape for i in idx])
        flat = [lax.reshape(broadcast_to_shape(i, bshape), (int(np.prod(bshape)),)) for i in idx]
        window = shape[len(idx):]
        count = flat[0].shape[0] if flat else 0
        dt = get_aval(a).dtype
        if b is not None:
            b = lax.convert_element_type(asarray(b), dt)
            b = lax.reshape(broadcast_to_shape(b, bshape + window), (count,) + window)

        def body(x, step):
            where_, value = step
            current = x[tuple(where_)]
            args = (current,) if value is None else (current, value)
            new = lax.convert_element_type(asarray(self._vectorized(*args)), dt)
            return x.at[tuple(where_)].set(new), None

        if count == 0:
            return a
        out, _ = scan(body, a, (flat, b))
        return out

    def outer(self, A, B, /):
        """f(A[i...], B[j...]) for every pair: the result has shape A.shape + B.shape."""
        self._binary("outer")
        check_arraylike(f"{self.__name__}.outer", A, B)
        A, B = asarray(A), asarray(B)
        sa, sb = get_aval(A).shape, get_aval(B).shape
        full = sa + sb
        A = lax.broadcast_in_dim(A, full, tuple(range(len(sa))))
        B = lax.broadcast_in_dim(B, full, tuple(range(len(sa), len(full))))
        return self(A, B)

    def reduceat(self, a, indices, axis=0, dtype=None, out=None):
        """Reductions of the slices a[indices[i]:indices[i+1]] along axis (the last to the end;
        a[indices[i]] where indices[i] >= indices[i+1]); the indices must be concrete."""
        self._binary("reduceat")
        if out is not None:
            raise NotImplementedError(f"out argument of {self.__name__}.reduceat()")
        check_arraylike(f"{self.__name__}.reduceat", a, indices)
        a = asarray(a)
        if dtype is not None:
            a = lax.convert_element_type(a, dtypes.canonicalize_dtype(dtype))
        axis = canonicalize_axis(axis, get_aval(a).ndim)
        n = get_aval(a).shape[axis]
        starts = core.concrete_or_error(np.asarray, indices, f"{self.__name__}.reduceat needs "
                                        "concrete indices (the segments' lengths are static)")
        starts = np.where(starts < 0, starts + n, starts).ravel()
        if ((starts < 0) | (starts >= n)).any():
            raise IndexError(f"{self.__name__}.reduceat: index out of bounds for axis of size {n}")
        parts = []
        for i, s in enumerate(starts):
            stop = int(starts[i + 1]) if i + 1 < len(starts) else n
            if stop <= s:
                parts.append(lax.slice_in_dim(a, int(s), int(s) + 1, 1, axis))
                continue
            segment = lax.slice_in_dim(a, int(s), stop, 1, axis)
            parts.append(_keep(ufunc(self._func, 2, 1, name=self.__name__)._fold(
                segment, axis, None, False, None, None), axis))
        return lax.concatenate(parts, axis)


def _keep(x, axis):
    return lax.expand_dims(x, (axis,))


def _broadcast(where, shape):
    from corejax.numpy._core import broadcast_to_shape
    w = asarray(where)
    if get_aval(w).dtype != np.bool_:
        raise TypeError("where argument of a ufunc reduction must be a boolean array")
    return broadcast_to_shape(w, shape)


def frompyfunc(func, /, nin, nout, *, identity=None):
    """A jnp.ufunc from a Python function of scalars (vectorized with vmap)."""
    return ufunc(func, nin, nout, identity=identity)


# --- the jnp functions that are ufuncs -------------------------------------------------------

def _reduction(fn):
    def reduce(a, axis=0, dtype=None, keepdims=False, initial=None, where=None):
        kwargs = {} if initial is None else {"initial": initial}
        if dtype is not None:
            kwargs["dtype"] = dtype
        return fn(a, axis=axis, keepdims=keepdims, where=where, **kwargs)
    return reduce


def _bool_reduction(fn):
    def reduce(a, axis=0, dtype=None, keepdims=False, initial=None, where=None):
        from corejax.numpy._ufuncs import not_equal
        a = asarray(a)
        a = a if get_aval(a).dtype == np.bool_ else not_equal(a, 0)
        out = fn(a, axis=axis, keepdims=keepdims, where=where)
        if initial is not None:
            from corejax.numpy import _ufuncs
            combine = _ufuncs.logical_and if fn.__name__ == "all" else _ufuncs.logical_or
            out = combine(out, initial)
        return out if dtype is None else lax.convert_element_type(
            out, dtypes.canonicalize_dtype(dtype))
    return reduce


def _scatter_at(method):
    def at(a, indices, b):
        return getattr(asarray(a).at[indices], method)(b)
    return at


def _make_ufuncs():
    from corejax.numpy import _math, _reductions as red, _ufuncs as u

    def cumulative(fn):
        return lambda a, axis=0, dtype=None: fn(a, axis=axis, dtype=dtype)

    specs = [
        ("add", u.add, 2, 0, dict(reduce=_reduction(red.sum), accumulate=cumulative(red.cumsum),
                                  at=_scatter_at("add"))),
        ("subtract", u.subtract, 2, None, dict(at=_scatter_at("subtract"))),
        ("multiply", u.multiply, 2, 1, dict(reduce=_reduction(red.prod),
                                            accumulate=cumulative(red.cumprod),
                                            at=_scatter_at("multiply"))),
        ("maximum", u.maximum, 2, None, dict(reduce=_reduction(red.max), at=_scatter_at("max"))),
        ("minimum", u.minimum, 2, None, dict(reduce=_reduction(red.min), at=_scatter_at("min"))),
        ("logaddexp", u.logaddexp, 2, -np.inf, {}),
        ("logaddexp2", _math.logaddexp2, 2, -np.inf, {}),
        ("logical_and", u.logical_and, 2, True, dict(reduce=_bool_reduction(red.all))),
        ("logical_or", u.logical_or, 2, False, dict(reduce=_bool_reduction(red.any))),
        ("logical_xor", u.logical_xor, 2, False, {}),
        ("bitwise_and", u.bitwise_and, 2, -1, {}),
        ("bitwise_or", u.bitwise_or, 2, 0, {}),
        ("bitwise_xor", u.bitwise_xor, 2, 0, {}),
        ("negative", u.negative, 1, None, {}),
    ]
    return {name: ufunc(fn, nin, 1, name=name, identity=identity, call=fn, **methods)
            for name, fn, nin, identity, methods in specs}


_UFUNCS = _make_ufuncs()
(add, subtract, multiply, maximum, minimum, logaddexp, logaddexp2, logical_and, logical_or,
 logical_xor, bitwise_and, bitwise_or, bitwise_xor, negative) = (
    _UFUNCS[n] for n in ("add", "subtract", "multiply", "maximum", "minimum", "logaddexp",
                         "logaddexp2", "logical_and", "logical_or", "logical_xor", "bitwise_and",
                         "bitwise_or", "bitwise_xor", "negative"))
