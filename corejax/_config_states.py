"""Config options as objects of the top-level API, as JAX has them: `corejax.enable_x64`,
`debug_nans`, `debug_infs`, `threefry_partitionable`, `explain_cache_misses`, `log_compiles`,
`numpy_rank_promotion`, `numpy_dtype_promotion`, `default_matmul_precision`, and the guards
`no_tracing`, `no_execution`, `legacy_prng_key`, `default_prng_impl`, `enable_checks` (what
these do: corejax/_guards.py), the leak checker `check_tracer_leaks` / `checking_leaks()`
(core.check_leaks), the transfer guards and `array_garbage_collection_guard`
(corejax/_transfer_guard.py), `default_device` (corejax/array.py), `debug_key_reuse` and
`enable_custom_prng` (corejax/_key_reuse.py), `softmax_custom_jvp` (nn.softmax),
`allow_f16_reductions` (lax.reduce_sum), `thread_guard` (corejax/_guards.py), and
`jax2tf_associative_scan_reductions`, which JAX 0.10.2 reads nowhere but in its jax2tf test
harness (corejax accepts it with the same absence of effect). `option.value`
reads the option; `with option(new_value):` (or `@option(new_value)` on a function) sets it for
the duration. Their public path is corejax.

The options are process-wide (corejax.config): a `with` block changes the value every
thread sees until it exits, where JAX's blocks are per thread.
"""
from __future__ import annotations

import contextlib
import functools

from corejax.config import config

__all__ = ["State", "enable_x64", "debug_nans", "threefry_partitionable",
           "explain_cache_misses", "debug_infs", "log_compiles", "numpy_rank_promotion",
           "numpy_dtype_promotion", "default_matmul_precision", "no_tracing", "no_execution",
           "legacy_prng_key", "default_prng_impl", "enable_checks", "check_tracer_leaks",
           "checking_leaks", "transfer_guard", "transfer_guard_host_to_device",
           "transfer_guard_device_to_host", "transfer_guard_device_to_device", "default_device",
           "debug_key_reuse", "enable_custom_prng", "softmax_custom_jvp",
           "jax2tf_associative_scan_reductions", "allow_f16_reductions",
           "array_garbage_collection_guard", "thread_guard",
           "remove_size_one_mesh_axis_from_type", "auto_pcast"]


class State:
    """One config option (`config.<option>`): read it with `.value`, set it in a block with
    `with state(new_value):`."""

    __slots__ = ("_option", "_boolean")

    def __init__(self, option: str, boolean: bool = True):
        self._option, self._boolean = option, boolean

    @property
    def name(self) -> str:
        return f"jax_{self._option}"

    @property
    def value(self):
        return getattr(config, self._option)

    def __call__(self, new_val=True) -> "_Setting":
        return _Setting(self._option, bool(new_val) if self._boolean else new_val)

    def __bool__(self):
        raise TypeError(f"bool() of the config option {self.name}: read its value with "
                        f".value instead.")

    def __repr__(self):
        return f"<config option {self.name}={self.value!r}>"


class _Setting(contextlib.ContextDecorator):
    """Sets a config option on entry and restores its previous value on exit."""

    def __init__(self, option: str, new_val):
        self.option, self.new_val = option, new_val
        self._previous: list = []

    def __enter__(self):
        self._previous.append(getattr(config, self.option))
        config.update(self.option, self.new_val)
        return self

    def __exit__(self, *exc):
        config.update(self.option, self._previous.pop())
        return False


enable_x64 = State("enable_x64")
debug_nans = State("debug_nans")
threefry_partitionable = State("threefry_partitionable")
explain_cache_misses = State("explain_cache_misses")
debug_infs = State("debug_infs")
log_compiles = State("log_compiles")
numpy_rank_promotion = State("numpy_rank_promotion", boolean=False)
numpy_dtype_promotion = State("numpy_dtype_promotion", boolean=False)
default_matmul_precision = State("default_matmul_precision", boolean=False)
# what these do: corejax/_guards.py
no_tracing = State("no_tracing")
no_execution = State("no_execution")
legacy_prng_key = State("legacy_prng_key", boolean=False)
default_prng_impl = State("default_prng_impl", boolean=False)
enable_checks = State("enable_checks")   # the same option as check_eager_avals
# what it does: core.check_leaks (a Python-side tracer leak checker, as JAX's)
check_tracer_leaks = State("check_tracer_leaks")
checking_leaks = functools.partial(check_tracer_leaks, True)

# what these do: corejax/_transfer_guard.py (`transfer_guard(level)` sets the three directions)
transfer_guard_host_to_device = State("transfer_guard_host_to_device", boolean=False)
transfer_guard_device_to_host = State("transfer_guard_device_to_host", boolean=False)
transfer_guard_device_to_device = State("transfer_guard_device_to_device", boolean=False)
_transfer_guard_all = State("transfer_guard", boolean=False)


@contextlib.contextmanager
def transfer_guard(new_val: str):
    """Sets the transfer guard level of all three directions (host to device, device to host,
    device to device) for the duration of the block: 'allow', 'log', 'disallow',
    'log_explicit' or 'disallow_explicit'."""
    with contextlib.ExitStack() as stack:
        for state in (transfer_guard_host_to_device, transfer_guard_device_to_device,
                      transfer_guard_device_to_host, _transfer_guard_all):
            stack.enter_context(state(new_val))
        yield


# the device uncommitted arrays and jitted calls go to (corejax.array.default_device)
default_device = State("default_device", boolean=False)
# the key reuse checker (corejax/random)
debug_key_reuse = State("debug_key_reuse")
enable_custom_prng = State("enable_custom_prng")
# nn.softmax's derivative: its custom_jvp rule or its body (corejax/nn/functions)
softmax_custom_jvp = State("softmax_custom_jvp")
# cumulative reductions lowered through associative_scan (corejax/lax/reductions.py)
jax2tf_associative_scan_reductions = State("jax2tf_associative_scan_reductions")
# False: reduce_sum of float16 / bfloat16 raises (corejax/lax/reductions.py)
allow_f16_reductions = State("allow_f16_reductions")
# what the cycle collector freeing an Array does (corejax/_transfer_guard.py)
array_garbage_collection_guard = State("array_garbage_collection_guard", boolean=False)
# multi-process operations from another thread raise (corejax/_mpi.py)
thread_guard = State("thread_guard")
# sharding type options (corejax/sharding.py)
remove_size_one_mesh_axis_from_type = State("remove_size_one_mesh_axis_from_type")
auto_pcast = State("auto_pcast")
