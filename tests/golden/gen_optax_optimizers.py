"""Record Optax 0.2.8's optimizer and scale_by_* trajectories as golden data for optim.

Run with a Python that has jax and optax installed (neither is a corejax dependency):

    /work/flaxvenv/bin/python tests/golden/gen_optax_optimizers.py

Writes tests/golden/optax_optimizers.json:
  * "params": the initial pytree {"w": (3, 2), "b": (2,)}; "grads": ten gradient pytrees and
    "values": ten loss values (fed to transforms that take `value=`), one per step.
  * "cases": [{"spec", "params": [after each step], "state": the final state}]. A spec is
    ``{"name": optax function, "kwargs": {...}}``; a kwarg that is itself a spec (a schedule as
    learning rate) is nested the same way. A state is written as nested JSON: a NamedTuple as
    {"type": class name, "fields": {name: ...}}, tuples and lists as lists, dicts as dicts,
    arrays as {"dtype", "shape", "value"}.
  * "lbfgs": line-search solvers on two small problems (a 2-D Rosenbrock function from
    [-1.2, 1.0] and a logistic regression on 24 fixed points, both float32), the loop of
    Optax's L-BFGS notebook: value_and_grad_from_state, then update(grad, state, params,
    value=, grad=, value_fn=) (plain value_and_grad for a solver that keeps no gradient in
    its state; its loop's gradient norm is then taken at the params). Per problem/solver:
    "params" and "values" after each of "steps" eager iterations, the line search's step
    sizes ("learning_rates") and numbers of evaluations ("linesearch_steps"); and the
    notebook's lax.while_loop run ("while_loop": final params, iteration count, final
    gradient norm; max_iter, tol).
  * "signatures": the parameters (name, kind, default) of Optax's optimizers, blocks and
    line searches that optim provides.
Arrays hold float32 (or the array's own) values written exactly, as doubles.
"""
import json
import os
import warnings

import numpy as np

import jax
import jax.numpy as jnp
import optax

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "optax_optimizers.json")
STEPS = 10


def spec(name, **kwargs):
    return {"name": name, "kwargs": kwargs}


LINEAR = spec("linear_schedule", init_value=0.1, end_value=0.02, transition_steps=8)

