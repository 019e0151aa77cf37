"""The transformation core: primitives, abstract values, tracers, the trace stack and the IR.

This module knows no concrete primitive. A `Primitive` is a named tag; each interpreter keeps
its own rule table keyed by primitive (`impl` and `abstract_eval` live on the primitive itself,
jvp/transpose in transforms/ad.py, batching in transforms/batching.py, lowerings in compiler/).

Every transformation is a `Trace` on a stack. `Primitive.bind` finds the highest-level trace
among its arguments' tracers and lets that trace process the primitive; the trace computes
with the tracers' contents by binding again, which reaches the traces below it. The bottom
of the stack evaluates eagerly. While a function is staged out (jit, make_jaxpr) its staging
trace is the *dynamic* trace: every operation reaches it, even one on constants only.
"""
from __future__ import annotations

import itertools
import threading
from contextlib import contextmanager
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

from corejax import dtypes
from corejax.errors import (TracerArrayConversionError, TracerBoolConversionError,
                            TracerIntegerConversionError, ConcretizationTypeError,
                            UnexpectedTracerError)

__all__ = [
    "Primitive", "ShapedArray", "Tracer", "Trace", "EvalTrace", "MainTrace", "new_main",
    "new_dynamic", "find_top_trace", "full_lower", "get_aval", "Var", "Literal", "JaxprEqn",
    "Jaxpr", "ClosedJaxpr", "eval_jaxpr", "concrete_or_error", "raise_to_shaped",
]


# --- abstract values -------------------------------------------------------------------------

_SHORT_DTYPE = {"bool": "bool", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
                "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
                "float16": "f16", "float32": "f32", "float64": "f64", "complex64": "c64",
                "complex128": "c128"}


def short_dtype_name(dt: np.dtype) -> str:
    if dt == dtypes.float0:
        return "float0"
    short = _SHORT_DTYPE.get(dt.name)
    if short is None:  # ml_dtypes' types, as JAX prints them: bf16, f8_e4m3fn, i4, u2 ...
        short = dt.name.replace("float", "f").replace("uint", "u").replace("int", "i")
    return short


class ShapedArray:
    """The abstract value of an array: its shape, dtype and whether it is weakly typed."""

    __slots__ = ("shape", "dtype", "weak_type")
    array_abstraction_level = 1

    def __init__(self, shape, dtype, weak_type: bool = False):
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.weak_type = bool(weak_type)

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))

    def update(self, shape=None, dtype=None, weak_type=None) -> "ShapedArray":
        return ShapedArray(self.shape if shape is None else shape,
                           self.dtype if dtype is None else dtype,
                           self.weak_type if weak_type is None else weak_type)

    def strip_weak_type(self) -> "ShapedArray":
        return self.update(weak_type=False) if self.weak_type else self

    def to_tangent_aval(self) -> "ShapedArray":
        """The space tangents live in: the same for inexact dtypes, float0 otherwise."""
        if dtypes.is_inexact(self.dtype):
            return self
        return ShapedArray(self.shape, dtypes.float0)

    def str_short(self) -> str:
        return f"{short_dtype_name(self.dtype)}[{','.join(map(str, self.shape))}]"

    def __eq__(self, other):
        return (type(other) is ShapedArray and self.shape == other.shape
                and self.dtype == other.dtype and self.weak_type == other.weak_type)

    def __hash__(self):
        return hash((self.shape, self.dtype, self.weak_type))

    def __repr__(self):
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapedArray({self.dtype.name}[{','.join(map(str, self.shape))}]{weak})"

    def __str__(self):  # as JAX: "float32[2,3]", "~float32[]" when weakly typed
        weak = "~" if self.weak_type else ""
        return f"{weak}{self.dtype.name}[{','.join(map(str, self.shape))}]"


