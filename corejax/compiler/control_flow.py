"""Control flow on the CPU backend: cond / while / scan host steps.

A while / scan (fori is one of them) whose bodies have a nopython form runs as ONE compiled
Numba function, the loop included (compiler/loops.py). Otherwise, and for cond, the host step
is a Python loop calling the sub-jaxprs' own compiled executables (the primitives' impls would
interpret them op by op), in which inner loops are compiled in turn. `loops.stats` counts which
path each loop took; with COREJAX_EXPLAIN_LOOPS=1 in the environment, every loop left
Python-driven warns with the reason."""
from __future__ import annotations

import os
import warnings

import numpy as np

from corejax.compiler import loops

__all__ = ["host_control_flow"]

_LOOP_PARAMS = {
    ("while", frozenset({"cond_jaxpr", "body_jaxpr", "cond_nconsts", "body_nconsts"})),
    ("scan", frozenset({"jaxpr", "length", "reverse", "num_consts", "num_carry"})),
}


def host_control_flow(name, params):
    """cond / while / scan host steps whose sub-jaxprs run compiled (the primitives' own
    impls interpret them op by op); None for anything else, which then runs its impl."""
    from corejax.compiler import compile_jaxpr

    def sub(closed):
        # row-major, as the compiled loops' BLAS calls are: the same bits whichever runs
        return compile_jaxpr(closed, "cpu", row_major=True).run_numpy

    keys = set(params)
    if (name, frozenset(keys)) in _LOOP_PARAMS:
        try:
            run = loops.compile_loop(name, params)
        except loops.Unsupported as e:
            if os.environ.get("COREJAX_EXPLAIN_LOOPS"):
                warnings.warn(f"corejax: a {name} loop runs Python-driven: {e}")
        else:
            return run
    if name == "cond" and keys == {"branches"}:
        branches = [sub(b) for b in params["branches"]]

        def cond(index, *ops):
            return branches[min(max(int(index), 0), len(branches) - 1)](*ops)
        return cond
    if name == "while" and keys == {"cond_jaxpr", "body_jaxpr", "cond_nconsts", "body_nconsts"}:
        cond_fn, body_fn = sub(params["cond_jaxpr"]), sub(params["body_jaxpr"])
        nc, nb = params["cond_nconsts"], params["body_nconsts"]

        def while_loop(*args):
            loops.stats["python_calls"] += 1
            cconsts, bconsts, carry = args[:nc], args[nc:nc + nb], list(args[nc + nb:])
            while bool(cond_fn(*cconsts, *carry)[0]):
                carry = body_fn(*bconsts, *carry)
            return carry
        return while_loop
    if name == "scan" and keys == {"jaxpr", "length", "reverse", "num_consts", "num_carry"}:
        body, closed = sub(params["jaxpr"]), params["jaxpr"]
        length, reverse = params["length"], params["reverse"]
        nc, nk = params["num_consts"], params["num_carry"]
        y_avals = closed.out_avals[nk:]

        def scan(*args):
            loops.stats["python_calls"] += 1
            consts, carry, xs = args[:nc], list(args[nc:nc + nk]), args[nc + nk:]
            ys = [np.empty((length,) + a.shape, a.dtype) for a in y_avals]
            for i in (range(length - 1, -1, -1) if reverse else range(length)):
                out = body(*consts, *carry, *[x[i] for x in xs])
                carry = out[:nk]
                for y, o in zip(ys, out[nk:]):
                    y[i] = o
            return [*carry, *ys]
        return scan
    return None
