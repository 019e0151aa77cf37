"""Record Flax linen variable trees, forward outputs and initializer values as golden data.

Run with a Python that has jax and flax installed (neither is a corejax dependency):

    python tests/golden/gen_flax.py

Writes tests/golden/flax.json:
  * "models": for each model (its definition is written out in "layers"), the shapes of every
    variable after ``init`` ({collection: {module: {param: shape}}}), the output shape, and the
    output of ``apply`` with *deterministic* params (see "param_rule") on a fixed input; models
    with batch statistics are applied with ``mutable=["batch_stats"]`` and the updated
    statistics are recorded too.
  * "initializers": jax.nn.initializers outputs for PRNGKey(0), for both
    threefry_partitionable settings, keyed "partitionable=False" / "partitionable=True".
"""
import json
import os

import numpy as np

import jax
import jax.numpy as jnp
import flax
import flax.linen as nn

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "flax.json")
PARAM_RULE = ("flatten the 'params' collection in sorted path order; leaf i with n elements "
              "is float32(0.5 * sin(0.37 * arange(n) + i)) reshaped to the leaf's shape")


class MLP(nn.Module):
    @nn.compact
    def __call__(self, tokens):
        x = nn.Embed(num_embeddings=10, features=8)(tokens)
        x = nn.Dense(16)(x)
        x = nn.LayerNorm()(x)
        x = nn.relu(x)
        return nn.Dense(4)(x)


class CNN(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = nn.Conv(features=8, kernel_size=(3, 3))(x)
        x = nn.BatchNorm(use_running_average=False)(x)
        x = nn.relu(x)
        x = nn.Conv(features=16, kernel_size=(3, 3), strides=(2, 2), padding="VALID")(x)
        x = nn.GroupNorm(num_groups=4)(x)
        x = nn.avg_pool(x, window_shape=(2, 2), strides=(2, 2))
        x = x.reshape((x.shape[0], -1))
        return nn.Dense(10)(x)


MODELS = {
    "mlp": (MLP, ["Embed(num_embeddings=10, features=8)", "Dense(16)", "LayerNorm()", "relu",
                  "Dense(4)"],
            lambda: jnp.asarray([[0, 3, 9], [5, 5, 1]], jnp.int32)),
    "cnn": (CNN, ["Conv(8, (3, 3))", "BatchNorm(use_running_average=False)", "relu",
                  "Conv(16, (3, 3), strides=(2, 2), padding='VALID')", "GroupNorm(num_groups=4)",
                  "avg_pool((2, 2), strides=(2, 2))", "reshape((batch, -1))", "Dense(10)"],
            lambda: jnp.asarray(np.cos(np.arange(2 * 8 * 8 * 1) * 0.1).reshape(2, 8, 8, 1),
                                jnp.float32)),
}


def as_lists(tree):
    return jax.tree_util.tree_map(lambda x: np.asarray(x, np.float32).tolist(), tree)


def deterministic_params(params):
    leaves, treedef = jax.tree_util.tree_flatten(params)
    made = [np.float32(0.5 * np.sin(0.37 * np.arange(leaf.size) + i)).reshape(leaf.shape)
            for i, leaf in enumerate(leaves)]
    return jax.tree_util.tree_unflatten(treedef, [jnp.asarray(m, jnp.float32) for m in made])


def model_record(cls, layers, make_input):
    model, x = cls(), make_input()
    variables = jax.tree_util.tree_map(lambda a: a, dict(model.init(jax.random.PRNGKey(0), x)))
    shapes = jax.tree_util.tree_map(lambda a: list(a.shape), variables)
    fixed = {**variables, "params": deterministic_params(variables["params"])}
    record = {"layers": layers, "input": np.asarray(x).tolist(), "input_dtype": str(x.dtype),
              "variable_shapes": shapes}
    if "batch_stats" in variables:
        y, updated = model.apply(fixed, x, mutable=["batch_stats"])
        record["updated_batch_stats"] = as_lists(dict(updated)["batch_stats"])
    else:
        y = model.apply(fixed, x)
    record["output_shape"] = list(y.shape)
    record["output"] = as_lists(y)
    return record


def initializer_records():
    inits = {"lecun_normal": jax.nn.initializers.lecun_normal(),
             "he_normal": jax.nn.initializers.he_normal(),
             "glorot_uniform": jax.nn.initializers.glorot_uniform(),
             "normal(0.01)": jax.nn.initializers.normal(0.01)}
    out = {}
    for partitionable in (False, True):
        jax.config.update("jax_threefry_partitionable", partitionable)
        out[f"partitionable={partitionable}"] = {
            name: {str(shape): as_lists(init(jax.random.PRNGKey(0), shape, jnp.float32))
                   for shape in [(3, 4), (2, 2, 3, 4)]}
            for name, init in inits.items()}
    jax.config.update("jax_threefry_partitionable", False)
    return out


def main():
    out = {"versions": {"jax": jax.__version__, "flax": flax.__version__},
           "param_rule": PARAM_RULE,
           "models": {name: model_record(*spec) for name, spec in MODELS.items()},
           "initializers": initializer_records()}
    with open(OUT, "w") as f:
        json.dump(out, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {OUT}: {os.path.getsize(OUT)} bytes")


if __name__ == "__main__":
    main()
