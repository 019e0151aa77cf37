"""Eager fusion: a composed jnp function called eagerly on large arrays runs as one compiled
program.

JAX jits its jnp functions, so an eager `jnp.hypot(x, y)` is one XLA kernel. Here a composed
function (hypot is a dozen lax primitives) evaluated op by op runs a dozen eager kernels, each
reading its operands and writing a full-size temporary. `fuse_eagerly` runs such a function,
called outside any trace on an Array of at least MIN_SIZE elements, as one compiled program:
one pass over memory, no temporaries. Where the function's program is elementwise (every
operand and result of one shape, or rank 0) that program is one flat loop built here from the
compiler's own statement emitter and split over the free cores (`_FlatProgram`); otherwise a
cached `jit` of the function. Its results are the op-by-op results bit for bit: jit's fused
kernels compute each elementwise primitive with the scalar code the eager kernels run
(compiler/eager_kernels.py), and only elementwise compositions whose compiled form gives the
eager bits are decorated (tests/test_eager_fusion.py compares every one with its op-by-op
evaluation, special values included). Float reductions are not among them: eager sums are
NumPy's pairwise sums, compiled ones are not (allclose's reduction is a boolean one, exact in
any order). var / std fuse their squared deviations, and reducing a large float array whole,
var and nansum sum in one pass with NumPy's pairwise order (`sum_of_squared_deviations`,
`nan_to_zero_sum`, compiler/eager_sums.py): the bits of the sum of the array they would build.

Everything else runs the function as written, so traces see the composition (jaxprs do not
change) and errors are raised by the code that raises them today:
- a trace is staging (jit, make_jaxpr, control-flow bodies), or an operand is a Tracer (grad,
  vmap) or anything but an Array on the host's default device or a Python scalar, or is
  passed by keyword;
- no operand has MIN_SIZE elements;
- a setting that eager evaluation honours op by op is on: disable_jit, debug_nans /
  debug_infs, no_execution / no_tracing, log_compiles / explain_cache_misses, strict dtype
  promotion, a rank promotion other than 'allow', a transfer guard, CUDA or committed CPU
  placement, sharded arrays.

When, measured on this 2-core machine (float32; op by op / compiled, warm / a compiled
call's first call for a new shape, kernels already compiled): hypot 235 / 10 / 1340 us on 16
elements, 261 / 16 / 1460 on 16K, 1520 / 104 / 1560 on 256K; copysign 72 / 8.5 / 635 on 16,
84 / 11 / 605 on 16K; clip 41 / 18 / 550 on 16, 50 / 21 / 600 on 16K; isinf 25 / 8 / 430 on
16. So a warm compiled call wins at every size, and what it costs is the trace and compile
of each new signature (0.4-1.5 ms; jit keys on shapes), plus, once per process, importing
Numba and loading or compiling the kernels (0.4 s, then 0.04-0.7 s a kernel). Hence:
- arrays below MIN_SIZE (16K elements, where eager evaluation itself starts running compiled
  loops: compiler/eager_kernels.FAST_MIN_SIZE) always run op by op: small programs never
  wait for a compiler, and their dispatch costs one type check per operand more;
- a signature's first call runs op by op too, and its second one compiles: a shape seen once
  never pays the compile, a repeated one gains the difference on every later call (20-250 us
  a call on 16K elements, 0.1-10 ms on 1M).

Python scalar operands are passed as weakly typed rank-0 operands (a `jit` argument, not a
constant: a new value does not compile again), where that changes nothing: their value in the
promoted dtype must be the one the op-by-op path converts them to, exactly (not an int that
overflows it, nor a float that rounds differently through float32); otherwise the function
runs op by op. Other arguments (axis, dtype, decimals, ...) are static: part of the cache key,
by type and value, and passed to the function as given.
"""
from __future__ import annotations

import functools
import math
import inspect
import struct

import numpy as np

