"""How much of Flax's public surface nn covers (names recorded from Flax 0.12.8 by
tests/golden/gen_flax_surface.py). Prints the covered fraction of each module and fails if it
drops below the floor reached so far."""
import importlib
import json
import os

GOLDEN = os.path.join(os.path.dirname(__file__), "golden", "flax_surface.json")
OURS = {"flax.linen": "nn", "flax.struct": "nn.struct", "flax.core": "nn.core",
        "flax.serialization": "nn.serialization",
        "flax.training.train_state": "nn.training.train_state",
        "flax.training.common_utils": "nn.training.common_utils",
        "flax.training.early_stopping": "nn.training.early_stopping",
        "flax.training.checkpoints": "nn.training.checkpoints"}
# The covered counts reached; raise them as names are added.
FLOOR = {"flax.linen": 131, "flax.struct": 3, "flax.core": 10, "flax.serialization": 9,
         "flax.training.train_state": 1, "flax.training.common_utils": 5,
         "flax.training.early_stopping": 1, "flax.training.checkpoints": 6}


def test_flax_surface_coverage():
    with open(GOLDEN) as f:
        names = json.load(f)["modules"]
    total_have = total = 0
    for flax_name, ours in OURS.items():
        module = importlib.import_module(ours)
        have = [n for n in names[flax_name] if hasattr(module, n)]
        missing = sorted(set(names[flax_name]) - set(have))
        total_have, total = total_have + len(have), total + len(names[flax_name])
        print(f"{flax_name}: {len(have)}/{len(names[flax_name])} missing {missing}")
        assert len(have) >= FLOOR[flax_name], (flax_name, missing)
    print(f"total: {total_have}/{total} ({100 * total_have / total:.1f}%)")
