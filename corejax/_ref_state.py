"""Mutable array references, functionalized: the box, its scopes, and their threading.

A `Ref` is a mutable box around an immutable value. Eagerly the box holds an Array. Under a
transformation it holds a value of that transformation (a tracer): every read returns the
current value and every write replaces it with a new one built by ordinary lax ops, so no
primitive of any transformation ever sees a reference ("discharge" at trace time). This keeps
every rule of every primitive valid unchanged, and gives JAX's observable results.

A reference lives at a *home* trace level: where it was created, or the staging trace it was
last threaded into. A staged program that touches a reference from below its level (a jit's
closed-over or argument reference, a loop body's closed-over one) gets a *scope*: the scope
adopts the reference, replacing its value by an input of the staged program for the duration
of the trace; its final value becomes an output of the program, written back into the box
after each call. jit adopts lazily (new inputs appended as the function touches references);
control-flow bodies are strict: the first touch of an unthreaded reference aborts the trace
(`NeedRef`) and the construct retraces with that reference threaded as a carry.

Writing a value of a transformation above the reference's home (a vmapped value into a
closed-over reference, a differentiated value into an undifferentiated one) raises, as JAX
does: after that transformation ended, the box would hold a dead tracer.
"""
from __future__ import annotations

import threading
from typing import Callable

import numpy as np

from corejax import core, dtypes
from corejax.core import ShapedArray, Tracer
from corejax.errors import UnexpectedTracerError

__all__ = ["AbstractRef", "Ref", "read", "write", "NeedRef", "strict_scope", "with_refs",
           "JitRefPlan", "jit_ref_scope", "is_ref"]


class AbstractRef:
    """The abstract value of a reference: the aval of the array it holds."""

    __slots__ = ("inner_aval", "memory_space", "kind")

    def __init__(self, inner_aval: ShapedArray, memory_space=None, kind=None):
        self.inner_aval, self.memory_space, self.kind = inner_aval, memory_space, kind

    shape = property(lambda self: self.inner_aval.shape)
    dtype = property(lambda self: self.inner_aval.dtype)
    weak_type = property(lambda self: self.inner_aval.weak_type)
    ndim = property(lambda self: self.inner_aval.ndim)
    size = property(lambda self: self.inner_aval.size)

    def str_short(self) -> str:
        return f"Ref{{{self.inner_aval.str_short()}}}"

    def __eq__(self, other):
        return type(other) is AbstractRef and self.inner_aval == other.inner_aval

    def __hash__(self):
        return hash((AbstractRef, self.inner_aval))

    def __str__(self):
        return f"Ref{{{self.inner_aval.dtype.name}[{','.join(map(str, self.shape))}]}}"

    __repr__ = __str__


def _top_main():
    stack = core._trace_state.stack
    return stack[-1] if len(stack) > 1 else None


class Ref:
    """A mutable array reference (create with `new_ref`). Index it to read (`r[idx]`) or
    write (`r[idx] = v`); it is not an array itself: arithmetic needs `r[...]`."""

    __slots__ = ("_value", "_main", "_state", "_aval_extra", "__weakref__")

    def __init__(self, value, memory_space=None, kind=None):
        self._value = value
        self._main = _top_main()     # home: None is the bottom (eager) level
        self._state = None           # None, or "freed" / "frozen" once consumed in a trace
        self._aval_extra = (memory_space, kind)

    @property
    def aval(self) -> AbstractRef:
        return AbstractRef(core.get_aval(self._value), *self._aval_extra)

    shape = property(lambda self: core.get_aval(self._value).shape)
    dtype = property(lambda self: core.get_aval(self._value).dtype)
    weak_type = property(lambda self: core.get_aval(self._value).weak_type)
    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __getitem__(self, idx):
        from corejax.ref import get
        return get(self, idx)

    def __setitem__(self, idx, value):
        from corejax.ref import set as ref_set
        ref_set(self, idx, value)

    def addupdate(self, x, idx=None):
        from corejax.ref import addupdate
        addupdate(self, idx, x)

    @property
    def at(self):
        raise NotImplementedError("Ref.at is not supported: index the reference directly "
                                  "(r[idx], r[idx] = v) or use corejax.ref.get/set/addupdate.")

    def unsafe_buffer_pointer(self) -> int:
        """The address of the buffer holding the reference's current value (eager only; a
        write through the reference may move it: corejax replaces the value it holds)."""
        val = read(self, "unsafe_buffer_pointer")
        if isinstance(val, Tracer):
            from corejax.errors import ConcretizationTypeError
            raise ConcretizationTypeError(val, "unsafe_buffer_pointer of a traced Ref")
        return val.unsafe_buffer_pointer()

    def __bool__(self):
        raise TypeError("A Ref has no truth value: read it first (bool(r[...])).")

    def __iter__(self):
        raise TypeError("A Ref is not iterable: read it first (r[...]).")

    def __array__(self, dtype=None, copy=None):
        raise TypeError("A Ref is not an array: read its value with r[...] or freeze(r).")

    __hash__ = object.__hash__

    def __repr__(self):
        val = self._value
        if isinstance(val, Tracer) or self._state is not None:
            return f"Ref{{{self.aval}}}" if self._state is None else \
                f"Ref(<{self._state}>)"
        body = repr(val)
        return "Ref" + body[body.index("("):] if body.startswith("Array(") else f"Ref({body})"

    __str__ = __repr__


