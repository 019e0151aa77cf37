"""The reference backend: runs a Jaxpr equation by equation with the primitives' NumPy impls.

Every compiled backend is tested against it.
"""
from __future__ import annotations

import numpy as np

from corejax import core
from corejax.array import Array, to_numpy, wrap
from corejax.compiler import registry

__all__ = ["ReferenceExecutable"]


class ReferenceExecutable:
    consumes_donations = False      # the caller deletes donated Arrays after the call

    def __init__(self, closed: core.ClosedJaxpr):
        self.closed = closed
        self.out_weak = [a.weak_type for a in closed.out_avals]

    def __call__(self, *args) -> list:
        jaxpr = self.closed.jaxpr
        env = {}
        for v, x in zip(jaxpr.constvars, self.closed.consts):
            env[v] = to_numpy(x)
        for v, x in zip(jaxpr.invars, args):
            env[v] = to_numpy(x)

        def read(v):
            return np.asarray(v.val, v.aval.dtype) if type(v) is core.Literal else env[v]

        for eqn in jaxpr.eqns:
            outs = eqn.primitive.impl(*map(read, eqn.invars), **eqn.params)
            if not eqn.primitive.multiple_results:
                outs = (outs,)
            for v, x in zip(eqn.outvars, outs):
                env[v] = to_numpy(x) if type(x) is Array else x
        return [wrap(read(v), w) for v, w in zip(jaxpr.outvars, self.out_weak)]

    def as_text(self) -> str:
        return str(self.closed)


def find_nan_source(closed: core.ClosedJaxpr, args) -> None:
    """Re-runs `closed` equation by equation with the NumPy impls (as JAX re-runs a jitted
    function op by op under debug_nans / debug_infs) and raises FloatingPointError naming the
    first equation that produced a NaN (an infinity) from operands without one."""
    from corejax.array import _NanChecks
    import numpy as np
    jaxpr = closed.jaxpr
    env = {}
    for v, x in zip(jaxpr.constvars, closed.consts):
        env[v] = to_numpy(x)
    for v, x in zip(jaxpr.invars, args):
        env[v] = to_numpy(x)

    def read(v):
        return np.asarray(v.val, v.aval.dtype) if type(v) is core.Literal else env[v]

    def has_nan(x):
        return _NanChecks.bad(x)

    for eqn in jaxpr.eqns:
        ins = [read(v) for v in eqn.invars]
        sub = eqn.params.get(registry.call_params.get(eqn.primitive, ""))
        if isinstance(sub, core.ClosedJaxpr):
            find_nan_source(sub, ins)
        with np.errstate(all="ignore"):
            outs = eqn.primitive.impl(*ins, **eqn.params)
        if not eqn.primitive.multiple_results:
            outs = (outs,)
        outs = [to_numpy(o) for o in outs]
        for v, x in zip(eqn.outvars, outs):
            env[v] = x
        kinds = [has_nan(x) for x in outs]
        kind = next((k for k in kinds if k), None)
        if kind and not any(has_nan(x) == kind for x in ins):
            where = f" at {eqn.source_info}" if eqn.source_info else ""
            raise FloatingPointError(
                f"invalid value ({kind}) encountered in {eqn.primitive.name}{where} (found "
                f"while re-running a jitted function op by op under debug_{kind}s)")
