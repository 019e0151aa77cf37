"""Pytrees: nested containers whose leaves are arrays.

A node type is registered with a `flatten(node) -> (children, aux)` and an
`unflatten(aux, children) -> node` function. A `PyTreeDef` records the node
types and aux data of a tree so that a flat list of leaves can be put back.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable, NamedTuple

__all__ = [
    "PyTreeDef", "register_pytree_node", "register_pytree_node_class", "register_dataclass",
    "tree_flatten", "tree_unflatten", "tree_leaves", "tree_structure", "tree_map",
    "tree_reduce", "tree_all", "treedef_is_leaf", "tree_transpose", "Partial",
    "tree_flatten_with_path", "keystr",
]


class _NodeType(NamedTuple):
    flatten: Callable[[Any], tuple]
    unflatten: Callable[[Any, list], Any]


_registry: dict[type, _NodeType] = {}


def register_pytree_node(nodetype: type, flatten_func, unflatten_func) -> None:
    """Registers `nodetype` as an internal pytree node.

    `flatten_func(node)` returns `(children, aux_data)` where aux_data is hashable;
    `unflatten_func(aux_data, children)` rebuilds the node.
    """
    if nodetype in _registry:
        raise ValueError(f"Duplicate pytree registration for {nodetype.__name__}.")
    _registry[nodetype] = _NodeType(flatten_func, unflatten_func)


def register_pytree_node_class(cls):
    """Class decorator: `cls.tree_flatten(self)` and `cls.tree_unflatten(aux, children)`."""
    register_pytree_node(cls, lambda node: node.tree_flatten(), cls.tree_unflatten)
    return cls


def register_dataclass(cls, data_fields=None, meta_fields=None):
    """Registers a dataclass: `data_fields` are children, `meta_fields` are static aux data.

    Without explicit lists, fields marked `field(metadata={'static': True})` are meta.
    """
    if data_fields is None or meta_fields is None:
        fields = dataclasses.fields(cls)
        meta_fields = [f.name for f in fields if f.metadata.get("static", False)]
        data_fields = [f.name for f in fields if not f.metadata.get("static", False)]
    data_fields, meta_fields = tuple(data_fields), tuple(meta_fields)

    def flatten(node):
        return [getattr(node, n) for n in data_fields], tuple(getattr(node, n) for n in meta_fields)

    def unflatten(aux, children):
        return cls(**dict(zip(data_fields, children)), **dict(zip(meta_fields, aux)))

    register_pytree_node(cls, flatten, unflatten)
    return cls


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


register_pytree_node(tuple, lambda t: (list(t), None), lambda _, c: tuple(c))
register_pytree_node(list, lambda l: (list(l), None), lambda _, c: list(c))
register_pytree_node(type(None), lambda n: ([], None), lambda _, c: None)


def _flatten_dict(d):
    keys = sorted(d.keys())
    return [d[k] for k in keys], tuple(keys)


register_pytree_node(dict, _flatten_dict, lambda keys, c: dict(zip(keys, c)))


def _node_type(x):
    """The registered node spec for `x`, or None if `x` is a leaf."""
    spec = _registry.get(type(x))
    if spec is not None:
        return type(x), spec
    if _is_namedtuple(x):
        return type(x), _namedtuple_spec(type(x))
    return None


class PyTreeDef:
    """The structure of a pytree: node types and aux data, with leaves left out."""

    __slots__ = ("node_type", "aux", "children", "num_leaves", "_hash", "_uses", "_builder",
                 "_matchers")

    def __init__(self, node_type, aux, children: tuple):
        self.node_type = node_type     # None for a leaf
        self.aux = aux
        self.children = children
        self.num_leaves = 1 if node_type is None else sum(c.num_leaves for c in children)
        self._hash = None
        self._uses = 0
        self._builder = None           # compiled unflatten (`_compile_builder`); False: none
        self._matchers = None          # leaf type -> compiled flatten check (`matcher`)

    @property
    def num_nodes(self) -> int:
        return 1 + sum(c.num_nodes for c in self.children)

    def unflatten(self, leaves):
        leaves = list(leaves)
        if len(leaves) != self.num_leaves:
            raise ValueError(
                f"Tree structure {self} expects {self.num_leaves} leaves, got {len(leaves)}.")
        builder = self._builder
        if builder is None:
            # A structure rebuilt again (a jitted function's outputs, every call) is compiled.
            self._uses += 1
            if self._uses >= 2:
                builder = self._builder = _compile_builder(self) if _compilable(self) else False
        if builder:
            return builder(leaves)
        return self._build(iter(leaves))

    def matcher(self, leaf_type: type):
        """A compiled function of a tree: its leaves, in flattening order, if the tree has
        exactly this structure with a `leaf_type` object at every leaf, else None. None where
        this structure is not compiled (aux data other than None or string keys, or too many
        nodes). jit's dispatch flattens its arguments with the last call's matcher."""
        if self._matchers is None:
            self._matchers = {}
        if leaf_type not in self._matchers:
            self._matchers[leaf_type] = _compile_matcher(self, leaf_type) \
                if _compilable(self, plain_aux=True) else None
        return self._matchers[leaf_type]

    def _build(self, it):
        if self.node_type is None:
            return next(it)
        children = [c._build(it) for c in self.children]
        return _spec_of(self.node_type).unflatten(self.aux, children)

    def flatten_up_to(self, tree) -> list:
        """Flattens `tree` down to this structure; its subtrees at our leaves stay whole."""
        out = []
        self._flatten_up_to(tree, out)
        return out

    def _flatten_up_to(self, tree, out):
        if self.node_type is None:
            out.append(tree)
            return
        nt = _node_type(tree)
        if nt is None or nt[0] is not self.node_type:
            raise ValueError(f"Tree {tree!r} does not match structure {self}: "
                             f"expected a {self.node_type.__name__}.")
        children, aux = nt[1].flatten(tree)
        if aux != self.aux or len(children) != len(self.children):
            raise ValueError(f"Tree {tree!r} does not match structure {self}.")
        for c, sub in zip(children, self.children):
            sub._flatten_up_to(c, out)

    def __eq__(self, other):
        if self is other:
            return True
        return (isinstance(other, PyTreeDef) and self.node_type is other.node_type
                and self.aux == other.aux and self.children == other.children)

    def __hash__(self):
        if self._hash is None:
            self._hash = hash((self.node_type, _hashable(self.aux), self.children))
        return self._hash

    def __repr__(self):
        return f"PyTreeDef({self._repr()})"

    def _repr(self):
        if self.node_type is None:
            return "*"
        kids = [c._repr() for c in self.children]
        if self.node_type is tuple:
            return "(" + ", ".join(kids) + ("," if len(kids) == 1 else "") + ")"
        if self.node_type is list:
            return "[" + ", ".join(kids) + "]"
        if self.node_type is dict:
            return "{" + ", ".join(f"{k!r}: {v}" for k, v in zip(self.aux, kids)) + "}"
        if self.node_type is type(None):
            return "None"
        return f"CustomNode({self.node_type.__name__}[{self.aux!r}], [{', '.join(kids)}])"


def _hashable(aux):
    try:
        hash(aux)
        return aux
    except TypeError:
        return repr(aux)


@functools.lru_cache(maxsize=None)
def _namedtuple_spec(cls):
    return _NodeType(lambda t: (list(t), None), lambda _, c: cls(*c))


def _spec_of(node_type):
    spec = _registry.get(node_type)
    return spec if spec is not None else _namedtuple_spec(node_type)


# --- compiled flatten checks and unflattens ------------------------------------------------
#
# jit flattens its arguments and rebuilds its outputs on every call. Walking the structure
# node by node costs about half a microsecond a node; a function compiled for one structure
# (straight-line code: a type check and an item access a node) costs a fraction of that.

_COMPILE_MAX_NODES = 4096
_MISS = object()


def _plain_aux(aux) -> bool:
    """Aux data whose equality is sameness of value and type: None, or string keys (keys 1,
    1.0 and True are equal but are not one another)."""
    return aux is None or (type(aux) is tuple and all(type(k) is str for k in aux))


def _compilable(treedef, plain_aux=False) -> bool:
    """At most _COMPILE_MAX_NODES nodes; with `plain_aux`, all aux data `_plain_aux`."""
    stack, count = [treedef], 0
    while stack:
        td = stack.pop()
        count += 1
        if count > _COMPILE_MAX_NODES or (plain_aux and not _plain_aux(td.aux)):
            return False
        stack.extend(td.children)
    return True


class _Source:
    """A function's body being generated: its lines, and the objects it names."""

    def __init__(self, **names):
        self.lines: list = []
        self.namespace = dict(names)

    def const(self, obj) -> str:
        """A name for `obj` in the function's globals."""
        name = f"_c{len(self.namespace)}"
        self.namespace[name] = obj
        return name

    def compile(self, name, args):
        source = f"def {name}({args}):\n" + "".join(f"    {line}\n" for line in self.lines)
        exec(compile(source, f"<corejax.tree_util {name}>", "exec"), self.namespace)
        return self.namespace[name]


