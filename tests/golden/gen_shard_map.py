"""Record JAX's shard_map, meshes and jit on sharded arrays as golden data for corejax.

Run with a Python that has jax installed (never a corejax dependency); it makes 4 CPU
devices itself:

    /work/jaxvenv/bin/python tests/golden/gen_shard_map.py

Writes tests/golden/shard_map.json: {"jax_version": ..., "cases": {name: result}}. Each case
is a function body in CASES, run with `jax`, `jnp`, `lax`, `np`, `P`, `NamedSharding`,
`AxisType` bound to one framework and the PRELUDE's inputs and meshes defined;
tests/test_shard_map.py runs the same bodies on corejax with 4 CPU devices. A result is
recorded by `describe`: arrays by values, dtype, shape and the partition spec of their
sharding (None for an unsharded one); an exception by its type (ShardingTypeError, JAX's
error for sharding it will not infer, by name).
"""
import json
import os

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "shard_map.json")

PRELUDE = """
x8 = np.arange(8, dtype=np.float32) * 0.75 - 2.0
m84 = (np.arange(32, dtype=np.float32).reshape(8, 4) % 7) / 3.0 - 1.0
m44 = np.arange(16, dtype=np.float32).reshape(4, 4) / 4.0
w43 = (np.arange(12, dtype=np.float32).reshape(4, 3) % 5) / 5.0 - 0.4
mesh = jax.sharding.Mesh(np.array(jax.devices()), ('i',))
mesh22 = jax.make_mesh((2, 2), ('x', 'y'), axis_types=(AxisType.Auto, AxisType.Auto))
emesh = jax.make_mesh((4,), ('i',))
emesh22 = jax.make_mesh((2, 2), ('x', 'y'))
def smap(f, in_specs, out_specs, m=None, **kw):
    return jax.shard_map(f, mesh=mesh if m is None else m, in_specs=in_specs,
                         out_specs=out_specs, **kw)
def mlp_loss(params, x, y):
    (w1, b1), (w2, b2) = params
    h = jnp.tanh(x @ w1 + b1)
    logits = h @ w2 + b2
    logp = logits - jax.nn.logsumexp(logits, axis=1, keepdims=True)
    return -jnp.mean(jnp.sum(logp * y, axis=1))
rng = np.random.RandomState(0)
params = [(rng.randn(4, 6).astype(np.float32) * 0.3, rng.randn(6).astype(np.float32) * 0.1),
          (rng.randn(6, 3).astype(np.float32) * 0.3, rng.randn(3).astype(np.float32) * 0.1)]
ys = np.eye(3, dtype=np.float32)[np.arange(8) % 3]
"""

