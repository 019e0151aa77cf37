"""Tracebacks that show the user's code: corejax's own frames are removed from an exception
that leaves a transformation or a jitted call, as JAX does (JAX_TRACEBACK_FILTERING).

`api_boundary(f)` marks a public entry point. When an exception leaves the outermost boundary,
its traceback keeps only the frames outside the corejax package (the boundary's own frame is
re-added by Python when it re-raises) and, in "remove_frames" mode, gains a note saying so.
Modes (config `traceback_filtering`, environment JAX_TRACEBACK_FILTERING): "auto" (the default:
"remove_frames", except under pytest or IPython, whose own tracebacks need the frames),
"remove_frames", "quiet_remove_frames" (no note), "off" (and "tracebackhide", which corejax
treats as "off").
"""
from __future__ import annotations

import functools
import os
import sys
import threading
import types

from corejax.config import config

__all__ = ["api_boundary"]

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_NOTE = ("For simplicity, corejax has removed its internal frames from the traceback of the "
         "following exception. Set JAX_TRACEBACK_FILTERING=off to include these.")


class _Depth(threading.local):
    def __init__(self):
        self.value = 0


_depth = _Depth()


def _mode() -> str:
    mode = config.traceback_filtering
    if mode == "auto":
        interactive = "pytest" in sys.modules or "IPython" in sys.modules
        return "off" if interactive else "remove_frames"
    return mode


def _filtered(tb):
    kept = []
    while tb is not None:
        if not os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(_PACKAGE_DIR):
            kept.append(tb)
        tb = tb.tb_next
    new = None
    for t in reversed(kept):
        new = types.TracebackType(new, t.tb_frame, t.tb_lasti, t.tb_lineno)
    return new


class _LeakCheck:
    on = False


def _set_leak_check(value) -> None:
    from corejax import core
    _LeakCheck.on = core.leak_check.enabled = bool(value)
    core._trace_state.finished = []


config.watch("check_tracer_leaks", _set_leak_check)
if config.check_tracer_leaks:       # JAX_CHECK_TRACER_LEAKS=1 in the environment
    _set_leak_check(True)


def api_boundary(fun):
    """`fun` as a public entry point: exceptions leaving it have corejax's frames removed."""
    @functools.wraps(fun)
    def boundary(*args, **kwargs):
        _depth.value += 1
        try:
            out = fun(*args, **kwargs)
            if _depth.value == 1 and _LeakCheck.on:
                from corejax import core
                core.check_leaks()
            return out
        except Exception as e:
            if _depth.value == 1:
                mode = _mode()
                if mode in ("remove_frames", "quiet_remove_frames") and not getattr(
                        e, "_corejax_filtered", False):
                    try:
                        e._corejax_filtered = True
                    except AttributeError:  # an exception type with __slots__
                        pass
                    if mode == "remove_frames" and hasattr(e, "add_note"):
                        e.add_note(_NOTE)
                    raise e.with_traceback(_filtered(e.__traceback__)) from e.__cause__
            raise
        finally:
            _depth.value -= 1

    return boundary
