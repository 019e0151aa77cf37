"""Records what JAX does under transfer_guard*, default_device, allow_f16_reductions and
softmax_custom_jvp (tests/golden/config_guard_cases.py) into config_guards.json. Run with
real JAX on 2 CPU devices:

  XLA_FLAGS=--xla_force_host_platform_device_count=2 python tests/golden/gen_config_guards.py
"""
import json
import os
import subprocess
import sys

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import config_guard_cases as cases  # noqa: E402

assert len(jax.devices()) == 2, "run with XLA_FLAGS=--xla_force_host_platform_device_count=2"
out = {"jax_version": jax.__version__}

LEVELS = ("allow", "log", "disallow", "log_explicit", "disallow_explicit")


def guarded_outcomes(kind: str, level: str) -> dict:
    """Each case under the guard, in a fresh process: JAX checks a transfer when an eager op or
    jitted call is first compiled, and its cached C++ fast path skips the check, so outcomes in
    one process would depend on which cases ran before."""
    if len(sys.argv) > 1:
        return {}
    code = (f"import sys, json; sys.argv = ['x', 'child']; sys.path.insert(0, {HERE!r}); "
            "import jax, jax.numpy as jnp; from jax import lax; import config_guard_cases as c; "
            f"t = c.host_to_device_cases(jax, jnp, lax) if {kind!r} == 'host_to_device' else "
            "c.device_to_device_cases(jax, jnp); "
            f"k = sys.stdin.read().strip(); g = jax.transfer_guard if {kind!r} == "
            "'host_to_device' else jax.transfer_guard_device_to_device\n"
            f"with g({level!r}): print('OUTCOME', c.outcome(t[k]))")
    table = (cases.host_to_device_cases(jax, jnp, lax) if kind == "host_to_device"
             else cases.device_to_device_cases(jax, jnp))
    result = {}
    for name in table:
        proc = subprocess.run([sys.executable, "-c", code], input=name, text=True,
                              capture_output=True, env=os.environ)
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("OUTCOME ")]
        assert lines, proc.stderr
        result[name] = lines[-1].split(" ", 1)[1]
    return result


HERE = os.path.dirname(os.path.abspath(__file__))
out["host_to_device"] = {level: guarded_outcomes("host_to_device", level) for level in LEVELS}
out["device_to_device"] = {level: guarded_outcomes("device_to_device", level)
                           for level in LEVELS}

out["default_device"] = {}
table = cases.default_device_cases(jax, jnp)
with jax.default_device(jax.devices()[1]):
    for k, f in table.items():
        out["default_device"][k] = cases.placement(f())
with jax.default_device("cpu"):
    out["default_device"]["platform_name_cpu"] = cases.placement(jnp.ones(2))

out["half_sums"] = {}
for allow in (True, False):
    table = cases.half_sum_cases(jax, jnp, lax)
    with jax.allow_f16_reductions(allow):
        out["half_sums"][str(allow)] = {k: cases.outcome(f) for k, f in table.items()}

out["softmax"] = {}
for flag in (False, True):
    table = cases.softmax_values(jax, jnp)
    with jax.softmax_custom_jvp(flag):
        out["softmax"][str(flag)] = {
            k: (f() if k == "custom_jvp_staged" else np.asarray(f()).tolist())
            for k, f in table.items()}

# the options' defaults and the values they accept
out["defaults"] = {name: getattr(jax, name).value for name in (
    "transfer_guard_host_to_device", "transfer_guard_device_to_host",
    "transfer_guard_device_to_device", "softmax_custom_jvp",
    "jax2tf_associative_scan_reductions", "allow_f16_reductions",
    "array_garbage_collection_guard", "thread_guard")}
out["invalid"] = {}
for name, value in (("transfer_guard", "bogus"), ("default_device", 3),
                    ("array_garbage_collection_guard", "maybe")):
    def enter(name=name, value=value):
        with getattr(jax, name)(value):
            pass
    out["invalid"][name] = cases.outcome(enter)

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "config_guards.json")
with open(path + ".tmp", "w") as fh:
    json.dump(out, fh, indent=1, sort_keys=True)
os.replace(path + ".tmp", path)
print("wrote", path)
