"""Ways to register pytree node types (dataclasses, classes with flatten methods, static
types), `Partial`, and the registry object. Their public path is corejax.tree_util."""
from __future__ import annotations

import dataclasses
import functools
import operator
from typing import Any, Callable, Sequence

from corejax import tree_util
from corejax._tree_keys import GetAttrKey
from corejax.tree_util import register_pytree_node

__all__ = ["register_pytree_with_keys", "register_pytree_node_class",
           "register_pytree_with_keys_class", "register_static", "register_dataclass",
           "Partial", "PyTreeRegistry"]


def register_pytree_with_keys(nodetype: type, flatten_with_keys: Callable,
                              unflatten_func: Callable, flatten_func: Callable | None = None):
    """Registers `nodetype` with a flatten that names its children:
    `flatten_with_keys(node) -> (((key, child), ...), aux_data)`. `flatten_func`, the same
    without keys, is derived from it when not given."""
    if flatten_func is None:
        def flatten_func(node):
            pairs, aux = flatten_with_keys(node)
            return [child for _, child in pairs], aux
    register_pytree_node(nodetype, flatten_func, unflatten_func, flatten_with_keys)


def register_pytree_node_class(cls):
    """Class decorator: `cls.tree_flatten(self) -> (children, aux_data)` and the classmethod
    `cls.tree_unflatten(aux_data, children)` make `cls` a pytree node."""
    register_pytree_node(cls, operator.methodcaller("tree_flatten"), cls.tree_unflatten)
    return cls


def register_pytree_with_keys_class(cls):
    """Class decorator: `cls.tree_flatten_with_keys(self) -> (((key, child), ...), aux)` and
    `cls.tree_unflatten(aux, children)` (and `tree_flatten`, if the class has one)."""
    flatten = operator.methodcaller("tree_flatten") if hasattr(cls, "tree_flatten") else None
    register_pytree_with_keys(cls, operator.methodcaller("tree_flatten_with_keys"),
                              cls.tree_unflatten, flatten)
    return cls


def register_static(cls):
    """Makes `cls` a node without children whose whole value is static aux data: its
    objects are part of a tree's structure (so they must be hashable and comparable), never
    leaves, and pass through jit unchanged."""
    register_pytree_node(cls, lambda x: ((), x), lambda x, _: x)
    return cls


def register_dataclass(nodetype, data_fields: Sequence[str] | None = None,
                       meta_fields: Sequence[str] | None = None, drop_fields: Sequence[str] = ()):
    """Registers a dataclass (or a class built from keyword arguments) as a pytree node:
    `data_fields` are its children, `meta_fields` static aux data. Without either list,
    `nodetype` must be a dataclass: its fields marked `field(metadata={'static': True})`
    (corejax.tree.static) are meta, its other `init` fields data. For a dataclass, the two
    lists together must be its `init` fields except `drop_fields`. Returns `nodetype`."""
    if nodetype in tree_util._registry:
        raise ValueError(f"Duplicate pytree node registration for {nodetype}: a type can be "
                         "registered once.")
    if data_fields is None and meta_fields is None:
        if not dataclasses.is_dataclass(nodetype):
            raise TypeError(f"register_dataclass: {nodetype} is not a dataclass, so "
                            "data_fields and meta_fields must both be given.")
        fields = [f for f in dataclasses.fields(nodetype) if f.name not in drop_fields]
        meta_fields = [f.name for f in fields if f.metadata.get("static", False)]
        data_fields = [f.name for f in fields if not f.metadata.get("static", False)]
    elif data_fields is None or meta_fields is None:
        raise TypeError(f"register_dataclass: give both data_fields and meta_fields, or "
                        f"neither (for a dataclass); got data_fields={data_fields!r}, "
                        f"meta_fields={meta_fields!r}.")
    data_fields, meta_fields = tuple(data_fields), tuple(meta_fields)
    if dataclasses.is_dataclass(nodetype):
        _check_dataclass_fields(nodetype, data_fields, meta_fields, drop_fields)

    def flatten(node):
        return [getattr(node, n) for n in data_fields], tuple(getattr(node, n)
                                                            for n in meta_fields)

    def flatten_with_keys(node):
        return ([(GetAttrKey(n), getattr(node, n)) for n in data_fields],
                tuple(getattr(node, n) for n in meta_fields))

    def unflatten(meta, data):
        return nodetype(**dict(zip(data_fields, data)), **dict(zip(meta_fields, meta)))

    register_pytree_node(nodetype, flatten, unflatten, flatten_with_keys)
    return nodetype