CASES = [
    # optimizers existing before #28, with the keywords of their 0.2.8 signatures
    spec("sgd", learning_rate=0.05, momentum=0.7, nesterov=True),
    spec("adam", learning_rate=0.05, b1=0.8, b2=0.95, eps=1e-6, eps_root=1e-8, nesterov=True),
    spec("adamw", learning_rate=LINEAR, b1=0.85, b2=0.9, weight_decay=0.05),
    spec("nadam", learning_rate=0.05, b2=0.9),
    spec("nadamw", learning_rate=0.05, b1=0.7, weight_decay=0.1),
    spec("adamax", learning_rate=0.05, b1=0.8, b2=0.9),
    spec("adagrad", learning_rate=0.1, initial_accumulator_value=0.5, eps=1e-5),
    spec("rmsprop", learning_rate=0.02, decay=0.8, eps=1e-4, initial_scale=0.1,
         eps_in_sqrt=False, momentum=0.5, nesterov=True, bias_correction=True),
    # (centered with bias correction: at step 1 nu_hat - mu_hat**2 is exactly 0 up to rounding,
    # so eps must dominate that noise for the step to be a number rather than a rounding coin)
    spec("rmsprop", learning_rate=0.02, decay=0.85, eps=0.5, centered=True,
         bias_correction=True),
    spec("lamb", learning_rate=0.05, b1=0.8, b2=0.9, weight_decay=0.01),
    spec("lion", learning_rate=0.01, b1=0.8, b2=0.95, weight_decay=0.1),
    # optimizers added for #28
    spec("adabelief", learning_rate=0.05, b1=0.8, b2=0.95),
    spec("adabelief", learning_rate=0.05, eps=1e-8, nesterov=True),
    spec("adadelta", learning_rate=0.5, rho=0.8, eps=1e-4, weight_decay=0.01),
    spec("adadelta"),
    spec("adafactor", learning_rate=0.05, min_dim_size_to_factor=2, decay_rate=0.7,
         momentum=0.9, weight_decay_rate=1e-3, clipping_threshold=0.5),
    spec("adafactor", learning_rate=0.05, decay_offset=2, multiply_by_parameter_scale=False),
    spec("adamaxw", learning_rate=0.02, b1=0.85, weight_decay=0.05),
    spec("adan", learning_rate=0.05, b1=0.9, b2=0.85, b3=0.95, weight_decay=0.01),
    spec("amsgrad", learning_rate=0.05, b1=0.8, b2=0.9),
    spec("amsgrad", learning_rate=0.05, b2=0.9, bias_correction_nu=False),
    spec("fromage", learning_rate=0.1),
    spec("fromage", learning_rate=LINEAR),
    spec("lars", learning_rate=0.5, weight_decay=0.01, trust_coefficient=0.01, momentum=0.8,
         nesterov=True),
    spec("novograd", learning_rate=0.05, b1=0.85, b2=0.4, weight_decay=0.01),
    spec("optimistic_gradient_descent", learning_rate=0.05, alpha=0.8, beta=0.5),
    spec("optimistic_adam_v2", learning_rate=0.05, alpha=0.9, beta=0.4, b2=0.95),
    spec("optimistic_adam", learning_rate=0.05, optimism=0.02),
    spec("polyak_sgd", max_learning_rate=0.5, scaling=0.8, f_min=-1.0),
    spec("polyak_sgd", max_learning_rate=2.0, f_min=3.0, eps=1e-3, variant="sps+"),
    spec("radam", learning_rate=0.05, b2=0.8, threshold=4.0),
    spec("radam", learning_rate=0.05, b2=0.8, threshold=4.0, nesterov=True),
    spec("rprop", learning_rate=0.05, eta_minus=0.4, eta_plus=1.3, min_step_size=1e-3,
         max_step_size=0.2),
    spec("sign_sgd", learning_rate=0.01),
    spec("signum", learning_rate=0.01, beta=0.8),
    spec("sm3", learning_rate=0.1, momentum=0.8),
    spec("yogi", learning_rate=0.05, b1=0.8, eps=1e-2),
    spec("noisy_sgd", learning_rate=0.05, eta=0.1, gamma=0.6, key=3),
    # building blocks used on their own (updates applied as they come)
    spec("scale_by_distance_over_gradients", reps_rel=1e-3, global_scale=0.5),
    spec("scale_by_param_block_norm", min_scale=0.5),
    spec("scale_by_param_block_rms"),
    spec("centralize"),
    spec("normalize_by_update_norm", scale_factor=0.3),
    spec("scale_by_factored_rms", min_dim_size_to_factor=2, decay_rate=0.6),
    spec("scale_by_yogi", b1=0.7, eps_root=1e-6, initial_accumulator_value=1e-3),
    spec("scale_by_sm3", b1=0.8, b2=0.9),
    spec("add_noise", eta=0.5, gamma=0.3, key=7),
    spec("add_decayed_weights", weight_decay=LINEAR),
    spec("scale_by_lion", b1=0.8, mode="smooth", smooth_beta=3.0),
    spec("scale_by_lion", b2=0.9, mode="refined"),
    # accumulators kept in float16 (corejax has no bfloat16)
    spec("adam", learning_rate=0.05, mu_dtype="float16"),
    spec("sgd", learning_rate=0.05, momentum=0.9, accumulator_dtype="float16"),
    spec("amsgrad", learning_rate=0.05, mu_dtype="float16"),
]

EXTRA_ARGS = {"polyak_sgd"}  # updates that take value=


def build(s):
    kwargs = {k: build(v) if isinstance(v, dict) and "name" in v else v
              for k, v in s["kwargs"].items()}
    return getattr(optax, s["name"])(**kwargs)


def tolist(tree):
    return jax.tree_util.tree_map(lambda x: np.asarray(x, np.float32).tolist(), tree)


def describe(x):
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return {"type": type(x).__name__, "fields": {f: describe(getattr(x, f))
                                                     for f in x._fields}}
    if isinstance(x, (tuple, list)):
        return [describe(v) for v in x]
    if isinstance(x, dict):
        return {str(k): describe(v) for k, v in x.items()}
    if isinstance(x, jax.Array) and jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
        x = jax.random.key_data(x)
        return {"dtype": "key<fry>", "shape": list(x.shape), "value": np.asarray(x).tolist()}
    a = np.asarray(x)
    return {"dtype": str(a.dtype), "shape": list(a.shape), "value": a.tolist()}


