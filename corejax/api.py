"""The user-facing transformations: jit, grad, value_and_grad, vjp, jvp, linearize, jacfwd,
jacrev, hessian, vmap, make_jaxpr, eval_shape. Each flattens pytrees and calls the flat
interpreter in corejax.transforms."""
from __future__ import annotations

import functools
import inspect
import logging
import threading
import weakref
from typing import Any, Callable

import numpy as np

from corejax import core, dtypes, stages
from corejax import monitoring
from corejax.profiler import _session as _profile_session
from corejax._traceback import api_boundary
from corejax.array import Array, backend_for, operands_for
from corejax.array import _Placement, place_results
from corejax._transfer_guard import Guarded as _TransferGuarded
from corejax.config import config
from corejax.core import ClosedJaxpr, ShapedArray, Tracer, get_aval
from corejax.transforms import ad, batching
from corejax.transforms.ad import Zero
from corejax.transforms.jit import jit_p
from corejax.transforms.staging import trace_to_jaxpr, convert_constvars
from corejax._tree_traced import (tree_flatten, tree_unflatten, tree_map, tree_structure,
                                  tree_leaves, tree_flatten_with_path)
from corejax.tree_util import keystr, register_pytree_node
from corejax.sharding import state as _sharding_state
from corejax._guards import Guards, check_tracing, refuse_execution, user_context_key
from corejax import _ref_state

__all__ = ["jit", "grad", "value_and_grad", "vjp", "jvp", "linearize", "jacfwd", "jacrev",
           "jacobian", "hessian", "vmap", "make_jaxpr", "eval_shape", "ShapeDtypeStruct",
           "disable_jit"]

logger = logging.getLogger("corejax")
_config_values = config._values   # read directly on the eager fast path (no __getattr__)


def _wraps(fun):
    """functools.wraps without copying `fun.__dict__`: a transformation's wrapper takes the
    name, docstring and signature (`__wrapped__`) of what it wraps, never the state of a
    wrapped jit or custom_jvp object (which another wrapper would then take over)."""
    return functools.wraps(fun, updated=())


def _fun_name(f) -> str:
    return getattr(f, "__name__", None) or type(f).__name__


def _flatten_fun(f, in_tree, out_store: list):
    """`f` as a function of flat leaves returning flat leaves; the output tree lands in out_store."""
    def flat(*leaves):
        args, kwargs = tree_unflatten(in_tree, leaves)
        out = f(*args, **kwargs)
        out_leaves, out_tree = tree_flatten(out)
        out_store.append(out_tree)
        return out_leaves
    return flat


def _canonical_leaves(leaves) -> list:
    """NumPy arrays and scalars become Arrays of their canonical dtype (int64 -> int32 while x64
    is off), as they would on transfer to a device; other leaves are kept."""
    out = []
    for x in leaves:
        if isinstance(x, (np.ndarray, np.generic)):
            val = np.asarray(x)
            dt = dtypes.canonicalize_dtype(val.dtype)
            x = Array(np.array(val, dtype=dt, copy=True))
        out.append(x)
    return out


_ARRAY_ONLY = frozenset([Array])
_ARRAY_OR_HOST_TYPES = (Array, np.ndarray)
_ARRAY_OR_HOST = frozenset(_ARRAY_OR_HOST_TYPES)


def _host_leaves(leaves):
    """`leaves` (Arrays and NumPy arrays) with each NumPy array transferred as
    `_canonical_leaves` does (a copy, of its canonical dtype), for jit's fast path; None
    where the slow path must see them: a dtype corejax does not support (its error), or a
    transfer guard on host-to-device transfers."""
    if _TransferGuarded.host_to_device:
        return None
    out = []
    for x in leaves:
        if type(x) is not Array:
            dt = x.dtype
            if dt not in dtypes._SUPPORTED:
                return None
            x = Array(np.array(x, dtype=dtypes.canonicalize_dtype(dt), copy=True))
        out.append(x)
    return out


def _transferring(match):
    """A matcher of Array or NumPy leaves whose leaves come back `_host_leaves`-transferred
    (None where either gives None); None for None."""
    if match is None:
        return None

    def leaves_of(tree):
        leaves = match(tree)
        return None if leaves is None else _host_leaves(leaves)
    return leaves_of


def _check_leaves(leaves, what: str):
    for x in leaves:
        if type(x) is not Array and not core.valid_jaxtype(x) and not isinstance(x, Array):
            raise TypeError(f"Argument {x!r} of type {type(x).__name__} passed to {what} is not a "
                            "valid corejax type: arrays, NumPy arrays and Python scalars only "
                            "(mark non-array arguments static).")


# --- make_jaxpr / eval_shape -----------------------------------------------------------------

class ShapeDtypeStruct:
    """A shape and dtype standing in for an array (eval_shape's outputs, or its inputs)."""

    __slots__ = ("shape", "dtype", "weak_type")

    def __init__(self, shape, dtype, weak_type=False):
        self.shape, self.dtype, self.weak_type = tuple(shape), np.dtype(dtype), weak_type

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))

    @classmethod
    def like(cls, x) -> "ShapeDtypeStruct":
        """The shape, dtype and weak type of `x` (an array, a tracer, a scalar, or anything with
        .shape and .dtype), as a ShapeDtypeStruct."""
        aval = _abstractify(x)
        return cls(aval.shape, aval.dtype, weak_type=aval.weak_type)

    def __eq__(self, other):
        return (isinstance(other, ShapeDtypeStruct) and self.shape == other.shape
                and self.dtype == other.dtype and self.weak_type == other.weak_type)

    def __hash__(self):
        return hash((self.shape, self.dtype, self.weak_type))

    def __repr__(self):
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{weak})"


core.pytype_aval_mappings[ShapeDtypeStruct] = lambda x: ShapedArray(x.shape, x.dtype, x.weak_type)


def _abstractify(x) -> ShapedArray:
    if isinstance(x, ShapeDtypeStruct):
        return ShapedArray(x.shape, dtypes.canonicalize_dtype(x.dtype), x.weak_type)
    aval = get_aval(x)
    return aval.update(dtype=dtypes.canonicalize_dtype(aval.dtype))


def _arg_names(fun, args, kwargs, static) -> list[str]:
    try:
        sig = inspect.signature(fun)
        bound = sig.bind(*args, **kwargs)
        names = []
        for name, value in bound.arguments.items():
            if sig.parameters[name].kind is inspect.Parameter.VAR_POSITIONAL:
                names += [f"{name}[{j}]" for j in range(len(value))]   # as JAX: a[0], a[1]
            elif sig.parameters[name].kind is not inspect.Parameter.VAR_KEYWORD:
                names.append(name)
    except (TypeError, ValueError):
        names = [f"args[{i}]" for i in range(len(args))]
    out = []
    for i, a in enumerate(args):
        if i in static:
            continue
        base = names[i] if i < len(names) else f"args[{i}]"
        for path, _ in tree_flatten_with_path(a)[0]:
            out.append(base + keystr(path))
    for k, v in kwargs.items():
        for path, _ in tree_flatten_with_path(v)[0]:
            out.append(k + keystr(path))
    return out


