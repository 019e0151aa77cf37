"""Record JAX 0.10.2's smap, jax.memory, the auto_pcast and
remove_size_one_mesh_axis_from_type flags and NamedSharding's memory kinds as golden data
for corejax.

Run with a Python that has jax installed (never a corejax dependency); it makes 4 CPU
devices itself:

    /work/jaxvenv/bin/python tests/golden/gen_smap.py

Writes tests/golden/smap.json: {"jax_version": ..., "cases": {name: result}}. Each case is a
function body in CASES, run with `jax`, `jnp`, `lax`, `np`, `P`, `NamedSharding`, `AxisType`
bound to one framework and the PRELUDE's inputs, meshes and helpers defined;
tests/test_smap.py runs the same bodies on corejax with 4 CPU devices. Results are described
as tests/golden/gen_shard_map.py describes them (values, dtype, shape and partition spec of
arrays; exception types), and an exception that is none of those types by its class name.
"""
import json
import os
import importlib.util

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "smap.json")
_spec = importlib.util.spec_from_file_location(
    "gen_shard_map", os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                  "gen_shard_map.py"))
gen_shard_map = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gen_shard_map)

PRELUDE = """
import contextlib
x8 = np.arange(8, dtype=np.float32) * 0.75 - 2.0
m84 = (np.arange(32, dtype=np.float32).reshape(8, 4) % 7) / 3.0 - 1.0
m44 = np.arange(16, dtype=np.float32).reshape(4, 4)
w2 = np.array([0.5, -1.5], dtype=np.float32)
amesh = jax.make_mesh((4,), ('i',), axis_types=(AxisType.Auto,))
emesh = jax.make_mesh((4,), ('i',))
mesh22 = jax.make_mesh((2, 2), ('x', 'y'), axis_types=(AxisType.Auto, AxisType.Auto))
emesh22 = jax.make_mesh((2, 2), ('x', 'y'))
mesh41 = jax.make_mesh((4, 1), ('i', 'j'), axis_types=(AxisType.Auto, AxisType.Auto))
@contextlib.contextmanager
def flag(name, value):
    old = getattr(jax.config, 'jax_' + name)
    jax.config.update('jax_' + name, value)
    try:
        yield
    finally:
        jax.config.update('jax_' + name, old)
def sm(f, in_specs, out_specs, m=None, **kw):
    return jax.shard_map(f, mesh=amesh if m is None else m, in_specs=in_specs,
                         out_specs=out_specs, **kw)
def ids(b):
    return b * 10 + lax.axis_index('y') + 100 * lax.axis_index('x')
"""

