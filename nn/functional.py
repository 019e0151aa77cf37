"""The functional forms of init/apply (flax.linen.apply, init, init_with_output): run any
function `fn(module, *args)` with the module bound, e.g. to call several of its methods; and
intercept_methods."""
from __future__ import annotations

import contextlib
from typing import Callable

from nn.module import (DenyList, InterceptorContext, Module, Scope, _Store, _capture_filter,
                       _context, _copy_variables, _normalize_rngs, _with_intermediates)

__all__ = ["apply", "init", "init_with_output", "intercept_methods", "InterceptorContext"]


def _bound_call(fn, module, variables, rngs, mutable, initializing, capture, args, kwargs):
    mutable = _with_intermediates(mutable, capture)
    store = _Store(variables, rngs, mutable, initializing=initializing)
    store.capture = _capture_filter(capture)
    root = module.clone(parent=None)
    store.root_name = type(module).__name__
    root._bind(Scope(store))
    _context.stack.append(root)
    try:
        out = fn(root, *args, **kwargs)
    finally:
        _context.stack.pop()
    return out, store


def apply(fn: Callable, module: Module, mutable=False, capture_intermediates=False):
    """`apply(fn, module)(variables, *args, rngs=None)` runs `fn(bound_module, *args)`: a
    function, not a method, using the module's submodules and variables."""
    def wrapper(variables, *args, rngs=None, **kwargs):
        out, store = _bound_call(fn, module, _copy_variables(variables),
                                 _normalize_rngs(rngs or {}, "apply"), mutable, False,
                                 capture_intermediates, args, kwargs)
        if mutable is False or mutable is None:
            return out
        return out, {c: v for c, v in store.variables.items() if store.is_mutable(c)}
    return wrapper


def init_with_output(fn: Callable, module: Module, mutable=DenyList("intermediates"),
                     capture_intermediates=False):
    """`init_with_output(fn, module)(rngs, *args)` -> (fn's output, the variables made)."""
    def wrapper(rngs, *args, **kwargs):
        out, store = _bound_call(fn, module, {}, _normalize_rngs(rngs, "init"), mutable, True,
                                 capture_intermediates, args, kwargs)
        return out, store.variables
    return wrapper


def init(fn: Callable, module: Module, mutable=DenyList("intermediates"),
         capture_intermediates=False):
    """`init(fn, module)(rngs, *args)` -> the variables `fn(bound_module, *args)` creates."""
    run = init_with_output(fn, module, mutable, capture_intermediates)
    return lambda rngs, *args, **kwargs: run(rngs, *args, **kwargs)[1]


@contextlib.contextmanager
def intercept_methods(interceptor: Callable):
    """Within the block every module method call goes through
    `interceptor(next_fun, args, kwargs, context)`, which may change the arguments or the
    result and calls `next_fun(*args, **kwargs)` to proceed (context: InterceptorContext)."""
    _context.interceptors.append(interceptor)
    try:
        yield
    finally:
        _context.interceptors.pop()
