"""Arrays, dtypes and weak types, pytrees, the IR and its printer, and error messages."""
import collections
import dataclasses
import pickle

import numpy as np
import pytest

import corejax as jax
import corejax.numpy as jnp
from corejax import lax, tree_util
from corejax.core import Primitive


# --- Array -----------------------------------------------------------------------------------

def test_array_repr_and_conversion():
    x = jnp.array([1.0, 2.0, 3.0])
    assert repr(x) == "Array([1., 2., 3.], dtype=float32)"
    assert repr(jnp.asarray(1.0)) == "Array(1., dtype=float32, weak_type=True)"
    assert repr(jnp.array([1, 2])) == "Array([1, 2], dtype=int32)"
    assert np.asarray(x).dtype == np.float32
    assert float(x[1]) == 2.0 and int(jnp.array(3)) == 3 and bool(jnp.array(True))
    assert x.tolist() == [1.0, 2.0, 3.0]
    assert x.block_until_ready() is x
    assert jax.block_until_ready({"a": x})["a"] is x


def test_array_is_immutable():
    x = jnp.zeros(3)
    with pytest.raises(TypeError, match=r"\.at\[idx\]\.set"):
        x[0] = 1.0
    with pytest.raises(ValueError):
        np.asarray(x)[0] = 1.0
    with pytest.raises(TypeError, match="unhashable"):
        hash(x)


def test_array_pickles():
    x = jnp.arange(6.0).reshape(2, 3)
    y = pickle.loads(pickle.dumps(x))
    np.testing.assert_array_equal(np.asarray(y), np.asarray(x))
    assert y.dtype == x.dtype


def test_default_dtypes_x64_off():
    assert jnp.array([1.0]).dtype == np.float32
    assert jnp.array([1]).dtype == np.int32
    assert jnp.array(np.arange(3, dtype=np.int64)).dtype == np.int32
    assert jnp.array(np.ones(2, np.float64)).dtype == np.float32
    assert jnp.zeros(3).dtype == np.float32
    assert jnp.arange(3).dtype == np.int32


def test_x64_switch(x64):
    assert jnp.array([1.0]).dtype == np.float64
    assert jnp.array([1]).dtype == np.int64
    assert (jnp.ones(2, jnp.float32) + 1.0).dtype == np.float32


def test_devices_and_device_put():
    assert [d.platform for d in jax.devices()] == ["cpu"]
    x = jax.device_put(np.arange(3.0))
    assert isinstance(x, jax.Array) and x.dtype == np.float32
    assert x.devices() == {jax.devices()[0]}
    out = jax.device_get({"a": x})
    assert isinstance(out["a"], np.ndarray)
    with pytest.raises(RuntimeError, match="cuda"):
        jax.devices("cuda")


# --- weak types and promotion ----------------------------------------------------------------

@pytest.mark.parametrize("dtype", [jnp.float16, jnp.float32, jnp.int8, jnp.uint8, jnp.int32])
def test_python_scalars_are_weak(dtype):
    x = jnp.ones(3, dtype)
    assert (x + 1).dtype == jnp.dtype(dtype)
    assert (2 * x).dtype == jnp.dtype(dtype)


def test_promotion_examples():
    assert jnp.result_type(jnp.int32, jnp.float16) == np.float16
    assert jnp.result_type(jnp.uint8, jnp.int8) == np.int16
    assert jnp.result_type(jnp.uint32, jnp.int32) == np.int32  # int64 narrowed with x64 off
    assert (jnp.ones(2, jnp.int32) + 1.5).dtype == np.float32
    assert (jnp.ones(2, jnp.bool_) + 1).dtype == np.int32
    assert jnp.result_type(1, 1.0) == np.float32
    z = jnp.asarray(1.0) + jnp.asarray(2)
    assert z.dtype == np.float32 and z.weak_type


def test_unknown_dtype_is_type_error():
    with pytest.raises(TypeError):
        jnp.zeros(3, dtype="not-a-dtype")
    with pytest.raises(TypeError):
        jnp.zeros(3, dtype=object)


