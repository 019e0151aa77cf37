"""Module: the Flax-linen programming model on a small functional variable store.

A `Module` subclass is turned into a dataclass: its annotated attributes are constructor
arguments, `parent` and `name` are keyword-only ones the framework fills in. A module holds no
parameters. `init` and `apply` build a `_Store` (the variables of every collection as nested
dicts keyed by module path, the PRNG keys, which collections may change), bind a clone of the
module to the root `Scope` of that store and call the method; a submodule gets the child scope
at its name. So `init`/`apply` are pure functions of their arguments, and transformations
(grad, jit, vmap) see only arrays in dicts.

Submodules are named automatically inside `@compact` methods (`Dense_0`, `Dense_1`, ...; the
count restarts at each call of the compact method so a second call finds the same parameters),
after the attribute they are assigned to in `setup()` (`self.dense`, `self.layers_0`), or after
the dataclass field they were passed in (`layers` -> `layers_0`, `layers_1`).

The only global state is the stack of modules whose methods are running (thread-local): it tells
a module created inside a method who its parent is.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import inspect
import threading
import weakref
from collections.abc import Mapping
from typing import Any, Callable

import numpy as np

import corejax
import corejax.numpy as jnp
from corejax import random, tree_util
from nn.meta import AxisMetadata

__all__ = ["Module", "compact", "nowrap", "Variable", "merge_param", "DenyList", "NNError",
           "FlaxError", "ScopeVariableNotFoundError", "ApplyModuleInvalidMethodError",
           "CallUnbindOnUnboundModuleError",
           "ScopeParamNotFoundError", "ScopeParamShapeError", "ScopeCollectionNotFound",
           "ScopeVariableNotFound", "ModifyScopeVariableError", "InvalidRngError",
           "NameInUseError", "AssignSubModuleError", "CallCompactUnboundModuleError",
           "SetAttributeFrozenModuleError", "ApplyScopeInvalidVariablesTypeError"]


from nn.errors import (  # noqa: E402,F401  (the error classes live in nn.errors)
    NNError, FlaxError, ScopeParamNotFoundError, ScopeParamShapeError, ScopeCollectionNotFound,
    ScopeVariableNotFound, ScopeVariableNotFoundError, ModifyScopeVariableError,
    InvalidRngError, NameInUseError, AssignSubModuleError, CallCompactUnboundModuleError,
    SetAttributeFrozenModuleError, ApplyScopeInvalidVariablesTypeError,
    ApplyModuleInvalidMethodError, CallUnbindOnUnboundModuleError,
)


# --- the variable store and scopes -----------------------------------------------------------

def _path_text(path) -> str:
    return "/" + "/".join(path)


class DenyList:
    """`mutable=DenyList(cols)`: every collection except `cols` may change."""

    def __init__(self, deny):
        self.deny = frozenset((deny,) if isinstance(deny, str) else deny)

    def __repr__(self):
        return f"DenyList({sorted(self.deny)})"


def _mutable_predicate(mutable) -> Callable[[str], bool]:
    if mutable is True:
        return lambda col: True
    if isinstance(mutable, DenyList):
        return lambda col: col not in mutable.deny
    if mutable is False or mutable is None:
        return lambda col: False
    if isinstance(mutable, str):
        mutable = (mutable,)
    cols = frozenset(mutable)
    return lambda col: col in cols


def _static_fold_word(parts) -> int:
    """The 32-bit word Flax folds into a stream's key for static data (scope names, counters):
    the first four bytes, big-endian, of the SHA-1 of the parts in order, a string as its
    UTF-8 bytes and an int as its shortest big-endian bytes."""
    digest = hashlib.sha1()
    for part in parts:
        if isinstance(part, str):
            digest.update(part.encode("utf-8"))
        elif isinstance(part, int):
            digest.update(part.to_bytes((part.bit_length() + 7) // 8, "big"))
        else:
            raise ValueError(f"Expected int or string, got: {part!r}")
    return int.from_bytes(digest.digest()[:4], "big")


class _Store:
    """Everything one init/apply call reads and writes."""

    def __init__(self, variables: dict, rngs: dict, mutable, initializing: bool):
        self.variables = variables
        self.rngs = rngs
        self.is_mutable = _mutable_predicate(mutable)
        self.initializing = initializing
        self.rng_counts: dict = {}
        self.call_log: list | None = None  # [path, module, method, args, output] per call
        self.root_name = ""  # the root module's class, to name the root scope in messages
        self.capture = None  # apply(capture_intermediates=...): (module, method name) -> bool


class Scope:
    """A module's view of the store: the variables under its path."""

    __slots__ = ("store", "path")

    def __init__(self, store: _Store, path: tuple = ()):
        self.store, self.path = store, path

    def child(self, name: str) -> "Scope":
        return Scope(self.store, self.path + (name,))

    @property
    def path_text(self) -> str:
        return _path_text(self.path)

    @property
    def where(self) -> str:
        """The scope for messages: "/Block_0/Dense_1", or "/" (Dense) at the root."""
        if self.path or not self.store.root_name:
            return f'"{self.path_text}"'
        return f'"/" ({self.store.root_name})'

    def _node(self, col: str, create: bool):
        node = self.store.variables.get(col)
        if node is None:
            if not create:
                return None
            node = self.store.variables[col] = {}
        for part in self.path:
            nxt = node.get(part)
            if nxt is None:
                if not create:
                    return None
                nxt = node[part] = {}
            elif not isinstance(nxt, dict):
                raise ApplyScopeInvalidVariablesTypeError(
                    f'Expected a dict of variables at "{_path_text(self.path)}" in collection '
                    f'"{col}", found a {type(nxt).__name__}.')
            node = nxt
        return node

    def has_variable(self, col: str, name: str) -> bool:
        node = self._node(col, False)
        return node is not None and name in node

    def get_variable(self, col: str, name: str, default=None):
        node = self._node(col, False)
        return default if node is None else node.get(name, default)

    def put_variable(self, col: str, name: str, value) -> None:
        if not self.store.is_mutable(col):
            raise ModifyScopeVariableError(col, name, self.where)
        self._node(col, True)[name] = value

    def variables(self) -> dict:
        out = {}
        for col in self.store.variables:
            node = self._node(col, False)
            if node:
                out[col] = node
        return out

    def make_rng(self, name: str, who: str):
        # As Flax: a stream nobody passed falls back to 'params'; the n-th key (n from 1) a
        # scope draws from a stream is the stream's root key with the static data
        # (*scope path, n) folded in, the count kept per scope and stream for the whole call.
        if name not in self.store.rngs and "params" in self.store.rngs:
            name = "params"
        base = self.store.rngs.get(name)
        if base is None:
            known = sorted(self.store.rngs)
            raise InvalidRngError(
                f'{who} needs PRNG for "{name}", but no key was given for it (keys given: '
                f'{known}). Pass rngs={{"{name}": key}} to init/apply.')
        count_key = (self.path, name)
        count = self.store.rng_counts.get(count_key, 0) + 1
        self.store.rng_counts[count_key] = count
        return random.fold_in(base, _static_fold_word(self.path + (count,)))


