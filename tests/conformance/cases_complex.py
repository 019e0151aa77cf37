"""Conformance cases of complex numbers: lax's complex primitives and elementwise functions on
complex operands ("c64[...]" specs: real and imaginary parts drawn from the domain), jnp's complex
helpers, and derivatives through complex arithmetic (loaded by cases.py after its own cases).

Derivatives are checked through the "cplx" wrapper: it takes two real arrays x and y, applies a
function to z = x + 1j*y and returns the real and imaginary parts of the result, so grad, jvp,
vjp and second order run through every complex rule (jvp with complex tangents, the transposes
of real / imag / complex / conj / mul, convert_element_type) with real inputs and outputs."""
import numpy as np

import cases
from cases import BASIC, FULL, NOGRAD, Ref, add, case

NOHVP = ("eager", "jit", "vmap", "grad", "jvp", "vjp", "jit_grad")


def _parts(out):
    if getattr(out, "dtype", None) is not None and out.dtype.kind == "c":
        return out.real, out.imag
    return out


def _cplx(x, y, fn, **kwargs):
    return _parts(fn(x + 1j * y, **kwargs))


def _cplx2(x, y, u, v, fn):
    return _parts(fn(x + 1j * y, u + 1j * v))


def _abs2(x, y, fn):
    """|fn(z)|**2 summed: a real-valued function of a complex variable."""
    w = fn(x + 1j * y)
    return abs(w) ** 2


cases.ARRAY_OPS.update({"cplx": _cplx, "cplx2": _cplx2, "cplx_abs2": _abs2,
                        "rsf2csf_of_schur": lambda a, schur, rsf2csf: rsf2csf(*schur(a))})

# ---------------------------------------------------------------- lax's complex primitives

add(case("lax.real", "c64[2,3]"), case("lax.imag", "c64[2,3]"),
    case("lax.conj", "c64[2,3]"), case("lax.conj", "f32[4]", label="real_input"),
    case("lax.real", "f32[3]", label="real_error", transforms=("eager",)),
    case("lax.imag", "c128[3]", x64=True, transforms=BASIC),
    case("lax.complex", "f32[2,3]", "f32[2,3]", transforms=FULL),
    case("lax.complex", 1.5, "f32[3]", label="weak_re"),
    case("lax.complex", "f32[3]", "f64[3]", label="mixed_error", transforms=("eager",),
         x64=True),
    case("lax.complex", "i32[3]", "i32[3]", label="int_error", transforms=("eager",)),
    case("lax.abs", "c64[2,3]"), case("lax.abs", "c128[4]", x64=True, transforms=BASIC),
    case("lax.sign", "c64[2,3]"), case("lax.neg", "c64[3]"),
    case("lax.lt", "c64[3]", "c64[3]", label="order_error", transforms=("eager",)),
    case("lax.rem", "c64[3]", "c64[3]", label="rem_error", transforms=("eager",)),
    case("lax.floor", "c64[3]", label="floor_error", transforms=("eager",)),
    case("lax.eq", "c64[4]", "c64[4]"), case("lax.ne", "c64[4]", "c64[4]"),
    case("lax.convert_element_type", "f32[3]", Ref("numpy.complex64"), label="to_complex"),
    case("lax.integer_pow", "c64[2,3]", 3, static=(1,)),
    case("lax.integer_pow", "c64[4]", -2, static=(1,), label="negative"),
    case("lax.square", "c64[4]"), case("lax.reciprocal", "c64[4]"))

for _fn in ("exp", "log", "sqrt", "rsqrt", "sin", "cos", "tan", "tanh", "sinh", "cosh", "asin",
            "acos", "atan", "asinh", "acosh", "atanh", "expm1", "log1p", "logistic", "exp2"):
    add(case("lax." + _fn, "c64[2,3]", ulp=16))
add(case("lax.exp", "c128[4]", x64=True, transforms=BASIC, ulp=16),
    case("lax.log", "c128[4]", x64=True, transforms=BASIC, ulp=16))
for _fn in ("add", "sub", "mul", "div", "pow"):
    add(case("lax." + _fn, "c64[2,3]", "c64[2,3]", ulp=16))
add(case("lax.dot_general", "c64[2,3]", "c64[3,4]", (((1,), (0,)), ((), ())), ulp=16),
    case("lax.reduce_sum", "c64[3,4]", (1,), ulp=8),
    case("lax.reduce_prod", "c64[3,4]", (0,), ulp=16),
    case("lax.cumsum", "c64[5]", 0, static=(1,), ulp=8),
    case("lax.select", "bool[4]", "c64[4]", "c64[4]"))

# ---------------------------------------------------------------- jnp on complex arrays

for _fn in ("real", "imag", "conj", "conjugate", "angle", "iscomplex", "isreal", "abs",
            "absolute", "sign", "exp", "log", "sqrt", "square", "reciprocal", "negative",
            "isfinite", "isnan", "isinf", "log10", "log2", "sinc"):
    add(case("numpy." + _fn, "c64[2,3]", ulp=16))