def _compile_builder(treedef):
    """unflatten as one function of the leaf list: each node one statement, children first."""
    src = _Source()
    lines, const = src.lines, src.const
    leaf = iter(range(treedef.num_leaves))

    def emit(td) -> str:
        nt = td.node_type
        if nt is None:
            return f"l[{next(leaf)}]"
        kids = [emit(c) for c in td.children]
        if nt is type(None):
            return "None"
        if nt is dict:
            expr = "{" + ", ".join(f"{const(k)}: {e}" for k, e in zip(td.aux, kids)) + "}"
        elif nt is tuple:
            expr = "(" + "".join(f"{e}, " for e in kids) + ")"
        elif nt is list:
            expr = "[" + ", ".join(kids) + "]"
        else:
            expr = f"{const(_spec_of(nt).unflatten)}({const(td.aux)}, [{', '.join(kids)}])"
        var = f"n{len(lines)}"
        lines.append(f"{var} = {expr}")
        return var

    lines.append(f"return {emit(treedef)}")
    return src.compile("unflatten", "l")


def _compile_matcher(treedef, leaf_type):
    """`PyTreeDef.matcher`: a type check, then item accesses, a node."""
    src = _Source(_MISS=_MISS, _leaf=leaf_type)
    lines, const = src.lines, src.const
    leaves: list = []

    def check(td, var):
        nt = td.node_type
        if nt is None:
            lines.append(f"if type({var}) is not _leaf: return None")
            leaves.append(var)
            return
        if nt is type(None):
            lines.append(f"if {var} is not None: return None")
            return
        n = len(td.children)
        if nt is dict:
            lines.append(f"if type({var}) is not dict or len({var}) != {n}: return None")
            kids = [f"{var}.get({const(k)}, _MISS)" for k in td.aux]
        elif nt is tuple or nt is list:
            lines.append(f"if type({var}) is not {nt.__name__} or len({var}) != {n}: "
                         "return None")
            kids = [f"{var}[{i}]" for i in range(n)]
        else:
            children = f"c{len(lines)}"
            lines.append(f"if type({var}) is not {const(nt)}: return None")
            lines.append(f"{children}, aux = {const(_spec_of(nt).flatten)}({var})")
            lines.append(f"if aux != {const(td.aux)} or len({children}) != {n}: return None")
            kids = [f"{children}[{i}]" for i in range(n)]
        for kid, child in zip(kids, td.children):
            v = f"v{len(lines)}"
            lines.append(f"{v} = {kid}")
            check(child, v)

    check(treedef, "tree")
    lines.append(f"return [{', '.join(leaves)}]")
    return src.compile("matcher", "tree")


