"""Pytrees: nested containers whose leaves are arrays.

A node type is registered with a `flatten(node) -> (children, aux_data)` and an
`unflatten(aux_data, children) -> node` function (and optionally a flatten that names its
children with key path entries). A `PyTreeDef` records the node types and aux data of a tree
so that a flat list of leaves can be put back. Built in: tuple, list, dict (keys sorted),
None (a node with no children), namedtuples, collections.OrderedDict (keys in insertion
order) and collections.defaultdict (keys sorted). Any other object is a leaf.

Registration helpers (dataclasses, classes with methods, static types) and `Partial` live in
corejax/_tree_register.py; key path entries in corejax/_tree_keys.py. This module is their
public path.
"""
from __future__ import annotations

import collections
import functools
from typing import Any, Callable, Iterable, NamedTuple

from corejax import _tree_codegen
from corejax._tree_codegen import COMPILE_MAX_NODES as _COMPILE_MAX_NODES  # noqa: F401 (tests)
from corejax._tree_keys import (DictKey, FlattenedIndexKey, GetAttrKey, KeyEntry, KeyPath,
                                SequenceKey, keystr)

__all__ = [
    "PyTreeDef", "KeyEntry", "KeyPath", "DictKey", "SequenceKey", "GetAttrKey",
    "FlattenedIndexKey", "keystr", "Partial", "default_registry",
    "register_pytree_node", "register_pytree_with_keys", "register_pytree_node_class",
    "register_pytree_with_keys_class", "register_dataclass", "register_static",
    "tree_flatten", "tree_unflatten", "tree_leaves", "tree_structure", "tree_map",
    "tree_flatten_with_path", "tree_leaves_with_path", "tree_map_with_path",
    "tree_reduce", "tree_reduce_associative", "tree_all", "all_leaves", "tree_transpose",
    "tree_broadcast", "treedef_is_leaf", "treedef_children", "treedef_tuple",
    "flatten_one_level", "flatten_one_level_with_keys", "is_tree_node",
]


# --- the registry ----------------------------------------------------------------------------

class _NodeType(NamedTuple):
    flatten: Callable[[Any], tuple]
    unflatten: Callable[[Any, tuple], Any]
    flatten_with_keys: Callable[[Any], tuple] | None = None


_registry: dict[type, _NodeType] = {}
# Types that are leaves to users but nodes to corejax's transformations (typed PRNG key arrays:
# a leaf of jax.tree.leaves, as in JAX, whose uint32 data jit/vmap/grad/scan... trace). The
# transformations flatten with _traced_registry (corejax/_tree_traced.py); a PyTreeDef built
# that way rebuilds such nodes like any other.
_traced_registry: dict[type, _NodeType] = {}


def register_pytree_node(nodetype: type, flatten_func: Callable, unflatten_func: Callable,
                         flatten_with_keys_func: Callable | None = None) -> None:
    """Registers `nodetype` as a pytree node.

    `flatten_func(node)` returns `(children, aux_data)`, children an iterable of subtrees and
    aux_data hashable static data; `unflatten_func(aux_data, children)` rebuilds the node
    from a tuple of children. `flatten_with_keys_func(node)`, if given, returns
    `(((key, child), ...), aux_data)`: the key path entries that name the children
    (without it they are `FlattenedIndexKey(i)`)."""
    if nodetype in _registry:
        raise ValueError(f"Duplicate pytree node registration for {nodetype}: a type can be "
                         "registered once.")
    _registry[nodetype] = _traced_registry[nodetype] = _NodeType(
        flatten_func, unflatten_func, flatten_with_keys_func)


def _register_transparent_leaf(nodetype: type, flatten_func: Callable,
                               unflatten_func: Callable) -> None:
    """`nodetype` stays a leaf of the public tree functions and becomes a node, flattened by
    `flatten_func`, of the transformations' flattening (corejax/_tree_traced.py)."""
    if nodetype in _traced_registry:
        raise ValueError(f"Duplicate pytree node registration for {nodetype}.")
    _traced_registry[nodetype] = _NodeType(flatten_func, unflatten_func)


