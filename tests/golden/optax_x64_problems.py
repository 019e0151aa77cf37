"""The objectives and starting points of the float64 L-BFGS trajectories, written once for
tests/golden/gen_optax_x64.py (real Optax) and tests/test_optim_x64.py (optim): each takes
the numpy module of its framework (jax.numpy or corejax.numpy). No jax import here."""


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
