"""Conformance cases for the jax.numpy functions added for issue #26: math (log2, hypot, ldexp,
gcd, i0, ...), comparisons (isclose, array_equal, ...), rearranging (rot90, block, insert, ...),
index tricks (r_, mgrid, fill_diagonal, ...), selection (select, piecewise, extract, ...),
sorting (partition, searchsorted, lexsort, ...), NaN-ignoring reductions, statistics (quantile,
cov, histogram, ...), differences (diff, gradient, interp, ...), sets (unique, isin, ...),
polynomials, windows, cumulative functions and bit packing.

Calls that are not plain function calls go through small framework-neutral wrappers in
cases.ARRAY_OPS under "npx_*", given the framework's object by Ref:
  npx_vectorized   vectorize(f, **kw)(*args)
  npx_index        obj[key] (r_, c_, mgrid, ogrid, s_, index_exp)
"""
import numpy as np

import cases
from cases import BASIC, FULL, NOGRAD, SKIP_REASONS, Ref, add, binary, case, unary

GRAD = ("eager", "jit", "vmap", "grad")
DIFF = ("eager", "jit", "grad", "jvp")
EAGER = ("eager",)

cases.ARRAY_OPS.update({
    "npx_vectorized": lambda vectorize, f, *args, **kw: vectorize(f, **kw)(*args),
    "npx_index": lambda obj, key: obj[key],
    "npx_ufunc": lambda uf, method, *args, **kw: getattr(uf, method)(*args, **kw),
    "npx_frompyfunc": lambda frompyfunc, f, nin, identity, method, *args, **kw: getattr(
        frompyfunc(f, nin, 1, identity=identity), method)(*args, **kw),
})
SKIP_REASONS["numpy"].update({
    "vectorize": "covered through array.npx_vectorized (a call of the vectorized function)",
    "einsum_path": "JAX reports opt_einsum's text: the path itself is tested in "
                   "tests/test_numpy_extra.py",
    **{n: "NumPy's own function, re-exported as in jax.numpy" for n in (
        "save", "savez", "array_repr", "array_str", "get_printoptions", "set_printoptions",
        "printoptions")},
    "load": "file input: tested in tests/test_numpy_extra.py",
    **{n: "dtype object, not a function" for n in (
        "bool", "single", "double", "csingle", "cdouble", "complex_", "uint", "generic",
        "character", "flexible", "object_")},
    "ComplexWarning": "NumPy's warning class, re-exported",
    "ufunc": "a class: its instances are covered through array.npx_ufunc (jnp.add & co.) "
             "and array.npx_frompyfunc",
    "frompyfunc": "covered through array.npx_frompyfunc (methods of the ufunc it returns)",
})


def _sq(x):
    return x * x


def _double_plus_one(x):
    return x * 2.0 + 1.0


def _dot_last(a, b):
    return (a * b).sum()


def _sum_max(x):
    return x.sum(), x.max()


def _scaled(x, p):
    return x * p


def _neg(x):
    return -x


def _triple(x):
    return x * 3.0


def _shifted(x, a):
    return x + a


def _outer_self(v):
    return v[:, None] * v[None, :]


def _ij(i, j):
    return i * 10.0 + j


# ---------------------------------------------------------------- elementwise math

for _fn, _dom, _ulp in [("log2", "pos", 8), ("log10", "pos", 8), ("fabs", "nz", 1),
                        ("i0", "real", 16), ("acos", "unit", 8), ("asin", "unit", 8),
                        ("atan", "real", 8), ("acosh", "gt1", 8), ("asinh", "real", 8),
                        ("atanh", "unit", 8)]:
    unary("numpy." + _fn, _dom, ulp=_ulp, variants=2)
unary("numpy.spacing", "real", diff=False, ulp=0, variants=2,
      extra=[case("numpy.spacing", "f32[5]:special", label="special", ulp=0)])
for _fn in ("imag", "angle"):
    unary("numpy." + _fn, "real", ulp=1, variants=2)
add(case("numpy.angle", "f32[4]:nz", kwargs={"deg": True}, label="deg", ulp=2),
    case("numpy.iscomplex", "f32[2,3]"), case("numpy.isreal", "f32[2,3]"),
    case("numpy.isreal", 1.5, label="weak"),
    case("numpy.iscomplexobj", "f32[3]", transforms=EAGER),
    case("numpy.isrealobj", "i32[3]", transforms=EAGER))
# (x = 0 is left out of the second-order cases: JAX's second derivative of i0 there is 0, the
# true value, which corejax gives, is 1/2)
add(case("numpy.i0", "f32[6]:nz", ulp=16, transforms=FULL, label="nonzero"),
    case("numpy.i0", "f64[4]", x64=True, ulp=16, transforms=("eager", "grad")))
for _fn, _dom, _ulp, _diff in [("hypot", ("real", "real"), 4, True),
                               ("logaddexp2", ("real", "real"), 8, True),
                               ("fmax", ("distinct", "real"), 1, True),
                               ("fmin", ("distinct", "real"), 1, True)]:
    binary("numpy." + _fn, _dom, ulp=_ulp, diff=_diff, ints=_fn in ("fmax", "fmin"),
           variants=3)
add(case("numpy.hypot", 3, 4, label="ints"),
    case("numpy.hypot", "f32[5]:special", "f32[5]:special", label="special"),
    case("numpy.fmax", "f32[5]:special", "f32[5]:special", label="nan"),
    case("numpy.fmin", "f32[5]:special", "f32[5]:special", label="nan"),
    case("numpy.logaddexp2", "f32[5]:special", "f32[5]:special", label="special", ulp=8))
add(case("numpy.ldexp", "f32[2,3]", "i32[3]", transforms=GRAD),
    case("numpy.ldexp", "f32[4]", 3, label="scalar_exp", transforms=GRAD),
    case("numpy.ldexp", "i32[3]", "i32[3]", label="int_mantissa"),
    case("numpy.ldexp", "f16[3]", "i32[3]", label="f16"),
    case("numpy.ldexp", "f32[3]", "f32[3]", label="float_exp_error", transforms=EAGER),
    case("numpy.frexp", "f32[2,3]"), case("numpy.frexp", "f32[5]:special", label="special"),
    case("numpy.frexp", "i32[4]", label="int"), case("numpy.frexp", 2.5, label="scalar"),
    case("numpy.frexp", "f16[3]", label="f16"),
    case("numpy.modf", "f32[2,3]:wide", transforms=GRAD),
    case("numpy.modf", "i32[3]", label="int"))
for _fn in ("gcd", "lcm"):
    add(case("numpy." + _fn, "i32[2,3]", "i32[3]"),
        case("numpy." + _fn, "u8[4]:pos", "u8[4]:pos", label="u8"),
        case("numpy." + _fn, 12, 18, label="python"),
        case("numpy." + _fn, "f32[3]", "f32[3]", label="float_error", transforms=EAGER))
add(case("numpy.bitwise_count", "i32[5]"), case("numpy.bitwise_count", "u8[4]"),
    case("numpy.bitwise_count", "bool[3]"),
    case("numpy.bitwise_count", "f32[3]", label="float_error", transforms=EAGER),
    case("numpy.bitwise_invert", "i32[4]"),
    case("numpy.bitwise_left_shift", "i32[4]", "i32[4]:shift"),
    case("numpy.bitwise_right_shift", "i32[4]", "i32[4]:shift"),
    case("numpy.atan2", "f32[2,3]", "f32[3]:nz", transforms=FULL, ulp=8))

# ---------------------------------------------------------------- comparisons and dtypes

