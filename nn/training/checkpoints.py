"""flax.training.checkpoints (the single-file format): `save_checkpoint(dir, target, step)`
writes `dir/checkpoint_<step>` holding Flax's msgpack bytes of the target's state dict, so a
file written here restores in Flax (with flax_use_orbax_checkpointing off) and the reverse.
Writes are atomic: the bytes go to a temporary file in the same folder, flushed and fsync'ed,
then `os.replace`d onto the final name (as data/checkpoint.py does for its .npz files), so a
crash leaves either the old set of checkpoints or the new one.
"""
from __future__ import annotations

import os
import re
from typing import Any, Iterable

from data.checkpoint import write_atomically
from nn import serialization

__all__ = ["save_checkpoint", "restore_checkpoint", "latest_checkpoint", "available_steps",
           "natural_sort", "safe_normpath", "InvalidCheckpointError"]

_SIGNED_FLOAT = re.compile(r"([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)")
_UNSIGNED_FLOAT = re.compile(r"((?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)")


class InvalidCheckpointError(Exception):
    """A checkpoint for this step, or a later one, exists already (pass overwrite=True)."""

    def __init__(self, path, step):
        super().__init__(f"Trying to save an outdated checkpoint at step: \"{step}\" and path: "
                         f"\"{path}\". A checkpoint of this or a later step exists; pass "
                         "overwrite=True to replace it (and delete the later ones).")


def natural_sort(file_list: Iterable[str], signed: bool = True) -> list[str]:
    """Sorts names by their numeric parts as numbers: ckpt_2 before ckpt_10."""
    pattern = _SIGNED_FLOAT if signed else _UNSIGNED_FLOAT

    def key(name):
        return [float(part) if pattern.fullmatch(part) else part
                for part in pattern.split(name)]
    return sorted(file_list, key=key)


def safe_normpath(path: str) -> str:
    """os.path.normpath that keeps a URL scheme ('gs://bucket//a' -> 'gs://bucket/a')."""
    match = re.match(r"^([a-z0-9+.-]+://)?(.*)$", path, re.DOTALL)
    return (match.group(1) or "") + os.path.normpath(match.group(2))


def _step_of(path: str) -> float | None:
    for part in reversed(_SIGNED_FLOAT.split(path)):
        if _SIGNED_FLOAT.fullmatch(part):
            return float(part)
    return None


def _all_checkpoints(ckpt_dir: str, prefix: str) -> list[str]:
    try:
        names = os.listdir(ckpt_dir)
    except FileNotFoundError:
        return []
    paths = [os.path.join(ckpt_dir, n) for n in names
             if n.startswith(prefix) and n != f"{prefix}tmp" and not n.endswith(".tmp")]
    return natural_sort(paths)


def latest_checkpoint(ckpt_dir, prefix: str = "checkpoint_") -> str | None:
    """The path of the highest-step checkpoint in `ckpt_dir`, or None."""
    files = _all_checkpoints(os.fspath(ckpt_dir), prefix)
    return files[-1] if files else None


def available_steps(ckpt_dir, prefix: str = "checkpoint_", step_type: type = int) -> list:
    """The sorted steps of the checkpoints in `ckpt_dir`."""
    files = _all_checkpoints(os.fspath(ckpt_dir), prefix)
    return [step_type(f[f.rfind(prefix) + len(prefix):]) for f in files]


def save_checkpoint(ckpt_dir, target, step, prefix: str = "checkpoint_", keep: int = 1,
                    overwrite: bool = False, keep_every_n_steps: int | None = None,
                    async_manager=None, orbax_checkpointer=None) -> str:
    """Writes `target` (any serializable pytree: a TrainState, a dict of params) as
    `ckpt_dir/{prefix}{step}` and deletes all but the newest `keep` checkpoints (sparing one
    every `keep_every_n_steps` steps). Returns the path written."""
    if async_manager is not None or orbax_checkpointer is not None:
        raise NotImplementedError("save_checkpoint: async managers and Orbax checkpointers "
                                  "are not supported; checkpoints are written synchronously "
                                  "in the single-file msgpack format.")
    ckpt_dir = safe_normpath(os.fspath(ckpt_dir))
    os.makedirs(ckpt_dir, exist_ok=True)
    path = os.path.join(ckpt_dir, f"{prefix}{step}")
    existing = _all_checkpoints(ckpt_dir, prefix)
    if not overwrite:
        if path in existing or natural_sort(existing + [path])[-1] != path:
            raise InvalidCheckpointError(path, step)
    data = serialization.to_bytes(target)
    write_atomically(path, lambda f: f.write(data))
    files = _all_checkpoints(ckpt_dir, prefix)
    if overwrite and path in files:  # a rewrite of the past drops the later checkpoints
        later = files[files.index(path) + 1:]
        files = files[:files.index(path) + 1]
        for p in later:
            os.remove(p)
    last_kept = -float("inf")
    for p in files[:-keep] if len(files) > keep else []:
        if keep_every_n_steps:
            s = _step_of(p)
            if s and s - last_kept >= keep_every_n_steps:
                last_kept = s
                continue
        os.remove(p)
    return path


def restore_checkpoint(ckpt_dir, target: Any, step=None, prefix: str = "checkpoint_",
                       parallel: bool = True, gda_manager=None,
                       allow_partial_mpa_restoration: bool = False, orbax_checkpointer=None,
                       orbax_transforms=None):
    """`target` filled with the checkpoint's state (the raw state dict when target is None).
    `ckpt_dir` may name a checkpoint file; otherwise the newest checkpoint there (or the one of
    `step`) is read. With no checkpoint at all, `target` comes back unchanged."""
    del parallel, gda_manager, allow_partial_mpa_restoration, orbax_transforms
    if orbax_checkpointer is not None:
        raise NotImplementedError("restore_checkpoint: Orbax checkpointers are not supported; "
                                  "only single-file msgpack checkpoints are read.")
    ckpt_dir = safe_normpath(os.fspath(ckpt_dir))
    if step is not None:
        path = os.path.join(ckpt_dir, f"{prefix}{step}")
        if not os.path.exists(path):
            raise ValueError(f"Matching checkpoint not found: {path}")
    elif not os.path.exists(ckpt_dir):
        return target
    elif os.path.isdir(ckpt_dir):
        path = latest_checkpoint(ckpt_dir, prefix)
        if path is None:
            return target
        if os.path.isdir(path):
            raise NotImplementedError(f"{path} is a folder (an Orbax checkpoint); only "
                                      "single-file msgpack checkpoints can be restored.")
    else:
        path = ckpt_dir
    with open(path, "rb") as f:
        state = serialization.msgpack_restore(f.read())
    return state if target is None else serialization.from_state_dict(target, state)