class AbstractToken(ShapedArray):
    """The abstract value of a token (lax.create_token / after_all): it sequences effects and
    holds no data, so where a compiled program passes one it is a zero-size buffer."""

    __slots__ = ()

    def __init__(self):
        super().__init__((0,), np.bool_)

    def update(self, shape=None, dtype=None, weak_type=None) -> "AbstractToken":
        return self

    def str_short(self) -> str:
        return "Tok"

    def __eq__(self, other):
        return type(other) is AbstractToken

    def __hash__(self):
        return hash(AbstractToken)

    def __repr__(self):
        return "AbstractToken()"

    __str__ = __repr__


abstract_token = AbstractToken()


class Token:
    """A token value: what lax.create_token and lax.after_all return."""

    __slots__ = ()

    def __array__(self, dtype=None, copy=None):
        return np.zeros((0,), np.bool_ if dtype is None else dtype)


def raise_to_shaped(aval: ShapedArray, weak_type=None) -> ShapedArray:
    return aval if weak_type is None else aval.update(weak_type=weak_type)


# Types whose values are concrete arrays at the bottom of the stack; filled in by array.py.
pytype_aval_mappings: dict[type, Callable[[Any], ShapedArray]] = {}


def _scalar_aval(x) -> ShapedArray:
    return ShapedArray((), dtypes.python_scalar_dtype(x), weak_type=not isinstance(x, bool))


for _t in (int, float, complex, bool):
    pytype_aval_mappings[_t] = _scalar_aval
pytype_aval_mappings[Token] = lambda x: abstract_token
pytype_aval_mappings[np.ndarray] = lambda x: ShapedArray(x.shape, dtypes.canonicalize_dtype(x.dtype))
for _t in np.sctypeDict.values():
    pytype_aval_mappings.setdefault(
        _t, lambda x: ShapedArray((), dtypes.canonicalize_dtype(np.asarray(x).dtype)))


def get_aval(x) -> ShapedArray:
    if isinstance(x, Tracer):
        return x.aval
    try:
        return pytype_aval_mappings[type(x)](x)
    except KeyError:
        raise TypeError(f"Value {x!r} of type {type(x).__name__} is not a valid corejax type "
                        "(an array, a numpy array, or a Python scalar).") from None


def valid_jaxtype(x) -> bool:
    return isinstance(x, Tracer) or type(x) in pytype_aval_mappings


# --- primitives ------------------------------------------------------------------------------

def _default_weak_type_rule(*args, **params) -> bool:
    for a in args:
        if not getattr(a, "weak_type", type(a) in (int, float, complex)):
            return False
    return bool(args)


class Primitive:
    """A named operation. `impl` runs it on NumPy arrays; `abstract_eval` on ShapedArrays.

    `multiple_results` primitives return a list. `weak_type_rule(*args, **params)` says
    whether the (single) eager result is weakly typed; by default, when all inputs are.
    """

    multiple_results = False

    def __init__(self, name: str):
        self.name = name
        self.impl: Callable | None = None
        self.abstract_eval: Callable | None = None
        self.weak_type_rule = _default_weak_type_rule

    def def_impl(self, impl):
        self.impl = impl
        return impl

    def def_abstract_eval(self, rule):
        self.abstract_eval = rule
        return rule

    def bind(self, *args, **params):
        state = _trace_state
        if state.dynamic_level == 0:
            for a in args:
                if isinstance(a, Tracer):
                    break
            else:
                return _eval_trace.process_primitive(self, args, params)
        trace = find_top_trace(args)
        tracers = [trace.full_raise(a) for a in args]
        out = trace.process_primitive(self, tracers, params)
        if self.multiple_results:
            return [full_lower(o) for o in out]
        return full_lower(out)

    def __repr__(self):
        return self.name


# --- tracers and traces ----------------------------------------------------------------------