add(case("numpy.isclose", "f32[2,3]", "f32[3]"),
    case("numpy.isclose", "f32[5]:special", "f32[5]:special", label="special"),
    case("numpy.isclose", "f32[5]:special", "f32[5]:special", kwargs={"equal_nan": True},
         label="equal_nan"),
    case("numpy.isclose", "f32[4]", "f32[4]", kwargs={"rtol": 0.5, "atol": 0.1}, label="tols"),
    case("numpy.isclose", "i32[4]", "i32[4]", label="int"),
    case("numpy.isclose", 1.0, 1.0000001, label="python"),
    case("numpy.allclose", "f32[2,3]", "f32[2,3]"),
    case("numpy.allclose", "f32[3]:wide", "f32[3]:wide", kwargs={"atol": 2.0}, label="atol"),
    case("numpy.array_equal", "f32[2,3]", "f32[2,3]"),
    case("numpy.array_equal", "i32[3]", "f32[3]", label="mixed"),
    case("numpy.array_equal", "f32[2,3]", "f32[3]", label="shapes"),
    case("numpy.array_equal", "f32[4]:special", "f32[4]:special", kwargs={"equal_nan": True},
         label="nan"),
    case("numpy.array_equiv", "f32[2,3]", "f32[3]"),
    case("numpy.array_equiv", "f32[2,3]", "f32[2]", label="incompatible"),
    case("numpy.isdtype", "float32", "real floating", static=(0, 1), transforms=EAGER),
    case("numpy.isdtype", "int32", ("integral", "bool"), static=(0, 1), transforms=EAGER),
    case("numpy.isdtype", "bool", "numeric", static=(0, 1), transforms=EAGER),
    case("numpy.isdtype", "float32", "kind", static=(0, 1), transforms=EAGER, label="bad"),
    case("numpy.can_cast", "int32", "float32", static=(0, 1), transforms=EAGER),
    case("numpy.can_cast", "float32", "int32", static=(0, 1), kwargs={"casting": "unsafe"},
         transforms=EAGER),
    case("numpy.iterable", [1, 2], static=(0,), transforms=EAGER),
    case("numpy.iterable", "f32[]", transforms=EAGER),
    case("numpy.iterable", "f32[2]", transforms=EAGER, label="vector"))

# ---------------------------------------------------------------- products and spacing

add(case("numpy.kron", "f32[2,2]", "f32[2,3]", transforms=FULL),
    case("numpy.kron", "f32[2]", "f32[2,1]", label="ranks", transforms=GRAD),
    case("numpy.kron", "i32[2]", 2.0, label="scalar"),
    case("numpy.cross", "f32[4,3]", "f32[3]", transforms=FULL, ulp=4),
    case("numpy.cross", "f32[2,2]", "f32[2,2]", label="two_d", transforms=GRAD),
    case("numpy.cross", "f32[2]", "f32[3]", label="mixed"),
    case("numpy.cross", "f32[3,2]", "f32[3,2]", kwargs={"axisa": 0, "axisb": 0}, label="axes"),
    case("numpy.cross", "f32[3,2]", "f32[3,2]", kwargs={"axis": 0}, label="axis"),
    case("numpy.cross", "i32[2,3]", "i32[3]", label="int"),
    case("numpy.cross", "f32[4]", "f32[4]", label="size_error", transforms=EAGER),
    case("numpy.vecdot", "f32[2,3]", "f32[3]", transforms=FULL, ulp=8),
    case("numpy.vecdot", "f32[3,2]", "f32[3,1]", kwargs={"axis": 0}, label="axis0", ulp=8),
    case("numpy.vecdot", "i32[2,3]", "i32[3]", label="int"),
    case("numpy.vecdot", "f32[2,3]", "f32[2]", label="size_error", transforms=EAGER),
    case("numpy.matvec", "f32[2,2,3]", "f32[2,3]", transforms=FULL, ulp=8),
    case("numpy.matvec", "f32[2,3]", "f32[2]", label="size_error", transforms=EAGER),
    case("numpy.vecmat", "f32[2]", "f32[2,3]", transforms=FULL, ulp=8),
    case("numpy.vecmat", "f32[4,1,2]", "f32[3,2,3]", label="broadcast", ulp=8),
    case("numpy.geomspace", 1.0, 1000.0, 4, static=(2,), transforms=BASIC, ulp=8),
    case("numpy.geomspace", -1.0, -16.0, 5, static=(2,), transforms=BASIC, ulp=8,
         label="negative"),
    case("numpy.geomspace", 1, 16, 5, static=(2,), kwargs={"dtype": "int32"},
         transforms=BASIC, label="int"),
    case("numpy.geomspace", "f32[2]:pos", "f32[2]:gt1", 3, static=(2,), ulp=8,
         transforms=("eager", "jit", "vmap", "grad"), label="arrays"),
    case("numpy.geomspace", "f32[2]:pos", "f32[2]:gt1", 3, static=(2,), ulp=8,
         kwargs={"axis": 1, "endpoint": False}, label="axis1"))

# ---------------------------------------------------------------- rearranging

add(case("numpy.copy", "f32[2,3]", transforms=FULL), case("numpy.copy", 1.5, label="weak"),
    case("numpy.astype", "f32[3]:wide", "int32", transforms=NOGRAD),
    case("numpy.astype", "i32[3]", None, static=(1,), label="default"),
    case("numpy.astype", "f32[3]", "float16", transforms=GRAD, label="f16"),
    case("numpy.rot90", "f32[2,3]", transforms=FULL),
    case("numpy.rot90", "f32[2,3]", 2, static=(1,), label="k2"),
    case("numpy.rot90", "f32[2,3]", -1, static=(1,), label="km1"),
    case("numpy.rot90", "f32[2,3,4]", kwargs={"axes": (2, 0)}, label="axes"),
    case("numpy.rot90", "f32[3]", label="rank_error", transforms=EAGER),
    case("numpy.rollaxis", "f32[2,3,4]", 2, static=(1,), transforms=GRAD),
    case("numpy.rollaxis", "f32[2,3,4]", 0, 3, static=(1, 2), label="start"),
    case("numpy.rollaxis", "f32[2,3,4]", -1, 1, static=(1, 2), label="neg"),
    case("numpy.permute_dims", "f32[2,3,4]", (2, 0, 1), transforms=GRAD),
    case("numpy.unstack", "f32[2,3]", transforms=FULL),
    case("numpy.unstack", "f32[2,3]", kwargs={"axis": 1}, label="axis1"),
    case("numpy.dsplit", "f32[1,2,6]", 3, static=(1,), transforms=GRAD),
    case("numpy.dsplit", "f32[1,2,6]", [1, 4], label="indices"),
    case("numpy.block", [["f32[2,2]", "f32[2,1]"], ["f32[1,3]"]], transforms=FULL),
    case("numpy.block", ["f32[2]", "f32[3]"], label="flat"),
    case("numpy.block", [[1, 2], [3, 4]], static=(0,), label="python", transforms=EAGER),
    case("numpy.block", [["f32[2]"], "f32[2]"], label="depth_error", transforms=EAGER),
    case("numpy.diagflat", "f32[3]", transforms=FULL),
    case("numpy.diagflat", "f32[2,2]", kwargs={"k": 1}, label="k1"),
    case("numpy.diagflat", "i32[2]", kwargs={"k": -1}, label="km1"),
    case("numpy.diag", "f32[3]", kwargs={"k": 1}, label="vector_k1", transforms=GRAD),
    case("numpy.diag", "f32[3]", kwargs={"k": -2}, label="vector_km2"),
    case("numpy.trim_zeros", "i32[7]:idx2", transforms=EAGER),
    case("numpy.trim_zeros", "i32[6]:idx2", "b", static=(1,), transforms=EAGER, label="back"),
    case("numpy.trim_zeros", "i32[3,4]:idx2", transforms=EAGER, label="2d"),
    case("numpy.trim_zeros", "i32[3]", label="jit_error", transforms=("jit",)),
    case("numpy.resize", "f32[3]", (2, 4), transforms=FULL),
    case("numpy.resize", "f32[2,3]", 4, static=(1,), label="shrink"),
    case("numpy.resize", "i32[3]", 0, static=(1,), label="empty"),
    case("numpy.append", "f32[2,2]", "f32[1,2]", kwargs={"axis": 0}, transforms=FULL),
    case("numpy.append", "i32[2,2]", 5.0, label="flat"),
    case("numpy.append", "f32[2,2]", "f32[2]", kwargs={"axis": 0}, label="rank_error",
         transforms=EAGER),
    case("numpy.delete", "f32[5]", 2, static=(1,), transforms=GRAD),
    case("numpy.delete", "f32[2,3]", 1, static=(1,), kwargs={"axis": 1}, label="axis1"),
    case("numpy.delete", "f32[5]", slice(1, 4, 2), static=(1,), label="slice"),
    case("numpy.delete", "f32[5]", -1, static=(1,), label="negative"),
    case("numpy.delete", "f32[5]", 7, static=(1,), label="bounds_error", transforms=EAGER),
    case("numpy.delete", "f32[5]", "i32[2]:idx5", transforms=EAGER, label="array"),
    case("numpy.delete", "f32[5]", "i32[2]:idx5", transforms=("jit",), label="array_jit_error"),
    case("numpy.delete", "f32[5]", "bool[5]", transforms=EAGER, label="mask"),
    case("numpy.insert", "f32[5]", 2, 9.0, static=(1,), transforms=FULL),
    case("numpy.insert", "f32[5]", "i32[]:idx5", "f32[3]", transforms=GRAD, label="traced"),
    case("numpy.insert", "f32[2,3]", 1, "f32[2]", static=(1,), kwargs={"axis": 1},
         label="column"),
    case("numpy.insert", "f32[2,3]", 1, "f32[3]", static=(1,), kwargs={"axis": 0},
         label="row"),
    case("numpy.insert", "i32[5]", "i32[2]:idx5", "i32[2]", label="indices"),
    case("numpy.insert", "i32[5]", slice(1, 3), "i32[2]", static=(1,), label="slice"),
    case("numpy.insert", "i32[5]", -1, 2.5, static=(1,), label="cast"),
    case("numpy.insert", "f32[5]", [1, 1], "f32[2]", static=(1,), label="list_error",
         transforms=EAGER))