SHARD_MAP = {
    # --- collectives over one mesh axis ---------------------------------------------------
    "sm_elementwise": "return smap(lambda a: jnp.sin(a) * 2, P('i'), P('i'))(x8)",
    "sm_psum": "return smap(lambda a: lax.psum(a, 'i'), P('i'), P())(x8)",
    "sm_pmean": "return smap(lambda a: lax.pmean(a, 'i'), P('i'), P())(m84)",
    "sm_pmax_pmin": "return smap(lambda a: (lax.pmax(a, 'i'), lax.pmin(a, 'i')), P('i'), "
                    "(P(), P()))(m84)",
    "sm_psum_int": "return smap(lambda a: lax.psum(a, 'i'), P('i'), P())"
                   "(np.arange(8, dtype=np.int32))",
    "sm_psum_const": "return smap(lambda a: a + lax.psum(1.0, 'i'), P('i'), P('i'))(x8)",
    "sm_psum_replicated_in": "return smap(lambda w: lax.psum(w, 'i'), P(), P())(w43)",
    "sm_axis_index": "return smap(lambda a: a * lax.axis_index('i'), P('i'), P('i'))(m84)",
    "sm_axis_size": "return smap(lambda a: a * lax.axis_size('i'), P('i'), P('i'))(x8)",
    "sm_all_gather": "return smap(lambda a: lax.all_gather(a, 'i'), P('i'), P('i'))(m84)",
    "sm_all_gather_tiled": "return smap(lambda a: lax.all_gather(a, 'i', tiled=True), P('i'),"
                           " P(), check_vma=False)(m84)",
    "sm_all_gather_axis1": "return smap(lambda a: lax.all_gather(a, 'i', axis=1), P('i'), "
                           "P('i'))(m84)",
    "sm_psum_scatter": "return smap(lambda a: lax.psum_scatter(a, 'i', tiled=True), P(), "
                       "P('i'))(m84)",
    "sm_psum_scatter_untiled": "return smap(lambda a: lax.psum_scatter(a, 'i'), P(None, 'i'),"
                               " P('i'))(m44)",
    "sm_all_to_all": "return smap(lambda a: lax.all_to_all(a, 'i', 1, 0, tiled=True), "
                     "P('i'), P('i'))(m84)",
    "sm_ppermute_ring": "return smap(lambda a: lax.ppermute(a, 'i', [(k, (k + 1) % 4) for k "
                        "in range(4)]), P('i'), P('i'))(m84)",
    "sm_ppermute_partial": "return smap(lambda a: lax.ppermute(a, 'i', [(0, 2), (1, 3)]), "
                           "P('i'), P('i'))(x8)",
    "sm_pshuffle": "return smap(lambda a: lax.pshuffle(a, 'i', [3, 2, 0, 1]), P('i'), "
                   "P('i'))(x8)",
    "sm_collective_in_scan": """
def f(a):
    def body(c, _):
        return lax.ppermute(c, 'i', [(k, (k + 1) % 4) for k in range(4)]) + c * 0.5, None
    return lax.scan(body, a, None, length=3)[0]
return smap(f, P('i'), P('i'))(m84)""",
    "sm_ring_in_fori_loop": """
def f(a):
    def body(k, carry):
        acc, blk = carry
        blk = lax.ppermute(blk, 'i', [(j, (j + 1) % 4) for j in range(4)])
        return acc + blk * (k + 1), blk
    return lax.fori_loop(0, 3, body, (a, a))[0]
return smap(f, P('i'), P('i'))(m84)""",
    # --- specs and pytrees -----------------------------------------------------------------
    "sm_in_specs_none_leaf": "return smap(lambda a, b: a + b.sum(), (P('i'), None), P('i'))"
                             "(x8, x8)",
    "sm_prefix_dict": "return smap(lambda d: {'s': d['a'] * 2, 't': d['b'] + 1}, "
                      "({'a': P('i'), 'b': P()},), {'s': P('i'), 't': P()})"
                      "({'a': x8, 'b': w43})",
    "sm_tuple_out_prefix": "return smap(lambda a: (a, a * 2), P('i'), P('i'))(m84)",
    "sm_split_dim1": "return smap(lambda a: a.sum(1, keepdims=True), P(None, 'i'), "
                     "P(None, 'i'))(m84)",
    "sm_replicated_out_of_replicated": "return smap(lambda w: w * 3, P(), P())(w43)",
    "sm_closure": "c = jnp.arange(2.0)\nreturn smap(lambda a: a + c[1], P('i'), P('i'))(x8)",
    "sm_decorator": "return jax.shard_map(mesh=mesh, in_specs=P('i'), out_specs=P('i'))"
                    "(lambda a: a + 1)(x8)",
    "sm_legacy_experimental": "import importlib\n"
                              "esm = importlib.import_module(jax.__name__ + '.experimental."
                              "shard_map').shard_map\n"
                              "return esm(lambda a: lax.psum(a, 'i'), mesh, P('i'), P())(x8)",
    "sm_set_mesh": "with jax.set_mesh(mesh22):\n"
                   "    return jax.shard_map(lambda a: lax.psum(a, 'x'), in_specs=P('x'), "
                   "out_specs=P())(x8)",
    # --- two mesh axes -------------------------------------------------------------------
    "sm2_psum_x": "return smap(lambda a: lax.psum(a, 'x') + lax.axis_index('y') * 100.0, "
                  "P('x', 'y'), P(None, 'y'), m=mesh22)(m44)",
    "sm2_psum_xy": "return smap(lambda a: lax.psum(a, ('x', 'y')), P(('x', 'y')), P(), "
                   "m=mesh22)(x8)",
    "sm2_pmean_yx": "return smap(lambda a: lax.pmean(a, ('y', 'x')), P('x', 'y'), P(), "
                    "m=mesh22)(m44)",
    "sm2_axis_index_xy": "return smap(lambda a: a * 0 + lax.axis_index(('x', 'y')), "
                         "P(('x', 'y')), P(('x', 'y')), m=mesh22)(x8)",
    "sm2_all_gather_y": "return smap(lambda a: lax.all_gather(a, 'y', tiled=True), "
                        "P('x', 'y'), P('x', None), m=mesh22, check_vma=False)(m44)",
    "sm2_ppermute_x": "return smap(lambda a: lax.ppermute(a, 'x', [(0, 1), (1, 0)]), "
                      "P('x', 'y'), P('x', 'y'), m=mesh22)(m44)",
    "sm2_replicated_over_y": "return smap(lambda a: a * 2, P('x'), P('x'), m=mesh22)(m84)",
    # --- transformations -----------------------------------------------------------------
    "sm_jit": "return jax.jit(smap(lambda a: lax.psum(a, 'i'), P('i'), P()))(x8)",
    "sm_jit_inside": "return smap(jax.jit(lambda a: lax.psum(jnp.cos(a), 'i')), P('i'), "
                     "P())(m84)",
    "sm_jit_around_ops": "return jax.jit(lambda a: smap(lambda b: b * lax.axis_index('i'), "
                         "P('i'), P('i'))(a * 2) + 1)(x8)",
    "sm_grad_replicated_param": "return jax.grad(lambda w, a: smap(lambda w, a: lax.psum("
                                "(w * a).sum(), 'i'), (P(), P('i')), P())(w, a))"
                                "(np.float32(2.0), x8)",
    "sm_grad_sharded": "return jax.grad(lambda a: smap(lambda a: lax.psum(jnp.sin(a).sum(), "
                       "'i'), P('i'), P())(a))(x8)",
    "sm_grad_sharded_out": "return jax.grad(lambda w, a: (smap(lambda w, a: jnp.tanh(w * a), "
                           "(P(), P('i')), P('i'))(w, a) ** 2).sum(), argnums=(0, 1))"
                           "(np.float32(0.7), x8)",
    "sm_grad_matmul": "return jax.grad(lambda w, a: smap(lambda w, a: lax.pmean(jnp.sum("
                      "jnp.tanh(a @ w) ** 2), 'i'), (P(), P('i')), P())(w, a))(w43, m84)",
    "sm_grad_nocheck": "return jax.grad(lambda w, a: smap(lambda w, a: lax.psum((w * a)"
                       ".sum(), 'i'), (P(), P('i')), P(), check_vma=False)(w, a))"
                       "(np.float32(2.0), x8)",
    "sm_grad_ppermute": "return jax.grad(lambda a: jnp.sum(jnp.cos(smap(lambda b: lax.ppermute"
                        "(b, 'i', [(0, 2), (2, 1), (1, 0)]), P('i'), P('i'))(a)) * x8))(x8)",
    "sm_grad_all_gather": "return jax.grad(lambda a: jnp.sum(smap(lambda b: lax.all_gather("
                          "b, 'i', tiled=True) * np.arange(8.0, dtype=np.float32), P('i'), "
                          "P(), check_vma=False)(a) ** 2))(x8)",
    "sm_grad_psum_scatter": "return jax.grad(lambda a: jnp.sum(smap(lambda b: lax.psum_scatter"
                            "(b, 'i', tiled=True), P(), P('i'))(a) ** 3))(m84)",
    "sm_grad_two_axes": "return jax.grad(lambda w, a: smap(lambda w, a: lax.psum(jnp.sum("
                        "jnp.sin(a * w)), ('x', 'y')), (P('y'), P('x', 'y')), P(), m=mesh22)"
                        "(w, a))(np.arange(4, dtype=np.float32) / 4.0, m44)",
    "sm_jvp": "return jax.jvp(smap(lambda a: lax.psum(jnp.sin(a), 'i'), P('i'), P()), (x8,), "
              "(jnp.ones(8, np.float32),))",
    "sm_vjp_jit": "out, f = jax.vjp(jax.jit(smap(lambda a: jnp.exp(a) * lax.axis_index('i'), "
                  "P('i'), P('i'))), x8)\nreturn out, f(jnp.arange(8.0, dtype=np.float32))",
    "sm_vmap": "return jax.vmap(smap(lambda a: lax.psum(a, 'i'), P('i'), P()))(m84.T)",
    "sm_vmap_in_axes": "return jax.vmap(smap(lambda a, w: a * w.sum(), (P('i'), P()), P('i')),"
                       " in_axes=(1, None))(m84, w43)",
    "sm_value_and_grad_jit": "return jax.jit(jax.value_and_grad(lambda w, a: smap(lambda w, a:"
                             " lax.pmean(jnp.sum(jnp.tanh(a @ w)), 'i'), (P(), P('i')), P())"
                             "(w, a)))(w43, m84)",
    # --- explicit mesh axes -------------------------------------------------------------------
    "sm_explicit_inferred": "xs = jax.device_put(x8, NamedSharding(emesh, P('i')))\n"
                            "return jax.shard_map(lambda a: lax.psum(a, 'i'), mesh=emesh, "
                            "out_specs=P())(xs)",
    "sm_explicit_matching": "xs = jax.device_put(m84, NamedSharding(emesh, P('i')))\n"
                            "return smap(lambda a: a * 2, P('i'), P('i'), m=emesh)(xs)",
    # --- errors ---------------------------------------------------------------------------
    "err_vma": "return smap(lambda a: a, P('i'), P())(x8)",
    "err_vma_all_gather": "return smap(lambda a: lax.all_gather(a, 'i', tiled=True), P('i'), "
                          "P())(x8)",
    "err_in_rank": "return smap(lambda a: a, P('i', None), P('i'))(x8)",
    "err_in_axis": "return smap(lambda a: a, P('j'), P('i'))(x8)",
    "err_indivisible": "return smap(lambda a: a, P('i'), P('i'))(np.arange(6.0, "
                       "dtype=np.float32))",
    "err_out_axis": "return smap(lambda a: a, P('i'), P('j'))(x8)",
    "err_out_rank": "return smap(lambda a: a, P('i'), P('i', None))(x8)",
    "err_out_scalar": "return smap(lambda a: a.sum(), P('i'), P('i'))(x8)",
    "err_no_mesh": "return jax.shard_map(lambda a: a, in_specs=P('i'), out_specs=P('i'))(x8)",
    "err_in_specs_tree": "return smap(lambda a, b: a, (P('i'),), P('i'))(x8, x8)",
    "err_auto_infer": "return jax.shard_map(lambda a: a, mesh=mesh, out_specs=P('i'))(x8)",
    "err_explicit_mismatch": "return smap(lambda a: a, P('i'), P('i'), m=emesh)(x8)",
    "err_not_callable": "return jax.shard_map(3, mesh=mesh, in_specs=P(), out_specs=P())",
}

