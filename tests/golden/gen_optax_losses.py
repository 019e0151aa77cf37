"""Record Optax 0.2.8's losses, schedules, optax.tree functions and projections as golden data.

Run with a Python that has jax and optax installed (neither is a corejax dependency):

    python tests/golden/gen_optax_losses.py

Writes tests/golden/optax_losses.json. Arrays are written as {"array": nested list, "dtype":
name} (float32 values exactly, as doubles; complex ones with an "imag" list; inf/nan as
JSON's Infinity/NaN), tuples as {"tuple": [...]}; any other JSON value is a Python scalar,
list or dict. Sections:
  * "losses": [{"id", "name", "args" (positional arrays), "kwargs", "value", "grad"?}]: "grad"
    is the gradient of sum(loss) with respect to the first argument. A kwarg written
    {"fn": name} is a function (see FUNCTIONS); the name "fenchel_young_logsumexp" means
    make_fenchel_young_loss(logsumexp) applied to the args.
  * "schedules": [{"id", "spec", "steps", "values"}]; a spec is {"name", "kwargs"} and the
    "schedules" kwarg of join_schedules holds specs too.
  * "inject": a run of inject_hyperparams(sgd)(learning_rate=schedule, momentum): the learning
    rate in the state and the params after each step.
  * "tree": [{"id", "name", "args", "kwargs", "value"}] for optax.tree functions, "tree_state":
    get / get_all_with_path / set / map_params on an adam state (paths written with str()).
  * "projections": [{"id", "name", "args", "kwargs", "value", "grad"?}] ("grad": gradient of
    sum(weights * projection) in the first argument, weights given in "grad_weights").
  * "misc": the other top-level helpers (see misc_records), inputs beside their results;
    "assignment": both Hungarian algorithms on square, wide and tall cost matrices;
    "microbatching": microbatch / micro_vmap / micro_grad results on a small batch;
    "aggregating": optax.experimental.aggregating optimizers run on per-example updates.
"""
import json
import os

import numpy as np

import jax
import jax.numpy as jnp
import optax

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "optax_losses.json")
RNG = np.random.RandomState(28)
FUNCTIONS = {"sum": jnp.sum, "mean": jnp.mean, "logsumexp": jax.nn.logsumexp}


def normal(*shape):
    return RNG.normal(size=shape).astype(np.float32)


def uniform(*shape):
    return RNG.uniform(0.05, 1.0, size=shape).astype(np.float32)


def ints(high, *shape):
    return RNG.randint(0, high, size=shape).astype(np.int32)


def probs(*shape):
    p = uniform(*shape)
    return (p / p.sum(-1, keepdims=True)).astype(np.float32)


def enc(x):
    """JSON form of an array, tuple/list/dict of them, or a scalar."""
    if isinstance(x, dict):
        return {k: enc(v) for k, v in x.items()}
    if isinstance(x, tuple):
        return {"tuple": [enc(v) for v in x]}
    if isinstance(x, list):
        return [enc(v) for v in x]
    if isinstance(x, (np.ndarray, jax.Array)) or np.isscalar(x) and not isinstance(
            x, (int, float, str, bool)):
        a = np.asarray(x)
        if np.iscomplexobj(a):
            return {"array": a.real.tolist(), "imag": a.imag.tolist(), "dtype": a.dtype.name}
        return {"array": a.tolist(), "dtype": a.dtype.name}
    return x


def dec(x):
    if isinstance(x, dict) and "array" in x:
        a = np.asarray(x["array"])
        if "imag" in x:
            a = a + 1j * np.asarray(x["imag"])
        return jnp.asarray(a.astype(x["dtype"]))
    if isinstance(x, dict) and "fn" in x:
        return FUNCTIONS[x["fn"]]
    if isinstance(x, dict) and "tuple" in x:
        return tuple(dec(v) for v in x["tuple"])
    if isinstance(x, list):
        return [dec(v) for v in x]
    if isinstance(x, dict):
        return {k: dec(v) for k, v in x.items()}
    return x