class Tracer:
    """A value inside a transformation. Its `aval` is what the rest of the program may know."""

    __slots__ = ("_trace", "__weakref__")
    __array_priority__ = 1000

    @property
    def aval(self) -> ShapedArray:
        raise NotImplementedError

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    ndim = property(lambda self: self.aval.ndim)
    size = property(lambda self: self.aval.size)
    weak_type = property(lambda self: self.aval.weak_type)

    def full_lower(self):
        return self

    def to_concrete_value(self):
        """The concrete value this tracer stands for, if it is known during tracing, else None."""
        return None

    def _origin(self) -> str:
        return ""

    def __bool__(self):
        v = self.to_concrete_value()
        if v is None:
            raise TracerBoolConversionError(self)
        return bool(v)

    def __int__(self):
        v = self.to_concrete_value()
        if v is None:
            raise TracerIntegerConversionError(self)
        return int(v)

    def __index__(self):
        v = self.to_concrete_value()
        if v is None or not dtypes.is_integer(self.dtype):
            raise TracerIntegerConversionError(self)
        return int(v)

    def __float__(self):
        v = self.to_concrete_value()
        if v is None:
            raise ConcretizationTypeError(self, "`float()` was applied to a traced array")
        return float(v)

    def __complex__(self):
        v = self.to_concrete_value()
        if v is None:
            raise ConcretizationTypeError(self, "`complex()` was applied to a traced array")
        return complex(v)

    def __array__(self, dtype=None, copy=None):
        raise TracerArrayConversionError(self)

    def __setitem__(self, idx, value):
        raise TypeError("'Tracer' object does not support item assignment: corejax arrays are "
                        "immutable. Use x = x.at[idx].set(value) (or .add, .multiply, .min, .max) "
                        "instead.")

    def __hash__(self):
        raise TypeError(f"unhashable type: {type(self).__name__} (traced arrays are not hashable;"
                        " mark the argument static if it must be a dictionary key)")

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    def _short_repr(self) -> str:
        return f"{type(self).__name__}<{self.aval}>"

    def __repr__(self):  # as JAX 0.10: JitTracer(float32[3]), VmapTracer(aval=..., batched=...)
        return self._short_repr()


class MainTrace:
    """One entry of the trace stack: a level and the Trace type that interprets it."""

    __slots__ = ("level", "trace_type", "payload", "alive")

    def __init__(self, level: int, trace_type: type, payload=None):
        self.level, self.trace_type, self.payload, self.alive = level, trace_type, payload, True

    def with_trace(self) -> "Trace":
        return self.trace_type(self)

    def __repr__(self):
        return f"MainTrace({self.level}, {self.trace_type.__name__})"


class Trace:
    __slots__ = ("main",)

    def __init__(self, main: MainTrace):
        self.main = main

    @property
    def level(self) -> int:
        return self.main.level

    def pure(self, val) -> Tracer:
        """Wraps a value from outside any transformation (a constant)."""
        raise NotImplementedError

    def lift(self, tracer: Tracer) -> Tracer:
        """Wraps a tracer of a lower-level trace."""
        return self.pure(tracer)

    def full_raise(self, val) -> Tracer:
        if not isinstance(val, Tracer):
            return self.pure(val)
        level = self.level
        vmain = val._trace.main
        if vmain is self.main:
            return val
        if not vmain.alive:
            raise UnexpectedTracerError(f"Encountered an unexpected tracer: {val!r}.")
        if vmain.level < level:
            return self.lift(val)
        raise UnexpectedTracerError(
            f"Can't lift tracer {val!r} of level {vmain.level} to level {level}.")

    def process_primitive(self, primitive: Primitive, tracers, params):
        raise NotImplementedError

    def process_custom_derivative_call(self, values, jvp_rule, staged_call):
        """A custom_jvp / custom_vjp function applied to `values` (this trace's top): by
        default `staged_call()`, which binds the staged call primitive. A trace that
        differentiates overrides it to apply `jvp_rule(primals, tangents)` directly."""
        return staged_call()


class EvalTrace(Trace):
    """The bottom of the stack: runs primitives on concrete arrays."""

    def pure(self, val):
        return val

    lift = pure

    def process_primitive(self, primitive, args, params):
        return eval_hooks.apply_primitive(primitive, args, params)


