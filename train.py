"""Config-driven MNIST training: `python train.py --config configs/mlp.yaml`.

Every config key, its type and default is in SCHEMA below and documented in configs/README.md.
After each epoch three lines go to stdout, as in the seed:

    Epoch 0 in 10.44 sec
    Training set accuracy 0.92524999
    Test set accuracy 0.92710000

Everything else (progress bar, notes) goes to stderr. The output folder receives config.yaml
(the resolved config), metrics.jsonl, checkpoint.npz and metrics.png.
Exit codes: 0 done, 1 failure (data, checkpoint, output folder, a non-finite loss), 2 bad
command line or config (or an output folder that already holds a run: --resume or --overwrite),
130 interrupted by Ctrl-C and 143 by SIGTERM (each after saving a checkpoint that --resume
continues from).
"""
from __future__ import annotations

import argparse
import difflib
import inspect
import json
import functools
import os
import signal
import sys
import time
from typing import Any, Sequence

import corejax  # noqa: F401  (before NumPy: it sets OpenBLAS's spin; see corejax/__init__.py)
import numpy as np
import yaml

import nn
import train_distributed
from data import DataFormatError, DataNotFoundError, CheckpointError, Preprocess
from data import batches, checkpoint, mnist, rundir
from data.batching import preprocess_batch

NONE = type(None)

# key: (accepted types, default, allowed values or None, documentation)
SCHEMA: dict[str, tuple[tuple, Any, tuple | None, str]] = {
    "model.name": ((str,), "mlp", ("mlp", "cnn"), "model: MLP or CNN (below)"),
    "model.args": ((dict,), {}, None, "keyword arguments of the model class"),
    "optimizer.name": ((str,), "sgd", None, "an optim function: sgd, adam, adamw, rmsprop, ..."),
    "optimizer.learning_rate": ((float,), 0.01, None,
                                "learning rate (the schedule's init_value if a schedule is set)"),
    "optimizer.args": ((dict,), {}, None, "other keyword arguments of the optimizer"),
    "optimizer.schedule.name": ((str, NONE), None, None,
                                "an optim schedule (exponential_decay, cosine_decay_schedule...)"),
    "optimizer.schedule.args": ((dict,), {}, None, "keyword arguments of the schedule"),
    "loss": ((str,), "cross_entropy", ("cross_entropy", "neg_mean_logp", "neg_sum_logp"),
             "cross_entropy: mean over the batch of softmax cross-entropy; neg_mean_logp: "
             "-mean(logp * onehot) over the (batch, 10) array (the seed's); neg_sum_logp: "
             "-sum(logp * onehot)"),
    "data.source": ((str,), "auto", ("auto", "idx", "tfds"), "where MNIST comes from"),
    "data.dir": ((str, NONE), None, None,
                 "folder of MNIST IDX files (--data-dir and COREJAX_DATA_DIR also set it)"),
    "data.limit": ((int, NONE), None, None, "use only the first N training examples"),
    "data.test_limit": ((int, NONE), None, None, "use only the first N test examples"),
    "data.flatten": ((bool,), True, None, "images as (784,) vectors, else (28, 28, 1)"),
    "data.scale": ((bool,), True, None, "pixels / 255 in [0, 1], else raw 0..255"),
    "data.shuffle": ((bool,), True, None, "shuffle each epoch (from the seed)"),
    "data.drop_remainder": ((bool,), False, None, "leave out the last, smaller batch"),
    "data.prefetch": ((int,), 2, None, "batches prepared ahead on a thread (0: none)"),
    "train.batch_size": ((int,), 128, None, "examples per step"),
    "train.epochs": ((int,), 10, None, "number of epochs"),
    "train.seed": ((int,), 0, None, "PRNGKey seed for the parameters and the shuffling"),
    "train.eval_every": ((int,), 1, None, "evaluate every N epochs (and after the last)"),
    "train.eval_batch_size": ((int,), 10000, None, "examples per evaluation call"),
    "train.devices": ((int,), 1, None,
                      "data-parallel over N CPU devices: each step's batch is split across "
                      "them (pmap) and the gradients averaged (pmean)"),
    "train.checkpoint_every": ((int,), 1, None, "save a checkpoint every N epochs"),
    "train.log_every": ((int,), 50, None, "write the loss to metrics.jsonl every N steps"),
    "train.stop_after_steps": ((int, NONE), None, None,
                               "stop after N steps of this run, saving a checkpoint "
                               "(continue with --resume)"),
    "output.dir": ((str,), "runs/default", None, "folder for checkpoint, metrics and plot"),
    "output.plot": ((bool,), True, None, "write metrics.png (needs matplotlib)"),
    "backend": ((str,), "cpu", ("cpu", "cuda"), "where corejax.jit runs the step"),
}
_DICT_KEYS = tuple(k for k, (types, *_rest) in SCHEMA.items() if dict in types)
_NULLABLE_GROUPS = ("optimizer.schedule",)