def make_jaxpr(fun: Callable, static_argnums=(), return_shape=False):
    """Returns a function that stages `fun` on its arguments' shapes and dtypes and returns the
    ClosedJaxpr (printed in JAX's style)."""
    static = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)

    @_wraps(fun)
    @api_boundary
    def make(*args, **kwargs):
        check_tracing(f"make_jaxpr({_fun_name(fun)})")
        dyn_args = [a for i, a in enumerate(args) if i not in static]

        def call(*dyn, **kw):
            it = iter(dyn)
            full = [a if i in static else next(it) for i, a in enumerate(args)]
            return fun(*full, **kw)

        leaves, in_tree = tree_flatten((dyn_args, kwargs))
        out_store: list = []
        jaxpr, consts = trace_to_jaxpr(_flatten_fun(call, in_tree, out_store),
                                       [_abstractify(x) for x in leaves],
                                       _arg_names(fun, args, kwargs, static), _fun_name(fun))
        closed = ClosedJaxpr(jaxpr, consts)
        if return_shape:
            shapes = [ShapeDtypeStruct(v.aval.shape, v.aval.dtype, v.aval.weak_type)
                      for v in jaxpr.outvars]
            return closed, tree_unflatten(out_store[0], shapes)
        return closed

    return make


@api_boundary
def eval_shape(fun: Callable, *args, **kwargs):
    """The output shapes and dtypes of `fun(*args)`, computed without running it."""
    _, shapes = make_jaxpr(fun, return_shape=True)(*args, **kwargs)
    return shapes


# --- jit -------------------------------------------------------------------------------------

class _UnspecifiedValue:
    """jit's in_shardings / out_shardings when not given."""

    def __repr__(self):
        return "UnspecifiedValue"


_UNSPECIFIED = _UnspecifiedValue()

class _CacheEntry:
    __slots__ = ("jaxpr", "consts", "out_tree", "executable", "donated", "refs")

    def __init__(self, jaxpr: ClosedJaxpr, consts: list, out_tree: Any, donated=None,
                 refs=None):
        self.jaxpr = jaxpr        # constvars converted to leading inputs: consts are passed as args
        self.consts = consts
        self.out_tree = out_tree
        self.executable = None    # the compiled program, once the eager fast path has run it
        self.donated = donated    # per operand (consts, then leaves): donated? None: none is
        self.refs = refs          # the JitRefPlan when the function touches a Ref, else None

    def operands(self, leaves) -> list:
        if self.refs is None:
            return [*self.consts, *leaves]
        return self.refs.operands(self.consts, leaves)

    def finish(self, leaves, outs):
        """The function's outputs as a tree (after writing references' final values back)."""
        if self.refs is not None:
            outs = self.refs.finish(leaves, outs)
        return tree_unflatten(self.out_tree, outs)


def _donated_operands(args, dyn_kwargs, static_nums, donate_nums, donate_names, n_consts,
                      n_leaves):
    """For each operand of the traced program (consts, then the leaves of the dynamic
    positional arguments, then of the keyword arguments in sorted order, as tree_flatten
    orders a dict): whether it is donated. None when nothing is."""
    if not donate_nums and not donate_names:
        return None
    nargs = len(args)
    donate = {i % nargs for i in donate_nums if -nargs <= i < nargs}
    flags = [False] * n_consts
    for i, a in enumerate(args):
        if i not in static_nums:
            flags += [i in donate] * len(tree_flatten(a)[0])
    for k in sorted(dyn_kwargs):
        flags += [k in donate_names] * len(tree_flatten(dyn_kwargs[k])[0])
    flags += [False] * (n_consts + n_leaves - len(flags))
    return tuple(flags) if any(flags) else None


def _run(entry: _CacheEntry, exe, backend: str, operands, fun=None, leaves=()):
    """The compiled program's outputs on `operands` (consts, then leaves), in the entry's
    tree. Donated Arrays are consumed by the call (their buffers may now hold its results).
    `fun`: the jitted function, named by the no_execution guard's error."""
    if Guards.no_execution:
        refuse_execution(f"jit({_fun_name(fun)})" if fun is not None else "a jitted program")
    if _profile_session:
        outs = _profile_session[0].execute(f"jit({_fun_name(fun)})", exe,
                                           operands_for(backend, operands))
    else:
        outs = exe(*operands_for(backend, operands))
    if _Placement.cpu_committed:
        outs = place_results(operands, outs)
    if entry.donated is not None and not exe.consumes_donations:
        for x, d in zip(operands, entry.donated):
            if d and type(x) is Array:
                x.delete()
    return entry.finish(leaves, outs)


def _guard_host_arguments(jitted, args, kwargs) -> None:
    """The host-to-device transfer guard on a jitted call's (non-static) arguments: host
    values (NumPy arrays and scalars, Python numbers) are implicitly transferred to the device
    (Python bools are not guarded, as in JAX)."""
    from corejax import _transfer_guard
    from corejax.array import default_device
    _, _, dyn_args, dyn_kwargs = jitted._split(args, kwargs)
    for x in tree_flatten((dyn_args, dyn_kwargs))[0]:
        if isinstance(x, (np.ndarray, np.generic)) or type(x) in (int, float, complex):
            _transfer_guard.host_to_device(lambda: _transfer_guard.describe_transfer(
                _abstractify(x), dst=default_device()))


def _signature_key(leaves):
    return tuple(("ref", *(a.shape, a.dtype, a.weak_type)) if type(x) is _ref_state.Ref else
                 (a.shape, a.dtype, a.weak_type)
                 for x, a in zip(leaves, map(_leaf_aval, leaves)))


def _leaf_aval(x):
    return x.aval.inner_aval if type(x) is _ref_state.Ref else get_aval(x)


def _with_inferred_nums(nums, names_given, names) -> tuple:
    """Argument positions: those given, and those of the names given that the signature has."""
    return tuple(dict.fromkeys(tuple(nums) + tuple(names.index(n) for n in names_given
                                                     if n in names)))


def _with_inferred_names(names_given, nums, names) -> tuple:
    """Argument names: those given, and the names of the positions given in the signature."""
    return tuple(dict.fromkeys(tuple(names_given) + tuple(
        names[i] for i in nums if -len(names) <= i < len(names))))