def rosenbrock(x):
    return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def logistic_data():
    rng = np.random.RandomState(1)
    features = rng.normal(size=(24, 3)).astype(np.float32)
    labels = (features @ np.array([1.5, -2.0, 0.5]) + 0.3 * rng.normal(size=24) > 0)
    return jnp.asarray(features), jnp.asarray(labels.astype(np.float32))


def logistic_loss(params):
    features, labels = logistic_data()
    logits = features @ params["w"] + params["b"]
    return jnp.mean(jnp.logaddexp(0.0, logits) - labels * logits) + 0.01 * jnp.sum(
        params["w"] ** 2)


LBFGS_PROBLEMS = {
    "rosenbrock": (rosenbrock, lambda: jnp.asarray([-1.2, 1.0], jnp.float32)),
    "logistic": (logistic_loss, lambda: {"w": jnp.zeros(3, jnp.float32),
                                         "b": jnp.asarray(0.0, jnp.float32)}),
}

LBFGS_SOLVERS = [
    # (problem, solver spec, eager steps, while_loop max_iter, tol)
    ("rosenbrock", spec("lbfgs"), 12, 100, 1e-3),
    ("logistic", spec("lbfgs", memory_size=3, scale_init_precond=False,
                      linesearch=spec("scale_by_backtracking_linesearch",
                                      max_backtracking_steps=20, store_grad=True)),
     8, 50, 1e-4),
    ("logistic", spec("chain", transforms=[
        spec("sgd", learning_rate=1.0),
        spec("scale_by_backtracking_linesearch", max_backtracking_steps=15,
             decrease_factor=0.5, increase_factor=2.0, max_learning_rate=8.0,
             slope_rtol=0.3)]), 8, 40, 1e-3),
    ("rosenbrock", spec("lbfgs", memory_size=4, linesearch=spec(
        "scale_by_zoom_linesearch", max_linesearch_steps=15, initial_guess_strategy="keep",
        max_learning_rate=2.0, curv_rtol=0.5)), 12, 100, 1e-3),
]


def build_solver(s):
    kwargs = dict(s["kwargs"])
    if "transforms" in kwargs:
        return optax.chain(*[build_solver(t) for t in kwargs.pop("transforms")])
    if isinstance(kwargs.get("linesearch"), dict):
        kwargs["linesearch"] = build_solver(kwargs["linesearch"])
    return getattr(optax, s["name"])(**kwargs)


def lbfgs_records():
    records = []
    for problem, solver_spec, steps, max_iter, tol in LBFGS_SOLVERS:
        fun, init = LBFGS_PROBLEMS[problem]
        opt = build_solver(solver_spec)
        params, state = init(), opt.init(init())
        # Solvers that keep no gradient in their state use plain value_and_grad.
        keeps_grad = optax.tree_utils.tree_get(state, "grad") is not None
        if keeps_grad:
            value_and_grad = optax.value_and_grad_from_state(fun)
        else:
            value_and_grad = lambda p, state: jax.value_and_grad(fun)(p)  # noqa: E731
        trajectory, values, rates, ls_steps = [], [], [], []
        for _ in range(steps):
            value, grad = value_and_grad(params, state=state)
            updates, state = opt.update(grad, state, params, value=value, grad=grad,
                                        value_fn=fun)
            params = optax.apply_updates(params, updates)
            trajectory.append(tolist(params))
            values.append(float(fun(params)))
            rates.append(float(optax.tree_utils.tree_get(state, "learning_rate")))
            ls_steps.append(int(optax.tree_utils.tree_get(state, "num_linesearch_steps")))

        def step(carry):
            params, state, count = carry
            value, grad = value_and_grad(params, state=state)
            updates, state = opt.update(grad, state, params, value=value, grad=grad,
                                        value_fn=fun)
            return optax.apply_updates(params, updates), state, count + 1

        def grad_at(params, state):
            if keeps_grad:
                return optax.tree_utils.tree_get(state, "grad")
            return jax.grad(fun)(params)

        def keep_going(carry):
            params, state, count = carry
            err = optax.tree_utils.tree_norm(grad_at(params, state))
            return (count == 0) | ((count < max_iter) & (err >= tol))

        final, state, count = jax.lax.while_loop(
            keep_going, step, (init(), opt.init(init()), jnp.asarray(0)))
        grad_norm = optax.tree_utils.tree_norm(grad_at(final, state))
        records.append({"problem": problem, "solver": solver_spec, "steps": steps,
                        "params": trajectory, "values": values, "learning_rates": rates,
                        "linesearch_steps": ls_steps,
                        "while_loop": {"max_iter": max_iter, "tol": tol,
                                       "params": tolist(final), "count": int(count),
                                       "grad_norm": float(grad_norm),
                                       "value": float(fun(final))}})
    return records


