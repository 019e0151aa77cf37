"""Conformance cases of the jax.lax names added for issue #26 (second part): ragged_dot /
ragged_dot_general with RaggedDotDimensionNumbers, rng_bit_generator with RandomAlgorithm,
composite, tokens (create_token, after_all), the dot algorithms accepted as `precision=`
(DotAlgorithmPreset, DotAlgorithm) and `accuracy=` (Tolerance, AccuracyMode), and the functions
that now bind primitives of their own: stage, dce_sink, optimization_barrier, top_k (axis=,
total order), clamp, square, split, stack / unstack / tile, scatter_sub, clz / mulhi, the
total-order comparisons eq_to_p / le_to_p / lt_to_p, shape_as_value and rng_uniform's errors
(loaded by cases.py after its own cases).

Not compared here, where JAX 0.10.2 raises and corejax computes: vmap of ragged_dot with other
in_axes than all 0 ("ragged_dot vmap over any dim but 0 - NYI") and derivatives / vmap of a
composite ("JVP rule for composite not implemented"); tests/test_lax_more.py checks those
against the batched / decomposed computation."""
import numpy as np

import cases
from cases import BASIC, NOGRAD, Call, Ref, add, case

EAGER = ("eager",)
# everything but vmap (see the docstring)
DIFF = ("eager", "jit", "grad", "jvp", "vjp", "hvp", "jit_grad")
FULL_NO_VMAP = DIFF


def _with_sizes(lhs, rhs, sizes, fn, **kwargs):
    """fn(lhs, rhs, group_sizes) with group sizes given as a static tuple."""
    return fn(lhs, rhs, np.asarray(sizes, np.int32), **kwargs)


def _general_with_sizes(lhs, rhs, sizes, dims, fn, **kwargs):
    return fn(lhs, rhs, np.asarray(sizes, np.int32), dims, **kwargs)


def _composite_of(*args, fn, composite, name, **attributes):
    return composite(fn, name=name)(*args, **attributes)


def _scaled_sum(x, y, *, scale):
    return {"sum": (x + y) * scale, "pair": (x * scale, y)}


def _composite_tree(x, y, composite, scale):
    return composite(_scaled_sum, name="my.scaled_sum", version=2)(x, y, scale=scale)


def _tokens(create_token, after_all):
    return after_all(create_token(), create_token(0))


def _token_then(x, create_token, after_all):
    token = after_all(create_token())
    return token, x * 2


def _supported_outputs(preset, lhs_dtype, rhs_dtype):
    return preset.supported_output_types(np.dtype(lhs_dtype), np.dtype(rhs_dtype))


def _bind(*args, primitive, **params):
    return primitive.bind(*args, **params)


def _sink_then(x, dce_sink):
    dce_sink((x * 2, {"a": x + 1}))
    return x - 1


def _barrier_pair(x, y, optimization_barrier):
    a, b = optimization_barrier((x * y, y))
    return a + b, b


cases.ARRAY_OPS.update({"bind": _bind, "sink_then": _sink_then, "barrier_pair": _barrier_pair,
                        "ragged_sizes": _with_sizes, "ragged_general_sizes": _general_with_sizes,
                        "composite_of": _composite_of, "composite_tree": _composite_tree,
                        "tokens": _tokens, "token_then": _token_then,
                        "preset_outputs": _supported_outputs})

# ---------------------------------------------------------------- ragged_dot

RD = Ref("lax.ragged_dot")
RDG = Ref("lax.ragged_dot_general")


def _rdn(contracting, batch, ragged, group):
    return Call("lax.RaggedDotDimensionNumbers", (contracting, batch), ragged, group)