class ModulePath(tuple):
    """Module.path: a tuple of names (Flax's), printed as 'Block_0/Dense_1' in messages."""

    def __new__(cls, names, text):
        out = super().__new__(cls, names)
        out._text = text
        return out

    def __str__(self):
        return self._text

    def __format__(self, spec):
        return format(self._text, spec)


def _maybe_unbox(value, unbox: bool):
    return value.unbox() if unbox and isinstance(value, AxisMetadata) else value


# --- the module stack ------------------------------------------------------------------------

class _Context(threading.local):
    def __init__(self):
        self.stack: list = []
        self.interceptors: list = []


_context = _Context()

# Whether module methods run in a corejax.named_scope named after the module (and the method,
# other than __call__), as Flax's profile labels: switched by nn.enable_named_call & co.
_use_named_call = True


def _call_scope_name(module, fun) -> str:
    name = module.name if module.name is not None else type(module).__name__
    return name if fun.__name__ == "__call__" else f"{name}.{fun.__name__}"


@dataclasses.dataclass(frozen=True)
class InterceptorContext:
    """What an interceptor (nn.intercept_methods) learns about the call it wraps."""
    module: Any
    method_name: str
    orig_method: Callable


class _Unspecified:
    def __repr__(self):
        return "_UNSPECIFIED"


