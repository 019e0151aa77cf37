"""Instrumentation events, as `jax.monitoring`: code marks named events, durations, time spans
and scalars; every listener registered for that kind is called with the event's name, its
value(s) and any metadata keyword arguments.

corejax emits, with JAX's names and in JAX's order:
  /jax/core/compile/jaxpr_trace_duration        tracing a jitted function to a Jaxpr
                                                (scalar = start time, duration, time span;
                                                fun_name=<function name>)
  /jax/core/compile/backend_compile_duration    building the executable: passes, fusion,
                                                kernel code generation and Numba compilation
                                                or loading (fun_name='jit(<name>)')
  /jax/compilation_cache/tasks_using_cache      once per process, at the first kernel-cache
  /jax/compilation_cache/task_disabled_cache      lookup (the cache folder is (not) writable)
  /jax/compilation_cache/compile_requests_use_cache   each kernel looked up in the disk cache
  /jax/compilation_cache/cache_hits             its machine code came from the disk cache
  /jax/compilation_cache/cache_misses           it was compiled and written to the cache
  /jax/compilation_cache/cache_retrieval_time_sec  (duration) loading a cached kernel
A program compiled with several kernels makes one cache request per kernel; kernels already
loaded in this process make none. Compiles of sub-programs (control flow inside a program),
pmap and shard_map report no compile duration of their own.

JAX events without a counterpart here:
  /jax/core/compile/jaxpr_to_mlir_module_duration  corejax has no separate lowering stage:
      passes, fusion, code generation and Numba compilation are one build (reported as
      backend_compile_duration)
  /jax/compilation_cache/compile_time_saved_sec   the kernel cache does not record how long a
      kernel took to compile

This module imports nothing from corejax, so that every layer may emit events.
"""
from __future__ import annotations

import time
from typing import Protocol

__all__ = ["clear_event_listeners", "record_event", "record_event_duration_secs",
           "record_event_time_span", "record_scalar", "register_event_duration_secs_listener",
           "register_event_listener", "register_event_time_span_listener",
           "register_scalar_listener", "unregister_event_duration_listener",
           "unregister_event_listener", "unregister_event_time_span_listener",
           "unregister_scalar_listener"]


class EventListenerWithMetadata(Protocol):
    def __call__(self, event: str, **kwargs: str | int) -> None: ...


class EventDurationListenerWithMetadata(Protocol):
    def __call__(self, event: str, duration_secs: float, **kwargs: str | int) -> None: ...


class EventTimeSpanListenerWithMetadata(Protocol):
    def __call__(self, event: str, start_time: float, end_time: float,
                 **kwargs: str | int) -> None: ...


class ScalarListenerWithMetadata(Protocol):
    def __call__(self, event: str, value: float | int, **kwargs: str | int) -> None: ...


# Tuples, replaced (never mutated) on (un)registration: a listener that unregisters itself, or
# one registered by another thread, never disturbs an iteration in progress.
_event_listeners: tuple = ()
_duration_listeners: tuple = ()
_time_span_listeners: tuple = ()
_scalar_listeners: tuple = ()


def record_event(event: str, **kwargs: str | int) -> None:
    """Calls every event listener with `event` and the metadata `kwargs` (pass the same keys
    in the same order each time an event is recorded)."""
    for callback in _event_listeners:
        callback(event, **kwargs)


def record_event_duration_secs(event: str, duration: float, **kwargs: str | int) -> None:
    """Calls every duration listener with `event`, `duration` (seconds) and `kwargs`."""
    for callback in _duration_listeners:
        callback(event, duration, **kwargs)


def record_event_time_span(event: str, start_time: float, end_time: float,
                           **kwargs: str | int) -> None:
    """Calls every time-span listener with `event`, its start and end (seconds since the
    epoch, as time.time()) and `kwargs`."""
    for callback in _time_span_listeners:
        callback(event, start_time, end_time, **kwargs)


