"""Scalar helpers that generated kernels call for the lax semantics plain Numba expressions lack
(integer division toward zero with lax's divide-by-zero results, saturating float->int casts,
shifts by >= the bit width, rounding modes, bit casts, ...).

Each is `njit(cache=True, error_model="numpy", forceinline=True)`, like compiler/fastmath.py, so
it is inlined into the caller's loop by LLVM and compiled once per process (then loaded from
Numba's disk cache). Semantics match the NumPy impls in corejax/lax/elementwise.py, which the
compiler tests check them against.
"""
import math

import numpy as np
from numba import njit, types
from numba.extending import intrinsic

from corejax.compiler.fastmath_ops import _fma
from corejax.lax.prng import threefry2x32_scalar

MODULE = __name__

_jit = njit(cache=True, error_model="numpy", fastmath=False, forceinline=True)


@intrinsic
def bitcast(typingctx, x, cls):
    """Reinterprets the bits of scalar `x` as the scalar type `cls` (np.int32, np.float32, ...)."""
    if not isinstance(cls, types.NumberClass):
        return None
    target = cls.instance_type
    sig = target(x, cls)

    def codegen(context, builder, signature, args):
        ty = context.get_value_type(target)
        val = args[0]
        return val if val.type == ty else builder.bitcast(val, ty)

    return sig, codegen


@intrinsic
def f32_to_f16_bits(typingctx, x):
    """The float16 bits of float32 `x` by the machine's conversion (vcvtps2ph on x86-64 with
    F16C, fcvt on ARM): round to nearest even, overflow to infinity, NaN quieted."""
    if x != types.float32:
        return None

    def codegen(context, builder, signature, args):
        from llvmlite import ir
        return builder.bitcast(builder.fptrunc(args[0], ir.HalfType()), ir.IntType(16))

    return types.uint16(x), codegen


def _cblas_codegen(arrays):
    """The codegen of a void cblas call through the address in argument 0, passing the arrays
    at positions `arrays` as their data pointers and every other argument as it is typed."""
    def codegen(context, builder, signature, args):
        from llvmlite import ir
        argtys = [context.get_value_type(t.dtype).as_pointer() if i in arrays
                  else context.get_value_type(t)
                  for i, t in enumerate(signature.args[1:], start=1)]
        fn = builder.inttoptr(args[0], ir.FunctionType(ir.VoidType(), argtys).as_pointer())
        builder.call(fn, [context.make_array(t)(context, builder, value=v).data
                          if i in arrays else v
                          for i, (t, v) in enumerate(zip(signature.args[1:], args[1:]),
                                                     start=1)])
        return context.get_dummy_value()
    return codegen


