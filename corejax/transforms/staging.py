"""Staging: tracing a Python function to a Jaxpr on abstract values (make_jaxpr, jit).

The staging trace is made the dynamic trace while the function runs, so every operation is
recorded, even one on constants only. Values from outside (constants, and tracers of outer
transformations the function closes over) become the Jaxpr's constvars; scalars are inlined
as literals. Each equation remembers the user's source line, so errors can point at it.
"""
from __future__ import annotations

import os
import sys
from typing import Callable, Sequence

import numpy as np

from corejax import core
from corejax.core import ShapedArray, Tracer, Trace, get_aval

__all__ = ["trace_to_jaxpr", "StagingTracer", "StagingTrace", "user_source_info"]

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def user_source_info() -> core.SourceInfo | None:
    """The user's line that staged an operation: the line an equation being replayed was first
    staged at, else the innermost stack frame outside corejax."""
    if core.replayed_source_info is not None:
        return core.replayed_source_info
    frame = sys._getframe(2)
    while frame is not None:
        code = frame.f_code
        fname = code.co_filename
        if not fname.startswith(_PACKAGE_DIR):
            line, col = _position(code, frame.f_lasti, frame.f_lineno)
            return core.SourceInfo(fname, line, code.co_name, col,
                                   getattr(code, "co_qualname", code.co_name))
        frame = frame.f_back
    return None


_positions: dict = {}


def _position(code, lasti: int, lineno) -> tuple:
    """(line, column) where the expression running at instruction offset `lasti` starts
    (Python 3.11's code positions; column -1 where they are unavailable)."""
    table = _positions.get(code)
    if table is None:
        if len(_positions) > 4096:
            _positions.clear()
        try:
            table = _positions[code] = [(p[0], p[2]) for p in code.co_positions()]
        except AttributeError:   # (Python < 3.11)
            table = _positions[code] = []
    i = lasti // 2
    if 0 <= i < len(table) and table[i][0] is not None and table[i][1] is not None:
        return table[i]
    return lineno, -1


class StagingTracer(Tracer):
    __slots__ = ("_aval",)

    def __init__(self, trace, aval: ShapedArray):
        self._trace, self._aval = trace, aval

    @property
    def aval(self):
        return self._aval

    def _origin(self) -> str:
        return self._trace.main.payload.describe_origin(self)

    def _short_repr(self):
        return f"JitTracer({self._aval})"


def _is_literal(val) -> bool:
    if type(val) in (int, float, bool, complex):
        return True
    return (not isinstance(val, Tracer)) and getattr(val, "shape", None) == () and \
        hasattr(val, "dtype")


class _Builder:
    def __init__(self, arg_names: Sequence[str] | None, fun_name: str):
        self.eqns: list[core.JaxprEqn] = []
        self.tracer_to_var: dict[int, object] = {}
        self.tracers: list[Tracer] = []      # keeps tracers alive, so ids stay unique
        self.const_tracers: dict[int, Tracer] = {}
        self.consts: list = []
        self.constvars: list[core.Var] = []
        self.invars: list[core.Var] = []
        self.arg_names = list(arg_names or [])
        self.fun_name = fun_name
        self.producer: dict[core.Var, core.JaxprEqn] = {}

    def new_tracer(self, trace, aval, var) -> StagingTracer:
        t = StagingTracer(trace, aval)
        self.tracers.append(t)
        self.tracer_to_var[id(t)] = var
        return t

    def const_tracer(self, trace, val) -> StagingTracer:
        t = self.const_tracers.get(id(val))
        if t is not None:
            return t
        aval = get_aval(val)
        if _is_literal(val):
            lit_val = val if type(val) in (int, float, bool, complex) else np.asarray(val).item()
            t = self.new_tracer(trace, aval, core.Literal(lit_val, aval))
        else:
            var = core.Var(aval)
            self.constvars.append(var)
            self.consts.append(val)
            t = self.new_tracer(trace, aval, var)
        self.const_tracers[id(val)] = t
        self.tracers.append(val)  # keep the constant alive so its id is not reused
        return t

    def var(self, tracer):
        return self.tracer_to_var[id(tracer)]

    def describe_origin(self, tracer) -> str:
        var = self.tracer_to_var.get(id(tracer))
        if var is None or not self.arg_names:
            return ""
        deps, stack, seen = set(), [var], set()
        while stack:
            v = stack.pop()
            if type(v) is not core.Var or v in seen:
                continue
            seen.add(v)
            if v in self.invars:
                deps.add(self.invars.index(v))
            eqn = self.producer.get(v)
            if eqn is not None:
                stack.extend(eqn.invars)
        names = [self.arg_names[i] for i in sorted(deps) if i < len(self.arg_names)]
        if not names:
            return (f"While tracing the function {self.fun_name}, this value was computed only "
                    "from constants and closed-over values.")
        which = ", ".join(names)
        return (f"While tracing the function {self.fun_name}, this value depends on the "
                f"argument{'s' if len(names) > 1 else ''} {which}.")

    def build(self, in_tracers, out_tracers) -> tuple[core.Jaxpr, list]:
        outvars = [self.var(t) for t in out_tracers]
        jaxpr = core.Jaxpr(self.constvars, self.invars, self.eqns, outvars)
        return jaxpr, list(self.consts)


class StagingTrace(Trace):
    leak_checked = True   # core.check_leaks looks for its tracers
    @property
    def builder(self) -> _Builder:
        return self.main.payload

    def new_arg(self, aval) -> StagingTracer:
        var = core.Var(aval)
        self.builder.invars.append(var)
        return self.builder.new_tracer(self, aval, var)

    def pure(self, val):
        return self.builder.const_tracer(self, val)

    lift = pure

    def process_primitive(self, primitive, tracers, params):
        b = self.builder
        avals_out = primitive.abstract_eval(*[t.aval for t in tracers], **params)
        multiple = primitive.multiple_results
        avals_list = avals_out if multiple else [avals_out]
        outvars = [core.Var(a) for a in avals_list]
        outs = [b.new_tracer(self, a, v) for a, v in zip(avals_list, outvars)]
        eqn = core.JaxprEqn(primitive, [b.var(t) for t in tracers], params, outvars,
                            user_source_info())
        b.eqns.append(eqn)
        for v in outvars:
            b.producer[v] = eqn
        return outs if multiple else outs[0]


def trace_to_jaxpr(fun: Callable, in_avals: Sequence[ShapedArray], arg_names=None,
                   fun_name: str = "fun") -> tuple[core.Jaxpr, list]:
    """Stages `fun` (flat list in, flat list out) to `(jaxpr, consts)`.

    `consts` may hold tracers of enclosing transformations the function closed over; callers
    pass them on as explicit operands (see `convert_constvars`).
    """
    builder = _Builder(arg_names, fun_name)
    with core.new_main(StagingTrace, builder) as main, core.new_dynamic(main):
        trace = StagingTrace(main)
        tracers_in = [trace.new_arg(a) for a in in_avals]
        outs = fun(*tracers_in)
        tracers_out = [trace.full_raise(o) for o in outs]
        return builder.build(tracers_in, tracers_out)


def convert_constvars(jaxpr: core.Jaxpr) -> core.Jaxpr:
    """The same program taking its constvars as leading ordinary inputs."""
    return core.Jaxpr([], jaxpr.constvars + jaxpr.invars, jaxpr.eqns, jaxpr.outvars,
                      jaxpr.debug_info)