class ConfigError(ValueError):
    """A config file or --set override names an unknown key or has a mistyped value."""


def _suggest(key: str) -> str:
    close = difflib.get_close_matches(key, list(SCHEMA), n=1, cutoff=0.5)
    if not close:
        leaf = key.rsplit(".", 1)[-1]
        close = [k for k in SCHEMA if k.rsplit(".", 1)[-1] == leaf][:1]
    return f"; did you mean {close[0]!r}?" if close else f"; valid keys: {', '.join(SCHEMA)}."


def _check_value(key: str, value):
    types, _, choices, _ = SCHEMA[key]
    if float in types and isinstance(value, str):
        try:
            value = float(value)          # PyYAML reads 1e-3 (no dot) as a string
        except ValueError:
            pass
    if float in types and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    ok = isinstance(value, types) and not (isinstance(value, bool) and bool not in types)
    if not ok:
        names = " or ".join("null" if t is NONE else t.__name__ for t in types)
        raise ConfigError(f"config key {key!r} expects {names}, got "
                          f"{type(value).__name__} {value!r}.")
    if choices is not None and value not in choices:
        close = difflib.get_close_matches(str(value), choices, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ConfigError(f"config key {key!r} must be one of {list(choices)}, got "
                          f"{value!r}{hint}")
    return value


def _flatten(tree: dict, prefix: str = "") -> dict:
    out = {}
    for name, value in tree.items():
        key = f"{prefix}{name}"
        if key in SCHEMA:
            out[key] = value
        elif key in _NULLABLE_GROUPS and value is None:
            continue
        elif isinstance(value, dict) and any(k.startswith(key + ".") for k in SCHEMA):
            out.update(_flatten(value, key + "."))
        else:
            raise ConfigError(f"unknown config key {key!r}{_suggest(key)}")
    return out


def _set(cfg: dict, key: str, value) -> None:
    if key in SCHEMA:
        cfg[key] = _check_value(key, value)
        return
    for dict_key in _DICT_KEYS:
        if key.startswith(dict_key + "."):
            cfg[dict_key] = {**cfg[dict_key], key[len(dict_key) + 1:]: value}
            return
    raise ConfigError(f"unknown config key {key!r}{_suggest(key)}")


def load_config(path: str | None = None, overrides=(), data_dir: str | None = None) -> dict:
    """The resolved config as a flat dict of dotted keys: SCHEMA defaults, then the YAML file,
    then `overrides` ('key=value', the value parsed as YAML), then `data_dir`; the data folder
    falls back to $COREJAX_DATA_DIR."""
    cfg = {k: (dict(d) if isinstance(d, dict) else d) for k, (_, d, _, _) in SCHEMA.items()}
    if path is not None:
        try:
            with open(path) as f:
                tree = yaml.safe_load(f) or {}
        except OSError as e:
            raise ConfigError(f"cannot read config file {path!r}: {e.strerror}.") from e
        except yaml.YAMLError as e:
            raise ConfigError(f"config file {path!r} is not valid YAML: {e}") from e
        if not isinstance(tree, dict):
            raise ConfigError(f"config file {path!r} must hold a mapping of keys, got "
                              f"{type(tree).__name__}.")
        for key, value in _flatten(tree).items():
            _set(cfg, key, value)
    for item in overrides:
        key, sep, text = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"--set expects key=value, got {item!r}.")
        try:
            value = yaml.safe_load(text) if text else None
        except yaml.YAMLError as e:
            raise ConfigError(f"--set {key}: value {text!r} is not valid YAML: {e}") from e
        _set(cfg, key.strip(), value)
    if data_dir is not None:
        cfg["data.dir"] = data_dir
    elif cfg["data.dir"] is None:
        cfg["data.dir"] = os.environ.get(mnist.ENV_VAR) or None
    for key in ("train.batch_size", "train.epochs", "train.eval_every", "train.eval_batch_size",
                "train.checkpoint_every", "train.log_every", "data.limit", "data.test_limit",
                "train.stop_after_steps", "train.devices"):
        if cfg[key] is not None and cfg[key] <= 0:
            raise ConfigError(f"config key {key!r} must be positive, got {cfg[key]}.")
    if cfg["data.prefetch"] < 0:
        raise ConfigError(f"config key 'data.prefetch' must be 0 or more, got "
                          f"{cfg['data.prefetch']}.")
    lr = cfg["optimizer.learning_rate"]
    if not np.isfinite(lr):
        raise ConfigError(f"config key 'optimizer.learning_rate' must be a finite number, got "
                          f"{lr}.")
    return cfg


