"""train.py: config parsing and overrides, errors and exit codes, a tiny end-to-end run,
determinism, and interrupt + resume giving bit-identical parameters."""
import glob
import json
import os
import re

import numpy as np
import pytest

import train
from data import checkpoint

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIGS = sorted(glob.glob(os.path.join(REPO, "configs", "*.yaml")))


def _mnist_dir():
    from data import mnist
    for d in (os.environ.get("COREJAX_DATA_DIR"),
              os.path.join(REPO, "..", "shared", "data", "mnist")):
        if d and mnist.find_idx_files(d, "train") is not None:
            return d
    pytest.skip("real MNIST IDX files not found (set COREJAX_DATA_DIR or provide "
                "../shared/data/mnist)")


def _require_stack():
    """The end-to-end runs need the nn package and jit(grad(log_softmax)) from the core."""
    try:
        import nn
        for name in ("Module", "compact", "Dense", "Conv", "log_softmax", "relu",
                     "initializers", "max_pool"):
            getattr(nn, name)
    except (ImportError, AttributeError) as e:
        pytest.skip(f"the nn package is not available yet: {e}")
    import corejax as jax
    import corejax.numpy as jnp
    try:
        jax.jit(jax.grad(lambda x: nn.log_softmax(x)[:, 0].sum()))(jnp.ones((2, 3)))
    except Exception as e:  # noqa: BLE001 - any failure of the core blocks training
        pytest.skip(f"corejax cannot jit the gradient of nn.log_softmax: "
                    f"{type(e).__name__}: {e}")


# --------------------------------------------------------------------------- config

