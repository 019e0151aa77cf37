"""Fusion: partitions an optimized Jaxpr into steps the executor runs in order.

- `FusedGroup`: a chain of elementwise equations of one shape (an equation may have several
  results of that shape, as threefry2x32's two words), whose operands may be
  broadcasts, transposes, unit-dimension reshapes, iotas and scalar literals (folded into the
  loop's indexing, never materialized), optionally ending in one reduction (sum/prod/max/min/and/or over
  any axes). Becomes one loop nest (compiler/codegen.py).
- `HostStep`: any other equation, run by its NumPy impl (dot_general there is BLAS matmul;
  layout ops are NumPy views/copies; control flow evaluates its sub-jaxprs).

Groups are formed greedily in program order. A group stays *open* (it may still grow) until
something outside it reads one of its values; then it is *sealed* and runs at the position of
its last equation, which is always before that reader. Open groups of the same shape that
meet at an equation are merged.
"""
from __future__ import annotations

from corejax.core import Literal, Var
from corejax.compiler import registry

__all__ = ["FusedGroup", "HostStep", "Virtual", "partition", "step_reads", "Buffers"]

_REDUCE_MONOIDS = {"add", "mul", "max", "min", "and", "or"}


class Virtual:
    """A value never materialized inside kernels: `src` (a materialized Var, a scalar Literal,
    or None for an iota) seen through `dims` (for each src dimension, its output dimension)."""

    __slots__ = ("src", "dims", "aval", "iota_dim", "eqn")

    def __init__(self, src, dims, aval, eqn, iota_dim=None):
        self.src, self.dims, self.aval, self.eqn, self.iota_dim = src, dims, aval, eqn, iota_dim


class FusedGroup:
    def __init__(self, shape):
        self.shape = tuple(shape)
        self.eqns: list = []           # elementwise equations in program order
        self.reduction = None          # the terminal reduction equation, if any
        self.internal: set = set()     # Vars computed by the group
        self.inputs: dict = {}         # atom -> Virtual or Var read by the group
        self.outputs: list = []        # internal Vars needed outside (plus the reduction's)
        self.sealed = False

    def __repr__(self):
        names = [e.primitive.name for e in self.eqns]
        if self.reduction is not None:
            names.append(self.reduction.primitive.name)
        return f"FusedGroup({self.shape}, {names})"


class HostStep:
    __slots__ = ("eqn",)

    def __init__(self, eqn):
        self.eqn = eqn

    def __repr__(self):
        return f"HostStep({self.eqn.primitive.name})"


def step_reads(step) -> list:
    """The materialized Vars a step reads (a group's direct inputs and its views' sources)."""
    if isinstance(step, HostStep):
        return [v for v in step.eqn.invars if type(v) is Var]
    reads = []
    for atom, src in step.inputs.items():
        v = src.src if isinstance(src, Virtual) else atom
        if type(v) is Var:
            reads.append(v)
    return reads


class Buffers:
    """Which buffers a program's values may live in, and when each is last read: what writing
    into a buffer in place (a donated input, an update's operand) must respect.

    `views(step)`: the operand Vars whose buffers the step's results may be views of (a
    backend's layout ops; anything a host step returns, conservatively). A value's `roots` are
    the values whose buffers it may share (itself, when it is no view). `last_read[root]` is the
    last step reading any value of that buffer; the program's outputs read theirs at the end."""

    def __init__(self, jaxpr, steps, views):
        self.roots: dict = {}
        for st in steps:
            shared = set()
            for v in views(st):
                shared |= self.roots_of(v)
            if shared and isinstance(st, HostStep):
                for v in st.eqn.outvars:
                    self.roots[v] = frozenset(shared)
        self.last_read: dict = {}
        for i, st in enumerate(steps):
            for v in step_reads(st):
                for r in self.roots_of(v):
                    self.last_read[r] = i
        for v in jaxpr.outvars:
            if type(v) is Var:
                for r in self.roots_of(v):
                    self.last_read[r] = len(steps)

    def roots_of(self, v) -> frozenset:
        return self.roots.get(v) or frozenset((v,))

    def read_at(self, v, i) -> None:
        """Step i reads v too (a step the executor moved a read into)."""
        for r in self.roots_of(v):
            self.last_read[r] = max(self.last_read.get(r, -1), i)

    def free_after(self, v, i) -> bool:
        """Whether nothing after step i reads v's buffers, and no output is (a view of) them."""
        return all(self.last_read.get(r, -1) <= i for r in self.roots_of(v))


