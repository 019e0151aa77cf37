"""Conformance cases of ml_dtypes' types (#26): bfloat16, the float8 / float6 / float4 formats
and the 1/2/4-bit integers ("bf16[...]", "f8e4m3fn[...]", "i4[...]" specs): the scalar types
as functions, creation with dtype=, arithmetic, transcendental functions, reductions, matmul,
casts both ways, promotion (and its refusals) and finfo / iinfo. Derivatives run through
bfloat16 (JAX differentiates it like any float; its cotangents stay bfloat16). Values are
compared within `ulp` of the type's own eps; tests/test_ml_dtypes.py compares bit patterns.
(Sums and products of 1/2/4-bit integers are left out: JAX 0.10.2 raises by accident there,
see JAX_ACCIDENTS in tests/test_ml_dtypes.py.)"""
import cases
from cases import BASIC, FULL, NOGRAD, Ref, case


def add(*cs):
    """cases.add, with every label starting "ml_" (gen_conformance.py /ml_ picks them out)."""
    for c in cs:
        c["label"] = "ml_" + (c["label"] or "_".join(cases._short(a) for a in c["args"]))
    cases.add(*cs)


EAGER = ("eager",)
FLOAT8 = ["float8_e4m3fn", "float8_e5m2", "float8_e4m3", "float8_e3m4", "float8_e4m3fnuz",
          "float8_e5m2fnuz", "float8_e4m3b11fnuz", "float8_e8m0fnu"]
ALL_FLOATS = ["bfloat16", "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn"] + FLOAT8
INTS = ["int1", "int2", "int4", "uint1", "uint2", "uint4"]
# JAX's CPU backend cannot compute with float6 or the 1-bit integers at all (its XLA fails at
# run time), so they appear here only in dtype queries; tests/test_ml_dtypes.py says more
COMPUTED_INTS = ["int2", "int4", "uint2", "uint4"]

# ---------------------------------------------------------------- the scalar types as functions
add(case("numpy.bfloat16", "f32[2,3]", ulp=0),
    case("numpy.bfloat16", 1.5, ulp=0, label="py_float"),
    case("numpy.float8_e4m3fn", "f32[4]", ulp=0),
    case("numpy.float8_e5m2", "f32[4]", ulp=0),
    case("numpy.float4_e2m1fn", "f32[4]:wide", ulp=0),
    case("numpy.float8_e8m0fnu", "f32[4]:pos", ulp=0),
    case("numpy.int4", "i32[4]", ulp=0),
    case("numpy.uint4", "i32[4]:idx16", ulp=0),
    case("numpy.int2", "i32[4]:idxm2", ulp=0),
    *[case(f"numpy.{t}", "f32[3]:wide", ulp=0, transforms=BASIC) for t in (
        "float8_e4m3", "float8_e3m4", "float8_e4m3fnuz", "float8_e5m2fnuz",
        "float8_e4m3b11fnuz")],
    case("numpy.uint2", "i32[3]:idx2", ulp=0, transforms=BASIC))
# JAX 0.10.2 on CPU cannot make arrays of these (jnp.float6_e2m3fn(x), jnp.int1(x) raise
# JaxRuntimeError: XLA:CPU has no float6 conversion, and passes 1-bit buffers where it expects
# bools): there is no JAX result to compare with (see tests/test_ml_dtypes.py's NO_ORACLE).
cases.SKIP_REASONS.setdefault("numpy", {}).update({
    t: "JAX's CPU backend cannot convert to it (JaxRuntimeError): no JAX result to compare"
    for t in ("float6_e2m3fn", "float6_e3m2fn", "int1", "uint1")})

