"""What the guard-like config options of the top-level API do, and user config contexts.

- `no_tracing`: while set, a jit call that would trace its function (a cache miss: new
  argument structure, shapes, dtypes, weak types, static values or config), `jit(f).trace` /
  `.lower`, `make_jaxpr` and `eval_shape` raise RuntimeError. Calls that hit jit's cache run.
  corejax evaluates eager operations without tracing them (JAX runs each through a small jitted
  program, so there a first eager op traces too): eager code is not refused.
- `no_execution`: while set, running a program raises RuntimeError: an eager primitive, or a
  program compiled by `jit` run by its call. Tracing (make_jaxpr, eval_shape, jit under
  another transformation) and `device_put` are not executions and go on.
- `legacy_prng_key`: 'allow', 'warn' (UserWarning) or 'error' (ValueError) when a raw uint32
  key array (`random.PRNGKey`) is passed as a key to a corejax.random function; typed keys
  (`random.key`) are always accepted, and `wrap_key_data` takes raw key data by design.
- `default_prng_impl`: JAX's implementation names are accepted, but corejax computes only
  threefry2x32 (JAX's default); setting any other raises ValueError rather than silently
  producing threefry keys under another name.
- `enable_checks`: JAX's switch for extra internal checking; corejax's own extra checking is
  `check_eager_avals` (every eager result checked against its primitive's abstract
  evaluation), and the two are one option.
- `make_user_context(default_value)`: a context whose value is part of every jit cache key,
  so a change of value re-traces.
"""
from __future__ import annotations

import os
import sys
import threading
import warnings

from corejax.config import config, _VALIDATORS

__all__ = ["make_user_context", "UserContext", "check_tracing", "refuse_execution",
           "check_legacy_key", "Guards", "ThreadGuard"]


class Guards:
    """The guards' switches, read on hot paths (a class attribute, no config lookup)."""
    no_execution = bool(config.no_execution)


config.watch("no_execution", lambda v: setattr(Guards, "no_execution", bool(v)))


class ThreadGuard:
    """`thread_guard`: the thread that set it (None while it is off). Multi-process
    collectives (corejax/_mpi.py) entered from any other thread raise before they
    communicate: threads entering collectives in different orders on different processes
    would deadlock them."""
    owner = threading.get_ident() if config.thread_guard else None


config.watch("thread_guard", lambda on: setattr(
    ThreadGuard, "owner", threading.get_ident() if on else None))


def check_tracing(what: str) -> None:
    """Raises while `no_tracing` is set: `what` (e.g. 'jit(f)') would trace a function."""
    if config.no_tracing:
        raise RuntimeError(
            f"{what} would trace its function (nothing cached matches these argument shapes, "
            "dtypes, static values and config), but the no_tracing config option is set. "
            "Call it first with these arguments outside `with corejax.no_tracing(True):`, or "
            "unset the option.")


def refuse_execution(what: str) -> None:
    """The error of running `what` while `no_execution` is set."""
    raise RuntimeError(
        f"corejax tried to execute {what}, but the no_execution config option is set. Run "
        "it outside `with corejax.no_execution(True):` or unset the option; tracing "
        "(make_jaxpr, eval_shape) is allowed under it.")


_LEGACY_MESSAGE = ("{name}: a raw uint32 key array (random.PRNGKey) was passed as a PRNG key "
                   "while the legacy_prng_key config option is {mode!r}. Create keys with "
                   "corejax.random.key(seed) instead, or set legacy_prng_key to 'allow' if a "
                   "raw key was meant.")


def check_legacy_key(name: str) -> None:
    """What `legacy_prng_key` says of a raw uint32 key passed to random function `name`."""
    mode = config.legacy_prng_key
    if mode == "allow":
        return
    message = _LEGACY_MESSAGE.format(name=name, mode=mode)
    if mode == "error":
        raise ValueError(message)
    warnings.warn(message, UserWarning, stacklevel=_user_stacklevel())


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _user_stacklevel() -> int:
    """The stacklevel of the first frame outside corejax (where the user called in), so that a
    warning points at the user's line."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame, level = frame.f_back, level + 1
    return level


def _check_prng_impl(value):
    if value != "threefry2x32":
        raise ValueError(
            f"default_prng_impl {value!r} is a PRNG implementation JAX has, but corejax "
            "computes only 'threefry2x32' (JAX's default): keep the default, or use JAX for "
            f"{value} keys.")
    return value


_VALIDATORS["default_prng_impl"] = _check_prng_impl


# --- user contexts ------------------------------------------------------------------------------

_user_contexts: list = []
_user_contexts_lock = threading.Lock()


class UserContext:
    """A value with a process-wide default (`set_global`) that `with ctx(value):` overrides
    in the current thread. Every jit cache key holds the current values of all user contexts,
    so a function traced under one value is traced again under another (values must be
    hashable)."""

    __slots__ = ("_global", "_local")

    def __init__(self, default_value=None):
        self._global = default_value
        self._local = threading.local()

    @property
    def value(self):
        stack = getattr(self._local, "stack", None)
        return stack[-1] if stack else self._global

    def get_global(self):
        return self._global

    def set_global(self, value) -> None:
        self._global = value

    def __call__(self, new_value) -> "_UserSetting":
        return _UserSetting(self, new_value)

    def __repr__(self):
        return f"<user context value={self.value!r}>"


class _UserSetting:
    """`with ctx(value):` (a context manager only, as JAX's)."""

    __slots__ = ("_ctx", "_value")

    def __init__(self, ctx: UserContext, value):
        self._ctx, self._value = ctx, value

    def __enter__(self):
        local = self._ctx._local
        if not hasattr(local, "stack"):
            local.stack = []
        local.stack.append(self._value)
        return None

    def __exit__(self, *exc):
        self._ctx._local.stack.pop()
        return False


def make_user_context(default_value=None) -> UserContext:
    """A new user config context (see UserContext): jitted functions are traced and compiled
    again when its value changes."""
    ctx = UserContext(default_value)
    with _user_contexts_lock:
        _user_contexts.append(ctx)
    return ctx


def user_context_key() -> tuple:
    """The current values of every user context, for jit cache keys (() when there are none).
    An unhashable value raises TypeError when the key is used."""
    if not _user_contexts:
        return ()
    values = tuple([c.value for c in _user_contexts])
    try:
        hash(values)
    except TypeError as e:
        bad = next(v for v in values if not _hashable(v))
        raise TypeError(f"a user context (make_user_context) holds the unhashable value "
                        f"{bad!r} ({e}); jit keys its cache on user context values, so give "
                        "it a hashable value (a tuple instead of a list, ...).") from None
    return values


def _hashable(v) -> bool:
    try:
        hash(v)
        return True
    except TypeError:
        return False