add(case("lax.ragged_dot", "f32[6,3]", "f32[2,3,4]", "i32[2]:idx4", transforms=DIFF,
         label="traced_sizes"),
    case("lax.ragged_dot", "f32[5,4]", "f32[3,4,2]", "u8[3]:idx3", transforms=DIFF,
         label="uint8_sizes"),
    case("array.ragged_sizes", "f32[6,3]", "f32[2,3,4]", (2, 3), RD, transforms=DIFF,
         label="short"),
    case("array.ragged_sizes", "f32[6,3]", "f32[2,3,4]", (4, 5), RD, transforms=DIFF,
         label="past_end"),
    case("array.ragged_sizes", "f32[6,3]", "f32[3,3,4]", (3, -1, 2), RD, transforms=DIFF,
         label="negative_overlap"),
    case("array.ragged_sizes", "f32[4,2]", "f32[4,2,3]", (0, 4, 0, 0), RD, transforms=DIFF,
         label="empty_groups"),
    case("array.ragged_sizes", "f16[6,3]", "f16[2,3,4]", (2, 4), RD, transforms=BASIC, ulp=8,
         label="f16"),
    case("array.ragged_sizes", "f16[6,3]", "f16[2,3,4]", (2, 4), RD, transforms=BASIC, ulp=8,
         kwargs={"preferred_element_type": np.float32}, label="f16_to_f32"),
    case("array.ragged_sizes", "i32[6,3]", "i32[2,3,4]", (3, 3), RD, transforms=BASIC,
         label="int"),
    case("array.ragged_sizes", "i32[6,3]", "f32[2,3,4]", (3, 3), RD, transforms=BASIC,
         label="mixed"),
    case("array.ragged_sizes", "f32[6,3]", "f32[2,3,4]", (3, 3), RD, transforms=BASIC,
         kwargs={"precision": "highest"}, label="precision"),
    case("array.ragged_sizes", "f16[6,3]", "f16[2,3,4]", (3, 3), RD, transforms=BASIC,
         kwargs={"precision": "BF16_BF16_F32"}, ulp=8, label="preset_bf16"),
    case("array.ragged_sizes", "f32[6,3]", "f32[2,3,4]", (3, 3), RD, transforms=EAGER,
         kwargs={"precision": "TF32_TF32_F32"}, label="preset_unsupported"),
    case("lax.ragged_dot", "f32[6,3]", "f32[2,3,4]", "i32[3]:idx2", transforms=EAGER,
         label="group_count_error"),
    case("lax.ragged_dot", "f32[6,3]", "f32[2,2,4]", "i32[2]:idx2", transforms=EAGER,
         label="contracting_error"),
    case("lax.ragged_dot", "f32[6,3]", "f32[2,3,4]", "f32[2]", transforms=EAGER,
         label="float_sizes_error"),
    case("lax.ragged_dot", "f32[6,3]", "f32[2,3,4]", "i32[6,2]:idx2", transforms=EAGER,
         label="sizes_shape_error"),
    case("lax.ragged_dot", "f32[3]", "f32[2,3,4]", "i32[2]:idx2", transforms=EAGER,
         label="rank_error"))

# mode 2: the ragged dimension contracts (one product per group). JAX 0.10 has no derivative of
# modes 2 and 3 ("Unimplemented grad_x_dims for ragged dot general in mode RAGGED_CONTRACTING"):
# tests/test_lax_more.py checks corejax's against finite differences.
_MODE2 = _rdn(([1], [0]), ([], []), [1], [])
add(case("array.ragged_general_sizes", "f32[2,6]", "f32[6,4]", (2, 3, 1), _MODE2, RDG,
         transforms=BASIC, label="contracting"),
    case("array.ragged_general_sizes", "f32[2,6]", "f32[6,4]", (4, -2, 5), _MODE2, RDG,
         transforms=BASIC, label="contracting_negative"),
    case("lax.ragged_dot_general", "f32[2,6]", "f32[6,4]", "i32[3]:idx3", _MODE2,
         transforms=BASIC, label="contracting_traced"),
    case("lax.ragged_dot_general", "f32[3,2,5]", "f32[3,5,4]", "i32[3,2]:idx3",
         _rdn(([2], [1]), ([0], [0]), [2], []), transforms=BASIC, label="contracting_batched"),
    case("lax.ragged_dot_general", "f32[4,2,3]", "f32[3,4,5]", "i32[2]:idx3",
         _rdn(([0, 2], [1, 0]), ([], []), [2], []), transforms=BASIC,
         label="contracting_two_dims"),
    case("lax.ragged_dot_general", "f32[2,6]", "f32[6,4]", "i32[3]:idx3",
         _rdn(([1], [0]), ([], []), [1], [0]), transforms=EAGER,
         label="contracting_group_error"))
# mode 3: a ragged batch dimension is an ordinary dot_general
add(case("array.ragged_general_sizes", "f32[5,2,3]", "f32[5,3,4]", (2, 1),
         _rdn(([2], [1]), ([0], [0]), [0], []), RDG, transforms=BASIC, label="batch"))