_UNSPECIFIED = _Unspecified()


def compact(fun: Callable) -> Callable:
    """Marks the method that may define submodules and parameters inline."""
    fun.compact = True
    return fun


def nowrap(fun: Callable) -> Callable:
    """Marks a helper method that runs without entering the module (no setup, no naming)."""
    fun.nowrap = True
    return fun


_NEVER_WRAPPED = {"setup", "__post_init__", "__init__", "__setattr__", "__getattr__",
                  "__repr__", "__eq__", "__hash__", "__init_subclass__", "__getstate__",
                  "__setstate__"}


def _wrap_method(fun: Callable) -> Callable:
    is_compact = getattr(fun, "compact", False)

    @functools.wraps(fun)
    def wrapped(self, *args, **kwargs):
        return self._call_method(fun, is_compact, args, kwargs)

    wrapped.method_handler_wrapped = True
    return wrapped


def _is_module_tree(value) -> bool:
    if isinstance(value, Module):
        return True
    if isinstance(value, (list, tuple)):
        return any(_is_module_tree(v) for v in value)
    if isinstance(value, dict):
        return any(_is_module_tree(v) for v in value.values())
    return False


class Variable:
    """A handle on one variable of a collection; assigning `.value` writes the store."""

    __slots__ = ("scope", "collection", "name", "unbox")

    def __init__(self, scope: Scope, collection: str, name: str, unbox: bool = True):
        self.scope, self.collection, self.name = scope, collection, name
        self.unbox = unbox

    @property
    def value(self):
        """The value (taken out of its metadata box when `unbox`)."""
        return _maybe_unbox(self.scope.get_variable(self.collection, self.name), self.unbox)

    @value.setter
    def value(self, v):
        # A boxed variable keeps its box (and metadata) when an unboxed value is assigned.
        old = self.scope.get_variable(self.collection, self.name)
        if self.unbox and isinstance(old, AxisMetadata) and not isinstance(v, AxisMetadata):
            v = old.replace_boxed(v)
        self.scope.put_variable(self.collection, self.name, v)

    def is_mutable(self) -> bool:
        return self.scope.store.is_mutable(self.collection)

    def __repr__(self):
        return f"Variable({self.collection}/{self.name} in {self.scope.where})"


# Per init function, the shapes its outputs have for given arguments (for the shape check on
# apply, which must not re-run initializers eagerly).
_init_shapes: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _expected_shapes(init_fn, args, kwargs):
    try:
        cache = _init_shapes.setdefault(init_fn, {})
        key = (args, tuple(sorted(kwargs.items())))
        hash(key)
    except TypeError:
        cache, key = None, None
    if cache is not None and key in cache:
        return cache[key]
    out = corejax.eval_shape(lambda: init_fn(random.PRNGKey(0), *args, **kwargs))
    shapes = [tuple(leaf.shape) for leaf in tree_util.tree_leaves(out)]
    if cache is not None:
        cache[key] = shapes
    return shapes


