"""Eager fusion: a composed jnp function called eagerly on large arrays runs as one compiled
program.

JAX jits its jnp functions, so an eager `jnp.hypot(x, y)` is one XLA kernel. Here a composed
function (hypot is a dozen lax primitives) evaluated op by op runs a dozen eager kernels, each
reading its operands and writing a full-size temporary. `fuse_eagerly` runs such a function,
called outside any trace on an Array of at least MIN_SIZE elements, as a cached `jit` of the
function itself: one pass over memory, no temporaries. Its results are the op-by-op results bit
for bit: jit's fused kernels compute each elementwise primitive with the scalar code the eager
kernels run (compiler/eager_kernels.py), and only elementwise compositions whose compiled form
gives the eager bits are decorated (tests/test_eager_fusion.py compares every one with its
op-by-op evaluation, special values included). Float reductions are not among them: eager sums
are NumPy's pairwise sums, compiled ones are not (var and std fuse their squared deviations
only; allclose's reduction is a boolean one, exact in any order).

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

__all__ = ["fuse_eagerly", "MIN_SIZE"]

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
    """`jit` of `fn` as a function of the operands marked in `pattern`."""
    from corejax.api import jit

    def composed(*leaves):
        it = iter(leaves)
        return fn(*[next(it) if p is _LEAF else p for p in pattern], *rest, **kwargs)

    composed.__name__ = composed.__qualname__ = fn.__name__
    return jit(composed)


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


def _scalar_operand(s, ops):
    """The Python scalar `s` as a rank-0 Array of its own (weak) dtype, when the program
    converting it to the operands' promoted dtype gives the value the op-by-op path makes of
    it (np.asarray(s, promoted)); else None."""
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
    return Array(value, weak)