_LEAF = PyTreeDef(None, None, ())


def tree_flatten(tree, is_leaf: Callable[[Any], bool] | None = None):
    """Returns `(leaves, treedef)`. `None` is an empty node, not a leaf."""
    leaves: list = []
    treedef = _flatten(tree, leaves, is_leaf)
    return leaves, treedef


def _flatten(tree, leaves, is_leaf):
    if is_leaf is not None and is_leaf(tree):
        leaves.append(tree)
        return _LEAF
    nt = _node_type(tree)
    if nt is None:
        leaves.append(tree)
        return _LEAF
    node_type, spec = nt
    children, aux = spec.flatten(tree)
    return _interned(node_type, aux, tuple([_flatten(c, leaves, is_leaf) for c in children]))


# Equal structures flatten to the same PyTreeDef object (children first, so a key holds
# interned children): jit's per-call signature lookup then hashes and compares in O(1) per
# node instead of rebuilding and rehashing the whole structure on every call.
_INTERNED: dict = {}
_MAX_INTERNED = 1 << 14


def _interned(node_type, aux, children):
    if not _plain_aux(aux):         # (other aux data may be equal without being the same)
        return PyTreeDef(node_type, aux, children)
    key = (node_type, aux, children)
    found = _INTERNED.get(key)
    if found is None:
        if len(_INTERNED) >= _MAX_INTERNED:
            _INTERNED.clear()
        found = _INTERNED[key] = PyTreeDef(node_type, aux, children)
    return found