# ---------------------------------------------------------------- index tricks

_S = slice
for _obj, _key in [("r_", ("f32[2]", 0, 0, "f32[2]")), ("r_", (_S(0, 5), 7)),
                   ("r_", (_S(-1, 1, 5j), 3.0)), ("r_", ("0,2", "f32[2]", "f32[2]")),
                   ("r_", ("1,2,0", "f32[2]", "f32[2]")), ("r_", ("-1", "f32[2,2]", "f32[2,1]")),
                   ("r_", ("r", "f32[2]", "f32[2]")), ("r_", ("c", "i32[2]", "i32[2]")),
                   ("r_", (1, 2.5)), ("c_", ("f32[3]", "f32[3]")),
                   ("c_", ("f32[1,3]", 0, 0, "f32[1,3]")), ("c_", (_S(1, 3), _S(4, 6))),
                   ("mgrid", (_S(0, 5), _S(0, 3))), ("mgrid", _S(0, 1, 5j)),
                   ("mgrid", (_S(-1, 1, 3j), _S(0, 2))), ("mgrid", _S(0.0, 1.0, 0.25)),
                   ("ogrid", (_S(0, 5), _S(0, 3))), ("ogrid", (_S(0, 2), _S(0.0, 1, 3j))),
                   ("s_", (_S(1, 3), None)), ("index_exp", _S(1, 3))]:
    _items = _key if isinstance(_key, tuple) else (_key,)
    _specs = [k for k in _items if cases.is_spec(k)]
    # a directive string cannot cross jit or vmap as an argument: those keys run eagerly
    _tr = (EAGER if any(isinstance(k, str) and not cases.is_spec(k) for k in _items) else
           GRAD if any(k.startswith("f") for k in _specs) else NOGRAD if _specs else BASIC)
    add(case("array.npx_index", Ref("numpy." + _obj), _key, static=(0,), transforms=_tr,
             label=_obj + "_" + cases._short(_key)))
add(case("numpy.fill_diagonal", "f32[3,3]", 5.0, kwargs={"inplace": False}, transforms=FULL),
    case("numpy.fill_diagonal", "f32[3,3]", "f32[2]", kwargs={"inplace": False},
         label="cycled", transforms=GRAD),
    case("numpy.fill_diagonal", "f32[5,3]", "f32[3]", kwargs={"inplace": False}, label="tall"),
    case("numpy.fill_diagonal", "f32[2,2,2]", 5.0, kwargs={"inplace": False}, label="cube"),
    case("numpy.fill_diagonal", "i32[3,3]", 5.5, kwargs={"inplace": False}, label="cast"),
    case("numpy.fill_diagonal", "f32[3,3]", 5.0, label="inplace_error", transforms=EAGER),
    case("numpy.fill_diagonal", "f32[2,3,2]", 5.0, kwargs={"inplace": False},
         label="shape_error", transforms=EAGER),
    case("numpy.diag_indices_from", "f32[3,3]", transforms=BASIC),
    case("numpy.diag_indices_from", "f32[2,3]", transforms=EAGER, label="error"),
    case("numpy.tril_indices_from", "f32[3,4]", transforms=BASIC),
    case("numpy.tril_indices_from", "f32[3,4]", kwargs={"k": 1}, transforms=BASIC, label="k1"),
    case("numpy.triu_indices_from", "f32[3,4]", kwargs={"k": -1}, transforms=BASIC),
    case("numpy.triu_indices_from", "f32[3]", transforms=EAGER, label="error"),
    case("numpy.mask_indices", 3, Ref("numpy.triu"), static=(0, 1), transforms=EAGER),
    case("numpy.mask_indices", 3, Ref("numpy.tril"), -1, static=(0, 1, 2), transforms=EAGER,
         label="tril"),
    case("numpy.mask_indices", 3, Ref("numpy.triu"), static=(0, 1), kwargs={"size": 8},
         transforms=BASIC, label="size"))

# ---------------------------------------------------------------- function transformations

add(case("array.npx_vectorized", Ref("numpy.vectorize"), _dot_last, "f32[2,3]", "f32[3]",
         kwargs={"signature": "(n),(n)->()"}, static=(0, 1), transforms=FULL,
         label="signature"),
    case("array.npx_vectorized", Ref("numpy.vectorize"), _double_plus_one, "f32[2,3]",
         static=(0, 1), transforms=FULL, label="elementwise"),
    case("array.npx_vectorized", Ref("numpy.vectorize"), _sum_max, "f32[2,3]",
         kwargs={"signature": "(n)->(),()"}, static=(0, 1), transforms=GRAD, label="two_outputs"),
    case("array.npx_vectorized", Ref("numpy.vectorize"), _scaled, "f32[3]", 2.0,
         kwargs={"excluded": {1}}, static=(0, 1, 3), transforms=GRAD, label="excluded"),
    case("array.npx_vectorized", Ref("numpy.vectorize"), _outer_self, "f32[2,3]",
         kwargs={"signature": "(n)->(n,n)"}, static=(0, 1), label="matrix_out"),
    case("array.npx_vectorized", Ref("numpy.vectorize"), _dot_last, "f32[2,3]", "f32[4]",
         kwargs={"signature": "(n),(n)->()"}, static=(0, 1), transforms=EAGER,
         label="core_error"),
    case("array.npx_vectorized", Ref("numpy.vectorize"), _dot_last, "f32[4,1,3]", "f32[5,3]",
         kwargs={"signature": "(n),(n)->()"}, static=(0, 1), label="broadcast"))
add(case("numpy.apply_along_axis", Ref("numpy.sum"), 0, "f32[2,3]", static=(0, 1),
         transforms=FULL),
    case("numpy.apply_along_axis", _outer_self, 1, "f32[2,3,4]", static=(0, 1),
         transforms=GRAD, label="matrix"),
    case("numpy.apply_along_axis", _shifted, -1, "f32[2,3]", 10.0, static=(0, 1, 3),
         label="args"),
    case("numpy.apply_over_axes", Ref("numpy.sum"), "f32[2,3,4]", (0, 2), static=(0, 2),
         transforms=FULL),
    case("numpy.fromfunction", _ij, (2, 3), static=(0, 1), transforms=EAGER),
    case("numpy.fromfunction", _ij, (2, 3), static=(0, 1), kwargs={"dtype": "int32"},
         transforms=EAGER, label="int"))

# ---------------------------------------------------------------- ufunc objects


def _mul_add_one(a, b):
    return a * b + 1.0