class _TraceCache:
    """The traces and executables of one function under one set of jit options. JAX keys its
    cache by the function, so every `jit(f)` of the same `f` and options shares one: a second
    `jit(f)` does not trace again."""

    __slots__ = ("entries", "fast", "lock")

    def __init__(self):
        self.entries: dict = {}
        self.fast: dict = {}
        self.lock = threading.RLock()


_trace_caches: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_trace_caches_lock = threading.Lock()


def _trace_cache(fun, options) -> _TraceCache:
    """The cache of `fun` under `options`: shared while `fun` lives; a function that cannot be
    weakly referenced or hashed gets one of its own."""
    try:
        with _trace_caches_lock:
            table = _trace_caches.get(fun)
            if table is None:
                table = _trace_caches[fun] = {}
            state = table.get(options)
            if state is None:
                state = table[options] = _TraceCache()
            return state
    except TypeError:
        return _TraceCache()


class _JittedFunction:
    """A function compiled per signature: pytree structure, shapes, dtypes, weak types,
    static argument values and backend."""

    def __init__(self, fun, static_argnums, static_argnames, donate_argnums, backend,
                 donate_argnames=()):
        # The wrapper takes fun's name, doc and attributes first, so that its own state below
        # is never overwritten by a wrapped function's (another jit's, copied onto a grad).
        functools.update_wrapper(self, fun)
        self._fun = fun
        # Static and donated arguments by position or by name, each inferred from the other
        # through the signature where it has one (as JAX does).
        try:
            params = [p for p in inspect.signature(fun).parameters.values()
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        except (TypeError, ValueError):
            params = []
        names = [p.name for p in params]
        self._static_argnums = _with_inferred_nums(static_argnums, static_argnames, names)
        self._static_argnames = _with_inferred_names(static_argnames, static_argnums, names)
        self._donate_argnums = _with_inferred_nums(donate_argnums, donate_argnames, names)
        self._donate_argnames = frozenset(
            _with_inferred_names(donate_argnames, donate_argnums, names))
        self._backend = backend
        state = _trace_cache(fun, (self._static_argnums, self._static_argnames,
                                   self._donate_argnums, self._donate_argnames, backend))
        self._cache: dict = state.entries
        self._fast: dict = state.fast   # eager calls with Array arguments: signature -> (entry, exe)
        self._lock = state.lock
        # the last such call's argument structure, and its compiled flattening (transferring
        # NumPy leaves where the call had any: `_transferring`)
        self._last_tree = (None, None)
        self._last_key = None

    def _split(self, args, kwargs):
        nargs = len(args)
        # A static position past the arguments given names a parameter passed by keyword or
        # left to its default (JAX ignores it there too).
        static_nums = tuple(sorted({i % nargs for i in self._static_argnums
                                    if -nargs <= i < nargs}))
        static_vals = []
        for i in static_nums:
            static_vals.append(("arg", i, _hashable_static(args[i], f"argument {i}")))
        for k in self._static_argnames:
            if k in kwargs:
                static_vals.append(("kw", k, _hashable_static(kwargs[k], f"argument {k!r}")))
        dyn_args = [a for i, a in enumerate(args) if i not in static_nums]
        dyn_kwargs = {k: v for k, v in kwargs.items() if k not in self._static_argnames}
        return static_nums, tuple(static_vals), dyn_args, dyn_kwargs

    def _backend_name(self, leaves=()):
        return backend_for(leaves, self._backend)

    def _lookup(self, args, kwargs):
        static_nums, static_vals, dyn_args, dyn_kwargs = self._split(args, kwargs)
        leaves, in_tree = tree_flatten((dyn_args, dyn_kwargs))
        _check_leaves([x for x in leaves if type(x) is not _ref_state.Ref],
                      f"jit({_fun_name(self._fun)})")
        leaves = _canonical_leaves(leaves)
        key = (in_tree, _signature_key(leaves), static_vals, self._backend_name(leaves),
               config.enable_x64, config.threefry_partitionable, user_context_key())
        entry = self._cache.get(key)
        if entry is None:
            with self._lock:
                entry = self._cache.get(key)
                if entry is None:
                    entry = self._trace(args, kwargs, static_nums, in_tree, leaves, key,
                                        dyn_kwargs)
        return entry, leaves

    def _trace(self, args, kwargs, static_nums, in_tree, leaves, key, dyn_kwargs):
        check_tracing(f"jit({_fun_name(self._fun)})")
        if config.explain_cache_misses:
            logger.warning(_explain_miss(self, key))
        fun = self._fun

        def call(*dyn, **kw):
            it = iter(dyn)
            full = [a if i in static_nums else next(it) for i, a in enumerate(args)]
            statics = {k: kwargs[k] for k in self._static_argnames if k in kwargs}
            return fun(*full, **kw, **statics)

        out_store: list = []
        names = _arg_names(fun, args, kwargs, static_nums)
        ref_pos = _ref_state.check_arg_refs(leaves, names, _fun_name(fun))
        plan: list = []
        flat = _ref_state.jit_ref_scope(_flatten_fun(call, in_tree, out_store), leaves,
                                        ref_pos, names, _fun_name(fun), plan)
        with monitoring._Timed(monitoring.JAXPR_TRACE_DURATION, _fun_name(fun)):
            jaxpr, consts = trace_to_jaxpr(
                flat, [_abstractify(x) for i, x in enumerate(leaves) if i not in ref_pos],
                [n for i, n in enumerate(names) if i not in ref_pos], _fun_name(fun))
        if config.log_compiles:
            logger.warning("Compiling %s with global shapes and types %s.", _fun_name(fun),
                           [str(_abstractify(x)) for x in leaves])
        donated = _donated_operands(args, dyn_kwargs, static_nums, self._donate_argnums,
                                    self._donate_argnames, len(consts), len(leaves))
        entry = _CacheEntry(ClosedJaxpr(convert_constvars(jaxpr), []), consts, out_store[0],
                            donated, plan[0])
        if not any(isinstance(c, Tracer) for c in consts):
            self._cache[key] = entry
            self._last_key = key
        return entry

    # (in_shardings, out_shardings) when jit was given either, else None
    _shardings = None

    @api_boundary
    def __call__(self, *args, **kwargs):
        if _config_values["disable_jit"]:
            return self._fun(*args, **kwargs)
        if _config_values["debug_key_reuse"]:
            from corejax import _key_reuse
            out = _key_reuse.jit_call(self, args, kwargs)
            if out is not _key_reuse.PROCEED:
                return out
        if self._shardings is not None or _sharding_state.mesh_arrays or \
                _sharding_state.mesh_ops_staged:
            from corejax import _sharded_jit
            out = _sharded_jit.call(self, args, kwargs)
            if out is not _sharded_jit.NOT_SHARDED:
                return out
        fast_key = None
        if not kwargs and core._trace_state.dynamic_level == 0 and not self._static_argnums:
            # Eager fast path for Array arguments in pytrees (a parameter dict, an optimizer
            # state): one flatten, and a signature of structure, shapes, dtypes and weak types.
            # NumPy arrays among the leaves (a batch of data) are transferred here as the
            # slow path would transfer them (`_host_leaves`).
            treedef, match = self._last_tree
            leaves = match(args) if match is not None else None
            if leaves is None:
                leaves, treedef = tree_flatten(args)
                kinds = set([type(a) for a in leaves])
                if kinds <= _ARRAY_ONLY:
                    self._last_tree = (treedef, treedef.matcher(Array))
                elif kinds <= _ARRAY_OR_HOST:
                    self._last_tree = (treedef, _transferring(
                        treedef.matcher(_ARRAY_OR_HOST_TYPES)))
                    leaves = _host_leaves(leaves)
                else:
                    leaves = None
            if leaves is not None:
                flags = _config_values
                fast_key = (treedef, tuple([(a._value.shape, a._value.dtype, a.weak_type)
                                            for a in leaves]),
                            backend_for(leaves, self._backend), flags["enable_x64"],
                            flags["threefry_partitionable"], user_context_key())
                hit = self._fast.get(fast_key)
                if hit is not None:
                    entry, exe = hit
                    return _run(entry, exe, fast_key[2], [*entry.consts, *leaves], self._fun)
        if _TransferGuarded.host_to_device and core._trace_state.dynamic_level == 0:
            _guard_host_arguments(self, args, kwargs)
        staged_mesh_ops = _sharding_state.mesh_ops_staged
        entry, leaves = self._lookup(args, kwargs)
        if _sharding_state.mesh_ops_staged and not staged_mesh_ops:
            # this trace staged the process's first shard_map / reshard: the program runs
            # partitioned over its mesh (the check above could not know before tracing)
            from corejax import _sharded_jit
            out = _sharded_jit.call(self, args, kwargs)
            if out is not _sharded_jit.NOT_SHARDED:
                return out
        operands = entry.operands(leaves)
        if core._trace_state.dynamic_level == 0 and not any(
                isinstance(x, Tracer) for x in operands):
            # Eager fast path: no transformation is active, so run the executable directly.
            exe = entry.executable
            if exe is None:
                from corejax.compiler import compile_jaxpr
                exe = compile_jaxpr(entry.jaxpr, self._backend_name(leaves), entry.donated,
                                    name=_fun_name(self._fun))
                entry.executable = exe
            if fast_key is not None and not self._static_argnames and entry.refs is None:
                self._fast[fast_key] = (entry, exe)
            return _run(entry, exe, self._backend_name(leaves), operands, self._fun, leaves)
        outs = jit_p.bind(*operands, jaxpr=entry.jaxpr, name=_fun_name(self._fun),
                          backend=self._backend)
        return entry.finish(leaves, outs)

    def trace(self, *args, **kwargs) -> stages.Traced:
        """The traced program for these arguments (`.jaxpr`, `.out_info`, `.lower()`)."""
        entry, leaves = self._lookup(args, kwargs)
        if entry.refs is not None:
            raise NotImplementedError(
                f"jit({_fun_name(self._fun)}).trace / lower / eval_shape: the function uses "
                "mutable array references (corejax.Ref), which ahead-of-time staging does not "
                "thread; call the jitted function directly.")
        _, _, dyn_args, dyn_kwargs = self._split(args, kwargs)
        in_tree = tree_structure((tuple(dyn_args), dyn_kwargs))
        n = len(entry.consts)
        donated = list(entry.donated[n:]) if entry.donated else [False] * len(leaves)
        return stages.Traced(entry, in_tree, [_abstractify(x) for x in leaves], donated,
                             self._backend_name(leaves), _fun_name(self._fun))

    def lower(self, *args, **kwargs) -> stages.Lowered:
        return self.trace(*args, **kwargs).lower()

    def eval_shape(self, *args, **kwargs):
        return self.trace(*args, **kwargs).out_info

    def _cache_size(self) -> int:
        return len(self._cache)

    def clear_cache(self):
        self._cache.clear()
        self._fast.clear()

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self, obj)

    def __repr__(self):
        return f"<jitted function {_fun_name(self._fun)}>"