# mode 1 with batch and outer dimensions: group sizes per (batch, outer) row
add(case("lax.ragged_dot_general", "f32[2,3,5,4]", "f32[3,2,4,6]", "i32[2,3,3]:idx3",
         _rdn(([3], [2]), ([0], [1]), [2], [0]), transforms=DIFF, label="batched_outer"),
    case("lax.ragged_dot_general", "f32[2,3,5,4]", "f32[3,2,4,6]", "i32[3]:idx3",
         _rdn(([3], [2]), ([0], [1]), [2], [0]), transforms=DIFF, label="batched_shared"),
    case("lax.ragged_dot_general", "f32[4,5,3]", "f32[3,2,4]", "i32[2]:idx3",
         _rdn(([0], [2]), ([], []), [1], [1]), transforms=DIFF, label="permuted"),
    case("lax.ragged_dot_general", "f32[2,3,5,4]", "f32[3,2,4,6]", "i32[2,3]:idx3",
         _rdn(([3], [2]), ([0], [1]), [2], [0]), transforms=EAGER,
         label="sizes_shape_error"),
    case("lax.ragged_dot_general", "f32[6,3]", "f32[2,3,4]", "i32[2]:idx3",
         _rdn(([1], [1]), ([], []), [0, 0], [0]), transforms=EAGER, label="two_ragged_error"),
    case("lax.ragged_dot_general", "f32[6,3]", "f32[2,3,4]", "i32[2]:idx3",
         _rdn(([1], [1]), ([], []), [2], [0]), transforms=EAGER, label="ragged_range_error"),
    case("lax.ragged_dot_general", "f32[6,3]", "f32[3,4]", "i32[2]:idx3",
         _rdn(([1], [0]), ([], []), [0], []), transforms=EAGER, label="no_group_error"),
    case("lax.ragged_dot_general", "f32[6,3]", "f32[2,3,4]", "i32[2]:idx3",
         _rdn(([1], [0]), ([], []), [0], [0]), transforms=EAGER,
         label="group_is_contracting_error"))
add(case("lax.RaggedDotDimensionNumbers", ([[1], [1]], [[], []]), [0], [0], transforms=EAGER,
         post=("dot_dimension_numbers", "lhs_ragged_dimensions", "rhs_group_dimensions")))

# ---------------------------------------------------------------- rng_bit_generator

_ALGS = {"default": 0, "threefry": 1, "philox": 2}
for _name, _alg in _ALGS.items():
    for _shape in [(8,), (2, 3), (), (3, 5), (7,), (5, 1, 3), (0,), (4, 6)]:
        add(case("lax.rng_bit_generator", "u32[4]", _shape, static=(1,),
                 kwargs={"algorithm": Call("lax.RandomAlgorithm", _alg)}, transforms=NOGRAD,
                 label=f"{_name}_{'x'.join(map(str, _shape)) or 'scalar'}"))
    for _dtype in ("uint8", "uint16"):
        add(case("lax.rng_bit_generator", "u32[4]", (3, 5), static=(1,),
                 kwargs={"algorithm": Call("lax.RandomAlgorithm", _alg), "dtype": _dtype},
                 transforms=NOGRAD, label=f"{_name}_{_dtype}"))
    add(case("lax.rng_bit_generator", "u32[4]", (3, 5), static=(1,),
             kwargs={"algorithm": Call("lax.RandomAlgorithm", _alg), "dtype": "uint64"},
             transforms=BASIC, x64=True, label=f"{_name}_uint64"),
        case("lax.rng_bit_generator", "u32[4]", (4,), static=(1,), x64=True,
             kwargs={"algorithm": Call("lax.RandomAlgorithm", _alg), "dtype": "uint64"},
             transforms=BASIC, label=f"{_name}_uint64_x64_even"))
add(case("lax.rng_bit_generator", "u32[4]", (3,), static=(1,), kwargs={"dtype": "uint64"},
         transforms=BASIC, label="uint64_without_x64"),
    case("lax.rng_bit_generator", "u32[4]", (3,), static=(1,), kwargs={"dtype": "int32"},
         transforms=EAGER, label="int32_error"),
    case("lax.rng_bit_generator", "u32[4]", (3,), static=(1,), kwargs={"dtype": "float32"},
         transforms=EAGER, label="float32_error"),
    case("lax.RandomAlgorithm", 1, static=(0,), transforms=EAGER, post=("name", "value")))

# ---------------------------------------------------------------- composite