for _method, _args, _kw, _tr in [
        ("__call__", ("f32[2,3]", "f32[3]"), {}, FULL),
        ("reduce", ("f32[3,4]",), {}, FULL),
        ("reduce", ("f32[3,4]",), {"axis": None, "keepdims": True}, GRAD),
        ("reduce", ("f32[4]",), {"where": "bool[4]"}, GRAD),
        ("reduce", ("f32[4]",), {"initial": 2.0}, GRAD),
        ("accumulate", ("f32[2,3]",), {"axis": 1}, FULL),
        ("accumulate", ("f32[4]",), {"dtype": "int32"}, NOGRAD),
        ("at", ("f32[4]", "i32[3]:idx4", 3.0), {"inplace": False}, GRAD),
        ("outer", ("f32[2]", "f32[3]"), {}, FULL),
        ("reduceat", ("f32[5]", np.array([0, 2, 2, 3], np.int32)), {}, GRAD)]:
    for _identity in (None, 1.0):
        add(case("array.npx_frompyfunc", Ref("numpy.frompyfunc"), _mul_add_one, 2, _identity,
                 _method, *_args, kwargs=_kw, static=(0, 1, 2, 3, 4) + (
                     (6,) if _method == "reduceat" else ()), transforms=_tr, ulp=8,
                 label=f"{_method}_{'identity' if _identity else 'none'}_{'_'.join(_kw)}"))
add(case("array.npx_frompyfunc", Ref("numpy.frompyfunc"), _mul_add_one, 2, None, "reduce",
         "f32[0]", static=(0, 1, 2, 3, 4), label="empty_error", transforms=EAGER),
    case("array.npx_frompyfunc", Ref("numpy.frompyfunc"), _sq, 1, None, "reduce", "f32[3]",
         static=(0, 1, 2, 3, 4), label="unary_error", transforms=EAGER),
    case("array.npx_frompyfunc", Ref("numpy.frompyfunc"), _sq, 1, None, "__call__", "f32[3]",
         static=(0, 1, 2, 3, 4), label="unary", transforms=FULL))
for _uf, _method, _args, _kw in [
        ("add", "reduce", ("f32[2,3]",), {}), ("add", "reduce", ("i32[2,3]",), {"axis": None}),
        ("add", "accumulate", ("f32[4]",), {}), ("add", "outer", ("f32[2]", "f32[3]"), {}),
        ("add", "at", ("f32[3]", "i32[4]:idx3", "f32[4]"), {"inplace": False}),
        ("add", "reduceat", ("i32[6]", np.array([0, 2, 5], np.int32)), {}),
        ("multiply", "reduce", ("f32[3]",), {}), ("multiply", "accumulate", ("f32[2,3]",),
                                                  {"axis": 1}),
        ("multiply", "at", ("f32[3]", "i32[2]:idx3", 2.0), {"inplace": False}),
        ("subtract", "reduce", ("f32[4]",), {}), ("subtract", "accumulate", ("f32[4]",), {}),
        ("subtract", "at", ("f32[3]", "i32[2]:idx3", 2.0), {"inplace": False}),
        ("maximum", "reduce", ("f32[2,3]",), {"axis": 1, "initial": 0.5}),
        ("minimum", "at", ("f32[3]", "i32[2]:idx3", 0.0), {"inplace": False}),
        ("logical_and", "reduce", ("bool[2,3]",), {}), ("logical_or", "reduce", ("i32[2,3]",),
                                                        {"axis": 1}),
        ("logical_xor", "reduce", ("bool[4]",), {}),
        ("bitwise_and", "reduce", ("i32[3]",), {}), ("bitwise_or", "accumulate", ("i32[3]",),
                                                     {}),
        ("logaddexp", "reduce", ("f32[3]",), {}), ("logaddexp2", "accumulate", ("f32[3]",), {}),
        ("negative", "reduce", ("f32[2]",), {}),
        ("negative", "at", ("f32[3]", "i32[2]:idx3"), {"inplace": False}),
        ("add", "at", ("f32[3]", "i32[2]:idx3", 1.0), {})]:
    add(case("array.npx_ufunc", Ref("numpy." + _uf), _method, *_args, kwargs=_kw,
             static=(0, 1) + ((3,) if _method == "reduceat" else ()), ulp=8,
             transforms=GRAD if _args[0].startswith("f") and _method != "at" or
             "inplace" in _kw and _args[0].startswith("f") else NOGRAD,
             label=f"{_uf}_{_method}_{'_'.join(_kw)}"))

# ---------------------------------------------------------------- selection

add(case("numpy.select", ["bool[3]", "bool[3]"], ["i32[3]", "f32[3]"], transforms=GRAD),
    case("numpy.select", ["bool[2,3]"], ["f32[2,3]"], -1.0, label="default",
         transforms=FULL),
    case("numpy.select", ["i32[3]:idx2"], ["i32[3]"], -1, label="int_cond"),
    case("numpy.select", ["bool[2]"], [1.5], label="weak"),
    case("numpy.select", [], [], static=(0, 1), label="empty_error", transforms=EAGER),
    case("numpy.select", ["bool[2]"], ["f32[2]", "f32[2]"], label="length_error",
         transforms=EAGER),
    case("numpy.choose", "i32[4]:idx3", ["f32[4]", "f32[4]", "f32[4]"], transforms=GRAD),
    case("numpy.choose", "i32[4]:idx5", ["f32[4]", "f32[4]"], kwargs={"mode": "clip"},
         transforms=GRAD, label="clip"),
    case("numpy.choose", "i32[4]:idx5", ["i32[4]", "i32[4]"], kwargs={"mode": "wrap"},
         label="wrap"),
    case("numpy.choose", "i32[2,1]:idx2", ["i32[3]", 5.0], label="broadcast"),
    case("numpy.choose", "i32[4]:idx5", ["f32[4]", "f32[4]"], label="raise_error",
         transforms=("eager", "jit")),
    case("numpy.piecewise", "f32[5]", ["bool[5]", "bool[5]"], [_neg, _triple],
         static=(2,), transforms=FULL),
    case("numpy.piecewise", "f32[5]", ["bool[5]"], [_neg, 7.0], static=(2,),
         transforms=GRAD, label="default"),
    case("numpy.piecewise", "f32[5]", ["bool[5]"], [_shifted, _scaled], 3.0, static=(2, 3),
         transforms=GRAD, label="args"),
    case("numpy.piecewise", "i32[5]", ["bool[5]"], [-1.5, 1.5], static=(2,), label="int"),
    case("numpy.piecewise", "f32[5]", ["bool[5]"], [1.0, 2.0, 3.0], static=(2,),
         label="count_error", transforms=EAGER),
    case("numpy.extract", "bool[5]", "f32[5]", transforms=EAGER),
    case("numpy.extract", "bool[2,3]", "f32[2,3]", kwargs={"size": 4}, transforms=GRAD,
         label="size"),
    case("numpy.extract", "i32[5]:idx2", "f32[5]", kwargs={"size": 6, "fill_value": 9.0},
         transforms=NOGRAD, label="fill"),
    case("numpy.extract", "bool[4]", "f32[3]", label="length_error", transforms=EAGER),
    case("numpy.compress", "bool[3]", "f32[3,2]", kwargs={"axis": 0}, transforms=EAGER),
    case("numpy.compress", "bool[3]", "f32[2,3]", kwargs={"axis": 1, "size": 3,
                                                           "fill_value": -1.0},
         transforms=GRAD, label="size"),
    case("numpy.compress", "bool[2]", "f32[3,2]", transforms=EAGER, label="flat"),
    case("numpy.compress", "bool[2]", "f32[3,2]", transforms=("jit",), label="jit_error"),
    case("numpy.place", "f32[5]", "bool[5]", "f32[2]", kwargs={"inplace": False},
         transforms=GRAD),
    case("numpy.place", "i32[2,3]", "bool[2,3]", 9.0, kwargs={"inplace": False},
         label="scalar"),
    case("numpy.place", "f32[5]", "bool[5]", "f32[2]", label="inplace_error",
         transforms=EAGER),
    case("numpy.flatnonzero", "i32[2,3]:idx2", transforms=EAGER),
    case("numpy.flatnonzero", "i32[2,3]:idx2", kwargs={"size": 4}, transforms=NOGRAD,
         label="size"),
    case("numpy.flatnonzero", "f32[5]:wide", kwargs={"size": 6, "fill_value": -1},
         transforms=NOGRAD, label="fill"))