def _hashable_static(x, what):
    try:
        hash(x)
    except TypeError:
        raise ValueError(f"Non-hashable static arguments are not supported: {what} of type "
                         f"{type(x).__name__} is unhashable, so it cannot be used as a static "
                         "argument. Pass a tuple instead of a list, or make it a regular "
                         "(traced) argument.") from None
    return x


def _explain_miss(jf: _JittedFunction, key) -> str:
    name = _fun_name(jf._fun)
    prev = jf._last_key
    if prev is None:
        return f"TRACING CACHE MISS at {name}: never seen function (first call)."
    reasons = []
    if prev[0] != key[0]:
        reasons.append(f"the pytree structure of the arguments changed: {prev[0]} -> {key[0]}")
    elif prev[1] != key[1]:
        for i, (a, b) in enumerate(zip(prev[1], key[1])):
            if a != b:
                what = ("shape" if a[0] != b[0] else "dtype" if a[1] != b[1] else "weak type")
                reasons.append(f"argument leaf {i} changed {what}: "
                               f"{ShapedArray(*a).str_short()}{'~' if a[2] else ''} -> "
                               f"{ShapedArray(*b).str_short()}{'~' if b[2] else ''}")
    if prev[2] != key[2]:
        reasons.append(f"static argument values changed: {prev[2]} -> {key[2]}")
    if prev[3] != key[3]:
        reasons.append(f"backend changed: {prev[3]} -> {key[3]}")
    if prev[4] != key[4]:
        reasons.append("the enable_x64 setting changed")
    if prev[5] != key[5]:
        reasons.append("the threefry_partitionable setting changed")
    if prev[6:] != key[6:]:
        reasons.append("a user context's value changed (make_user_context)")
    return f"TRACING CACHE MISS at {name} because: " + "; ".join(reasons or ["a new signature"])


