"""Conformance cases of the lax and nn names added for issue #26: cumulative reductions,
reduce / reduce_xor, shape utilities, scatter_sub / scatter_apply, bit operations,
reduce_precision, approx top-k, conv patches and local convolutions, platform_dependent and
the new nn functions (loaded by cases.py after its own cases)."""
import cases
from cases import BASIC, FULL, NOGRAD, Call, Ref, add, case

EAGER = ("eager",)

# ---------------------------------------------------------------- cumulative reductions

for _fn in ("lax.cumprod", "lax.cummax", "lax.cummin", "lax.cumlogsumexp"):
    add(case(_fn, "f32[3,4]", kwargs={"axis": 1}, transforms=FULL, ulp=16, label="axis1"),
        case(_fn, "f32[4,3]", kwargs={"axis": 0, "reverse": True}, transforms=FULL, ulp=16,
             label="axis0_reverse"),
        case(_fn, "f32[6]:wide", transforms=("eager", "jit", "vmap", "grad", "jvp"), ulp=16,
             label="ties"),
        case(_fn, "f16[5]", ulp=16),
        case(_fn, "f64[5]", x64=True, transforms=("eager", "jit", "grad"), ulp=16),
        case(_fn, "f32[7]:special", transforms=BASIC, label="special"),
        case(_fn, "f32[0,3]", kwargs={"axis": 1}, label="empty"),
        case(_fn, 1.5, label="weak_scalar_error", transforms=EAGER),
        case(_fn, "f32[3]", kwargs={"axis": 1}, label="bad_axis", transforms=EAGER),
        case(_fn, "bool[3]", label="bool_error", transforms=EAGER),
        case(_fn, "i32[5]", label="int"))
    add(case(_fn, "u8[4]", label="uint8"))
add(case("lax.cumprod", "f32[5]:pos", kwargs={"axis": -1}, transforms=FULL, ulp=16,
         label="axism1"),
    case("lax.cumlogsumexp", "f32[2,5]", kwargs={"axis": 1, "reverse": True}, ulp=16,
         transforms=FULL, label="axis1_reverse"))

# ---------------------------------------------------------------- reduce, reduce_xor

add(case("lax.reduce_xor", "i32[3,4]", (1,)),
    case("lax.reduce_xor", "bool[5]", (0,)),
    case("lax.reduce_xor", "u8[2,3]", (0, 1)),
    case("lax.reduce_xor", "i8[2,3]", ()),
    case("lax.reduce_xor", "f32[3]", (0,), label="float_error", transforms=EAGER))
add(case("lax.reduce", "f32[3,4]", 0.0, Ref("lax.add"), (0,), static=(1,), transforms=FULL,
         label="sum"),
    # JAX documents that init_values must be an identity of the computation, else "the result
    # is undefined": with another init, XLA on CPU applies it once per output (the values agree),
    # but JAX's derivative rule pads its reduction tree with init (applying it 0 to log2(n)
    # times), so derivatives are only compared where the contract holds (identity inits, traced).
    case("lax.reduce", "f32[3,4]", 1.0, Ref("lax.add"), (1,), static=(1,), transforms=NOGRAD,
         label="add_init1"),
    case("lax.reduce", "f32[5,3]", 2.0, Ref("lax.mul"), (0,), transforms=NOGRAD, ulp=16,
         label="mul_init2"),
    case("lax.reduce", "f32[5,3]", 1.0, Ref("lax.mul"), (0,), transforms=FULL, ulp=16,
         label="mul_traced_init"),
    case("lax.reduce", "f32[3,5]", 0.0, Ref("lax.add"), (1,), transforms=FULL,
         label="add_traced_init"),
    case("lax.reduce", "f32[2,3,4]", float("-inf"), Ref("lax.max"), (0, 2), static=(1,),
         transforms=FULL, label="max"),
    case("lax.reduce", "f32[3,5]", 0.5, Ref("lax.min"), (1,), static=(1,),
         transforms=FULL, label="min_init"),
    case("lax.reduce", "f32[7,2]", 0.0, Ref("lax.max"), (0,), static=(1,),
         transforms=FULL, label="max_init0"),
    case("lax.reduce", "i32[3,4]", 0, Ref("lax.bitwise_xor"), (1,), static=(1,),
         label="xor"),
    case("lax.reduce", "i32[3,4]", 5, Ref("lax.add"), (0, 1), static=(1,), label="int_add5"),
    case("lax.reduce", "bool[3,4]", True, Ref("lax.bitwise_and"), (1,), static=(1,),
         label="and"),
    case("lax.reduce", "f32[0,3]", 0.0, Ref("lax.add"), (0,), static=(1,), label="empty"))