# ---------------------------------------------------------------- sorting and searching

add(case("numpy.partition", "f32[5]:distinct", 2, static=(1,), transforms=FULL),
    case("numpy.partition", "f32[2,3]:distinct", 1, static=(1,), kwargs={"axis": 0},
         transforms=GRAD, label="axis0"),
    case("numpy.partition", "i32[6]", -1, static=(1,), label="negative"),
    case("numpy.partition", "i32[5]", 5, static=(1,), label="bounds_error", transforms=EAGER),
    case("numpy.argpartition", "f32[5]:distinct", 2, static=(1,)),
    case("numpy.argpartition", "f32[2,3]:distinct", 0, static=(1,), label="rows"),
    case("numpy.argpartition", "f32[2,3]:distinct", 1, static=(1,), kwargs={"axis": 0},
         label="axis0"),
    case("numpy.lexsort", ["i32[6]:idx2", "i32[6]:idx3"]),
    case("numpy.lexsort", ["f32[2,4]:wide", "f32[2,4]:wide"], kwargs={"axis": 0},
         label="axis0"),
    case("numpy.lexsort", [], static=(0,), label="empty_error", transforms=EAGER),
    case("numpy.lexsort", ["i32[2]", "i32[3]"], label="shape_error", transforms=EAGER))
# sorted inputs are static NumPy arrays (random specs are not sorted)
_SORTED = np.array([-2.5, -1.5, -0.5, 0.5, 0.5, 3.1], np.float32)
_SORTED_SPECIAL = np.array([-np.inf, -2.0, 0.0, 1.5, np.inf, np.nan], np.float32)
for _method in ("scan", "scan_unrolled", "compare_all", "sort"):
    for _side in ("left", "right"):
        add(case("numpy.searchsorted", _SORTED, "f32[2,3]:wide", static=(0,),
                 kwargs={"side": _side, "method": _method}, label=f"{_method}_{_side}",
                 transforms=NOGRAD))
add(case("numpy.searchsorted", _SORTED_SPECIAL, "f32[5]:special", static=(0,), label="nan"),
    case("numpy.searchsorted", np.arange(4, dtype=np.int32), 2.5, static=(0,),
         label="promote"),
    case("numpy.searchsorted", np.array([3.0, 1.0, 2.0, 0.0], np.float32), "f32[3]",
         static=(0,), kwargs={"sorter": np.array([3, 1, 2, 0], np.int32)}, label="sorter"),
    case("numpy.searchsorted", "f32[4]", "f32[3]", label="traced_a"),
    case("numpy.searchsorted", "f32[2,2]", "f32[2]", label="rank_error", transforms=EAGER),
    case("numpy.searchsorted", "f32[3]", "f32[2]", kwargs={"method": "foo"},
         label="method_error", transforms=EAGER),
    case("numpy.digitize", "f32[6]:wide", np.array([-1.5, 0.5, 2.5], np.float32),
         static=(1,)),
    case("numpy.digitize", "f32[6]:wide", np.array([-1.5, 0.5, 2.5], np.float32),
         static=(1,), kwargs={"right": True}, label="right"),
    case("numpy.digitize", "f32[6]:wide", np.array([2.5, 0.5, -1.5], np.float32),
         static=(1,), label="decreasing"),
    case("numpy.digitize", "f32[6]:wide", np.array([2.5, 0.5, -1.5], np.float32),
         static=(1,), kwargs={"right": True}, label="decreasing_right"),
    case("numpy.digitize", "i32[5]", np.array([-1, 2], np.int32), static=(1,), label="int"),
    case("numpy.digitize", "f32[3]", "f32[1,2]", label="bins_error", transforms=EAGER))

# ---------------------------------------------------------------- NaN-ignoring reductions

for _fn, _ulp in [("nansum", 16), ("nanprod", 16), ("nanmax", 1), ("nanmin", 1),
                  ("nanmean", 16), ("nanvar", 64), ("nanstd", 64)]:
    add(case("numpy." + _fn, "f32[3,4]", transforms=FULL, ulp=_ulp),
        case("numpy." + _fn, "f32[3,4]:special", kwargs={"axis": 1}, ulp=_ulp,
             label="special_axis1"),
        case("numpy." + _fn, "f32[2,5]:special", kwargs={"axis": 0, "keepdims": True},
             ulp=_ulp, label="keepdims"),
        case("numpy." + _fn, "i32[2,3]", label="int", ulp=_ulp))
add(case("numpy.nansum", "f32[3,4]", kwargs={"axis": 1, "where": "bool[3,4]"}, ulp=16,
         label="where", transforms=GRAD),
    case("numpy.nansum", "f32[5]:special", kwargs={"initial": 2.0}, ulp=16, label="initial"),
    case("numpy.nanmax", "f32[5]:special", kwargs={"initial": 5.0}, label="initial"),
    case("numpy.nanmean", "f16[5]:special", ulp=16, label="f16"),
    case("numpy.nanvar", "f32[2,4]:special", kwargs={"ddof": 1, "axis": 1}, ulp=64,
         label="ddof", transforms=GRAD),
    case("numpy.nanstd", "f32[5]", kwargs={"ddof": 3}, ulp=64, label="ddof3"))
for _fn in ("nanargmax", "nanargmin"):
    add(case("numpy." + _fn, "f32[3,4]:distinct"),
        case("numpy." + _fn, "f32[3,4]:special", kwargs={"axis": 1}, label="special"),
        case("numpy." + _fn, "f32[2,3]:special", kwargs={"axis": 0, "keepdims": True},
             label="keepdims"))
for _fn in ("nancumsum", "nancumprod"):
    add(case("numpy." + _fn, "f32[2,3]", transforms=FULL, ulp=16),
        case("numpy." + _fn, "f32[2,3]:special", kwargs={"axis": 1}, label="special"),
        case("numpy." + _fn, "i32[4]", label="int"))

# ---------------------------------------------------------------- cumulative

add(case("numpy.cumprod", "f32[2,3]", transforms=FULL, ulp=8),
    case("numpy.cumprod", "f32[2,3]", kwargs={"axis": 1}, transforms=FULL, ulp=8,
         label="axis1"),
    case("numpy.cumprod", "i8[4]:pos", label="i8"), case("numpy.cumprod", "bool[4]",
                                                         label="bool"),
    case("numpy.cumprod", "f32[3]", kwargs={"dtype": "int32"}, label="dtype"),
    case("numpy.cumprod", 2.5, label="scalar"),
    case("numpy.cumprod", "f32[0]", label="empty"),
    case("numpy.cumulative_sum", "f32[2,3]", kwargs={"axis": 1}, transforms=FULL, ulp=8),
    case("numpy.cumulative_sum", "i8[3]", kwargs={"include_initial": True}, label="initial"),
    case("numpy.cumulative_sum", "f32[2,3]", label="axis_error", transforms=EAGER),
    case("numpy.cumulative_sum", 1.5, label="scalar_error", transforms=EAGER),
    case("numpy.cumulative_prod", "f32[3,2]", kwargs={"axis": 0, "include_initial": True},
         transforms=FULL, ulp=8),
    case("numpy.cumulative_prod", "bool[3]", label="bool"))

# ---------------------------------------------------------------- statistics