def jit(fun: Callable | None = None, *, in_shardings=_UNSPECIFIED, out_shardings=_UNSPECIFIED,
        static_argnums=(), static_argnames=(), donate_argnums=(), donate_argnames=(),
        keep_unused: bool = False, device=None, backend: str | None = None,
        inline: bool = False, compiler_options=None):
    """Compiles `fun`: staged once per signature, then run by the compiler.

    Donated arguments (`donate_argnums` / `donate_argnames`) are consumed by the call: their
    Arrays are deleted, and the CPU program may write its results into their buffers.
    Arguments split over a mesh, or `in_shardings` / `out_shardings`, run the program
    partitioned over the mesh's devices (corejax/_sharded_jit.py)."""
    if fun is None:
        return lambda f: jit(f, in_shardings=in_shardings, out_shardings=out_shardings,
                             static_argnums=static_argnums, static_argnames=static_argnames,
                             donate_argnums=donate_argnums, donate_argnames=donate_argnames,
                             keep_unused=keep_unused, device=device, backend=backend,
                             inline=inline, compiler_options=compiler_options)
    if not callable(fun):
        raise TypeError(f"Expected a callable value, got {fun!r}")
    static_argnums = (static_argnums,) if isinstance(static_argnums, int) else \
        tuple(static_argnums)
    static_argnames = (static_argnames,) if isinstance(static_argnames, str) else \
        tuple(static_argnames)
    donate_argnums = (donate_argnums,) if isinstance(donate_argnums, int) else \
        tuple(donate_argnums)
    donate_argnames = (donate_argnames,) if isinstance(donate_argnames, str) else \
        tuple(donate_argnames)
    if backend is None and device is not None:
        backend = getattr(device, "platform", None)
    jitted = _JittedFunction(fun, static_argnums, static_argnames, donate_argnums, backend,
                             donate_argnames)
    if in_shardings is not _UNSPECIFIED or out_shardings is not _UNSPECIFIED:
        jitted._shardings = (in_shardings, out_shardings)
    return jitted


class disable_jit:
    """Context manager: run jitted functions eagerly (for debugging)."""

    def __init__(self, disable: bool = True):
        self._disable = disable

    def __enter__(self):
        self._prev = config.disable_jit
        config.update("disable_jit", self._disable)

    def __exit__(self, *exc):
        config.update("disable_jit", self._prev)


# --- jvp / linearize / vjp / grad ------------------------------------------------------------

@api_boundary
def jvp(fun: Callable, primals, tangents, has_aux: bool = False):
    """Forward mode: `(fun(*primals), J(primals) @ tangents)`."""
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("primal and tangent arguments to jvp must be tuples or lists; found "
                        f"{type(primals).__name__} and {type(tangents).__name__}.")
    if len(primals) != len(tangents):
        raise TypeError(f"jvp got {len(primals)} primals but {len(tangents)} tangents.")
    p_leaves, p_tree = tree_flatten(tuple(primals))
    t_leaves, t_tree = tree_flatten(tuple(tangents))
    p_leaves, t_leaves = _canonical_leaves(p_leaves), _canonical_leaves(t_leaves)
    if p_tree != t_tree:
        raise TypeError(f"primal and tangent arguments to jvp must have the same tree structure; "
                        f"primals have tree structure {p_tree} whereas tangents have {t_tree}.")
    flat = _FlatWithAux(fun, p_tree, has_aux)
    outs, touts = ad.jvp_flat(flat, p_leaves, [_as_tangent(t) for t in t_leaves])
    outs, aux = flat.split(outs)
    result = (tree_unflatten(flat.out_tree, outs),
              tree_unflatten(flat.out_tree, touts[:flat.num_out]))
    return result + (aux,) if has_aux else result


def _as_tangent(t):
    if isinstance(t, np.ndarray) and t.dtype == dtypes.float0:
        return Zero(ShapedArray(t.shape, dtypes.float0))
    return t


@api_boundary
def linearize(fun: Callable, *primals, has_aux: bool = False):
    """Returns `(fun(*primals), f_jvp)` where `f_jvp` evaluates the JVP at the same point
    without recomputing the primal computation."""
    p_leaves, p_tree = tree_flatten(primals)
    p_leaves = _canonical_leaves(p_leaves)
    flat = _FlatWithAux(fun, p_tree, has_aux)
    outs, jaxpr, consts, tangent_pvals = ad.linearize_flat(flat, p_leaves)
    outs, aux = flat.split(outs)

    def f_jvp(*tangents):
        t_leaves, t_tree = tree_flatten(tangents)
        if t_tree != p_tree:
            raise TypeError(f"linearized function got tangents with tree structure {t_tree}, "
                            f"expected {p_tree}.")
        touts = iter(core.eval_jaxpr(jaxpr, consts, *t_leaves))
        vals = [next(touts) if not pv.is_known else pv.const for pv in tangent_pvals]
        return tree_unflatten(flat.out_tree, vals[:flat.num_out])

    result = (tree_unflatten(flat.out_tree, outs), f_jvp)
    return result + (aux,) if has_aux else result


class _FlatWithAux:
    """`fun` on flat leaves. With has_aux, the array leaves of its auxiliary data travel as
    extra outputs, so they leave the transformation as values rather than leaked tracers."""

    def __init__(self, fun, in_tree, has_aux):
        self.fun, self.in_tree, self.has_aux = fun, in_tree, has_aux
        self.out_tree = self.aux_tree = None
        self.num_out = 0
        self.aux_static: list = []

    def __call__(self, *leaves):
        out = self.fun(*tree_unflatten(self.in_tree, leaves))
        aux_arrays = []
        if self.has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise TypeError("has_aux=True requires the function to return a pair "
                                "(output, auxiliary data).")
            out, aux = out
            aux_leaves, self.aux_tree = tree_flatten(aux)
            is_array = [isinstance(x, (Tracer, Array, np.ndarray)) for x in aux_leaves]
            self.aux_static = [None if a else x for x, a in zip(aux_leaves, is_array)]
            aux_arrays = [x for x, a in zip(aux_leaves, is_array) if a]
        out_leaves, self.out_tree = tree_flatten(out)
        self.num_out = len(out_leaves)
        return out_leaves + aux_arrays

    def split(self, flat_outs):
        """The main outputs, and the auxiliary data rebuilt with its array leaves' values."""
        main = flat_outs[:self.num_out]
        if not self.has_aux:
            return main, None
        arrays = iter(flat_outs[self.num_out:])
        aux = tree_unflatten(self.aux_tree, [next(arrays) if x is None else x
                                             for x in self.aux_static])
        return main, aux


