"""A stand-in for flax.metrics.tensorboard: SummaryWriter appends one JSON line per call to
workdir/metrics.jsonl (hyperparameters and scalars by step)."""
import json
import os


class SummaryWriter:
    def __init__(self, log_dir):
        os.makedirs(log_dir, exist_ok=True)
        self._file = open(os.path.join(log_dir, "metrics.jsonl"), "a")

    def hparams(self, hparams):
        self._file.write(json.dumps({"hparams": dict(hparams)}) + "\n")

    def scalar(self, tag, value, step):
        self._file.write(json.dumps({"tag": tag, "value": float(value), "step": int(step)})
                         + "\n")

    def flush(self):
        self._file.flush()