def _fusible_dtype(aval) -> bool:
    """Numba kernels handle bool, integers, float32 and float64 (no float16, no complex)."""
    dt = aval.dtype
    return dt.kind in "biu" or (dt.kind == "f" and dt.itemsize >= 4)


def _unit_reshape_dims(in_shape, out_shape):
    """For a reshape that only adds/removes size-1 dims: each input dim's output dim."""
    ins = [i for i, s in enumerate(in_shape) if s != 1]
    outs = [i for i, s in enumerate(out_shape) if s != 1]
    if [in_shape[i] for i in ins] != [out_shape[i] for i in outs]:
        return None
    mapping, it = [], iter(outs)
    for i, s in enumerate(in_shape):
        if s != 1:
            mapping.append(next(it))
        else:
            mapping.append(None)
    return mapping


def partition(jaxpr) -> list:
    """The Jaxpr as a list of FusedGroup / HostStep, in an order respecting dependences."""
    steps: list = []
    owner: dict = {}          # Var -> FusedGroup computing it
    virtual: dict = {}        # Var -> Virtual
    needed_outside: set = set()

    def seal_use(v):
        """A value read outside the group computing it: materialize it."""
        if type(v) is not Var:
            return
        if v in virtual:   # run the broadcast/reshape/iota itself, here
            vv = virtual.pop(v)
            for x in vv.eqn.invars:
                seal_use(x)
            steps.append(HostStep(vv.eqn))
            return
        g = owner.get(v)
        if g is not None:
            g.sealed = True
            needed_outside.add(v)

    def move_to_end(g):
        if g in steps:
            steps.remove(g)
        steps.append(g)

    for eqn in jaxpr.eqns:
        prim = eqn.primitive
        name = prim.name
        out = eqn.outvars[0] if len(eqn.outvars) == 1 else None

        if name == "broadcast_in_dim" and type(eqn.invars[0]) is Literal \
                and _fusible_dtype(out.aval):
            virtual[out] = Virtual(eqn.invars[0], [], out.aval, eqn)
            continue

        if name in ("broadcast_in_dim", "reshape") and out is not None \
                and _fusible_dtype(out.aval) and type(eqn.invars[0]) is Var:
            x = eqn.invars[0]
            if name == "broadcast_in_dim":
                dims = list(eqn.params["broadcast_dimensions"])
            elif eqn.params.get("dimensions") is None:
                dims = _unit_reshape_dims(x.aval.shape, out.aval.shape)
            else:
                dims = None
            if dims is not None:
                inner = virtual.get(x)
                if inner is not None and type(inner.src) is Literal:
                    virtual[out] = Virtual(inner.src, [], out.aval, eqn)
                    continue
                if inner is not None and inner.src is None:
                    seal_use(x)      # an iota seen through a broadcast: materialize the iota
                    inner = None
                if inner is not None:
                    comp = [None if d is None else dims[d] for d in inner.dims]
                    virtual[out] = Virtual(inner.src, comp, out.aval, eqn)
                else:
                    seal_use(x)
                    virtual[out] = Virtual(x, list(dims), out.aval, eqn)
                continue

        if name == "transpose" and _fusible_dtype(out.aval) and type(eqn.invars[0]) is Var:
            x = eqn.invars[0]
            perm = eqn.params["permutation"]
            dims = [perm.index(k) for k in range(len(perm))]   # x dim -> output dim
            inner = virtual.get(x)
            if inner is not None and type(inner.src) is Literal:
                virtual[out] = Virtual(inner.src, [], out.aval, eqn)
            elif inner is not None and type(inner.src) is Var:
                comp = [None if d is None else dims[d] for d in inner.dims]
                virtual[out] = Virtual(inner.src, comp, out.aval, eqn)
            else:
                seal_use(x)
                virtual[out] = Virtual(x, dims, out.aval, eqn)
            continue

        if name == "iota" and _fusible_dtype(out.aval):
            virtual[out] = Virtual(None, [], out.aval, eqn, iota_dim=eqn.params["dimension"])
            continue

        lowering_is_elementwise = prim in registry.elementwise_lowerings
        if lowering_is_elementwise and len({o.aval.shape for o in eqn.outvars}) == 1 and all(
                _fusible_dtype(v.aval) for v in (*eqn.invars, *eqn.outvars)):
            shape = eqn.outvars[0].aval.shape
            candidates = []
            for v in eqn.invars:
                g = owner.get(v) if type(v) is Var else None
                if g is not None and not g.sealed and g.shape == shape and g not in candidates:
                    candidates.append(g)
            if candidates:
                g = candidates[0]
                for other in candidates[1:]:
                    _merge(g, other, owner)
                    steps.remove(other)
            else:
                g = FusedGroup(shape)
            for v in eqn.invars:
                if type(v) is Literal or (type(v) is Var and (owner.get(v) is g
                                                             or v in g.internal)):
                    continue
                producer = owner.get(v)
                if producer is not None and producer.shape == shape and \
                        _rematerialize(v, producer, g, needed_outside):
                    continue
                if v in virtual:
                    g.inputs[v] = virtual[v]
                else:
                    seal_use(v)
                    g.inputs[v] = v
            g.eqns.append(eqn)
            for o in eqn.outvars:
                g.internal.add(o)
                owner[o] = g
            move_to_end(g)
            continue

        kernel = registry.kernel_lowerings.get(prim)
        if kernel is not None and kernel[0] == "reduce" and kernel[1] in _REDUCE_MONOIDS \
                and _fusible_dtype(out.aval):
            x = eqn.invars[0]
            g = owner.get(x) if type(x) is Var else None
            if g is None or g.sealed or g.shape != x.aval.shape:
                g = FusedGroup(x.aval.shape)
                if x in virtual:
                    g.inputs[x] = virtual[x]
                else:
                    seal_use(x)
                    g.inputs[x] = x
            g.reduction = eqn
            g.sealed = True
            owner[out] = g
            move_to_end(g)
            continue

        for v in eqn.invars:
            seal_use(v)
        steps.append(HostStep(eqn))

    for v in jaxpr.outvars:
        seal_use(v)
    for s in steps:
        if isinstance(s, FusedGroup):
            s.outputs = [o for e in s.eqns for o in e.outvars if o in needed_outside]
            if s.reduction is not None:
                s.outputs.append(s.reduction.outvars[0])
    return steps


