"""Lifted transformations: corejax transformations applied to module methods.

A lifted transformation turns a module call into a pure function of arrays: the variables
under the module's path (per collection) and the PRNG keys go in as arguments, the output and
the updated variables come out. The corejax transformation (jit, vmap, lax.scan, checkpoint,
lax.cond, ...) is applied to that function, and the updated variables of the collections that
may change are written back into the caller's store. Inside, a copy of the module (of its
original class) is bound to a fresh store rooted at the same path, so variable names and PRNG
derivations are those of the untransformed module.

Class form:    nn.scan(nn.LSTMCell, variable_broadcast='params', ...)(features)
Function form: nn.scan(lambda cell, c, x: cell(c, x), ...)(cell_instance, c, xs)
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Callable

import corejax
import warnings

from corejax import lax, random, tree_util
from nn import meta
from nn.module import DenyList, Module, Scope, _Store

__all__ = ["jit", "vmap", "scan", "remat", "checkpoint", "remat_scan", "map_variables",
           "broadcast", "fold_rngs", "add_metadata_axis",
           "while_loop", "cond", "switch", "grad", "value_and_grad", "vjp", "jvp",
           "custom_vjp"]


class _Broadcast:
    def __repr__(self):
        return "broadcast"


broadcast = _Broadcast()  # an in_axes entry: the argument is passed to every step unsplit


# --- collection filters and the variable plumbing --------------------------------------------

def _filter(spec) -> Callable[[str], bool]:
    """A collection filter (True, False, a name, a list of names, DenyList) as a predicate."""
    if spec is True:
        return lambda col: True
    if spec is False or spec is None:
        return lambda col: False
    if isinstance(spec, DenyList):
        return lambda col: col not in spec.deny
    if isinstance(spec, str):
        return lambda col: col == spec
    names = frozenset(spec)
    return lambda col: col in names


def _axis_of(variable_axes, col):
    for spec, axis in dict(variable_axes).items():
        if _filter(spec)(col):
            return axis
    return None


def _copy_tree(node):
    return {k: _copy_tree(v) for k, v in node.items()} if isinstance(node, dict) else node


def _read(scope: Scope, pred=lambda col: True) -> dict:
    """{collection: the variables under scope's path} for the collections `pred` accepts."""
    out = {}
    for col in list(scope.store.variables):
        if not pred(col):
            continue
        node = scope._node(col, False)
        if node:
            out[col] = _copy_tree(node)
    return out


def _write(scope: Scope, col: str, tree: dict) -> None:
    store = scope.store
    if not scope.path:
        store.variables[col] = tree
        return
    node = store.variables.setdefault(col, {})
    for part in scope.path[:-1]:
        node = node.setdefault(part, {})
    node[scope.path[-1]] = tree


def _nest(path, tree):
    for part in reversed(path):
        tree = {part: tree}
    return tree


def _unnest(path, tree):
    for part in path:
        if not isinstance(tree, dict) or part not in tree:
            return None
        tree = tree[part]
    return tree


def _original_class(cls):
    return getattr(cls, "_lift_original", cls)


def _plain_copy(module: Module) -> Module:
    """An unbound copy of `module` with the class it had before any lifting."""
    cls = _original_class(type(module))
    fields = {f.name: _unbind_children(getattr(module, f.name), module)
              for f in dataclasses.fields(module) if f.init and f.name not in ("parent", "name")}
    return cls(**fields, parent=None, name=module.name)


def _unbind_children(value, owner):
    """Submodules `owner` adopted from its fields, as unbound clones (so the copy adopts them
    in the lifted store); modules owned elsewhere stay as they are."""
    if isinstance(value, Module):
        return value.clone(parent=None) if value.parent is owner else value
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return type(value)(_unbind_children(v, owner) for v in value)
    if isinstance(value, dict):
        return {k: _unbind_children(v, owner) for k, v in value.items()}
    return value


class _Frame:
    """What a lifted call needs from the caller's side: the module, its scope and store."""

    def __init__(self, module: Module, what: str):
        scope = module.scope
        if scope is None:
            raise TypeError(f"nn.{what}: the module {type(module).__name__} is not bound; call "
                            "the transformed module from init/apply or inside another module.")
        self.module, self.scope, self.store, self.what = module, scope, scope.store, what
        self.last_counts = None

    def is_mutable(self, col: str) -> bool:
        return self.store.is_mutable(col)

    def rngs(self, pred=lambda name: True) -> dict:
        return {k: v for k, v in self.store.rngs.items() if pred(k)}

    def fold_rngs(self, pred):
        """The keys and PRNG counters of a call that folds the streams `pred` accepts into the
        module's scope (Flax's nn.jit and nn.fold_rngs): each stream's key is drawn at the
        scope, and inside, keys are derived from it with paths relative to the scope, the
        counters of the scope (and of the scopes below it) continuing from the caller's.
        Hand the counters to `run` and then to `restore_counts`."""
        who = f'"{self.module.path}"'
        keys = {k: self.scope.make_rng(k, who) for k in self.rngs(pred)}
        path, n = self.scope.path, len(self.scope.path)
        counts = {((), k): self.store.rng_counts.get((path, k), 0) for k in keys}
        counts.update({(p[n:], k): c for (p, k), c in self.store.rng_counts.items()
                       if k in keys and len(p) > n and p[:n] == path})
        return keys, counts

    def restore_counts(self, counts: dict) -> None:
        """The caller's PRNG counters advanced by the draws of a folded call."""
        for (p, k), c in counts.items():
            self.store.rng_counts[(self.scope.path + p, k)] = c

    def counts(self) -> dict:
        """A copy of the caller's PRNG counters."""
        return dict(self.store.rng_counts)

    def advance(self, counts=None) -> None:
        """The caller's PRNG counters continue from `counts` (by default those a body run by
        `run` ended with). As Flax, whose lifted scopes share the caller's counters: every
        trace of a lifted body draws after the draws of the traces before it."""
        counts = self.last_counts if counts is None else counts
        if counts is not None and counts is not self.store.rng_counts:
            mine = self.store.rng_counts
            for k, c in counts.items():
                if c > mine.get(k, 0):
                    mine[k] = c

    def split_key(self, name: str, n: int):
        """n keys of stream `name` for the steps/lanes of a lifted call: as Flax, the stream's
        root key is split and each step keeps deriving keys from its own root with the scope
        path and counter folded in."""
        return random.split(self.store.rngs[name], n)

    def run(self, fn, variables: dict, rngs: dict, mutable, args, kwargs, initializing=None,
            relative_rngs=False, rng_counts=None):
        """fn(copy of module bound to a store holding `variables`, *args) -> (out, vars).
        With relative_rngs the copy is the root of its store, so PRNG keys are derived from the
        path below it (as Flax's nn.jit, which drops the scope's key suffix).
        PRNG counters: `rng_counts` (a dict, shared), or by default a copy of the caller's
        counters taken now, kept as `last_counts` (see `advance`): a body the corejax
        transformation runs more than once starts from the same counters each time, as the
        single trace Flax makes of it does."""
        path = () if relative_rngs else self.scope.path
        store = _Store({c: _nest(path, _copy_tree(t)) for c, t in variables.items()},
                       dict(rngs), True, self.store.initializing
                       if initializing is None else initializing)
        store.is_mutable = mutable
        store.root_name = self.store.root_name
        if rng_counts is None:
            rng_counts = dict(self.store.rng_counts)
        store.rng_counts = rng_counts
        self.last_counts = rng_counts
        inner = _plain_copy(self.module)
        inner._bind(Scope(store, path))
        out = fn(inner, *args, **kwargs)
        new = {}
        for col, tree in store.variables.items():
            sub = _unnest(path, tree)
            if sub:
                new[col] = sub
        return out, new

    def write_back(self, variables: dict, pred=lambda col: True) -> None:
        for col, tree in variables.items():
            if pred(col) and self.is_mutable(col):
                _write(self.scope, col, tree)


# --- class form and function form ------------------------------------------------------------

def _lift(target, transform_name: str, make_call, methods=None):
    """Class form: a subclass whose methods run through `make_call(fn)`; function form: a
    function (module, *args) -> make_call(fn)(module, *args)."""
    if isinstance(target, type) and issubclass(target, Module):
        names = ["__call__"] if methods is None else (
            [methods] if isinstance(methods, str) else list(methods))
        namespace = {"_lift_original": _original_class(target), "__module__": target.__module__}
        for name in names:
            fun = getattr(target, name)
            raw = getattr(fun, "__wrapped__", fun)
            lifted = make_call(lambda m, *a, _raw=raw, **k: _run_method(m, _raw, a, k))

            def method(self, *args, _lifted=lifted, **kwargs):
                return _lifted(self, *args, **kwargs)

            method.method_handler_wrapped = True
            functools.update_wrapper(method, raw)
            method.method_handler_wrapped = True
            namespace[name] = method
        name = transform_name.capitalize() + target.__name__
        return type(name, (target,), namespace)
    if callable(target):
        lifted = make_call(lambda m, *a, **k: target(m, *a, **k))

        @functools.wraps(target)
        def function(module, *args, **kwargs):
            if not isinstance(module, Module):
                raise TypeError(f"nn.{transform_name}: the transformed function's first "
                                "argument must be a Module, got "
                                f"{type(module).__name__}.")
            return lifted(module, *args, **kwargs)

        return function
    raise TypeError(f"nn.{transform_name}: target must be a Module class or a function whose "
                    f"first argument is a module, got {target!r}.")


def _run_method(module: Module, raw, args, kwargs):
    """Runs the original (unlifted) method `raw` on the plain module copy, as a module call."""
    return module._call_method(raw, getattr(raw, "compact", False), args, kwargs)


# --- jit ----------------------------------------------------------------------------------

def _mutable_signature(frame: _Frame, extra=()) -> tuple:
    names = set(frame.store.variables) | {"params", "batch_stats", "intermediates", "cache",
                                          "losses", "spectral"} | set(extra)
    return tuple(sorted((c, frame.is_mutable(c)) for c in names))


def jit(target, variables=True, rngs=True, static_argnums=(), static_argnames=(),
        donate_argnums=(), device=None, backend=None, methods=None):
    """Compiles the module method (variables and PRNG keys become arguments of one corejax.jit
    program)."""
    vpred, rpred = _filter(variables), _filter(rngs)
    static_argnums = ((static_argnums,) if isinstance(static_argnums, int)
                      else tuple(static_argnums))
    cache: dict = {}

    def make_call(fn):
        def call(module, *args, **kwargs):
            frame = _Frame(module, "jit")
            vars_in = _read(frame.scope, vpred)
            keys, counts = frame.fold_rngs(rpred)
            statics = {i: args[i] for i in static_argnums if i < len(args)}
            dyn = tuple(a for i, a in enumerate(args) if i not in statics)
            mutable = frame.store.is_mutable
            initializing = frame.store.initializing

            def pure(vars_, keys_, dyn_args, kwargs_):
                it = iter(dyn_args)
                full = [statics[i] if i in statics else next(it)
                        for i in range(len(statics) + len(dyn_args))]
                # The counters after the call are fixed at trace time (the cache key holds
                # those before it), so the compiled entry keeps them for later hits.
                counts_out = dict(counts)
                out = frame.run(fn, vars_, keys_, mutable, full, kwargs_,
                                initializing=initializing, relative_rngs=True,
                                rng_counts=counts_out)
                holder["counts"] = counts_out
                return out

            ckey = None
            try:
                fields = tuple((f.name, getattr(module, f.name))
                               for f in dataclasses.fields(module) if f.name != "parent")
                ckey = (fn, type(module), fields, frame.scope.path, initializing,
                        _mutable_signature(frame), tuple(sorted(statics.items())),
                        tuple(sorted(counts.items())))
                hash(ckey)
            except TypeError:
                ckey = None
            compiled = cache.get(ckey) if ckey is not None else None
            if compiled is None:
                holder: dict = {}

                def traced(vars_, keys_, dyn_args, kwargs_):
                    return holder["pure"](vars_, keys_, dyn_args, kwargs_)

                compiled = (corejax.jit(traced, backend=backend, device=device), holder)
                if ckey is not None:
                    cache[ckey] = compiled
            jitted, holder = compiled
            holder["pure"] = pure
            out, new = jitted(vars_in, keys, dyn, kwargs)
            frame.restore_counts(holder["counts"])
            frame.write_back(new)
            return out
        return call

    return _lift(target, "jit", make_call, methods)


# --- remat / checkpoint -------------------------------------------------------------------

def checkpoint(target, variables=True, rngs=True, concrete=False, prevent_cse=True,
               static_argnums=(), policy=None, methods=None):
    """Rematerialization: the method's intermediates are recomputed on the backward pass
    (corejax.checkpoint with `policy` choosing what is saved)."""
    if concrete:
        raise NotImplementedError("nn.checkpoint(concrete=True) is deprecated in Flax and not "
                                  "supported; use static_argnums.")
    vpred, rpred = _filter(variables), _filter(rngs)
    static_argnums = ((static_argnums,) if isinstance(static_argnums, int)
                      else tuple(static_argnums))

    def make_call(fn):
        def call(module, *args, **kwargs):
            frame = _Frame(module, "remat")
            vars_in = _read(frame.scope, vpred)
            keys = frame.rngs(rpred)
            mutable = frame.store.is_mutable
            # Flax counts static_argnums with the module as argument 0.
            statics = {i - 1: args[i - 1] for i in static_argnums if 0 < i <= len(args)}
            dyn = tuple(a for i, a in enumerate(args) if i not in statics)

            def pure(vars_, keys_, dyn_args):
                it = iter(dyn_args)
                full = [statics[i] if i in statics else next(it)
                        for i in range(len(statics) + len(dyn_args))]
                return frame.run(fn, vars_, keys_, mutable, full, kwargs)

            out, new = corejax.checkpoint(pure, prevent_cse=prevent_cse, policy=policy)(
                vars_in, keys, dyn)
            frame.advance()
            frame.write_back(new)
            return out
        return call

    return _lift(target, "checkpoint", make_call, methods)


remat = checkpoint


# --- vmap -----------------------------------------------------------------------------------

def _split_pred(split_rngs) -> Callable[[str], bool]:
    preds = [_filter(spec) for spec, on in dict(split_rngs).items() if on]
    return lambda name: any(p(name) for p in preds)


def _leading_size(args, in_axes, what):
    sizes = set()
    axes = in_axes if isinstance(in_axes, (tuple, list)) else (in_axes,) * len(args)
    for a, ax in zip(args, axes):
        if ax is None or ax is broadcast:
            continue
        for leaf in tree_util.tree_leaves(a):
            sizes.add(leaf.shape[ax])
    if len(sizes) > 1:
        raise ValueError(f"nn.{what}: the mapped axes of the arguments have different sizes "
                         f"{sorted(sizes)}.")
    return sizes.pop() if sizes else None


def vmap(target, variable_axes={}, split_rngs={}, in_axes=0, out_axes=0, axis_size=None,
         axis_name=None, spmd_axis_name=None, metadata_params={}, methods=None):
    """Vectorizes the method: collections in `variable_axes` get a mapped axis (one set of
    variables per lane, e.g. an ensemble; boxed variables get the axis named
    metadata_params[nn.PARTITION_NAME] in their metadata); the others are shared. Streams in
    `split_rngs` get a different key per lane. As Flax's, keyword arguments of the method are
    dropped with a RuntimeWarning: pass mapped or broadcast values positionally."""
    split = _split_pred(split_rngs)

    def make_call(fn):
        def call(module, *args, **kwargs):
            frame = _Frame(module, "vmap")
            if kwargs:
                warnings.warn(f'kwargs are not supported in vmap, so "{", ".join(sorted(kwargs))}'
                              '" is(are) ignored', RuntimeWarning, stacklevel=3)
            n = axis_size if axis_size is not None else _leading_size(args, in_axes, "vmap")
            if n is None:
                raise ValueError("nn.vmap: no argument is mapped; give axis_size.")
            vars_in = _read(frame.scope)
            mapped = {c: meta.remove_axis(t, _axis_of(variable_axes, c), metadata_params)
                      for c, t in vars_in.items() if _axis_of(variable_axes, c) is not None}
            shared = {c: t for c, t in vars_in.items() if c not in mapped}
            split_keys = {k: frame.split_key(k, n) for k in frame.rngs(split)}
            shared_keys = frame.rngs(lambda k: not split(k))
            mutable = frame.store.is_mutable

            def lane(mapped_, shared_, skeys, bkeys, *a):
                keys = dict(bkeys)
                keys.update(skeys)
                variables = dict(shared_)
                variables.update(mapped_)
                out, new = frame.run(fn, variables, keys, mutable, a, {})
                new_mapped = {c: t for c, t in new.items()
                              if _axis_of(variable_axes, c) is not None}
                new_shared = {c: t for c, t in new.items() if c not in new_mapped and
                              mutable(c)}
                return out, new_mapped, new_shared

            in_ax = tuple(in_axes) if isinstance(in_axes, (tuple, list)) else (
                (in_axes,) * len(args))
            in_ax = tuple(None if a is broadcast else a for a in in_ax)
            # Every updated variable comes out on axis 0; shared ones are the same in every
            # lane, so lane 0 is kept.
            out, new_mapped, new_shared = corejax.vmap(
                lane, in_axes=({c: _axis_of(variable_axes, c) for c in mapped}, None, 0, None)
                + in_ax, out_axes=(out_axes, 0, 0), axis_size=n, axis_name=axis_name)(
                mapped, shared, split_keys, shared_keys, *args)
            frame.advance()
            new_mapped = {c: meta.add_axis(_move_from_front(t, _axis_of(variable_axes, c)),
                                           _axis_of(variable_axes, c), metadata_params)
                          for c, t in new_mapped.items()}
            new_shared = {c: tree_util.tree_map(lambda a: a[0], t)
                          for c, t in new_shared.items()}
            frame.write_back(new_mapped)
            frame.write_back(new_shared)
            return out
        return call

    return _lift(target, "vmap", make_call, methods)


# --- scan -----------------------------------------------------------------------------------

def _move_to_front(tree, axis):
    return tree_util.tree_map(lambda a: corejax.numpy.moveaxis(a, axis, 0), tree)


def _move_from_front(tree, axis):
    return tree_util.tree_map(lambda a: corejax.numpy.moveaxis(a, 0, axis), tree)


def scan(target, variable_axes={}, variable_broadcast=False, variable_carry=False,
         split_rngs={}, in_axes=0, out_axes=0, length=None, reverse=False, unroll=1,
         data_transform=None, metadata_params={}, methods=None, _split_transpose=False,
         check_constancy_invariants=True):
    """A loop over the leading (or `in_axes`) axis of the arguments as one lax.scan: the method
    is `f(module, carry, *xs) -> (carry, ys)`. Collections in `variable_broadcast` are shared
    by every step (created before the loop during init), `variable_carry` ones are threaded
    through the steps, `variable_axes` ones are stacked (one set per step)."""
    bcast, carried, split = _filter(variable_broadcast), _filter(variable_carry), \
        _split_pred(split_rngs)
    if data_transform is not None:
        raise NotImplementedError("nn.scan: data_transform is not supported.")

    def route(col):
        # As Flax, the first filter that takes the collection wins: variable_broadcast,
        # variable_carry, then variable_axes (a collection none takes is shared).
        if bcast(col):
            return "broadcast"
        if carried(col):
            return "carry"
        if _axis_of(variable_axes, col) is not None:
            return "axes"
        return "broadcast"

    def make_call(fn):
        def call(module, carry, *args, **kwargs):
            frame = _Frame(module, "scan")
            mutable = frame.store.is_mutable
            axes = tuple(in_axes) if isinstance(in_axes, (tuple, list)) else (
                (in_axes,) * len(args))
            if len(axes) != len(args):
                raise ValueError(f"nn.scan: in_axes {in_axes} has {len(axes)} entries for "
                                 f"{len(args)} scanned arguments.")
            scanned = [i for i, ax in enumerate(axes) if ax is not broadcast]
            xs = tuple(_move_to_front(args[i], axes[i]) for i in scanned)
            n = length
            for leaf in tree_util.tree_leaves(xs):
                if n is not None and leaf.shape[0] != n:
                    raise ValueError(f"nn.scan: scanned arguments have length {leaf.shape[0]}"
                                     f", expected {n} (length or another argument).")
                n = leaf.shape[0]
            vars_in = _read(frame.scope)
            axis_vars = {c: meta.remove_axis(_move_to_front(t, _axis_of(variable_axes, c)),
                                             _axis_of(variable_axes, c), metadata_params)
                         for c, t in vars_in.items() if route(c) == "axes"}
            for leaf in tree_util.tree_leaves(axis_vars):
                n = leaf.shape[0] if n is None else n
            if n is None:
                raise ValueError("nn.scan: nothing is scanned; give length.")
            split_keys = {k: frame.split_key(k, n) for k in frame.rngs(split)}
            shared_keys = frame.rngs(lambda k: not split(k))

            def full_args(x_parts):
                it = iter(x_parts)
                return [args[i] if axes[i] is broadcast else next(it)
                        for i in range(len(args))]

            fixed = {c: t for c, t in vars_in.items() if route(c) == "broadcast"}
            carry_vars = {c: t for c, t in vars_in.items() if route(c) == "carry"}
            if frame.store.initializing or (frame.rngs() and n):
                # Flax traces the body once before the loop (the variables it creates in the
                # broadcast collections are the loop's) and once as the loop's body, sharing
                # the PRNG counters: here a first step is run outside the loop, and the loop
                # body continues from the counters it ended with.
                step0 = tree_util.tree_map(lambda a: a[n - 1 if reverse else 0], xs)
                keys0 = dict(shared_keys)
                keys0.update({k: v[0] for k, v in split_keys.items()})
                vars0 = dict(fixed)
                vars0.update(carry_vars)
                vars0.update({c: tree_util.tree_map(lambda a: a[0], t)
                              for c, t in axis_vars.items()})
                _, created = frame.run(fn, vars0, keys0, mutable, [carry] + full_args(step0),
                                       kwargs)
                frame.advance()
                if frame.store.initializing:
                    fixed.update({c: t for c, t in created.items()
                                  if route(c) == "broadcast"})
                    carry_vars.update({c: t for c, t in created.items()
                                       if route(c) == "carry"})

            inner_mutable = lambda col: mutable(col) and route(col) != "broadcast"

            def body(state, step):
                c, cvars = state
                x_parts, avars, skeys = step
                keys = dict(shared_keys)
                keys.update(skeys)
                variables = dict(fixed)
                variables.update(cvars)
                variables.update(avars)
                (c, y), new = frame.run(fn, variables, keys, inner_mutable,
                                        [c] + full_args(x_parts), kwargs)
                new_c = {col: new.get(col, t) for col, t in cvars.items()}
                new_axes = {col: t for col, t in new.items() if route(col) == "axes"}
                return (c, new_c), (y, new_axes)

            (carry, carry_vars), (ys, new_axis_vars) = lax.scan(
                body, (carry, carry_vars), (xs, axis_vars, split_keys), length=n,
                reverse=reverse, unroll=unroll)
            frame.advance()
            ys = _move_from_front(ys, out_axes) if not isinstance(out_axes, (tuple, list)) \
                else tuple(_move_from_front(y, ax) for y, ax in zip(ys, out_axes))
            frame.write_back(fixed, lambda c: frame.store.initializing)
            frame.write_back(carry_vars)
            frame.write_back({c: meta.add_axis(_move_from_front(t, _axis_of(variable_axes, c)),
                                               _axis_of(variable_axes, c), metadata_params)
                              for c, t in new_axis_vars.items()})
            return carry, ys
        return call

    return _lift(target, "scan", make_call, methods)


def remat_scan(target, lengths=(), policy=None, variable_broadcast=False, variable_carry=False,
               variable_axes={True: 0}, split_rngs={True: True}):
    """`target` (a method carry -> carry) repeated prod(lengths) times as nested scans, every
    level but the innermost rematerialized; variables get one stacked axis per level."""
    lengths = tuple(lengths or ())
    if not lengths:
        raise ValueError("nn.remat_scan: lengths must name at least one loop length, e.g. "
                         "lengths=(4, 4).")

    def make_call(fn):
        step = fn
        for level, n in enumerate(reversed(lengths)):
            body = (lambda mdl, c, _inner=step: (_inner(mdl, c), ()))
            looped = scan(body, variable_axes=variable_axes,
                          variable_broadcast=variable_broadcast, variable_carry=variable_carry,
                          split_rngs=split_rngs, length=n)
            step = (lambda mdl, c, _looped=looped: _looped(mdl, c)[0])
            if level < len(lengths) - 1:
                step = checkpoint(step, policy=policy, prevent_cse=False)
        return step

    return _lift(target, "remat_scan", make_call)


# --- fold_rngs / add_metadata_axis -------------------------------------------------------

def fold_rngs(target, variables=True, rngs=True):
    """The method runs with the PRNG streams `rngs` folded into the module's scope, as inside
    nn.jit (without compiling): each stream's key is drawn at the scope and the module derives
    its keys from it, relative to its own path. Only the collections `variables` are seen."""
    vpred, rpred = _filter(variables), _filter(rngs)

    def make_call(fn):
        def call(module, *args, **kwargs):
            frame = _Frame(module, "fold_rngs")
            vars_in = _read(frame.scope, vpred)
            keys, counts = frame.fold_rngs(rpred)
            out, new = frame.run(fn, vars_in, keys, frame.store.is_mutable, args, kwargs,
                                 relative_rngs=True, rng_counts=counts)
            frame.restore_counts(counts)
            frame.write_back(new)
            return out
        return call

    return _lift(target, "fold_rngs", make_call)


def add_metadata_axis(target, variable_axes={}, metadata_params={}):
    """The boxed variables (nn.Partitioned ...) of the collections in `variable_axes` get the
    axis metadata_params[nn.PARTITION_NAME] inserted in their names at the collection's index
    on the way out, and removed on the way in, as vmap and scan do to the axis they add; the
    values are unchanged. A collection with index None is left alone."""
    def make_call(fn):
        def call(module, *args, **kwargs):
            frame = _Frame(module, "add_metadata_axis")
            vars_in = {c: t if _axis_of(variable_axes, c) is None else
                       meta.remove_axis(t, _axis_of(variable_axes, c), metadata_params)
                       for c, t in _read(frame.scope).items()}
            out, new = frame.run(fn, vars_in, frame.rngs(), frame.store.is_mutable, args,
                                 kwargs, rng_counts=frame.store.rng_counts)
            frame.write_back({c: t if _axis_of(variable_axes, c) is None else
                              meta.add_axis(t, _axis_of(variable_axes, c), metadata_params)
                              for c, t in new.items()})
            return out
        return call

    return _lift(target, "add_metadata_axis", make_call)


# --- map_variables --------------------------------------------------------------------------

def map_variables(target, mapped_collections=True, trans_in_fn=lambda x: x,
                  trans_out_fn=lambda x: x, init=False, mutable=False, rngs=True,
                  variables=True, methods=None):
    """The method sees `trans_in_fn(variables of mapped_collections)`; with `init` or `mutable`
    the variables it writes go back through `trans_out_fn`."""
    mapped, rpred, vpred = _filter(mapped_collections), _filter(rngs), _filter(variables)

    def make_call(fn):
        def call(module, *args, **kwargs):
            frame = _Frame(module, "map_variables")
            vars_in = _read(frame.scope, lambda c: vpred(c) or mapped(c))
            target = {c: t for c, t in vars_in.items() if mapped(c)}
            others = {c: t for c, t in vars_in.items() if not mapped(c)}
            keys = frame.rngs(rpred)
            target_out = bool(mutable or init)
            names = {c for c, _ in _mutable_signature(frame)}
            if init and any(frame.is_mutable(c) and (vpred(c) or mapped(c)) for c in names):
                # Create the variables first, then map them in (as Flax, only when a
                # collection may change; the second run's draws follow the first's).
                _, made = frame.run(fn, dict(others, **target), keys, frame.is_mutable, args,
                                    kwargs)
                frame.advance()
                target = trans_out_fn({c: t for c, t in made.items() if mapped(c)})
                others = {c: t for c, t in made.items() if not mapped(c)}
            seen = trans_in_fn(target)
            may_write = lambda c: frame.is_mutable(c) and (target_out or not mapped(c))
            out, new = frame.run(fn, dict(others, **seen), keys, may_write, args, kwargs)
            frame.advance()
            if target_out:
                frame.write_back(trans_out_fn({c: t for c, t in new.items() if mapped(c)}))
            frame.write_back({c: t for c, t in new.items() if not mapped(c)})
            return out
        return call

    return _lift(target, "map_variables", make_call, methods)


from nn.transforms_control import (  # noqa: E402,F401
    while_loop, cond, switch, grad, value_and_grad, vjp, jvp, custom_vjp)
