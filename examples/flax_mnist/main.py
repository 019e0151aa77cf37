"""Runs the MNIST example: python examples/flax_mnist/main.py --workdir /tmp/mnist
[--num_epochs 1] (Flax's main.py parses the same with absl flags and ml_collections)."""
import argparse
import logging
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import train  # noqa: E402
from configs import default  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workdir", required=True)
    for name, value in default.get_config().items():
        parser.add_argument(f"--{name}", type=type(value), default=value)
    args = parser.parse_args(argv)
    config = default.get_config()
    for name in config:
        config[name] = getattr(args, name)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    return train.train_and_evaluate(config, args.workdir)


if __name__ == "__main__":
    main()