# ---------------------------------------------------------------- creation with dtype=
add(case("numpy.asarray", "f32[2,3]", kwargs={"dtype": "bfloat16"}, ulp=0, label="bf16"),
    case("numpy.zeros", (2, 3), kwargs={"dtype": "bfloat16"}, transforms=BASIC),
    case("numpy.ones", (3,), kwargs={"dtype": Ref("numpy.int4")}, transforms=BASIC),
    case("numpy.full", (2,), 1.7, kwargs={"dtype": "float8_e4m3fn"}, static=(1,),
         transforms=BASIC, ulp=0),
    case("numpy.arange", 5, kwargs={"dtype": Ref("numpy.bfloat16")}, static=(0,),
         transforms=BASIC),
    case("numpy.linspace", 0.0, 1.0, 5, kwargs={"dtype": "bfloat16"}, static=(0, 1, 2),
         transforms=BASIC, ulp=0),
    case("numpy.zeros_like", "bf16[3]"),
    case("numpy.full_like", "i4[3]", 3, static=(1,)),
    case("numpy.eye", 3, kwargs={"dtype": "float8_e5m2"}, static=(0,), transforms=BASIC))

# ---------------------------------------------------------------- arithmetic and promotion
add(case("numpy.add", "bf16[2,3]", "bf16[3]", transforms=FULL, ulp=1),
    case("numpy.multiply", "bf16[2,3]", "bf16[2,3]", transforms=FULL, ulp=1),
    case("numpy.subtract", "bf16[4]", 1.5, transforms=FULL, ulp=1),
    case("numpy.divide", "bf16[4]", "bf16[4]:nz", transforms=FULL, ulp=1),
    case("numpy.maximum", "bf16[4]:distinct", "bf16[4]", ulp=0),
    case("numpy.add", "bf16[3]", "f16[3]", transforms=FULL, ulp=1, label="bf16_f16"),
    case("numpy.add", "bf16[3]", "f32[3]", transforms=FULL, ulp=1, label="bf16_f32"),
    case("numpy.add", "bf16[3]", "i32[3]", ulp=1, label="bf16_i32"),
    case("numpy.multiply", "i8[3]", "bf16[3]", ulp=1, label="i8_bf16"),
    case("numpy.add", "f8e4m3fn[4]", "f8e4m3fn[4]", ulp=0),
    case("numpy.multiply", "f8e5m2[4]", 2.0, ulp=0),
    case("numpy.add", "f8e4m3fn[3]", "f8e5m2[3]", label="f8_mixed"),
    case("numpy.add", "f8e4m3fn[3]", "f32[3]", label="f8_f32"),
    case("numpy.add", "f8e4m3fn[3]", "bf16[3]", label="f8_bf16"),
    case("numpy.add", "f4e2m1fn[3]", "f4e2m1fn[3]", ulp=0, transforms=BASIC),
    case("numpy.add", "i4[4]", "i4[4]", ulp=0),
    case("numpy.multiply", "i4[4]", 3, ulp=0),
    case("numpy.subtract", "u4[4]", "u4[4]", ulp=0),
    case("numpy.add", "i4[3]", "i8[3]", label="i4_i8"),
    case("numpy.add", "i4[3]", "u4[3]", label="i4_u4"),
    case("numpy.add", "u2[3]", "f32[3]", label="u2_f32"),
    case("numpy.less", "bf16[4]", "bf16[4]"),
    case("numpy.equal", "f8e4m3fn[4]", "f8e4m3fn[4]"),
    case("numpy.greater", "i4[4]", 0))

# ---------------------------------------------------------------- transcendental functions
add(case("numpy.exp", "bf16[2,3]", transforms=FULL, ulp=1),
    case("numpy.tanh", "bf16[2,3]", transforms=FULL, ulp=1),
    case("numpy.log", "bf16[4]:pos", transforms=FULL, ulp=1),
    case("numpy.sqrt", "bf16[4]:pos", transforms=FULL, ulp=1),
    case("numpy.sin", "bf16[4]", ulp=1),
    case("numpy.exp", "f8e4m3fn[4]", ulp=0),
    case("numpy.tanh", "f8e5m2[4]", ulp=0),
    case("numpy.exp", "i4[4]", ulp=1, label="int4_to_float"),
    case("nn.sigmoid", "bf16[4]", transforms=FULL, ulp=1),
    case("nn.relu", "bf16[4]", transforms=FULL, ulp=0),
    case("nn.gelu", "bf16[4]", transforms=NOGRAD, ulp=1))

