"""Record Optax's optimizer trajectories, schedule values and losses as golden data for optim.

Run with a Python that has jax and optax installed (neither is a corejax dependency):

    python tests/golden/gen_optax.py

Writes tests/golden/optax.json. Every spec is ``{"name": optax function, "kwargs": {...}}``;
a kwarg that is itself a spec (``join_schedules``' schedules) is nested the same way, and the
keys of ``piecewise_constant_schedule``'s ``boundaries_and_scales`` are step numbers written as
strings (JSON keys). Arrays are nested lists of float32 values (written exactly, as doubles).
  * "params", "grads": the initial params pytree {"w": (3, 2), "b": (2,)} and one gradient
    pytree per step; "optimizers": [{"spec", "params": [params after step 1, 2, 3]}].
  * "schedule_steps" and "schedules": [{"spec", "values"}].
  * "losses": [{"name", "kwargs" (inputs), "value"}].
  * "clip_by_global_norm": {"max_norm", "grads", "updates"}.
"""
import json
import os

import numpy as np

import jax
import jax.numpy as jnp
import optax

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "optax.json")
STEPS = [0, 1, 49, 50, 51, 99, 100, 101, 1000]

OPTIMIZERS = [
    {"name": "sgd", "kwargs": {"learning_rate": 0.1}},
    {"name": "sgd", "kwargs": {"learning_rate": 0.1, "momentum": 0.9}},
    {"name": "sgd", "kwargs": {"learning_rate": 0.1, "momentum": 0.9, "nesterov": True}},
    {"name": "adam", "kwargs": {"learning_rate": 1e-2}},
    {"name": "adamw", "kwargs": {"learning_rate": 1e-2, "weight_decay": 1e-2}},
    {"name": "rmsprop", "kwargs": {"learning_rate": 1e-2}},
    {"name": "rmsprop", "kwargs": {"learning_rate": 1e-2, "momentum": 0.9, "centered": True}},
    {"name": "adagrad", "kwargs": {"learning_rate": 1e-1}},
    {"name": "lamb", "kwargs": {"learning_rate": 1e-2}},
    {"name": "lion", "kwargs": {"learning_rate": 1e-3}},
]

SCHEDULES = [
    {"name": "exponential_decay", "kwargs": {"init_value": 0.1, "transition_steps": 50,
                                             "decay_rate": 0.75, "staircase": True}},
    {"name": "exponential_decay", "kwargs": {"init_value": 0.1, "transition_steps": 50,
                                             "decay_rate": 0.75, "transition_begin": 10,
                                             "end_value": 0.01}},
    {"name": "piecewise_constant_schedule",
     "kwargs": {"init_value": 0.1, "boundaries_and_scales": {"100": 0.5, "200": 0.1}}},
    {"name": "linear_schedule", "kwargs": {"init_value": 1.0, "end_value": 0.0,
                                           "transition_steps": 100}},
    {"name": "polynomial_schedule", "kwargs": {"init_value": 1.0, "end_value": 0.1, "power": 2,
                                               "transition_steps": 100, "transition_begin": 5}},
    {"name": "cosine_decay_schedule", "kwargs": {"init_value": 1.0, "decay_steps": 100,
                                                 "alpha": 0.1}},
    {"name": "warmup_cosine_decay_schedule",
     "kwargs": {"init_value": 0.0, "peak_value": 1.0, "warmup_steps": 10, "decay_steps": 100,
                "end_value": 0.01}},
    {"name": "join_schedules", "kwargs": {
        "schedules": [{"name": "linear_schedule", "kwargs": {"init_value": 0.0, "end_value": 1.0,
                                                             "transition_steps": 50}},
                      {"name": "cosine_decay_schedule", "kwargs": {"init_value": 1.0,
                                                                   "decay_steps": 50}}],
        "boundaries": [50]}},
]


def build(spec):
    kwargs = {}
    for k, v in spec["kwargs"].items():
        if k == "schedules":
            v = [build(s) for s in v]
        elif k == "boundaries_and_scales":
            v = {int(step): scale for step, scale in v.items()}
        kwargs[k] = v
    return getattr(optax, spec["name"])(**kwargs)


def tolist(tree):
    return jax.tree_util.tree_map(lambda x: np.asarray(x, np.float32).tolist(), tree)


def f32(x):
    return jnp.asarray(np.asarray(x, np.float32))


def optimizer_records(params, grads):
    records = []
    for spec in OPTIMIZERS:
        opt = build(spec)
        p, state, trajectory = params, opt.init(params), []
        for g in grads:
            updates, state = opt.update(g, state, p)
            p = optax.apply_updates(p, updates)
            trajectory.append(tolist(p))
        records.append({"spec": spec, "params": trajectory})
    return records


def loss_records():
    logits = f32([[1.0, 2.0, 0.5, -1.0], [0.0, -3.0, 4.0, 1.0]])
    probs = f32([[0.1, 0.6, 0.3, 0.0], [0.0, 0.0, 1.0, 0.0]])
    labels = jnp.asarray([1, 2], jnp.int32)
    bin_logits = f32([[-2.0, 0.0, 3.0], [10.0, -10.0, 0.5]])
    bin_labels = f32([[0.0, 1.0, 1.0], [1.0, 0.0, 0.3]])
    preds = f32([[0.5, -1.0], [2.0, 3.0]])
    targets = f32([[1.0, 1.0], [0.0, 3.5]])
    cases = [("softmax_cross_entropy", {"logits": logits, "labels": probs}),
             ("softmax_cross_entropy_with_integer_labels", {"logits": logits, "labels": labels}),
             ("sigmoid_binary_cross_entropy", {"logits": bin_logits, "labels": bin_labels}),
             ("l2_loss", {"predictions": preds, "targets": targets}),
             ("l2_loss", {"predictions": preds}),
             ("squared_error", {"predictions": preds, "targets": targets}),
             ("squared_error", {"predictions": preds})]
    return [{"name": name, "kwargs": {k: np.asarray(v).tolist() for k, v in kw.items()},
             "value": np.asarray(getattr(optax, name)(**kw), np.float32).tolist()}
            for name, kw in cases]


def main():
    w = np.array([[0.5, -0.3], [0.1, 0.8], [-0.7, 0.2]], np.float32)
    b = np.array([0.05, -0.1], np.float32)
    params = {"w": jnp.asarray(w), "b": jnp.asarray(b)}
    grads = [{"w": f32(np.sin(np.arange(6).reshape(3, 2) + 1.0 + t) * (t + 1)),
              "b": f32(np.cos(np.arange(2) + 0.5 * t) - 0.25)} for t in range(3)]
    clip_grads = {"w": f32(np.arange(6).reshape(3, 2) - 2.5), "b": f32([0.3, -0.4])}
    clip = optax.clip_by_global_norm(1.0)
    clipped, _ = clip.update(clip_grads, clip.init(clip_grads))
    out = {
        "versions": {"jax": jax.__version__, "optax": optax.__version__},
        "params": tolist(params),
        "grads": [tolist(g) for g in grads],
        "optimizers": optimizer_records(params, grads),
        "schedule_steps": STEPS,
        "schedules": [{"spec": s, "values": [float(np.float32(build(s)(step))) for step in STEPS]}
                      for s in SCHEDULES],
        "losses": loss_records(),
        "clip_by_global_norm": {"max_norm": 1.0, "grads": tolist(clip_grads),
                                "updates": tolist(clipped)},
    }
    with open(OUT, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print(f"wrote {OUT}: {os.path.getsize(OUT)} bytes")


if __name__ == "__main__":
    main()