def record_scalar(event: str, value: float | int, **kwargs: str | int) -> None:
    """Calls every scalar listener with `event`, `value` and `kwargs`."""
    for callback in _scalar_listeners:
        callback(event, value, **kwargs)


def register_event_listener(callback: EventListenerWithMetadata) -> None:
    """`callback(event, **kwargs)` is called by every record_event()."""
    global _event_listeners
    _event_listeners = (*_event_listeners, callback)


def register_event_duration_secs_listener(callback: EventDurationListenerWithMetadata) -> None:
    """`callback(event, duration_secs, **kwargs)` is called by every
    record_event_duration_secs()."""
    global _duration_listeners
    _duration_listeners = (*_duration_listeners, callback)


def register_event_time_span_listener(callback: EventTimeSpanListenerWithMetadata) -> None:
    """`callback(event, start_time, end_time, **kwargs)` is called by every
    record_event_time_span()."""
    global _time_span_listeners
    _time_span_listeners = (*_time_span_listeners, callback)


def register_scalar_listener(callback: ScalarListenerWithMetadata) -> None:
    """`callback(event, value, **kwargs)` is called by every record_scalar()."""
    global _scalar_listeners
    _scalar_listeners = (*_scalar_listeners, callback)


def _without(listeners: tuple, callback) -> tuple:
    # (an AssertionError for a callback never registered, as JAX raises)
    assert callback in listeners, f"{callback!r} is not a registered listener"
    i = listeners.index(callback)
    return listeners[:i] + listeners[i + 1:]


def unregister_event_listener(callback: EventListenerWithMetadata) -> None:
    """Removes an event listener (AssertionError if it is not registered)."""
    global _event_listeners
    _event_listeners = _without(_event_listeners, callback)


def unregister_event_duration_listener(callback: EventDurationListenerWithMetadata) -> None:
    """Removes a duration listener (AssertionError if it is not registered)."""
    global _duration_listeners
    _duration_listeners = _without(_duration_listeners, callback)


def unregister_event_time_span_listener(callback: EventTimeSpanListenerWithMetadata) -> None:
    """Removes a time-span listener (AssertionError if it is not registered)."""
    global _time_span_listeners
    _time_span_listeners = _without(_time_span_listeners, callback)


def unregister_scalar_listener(callback: ScalarListenerWithMetadata) -> None:
    """Removes a scalar listener (AssertionError if it is not registered)."""
    global _scalar_listeners
    _scalar_listeners = _without(_scalar_listeners, callback)


def clear_event_listeners() -> None:
    """Removes every listener of every kind. (JAX 0.10.2 leaves its scalar listeners in
    place, an oversight of its implementation; corejax clears them too.)"""
    global _event_listeners, _duration_listeners, _time_span_listeners, _scalar_listeners
    _event_listeners = _duration_listeners = _time_span_listeners = _scalar_listeners = ()


class _Timed:
    """Times a block as JAX times its compilation stages: on entry the scalar listeners get
    the start time (time.time()); on a normal exit the duration listeners get the elapsed
    seconds and the time-span listeners the start and end (also when the block raised, as
    JAX reports a failed trace's duration). Reads nothing but the clock when no listener is
    registered."""

    __slots__ = ("event", "fun_name", "start")

    def __init__(self, event: str, fun_name: str):
        self.event, self.fun_name = event, fun_name

    def __enter__(self):
        self.start = time.time()
        if _scalar_listeners:
            record_scalar(self.event, self.start, fun_name=self.fun_name)
        return self

    def __exit__(self, exc_type, exc, tb):
        if not (_duration_listeners or _time_span_listeners):
            return
        end = time.time()
        record_event_duration_secs(self.event, end - self.start, fun_name=self.fun_name)
        record_event_time_span(self.event, self.start, end, fun_name=self.fun_name)


JAXPR_TRACE_DURATION = "/jax/core/compile/jaxpr_trace_duration"
BACKEND_COMPILE_DURATION = "/jax/core/compile/backend_compile_duration"
