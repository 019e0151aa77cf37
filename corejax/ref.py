"""Mutable array references: `new_ref`, reads and writes through indexing, `freeze`.

    r = corejax.new_ref(jnp.zeros(3))
    @corejax.jit
    def f(x):
        r[...] += x          # mutates r on every call
        return r[0]

Indexes are those of arrays (ints, slices, `...`, `None`, integer arrays) plus `ds(start,
size, stride)`, a slice of static size whose start may be traced (clamped into range, as
lax.dynamic_slice does). A write must match the indexed shape exactly (no broadcasting) and
the reference's dtype (a weakly typed value of the same kind is converted). The machinery
that threads references through transformations is in corejax/_ref_state.py.
"""
from __future__ import annotations

import numpy as np

from corejax import core, dtypes
from corejax.core import Tracer
from corejax._ref_state import AbstractRef, Ref, read, write, consume, canonical_value

__all__ = ["AbstractRef", "Ref", "addupdate", "empty_ref", "free_ref", "freeze", "get",
           "new_ref", "set", "swap", "Slice", "dslice", "ds"]


# --- ds --------------------------------------------------------------------------------------

class Slice:
    """`size` elements from `start` (static or traced) every `stride`, along one axis."""

    __slots__ = ("start", "size", "stride")

    def __init__(self, start, size, stride=1):
        if not isinstance(size, (int, np.integer)) or size < 0:
            raise ValueError(f"Slice size must be a static non-negative int, got {size!r}.")
        if not isinstance(stride, (int, np.integer)) or stride < 1:
            raise ValueError(f"Slice stride must be a static positive int, got {stride!r}.")
        self.start, self.size, self.stride = start, int(size), int(stride)

    def __repr__(self):
        return f"Slice(start={self.start}, size={self.size}, stride={self.stride})"


def dslice(start, size=None, stride=None):
    """`ds(start, size, stride=1)`: a Slice for indexing a Ref; `ds(n)` is `ds(0, n)`."""
    if start is None:
        return slice(None, None, stride)
    if size is None:
        start, size = 0, start
    return Slice(start, size, 1 if stride is None else stride)


ds = dslice


# --- indexing --------------------------------------------------------------------------------

def _static_int(x):
    if isinstance(x, (bool, np.bool_)):
        return None
    if isinstance(x, (int, np.integer)):
        return int(x)
    return None


def _is_traced(x) -> bool:
    return isinstance(x, Tracer)


def _normalize(idx, shape, what):
    """The index as a tuple of per-position entries with the Ellipsis expanded, and for each
    entry the axis of the reference it indexes (None for a `None` entry)."""
    if idx is None:
        idx = ()
    elif not isinstance(idx, tuple):
        idx = (idx,)
    consumed = sum(0 if (e is None or e is Ellipsis) else
                   (np.ndim(e) if _is_bool_array(e) else 1) for e in idx)
    if sum(e is Ellipsis for e in idx) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if consumed > len(shape):
        raise IndexError(f"Too many indices for {what}: {consumed} non-None/Ellipsis "
                         f"indices for a reference of dim {len(shape)}.")
    out = []
    for e in idx:
        if e is Ellipsis:
            out.extend([slice(None)] * (len(shape) - consumed))
        else:
            out.append(e)
    axes, axis = [], 0
    for e in out:
        if e is None:
            axes.append(None)
        else:
            axes.append(axis)
            axis += 1
    out.extend([slice(None)] * (len(shape) - axis))
    axes.extend(range(axis, len(shape)))
    return out, axes


def _is_bool_array(e) -> bool:
    dt = getattr(e, "dtype", None)
    if dt is None and isinstance(e, (list, tuple)):
        dt = np.asarray(e).dtype
    return dt is not None and np.dtype(dt) == np.bool_ and np.ndim(e) > 0