def _is_namedtuple_type(cls) -> bool:
    return isinstance(cls, type) and issubclass(cls, tuple) and hasattr(cls, "_fields")


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def _sorted_keys(d) -> tuple:
    try:
        return tuple(sorted(d))
    except TypeError as e:
        raise ValueError(f"The keys of a dict in a pytree must be sortable (dicts flatten in "
                         f"sorted key order); sorting {list(d)!r} failed: {e}. Use keys of "
                         "one type, or an OrderedDict to keep insertion order.") from None


def _flatten_dict(d):
    keys = _sorted_keys(d)
    return tuple([d[k] for k in keys]), keys


def _flatten_dict_with_keys(d):
    keys = _sorted_keys(d)
    return tuple([(DictKey(k), d[k]) for k in keys]), keys


def _flatten_sequence_with_keys(s):
    return tuple([(SequenceKey(i), c) for i, c in enumerate(s)]), None


def _flatten_defaultdict(d):
    keys = _sorted_keys(d)
    return [d[k] for k in keys], (d.default_factory, keys)


def _flatten_defaultdict_with_keys(d):
    keys = _sorted_keys(d)
    return tuple([(DictKey(k), d[k]) for k in keys]), (d.default_factory, keys)


register_pytree_node(tuple, lambda t: (t, None), lambda _, c: tuple(c),
                     _flatten_sequence_with_keys)
register_pytree_node(list, lambda l: (l, None), lambda _, c: list(c),
                     _flatten_sequence_with_keys)
register_pytree_node(type(None), lambda n: ((), None), lambda _, c: None,
                     lambda n: ((), None))
register_pytree_node(dict, _flatten_dict, lambda keys, c: dict(zip(keys, c)),
                     _flatten_dict_with_keys)
register_pytree_node(
    collections.OrderedDict,
    lambda d: (list(d.values()), tuple(d)),
    lambda keys, c: collections.OrderedDict(zip(keys, c)),
    lambda d: (tuple([(DictKey(k), v) for k, v in d.items()]), tuple(d)))
register_pytree_node(
    collections.defaultdict, _flatten_defaultdict,
    lambda aux, c: collections.defaultdict(aux[0], zip(aux[1], c)),
    _flatten_defaultdict_with_keys)


@functools.lru_cache(maxsize=None)
def _namedtuple_spec(cls):
    return _NodeType(lambda t: (list(t), None), lambda _, c: cls(*c),
                     lambda t: ([(GetAttrKey(f), getattr(t, f)) for f in cls._fields], None))


def _spec_of(node_type) -> _NodeType:
    spec = _traced_registry.get(node_type)
    return spec if spec is not None else _namedtuple_spec(node_type)


def _node_type(x, registry=_registry):
    """`(type, spec)` of the node `x`, or None if `x` is a leaf."""
    spec = registry.get(type(x))
    if spec is not None:
        return type(x), spec
    if _is_namedtuple(x):
        return type(x), _namedtuple_spec(type(x))
    return None


def is_tree_node(typ: type) -> bool:
    """Whether objects of type `typ` are pytree nodes (registered, built in, or namedtuple
    classes) rather than leaves."""
    return typ in _registry or _is_namedtuple_type(typ)


def _flatten_node(spec, node):
    """`spec.flatten(node)`, checked: `(children, aux)`, children a list."""
    out = spec.flatten(node)
    children, aux = _checked_pair(out, node)
    try:
        return list(children), aux
    except TypeError:
        raise _children_error(node, out) from None


def _checked_pair(out, node):
    try:
        children, aux = out
    except (TypeError, ValueError):
        raise ValueError(f"The flatten function registered for {type(node).__name__} must "
                         f"return a (children, aux_data) pair; it returned {out!r}.") from None
    return children, aux


def _children_error(node, out) -> ValueError:
    return ValueError(f"The flatten function registered for {type(node).__name__} must "
                      f"return (children, aux_data) with children an iterable; it returned "
                      f"{out!r}.")