def is_ref(x) -> bool:
    return type(x) is Ref


# --- scopes ----------------------------------------------------------------------------------

class NeedRef(BaseException):
    """A strict scope met a reference from outside it: the construct retraces threading it.
    (A BaseException, so a user's `except Exception` in the traced function lets it pass.)"""

    def __init__(self, ref: Ref, scope):
        super().__init__("internal: reference to thread through a staged body")
        self.ref, self.scope = ref, scope


class _Scope:
    """The references one staging trace threads: each adopted one's saved outer state, the
    input it starts from, in order of adoption."""

    def __init__(self, main, lift: Callable | None, arg_refs=()):
        self.main = main
        self.lift = lift                   # aval -> input tracer; None: strict
        self.adopted: dict[int, tuple] = {}   # id -> (ref, outer value, outer main, start)
        self.arg_refs = {id(r): name for r, name in arg_refs}

    def adopt(self, ref: Ref, start=None):
        if start is None:
            if self.lift is None:
                raise NeedRef(ref, self)
            if id(ref) in self.arg_refs:
                raise ValueError(
                    f"when tracing for jit, a mutable array reference of type {ref.aval} was "
                    f"both closed over and passed as the argument {self.arg_refs[id(ref)]}; "
                    "pass it only as an argument (or only close over it).")
            start = self.lift(ref.aval.inner_aval)
        self.adopted[id(ref)] = (ref, ref._value, ref._main, start)
        ref._value, ref._main = start, self.main

    def restore(self) -> list:
        """Puts every adopted reference back as it was outside; returns the final values."""
        finals = []
        for ref, outer_val, outer_main, _ in self.adopted.values():
            finals.append(ref._value)
            ref._value, ref._main = outer_val, outer_main
        return finals


class _Scopes(threading.local):
    def __init__(self):
        self.stack: list[_Scope] = []


_scopes = _Scopes()


def _level(main) -> int:
    return 0 if main is None else main.level


def _materialize(ref: Ref, what: str):
    """Makes `ref` usable at the current trace: checks it is alive and adopts it into every
    active scope above its home."""
    if type(ref) is not Ref:
        raise TypeError(f"`{what}` must be called on a Ref, got {type(ref).__name__}: create "
                        "one with corejax.new_ref(value).")
    if ref._state is not None:
        raise ValueError(f"`{what}` on a mutable array reference that was already "
                         f"{ref._state} (by {'freeze' if ref._state == 'frozen' else 'free_ref'}"
                         "); a reference may not be used after it is consumed.")
    main = ref._main
    if main is not None and not main.alive:
        raise UnexpectedTracerError(
            "Encountered an unexpected tracer: a mutable array reference of type "
            f"{ref.aval} was created inside a transformation (jit, vmap, grad, a loop body) "
            "and used after it ended. Return the reference's value (r[...]) from the "
            "transformed function instead of keeping the reference.")
    for scope in _scopes.stack:
        if scope.main.level > _level(ref._main):
            scope.adopt(ref)


def read(ref: Ref, what: str = "get"):
    """The current value of `ref` at the current trace."""
    _materialize(ref, what)
    return ref._value


