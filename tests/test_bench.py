"""bench/bench_mnist.py's interleaved timing, on stand-in frameworks and a stand-in clock."""
import types

import pytest

from conftest import load_bench


@pytest.fixture
def bench_mnist():
    return load_bench("bench_mnist")


def test_interleaved_epochs_train_every_batch_once_and_time_all_but_each_turns_first(
        bench_mnist, monkeypatch):
    clock = [0.0]
    monkeypatch.setattr(bench_mnist, "time", types.SimpleNamespace(
        perf_counter=lambda: clock[0], sleep=lambda s: None))
    seen = {"a": [], "b": []}

    def framework(name, per_batch):
        def run(lo, hi):
            seen[name].extend(range(lo, hi))
            # a turn's first batch costs 100 units (a wake-up), every other one per_batch
            clock[0] += per_batch * (hi - lo) + (100.0 if lo % 7 == 0 else 0.0)
            return float(hi)
        return run

    res = bench_mnist.run_interleaved({"a": framework("a", 1.0), "b": framework("b", 2.0)},
                                      n_batches=20, n_timed=2, turn=7, pause=0.0, untimed=1)
    for name in seen:       # a warm-up epoch, then two epochs, every batch once, in order
        assert seen[name] == list(range(20)) * 3
    # 20 batches in turns of 7: 17 timed, scaled to the epoch's 20; the wake-ups never timed
    assert res["a"]["times"] == [20.0, 20.0] and res["b"]["times"] == [40.0, 40.0]
    assert res["a"]["median"] == 20.0 and res["a"]["last_loss"] == 20.0
    with pytest.raises(ValueError, match="no batch"):
        bench_mnist.run_interleaved({"a": framework("a", 1.0)}, 7, 1, turn=7, pause=0.0,
                                    untimed=7)


def test_load_processes_start_and_stop_with_the_block():
    """bench/_load.py's busy(n) (every benchmark's --load) runs n busy processes for exactly
    the duration of its `with` block, and end_worker ends a stdin-driven worker."""
    import subprocess
    import sys
    load = load_bench("_load")
    with load.busy(0) as procs:
        assert procs == []
    with load.busy(1, settle=0.0) as procs:
        assert len(procs) == 1 and procs[0].poll() is None
    assert procs[0].poll() is not None
    worker = subprocess.Popen([sys.executable, "-c", "import sys\nfor _ in sys.stdin: pass"],
                              stdin=subprocess.PIPE, text=True)
    load.end_worker(worker)
    assert worker.returncode == 0