def _check_entries(entries, axes, shape):
    """Static bounds checks (as JAX's reference indexer does) and the dummy NumPy index that
    gives the result shape."""
    from corejax.errors import NonConcreteBooleanIndexError
    dummy = []
    for e, ax in zip(entries, axes):
        if e is None or isinstance(e, slice):
            dummy.append(e)
            continue
        dim = shape[ax]
        if type(e) is Slice:
            start = _static_int(e.start) if not _is_traced(e.start) else None
            if start is not None:
                if start < 0:
                    raise TypeError("slice start_indices must have every element be "
                                    f"nonnegative, got ({start},).")
                if e.size and start + (e.size - 1) * e.stride >= dim:
                    raise ValueError(f"Out of bound slice: start={start}, size={e.size}, "
                                     f"stride={e.stride}, dim={dim}.")
            dummy.append(slice(0, e.size))
            continue
        i = _static_int(e)
        if i is not None:
            if not -dim <= i < dim:
                raise ValueError(f"Out of bound indexer: idx={i}, dim={dim}.")
            dummy.append(0)
            continue
        if _is_bool_array(e):
            raise NonConcreteBooleanIndexError(core.ShapedArray(np.shape(e), np.bool_))
        aval = core.get_aval(e) if _is_traced(e) else core.get_aval(np.asarray(e))
        if aval.dtype.kind not in "iu":
            raise TypeError(f"Indexer must have integer or boolean type, got indexer with "
                            f"type {aval.dtype}.")
        dummy.append(np.zeros(aval.shape, np.intp))
    return dummy


def _dynamic_part(entries, axes, shape):
    """The traced-start Slices as a dynamic_slice: `(starts, sizes, rest)` where `rest`
    indexes the window (None when there is no traced start)."""
    if not any(type(e) is Slice and _is_traced(e.start) for e in entries):
        return None
    from corejax import lax
    starts, sizes = [0] * len(shape), list(shape)
    rest = []
    for e, ax in zip(entries, axes):
        if type(e) is Slice and _is_traced(e.start):
            start = lax.convert_element_type(e.start, np.int32)
            # a negative start counts from the end (then clamps), as JAX's indexer does
            starts[ax] = lax.select(lax.lt(start, 0), lax.add(start, np.int32(shape[ax])),
                                    start)
            sizes[ax] = (e.size - 1) * e.stride + 1 if e.size else 0
            rest.append(slice(None, None, e.stride))
        else:
            rest.append(e)
    return starts, sizes, rest


def _plain(entries):
    out = []
    for e in entries:
        if type(e) is Slice:
            out.append(slice(e.start, e.start + (e.size - 1) * e.stride + 1 if e.size
                             else e.start, e.stride))
        else:
            out.append(e)
    return tuple(out)


def _whole(entries) -> bool:
    return all(isinstance(e, slice) and e == slice(None) for e in entries)


def _index(ref, idx, what):
    shape = ref.shape
    entries, axes = _normalize(idx, shape, what)
    dummy = _check_entries(entries, axes, shape)
    out_shape = np.broadcast_to(np.empty((), bool), shape)[tuple(dummy)].shape
    return entries, axes, out_shape


def _get(value, entries, axes):
    if _whole(entries):
        return value
    dyn = _dynamic_part(entries, axes, value.shape)
    if dyn is not None:
        from corejax import lax
        starts, sizes, rest = dyn
        value, entries = lax.dynamic_slice(value, starts, sizes), rest
    return value[_plain(entries)]


def _update(value, entries, axes, x, mode):
    """`value` with `x` set (mode "set") or added ("add") at the indexed positions."""
    if _whole(entries):
        return x if mode == "set" else value + x
    dyn = _dynamic_part(entries, axes, value.shape)
    if dyn is not None:
        from corejax import lax
        starts, sizes, rest = dyn
        window = lax.dynamic_slice(value, starts, sizes)
        window = _update(window, rest, axes, x, mode)
        return lax.dynamic_update_slice(value, window, starts)
    at = value.at[_plain(entries)]
    return at.set(x) if mode == "set" else at.add(x)


