"""Whole programs in the idioms of JAX's documentation (the autodiff cookbook, custom
derivative rules, control flow, PRNG, indexing updates), written once against the names
`jax`, `jnp`, `lax`, `random`, so that the same text runs under real JAX (gen_doc_programs.py
records the golden values) and under corejax (test_doc_programs.py compares with them).

Imports only numpy and the standard library."""
from functools import partial

import numpy as np


def build(jax, jnp, lax, random):
    """Returns {name: thunk}: each thunk runs one program and returns a pytree of arrays."""
    programs = {}

    def rec(name, fn):
        assert name not in programs, name
        programs[name] = fn

    def predict(W, b, inputs):
        return jax.nn.sigmoid(jnp.dot(inputs, W) + b)
    inputs = jnp.array([[0.52, 1.12, 0.77], [0.88, -1.08, 0.15], [0.52, 0.06, -1.30], [0.74, -2.49, 1.39]])
    targets = jnp.array([True, True, False, True])
    def loss(W, b):
        preds = predict(W, b, inputs)
        label_probs = preds * targets + (1 - preds) * (1 - targets)
        return -jnp.sum(jnp.log(label_probs))
    W = jnp.array([0.1, -0.2, 0.3]); b = 0.5
    rec("cookbook_grad", lambda: jax.grad(loss, (0, 1))(W, b))
    rec("tanh3", lambda: jax.grad(jax.grad(jax.grad(jnp.tanh)))(2.0))
    rec("jacfwd", lambda: jax.jacfwd(predict, argnums=0)(W, b, inputs))
    rec("jacrev", lambda: jax.jacrev(predict, argnums=0)(W, b, inputs))
    rec("hessian", lambda: jax.hessian(lambda W: loss(W, b))(W))
    def hvp(f, x, v): return jax.grad(lambda x: jnp.vdot(jax.grad(f)(x), v))(x)
    rec("hvp", lambda: hvp(lambda W: loss(W, b), W, jnp.ones(3)))
    rec("hvp_fwd", lambda: jax.jvp(jax.grad(lambda W: loss(W, b)), (W,), (jnp.ones(3),))[1])
    rec("per_example", lambda: jax.vmap(jax.grad(lambda W, x, y: -jnp.log(jnp.where(y, predict(W, b, x), 1 - predict(W, b, x)))), in_axes=(None, 0, 0))(W, inputs, targets))
    rec("vg_aux", lambda: jax.value_and_grad(lambda W: (loss(W, b), {"p": predict(W, b, inputs)}), has_aux=True)(W))
    rec("linearize", lambda: jax.linearize(jnp.sin, 3.0)[1](2.0))
    rec("stopgrad", lambda: jax.grad(lambda x: x * lax.stop_gradient(x) ** 2)(3.0))
    @jax.custom_jvp
    def log1pexp(x): return jnp.log(1. + jnp.exp(x))
    log1pexp.defjvps(lambda t, ans, x: t * (1 - 1 / (1 + jnp.exp(x))))
    rec("log1pexp", lambda: jax.jit(jax.grad(log1pexp))(100.))
    rec("log1pexp_vmap", lambda: jax.vmap(jax.jit(jax.grad(log1pexp)))(jnp.arange(3.)))
    @jax.custom_vjp
    def clip_gradient(lo, hi, x): return x
    clip_gradient.defvjp(lambda lo, hi, x: (x, (lo, hi)), lambda res, g: (None, None, jnp.clip(g, *res)))
    rec("clip_gradient", lambda: jax.grad(lambda x: clip_gradient(-0.75, 0.75, jnp.sin(x)))(2.0))
    rec("clip_gradient_vmap", lambda: jax.vmap(jax.grad(lambda x: clip_gradient(-0.75, 0.75, jnp.sin(x) * 3)))(jnp.arange(3.)))
    rec("scan_cumsum", lambda: lax.scan(lambda c, x: (c + x, c * 2), 0., jnp.arange(5.)))
    rec("grad_scan", lambda: jax.grad(lambda a: lax.scan(lambda c, x: (c * a + x, c), 1., jnp.arange(4.))[0])(1.5))
    rec("fori", lambda: jax.grad(lambda x: lax.fori_loop(0, 3, lambda i, v: v * x + i, 1.0))(2.0))
    rec("cond_grad", lambda: jax.grad(lambda x: lax.cond(x > 0, jnp.sin, jnp.cos, x))(1.0))
    rec("switch_vmap", lambda: jax.vmap(lambda i, x: lax.switch(i, [jnp.sin, jnp.cos, jnp.tanh], x))(jnp.array([0, 1, 2]), jnp.ones(3)))
    rec("while", lambda: lax.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 1, c[1] * 1.5), (0, 1.0)))
    rec("random_normal", lambda: random.normal(random.PRNGKey(0), (3,)))
    rec("random_split", lambda: random.split(random.PRNGKey(42)))
    rec("random_uniform", lambda: random.uniform(random.PRNGKey(1), (2, 2), minval=-1, maxval=1))
    rec("random_perm", lambda: random.permutation(random.PRNGKey(3), 6))
    rec("random_cat", lambda: random.categorical(random.PRNGKey(4), jnp.array([0.1, 0.5, 0.2]), shape=(5,)))
    rec("random_bern", lambda: random.bernoulli(random.PRNGKey(5), 0.3, (6,)))
    rec("at_set", lambda: jnp.zeros(5).at[jnp.array([1, 3])].add(jnp.array([1., 2.])))
    rec("grad_at", lambda: jax.grad(lambda x: jnp.sum(x.at[1:3].multiply(x[0]) ** 2))(jnp.arange(1., 5.)))
    rec("softmax_xent", lambda: jax.grad(lambda l: -jnp.sum(jax.nn.log_softmax(l) * jax.nn.one_hot(jnp.array([1, 0]), 3)))(jnp.array([[1., 2., 3.], [1., 0., -1.]])))
    rec("logsumexp", lambda: jax.jit(jax.grad(lambda x: jax.nn.logsumexp(x ** 2.)))(jnp.arange(3.)))
    rec("norm_grad", lambda: jax.grad(lambda x: jnp.sqrt(jnp.sum(x ** 2)))(jnp.array([3., 4.])))
    rec("max_tie", lambda: jax.grad(lambda x: jnp.max(x))(jnp.array([1., 3., 3.])))
    rec("maximum_tie", lambda: jax.grad(lambda x: jnp.sum(jnp.maximum(x, 1.)))(jnp.array([1., 3., 0.])))
    rec("sort_grad", lambda: jax.grad(lambda x: jnp.sum(jnp.sort(x) * jnp.arange(3.)))(jnp.array([3., 1., 2.])))
    rec("cumsum_grad", lambda: jax.grad(lambda x: jnp.sum(jnp.cumsum(x) ** 2))(jnp.arange(3.)))
    rec("einsum", lambda: jax.grad(lambda a: jnp.einsum("ij,jk->", a, a))(jnp.arange(4.).reshape(2, 2)))
    rec("where_keep", lambda: jnp.sum(jnp.arange(6.).reshape(2, 3), axis=1, keepdims=True, where=jnp.array([True, False, True])))
    rec("mean_grad", lambda: jax.grad(lambda x: jnp.mean(x, where=x > 1))(jnp.arange(4.)))
    rec("var", lambda: jax.grad(lambda x: jnp.var(x))(jnp.arange(4.)))
    rec("clip", lambda: jax.grad(lambda x: jnp.sum(jnp.clip(x, 1., 2.)))(jnp.array([0.5, 1., 1.5, 2., 3.])))
    rec("jit_static", lambda: jax.jit(lambda x, n: x ** n, static_argnums=1)(2., 3))
    rec("hessian_dict", lambda: jax.hessian(lambda d: d["a"] ** 3 * d["b"])({"a": 2., "b": 3.}))
    rec("jacrev_jit_vmap", lambda: jax.jit(jax.vmap(jax.jacrev(lambda x: jnp.sin(x) * x)))(jnp.ones((2, 3))))
    rec("int_pow_grad", lambda: jax.grad(lambda x: jnp.sum(x ** 3))(jnp.array([-1., 0., 2.])))
    rec("sqrt_grad0", lambda: jax.grad(lambda x: jnp.sum(x ** 0.5))(jnp.array([1., 4.])))
    rec("pow_xy", lambda: jax.grad(lambda x, y: x ** y, argnums=(0, 1))(0., 2.))
    rec("abs_grad0", lambda: jax.grad(jnp.abs)(0.))
    rec("relu_grad0", lambda: jax.grad(jax.nn.relu)(0.))
    rec("gelu", lambda: jax.grad(jax.nn.gelu)(0.5))
    rec("gelu_exact", lambda: jax.grad(partial(jax.nn.gelu, approximate=False))(0.5))
    rec("silu", lambda: jax.vmap(jax.grad(jax.nn.silu))(jnp.linspace(-2, 2, 5)))
    rec("softplus", lambda: jax.nn.softplus(jnp.array([-100., 0., 100.])))
    rec("integer_div", lambda: (jnp.array([7, -7]) // 2, jnp.array([7, -7]) % 3, jnp.array([7., -7.]) % 3))
    rec("round", lambda: jnp.round(jnp.array([0.5, 1.5, 2.5, -0.5])))
    rec("argmax", lambda: jnp.argmax(jnp.array([[1, 3, 3], [2, 0, 2]]), axis=1))
    rec("linspace", lambda: jnp.linspace(0, 1, 5))
    rec("arange_f", lambda: jnp.arange(0, 1, 0.25))
    rec("astype", lambda: jnp.array([1.7, -1.7]).astype(jnp.int32))
    rec("uint8", lambda: jnp.array([250], jnp.uint8) + 10)

    # --- batch 2: vmap axes, pytrees, jit options, dtypes, nn functions ----------------------
    rec("vmap_out_axes", lambda: jax.vmap(lambda x: x * 2, in_axes=1, out_axes=1)(
        jnp.arange(6.).reshape(2, 3)))
    rec("vmap_dict_axes", lambda: jax.vmap(lambda d: d["a"] + d["b"], in_axes=({"a": 0, "b": None},))(
        {"a": jnp.arange(3.), "b": 1.0}))
    rec("vmap_nested", lambda: jax.vmap(jax.vmap(lambda a, b: a * b, (0, None)), (None, 0))(
        jnp.arange(3.), jnp.arange(2.)))
    rec("vmap_matmul", lambda: jax.vmap(jnp.dot, (0, None))(jnp.ones((4, 2, 3)), jnp.ones((3, 5))))
    rec("jit_static_name", lambda: jax.jit(lambda x, n: jnp.sum(x[:n]), static_argnames="n")(
        jnp.arange(5.), n=3))
    rec("jit_pytree_out", lambda: jax.jit(lambda x: {"s": x.sum(), "t": (x, x * 2)})(jnp.ones(2)))
    rec("grad_pytree", lambda: jax.grad(lambda p: jnp.sum(p["w"] ** 2) + p["b"][0] * 3.)(
        {"w": jnp.arange(3.), "b": [2., 1.]}))
    rec("tree_map", lambda: jax.tree_util.tree_map(lambda a, b: a * b, {"x": 1., "y": (2., 3.)},
                                                   {"x": 4., "y": (5., 6.)}))
    rec("weak_add", lambda: (jnp.float32(1) + 1, jnp.int32(1) + 1.5, jnp.ones(2, jnp.float16) + 1.0,
                             jnp.uint8(3) * 2, 2 * jnp.arange(3), jnp.arange(3) / 2))
    rec("int_mean", lambda: (jnp.mean(jnp.arange(4)), jnp.sum(jnp.arange(4)), jnp.prod(jnp.arange(1, 4)),
                             jnp.sum(jnp.ones(3, jnp.bool_)), jnp.cumsum(jnp.ones(3, jnp.int8))))
    rec("f16", lambda: (jnp.exp(jnp.ones(2, jnp.float16)), jnp.sum(jnp.ones(5, jnp.float16) * 0.1),
                        jax.grad(lambda x: jnp.sum(jnp.tanh(x)))(jnp.ones(2, jnp.float16))))
    rec("nn_funcs", lambda: [f(jnp.linspace(-3., 3., 7)) for f in (
        jax.nn.relu, jax.nn.relu6, jax.nn.sigmoid, jax.nn.softplus, jax.nn.silu, jax.nn.elu,
        jax.nn.leaky_relu, jax.nn.gelu, jax.nn.hard_tanh, jax.nn.log_sigmoid, jax.nn.selu,
        jax.nn.celu, jax.nn.hard_sigmoid, jax.nn.soft_sign)])
    rec("nn_grads", lambda: [jax.vmap(jax.grad(f))(jnp.linspace(-3., 3., 7)) for f in (
        jax.nn.relu, jax.nn.sigmoid, jax.nn.softplus, jax.nn.elu, jax.nn.leaky_relu,
        jax.nn.log_sigmoid, jax.nn.selu)])
    rec("softmax_axis", lambda: (jax.nn.softmax(jnp.arange(6.).reshape(2, 3), axis=0),
                                 jax.nn.log_softmax(jnp.arange(6.).reshape(2, 3))))
    rec("one_hot", lambda: (jax.nn.one_hot(jnp.array([0, 2, -1, 3]), 3),
                            jax.nn.one_hot(jnp.array([1]), 2, dtype=jnp.int32)))
    rec("standardize", lambda: jax.nn.standardize(jnp.arange(6.).reshape(2, 3), axis=-1))
    rec("logsumexp_b", lambda: jax.nn.logsumexp(jnp.arange(4.), b=jnp.array([1., 2., 0., 1.])))
    rec("split_key_data", lambda: random.split(random.PRNGKey(7), 3))
    rec("random_normal_f16", lambda: random.normal(random.PRNGKey(2), (3,), dtype=jnp.float16))
    rec("random_randint", lambda: random.randint(random.PRNGKey(8), (6,), 0, 10))
    rec("random_choice", lambda: random.choice(random.PRNGKey(9), 10, (4,), replace=False))
    rec("random_fold_in", lambda: random.normal(random.fold_in(random.PRNGKey(0), 3), (2,)))
    rec("random_truncated", lambda: random.truncated_normal(random.PRNGKey(10), -1., 1., (4,)))
    rec("random_gumbel", lambda: random.gumbel(random.PRNGKey(11), (3,)))
    rec("random_shuffle_axis", lambda: random.permutation(random.PRNGKey(12),
                                                          jnp.arange(6).reshape(3, 2), axis=1))
    rec("take_along", lambda: jnp.take_along_axis(jnp.arange(6.).reshape(2, 3),
                                                  jnp.array([[2], [0]]), axis=1))
    rec("argsort_stable", lambda: jnp.argsort(jnp.array([3, 1, 3, 0, 1])))
    rec("sort_nan", lambda: jnp.sort(jnp.array([3., jnp.nan, 1., -jnp.inf])))
    rec("max_nan", lambda: (jnp.max(jnp.array([1., jnp.nan])), jnp.maximum(jnp.nan, 1.),
                            jnp.argmax(jnp.array([1., jnp.nan, 3.]))))
    rec("clip_int", lambda: jnp.clip(jnp.arange(6), 1, 4))
    rec("where_1arg", lambda: jnp.where(jnp.array([0, 1, 1]) > 0, 1., 0))
    rec("concat_promote", lambda: jnp.concatenate([jnp.arange(2), jnp.ones(2)]))
    rec("stack_grad", lambda: jax.grad(lambda x: jnp.sum(jnp.stack([x, x ** 2]) * jnp.array([[1.], [2.]])))(
        jnp.arange(3.)))
    rec("reshape_T", lambda: jnp.arange(6).reshape(2, 3).T.reshape(-1))
    rec("squeeze_expand", lambda: jnp.expand_dims(jnp.squeeze(jnp.ones((1, 3, 1))), (0, 2)).shape and
        jnp.expand_dims(jnp.squeeze(jnp.ones((1, 3, 1))), (0, 2)))
    rec("index_neg", lambda: (jnp.arange(5)[-2:], jnp.arange(5)[::-2], jnp.arange(12).reshape(3, 4)[1:, ::2]))
    rec("index_bool_static", lambda: jnp.arange(4.)[np.array([True, False, True, False])])
    rec("at_min_max", lambda: (jnp.ones(4).at[jnp.array([0, 0, 2])].min(jnp.array([0.5, -1., 3.])),
                               jnp.zeros(3).at[1].set(5.).at[::2].add(1.)))
    rec("at_grad_set", lambda: jax.grad(lambda x, v: jnp.sum(x.at[1].set(v) ** 2), (0, 1))(jnp.ones(3), 3.))
    rec("dynamic_slice", lambda: jax.grad(lambda x, i: jnp.sum(lax.dynamic_slice(x, (i,), (2,)) ** 2))(
        jnp.arange(5.), 2))
    rec("scan_reverse", lambda: lax.scan(lambda c, x: (c + x, c), 0., jnp.arange(4.), reverse=True))
    rec("scan_vmap_grad", lambda: jax.vmap(jax.grad(lambda a: lax.scan(
        lambda c, x: (jnp.sin(c) * a + x, None), 0.5, jnp.arange(3.))[0]))(jnp.array([0.5, 1.0])))
    rec("fori_vmap", lambda: jax.vmap(lambda n: lax.fori_loop(0, n, lambda i, c: c + i, 0))(jnp.arange(4)))
    rec("cond_vmap_grad", lambda: jax.vmap(jax.grad(lambda x: lax.cond(x > 0.5, lambda v: v ** 2,
                                                                       lambda v: -v, x)))(jnp.arange(3.) / 2))
    rec("jit_grad_jit_grad", lambda: jax.jit(jax.grad(jax.jit(jax.grad(lambda x: x ** 3))))(2.))
    rec("jacfwd_jit_vmap_pow", lambda: jax.jacfwd(jax.jit(jax.vmap(lambda x: x ** 2.)))(jnp.arange(3.)))
    rec("hessian_jit_pow", lambda: jax.jit(jax.hessian(lambda x: jnp.sum(x ** 2.5)))(jnp.array([1., 2.])))

    # Found by the composition fuzzer (fixed): a defjvps rule differentiated twice must use the
    # rule again (relu's kink), and a batched custom_vjp's cotangent keeps the input's batch axis
    rec("relu_times_x_2nd", lambda: (jax.grad(jax.grad(lambda a: jax.nn.relu(a) * a))(0.),
                                     jax.grad(jax.grad(lambda a: jax.nn.relu(a) * a))(1.5)))
    @jax.custom_vjp
    def sin_scale(x, y): return jnp.sin(x) * y
    sin_scale.defvjp(lambda x, y: (sin_scale(x, y), (jnp.cos(x), jnp.sin(x), y)),
                     lambda res, g: (res[0] * g * res[2], res[1] * g))
    xs = jnp.arange(6.).reshape(3, 2) / 4
    rec("custom_vjp_vmap_axis1", lambda: jax.grad(lambda x, y: jnp.sum(jax.vmap(
        sin_scale, in_axes=(1, None))(x, y)), argnums=(0, 1))(xs, jnp.arange(1., 4.)))
    rec("custom_vjp_vmap_jit_nested", lambda: jax.vmap(jax.jit(jax.grad(
        lambda x, y: jnp.sum(jax.vmap(sin_scale, in_axes=(1, None))(x, y)), argnums=(0, 1))),
        in_axes=(2, None))(jnp.stack([xs, xs * 2], 2), jnp.arange(1., 4.)))
    # jacfwd runs fun once (its primal output is an unbatched output of the vmap); each block
    # takes the output leaf's (jacfwd) / input leaf's (jacrev) dtype and weak type
    def half_and_sum(x): return (jnp.sin(x) * 2).astype(jnp.float16), {"a": x.sum()}
    rec("jacfwd_float16_out", lambda: jax.jacfwd(half_and_sum)(jnp.arange(3.)))
    rec("jacrev_float16_out", lambda: jax.jacrev(half_and_sum)(jnp.arange(3.)))
    rec("jacfwd_aux", lambda: jax.jacfwd(half_and_sum, has_aux=True)(jnp.arange(3.)))
    rec("jac_weak_scalar", lambda: (jax.jacfwd(lambda a, b: a * b, argnums=(0, 1))(2., jnp.ones(2)),
                                    jax.jacrev(lambda a, b: a * b, argnums=(0, 1))(2., jnp.ones(2)),
                                    jax.hessian(lambda a: a ** 3)(2.)))
    rec("jacfwd_int_input", lambda: jax.jacfwd(lambda v: v * 2)(jnp.arange(3)))
    rec("jacrev_int_input", lambda: jax.jacrev(lambda v: v * 2.)(jnp.arange(3)))
    rec("jacrev_bool_output", lambda: jax.jacrev(lambda v: v > 0)(jnp.ones(2)))
    rec("vmap_jit_unbatched_out", lambda: jax.vmap(jax.jit(lambda x, c: (x * c, c * 2)),
                                                   in_axes=(0, None), out_axes=(0, None))(
        jnp.arange(3.), 1.5))
    # a weak carry's cotangent sums weak and strong parts: its weak type follows JAX's order
    def scan_weak(a0):
        def body(carry, x):
            a, acc = carry
            y = a ** 3. - a
            return (a * 0.9 + 0.1 * x, acc + y), y
        (a, acc), ys = lax.scan(body, (a0, jnp.zeros((), jnp.float32)), jnp.arange(2.) / 2)
        return acc + 0.5 * ys[-1]
    rec("grad_scan_weak_carry", lambda: jax.grad(scan_weak)(0.691))
    # a custom_jvp rule that applies a custom function to its tangents: reverse mode then
    # transposes that function's body (the custom rule plays no part there, as in JAX)
    @jax.custom_jvp
    def double(x): return x * 2.0
    double.defjvp(lambda p, t: (double(p[0]), double(t[0])))
    rec("custom_jvp_on_tangents", lambda: (
        jax.grad(double)(1.5), jax.grad(lambda x: jax.jvp(double, (x,), (x,))[1])(1.5),
        jax.grad(lambda x: jax.jvp(lambda y: double(y) ** 2, (x,), (1.0,))[1])(1.5),
        jax.vjp(lambda t: jax.jvp(double, (1.0,), (t,))[1], 2.0)[1](1.0),
        jax.linear_transpose(double, 1.0)(1.0),
        jax.jit(jax.grad(lambda x: double(x) * x))(0.5)))

    # The cookbook's holomorphic gradient through a complex Cholesky factorization: a 3x3
    # Hermitian positive definite matrix, f(H) = sum((L - sin L)^2) with L = cholesky(H).
    herm = jnp.array([[6., 1. - 2j, 3j], [1. + 2j, 8., 2. + 1j], [-3j, 2. - 1j, 10.]])

    def chol_energy(h):
        factor = jnp.linalg.cholesky(h)
        return jnp.sum((factor - jnp.sin(factor)) ** 2)
    rec("cookbook_holomorphic_cholesky", lambda: jax.grad(chol_energy, holomorphic=True)(herm))
    rec("holomorphic_cholesky_jit_vmap", lambda: jax.jit(jax.vmap(
        jax.grad(chol_energy, holomorphic=True)))(jnp.stack([herm, herm * 2 + jnp.eye(3)])))
    rec("holomorphic_cholesky_logdet", lambda: jax.grad(
        lambda h: 2 * jnp.sum(jnp.log(jnp.diagonal(jnp.linalg.cholesky(h)))),
        holomorphic=True)(herm))

    return programs
