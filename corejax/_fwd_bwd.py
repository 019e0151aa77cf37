"""`fwd_and_bwd`: a function's forward and backward passes as two functions, so that the
backward pass can be compiled once and reused across steps. Its public path is corejax."""
from __future__ import annotations

import operator
from typing import Callable, Sequence

from corejax.api import jit, vjp

__all__ = ["fwd_and_bwd"]


def fwd_and_bwd(fun: Callable, argnums: int | Sequence[int], has_aux: bool = False,
                jitted: bool = True) -> tuple[Callable, Callable]:
    """`(fwd, bwd)` for `fun`: `fwd(*primals)` returns `(fun(*primals), residuals)` (with
    `has_aux`, `(out, residuals, aux)` where `fun` returns `(out, aux)`), and
    `bwd(residuals, cotangent)` the cotangents of the arguments `argnums` (a tuple when
    argnums is a sequence). The residuals are a pytree (the vjp function), so both cross
    jit; with `jitted` (the default) both are jitted."""
    many = not isinstance(argnums, int)
    nums = tuple(operator.index(i) for i in argnums) if many else (operator.index(argnums),)

    def fwd(*primals):
        n = len(primals)
        for i in nums:
            if not -n <= i < n:
                raise ValueError(f"fwd_and_bwd: argnums {i} is out of range for "
                                 f"{n} positional arguments (valid: {-n} to {n - 1}).")
        positions = [i % n for i in nums]

        def of_differentiated(*diff):
            args = list(primals)
            for i, x in zip(positions, diff):
                args[i] = x
            return fun(*args)

        return vjp(of_differentiated, *[primals[i] for i in positions], has_aux=has_aux)

    def bwd(residuals, cotangent):
        cts = residuals(cotangent)
        return tuple(cts) if many else cts[0]

    if jitted:
        return jit(fwd), jit(bwd)
    return fwd, bwd
