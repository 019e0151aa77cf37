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

import jax
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import optax  # noqa: E402
from optax import contrib  # noqa: E402

import sys  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from optax_x64_problems import run_lbfgs, run_plateau  # noqa: E402

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


def main():
    golden = {"versions": {"jax": jax.__version__, "optax": optax.__version__},
              "lbfgs": [], "plateau": run_plateau(optax, contrib, jax, jnp)}
    for name, fun, dim, lbfgs_kwargs, zoom_kwargs, iterations, rtol in LBFGS_CASES:
        rows = run_lbfgs(optax, jnp, fun, dim, lbfgs_kwargs, zoom_kwargs, iterations)
        golden["lbfgs"].append(dict(name=name, fun=fun, dim=dim, lbfgs=lbfgs_kwargs,
                                    zoom=zoom_kwargs, iterations=iterations, rtol=rtol,
                                    **rows))
    with open(OUT, "w") as f:
        json.dump(golden, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
