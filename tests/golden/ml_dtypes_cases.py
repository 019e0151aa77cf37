"""The computations of tests/golden/gen_ml_dtypes.py (run with JAX) and tests/test_ml_dtypes.py
(run with corejax) on ml_dtypes' types (bfloat16, float8/6/4, int1/2/4, uint1/2/4), defined
once. Every function takes the framework's namespace `fw` (jax or corejax: its numpy, lax, nn,
jit) and returns arrays; inputs are built from recorded bit patterns, so both frameworks start
from the very same values. No jax import here."""
import ml_dtypes
import numpy as np

ML_FLOATS = ["bfloat16", "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn", "float8_e3m4",
             "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz",
             "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu"]
ML_INTS = ["int1", "int2", "int4", "uint1", "uint2", "uint4"]
ML = ML_FLOATS + ML_INTS
STANDARD_X32 = ["bool", "int8", "int16", "int32", "uint8", "uint16", "uint32", "float16",
                "float32", "complex64"]
STANDARD_X64 = ["int64", "uint64", "float64", "complex128"]

# float sources: values around every narrow format's range, rounding ties, tiny and huge
# magnitudes, signed zeros and non-finite values (as float32, then cast by the framework)
FLOAT_VALUES = [0.0, -0.0, 1.0, -1.0, 0.5, -1.5, 2.5, 3.0, -3.75, 6.0, 0.1, 10.0, 100.0,
                0.3, 1.125, 1.0625, 1.00390625, 7.5, 240.0, 448.0, 500.0, 57344.0, 65504.0,
                70000.0, 1e-3, 2.0 ** -10, 1e-8, 3e38, -129.0, 255.5, 2.0 ** 31, -3e9,
                float("nan"), float("inf"), float("-inf")]
INT_VALUES = [0, 1, -1, 2, -2, 3, 7, -8, 8, 15, 16, 127, -128, 255, 256, -129, 1000, -40000,
              2 ** 31 - 1, -2 ** 31]

UNARY = ["negative", "abs", "sign", "floor", "ceil", "round", "trunc", "sqrt", "exp", "log",
         "log1p", "expm1", "tanh", "sin", "cos", "reciprocal", "square", "isnan", "isfinite",
         "signbit", "nn.sigmoid", "nn.relu"]
BINARY = ["add", "subtract", "multiply", "true_divide", "maximum", "minimum", "power",
          "remainder", "floor_divide", "arctan2", "less", "equal", "less_equal", "nextafter"]
INT_UNARY = ["negative", "abs", "sign", "square", "invert", "isnan"]
INT_BINARY = ["add", "subtract", "multiply", "floor_divide", "remainder", "maximum", "minimum",
              "less", "equal", "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift",
              "right_shift", "lax.div", "lax.rem", "true_divide", "power"]
REDUCTIONS = ["sum", "sum_axis0", "mean", "prod", "max", "min", "argmax", "var", "std",
              "cumsum", "matmul", "dot_f32", "softmax", "logsumexp", "norm", "astype_f32_sum"]
INT_REDUCTIONS = ["sum", "sum_axis0", "mean", "prod", "max", "argmax", "cumsum", "matmul"]


def dtype(name):
    return np.dtype(name)


def from_bits(bits, name):
    """The array of dtype `name` whose raw bytes are `bits` (an unsigned integer array)."""
    return np.asarray(bits).view(dtype(name))


def bits_of(x):
    """The raw bytes of an array as an unsigned integer array of the same width."""
    x = np.asarray(x)
    if x.dtype == np.bool_:
        return x.view(np.uint8)
    return x.view(np.dtype(f"u{x.dtype.itemsize}")) if x.dtype.kind != "c" else \
        x.view(np.dtype(f"u{x.dtype.itemsize // 2}"))