def _keyed_children(node, node_type, spec):
    """`(keys, children, aux)` of a node: its registered keys, or FlattenedIndexKeys."""
    if spec.flatten_with_keys is None:
        children, aux = _flatten_node(spec, node)
        return [FlattenedIndexKey(i) for i in range(len(children))], children, aux
    pairs, aux = spec.flatten_with_keys(node)
    pairs = list(pairs)
    return [k for k, _ in pairs], [c for _, c in pairs], aux


# --- PyTreeDef -------------------------------------------------------------------------------

class _StructureMismatch(Exception):
    """A tree that does not have a PyTreeDef's structure: `reason`, and the (node, child
    index) pairs from the mismatch up to the root, to name its key path."""

    def __init__(self, reason: str):
        self.reason = reason
        self.trail: list = []


def _short(x, limit=60) -> str:
    r = repr(x)
    return r if len(r) <= limit else r[:limit - 3] + "..."


def _node_name(node_type) -> str:
    if node_type is None:
        return "leaf"
    return "None" if node_type is type(None) else node_type.__name__


class PyTreeDef:
    """The structure of a pytree: its node types and aux data, with the leaves left out.

    Equal structures compare and hash equal; `unflatten(leaves)` puts leaves back."""

    __slots__ = ("node_type", "aux", "_children", "_num_leaves", "_num_nodes", "_hash",
                 "_uses", "_builder", "_matchers")

    def __init__(self, node_type, aux, children: tuple):
        self.node_type = node_type     # None for a leaf
        self.aux = aux
        self._children = children
        if node_type is None:
            self._num_leaves, self._num_nodes = 1, 1
        else:
            self._num_leaves = sum(c._num_leaves for c in children)
            self._num_nodes = 1 + sum(c._num_nodes for c in children)
        self._hash = None
        self._uses = 0
        self._builder = None           # compiled unflatten; False: not compilable
        self._matchers = None          # leaf type -> compiled flatten check (`matcher`)

    num_leaves = property(lambda self: self._num_leaves, doc="The number of leaves.")
    num_nodes = property(lambda self: self._num_nodes,
                         doc="The number of nodes, leaves and None included.")

    def children(self) -> list:
        """The structures of the node's children (an empty list for a leaf)."""
        return list(self._children)

    def node_data(self):
        """`(node type, aux data)` of the root node; None for a leaf."""
        if self.node_type is None:
            return None
        return self.node_type, _public_aux(self.node_type, self.aux)

    def unflatten(self, leaves: Iterable):
        """The tree of this structure with `leaves` in flattening order."""
        leaves = leaves if type(leaves) is list else list(leaves)
        if len(leaves) != self._num_leaves:
            few = "few" if len(leaves) < self._num_leaves else "many"
            raise ValueError(f"Too {few} leaves for {self}: it has {self._num_leaves} leaves, "
                             f"got {len(leaves)}.")
        builder = self._builder
        if builder is None:
            # A structure rebuilt again (a jitted function's outputs, every call) is compiled.
            self._uses += 1
            if self._uses >= 2:
                builder = self._builder = (
                    _tree_codegen.compile_builder(self, _spec_of)
                    if _tree_codegen.compilable(self) else False)
        if builder:
            return builder(leaves)
        return self._build(iter(leaves))

    def _build(self, it):
        if self.node_type is None:
            return next(it)
        children = tuple([c._build(it) for c in self._children])
        return _spec_of(self.node_type).unflatten(self.aux, children)

    def matcher(self, leaf_type: type | tuple):
        """A compiled function of a tree: its leaves, in flattening order, if the tree has
        exactly this structure with a `leaf_type` object at every leaf (`leaf_type` a type, or
        a tuple of types: an object of one of them), else None. None where
        this structure is not compiled (aux data other than None or string keys, or too many
        nodes). jit's dispatch flattens its arguments with the last call's matcher."""
        if self._matchers is None:
            self._matchers = {}
        if leaf_type not in self._matchers:
            self._matchers[leaf_type] = (
                _tree_codegen.compile_matcher(self, leaf_type, _spec_of)
                if _tree_codegen.compilable(self, plain=True) else None)
        return self._matchers[leaf_type]

    def flatten_up_to(self, tree) -> list:
        """The subtrees of `tree` at this structure's leaves, in order; `tree` must have this
        structure down to them (ValueError naming the first difference otherwise)."""
        return self._up_to(tree, "flatten_up_to")

    def _up_to(self, tree, what: str) -> list:
        out: list = []
        try:
            self._flatten_up_to(tree, out)
        except _StructureMismatch as e:
            raise ValueError(_mismatch_message(e, what, self)) from None
        return out

    def _flatten_up_to(self, tree, out):
        node_type = self.node_type
        if node_type is None:
            out.append(tree)
            return
        if type(tree) is not node_type:
            raise _StructureMismatch(
                f"expected {_node_name(node_type)}, got {type(tree).__name__} "
                f"{_short(tree)}")
        children, aux = _flatten_node(_spec_of(node_type), tree)
        kids = self._children
        if aux != self.aux:
            what = "keys" if node_type is dict else "node data"
            raise _StructureMismatch(
                f"{_node_name(node_type)} {what} differ: expected "
                f"{_public_aux(node_type, self.aux)!r}, got {_public_aux(node_type, aux)!r}")
        if len(children) != len(kids):
            raise _StructureMismatch(
                f"expected {_node_name(node_type)} of length {len(kids)}, got one of length "
                f"{len(children)}")
        i = 0
        try:
            for i, child in enumerate(children):
                kids[i]._flatten_up_to(child, out)
        except _StructureMismatch as e:
            e.trail.append((tree, node_type, i))
            raise

    def compose(self, inner: "PyTreeDef") -> "PyTreeDef":
        """This structure with `inner` in place of each of its leaves."""
        if self.node_type is None:
            return inner
        return _interned(self.node_type, self.aux,
                         tuple([c.compose(inner) for c in self._children]))

    def walk(self, f_node: Callable, f_leaf: Callable | None, leaves: Iterable):
        """Folds `leaves` up this structure: `f_leaf(leaf)` at each leaf (the leaf itself if
        f_leaf is None), `f_node(children_results, node_data)` at each node, children first."""
        it = iter(leaves)

        def go(td):
            if td.node_type is None:
                try:
                    leaf = next(it)
                except StopIteration:
                    raise ValueError(f"Too few leaves for {self}: it has {self._num_leaves} "
                                     "leaves.") from None
                return leaf if f_leaf is None else f_leaf(leaf)
            results = tuple([go(c) for c in td._children])
            return f_node(results, _public_aux(td.node_type, td.aux))

        out = go(self)
        if next(it, _MISSING) is not _MISSING:
            raise ValueError(f"Too many leaves for {self}: it has {self._num_leaves} leaves.")
        return out

    def from_iterable_tree(self, tree):
        """Builds a tree of this structure from nested iterables: each node's children are
        the items of the iterable at its place."""
        if self.node_type is None:
            return tree
        items = list(tree)
        if len(items) != len(self._children):
            raise ValueError(f"{_node_name(self.node_type)} of {self} has "
                             f"{len(self._children)} children, the iterable at its place "
                             f"{len(items)}.")
        kids = tuple([c.from_iterable_tree(x) for c, x in zip(self._children, items)])
        return _spec_of(self.node_type).unflatten(self.aux, kids)

    @staticmethod
    def from_node_data_and_children(registry, node_data, children) -> "PyTreeDef":
        """The structure with root `node_data` (as `node_data()` returns it; None for a leaf)
        and child structures `children`. `registry` is `default_registry`."""
        children = tuple(children)
        if node_data is None:
            if children:
                raise ValueError("A leaf (node_data None) has no children.")
            return _LEAF
        node_type, aux = node_data
        if not is_tree_node(node_type):
            raise RuntimeError(f"{node_type} is not a registered pytree node type; register "
                               "it with register_pytree_node first.")
        if node_type is dict:
            aux = tuple(aux)
        return _interned(node_type, aux, children)

    def __eq__(self, other):
        if self is other:
            return True
        return (isinstance(other, PyTreeDef) and self.node_type is other.node_type
                and self.aux == other.aux and self._children == other._children)

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        if self._hash is None:
            self._hash = hash((self.node_type, _hashable(self.aux), self._children))
        return self._hash

    def __reduce__(self):
        return _rebuild, (self.node_type, self.aux, self._children)

    def __repr__(self):
        return f"PyTreeDef({self._repr()})"

    __str__ = __repr__

    def _repr(self):
        nt = self.node_type
        if nt is None:
            return "*"
        kids = [c._repr() for c in self._children]
        if nt is tuple:
            return "(" + ", ".join(kids) + ("," if len(kids) == 1 else "") + ")"
        if nt is list:
            return "[" + ", ".join(kids) + "]"
        if nt is dict:
            return "{" + ", ".join(f"{k!r}: {v}" for k, v in zip(self.aux, kids)) + "}"
        if nt is type(None):
            return "None"
        name = f"namedtuple[{nt.__name__}]" if nt not in _registry else \
            f"{nt.__name__}[{self.aux}]"
        return f"CustomNode({name}, [{', '.join(kids)}])"


