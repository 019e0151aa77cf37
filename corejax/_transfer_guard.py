"""Transfer guards and the array garbage-collection guard: what `transfer_guard*` and
`array_garbage_collection_guard` do.

A transfer guard watches one direction of data movement and, per its level:
  'allow' (or unset): nothing;  'log': logs implicit transfers;  'disallow': raises on
  implicit ones;  'log_explicit' / 'disallow_explicit': the same for explicit ones too.
Explicit transfers are `device_put` (onto a device) and `device_get` (to the host); every other
movement is implicit. The error is `errors.JaxRuntimeError`, as JAX raises it.

- host to device: host data the user hands over (NumPy arrays and scalars, Python scalars,
  lists) becoming an Array outside a staged trace: `jnp.asarray(np_array)`, an operand of a
  jnp function or operator (`x + 1`), an argument of a jitted call. Constants a traced program
  captures are not transfers (they are part of the program), nor are the constants corejax
  creates itself (`jnp.zeros`, grad's seed cotangent), which JAX's eager mode happens to
  transfer one by one: a guarded `with` block refuses what the user passes in, not what corejax
  builds for them.
- device to host: reading a CUDA array's values on the host (`np.asarray(x)`, `float(x)`,
  printing; explicit: `device_get`). A CPU array's buffer is host memory, and reading it moves
  nothing: JAX's CPU backend does not guard it either.
- device to device: an Array moved to another device: explicit by `device_put(x, device)`,
  implicit when an uncommitted array joins a computation on another device (operands
  committed there, or `default_device`).

The array garbage-collection guard ('allow', 'log', 'fatal') reports an Array freed by
Python's cycle collector rather than by reference counting (its buffer lived until a
collection ran): 'log' logs it, 'fatal' aborts the process as JAX's does.
"""
from __future__ import annotations

import gc
import logging
import os
import sys

from corejax.config import config

__all__ = ["Guarded", "host_to_device", "device_to_host", "device_to_device",
           "describe_transfer"]

_log = logging.getLogger("corejax")

_DIRECTIONS = ("host_to_device", "device_to_host", "device_to_device")


class Guarded:
    """Which directions have a level other than allow (class attributes, read on hot paths)."""
    host_to_device = False
    device_to_host = False
    device_to_device = False


def _level(direction: str):
    return getattr(config, f"transfer_guard_{direction}") or "allow"


def _refresh(direction: str):
    def watcher(value):
        setattr(Guarded, direction, (value or "allow") != "allow")
    return watcher


for _d in _DIRECTIONS:
    config.watch(f"transfer_guard_{_d}", _refresh(_d))
    _refresh(_d)(getattr(config, f"transfer_guard_{_d}"))


def _set_all(value) -> None:
    """config.update('jax_transfer_guard', level) sets the three directions (as JAX's)."""
    for d in _DIRECTIONS:
        config.update(f"transfer_guard_{d}", value)


config.watch("transfer_guard", _set_all)
if config.transfer_guard is not None:
    _set_all(config.transfer_guard)


def describe_transfer(aval, src=None, dst=None) -> str:
    """JAX's description of a transfer: aval=..., sharding=..., dst_sharding=..."""
    parts = [f"aval={aval!r}"]
    if src is not None:
        parts.append(f"sharding=SingleDeviceSharding(device={src!r})")
    if dst is not None:
        parts.append(f"dst_sharding=SingleDeviceSharding(device={dst!r})")
    return ", ".join(parts)


def _check(direction: str, explicit: bool, describe) -> None:
    level = _level(direction)
    if level == "allow" or (explicit and level in ("log", "disallow")):
        return
    what = direction.replace("_", "-")
    if level in ("disallow", "disallow_explicit"):
        from corejax.errors import JaxRuntimeError
        raise JaxRuntimeError(
            f"INVALID_ARGUMENT: Disallowed {what} transfer: {describe()}. The "
            f"transfer_guard_{direction} level is "
            f"{level!r}: move the data explicitly (device_put to a device, device_get to the "
            "host) or allow the transfer.")
    _log.warning("%s transfer: %s", what, describe())


def host_to_device(describe, explicit: bool = False) -> None:
    """Called (only while Guarded.host_to_device) where host data becomes an Array; `describe`
    builds the description."""
    _check("host_to_device", explicit, describe)


def device_to_host(describe, explicit: bool = False) -> None:
    _check("device_to_host", explicit, describe)


def device_to_device(describe, explicit: bool = False) -> None:
    _check("device_to_device", explicit, describe)


# --- the array garbage-collection guard -------------------------------------------------------

class _Collecting:
    """Whether Python's cycle collector is running (gc.callbacks keeps it current)."""
    now = False


def _gc_phase(phase, info) -> None:
    _Collecting.now = phase == "start"


def _gc_level():
    return config.array_garbage_collection_guard or "allow"


def array_collected(array) -> None:
    """Called from Array.__del__ while the guard is on: reports an Array the cycle collector
    frees."""
    if not _Collecting.now:
        return
    level = _gc_level()
    message = (f"`corejax.Array` was deleted by the Python garbage collector instead of "
               f"reference counting. Break the reference cycle that holds the array "
               f"(shape={tuple(array._value.shape)}, dtype={array._value.dtype}) so that it "
               "is freed as soon as it is unused.")
    if level == "log":
        _log.error(message)
    elif level == "fatal":
        sys.stderr.write(f"Fatal: {message}\n")
        sys.stderr.flush()
        os.abort()


def track_collections() -> None:
    """Keeps _Collecting current from now on (installed once the guard is first set)."""
    if _gc_phase not in gc.callbacks:
        gc.callbacks.append(_gc_phase)