for _fn in ("real", "imag", "conj", "angle", "iscomplex", "isreal"):
    add(case("numpy." + _fn, "f32[4]", label="real_input"),
        case("numpy." + _fn, "i32[4]", label="int_input"))
add(case("numpy.angle", "c64[4]", kwargs={"deg": True}, label="deg", ulp=16),
    case("numpy.iscomplexobj", "c64[3]"), case("numpy.iscomplexobj", "f32[3]"),
    case("numpy.isrealobj", "c64[3]"), case("numpy.isrealobj", "i32[3]"),
    case("numpy.sort_complex", "c64[5]"), case("numpy.sort_complex", "i32[5]"),
    case("numpy.vdot", "c64[4]", "c64[4]", ulp=16),
    case("numpy.vdot", "c64[2,2]", "f32[4]", label="mixed", ulp=16),
    case("numpy.dot", "c64[3]", "c64[3,2]", ulp=16),
    case("numpy.matmul", "c64[2,3]", "c64[3,2]", ulp=16),
    case("numpy.add", "c64[3]", "f32[3]", label="promote"),
    case("numpy.multiply", "c64[3]", 2.5, label="weak_scalar"),
    case("numpy.sum", "c64[3,4]", kwargs={"axis": 0}, ulp=8),
    case("numpy.prod", "c64[4]", ulp=16), case("numpy.mean", "c64[3,4]", ulp=8),
    case("numpy.var", "c64[3,4]", kwargs={"axis": 1}, ulp=16),
    case("numpy.std", "c64[6]", ulp=16), case("numpy.cumsum", "c64[5]", ulp=8),
    case("numpy.less", "c64[4]", "c64[4]"), case("numpy.greater_equal", "c64[4]", "c64[4]"),
    case("numpy.equal", "c64[4]", "c64[4]"),
    case("numpy.clip", "c64[4]", 0.0, 1.0, label="clip_error", transforms=("eager",)),
    case("numpy.nan_to_num", "c64[5]:special"),
    case("numpy.linalg.norm", "c64[2,3]", ulp=16),
    case("numpy.linalg.norm", "c64[4]", kwargs={"ord": 1}, label="ord1", ulp=16),
    case("numpy.linalg.vecdot", "c64[2,3]", "c64[2,3]", ulp=16),
    case("numpy.power", "c64[3]", 2.5, label="weak_exponent", ulp=16),
    case("numpy.logaddexp", "c64[2,3]", "c64[3]", ulp=16),
    case("array.astype", "f32[3]", Ref("numpy.complex64"), label="to_complex"))

# ---------------------------------------------------------------- derivatives (real in, real out)

for _fn in ("exp", "log", "sqrt", "sin", "cos", "tanh", "arctan", "arcsinh", "square",
            "reciprocal", "conj", "real", "imag", "abs", "angle", "sign"):
    add(case("array.cplx", "f32[2,3]:nz", "f32[2,3]:nz", Ref("numpy." + _fn), label=_fn,
             transforms=FULL, ulp=32))
for _fn in ("multiply", "divide", "power", "vdot", "matmul"):
    add(case("array.cplx2", "f32[3]:pos", "f32[3]:pos", "f32[3]:nz", "f32[3]:nz",
             Ref("numpy." + _fn), label=_fn, transforms=NOHVP, ulp=32))
add(case("array.cplx", "f32[3,4]", "f32[3,4]", Ref("numpy.sum"), label="sum",
         transforms=NOHVP, ulp=16),
    case("array.cplx", "f32[5]", "f32[5]", Ref("numpy.cumsum"), label="cumsum",
         transforms=NOHVP, ulp=16),
    case("array.cplx", "f32[4]:nz", "f32[4]:nz", Ref("numpy.linalg.norm"), label="norm",
         transforms=NOHVP, ulp=32),
    case("array.cplx_abs2", "f32[4]:nz", "f32[4]:nz", Ref("numpy.sin"), label="abs2_sin",
         transforms=FULL, ulp=32),
    case("array.cplx_abs2", "f32[4]:nz", "f32[4]:nz", Ref("numpy.log"), label="abs2_log",
         transforms=FULL, ulp=32))

# ---------------------------------------------------------------- complex linear algebra

