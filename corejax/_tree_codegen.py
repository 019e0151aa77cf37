"""Compiled flatten checks and unflattens for one pytree structure.

jit flattens its arguments and rebuilds its outputs on every call. Walking the structure
node by node costs about half a microsecond a node; a function compiled for one structure
(straight-line code: a type check and an item access a node) costs a fraction of that.
`PyTreeDef.unflatten` and `PyTreeDef.matcher` (corejax.tree_util) build these on demand.
"""
from __future__ import annotations

COMPILE_MAX_NODES = 4096
_MISS = object()


def plain_aux(aux) -> bool:
    """Aux data whose equality is sameness of value and type: None, or string keys (keys 1,
    1.0 and True are equal but are not one another)."""
    return aux is None or (type(aux) is tuple and all(type(k) is str for k in aux))


def compilable(treedef, plain=False) -> bool:
    """At most COMPILE_MAX_NODES nodes; with `plain`, all aux data `plain_aux`."""
    stack, count = [treedef], 0
    while stack:
        td = stack.pop()
        count += 1
        if count > COMPILE_MAX_NODES or (plain and not plain_aux(td.aux)):
            return False
        stack.extend(td._children)
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


def compile_builder(treedef, spec_of):
    """unflatten as one function of the leaf list: each node one statement, children first.
    `spec_of(node_type)` is the registered node's flatten / unflatten pair."""
    src = _Source()
    lines, const = src.lines, src.const
    leaf = iter(range(treedef.num_leaves))

    def emit(td) -> str:
        nt = td.node_type
        if nt is None:
            return f"l[{next(leaf)}]"
        kids = [emit(c) for c in td._children]
        if nt is type(None):
            return "None"
        if nt is dict:
            expr = "{" + ", ".join(f"{const(k)}: {e}" for k, e in zip(td.aux, kids)) + "}"
        elif nt is tuple:
            expr = "(" + "".join(f"{e}, " for e in kids) + ")"
        elif nt is list:
            expr = "[" + ", ".join(kids) + "]"
        else:
            expr = (f"{const(spec_of(nt).unflatten)}({const(td.aux)}, "
                    f"({''.join(f'{e}, ' for e in kids)}))")
        var = f"n{len(lines)}"
        lines.append(f"{var} = {expr}")
        return var

    lines.append(f"return {emit(treedef)}")
    return src.compile("unflatten", "l")


def compile_matcher(treedef, leaf_type, spec_of):
    """`PyTreeDef.matcher`: a type check, then item accesses, a node. `leaf_type`: a type, or
    a tuple of types any of which a leaf may be (exactly: not a subclass)."""
    src = _Source(_MISS=_MISS, _leaf=leaf_type)
    leaf_test = "not in" if type(leaf_type) is tuple else "is not"
    lines, const = src.lines, src.const
    leaves: list = []

    def check(td, var):
        nt = td.node_type
        if nt is None:
            lines.append(f"if type({var}) {leaf_test} _leaf: return None")
            leaves.append(var)
            return
        if nt is type(None):
            lines.append(f"if {var} is not None: return None")
            return
        n = len(td._children)
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
            lines.append(f"{children}, aux = {const(spec_of(nt).flatten)}({var})")
            lines.append(f"{children} = list({children})")
            lines.append(f"if aux != {const(td.aux)} or len({children}) != {n}: return None")
            kids = [f"{children}[{i}]" for i in range(n)]
        for kid, child in zip(kids, td._children):
            v = f"v{len(lines)}"
            lines.append(f"{v} = {kid}")
            check(child, v)

    check(treedef, "tree")
    lines.append(f"return [{', '.join(leaves)}]")
    return src.compile("matcher", "tree")
