"""A GEMM call site's choice between OpenBLAS's threads and one thread (`GemmSite`), for the
products whose `Plan` (compiler/blas.py) gives the same bits both ways: the faster, as
measured, tried again now and then, and again as soon as a contention that moved it to one
thread may have ended (`_SpareCores`)."""
from __future__ import annotations

import time

from corejax._machine import stat_jiffies

__all__ = ["GemmSite"]


class GemmSite:
    """One dot_general call site: its `Plan` and which thread count runs it.

    `seconds[mode]` (mode 0: OpenBLAS's threads, 1: one thread) is the fastest recent time,
    raised a quarter of the way towards each slower call, so that one slow call does not flip
    the choice but a sustained change does within a few calls. The mode not chosen is tried
    again after `interval` calls; the interval doubles each time the trial confirms the choice,
    and is at least 32 times the ratio of the two modes' times (a trial of OpenBLAS's threads
    while another process holds a core can take ten times the single-threaded call), up to
    MAX_INTERVAL; it falls back to MIN_INTERVAL when the choice flips. Under steady
    conditions the trials cost well under 1% of the call site's time."""

    __slots__ = ("plan", "seconds", "calls", "next_trial", "interval", "partial",
                 "spare_seen", "spare_trials", "spare_trial")
    MIN_INTERVAL = 8
    MAX_INTERVAL = 1024

    def __init__(self):
        self.plan = None            # None: not planned yet; () : threads only; a Plan or Blocks
        self.seconds = [0.0, 0.0]   # 0.0: not measured yet
        self.calls = 0
        self.next_trial = 0
        self.interval = self.MIN_INTERVAL
        self.partial = None         # scratch product for chunks after the first
        self.spare_seen = 0         # the last spare period of the machine's it was told of
        self.spare_trials = True    # whether a spare core triggers a trial of the threads
        self.spare_trial = False    # whether the running call is such a trial

    def choice(self) -> int:
        return 0 if self.seconds[0] <= self.seconds[1] else 1

    def mode(self) -> int:
        """The mode for the next call: an unmeasured one, a trial, or the faster. Running on
        one thread because another process held a core, a site tries the threads again as
        soon as the machine has had a core to spare since (`_SpareCores`): a contention that
        ended must not keep it at half speed until its next scheduled trial."""
        if self.seconds[0] == 0.0:
            return 0
        if self.seconds[1] == 0.0:
            return 1
        best = self.choice()
        if self.calls >= self.next_trial:
            return 1 - best
        if best == 1 and self.spare_trials and _spare_cores.seen(self):
            self.spare_trial = True
            return 0
        return best

    def record(self, mode: int, seconds: float):
        both = self.seconds[0] > 0.0 and self.seconds[1] > 0.0
        before = self.choice()
        old = self.seconds[mode]
        self.seconds[mode] = seconds if old == 0.0 or seconds < old else \
            old + 0.25 * (seconds - old)
        self.calls += 1
        spare_trial, self.spare_trial = self.spare_trial, False
        if not both:
            self.next_trial = self.calls + self.interval
        elif self.choice() != before:
            # the other mode's time may be stale: measure it again soon
            self.interval = self.MIN_INTERVAL
            self.next_trial = self.calls + self.interval
            # one thread became the faster: contention, whose end a spare core tells
            self.spare_trials = self.choice() == 1
        elif spare_trial:
            # one thread is the faster even with a core to spare: no such trials until the
            # choice changes again (the scheduled ones go on)
            self.spare_trials = False
        elif mode != before:
            # a trial that confirmed the choice; one that cost r times the chosen mode's
            # time waits at least 32 r calls
            ratio = self.seconds[mode] / self.seconds[before]
            self.interval = int(min(max(2 * self.interval, 32 * ratio), self.MAX_INTERVAL))
            self.next_trial = self.calls + self.interval


class _SpareCores:
    """Whether the machine has had at least half a core idle on average over the last
    PERIOD seconds or more, from the idle time in /proc/stat (Linux; elsewhere never, and
    single-threaded sites then wait for their scheduled trials). Each spare period is
    reported once to each site that asks (`GemmSite.mode`: a site on one thread since a
    contention), so a site runs one trial of the threads per period at most; while other
    processes keep every core busy, none is reported and no trial is run."""

    PERIOD = 0.05
    MIN_SPARE = 0.5

    def __init__(self, path="/proc/stat"):
        self._path = path
        self._last = None           # (time, idle jiffies, all jiffies)
        self._epoch = 0             # counts the spare periods seen
        self._cpus = 0
        try:
            with open(path) as f:
                self._cpus = sum(1 for line in f if line.startswith("cpu") and
                                 line[3:4].isdigit())
        except OSError:
            self._path = None

    def _sample(self):
        return stat_jiffies(self._path)

    def seen(self, site) -> bool:
        if self._path is None:
            return False
        now = time.perf_counter()
        last = self._last
        if last is None or now - last[0] >= self.PERIOD:
            try:
                idle, total = self._sample()
            except (OSError, ValueError, IndexError):
                self._path = None
                return False
            if last is not None and total > last[2] and \
                    (idle - last[1]) / (total - last[2]) * self._cpus >= self.MIN_SPARE:
                self._epoch += 1
            self._last = (now, idle, total)
        if site.spare_seen == self._epoch:
            return False
        site.spare_seen = self._epoch
        return True


_spare_cores = _SpareCores()