_ALG = ("eager", "jit", "vmap")
add(case("lax.linalg.eig", "f32[3,3]", transforms=_ALG, ulp=64),
    case("lax.linalg.eig", "f32[2,3,3]", kwargs={"compute_left_eigenvectors": False,
                                                  "compute_right_eigenvectors": False},
         label="values_only", transforms=_ALG, ulp=64),
    case("lax.linalg.eig", "f32[2,3]", label="square_error", transforms=("eager",)),
    case("lax.linalg.eig", "i32[2,2]", label="int_error", transforms=("eager",)),
    case("numpy.linalg.eig", "f32[4,4]", transforms=_ALG, ulp=64),
    case("numpy.linalg.eigvals", "f32[4,4]", transforms=("eager", "jit", "vmap", "grad", "jvp"),
         ulp=64),
    case("numpy.linalg.eigvals", "f64[3,3]", x64=True, transforms=BASIC, ulp=64),
    case("numpy.linalg.eigvals", "c64[3,3]", label="complex", transforms=BASIC, ulp=64),
    case("array.cplx", "f32[3,3]", "f32[3,3]", Ref("numpy.linalg.eigvals"), label="d_eigvals",
         transforms=("eager", "grad", "jvp", "vjp"), ulp=64),
    case("scipy.linalg.dft", 4, static=(0,), transforms=("eager",), ulp=8),
    case("scipy.linalg.dft", 3, "sqrtn", static=(0,), label="sqrtn", transforms=("eager",),
         ulp=8),
    case("scipy.linalg.dft", 2, "n", static=(0,), label="n", transforms=("eager",), ulp=8),
    case("scipy.linalg.dft", 3, "bad", static=(0,), label="scale_error",
         transforms=("eager",)))
_S = "scipy.linalg."
add(case(_S + "schur", "f32[4,4]", kwargs={"output": "complex"}, label="complex",
         transforms=("eager", "jit"), ulp=64),
    case(_S + "sqrtm", "f32[3,3]:pos", transforms=("eager", "jit", "vmap"), ulp=256),
    case(_S + "sqrtm", "f32[2,2]", kwargs={"blocksize": 2}, label="blocked_error",
         transforms=("eager",)),
    case(_S + "funm", "f32[3,3]", Ref("numpy.exp"), transforms=("eager", "jit"), ulp=256),
    case(_S + "funm", "f32[3,3]", Ref("numpy.sin"), kwargs={"disp": False}, label="disp",
         transforms=("eager",), ulp=256),
    case("array.rsf2csf_of_schur", "f32[4,4]", Ref(_S + "schur"), Ref(_S + "rsf2csf"),
         transforms=("eager", "jit"), ulp=64))
add(case("numpy.roots", "f32[4]:nz"), case("numpy.roots", "i32[3]:pos", label="int"),
    case("numpy.roots", "f32[4]:nz", kwargs={"strip_zeros": False}, label="no_strip",
         transforms=BASIC),
    case("numpy.roots", "f32[2,2]", label="rank_error", transforms=("eager",)),
    case("numpy.roots", "f32[3]", label="traced_error", transforms=("jit",)),
    case("numpy.poly", "f32[3,3]", label="matrix", transforms=BASIC, ulp=64))

# ---------------------------------------------------------------- atan2 of complex operands
# (XLA's -i log((y + ix) / sqrt(x^2 + y^2)) for atan2(x, y); NumPy has no complex arctan2)

add(case("lax.atan2", "c64[2,3]", "c64[2,3]", label="complex", ulp=16),
    case("lax.atan2", "c128[4]", "c128[4]", label="complex128", x64=True, transforms=BASIC,
         ulp=16),
    case("lax.atan2", "c64[3]", "f32[3]", label="mixed_error", transforms=("eager",)),
    case("numpy.arctan2", "c64[2,3]", "f32[3]", label="complex_real", ulp=16),
    case("numpy.arctan2", "c64[3]", 2.0, label="complex_weak", ulp=16),
    case("array.cplx2", "f32[3]:nz", "f32[3]:nz", "f32[3]:pos", "f32[3]:nz",
         Ref("numpy.arctan2"), label="arctan2", transforms=NOHVP, ulp=32))

# ---------------------------------------------------------------- rsf2csf's derivative: a real
# Schur form built from x (upper triangular but for two standardized 2x2 blocks, equal diagonals
# and off-diagonals of opposite signs: conjugate pairs), any z


def _rsf2csf_quasi(x, z, rsf2csf):
    one = np.eye(4)
    t = x * np.triu(np.ones((4, 4)))
    for top in (0, 2):
        low = top + 1
        t = t + (x[top, top] - x[low, low]) * np.outer(one[low], one[low])
        t = t - 0.5 * x[top, low] * np.outer(one[low], one[top])
    return rsf2csf(t, z)


cases.ARRAY_OPS["rsf2csf_quasi"] = _rsf2csf_quasi
# (ulp: JAX's own float32 derivative is the imprecise one here. Against both frameworks' float64
# jvp of the same inputs, which agree to 8e-14, corejax's float32 tangent is off by 2.1e-6 and
# JAX's by 4.6e-5, 262 ulp of the leaf's scale; the comparison's budget must hold JAX's error.
# JAX raises NotImplementedError for the second derivative: tests/test_complex.py checks
# corejax's against finite differences instead.)
add(case("array.rsf2csf_quasi", "f32[4,4]", "f32[4,4]", Ref(_S + "rsf2csf"), label="d_rsf2csf",
         transforms=NOHVP, ulp=128),
    case(_S + "rsf2csf", "f32[3,3]", "f32[4,4]", label="shape_error", transforms=("eager",)),
    case(_S + "rsf2csf", "f32[3,4]", "f32[3,4]", label="square_error", transforms=("eager",)))