class _EvalHooks:
    """How eager evaluation turns impl outputs into arrays; installed by corejax.array."""

    apply_primitive: Callable = None


eval_hooks = _EvalHooks()


class _TraceState(threading.local):
    def __init__(self):
        self.stack: list[MainTrace] = [MainTrace(0, EvalTrace)]
        self.dynamic: MainTrace = self.stack[0]
        self.dynamic_level = 0
        # with check_tracer_leaks on: the staging / batching traces that ended since the
        # outermost public call began (check_leaks)
        self.finished: list[tuple[int, str]] = []


class _LeakCheck:
    """Whether traces are kept for check_leaks (config check_tracer_leaks, set by the API
    layer)."""
    enabled = False


leak_check = _LeakCheck()


_trace_state = _TraceState()
_eval_trace = EvalTrace(MainTrace(0, EvalTrace))


@contextmanager
def new_main(trace_type: type, payload=None):
    state = _trace_state
    main = MainTrace(len(state.stack), trace_type, payload)
    state.stack.append(main)
    try:
        yield main
    finally:
        main.alive = False
        state.stack.pop()
        if leak_check.enabled and getattr(trace_type, "leak_checked", False):
            # (its id and kind only: holding the MainTrace would keep its payload, and the
            # payload's tracers, alive)
            state.finished.append((id(main), trace_type.__name__))


def check_leaks() -> None:
    """Raises Exception("Leaked trace ...") if a tracer of a staging (jit, make_jaxpr, control
    flow bodies) or batching (vmap) trace that ended is still referenced: a user's function
    stored it where it outlives the transformation (a global list, an attribute). Run with
    check_tracer_leaks on when the outermost public call returns; costs a garbage collection
    and a scan of the heap, as JAX's checker does."""
    import gc
    state = _trace_state
    mains, state.finished = state.finished, []
    if not mains:
        return
    gc.collect()
    # a live tracer keeps its MainTrace alive, so a live id of an ended trace is that trace
    ended = dict(mains)
    for live in state.stack:
        ended.pop(id(live), None)
    heap = gc.get_objects()
    leaked = [o for o in heap if isinstance(o, Tracer) and id(getattr(
        getattr(o, "_trace", None), "main", None)) in ended]
    del heap
    if not leaked:
        return
    lines = [f"Leaked trace {ended[id(leaked[0]._trace.main)]}. Leaked tracer(s):", ""]
    for t in leaked[:5]:
        lines.append(repr(t))
        for ref in gc.get_referrers(t):
            if ref is leaked or type(ref).__name__ == "frame":
                continue
            lines.append(f"<{type(t).__name__} {id(t)}> is referred to by "
                         f"<{type(ref).__name__} {id(ref)}>")
    raise Exception("\n".join(lines))


@contextmanager
def new_dynamic(main: MainTrace):
    """Makes `main` the trace every primitive reaches while the block runs (staging)."""
    state = _trace_state
    prev, prev_level = state.dynamic, state.dynamic_level
    state.dynamic, state.dynamic_level = main, main.level
    try:
        yield
    finally:
        state.dynamic, state.dynamic_level = prev, prev_level


def find_top_trace(args) -> Trace:
    state = _trace_state
    top = state.dynamic
    for a in args:
        if isinstance(a, Tracer):
            m = a._trace.main
            if m.level > top.level:
                top = m
    return top.with_trace() if top.level else _eval_trace


def full_lower(val):
    return val.full_lower() if isinstance(val, Tracer) else val


def cur_level() -> int:
    return len(_trace_state.stack) - 1


def concrete_or_error(fn: Callable, val, context: str = ""):
    """`fn(val)` on the concrete value of `val`; a ConcretizationTypeError if it has none."""
    if isinstance(val, Tracer):
        c = val.to_concrete_value()
        if c is None:
            raise ConcretizationTypeError(val, context)
        return fn(c)
    return fn(val)


