"""What corejax reads off the machine (corejax/_machine.py) and sets for its libraries at
import (corejax/__init__.py)."""
import os
import subprocess
import sys

import pytest

from corejax import _machine


def _cache(root, entries):
    for name, (level, kind, size) in entries.items():
        folder = root / name
        folder.mkdir(parents=True)
        (folder / "level").write_text(f"{level}\n")
        (folder / "type").write_text(f"{kind}\n")
        (folder / "size").write_text(f"{size}\n")
    return str(root)


def test_l2_size_from_sysfs(tmp_path):
    l1 = {"index0": (1, "Data", "32K"), "index1": (1, "Instruction", "32K")}
    assert _machine._l2_bytes_in(_cache(tmp_path / "a", {
        **l1, "index2": (2, "Unified", "1024K"), "index3": (3, "Unified", "32768K")})) == 1 << 20
    assert _machine._l2_bytes_in(_cache(tmp_path / "b", {
        **l1, "index2": (2, "Unified", "2M")})) == 2 << 20
    # no level-2 data cache reported, no folder, an unreadable size: the 1 MiB default
    default = _machine._DEFAULT_L2
    assert _machine._l2_bytes_in(_cache(tmp_path / "c", {
        **l1, "index2": (2, "Instruction", "512K")})) == default
    assert _machine._l2_bytes_in(str(tmp_path / "missing")) == default
    assert _machine._l2_bytes_in(_cache(tmp_path / "d", {"index2": (2, "Data", "lots")})) \
        == default
    assert _machine.l2_bytes() >= 1 << 10


def _timeout_after_import(env):
    code = "import os, corejax; print(os.environ.get('OPENBLAS_THREAD_TIMEOUT'))"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_import_sets_openblas_spin_unless_the_user_did():
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    assert _timeout_after_import(env) == "20"
    assert _timeout_after_import(dict(env, OPENBLAS_THREAD_TIMEOUT="26")) == "26"


def test_cpu_times_from_proc(tmp_path):
    """_machine.stat_jiffies: idle + iowait and all but the guests, from /proc/stat's first
    line; own_jiffies: this process's user + system time, which a busy loop advances."""
    import time
    stat = tmp_path / "stat"
    # user nice system idle iowait irq softirq steal guest guest_nice
    stat.write_text("cpu  10 1 2 300 4 5 6 7 8 9\ncpu0 0 0 0 0 0 0 0 0 0 0\n")
    assert _machine.stat_jiffies(str(stat)) == (304, 335)
    stat.write_text("intr 0\n")
    with pytest.raises(ValueError):
        _machine.stat_jiffies(str(stat))
    if not os.path.exists("/proc/self/stat"):
        pytest.skip("no /proc here")
    idle, total = _machine.stat_jiffies()
    assert 0 <= idle <= total
    before = _machine.own_jiffies()
    end = time.process_time() + 0.1
    while time.process_time() < end:
        pass
    assert _machine.own_jiffies() > before