def _escaping_error(ref: Ref, val: Tracer) -> Exception:
    from corejax.transforms.ad import JVPTracer, PartialEvalTracer
    from corejax.transforms.batching import BatchTracer
    if isinstance(val, BatchTracer):
        return Exception(
            "performing a set/swap operation with vmapped value on an unbatched array "
            f"reference of type {ref.aval}. Move the array reference to be an argument to the "
            "vmapped function?")
    if isinstance(val, (JVPTracer, PartialEvalTracer)):
        return Exception(
            "performing a set/swap operation with a differentiated value on a "
            f"non-differentiated array reference of type {ref.aval}. Move the array reference "
            "to be an argument of the differentiated function?")
    return NotImplementedError(
        f"writing a value traced by {type(val._trace).__name__} into a mutable array "
        f"reference of type {ref.aval} created outside that transformation: references are "
        "threaded through jit, vmap, grad and lax control flow only (not through "
        "custom_jvp/custom_vjp, checkpoint, make_jaxpr, shard_map or pmap bodies). Pass the "
        "value out explicitly and write it after the transformation.")


def write(ref: Ref, value, what: str = "swap"):
    """Replaces the whole value of `ref` (shape and dtype already checked by the caller)."""
    _materialize(ref, what)
    value = core.full_lower(value)
    home = _level(ref._main)
    if isinstance(value, Tracer) and value._trace.main.level > home:
        raise _escaping_error(ref, value)
    from corejax.transforms.batching import BatchTrace, BatchTracer
    if any(m.trace_type is BatchTrace for m in core._trace_state.stack[home + 1:]):
        # (as in JAX, even an unbatched value: the write would happen once for the batch)
        raise _escaping_error(ref, BatchTracer(None, value, 0))
    ref._value = value


def consume(ref: Ref, state: str, what: str):
    """freeze / free_ref: the value, and the reference unusable afterwards inside a trace
    (eagerly a frozen reference stays readable, as in JAX)."""
    val = read(ref, what)
    if _level(ref._main) > 0 or state == "freed":
        if _scopes.stack and _scopes.stack[-1].main is ref._main and \
                id(ref) in _scopes.stack[-1].adopted:
            raise ValueError(f"{what} of a mutable array reference from outside the traced "
                             "function (closed over or passed in) is not supported: call it "
                             "outside the transformation.")
        ref._state = state
    return val


class strict_scope:
    """Threads `refs` (starting from `values`) through the body being traced now; any other
    reference from outside raises NeedRef. `finals()` are the threaded values at the end."""

    def __init__(self, refs, values):
        self.refs, self.values = list(refs), list(values)

    def __enter__(self):
        for ref in self.refs:   # (into the enclosing scopes first)
            _materialize(ref, "get")
        self.scope = _Scope(core._trace_state.dynamic, None)
        _scopes.stack.append(self.scope)
        try:
            for ref, v in zip(self.refs, self.values):
                self.scope.adopt(ref, v)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def finals(self) -> list:
        return [self.scope.adopted[id(r)][0]._value for r in self.refs]

    def __exit__(self, *exc):
        _scopes.stack.remove(self.scope)
        self.scope.restore()
        return False


def with_refs(construct: Callable[[list], object]):
    """`construct(refs)`, retried with each reference a strict body scope asked for."""
    refs: list[Ref] = []
    while True:
        depth = len(_scopes.stack)
        try:
            return construct(refs)
        except NeedRef as e:
            # (only a scope this construct opened: an enclosing construct's body scope sits
            # below `depth` and retries itself)
            if any(s is e.scope for s in _scopes.stack[:depth]) or e.ref in refs:
                raise
            refs.append(e.ref)


def write_all(refs, finals):
    """Writes back what a staged program computed for each reference (keeping the
    reference's own weak type, which a loop carry does not)."""
    for ref, val in zip(refs, finals):
        _materialize(ref, "swap")
        weak = core.get_aval(ref._value).weak_type
        if core.get_aval(val).weak_type != weak:
            from corejax.lax import convert_element_type
            val = convert_element_type(val, core.get_aval(val).dtype, weak_type=weak)
        write(ref, val)


# --- jit -------------------------------------------------------------------------------------

class JitRefPlan:
    """How one traced jit program threads references: operands after the plain leaves are
    the argument references' values, then the closed-over references'; the outputs after the
    function's own are the final values of those the program wrote (`written`: their
    indices in that order)."""

    __slots__ = ("arg_positions", "closure_refs", "num_outs", "written")

    def __init__(self, arg_positions, closure_refs, num_outs, written):
        self.arg_positions, self.closure_refs = tuple(arg_positions), list(closure_refs)
        self.num_outs, self.written = num_outs, tuple(written)

    def operands(self, consts, leaves) -> list:
        pos = set(self.arg_positions)
        plain = [x for i, x in enumerate(leaves) if i not in pos]
        refs = [leaves[i] for i in self.arg_positions] + self.closure_refs
        return [*consts, *plain, *[read(r) for r in refs]]

    def finish(self, leaves, outs) -> list:
        refs = [leaves[i] for i in self.arg_positions] + self.closure_refs
        write_all([refs[i] for i in self.written], outs[self.num_outs:])
        return list(outs[:self.num_outs])