from corejax import core, dtypes
from corejax.array import Array, _Placement
from corejax._guards import Guards
from corejax._transfer_guard import Guarded as _TransferGuarded
from corejax.compiler.eager_kernels import FAST_MIN_SIZE
from corejax.config import config
from corejax.sharding import state as _sharding_state

__all__ = ["fuse_eagerly", "MIN_SIZE", "sum_of_squared_deviations", "nan_to_zero_sum"]

MIN_SIZE = FAST_MIN_SIZE

_SCALARS = (int, float, complex, bool)
_trace_state = core._trace_state


class _Settings:
    """Whether a setting asks for op-by-op evaluation (updated as the settings change)."""
    op_by_op = False


def _update_settings(_=None) -> None:
    v = config._values
    _Settings.op_by_op = bool(
        v["disable_jit"] or v["debug_nans"] or v["debug_infs"] or v["no_execution"] or
        v["no_tracing"] or v["log_compiles"] or v["explain_cache_misses"] or
        v["numpy_dtype_promotion"] != "standard" or v["numpy_rank_promotion"] != "allow")


for _name in ("disable_jit", "debug_nans", "debug_infs", "no_execution", "no_tracing",
              "log_compiles", "explain_cache_misses", "numpy_dtype_promotion",
              "numpy_rank_promotion"):
    config.watch(_name, _update_settings)
_update_settings()


def _op_by_op_only() -> bool:
    return (_Settings.op_by_op or _Placement.cuda_in_use or _Placement.cpu_committed or
            _Placement.cpu_default is not None or _TransferGuarded.host_to_device or
            _sharding_state.mesh_arrays or _sharding_state.mesh_ops_staged or
            Guards.no_execution)


def fuse_eagerly(operands: int):
    """Decorates a composed jnp function whose first `operands` parameters are its array
    operands (the rest are static): called eagerly on a large Array, with its operands passed
    by position, it runs as one cached compiled program (see the module's docstring)."""
    def decorate(fn):
        names = frozenset(list(inspect.signature(fn).parameters)[:operands])

        @functools.wraps(fn)
        def fused(*args, **kwargs):
            if _trace_state.dynamic_level or (kwargs and not names.isdisjoint(kwargs)):
                return fn(*args, **kwargs)
            large = False
            for a in args[:operands]:
                if type(a) is Array:
                    v = a._value
                    if type(v) is not np.ndarray:
                        return fn(*args, **kwargs)
                    if v.size >= MIN_SIZE:
                        large = True
                elif a is not None and type(a) not in _SCALARS:
                    return fn(*args, **kwargs)
            if not large or _op_by_op_only():
                return fn(*args, **kwargs)
            return _call_fused(fn, operands, args, kwargs)

        return fused
    return decorate


_LEAF = object()    # a pattern's mark for an operand passed to the program
_programs: dict = {}    # (function, pattern and static arguments) -> its jitted program
_seen: set = set()      # the same with the operands' avals: signatures called once


def _call_fused(fn, operands, args, kwargs):
    ops = args[:operands]
    leaves, pattern = [], []
    for a in ops:
        if type(a) is Array:
            leaves.append(a)
            pattern.append(_LEAF)
        elif a is None:
            pattern.append(None)
        else:
            leaf = _scalar_operand(a, ops)
            if leaf is None:
                return fn(*args, **kwargs)
            leaves.append(leaf)
            pattern.append(_LEAF)
    try:
        key = (fn, tuple(pattern), _static_key(args[operands:]),
               _static_key(tuple(sorted(kwargs.items()))))
        program = _programs.get(key)
    except TypeError:           # an unhashable static argument (or an array passed as one)
        return fn(*args, **kwargs)
    signature = (key, tuple([(a._value.shape, a._value.dtype, a.weak_type) for a in leaves]))
    if signature not in _seen:  # its first call: compiling pays from the second one on
        _seen.add(signature)
        return fn(*args, **kwargs)
    if program is None:
        program = _programs[key] = _program(fn, tuple(pattern), args[operands:], kwargs)
    return program(*leaves)