def _check_value(ref, x, out_shape, what):
    x = canonical_value(x)
    aval = core.get_aval(x)
    rdt, rweak = ref.dtype, ref.weak_type
    if aval.dtype != rdt and not (aval.weak_type and _kind(aval.dtype) == _kind(rdt)):
        raise ValueError(f"Invalid dtype for `{what}`. Ref dtype: {rdt}. Value dtype: "
                         f"{aval.dtype}.")
    if aval.dtype != rdt or aval.weak_type != rweak:
        # a reference's type is fixed when it is made: reads give back its weak type
        from corejax import lax
        x = lax.convert_element_type(x, rdt, weak_type=rweak)
    if tuple(aval.shape) != tuple(out_shape):
        raise ValueError(f"Invalid shape for `{what}`. Ref shape: {ref.shape}. Expected shape: "
                         f"{tuple(out_shape)}. Value shape: {tuple(aval.shape)}. (A write must "
                         "match the indexed shape exactly: references do not broadcast.)")
    return x


def _kind(dt) -> str:
    if dt == np.bool_:
        return "b"
    if dtypes.is_integer(dt):
        return "i"
    return "c" if np.dtype(dt).kind == "c" else "f"


# --- the public operations -------------------------------------------------------------------

def new_ref(init_val, *, memory_space=None, kind=None) -> Ref:
    """A new mutable reference holding `init_val` (an array, NumPy array or scalar)."""
    if type(init_val) is Ref:
        raise TypeError("new_ref: the initial value is itself a Ref; pass its value "
                        "(new_ref(r[...])) to make a copy.")
    if memory_space is not None and core._trace_state.dynamic_level == 0:
        # as JAX: a memory space is a property of a staged buffer (corejax's CPU devices have
        # one memory, corejax.memory.Space.Device, where every reference lives)
        raise NotImplementedError("array ref with memory space only works inside of a `jit`: "
                                  "create it in a jitted function, or drop memory_space.")
    return Ref(canonical_value(init_val), memory_space, kind)


def empty_ref(ty, memory_space=None) -> Ref:
    """A reference of `ty`'s shape and dtype (a ShapeDtypeStruct or array-like type) whose
    contents are undefined until written. Like JAX, only inside a traced function."""
    if core._trace_state.dynamic_level == 0:
        raise NotImplementedError("Evaluation rule for 'empty_ref' not implemented: create it "
                                  "inside jit, or use new_ref(jnp.zeros(shape, dtype)) "
                                  "eagerly.")
    from corejax.lax import full
    return Ref(full(tuple(ty.shape), 0, dtypes.canonicalize_dtype(ty.dtype)), memory_space)


def get(ref, idx=None):
    """`ref[idx]`: the indexed part of the reference's current value."""
    value = read(ref, "get")
    entries, axes, _ = _index(ref, idx, "get")
    return _get(value, entries, axes)


def swap(ref, idx, value, _function_name: str = "ref_swap"):
    """Writes `value` at `ref[idx]` and returns what was there."""
    current = read(ref, "swap")
    entries, axes, out_shape = _index(ref, idx, "swap")
    value = _check_value(ref, value, out_shape, "swap")
    old = _get(current, entries, axes)
    write(ref, _update(current, entries, axes, value, "set"), "swap")
    return old


def set(ref, idx, value) -> None:
    """`ref[idx] = value`."""
    current = read(ref, "swap")
    entries, axes, out_shape = _index(ref, idx, "swap")
    value = _check_value(ref, value, out_shape, "swap")
    write(ref, _update(current, entries, axes, value, "set"), "swap")


def addupdate(ref, idx, x) -> None:
    """`ref[idx] += x`, accumulating over repeated integer-array indices."""
    current = read(ref, "addupdate")
    entries, axes, out_shape = _index(ref, idx, "addupdate")
    x = _check_value(ref, x, out_shape, "addupdate")
    write(ref, _update(current, entries, axes, x, "add"), "addupdate")


def freeze(ref) -> "object":
    """The reference's value as an array; the reference may not be used afterwards."""
    return consume(ref, "frozen", "freeze")


def free_ref(ref) -> None:
    """Releases the reference; using it afterwards is an error."""
    consume(ref, "freed", "free_ref")