SIGNATURE_NAMES = [
    "sgd", "adam", "adamw", "nadam", "nadamw", "adamax", "adamaxw", "rmsprop", "adagrad", "lamb",
    "lion", "adabelief", "adadelta", "adafactor", "adan", "amsgrad", "fromage", "lars",
    "noisy_sgd", "novograd", "optimistic_gradient_descent", "optimistic_adam",
    "optimistic_adam_v2", "polyak_sgd", "radam", "rprop", "sign_sgd", "signum", "sm3", "yogi",
    "lbfgs", "scale_by_adam", "scale_by_adamax", "scale_by_amsgrad", "scale_by_belief",
    "scale_by_yogi", "scale_by_radam", "scale_by_adadelta", "scale_by_adan",
    "scale_by_novograd", "scale_by_sm3", "scale_by_rprop", "scale_by_sign",
    "scale_by_optimistic_gradient", "scale_by_distance_over_gradients", "scale_by_polyak",
    "scale_by_param_block_norm", "scale_by_param_block_rms", "scale_by_factored_rms",
    "scale_by_lion", "scale_by_rms", "scale_by_stddev", "scale_by_rss", "scale_by_trust_ratio",
    "scale_by_learning_rate", "scale_by_schedule", "scale", "add_decayed_weights", "trace",
    "ema", "centralize", "normalize_by_update_norm", "add_noise", "scale_by_lbfgs",
    "scale_by_backtracking_linesearch", "scale_by_zoom_linesearch",
    "value_and_grad_from_state", "with_extra_args_support", "init_empty_state",
    "safe_norm", "safe_root_mean_squares", "safe_increment",
]


def signature_records():
    """Per function: [name, kind, default] per parameter; a default that is not a JSON
    scalar is written as "<object>", a missing one as "<empty>"."""
    import inspect
    out = {}
    for name in SIGNATURE_NAMES:
        params = []
        for p in inspect.signature(getattr(optax, name)).parameters.values():
            d = p.default
            if d is inspect.Parameter.empty:
                d = "<empty>"
            elif not (d is None or isinstance(d, (bool, int, float, str))):
                d = "<object>"
            params.append([p.name, p.kind.name, d])
        out[name] = params
    return out


def main():
    rng = np.random.RandomState(0)
    params = {"w": jnp.asarray(rng.uniform(-1, 1, (3, 2)).astype(np.float32)),
              "b": jnp.asarray(np.array([0.3, -0.2], np.float32))}
    grads = [{"w": jnp.asarray((np.sin(np.arange(6).reshape(3, 2) * 1.3 + 0.7 * t)
                                * (1.0 + 0.2 * t)).astype(np.float32)),
              "b": jnp.asarray((np.cos(np.arange(2) + 0.9 * t) - 0.3).astype(np.float32))}
             for t in range(STEPS)]
    values = [float(np.float32(2.0 + np.sin(t) - 0.1 * t)) for t in range(STEPS)]
    cases = []
    for s in CASES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            opt = build(s)
        p, state, trajectory = params, opt.init(params), []
        for g, v in zip(grads, values):
            extra = {"value": jnp.asarray(v, jnp.float32)} if s["name"] in EXTRA_ARGS else {}
            updates, state = opt.update(g, state, p, **extra)
            p = optax.apply_updates(p, updates)
            trajectory.append(tolist(p))
        cases.append({"spec": s, "params": trajectory, "state": describe(state)})
    out = {"versions": {"jax": jax.__version__, "optax": optax.__version__},
           "params": tolist(params), "grads": [tolist(g) for g in grads], "values": values,
           "cases": cases, "lbfgs": lbfgs_records(), "signatures": signature_records()}
    with open(OUT, "w") as f:
        json.dump(out, f)
        f.write("\n")
    print(f"wrote {OUT}: {os.path.getsize(OUT)} bytes, {len(cases)} cases")


if __name__ == "__main__":
    main()