def _program(fn, pattern, rest, kwargs):
    """`fn` as a function of the operands marked in `pattern`, compiled: a flat loop where its
    program is elementwise (`_FlatProgram`), else its `jit`."""
    from corejax.api import jit

    def composed(*leaves):
        it = iter(leaves)
        return fn(*[next(it) if p is _LEAF else p for p in pattern], *rest, **kwargs)

    composed.__name__ = composed.__qualname__ = fn.__name__
    return _FlatProgram(composed, jit(composed))


class _FlatProgram:
    """A composed function run as one loop over its operands' elements, split over the cores
    that are free (compiler/eager_kernels.call_split), where its program is elementwise: every
    operand of one shape S (C-contiguous) or rank 0, every equation an elementwise primitive
    (on operands of shape S, or on rank-0 ones: computed once, before the loop) or a
    broadcast of a rank-0 value to S, every result of shape S. The loop's body is the one
    jit's fused kernel inlines, each equation's statement written by the compiler's own
    emitter (compiler/codegen.emit_eqns), so the bits are jit's (and the op-by-op ones:
    tests/test_eager_fusion.py). Any other program runs its `jit`, unsplit (jit's executor
    keeps its loops on one thread below codegen.PARALLEL_MIN elements)."""

    def __init__(self, composed, jitted):
        self.composed, self.jitted = composed, jitted
        self.loops: dict = {}       # operand avals -> (kernel, ...) or None

    def __call__(self, *leaves):
        values = [a._value for a in leaves]
        sig = tuple([(v.shape, v.dtype, a.weak_type) for a, v in zip(leaves, values)])
        loop = self.loops.get(sig, False)
        if loop is False:
            loop = self.loops[sig] = _flat_loop(self.composed, leaves)
        if loop is None:
            return self.jitted(*leaves)
        fn, shape, out_avals, out_tree = loop
        flat, scalar = [], []
        for v in values:
            if v.shape == shape:
                flat.append(v.reshape(-1) if v.flags.c_contiguous else
                            np.ascontiguousarray(v).reshape(-1))
                scalar.append(False)
            else:
                flat.append(v.reshape(1))
                scalar.append(True)
        outs = [np.empty(shape, dt) for dt, _ in out_avals]
        _eager_kernels().call_split(fn, math.prod(shape), flat, scalar,
                                    [o.reshape(-1) for o in outs])
        from corejax.tree_util import tree_unflatten
        return tree_unflatten(out_tree, [Array(o, weak) for o, (_, weak) in zip(outs, out_avals)])


def _eager_kernels():
    from corejax.compiler import eager_kernels
    return eager_kernels


# dtypes a flat loop handles (Numba's own; no float16 / bfloat16, whose arithmetic the
# compiler emulates)
_LOOP_DTYPES = frozenset(map(np.dtype, (
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
    np.float32, np.float64)))