# --- pytrees ---------------------------------------------------------------------------------

Point = collections.namedtuple("Point", "x y")


@dataclasses.dataclass
class Pair:
    a: object
    b: object


tree_util.register_dataclass(Pair, ["a", "b"], [])


def test_tree_flatten_unflatten_roundtrip():
    tree = {"b": [1, (2, None)], "a": Point(3, {"z": 4}), "c": Pair(5, 6)}
    leaves, treedef = tree_util.tree_flatten(tree)
    assert leaves == [3, 4, 1, 2, 5, 6]  # dict keys sorted; None is an empty node
    assert tree_util.tree_unflatten(treedef, leaves) == tree
    assert treedef.num_leaves == 6


def test_compiled_unflatten_and_matcher_agree_with_the_recursive_walk():
    """A structure rebuilt twice gets a compiled unflatten; `matcher(leaf_type)` returns the
    leaves of a tree of exactly that structure with leaf_type leaves, and None for any other
    tree (another key, a missing key standing where None was, a list for a tuple, another
    length, a container or another type at a leaf, another namedtuple type)."""
    tree = {"b": [1, (2, None)], "a": Point(3, {"z": 4}), "c": Pair(5, 6), "d": ()}
    leaves, treedef = tree_util.tree_flatten(tree)
    for _ in range(3):
        rebuilt = tree_util.tree_unflatten(treedef, leaves)
        assert rebuilt == tree and type(rebuilt["a"]) is Point and type(rebuilt["c"]) is Pair
    assert treedef._builder is not None
    assert list(tree_util.tree_unflatten(treedef, leaves)) == ["a", "b", "c", "d"]
    plain = {"w": [1, (2, None)], "p": Point(3, {"z": 4}), "e": ()}
    leaves, treedef = tree_util.tree_flatten(plain)
    match = treedef.matcher(int)
    assert match(plain) == leaves == [3, 4, 1, 2]
    Other = collections.namedtuple("Point", "x y")
    for other in [{"w": [1, (2, None)], "p": Point(3, {"y": 4}), "e": ()},
                  {"w": [1, (2, None)], "p": Point(3, {"z": 4}), "f": ()},
                  {"w": [1, (2, None)], "p": Point(3, {"z": 4})},
                  {"w": [1, (2, None)], "p": Point(3, {"z": 4}), "e": (), "f": None},
                  {"w": [1, [2, None]], "p": Point(3, {"z": 4}), "e": ()},
                  {"w": [1, (2, None, 5)], "p": Point(3, {"z": 4}), "e": ()},
                  {"w": [1, (2, 7)], "p": Point(3, {"z": 4}), "e": ()},
                  {"w": [1, (2, None)], "p": Point(3, {"z": 4.0}), "e": ()},
                  {"w": [1, (2, None)], "p": Point(3, {"z": [4]}), "e": ()},
                  {"w": [1, (2, None)], "p": Other(3, {"z": 4}), "e": ()},
                  [1, 2]]:
        assert match(other) is None, other
    # a missing key where the structure has an empty node is no match either
    none_at = {"a": None, "b": 1}
    m2 = tree_util.tree_structure(none_at).matcher(int)
    assert m2(none_at) == [1] and m2({"c": 0, "b": 1}) is None
    assert tree_util.tree_structure({1: 0}).matcher(int) is None     # non-string keys
    # a structure past the compile limit is walked, and decided on once
    big = list(range(tree_util._COMPILE_MAX_NODES + 1))
    leaves, treedef = tree_util.tree_flatten(big)
    for _ in range(3):
        assert tree_util.tree_unflatten(treedef, leaves) == big
    assert treedef._builder is False and treedef.matcher(int) is None


def test_tree_map_multiple_trees_and_mismatch():
    a = {"x": 1, "y": [2, 3]}
    b = {"x": 10, "y": [20, 30]}
    assert tree_util.tree_map(lambda u, v: u + v, a, b) == {"x": 11, "y": [22, 33]}
    with pytest.raises(ValueError):
        tree_util.tree_map(lambda u, v: u, a, {"x": 1, "y": [2]})