@api_boundary
def vjp(fun: Callable, *primals, has_aux: bool = False):
    """Returns `(fun(*primals), f_vjp)`; `f_vjp(cotangent)` returns cotangents of the primals."""
    p_leaves, p_tree = tree_flatten(primals)
    _check_leaves(p_leaves, "vjp")
    p_leaves = _canonical_leaves(p_leaves)
    flat = _FlatWithAux(fun, p_tree, has_aux)
    flat_outs, pullback = ad.vjp_flat(flat, p_leaves)
    outs, aux = flat.split(flat_outs)
    # The auxiliary outputs get zero cotangents.
    aux_avals = [get_aval(o).to_tangent_aval() for o in flat_outs[flat.num_out:]]
    f_vjp = VJP(pullback, p_tree, flat.out_tree, [get_aval(o) for o in outs], aux_avals)
    result = (tree_unflatten(flat.out_tree, outs), f_vjp)
    return result + (aux,) if has_aux else result


class VJP:
    """The function `vjp` returns: `f_vjp(cotangent)` gives the cotangents of the primals.
    As in JAX it is a pytree whose leaves are the residuals of the linearization, so it can
    be passed into (and returned from) a jitted function, or its residuals inspected."""

    __slots__ = ("_pullback", "_in_tree", "_out_tree", "_out_avals", "_aux_avals")

    def __init__(self, pullback: ad.Pullback, in_tree, out_tree, out_avals, aux_avals):
        self._pullback, self._in_tree, self._out_tree = pullback, in_tree, out_tree
        self._out_avals, self._aux_avals = tuple(out_avals), tuple(aux_avals)

    def __call__(self, ct):
        ct_leaves, ct_tree = tree_flatten(ct)
        if ct_tree != self._out_tree:
            raise TypeError(f"Tree structure of cotangent input {ct_tree}, does not match "
                            f"structure of primal output {self._out_tree}.")
        for c, a in zip(ct_leaves, self._out_avals):
            if get_aval(c).shape != a.shape:
                raise ValueError(f"Shape of cotangent input to vjp pullback function "
                                 f"{get_aval(c).shape} must be the same as the shape of "
                                 f"corresponding primal output {a.shape}.")
        cts = self._pullback(*ct_leaves, *[Zero(a) for a in self._aux_avals])
        return tree_unflatten(self._in_tree, cts)

    def _static(self):
        p = self._pullback
        return (p.jaxpr, p.unknown, p.in_avals, self._in_tree, self._out_tree,
                self._out_avals, self._aux_avals)

    def __repr__(self):
        return f"VJP(residuals={len(self._pullback.residuals)}, in_tree={self._in_tree})"


def _vjp_unflatten(static, residuals):
    jaxpr, unknown, in_avals, in_tree, out_tree, out_avals, aux_avals = static
    return VJP(ad.Pullback(jaxpr, residuals, unknown, in_avals), in_tree, out_tree, out_avals,
               aux_avals)


register_pytree_node(VJP, lambda f: (list(f._pullback.residuals), f._static()),
                     _vjp_unflatten)


def linear_transpose(fun: Callable, *primals, reduce_axes=()):
    """The transpose of the linear function `fun` at inputs shaped like `primals` (arrays or
    ShapeDtypeStructs): `f_t(cotangent)` returns a tuple of one cotangent per primal.
    Raises where `fun` is not linear in its inputs (a primitive without a transpose rule)."""
    if reduce_axes:
        raise NotImplementedError("reduce_axes argument to transpose is deprecated")
    leaves, in_tree = tree_flatten((primals, {}))
    primals_tree = tree_structure(primals)
    in_avals = [_abstractify(x) for x in leaves]
    in_float = [dtypes.is_inexact(a.dtype) for a in in_avals]
    out_store: list = []
    jaxpr, consts = trace_to_jaxpr(_flatten_fun(fun, in_tree, out_store),
                                   in_avals, fun_name=_fun_name(fun))
    out_avals = [v.aval for v in jaxpr.outvars]
    out_float = [dtypes.is_inexact(a.dtype) for a in out_avals]
    if not ((all(in_float) and all(out_float)) or (not any(in_float) and not any(out_float))):
        raise TypeError("linear_transpose only supports [float or complex] -> [float or "
                        "complex], and integer -> integer functions, but got "
                        f"{[a.dtype.name for a in in_avals]} -> "
                        f"{[a.dtype.name for a in out_avals]}.")
    out_tree = out_store[0]

    def transposed(out_cotangent):
        ct_leaves, ct_tree = tree_flatten(out_cotangent)
        if ct_tree != out_tree:
            raise TypeError("cotangent tree does not match function output, expected "
                            f"{out_tree} but got {ct_tree}")
        for c, a in zip(ct_leaves, out_avals):
            ca = get_aval(c)
            if ca.shape != a.shape or ca.dtype != a.dtype:
                raise TypeError("cotangent type does not match function output, expected "
                                f"{a.str_short()} but got {ca.str_short()}")
        cts = ad.backward_pass(jaxpr, consts, [ad.UndefinedPrimal(a) for a in in_avals],
                               ct_leaves)
        return tuple(tree_unflatten(primals_tree, [ad.instantiate_zeros(ct) for ct in cts]))

    return transposed


def _check_argnums(argnums, nargs, name):
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for a in nums:
        if not isinstance(a, int):
            raise TypeError(f"{name}: argnums must be an int or a tuple of ints, got {argnums!r}")
        if not -nargs <= a < nargs:
            raise ValueError(f"{name}: argnums={argnums} is out of range for a function called "
                             f"with {nargs} positional argument{'s' if nargs != 1 else ''}.")
    return nums


def _argnums_partial(fun, args, kwargs, argnums, name):
    """`fun` as a function of only the arguments selected by `argnums`, and their values."""
    nums = _check_argnums(argnums, len(args), name)
    nums_n = tuple(a % len(args) for a in nums)

    def partial_fun(*dargs):
        full = list(args)
        for i, d in zip(nums_n, dargs):
            full[i] = d
        return fun(*full, **kwargs)

    return partial_fun, tuple(args[i] for i in nums_n)


