"""The reference backend: runs a Jaxpr equation by equation with the primitives' NumPy impls.

Every compiled backend is tested against it.
"""
from __future__ import annotations

from corejax import core
from corejax.array import Array, to_numpy, wrap

__all__ = ["ReferenceExecutable"]


class ReferenceExecutable:
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
            return to_numpy(v.val) if type(v) is core.Literal else env[v]

        for eqn in jaxpr.eqns:
            outs = eqn.primitive.impl(*map(read, eqn.invars), **eqn.params)
            if not eqn.primitive.multiple_results:
                outs = (outs,)
            for v, x in zip(eqn.outvars, outs):
                env[v] = to_numpy(x) if type(x) is Array else x
        return [wrap(read(v), w) for v, w in zip(jaxpr.outvars, self.out_weak)]

    def as_text(self) -> str:
        return str(self.closed)