# ---------------------------------------------------------------- reductions and matmul
add(case("numpy.sum", "bf16[3,4]", transforms=FULL, ulp=1),
    case("numpy.sum", "bf16[3,4]", kwargs={"axis": 1}, transforms=FULL, ulp=1, label="axis1"),
    case("numpy.mean", "bf16[3,4]", transforms=FULL, ulp=1),
    case("numpy.mean", "bf16[3,4]", kwargs={"axis": 0, "keepdims": True}, transforms=FULL,
         ulp=1, label="axis0_keepdims"),
    case("numpy.var", "bf16[3,4]", kwargs={"axis": 1}, transforms=FULL, ulp=1),
    case("numpy.max", "bf16[3,4]", kwargs={"axis": 0}, transforms=FULL, ulp=0),
    case("numpy.prod", "bf16[4]", transforms=FULL, ulp=1),
    case("numpy.sum", "bf16[5]", kwargs={"dtype": "float32"}, transforms=FULL, ulp=1,
         label="dtype_f32"),
    case("numpy.sum", "f8e4m3fn[4]", ulp=0),
    case("numpy.mean", "f8e5m2[4]", ulp=0),
    case("numpy.argmax", "bf16[5]:distinct"),
    case("numpy.matmul", "bf16[2,3]", "bf16[3,4]", transforms=FULL, ulp=1),
    case("numpy.dot", "bf16[4]", "bf16[4]", transforms=FULL, ulp=1),
    case("numpy.matmul", "bf16[2,3]", "bf16[3,4]", kwargs={"preferred_element_type": "float32"},
         transforms=FULL, ulp=1, label="preferred_f32"),
    case("numpy.matmul", "f8e4m3fn[2,3]", "f8e4m3fn[3,2]", ulp=0),
    case("numpy.matmul", "i4[2,3]", "i4[3,2]", ulp=0),
    case("nn.softmax", "bf16[2,3]", transforms=("eager", "vmap", "grad", "jvp"), ulp=1),
    case("nn.logsumexp", "bf16[2,3]", kwargs={"axis": 1}, transforms=FULL, ulp=1))

