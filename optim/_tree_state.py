"""Finding and replacing entries of optimizer states by name (optax.tree.get / set / ...).

An optimizer state is a nest of NamedTuples, dicts and sequences. Entries are looked up by
key: a NamedTuple field name, a NamedTuple class name (the whole tuple), or a dict key. Paths
name NamedTuple fields with `NamedTupleKey(class name, field)` rather than the generic
attribute key, as Optax does.
"""
from __future__ import annotations

import dataclasses
import functools

import corejax as jax

__all__ = ["NamedTupleKey", "tree_get_all_with_path", "tree_get", "tree_set",
           "tree_map_params"]

_tu = jax.tree_util


@dataclasses.dataclass(frozen=True)
class NamedTupleKey:
    """Path entry for the field `name` of a NamedTuple of class `tuple_name`."""
    tuple_name: str
    name: str

    def __str__(self):
        return f"{self.tuple_name}.{self.name}"


def _is_named_tuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(x, "_fields")


def _has_keys(node, keys) -> bool:
    if _is_named_tuple(node):
        return (any(k in node._fields for k in keys)
                or type(node).__name__ in keys)
    return isinstance(node, dict) and any(k in node for k in keys)


def _leaves_with_named_paths(tree, is_leaf=None):
    """Like tree_leaves_with_path, stopping at nodes `is_leaf` accepts, and naming NamedTuple
    fields with NamedTupleKey."""
    stop = is_leaf or (lambda _: False)
    out = []
    for path, node in _tu.tree_leaves_with_path(
            tree, is_leaf=lambda x: stop(x) or _is_named_tuple(x)):
        if stop(node) or not _is_named_tuple(node):
            out.append((path, node))
            continue
        for field in node._fields:
            entry = NamedTupleKey(type(node).__name__, field)
            for sub_path, value in _leaves_with_named_paths(getattr(node, field), is_leaf):
                out.append(((*path, entry, *sub_path), value))
    return out


def _children(path, node):
    if _is_named_tuple(node):
        name = type(node).__name__
        return [((*path, NamedTupleKey(name, f)), getattr(node, f)) for f in node._fields]
    if isinstance(node, dict):
        return [((*path, _tu.DictKey(k)), v) for k, v in node.items()]
    raise ValueError(f"Subtree must be a dict or a NamedTuple. Got {type(node)}")


def _at_key(path, node, key):
    if _is_named_tuple(node):
        if key == type(node).__name__:
            return path, node
        return (*path, NamedTupleKey(type(node).__name__, key)), getattr(node, key)
    if isinstance(node, dict) and key in node:
        return (*path, _tu.DictKey(key)), node[key]
    return path, node


def _find_all(tree, key):
    has_key = functools.partial(_has_keys, keys=(key,))
    holders = [(p, n) for p, n in _leaves_with_named_paths(tree, is_leaf=has_key) if has_key(n)]
    found = [_at_key(p, n, key) for p, n in holders]
    for path, holder in holders:
        for child_path, child in _children(path, holder):
            found += [((*child_path, *sub), v) for sub, v in _find_all(child, key)]
    return found


def tree_get_all_with_path(tree, key, filtering=None):
    """Every `(path, value)` in `tree` under `key` (a NamedTuple field or class name, or a dict
    key), nested matches included; `filtering(path, value)` keeps a subset."""
    found = _find_all(tree, key)
    if filtering:
        found = [(p, v) for p, v in found if filtering(p, v)]
    return found


def tree_get(tree, key, default=None, filtering=None):
    """The one value under `key` in `tree` (`default` if none); KeyError if several match
    (narrow them with `filtering(path, value)`)."""
    found = tree_get_all_with_path(tree, key, filtering=filtering)
    if len(found) > 1:
        raise KeyError(f"Found multiple values for '{key}' in {tree}. Pass filtering="
                       "lambda path, value: ... to pick one.")
    return found[0][1] if found else default


def _key_name(entry):
    if isinstance(entry, _tu.DictKey):
        if isinstance(entry.key, (str, int)):
            return entry.key
        raise KeyError("Hashable keys not supported")
    if isinstance(entry, _tu.FlattenedIndexKey):
        return entry.key
    if isinstance(entry, _tu.GetAttrKey):
        return entry.name
    if isinstance(entry, _tu.SequenceKey):
        return entry.idx
    if isinstance(entry, NamedTupleKey):
        return entry.name
    raise KeyError(f"Tree key '{entry}' of type '{type(entry)}' not valid.")


def _with_children(node, children):
    if _is_named_tuple(node):
        return node._replace(**children)
    if isinstance(node, dict):
        return children
    raise ValueError(f"Subtree must be a dict or a NamedTuple. Got {type(node)}")


def tree_set(tree, filtering=None, /, **kwargs):
    """A copy of `tree` with the entries named by each keyword replaced by its value (a
    NamedTuple class name replaces the whole tuple); KeyError for a name found nowhere."""
    for key in kwargs:
        if not tree_get_all_with_path(tree, key, filtering):
            where = " given the filtering operation" if filtering else ""
            raise KeyError(f"Found no values matching '{key}'{where} in {tree}")
    has_any = functools.partial(_has_keys, keys=tuple(kwargs))

    def replace(path, node):
        if not has_any(node):
            return node
        if (_is_named_tuple(node) and type(node).__name__ in kwargs
                and (filtering is None or filtering(path, node))):
            return kwargs[type(node).__name__]
        children = {}
        for child_path, child in _children(path, node):
            name = _key_name(child_path[-1])
            if name in kwargs and (filtering is None or filtering(child_path, child)):
                children[name] = kwargs[name]
            elif isinstance(child, (dict, list, tuple)):
                children[name] = replace(child_path, child)
            else:
                children[name] = child
        return _with_children(node, children)

    treedef = _tu.tree_structure(tree, is_leaf=has_any)
    pieces = _leaves_with_named_paths(tree, is_leaf=has_any)
    return _tu.tree_unflatten(treedef, [replace(p, n) for p, n in pieces])


@_tu.register_pytree_node_class
class _ParamsPlaceholder:
    """A childless pytree standing for the params in a state built by `init(placeholder)`."""

    def tree_flatten(self):
        return (), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        del aux, children
        return cls()


def tree_map_params(initable, f, state, /, *rest, transform_non_params=None, is_leaf=None):
    """Applies `f` (with the matching leaves of `rest`) to the parts of optimizer `state` that
    are shaped like the params, found by initializing `initable` (a GradientTransformation or
    its init function) on a placeholder; other parts go through `transform_non_params`."""
    placeholder = _ParamsPlaceholder()
    init = initable.init if hasattr(initable, "init") else initable
    marked = init(placeholder)

    def visit(mark, value):
        if isinstance(mark, _ParamsPlaceholder):
            return _tu.tree_map(f, value, *rest, is_leaf=is_leaf)
        if transform_non_params is not None:
            return transform_non_params(value)
        return value
    return _tu.tree_map(visit, marked, state, is_leaf=lambda v: isinstance(v, _ParamsPlaceholder))