def test_register_pytree_node_class():
    @tree_util.register_pytree_node_class
    class Box:
        def __init__(self, v, tag):
            self.v, self.tag = v, tag

        def tree_flatten(self):
            return [self.v], self.tag

        @classmethod
        def tree_unflatten(cls, tag, children):
            return cls(children[0], tag)

    out = tree_util.tree_map(lambda v: v * 2, Box(3, "t"))
    assert out.v == 6 and out.tag == "t"
    with pytest.raises(ValueError, match="Duplicate"):
        tree_util.register_pytree_node(Box, lambda b: ([], None), lambda a, c: None)


def test_tree_flatten_with_path():
    pairs, _ = tree_util.tree_flatten_with_path({"w": [1, 2], "b": 3})
    assert [tree_util.keystr(p) for p, _ in pairs] == ["['b']", "['w'][0]", "['w'][1]"]


def test_tree_transpose_and_structure():
    outer = tree_util.tree_structure([0, 0])
    inner = tree_util.tree_structure((0, 0))
    out = tree_util.tree_transpose(outer, inner, [(1, 2), (3, 4)])
    assert out == ([1, 3], [2, 4])


# --- the IR ----------------------------------------------------------------------------------

def test_make_jaxpr_prints_like_jax():
    jaxpr = jax.make_jaxpr(jnp.log)(1.0)
    assert str(jaxpr) == "{ lambda ; a:f32[]. let b:f32[] = log a in (b,) }"


def test_make_jaxpr_multiline_and_params():
    def f(x):
        return jnp.sum(jnp.sin(x) * 2.0, axis=0)

    text = str(jax.make_jaxpr(f)(jnp.ones((3, 4))))
    assert text.splitlines()[0] == "{ lambda ; a:f32[3,4]. let"
    assert "b:f32[3,4] = sin a" in text
    assert "c:f32[3,4] = broadcast_in_dim[broadcast_dimensions=() shape=(3, 4)] 2.0:f32[]" in text
    assert "d:f32[3,4] = mul b c" in text
    assert "e:f32[4] = reduce_sum[axes=(0,)] d" in text
    assert text.splitlines()[-1].strip() == "in (e,) }"


def test_jaxpr_constvars_and_eval():
    c = np.arange(3.0, dtype=np.float32)
    closed = jax.make_jaxpr(lambda x: x + c)(jnp.ones(3))
    assert len(closed.jaxpr.constvars) == 1 and "lambda a:f32[3]; b:f32[3]" in str(closed)
    out = jax.core.eval_jaxpr(closed.jaxpr, closed.consts, jnp.ones(3))
    np.testing.assert_allclose(np.asarray(out[0]), c + 1)


def test_tracer_repr_inside_trace():
    seen = []
    jax.make_jaxpr(lambda x: seen.append(repr(x)) or x)(jnp.ones(3))
    assert seen[0] == "JitTracer(float32[3])"     # JAX 0.10's spelling


def test_eval_shape():
    out = jax.eval_shape(lambda x: {"y": x @ x.T}, jax.ShapeDtypeStruct((4, 2), jnp.float32))
    assert out["y"].shape == (4, 4) and out["y"].dtype == np.float32


# --- errors ----------------------------------------------------------------------------------

def test_dot_shape_mismatch_names_op_and_shapes():
    with pytest.raises(TypeError, match=r"dot_general requires contracting dimensions to have "
                                        r"the same shape, got \(784,\) and \(10,\)"):
        jnp.dot(jnp.ones((512, 784)), jnp.ones((10, 784)))


def test_bad_axis_is_value_error():
    with pytest.raises(ValueError, match="out of bounds"):
        jnp.sum(jnp.ones((2, 3)), axis=2)
    with pytest.raises(ValueError):
        jnp.expand_dims(jnp.ones(3), 5)