def _flat_loop(composed, leaves):
    """(kernel, shape, [(dtype, weak type)] of the results, their tree) for `composed` on
    operands like `leaves`, or None where its program is not elementwise (see _FlatProgram)."""
    from corejax.api import make_jaxpr
    from corejax.compiler import registry
    from corejax.compiler.codegen import emit_eqns
    from corejax.compiler.passes import inline_calls
    from corejax.compiler.scalar_ctx import ScalarCtx, literal
    from corejax.core import Literal
    from corejax.lax.structural import broadcast_in_dim_p
    from corejax.tree_util import tree_flatten

    shape = max((a._value.shape for a in leaves), key=len)
    if not shape or any(a._value.shape not in (shape, ()) for a in leaves) or \
            any(a._value.dtype not in _LOOP_DTYPES for a in leaves):
        return None
    closed, out_shapes = make_jaxpr(composed, return_shape=True)(*leaves)
    # a custom_jvp function (logaddexp) runs its primal body: inline it, as jit does
    closed = inline_calls(closed)
    jaxpr = closed.jaxpr
    _, out_tree = tree_flatten(out_shapes)
    if closed.consts or jaxpr.constvars:
        return None
    alias: dict = {}            # a broadcast's result -> the rank-0 atom it broadcasts
    kept, in_loop = [], []
    for eqn in jaxpr.eqns:
        outs = eqn.outvars
        if any(v.aval.dtype not in _LOOP_DTYPES for v in [*eqn.invars, *outs]):
            return None
        if eqn.primitive is broadcast_in_dim_p:
            if eqn.invars[0].aval.shape != () or outs[0].aval.shape != shape:
                return None
            alias[outs[0]] = eqn.invars[0]
            continue
        if eqn.primitive not in registry.elementwise_lowerings or len(outs) != 1:
            return None
        shapes = {v.aval.shape for v in [*eqn.invars, *outs]}
        if shapes not in ({shape}, {()}):
            return None
        kept.append(eqn)
        in_loop.append(outs[0].aval.shape == shape)
    results = [alias.get(v, v) for v in jaxpr.outvars]
    if any(type(v) is Literal or v.aval.shape != shape for v in jaxpr.outvars) or \
            any(type(v) is Literal or v in jaxpr.invars for v in results):
        return None

    names = {v: f"x{j}" for j, v in enumerate(jaxpr.invars)}

    def expr_of(atom):
        atom = alias.get(atom, atom) if type(atom) is not Literal else atom
        if type(atom) is Literal:
            return literal(atom.val, atom.aval.dtype)
        return names[atom]

    class Group:
        eqns = kept

    ctx = ScalarCtx()
    body = emit_eqns(Group, ctx, expr_of, names)
    n_in, n_out = len(jaxpr.invars), len(results)
    args = ", ".join([f"a{j}" for j in range(n_in)] + [f"o{j}" for j in range(n_out)])
    hoisted = [f"    x{j} = a{j}[0]" for j, v in enumerate(jaxpr.invars) if v.aval.shape == ()]
    hoisted += [f"    {line}" for line, loop in zip(body, in_loop) if not loop]
    loads = [f"        x{j} = a{j}[i0]" for j, v in enumerate(jaxpr.invars) if v.aval.shape]
    stores = [f"        o{k}[i0] = {expr_of(v)}" for k, v in enumerate(results)]
    source = "\n".join([
        "import math", "import numpy as np", "from numba import njit", *sorted(ctx.imports),
        "", "",
        '@njit(error_model="numpy", nogil=True, cache=True)',
        f"def kernel(n0, {args}):",
        *hoisted,
        "    for i0 in range(n0):",
        *loads,
        *[f"        {line}" for line, loop in zip(body, in_loop) if loop],
        *stores,
    ]) + "\n"
    from corejax.compiler import diskcache
    from numba import types
    sig = [types.int64] + \
        [diskcache.numba_type(v.aval.dtype) for v in [*jaxpr.invars, *results]]
    fn = _eager_kernels().load_flat(source, sig)
    return fn, shape, [(v.aval.dtype, v.aval.weak_type) for v in results], out_tree


def _static_key(v):
    """A hashable key telling static values apart as the function would: by type and value
    (1, 1.0 and True differ, so do 0.0 and -0.0); arrays are not static (TypeError)."""
    t = type(v)
    if t is tuple:
        return tuple([_static_key(x) for x in v])
    if t is float:
        return t, struct.pack("<d", v)
    if t is complex:
        return t, struct.pack("<dd", v.real, v.imag)
    if isinstance(v, np.generic):
        return t, v.tobytes()
    if isinstance(v, (Array, core.Tracer, np.ndarray)):
        raise TypeError("an array is not a static argument")
    hash(v)
    return t, v