def loss_fn(name):
    if name == "fenchel_young_logsumexp":
        return optax.losses.make_fenchel_young_loss(jax.nn.logsumexp)
    return getattr(optax.losses, name)


def ctc_inputs():
    logits = normal(2, 6, 4)
    logit_pad = np.zeros((2, 6), np.float32)
    logit_pad[1, 4:] = 1.0
    labels = np.array([[1, 2, 2], [3, 1, 0]], np.int32)
    label_pad = np.array([[0, 0, 0], [0, 0, 1]], np.float32)
    return [logits, logit_pad, labels, label_pad]


def seg_inputs(classes):
    logits = normal(2, 4, 4, classes)
    target = np.eye(classes, dtype=np.float32)[ints(classes, 2, 4, 4)]
    return [logits, target]


def loss_cases():
    pred, targ = normal(3, 4), normal(3, 4)
    logits, labels = normal(3, 5), probs(3, 5)
    where = np.ones((3, 5), bool)
    where[0, 1] = where[2, 4] = False
    int_labels = ints(5, 3)
    log_pred = np.log(probs(3, 5))
    targets0 = probs(3, 5)
    targets0[1, 2] = 0.0
    safe_logits = normal(2, 4)
    safe_logits[0, 3] = -np.inf
    safe_labels = np.array([[0.3, 0.3, 0.4, 0.0], [0.1, 0.2, 0.3, 0.4]], np.float32)
    signs = np.sign(normal(3, 4)).astype(np.float32)
    rank_where = np.array([[True, True, False, True], [False, False, False, False]])
    emb = normal(6, 3)
    cases = [
        ("squared_error", [pred, targ], {}, True),
        ("squared_error", [pred], {}, True),
        ("l2_loss", [pred, targ], {}, True),
        ("huber_loss", [pred, targ], {"delta": 0.5}, True),
        ("log_cosh", [pred * 30, targ], {}, True),
        ("cosine_similarity", [pred, targ], {"epsilon": 0.1}, True),
        ("cosine_similarity", [pred, targ], {"axis": 0, "where": where[:, :4]}, True),
        ("cosine_distance", [pred, targ], {"epsilon": 1e-3}, True),
        ("sigmoid_binary_cross_entropy", [pred, uniform(3, 4)], {}, True),
        ("sigmoid_binary_cross_entropy", [pred, ints(2, 3, 4)], {}, True),
        ("sigmoid_focal_loss", [pred, ints(2, 3, 4)], {"alpha": 0.25, "gamma": 2.0}, True),
        ("sigmoid_focal_loss", [pred, uniform(3, 4)], {"gamma": 1.5}, True),
        ("hinge_loss", [pred, signs], {}, True),
        ("perceptron_loss", [pred, signs], {}, True),
        ("sparsemax_loss", [pred * 2, ints(2, 3, 4)], {}, True),
        ("safe_softmax_cross_entropy", [safe_logits, safe_labels], {}, True),
        ("softmax_cross_entropy", [logits, labels], {}, True),
        ("softmax_cross_entropy", [logits, labels], {"axis": 0}, True),
        ("softmax_cross_entropy", [logits, labels * where], {"where": where}, True),
        ("softmax_cross_entropy_with_integer_labels", [logits, int_labels], {}, True),
        ("softmax_cross_entropy_with_integer_labels", [logits, np.array([0, 2, 1], np.int32)],
         {"where": where}, True),
        ("softmax_cross_entropy_with_integer_labels", [normal(3, 2, 4), ints(8, 3)],
         {"axis": (1, 2)}, True),
        ("softmax_cross_entropy_with_integer_labels", [normal(4, 3), ints(4, 3)],
         {"axis": 0}, True),
        ("multiclass_hinge_loss", [logits, int_labels], {}, True),
        ("multiclass_perceptron_loss", [logits, int_labels], {}, True),
        ("multiclass_sparsemax_loss", [logits * 2, int_labels], {}, True),
        ("poly_loss_cross_entropy", [logits, labels], {"epsilon": 1.5}, True),
        ("poly_loss_cross_entropy", [logits, labels * where], {"where": where}, False),
        ("kl_divergence", [log_pred, targets0], {}, True),
        ("kl_divergence_with_log_targets", [log_pred, np.log(probs(3, 5))], {}, True),
        ("generalized_kl_divergence", [log_pred, targets0 * 2], {}, True),
        ("convex_kl_divergence", [log_pred, targets0], {"axis": 0}, True),
        ("ctc_loss", ctc_inputs(), {}, True),
        ("ctc_loss", ctc_inputs(), {"blank_id": 3, "log_epsilon": -1e4}, True),
        ("ctc_loss_with_forward_probs", ctc_inputs(), {}, False),
        ("ranking_softmax_loss", [normal(2, 4), uniform(2, 4)], {}, True),
        ("ranking_softmax_loss", [normal(2, 4), uniform(2, 4)],
         {"where": rank_where, "reduce_fn": None}, True),
        ("ranking_softmax_loss", [normal(3, 4), uniform(3, 4)],
         {"weights": uniform(3, 4), "reduce_fn": {"fn": "sum"}}, True),
        ("ntxent", [emb, np.array([0, 0, 1, 1, 2, 2], np.int32)], {"temperature": 0.5}, True),
        ("triplet_margin_loss", [normal(3, 4), normal(3, 4), normal(3, 4)], {"margin": 2.0},
         True),
        ("triplet_margin_loss", [normal(3, 4), normal(3, 4), normal(3, 4)],
         {"norm_degree": 1, "axis": 0}, True),
        ("smooth_labels", [labels, 0.2], {}, True),
        ("smooth_labels", [labels, 0.1], {"where": where}, False),
        ("fenchel_young_logsumexp", [logits, labels], {}, True),
        ("dice_loss", seg_inputs(3), {}, True),
        ("dice_loss", seg_inputs(3), {"class_weights": uniform(3), "alpha": 0.3, "beta": 0.7,
                                      "reduction": "sum", "ignore_background": True}, True),
        ("dice_loss", seg_inputs(3), {"reduction": "none", "smooth": 0.5, "axis": (1,)}, True),
        ("multiclass_generalized_dice_loss", seg_inputs(4), {}, True),
        ("binary_dice_loss", [normal(2, 4, 4), ints(2, 2, 4, 4).astype(np.float32)], {}, True),
        ("dice_loss", [probs(2, 4, 4, 3), seg_inputs(3)[1]], {"apply_softmax": False}, True),
    ]
    return cases


