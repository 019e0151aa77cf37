"""Global flags, read with `config.<name>` and set with `config.update(name, value)`.

JAX's names are accepted too (`config.update('jax_enable_x64', True)`). Environment variables
set the initial values: JAX_ENABLE_X64, JAX_DEBUG_NANS, COREJAX_PLATFORM, COREJAX_CACHE_DIR,
COREJAX_CHECK_EAGER_AVALS.
"""
from __future__ import annotations

import os

__all__ = ["config", "Config"]


def _env_bool(name: str, default: bool) -> bool:
    val = os.environ.get(name)
    if val is None:
        return default
    return val.strip().lower() in ("1", "true", "yes", "on")


def _default_cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "corejax")


class Config:
    _defaults = {
        "enable_x64": lambda: _env_bool("JAX_ENABLE_X64", False),
        "threefry_partitionable": lambda: _env_bool("JAX_THREEFRY_PARTITIONABLE", False),
        "debug_nans": lambda: _env_bool("JAX_DEBUG_NANS", False),
        "explain_cache_misses": lambda: _env_bool("JAX_EXPLAIN_CACHE_MISSES", False),
        "platform": lambda: os.environ.get("COREJAX_PLATFORM", "cpu"),
        "cache_dir": lambda: os.environ.get("COREJAX_CACHE_DIR") or _default_cache_dir(),
        "disable_jit": lambda: _env_bool("JAX_DISABLE_JIT", False),
        # Eager evaluation also runs each primitive's abstract evaluation and checks the result
        # against it, so a program that runs eagerly also stages (the test suite turns it on).
        "check_eager_avals": lambda: _env_bool("COREJAX_CHECK_EAGER_AVALS", False),
    }

    def __init__(self):
        object.__setattr__(self, "_values", {k: f() for k, f in self._defaults.items()})
        object.__setattr__(self, "_watchers", {})
        for key, value in self._values.items():
            # also plain attributes: `config.platform` is read on every jitted call, and an
            # attribute found in the instance dict never reaches __getattr__
            object.__setattr__(self, key, value)

    @staticmethod
    def _canonical(name: str) -> str:
        return name[4:] if name.startswith("jax_") else name

    def update(self, name: str, value) -> None:
        key = self._canonical(name)
        if key not in self._values:
            raise AttributeError(
                f"Unrecognized config option: {name!r}. Known options: {sorted(self._values)}.")
        if key == "platform" and value not in ("cpu", "cuda"):
            raise ValueError(f"config 'platform' must be 'cpu' or 'cuda', got {value!r}.")
        self._values[key] = value
        object.__setattr__(self, key, value)
        for watcher in self._watchers.get(key, ()):
            watcher(value)

    def watch(self, name: str, callback) -> None:
        """Calls `callback(value)` whenever option `name` changes (for caches keyed on it)."""
        self._watchers.setdefault(self._canonical(name), []).append(callback)

    def __getattr__(self, name: str):
        try:
            return self._values[self._canonical(name)]
        except KeyError:
            raise AttributeError(f"Unrecognized config option: {name!r}.") from None

    def __setattr__(self, name, value):
        raise AttributeError("Use config.update(name, value) to change a config option.")

    def values(self) -> dict:
        return dict(self._values)


config = Config()