def check_arg_refs(leaves, names, fun_name: str) -> tuple:
    """The positions of reference leaves; a reference passed twice is a ValueError."""
    seen: dict[int, int] = {}
    positions = []
    for i, x in enumerate(leaves):
        if type(x) is Ref:
            if id(x) in seen:
                a, b = names[seen[id(x)]] if seen[id(x)] < len(names) else seen[id(x)], \
                    names[i] if i < len(names) else i
                raise ValueError(
                    "only one reference to a mutable array may be passed as an argument to a "
                    f"function, but when tracing {fun_name} for jit the mutable array reference"
                    f" of type {x.aval} appeared at both {a} and {b}.")
            seen[id(x)] = i
            positions.append(i)
    return tuple(positions)


def jit_ref_scope(flat_fun, leaves, arg_positions, names, fun_name, plan_store: list):
    """`flat_fun` as a function of the plain (non-reference) leaves, for staging by jit:
    argument references become fresh references on new inputs; closed-over ones are adopted
    as the function touches them; their final values are appended to the outputs. The plan
    lands in `plan_store` (None when the function touched no reference)."""
    pos = set(arg_positions)

    def staged(*plain):
        main = core._trace_state.dynamic
        trace = main.with_trace()
        scope = _Scope(main, trace.new_arg,
                       [(leaves[i], names[i] if i < len(names) else f"args[{i}]")
                        for i in arg_positions])
        _scopes.stack.append(scope)
        try:
            it = iter(plain)
            proxies, starts = {}, []
            full = []
            for i, x in enumerate(leaves):
                if i in pos:
                    proxy = Ref(trace.new_arg(x.aval.inner_aval), *x._aval_extra)
                    proxies[i] = proxy
                    starts.append(proxy._value)
                    full.append(proxy)
                else:
                    full.append(next(it))
            outs = flat_fun(*full)
            for o in outs:
                if type(o) is Ref:
                    raise ValueError(_returned_ref_message(o, fun_name, proxies, names))
        finally:
            _scopes.stack.remove(scope)
            closure_finals = scope.restore()
        closure = [entry[0] for entry in scope.adopted.values()]
        if proxies or closure:
            starts += [entry[3] for entry in scope.adopted.values()]
            finals = [proxies[i]._value for i in arg_positions] + closure_finals
            written = [k for k, (a, b) in enumerate(zip(starts, finals)) if a is not b]
            plan_store.append(JitRefPlan(arg_positions, closure, len(outs), written))
            return [*outs, *[finals[k] for k in written]]
        plan_store.append(None)
        return outs

    return staged


# --- vmap ------------------------------------------------------------------------------------
# A reference passed to a vmapped function along a mapped axis is threaded like jit's argument
# references: the function sees a fresh reference whose value is the batched value, and what it
# holds at the end is written back, the batch axis where it was. One passed with in_axes None
# stays itself (a write of a batched value into it raises, as for a closed-over one).

def arg_ref_values(leaves) -> list:
    """`leaves` with each reference replaced by its current value (the same list if none)."""
    if not any(type(x) is Ref for x in leaves):
        return leaves
    return [read(x) if type(x) is Ref else x for x in leaves]


def vmap_ref_scope(flat_fun, leaves, dims, size):
    """(fun, leaves, finish) for batching.vmap_flat: `fun` runs `flat_fun` with the mapped
    references as fresh references on the batched values and appends their final values to
    the outputs; `finish(outs, out_dims)` writes those back and returns the function's own."""
    mapped = [i for i, x in enumerate(leaves) if type(x) is Ref and dims[i] is not None]

    def fun(*args):
        args, proxies = list(args), []
        for i in mapped:
            proxies.append(Ref(args[i], *leaves[i]._aval_extra))
            args[i] = proxies[-1]
        outs = flat_fun(*args)
        return [*outs, *[p._value for p in proxies]]

    def finish(outs, out_dims):
        from corejax.transforms import batching
        n = len(outs) - len(mapped)
        for k, i in enumerate(mapped):
            val = batching.bdim_at_front(outs[n + k], out_dims[n + k], size)
            write_all([leaves[i]], [batching.moveaxis(val, 0, dims[i])])
        return outs[:n], out_dims[:n]

    return fun, [read(x) if type(x) is Ref and dims[i] is not None else x
                 for i, x in enumerate(leaves)], finish