def nested(cfg: dict) -> dict:
    """The flat config as nested mappings (as written in YAML)."""
    out: dict = {}
    for key, value in cfg.items():
        node = out
        *parents, leaf = key.split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = value
    return out


# --------------------------------------------------------------------------- models
# Each returns log-probabilities; `model.name` picks one, `model.args` are its fields.

def _activation(name: str):
    fn = getattr(nn, name, None)
    if not callable(fn):
        raise ConfigError(f"model.args.activation: unknown activation {name!r}; use a "
                          "function of nn such as 'relu', 'tanh', 'gelu' or 'sigmoid'.")
    return fn


def _initializers(name: str, scale: float):
    """(kernel_init, bias_init). 'normal' draws both from N(0, scale^2), as the seed did."""
    if name == "normal":
        return nn.initializers.normal(stddev=scale), nn.initializers.normal(stddev=scale)
    kernel_init = getattr(nn.initializers, name, None)
    if kernel_init is None:
        raise ConfigError(f"model.args.weight_init: unknown initializer {name!r}; use 'normal' "
                          "or an nn.initializers name such as 'lecun_normal'.")
    return kernel_init(), nn.initializers.zeros


class MLP(nn.Module):
    """Dense layers of widths `features` with `activation`, then a Dense to `num_classes`."""
    features: Sequence[int] = (512, 512)
    num_classes: int = 10
    activation: str = "relu"
    weight_init: str = "normal"
    init_scale: float = 0.01

    @nn.compact
    def __call__(self, x):
        act = _activation(self.activation)
        kernel_init, bias_init = _initializers(self.weight_init, self.init_scale)
        x = x.reshape((x.shape[0], -1))
        for width in self.features:
            x = act(nn.Dense(width, kernel_init=kernel_init, bias_init=bias_init)(x))
        x = nn.Dense(self.num_classes, kernel_init=kernel_init, bias_init=bias_init)(x)
        return nn.log_softmax(x)


class CNN(nn.Module):
    """Conv(k x k) + activation + 2x2 pooling per entry of `features`, then Dense layers."""
    features: Sequence[int] = (32, 64)
    kernel_size: int = 3
    dense: int = 128
    num_classes: int = 10
    activation: str = "relu"
    pool: str = "max"

    @nn.compact
    def __call__(self, x):
        act = _activation(self.activation)
        if self.pool not in ("max", "avg"):
            raise ConfigError(f"model.args.pool: unknown pool {self.pool!r}; use 'max' or 'avg'.")
        pool = nn.max_pool if self.pool == "max" else nn.avg_pool
        if x.ndim == 2:      # flattened images
            x = x.reshape((x.shape[0], 28, 28, 1))
        elif x.ndim == 3:    # (batch, 28, 28): one channel (nn.Conv reads a 3-D input as an
            x = x[..., None]  # unbatched image, as Flax's does)
        for width in self.features:
            x = act(nn.Conv(width, kernel_size=(self.kernel_size, self.kernel_size))(x))
            x = pool(x, window_shape=(2, 2), strides=(2, 2))
        x = x.reshape((x.shape[0], -1))
        x = act(nn.Dense(self.dense)(x))
        x = nn.Dense(self.num_classes)(x)
        return nn.log_softmax(x)


MODELS = {"mlp": MLP, "cnn": CNN}


# --------------------------------------------------------------------------- building blocks