def tree_unflatten(treedef: PyTreeDef, leaves):
    return treedef.unflatten(leaves)


def tree_leaves(tree, is_leaf=None) -> list:
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree, is_leaf=None) -> PyTreeDef:
    return tree_flatten(tree, is_leaf)[1]


def treedef_is_leaf(treedef: PyTreeDef) -> bool:
    return treedef.node_type is None


def tree_map(f: Callable, tree, *rest, is_leaf=None):
    """Maps `f` over the leaves of `tree`; `rest` trees must have `tree`'s structure
    (or be trees with subtrees where `tree` has leaves)."""
    leaves, treedef = tree_flatten(tree, is_leaf)
    others = [treedef.flatten_up_to(r) for r in rest]
    return treedef.unflatten(f(*xs) for xs in zip(leaves, *others))


def tree_reduce(function, tree, initializer=None, is_leaf=None):
    leaves = tree_leaves(tree, is_leaf)
    if initializer is None:
        return functools.reduce(function, leaves)
    return functools.reduce(function, leaves, initializer)


def tree_all(tree) -> bool:
    return all(tree_leaves(tree))


def tree_transpose(outer_treedef: PyTreeDef, inner_treedef: PyTreeDef, pytree_to_transpose):
    flat = outer_treedef.flatten_up_to(pytree_to_transpose)
    inner = [inner_treedef.flatten_up_to(x) for x in flat]
    columns = [outer_treedef.unflatten(col) for col in zip(*inner)] if inner else []
    if not inner:
        columns = [outer_treedef.unflatten([]) for _ in range(inner_treedef.num_leaves)]
    return inner_treedef.unflatten(columns)


# --- key paths -------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class DictKey:
    key: Any
    def __str__(self):
        return f"[{self.key!r}]"


@dataclasses.dataclass(frozen=True)
class SequenceKey:
    idx: int
    def __str__(self):
        return f"[{self.idx}]"


@dataclasses.dataclass(frozen=True)
class GetAttrKey:
    name: str
    def __str__(self):
        return f".{self.name}"


@dataclasses.dataclass(frozen=True)
class FlattenedIndexKey:
    key: int
    def __str__(self):
        return f"[<flat index {self.key}>]"


def _child_keys(tree, nchildren):
    if isinstance(tree, dict):
        return [DictKey(k) for k in sorted(tree.keys())]
    if _is_namedtuple(tree):
        return [GetAttrKey(f) for f in type(tree)._fields]
    if isinstance(tree, (list, tuple)):
        return [SequenceKey(i) for i in range(nchildren)]
    return [FlattenedIndexKey(i) for i in range(nchildren)]


def tree_flatten_with_path(tree, is_leaf=None):
    """Returns `([(key_path, leaf), ...], treedef)`."""
    out = []

    def walk(node, path):
        if is_leaf is not None and is_leaf(node):
            out.append((path, node))
            return
        nt = _node_type(node)
        if nt is None:
            out.append((path, node))
            return
        children, _ = nt[1].flatten(node)
        for k, c in zip(_child_keys(node, len(children)), children):
            walk(c, path + (k,))

    walk(tree, ())
    return out, tree_structure(tree, is_leaf)


def keystr(path) -> str:
    return "".join(str(k) for k in path)


class Partial(functools.partial):
    """A `functools.partial` that is a pytree: its bound arguments are leaves, the function
    is static, so it can be passed through jit/vmap/grad as an argument."""

    def __new__(cls, func, *args, **kwargs):
        if isinstance(func, functools.partial):
            args = func.args + args
            kwargs = {**func.keywords, **kwargs}
            func = func.func
        return super().__new__(cls, func, *args, **kwargs)


register_pytree_node(
    Partial,
    lambda p: ((p.args, p.keywords), p.func),
    lambda func, c: Partial(func, *c[0], **c[1]),
)