_SIN = Ref("numpy.sin")
_COMPOSITE = Ref("lax.composite")
add(case("array.composite_of", "f32[2,3]", kwargs={"fn": _SIN, "composite": _COMPOSITE,
                                                   "name": "my.sin"}, transforms=BASIC,
         label="sin"),
    case("array.composite_of", "f32[3]", "f32[3]", kwargs={
        "fn": Ref("lax.atan2"), "composite": _COMPOSITE, "name": "my.atan2"},
        transforms=BASIC, label="two_inputs"),
    case("array.composite_tree", "f32[3]", "f32[]", _COMPOSITE, 1.5, static=(3,),
         transforms=BASIC, label="tree"),
    case("array.composite_of", "i32[4]", kwargs={"fn": Ref("numpy.cumsum"),
                                                 "composite": _COMPOSITE, "name": "my.cumsum"},
         transforms=BASIC, label="int"))

# ---------------------------------------------------------------- tokens

add(case("lax.create_token", transforms=BASIC),
    case("array.tokens", Ref("lax.create_token"), Ref("lax.after_all"), transforms=BASIC),
    case("array.token_then", "f32[3]", Ref("lax.create_token"), Ref("lax.after_all"),
         transforms=BASIC),
    case("lax.after_all", transforms=BASIC, label="no_tokens"),
    case("lax.after_all", "f32[2]", transforms=EAGER, label="array_error"))

# ---------------------------------------------------------------- dot algorithms, accuracy

_PRESETS = ("DEFAULT", "ANY_F8_ANY_F8_F32", "ANY_F8_ANY_F8_F32_FAST_ACCUM",
            "ANY_F8_ANY_F8_ANY", "ANY_F8_ANY_F8_ANY_FAST_ACCUM", "F16_F16_F16", "F16_F16_F32",
            "BF16_BF16_BF16", "BF16_BF16_F32", "BF16_BF16_F32_X3", "BF16_BF16_F32_X6",
            "BF16_BF16_F32_X9", "TF32_TF32_F32", "TF32_TF32_F32_X3", "F32_F32_F32",
            "F64_F64_F64")
for _value, _preset in enumerate(_PRESETS, start=1):
    add(case("lax.dot", "f32[2,3]", "f32[3,4]", kwargs={"precision": _preset},
             transforms=BASIC, ulp=8, label=f"{_preset}_f32"),
        case("lax.dot", "f16[2,3]", "f16[3,4]", kwargs={"precision": _preset},
             transforms=EAGER, ulp=8, label=f"{_preset}_f16"),
        case("lax.DotAlgorithmPreset", _value, static=(0,), transforms=EAGER, label=_preset,
             post=("name", "value", "accumulation_type", "supported_lhs_types",
                   "supported_rhs_types")),
        case("array.preset_outputs", Call("lax.DotAlgorithmPreset", _value), "float16",
             "float16", transforms=EAGER, label=f"{_preset}_f16"),
        case("array.preset_outputs", Call("lax.DotAlgorithmPreset", _value), "float32",
             "float16", transforms=EAGER, label=f"{_preset}_f32"))