# Cheap elementwise ops a consumer group recomputes rather than reading a materialized
# intermediate of a sealed group (as XLA duplicates cheap producers into consumer fusions):
# (x - mean) / std then streams x once more instead of writing and re-reading x - mean.
# A value stored anyway (something outside groups reads it) is read, not recomputed: a
# relu's backward mask reads the relu's output, which the next layer's product keeps.
_CHEAP = {"add", "sub", "mul", "neg", "max", "min", "select_n", "convert_element_type", "abs",
          "eq", "ne", "lt", "le", "gt", "ge", "and", "or", "not", "stop_gradient"}
_REMAT_MAX_EQNS = 3


def _rematerialize(v, producer: FusedGroup, g: FusedGroup, stored) -> bool:
    """Copies the chain computing `v` inside sealed group `producer` into `g`, if it is short
    and cheap and reads only the producer's inputs and its `stored` results (values
    materialized anyway, read rather than recomputed: `v` itself then is not copied)."""
    if not producer.sealed or producer is g or v in stored:
        return False
    chain, need = [], {v}
    for e in reversed(producer.eqns):
        if any(o in need for o in e.outvars):
            if e.primitive.name not in _CHEAP or len(chain) == _REMAT_MAX_EQNS:
                return False
            chain.append(e)
            need.discard(e.outvars[0])
            need.update(x for x in e.invars
                        if type(x) is Var and x in producer.internal and x not in stored)
    if need:
        return False
    for e in reversed(chain):
        for x in e.invars:
            if type(x) is Var and x not in g.internal:
                if x in producer.internal:          # a stored result
                    g.inputs.setdefault(x, x)
                else:
                    g.inputs.setdefault(x, producer.inputs[x])
        g.eqns.append(e)
        g.internal.add(e.outvars[0])
    return True


def _merge(g, other, owner):
    seen = {id(e) for e in g.eqns}
    other_eqns = [e for e in other.eqns if id(e) not in seen]
    g.eqns = g.eqns + other_eqns
    for k, v in other.inputs.items():
        if k not in g.internal:
            g.inputs.setdefault(k, v)
    g.internal |= other.internal
    for v in other.internal:
        if owner.get(v) is other:
            owner[v] = g
    for k in list(g.inputs):
        if k in g.internal:
            del g.inputs[k]