add(case("numpy.average", "f32[2,3]", transforms=FULL, ulp=8),
    case("numpy.average", "f32[2,3]", kwargs={"axis": 1, "weights": "f32[3]:pos"},
         transforms=FULL, ulp=8, label="weights"),
    case("numpy.average", "f32[2,3]", kwargs={"axis": 0, "weights": "f32[2]:pos",
                                              "returned": True, "keepdims": True},
         transforms=GRAD, ulp=8, label="returned"),
    case("numpy.average", "i32[2,3]", kwargs={"weights": "i32[2,3]:pos"}, label="int"),
    case("numpy.average", "f32[2,3,4]", kwargs={"axis": (0, 2), "weights": "f32[2,4]:pos"},
         ulp=8, label="two_axes"),
    case("numpy.average", "f32[2,3]", kwargs={"weights": "f32[3]"}, label="axis_error",
         transforms=EAGER),
    case("numpy.average", "f32[2,3]", kwargs={"axis": 1, "weights": "f32[2]"},
         label="shape_error", transforms=EAGER))
for _fn, _q in (("quantile", 0.3), ("percentile", 30.0), ("nanquantile", 0.3),
                ("nanpercentile", 30.0)):
    _spec = "f32[2,5]:special" if _fn.startswith("nan") else "f32[2,5]"
    add(case("numpy." + _fn, "f32[7]", _q, static=(1,), transforms=FULL, ulp=8),
        case("numpy." + _fn, _spec, "f32[3]:prob" if "quantile" in _fn else _q,
             kwargs={"axis": 1}, ulp=8, label="q_array",
             transforms=NOGRAD + ("grad",) if not _fn.startswith("nan") else NOGRAD),
        case("numpy." + _fn, "f32[3,4]", _q, static=(1,), kwargs={"axis": 0,
                                                                  "keepdims": True},
             ulp=8, label="keepdims"),
        case("numpy." + _fn, "i32[6]", _q, static=(1,), label="int", ulp=8))
    for _method in ("lower", "higher", "midpoint", "nearest", "inverted_cdf"):
        add(case("numpy." + _fn, "f32[2,6]:wide", _q, static=(1,),
                 kwargs={"axis": 1, "method": _method}, ulp=8, label=_method))
add(case("numpy.quantile", "f32[5]:special", 0.5, static=(1,), label="nan"),
    case("numpy.quantile", "f32[2,3,4]", 0.25, static=(1,), kwargs={"axis": (0, 2)}, ulp=8,
         label="two_axes", transforms=GRAD),
    case("numpy.quantile", "f32[6]", 0.4, static=(1,),
         kwargs={"method": "inverted_cdf", "weights": "f32[6]:pos"}, label="weights"),
    case("numpy.quantile", "f32[6]", 0.4, static=(1,), kwargs={"weights": "f32[6]:pos"},
         label="weights_error", transforms=EAGER),
    case("numpy.quantile", "f32[6]", 0.4, static=(1,), kwargs={"method": "weibull"},
         label="method_error", transforms=EAGER),
    case("numpy.quantile", "f32[6]", "f32[1,2]:prob", label="q_rank_error", transforms=EAGER),
    case("numpy.median", "f32[3,4]", kwargs={"axis": (0, 1), "keepdims": True},
         transforms=GRAD, label="two_axes"),
    case("numpy.median", "f32[5]:special", label="nan"),
    case("numpy.median", "f32[3,4]", kwargs={"axis": 1, "keepdims": True}, label="keepdims"),
    case("numpy.nanmedian", "f32[7]:special", transforms=NOGRAD),
    case("numpy.nanmedian", "f32[2,5]:special", kwargs={"axis": 1}, label="axis1"),
    case("numpy.nanmedian", "f32[6]", transforms=FULL, label="no_nan"))
add(case("numpy.cov", "f32[2,5]", transforms=FULL, ulp=32),
    case("numpy.cov", "f32[5]", "f32[5]", ulp=32, transforms=GRAD, label="xy"),
    case("numpy.cov", "f32[4,2]", kwargs={"rowvar": False}, ulp=32, label="columns"),
    case("numpy.cov", "f32[2,5]", kwargs={"bias": True}, ulp=32, label="bias"),
    case("numpy.cov", "f32[2,5]", kwargs={"ddof": 2}, ulp=32, label="ddof"),
    case("numpy.cov", "f32[2,5]", kwargs={"fweights": "i32[5]:pos"}, ulp=32, label="fweights"),
    case("numpy.cov", "f32[2,5]", kwargs={"aweights": "f32[5]:pos"}, ulp=32,
         transforms=GRAD, label="aweights"),
    case("numpy.cov", "f32[2,5]", kwargs={"fweights": "i32[5]:pos", "aweights": "f32[5]:pos"},
         ulp=32, label="both_weights"),
    case("numpy.cov", "i32[2,4]", ulp=32, label="int"),
    case("numpy.cov", "f32[2,5]", kwargs={"fweights": "f32[5]"}, label="fweights_error",
         transforms=EAGER),
    case("numpy.cov", "f32[2,2,2]", label="rank_error", transforms=EAGER),
    case("numpy.corrcoef", "f32[3,5]", transforms=FULL, ulp=64),
    case("numpy.corrcoef", "f32[5]", "f32[5]", ulp=64, label="xy"),
    case("numpy.corrcoef", "f32[5]", ulp=64, label="single"),
    case("numpy.corrcoef", "f32[4,2]", kwargs={"rowvar": False}, ulp=64, label="columns"))
add(case("numpy.bincount", "i32[8]:idx5", transforms=EAGER),
    case("numpy.bincount", "i32[8]:idx5", kwargs={"length": 4}, label="length"),
    case("numpy.bincount", "i32[8]:idx5", kwargs={"minlength": 7}, transforms=EAGER,
         label="minlength"),
    case("numpy.bincount", "i32[6]:idx4", kwargs={"weights": "f32[6]", "length": 5},
         transforms=GRAD, label="weights"),
    case("numpy.bincount", "i32[6]:idxm3", kwargs={"length": 4}, label="negative"),
    case("numpy.bincount", "bool[5]", kwargs={"length": 3}, label="bool"),
    case("numpy.bincount", "i32[6]:idx4", label="jit_error", transforms=("jit",)),
    case("numpy.bincount", "f32[3]", label="dtype_error", transforms=EAGER),
    case("numpy.bincount", "i32[2,2]:idx3", label="rank_error", transforms=EAGER))
add(case("numpy.histogram", "f32[10]", transforms=GRAD),
    case("numpy.histogram", "f32[10]", 3, static=(1,), kwargs={"range": (-1.0, 2.0)},
         label="range"),
    case("numpy.histogram", "f32[10]", np.array([-1.5, -0.5, 0.5, 1.5], np.float32),
         static=(1,), label="edges"),
    case("numpy.histogram", "f32[10]", 4, static=(1,), kwargs={"density": True},
         transforms=GRAD, label="density"),
    case("numpy.histogram", "f32[10]", 3, static=(1,), kwargs={"weights": "f32[10]:pos"},
         transforms=GRAD, label="weights"),
    case("numpy.histogram", "i32[6]", 2, static=(1,), label="int"),
    case("numpy.histogram", "f32[4]", [0.0, 1.0, 2.0], static=(1,), label="list_error",
         transforms=EAGER),
    case("numpy.histogram_bin_edges", "f32[10]", 4, static=(1,)),
    case("numpy.histogram_bin_edges", "i32[6]", 4, static=(1,), label="int"),
    case("numpy.histogram_bin_edges", "f32[4]", 2, static=(1,), kwargs={"range": (0, 4)},
         label="range"),
    case("numpy.histogram2d", "f32[8]", "f32[8]", 2, static=(2,), transforms=NOGRAD),
    case("numpy.histogram2d", "f32[8]", "f32[8]", [2, 3], static=(2,), label="bins"),
    case("numpy.histogram2d", "f32[8]", "f32[8]", 2, static=(2,), kwargs={"density": True},
         label="density"),
    case("numpy.histogramdd", "f32[8,2]", 2, static=(1,), transforms=NOGRAD),
    case("numpy.histogramdd", "f32[8,2]", (2, 3), static=(1,),
         kwargs={"range": [(-1, 1), (-2, 2)], "weights": "f32[8]"}, label="weights"))

# ---------------------------------------------------------------- differences

