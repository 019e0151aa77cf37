"""Small tracing utilities of the top-level API: `typeof`, `ensure_compile_time_eval`,
`named_scope` and `named_call`. Their public path is corejax."""
from __future__ import annotations

import contextlib
import functools
from typing import Any, Callable

from corejax import core, dtypes

__all__ = ["typeof", "ensure_compile_time_eval", "named_scope", "named_call"]


def typeof(x: Any) -> core.ShapedArray:
    """The abstract value of `x` as a transformation sees it: its shape, canonical dtype
    and weak type (a tracer's own abstract value inside jit, vmap or grad). TypeError for a
    value that is not an array or scalar."""
    if isinstance(x, core.Tracer):
        return x.aval
    aval = core.get_aval(x)
    return aval.update(dtype=dtypes.canonicalize_dtype(aval.dtype))


@contextlib.contextmanager
def ensure_compile_time_eval():
    """Inside this block, operations on concrete values run eagerly even while a function
    is being staged out by jit or make_jaxpr: their results are concrete Arrays (usable in
    Python control flow and as static shapes), not staged operations. Operations on traced
    values are staged as usual."""
    with core.new_dynamic(core._trace_state.stack[0]):
        yield


class named_scope(contextlib.ContextDecorator):
    """A context manager (or decorator) naming the operations staged inside it `name`,
    for profiles. corejax keeps no per-operation name stack: printed jaxprs show no names
    (as in JAX) and nothing else reads them, so the scope only checks its name."""

    def __init__(self, name: str):
        if not isinstance(name, str):
            raise TypeError(f"named_scope expects a string name, got {type(name).__name__}: "
                            f"{name!r}.")
        self.name = name

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def named_call(fun: Callable, *, name: str | None = None) -> Callable:
    """`fun` with its staged operations in a named scope (`name`, by default
    `fun.__name__`): the same values, derivatives and batching."""
    if name is None:
        try:
            name = fun.__name__
        except AttributeError:
            raise AttributeError(f"named_call: {fun!r} has no __name__; pass name=.") from None

    scope = named_scope(str(name))

    @functools.wraps(fun)
    def named(*args, **kwargs):
        with scope:
            return fun(*args, **kwargs)

    return named
