"""The small problem the wrapper and contrib golden trajectories are recorded on, written once
for both sides: `run` takes the library modules (optax + jax, or optim + corejax) as arguments,
so tests/golden/gen_optax_{wrappers,contrib}.py (real Optax) and tests/test_optim_{wrappers,
contrib}.py (optim) execute the very same steps. No jax import here.

Problem: params {"w": (3, 2), "b": (2,)}; loss = mean((x @ w + b - y)^2) + 0.05 * sum(w^4) on
fixed x (4, 3), y (4, 2). A case is a dict: "build" (ox, jnp) -> transform; optional "extra"
(names of update keyword arguments to pass: "value" the loss, "obj_fn" the loss function,
"grad_fn" (params, i) -> gradients, "bias" half the gradients, a tree shaped like them),
"nan_steps" (steps whose gradient of "b" is NaN), "lookahead" (params are LookaheadParams),
"abs_params" (start from |params|), "per_example" (gradients with a leading batch axis of 4,
one per row of x), "complex" (w is complex, w * (1 + 0.5j); its gradient is the real one times
(1 + 0.5j)), "post" ((ox, state, params) -> pytree recorded after the last step), "steps" (10
by default), "compare_state" (False: the final state is not compared), "eager_only" (not
run under jit by the tests). Typed PRNG keys are recorded as their key data, complex values
as [real, imag].
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
    leaves with their paths, the losses and the leaves of case["post"] (or [])."""
    jnp_x, jnp_y = jnp.asarray(x), jnp.asarray(y)
    loss = make_loss(jnp, jnp_x, jnp_y)
    params = jax.tree_util.tree_map(jnp.asarray, params)
    if case.get("abs_params"):
        params = jax.tree_util.tree_map(jnp.abs, params)
    opt = case["build"](ox, jnp)
    lookahead = case.get("lookahead", False)
    if case.get("complex"):
        params = dict(params, w=params["w"] * (1 + 0.5j))
    if lookahead:
        params = ox.LookaheadParams.init_synced(params)
    state = opt.init(params)
    nan_steps = case.get("nan_steps", ())

    def step(params, state, poison):
        fast = params.fast if lookahead else params
        if case.get("complex"):
            fast = jax.tree_util.tree_map(jnp.real, fast)
        value, grads = jax.value_and_grad(loss)(fast)
        if case.get("per_example"):
            grads = jax.vmap(lambda xb, yb: jax.grad(loss)(fast, xb[None], yb[None]))(
                jnp_x, jnp_y)
        grads = dict(grads, b=grads["b"] + poison)
        if case.get("complex"):
            grads = dict(grads, w=grads["w"] * (1 + 0.5j))
        extra = {}
        if "value" in case.get("extra", ()):
            extra["value"] = value
        if "obj_fn" in case.get("extra", ()):
            extra["obj_fn"] = loss
        if "bias" in case.get("extra", ()):
            extra["bias"] = jax.tree_util.tree_map(lambda g: 0.5 * g, grads)
        if "grad_fn" in case.get("extra", ()):
            extra["grad_fn"] = lambda p, i: jax.grad(loss)(p)
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
    def plain(leaf):
        if str(getattr(leaf, "dtype", "")).startswith("key<"):
            leaf = jax.random.key_data(leaf)
        if jnp.iscomplexobj(leaf):
            leaf = jnp.stack([jnp.real(leaf), jnp.imag(leaf)])
        return leaf

    trajectory = [[plain(v) for v in step] for step in trajectory]
    paths_leaves = jax.tree_util.tree_flatten_with_path(state)[0]
    paths = [jax.tree_util.keystr(p) for p, _ in paths_leaves]
    post = jax.tree_util.tree_leaves(case["post"](ox, state, params)) if "post" in case else []
    return (trajectory, paths, [plain(leaf) for _, leaf in paths_leaves], losses,
            [plain(v) for v in post])


def check(golden, name, case, ox, jax, jnp, jit=False, rtol=2e-5, atol=1e-6):
    """Runs `case` with `ox` and asserts it reproduces golden["cases"][name] (params after
    every step, the final state's key paths, dtypes and leaves, the losses, the post-run
    values)."""
    from numpy.testing import assert_allclose
    x, y = np.asarray(golden["x"], np.float32), np.asarray(golden["y"], np.float32)
    params = {k: np.asarray(v, np.float32) for k, v in golden["params"].items()}
    want = golden["cases"][name]
    trajectory, paths, leaves, losses, post = run(case, ox, jax, jnp, x, y, params, jit=jit)
    tol = dict(rtol=rtol, atol=atol)
    # corejax's typed PRNG keys are pytree nodes over their key data (one child), not leaves
    paths = [p.replace("[<flat index 0>]", "") for p in paths]
    assert paths == want["state_paths"], (name, paths, want["state_paths"])
    for step, (ours, theirs) in enumerate(zip(trajectory, want["trajectory"])):
        for a, b in zip(ours, theirs):
            assert_allclose(np.asarray(a, np.float64), b, **tol, err_msg=f"{name} step {step}")
    for a, b in zip(post, want["post"]):
        assert_allclose(np.asarray(a, np.float64), b, **tol, err_msg=f"{name} post")
    assert_allclose(np.asarray(losses, np.float64), want["losses"], **tol, err_msg=name)
    dtypes = [str(np.asarray(leaf).dtype) for leaf in leaves]
    assert dtypes == want["state_dtypes"], (name, dtypes, want["state_dtypes"])
    if case.get("compare_state", True):
        for path, a, b in zip(paths, leaves, want["state"]):
            assert_allclose(np.asarray(a).astype(np.float64), b, **tol,
                            err_msg=f"{name} state{path}")
