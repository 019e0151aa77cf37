"""tabulate: a text table of the module calls made during init, with parameter counts."""
from __future__ import annotations

import math

import numpy as np

from corejax import tree_util
from nn.module import DenyList, Module, _Store, _normalize_rngs

__all__ = ["tabulate", "param_count"]


def param_count(tree) -> int:
    """The number of scalars in a tree of arrays (e.g. variables['params'])."""
    return sum(math.prod(np.shape(leaf)) for leaf in tree_util.tree_leaves(tree))


def _describe(value) -> str:
    leaves = tree_util.tree_leaves(value)
    if not leaves:
        return "-"
    parts = []
    for leaf in leaves:
        shape = ",".join(map(str, np.shape(leaf)))
        dt = getattr(leaf, "dtype", None)
        parts.append(f"{np.dtype(dt).name if dt is not None else type(leaf).__name__}[{shape}]")
    return " ".join(parts)


def _own_variables(variables: dict, path: tuple) -> dict:
    """{collection: {name: leaf}} for the variables of the module at `path` (no children)."""
    out = {}
    for col, tree in variables.items():
        node = tree
        for part in path:
            node = node.get(part) if isinstance(node, dict) else None
            if node is None:
                break
        if isinstance(node, dict):
            own = {k: v for k, v in node.items() if not isinstance(v, dict)}
            if own:
                out[col] = own
    return out


def tabulate(module: Module, rngs, depth=None, show_repeated=False,
             mutable=DenyList("intermediates"), console_kwargs=None, table_kwargs=None,
             column_kwargs=None, compute_flops=False, compute_vjp_flops=False, method=None,
             **kwargs):
    """`tabulate(model, rngs)(*args)` returns the table as a string: one row per module call
    made during init (to `depth` levels below the root; a module called again is listed once
    unless `show_repeated`). The console/table/column kwargs of Flax's rich tables are
    accepted and have no effect on this plain-text table."""
    del console_kwargs, table_kwargs, column_kwargs
    if compute_flops or compute_vjp_flops:
        raise NotImplementedError("tabulate(compute_flops=True): corejax has no FLOP counter "
                                  "for compiled programs; call tabulate without it.")
    if kwargs:
        raise TypeError(f"tabulate() got unexpected keyword arguments {sorted(kwargs)}")

    def run(*args, **kwargs):
        store = _Store({}, _normalize_rngs(rngs, "tabulate"), mutable, initializing=True)
        store.call_log = []
        module._run(store, method, args, kwargs)
        rows, seen = [], set()
        for path, mod, meth, call_args, out in store.call_log:
            if depth is not None and len(path) > depth:
                continue
            if path in seen and not show_repeated:
                continue
            own = _own_variables(store.variables, path) if path not in seen else {}
            seen.add(path)
            cols = "; ".join(
                f"{col}: " + " ".join(f"{k}={_describe(leaf)}" for k, leaf in sorted(v.items()))
                + f" ({param_count(v):,})" for col, v in own.items())
            name = type(mod).__name__ + ("" if meth == "__call__" else f".{meth}")
            rows.append(("/".join(path) or "(root)", name, _describe(call_args),
                         _describe(out), cols or "-"))
        header = ("path", "module", "inputs", "outputs", "variables")
        widths = [max(len(r[i]) for r in rows + [header]) for i in range(5)]
        line = "+" + "+".join("-" * (w + 2) for w in widths) + "+"
        fmt = lambda r: "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |"
        totals = ", ".join(f"{col}: {param_count(tree):,}"
                           for col, tree in store.variables.items())
        return "\n".join([line, fmt(header), line, *map(fmt, rows), line,
                          f"Total: {totals or 'no variables'}"])

    return run