def test_broadcast_mismatch():
    # as in JAX 0.10.2: operands of one rank fail as the lax op would (TypeError), operands
    # of different ranks in broadcast_shapes (ValueError)
    with pytest.raises(TypeError, match="incompatible shapes for broadcasting"):
        jnp.ones(3) + jnp.ones(4)
    with pytest.raises(ValueError, match="Incompatible shapes for broadcasting"):
        jnp.ones((2, 3)) + jnp.ones(4)
    with pytest.raises(TypeError, match="add got incompatible shapes"):
        lax.add(jnp.ones(3), jnp.ones(4))


def test_concretization_error_names_argument():
    def f(x, n):
        if x.sum() > 0:
            return x
        return -x

    with pytest.raises(jax.errors.TracerBoolConversionError) as info:
        jax.make_jaxpr(f)(jnp.ones(3), 2)
    msg = str(info.value)
    assert "depends on the argument x" in msg and "static_argnums" in msg
    assert isinstance(info.value, TypeError)


def test_tracer_to_numpy_error():
    with pytest.raises(jax.errors.TracerArrayConversionError):
        jax.make_jaxpr(lambda x: np.sin(x))(jnp.ones(2))


def test_leaked_tracer_is_detected():
    leaked = []
    jax.make_jaxpr(lambda x: leaked.append(x) or x)(1.0)
    with pytest.raises(jax.errors.UnexpectedTracerError):
        jax.make_jaxpr(lambda y: y + leaked[0])(1.0)


def test_primitive_bind_without_rules_reports_name():
    p = Primitive("mystery")
    with pytest.raises(NotImplementedError, match="mystery"):
        jax.grad(lambda x: p.bind(x))(1.0)


def test_iteration_yields_arrays_usable_everywhere():
    items = list(jnp.array([1.0, 2.0]))
    assert all(type(i) is jax.Array and i.shape == () for i in items)
    assert float(jax.jit(lambda y: y + items[0])(1.0)) == 2.0


def test_numpy_inputs_are_canonicalized_by_transformations():
    out = jax.vmap(lambda i: jnp.less(i, jnp.int32(1)))(np.array([0, 2]))
    np.testing.assert_array_equal(np.asarray(out), [True, False])
    assert jax.jit(lambda i: i + jnp.int32(1))(np.array([1, 2])).dtype == np.int32


def test_item_assignment_on_tracers_points_to_at():
    def f(x):
        x[0] = 1.0
        return x

    with pytest.raises(TypeError, match=r"\.at\[idx\]\.set"):
        jax.jit(f)(jnp.ones(2))


def test_config_names_and_errors():
    assert jax.config.jax_enable_x64 is False and jax.config.enable_x64 is False
    jax.config.update("jax_debug_nans", True)        # read back under both names
    try:
        assert jax.config.debug_nans is True and jax.config.jax_debug_nans is True
    finally:
        jax.config.update("debug_nans", False)
    assert jax.config.debug_nans is False and jax.config.values()["debug_nans"] is False
    with pytest.raises(AttributeError, match="Unrecognized config option: 'jax_no_such_flag'"):
        jax.config.update("jax_no_such_flag", True)
    with pytest.raises(AttributeError, match="config.update"):
        jax.config.enable_x64 = True
    with pytest.raises(ValueError, match="platform"):
        jax.config.update("platform", "tpu")


def test_equal_tree_structures_are_one_object_but_distinct_key_types_stay_apart():
    from corejax import tree_util
    t1 = tree_util.tree_structure({"a": [1, (2, 3)], "b": None})
    t2 = tree_util.tree_structure({"b": None, "a": [4, (5, 6)]})
    assert t1 is t2 and t1 == t2 and hash(t1) == hash(t2)
    ints = tree_util.tree_structure({1: 0.0})
    bools = tree_util.tree_structure({True: 0.0})
    assert list(tree_util.tree_unflatten(ints, [0.0]))[0] is not True
    assert list(tree_util.tree_unflatten(bools, [0.0]))[0] is True


