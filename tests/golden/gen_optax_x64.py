"""Record Optax 0.2.8 trajectories in float64 (jax_enable_x64) for tests/test_optim_x64.py.

Run with a Python that has jax and optax installed (neither is a corejax dependency):

    /work/jaxvenv/bin/python tests/golden/gen_optax_x64.py

Why float64: in float32 the notebook-length runs of L-BFGS, Adam and reduce_on_plateau drift
apart between any two implementations (even between XLA with and without a 1-ulp change of
the initial point), because each iteration amplifies rounding. In float64 the same runs agree
to ~1e-12 for many more iterations, so a semantic difference (a wrong formula, a condition
tested in another order, a state field updated at another time) shows as a mismatch far above
rounding instead of hiding inside the float32 tolerance.

Writes tests/golden/optax_x64.json: {"versions", "lbfgs": [...], "plateau": {...}}:
  * "lbfgs": per case, Optax's L-BFGS with a zoom line search, run eagerly in the notebook's
    loop (value_and_grad_from_state, update(..., value=, grad=, value_fn=), apply_updates) on
    the notebook benchmark's Rosenbrock function (from arange(dim)) or on its Zakharov
    function: per iteration the objective value, the accepted step size, the number of
    line-search evaluations, and the parameters.
  * "plateau": chain(adam, contrib.reduce_on_plateau) on a softmax regression over fixed
    random data (the reduce_on_plateau notebook's loop, value= the batch loss): per step the
    loss and the scale, and the final parameters.
"""
import json
import os

import numpy as np

import jax
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import optax  # noqa: E402
from optax import contrib  # noqa: E402

import sys  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from optax_x64_problems import objectives, initial_point as _initial_point  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "optax_x64.json")

# (name, function, dim, lbfgs kwargs, zoom kwargs, iterations, rtol). The rtol the test allows:
# 1e-9 where float64 trajectories stay within ~1e-12 (the Rosenbrock runs stop before their
# divergence, which grows ~10x every 3 iterations from 1 ulp, reaches 1e-9: iteration 26 with
# memory 1, 46 with memory 4); 1e-6 for Zakharov from 1e4, where the
# first accepted step (1.4e-11, found in 34 evaluations) multiplies a 1-ulp difference by
# ~1e8 in the next iterate (XLA against XLA from a point moved by 1 ulp: 9e-9 relative).
LBFGS_CASES = [
    ("rosenbrock16_mem1", "rosenbrock", 16, dict(memory_size=1),
     dict(max_linesearch_steps=15, initial_guess_strategy="one"), 24, 1e-9),
    ("rosenbrock16_mem4", "rosenbrock", 16, dict(memory_size=4),
     dict(max_linesearch_steps=15, initial_guess_strategy="one"), 40, 1e-9),
    ("zakharov_noscale", "zakharov", 6, dict(memory_size=10, scale_init_precond=False),
     dict(max_linesearch_steps=50, initial_guess_strategy="one"), 4, 1e-6),
]


FUNS = objectives(jnp)


def initial_point(fun, dim):
    return _initial_point(jnp, fun, dim)


def run_lbfgs(fun_name, dim, lbfgs_kwargs, zoom_kwargs, iterations):
    fun = FUNS[fun_name]
    opt = optax.lbfgs(**lbfgs_kwargs, linesearch=optax.scale_by_zoom_linesearch(**zoom_kwargs))
    value_and_grad = optax.value_and_grad_from_state(fun)
    params = initial_point(fun_name, dim)
    state = opt.init(params)
    rows = {"values": [], "learning_rates": [], "linesearch_steps": [], "params": []}
    for _ in range(iterations):
        value, grad = value_and_grad(params, state=state)
        updates, state = opt.update(grad, state, params, value=value, grad=grad, value_fn=fun)
        params = optax.apply_updates(params, updates)
        rows["values"].append(float(value))
        rows["learning_rates"].append(float(optax.tree.get(state, "learning_rate")))
        rows["linesearch_steps"].append(int(optax.tree.get(state, "num_linesearch_steps")))
        rows["params"].append(np.asarray(params, np.float64).tolist())
    return rows


PLATEAU = dict(examples=96, features=8, classes=4, batch=16, steps=60, learning_rate=0.05,
               factor=0.5, patience=1, rtol=0.005, accumulation_size=3)


def plateau_data():
    rng = np.random.RandomState(3)
    x = rng.normal(size=(PLATEAU["examples"], PLATEAU["features"]))
    w = rng.normal(size=(PLATEAU["features"], PLATEAU["classes"]))
    y = np.argmax(x @ w + rng.normal(size=(PLATEAU["examples"], PLATEAU["classes"])), axis=1)
    w0 = 0.1 * rng.normal(size=(PLATEAU["features"], PLATEAU["classes"]))
    return x, y.astype(np.int32), w0


def run_plateau():
    x, y, w0 = plateau_data()
    opt = optax.chain(optax.adam(PLATEAU["learning_rate"]), contrib.reduce_on_plateau(
        factor=PLATEAU["factor"], patience=PLATEAU["patience"], rtol=PLATEAU["rtol"],
        accumulation_size=PLATEAU["accumulation_size"]))
    params = {"w": jnp.asarray(w0), "b": jnp.zeros(PLATEAU["classes"], jnp.float64)}

    def loss(p, xb, yb):
        logits = xb @ p["w"] + p["b"]
        return optax.softmax_cross_entropy_with_integer_labels(logits, yb).mean()

    state = opt.init(params)
    losses, scales = [], []
    per_epoch = PLATEAU["examples"] // PLATEAU["batch"]
    for step in range(PLATEAU["steps"]):
        i = (step % per_epoch) * PLATEAU["batch"]
        xb, yb = jnp.asarray(x[i:i + PLATEAU["batch"]]), jnp.asarray(y[i:i + PLATEAU["batch"]])
        value, grad = jax.value_and_grad(loss)(params, xb, yb)
        updates, state = opt.update(grad, state, params, value=value)
        params = optax.apply_updates(params, updates)
        losses.append(float(value))
        scales.append(float(optax.tree.get(state, "scale")))
    return {"settings": PLATEAU, "losses": losses, "scales": scales,
            "params": {k: np.asarray(v, np.float64).tolist() for k, v in params.items()}}


def main():
    golden = {"versions": {"jax": jax.__version__, "optax": optax.__version__},
              "lbfgs": [], "plateau": run_plateau()}
    for name, fun, dim, lbfgs_kwargs, zoom_kwargs, iterations, rtol in LBFGS_CASES:
        rows = run_lbfgs(fun, dim, lbfgs_kwargs, zoom_kwargs, iterations)
        golden["lbfgs"].append(dict(name=name, fun=fun, dim=dim, lbfgs=lbfgs_kwargs,
                                    zoom=zoom_kwargs, iterations=iterations, rtol=rtol,
                                    **rows))
    with open(OUT, "w") as f:
        json.dump(golden, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