def _returned_ref_message(ref, fun_name, proxies, names) -> str:
    where = ""
    for i, p in proxies.items():
        if p is ref:
            where = f"\n\nThe returned mutable array was passed in as the argument " \
                    f"{names[i] if i < len(names) else f'args[{i}]'}."
    return (f"function {fun_name} traced for jit returned a mutable array reference of type "
            f"{ref.aval}, but mutable array references cannot be returned. Return its value "
            f"(r[...]) instead.{where}")


def canonical_value(x):
    """new_ref's initial value as an operand: Arrays and tracers as they are, NumPy values and
    scalars as Arrays of the canonical dtype."""
    if isinstance(x, Tracer):
        return x
    from corejax.array import Array
    if type(x) is Array or isinstance(x, Array):
        return x
    if type(x) in (int, float, complex, bool):
        import corejax.numpy as jnp
        return jnp.asarray(x)
    if isinstance(x, (np.ndarray, np.generic)):
        val = np.asarray(x)
        return Array(np.array(val, dtype=dtypes.canonicalize_dtype(val.dtype), copy=True))
    raise TypeError("Error interpreting argument to new_ref as a corejax value. The "
                    f"problematic value is of type {type(x)} and was passed to new_ref at "
                    "position 0: pass an array, a NumPy array or a scalar.")


# --- lax control flow ------------------------------------------------------------------------
# Each construct stages its user functions with a strict scope; the references they touch from
# outside become extra carries (loops) or operands and outputs (branches), written back after.

def _body(f, refs, ret_finals=True):
    """`f` on `(args..., ref values)` inside a strict scope, returning `(out, finals)`."""
    import functools

    @functools.wraps(f)
    def g(*args):
        args, values = (args[:-1], args[-1]) if refs else (args, ())
        with strict_scope(refs, values) as sc:
            out = f(*args)
            finals = sc.finals()
        return (out, finals) if refs and ret_finals else out
    return g


def _loop_inits(refs) -> list:
    """The threaded references' values entering a loop; as in JAX, a loop carries them
    strongly typed (a weakly typed reference comes out of the loop strong)."""
    from corejax.lax import convert_element_type
    vals = [read(r) for r in refs]
    return [convert_element_type(v, core.get_aval(v).dtype) if core.get_aval(v).weak_type
            else v for v in vals]


def thread_scan(scan_impl, f, init, xs, *rest):
    def construct(refs):
        if not refs:
            return scan_impl(_body(f, refs), init, xs, *rest)
        body = _body(f, refs)

        def step(carry, x):
            (c, y), finals = body(carry[0], x, carry[1])
            return (c, finals), y
        (c, finals), ys = scan_impl(step, (init, _loop_inits(refs)), xs, *rest)
        write_all(refs, finals)
        return c, ys
    return with_refs(construct)


def thread_while(while_impl, cond_fun, body_fun, init_val):
    def construct(refs):
        if not refs:
            return while_impl(_body(cond_fun, refs), _body(body_fun, refs), init_val)
        cond, body = _body(cond_fun, refs), _body(body_fun, refs)

        def cond2(carry):
            out, finals = cond(carry[0], carry[1])
            if any(a is not b for a, b in zip(finals, carry[1])):
                raise NotImplementedError(
                    "while_loop's cond_fun wrote to a mutable array reference: write it in "
                    "body_fun instead (cond_fun may only read references).")
            return out

        def body2(carry):
            return body(carry[0], carry[1])
        out, finals = while_impl(cond2, body2, (init_val, _loop_inits(refs)))
        write_all(refs, finals)
        return out
    return with_refs(construct)


def thread_branches(branch_impl, index, funs, names, operands, *rest):
    def construct(refs):
        wrapped = [_body(f, refs) for f in funs]
        if not refs:
            return branch_impl(index, wrapped, names, operands, *rest)
        out, finals = branch_impl(index, wrapped, names,
                                  (*operands, [read(r) for r in refs]), *rest)
        write_all(refs, finals)
        return out
    return with_refs(construct)