SMAP = {
    # --- one axis, Auto: in_axes / out_axes as vmap's, splitting over the mesh axis --------
    "smap_elementwise": "with jax.set_mesh(amesh):\n"
                        "    return jax.smap(lambda a: jnp.sin(a) * 2, in_axes=0, out_axes=0, "
                        "axis_name='i')(x8)",
    "smap_psum_out_none": "with jax.set_mesh(amesh):\n"
                          "    return jax.smap(lambda a: lax.psum(a, 'i'), in_axes=0, "
                          "out_axes=None, axis_name='i')(m84)",
    "smap_axis1": "with jax.set_mesh(amesh):\n"
                  "    return jax.smap(lambda a: a * 2 + lax.axis_index('i'), in_axes=1, "
                  "out_axes=1, axis_name='i')(m84)",
    "smap_in1_out0": "with jax.set_mesh(amesh):\n"
                     "    return jax.smap(lambda a: a + 1, in_axes=1, out_axes=0, "
                     "axis_name='i')(m84)",
    "smap_negative_axis": "with jax.set_mesh(amesh):\n"
                          "    return jax.smap(lambda a: jnp.zeros(a.shape) + a.shape[0] * 10 "
                          "+ a.shape[1], in_axes=-1, out_axes=1, axis_name='i')(m84)",
    "smap_tuple_in_axes": "with jax.set_mesh(amesh):\n"
                          "    return jax.smap(lambda a, w: a * w.sum(), in_axes=(0, None), "
                          "out_axes=0, axis_name='i')(x8, m84)",
    "smap_none_in_none_out": "with jax.set_mesh(amesh):\n"
                             "    return jax.smap(lambda a: a * 2, in_axes=None, out_axes=None,"
                             " axis_name='i')(m44)",
    "smap_dict_out": "with jax.set_mesh(amesh):\n"
                     "    return jax.smap(lambda a: {'a': a, 'b': lax.pmax(a, 'i')}, in_axes=0, "
                     "out_axes={'a': 0, 'b': None}, axis_name='i')(x8)",
    "smap_nested_in_axes": "with jax.set_mesh(amesh):\n"
                           "    return jax.smap(lambda d, c: d['a'] * 2 + c, in_axes=({'a': 0}, "
                           "None), out_axes=0, axis_name='i')({'a': x8}, np.float32(1))",
    "smap_tuple_out": "with jax.set_mesh(amesh):\n"
                      "    return jax.smap(lambda a: (a, lax.all_gather(a, 'i', tiled=True)), "
                      "in_axes=0, out_axes=(0, 0), axis_name='i')(x8)",
    "smap_decorator": "with jax.set_mesh(amesh):\n"
                      "    return jax.smap(in_axes=0, out_axes=0, axis_name='i')"
                      "(lambda a: a + 1)(x8)",
    "smap_ppermute": "with jax.set_mesh(amesh):\n"
                     "    return jax.smap(lambda a: lax.ppermute(a, 'i', [(k, (k + 1) % 4) for k "
                     "in range(4)]), in_axes=0, out_axes=0, axis_name='i')(m84)",
    "smap_use_mesh_setter": "jax.set_mesh(amesh)\n"
                            "return jax.smap(lambda a: lax.psum(a, 'i'), in_axes=0, "
                            "out_axes=None, axis_name='i')(x8)",
    # --- under transformations ----------------------------------------------------------------
    "smap_jit": "with jax.set_mesh(amesh):\n"
                "    return jax.jit(jax.smap(lambda a: lax.psum(a * a, 'i'), in_axes=0, "
                "out_axes=None, axis_name='i'))(x8)",
    "smap_grad": "with jax.set_mesh(amesh):\n"
                 "    return jax.grad(lambda a: jax.smap(lambda a: lax.psum(jnp.sin(a).sum(), "
                 "'i'), in_axes=0, out_axes=None, axis_name='i')(a))(x8)",
    "smap_grad_replicated": "with jax.set_mesh(amesh):\n"
                            "    return jax.grad(lambda w, a: jax.smap(lambda w, a: lax.pmean("
                            "jnp.sum(jnp.tanh(a * w)), 'i'), in_axes=(None, 0), out_axes=None, "
                            "axis_name='i')(w, a))(np.float32(0.5), x8)",
    "smap_vmap": "with jax.set_mesh(amesh):\n"
                 "    return jax.vmap(jax.smap(lambda a: lax.psum(a, 'i'), in_axes=0, "
                 "out_axes=None, axis_name='i'))(m84.T)",
    # --- Explicit axes: in_axes inferred from the arguments' shardings ---------------------
    "smap_explicit_infer": "with jax.set_mesh(emesh):\n"
                           "    xs = jax.device_put(x8, P('i'))\n"
                           "    return jax.smap(lambda a: a * 2, out_axes=0, axis_name='i')(xs)",
    "smap_explicit_infer_dim1": "with jax.set_mesh(emesh):\n"
                                "    xs = jax.device_put(m84, P(None, 'i'))\n"
                                "    return jax.smap(lambda a: a - 1, out_axes=1, "
                                "axis_name='i')(xs)",
    "smap_explicit_infer_replicated": "with jax.set_mesh(emesh):\n"
                                      "    return jax.smap(lambda a: a * 2, out_axes=None, "
                                      "axis_name='i')(x8)",
    "smap_explicit_in_axes": "with jax.set_mesh(emesh):\n"
                             "    xs = jax.device_put(x8, P('i'))\n"
                             "    return jax.smap(lambda a: lax.psum(a, 'i'), in_axes=0, "
                             "out_axes=None, axis_name='i')(xs)",
    # --- several axes: one smap per axis, nested ---------------------------------------------
    "smap_nested": "with jax.set_mesh(mesh22):\n"
                   "    inner = jax.smap(ids, in_axes=1, out_axes=1, axis_name='y')\n"
                   "    return jax.smap(inner, in_axes=0, out_axes=0, axis_name='x')(m44)",
    "smap_nested_jit": "with jax.set_mesh(mesh22):\n"
                       "    inner = jax.smap(ids, in_axes=1, out_axes=1, axis_name='y')\n"
                       "    return jax.jit(jax.smap(inner, in_axes=0, out_axes=0, "
                       "axis_name='x'))(m44)",
    "smap_nested_explicit_jit": "with jax.set_mesh(emesh22):\n"
                                "    inner = jax.smap(ids, in_axes=1, out_axes=1, "
                                "axis_name='y')\n"
                                "    return jax.jit(jax.smap(inner, in_axes=0, out_axes=0, "
                                "axis_name='x'))(m44)",
    "smap_nested_psum_inner": "with jax.set_mesh(mesh22):\n"
                              "    f = lambda b: jax.smap(lambda c: lax.psum(c, 'y'), "
                              "in_axes=0, out_axes=None, axis_name='y')(b)\n"
                              "    return jax.smap(f, in_axes=0, out_axes=0, axis_name='x')"
                              "(m44)",
    "smap_nested_psum_both": "with jax.set_mesh(mesh22):\n"
                             "    f = lambda b: jax.smap(lambda c: lax.psum(c, ('x', 'y')), "
                             "in_axes=0, out_axes=None, axis_name='y')(b)\n"
                             "    return jax.jit(jax.smap(f, in_axes=0, out_axes=None, "
                             "axis_name='x'))(m44)",
    "smap_one_of_two_axes": "with jax.set_mesh(mesh22):\n"
                            "    return jax.smap(lambda b: b * 2 + lax.axis_index('x'), "
                            "in_axes=0, out_axes=0, axis_name='x')(m44)",
    "smap_second_axis_of_two": "with jax.set_mesh(mesh22):\n"
                               "    return jax.smap(lambda b: lax.psum(b, 'y'), in_axes=1, "
                               "out_axes=None, axis_name='y')(m44)",
    # --- errors ---------------------------------------------------------------------------
    "err_smap_no_mesh": "return jax.smap(lambda a: a, in_axes=0, out_axes=0, "
                        "axis_name='i')(x8)",
    "err_smap_auto_infer": "with jax.set_mesh(amesh):\n"
                           "    return jax.smap(lambda a: a, out_axes=0, axis_name='i')(x8)",
    "err_smap_in_axes_list": "return jax.smap(lambda a: a, in_axes=[0], out_axes=0, "
                             "axis_name='i')",
    "err_smap_in_axes_str": "return jax.smap(lambda a: a, in_axes='a', out_axes=0, "
                            "axis_name='i')",
    "err_smap_in_axes_leaf": "return jax.smap(lambda a: a, in_axes=(0.5,), out_axes=0, "
                             "axis_name='i')",
    "err_smap_out_axes_float": "return jax.smap(lambda a: a, in_axes=0, out_axes=0.5, "
                               "axis_name='i')",
    "err_smap_axis_name_tuple": "return jax.smap(lambda a: a, in_axes=0, out_axes=0, "
                                "axis_name=('i',))",
    "err_smap_unknown_axis": "with jax.set_mesh(amesh):\n"
                             "    return jax.smap(lambda a: a, in_axes=0, out_axes=0, "
                             "axis_name='j')(x8)",
    "err_smap_indivisible": "with jax.set_mesh(amesh):\n"
                            "    return jax.smap(lambda a: a, in_axes=0, out_axes=0, "
                            "axis_name='i')(np.arange(6, dtype=np.float32))",
    "err_smap_in_axis_rank": "with jax.set_mesh(amesh):\n"
                             "    return jax.smap(lambda a: a, in_axes=1, out_axes=0, "
                             "axis_name='i')(x8)",
    "err_smap_out_axis_rank": "with jax.set_mesh(amesh):\n"
                              "    return jax.smap(lambda a: a.sum(), in_axes=0, out_axes=0, "
                              "axis_name='i')(x8)",
    "err_smap_vma": "with jax.set_mesh(amesh):\n"
                    "    return jax.smap(lambda a: a * 2, in_axes=0, out_axes=None, "
                    "axis_name='i')(x8)",
    "err_smap_kwargs": "with jax.set_mesh(amesh):\n"
                       "    return jax.smap(lambda a: a, in_axes=0, out_axes=0, "
                       "axis_name='i')(a=x8)",
    "err_smap_in_axes_short": "with jax.set_mesh(amesh):\n"
                              "    return jax.smap(lambda a, b: a, in_axes=(0,), out_axes=0, "
                              "axis_name='i')(x8, x8)",
    "err_smap_not_callable": "return jax.smap(3, in_axes=0, out_axes=0, axis_name='i')",
    "err_smap_explicit_unsharded": "with jax.set_mesh(emesh):\n"
                                   "    return jax.smap(lambda a: a, in_axes=0, out_axes=0, "
                                   "axis_name='i')(x8)",
    "err_smap_nested_same_axis": "with jax.set_mesh(mesh22):\n"
                                 "    f = lambda b: jax.smap(lambda c: c, in_axes=0, "
                                 "out_axes=0, axis_name='x')(b)\n"
                                 "    return jax.smap(f, in_axes=0, out_axes=0, "
                                 "axis_name='x')(m44)",
}

