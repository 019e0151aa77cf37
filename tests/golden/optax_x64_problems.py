"""The float64 trajectories of tests/golden/gen_optax_x64.py (real Optax) and
tests/test_optim_x64.py (optim), written once: each run takes its framework's modules
(`ox`: optax or optim, its `contrib`, `jax`: jax or corejax, `jnp`) and returns per-step
records. No jax import here."""
import numpy as np

PLATEAU = dict(examples=96, features=8, classes=4, batch=16, steps=60, learning_rate=0.05,
               factor=0.5, patience=1, rtol=0.005, accumulation_size=3)


def objectives(jnp):
    """{name: f(x)}: the Rosenbrock function and Zakharov's."""
    def rosenbrock(x):
        return jnp.sum((x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)

    def zakharov(w):
        ii = jnp.arange(1, len(w) + 1, step=1, dtype=w.dtype)
        sum1 = (w ** 2).sum()
        sum2 = (0.5 * ii * w).sum()
        return sum1 + sum2 ** 2 + sum2 ** 4

    return {"rosenbrock": rosenbrock, "zakharov": zakharov}


def initial_point(jnp, fun: str, dim: int):
    if fun == "rosenbrock":
        return jnp.arange(dim, dtype=jnp.float64)
    return jnp.array([600.0, 700.0, 200.0, 100.0, 90.0, 1e4], dtype=jnp.float64)


def run_lbfgs(ox, jnp, fun_name, dim, lbfgs_kwargs, zoom_kwargs, iterations) -> dict:
    """L-BFGS with a zoom line search in the notebook's loop (value_and_grad_from_state,
    update(..., value=, grad=, value_fn=), apply_updates): per iteration the objective value,
    the accepted step size, the number of line-search evaluations and the parameters."""
    fun = objectives(jnp)[fun_name]
    opt = ox.lbfgs(**lbfgs_kwargs, linesearch=ox.scale_by_zoom_linesearch(**zoom_kwargs))
    value_and_grad = ox.value_and_grad_from_state(fun)
    params = initial_point(jnp, fun_name, dim)
    assert params.dtype == np.float64
    state = opt.init(params)
    rows = {"values": [], "learning_rates": [], "linesearch_steps": [], "params": []}
    for _ in range(iterations):
        value, grad = value_and_grad(params, state=state)
        updates, state = opt.update(grad, state, params, value=value, grad=grad, value_fn=fun)
        params = ox.apply_updates(params, updates)
        rows["values"].append(float(value))
        rows["learning_rates"].append(float(ox.tree.get(state, "learning_rate")))
        rows["linesearch_steps"].append(int(ox.tree.get(state, "num_linesearch_steps")))
        rows["params"].append(np.asarray(params, np.float64).tolist())
    return rows


def plateau_data():
    rng = np.random.RandomState(3)
    x = rng.normal(size=(PLATEAU["examples"], PLATEAU["features"]))
    w = rng.normal(size=(PLATEAU["features"], PLATEAU["classes"]))
    y = np.argmax(x @ w + rng.normal(size=(PLATEAU["examples"], PLATEAU["classes"])), axis=1)
    w0 = 0.1 * rng.normal(size=(PLATEAU["features"], PLATEAU["classes"]))
    return x, y.astype(np.int32), w0


def run_plateau(ox, contrib, jax, jnp) -> dict:
    """chain(adam, contrib.reduce_on_plateau) on a softmax regression over fixed random data
    (the reduce_on_plateau notebook's loop, value= the batch loss): per step the loss and the
    scale, and the final parameters."""
    x, y, w0 = plateau_data()
    opt = ox.chain(ox.adam(PLATEAU["learning_rate"]), contrib.reduce_on_plateau(
        factor=PLATEAU["factor"], patience=PLATEAU["patience"], rtol=PLATEAU["rtol"],
        accumulation_size=PLATEAU["accumulation_size"]))
    params = {"w": jnp.asarray(w0), "b": jnp.zeros(PLATEAU["classes"], jnp.float64)}

    def loss(p, xb, yb):
        logits = xb @ p["w"] + p["b"]
        return ox.softmax_cross_entropy_with_integer_labels(logits, yb).mean()

    state = opt.init(params)
    losses, scales = [], []
    per_epoch = PLATEAU["examples"] // PLATEAU["batch"]
    for step in range(PLATEAU["steps"]):
        i = (step % per_epoch) * PLATEAU["batch"]
        xb, yb = jnp.asarray(x[i:i + PLATEAU["batch"]]), jnp.asarray(y[i:i + PLATEAU["batch"]])
        value, grad = jax.value_and_grad(loss)(params, xb, yb)
        updates, state = opt.update(grad, state, params, value=value)
        params = ox.apply_updates(params, updates)
        losses.append(float(value))
        scales.append(float(ox.tree.get(state, "scale")))
    return {"settings": PLATEAU, "losses": losses, "scales": scales,
            "params": {k: np.asarray(v, np.float64).tolist() for k, v in params.items()}}