def _call_checked(fn, kwargs: dict, what: str, key: str = "args"):
    """Calls fn(**kwargs); an unknown keyword, a value of the wrong type, or arguments `fn`
    rejects become a ConfigError naming the config key."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        params = None
    if params is not None and not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        for name in kwargs:
            if name not in params:
                close = difflib.get_close_matches(name, list(params), n=1)
                hint = f"; did you mean {close[0]!r}?" if close else \
                    f"; valid: {', '.join(params)}"
                raise ConfigError(f"{what} has no argument {name!r}{hint}")
            _check_argument_type(params[name], kwargs[name], what, key)
    try:
        return fn(**kwargs)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"{what} rejects its arguments {kwargs!r} ({key}): {e}") from e


def _check_argument_type(param, value, what: str, key: str) -> None:
    """A value whose type cannot be what the parameter's default says (a string for a
    number, a number for a list) is named with its config key before anything is built."""
    default = param.default
    if default is inspect.Parameter.empty or default is None or value is None:
        return
    number = (int, float)
    if isinstance(default, bool):
        ok = isinstance(value, bool)
    elif isinstance(default, number):
        ok = isinstance(value, number) and not isinstance(value, bool) or callable(value)
    elif isinstance(default, (list, tuple)):
        ok = isinstance(value, (list, tuple))
    elif isinstance(default, str):
        ok = isinstance(value, str)
    else:
        return
    if not ok:
        raise ConfigError(f"{key}.{param.name}: {what} expects a value like "
                          f"{default!r} for {param.name!r}, got {type(value).__name__} "
                          f"{value!r}.")


def build_model(cfg: dict):
    cls = MODELS[cfg["model.name"]]
    return _call_checked(cls, dict(cfg["model.args"]), f"model {cfg['model.name']!r}",
                         "model.args")


def _optim_fn(name: str, what: str):
    import optim
    fn = getattr(optim, name, None)
    if not callable(fn) or name.startswith("_"):
        public = [n for n in dir(optim) if not n.startswith("_")]
        close = difflib.get_close_matches(name, public, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ConfigError(f"{what} {name!r} is not a function of optim{hint}")
    return fn


def build_optimizer(cfg: dict):
    learning_rate: Any = cfg["optimizer.learning_rate"]
    if cfg["optimizer.schedule.name"] is not None:
        sched = _optim_fn(cfg["optimizer.schedule.name"], "optimizer.schedule.name")
        args = {"init_value": learning_rate, **cfg["optimizer.schedule.args"]}
        learning_rate = _call_checked(sched, args, f"schedule {cfg['optimizer.schedule.name']!r}",
                                      "optimizer.schedule.args")
    make = _optim_fn(cfg["optimizer.name"], "optimizer.name")
    return _call_checked(make, {"learning_rate": learning_rate, **cfg["optimizer.args"]},
                         f"optimizer {cfg['optimizer.name']!r}", "optimizer.args")


def make_loss(name: str):
    import corejax.numpy as jnp
    import optim

    def loss(logp, onehot):
        if name == "neg_mean_logp":
            return -jnp.mean(logp * onehot)
        if name == "neg_sum_logp":
            return -jnp.sum(logp * onehot)
        return jnp.mean(optim.softmax_cross_entropy(logp, onehot))
    return loss


def load_data(cfg: dict):
    kw = dict(source=cfg["data.source"], data_dir=cfg["data.dir"])
    train_x, train_y = mnist.load("train", **kw)
    test_x, test_y = mnist.load("test", **kw)
    if cfg["data.limit"] is not None:
        train_x, train_y = train_x[:cfg["data.limit"]], train_y[:cfg["data.limit"]]
    if cfg["data.test_limit"] is not None:
        test_x, test_y = test_x[:cfg["data.test_limit"]], test_y[:cfg["data.test_limit"]]
    return train_x, train_y, test_x, test_y


def accuracy(predict, params, images, labels, pre: Preprocess, chunk: int) -> np.float32:
    """Fraction of correct argmax predictions, as float32 (as the seed's jnp.mean printed)."""
    correct = 0
    n = images.shape[0]
    for lo in range(0, n, chunk):
        x, _ = batches_preprocess(images[lo:lo + chunk], labels[lo:lo + chunk], pre)
        valid = x.shape[0]
        if valid < chunk and n > chunk:    # pad: one compiled shape for every chunk
            x = np.concatenate([x, np.zeros((chunk - valid,) + x.shape[1:], x.dtype)])
        pred = np.asarray(predict(params, x))[:valid]
        correct += int(np.sum(pred == labels[lo:lo + chunk]))
    return np.float32(correct) / np.float32(n)


def batches_preprocess(images, labels, pre: Preprocess):
    return preprocess_batch(images, labels, pre._replace(one_hot=None))


# --------------------------------------------------------------------------- training

class Metrics:
    """metrics.jsonl: one JSON object per line, flushed as written."""

    def __init__(self, path: str, append: bool):
        self.path = path
        self._f = open(path, "a" if append else "w")

    def write(self, **record):
        self._f.write(json.dumps(record, allow_nan=False) + "\n")
        self._f.flush()

    def close(self):
        self._f.close()

    def epochs(self) -> list[dict]:
        with open(self.path) as f:
            return [r for r in map(json.loads, filter(str.strip, f)) if r.get("type") == "epoch"]


def plot(records: list[dict], path: str) -> str:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed: no plot (pip install matplotlib)."
    epochs = [r["epoch"] for r in records]
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(10, 4))
    ax_loss.plot(epochs, [r["train_loss"] for r in records], marker="o")
    ax_loss.set(xlabel="epoch", ylabel="mean training loss", title="loss")
    for name in ("train_accuracy", "test_accuracy"):
        pts = [(r["epoch"], r[name]) for r in records if r.get(name) is not None]
        if pts:
            ax_acc.plot(*zip(*pts), marker="o", label=name.replace("_", " "))
    ax_acc.set(xlabel="epoch", ylabel="accuracy", title="accuracy")
    ax_acc.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return f"plot written to {path}"