def source_values(name, fw):
    """The values every cast starts from, as an array of dtype `name` made by the framework
    (from float32 or int64 Python lists: those casts are part of what is recorded)."""
    dt = dtype(name)
    if dt == np.bool_:
        return fw.numpy.asarray(np.array([True, False]))
    if name in ML_INTS or dt.kind in "iu":  # every in-range value, made exactly in NumPy
        info = ml_dtypes.iinfo(dt)
        vals = sorted({v for v in INT_VALUES if info.min <= v <= info.max} |
                      {int(info.min), int(info.max)})
        wide = np.uint64 if vals[0] >= 0 else np.int64
        return fw.numpy.asarray(np.array(vals, wide).astype(dt))
    if dt.kind == "c":
        return fw.numpy.asarray(np.array(FLOAT_VALUES, np.float64).astype(dt))
    vals = np.array(FLOAT_VALUES, np.float64 if dt.itemsize >= 8 else np.float32)
    return fw.numpy.asarray(vals).astype(dt)


# the values of a float type's binary operands: 0, -0, 1, -1, 0.5, -1.5, 2.5, 3, -3.75, 6,
# 0.1, 100, 0.3, nan, inf, -inf (as the type holds them)
BINARY_PICK = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 13, 32, 33, 34]


def operands(name, source):
    """The operands of a type's unary / binary ops and reductions, from its source values (an
    array made from recorded bits): every value of an integer type; for a float type the
    BINARY_PICK values (binary) and the finite ones, in order, repeated to 16 (reductions)."""
    source = np.asarray(source)
    if name in ML_INTS:
        info = ml_dtypes.iinfo(dtype(name))
        every = np.arange(int(info.min), int(info.max) + 1).astype(dtype(name))
        return every, every, np.resize(every, 16)
    finite = [v for v in source if np.isfinite(float(v))]
    return source, source[BINARY_PICK], np.resize(np.array(finite, source.dtype), 16)


def _resolve(fw, op):
    if op.startswith("lax."):
        return getattr(fw.lax, op[4:])
    if op.startswith("nn."):
        return getattr(fw.nn, op[3:])
    return getattr(fw.numpy, op)


def unary(fw, op, x):
    return _resolve(fw, op)(x)


def binary(fw, op, x, y):
    """op on every pair of x's values (an outer product, flattened)."""
    n = x.shape[0]
    a = fw.numpy.repeat(x, n)
    b = fw.numpy.tile(y, n)
    return _resolve(fw, op)(a, b)


def reduction(fw, op, x):
    """op on the values as a (4, 4) matrix (the first 16 values)."""
    jnp = fw.numpy
    m = x[:16].reshape(4, 4)
    if op == "sum":
        return jnp.sum(m)
    if op == "sum_axis0":
        return jnp.sum(m, axis=0)
    if op == "mean":
        return jnp.mean(m, axis=1)
    if op == "prod":
        return jnp.prod(m[:2], axis=0)
    if op == "max":
        return jnp.max(m, axis=1)
    if op == "min":
        return jnp.min(m)
    if op == "argmax":
        return jnp.argmax(m, axis=0)
    if op == "var":
        return jnp.var(m, axis=0)
    if op == "std":
        return jnp.std(m)
    if op == "cumsum":
        return jnp.cumsum(m, axis=1)
    if op == "matmul":
        return m @ m.T
    if op == "dot_f32":
        return jnp.dot(m, m, preferred_element_type=jnp.float32)
    if op == "softmax":
        return fw.nn.softmax(m, axis=-1)
    if op == "logsumexp":
        return fw.nn.logsumexp(m, axis=0)
    if op == "norm":
        return jnp.linalg.norm(m, axis=1)
    if op == "astype_f32_sum":
        return jnp.sum(m.astype(jnp.float32) * 2, axis=1).astype(m.dtype)
    raise ValueError(op)


# What finfo / iinfo report, attribute by attribute
FINFO_FIELDS = ["bits", "eps", "epsneg", "max", "min", "tiny", "smallest_normal",
                "smallest_subnormal", "resolution", "precision", "nexp", "nmant", "maxexp",
                "minexp", "machep", "negep", "iexp", "dtype"]
IINFO_FIELDS = ["bits", "min", "max", "dtype", "kind"]
ABSTRACT = ["generic",  # NumPy's abstract scalar types, by name "number", "inexact", "floating", "complexfloating", "integer",
            "signedinteger", "unsignedinteger"]
ISDTYPE_KINDS = ["bool", "signed integer", "unsigned integer", "integral", "real floating",
                 "complex floating", "numeric"]