# ---------------------------------------------------------------- shapes

add(case("lax.batch_matmul", "f32[2,3,4]", "f32[2,4,5]", transforms=FULL),
    case("lax.batch_matmul", "f32[3,4]", "f32[4,2]", label="2d"),
    case("lax.batch_matmul", "i32[2,1,2,3]", "f32[2,1,3,2]", label="mixed"),
    case("lax.batch_matmul", "f32[2,3,4]", "f32[4,5]", label="ndim_error", transforms=EAGER),
    case("lax.batch_matmul", "f32[2,3,4]", "f32[3,4,5]", label="batch_error",
         transforms=EAGER),
    case("lax.broadcast_shapes", (2, 1), (1, 3), transforms=EAGER),
    case("lax.broadcast_shapes", (2, 1), (5, 1, 3), (3,), transforms=EAGER),
    case("lax.broadcast_shapes", (2, 1), (3, 2), label="error", transforms=EAGER),
    case("lax.broadcast_to_rank", "f32[3]", 3, static=(1,), transforms=FULL),
    case("lax.broadcast_to_rank", "f32[2,3]", 1, static=(1,)),
    case("lax.broadcast_to_rank", 1.0, 2, static=(1,), label="weak"),
    case("lax.broadcast_like", "f32[3]", "f32[2,3]", transforms=FULL),
    case("lax.broadcast_like", 2, "i32[2,3]", label="weak"),
    case("lax.collapse", "f32[2,3,4]", 1, static=(1,), transforms=FULL),
    case("lax.collapse", "f32[2,3,4]", 0, 2, static=(1, 2)),
    case("lax.collapse", "f32[2,3,4]", -2, -1, static=(1, 2)),
    case("lax.collapse", "f32[2,3,4]", 2, 1, static=(1, 2), label="error", transforms=EAGER),
    case("lax.index_take", "f32[3,4]", ["i32[2]:idx3", "i32[2]:idx4"], (0, 1), static=(2,),
         transforms=FULL),
    case("lax.index_take", "f32[3,4,2]", ["i32[5]:idx4"], (1,), static=(2,)),
    case("lax.dynamic_update_index_in_dim", "f32[3,4]", "f32[4]", 1, 0, static=(3,),
         transforms=FULL),
    case("lax.dynamic_update_index_in_dim", "f32[3,4]", "f32[3,1]", -1, 1, static=(3,),
         label="negative"),
    case("lax.dynamic_update_index_in_dim", "f32[4]", 9.0, -1, 0, static=(3,),
         kwargs={"allow_negative_indices": False}, label="no_negative"),
    case("lax.split", "f32[3,4]", (1, 3), kwargs={"axis": 1}, static=(1,), transforms=FULL),
    case("lax.split", "i32[5,2]", (2, 0, 3), static=(1,)),
    case("lax.split", "f32[3,4]", (1, 2), kwargs={"axis": 1}, static=(1,), label="error",
         transforms=EAGER),
    case("lax.tile", "f32[2,3]", (2, 1), static=(1,), transforms=FULL),
    case("lax.tile", "i32[1,2]", (2, 3), static=(1,)),
    case("lax.tile", 2.0, (), static=(1,), label="weak"),
    case("lax.tile", "f32[2,3]", (2,), static=(1,), label="error", transforms=EAGER),
    case("lax.unstack", "f32[3,4]", 1, static=(1,), transforms=FULL),
    case("lax.unstack", "f32[2,3]", static=()),
    case("lax.stack", ["f32[2,3]", "f32[2,3]"], 1, static=(1,), transforms=FULL),
    case("lax.stack", ["i32[4]", "i32[4]", "i32[4]"], -1, static=(1,)),
    case("lax.stack", [1.0, 2.0], label="weak"),
    case("lax.stack", ["f32[2]", "i32[2]"], label="dtype_error", transforms=EAGER),
    case("lax.stack", ["f32[2]", "f32[3]"], label="shape_error", transforms=EAGER),
    case("lax.empty", (2, 3), "float32", transforms=BASIC),
    case("lax.empty", (4,), "int32", transforms=BASIC))

