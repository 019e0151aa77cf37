"""What the machine gives this process: the cores it may run on (its affinity mask where the
OS reports one, else the CPU count), by which kernels that split work over threads size
their parts, the size of a core's L2 cache, by which loops that work in blocks size theirs,
and the CPU time spent so far (Linux's /proc), by which thread pools tell how busy the
machine is."""
from __future__ import annotations

import functools
import os

__all__ = ["usable_cores", "l2_bytes", "stat_jiffies", "own_jiffies"]


@functools.lru_cache(maxsize=None)
def usable_cores() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


# Where the OS does not say (not Linux, no sysfs): the smallest L2 of current x86-64 and ARM
# server cores.
_DEFAULT_L2 = 1 << 20


@functools.lru_cache(maxsize=None)
def l2_bytes() -> int:
    """The size of the first CPU's level-2 cache (Linux's sysfs), else 1 MiB."""
    return _l2_bytes_in("/sys/devices/system/cpu/cpu0/cache")


def _l2_bytes_in(root: str) -> int:
    """The unified or data level-2 cache size that a sysfs cache folder (index*/level, type,
    size such as "1024K") reports, else _DEFAULT_L2."""
    try:
        entries = sorted(os.listdir(root))
    except OSError:
        return _DEFAULT_L2
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    for entry in entries:
        try:
            with open(os.path.join(root, entry, "level")) as f:
                level = f.read().strip()
            with open(os.path.join(root, entry, "type")) as f:
                kind = f.read().strip()
            with open(os.path.join(root, entry, "size")) as f:
                size = f.read().strip()
        except OSError:
            continue
        if level != "2" or kind not in ("Unified", "Data"):
            continue
        try:
            return int(size[:-1]) * units[size[-1]] if size[-1:] in units else int(size)
        except ValueError:
            return _DEFAULT_L2
    return _DEFAULT_L2


def stat_jiffies(path: str = "/proc/stat") -> tuple:
    """(idle, all) CPU time of the whole machine so far, in clock ticks, from the first line
    of /proc/stat: idle and iowait, and the sum of the fields before the guests' (which are
    counted in user time already). Raises OSError or ValueError where it cannot be read."""
    with open(path) as f:
        fields = f.readline().split()
    values = [int(v) for v in fields[1:9]]
    if len(values) < 5:
        raise ValueError(f"{path}: not a cpu line")
    return values[3] + values[4], sum(values)


def own_jiffies() -> int:
    """This process's CPU time so far, user and system, in clock ticks (/proc/self/stat's
    fields 14 and 15). Raises OSError or ValueError where it cannot be read."""
    with open("/proc/self/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()     # (the name may hold spaces)
    return int(fields[11]) + int(fields[12])