AUTO_PCAST = {
    "pcast_default_on": "return [jax.config.jax_auto_pcast, "
                        "sm(lambda a, w: a + w, (P('i'), P()), P('i'))(x8, w2)]",
    "pcast_on_psum_invariant": "return sm(lambda w: lax.psum(w, 'i'), P(), P())(w2)",
    "pcast_off_add": "with flag('auto_pcast', False):\n"
                     "    return sm(lambda a, w: a + w, (P('i'), P()), P('i'))(x8, w2)",
    "pcast_off_literal": "with flag('auto_pcast', False):\n"
                         "    return sm(lambda a: a * 2.0, P('i'), P('i'))(x8)",
    "pcast_off_where": "with flag('auto_pcast', False):\n"
                       "    return sm(lambda a, w: lax.select(a > w[0], a, a * a), (P('i'), "
                       "P()), P('i'))(x8, w2)",
    "pcast_off_dot": "with flag('auto_pcast', False):\n"
                     "    return sm(lambda a, w: a @ w, (P('i'), P()), P('i'))(m84, m44)",
    "pcast_off_psum_var": "with flag('auto_pcast', False):\n"
                          "    return sm(lambda a: a + lax.psum(a, 'i'), P('i'), P('i'))(x8)",
    "pcast_off_psum_invariant": "with flag('auto_pcast', False):\n"
                                "    return sm(lambda w: lax.psum(w, 'i'), P(), P())(w2)",
    "pcast_off_all_gather_invariant": "with flag('auto_pcast', False):\n"
                                      "    return sm(lambda w: lax.all_gather(w, 'i'), P(), "
                                      "P('i'))(w2)",
    "pcast_off_ppermute_invariant": "with flag('auto_pcast', False):\n"
                                    "    return sm(lambda w: lax.ppermute(w, 'i', [(0, 1), "
                                    "(1, 0)]), P(), P('i'))(w2)",
    "pcast_off_axis_index_invariant": "with flag('auto_pcast', False):\n"
                                      "    return sm(lambda w: w + lax.axis_index('i'), P(), "
                                      "P('i'))(w2)",
    "pcast_off_same_vma": "with flag('auto_pcast', False):\n"
                          "    return [sm(lambda a: jnp.sin(a) * a - a, P('i'), P('i'))(x8),"
                          " sm(lambda w: w * w, P(), P())(w2),"
                          " sm(lambda a: a.sum(keepdims=True), P('i'), P('i'))(x8),"
                          " sm(lambda a: a + lax.axis_index('i'), P('i'), P('i'))(x8),"
                          " sm(lambda a, w: lax.psum(a, 'i') + w, (P('i'), P()), P())(x8, w2)]",
    "pcast_off_relu": "with flag('auto_pcast', False):\n"
                      "    return sm(lambda a: jax.nn.relu(a), P('i'), P('i'))(x8)",
    "pcast_off_psum_constant": "with flag('auto_pcast', False):\n"
                               "    return sm(lambda a: lax.psum(1.0, 'i') + jnp.zeros(2), "
                               "P('i'), P())(x8)",
    "pcast_off_out_invariant_split": "with flag('auto_pcast', False):\n"
                                     "    return sm(lambda a, w: w * w, (P('i'), P()), "
                                     "P('i'))(x8, w2)",
    "pcast_off_grad": "with flag('auto_pcast', False):\n"
                      "    return jax.grad(lambda a: sm(lambda a: lax.psum(jnp.sin(a).sum(), "
                      "'i'), P('i'), P())(a))(x8)",
    "pcast_off_jit": "with flag('auto_pcast', False):\n"
                     "    return jax.jit(sm(lambda a, w: a + w, (P('i'), P()), P('i')))(x8, w2)",
    "pcast_off_jit_inside": "with flag('auto_pcast', False):\n"
                            "    return sm(jax.jit(lambda a, w: a - w), (P('i'), P()), "
                            "P('i'))(x8, w2)",
    "pcast_off_scan_carry": "with flag('auto_pcast', False):\n"
                            "    return sm(lambda a, c: lax.scan(lambda c, x: (c + x, None), c,"
                            " a)[0], (P('i'), P()), P())(x8, np.float32(0))",
    "pcast_off_check_vma_false": "with flag('auto_pcast', False):\n"
                                 "    return sm(lambda a, w: a + w, (P('i'), P()), P('i'), "
                                 "check_vma=False)(x8, w2)",
    "pcast_off_smap": "with flag('auto_pcast', False), jax.set_mesh(amesh):\n"
                      "    return jax.smap(lambda a, w: a + w, in_axes=(0, None), out_axes=0, "
                      "axis_name='i')(x8, w2)",
}