class Module:
    """Base class of all layers: subclass it, annotate attributes, write `setup()` or one
    `@compact` method."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("__annotations__", {})
        if "parent" in own or "name" in own:
            raise TypeError(f"{cls.__name__}: 'parent' and 'name' are reserved attribute names "
                            "of Module.")
        compact_methods = [n for n, v in cls.__dict__.items() if getattr(v, "compact", False)]
        if len(compact_methods) > 1:
            raise TypeError(f"{cls.__name__}: only one method may be @compact, found "
                            f"{compact_methods}.")
        for attr, value in list(cls.__dict__.items()):
            if (inspect.isfunction(value) and attr not in _NEVER_WRAPPED and attr not in own
                    and not (attr.startswith("_") and attr != "__call__")
                    and not getattr(value, "nowrap", False)
                    and not getattr(value, "method_handler_wrapped", False)):
                setattr(cls, attr, _wrap_method(value))
        # The framework's fields come last and keyword-only, so subclasses may add positional
        # fields after inherited ones with defaults.
        cls.__annotations__ = dict(own)
        if not any(f.name == "parent" for f in getattr(cls, "__dataclass_fields__", {}).values()):
            cls.__annotations__["parent"] = Any
            cls.__annotations__["name"] = Any
            cls.parent = dataclasses.field(default=_UNSPECIFIED, kw_only=True, repr=False)
            cls.name = dataclasses.field(default=None, kw_only=True)
        dataclasses.dataclass(cls, repr=False, eq=False)

    # -- construction and naming --

    def __post_init__(self):
        set_ = object.__setattr__
        set_(self, "_scope", None)
        set_(self, "_autoname", {})
        set_(self, "_names_this_call", set())
        set_(self, "_compact_depth", 0)
        set_(self, "_in_setup", False)
        set_(self, "_setup_done", False)
        parent = self.parent
        if parent is _UNSPECIFIED:
            parent = _context.stack[-1] if _context.stack else None
        set_(self, "parent", parent)
        set_(self, "_frozen", True)
        if isinstance(parent, Module):
            if parent._in_setup and self.name is None:
                return  # named by the attribute it is assigned to (Module.__setattr__)
            parent._register_child(self)

    def _register_child(self, child: "Module", name: str | None = None) -> None:
        name = name or child.name
        if name is None:
            if self._compact_depth == 0:
                raise AssignSubModuleError(
                    f"Submodule {type(child).__name__} must be defined in `setup()` or in a "
                    f"method wrapped in `@compact` (it was created in "
                    f"{self._describe()} outside of both).")
            cls_name = type(child).__name__
            count = self._autoname.get(cls_name, 0)
            self._autoname[cls_name] = count + 1
            name = f"{cls_name}_{count}"
        if name in self._names_this_call:
            raise NameInUseError(f'Name "{name}" is already in use in {self._describe()}: '
                                 "submodule names must be unique.")
        self._names_this_call.add(name)
        object.__setattr__(child, "name", name)
        object.__setattr__(child, "parent", self)
        if self._scope is not None:
            child._bind(self._scope.child(name))

    def __setattr__(self, name, value):
        if not self.__dict__.get("_frozen", False):
            object.__setattr__(self, name, value)
            return
        if not self._in_setup:
            raise SetAttributeFrozenModuleError(
                f'Can\'t set attribute "{name}" of {self._describe()}: modules are frozen '
                "outside of setup(). Use setup() for submodules or pass attributes to the "
                "constructor.")
        value = self._adopt(name, value)
        object.__setattr__(self, name, value)

    def _adopt(self, name: str, value):
        """Registers the modules in `value` as children named after `name` (and indices)."""
        if isinstance(value, Module):
            # A module made, unnamed, in another module's setup() and handed to this one
            # (e.g. the layers of a Sequential built in setup) belongs here, as in Flax.
            if (isinstance(value.parent, Module) and value.parent is not self
                    and value.parent._in_setup and value.name is None
                    and value._scope is None):
                object.__setattr__(value, "parent", self)
            if value.parent is None or value.parent is self:
                if value._scope is not None and value.parent is self:
                    return value
                if value.parent is None:
                    value = value.clone(parent=None)
                self._register_child(value, name if value.name is None else value.name)
            return value
        if isinstance(value, (list, tuple)) and _is_module_tree(value):
            items = [self._adopt(f"{name}_{i}", v) for i, v in enumerate(value)]
            return type(value)(items) if isinstance(value, list) else tuple(items)
        if isinstance(value, dict) and _is_module_tree(value):
            return {k: self._adopt(f"{name}_{k}", v) for k, v in value.items()}
        return value

    def _bind(self, scope: Scope) -> None:
        object.__setattr__(self, "_scope", scope)
        # Modules passed as attributes from outside become children named after the field.
        for f in dataclasses.fields(self):
            if f.name in ("parent", "name"):
                continue
            value = getattr(self, f.name)
            if _is_module_tree(value):
                object.__setattr__(self, "_in_setup", True)
                try:
                    object.__setattr__(self, f.name, self._adopt(f.name, value))
                finally:
                    object.__setattr__(self, "_in_setup", False)

    def _path_text(self) -> str:
        """The path for messages: 'Encoder_0/Dense_1', the name or class name unbound."""
        if self._scope is not None and self._scope.path:
            return "/".join(self._scope.path)
        if self.name is not None:
            return self.name
        return type(self).__name__

    def _describe(self) -> str:
        return f'module "{self._path_text()}" ({type(self).__name__})'

    @property
    def path(self) -> "ModulePath":
        """The names from the root to this bound module, as Flax's tuple (() at the root); it
        prints as 'Encoder_0/Dense_1' (the class name at the root) for messages."""
        if self._scope is None:
            raise ValueError(f"Can't access module paths on unbound modules ({self._describe()}"
                             "): call init/apply or bind first.")
        return ModulePath(self._scope.path, self._path_text())

    @property
    def scope(self):
        return self._scope

    def clone(self, *, parent=None, _deep_clone=False, _reset_names=False,
              **updates) -> "Module":
        """A copy with some attributes replaced, unbound (or owned by `parent`); with
        `_deep_clone` the submodules held in attributes are cloned too (with `_reset_names`
        they lose their names)."""
        if _deep_clone:
            def fresh(value):
                if isinstance(value, Module):
                    extra = {"name": None} if _reset_names else {}
                    return value.clone(parent=None, _deep_clone=True,
                                       _reset_names=_reset_names, **extra)
                if isinstance(value, (list, tuple)) and _is_module_tree(value):
                    return type(value)(fresh(v) for v in value)
                if isinstance(value, dict) and _is_module_tree(value):
                    return {k: fresh(v) for k, v in value.items()}
                return value
            for f in dataclasses.fields(self):
                if f.name not in ("parent", "name") and f.name not in updates and f.init:
                    updates[f.name] = fresh(getattr(self, f.name))
        return dataclasses.replace(self, parent=parent, **updates)

    def __repr__(self):
        attrs = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(self)
                          if f.name != "parent" and f.repr)
        return f"{type(self).__name__}({attrs})"

    # -- running methods --

    def _try_setup(self) -> None:
        if self._setup_done or self._scope is None:
            return
        object.__setattr__(self, "_setup_done", True)
        object.__setattr__(self, "_in_setup", True)
        _context.stack.append(self)
        try:
            self.setup()
        finally:
            _context.stack.pop()
            object.__setattr__(self, "_in_setup", False)

    def setup(self) -> None:
        """Override to define submodules and variables as attributes (the non-compact style)."""

    def _call_method(self, fun, is_compact, args, kwargs):
        if _context.interceptors:  # nn.intercept_methods: outermost interceptor first
            def call(*a, **k):
                return self._call_method_now(fun, is_compact, a, k)
            context = InterceptorContext(self, fun.__name__, fun)
            for interceptor in reversed(_context.interceptors):
                call = functools.partial(interceptor, call, context=context)
            return call(args, kwargs)
        return self._call_method_now(fun, is_compact, args, kwargs)

    def _call_method_now(self, fun, is_compact, args, kwargs):
        if self._scope is None:
            if is_compact:
                raise CallCompactUnboundModuleError(
                    f"Can't call compact method {fun.__name__} of unbound module "
                    f"{type(self).__name__}: use model.init(rngs, ...) or "
                    "model.apply(variables, ...), or call it from inside another module.")
            return fun(self, *args, **kwargs)
        self._try_setup()
        if is_compact:
            if self._compact_depth == 0:
                self._autoname.clear()
                self._names_this_call.clear()
            object.__setattr__(self, "_compact_depth", self._compact_depth + 1)
        log = self._scope.store.call_log
        if log is not None:
            entry = [self._scope.path, self, fun.__name__, args, None]
            log.append(entry)
        _context.stack.append(self)
        try:
            if _use_named_call:  # nn.enable_named_call / disable_named_call
                with corejax.named_scope(_call_scope_name(self, fun)):
                    out = fun(self, *args, **kwargs)
            else:
                out = fun(self, *args, **kwargs)
        finally:
            _context.stack.pop()
            if is_compact:
                object.__setattr__(self, "_compact_depth", self._compact_depth - 1)
        if log is not None:
            entry[4] = out
        capture = self._scope.store.capture
        if capture is not None and capture(self, fun.__name__):
            self.sow("intermediates", fun.__name__, out)
        return out

    def __getattr__(self, name):
        # Attributes defined in setup() exist once setup has run; run it lazily.
        d = self.__dict__
        if name.startswith("_") or d.get("_setup_done", True) or d.get("_scope") is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        self._try_setup()
        return object.__getattribute__(self, name)

    # -- variables --

    def _require_scope(self, what: str) -> Scope:
        if self._scope is None:
            raise CallCompactUnboundModuleError(
                f"{type(self).__name__}.{what}() needs a bound module: call it from a method "
                "run by init/apply.")
        return self._scope

    def param(self, name: str, init_fn: Callable, *init_args, unbox: bool = True,
              **init_kwargs):
        """The parameter `name`: created by `init_fn(make_rng('params'), *init_args)` during
        init, read from the 'params' collection otherwise (with its shape checked)."""
        scope = self._require_scope("param")
        if scope.has_variable("params", name):
            value = scope.get_variable("params", name)
            if not scope.store.initializing:
                expected = _expected_shapes(init_fn, init_args, init_kwargs)
                actual = [tuple(np.shape(v)) for v in tree_util.tree_leaves(value)]
                if expected != actual:
                    raise ScopeParamShapeError(name, scope.where,
                                               expected[0] if len(expected) == 1 else expected,
                                               actual[0] if len(actual) == 1 else actual)
            return _maybe_unbox(value, unbox)
        if not scope.store.is_mutable("params"):
            node = scope._node("params", False)
            hint = f" The 'params' entries there are {sorted(node)}." if node else ""
            if "params" not in scope.store.variables:
                given = sorted(scope.store.variables)
                hint = (f" apply() got no 'params' collection (collections given: {given}); "
                        "pass the whole dict returned by init, e.g. {'params': params}.")
            raise ScopeParamNotFoundError(name, scope.where, hint)
        value = init_fn(self.make_rng("params"), *init_args, **init_kwargs)
        scope.put_variable("params", name, value)
        return _maybe_unbox(value, unbox)

    def variable(self, col: str, name: str, init_fn: Callable | None = None, *init_args,
                 unbox: bool = True, **init_kwargs) -> Variable:
        """A handle on variable `name` of collection `col`, created by `init_fn(*init_args)`
        when the collection is mutable and the variable does not exist yet."""
        scope = self._require_scope("variable")
        if not scope.has_variable(col, name):
            if not scope.store.is_mutable(col) or init_fn is None:
                if scope.store.is_mutable(col) or col not in scope.store.variables:
                    if init_fn is None:
                        raise ScopeVariableNotFound(name, col, scope.where)
                    raise ScopeCollectionNotFound(col, name, scope.where)
                raise ScopeVariableNotFound(name, col, scope.where)
            scope.put_variable(col, name, init_fn(*init_args, **init_kwargs))
        return Variable(scope, col, name, unbox)

    def has_variable(self, col: str, name: str) -> bool:
        return self._require_scope("has_variable").has_variable(col, name)

    def get_variable(self, col: str, name: str, default=None):
        return self._require_scope("get_variable").get_variable(col, name, default)

    def put_variable(self, col: str, name: str, value) -> None:
        self._require_scope("put_variable").put_variable(col, name, value)

    def sow(self, col: str, name: str, value, reduce_fn=lambda xs, x: xs + (x,),
            init_fn=lambda: ()) -> bool:
        """Appends `value` to variable `name` of `col` if that collection is mutable."""
        scope = self._require_scope("sow")
        if not scope.store.is_mutable(col):
            return False
        current = scope.get_variable(col, name, None)
        scope.put_variable(col, name, reduce_fn(init_fn() if current is None else current,
                                                value))
        return True

    def perturb(self, name: str, value, collection: str = "perturbations"):
        """`value` plus the variable `name` of `collection` (zeros made at init): take the
        gradient with respect to that collection to get d loss / d value."""
        scope = self._require_scope("perturb")
        if scope.store.is_mutable(collection) and not scope.has_variable(collection, name):
            scope.put_variable(collection, name, tree_util.tree_map(jnp.zeros_like, value))
        if collection in scope.store.variables:
            if not scope.has_variable(collection, name):
                raise ValueError(f"Perturbation collection {collection} present, but missing "
                                 f"perturbation variable {name}")
            value = tree_util.tree_map(lambda a, b: a + b, value,
                                       scope.get_variable(collection, name))
        return value

    def make_rng(self, name: str = "params"):
        """A fresh PRNG key from the stream `name`, distinct per module and per call."""
        return self._require_scope("make_rng").make_rng(name, f'"{self._path_text()}"')

    def has_rng(self, name: str) -> bool:
        return name in self._require_scope("has_rng").store.rngs

    def is_initializing(self) -> bool:
        return self._require_scope("is_initializing").store.initializing

    def is_mutable_collection(self, col: str) -> bool:
        return self._require_scope("is_mutable_collection").store.is_mutable(col)

    @property
    def variables(self) -> dict:
        return self._require_scope("variables").variables()

    # -- init / apply --

    def _run(self, store: _Store, method, args, kwargs):
        if method is not None and not isinstance(method, str) and not callable(method):
            raise ApplyModuleInvalidMethodError(method)
        root = self.clone(parent=None)
        store.root_name = type(self).__name__
        root._bind(Scope(store))
        fun = _resolve_method(root, method)
        return fun(*args, **kwargs)

    def init_with_output(self, rngs, *args, method=None, mutable=DenyList("intermediates"),
                         capture_intermediates=False, **kwargs):
        """Runs `method` (default `__call__`) creating every variable (except sown
        'intermediates', unless `mutable` says otherwise); returns `(output, variables)`."""
        mutable = _with_intermediates(mutable, capture_intermediates)
        store = _Store({}, _normalize_rngs(rngs, "init"), mutable, initializing=True)
        store.capture = _capture_filter(capture_intermediates)
        out = self._run(store, method, args, kwargs)
        return out, store.variables

    def init(self, rngs, *args, method=None, mutable=DenyList("intermediates"),
             capture_intermediates=False, **kwargs) -> dict:
        """The variables of every collection, e.g. {'params': ..., 'batch_stats': ...}."""
        return self.init_with_output(rngs, *args, method=method, mutable=mutable,
                                     capture_intermediates=capture_intermediates, **kwargs)[1]

    def apply(self, variables, *args, rngs=None, method=None, mutable=False,
              capture_intermediates=False, **kwargs):
        """Runs `method` on `variables`. With `mutable` (a collection name, a list of them or
        True) returns `(output, updated_mutable_collections)`; `capture_intermediates` (True:
        every `__call__`, or a filter `(module, method_name) -> bool`) sows the outputs into
        'intermediates', which then comes back as a mutable collection."""
        mutable = _with_intermediates(mutable, capture_intermediates)
        store = _Store(_copy_variables(variables), _normalize_rngs(rngs or {}, "apply"),
                       mutable, initializing=False)
        store.capture = _capture_filter(capture_intermediates)
        out = self._run(store, method, args, kwargs)
        if mutable is False or mutable is None:
            return out
        return out, {col: v for col, v in store.variables.items() if store.is_mutable(col)}

    def bind(self, variables, *args, rngs=None, mutable=False) -> "Module":
        """A clone bound to `variables`, for interactive use (`model.bind(v).dense(x)`)."""
        store = _Store(_copy_variables(variables), _normalize_rngs(rngs or {}, "bind"),
                       mutable, initializing=False)
        root = self.clone(parent=None)
        store.root_name = type(self).__name__
        root._bind(Scope(store))
        return root

    def unbind(self) -> tuple["Module", dict]:
        """(an unbound clone, the variables this bound module sees)."""
        if self._scope is None:
            raise CallUnbindOnUnboundModuleError()
        return self.clone(parent=None, _deep_clone=True), self.variables

    def tabulate(self, rngs, *args, depth=None, show_repeated=False,
                 mutable=DenyList("intermediates"), console_kwargs=None, table_kwargs=None,
                 column_kwargs=None, compute_flops=False, compute_vjp_flops=False,
                 method=None, **kwargs) -> str:
        """A table of every module call during init: path, module, inputs, outputs and each
        module's variables (to `depth` levels below the root)."""
        from nn.summary import tabulate
        return tabulate(self, rngs, depth=depth, show_repeated=show_repeated, mutable=mutable,
                        console_kwargs=console_kwargs, table_kwargs=table_kwargs,
                        column_kwargs=column_kwargs, compute_flops=compute_flops,
                        compute_vjp_flops=compute_vjp_flops, method=method)(*args, **kwargs)