class _StopRequested(Exception):
    """train.stop_after_steps was reached."""


class _NonFinite(Exception):
    """A step's loss was NaN or infinite: the run stops, its last checkpoint untouched."""

    def __init__(self, loss, step, epoch, batch):
        super().__init__(loss)
        self.loss, self.step, self.epoch, self.batch = loss, step, epoch, batch


def _checkpoint_step(path: str):
    try:
        return checkpoint.restore(path)["step"]
    except Exception:  # noqa: BLE001 - only for the message
        return "?"


class _Interrupted(KeyboardInterrupt):
    """SIGINT (Ctrl-C) or SIGTERM (kill, schedulers) arrived; `signum` says which."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


class _StepGuard:
    """Ctrl-C or SIGTERM while a step runs is taken once the step has returned and the state
    holds its results: the step consumes (donates) the parameters and optimizer state it is
    given, so in between there is nothing valid to checkpoint. Anywhere else the signal
    interrupts at once. (Only the main thread receives signals; elsewhere the guard changes
    nothing.)"""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self, agree=None):
        # agree (several processes): pending signal -> the signal all processes stop on
        # after this step; signals then always wait for the end of a step
        self.agree = agree
        self.in_step = False
        self.pending = None
        self._previous = {}

    def _handler(self, signum, frame):
        # kept pending in every case: a raise that lands in a weakref callback or a
        # destructor (the collector runs them between any two bytecodes) is printed and
        # swallowed by Python, and the next step start takes the signal instead
        self.pending = signum
        if not self.in_step and self.agree is None:
            raise _Interrupted(signum)

    def install(self):
        for sig in self.SIGNALS:
            try:
                self._previous[sig] = signal.signal(sig, self._handler)
            except ValueError:          # not the main thread
                pass

    def restore(self):
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)
        self._previous = {}

    def step_start(self):
        """Before a step: a signal whose interruption was swallowed is taken now."""
        if self.pending is not None and self.agree is None:
            signum, self.pending = self.pending, None
            raise _Interrupted(signum)
        self.in_step = True

    def step_done(self):
        self.in_step = False
        if self.agree is not None:
            # (a signal that lands while the processes agree, which waits for the slowest
            # one, stays pending for the next agreement: assigning the agreement's result to
            # `pending` lost it, and the run went on to its end)
            agreed = self.agree(self.pending)
            if agreed is None:
                return
            self.pending = None
            raise _Interrupted(agreed)
        if self.pending is not None:
            signum, self.pending = self.pending, None
            raise _Interrupted(signum)


def _progress(total, initial, desc, enabled):
    from tqdm import tqdm
    return tqdm(total=total, initial=initial, desc=desc, unit="batch", disable=not enabled,
                leave=False, file=sys.stderr)


def _checked_init(model, tx, key, sample, cfg):
    """The model's parameters; the model and the optimizer are tried once on them (an
    initialization, and an update with zero gradients), so that arguments they cannot use
    are reported as config errors naming their keys."""
    import corejax as jax
    try:
        params = model.init(key, sample)
    except (TypeError, ValueError) as e:
        if isinstance(e, ConfigError):
            raise
        given = [f"model.args.{k}={v!r}" for k, v in cfg["model.args"].items()]
        raise ConfigError(f"model {cfg['model.name']!r} cannot be built with "
                          f"{', '.join(given) or 'its default arguments'}: {e}") from e
    try:
        zeros = jax.tree_util.tree_map(jax.numpy.zeros_like, params)
        tx.update(zeros, tx.init(params), params)
    except (TypeError, ValueError) as e:
        given = [f"optimizer.args.{k}={v!r}" for k, v in cfg["optimizer.args"].items()] + [
            f"optimizer.schedule.args.{k}={v!r}" for k, v in cfg["optimizer.schedule.args"].items()]
        raise ConfigError(f"optimizer {cfg['optimizer.name']!r} cannot run with "
                          f"{', '.join(given) or 'its arguments'}: {type(e).__name__}: {e}") from e
    return params


class RunExistsError(Exception):
    """The output folder holds a run, and neither --resume nor --overwrite was given."""


class OutputError(Exception):
    """The output folder cannot be created or written."""


def _prepare_output(out_dir: str, cfg: dict, resume: bool, overwrite: bool) -> None:
    existing = rundir.holds_run(out_dir) if os.path.isdir(out_dir) else []
    if existing and not resume and not overwrite:
        raise RunExistsError(
            f"the output folder {out_dir} already holds a run ({', '.join(existing)}); pass "
            "--resume to continue it, --overwrite to replace it, or choose another folder "
            "with --output-dir.")
    try:
        os.makedirs(out_dir, exist_ok=True)
        for name in rundir.remove_stale_temporaries(out_dir):
            print(f"removed {name}, left by an interrupted write", file=sys.stderr)
        if overwrite and not resume:
            for name in existing:
                os.unlink(os.path.join(out_dir, name))
        changes = rundir.record_config(out_dir, nested(cfg), resume)
    except OSError as e:
        raise OutputError(f"cannot write to the output folder {out_dir!r}: "
                          f"{e.strerror or e}.") from e
    if changes:
        print("--resume with a changed config (the previous one is kept as config.<n>.yaml):\n  "
              + "\n  ".join(changes), file=sys.stderr)


def _data_parallel_devices(jax, cfg: dict) -> int:
    """train.devices, after making that many CPU devices (or checking they are there)."""
    n = cfg["train.devices"]
    if n == 1:
        return 1
    if cfg["backend"] != "cpu":
        raise ConfigError(f"train.devices={n} runs data-parallel over CPU devices; it needs "
                          f"backend: cpu (got {cfg['backend']!r}).")
    if jax.config.num_cpu_devices < n:
        try:
            jax.config.update("jax_num_cpu_devices", n)
        except RuntimeError:
            pass      # devices already in use: the check below says how many
    if jax.local_device_count("cpu") < n:
        raise ConfigError(f"train.devices={n}, but this process has "
                          f"{jax.local_device_count('cpu')} CPU device(s): set "
                          f"XLA_FLAGS=--xla_force_host_platform_device_count={n} or "
                          f"COREJAX_NUM_CPU_DEVICES={n}, or lower train.devices.")
    return n


def _data_parallel(jax, loss_fn, tx, optim, single_step, n: int):
    """The training step over `n` devices: the batch split across them, the gradients (and
    the loss) averaged with pmean, the parameters and optimizer state the same on every
    device (passed unmapped, returned from device 0). A batch that does not split evenly
    (the last one of an epoch) runs on one device."""
    def step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        grads, loss = jax.lax.pmean((grads, loss), "batch")
        updates, opt_state = tx.update(grads, opt_state, params)
        return optim.apply_updates(params, updates), opt_state, loss

    mapped = jax.pmap(step, axis_name="batch", in_axes=(None, None, 0, 0),
                      out_axes=(None, None, None), devices=jax.local_devices(backend="cpu")[:n])

    def train_step(params, opt_state, x, y):
        if x.shape[0] % n:
            return single_step(params, opt_state, x, y)
        return mapped(params, opt_state, x.reshape((n, -1) + x.shape[1:]),
                      y.reshape((n, -1) + y.shape[1:]))
    return train_step


def train(cfg: dict, resume: bool = False, quiet: bool = False, overwrite: bool = False) -> int:
    import corejax as jax
    from corejax import random
    import optim

    jax.config.update("platform", cfg["backend"])
    n_devices = _data_parallel_devices(jax, cfg)
    # under mpiexec: data-parallel over the processes; process 0 alone reads and writes the
    # output folder (train_distributed.py)
    procs = train_distributed.setup()
    main_process = procs is None or procs.is_main
    if procs is not None and n_devices > 1:
        raise ConfigError("train.devices > 1 with several processes (mpiexec) is not "
                          "supported: use one device per process.")
    out_dir = cfg["output.dir"]
    ckpt_path = os.path.join(out_dir, "checkpoint.npz")
    if resume and main_process and not os.path.exists(ckpt_path):
        raise CheckpointError(f"--resume: no checkpoint at {ckpt_path}; run without --resume "
                              "to start training.")
    pre = Preprocess(flatten=cfg["data.flatten"], scale=cfg["data.scale"], one_hot=10)
    model = build_model(cfg)
    tx = build_optimizer(cfg)
    # parameters from the input's shape alone (MNIST's 28x28 images), so that a bad model or
    # optimizer argument is reported before any data is read or folder written
    init_key, shuffle_key = random.split(random.PRNGKey(cfg["train.seed"]))
    sample, _ = batches_preprocess(np.zeros((1, 28, 28), np.uint8), np.zeros(1, np.uint8), pre)
    params = _checked_init(model, tx, init_key, sample, cfg)
    opt_state = tx.init(params)
    if main_process:
        _prepare_output(out_dir, cfg, resume, overwrite)

    train_x, train_y, test_x, test_y = load_data(cfg)
    first, _ = batches_preprocess(train_x[:1], train_y[:1], pre)
    if first.shape != sample.shape:
        # images of another size than MNIST's (a stand-in data set): parameters for them
        params = _checked_init(model, tx, init_key, first, cfg)
        opt_state = tx.init(params)
    # The training set as model inputs, preprocessed once in bulk (the same bits as batch by
    # batch: the conversions are elementwise): a batch is then rows of it (a view in the
    # stored order), and no per-batch conversion competes with the step for the cores.
    train_inputs, train_targets = preprocess_batch(train_x, train_y, pre)
    loss_of = make_loss(cfg["loss"])
    bs = cfg["train.batch_size"]

    def loss_fn(params, x, y):
        return loss_of(model.apply(params, x), y)

    # The step consumes its parameters and optimizer state (as Flax training loops do): an
    # SGD update then accumulates into the parameters' buffers in place.
    @functools.partial(jax.jit, donate_argnums=(0, 1))
    def train_step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optim.apply_updates(params, updates), opt_state, loss

    if n_devices > 1:
        train_step = _data_parallel(jax, loss_fn, tx, optim, train_step, n_devices)
    if procs is not None:
        train_step = procs.data_parallel(jax, loss_fn, tx, optim,
                                         mean_loss=cfg["loss"] != "neg_sum_logp")

    @jax.jit
    def predict(params, x):
        return jax.numpy.argmax(model.apply(params, x), axis=-1)

    state = {"params": params, "opt_state": opt_state, "key": shuffle_key, "step": 0,
             "epoch": 0, "batch": 0, "epoch_loss_sum": 0.0, "epoch_examples": 0,
             "epoch_time": 0.0}
    if resume and main_process:
        state = checkpoint.restore(ckpt_path, target=state)
        print(f"resuming from {ckpt_path}: epoch {state['epoch']}, batch {state['batch']}, "
              f"step {state['step']}", file=sys.stderr)
        # records of steps after the checkpoint (a run killed without saving) are redone
        rundir.trim_metrics(os.path.join(out_dir, "metrics.jsonl"), state["step"])
    if procs is not None:
        state = procs.broadcast(state)
    metrics = Metrics(os.path.join(out_dir, "metrics.jsonl") if main_process else os.devnull,
                      append=resume)
    show_bar = not quiet and sys.stderr.isatty() and main_process
    steps_this_run = 0
    stop_after = cfg["train.stop_after_steps"]
    epochs = cfg["train.epochs"]

    def save():
        if main_process:
            checkpoint.save(ckpt_path, state)

    guard = _StepGuard(agree=None if procs is None else procs.agree_signal)
    try:
        guard.install()
        while state["epoch"] < epochs:
            epoch = state["epoch"]
            it = batches(train_inputs, train_targets, bs, key=state["key"], epoch=epoch,
                         shuffle=cfg["data.shuffle"], drop_remainder=cfg["data.drop_remainder"],
                         preprocess=None, prefetch=cfg["data.prefetch"],
                         start_batch=state["batch"], part=None if procs is None else procs.part)
            bar = _progress(len(it), state["batch"], f"epoch {epoch}", show_bar)
            start = time.perf_counter()
            seen = 0
            try:
                for x, y in it:
                    guard.step_start()
                    params, opt_state, loss = train_step(state["params"], state["opt_state"], x, y)
                    loss = float(loss)
                    rows = x.shape[0] if procs is None else procs.last_rows
                    if not np.isfinite(loss):
                        guard.in_step = False
                        raise _NonFinite(loss, state["step"] + 1, epoch, state["batch"])
                    state.update(params=params, opt_state=opt_state, step=state["step"] + 1,
                                 batch=state["batch"] + 1,
                                 epoch_loss_sum=state["epoch_loss_sum"] + loss * rows,
                                 epoch_examples=state["epoch_examples"] + rows)
                    seen += rows
                    steps_this_run += 1
                    if state["step"] % cfg["train.log_every"] == 0:
                        metrics.write(type="step", epoch=epoch, step=state["step"], loss=loss)
                    # a signal during the step (or its record) is taken here, once the state
                    # and the metrics both hold the step
                    guard.step_done()
                    if show_bar:
                        bar.update(1)
                        rate = seen / max(time.perf_counter() - start, 1e-9)
                        bar.set_postfix(loss=f"{loss:.4f}", ex_per_s=f"{rate:.0f}",
                                        refresh=False)
                    if stop_after is not None and steps_this_run >= stop_after:
                        raise _StopRequested
            finally:
                state["epoch_time"] += time.perf_counter() - start
                it.close()
                bar.close()
            epoch_time = state["epoch_time"]
            print(f"Epoch {epoch} in {epoch_time:0.2f} sec", flush=True)
            record = {"type": "epoch", "epoch": epoch, "step": state["step"],
                      "train_loss": state["epoch_loss_sum"] / max(state["epoch_examples"], 1),
                      "epoch_time": epoch_time,
                      "examples_per_sec": state["epoch_examples"] / max(epoch_time, 1e-9),
                      "train_accuracy": None, "test_accuracy": None}
            if procs is not None:
                procs.check_same(state["params"], epoch)
            if main_process and ((epoch + 1) % cfg["train.eval_every"] == 0
                                 or epoch + 1 == epochs):
                chunk = cfg["train.eval_batch_size"]
                train_acc = accuracy(predict, state["params"], train_x, train_y, pre, chunk)
                test_acc = accuracy(predict, state["params"], test_x, test_y, pre, chunk)
                print(f"Training set accuracy {train_acc:.8f}", flush=True)
                print(f"Test set accuracy {test_acc:.8f}", flush=True)
                record.update(train_accuracy=float(train_acc), test_accuracy=float(test_acc))
            metrics.write(**record)
            state.update(epoch=epoch + 1, batch=0, epoch_loss_sum=0.0, epoch_examples=0,
                         epoch_time=0.0)
            if (epoch + 1) % cfg["train.checkpoint_every"] == 0 or epoch + 1 == epochs:
                save()
            # several processes hold a signal that arrived after the epoch's last step (during
            # the evaluation) until they all agree on it: here, the end of the epoch
            guard.step_done()
    except _StopRequested:
        save()
        if main_process:
            print(f"stopped after {steps_this_run} steps (train.stop_after_steps); checkpoint "
                  f"{ckpt_path} at step {state['step']}; continue with --resume",
                  file=sys.stderr)
        return 0
    except _NonFinite as e:
        kept = (f"the checkpoint {ckpt_path} (step {_checkpoint_step(ckpt_path)}) is kept"
                if os.path.exists(ckpt_path) else "no checkpoint was written")
        print(f"train.py: error: the loss is {e.loss} at step {e.step} (epoch {e.epoch}, batch "
              f"{e.batch}); stopping. {kept}. Lower optimizer.learning_rate or check the "
              "data.", file=sys.stderr)
        return 1
    except KeyboardInterrupt as e:
        save()
        signum = getattr(e, "signum", signal.SIGINT)
        what = "terminated (SIGTERM)" if signum == signal.SIGTERM else "interrupted"
        if main_process:
            print(f"\n{what}; checkpoint {ckpt_path} at step {state['step']}; continue with "
                  "--resume", file=sys.stderr)
        return 128 + int(signum)
    finally:
        guard.restore()
        metrics.close()
    if cfg["output.plot"] and main_process:
        print(plot(metrics.epochs(), os.path.join(out_dir, "metrics.png")), file=sys.stderr)
    return 0


# --------------------------------------------------------------------------- command line

def _parser() -> argparse.ArgumentParser:
    keys = "\n".join(f"  {k:<26} {SCHEMA[k][3]} (default: {SCHEMA[k][1]!r})" for k in SCHEMA)
    p = argparse.ArgumentParser(
        prog="train.py", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Train an MNIST classifier with corejax, nn and optim from a YAML config.",
        epilog="config keys (YAML nesting or dotted names for --set):\n" + keys +
               "\n\nexamples:\n"
               "  COREJAX_DATA_DIR=../shared/data/mnist python train.py --config configs/mlp.yaml\n"
               "  python train.py --config configs/cnn.yaml --set train.epochs=1 "
               "--set optimizer.learning_rate=3e-4\n"
               "exit codes: 0 done, 1 failed (data, checkpoint, output folder, non-finite "
               "loss), 2 bad config or arguments (or an output folder holding a run), 130 "
               "interrupted (Ctrl-C), 143 terminated (SIGTERM); both save a checkpoint first")
    p.add_argument("--config", help="YAML config file (configs/*.yaml); defaults if omitted")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config key; VALUE is parsed as YAML (repeatable)")
    p.add_argument("--data-dir", help="folder of MNIST IDX files (over data.dir and "
                                      f"${mnist.ENV_VAR})")
    p.add_argument("--output-dir", help="output folder (same as --set output.dir=...)")
    p.add_argument("--resume", action="store_true",
                   help="continue from the checkpoint in the output folder")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the run already in the output folder")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    try:
        overrides = list(args.overrides)
        if args.output_dir:
            overrides.append(f"output.dir={args.output_dir}")
        cfg = load_config(args.config, overrides, data_dir=args.data_dir)
        return train(cfg, resume=args.resume, quiet=args.quiet, overwrite=args.overwrite)
    except ConfigError as e:
        print(f"train.py: config error: {e}", file=sys.stderr)
        return 2
    except RunExistsError as e:
        print(f"train.py: error: {e}", file=sys.stderr)
        return 2
    except (DataNotFoundError, DataFormatError, CheckpointError, OutputError,
            train_distributed.ProcessesDisagree) as e:
        print(f"train.py: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