# --- the IR ----------------------------------------------------------------------------------

class Var:
    __slots__ = ("aval", "count")
    _counter = itertools.count()

    def __init__(self, aval: ShapedArray):
        self.aval = aval
        self.count = next(Var._counter)

    def __repr__(self):
        return f"Var({self.count}:{self.aval.str_short()})"


class Literal:
    """A scalar constant inlined in an equation."""

    __slots__ = ("val", "aval")

    def __init__(self, val, aval: ShapedArray):
        self.val, self.aval = val, aval

    def value(self):
        """`val` as an operand of exactly this aval, for re-evaluating the equation: `val`
        itself (a Python scalar) stands for a weak value of the default dtype only; a uint32 or
        weak float16 literal must not come back as a weak int32 / float32."""
        val, aval = self.val, self.aval
        if aval.dtype == dtypes.float0:     # a symbolic zero tangent of an integer value
            return np.zeros(aval.shape, dtypes.float0)
        own = get_aval(val)
        if own.dtype == aval.dtype and own.weak_type == aval.weak_type:
            return val
        if not aval.weak_type:
            return np.asarray(val, aval.dtype)[()]
        from corejax.array import Array
        return Array(np.asarray(val, aval.dtype), True)

    def __repr__(self):
        return f"Literal({self.val})"


class SourceInfo(NamedTuple):
    filename: str
    lineno: int
    function: str
    col: int = -1          # the column the staging expression starts at (-1: unknown)
    qualname: str = ""     # the function's qualified name (C.m, outer.<locals>.f)

    def __str__(self):  # as JAX: file:line:col (qualified.name)
        col = f":{self.col}" if self.col >= 0 else ""
        return f"{self.filename}:{self.lineno}{col} ({self.qualname or self.function})"


class JaxprEqn(NamedTuple):
    primitive: Primitive
    invars: list
    params: dict
    outvars: list
    source_info: SourceInfo | None = None


class Jaxpr:
    """A typed, first-order program: `constvars; invars. let eqns in outvars`."""

    __slots__ = ("constvars", "invars", "eqns", "outvars", "debug_info")

    def __init__(self, constvars, invars, eqns, outvars, debug_info=None):
        self.constvars, self.invars = list(constvars), list(invars)
        self.eqns, self.outvars = list(eqns), list(outvars)
        self.debug_info = debug_info

    @property
    def in_avals(self):
        return [v.aval for v in self.invars]

    @property
    def out_avals(self):
        return [v.aval for v in self.outvars]

    def __str__(self):
        return pp_jaxpr(self)

    __repr__ = __str__


class ClosedJaxpr:
    """A Jaxpr together with the values of its constvars."""

    __slots__ = ("jaxpr", "consts", "__weakref__")

    def __init__(self, jaxpr: Jaxpr, consts: Sequence):
        self.jaxpr, self.consts = jaxpr, list(consts)

    in_avals = property(lambda self: self.jaxpr.in_avals)
    out_avals = property(lambda self: self.jaxpr.out_avals)
    eqns = property(lambda self: self.jaxpr.eqns)

    def __str__(self):
        return pp_jaxpr(self.jaxpr)

    __repr__ = __str__


def eval_jaxpr(jaxpr: Jaxpr, consts: Sequence, *args) -> list:
    """Interprets `jaxpr` by binding each equation: it runs under whatever traces are active."""
    env: dict[Var, Any] = {}

    def read(v):
        return v.value() if type(v) is Literal else env[v]

    for v, x in zip(jaxpr.constvars, consts):
        env[v] = x
    if len(args) != len(jaxpr.invars):
        raise TypeError(f"jaxpr expects {len(jaxpr.invars)} arguments, got {len(args)}")
    for v, x in zip(jaxpr.invars, args):
        env[v] = x
    global replayed_source_info
    outer = replayed_source_info
    try:
        for eqn in jaxpr.eqns:
            # an equation staged again from here keeps the user's line it was first staged at
            replayed_source_info = eqn.source_info or outer
            outs = eqn.primitive.bind(*map(read, eqn.invars), **eqn.params)
            if not eqn.primitive.multiple_results:
                outs = (outs,)
            for v, x in zip(eqn.outvars, outs):
                env[v] = x
    finally:
        replayed_source_info = outer
    return [read(v) for v in jaxpr.outvars]