def _with_intermediates(mutable, capture):
    """Flax makes 'intermediates' mutable whenever outputs are captured."""
    if not capture or mutable is True:
        return mutable
    if isinstance(mutable, DenyList):
        return DenyList(mutable.deny - {"intermediates"})
    if mutable is False or mutable is None:
        return ["intermediates"]
    cols = [mutable] if isinstance(mutable, str) else list(mutable)
    return cols if "intermediates" in cols else cols + ["intermediates"]


def _capture_filter(capture):
    if capture is True:
        return lambda module, method_name: method_name == "__call__"
    return capture or None


def _resolve_method(module: Module, method):
    if method is None:
        return module.__call__
    if isinstance(method, str):
        return getattr(module, method)
    if getattr(method, "__self__", None) is not None:
        method = method.__func__
    return functools.partial(method, module)


def _normalize_rngs(rngs, what: str) -> dict:
    if isinstance(rngs, dict):
        return dict(rngs)
    if _looks_like_key(rngs):
        return {"params": rngs}
    raise TypeError(f"{what}: rngs must be a PRNG key or a dict of keys, got "
                    f"{type(rngs).__name__}.")


def _looks_like_key(x) -> bool:
    shape = getattr(x, "shape", None)
    return shape is not None or isinstance(x, np.ndarray)


def _copy_variables(variables) -> dict:
    if not isinstance(variables, Mapping):
        raise ApplyScopeInvalidVariablesTypeError(
            "The first argument of apply should be a dict of collections, e.g. "
            f"{{'params': params}}; got a {type(variables).__name__}.")

    def copy(node):
        return {k: copy(v) for k, v in node.items()} if isinstance(node, Mapping) else node

    out = {}
    for col, tree in variables.items():
        if not isinstance(tree, Mapping):
            raise ApplyScopeInvalidVariablesTypeError(
                f"Collection {col!r} passed to apply is a {type(tree).__name__}; each "
                "collection must be a dict of variables (pass the dict returned by init).")
        out[col] = copy(tree)
    return out


def merge_param(name: str, module_value, call_value, module_path: str = ""):
    """Exactly one of the attribute and the call argument must be set."""
    where = f"{module_path}: " if module_path else ""
    if module_value is None and call_value is None:
        raise ValueError(f'{where}parameter "{name}" must be passed to the constructor or at '
                         "call time.")
    if module_value is not None and call_value is not None:
        raise ValueError(f'{where}parameter "{name}" was passed to both the constructor and '
                         "at call time; pass it once.")
    return module_value if call_value is None else call_value
