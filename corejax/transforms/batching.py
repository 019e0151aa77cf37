"""Vectorization: the batching interpreter behind `vmap`.

A `BatchTracer` carries a value with one extra axis, `batch_dim` (None when the value is the
same for the whole batch). Each primitive's batching rule maps batched operands to one batched
call of a primitive: `rule(args, dims, **params) -> (out, out_dim)`.
"""
from __future__ import annotations

import threading
from typing import Any, Callable, NamedTuple

from corejax import core
from corejax.core import Primitive, ShapedArray, Tracer, Trace, get_aval

__all__ = ["primitive_batchers", "not_mapped", "defvectorized", "defbroadcasting", "vmap_flat",
           "moveaxis", "bdim_at_front", "AxisData", "axis_primitives", "find_axis"]

primitive_batchers: dict[Primitive, Callable] = {}
not_mapped = None


class BatchTracer(Tracer):
    __slots__ = ("val", "batch_dim")

    def __init__(self, trace, val, batch_dim):
        self._trace, self.val, self.batch_dim = trace, val, batch_dim

    @property
    def aval(self):
        aval = get_aval(self.val)
        if self.batch_dim is None:
            return aval
        shape = aval.shape[:self.batch_dim] + aval.shape[self.batch_dim + 1:]
        return ShapedArray(shape, aval.dtype, aval.weak_type)

    def full_lower(self):
        if self.batch_dim is None:
            return core.full_lower(self.val)
        return self

    def _origin(self):
        return self.val._origin() if isinstance(self.val, Tracer) else ""

    def _short_repr(self):
        return f"VmapTracer(aval={self.aval}, batched={get_aval(self.val)})"


class AxisData(NamedTuple):
    """A vmap's axis: its size and name (None unless vmap(axis_name=...) / a pmap)."""
    size: int
    name: Any = None


# Primitives whose batching rule runs even when no operand is batched at this level: the
# collectives over named axes (psum of an unbatched value over the axis is n times it).
axis_primitives: set = set()


class _RuleAxis(threading.local):
    """The axis of the batching rule running now: a rule that batches a sub-program
    (jit, scan, cond, custom rules) re-enters vmap_flat with the same axis, and its name
    must come along for the collectives inside."""

    def __init__(self):
        self.stack: list = []


_rule_axis = _RuleAxis()


class BatchTrace(Trace):
    leak_checked = True   # core.check_leaks looks for its tracers
    @property
    def axis_size(self) -> int:
        return self.main.payload.size

    @property
    def axis_name(self):
        return self.main.payload.name

    def pure(self, val):
        return BatchTracer(self, val, None)

    lift = pure

    def process_primitive(self, primitive, tracers, params):
        vals = [t.val for t in tracers]
        dims = [t.batch_dim for t in tracers]
        if all(d is None for d in dims) and primitive not in axis_primitives:
            out = primitive.bind(*vals, **params)
            if primitive.multiple_results:
                return [BatchTracer(self, o, None) for o in out]
            return BatchTracer(self, out, None)
        rule = primitive_batchers.get(primitive)
        if rule is None:
            raise NotImplementedError(f"Batching rule for '{primitive.name}' not implemented.")
        _rule_axis.stack.append(self.main.payload)
        try:
            if getattr(rule, "needs_axis_name", False):
                out, out_dim = rule(self.axis_size, self.axis_name, vals, dims, **params)
            elif getattr(rule, "needs_axis_size", False):
                out, out_dim = rule(self.axis_size, vals, dims, **params)
            else:
                out, out_dim = rule(vals, dims, **params)
        finally:
            _rule_axis.stack.pop()
        if primitive.multiple_results:
            return [BatchTracer(self, o, d) for o, d in zip(out, out_dim)]
        return BatchTracer(self, out, out_dim)


_SAME_AXIS = object()


def vmap_flat(fun: Callable, axis_size: int, in_dims, args=(), axis_name=_SAME_AXIS):
    """Runs `fun` on flat `args` mapped along `in_dims`; returns `(outs, out_dims)`. Called
    from a batching rule, the axis keeps the name of the rule's axis unless one is given."""
    if axis_name is _SAME_AXIS:
        rule_axis = _rule_axis.stack[-1] if _rule_axis.stack else None
        axis_name = rule_axis.name if rule_axis is not None and rule_axis.size == axis_size \
            else None
    with core.new_main(BatchTrace, AxisData(axis_size, axis_name)) as main:
        trace = BatchTrace(main)
        tracers = [BatchTracer(trace, x, d) if d is not None else x for x, d in zip(args, in_dims)]
        outs = fun(*tracers)
        outs = [trace.full_raise(o) for o in outs]
        return [o.val for o in outs], [o.batch_dim for o in outs]


# --- helpers shared by rules -----------------------------------------------------------------

def moveaxis(x, src: int, dst: int):
    from corejax import lax
    if src == dst:
        return x
    perm = [i for i in range(get_aval(x).ndim) if i != src]
    perm.insert(dst, src)
    return lax.transpose(x, perm)


def bdim_at_front(x, d, size: int):
    """`x` with its batch axis first; an unbatched `x` is broadcast along a new front axis."""
    from corejax import lax
    if d is None:
        aval = get_aval(x)
        return lax.broadcast_in_dim(x, (size,) + aval.shape, tuple(range(1, aval.ndim + 1)))
    return moveaxis(x, d, 0)


def defvectorized(prim: Primitive) -> None:
    """Elementwise unary primitives: the batch axis is just another axis."""
    primitive_batchers[prim] = lambda vals, dims, **params: (prim.bind(*vals, **params), dims[0])


def defbroadcasting(prim: Primitive) -> None:
    """Elementwise n-ary primitives, whose (unbatched) operands have equal shapes."""

    def rule(vals, dims, **params):
        first = next(d for d in dims if d is not None)
        if all(d == first for d in dims):
            return prim.bind(*vals, **params), first
        size = get_aval(vals[dims.index(first)]).shape[first]
        return prim.bind(*[bdim_at_front(v, d, size) for v, d in zip(vals, dims)], **params), 0

    primitive_batchers[prim] = rule


def find_axis(name) -> core.MainTrace:
    """The innermost vmap / pmap axis called `name` in scope; NameError if there is none."""
    stack = core._trace_state.stack
    for main in reversed(stack):
        if issubclass(main.trace_type, BatchTrace) and main.payload.name == name:
            return main
    bound = [m.payload.name for m in stack if issubclass(m.trace_type, BatchTrace)
             and m.payload.name is not None]
    raise NameError(f"unbound axis name: {name}. The following axis names (e.g. defined by "
                    f"pmap or vmap(axis_name=...)) are available to collective operations: "
                    f"{bound}")
