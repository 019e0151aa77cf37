"""Record Flax's msgpack bytes (flax.serialization.to_bytes / msgpack_serialize) for a few
pytrees, so tests can check that nn.serialization writes the same bytes and reads Flax's.

    /work/flaxvenv/bin/python tests/golden/gen_flax_serialization.py

Writes tests/golden/flax_serialization.json: {name: hex of the bytes}. The pytrees are
rebuilt in tests/test_nn_flax_params.py (keep the two in step).
"""
import json
import os

import numpy as np

import jax
import jax.numpy as jnp
import optax
from flax import serialization, struct
from flax.core import freeze
from flax.training import train_state

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "flax_serialization.json")


@struct.dataclass
class Point:
    xy: jax.Array
    label: str = struct.field(pytree_node=False, default="p")


def params():
    return {"Dense_0": {"kernel": jnp.asarray(np.arange(6).reshape(2, 3) * 0.25, jnp.float32),
                        "bias": jnp.asarray([0.5, -1.0, 2.0], jnp.float32)}}


def grads():
    return {"Dense_0": {"kernel": jnp.asarray(np.ones((2, 3)) * 0.5, jnp.float32),
                        "bias": jnp.asarray([1.0, 2.0, -4.0], jnp.float32)}}


def trees():
    mixed = {"a": jnp.asarray(np.arange(6).reshape(2, 3) / 8, jnp.float32),
             "b": jnp.asarray([[1, -2], [3, 4]], jnp.int32),
             "c": jnp.asarray([True, False, True]),
             "d": {"e": 1.5, "f": 3, "g": True, "h": None, "s": "text", "z": 2 - 1j},
             "l": [np.float32(2.5), np.int32(7), np.asarray(np.arange(3), np.float64)],
             "t": (1, 2.0, jnp.float32(0.125))}
    state = train_state.TrainState.create(apply_fn=None, params=params(),
                                          tx=optax.sgd(0.1, momentum=0.9))
    state = state.apply_gradients(grads=grads())
    return {
        "mixed": serialization.to_bytes(mixed),
        "frozen": serialization.to_bytes(freeze({"params": params()})),
        "dataclass": serialization.to_bytes([Point(jnp.asarray([1.0, 2.0])), Point(
            jnp.asarray([3.0, 4.0]), "q")]),
        "train_state": serialization.to_bytes(state),
        "raw_msgpack": serialization.msgpack_serialize(
            {"x": [1, 2, {"y": np.asarray([1.5], np.float32)}], "n": np.int32(3)}),
        "empty": serialization.to_bytes({"params": {}, "list": [], "scalar": 0.0}),
    }


def main():
    out = {name: data.hex() for name, data in trees().items()}
    with open(OUT, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print(f"wrote {OUT}: {len(out)} byte strings")


if __name__ == "__main__":
    main()
