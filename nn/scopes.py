"""Where a module's variables live, and how its calls are named (flax.linen's share_scope,
compact_name_scope and the named_call switches).

- `share_scope(module, other)`: the two modules use one scope, so a wrapper (a LoRA adapter
  around a Dense) adds its parameters next to the wrapped module's without a level of nesting.
- `@compact_name_scope`: a method whose inline submodules live under a scope named after the
  method (`up/Dense_0`), as Haiku's modules name theirs; it may be called from any method and
  through `apply(..., method='up')`.
- `enable_named_call` / `disable_named_call` / `override_named_call`: whether module methods run
  in a `corejax.named_scope` named after the module (on by default, as in Flax);
  `named_call(fn)` names one method's scope even when it is switched off.
"""
from __future__ import annotations

import contextlib
import functools
from typing import Callable

import corejax
from nn import module as _module
from nn.errors import CallShareScopeOnUnboundModuleError
from nn.module import Module, _call_scope_name, _context

__all__ = ["share_scope", "compact_name_scope", "enable_named_call", "disable_named_call",
           "override_named_call", "named_call"]


def share_scope(module: Module, other: Module, /) -> None:
    """Makes `module` and `other` use one scope: `other`'s, unless `other`'s scope lies
    inside `module`'s (a submodule of it), in which case `module`'s. Both must be bound (call
    it in setup() or in a method run by init/apply)."""
    if module.scope is None or other.scope is None:
        raise CallShareScopeOnUnboundModuleError()
    inner, outer = other.scope.path, module.scope.path
    if inner[:len(outer)] == outer:
        object.__setattr__(other, "_scope", module.scope)
    else:
        object.__setattr__(module, "_scope", other.scope)


class CompactNameScope(Module):
    """The parent of the submodules a compact_name_scope method defines: bound to the scope
    named after the method, below the module's."""


def _name_scope(module: Module, name: str) -> CompactNameScope:
    scopes = module.__dict__.get("_name_scopes")
    if scopes is None:
        scopes = {}
        object.__setattr__(module, "_name_scopes", scopes)
    scope = scopes.get(name)
    if scope is None:
        scope = scopes[name] = CompactNameScope(parent=None, name=name)
        object.__setattr__(scope, "parent", module)
        scope._bind(module.scope.child(name))
    return scope


def compact_name_scope(fun: Callable) -> Callable:
    """Marks a method whose inline submodules (`nn.Dense(3)(x)` in its body) live in a scope
    named after the method; they are named Dense_0, Dense_1, ... afresh at each call, so a
    second call reuses the first one's variables. Variables the method creates directly
    (`self.param`) stay the module's own."""
    @functools.wraps(fun)
    def scoped(self, *args, **kwargs):
        if self.scope is None:
            raise ValueError(f"Cannot call compact_name_scope method {fun.__name__!r} on a "
                             "Module that has not been setup. This is likely because you are "
                             f"calling {fun.__name__!r} from outside of init or apply.")
        scope = _name_scope(self, fun.__name__)
        if scope._compact_depth == 0:  # a new outermost call: names restart at _0
            scope._autoname.clear()
            scope._names_this_call.clear()
        object.__setattr__(scope, "_compact_depth", scope._compact_depth + 1)
        _context.stack.append(scope)
        try:
            return fun(self, *args, **kwargs)
        finally:
            _context.stack.pop()
            object.__setattr__(scope, "_compact_depth", scope._compact_depth - 1)

    return scoped


def enable_named_call() -> None:
    """Module methods run in a corejax.named_scope named after the module (the default)."""
    _module._use_named_call = True


def disable_named_call() -> None:
    """Module methods run without a named scope."""
    _module._use_named_call = False


@contextlib.contextmanager
def override_named_call(enable: bool = True):
    """`with override_named_call(False):` switches named scopes for the block, then restores
    the previous setting."""
    old = _module._use_named_call
    _module._use_named_call = enable
    try:
        yield
    finally:
        _module._use_named_call = old


def named_call(class_fn: Callable, force: bool = True) -> Callable:
    """`class_fn(module, ...)` run in a named scope "<module name>.<function name>" when the
    module is bound; with `force` even while named calls are disabled."""
    @functools.wraps(class_fn)
    def wrapped(self, *args, **kwargs):
        if self.scope is None or not (force or _module._use_named_call):
            return class_fn(self, *args, **kwargs)
        with corejax.named_scope(_call_scope_name(self, class_fn)):
            return class_fn(self, *args, **kwargs)

    return wrapped