# ---------------------------------------------------------------- scatter_sub / scatter_apply

_DN = Call("lax.ScatterDimensionNumbers", update_window_dims=(), inserted_window_dims=(0,),
           scatter_dims_to_operand_dims=(0,))
_DN_WINDOW = Call("lax.ScatterDimensionNumbers", update_window_dims=(1,),
                  inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
add(case("lax.scatter_sub", "f32[5]", "i32[3,1]:idx5", "f32[3]", _DN, transforms=FULL),
    case("lax.scatter_sub", "f32[4,3]", "i32[2,1]:idx4", "f32[2,3]", _DN_WINDOW,
         transforms=FULL, label="window"),
    case("lax.scatter_sub", "u8[5]", "i32[4,1]:idx5", "u8[4]", _DN, label="uint8_wraps"),
    case("lax.scatter_sub", "i32[5]", "i32[3,1]:idx5", "i32[3]", _DN,
         kwargs={"mode": "clip"}, label="clip"),
    case("lax.scatter_apply", "f32[5]", "i32[3,1]:idx5", Ref("numpy.sin"), _DN,
         kwargs={"update_shape": (3,)}),
    case("lax.scatter_apply", "f32[4,3]", "i32[2,1]:idx4", Ref("numpy.exp"), _DN_WINDOW,
         kwargs={"update_shape": (2, 3)}, label="window"),
    case("lax.scatter_apply", "f32[5]", "i32[6,1]:idx5", Ref("numpy.square"), _DN,
         kwargs={"update_shape": (6,)}, label="repeated"))

# ---------------------------------------------------------------- bits, reduce_precision

add(case("lax.clz", "i32[6]"), case("lax.clz", "i32[8]:shift"), case("lax.clz", "u8[5]"),
    case("lax.clz", "i8[5]"), case("lax.clz", "u32[5]:shift"),
    case("lax.clz", "f32[3]", label="float_error", transforms=EAGER),
    case("lax.clz", "bool[3]", label="bool_error", transforms=EAGER),
    case("lax.mulhi", "i32[6]", "i32[6]"), case("lax.mulhi", "u8[5]", "u8[5]"),
    case("lax.mulhi", "i8[2,3]", "i8[2,3]"), case("lax.mulhi", "u32[4]:shift", "u32[4]"),
    case("lax.mulhi", "i32[3]", "u32[3]", label="dtype_error", transforms=EAGER),
    case("lax.mulhi", "f32[3]", "f32[3]", label="float_error", transforms=EAGER))
add(case("lax.reduce_precision", "f32[2,3]", 5, 10, static=(1, 2), transforms=FULL, ulp=0),
    case("lax.reduce_precision", "f32[6]:wide", 8, 7, static=(1, 2), ulp=0, label="bf16"),
    case("lax.reduce_precision", "f32[7]:special", 5, 2, static=(1, 2), ulp=0,
         transforms=BASIC, label="special"),
    case("lax.reduce_precision", "f32[5]", 3, 1, static=(1, 2), ulp=0, label="tiny_format"),
    case("lax.reduce_precision", "f16[4]", 5, 3, static=(1, 2), ulp=0),
    case("lax.reduce_precision", "f64[4]", 8, 23, static=(1, 2), ulp=0, x64=True,
         transforms=BASIC),
    case("lax.reduce_precision", 1.1, 8, 7, static=(1, 2), ulp=0, label="weak"),
    case("lax.reduce_precision", "i32[3]", 5, 3, static=(1, 2), label="int_error",
         transforms=EAGER))

# ---------------------------------------------------------------- approx top-k

for _fn in ("lax.approx_max_k", "lax.approx_min_k"):
    add(case(_fn, "f32[2,8]:distinct", 3, static=(1,), transforms=FULL),
        case(_fn, "f32[5,2]:distinct", 2, static=(1,), kwargs={"reduction_dimension": 0},
             transforms=FULL, label="dim0"),
        case(_fn, "f32[3,4,6]:distinct", 6, static=(1,), kwargs={"recall_target": 0.5},
             label="all"),
        case(_fn, "f32[40]:distinct", 5, static=(1,), kwargs={"aggregate_to_topk": False},
             label="no_aggregate"),
        case(_fn, "f16[6]:distinct", 2, static=(1,)),
        case(_fn, "i32[5]", 2, static=(1,), label="int_error", transforms=EAGER),
        case(_fn, "f32[5]", 7, static=(1,), label="k_error", transforms=EAGER))

# ---------------------------------------------------------------- conv patches, local conv

add(case("lax.conv_general_dilated_patches", "f32[2,3,5,4]", (2, 2), (1, 1), "VALID",
         static=(1, 2, 3), transforms=FULL),
    case("lax.conv_general_dilated_patches", "f32[2,5,4,3]", (2, 3), (2, 1), "SAME",
         static=(1, 2, 3), kwargs={"dimension_numbers": ("NHWC", "OIHW", "NHWC")},
         label="nhwc_same"),
    case("lax.conv_general_dilated_patches", "f32[1,2,7]", (3,), (2,), [(1, 2)],
         static=(1, 2, 3), kwargs={"rhs_dilation": (2,), "lhs_dilation": (1,)},
         transforms=FULL, label="1d_dilated"),
    case("lax.conv_general_dilated_patches", "i32[1,1,3,3]", (2, 2), (1, 1), "VALID",
         static=(1, 2, 3), label="int"),
    case("lax.conv_general_dilated_local", "f32[2,3,5,4]", "f32[6,12,4,3]", (1, 1), "VALID",
         (2, 2), static=(2, 3, 4), transforms=FULL, ulp=16),
    case("lax.conv_general_dilated_local", "f32[2,5,4,3]", "f32[3,2,6,18]", (2, 1), "SAME",
         (2, 3), static=(2, 3, 4), ulp=16,
         kwargs={"dimension_numbers": ("NHWC", "HWIO", "NHWC")}, label="nhwc_same"),
    case("lax.conv_general_dilated_local", "f32[2,3,5,4]", "f32[6,12,4,4]", (1, 1), "VALID",
         (2, 2), static=(2, 3, 4), label="shape_error", transforms=EAGER))

# ---------------------------------------------------------------- misc

add(case("lax.optimization_barrier", "f32[3,4]", transforms=FULL),
    case("lax.optimization_barrier", ["f32[2]", "i32[3]"], label="list"),
    case("lax.optimization_barrier", 1.5, label="weak"),
    case("lax.dtype", 1.0, static=(0,), transforms=EAGER),
    case("lax.dtype", "i8[2]", transforms=EAGER),
    case("lax.dtype", "float32", transforms=EAGER),
    case("lax.platform_dependent", "f32[2,3]", kwargs={"cpu": Ref("numpy.sin"),
                                                      "default": Ref("numpy.cos")},
         transforms=FULL),
    case("lax.platform_dependent", "f32[3]", kwargs={"cuda": Ref("numpy.sin"),
                                                    "default": Ref("numpy.cos")},
         label="default"),
    case("lax.round", "f32[6]:wide", Call("lax.RoundingMethod", 1), label="rounding_method"))

# ---------------------------------------------------------------- nn

add(case("nn.identity", "f32[2,3]", transforms=FULL),
    case("nn.identity", 2, label="weak"),
    case("nn.log1mexp", "f32[2,3]:pos", transforms=FULL, ulp=8),
    case("nn.log1mexp", "f32[8]:special", transforms=BASIC, label="special"),
    case("nn.log1mexp", "i32[3]:pos", label="int", ulp=8),
    case("nn.log1mexp", 0.25, label="weak", ulp=8),
    case("nn.logmeanexp", "f32[3,4]", transforms=FULL, ulp=8),
    case("nn.logmeanexp", "f32[3,4]", kwargs={"axis": 1, "keepdims": True}, transforms=FULL,
         ulp=8, label="axis1_keepdims"),
    case("nn.logmeanexp", "f32[3,4]", kwargs={"axis": 0, "where": "bool[3,4]"}, ulp=8,
         transforms=FULL, label="where"),
    case("nn.logmeanexp", "i32[5]", label="int", ulp=8),
    case("nn.sparse_sigmoid", "f32[2,3]", transforms=FULL),
    case("nn.sparse_sigmoid", "f32[6]:wide", transforms=("eager", "jit", "grad")),
    case("nn.sparse_sigmoid", "i32[4]", label="int"),
    case("nn.sparse_sigmoid", 0.3, label="weak"))

_ATT = ("f32[2,3,4,5]", "f32[2,6,2,5]", "f32[2,6,2,5]")
add(case("nn.dot_product_attention", "f32[3,4,5]", "f32[6,4,5]", "f32[6,4,5]",
         transforms=FULL, ulp=32, label="unbatched"),
    case("nn.dot_product_attention", *_ATT, transforms=("eager", "jit", "grad", "vjp"),
         ulp=32, label="gqa"),
    case("nn.dot_product_attention", *_ATT, kwargs={"mask": "bool[1,1,3,6]"}, ulp=32,
         transforms=("eager", "jit", "grad"), label="mask"),
    case("nn.dot_product_attention", *_ATT, kwargs={"bias": "f32[1,4,3,6]", "scale": 0.3},
         ulp=32, transforms=("eager", "jit", "grad"), label="bias_scale"),
    case("nn.dot_product_attention", *_ATT, kwargs={"is_causal": True,
                                                    "local_window_size": (1, 2)},
         ulp=32, transforms=("eager", "jit", "grad"), label="causal_window"),
    case("nn.dot_product_attention", *_ATT, kwargs={"local_window_size": 1}, ulp=32,
         transforms=BASIC, label="window_int"),
    case("nn.dot_product_attention", *_ATT,
         kwargs={"query_seq_lengths": "i32[2]:idx4", "key_value_seq_lengths": "i32[2]:idx7"},
         ulp=32, transforms=("eager", "jit", "grad"), label="seq_lengths"),
    case("nn.dot_product_attention", *_ATT, kwargs={"return_residual": True,
                                                    "mask": "bool[2,4,3,6]"},
         ulp=32, transforms=("eager", "jit", "grad"), label="residual"),
    case("nn.dot_product_attention", "f16[1,2,2,4]", "f16[1,3,2,4]", "f16[1,3,2,4]", ulp=8,
         transforms=BASIC, label="f16"),
    case("nn.dot_product_attention", "f32[3,4,5]", "f32[6,3,5]", "f32[6,3,5]",
         label="heads_error", transforms=EAGER),
    case("nn.dot_product_attention", "f32[3,4,5]", "f16[6,4,5]", "f32[6,4,5]",
         label="dtype_error", transforms=EAGER),
    case("nn.dot_product_attention", "f32[3,4,5]", "f32[6,4,5]", "f32[6,4,5]",
         kwargs={"implementation": "foo"}, label="impl_error", transforms=EAGER))

cases.SKIP_REASONS["lax"].update({
    **{n: "a type alias (typing only)" for n in (
        "DotDimensionNumbers", "ConvGeneralDilatedDimensionNumbers", "PrecisionLike")},
    "RoundingMethod": "an enum; lax.round/rounding_method covers its values",
    **{n: "pure shape arithmetic; JAX returns NumPy integers: compared with JAX's values in "
          "tests/test_lax_extra.py" for n in (
        "conv_general_permutations", "conv_shape_tuple", "conv_general_shape_tuple",
        "conv_transpose_shape_tuple", "reduce_window_shape_tuple")},
    "with_sharding_constraint": "needs a Sharding object; identity on one device, tested in "
                                "tests/test_lax_extra.py",
    "bits": "submodule, not a function",
})
