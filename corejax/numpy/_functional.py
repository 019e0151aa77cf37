"""Function transformations of the jnp API: vectorize (with generalized-ufunc signatures),
apply_along_axis, apply_over_axes and fromfunction, all built on vmap."""
from __future__ import annotations

import functools
import re

from corejax import dtypes, lax
from corejax.core import get_aval
from corejax.numpy._core import asarray, broadcast_shapes, canonicalize_axis

__all__ = []

_DIMS = r"\w+"
_CORE = rf"\((?:{_DIMS}(?:,{_DIMS})*)?\)"
_ARGS = rf"{_CORE}(?:,{_CORE})*"
_SIGNATURE = re.compile(rf"^{_ARGS}->{_ARGS}$")


def _parse_signature(signature: str):
    """'(m,n),(n)->(m)' -> ([('m', 'n'), ('n',)], [('m',)])."""
    sig = signature.replace(" ", "")
    if not _SIGNATURE.match(sig):
        raise ValueError(f"not a valid gufunc signature: {signature}")
    ins, outs = sig.split("->")
    parse = lambda part: [tuple(re.findall(_DIMS, arg)) for arg in re.findall(_CORE, part)]
    return parse(ins), parse(outs)


def _vmap():
    # the user-facing vmap (pytree outputs, out_axes); imported when first needed, as
    # corejax.api imports corejax.numpy
    from corejax.api import vmap
    return vmap


def vectorize(pyfunc, *, excluded=frozenset(), signature=None):
    """Vectorizes `pyfunc` with vmap, like numpy.vectorize: the inputs broadcast against each
    other over their loop dimensions (all of them, or those left of the core dimensions named
    by `signature`). Positional arguments in `excluded` are passed through unchanged."""
    if any(not isinstance(e, int) for e in excluded):
        raise ValueError("jax.numpy.vectorize can only exclude integer arguments, but excluded="
                         f"{excluded!r}")
    if any(e < 0 for e in excluded):
        raise ValueError(f"excluded={excluded!r} contains negative numbers")
    in_core, out_core = _parse_signature(signature) if signature is not None else (None, None)

    @functools.wraps(pyfunc)
    def wrapped(*args, **kwargs):
        args = list(args)
        dyn_pos = [i for i in range(len(args)) if i not in excluded]
        dyn = [asarray(args[i]) for i in dyn_pos]
        cores = in_core if in_core is not None else [()] * len(dyn)
        if len(cores) != len(dyn):
            raise TypeError(f"wrong number of positional arguments: expected {len(cores)}, got "
                            f"{len(dyn)}")
        sizes = {}
        loops = []
        for x, core_dims in zip(dyn, cores):
            shape = get_aval(x).shape
            if len(shape) < len(core_dims):
                raise ValueError(f"input with shape {shape} does not have enough dimensions for "
                                 f"all core dimensions {core_dims!r} on vectorized function "
                                 f"with excluded={excluded!r} and signature={signature!r}")
            for name, n in zip(core_dims, shape[len(shape) - len(core_dims):]):
                if sizes.setdefault(name, n) != n:
                    raise ValueError(f"inconsistent size for core dimension {name!r}: "
                                     f"{sizes[name]} vs {n} on vectorized function with "
                                     f"excluded={excluded!r} and signature={signature!r}")
            loops.append(shape[:len(shape) - len(core_dims)])
        loop_shape = broadcast_shapes(*loops)
        nloop = len(loop_shape)

        def call(*values):
            full = list(args)
            for i, v in zip(dyn_pos, values):
                full[i] = v
            out = pyfunc(*full, **kwargs)
            if out_core is not None:
                _check_outputs(out, out_core, sizes, signature)
            return out

        # every loop dimension becomes one vmap; an input lacking a dimension (or having it of
        # size 1 where others are longer) is not mapped over it
        prepared, axes_per_level = [], [[] for _ in range(nloop)]
        for x, loop in zip(dyn, loops):
            padded = (1,) * (nloop - len(loop)) + tuple(loop)
            keep = [d for d in range(nloop) if padded[d] == loop_shape[d]]
            drop = [d for d in range(nloop) if d not in keep]
            core_shape = get_aval(x).shape[len(loop):]
            x = lax.reshape(x, tuple(padded[d] for d in keep) + core_shape)
            prepared.append(x)
            for d in range(nloop):
                axes_per_level[d].append(None if d in drop else 0)
        f = call
        for d in reversed(range(nloop)):
            f = _vmap()(f, in_axes=tuple(axes_per_level[d]))
        return f(*prepared)

    return wrapped


def _check_outputs(out, out_core, sizes, signature):
    outs = out if isinstance(out, tuple) else (out,)
    if len(out_core) != len(outs) or (len(out_core) == 1 and isinstance(out, tuple)):
        raise ValueError(f"wrong number of outputs from vectorized function: expected "
                         f"{len(out_core)}, got {len(outs)} (signature={signature!r})")
    for o, core_dims in zip(outs, out_core):
        shape = get_aval(asarray(o)).shape
        if len(shape) != len(core_dims):
            raise ValueError(f"output shape {shape} does not match the core dimensions "
                             f"{core_dims!r} of signature {signature!r}")
        for name, n in zip(core_dims, shape):
            if sizes.setdefault(name, n) != n:
                raise ValueError(f"inconsistent size for core dimension {name!r}: "
                                 f"{sizes[name]} vs {n} in the output (signature={signature!r})")


def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """func1d applied to every 1-D slice of `arr` along `axis` (vmapped over the others); the
    result's dimensions from func1d take the place of `axis`."""
    arr = asarray(arr)
    ndim = get_aval(arr).ndim
    axis = canonicalize_axis(axis, ndim)
    vmap = _vmap()
    func = lambda a: func1d(a, *args, **kwargs)
    for i in range(1, ndim - axis):
        func = vmap(func, in_axes=i, out_axes=-1)
    for _ in range(axis):
        func = vmap(func, in_axes=0, out_axes=0)
    return func(arr)


def apply_over_axes(func, a, axes):
    """Applies func(a, axis) for each axis in turn; a result that lost the axis gets it back as
    size 1, so the rank never changes."""
    a = asarray(a)
    for axis in axes:
        b = asarray(func(a, axis))
        if get_aval(b).ndim == get_aval(a).ndim:
            a = b
        elif get_aval(b).ndim == get_aval(a).ndim - 1:
            a = lax.expand_dims(b, (canonicalize_axis(axis, get_aval(a).ndim),))
        else:
            raise ValueError("function is not returning an array of the correct shape")
    return a


def fromfunction(function, shape, *, dtype=float, **kwargs):
    """An array whose element at each index is function(*index) (vmapped over the index
    arrays, which have dtype `dtype`)."""
    shape = tuple(int(n) for n in (shape if isinstance(shape, (tuple, list)) else (shape,)))
    dt = dtypes.canonicalize_dtype(dtype)
    vmap = _vmap()
    f = lambda *idx: function(*idx, **kwargs)
    for i in range(len(shape)):
        in_axes = [None] * len(shape)
        in_axes[-i - 1] = 0
        f = vmap(f, in_axes=tuple(in_axes))
    return f(*[lax.iota(dt, n) for n in shape])

