"""Record what Optax 0.2.8's line searches print with verbose=True, for tests/test_optim_lbfgs.py.

Run with a Python that has jax and optax installed (neither is a corejax dependency):

    /work/jaxvenv/bin/python tests/golden/gen_optax_linesearch_verbose.py

Writes tests/golden/optax_linesearch_verbose.json: {"versions", "cases": {name: printed text}}.
Each case (CASES) is one update of a line search on a small quadratic, run eagerly; its body is
shared with the test, which runs it with corejax and optim bound to the same names.
"""
import contextlib
import io
import json
import os

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "optax_linesearch_verbose.json")

PRELUDE = """
def f(x):
    return jnp.sum((x - jnp.arange(3.0)) ** 2 * jnp.array([1.0, 10.0, 100.0]))
params = jnp.array([1.5, -0.5, 2.0])
value, grad = jax.value_and_grad(f)(params)
def one_update(search, direction):
    state = search.init(params)
    return search.update(direction, state, params, value=value, grad=grad, value_fn=f)
"""

CASES = {
    # an ascent direction: no step decreases f, so the search gives up and says so
    "backtracking_fails": "one_update(optax.scale_by_backtracking_linesearch("
                          "max_backtracking_steps=3, verbose=True), grad)",
    # a descent direction the first trial step satisfies: nothing is printed
    "backtracking_succeeds": "one_update(optax.scale_by_backtracking_linesearch("
                             "max_backtracking_steps=15, verbose=True), -grad * 1e-3)",
    "zoom_not_descent": "one_update(optax.scale_by_zoom_linesearch(max_linesearch_steps=4, "
                        "verbose=True), grad)",
    "zoom_too_few_steps": "one_update(optax.scale_by_zoom_linesearch(max_linesearch_steps=1, "
                          "verbose=True), -grad * 50.0)",
    "zoom_succeeds": "one_update(optax.scale_by_zoom_linesearch(max_linesearch_steps=20, "
                     "verbose=True), -grad * 0.01)",
}


def run_case(name, env):
    """What the case prints (jax.debug.print's output, flushed by effects_barrier)."""
    scope = dict(env)
    exec(PRELUDE, scope)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        exec(CASES[name], scope)
        env["jax"].effects_barrier()
    return buf.getvalue()


def main():
    import jax
    import jax.numpy as jnp
    import optax
    env = {"jax": jax, "jnp": jnp, "optax": optax}
    cases = {name: run_case(name, env) for name in CASES}
    with open(OUT, "w") as fh:
        json.dump({"versions": {"jax": jax.__version__, "optax": optax.__version__},
                   "cases": cases}, fh, indent=1, sort_keys=True)
    print(f"wrote {OUT}: {len(cases)} cases")


if __name__ == "__main__":
    main()