# ---------------------------------------------------------------- casts both ways
add(case("numpy.astype", "f32[5]", "bfloat16", transforms=FULL, ulp=0, label="f32_bf16"),
    case("numpy.astype", "bf16[5]", "float32", transforms=FULL, ulp=0, label="bf16_f32"),
    case("numpy.astype", "bf16[5]", "float16", transforms=FULL, ulp=0, label="bf16_f16"),
    case("numpy.astype", "f16[5]", "bfloat16", transforms=FULL, ulp=0, label="f16_bf16"),
    case("numpy.astype", "bf16[5]:wide", "int32", ulp=0, label="bf16_i32"),
    case("numpy.astype", "i32[5]", "bfloat16", ulp=0, label="i32_bf16"),
    case("numpy.astype", "bf16[4]", "bool", ulp=0, label="bf16_bool"),
    case("numpy.astype", "bf16[4]", "complex64", ulp=0, label="bf16_c64"),
    case("numpy.astype", "f32[4]:special", "bfloat16", ulp=0, label="special_bf16"),
    case("numpy.astype", "f32[4]:special", "float8_e4m3fn", ulp=0, label="special_f8e4m3fn"),
    case("numpy.astype", "f32[4]:special", "float8_e5m2", ulp=0, label="special_f8e5m2"),
    *[case("numpy.astype", "f32[6]:wide", t, ulp=0, transforms=BASIC, label=f"f32_{t}")
      for t in FLOAT8 + ["float4_e2m1fn"]],
    *[case("numpy.astype", "i32[5]:idxm4", t, ulp=0, transforms=BASIC, label=f"i32_{t}")
      for t in COMPUTED_INTS],
    case("numpy.astype", "f8e4m3fn[4]", "float32", ulp=0, label="f8e4m3fn_f32"),
    case("numpy.astype", "f8e5m2[4]", "bfloat16", ulp=0, label="f8e5m2_bf16"),
    case("numpy.astype", "f8e4m3fn[4]", "float8_e5m2", ulp=0, label="f8e4m3fn_f8e5m2"),
    case("numpy.astype", "i4[4]", "float32", ulp=0, label="i4_f32"),
    case("numpy.astype", "u4[4]", "int8", ulp=0, label="u4_i8"),
    case("numpy.astype", "i4[4]", "uint4", ulp=0, label="i4_u4"),
    case("numpy.astype", "f32[4]:wide", "int4", ulp=0, label="f32_i4"),
    case("lax.convert_element_type", "bf16[3]", Ref("numpy.float32"), transforms=FULL, ulp=0,
         label="bf16_f32"),
    case("lax.convert_element_type", "f32[3]", Ref("numpy.bfloat16"), transforms=FULL, ulp=0,
         label="f32_bf16"))

# ---------------------------------------------------------------- dtype queries
add(*[case("numpy.finfo", t, transforms=EAGER, post=(
          "bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "nmant",
          "nexp", "dtype")) for t in ALL_FLOATS],
    *[case("numpy.iinfo", t, transforms=EAGER, post=("bits", "min", "max", "dtype"))
      for t in INTS],
    *[case("numpy.promote_types", a, b, transforms=EAGER, post=("name",)) for a, b in (
        ("bfloat16", "float16"), ("bfloat16", "float32"), ("bfloat16", "int8"),
        ("bfloat16", "uint32"), ("bfloat16", "bool"), ("bfloat16", "complex64"),
        ("float8_e4m3fn", "float8_e4m3fn"), ("float8_e4m3fn", "float8_e5m2"),
        ("float8_e4m3fn", "float32"), ("float8_e5m2", "bfloat16"), ("float4_e2m1fn", "int8"),
        ("int4", "int4"), ("int4", "int8"), ("uint4", "uint8"), ("int2", "bool"),
        ("int4", "float32"))],
    *[case("numpy.result_type", a, b, transforms=EAGER, post=("name",), label=f"{a}_{b}")
      for a, b in (("bf16[2]", 1.0), ("bf16[2]", 2), ("f8e4m3fn[2]", 1.0), ("i4[2]", 3),
                   ("u4[2]", True), ("bf16[2]", 1j), ("i4[2]", 1.0))],
    *[case("numpy.issubdtype", t, Ref(f"numpy.{k}"), transforms=EAGER, label=f"{t}_{k}")
      for t in ("bfloat16", "float8_e4m3fn", "int4", "uint2") for k in (
          "floating", "inexact", "integer", "signedinteger", "unsignedinteger", "number")],
    *[case("numpy.can_cast", a, b, transforms=EAGER) for a, b in (
        ("bfloat16", "float32"), ("float32", "bfloat16"), ("bfloat16", "float16"),
        ("int4", "int8"), ("uint4", "int4"), ("float8_e4m3fn", "bfloat16"))],
    *[case("numpy.isdtype", t, k, transforms=EAGER, label=f"{t}_{k.replace(' ', '_')}")
      for t in ("bfloat16", "float8_e5m2", "int4", "uint4") for k in (
          "real floating", "integral", "signed integer", "unsigned integer", "numeric")],
    case("numpy.dtype", "bfloat16", transforms=EAGER),
    case("numpy.dtype", "float8_e4m3fn", transforms=EAGER))