def _write(tmp_path, text, name="c.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_defaults_and_nested_yaml(tmp_path):
    cfg = train.load_config()
    assert cfg["train.batch_size"] == 128 and cfg["optimizer.name"] == "sgd"
    path = _write(tmp_path, "train: {batch_size: 32, epochs: 2}\n"
                            "optimizer: {name: adam, learning_rate: 1e-3, schedule: null}\n"
                            "model: {name: mlp, args: {features: [8]}}\n")
    cfg = train.load_config(path)
    assert cfg["train.batch_size"] == 32 and cfg["train.epochs"] == 2
    assert cfg["optimizer.learning_rate"] == 1e-3        # '1e-3' is a string to PyYAML
    assert cfg["model.args"] == {"features": [8]}
    assert train.nested(cfg)["train"]["batch_size"] == 32


def test_overrides_are_typed_by_yaml(tmp_path):
    cfg = train.load_config(None, ["train.epochs=3", "optimizer.learning_rate=0.5",
                                   "model.args.features=[16, 16]", "data.shuffle=false",
                                   "data.limit=100", "data.limit=null",
                                   "optimizer.schedule.name=exponential_decay",
                                   "optimizer.schedule.args.decay_rate=0.5",
                                   "optimizer.learning_rate=2"])
    assert cfg["train.epochs"] == 3 and cfg["model.args"]["features"] == [16, 16]
    assert cfg["data.shuffle"] is False and cfg["data.limit"] is None
    assert cfg["optimizer.learning_rate"] == 2.0 and isinstance(cfg["optimizer.learning_rate"],
                                                                  float)
    assert cfg["optimizer.schedule.args"] == {"decay_rate": 0.5}


@pytest.mark.parametrize("override,message", [
    ("train.bach_size=3", "unknown config key 'train.bach_size'; did you mean "
                          "'train.batch_size'?"),
    ("batch_size=3", "did you mean 'train.batch_size'?"),
    ("optimiser.name=adam", "did you mean 'optimizer.name'?"),
    ("train.batch_size=abc", "config key 'train.batch_size' expects int, got str 'abc'"),
    ("train.batch_size=1.5", "expects int, got float"),
    ("train.epochs=yes", "expects int, got bool"),
    ("data.shuffle=1", "expects bool, got int"),
    ("loss=cross_entropi", "did you mean 'cross_entropy'?"),
    ("backend=gpu", "must be one of ['cpu', 'cuda']"),
    ("train.batch_size=0", "must be positive"),
    ("train.batch_size", "--set expects key=value"),
])
def test_bad_overrides(override, message):
    with pytest.raises(train.ConfigError) as info:
        train.load_config(None, [override])
    assert message in str(info.value)


def test_bad_files(tmp_path):
    with pytest.raises(train.ConfigError, match="unknown config key 'train.epoch'; did you "
                                                "mean 'train.epochs'"):
        train.load_config(_write(tmp_path, "train:\n  epoch: 3\n"))
    with pytest.raises(train.ConfigError, match="not valid YAML"):
        train.load_config(_write(tmp_path, "train: [1, 2\n"))
    with pytest.raises(train.ConfigError, match="must hold a mapping"):
        train.load_config(_write(tmp_path, "- 1\n"))
    with pytest.raises(train.ConfigError, match="cannot read config file"):
        train.load_config(str(tmp_path / "missing.yaml"))


def test_data_dir_precedence(tmp_path, monkeypatch):
    path = _write(tmp_path, "data: {dir: from_config}\n")
    monkeypatch.setenv("COREJAX_DATA_DIR", "from_env")
    assert train.load_config(None)["data.dir"] == "from_env"
    assert train.load_config(path)["data.dir"] == "from_config"
    assert train.load_config(path, data_dir="from_flag")["data.dir"] == "from_flag"


@pytest.mark.parametrize("path", CONFIGS, ids=os.path.basename)
def test_shipped_configs_are_valid(path):
    cfg = train.load_config(path)
    assert cfg["output.dir"].startswith("runs/")
    tx = train.build_optimizer(cfg)
    _require_stack()
    model = train.build_model(cfg)
    # initialized and updated once from a preprocessed sample, as train() starts
    pre = train.Preprocess(flatten=cfg["data.flatten"], scale=cfg["data.scale"], one_hot=10)
    sample, _ = train.batches_preprocess(np.zeros((1, 28, 28), np.uint8), np.zeros(1, np.uint8),
                                         pre)
    import corejax
    params = train._checked_init(model, tx, corejax.random.PRNGKey(0), sample, cfg)
    assert corejax.tree.leaves(params)


def test_model_and_optimizer_argument_errors():
    with pytest.raises(train.ConfigError, match="optimizer.name 'sgdd' .*did you mean 'sgd'"):
        train.build_optimizer(train.load_config(None, ["optimizer.name=sgdd"]))
    with pytest.raises(train.ConfigError, match="no argument 'momentun'; did you mean "
                                                "'momentum'"):
        train.build_optimizer(train.load_config(None, ["optimizer.args.momentun=0.9"]))
    _require_stack()
    with pytest.raises(train.ConfigError, match="no argument 'featurs'; did you mean "
                                                "'features'"):
        train.build_model(train.load_config(None, ["model.args.featurs=[3]"]))
    from corejax import random
    model = train.build_model(train.load_config(None, ["model.args.activation=rel"]))
    with pytest.raises(train.ConfigError, match="unknown activation 'rel'"):
        model.init(random.PRNGKey(0), np.zeros((1, 784), np.float32))


def test_cli_errors_and_help(capsys, tmp_path):
    assert train.main(["--set", "train.bach_size=3"]) == 2
    assert "did you mean 'train.batch_size'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        train.main(["--help"])
    assert info.value.code == 0
    assert "train.batch_size" in capsys.readouterr().out
    code = train.main(["--data-dir", str(tmp_path / "nowhere"), "--output-dir",
                       str(tmp_path / "out"), "--set", "data.source=idx", "--quiet"])
    assert code == 1
    assert "does not exist" in capsys.readouterr().err


# --------------------------------------------------------------------------- training runs

TINY = ["model.args.features=[32]", "data.limit=640", "data.test_limit=300",
        "train.batch_size=64", "train.eval_batch_size=256", "data.shuffle=true",
        "output.plot=false", "train.log_every=3"]


def _run(out_dir, *extra, resume=False, config="mlp.yaml"):
    argv = ["--config", os.path.join(REPO, "configs", config), "--data-dir", _mnist_dir(),
            "--output-dir", str(out_dir), "--quiet"]
    for item in TINY + list(extra):
        argv += ["--set", item]
    if resume:
        argv.append("--resume")
    return train.main(argv)


def _params(out_dir):
    return checkpoint.restore(os.path.join(out_dir, "checkpoint.npz"))


def _assert_bitwise_equal(a, b):
    from corejax import tree_util
    la, ta = tree_util.tree_flatten(a)
    lb, tb = tree_util.tree_flatten(b)
    assert ta == tb
    for x, y in zip(la, lb):
        x, y = np.asarray(x), np.asarray(y)
        assert x.dtype == y.dtype and x.tobytes() == y.tobytes()


EPOCH_LINES = re.compile(r"Epoch (\d+) in \d+\.\d\d sec\n"
                         r"Training set accuracy (\d\.\d{8})\n"
                         r"Test set accuracy (\d\.\d{8})\n")


def test_end_to_end_tiny_run(tmp_path, capsys):
    _require_stack()
    out = tmp_path / "run"
    assert _run(out, "data.limit=2000", "data.test_limit=1000", "train.epochs=1",
                "train.batch_size=128") == 0
    stdout = capsys.readouterr().out
    match = EPOCH_LINES.fullmatch(stdout)
    assert match, stdout
    assert match.group(1) == "0"
    assert float(match.group(3)) > 0.3          # 16 steps of SGD on 2000 examples
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    epochs = [r for r in records if r["type"] == "epoch"]
    assert len(epochs) == 1 and epochs[0]["step"] == 16
    assert f"{epochs[0]['test_accuracy']:.8f}" == match.group(3)
    assert any(r["type"] == "step" for r in records)
    state = _params(out)
    assert state["step"] == 16 and state["epoch"] == 1 and state["batch"] == 0
    assert (out / "config.yaml").exists()


def test_same_seed_same_params_and_resume_is_bit_identical(tmp_path, capsys, monkeypatch):
    _require_stack()
    full, again, stopped, interrupted = (tmp_path / n for n in
                                         ("full", "again", "stopped", "interrupted"))
    assert _run(full, "train.epochs=2") == 0
    full_out = capsys.readouterr().out
    assert _run(again, "train.epochs=2") == 0
    capsys.readouterr()
    _assert_bitwise_equal(_params(full)["params"], _params(again)["params"])

    # stop in the middle of epoch 0 (step 4 of 10), then resume
    assert _run(stopped, "train.epochs=2", "train.stop_after_steps=4") == 0
    assert _params(stopped)["step"] == 4 and _params(stopped)["batch"] == 4
    assert _run(stopped, "train.epochs=2", resume=True) == 0
    _assert_bitwise_equal(_params(full), _params(stopped))
    resumed_out = capsys.readouterr().out
    assert EPOCH_LINES.findall(resumed_out) == EPOCH_LINES.findall(full_out)

    # Ctrl-C in epoch 1: exit code 130, a valid checkpoint, and resume matches the full run
    real_batches = train.batches

    def interrupting_batches(*args, **kwargs):
        it = real_batches(*args, **kwargs)
        if kwargs["epoch"] != 1 or kwargs["start_batch"]:
            return it

        def gen():
            for i, item in enumerate(it):
                if i == 3:
                    raise KeyboardInterrupt
                yield item
        return _Interrupting(gen(), it)
    monkeypatch.setattr(train, "batches", interrupting_batches)
    assert _run(interrupted, "train.epochs=2") == 130
    state = _params(interrupted)
    assert state["epoch"] == 1 and state["batch"] == 3 and state["step"] == 13
    monkeypatch.setattr(train, "batches", real_batches)
    assert _run(interrupted, "train.epochs=2", resume=True) == 0
    _assert_bitwise_equal(_params(full)["params"], _params(interrupted)["params"])
    _assert_bitwise_equal(_params(full)["opt_state"], _params(interrupted)["opt_state"])


def test_ctrl_c_inside_a_step_is_taken_after_it(tmp_path, capsys, monkeypatch):
    """The step consumes (donates) its parameters: a SIGINT that arrives while it runs is
    taken once it has returned, so the checkpoint holds that step's results and resuming
    from it matches an uninterrupted run bit for bit."""
    import signal
    import threading
    import optim
    _require_stack()
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals reach the main thread only")
    full, interrupted = tmp_path / "full", tmp_path / "interrupted"
    assert _run(full, "train.epochs=1") == 0
    real_apply = optim.apply_updates
    calls = []

    def apply_updates_then_sigint(params, updates):
        calls.append(1)         # runs while the first step is being traced, inside the step
        os.kill(os.getpid(), signal.SIGINT)
        return real_apply(params, updates)

    monkeypatch.setattr(optim, "apply_updates", apply_updates_then_sigint)
    assert _run(interrupted, "train.epochs=1") == 130
    assert calls == [1]
    assert "interrupted" in capsys.readouterr().err
    state = _params(interrupted)
    assert state["step"] == 1 and state["batch"] == 1
    monkeypatch.setattr(optim, "apply_updates", real_apply)
    assert _run(interrupted, "train.epochs=1", resume=True) == 0
    _assert_bitwise_equal(_params(full)["params"], _params(interrupted)["params"])
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


class _Interrupting:
    """A BatchIterator stand-in whose iteration raises KeyboardInterrupt at some batch."""

    def __init__(self, gen, batch_iterator):
        self._gen, self._it = gen, batch_iterator

    def __iter__(self):
        return self._gen

    def __len__(self):
        return len(self._it)

    def close(self):
        self._it.close()


def test_resume_without_checkpoint_fails(tmp_path, capsys):
    _require_stack()
    assert _run(tmp_path / "empty", resume=True) == 1
    assert "no checkpoint" in capsys.readouterr().err


def test_plot_writes_png_or_says_why(tmp_path):
    records = [{"epoch": 0, "train_loss": 0.5, "train_accuracy": 0.9, "test_accuracy": 0.91},
               {"epoch": 1, "train_loss": 0.3, "train_accuracy": None, "test_accuracy": None}]
    note = train.plot(records, str(tmp_path / "m.png"))
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert "pip install matplotlib" in note
        return
    assert (tmp_path / "m.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# --------------------------------------------------------------------------- faults (#33)

def test_a_run_folder_is_never_overwritten_unless_asked(tmp_path, capsys):
    _require_stack()
    out = tmp_path / "run"
    assert _run(out, "train.epochs=1", "train.stop_after_steps=2") == 0
    before = (out / "metrics.jsonl").read_bytes(), (out / "checkpoint.npz").read_bytes()
    capsys.readouterr()
    assert _run(out, "train.epochs=1") == 2
    err = capsys.readouterr().err
    assert "--resume" in err and "--overwrite" in err and "already holds a run" in err
    assert ((out / "metrics.jsonl").read_bytes(), (out / "checkpoint.npz").read_bytes()) == before
    assert train.main(["--config", os.path.join(REPO, "configs", "mlp.yaml"), "--data-dir",
                       _mnist_dir(), "--output-dir", str(out), "--quiet", "--overwrite"]
                      + sum((["--set", s] for s in TINY + ["train.epochs=1",
                                                           "train.stop_after_steps=1"]), [])) == 0
    assert _params(out)["step"] == 1


def test_resume_reports_a_changed_config_and_keeps_the_old_one(tmp_path, capsys):
    _require_stack()
    out = tmp_path / "run"
    assert _run(out, "train.epochs=1", "train.stop_after_steps=2") == 0
    original = (out / "config.yaml").read_text()
    capsys.readouterr()
    assert _run(out, "train.epochs=1", "optimizer.learning_rate=0.05",
                "train.stop_after_steps=1", resume=True) == 0
    err = capsys.readouterr().err
    assert "optimizer.learning_rate: 0.1 -> 0.05" in err or \
        "optimizer.learning_rate" in err and "0.05" in err
    assert (out / "config.1.yaml").read_text() == original
    assert "0.05" in (out / "config.yaml").read_text()


def test_resume_drops_metrics_after_the_checkpoint_and_stale_temporaries(tmp_path, capsys):
    _require_stack()
    out = tmp_path / "run"
    assert _run(out, "train.epochs=1", "train.stop_after_steps=3") == 0
    with open(out / "metrics.jsonl", "a") as f:      # as a run killed at step 7 leaves it
        f.write(json.dumps({"type": "step", "epoch": 0, "step": 6, "loss": 1.0}) + "\n")
        f.write('{"type": "step", "ep')
    (out / ".checkpoint.npz.abc123.tmp").write_bytes(b"partial")
    assert _run(out, "train.epochs=1", resume=True) == 0
    assert not (out / ".checkpoint.npz.abc123.tmp").exists()
    steps = [json.loads(line)["step"] for line in (out / "metrics.jsonl").read_text().splitlines()
             if json.loads(line)["type"] == "step"]
    assert steps == sorted(set(steps)), steps       # no step recorded twice


def test_sigterm_saves_a_checkpoint_and_exits_143(tmp_path, capsys, monkeypatch):
    import signal
    import threading
    import optim
    _require_stack()
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals reach the main thread only")
    real_apply = optim.apply_updates

    def apply_updates_then_sigterm(params, updates):
        os.kill(os.getpid(), signal.SIGTERM)
        return real_apply(params, updates)

    monkeypatch.setattr(optim, "apply_updates", apply_updates_then_sigterm)
    out = tmp_path / "run"
    assert _run(out, "train.epochs=1") == 143
    assert "terminated (SIGTERM)" in capsys.readouterr().err
    assert _params(out)["step"] == 1
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_a_non_finite_loss_stops_the_run_and_keeps_the_checkpoint(tmp_path, capsys):
    _require_stack()
    out = tmp_path / "run"
    assert _run(out, "train.epochs=1", "train.stop_after_steps=2") == 0
    saved = (out / "checkpoint.npz").read_bytes()
    capsys.readouterr()
    assert _run(out, "train.epochs=1", "optimizer.learning_rate=1e30", resume=True) == 1
    err = capsys.readouterr().err
    assert "the loss is" in err and "at step" in err and "is kept" in err
    assert (out / "checkpoint.npz").read_bytes() == saved
    for line in (out / "metrics.jsonl").read_text().splitlines():
        json.loads(line, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))


@pytest.mark.parametrize("override,message", [
    ("optimizer.args.momentum=abc", "optimizer.args.momentum"),
    ("model.args.features=abc", "model.args.features"),
    ("data.limit=-5", "'data.limit' must be positive"),
    ("data.limit=0", "'data.limit' must be positive"),
    ("train.stop_after_steps=0", "'train.stop_after_steps' must be positive"),
    ("optimizer.learning_rate=.nan", "finite"),
])
def test_bad_values_are_named_with_exit_2(override, message, tmp_path, capsys):
    argv = ["--output-dir", str(tmp_path / "o"), "--data-dir", str(tmp_path), "--set",
            "optimizer.name=sgd", "--set", override]
    assert train.main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_an_unwritable_output_folder_is_named(tmp_path, capsys):
    _require_stack()
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    assert _run(blocker / "run", "train.epochs=1") == 1
    err = capsys.readouterr().err
    assert "cannot write to the output folder" in err and "Traceback" not in err


def test_sigterm_from_outside_mid_epoch_then_resume_is_bit_identical(tmp_path):
    """train.py as a subprocess, terminated by SIGTERM while it trains (as a scheduler does):
    exit 143 with a checkpoint, and --resume ends where an uninterrupted run ends, bit for
    bit."""
    import signal
    import subprocess
    import sys
    import time
    _require_stack()
    settings = TINY + ["train.epochs=40", "train.log_every=1"]

    def command(out, *extra):
        argv = [sys.executable, os.path.join(REPO, "train.py"), "--config",
                os.path.join(REPO, "configs", "mlp.yaml"), "--data-dir", _mnist_dir(),
                "--output-dir", str(out), "--quiet", *extra]
        for item in settings:
            argv += ["--set", item]
        return argv

    env = dict(os.environ, PYTHONPATH=REPO)
    full, killed = tmp_path / "full", tmp_path / "killed"
    assert subprocess.run(command(full), env=env, capture_output=True).returncode == 0
    proc = subprocess.Popen(command(killed), env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    metrics = killed / "metrics.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if metrics.exists() and metrics.stat().st_size > 0:
            break
        time.sleep(0.01)
    assert proc.poll() is None, "the run finished before it could be terminated"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err.decode()
    assert b"terminated (SIGTERM)" in err
    stopped_at = _params(killed)["step"]
    assert 0 < stopped_at < 400
    resumed = subprocess.run(command(killed, "--resume"), env=env, capture_output=True)
    assert resumed.returncode == 0, resumed.stderr.decode()
    _assert_bitwise_equal(_params(full)["params"], _params(killed)["params"])
    _assert_bitwise_equal(_params(full)["opt_state"], _params(killed)["opt_state"])
    steps = [json.loads(line)["step"] for line in metrics.read_text().splitlines()
             if json.loads(line)["type"] == "step"]
    assert steps == list(range(1, 401))                   # no step lost, none repeated


def test_a_signal_whose_interruption_was_swallowed_stops_the_next_step():
    """Python prints and drops an exception raised in a weakref callback (the collector runs
    them between any two bytecodes): a SIGTERM handled there must still stop the run, at the
    next step's start."""
    import signal
    import sys
    import weakref
    guard = train._StepGuard()

    class Thing:
        pass

    thing = Thing()
    hook = sys.unraisablehook
    swallowed = []
    sys.unraisablehook = lambda info: swallowed.append(info.exc_type)
    try:
        ref = weakref.ref(thing, lambda r: guard._handler(signal.SIGTERM, None))
        del thing                       # the callback runs; its raise goes nowhere
    finally:
        sys.unraisablehook = hook
    assert ref() is None and swallowed == [train._Interrupted]
    with pytest.raises(train._Interrupted) as info:
        guard.step_start()
    assert info.value.signum == signal.SIGTERM
    guard.step_start()                  # taken once
    guard.step_done()


def test_a_signal_during_the_processes_agreement_stops_the_next_step():
    """Several processes agree after each step on whether to stop (an allreduce that waits
    for the slowest one); a signal that lands during that agreement must be taken by the
    next one, not lost (it was: the agreement's None overwrote it, and the run went on)."""
    import signal
    asked = []

    def agree(pending):
        asked.append(pending)
        if len(asked) == 1:
            guard._handler(signal.SIGINT, None)    # lands mid-agreement
        return pending

    guard = train._StepGuard(agree=agree)
    guard.step_start()
    guard.step_done()                   # agreed on None: this step completes
    guard.step_start()
    with pytest.raises(train._Interrupted) as info:
        guard.step_done()
    assert asked == [None, signal.SIGINT] and info.value.signum == signal.SIGINT
    guard.step_start()
    guard.step_done()                   # taken once
    assert asked[-1] is None
