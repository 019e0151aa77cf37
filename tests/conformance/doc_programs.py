"""Whole programs in the idioms of JAX's documentation (the autodiff cookbook, custom
derivative rules, control flow, PRNG, indexing updates), written once against the names
`jax`, `jnp`, `lax`, `random`, so that the same text runs under real JAX (gen_doc_programs.py
records the golden values) and under corejax (test_doc_programs.py compares with them).

Imports only numpy and the standard library."""
from functools import partial


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

    return programs