def loss_records():
    out = []
    for i, (name, args, kwargs, with_grad) in enumerate(loss_cases()):
        fn = loss_fn(name)
        jargs = [jnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
        jkwargs = dec(enc(kwargs))
        value = fn(*jargs, **jkwargs)
        rec = {"id": f"{i:02d}-{name}", "name": name, "args": enc(args), "kwargs": enc(kwargs),
               "value": enc(value)}
        if with_grad:
            grad = jax.grad(lambda x: jnp.sum(fn(x, *jargs[1:], **jkwargs)))(jargs[0])
            rec["grad"] = enc(grad)
        out.append(rec)
    return out


SCHEDULES = [
    {"name": "constant_schedule", "kwargs": {"value": 0.25}},
    {"name": "polynomial_schedule", "kwargs": {"init_value": 1.0, "end_value": 0.01,
                                               "power": 3, "transition_steps": 60,
                                               "transition_begin": 20}},
    {"name": "linear_schedule", "kwargs": {"init_value": 0.5, "end_value": 2.0,
                                           "transition_steps": 40, "transition_begin": 10}},
    {"name": "piecewise_constant_schedule",
     "kwargs": {"init_value": 0.3, "boundaries_and_scales": {"10": 0.5, "45": 0.2, "90": 4.0}}},
    {"name": "exponential_decay", "kwargs": {"init_value": 0.2, "transition_steps": 7,
                                             "decay_rate": 0.9, "transition_begin": 15,
                                             "staircase": True, "end_value": 0.1}},
    {"name": "exponential_decay", "kwargs": {"init_value": 0.01, "transition_steps": 20,
                                             "decay_rate": 1.5, "end_value": 0.03}},
    {"name": "cosine_decay_schedule", "kwargs": {"init_value": 0.7, "decay_steps": 80,
                                                 "alpha": 0.05, "exponent": 2.0}},
    {"name": "warmup_cosine_decay_schedule",
     "kwargs": {"init_value": 0.01, "peak_value": 0.5, "warmup_steps": 15, "decay_steps": 90,
                "end_value": 0.02, "exponent": 1.5}},
    {"name": "warmup_exponential_decay_schedule",
     "kwargs": {"init_value": 0.0, "peak_value": 1.0, "warmup_steps": 12,
                "transition_steps": 9, "decay_rate": 0.8, "transition_begin": 5,
                "staircase": True, "end_value": 0.2}},
    {"name": "warmup_constant_schedule", "kwargs": {"init_value": 0.05, "peak_value": 0.4,
                                                    "warmup_steps": 25}},
    {"name": "piecewise_interpolate_schedule",
     "kwargs": {"interpolate_type": "linear", "init_value": 0.5,
                "boundaries_and_scales": {"10": 2.0, "40": 0.1, "41": 3.0, "90": 0.5}}},
    {"name": "piecewise_interpolate_schedule",
     "kwargs": {"interpolate_type": "cosine", "init_value": 1.0,
                "boundaries_and_scales": {"20": 0.5, "70": 0.01}}},
    {"name": "linear_onecycle_schedule", "kwargs": {"transition_steps": 100,
                                                    "peak_value": 0.8}},
    {"name": "linear_onecycle_schedule",
     "kwargs": {"transition_steps": 70, "peak_value": 1.0, "pct_start": 0.2, "pct_final": 0.6,
                "div_factor": 10.0, "final_div_factor": 100.0}},
    {"name": "cosine_onecycle_schedule", "kwargs": {"transition_steps": 100,
                                                    "peak_value": 0.8}},
    {"name": "cosine_onecycle_schedule",
     "kwargs": {"transition_steps": 60, "peak_value": 2.0, "pct_start": 0.4,
                "div_factor": 5.0, "final_div_factor": 50.0}},
    {"name": "sgdr_schedule", "kwargs": {"cosine_kwargs": [
        {"init_value": 0.0, "peak_value": 1.0, "warmup_steps": 5, "decay_steps": 30},
        {"init_value": 0.1, "peak_value": 0.5, "warmup_steps": 10, "decay_steps": 40,
         "end_value": 0.05},
        {"init_value": 0.0, "peak_value": 0.2, "warmup_steps": 0, "decay_steps": 25}]}},
    {"name": "join_schedules", "kwargs": {
        "schedules": [{"name": "constant_schedule", "kwargs": {"value": 0.1}},
                      {"name": "linear_schedule", "kwargs": {"init_value": 0.1,
                                                             "end_value": 0.9,
                                                             "transition_steps": 30}},
                      {"name": "cosine_decay_schedule", "kwargs": {"init_value": 0.9,
                                                                   "decay_steps": 40}}],
        "boundaries": [20, 50]}},
]
STEPS = [0, 1, 5, 9, 10, 11, 14, 15, 16, 20, 21, 25, 30, 35, 40, 41, 45, 50, 60, 69, 70, 71,
         80, 85, 89, 90, 91, 95, 99, 100, 101, 150]


def build_schedule(spec):
    kwargs = {}
    for k, v in spec["kwargs"].items():
        if k == "schedules":
            v = [build_schedule(s) for s in v]
        elif k == "boundaries_and_scales":
            v = {int(step): scale for step, scale in v.items()}
        kwargs[k] = v
    return getattr(optax.schedules, spec["name"])(**kwargs)


def schedule_records():
    out = []
    for i, spec in enumerate(SCHEDULES):
        fn = build_schedule(spec)
        values = [np.float32(fn(jnp.asarray(s, jnp.int32))) for s in STEPS]
        out.append({"id": f"{i:02d}-{spec['name']}", "spec": spec, "steps": STEPS,
                    "values": [float(v) for v in values]})
    return out


def inject_record():
    params = {"w": normal(3), "b": normal(2)}
    grads = [{"w": normal(3), "b": normal(2)} for _ in range(10)]
    spec = {"name": "cosine_onecycle_schedule", "kwargs": {"transition_steps": 10,
                                                           "peak_value": 0.5}}
    opt = optax.inject_hyperparams(optax.sgd)(learning_rate=build_schedule(spec),
                                              momentum=0.9)
    state = opt.init(params)
    p, lrs, traj = params, [], []
    for g in grads:
        lrs.append(float(np.float32(state.hyperparams["learning_rate"])))
        updates, state = opt.update(g, state, p)
        p = optax.apply_updates(p, updates)
        traj.append(enc(p))
    return {"schedule": spec, "momentum": 0.9, "params": enc(params), "grads": enc(grads),
            "learning_rates": lrs, "trajectory": traj}


def tree_records():
    x = {"a": normal(3), "b": {"c": normal(2, 2), "d": np.float32(1.5)}}
    y = {"a": normal(3), "b": {"c": normal(2, 2), "d": np.float32(-0.5)}}
    z = {"a": normal(3), "b": {"c": normal(2, 2), "d": np.float32(2.0)}}
    pos = {"a": uniform(3), "b": {"c": uniform(2, 2), "d": np.float32(0.7)}}
    mixed = {"f": np.ones(2, np.float32), "i": np.arange(3, dtype=np.int32),
             "h": np.ones(2, np.float16)}
    cplx = {"u": (normal(3) + 1j * normal(3)).astype(np.complex64), "v": normal(2)}
    cases = [
        ("add", [x, y], {}), ("add", [x, y, z], {}), ("sub", [x, y], {}), ("mul", [x, y], {}),
        ("div", [x, pos], {}), ("scale", [np.float32(0.3), x], {}),
        ("add_scale", [x, np.float32(-1.7), y], {}), ("vdot", [x, y], {}),
        ("sum", [x], {}), ("sum", [x], {"associative_reduction": True}), ("max", [x], {}),
        ("min", [x], {}), ("size", [x], {}), ("norm", [x], {}), ("norm", [x], {"ord": 1}),
        ("norm", [x], {"ord": "inf"}), ("norm", [x], {"ord": 2, "squared": True}),
        ("norm", [x], {"ord": 1, "squared": True}), ("norm", [cplx], {}),
        ("batch_shape", [x], {"shape": (2,)}), ("zeros_like", [x], {}),
        ("ones_like", [x], {"dtype": "int32"}), ("full_like", [x, 2.5], {}),
        ("clip", [x], {"min_value": -0.5, "max_value": 0.4}), ("clip", [x], {"max_value": 0.0}),
        ("update_moment", [x, y, 0.9, 2], {}), ("update_moment", [x, y, 0.8, 1], {}),
        ("update_infinity_moment", [x, pos, 0.99, 1e-3], {}),
        ("update_moment_per_elem_norm", [x, y, 0.9, 2], {}),
        ("update_moment_per_elem_norm", [cplx, {"u": normal(3), "v": normal(2)}, 0.9, 3], {}),
        ("bias_correction", [x, 0.9, np.int32(3)], {}),
        ("where", [np.bool_(False), x, y], {}), ("allclose", [x, x], {}),
        ("allclose", [x, y], {"atol": 10.0}), ("allclose", [x, y], {}),
        ("cast", [x, "float16"], {}), ("cast_like", [mixed, {"f": np.ones(2, np.int32),
                                                              "i": np.ones(3, np.float32),
                                                              "h": 1.0}], {}),
        ("conj", [cplx], {}), ("real", [cplx], {}),
    ]
    out = []
    for i, (name, args, kwargs) in enumerate(cases):
        value = getattr(optax.tree, name)(*[dec(enc(a)) for a in args], **kwargs)
        out.append({"id": f"{i:02d}-{name}", "name": name, "args": enc(args),
                    "kwargs": enc(kwargs), "value": enc(value)})
    dtypes = {}
    for handler in [None, "promote", "highest", "lowest"]:
        tree = mixed if handler else {"f": np.ones(2, np.float32)}
        dtypes[str(handler)] = str(np.dtype(optax.tree.dtype(dec(enc(tree)), handler)))
    key_tree = {"p": np.zeros((2, 3), np.float32), "q": [np.zeros(4, np.float32)]}
    keys = optax.tree.split_key_like(jax.random.key(7), key_tree)
    rand = optax.tree.random_like(jax.random.key(3), dec(enc(key_tree)))
    rand_u = optax.tree.random_like(jax.random.key(3), dec(enc(key_tree)),
                                    sampler=jax.random.uniform)
    return {"cases": out, "dtype": {"mixed": enc(mixed), "results": dtypes},
            "random": {"tree": enc(key_tree),
                       "split_key_like": enc(jax.tree.map(jax.random.key_data, keys)),
                       "random_like_normal": enc(rand), "random_like_uniform": enc(rand_u)}}


def tree_state_record():
    params = {"w": normal(2, 2), "b": normal(2)}
    grads = {"w": normal(2, 2), "b": normal(2)}
    opt = optax.chain(optax.add_decayed_weights(1e-2), optax.scale_by_adam(),
                      optax.scale_by_learning_rate(0.1))
    state = opt.init(params)
    _, state = opt.update(grads, state, params)

    def paths(found):
        return [[[str(k) for k in path], enc(value)] for path, value in found]
    got = {key: paths(optax.tree.get_all_with_path(state, key))
           for key in ["mu", "count", "ScaleByAdamState", "w"]}
    nu = optax.tree.get(state, "nu")
    new_state = optax.tree.set(state, count=jnp.asarray(7, jnp.int32))
    mapped = optax.tree.map_params(opt, lambda v: v * 2.0 + 1.0, state)
    return {"params": enc(params), "grads": enc(grads), "state_leaves": enc(
        jax.tree.leaves(state)), "get_all_with_path": got, "get_nu": enc(nu),
        "set_count_leaves": enc(jax.tree.leaves(new_state)),
        "map_params_leaves": enc(jax.tree.leaves(mapped))}


def projection_records():
    tree = {"a": normal(4) * 2, "b": normal(2, 3)}
    small = {"a": normal(4) * 0.05, "b": normal(2, 3) * 0.05}
    lower = {"a": np.full(4, -0.5, np.float32), "b": np.full((2, 3), -1.0, np.float32)}
    upper = {"a": np.full(4, 0.25, np.float32), "b": np.full((2, 3), 0.5, np.float32)}
    a = {"a": normal(4), "b": normal(2, 3)}
    cases = [
        ("projection_non_negative", [tree], {}, True),
        ("projection_box", [tree, lower, upper], {}, True),
        ("projection_hypercube", [tree["a"]], {"scale": 0.7}, True),
        ("projection_simplex", [tree], {}, True),
        ("projection_simplex", [tree["a"]], {"scale": 3.0}, True),
        ("projection_simplex", [normal(7)], {"scale": 0.5}, True),
        ("projection_l1_sphere", [tree], {"scale": 2.0}, True),
        ("projection_l1_ball", [tree], {"scale": 2.0}, True),
        ("projection_l1_ball", [small], {"scale": 2.0}, True),
        ("projection_l2_sphere", [tree], {"scale": 1.5}, True),
        ("projection_l2_ball", [tree], {"scale": 1.5}, True),
        ("projection_l2_ball", [small], {"scale": 1.5}, True),
        ("projection_linf_ball", [tree], {"scale": 0.6}, True),
        ("projection_vector", [tree, a], {}, True),
        ("projection_hyperplane", [tree, a, np.float32(0.8)], {}, True),
        ("projection_halfspace", [tree, a, np.float32(-0.3)], {}, True),
        ("projection_halfspace", [tree, a, np.float32(100.0)], {}, False),
    ]
    out = []
    for i, (name, args, kwargs, with_grad) in enumerate(cases):
        fn = getattr(optax.projections, name)
        jargs = [dec(enc(v)) for v in args]
        value = fn(*jargs, **kwargs)
        rec = {"id": f"{i:02d}-{name}", "name": name, "args": enc(args), "kwargs": enc(kwargs),
               "value": enc(value)}
        if with_grad:
            weights = jax.tree.map(lambda v: jnp.asarray(normal(*np.shape(v))), jargs[0])

            def objective(x):
                proj = fn(x, *jargs[1:], **kwargs)
                return optax.tree.vdot(weights, proj)
            rec["grad_weights"] = enc(weights)
            rec["grad"] = enc(jax.grad(objective)(jargs[0]))
        out.append(rec)
    return out


def misc_records():
    """optax.incremental_update / periodic_update / scale_gradient / multi_normal,
    optax.second_order, optax.perturbations and the linear-algebra helpers."""
    new, old = {"a": normal(3), "b": normal(2, 2)}, {"a": normal(3), "b": normal(2, 2)}
    x = normal(4)
    params = {"w": normal(3, 2), "b": normal(2)}
    inputs, targets = normal(5, 3), normal(5, 2)

    def loss(p, xs, ys):
        return jnp.mean(jnp.sum(jnp.tanh(xs @ p["w"] + p["b"]) - ys, axis=-1) ** 2)
    v = normal(8)
    sym = normal(4, 4)
    spd = sym @ sym.T + 0.5 * np.eye(4, dtype=np.float32)
    A, b, B = normal(6, 3), normal(6), normal(6, 2)
    key_loc, key_scale = normal(2, 3), normal(3) * 0.3
    dist = optax.multi_normal(key_loc, key_scale)
    sample = dist.sample((4,), jax.random.key(5))
    argmax_fn = lambda z: jax.nn.one_hot(jnp.argmax(z), 4)
    out = {
        "new": enc(new), "old": enc(old), "x": enc(x), "params": enc(params),
        "inputs": enc(inputs), "targets": enc(targets), "v": enc(v), "spd": enc(spd),
        "A": enc(A), "b": enc(b), "B": enc(B), "loc": enc(key_loc),
        "log_scale": enc(key_scale),
        "incremental_update": enc(optax.incremental_update(new, old, 0.3)),
        "periodic_update": [enc(optax.periodic_update(new, old, jnp.asarray(s), 3))
                            for s in (6, 7)],
        "scale_gradient_grad": enc(jax.grad(
            lambda z: jnp.sum(optax.scale_gradient(z, -2.5) ** 3))(x)),
        "multi_normal_sample": enc(sample),
        "multi_normal_log_prob": enc(dist.log_prob(sample)),
        "hvp": enc(optax.second_order.hvp(loss, v, params, inputs, targets)),
        "hessian_diag": enc(optax.second_order.hessian_diag(loss, params, inputs, targets)),
        "fisher_diag": enc(optax.second_order.fisher_diag(loss, params, inputs, targets)),
        "power_iteration": enc(optax.power_iteration(spd, num_iters=200)),
        "matrix_inverse_pth_root": [enc(optax.matrix_inverse_pth_root(spd, p)[0])
                                    for p in (1, 2, 4)],
        "nnls": enc(optax.nnls(A, b, 200)), "nnls_matrix": enc(optax.nnls(A, B, 200)),
    }
    perturbed = {}
    for name, noise in [("normal", optax.perturbations.Normal()),
                        ("gumbel", optax.perturbations.Gumbel())]:
        fn = optax.perturbations.make_perturbed_fun(argmax_fn, num_samples=64, sigma=0.5,
                                                    noise=noise)
        value = fn(jax.random.key(11), jnp.asarray(x))
        grad = jax.grad(lambda z: jnp.vdot(jnp.arange(4.0), fn(jax.random.key(11), z)))(
            jnp.asarray(x))
        perturbed[name] = {"value": enc(value), "grad": enc(grad)}
    out["perturbed_argmax"] = perturbed
    return out


def assignment_records():
    out = []
    for shape in [(6, 6), (4, 7), (7, 4), (1, 3), (5, 1)]:
        cost = jnp.asarray(uniform(*shape) * 10 - 3)
        out.append({"cost": enc(cost),
                    "hungarian_algorithm": enc(optax.assignment.hungarian_algorithm(cost)),
                    "base_hungarian_algorithm": enc(
                        optax.assignment.base_hungarian_algorithm(cost))})
    return out


def microbatching_records():
    mb = optax.microbatching
    x, y = normal(8, 3), normal(8)
    params = {"w": normal(3), "b": np.float32(0.2)}

    def stats(xs, ys):
        return {"sq": jnp.sum(xs ** 2, axis=0), "dot": jnp.sum(xs, axis=1) * ys}

    def loss(p, xs, ys):
        return jnp.mean((xs @ p["w"] + p["b"] - ys) ** 2)

    def clip(g):
        norm = optax.tree.norm(g)
        return optax.tree.scale(1.0 / jnp.maximum(1.0, norm), g)
    out = {"x": enc(x), "y": enc(y), "params": enc(params),
           "reshape": enc(mb.reshape_batch_axis(jnp.asarray(x), 2))}
    for name in ["SUM", "MEAN", "RUNNING_MEAN"]:
        acc = {"sq": getattr(mb.AccumulationType, name),
               "dot": mb.AccumulationType.CONCAT}
        fn = mb.microbatch(stats, argnums=(0, 1), microbatch_size=2, accumulator=acc)
        out["microbatch_" + name] = enc(fn(jnp.asarray(x), jnp.asarray(y)))
    fn = mb.microbatch(stats, argnums=0, argnames="ys", microbatch_size=4,
                       accumulator={"sq": mb.AccumulationType.SUM,
                                    "dot": mb.AccumulationType.CONCAT},
                       num_real_microbatches=1)
    out["microbatch_early_stop"] = enc(fn(jnp.asarray(x), ys=jnp.asarray(y)))
    out["micro_vmap"] = enc(mb.micro_vmap(lambda row, s: jnp.sum(row) * s, in_axes=(0, None),
                                          microbatch_size=4)(jnp.asarray(x), 3.0))
    grad_fn = mb.micro_grad(loss, batch_argnums=(1, 2), microbatch_size=2, transform_fn=clip,
                            metrics_fn=optax.tree.norm)
    total, aux = grad_fn(params, jnp.asarray(x), jnp.asarray(y))
    out["micro_grad"] = {"total": enc(total), "values": enc(aux.values),
                         "metrics": enc(aux.metrics)}
    return out


def aggregating_records():
    ag = optax.experimental.aggregating
    params = {"w": normal(3), "b": normal(2)}
    per_elt = [{"w": normal(4, 3), "b": normal(4, 2)} for _ in range(4)]
    out = {"params": enc(params), "per_elt": enc(per_elt), "runs": {}}
    runs = {"mean_variance_1": ag.add_mean_variance_to_opt(optax.sgd(0.1), ema_decay=0.8),
            "mean_variance_2": ag.add_mean_variance_to_opt(optax.adam(0.05),
                                                           accumulation_steps=2),
            "incremental_3": ag.average_incrementally_updates(0, 3)}
    for name, opt in runs.items():
        state, updates = opt.init(params), []
        for g in per_elt:
            u, state = opt.update(g, state, params)
            updates.append(enc(u))
        run = {"updates": updates}
        if name.startswith("mean_variance"):
            run["unbiased"] = enc(ag.get_unbiased_mean_and_variance_ema(state))
        out["runs"][name] = run
    return out


def main():
    out = {"versions": {"jax": jax.__version__, "optax": optax.__version__},
           "losses": loss_records(), "schedules": schedule_records(),
           "inject": inject_record(), "tree": tree_records(),
           "tree_state": tree_state_record(), "projections": projection_records(),
           "misc": misc_records(), "assignment": assignment_records(),
           "microbatching": microbatching_records(), "aggregating": aggregating_records()}
    with open(OUT, "w") as f:
        json.dump(out, f, indent=None, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {OUT}: {os.path.getsize(OUT)} bytes")


if __name__ == "__main__":
    main()