@intrinsic
def call_gemm(typingctx, addr, order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):
    """Calls the cblas_?gemm at address `addr` (an int64): c = alpha op(a) op(b) + beta c, with
    the arrays' data pointers for a, b and c. The integers go as they are typed (int32 for
    an LP64 BLAS, int64 for an ILP64 one; the enums order / ta / tb are int32). The address
    is an argument, not a constant, so the caller stays cacheable on disk."""
    sig = types.void(addr, order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
    return sig, _cblas_codegen((8, 10, 13))


@intrinsic
def call_gemv(typingctx, addr, order, trans, m, n, alpha, a, lda, x, incx, beta, y, incy):
    """Calls the cblas_?gemv at address `addr`: y = alpha op(a) x + beta y (a an m x n matrix
    in `order`), with the arrays' data pointers for a, x and y; integers as in call_gemm."""
    sig = types.void(addr, order, trans, m, n, alpha, a, lda, x, incx, beta, y, incy)
    return sig, _cblas_codegen((6, 8, 11))


@intrinsic
def call_syrk(typingctx, addr, order, uplo, trans, n, k, alpha, a, lda, beta, c, ldc):
    """Calls the cblas_?syrk at address `addr`: the `uplo` triangle of the n x n matrix
    c = alpha op(a) op(a)^T + beta c (op(a) n x k), with the arrays' data pointers for a and
    c; integers as in call_gemm."""
    sig = types.void(addr, order, uplo, trans, n, k, alpha, a, lda, beta, c, ldc)
    return sig, _cblas_codegen((7, 10))


@njit(cache=True, nogil=True)
def gemm_chunks(addr, ilp64, ta, tb, m, n, alpha, a, lda, b, ldb, one, c, ldc, bounds):
    """The executor's accumulating cblas_?gemm calls (row-major; beta = `one`, a 1 of the
    BLAS's scalar type: a wider one would reach it as other bits): for each reduction chunk
    [bounds[i], bounds[i + 1]) in order, c += alpha op(a)[:, chunk] op(b)[chunk, :], with a, b
    and c flat arrays starting at the first element of each matrix (rows `lda`, `ldb`, `ldc`
    elements apart in memory), `ta` / `tb` whether BLAS reads a / b transposed, and the integers passed as int64 to an ILP64 BLAS (`ilp64`), else
    as int32. One compiled call for every chunk of the product."""
    order = np.int32(101)
    ta_ = np.int32(112) if ta else np.int32(111)
    tb_ = np.int32(112) if tb else np.int32(111)
    for i in range(len(bounds) - 1):
        lo, hi = bounds[i], bounds[i + 1]
        at = a[lo * lda:] if ta else a[lo:]
        bt = b[lo:] if tb else b[lo * ldb:]
        if ilp64:
            call_gemm(addr, order, ta_, tb_, np.int64(m), np.int64(n), np.int64(hi - lo),
                      alpha, at, np.int64(lda), bt, np.int64(ldb), one, c, np.int64(ldc))
        else:
            call_gemm(addr, order, ta_, tb_, np.int32(m), np.int32(n), np.int32(hi - lo),
                      alpha, at, np.int32(lda), bt, np.int32(ldb), one, c, np.int32(ldc))


@_jit
def int_div(x, y, on_zero):
    """Integer division rounding toward zero; `on_zero` where y == 0 (lax: -1 or the max)."""
    if y == 0:
        return on_zero
    if y == -1:         # (the minimum over -1 wraps to itself, as in XLA and the NumPy impl)
        return 0 - x
    q = x // y
    if (x % y != 0) and ((x < 0) != (y < 0)):
        q += 1
    return q


@_jit
def int_rem(x, y):
    """C's fmod for integers: the sign of the dividend; x where y == 0 (XLA's rem)."""
    if y == 0:
        return x
    if y == -1:
        return x - x
    r = x % y
    if r != 0 and (x < 0) != (y < 0):
        r -= y
    return r


@_jit
def fmod_f32(x, y):
    """float32 fmod with np.fmod's bits (glibc's fmodf), without a libm call in the loop
    (LLVM speculates `frem` past any branch, so a rare fallback to it costs every element:
    3x the time). fmod is exact, so any exact method gives its bits: in float64, |x| - q |y|
    with q = floor(|x| / |y|) < 2**29 is exact (q |y| has at most 53 significant bits); q is
    one too large where the quotient rounded up to an integer (then + |y|); the sign is x's.
    A larger quotient is first reduced modulo |y| times a power of 2**28 (a multiple of |y|).
    Special operands give what fmodf gives: a NaN operand quieted (x's first), the default
    NaN of (x y) / (x y) for a zero y or an infinite x, x for an infinite y."""
    if x != x:
        return x + x
    if y != y:
        return y + y
    a = abs(np.float64(x))
    b = abs(np.float64(y))
    if b == 0 or a == np.inf:
        p = x * y
        return p / p
    if b == np.inf:
        return x
    while a >= b * 536870912.0:
        m = b
        while m * 268435456.0 <= a:
            m *= 268435456.0
        a = a - np.floor(a / m) * m
        a = a + m if a < 0 else a
    r = a - np.floor(a / b) * b
    r = r + b if r < 0 else r
    return np.float32(math.copysign(r, np.float64(x)))


@_jit
def float_to_int(x, lo, hi):
    """Truncation with NaN -> 0 and saturation to [lo, hi] (the lax conversion)."""
    if x != x:
        return 0
    xf = np.float64(x)
    if xf <= lo:
        return lo
    if xf >= hi:
        return hi
    return int(xf)


@_jit
def shift_left(x, y, nbits):
    if y >= nbits or y < 0:
        return x - x
    return x << y


@_jit
def shift_right_arith(x, y, nbits):
    if y >= nbits or y < 0:
        y = nbits - 1
    return x >> y


@_jit
def shift_right_logical(ux, y, nbits):
    """`ux` is unsigned, so >> shifts in zeros."""
    if y >= nbits or y < 0:
        return ux - ux
    return ux >> y


@_jit
def round_even(x):
    return np.rint(x)


@_jit
def round_away(x):
    t = np.trunc(x)
    if abs(x - t) >= 0.5:
        return t + (1.0 if x > 0 else -1.0)
    return t


def _ieee_extremum(name):
    @intrinsic
    def extremum(typingctx, x, y):
        """LLVM's `llvm.maximum` / `llvm.minimum` (IEEE 754-2019 maximum / minimum): NaN if
        either operand is NaN, -0 ordered below +0, which XLA's max and min (and their
        reductions) follow; branch-free, so a reduction's loop vectorizes (the branches of
        `fmax` kept a max over rows scalar: 5.3 ms against np.max's 0.41 ms)."""
        if x != y or x not in (types.float32, types.float64):
            return None

        def codegen(context, builder, signature, args):
            from llvmlite import ir
            ty = context.get_value_type(signature.return_type)
            fn = builder.module.declare_intrinsic(f"llvm.{name}", [ty],
                                                  ir.FunctionType(ty, [ty, ty]))
            return builder.call(fn, list(args))

        return x(x, y), codegen
    return extremum


fmaximum = _ieee_extremum("maximum")
fminimum = _ieee_extremum("minimum")


@_jit
def fmax(x, y):
    """lax.max: NaN if either operand is NaN (np.maximum: x where both are), else the larger
    (x at a tie). One condition, so LLVM makes one select of it: jnp.hypot's loop over 1M
    float32 (a max and a min per element) took 508 us on one thread with the NaN tests as
    separate branches, 415 us so."""
    return x if (x != x or x >= y) else y


@_jit
def fmin(x, y):
    """lax.min, as fmax."""
    return x if (x != x or x <= y) else y


# C's nextafter on the bits, the one rule of the CPU lowering and of eager evaluation
# (eager_kernels' fast loop calls these too): a NaN operand gives it quieted (y's if both are),
# x == y gives y, zero steps to the smallest subnormal of y's sign, else the bit pattern moves
# by one toward y. One chain of selects, so a loop over it vectorizes (np.nextafter was a libm
# call per element: jnp.spacing's fused loop took 1.1 ms over 1M float32, JAX 0.25 ms).

@_jit
def _nextafter_bits(x, y, itype, sign, quiet):
    """nextafter's result bits as the integer type `itype` of x's width (the casts keep
    Numba from widening int32 arithmetic to int64)."""
    bx = bitcast(x, itype)
    by = bitcast(y, itype)
    r = itype(bx + itype(1)) if (y > x) == (x > 0) else itype(bx - itype(1))
    r = itype(itype(1) | (by & sign)) if x == 0 else r
    r = by if x == y else r
    r = itype(bx | quiet) if x != x else r
    r = itype(by | quiet) if y != y else r
    return itype(r)


@_jit
def nextafter_f32(x, y):
    return bitcast(_nextafter_bits(x, y, np.int32, np.int32(-2147483648), np.int32(1 << 22)),
                   np.float32)


@_jit
def nextafter_f64(x, y):
    return bitcast(_nextafter_bits(x, y, np.int64, np.int64(-9223372036854775808),
                                   np.int64(1 << 51)), np.float64)


@_jit
def popcount(x, nbits):
    c = 0
    for i in range(nbits):
        c += (x >> i) & 1
    return c


@_jit
def fma(a, b, c):
    """a*b + c rounded once (lax's fma; llvm.fma, exact on every target)."""
    return _fma(a, b, c)


@njit(cache=True, error_model="numpy", fastmath=False)
def fma_arrays(a, b, c, out):
    """out = fma(a, b, c) over flat arrays of one float dtype (the eager float64 impl)."""
    for i in range(out.size):
        out[i] = _fma(a[i], b[i], c[i])


@_jit
def erf_inv(y):
    """Inverse error function: a closed-form guess refined by Newton steps in float64."""
    y = np.float64(y)
    if y != y or abs(y) > 1.0:
        return np.nan
    if y == 1.0:
        return np.inf
    if y == -1.0:
        return -np.inf
    if abs(y) < 0.5:
        r = y * math.sqrt(math.pi) / 2 * (1 + math.pi * y * y / 12)
    else:
        w = -math.log((1.0 - y) * (1.0 + y))
        g = max(w - 0.5 * math.log(max(w, 1e-300)) - 0.5 * math.log(math.pi / 2), 0.0)
        r = math.copysign(math.sqrt(g), y)
    for _ in range(6):
        err = math.erf(r) - y
        r = r - err / (2 / math.sqrt(math.pi) * math.exp(-r * r))
    return r


@_jit
def integer_pow(x, n, one):
    """x**n by repeated squaring, as XLA expands integer_pow (`one` is 1 in x's type)."""
    m = n if n >= 0 else -n
    acc = one
    base = x
    while m:
        if m & 1:
            acc = acc * base
        base = base * base
        m >>= 1
    return acc if n >= 0 else one / acc


# lax.prng's scalar hash, inlined into fused loops (both words from one call).
threefry2x32 = _jit(threefry2x32_scalar)


def import_line(*names):
    return f"from {MODULE} import {', '.join(sorted(set(names)))}"