def _check_dataclass_fields(nodetype, data_fields, meta_fields, drop_fields):
    overlap = set(data_fields) & set(meta_fields)
    if overlap:
        raise ValueError(f"register_dataclass({nodetype.__name__}): fields {sorted(overlap)} "
                         "are in both data_fields and meta_fields; each field is one or the "
                         "other.")
    init = {f.name for f in dataclasses.fields(nodetype) if f.init} - set(drop_fields)
    given = set(data_fields) | set(meta_fields)
    if init - given:
        raise ValueError(f"register_dataclass({nodetype.__name__}): the init fields "
                         f"{sorted(init - given)} are in neither data_fields nor meta_fields; "
                         "add them to one of the two, or to drop_fields.")
    if given - init:
        raise ValueError(f"register_dataclass({nodetype.__name__}): {sorted(given - init)} "
                         "are not init fields of the dataclass (or are in drop_fields); only "
                         "fields the constructor takes can be data or meta fields.")


class _StaticCallable:
    """A callable wrapped so that `Partial` keeps it whole: the bound arguments of a
    functools.partial given to Partial are static, not leaves, as in JAX."""

    __slots__ = ("fun",)

    def __init__(self, fun):
        self.fun = fun

    def __call__(self, *args, **kwargs):
        return self.fun(*args, **kwargs)

    def __eq__(self, other):
        return isinstance(other, _StaticCallable) and self.fun == other.fun

    def __hash__(self):
        return hash(self.fun)

    def __repr__(self):
        return f"_StaticCallable({self.fun!r})"


class Partial(functools.partial):
    """A `functools.partial` that is a pytree: its bound positional and keyword arguments are
    leaves and the function is static, so it can be passed to and returned from jit, vmap
    and grad. The bound arguments of a partial given as the function stay static."""

    def __new__(cls, func, *args, **kw):
        if isinstance(func, functools.partial):
            # functools.partial would merge the two; the inner one's values stay static.
            func = _StaticCallable(func)
        return super().__new__(cls, func, *args, **kw)


register_pytree_node(Partial, lambda p: ((p.args, p.keywords), p.func),
                     lambda func, c: Partial(func, *c[0], **c[1]))


class PyTreeRegistry:
    """The registry of pytree node types (`default_registry`, the only one)."""

    def flatten(self, tree, leaf_predicate: Callable[[Any], bool] | None = None):
        return tree_util.tree_flatten(tree, leaf_predicate)

    def flatten_with_path(self, tree, leaf_predicate: Callable[[Any], bool] | None = None):
        return tree_util.tree_flatten_with_path(tree, leaf_predicate)

    def flatten_one_level(self, tree):
        return tree_util.flatten_one_level(tree)

    def flatten_one_level_with_keys(self, tree):
        return tree_util.flatten_one_level_with_keys(tree)

    def is_node(self, typ) -> bool:
        return tree_util.is_tree_node(typ)

    def register_node(self, type, to_iterable, from_iterable, to_iterable_with_keys=None):
        register_pytree_node(type, to_iterable, from_iterable, to_iterable_with_keys)

    def register_dataclass_node(self, type, data_fields, meta_fields):
        register_dataclass(type, data_fields, meta_fields)

    def __repr__(self):
        return "<corejax.tree_util default_registry>"
