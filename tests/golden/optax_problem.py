"""The small problem the wrapper and contrib golden trajectories are recorded on, written once
for both sides: `run` takes the library modules (optax + jax, or optim + corejax) as arguments,
so tests/golden/gen_optax_{wrappers,contrib}.py (real Optax) and tests/test_optim_{wrappers,
contrib}.py (optim) execute the very same steps. No jax import here.

Problem: params {"w": (3, 2), "b": (2,)}; loss = mean((x @ w + b - y)^2) + 0.05 * sum(w^4) on
fixed x (4, 3), y (4, 2). A case is a dict: "build" (ox, jnp) -> transform; optional "extra"
(names of update keyword arguments to pass: "value" the loss, "obj_fn" the loss function),
"nan_steps" (steps whose gradient of "b" is NaN), "lookahead" (params are LookaheadParams),
"abs_params" (start from |params|), "per_example" (gradients with a leading batch axis of 4,
one per row of x), "steps" (10 by default).
"""
import numpy as np

STEPS = 10


def problem_data():
    rng = np.random.default_rng(28)
    x = rng.normal(size=(4, 3)).astype(np.float32)
    y = rng.normal(size=(4, 2)).astype(np.float32)
    params = {"w": rng.normal(size=(3, 2)).astype(np.float32),
              "b": rng.normal(size=(2,)).astype(np.float32)}
    return x, y, params


def make_loss(jnp, x, y):
    def loss(p, xb=x, yb=y):
        pred = xb @ p["w"] + p["b"]
        return jnp.mean((pred - yb) ** 2) + 0.05 * jnp.sum(p["w"] ** 4)
    return loss


def run(case, ox, jax, jnp, x, y, params, jit=False):
    """Leaves of the params after each step (a list of lists of arrays), the final state's
    leaves with their paths, and the losses."""
    jnp_x, jnp_y = jnp.asarray(x), jnp.asarray(y)
    loss = make_loss(jnp, jnp_x, jnp_y)
    params = jax.tree_util.tree_map(jnp.asarray, params)
    if case.get("abs_params"):
        params = jax.tree_util.tree_map(jnp.abs, params)
    opt = case["build"](ox, jnp)
    lookahead = case.get("lookahead", False)
    if lookahead:
        params = ox.LookaheadParams.init_synced(params)
    state = opt.init(params)
    nan_steps = case.get("nan_steps", ())

    def step(params, state, poison):
        fast = params.fast if lookahead else params
        value, grads = jax.value_and_grad(loss)(fast)
        if case.get("per_example"):
            grads = jax.vmap(lambda xb, yb: jax.grad(loss)(fast, xb[None], yb[None]))(
                jnp_x, jnp_y)
        grads = dict(grads, b=grads["b"] + poison)
        extra = {}
        if "value" in case.get("extra", ()):
            extra["value"] = value
        if "obj_fn" in case.get("extra", ()):
            extra["obj_fn"] = loss
        updates, state = opt.update(grads, state, params, **extra)
        return ox.apply_updates(params, updates), state, value

    if jit:
        step = jax.jit(step)
    trajectory, losses = [], []
    for i in range(case.get("steps", STEPS)):
        poison = jnp.asarray(np.nan if i in nan_steps else 0.0, jnp.float32)
        params, state, value = step(params, state, poison)
        trajectory.append(jax.tree_util.tree_leaves(params))
        losses.append(value)
    paths_leaves = jax.tree_util.tree_flatten_with_path(state)[0]
    paths = [jax.tree_util.keystr(p) for p, _ in paths_leaves]
    return trajectory, paths, [leaf for _, leaf in paths_leaves], losses