_MISSING = object()


def _public_aux(node_type, aux):
    """Aux data as JAX's node_data shows it: a dict's keys as a list."""
    return list(aux) if node_type is dict else aux


def _hashable(aux):
    try:
        hash(aux)
        return aux
    except TypeError:
        return repr(aux)


def _rebuild(node_type, aux, children):
    return _interned(node_type, aux, children)


def _mismatch_message(e: _StructureMismatch, what: str, treedef: PyTreeDef) -> str:
    path = []
    for node, node_type, i in reversed(e.trail):
        path.append(_keyed_children(node, node_type, _spec_of(node_type))[0][i])
    where = f"key path {keystr(tuple(path))}" if path else "the root"
    return (f"{what}: pytree structure mismatch at {where}: {e.reason}. The tree "
            f"must have the structure {treedef} (any subtree may stand at its leaves).")


_LEAF = PyTreeDef(None, None, ())


# Equal structures flatten to the same PyTreeDef object (children first, so a key holds
# interned children): jit's per-call signature lookup then hashes and compares in O(1) per
# node instead of rebuilding and rehashing the whole structure on every call.
_INTERNED: dict = {}
_MAX_INTERNED = 1 << 14


def _interned(node_type, aux, children):
    if not _tree_codegen.plain_aux(aux):   # (other aux data may be equal without being the same)
        return PyTreeDef(node_type, aux, children)
    key = (node_type, aux, children)
    found = _INTERNED.get(key)
    if found is None:
        if len(_INTERNED) >= _MAX_INTERNED:
            _INTERNED.clear()
        found = _INTERNED[key] = PyTreeDef(node_type, aux, children)
    return found