SHARDED_JIT = {
    # --- data-parallel: batch split, parameters replicated (Explicit axes) ----------------
    "jit_dot": "xs = jax.device_put(m84, NamedSharding(emesh, P('i')))\n"
               "return jax.jit(lambda x, w: x @ w)(xs, w43)",
    "jit_sum_all": "xs = jax.device_put(m84, NamedSharding(emesh, P('i')))\n"
                   "return jax.jit(lambda x: x.sum())(xs)",
    "jit_sum_axes": "xs = jax.device_put(m84, NamedSharding(emesh, P('i')))\n"
                    "return jax.jit(lambda x: (x.sum(0), x.sum(1), x.max(0), x.min(1)))(xs)",
    "jit_mean_int": "xs = jax.device_put(np.arange(8, dtype=np.int32), NamedSharding(emesh, "
                    "P('i')))\nreturn jax.jit(lambda x: (jnp.mean(x), x.sum(), "
                    "jnp.all(x > 2), jnp.any(x > 6)))(xs)",
    "jit_elementwise_bias": "xs = jax.device_put(m84, NamedSharding(emesh, P('i')))\n"
                            "return jax.jit(lambda x, b: jnp.tanh(x * 2 + b) - 1)(xs, "
                            "np.arange(4, dtype=np.float32))",
    "jit_transpose": "xs = jax.device_put(m84, NamedSharding(emesh, P('i')))\n"
                     "return jax.jit(lambda x: (x.T, jnp.swapaxes(x * 2, 0, 1)))(xs)",
    "jit_reshape_flat": "xs = jax.device_put(m84, NamedSharding(emesh, P('i')))\n"
                        "return jax.jit(lambda x: x.reshape(32))(xs)",
    "jit_argmax_rows": "xs = jax.device_put(m84, NamedSharding(emesh, P('i')))\n"
                       "return jax.jit(lambda x: (jnp.argmax(x, 1), jnp.argmax(x, 0)))(xs)",
    "jit_mlp_grad": "xs = jax.device_put(m84, NamedSharding(emesh, P('i')))\n"
                    "yb = jax.device_put(ys, NamedSharding(emesh, P('i')))\n"
                    "ps = jax.device_put(params, NamedSharding(emesh, P()))\n"
                    "return jax.jit(jax.value_and_grad(mlp_loss))(ps, xs, yb)",
    "jit_mlp_step_set_mesh": "xs = jax.device_put(m84, NamedSharding(emesh, P('i')))\n"
                             "yb = jax.device_put(ys, NamedSharding(emesh, P('i')))\n"
                             "step = jax.jit(lambda p, x, y: jax.tree.map(lambda a, g: a - 0.1 "
                             "* g, p, jax.grad(mlp_loss)(p, x, y)), donate_argnums=0)\n"
                             "with jax.set_mesh(emesh):\n"
                             "    p = jax.device_put(params, P())\n"
                             "    for _ in range(3):\n"
                             "        p = step(p, xs, yb)\n"
                             "return p",
    "jit_mlp_grad_2d_mesh": "xs = jax.device_put(m84, NamedSharding(mesh22, P(('x', 'y'))))\n"
                            "yb = jax.device_put(ys, NamedSharding(mesh22, P(('x', 'y'))))\n"
                            "return jax.jit(jax.grad(mlp_loss))(params, xs, yb)",
    "jit_batch_x_model_y": "xs = jax.device_put(m84, NamedSharding(emesh22, P('x')))\n"
                           "ws = jax.device_put(m44, NamedSharding(emesh22, P(None, 'y')))\n"
                           "return jax.jit(lambda x, w: jnp.tanh(x @ w))(xs, ws)",
    "jit_in_shardings": "return jax.jit(lambda x: x * 2, in_shardings=NamedSharding(emesh, "
                        "P('i')))(x8)",
    "jit_out_shardings": "xs = jax.device_put(m84, NamedSharding(emesh, P('i')))\n"
                         "return jax.jit(lambda x: x * 2, out_shardings=NamedSharding(emesh, "
                         "P()))(xs)",
    "jit_out_shardings_split": "return jax.jit(lambda x: jnp.sin(x), out_shardings="
                               "NamedSharding(emesh, P(None, 'i')))(m84)",
    "jit_reshard_inside": "xs = jax.device_put(m84, NamedSharding(emesh, P('i')))\n"
                          "return jax.jit(lambda x: jax.reshard(x * 2, NamedSharding(emesh, "
                          "P())) + 1)(xs)",
    "jit_shardings_with_P": "with jax.set_mesh(emesh):\n"
                            "    return jax.jit(lambda x: x + 1, in_shardings=P('i'), "
                            "out_shardings=P())(x8)",
    "jit_replicated_only": "ws = jax.device_put(w43, NamedSharding(emesh, P()))\n"
                           "return jax.jit(lambda w: (w @ w.T).sum(0))(ws)",
    "jit_concat_pad_slice": "xs = jax.device_put(m84, NamedSharding(emesh, P('i')))\n"
                            "return jax.jit(lambda x: (jnp.concatenate([x, x * 2], 1), "
                            "jnp.pad(x, ((0, 0), (1, 2))), x[:, 1:3], x[:, ::-1]))(xs)",
    # --- Auto axes: the partitioner may gather ---------------------------------------------
    "jit_auto_cumsum": "xs = jax.device_put(m84, NamedSharding(mesh, P('i')))\n"
                       "return jax.jit(lambda x: jnp.cumsum(x, 0))(xs)",
    "jit_auto_sort": "xs = jax.device_put(x8[::-1].copy(), NamedSharding(mesh, P('i')))\n"
                     "return jax.jit(jnp.sort)(xs)",
    "jit_auto_mixed_splits": "a = jax.device_put(m44, NamedSharding(mesh, P('i')))\n"
                             "b = jax.device_put(m44, NamedSharding(mesh, P(None, 'i')))\n"
                             "return jax.jit(lambda a, b: a + b)(a, b)",
    "jit_auto_grad": "xs = jax.device_put(m84, NamedSharding(mesh, P('i')))\n"
                     "return jax.jit(jax.grad(mlp_loss))(params, xs, ys)",
    # --- global arrays from per-shard data ---------------------------------------------------
    "make_array_callback": "return jax.make_array_from_callback((8, 4), NamedSharding(mesh, "
                           "P('i')), lambda idx: m84[idx])",
    "make_array_callback_2d": "seen = []\n"
                              "def cb(idx):\n"
                              "    seen.append(tuple((s.start, s.stop) for s in idx))\n"
                              "    return m44[idx] * 2\n"
                              "out = jax.make_array_from_callback((4, 4), NamedSharding(mesh22, "
                              "P('x', 'y')), cb)\n"
                              "return [out, sorted(str(i) for i in seen)]",
    "make_array_callback_replicated": "return jax.make_array_from_callback((4, 3), NamedSharding("
                                      "emesh, P()), lambda idx: w43[idx])",
    "make_array_callback_split_dim1": "return jax.make_array_from_callback((8, 4), NamedSharding("
                                      "emesh22, P(None, 'y')), lambda idx: m84[idx] + 1)",
    "make_array_callback_int": "return jax.make_array_from_callback((8,), NamedSharding(mesh, "
                               "P('i')), lambda idx: np.arange(8, dtype=np.int32)[idx])",
    "make_array_callback_in_jit": "a = jax.make_array_from_callback((8, 4), NamedSharding(emesh, "
                                  "P('i')), lambda idx: m84[idx])\n"
                                  "return jax.jit(lambda x: (x * 2).sum(0))(a)",
    "make_array_single_device": "arrays = [jax.device_put(m84[2 * k:2 * k + 2], d) for k, d in "
                                "enumerate(mesh.devices.flat)]\n"
                                "return jax.make_array_from_single_device_arrays((8, 4), "
                                "NamedSharding(mesh, P('i')), arrays)",
    "make_array_single_device_2d": "sh = NamedSharding(mesh22, P('x', 'y'))\n"
                                   "idx = sh.addressable_devices_indices_map((4, 4))\n"
                                   "arrays = [jax.device_put(m44[idx[d]], d) for d in idx]\n"
                                   "return jax.make_array_from_single_device_arrays((4, 4), sh, "
                                   "arrays)",
    "make_array_process_local": "return jax.make_array_from_process_local_data(NamedSharding("
                                "mesh, P('i')), m84)",
    "make_array_process_local_shape": "return jax.make_array_from_process_local_data("
                                      "NamedSharding(emesh, P('i')), m84, (8, 4))",
    "err_make_array_callback_shape": "return jax.make_array_from_callback((8, 4), NamedSharding("
                                     "mesh, P('i')), lambda idx: m84)",
    "err_make_array_single_device_count": "arrays = [jax.device_put(m84[:2], d) for d in "
                                          "list(mesh.devices.flat)[:3]]\n"
                                          "return jax.make_array_from_single_device_arrays("
                                          "(8, 4), NamedSharding(mesh, P('i')), arrays)",
    "err_make_array_single_device_shape": "arrays = [jax.device_put(m84[:3], d) for d in "
                                          "mesh.devices.flat]\n"
                                          "return jax.make_array_from_single_device_arrays("
                                          "(8, 4), NamedSharding(mesh, P('i')), arrays)",
    "err_make_array_process_local_shape": "return jax.make_array_from_process_local_data("
                                          "NamedSharding(mesh, P('i')), m84, (16, 4))",
    # --- meshes, device_put, reshard --------------------------------------------------------
    "mesh_make_types": "m = jax.make_mesh((2, 2), ('a', 'b'), axis_types=(AxisType.Auto, "
                       "AxisType.Explicit))\nreturn [str(m), repr(m), str(m.abstract_mesh), "
                       "m.axis_names, list(m.axis_sizes), m.size, m.empty]",
    "mesh_set_mesh_context": "before = jax.sharding.get_abstract_mesh().empty\n"
                             "with jax.set_mesh(emesh):\n"
                             "    inside = str(jax.sharding.get_abstract_mesh())\n"
                             "return [before, inside, jax.sharding.get_abstract_mesh().empty, "
                             "repr(jax.sharding.get_mesh())]",
    "mesh_set_mesh_setter": "jax.set_mesh(mesh22)\nout = str(jax.sharding.get_abstract_mesh())"
                            "\njax.set_mesh(None)\nreturn [out, "
                            "jax.sharding.get_abstract_mesh().empty]",
    "device_put_P": "with jax.set_mesh(emesh):\n    return jax.device_put(m84, P(None, 'i'))",
    "reshard_eager": "return jax.reshard([x8, m84], NamedSharding(emesh, P('i')))",
    "reshard_P": "with jax.set_mesh(emesh22):\n    return jax.reshard(m44, P('y', 'x'))",
    "err_make_mesh_too_big": "return jax.make_mesh((8,), ('i',))",
    "err_make_mesh_types": "return jax.make_mesh((2, 2), ('i', 'j'), axis_types="
                           "(AxisType.Auto,))",
    "err_set_mesh_type": "return jax.set_mesh('mesh')",
    "err_device_put_P": "return jax.device_put(x8, P('i'))",
    "err_reshard_P": "return jax.reshard(x8, P('i'))",
    "err_reshard_indivisible": "return jax.reshard(np.arange(6.0), NamedSharding(emesh, "
                               "P('i')))",
    "err_jit_in_shardings_mismatch": "xs = jax.device_put(m84, NamedSharding(emesh, P('i')))\n"
                                     "return jax.jit(lambda x: x, in_shardings=NamedSharding("
                                     "emesh, P()))(xs)",
    "err_jit_P_no_mesh": "return jax.jit(lambda x: x, in_shardings=P('i'))(x8)",
    # --- host callbacks on split operands: gathered, called once, result replicated ---------
    "jit_pure_callback_split": "seen = []\n"
                               "def host(a):\n"
                               "    seen.append(np.asarray(a).shape)\n"
                               "    return (np.cos(np.asarray(a)) * 3).astype(np.float32)\n"
                               "xs = jax.device_put(m84, NamedSharding(emesh, P('i')))\n"
                               "sds = jax.ShapeDtypeStruct((8, 4), np.float32)\n"
                               "f = jax.jit(lambda x: jax.pure_callback(host, sds, x - 1) * x)\n"
                               "out = f(xs).block_until_ready()\n"
                               "red = jax.jit(lambda x: (jax.pure_callback(host, sds, x) * x)"
                               ".sum(0))(xs).block_until_ready()\n"
                               "return [out, red, str(seen)]",
    "jit_io_callback_split": "seen = []\n"
                             "def host(a, b):\n"
                             "    seen.append((np.asarray(a).shape, np.asarray(b).shape))\n"
                             "    return np.asarray(a)[:, :2] + np.asarray(b).sum()\n"
                             "io_callback = jax.experimental.io_callback\n"
                             "xs = jax.device_put(m84, NamedSharding(emesh, P('i')))\n"
                             "sds = jax.ShapeDtypeStruct((8, 2), np.float32)\n"
                             "out = jax.jit(lambda x: io_callback(host, sds, x, x.sum(1)))(xs)\n"
                             "return [np.asarray(out), str(seen)]",
    "err_jit_explicit_cumsum": "xs = jax.device_put(m84, NamedSharding(emesh, P('i')))\n"
                               "return jax.jit(lambda x: jnp.cumsum(x, 0))(xs)",
    "err_jit_explicit_mixed": "a = jax.device_put(m44, NamedSharding(emesh, P('i')))\n"
                              "b = jax.device_put(m44, NamedSharding(emesh, P(None, 'i')))\n"
                              "return jax.jit(lambda a, b: a + b)(a, b)",
}