add(case("numpy.diff", "f32[5]", transforms=FULL),
    case("numpy.diff", "f32[6]", kwargs={"n": 2}, transforms=GRAD, label="n2"),
    case("numpy.diff", "f32[3]", kwargs={"n": 5}, label="n5"),
    case("numpy.diff", "i32[2,3]", kwargs={"axis": 0}, label="axis0"),
    case("numpy.diff", "i32[2,3]", kwargs={"prepend": 0}, label="prepend"),
    case("numpy.diff", "f32[2,3]", kwargs={"append": "f32[2,1]"}, transforms=GRAD,
         label="append"),
    case("numpy.diff", "bool[4]", label="bool"), case("numpy.diff", "u8[4]", label="u8"),
    case("numpy.diff", "f32[3]", kwargs={"n": -1}, label="order_error", transforms=EAGER),
    case("numpy.ediff1d", "f32[2,3]", transforms=FULL),
    case("numpy.ediff1d", "f32[4]", kwargs={"to_end": "f32[2]", "to_begin": -5.0},
         transforms=GRAD, label="ends"),
    case("numpy.ediff1d", "i32[3]", kwargs={"to_begin": "f32[1]"}, label="cast"),
    case("numpy.gradient", "f32[5]", transforms=FULL),
    case("numpy.gradient", "f32[5]", 2.0, transforms=GRAD, label="spacing"),
    case("numpy.gradient", "f32[5]", "f32[5]:distinct", transforms=GRAD, label="coords",
         ulp=16),
    case("numpy.gradient", "f32[3,4]", transforms=GRAD, label="2d"),
    case("numpy.gradient", "f32[3,4]", 2.0, 3.0, label="2d_spacings"),
    case("numpy.gradient", "f32[3,4]", kwargs={"axis": 1}, label="axis1"),
    case("numpy.gradient", "i32[4]", label="int"),
    case("numpy.gradient", "f32[1]", label="size_error", transforms=EAGER),
    case("numpy.gradient", "f32[3]", kwargs={"edge_order": 1}, label="edge_error",
         transforms=EAGER),
    case("numpy.trapezoid", "f32[5]", transforms=FULL, ulp=8),
    case("numpy.trapezoid", "f32[5]", kwargs={"dx": 0.5}, transforms=GRAD, label="dx"),
    case("numpy.trapezoid", "f32[5]", kwargs={"x": "f32[5]"}, transforms=FULL, label="x",
         ulp=8),
    case("numpy.trapezoid", "f32[2,3]", kwargs={"axis": 0}, label="axis0"),
    case("numpy.trapezoid", "i32[2,3]", label="int"),
    case("numpy.trapezoid", "f32[2,3]", kwargs={"x": "f32[2,3]"}, label="x_2d", ulp=8),
    case("numpy.interp", "f32[6]:wide", np.array([-2.0, -0.5, 1.0, 2.5], np.float32), "f32[4]",
         static=(1,), transforms=NOGRAD, ulp=8),
    case("numpy.interp", "f32[5]", [-1.0, 0.0, 1.0], "f32[3]", static=(1,), ulp=8,
         transforms=FULL, label="grad"),
    case("numpy.interp", "f32[5]:wide", [-1.0, 0.0, 1.0], [3.0, 2.0, 0.0], static=(1, 2),
         kwargs={"left": -1.0, "right": 9.0}, label="left_right"),
    case("numpy.interp", "f32[5]:wide", [-1.0, 0.0, 1.0], [3.0, 2.0, 0.0], static=(1, 2),
         kwargs={"left": "extrapolate", "right": "extrapolate"}, label="extrapolate", ulp=8),
    case("numpy.interp", "f32[5]:wide", [-1.0, 0.0, 1.5], [0.0, 1.0, 3.0], static=(1, 2),
         kwargs={"period": 3.0}, label="period", ulp=8),
    case("numpy.interp", "i32[3]", [1, 2, 3], [3, 2, 0], static=(1, 2), label="int"),
    case("numpy.interp", "f32[2]", [1.0, 2.0], [1.0, 2.0, 3.0], static=(1, 2),
         label="shape_error", transforms=EAGER),
    case("numpy.unwrap", "f32[2,5]", transforms=FULL, ulp=8),
    case("numpy.unwrap", [0.0, 3.0, 6.5, 0.2, -3.0], static=(0,), transforms=EAGER,
         label="jumps"),
    case("numpy.unwrap", [0.0, 3.0, 6.5, 0.2, -3.0], static=(0,), kwargs={"discont": 4.0},
         transforms=EAGER, label="discont"),
    case("numpy.unwrap", "i32[6]", kwargs={"period": 7}, label="int_period"),
    case("numpy.unwrap", "i32[6]", label="int"),
    case("numpy.unwrap", "f32[3,2]", kwargs={"axis": 0}, label="axis0", ulp=8))

# ---------------------------------------------------------------- sets

add(case("numpy.unique", "i32[8]:idx4", transforms=EAGER),
    case("numpy.unique", "i32[8]:idx4", kwargs={"return_index": True, "return_inverse": True,
                                                "return_counts": True}, transforms=EAGER,
         label="all"),
    case("numpy.unique", "i32[8]:idx6", kwargs={"size": 5}, label="size"),
    case("numpy.unique", "i32[8]:idx6", kwargs={"size": 7, "fill_value": -1},
         label="fill"),
    case("numpy.unique", "i32[8]:idx6", kwargs={"size": 7, "return_index": True,
                                                "return_inverse": True, "return_counts": True},
         label="size_all"),
    case("numpy.unique", "f32[8]:wide", kwargs={"size": 8}, transforms=GRAD, label="float"),
    case("numpy.unique", "i32[4,2]:idx2", kwargs={"axis": 0}, transforms=EAGER,
         label="rows"),
    case("numpy.unique", "i32[4,2]:idx2", kwargs={"axis": 0, "size": 5, "return_index": True,
                                                  "return_inverse": True,
                                                  "return_counts": True},
         label="rows_size"),
    case("numpy.unique", "i32[3,2]:idx3", kwargs={"return_inverse": True}, transforms=EAGER,
         label="inverse_shape"),
    case("numpy.unique", "f32[6]:special", kwargs={"size": 6, "return_counts": True},
         label="nan"),
    case("numpy.unique", "f32[6]:special", kwargs={"size": 6, "equal_nan": False},
         label="nan_distinct"),
    case("numpy.unique", 2.5, transforms=EAGER, label="weak"),
    case("numpy.unique", "i32[4]", label="jit_error", transforms=("jit",)),
    case("numpy.unique_values", "i32[6]:idx3", kwargs={"size": 4}),
    case("numpy.unique_counts", "f32[6]:special", kwargs={"size": 6}),
    case("numpy.unique_inverse", "i32[2,3]:idx3", kwargs={"size": 3}),
    case("numpy.unique_all", "i32[6]:idx3", kwargs={"size": 4}),
    case("numpy.unique_all", "i32[6]:idx3", transforms=EAGER, label="concrete"))
for _method in ("compare_all", "binary_search", "sort", "auto"):
    add(case("numpy.isin", "i32[2,3]:idx5", "i32[4]:idx5", kwargs={"method": _method},
             label=_method))
add(case("numpy.isin", "f32[5]:special", "f32[3]:special", label="nan"),
    case("numpy.isin", "i32[4]:idx4", "i32[2]:idx4", kwargs={"invert": True}, label="invert"),
    case("numpy.isin", "f32[3]:wide", "i32[2]", label="promote"),
    case("numpy.isin", "i32[3]", "i32[2]", kwargs={"method": "foo"}, label="method_error",
         transforms=EAGER))
for _fn, _kw in [("setdiff1d", {}), ("union1d", {}), ("intersect1d", {}), ("setxor1d", {}),
                 ("intersect1d", {"return_indices": True})]:
    _lbl = "_indices" if _kw else ""
    add(case("numpy." + _fn, "i32[6]:idx6", "i32[4]:idx6", kwargs=dict(_kw),
             transforms=EAGER, label="concrete" + _lbl),
        case("numpy." + _fn, "i32[6]:idx6", "i32[4]:idx6", kwargs={"size": 6, **_kw},
             label="size" + _lbl),
        case("numpy." + _fn, "i32[6]:idx6", "i32[4]:idx6",
             kwargs={"size": 7, "fill_value": -1, **_kw}, label="fill" + _lbl),
        case("numpy." + _fn, "f32[5]:special", "f32[3]:special", kwargs={"size": 8, **_kw},
             label="nan" + _lbl))
