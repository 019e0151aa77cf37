"""Programs for jax.checkpoint, written once against the names `jax`, `jnp`, `lax` and the
`ad_checkpoint` module, run by gen_checkpoint.py under real JAX (golden_checkpoint.json) and by
test_checkpoint.py under corejax.

For each program the suite compares what the backward pass keeps (print_saved_residuals'
lines without their source locations, as a sorted list) and the derivatives (grad, jit(grad),
vmap(grad), jacfwd(grad)). Imports only numpy and the standard library."""
import numpy as np

# JAX 0.10.2's save_anything_except_these_names saves everything (its policy returns True for
# every equation), unlike its documentation ("excluding the names given"); corejax follows the
# documentation, so the residuals of programs using it are not compared.
RESIDUALS_DIFFER = {"g_except_z"}
# Residuals outside a checkpoint are whatever each primitive's JVP rule keeps (tanh's rule saves
# its output in both, JAX's scan also saves a stacked copy ...): an implementation choice, not
# a policy's. These programs compare derivatives only.
NOT_POLICY_DETERMINED = {"mlp_plain", "scanned", "nested", "static_arg"}


def build(jax, jnp, lax, adc):
    """{name: (function of (W, x), W, x)}."""
    cp = jax.checkpoint_policies

    def g(W, x):
        y = jnp.dot(W, x)
        z = adc.checkpoint_name(jnp.sin(y), "z")
        return jnp.sum(jnp.sin(jnp.dot(W, z)))

    def h(W, x):
        y = jnp.dot(W, x)
        z = adc.checkpoint_name(jnp.sin(y), "z")
        return jnp.sum(z * z) + jnp.sum(jnp.tanh(y) * x)

    def mlp(W, x):
        for i in range(3):
            x = jnp.tanh(adc.checkpoint_name(jnp.dot(W, x) * (i + 1.0), f"layer{i}"))
        return jnp.sum(x ** 2)

    def batched(W, x):  # a dot with batch dimensions (W: [2, 3, 3], x: [2, 3])
        y = jnp.einsum("bij,bj->bi", W, x)
        return jnp.sum(jnp.sin(y) * jnp.exp(jnp.einsum("bij,bi->bj", W, jnp.cos(y))))

    def scanned(W, x):
        body = jax.checkpoint(lambda c, _: (jnp.sin(jnp.dot(W, c)), jnp.sum(c)))
        c, ys = lax.scan(body, x, None, length=3)
        return jnp.sum(c) + jnp.sum(ys ** 2)

    def nested(W, x):
        inner = jax.checkpoint(lambda v: jnp.sin(jnp.dot(W, v)) * v)
        return jnp.sum(jnp.cos(inner(inner(x))))

    def static_arg(W, x):
        f = jax.checkpoint(lambda v, n: jnp.sin(v) ** n, static_argnums=(1,))
        return jnp.sum(f(jnp.dot(W, x), 3))

    rng = np.random.default_rng(0)
    W = jnp.asarray(rng.standard_normal((3, 3)).astype(np.float32) * 0.5)
    x = jnp.asarray(rng.standard_normal(3).astype(np.float32))
    Wb = jnp.asarray(rng.standard_normal((2, 3, 3)).astype(np.float32) * 0.5)
    xb = jnp.asarray(rng.standard_normal((2, 3)).astype(np.float32))
    both = cp.save_from_both_policies(cp.save_only_these_names("layer0"),
                                      cp.save_only_these_names("layer2"))
    return {
        "g_plain": (g, W, x),
        "g_remat": (jax.checkpoint(g), W, x),
        "g_remat_alias": (jax.remat(g), W, x),
        "g_nothing": (jax.checkpoint(g, policy=cp.nothing_saveable), W, x),
        "g_everything": (jax.checkpoint(g, policy=cp.everything_saveable), W, x),
        "g_dots": (jax.checkpoint(g, policy=cp.dots_saveable), W, x),
        "g_checkpoint_dots": (jax.checkpoint(g, policy=cp.checkpoint_dots), W, x),
        "g_dots_nobatch": (jax.checkpoint(g, policy=cp.dots_with_no_batch_dims_saveable), W, x),
        "g_names_z": (jax.checkpoint(g, policy=cp.save_only_these_names("z")), W, x),
        "g_names_other": (jax.checkpoint(g, policy=cp.save_only_these_names("q")), W, x),
        "g_any_names_but_z": (jax.checkpoint(g, policy=cp.save_any_names_but_these("z")), W, x),
        "g_except_z": (jax.checkpoint(g, policy=cp.save_anything_except_these_names("z")), W, x),
        "g_sin_only": (jax.checkpoint(g, policy=lambda prim, *_, **__: prim.name == "sin"), W, x),
        "h_remat": (jax.checkpoint(h), W, x),
        "h_dots": (jax.checkpoint(h, policy=cp.dots_saveable), W, x),
        "h_names_z": (jax.checkpoint(h, policy=cp.save_only_these_names("z")), W, x),
        "mlp_plain": (mlp, W, x),
        "mlp_remat": (jax.checkpoint(mlp), W, x),
        "mlp_dots": (jax.checkpoint(mlp, policy=cp.dots_saveable), W, x),
        "mlp_both": (jax.checkpoint(mlp, policy=both), W, x),
        "mlp_offload": (jax.checkpoint(mlp, policy=cp.save_and_offload_only_these_names(
            names_which_can_be_saved=["layer1"], names_which_can_be_offloaded=[],
            offload_src="device", offload_dst="pinned_host")), W, x),
        "batched_dots": (jax.checkpoint(batched, policy=cp.dots_saveable), Wb, xb),
        "batched_dots_nobatch": (
            jax.checkpoint(batched, policy=cp.dots_with_no_batch_dims_saveable), Wb, xb),
        "scanned": (scanned, W, x),
        "nested": (nested, W, x),
        "nested_outer": (jax.checkpoint(nested), W, x),
        "static_arg": (static_arg, W, x),
    }


def derivatives(jax, fn, W, x):
    """The derivatives compared with JAX's."""
    return {
        "value": fn(W, x),
        "grad": jax.grad(fn, argnums=(0, 1))(W, x),
        "jit_grad": jax.jit(jax.grad(fn, argnums=(0, 1)))(W, x),
        "vmap_grad": jax.vmap(jax.grad(fn, argnums=1), in_axes=(None, 0))(W, jax.numpy.stack(
            [x, x * 0.5])),
        "hessian_x": jax.jacfwd(jax.grad(fn, argnums=1), argnums=1)(W, x),
    }


def normalize_residuals(text):
    """print_saved_residuals' lines without source locations (" from file:line (fn)")."""
    out = []
    for line in text.splitlines():
        head, sep, _ = line.partition(" from ")
        if sep and not line.partition(" from ")[2].startswith(("the argument", "a constant")):
            line = head
        out.append(line)
    return sorted(out)