CASES = {**SHARD_MAP, **SHARDED_JIT}

# JAX's exception types as recorded (its ShardingTypeError is no builtin subclass; corejax's
# is a NotImplementedError of that name).
_ERRORS = ("ShardingTypeError", "ValueError", "TypeError", "NameError", "IndexError",
           "RuntimeError", "NotImplementedError")


def describe(x, np):
    if isinstance(x, (tuple, list)):
        return [describe(v, np) for v in x]
    if isinstance(x, dict):
        return {k: describe(v, np) for k, v in sorted(x.items())}
    if isinstance(x, (str, bool, int)) or x is None:
        return {"text": x}
    sharding = getattr(x, "sharding", None)
    spec = getattr(sharding, "spec", None)
    value = np.asarray(x)
    return {"value": value.tolist(), "dtype": str(value.dtype), "shape": list(value.shape),
            "spec": None if spec is None else [None if p is None else str(p) for p in spec]}


def run_case(name, env, cases=None, prelude=PRELUDE, errors=_ERRORS, name_any_error=False):
    """Runs case `name` of `cases` (default: this file's) with `env`'s names bound; the golden
    result is its described value, or the first of its exception's classes named in `errors`
    (with `name_any_error`, the exception's own class name when none is)."""
    cases = CASES if cases is None else cases
    scope = dict(env)
    exec(prelude, scope)
    src = "def _case():\n" + "\n".join("    " + line for line in cases[name].strip()
                                      .splitlines())
    exec(src, scope)
    try:
        out = scope["_case"]()
    except Exception as e:  # noqa: BLE001 - the exception type is the golden result
        names = [c.__name__ for c in type(e).__mro__ if c.__name__ in errors][:1]
        return {"raises": names or ([type(e).__name__] if name_any_error else [])}
    finally:
        env["jax"].set_mesh(None)
    return describe(out, env["np"])


def main(cases=None, prelude=PRELUDE, out=OUT, errors=_ERRORS, name_any_error=False):
    """Records `cases` (default: this file's) with JAX on 4 host devices into `out`."""
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
    import warnings
    warnings.simplefilter("ignore", DeprecationWarning)
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax import lax
    from jax.sharding import AxisType, NamedSharding, PartitionSpec
    env = {"jax": jax, "jnp": jnp, "lax": lax, "np": np, "P": PartitionSpec,
           "NamedSharding": NamedSharding, "AxisType": AxisType}
    cases = CASES if cases is None else cases
    results = {name: run_case(name, env, cases, prelude, errors, name_any_error)
               for name in cases}
    with open(out, "w") as f:
        json.dump({"jax_version": jax.__version__, "cases": results}, f, indent=0,
                  sort_keys=True)
    print(f"wrote {out}: {len(results)} cases")


if __name__ == "__main__":
    main()