add(case("lax.dot_general", "f32[2,3]", "f32[3,4]", (((1,), (0,)), ((), ())),
         kwargs={"precision": Call("lax.DotAlgorithmPreset", 6)},
         transforms=("eager", "jit", "grad", "vjp"), ulp=8, label="F16_F16_F16_enum"),
    case("lax.dot_general", "f16[2,3]", "f16[3,4]", (((1,), (0,)), ((), ())),
         kwargs={"precision": "BF16_BF16_F32", "preferred_element_type": np.float32},
         transforms=BASIC, label="BF16_BF16_F32_pet"),
    case("lax.dot_general", "f32[2,3]", "f32[3,4]", (((1,), (0,)), ((), ())),
         kwargs={"precision": "F16_F16_F16", "preferred_element_type": np.float32},
         transforms=BASIC, ulp=8, label="F16_F16_F16_pet"),
    case("lax.dot_general", "f64[2,3]", "f64[3,4]", (((1,), (0,)), ((), ())), x64=True,
         kwargs={"precision": "BF16_BF16_F32"}, transforms=BASIC, label="BF16_BF16_F32_f64"),
    case("lax.dot_general", "f64[2,3]", "f64[3,4]", (((1,), (0,)), ((), ())), x64=True,
         kwargs={"precision": "F32_F32_F32"}, transforms=BASIC, label="F32_F32_F32_f64"),
    case("lax.dot_general", "f32[2,3]", "f32[3,4]", (((1,), (0,)), ((), ())), x64=True,
         kwargs={"precision": "F64_F64_F64"}, transforms=BASIC, label="F64_F64_F64_x64"),
    case("lax.dot", "i32[2,3]", "i32[3,4]", kwargs={"precision": "F16_F16_F16"},
         transforms=BASIC, label="F16_F16_F16_int"),
    case("lax.dot", "f32[2,3]", "f32[3,4]", kwargs={"precision": ("highest", "default")},
         transforms=BASIC, label="string_pair"),
    case("lax.dot", "f32[2,3]", "f32[3,4]", kwargs={"precision": "f32_f32_f32"},
         transforms=EAGER, label="lowercase_preset_error"),
    case("lax.dot", "f32[2,3]", "f32[3,4]", kwargs={"precision": ("highest", "bad")},
         transforms=EAGER, label="bad_pair_error"),
    case("lax.dot", "f32[2,3]", "f32[3,4]", kwargs={"precision": (Call("lax.Precision", 1),
                                                                  "highest")},
         transforms=EAGER, label="mixed_pair_error"),
    case("lax.dot", "f32[2,3]", "f32[3,4]", kwargs={"precision": Call(
        "lax.DotAlgorithm", "float32", "float32", "float32")}, transforms=EAGER,
        label="dot_algorithm_error"),
    case("lax.DotAlgorithm", "float16", "float16", "float32", transforms=EAGER,
         post=("lhs_precision_type", "accumulation_type", "lhs_component_count",
               "num_primitive_operations", "allow_imprecise_accumulation")),
    case("lax.Tolerance", 1e-3, 2e-2, 3, static=(0, 1, 2), transforms=EAGER, post=("atol", "rtol", "ulps")),
    case("lax.Tolerance", transforms=EAGER, label="defaults_error"),
    case("lax.Tolerance", 0.0, 0.0, 2, static=(0, 1, 2), transforms=EAGER,
         post=("atol", "rtol", "ulps"), label="ulps"),
    case("lax.Tolerance", -1.0, static=(0,), transforms=EAGER, label="negative_error"),
    case("lax.AccuracyMode", 1, static=(0,), transforms=EAGER, post=("name", "value")))
for _fn in ("cbrt", "cos", "exp", "exp2", "expm1", "log", "log1p", "logistic", "rsqrt", "sin",
            "sqrt", "tan", "tanh"):
    add(case(f"lax.{_fn}", "f32[4]:pos", kwargs={"accuracy": Call("lax.Tolerance", 1e-3)},
             transforms=("eager", "jit", "grad"), label="tolerance"),
        case(f"lax.{_fn}", "f32[4]:pos", kwargs={"accuracy": Call("lax.AccuracyMode", 1)},
             transforms=BASIC, label="accuracy_mode"))
add(case("lax.exp", "f32[4]", kwargs={"accuracy": 3}, transforms=EAGER, label="bad_accuracy"))

# ---------------------------------------------------------------- functions with own primitives

add(case("lax.stage", "f32[2,3]", transforms=("eager", "jit", "vmap", "grad", "jvp", "vjp")),
    case("lax.stage", 1.5, transforms=BASIC, label="weak_scalar"),
    case("lax.stage", "i32[3]", transforms=BASIC),
    case("lax.stage", [1.0, 2.0], static=(0,), transforms=EAGER, label="list_error"),
    case("lax.dce_sink", "f32[3]", transforms=BASIC),
    case("array.sink_then", "f32[3]", Ref("lax.dce_sink"),
         transforms=("eager", "jit", "vmap", "grad", "jvp")),
    case("array.barrier_pair", "f32[3]", "f32[3]", Ref("lax.optimization_barrier"),
         transforms=("eager", "jit", "vmap", "grad", "jvp", "vjp", "hvp")))

add(case("lax.top_k", "f32[2,5]:distinct", 2, static=(1,), kwargs={"axis": 0},
         transforms=("eager", "jit", "vmap", "grad", "jvp", "vjp"), label="axis0"),
    case("lax.top_k", "f32[3,4]:distinct", 3, static=(1,), kwargs={"axis": -1},
         transforms=("eager", "jit", "vmap", "grad"), label="axism1"),
    case("lax.top_k", "f32[7]:special", 7, static=(1,), transforms=BASIC, label="total_order"),
    case("lax.top_k", "f32[6]:wide", 4, static=(1,), transforms=("eager", "jit", "grad"),
         label="ties"),
    case("lax.top_k", "u8[6]", 3, static=(1,), transforms=BASIC, label="uint8"),
    case("lax.top_k", "bool[5]", 3, static=(1,), transforms=BASIC, label="bool"),
    case("lax.top_k", "f32[2,3]", 1, static=(1,), kwargs={"axis": 2}, transforms=EAGER,
         label="axis_error"),
    case("lax.top_k", "f32[3]", 4, static=(1,), transforms=EAGER, label="k_error"),
    case("lax.top_k", "f32[3]", -1, static=(1,), transforms=EAGER, label="negative_k_error"),
    case("lax.top_k", "f32[]", 1, static=(1,), transforms=EAGER, label="scalar_error"))