def test_eager_results_are_checked_against_abstract_evaluation():
    """check_eager_avals (on in this suite): an implementation whose result disagrees with
    the primitive's abstract evaluation fails eagerly, as the staged program would."""
    from corejax.config import config
    from corejax.core import ShapedArray

    p = Primitive("test_widen")
    p.def_impl(lambda x: np.stack([x, x]))                    # (2,) + shape: wrong
    p.def_abstract_eval(lambda x: ShapedArray(x.shape, x.dtype))
    saved = config.check_eager_avals
    try:
        config.update("check_eager_avals", True)
        with pytest.raises(TypeError, match="test_widen: eager result"):
            p.bind(jnp.ones(3))
        config.update("check_eager_avals", False)
        assert p.bind(jnp.ones(3)).shape == (2, 3)           # unchecked, as in a user's run
    finally:
        config.update("check_eager_avals", saved)


def test_debug_breakpoint_prompt_shows_runtime_values_inside_jit_and_vmap():
    import io
    import corejax as jax

    def f(x):
        y = jnp.sin(x) * 2
        jax.debug.breakpoint(stdin=io.StringIO("p y\np x.shape\nu\nd\nw\nc\n"), stdout=out)
        return y + 1

    out = io.StringIO()
    res = jax.jit(f)(jnp.arange(3.0))
    text = out.getvalue()
    assert text.startswith("Entering jdb:")
    assert "Array([0.       , 1.6829419, 1.8185948], dtype=float32)" in text
    assert "(3,)" in text and "->  " in text and "f()" in text
    np.testing.assert_allclose(np.asarray(res), np.sin(np.arange(3.0)) * 2 + 1, rtol=1e-6)
    out = io.StringIO()

    def g(x):
        y = x * 3
        jax.debug.breakpoint(stdin=commands, stdout=out)
        return y

    commands = io.StringIO("p y\nc\np y\nc\n")  # one prompt per element reads from it
    jax.vmap(g)(jnp.arange(2.0))
    assert out.getvalue().count("Entering jdb:") == 2  # once per batch element, in order
    assert "Array(0., dtype=float32)" in out.getvalue()
    assert "Array(3., dtype=float32)" in out.getvalue()


@pytest.mark.parametrize("mode", ["remove_frames", "quiet_remove_frames", "off"])
def test_traceback_filtering_keeps_the_users_frames(mode):
    import traceback
    import corejax as jax

    def f(x):
        if x > 0:
            return x
        return -x

    prev = jax.config.traceback_filtering
    jax.config.update("jax_traceback_filtering", mode)
    try:
        with pytest.raises(jax.errors.TracerBoolConversionError) as info:
            jax.grad(jax.jit(f))(1.0)
    finally:
        jax.config.update("jax_traceback_filtering", prev)
    files = [fr.filename for fr in traceback.extract_tb(info.value.__traceback__)]
    inside = [fn for fn in files if "/corejax/" in fn.replace("\\", "/")]
    assert any(fn == __file__ for fn in files)
    if mode == "off":
        assert len(inside) > 3
        assert not getattr(info.value, "__notes__", None)
    else:
        assert [fn.endswith("_traceback.py") for fn in inside] == [True] * len(inside) and \
            len(inside) <= 1  # only the boundary's re-raise
        notes = getattr(info.value, "__notes__", [])
        assert bool(notes) == (mode == "remove_frames")


def test_large_eager_transcendentals_run_the_jit_kernels_bit_for_bit():
    import corejax as jax
    x = jnp.asarray(np.linspace(-3, 3, 10000, dtype=np.float32))
    for f in (jnp.exp, jnp.tanh, jnp.sin, lambda v: jnp.log(jnp.abs(v) + 1), jax.nn.sigmoid,
              lambda v: jnp.abs(v) ** 1.5):
        eager, jitted = f(x), jax.jit(f)(x)
        assert eager.dtype == jitted.dtype and eager.weak_type == jitted.weak_type
        np.testing.assert_array_equal(np.asarray(eager), np.asarray(jitted))
    small = jnp.asarray(np.linspace(-3, 3, 10, dtype=np.float32))   # small arrays: NumPy
    np.testing.assert_allclose(np.asarray(jnp.exp(small)), np.exp(np.asarray(small)), rtol=1e-6)
