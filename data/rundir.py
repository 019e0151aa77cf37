"""A training run's output folder: what is in it, and keeping it whole.

- `holds_run(folder)`: whether the folder already holds a run (a checkpoint or metrics), which
  a new run must not overwrite unless told to.
- `record_config(folder, config, resume)`: writes config.yaml; on resume, a changed config is
  reported key by key and the previous one kept as config.<n>.yaml.
- `remove_stale_temporaries(folder)`: temporary checkpoint files a killed writer left behind.
- `trim_metrics(path, step)`: drops the records of steps after a checkpoint's step, so that a
  resumed run does not repeat them. Rewritten atomically.
"""
from __future__ import annotations

import glob
import json
import os

import yaml

from data import checkpoint

__all__ = ["holds_run", "record_config", "remove_stale_temporaries", "trim_metrics",
           "RUN_FILES"]

RUN_FILES = ("checkpoint.npz", "metrics.jsonl")


def holds_run(folder: str) -> list[str]:
    """The run files (checkpoint, non-empty metrics) present in `folder`."""
    found = []
    for name in RUN_FILES:
        path = os.path.join(folder, name)
        if os.path.isfile(path) and os.path.getsize(path) > 0:
            found.append(name)
    return found


def _flat(tree, prefix=""):
    out = {}
    for key, value in (tree or {}).items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value and not name.endswith(".args"):
            out.update(_flat(value, name + "."))
        else:
            out[name] = value
    return out


def _atomic_write(path: str, text: str) -> None:
    checkpoint.write_atomically(path, lambda f: f.write(text), mode="w")


def record_config(folder: str, config: dict, resume: bool) -> list[str]:
    """Writes `config` (nested) to folder/config.yaml. On resume, returns one line per key
    whose value differs from the previous config.yaml, which is then kept as config.<n>.yaml
    (n = 1, 2, ... in the order of the changes)."""
    path = os.path.join(folder, "config.yaml")
    text = yaml.safe_dump(config, sort_keys=False)
    changes = []
    if resume and os.path.isfile(path):
        with open(path) as f:
            old_text = f.read()
        old, new = _flat(yaml.safe_load(old_text)), _flat(config)
        for key in sorted(set(old) | set(new)):
            if old.get(key) != new.get(key):
                changes.append(f"{key}: {old.get(key)!r} -> {new.get(key)!r}")
        if changes:
            n = 1
            while os.path.exists(os.path.join(folder, f"config.{n}.yaml")):
                n += 1
            _atomic_write(os.path.join(folder, f"config.{n}.yaml"), old_text)
        else:
            return []
    _atomic_write(path, text)
    return changes


def remove_stale_temporaries(folder: str) -> list[str]:
    """Deletes the temporary files of atomic writes (".<name>.<random>.tmp") that a killed
    process left in `folder`; returns their names."""
    removed = []
    for path in glob.glob(os.path.join(folder, ".*.tmp")):
        base = os.path.basename(path)
        if any(base.startswith(f".{name}.") for name in (*RUN_FILES, "config.yaml")):
            try:
                os.unlink(path)
                removed.append(base)
            except OSError:
                pass
    return removed


def trim_metrics(path: str, step: int) -> int:
    """Keeps the records of metrics.jsonl up to `step` (a resumed checkpoint's); returns how
    many were dropped."""
    if not os.path.isfile(path):
        return 0
    kept, dropped = [], 0
    with open(path) as f:
        for line in f:
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:   # a line cut short by a kill
                dropped += 1
                continue
            if record.get("step", 0) > step:
                dropped += 1
            else:
                kept.append(line if line.endswith("\n") else line + "\n")
    if dropped:
        _atomic_write(path, "".join(kept))
    return dropped