SIZE_ONE = {
    "size_one_default": "return [jax.config.jax_remove_size_one_mesh_axis_from_type, "
                        "sm(lambda a: lax.psum(a, 'j'), P('i', 'j'), P('i'), m=mesh41)(m84)]",
    "size_one_off_vma": "return sm(lambda a: a, P('j'), P(), m=mesh41)(m84)",
    "size_one_on_vma": "with flag('remove_size_one_mesh_axis_from_type', True):\n"
                       "    return sm(lambda a: a, P('j'), P(), m=mesh41)(m84)",
    "size_one_off_axis_index": "return sm(lambda a: a + lax.axis_index('j'), P('i'), P('i'), "
                               "m=mesh41)(m84)",
    "size_one_on_axis_index": "with flag('remove_size_one_mesh_axis_from_type', True):\n"
                              "    return sm(lambda a: a + lax.axis_index('j'), P('i'), "
                              "P('i'), m=mesh41)(m84)",
    "size_one_on_smap": "with flag('remove_size_one_mesh_axis_from_type', True), "
                        "jax.set_mesh(mesh41):\n"
                        "    return jax.smap(lambda a: a * 2, in_axes=0, out_axes=None, "
                        "axis_name='j')(m84)",
    "size_one_off_smap": "with jax.set_mesh(mesh41):\n"
                         "    return jax.smap(lambda a: a * 2, in_axes=0, out_axes=None, "
                         "axis_name='j')(m84)",
    "size_one_on_pcast_off": "with flag('remove_size_one_mesh_axis_from_type', True), "
                             "flag('auto_pcast', False):\n"
                             "    return sm(lambda a, w: a + w, (P('j'), P()), P('j'), "
                             "m=mesh41)(x8, x8)",
    "size_one_off_pcast_off": "with flag('auto_pcast', False):\n"
                              "    return sm(lambda a, w: a + w, (P('j'), P()), P('j'), "
                              "m=mesh41)(x8, x8)",
    "size_one_on_still_checks_i": "with flag('remove_size_one_mesh_axis_from_type', True):\n"
                                  "    return sm(lambda a: a, P('i', 'j'), P(None, 'j'), "
                                  "m=mesh41)(m84)",
}