# --- flattening ------------------------------------------------------------------------------

def tree_flatten(tree, is_leaf: Callable[[Any], bool] | None = None):
    """`(leaves, treedef)`: the leaves of `tree` in order, and its structure. `is_leaf(x)`,
    if given, is asked first at every subtree: true makes `x` a leaf. None is an empty node,
    not a leaf."""
    leaves: list = []
    treedef = _flatten(tree, leaves, is_leaf, _registry)
    return leaves, treedef


def _flatten(tree, leaves, is_leaf, registry):
    if is_leaf is not None and is_leaf(tree):
        leaves.append(tree)
        return _LEAF
    spec = registry.get(type(tree))
    if spec is None:
        if not _is_namedtuple(tree):
            leaves.append(tree)
            return _LEAF
        spec = _namedtuple_spec(type(tree))
    out = spec.flatten(tree)
    children, aux = _checked_pair(out, tree)
    try:
        kids = tuple([_flatten(c, leaves, is_leaf, registry) for c in children])
    except TypeError:
        if not isinstance(children, Iterable):
            raise _children_error(tree, out) from None
        raise
    return _interned(type(tree), aux, kids)


def tree_flatten_with_path(tree, is_leaf: Callable | None = None,
                           is_leaf_takes_path: bool = False):
    """`([(key_path, leaf), ...], treedef)`. With `is_leaf_takes_path`, `is_leaf` is called
    as `is_leaf(key_path, x)`."""
    pairs: list = []
    treedef = _flatten_with_path(tree, is_leaf, is_leaf_takes_path, pairs, (), _registry)
    return pairs, treedef


