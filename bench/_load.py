"""Competing load for the benchmarks: `busy(n)` runs n busy-looping processes while its `with`
block runs, `load_average()` reads the 1-minute load average, and `add_load_argument` gives a
benchmark the same `--load [N]` option as the others.

Why: issue #32 asks how each framework slows down when another process wants a core of this
2-core machine (a compile in another terminal, a data loader, another tenant). A framework that
sizes its thread pool to the core count and spins its workers suffers more than one that
yields; only a real competing process shows it.

The busy processes are plain interpreters running a loop (`sys.executable -c ...`): no fork of
a process that may already run thread pools (Numba's, OpenBLAS's, XLA's). Each loop checks
every few milliseconds that its parent is still the one that started it and exits when not, so
that a benchmark killed by SIGKILL leaves no spinning orphan behind; the `with` block stops them
on any exit (normal, exception, Ctrl-C), and SIGTERM to the benchmark is turned into that exit.

Run a command under load from the shell (e.g. train.py, which prints its own epoch times):

    python bench/_load.py [-n 1] -- python train.py --config configs/mlp.yaml
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import time

# The loop of one busy process: a counted spin, then a look at the parent (cheap; about every
# 10 ms). An orphan is re-parented, so a changed parent id means the benchmark is gone.
_SPIN = ("import os\n"
         "p = os.getppid()\n"
         "while os.getppid() == p:\n"
         "    for _ in range(200000):\n"
         "        pass\n")

# Seconds given to a new busy process to start its interpreter and reach the loop before the
# measurements it should compete with begin.
SETTLE = 0.3


def load_average() -> float:
    """The 1-minute load average (runnable processes, exponentially averaged by the kernel)."""
    return os.getloadavg()[0]


def runnable() -> int:
    """Processes runnable at this instant on the whole machine (the 4th field of /proc/loadavg
    counts them, this process included); -1 where /proc is not there."""
    try:
        with open("/proc/loadavg") as f:
            return int(f.read().split()[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        return -1


def start(n: int = 1) -> list:
    """Starts n busy processes and returns them (stop them with `stop`). Prefer `busy`."""
    procs = []
    try:
        for _ in range(n):
            procs.append(subprocess.Popen([sys.executable, "-c", _SPIN],
                                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL))
    except BaseException:
        stop(procs)
        raise
    return procs


def stop(procs: list, grace: float = 1.0) -> None:
    """Terminates the processes `start` returned and waits for them (SIGKILL after `grace` s)."""
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def protocol_stream():
    """In a benchmark's worker process: a private copy of stdout for its protocol lines; the
    process's own stdout goes to stderr from now on, so that nothing a library prints mixes in."""
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    return proto


class Worker:
    """The driver's handle on a benchmark's worker process (`argv`), which writes one JSON line
    when it is ready (`info`) and one in answer to each line it is sent (`ask`); its stderr
    goes to the file `log`, whose end is shown if it dies."""

    def __init__(self, name, argv, log):
        self.name, self.log = name, log
        env = dict(os.environ, JAX_PLATFORMS="cpu", TF_CPP_MIN_LOG_LEVEL="2")
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=log, text=True, env=env)
        self.info = self._read()

    def _read(self):
        line = self.proc.stdout.readline()
        if not line:                    # the worker died: its stderr says why
            self.log.seek(0)
            raise RuntimeError(f"{self.name} worker exited ({self.proc.wait()}):\n"
                               + self.log.read()[-1500:])
        return json.loads(line)

    def ask(self, line: str):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self):
        end_worker(self.proc)           # the worker's loop over stdin ends


def end_worker(proc, timeout: float = 10.0) -> None:
    """Ends a benchmark's worker process that loops over its stdin: closes the stdin, waits,
    and kills it after `timeout` seconds."""
    proc.stdin.close()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextlib.contextmanager
def busy(n: int = 1, settle: float = SETTLE):
    """Runs n busy-looping processes for the duration of the block (none when n == 0) and
    yields their list. They are stopped when the block exits, however it exits; SIGTERM to
    this process raises SystemExit inside the block so that the stop still happens."""
    if n <= 0:
        yield []
        return
    old = None
    if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        try:
            old = signal.signal(signal.SIGTERM, _sigterm_to_exit)
        except ValueError:              # not the main thread: leave signals alone
            old = None
    procs = start(n)
    try:
        time.sleep(settle)
        yield procs
    finally:
        stop(procs)
        if old is not None:
            signal.signal(signal.SIGTERM, old)



def _sigterm_to_exit(signum, frame):
    raise SystemExit(128 + signum)


def add_load_argument(parser: argparse.ArgumentParser, what: str = "every case") -> None:
    """`--load [N]`: N busy processes (1 when no N is given) run beside {what}."""
    parser.add_argument("--load", type=int, nargs="?", const=1, default=0, metavar="N",
                        help=f"run N busy-looping processes (default 1) beside {what}, "
                             "to measure under a competing load")


def describe(n: int) -> str:
    """One line for a table's heading: the condition and the load the machine shows."""
    cond = f"loaded ({n} busy process{'es' if n != 1 else ''})" if n else "quiet"
    return f"{cond}; 1-min load average now {load_average():.2f}, runnable now {runnable()}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Run a command beside N busy-looping processes.",
                                 usage="python bench/_load.py [-n N] -- COMMAND [ARGS...]")
    ap.add_argument("-n", type=int, default=1, help="busy processes (default 1)")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args(argv)
    cmd = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not cmd:
        ap.error("give a command after --")
    print(f"_load: {args.n} busy process(es); 1-min load average before "
          f"{load_average():.2f}", file=sys.stderr)
    with busy(args.n):
        rc = subprocess.call(cmd)
    print(f"_load: 1-min load average after {load_average():.2f}", file=sys.stderr)
    return rc


if __name__ == "__main__":
    sys.exit(main())