# dtypes whose conversions compile to the machine's own (IEEE) conversions, as NumPy's casts
_NATIVE = frozenset(map(np.dtype, (
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
    np.float32, np.float64, np.complex64, np.complex128)))


_scalar_values: dict = {}   # (scalar's key, operands' dtypes) -> (its rank-0 value, weak) or None


def _scalar_operand(s, ops):
    """The Python scalar `s` as a rank-0 Array of its own (weak) dtype, when the program
    converting it to the operands' promoted dtype gives the value the op-by-op path makes of
    it (np.asarray(s, promoted)); else None. Remembered per scalar and operand dtypes (a
    notebook's jnp.clip(x, 0.2, 0.8) asks the same question at every call)."""
    try:
        key = (_static_key(s), tuple([(a._value.dtype, a.weak_type) if type(a) is Array
                                      else _static_key(a) for a in ops]))
        got = _scalar_values.get(key, False)
    except TypeError:
        key, got = None, False
    if got is False:
        got = _scalar_value(s, ops)
        if key is not None:
            if len(_scalar_values) >= 1024:
                _scalar_values.clear()
            _scalar_values[key] = got
    return None if got is None else Array(*got)


def _scalar_value(s, ops):
    try:
        own, weak = dtypes.result_type_and_weakness(s)
        promoted, _ = dtypes.result_type_and_weakness(*[a for a in ops if a is not None])
        with np.errstate(all="ignore"):
            value = np.asarray(s, own)
            if promoted != own and (promoted not in _NATIVE or np.isnan(value) or
                                    np.asarray(s, promoted).tobytes() !=
                                    value.astype(promoted).tobytes()):
                return None
    except (OverflowError, ValueError, TypeError):
        return None
    value.flags.writeable = False       # shared by every call that asks for it
    return value, weak


def _whole_sum_operand(a, axes):
    """a's NumPy value where a one-pass sum of it applies: eagerly, a C-contiguous float32 /
    float64 Array of at least MIN_SIZE elements reduced over every axis; else None."""
    if _trace_state.dynamic_level or type(a) is not Array:
        return None
    v = a._value
    if type(v) is not np.ndarray or v.size < MIN_SIZE or v.dtype not in _SUM_DTYPES or \
            not v.flags.c_contiguous or (axes is not None and
                                         tuple(axes) != tuple(range(v.ndim))) or \
            _op_by_op_only():
        return None
    return v


def _sum_result(total, ndim, keepdims):
    out = np.asarray(total)
    return Array(out.reshape((1,) * ndim) if keepdims else out, False)


def sum_of_squared_deviations(a, m, axes, keepdims):
    """sum(|a - m|**2, axes, keepdims=keepdims) with the bits of that op-by-op sum, in one
    pass over `a` without the squares' array, where that applies (see _whole_sum_operand; m
    a's mean kept as (1, ..., 1)); else None (var then computes the squares and sums them).
    The squares are rounded to a's dtype and summed in NumPy's pairwise order, as np.sum of
    their array does (compiler/eager_sums.py)."""
    v = _whole_sum_operand(a, axes)
    if v is None or type(m) is not Array or type(m._value) is not np.ndarray or \
            m._value.dtype != v.dtype or m._value.size != 1:
        return None
    total = _eager_kernels().pairwise_sum(v.reshape(-1), m._value.reshape(()).item())
    return _sum_result(total, v.ndim, keepdims)


def nan_to_zero_sum(a, keepdims):
    """nansum(a, keepdims=keepdims) over every axis with the bits of its op-by-op evaluation
    (the sum of where(isnan(a), 0, a)), in one pass without that array, where that applies
    (see _whole_sum_operand); else None."""
    v = _whole_sum_operand(a, None)
    if v is None:
        return None
    return _sum_result(_eager_kernels().pairwise_sum(v.reshape(-1), nan_to_zero=True),
                       v.ndim, keepdims)


_SUM_DTYPES = frozenset(map(np.dtype, (np.float32, np.float64)))