MEMORY = {
    "memory_space_members": "S = jax.memory.Space\n"
                            "return [[m.name for m in S], [m.value for m in S], repr(S.Host), "
                            "str(S.Device), S(3).name, S['Any'] is S.Any, S.__name__]",
    "err_memory_space_by_string": "return jax.memory.Space('device')",
    "memory_kind_default": "s = NamedSharding(emesh, P('i'))\n"
                           "d = jax.sharding.SingleDeviceSharding(jax.devices()[0])\n"
                           "return [s.memory_kind, d.memory_kind, repr(s), "
                           "s == NamedSharding(emesh, P('i'), memory_kind='device')]",
    "memory_kind_cpu_kinds": "out = []\n"
                             "for k in ('device', 'pinned_host', 'unpinned_host'):\n"
                             "    s = NamedSharding(emesh, P('i'), memory_kind=k)\n"
                             "    d = jax.sharding.SingleDeviceSharding(jax.devices()[1], "
                             "memory_kind=k)\n"
                             "    out.append([s.memory_kind, repr(s), d.memory_kind, repr(d), "
                             "s == NamedSharding(emesh, P('i'))])\n"
                             "return out",
    "memory_kind_with_memory_kind": "s = NamedSharding(emesh, P('i')).with_memory_kind("
                                    "'pinned_host')\n"
                                    "return [s.memory_kind, s.spec == P('i'), "
                                    "s.with_memory_kind('device') == NamedSharding(emesh, "
                                    "P('i'))]",
    "memory_kind_device_put": "a = jax.device_put(x8, NamedSharding(emesh, P('i'), "
                              "memory_kind='pinned_host'))\n"
                              "return [a, a.sharding.memory_kind]",
    "err_memory_kind_host": "return NamedSharding(emesh, P('i'), memory_kind='host')",
    "err_memory_kind_bogus_single": "return jax.sharding.SingleDeviceSharding("
                                    "jax.devices()[0], memory_kind='hbm')",
    "err_duplicate_spec": "return NamedSharding(emesh22, P('x', 'x'))",
}

CASES = {**SMAP, **AUTO_PCAST, **SIZE_ONE, **MEMORY}

_ERRORS = gen_shard_map._ERRORS + ("DuplicateSpecError",)


def run_case(name, env):
    """One case's golden result (run by the generator with JAX, by tests/test_smap.py with
    corejax)."""
    return gen_shard_map.run_case(name, env, CASES, PRELUDE, _ERRORS, name_any_error=True)


if __name__ == "__main__":
    gen_shard_map.main(CASES, PRELUDE, OUT, _ERRORS, name_any_error=True)