for _name in ("eq_to_p", "le_to_p", "lt_to_p"):
    add(case("array.bind", "f32[7]:special", "f32[7]:special",
             kwargs={"primitive": Ref(f"lax.{_name}")}, transforms=NOGRAD, label=_name),
        case("array.bind", "i32[5]", "i32[5]", kwargs={"primitive": Ref(f"lax.{_name}")},
             transforms=NOGRAD, label=f"{_name}_int"),
        case("array.bind", "f16[6]:wide", "f16[6]:wide",
             kwargs={"primitive": Ref(f"lax.{_name}")}, transforms=NOGRAD,
             label=f"{_name}_f16"))

add(case("lax.clamp", "f32[]", "f32[2,3]:special", "f32[]", transforms=BASIC,
         label="special"),
    case("lax.clamp", -0.5, "f32[2,3]", 0.5, transforms=FULL_NO_VMAP, label="weak_bounds"),
    case("lax.clamp", "f32[2,3]", "f32[2,3]", "f32[2,3]", transforms=FULL_NO_VMAP,
         label="arrays"),
    case("lax.clamp", "i32[4]", "i32[4]", "i32[4]", transforms=NOGRAD, label="int"),
    case("lax.clamp", "f32[3]", "f32[2,3]", "f32[]", transforms=EAGER, label="shape_error"),
    case("lax.clamp", "c64[3]", "c64[3]", "c64[3]", transforms=BASIC, label="complex"),
    case("lax.square", "c64[3]", transforms=BASIC, label="complex"),
    case("lax.square", "i8[4]", transforms=NOGRAD, label="int8_wraps"))

add(case("lax.split", "f32[5,2]", (2, 0, 3), static=(1,),
         transforms=("eager", "jit", "vmap", "grad", "jvp", "vjp"), label="empty_piece"),
    case("lax.split", "f32[2,6]", (4, 2), static=(1,), kwargs={"axis": -1},
         transforms=("eager", "jit", "vmap", "grad"), label="axism1"),
    case("lax.split", "f32[3]", (2, 2), static=(1,), transforms=EAGER, label="sum_error"),
    case("lax.split", "f32[3]", (4, -1), static=(1,), transforms=EAGER,
         label="negative_error"),
    case("lax.tile", "f32[2,3]", (2, 3), static=(1,),
         transforms=("eager", "jit", "vmap", "grad", "jvp", "vjp"), label="grad"),
    case("lax.tile", "f32[2,3]", (0, 1), static=(1,), transforms=NOGRAD, label="zero_reps"),
    case("lax.stack", ["f32[2,3]", "f32[2,3]", "f32[2,3]"], kwargs={"axis": 1},
         transforms=("eager", "jit", "vmap", "grad", "jvp", "vjp"), label="three_axis1"),
    case("lax.stack", ["f32[2,3]", "f32[3]"], transforms=EAGER, label="rank_error"),
    case("lax.stack", [1.0, 2.0], transforms=BASIC, label="weak_scalars"),
    case("lax.unstack", "f32[3,2]", kwargs={"axis": -1},
         transforms=("eager", "jit", "vmap", "grad", "jvp", "vjp"), label="axism1"),
    case("lax.unstack", "f32[0,3]", transforms=BASIC, label="empty"))

add(case("lax.shape_as_value", (2, 3), transforms=EAGER),
    case("lax.shape_as_value", (), transforms=EAGER, label="empty"),
    case("lax.shape_as_value", (2**31, 1), transforms=EAGER, label="int64"),
    case("lax.rng_uniform", 0.0, 1.0, (3,), static=(0, 1, 2), transforms=EAGER,
         post=("shape", "dtype", "weak_type"), label="float_kind"),
    case("lax.rng_uniform", 0, 10, (2, 2), static=(0, 1, 2), transforms=EAGER,
         post=("shape", "dtype", "weak_type"), label="int_kind"),
    case("lax.rng_uniform", 0, 10.0, (3,), static=(0, 1, 2), transforms=EAGER,
         label="mixed_error"),
    case("lax.rng_uniform", "f32[2]", 1.0, (3,), static=(1, 2), transforms=EAGER,
         label="shape_error"))
