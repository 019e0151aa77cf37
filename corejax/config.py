"""Global flags, read with `config.<name>` and set with `config.update(name, value)`.

JAX's names are accepted too (`config.update('jax_enable_x64', True)`). Environment variables
set the initial values: JAX_ENABLE_X64, JAX_DEBUG_NANS, COREJAX_PLATFORM, COREJAX_CACHE_DIR,
COREJAX_CHECK_EAGER_AVALS, JAX_NO_TRACING, JAX_NO_EXECUTION, JAX_LEGACY_PRNG_KEY.
`enable_checks` (JAX's name) is the option `check_eager_avals`.
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


_CHOICES = {
    "traceback_filtering": ("off", "tracebackhide", "remove_frames", "quiet_remove_frames",
                            "auto"),
    "numpy_rank_promotion": ("allow", "warn", "raise"),
    "numpy_dtype_promotion": ("standard", "strict"),
    "default_matmul_precision": (None, "default", "high", "highest", "bfloat16",
                                 "tensorfloat32", "float32", "ANY_F8_ANY_F8_F32",
                                 "ANY_F8_ANY_F8_F32_FAST_ACCUM", "ANY_F8_ANY_F8_ANY",
                                 "ANY_F8_ANY_F8_ANY_FAST_ACCUM", "F16_F16_F16", "F16_F16_F32",
                                 "BF16_BF16_BF16", "BF16_BF16_F32", "BF16_BF16_F32_X3",
                                 "BF16_BF16_F32_X6", "BF16_BF16_F32_X9", "TF32_TF32_F32",
                                 "TF32_TF32_F32_X3", "F32_F32_F32", "F64_F64_F64"),
    "legacy_prng_key": ("allow", "warn", "error"),
    # every implementation JAX registers; corejax computes threefry2x32 only (corejax/_guards.py
    # refuses the others when they are set)
    "default_prng_impl": ("threefry2x32", "threefry4x32", "rbg", "unsafe_rbg", "philox2x32",
                          "philox4x32"),
    # host/device transfer guards (corejax/_transfer_guard.py); None: 'allow'
    **{f"transfer_guard{d}": (None, "allow", "log", "disallow", "log_explicit",
                              "disallow_explicit")
       for d in ("", "_host_to_device", "_device_to_host", "_device_to_device")},
    "array_garbage_collection_guard": (None, "allow", "log", "fatal"),
}

# JAX's option names that are another name for a corejax option
_ALIASES = {"enable_checks": "check_eager_avals"}


def _env_num_cpu_devices() -> int:
    """COREJAX_NUM_CPU_DEVICES=N, else JAX's XLA_FLAGS=--xla_force_host_platform_device_count=N,
    else -1 (JAX's default: one CPU device)."""
    val = os.environ.get("COREJAX_NUM_CPU_DEVICES")
    if val is None:
        for flag in os.environ.get("XLA_FLAGS", "").split():
            if flag.startswith("--xla_force_host_platform_device_count="):
                val = flag.split("=", 1)[1]
    return -1 if val is None else int(val)


class Config:
    _defaults = {
        "enable_x64": lambda: _env_bool("JAX_ENABLE_X64", False),
        "threefry_partitionable": lambda: _env_bool("JAX_THREEFRY_PARTITIONABLE", True),
        "debug_nans": lambda: _env_bool("JAX_DEBUG_NANS", False),
        "debug_infs": lambda: _env_bool("JAX_DEBUG_INFS", False),
        # Rank promotion of jnp operands: 'allow', 'warn' or 'raise' (JAX's option).
        "numpy_rank_promotion": lambda: os.environ.get("JAX_NUMPY_RANK_PROMOTION", "allow"),
        # Implicit dtype promotion of jnp operands: 'standard' or 'strict' (JAX's option).
        "numpy_dtype_promotion": lambda: os.environ.get("JAX_NUMPY_DTYPE_PROMOTION",
                                                        "standard"),
        # Accepted for JAX's code: CPU matmuls run in full precision whatever it says, as
        # JAX's own CPU backend does.
        "default_matmul_precision": lambda: os.environ.get("JAX_DEFAULT_MATMUL_PRECISION"),
        # Whether corejax's own frames are removed from tracebacks (corejax/_traceback.py).
        "traceback_filtering": lambda: os.environ.get("JAX_TRACEBACK_FILTERING", "auto"),
        # jit logs each compilation (function, argument shapes) at WARNING level.
        "log_compiles": lambda: _env_bool("JAX_LOG_COMPILES", False),
        "explain_cache_misses": lambda: _env_bool("JAX_EXPLAIN_CACHE_MISSES", False),
        "platform": lambda: os.environ.get("COREJAX_PLATFORM", "cpu"),
        # How many CPU devices corejax.devices() lists (-1: one); fixed once devices are used.
        "num_cpu_devices": _env_num_cpu_devices,
        "cache_dir": lambda: os.environ.get("COREJAX_CACHE_DIR") or _default_cache_dir(),
        # The kernel cache's size limit in MiB; past it the least recently used kernels go.
        "cache_max_mb": lambda: int(os.environ.get("COREJAX_CACHE_MAX_MB", "1024")),
        "disable_jit": lambda: _env_bool("JAX_DISABLE_JIT", False),
        # Eager evaluation also runs each primitive's abstract evaluation and checks the result
        # against it, so a program that runs eagerly also stages (the test suite turns it on).
        "check_eager_avals": lambda: _env_bool("COREJAX_CHECK_EAGER_AVALS", False),
        # Guards (corejax/_guards.py): jit tracing / any execution raises RuntimeError.
        "no_tracing": lambda: _env_bool("JAX_NO_TRACING", False),
        "no_execution": lambda: _env_bool("JAX_NO_EXECUTION", False),
        # After each public call, tracers of its finished jit / vmap traces still referenced
        # from outside raise "Leaked trace" (core.check_leaks; JAX's jax_check_tracer_leaks).
        "check_tracer_leaks": lambda: _env_bool("JAX_CHECK_TRACER_LEAKS", False),
        # Raw uint32 keys passed to corejax.random: 'allow', 'warn' or 'error' (JAX's option).
        "legacy_prng_key": lambda: os.environ.get("JAX_LEGACY_PRNG_KEY", "allow"),
        # The PRNG implementation of new keys; only threefry2x32 can be set (see _guards.py).
        "default_prng_impl": lambda: "threefry2x32",
        # Host/device transfer guards: None (= 'allow'), 'allow', 'log', 'disallow',
        # 'log_explicit', 'disallow_explicit' (corejax/_transfer_guard.py). `transfer_guard`
        # sets the three directions at once.
        "transfer_guard": lambda: os.environ.get("JAX_TRANSFER_GUARD"),
        "transfer_guard_host_to_device":
            lambda: os.environ.get("JAX_TRANSFER_GUARD_HOST_TO_DEVICE"),
        "transfer_guard_device_to_host":
            lambda: os.environ.get("JAX_TRANSFER_GUARD_DEVICE_TO_HOST"),
        "transfer_guard_device_to_device":
            lambda: os.environ.get("JAX_TRANSFER_GUARD_DEVICE_TO_DEVICE"),
        # The device uncommitted arrays and jitted computations go to (a Device or a platform
        # name); None: the first device of the default platform.
        "default_device": lambda: None,
        # Typed PRNG keys are tracked and a reused key raises KeyReuseError.
        "debug_key_reuse": lambda: _env_bool("JAX_DEBUG_KEY_REUSE", False),
        # JAX's switch to its newer rematerialization implementation; jax.checkpoint behaves
        # the same either way here (names and policies select what is saved).
        "remat3": lambda: _env_bool("JAX_REMAT3", False),
        # JAX's flag for custom PRNG implementations (typed keys are always available here).
        "enable_custom_prng": lambda: _env_bool("JAX_ENABLE_CUSTOM_PRNG", False),
        # nn.softmax differentiates through its custom_jvp rule (True) or its body (False).
        "softmax_custom_jvp": lambda: _env_bool("JAX_SOFTMAX_CUSTOM_JVP", False),
        # Cumulative reductions lower through lax.associative_scan on every platform.
        "jax2tf_associative_scan_reductions":
            lambda: _env_bool("JAX2TF_ASSOCIATIVE_SCAN_REDUCTIONS", False),
        # False: reduce_sum of float16 / bfloat16 operands raises.
        "allow_f16_reductions": lambda: _env_bool("JAX_ALLOW_F16_REDUCTIONS", True),
        # What happens when the cycle collector (not reference counting) frees an Array:
        # None / 'allow', 'log' or 'fatal'.
        "array_garbage_collection_guard":
            lambda: os.environ.get("JAX_ARRAY_GARBAGE_COLLECTION_GUARD"),
        # Multi-process operations from a thread other than the one that set it raise.
        "thread_guard": lambda: _env_bool("JAX_THREAD_GUARD", False),
        # Sharding type options of JAX 0.10 (corejax/sharding.py).
        "remove_size_one_mesh_axis_from_type":
            lambda: _env_bool("JAX_REMOVE_SIZE_ONE_MESH_AXIS_FROM_TYPE", False),
        "auto_pcast": lambda: _env_bool("JAX_AUTO_PCAST", True),
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
        name = name[4:] if name.startswith("jax_") else name
        return _ALIASES.get(name, name)

    def update(self, name: str, value) -> None:
        key = self._canonical(name)
        if key not in self._values:
            raise AttributeError(
                f"Unrecognized config option: {name!r}. Known options: {sorted(self._values)}.")
        if key == "platform" and value not in ("cpu", "cuda"):
            raise ValueError(f"config 'platform' must be 'cpu' or 'cuda', got {value!r}.")
        allowed = _CHOICES.get(key)
        if allowed is not None and value not in allowed:
            raise ValueError(f"Invalid value '{value}' for JAX flag jax_{key}; expected one "
                             f"of {', '.join(map(repr, allowed))}.")
        check = _VALIDATORS.get(key)
        if check is not None:
            value = check(value)
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


# key -> a function checking (and canonicalizing) a new value: registered by the modules that
# give an option its meaning (corejax/_guards.py), run by update before the value is set
_VALIDATORS: dict = {}

config = Config()