def _flatten_with_path(tree, is_leaf, takes_path, pairs, path, registry):
    if is_leaf is not None and (is_leaf(path, tree) if takes_path else is_leaf(tree)):
        pairs.append((path, tree))
        return _LEAF
    nt = _node_type(tree, registry)
    if nt is None:
        pairs.append((path, tree))
        return _LEAF
    keys, children, aux = _keyed_children(tree, *nt)
    kids = tuple([_flatten_with_path(c, is_leaf, takes_path, pairs, path + (k,), registry)
                  for k, c in zip(keys, children)])
    return _interned(nt[0], aux, kids)


def tree_unflatten(treedef: PyTreeDef, leaves: Iterable):
    """The tree of structure `treedef` with `leaves` in flattening order."""
    return treedef.unflatten(leaves)


def tree_leaves(tree, is_leaf: Callable[[Any], bool] | None = None) -> list:
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree, is_leaf: Callable[[Any], bool] | None = None) -> PyTreeDef:
    return tree_flatten(tree, is_leaf)[1]


def tree_leaves_with_path(tree, is_leaf: Callable | None = None,
                          is_leaf_takes_path: bool = False) -> list:
    """`[(key_path, leaf), ...]` in flattening order."""
    return tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)[0]


def flatten_one_level(tree):
    """`(children, aux_data)` of the node `tree` (ValueError for a leaf). A namedtuple's aux
    data is its class."""
    nt = _node_type(tree)
    if nt is None:
        raise ValueError(f"can't tree-flatten type: {type(tree)} (it is a leaf; register it "
                         "with register_pytree_node to make it a node).")
    children, aux = nt[1].flatten(tree)
    return children, (nt[0] if nt[0] not in _registry else aux)


def flatten_one_level_with_keys(tree):
    """`(((key, child), ...), aux_data)` of the node `tree` (ValueError for a leaf)."""
    nt = _node_type(tree)
    if nt is None:
        raise ValueError(f"can't tree-flatten type: {type(tree)} (it is a leaf; register it "
                         "with register_pytree_node to make it a node).")
    node_type, spec = nt
    if spec.flatten_with_keys is not None:
        pairs, aux = spec.flatten_with_keys(tree)
    else:
        children, aux = _flatten_node(spec, tree)
        pairs = [(FlattenedIndexKey(i), c) for i, c in enumerate(children)]
    return pairs, (node_type if node_type not in _registry else aux)


def treedef_is_leaf(treedef: PyTreeDef) -> bool:
    """Whether `treedef` is a single node: a leaf, or a node without children (None, ())."""
    return treedef.num_nodes == 1


def treedef_children(treedef: PyTreeDef) -> list:
    return treedef.children()


def treedef_tuple(treedefs: Iterable[PyTreeDef]) -> PyTreeDef:
    """The structure of a tuple whose children have the structures `treedefs`."""
    return _interned(tuple, None, tuple(treedefs))


def all_leaves(iterable: Iterable, is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """Whether every item of `iterable` is a leaf (None is not: it is an empty node)."""
    items = list(iterable)
    if is_leaf is None:
        return all(_node_type(x) is None for x in items)
    leaves = tree_leaves(items, is_leaf)
    return len(leaves) == len(items) and all(a is b for a, b in zip(leaves, items))


# --- mapping and reducing --------------------------------------------------------------------

def tree_map(f: Callable, tree, *rest, is_leaf: Callable[[Any], bool] | None = None):
    """`f` applied leafwise: `f(x, *ys)` for each leaf `x` of `tree` and the subtrees `ys` of
    `rest` at its place. Each tree of `rest` must have `tree`'s structure, or a subtree
    wherever `tree` has a leaf."""
    leaves, treedef = tree_flatten(tree, is_leaf)
    if not rest:
        return treedef.unflatten([f(x) for x in leaves])
    others = [treedef._up_to(r, f"tree_map (rest[{i}])") for i, r in enumerate(rest)]
    return treedef.unflatten([f(*xs) for xs in zip(leaves, *others)])


def tree_map_with_path(f: Callable, tree, *rest, is_leaf: Callable | None = None,
                       is_leaf_takes_path: bool = False):
    """`tree_map` with the key path first: `f(key_path, x, *ys)`."""
    pairs, treedef = tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)
    others = [treedef._up_to(r, f"tree_map_with_path (rest[{i}])") for i, r in enumerate(rest)]
    return treedef.unflatten([f(p, x, *ys) for (p, x), *ys in zip(pairs, *others)])


