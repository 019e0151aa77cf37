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
    if type(getattr(x, "dtype", None)).__name__ == "PRNGKeyDType":
        return _KeyAval(x.shape, x.dtype)  # a typed key array, concrete or traced
    aval = core.get_aval(x)
    return aval.update(dtype=dtypes.canonicalize_dtype(aval.dtype))


class _KeyAval(core.ShapedArray):
    """What `typeof` says of a typed key array: its shape with the key element type
    (`key<fry>[3]`), which NumPy cannot hold as a dtype."""

    __slots__ = ()

    def __init__(self, shape, dtype):
        self.shape, self.dtype, self.weak_type = tuple(shape), dtype, False

    def update(self, shape=None, dtype=None, weak_type=None):
        return _KeyAval(self.shape if shape is None else shape,
                        self.dtype if dtype is None else dtype)

    def str_short(self) -> str:
        return f"{self.dtype.name}[{','.join(map(str, self.shape))}]"

    __str__ = str_short

    def __eq__(self, other):
        return type(other) is _KeyAval and (self.shape, self.dtype) == (other.shape, other.dtype)

    def __hash__(self):
        return hash((self.shape, self.dtype.name))

    def __repr__(self):
        return f"ShapedArray({self.str_short()})"


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
