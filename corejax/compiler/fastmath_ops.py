"""The building blocks of corejax.compiler.fastmath's functions: bit casts between floats
and integers and the LLVM intrinsics that lower to one instruction with a vector form (rint,
fma, fmuladd), Horner evaluation, and the dispatcher flags every function there shares
(see fastmath's docstring for why each flag is set)."""
import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

_jit = njit(cache=True, error_model="numpy", fastmath=False, forceinline=True)

f32 = np.float32
f64 = np.float64
_ZERO64, _HALF64, _ONE64, _TWO64 = f64(0.0), f64(0.5), f64(1.0), f64(2.0)
_INF64 = f64(np.inf)
_NAN64 = f64(np.nan)


# ---------------------------------------------------------------------------------------------
# Bit casts and LLVM intrinsics (each lowers to one instruction with a vector form)

def _as_int_width(builder, value, width):
    if value.type.width > width:
        return builder.trunc(value, ir.IntType(width))
    if value.type.width < width:
        return builder.sext(value, ir.IntType(width))
    return value


def _bitcast_intrinsic(name, doc, from_type, to_type, to_llvm):
    """An @intrinsic reinterpreting the bits of one scalar as another (an integer argument of
    any width is truncated or sign-extended to the width of to_type first)."""
    def typer(typingctx, value):
        if isinstance(from_type, type):
            if not isinstance(value, from_type):
                return None
        elif value != from_type:
            return None

        def codegen(context, builder, sig, args):
            arg = args[0]
            if isinstance(arg.type, ir.IntType):
                arg = _as_int_width(builder, arg, to_type.bitwidth)
            return builder.bitcast(arg, to_llvm)
        return to_type(value), codegen
    typer.__name__ = typer.__qualname__ = name
    typer.__doc__ = doc
    return intrinsic(prefer_literal=False)(typer)


f32_as_i32 = _bitcast_intrinsic("f32_as_i32", "The IEEE bits of a float32 as an int32.",
                                types.float32, types.int32, ir.IntType(32))
f64_as_i64 = _bitcast_intrinsic("f64_as_i64", "The IEEE bits of a float64 as an int64.",
                                types.float64, types.int64, ir.IntType(64))
i32_as_f32 = _bitcast_intrinsic("i32_as_f32", "The float32 whose bits are an integer's low 32.",
                                types.Integer, types.float32, ir.FloatType())
i64_as_f64 = _bitcast_intrinsic("i64_as_f64", "The float64 whose bits are an integer's low 64.",
                                types.Integer, types.float64, ir.DoubleType())


def _llvm_float_intrinsic(llvm_name, arity):
    def typer(typingctx, *args):
        if len(args) != arity or args[0] not in (types.float32, types.float64):
            return None
        if any(a != args[0] for a in args):
            return None

        def codegen(context, builder, sig, llvm_args):
            ty = llvm_args[0].type
            suffix = "f32" if ty == ir.FloatType() else "f64"
            fnty = ir.FunctionType(ty, [ty] * arity)
            fn = cgutils.get_or_insert_function(builder.module, fnty, f"{llvm_name}.{suffix}")
            return builder.call(fn, llvm_args)
        return args[0](*args), codegen
    return typer


@intrinsic
def _rint(typingctx, x):
    """Round to nearest even (llvm.rint: vroundps/vrndscaleps)."""
    return _llvm_float_intrinsic("llvm.rint", 1)(typingctx, x)


@intrinsic
def _fma(typingctx, a, b, c):
    """a*b + c with one rounding (llvm.fma). Used where the exactness matters, not for speed."""
    return _llvm_float_intrinsic("llvm.fma", 3)(typingctx, a, b, c)


@intrinsic
def _mul_add(typingctx, a, b, c):
    """a*b + c, fused where the target has FMA (llvm.fmuladd), two operations elsewhere."""
    return _llvm_float_intrinsic("llvm.fmuladd", 3)(typingctx, a, b, c)


@_jit
def _horner(x, coeffs):
    # LLVM fully unrolls this constant-trip loop, then vectorizes the caller's loop (the tests
    # check the IR for vector types).
    acc = coeffs[0]
    for i in range(1, len(coeffs)):
        acc = _mul_add(acc, x, coeffs[i])
    return acc


def _coeffs32(*values):
    return tuple(f32(v) for v in values)