class _Unspecified:
    def __repr__(self):
        return "<unspecified>"


_UNSPECIFIED = _Unspecified()


def tree_reduce(function: Callable, tree, initializer: Any = _UNSPECIFIED,
                is_leaf: Callable[[Any], bool] | None = None):
    """`functools.reduce(function, leaves[, initializer])` over the leaves of `tree`."""
    leaves = tree_leaves(tree, is_leaf)
    if initializer is _UNSPECIFIED:
        return functools.reduce(function, leaves)
    return functools.reduce(function, leaves, initializer)


def tree_reduce_associative(operation: Callable, tree, *, identity: Any = _UNSPECIFIED,
                            is_leaf: Callable[[Any], bool] | None = None):
    """Reduces the leaves of `tree` with the associative `operation` as a balanced tree of
    calls (depth log2 of the number of leaves); `identity` is the result for no leaves."""
    leaves = tree_leaves(tree, is_leaf)
    if not leaves:
        if identity is _UNSPECIFIED:
            raise TypeError("tree_reduce_associative of a tree without leaves needs an "
                            "identity: pass identity=<the result for no leaves>.")
        return identity

    def reduce(xs):
        if len(xs) == 1:
            return xs[0]
        half = len(xs) // 2
        return operation(reduce(xs[:half]), reduce(xs[half:]))

    return reduce(leaves)


def tree_all(tree, *, is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """Whether every leaf of `tree` is true (an empty tree: True)."""
    return all(tree_leaves(tree, is_leaf))


def tree_transpose(outer_treedef: PyTreeDef, inner_treedef: PyTreeDef | None,
                   pytree_to_transpose):
    """Turns a tree of structure outer-of-inner into one of inner-of-outer. Without
    `inner_treedef`, it is the structure of the first subtree at an outer leaf."""
    leaves, treedef = tree_flatten(pytree_to_transpose)
    if inner_treedef is None:
        subtrees = outer_treedef.flatten_up_to(pytree_to_transpose)
        if not subtrees:
            raise IndexError(f"tree_transpose cannot infer inner_treedef: the outer structure "
                             f"{outer_treedef} has no leaves. Pass inner_treedef.")
        inner_treedef = tree_structure(subtrees[0])
    n_in, n_out = inner_treedef.num_leaves, outer_treedef.num_leaves
    if treedef.num_leaves != n_in * n_out:
        raise TypeError(f"tree_transpose: the tree has structure {treedef}, but an outer "
                        f"structure {outer_treedef} of inner structures {inner_treedef} is "
                        f"{outer_treedef.compose(inner_treedef)}.")
    rows = [leaves[i * n_in:(i + 1) * n_in] for i in range(n_out)]
    return inner_treedef.unflatten([outer_treedef.unflatten(col) for col in zip(*rows)])


def tree_broadcast(prefix_tree, full_tree, is_leaf: Callable[[Any], bool] | None = None):
    """`full_tree`'s structure with each leaf of `prefix_tree` repeated over the subtree of
    `full_tree` at its place (`is_leaf` applies to `prefix_tree`)."""
    leaves, treedef = tree_flatten(prefix_tree, is_leaf)
    subtrees = treedef._up_to(full_tree, "tree_broadcast")
    return treedef.unflatten([tree_map(lambda _: x, sub) for x, sub in zip(leaves, subtrees)])


# --- registration helpers, Partial, the registry object ------------------------------------

from corejax._tree_register import (  # noqa: E402  (they register through this module)
    Partial, register_dataclass, register_pytree_node_class, register_pytree_with_keys,
    register_pytree_with_keys_class, register_static, PyTreeRegistry)

default_registry = PyTreeRegistry()