def value_and_grad(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False,
                   allow_int: bool = False):
    """Returns a function computing `(fun(*args), grad of fun w.r.t. args[argnums])`."""
    name = f"value_and_grad({_fun_name(fun)})"

    @_wraps(fun)
    @api_boundary
    def vg(*args, **kwargs):
        partial_fun, diff_args = _argnums_partial(fun, args, kwargs, argnums, name)
        for arg in diff_args:
            for leaf in tree_leaves(arg):
                dt = get_aval(leaf).dtype
                if holomorphic and not dtypes.is_complex(dt):
                    raise TypeError(f"grad with holomorphic=True requires inputs with complex "
                                    f"dtype, but got {dt.name}.")
                if not allow_int and not dtypes.is_inexact(dt):
                    raise TypeError(f"grad requires real- or complex-valued inputs (input dtype "
                                    f"that is a sub-dtype of np.inexact), but got {dt.name}. If "
                                    "you want to use integer-valued inputs, use vjp or set "
                                    "allow_int to True.")

        if has_aux:
            out, f_vjp, aux = vjp(partial_fun, *diff_args, has_aux=True)
        else:
            out, f_vjp = vjp(partial_fun, *diff_args)
        out_aval = get_aval(out) if core.valid_jaxtype(out) else None
        if out_aval is None:
            raise TypeError(f"Gradient only defined for scalar-output functions. Output was "
                            f"{out!r}.")
        if out_aval.shape != ():
            raise TypeError(f"Gradient only defined for scalar-output functions. Output had "
                            f"shape: {out_aval.shape}.")
        if not dtypes.is_inexact(out_aval.dtype):
            raise TypeError(f"grad requires real- or complex-valued outputs (output dtype that is "
                            f"a sub-dtype of np.inexact), but got {out_aval.dtype.name}.")
        if holomorphic and not dtypes.is_complex(out_aval.dtype):
            raise TypeError(f"grad with holomorphic=True requires outputs with complex dtype, "
                            f"but got {out_aval.dtype.name}.")
        if not holomorphic and dtypes.is_complex(out_aval.dtype):
            raise TypeError(f"grad requires real-valued outputs (output dtype that is a sub-dtype "
                            f"of np.floating), but got {out_aval.dtype.name}. For holomorphic "
                            "differentiation, pass holomorphic=True. For differentiation of "
                            "non-holomorphic functions involving complex outputs, use jax.vjp "
                            "directly.")
        from corejax import lax
        g = f_vjp(lax.full((), 1, out_aval.dtype, weak_type=out_aval.weak_type))
        g = g[0] if isinstance(argnums, int) else tuple(g)
        return ((out, aux), g) if has_aux else (out, g)

    return vg


def grad(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False,
         allow_int: bool = False):
    """Returns a function computing the gradient of scalar `fun` w.r.t. args[argnums]."""
    vg = value_and_grad(fun, argnums, has_aux, holomorphic, allow_int)

    @_wraps(fun)
    @api_boundary
    def g(*args, **kwargs):
        if has_aux:
            (_, aux), gr = vg(*args, **kwargs)
            return gr, aux
        return vg(*args, **kwargs)[1]

    return g


# --- jacobians -------------------------------------------------------------------------------

def _std_basis(leaves):
    """Stacked one-hot tangents: a basis of the flattened input space."""
    from corejax import lax, numpy as jnp
    sizes = [get_aval(x).size for x in leaves]
    total = int(sum(sizes))
    dt = dtypes.result_type(*[get_aval(x).dtype for x in leaves]) if leaves else np.float32
    eye = jnp.eye(total, dtype=dt)
    out, offset = [], 0
    for x, n in zip(leaves, sizes):
        aval = get_aval(x)
        block = eye[:, offset:offset + n]
        # each block takes its leaf's dtype and weak type (a Python float's Jacobian stays
        # weakly typed, as in JAX)
        out.append(lax.convert_element_type(jnp.reshape(block, (total,) + aval.shape),
                                            aval.dtype, weak_type=aval.weak_type))
        offset += n
    return out, total


def _check_jac_dtype(name: str, what: str, x, holomorphic: bool, allow_int: bool = False):
    """jacfwd's inputs and jacrev's outputs must be real (complex with holomorphic=True)."""
    dt = get_aval(x).dtype
    if holomorphic:
        if not dtypes.issubdtype(dt, np.complexfloating):
            raise TypeError(f"{name} with holomorphic=True requires {what} with complex dtype, "
                            f"but got {np.dtype(dt).name}.")
    elif name == "jacrev" and what == "inputs":  # reverse mode takes complex inputs too
        if not allow_int and not dtypes.issubdtype(dt, np.inexact):
            raise TypeError(
                f"jacrev requires real- or complex-valued inputs (a sub-dtype of np.inexact), "
                f"but got {np.dtype(dt).name}. For differentiation of functions with integer "
                "inputs, pass allow_int=True or use jax.vjp directly.")
    elif dtypes.issubdtype(dt, np.complexfloating) or not dtypes.issubdtype(dt, np.floating):
        raise TypeError(
            f"{name} requires real-valued {what} (a sub-dtype of np.floating), but got "
            f"{np.dtype(dt).name}. For holomorphic differentiation, pass holomorphic=True. For "
            f"differentiation of non-holomorphic functions involving complex {what} or integer "
            f"{what}, use {'jax.jvp' if name == 'jacfwd' else 'jax.vjp'} directly.")


def _jac_block(block, shape, like):
    """One Jacobian block, reshaped and cast to the dtype and weak type of `like` (the output
    leaf for jacfwd, the input leaf for jacrev), as JAX does."""
    from corejax import lax, numpy as jnp
    aval = get_aval(like)
    if get_aval(block).dtype == dtypes.float0:  # jacrev(allow_int=True) w.r.t. an integer
        return jnp.reshape(block, shape)
    return lax.convert_element_type(jnp.reshape(block, shape), aval.dtype,
                                    weak_type=aval.weak_type)


def jacfwd(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False):
    """The Jacobian by forward mode: one jvp per input basis vector, vectorized with vmap;
    `fun` runs once (the primal output is an unbatched output of the same vmap)."""
    @_wraps(fun)
    @api_boundary
    def jac(*args, **kwargs):
        partial_fun, dyn = _argnums_partial(fun, args, kwargs, argnums, "jacfwd")
        leaves, tree = tree_flatten(dyn)
        for x in leaves:
            _check_jac_dtype("jacfwd", "inputs", x, holomorphic)
        basis, _ = _std_basis(leaves)

        def push(*tangent_leaves):
            return jvp(partial_fun, dyn, tree_unflatten(tree, tangent_leaves), has_aux=has_aux)

        out_axes = (None, -1, None) if has_aux else (None, -1)
        res = vmap(push, out_axes=out_axes)(*basis)
        y, pushed = res[0], res[1]
        single = isinstance(argnums, int)

        def unravel(y_leaf, p):
            out_shape = get_aval(y_leaf).shape
            blocks, offset = [], 0
            for x in leaves:
                aval = get_aval(x)
                blocks.append(_jac_block(p[..., offset:offset + aval.size],
                                         out_shape + aval.shape, y_leaf))
                offset += aval.size
            arg_trees = tree_unflatten(tree, blocks)
            return arg_trees[0] if single else arg_trees

        out = tree_map(unravel, y, pushed)
        return (out, res[2]) if has_aux else out

    return jac