add(case("numpy.setdiff1d", "i32[5]:idx9", "i32[3]:idx9", kwargs={"assume_unique": True,
                                                                  "size": 5},
         label="assume_unique"),
    case("numpy.setxor1d", "i32[2,3]:idx5", "i32[3]:idx5", kwargs={"size": 8}, label="2d"),
    case("numpy.intersect1d", "i32[4]:idx9", "i32[3]:idx9",
         kwargs={"assume_unique": True, "return_indices": True, "size": 3},
         label="assume_unique"),
    case("numpy.union1d", "i32[3]", "f32[2]", kwargs={"size": 6}, label="promote"),
    case("numpy.setdiff1d", "i32[4]", "i32[2]", label="jit_error", transforms=("jit",)))

# ---------------------------------------------------------------- polynomials

add(case("numpy.poly", "f32[3]", transforms=FULL, ulp=16),
    case("numpy.poly", "i32[2]", label="int"), case("numpy.poly", 2.0, label="scalar"),
    case("numpy.poly", "f32[0]", label="empty"),
    case("numpy.polyval", "f32[4]", "f32[2,3]", transforms=FULL, ulp=16),
    case("numpy.polyval", "i32[3]", "i32[4]", label="int"),
    case("numpy.polyval", "i32[3]", 2.5, label="promote"),
    case("numpy.polyval", "f32[2,3]", "f32[3]", label="columns", ulp=16),
    case("numpy.polyadd", "f32[2]", "f32[3]", transforms=FULL),
    case("numpy.polyadd", "i32[2]", "f32[1]", label="promote"),
    case("numpy.polysub", "f32[2]", "f32[3]", transforms=FULL),
    case("numpy.polymul", "f32[2]", "f32[3]", transforms=FULL, ulp=8),
    case("numpy.polymul", "i32[2]", "i32[2]", label="int"),
    case("numpy.polymul", [0.0, 1.0, 2.0], "f32[3]", static=(0,),
         kwargs={"trim_leading_zeros": True}, transforms=EAGER, label="trim"),
    case("numpy.polymul", 2.0, "f32[2]", label="scalar_error", transforms=EAGER),
    case("numpy.polydiv", "f32[4]", "f32[2]:nz", transforms=FULL, ulp=32),
    case("numpy.polydiv", "i32[3]", "i32[2]:pos", label="int", ulp=32),
    case("numpy.polydiv", "f32[2]", "f32[3]:nz", label="short"),
    case("numpy.polydiv", [1.0, 3.0, 3.0], [2.0, 1.0], static=(0, 1),
         kwargs={"trim_leading_zeros": True}, transforms=EAGER, label="trim"),
    case("numpy.polyder", "f32[4]", transforms=FULL),
    case("numpy.polyder", "f32[4]", 2, static=(1,), label="m2"),
    case("numpy.polyder", "f32[4]", 5, static=(1,), label="m5"),
    case("numpy.polyder", "i32[3]", label="int"),
    case("numpy.polyder", "f32[2]", -1, static=(1,), label="order_error", transforms=EAGER),
    case("numpy.polyint", "f32[3]", transforms=FULL),
    case("numpy.polyint", "f32[3]", 2, static=(1,), kwargs={"k": "f32[2]"}, transforms=GRAD,
         label="m2_k"),
    case("numpy.polyint", "f32[3]", kwargs={"k": 5.0}, label="k"),
    case("numpy.polyint", "i32[3]", label="int"),
    case("numpy.vander", "f32[3]", transforms=FULL, ulp=8),
    case("numpy.vander", "i32[3]", 2, static=(1,), label="n2"),
    case("numpy.vander", "f32[3]", kwargs={"increasing": True}, label="increasing"),
    case("numpy.vander", "f32[3]", 0, static=(1,), label="n0"),
    case("numpy.vander", "f32[2,2]", label="rank_error", transforms=EAGER),
    case("numpy.polyfit", "f32[6]:distinct", "f32[6]", 2, static=(2,), ulp=256,
         transforms=BASIC),
    case("numpy.polyfit", "f32[5]:distinct", "f32[5,2]", 1, static=(2,), ulp=256,
         transforms=BASIC, label="columns"),
    case("numpy.polyfit", "f32[5]:distinct", "f32[5]", -1, static=(2,), label="deg_error",
         transforms=EAGER))
for _fn in ("convolve", "correlate"):
    add(case("numpy." + _fn, "f32[5]", "f32[3]", transforms=FULL, ulp=8),
        case("numpy." + _fn, "f32[2]", "f32[4]", kwargs={"mode": "full"}, label="swap_full",
             transforms=GRAD, ulp=8),
        case("numpy." + _fn, "f32[5]", "f32[3]", kwargs={"mode": "same"}, label="same",
             transforms=GRAD, ulp=8),
        case("numpy." + _fn, "f32[2]", "f32[4]", kwargs={"mode": "same"}, label="swap_same",
             ulp=8),
        case("numpy." + _fn, "f32[2]", "f32[4]", kwargs={"mode": "valid"}, label="swap_valid",
             ulp=8),
        case("numpy." + _fn, "i32[3]", "i32[2]", label="int"),
        case("numpy." + _fn, "f32[2]", "f32[0]", label="empty_error", transforms=EAGER),
        case("numpy." + _fn, "f32[2,2]", "f32[2]", label="rank_error", transforms=EAGER),
        case("numpy." + _fn, "f32[2]", "f32[2]", kwargs={"mode": "foo"}, label="mode_error",
             transforms=EAGER))

# ---------------------------------------------------------------- windows

for _fn in ("bartlett", "blackman", "hamming", "hanning"):
    for _m in (0, 1, 5, 8):
        add(case("numpy." + _fn, _m, static=(0,), transforms=BASIC, ulp=16))
add(case("numpy.kaiser", 5, 14.0, static=(0,), transforms=BASIC, ulp=32),
    case("numpy.kaiser", 8, "f32[]:pos", static=(0,), transforms=("eager", "jit", "grad"),
         ulp=32, label="traced_beta"),
    case("numpy.kaiser", 1, 3.0, static=(0,), transforms=BASIC, label="one"))

# ---------------------------------------------------------------- bits, bytes, dtypes

add(case("numpy.packbits", "i32[9]:idx2"),
    case("numpy.packbits", "bool[2,3]", kwargs={"axis": 1}, label="axis1"),
    case("numpy.packbits", "bool[3,2]", kwargs={"axis": 0, "bitorder": "little"},
         label="little"),
    case("numpy.packbits", "f32[3]", label="dtype_error", transforms=EAGER),
    case("numpy.unpackbits", "u8[3]"),
    case("numpy.unpackbits", "u8[2,2]", kwargs={"axis": 1, "bitorder": "little"},
         label="little"),
    case("numpy.unpackbits", "u8[2]", kwargs={"count": 3}, label="count"),
    case("numpy.unpackbits", "u8[2]", kwargs={"count": -3}, label="count_negative"),
    case("numpy.unpackbits", "u8[1]", kwargs={"count": 10}, label="count_pad"),
    case("numpy.unpackbits", "i32[2]", label="dtype_error", transforms=EAGER),
    case("numpy.frombuffer", np.arange(3, dtype=np.float32).tobytes(), static=(0,),
         kwargs={"dtype": "float32"}, transforms=EAGER),
    case("numpy.fromstring", "1,2,3", static=(0,), kwargs={"dtype": "int32", "sep": ","},
         transforms=EAGER),
    case("numpy.fromiter", [1, 2], static=(0,), transforms=EAGER, label="error"),
    case("numpy.fromfile", "file", static=(0,), transforms=EAGER, label="error"),
    case("numpy.from_dlpack", np.arange(3.0, dtype=np.float32), static=(0,),
         transforms=EAGER))
for _name, _value in (("single", 1.5), ("double", 1.5), ("bool", 2), ("uint", 3)):
    add(case("numpy." + _name, _value, static=(0,), transforms=EAGER))
