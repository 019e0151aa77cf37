"""Eager elementwise transcendentals run the scalar code that jit's kernels inline.

In JAX an eager op and the same op under jit give the same bits: both run XLA's kernels. Here a
fused kernel computes a transcendental with the compiler's own scalar code (compiler/fastmath.py's
polynomials, libm through Numba, kernel_lib), while the primitive's NumPy impl computes float32 in
float64 and rounds once, and uses NumPy's float64 functions: the two differ in the last bit on a
fraction of inputs (float32 pow on about 20% of them). So an eager call of a primitive in
`PRIMITIVES` on float32 or float64 operands, at every size, runs a one-loop kernel built from the
primitive's own elementwise lowering rule, the very expression a fused kernel inlines, and
constant folding under jit (compiler/passes.py) evaluates them the same way.

`PRIMITIVES` lists the elementwise primitives whose lowering is not bit-identical to their NumPy
impl; arithmetic, comparisons, sqrt, floor/ceil/round, rem, nextafter, max/min stay on NumPy
(IEEE-exact on both sides, and NumPy runs them on broadcast views without copying), as do the
special functions of lax/special.py, whose impl already runs the same compiled scalar code.
tests/test_eager_kernels.py checks eager == jit bit for bit for every float elementwise
primitive, listed here or not.

Kernels are built on first use per (primitive, dtype, params) and cached on disk like jit's
(compiler/diskcache.py: a new process loads machine code instead of compiling); Numba is imported
then, not with corejax. Array operands are passed flat and C-contiguous (a strided or broadcast
operand is copied first), so a kernel serves every shape, 0-d included.
"""
from __future__ import annotations

import functools

import numpy as np

from corejax import array
from corejax.compiler import registry
from corejax.core import ShapedArray

__all__ = ["PRIMITIVES", "runner", "evaluate", "install"]

PRIMITIVES = frozenset({
    "exp", "exp2", "log", "log1p", "expm1", "tanh", "logistic", "sin", "cos", "tan", "asin",
    "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "erf", "erfc", "erf_inv", "pow",
    "atan2", "cbrt", "rsqrt", "lgamma"})

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _source(primitive, dtype: np.dtype, out_dtype: np.dtype, arity: int, params: dict) -> str:
    """The kernel module: one loop over flat operands, the statement codegen emits for the
    primitive's equation inside it."""
    from corejax.compiler.scalar_ctx import ScalarCtx
    rule = registry.elementwise_lowerings[primitive]
    ctx = ScalarCtx()
    ctx.in_dtypes, ctx.out_dtype = [dtype] * arity, out_dtype
    expr = rule(ctx, *[f"x{j}" for j in range(arity)], **params)
    operands = ", ".join(f"a{j}" for j in range(arity))
    loads = [f"        x{j} = a{j}[i0]" for j in range(arity)]
    return "\n".join([
        "import math", "import numpy as np", "from numba import njit", *sorted(ctx.imports),
        "", "",
        '@njit(error_model="numpy", nogil=True, cache=True)',
        f"def kernel(n0, {operands}, o0):",
        "    for i0 in range(n0):",
        *loads,
        f"        v0 = np.{out_dtype.name}({expr})",
        "        o0[i0] = v0",
    ]) + "\n"


def _build(primitive, dtype: np.dtype, arity: int, params: dict):
    from numba import types
    from corejax.compiler import diskcache
    out_dtype = np.dtype(primitive.abstract_eval(
        *[ShapedArray((), dtype)] * arity, **params).dtype)
    source = _source(primitive, dtype, out_dtype, arity, params)
    sig = [types.int64] + [diskcache.numba_type(dtype)] * arity + \
        [diskcache.numba_type(out_dtype)]
    fn, _ = diskcache.load_kernel(source, sig)
    return fn, out_dtype


@functools.lru_cache(maxsize=None)
def runner(primitive):
    """`run(values, params) -> ndarray | None` evaluating `primitive` on NumPy operands with
    its compiled scalar code, None where it does not apply (another dtype, mismatched operands:
    the NumPy impl then runs, and raises the primitive's own errors); None for a primitive
    outside PRIMITIVES."""
    if primitive.name not in PRIMITIVES or primitive not in registry.elementwise_lowerings:
        return None
    kernels: dict = {}

    def run(values, params):
        v0 = values[0]
        dt = v0.dtype
        if dt not in _FLOATS:
            return None
        for v in values[1:]:
            if v.dtype != dt or v.shape != v0.shape:
                return None
        try:
            key = (dt, len(values), tuple(params.items()) if params else ())
            built = kernels.get(key)
        except TypeError:   # an unhashable parameter
            return None
        if built is None:
            built = kernels[key] = _build(primitive, dt, len(values), params)
        fn, out_dtype = built
        out = np.empty(v0.shape, out_dtype)
        fn(v0.size, *[v.ravel() for v in values], out.reshape(-1))
        return out

    return run


def evaluate(primitive, values, params):
    """`primitive` on NumPy operands as jit's kernels compute it, or None where the NumPy impl
    gives those bits (or the operands are not float32/float64 arrays of one shape)."""
    run = runner(primitive)
    if run is None or not values:
        return None
    return run([np.asarray(v) for v in values], params)


def install() -> None:
    """Makes eager evaluation (corejax.array.apply_primitive) use these kernels."""
    array.set_eager_kernels(runner)