def jacrev(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False,
           allow_int: bool = False):
    """The Jacobian by reverse mode: one vjp per output basis vector, vectorized with vmap."""
    @_wraps(fun)
    @api_boundary
    def jac(*args, **kwargs):
        partial_fun, dyn = _argnums_partial(fun, args, kwargs, argnums, "jacrev")
        for x in tree_leaves(dyn):
            _check_jac_dtype("jacrev", "inputs", x, holomorphic, allow_int)
        if has_aux:
            y, f_vjp, aux = vjp(partial_fun, *dyn, has_aux=True)
        else:
            y, f_vjp = vjp(partial_fun, *dyn)
        y_leaves, y_tree = tree_flatten(y)
        for yl in y_leaves:
            _check_jac_dtype("jacrev", "outputs", yl, holomorphic)
        basis, _ = _std_basis(y_leaves)
        # cts: one tree per argument, each leaf with a leading axis over the flattened outputs
        cts = vmap(lambda *b: f_vjp(tree_unflatten(y_tree, b)))(*basis)
        per_out, offset = [], 0
        for yl in y_leaves:
            yshape, n = get_aval(yl).shape, get_aval(yl).size
            per_out.append(tuple(tree_map(
                lambda c, x, o=offset, n=n: _jac_block(c[o:o + n], yshape + get_aval(x).shape, x),
                ct, arg) for ct, arg in zip(cts, dyn)))
            offset += n
        if isinstance(argnums, int):
            per_out = [p[0] for p in per_out]
        out = tree_unflatten(y_tree, per_out)
        return (out, aux) if has_aux else out

    return jac


jacobian = jacrev


def hessian(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False):
    return jacfwd(jacrev(fun, argnums, has_aux, holomorphic), argnums, has_aux, holomorphic)


# --- vmap ------------------------------------------------------------------------------------

def mapped_axes(name, args, in_axes, leaves):
    """(dims, sizes) of the flattened arguments `leaves` of a map over `in_axes` (vmap's and
    pmap's): each leaf's mapped axis made non-negative (None where unmapped; keyword arguments
    are mapped over axis 0) and the sizes of the mapped axes."""
    axes = _flatten_axes(f"{name} in_axes", args,
                         in_axes if isinstance(in_axes, tuple) else tuple([in_axes] * len(args)))
    axes += [0] * (len(leaves) - len(axes))
    dims, sizes = [], []
    for x, ax in zip(leaves, axes):
        if ax is None:
            dims.append(None)
            continue
        aval = get_aval(x)
        if not -aval.ndim <= ax < aval.ndim or aval.ndim == 0:
            raise ValueError(f"{name} was requested to map its argument along axis {ax}, which "
                             f"implies that its rank should be at least {max(ax + 1, -ax)}, "
                             f"but is only {aval.ndim} (its shape is {aval.shape})")
        dims.append(ax % aval.ndim)
        sizes.append(aval.shape[dims[-1]])
    return dims, sizes


def check_mapped_sizes(name, leaves, dims, sizes):
    """JAX's error for mapped axes of different sizes, naming each one."""
    if len(set(sizes)) > 1:
        desc = [f"axis {d} of an argument of shape {get_aval(x).shape} has size "
                f"{get_aval(x).shape[d]}" for x, d in zip(leaves, dims) if d is not None]
        raise ValueError(f"{name} got inconsistent sizes for array axes to be mapped:\n  "
                         + "\n  ".join(desc))


def _flatten_axes(what, tree, axes):
    """Broadcasts the prefix tree `axes` to the leaves of `tree`."""
    if axes is None or isinstance(axes, int):
        return [axes] * len(tree_leaves(tree))
    try:
        # Treat None in the axes spec as a leaf (it means "not mapped"). The value tree is
        # only flattened (to the spec's prefix), never rebuilt: a user's pytree node is
        # never unflattened with stand-in leaves.
        leaves_spec, spec_tree = tree_flatten(axes, is_leaf=lambda x: x is None)
        subtrees = spec_tree.flatten_up_to(tree)
    except ValueError:
        raise ValueError(f"{what} specification must be a tree prefix of the corresponding "
                         f"value, got specification {axes} for value tree "
                         f"{tree_structure(tree)}.") from None
    out = []
    for spec, sub in zip(leaves_spec, subtrees):
        if spec is not None and not isinstance(spec, int):
            raise TypeError(f"{what} must be an int, None, or a tree of those; got {spec!r}.")
        out.extend([spec] * len(tree_leaves(sub)))
    return out


def vmap(fun: Callable, in_axes=0, out_axes=0, axis_name=None, axis_size=None,
         spmd_axis_name=None):
    """Vectorizes `fun` over the `in_axes` of its arguments, adding a batch axis at `out_axes`."""
    if not callable(fun):
        raise TypeError(f"vmap requires a callable, got {fun!r}.")
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)

    @_wraps(fun)
    @api_boundary
    def batched(*args, **kwargs):
        if isinstance(in_axes, tuple) and len(in_axes) != len(args):
            raise ValueError(f"vmap in_axes must be an int, None, or a tuple of entries "
                             f"corresponding to the positional arguments passed to the function, "
                             f"but got len(in_axes)={len(in_axes)}, len(args)={len(args)}")
        leaves, in_tree = tree_flatten((args, kwargs))
        leaves = _canonical_leaves(leaves)
        ref_leaves = _ref_state.arg_ref_values(leaves)   # a Ref argument maps over its value
        dims, sizes = mapped_axes("vmap", args, in_axes, ref_leaves)
        size = axis_size
        if size is None:
            if not sizes:
                raise ValueError("vmap must have at least one non-None value in in_axes "
                                 "(or be given axis_size).")
            check_mapped_sizes("vmap", leaves, dims, sizes)
            size = sizes[0]
        elif any(s != size for s in sizes):
            raise ValueError(f"vmap got axis_size={size} but mapped axes of sizes {sizes}.")
        out_store: list = []
        flat = _flatten_fun(fun, in_tree, out_store)
        if ref_leaves is not leaves:
            flat, leaves, ref_finish = _ref_state.vmap_ref_scope(flat, leaves, dims, size)
        outs, out_dims = batching.vmap_flat(flat, size, dims, args=leaves, axis_name=axis_name)
        if ref_leaves is not leaves:
            outs, out_dims = ref_finish(outs, out_dims)
        out_tree = out_store[0]
        out_ax = _flatten_axes("vmap out_axes", tree_unflatten(out_tree, outs), out_axes)
        final = []
        for o, d, ax in zip(outs, out_dims, out_ax):
            if ax is None:
                if d is not None:
                    raise ValueError("vmap has mapped output but out_axes is None")
                final.append(o)
                continue
            o = batching.bdim_at_front(o, d, size)
            ax = ax % get_aval(o).ndim
            final.append(batching.moveaxis(o, 0, ax))
        return tree_unflatten(out_tree, final)

    return batched
