"""The pytree functions of corejax's transformations.

A typed PRNG key array is a leaf to users (`jax.tree.leaves(key)` is `[key]`, as in JAX), but
corejax has no key dtype in its core: jit, vmap, grad, scan, cond, pmap... trace the key's
uint32 data. So the transformations flatten their arguments and results with these functions,
which see such types (registered by `register_transparent_leaf`) as nodes over their data;
the PyTreeDefs they return rebuild the keys, and are ordinary PyTreeDefs otherwise. Every
other node type and every leaf is as in corejax.tree_util.
"""
from __future__ import annotations

from typing import Any, Callable

from corejax.tree_util import tree_unflatten  # noqa: F401 (one unflatten for all treedefs)
from corejax.tree_util import (_flatten, _flatten_with_path, _traced_registry,
                               _register_transparent_leaf as register_transparent_leaf)

__all__ = ["tree_flatten", "tree_unflatten", "tree_leaves", "tree_structure", "tree_map",
           "tree_flatten_with_path", "register_transparent_leaf"]


def tree_flatten(tree, is_leaf: Callable[[Any], bool] | None = None):
    leaves: list = []
    return leaves, _flatten(tree, leaves, is_leaf, _traced_registry)


def tree_leaves(tree, is_leaf: Callable[[Any], bool] | None = None) -> list:
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree, is_leaf: Callable[[Any], bool] | None = None):
    return tree_flatten(tree, is_leaf)[1]


def tree_flatten_with_path(tree, is_leaf: Callable | None = None,
                           is_leaf_takes_path: bool = False):
    pairs: list = []
    return pairs, _flatten_with_path(tree, is_leaf, is_leaf_takes_path, pairs, (),
                                     _traced_registry)


def tree_map(f: Callable, tree, *rest, is_leaf: Callable[[Any], bool] | None = None):
    leaves, treedef = tree_flatten(tree, is_leaf)
    if not rest:
        return treedef.unflatten([f(x) for x in leaves])
    others = [treedef._up_to(r, f"tree_map (rest[{i}])") for i, r in enumerate(rest)]
    return treedef.unflatten([f(*xs) for xs in zip(leaves, *others)])