# The source line of the equation eval_jaxpr is replaying (None outside it): staging records
# it instead of the innermost user frame, which would be the caller of the transformation.
replayed_source_info: SourceInfo | None = None


def jaxpr_as_fun(closed: ClosedJaxpr) -> Callable:
    return lambda *args: eval_jaxpr(closed.jaxpr, closed.consts, *args)


# --- printing --------------------------------------------------------------------------------

def _var_names():
    for n in itertools.count(1):
        for combo in itertools.product("abcdefghijklmnopqrstuvwxyz", repeat=n):
            name = "".join(combo)
            if n == 1 or name[0] != "a":
                yield name


class _Namer:
    def __init__(self):
        self.names: dict[Var, str] = {}
        self.gen = _var_names()

    def __call__(self, v) -> str:
        if type(v) is Literal:
            val = v.val
            if isinstance(val, np.ndarray) or hasattr(val, "dtype"):
                val = np.asarray(val).item()
            return f"{val!r}:{v.aval.str_short()}"
        if v not in self.names:
            self.names[v] = next(self.gen)
        return self.names[v]

    def binder(self, v) -> str:
        return f"{self(v)}:{v.aval.str_short()}"


def _pp_param(val, namer: _Namer, indent: int) -> str:
    if isinstance(val, ClosedJaxpr):
        val = val.jaxpr
    if isinstance(val, Jaxpr):
        return pp_jaxpr(val, indent=indent + 2, namer=_Namer())
    if isinstance(val, np.dtype):
        return val.name
    if isinstance(val, (tuple, list)) and any(isinstance(x, (Jaxpr, ClosedJaxpr)) for x in val):
        return "(" + ", ".join(_pp_param(x, namer, indent) for x in val) + ")"
    if callable(val) and hasattr(val, "__name__"):
        return val.__name__
    return str(val)


def _pp_eqn(eqn: JaxprEqn, namer: _Namer, indent: int) -> str:
    lhs = " ".join(namer.binder(v) for v in eqn.outvars) or "_"
    params = {k: v for k, v in eqn.params.items() if not k.startswith("_")}
    pstr = ""
    if params:
        pstr = "[" + " ".join(f"{k}={_pp_param(v, namer, indent)}"
                              for k, v in sorted(params.items())) + "]"
    args = " ".join(namer(v) for v in eqn.invars)
    return f"{lhs} = {eqn.primitive.name}{pstr} {args}".rstrip()


def pp_jaxpr(jaxpr: Jaxpr, indent: int = 0, namer: _Namer | None = None) -> str:
    namer = namer or _Namer()
    consts = " ".join(namer.binder(v) for v in jaxpr.constvars)
    ins = " ".join(namer.binder(v) for v in jaxpr.invars)
    eqns = [_pp_eqn(e, namer, indent) for e in jaxpr.eqns]
    outs = ", ".join(namer(v) for v in jaxpr.outvars)
    outs = f"({outs},)" if len(jaxpr.outvars) == 1 else f"({outs})"
    head = f"{{ lambda {consts}; {ins}. let"
    one_line = f"{head} {'; '.join(eqns)} in {outs} }}"   # (as JAX: "let  in" when empty)
    if len(one_line) + indent <= 80 and "\n" not in one_line:
        return one_line
    pad = " " * (indent + 4)
    body = "".join(f"\n{pad}{e}" for e in eqns)
    return f"{head}{body}\n{' ' * (indent + 2)}in {outs} }}"
