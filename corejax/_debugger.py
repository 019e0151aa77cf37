"""`corejax.debug.breakpoint`: a pdb-like prompt on the host, also inside jit/vmap/grad.

At the call, the user's stack frames (those outside corejax) are captured: their array locals
(concrete or traced) travel as operands of a debug callback, everything else as it was. When
the callback runs, with concrete values, the prompt `(jdb)` evaluates expressions in those
frames. Commands: p / pp <expr>, u(p), d(own), l(ist), w(here) / bt, c(ont), q(uit), help.
"""
from __future__ import annotations

import cmd
import linecache
import os
import pprint
import sys
import traceback

import numpy as np

__all__ = ["breakpoint"]

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


class _Frame:
    """A captured stack frame: its location, and its locals (arrays filled in at runtime)."""

    def __init__(self, frame):
        self.filename, self.lineno = frame.f_code.co_filename, frame.f_lineno
        self.function = frame.f_code.co_name
        self.globals = frame.f_globals
        self.locals = dict(frame.f_locals)

    def array_names(self):
        from corejax.array import Array
        return [k for k, v in self.locals.items() if isinstance(v, Array)]


class _Debugger(cmd.Cmd):
    prompt = "(jdb) "

    def __init__(self, frames, stdin=None, stdout=None):
        super().__init__(stdin=stdin, stdout=stdout)
        if stdin is not None:
            self.use_rawinput = False
        self.frames, self.index = frames, 0

    @property
    def frame(self) -> _Frame:
        return self.frames[self.index]

    def _eval(self, expr):
        return eval(expr, self.frame.globals, dict(self.frame.locals))  # noqa: S307

    def _print_error(self):
        self.stdout.write("".join(traceback.format_exception_only(*sys.exc_info()[:2])))

    def default(self, line):
        self.do_p(line)

    def do_p(self, arg):
        """p expression: print its value in the current frame."""
        try:
            self.stdout.write(repr(self._eval(arg)) + "\n")
        except Exception:  # noqa: BLE001 (the user's expression)
            self._print_error()

    def do_pp(self, arg):
        """pp expression: pretty-print its value in the current frame."""
        try:
            self.stdout.write(pprint.pformat(self._eval(arg)) + "\n")
        except Exception:  # noqa: BLE001
            self._print_error()

    def do_up(self, _):
        """u(p): move to the caller's frame."""
        if self.index + 1 < len(self.frames):
            self.index += 1
        else:
            self.stdout.write("At topmost frame.\n")
        self._print_location()

    do_u = do_up

    def do_down(self, _):
        """d(own): move to the called frame."""
        if self.index > 0:
            self.index -= 1
        else:
            self.stdout.write("At bottommost frame.\n")
        self._print_location()

    do_d = do_down

    def do_list(self, _):
        """l(ist): the source around the current line."""
        f = self.frame
        for n in range(max(1, f.lineno - 5), f.lineno + 6):
            line = linecache.getline(f.filename, n)
            if not line:
                break
            mark = "->" if n == f.lineno else "  "
            self.stdout.write(f"{n:4d} {mark} {line.rstrip()}\n")

    do_l = do_list

    def do_where(self, _):
        """w(here) / bt: the captured stack, innermost last."""
        for i in reversed(range(len(self.frames))):
            f = self.frames[i]
            mark = ">" if i == self.index else " "
            self.stdout.write(f"{mark} {f.filename}({f.lineno}){f.function}()\n")

    do_w = do_bt = do_where

    def do_continue(self, _):
        """c(ont): leave the debugger and continue the program."""
        return True

    do_c = do_cont = do_continue

    def do_quit(self, _):
        """q(uit): exit the program."""
        sys.exit("Exiting debugger due to `quit`")

    do_q = do_quit

    def do_EOF(self, _):  # noqa: N802 (cmd's name for end of input)
        return True

    def _print_location(self):
        f = self.frame
        self.stdout.write(f"> {f.filename}({f.lineno})\n")
        for n in range(max(1, f.lineno - 2), f.lineno + 3):
            line = linecache.getline(f.filename, n)
            if line:
                self.stdout.write(("->  " if n == f.lineno else "    ") + line.rstrip() + "\n")

    def preloop(self):
        self.stdout.write("Entering jdb:\n")


def breakpoint(*, backend=None, filter_frames: bool = True,  # noqa: A001 (JAX's name)
               num_frames: int | None = None, ordered: bool = False, token=None, **kwargs):
    """Stops the program at this line with a `(jdb)` prompt on the host, showing the values of
    the caller's arrays at runtime (also inside jit, vmap and grad)."""
    from corejax import debug
    frames, frame = [], sys._getframe(1)
    while frame is not None:
        inside = os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR)
        if not (filter_frames and inside):
            frames.append(_Frame(frame))
        frame = frame.f_back
    if num_frames is not None:
        frames = frames[:num_frames]
    slots = [(i, name) for i, f in enumerate(frames) for name in f.array_names()]
    values = [frames[i].locals[name] for i, name in slots]
    stdin, stdout = kwargs.get("stdin"), kwargs.get("stdout")

    def run(*concrete):
        from corejax.array import Array
        for (i, name), value in zip(slots, concrete):
            frames[i].locals[name] = Array(np.array(value))
        _Debugger(frames, stdin=stdin, stdout=stdout).cmdloop()

    debug.callback(run, *values)
