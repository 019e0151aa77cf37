"""Records what JAX's monitoring and profiler do, for tests/test_monitoring.py and
tests/test_profiler.py. Run with the reference JAX install (never imported by the tests):

    /work/jaxvenv/bin/python tests/golden/gen_monitoring.py

Writes tests/golden/monitoring.json: public names and signatures, the listener calls JAX makes
for a first jit call, a cached call, a persistent-cache miss and hit (each scenario in a fresh
process), errors, and the trace-file and memory-profile layouts."""
from __future__ import annotations

import gzip
import inspect
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import monitoring_cases  # noqa: E402

# JAX events corejax has no counterpart for, and why (the tests expect every other event JAX
# emits in these scenarios from corejax too)
NO_COUNTERPART = {
    "/jax/core/compile/jaxpr_to_mlir_module_duration":
        "corejax has no separate lowering stage: passes, fusion, kernel code generation and "
        "Numba compilation are one build, reported as backend_compile_duration",
    "/jax/compilation_cache/compile_time_saved_sec":
        "the kernel cache does not store how long a kernel took to compile (Numba's cache "
        "has no such field, and rewriting a kernel's source would invalidate its entry)",
}


def scenario(mode: str, cache_dir: str) -> dict:
    """Runs in its own process: the listener calls of one jit function's first and second
    call (and of nothing else: its argument is a NumPy array, so nothing compiles before)."""
    import numpy as np
    import jax
    import jax.numpy as jnp
    from jax import monitoring
    if mode == "disabled":
        jax.config.update("jax_enable_compilation_cache", False)
    else:
        jax.config.update("jax_compilation_cache_dir", cache_dir)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return monitoring_cases.first_and_cached_call(jax, jnp, monitoring, np)


def _in_subprocess(mode: str, cache_dir: str) -> dict:
    out = subprocess.run([sys.executable, __file__, "--scenario", mode, cache_dir],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def api_facts() -> dict:
    import numpy as np
    import jax
    import jax.numpy as jnp
    from jax import monitoring, profiler
    facts: dict = {}
    facts["monitoring_names"] = sorted(n for n in dir(monitoring) if not n.startswith("_"))
    facts["monitoring_signatures"] = {n: monitoring_cases.signature(getattr(monitoring, n))
                                      for n in facts["monitoring_names"]
                                      if inspect.isfunction(getattr(monitoring, n))}
    facts["profiler_names"] = sorted(n for n in dir(profiler) if not n.startswith("_"))
    facts["profiler_signatures"] = {n: monitoring_cases.signature(getattr(profiler, n))
                                    for n in facts["profiler_names"]
                                    if inspect.isfunction(getattr(profiler, n))}

    # listener bookkeeping
    got, listener = monitoring_cases.register_twice_then_unregister(monitoring)
    facts["registered_twice_then_unregistered"] = got
    try:
        monitoring.unregister_event_listener(listener)
        facts["unregister_unknown"] = None
    except Exception as e:
        facts["unregister_unknown"] = type(e).__name__
    scalars = []
    monitoring.register_scalar_listener(lambda e, v, **kw: scalars.append([e, v, kw]))
    monitoring.register_event_duration_secs_listener(lambda e, d, **kw: scalars.append(e))
    monitoring.clear_event_listeners()
    monitoring.record_scalar("/test/scalar", 2.5, unit="s")
    monitoring.record_event_duration_secs("/test/duration", 1.0)
    # JAX 0.10.2 leaves scalar listeners registered (its clear misses a `global`)
    facts["after_clear"] = [c for c in scalars if c[0].startswith("/test/")]

    # profiler errors and states
    tmp = tempfile.mkdtemp()
    facts["annotation_enabled_outside"] = profiler.TraceAnnotation.is_enabled()
    x = jnp.ones((100, 100), jnp.float32)

    @profiler.annotate_function
    def annotated(v):
        return v + 1

    facts["annotate_function_name"] = annotated.__name__
    with profiler.trace(tmp):
        facts["annotation_enabled_inside"] = profiler.TraceAnnotation.is_enabled()
        try:
            profiler.start_trace(tmp)
        except Exception as e:
            facts["start_twice"] = [type(e).__name__, str(e)]
        for step in range(2):
            with profiler.StepTraceAnnotation("train", step_num=step):
                with profiler.TraceAnnotation("inner", foo="bar", n=3) as t:
                    facts["annotation_enter_returns_self"] = t is not None and \
                        isinstance(t, profiler.TraceAnnotation)
                    annotated(x).block_until_ready()
    try:
        profiler.stop_trace()
    except Exception as e:
        facts["stop_without_start"] = [type(e).__name__, str(e)]
    files = []
    for root, _, names in os.walk(tmp):
        files += [os.path.relpath(os.path.join(root, n), tmp) for n in names]
    facts["trace_files"] = sorted(
        f.replace(os.uname().nodename, "<host>").split("/")[0:2] + [
            f.replace(os.uname().nodename, "<host>").split("/")[3]] for f in files)
    trace_json = next(os.path.join(tmp, f) for f in files if f.endswith(".trace.json.gz"))
    with gzip.open(trace_json) as fh:
        data = json.load(fh)
    facts["trace_json_keys"] = sorted(data)
    facts["trace_json_display_time_unit"] = data["displayTimeUnit"]
    facts["trace_json_process_name"] = next(
        e["args"]["name"] for e in data["traceEvents"] if e.get("name") == "process_name")
    named = {}
    for e in data["traceEvents"]:
        if e.get("ph") == "X" and e["name"] in ("inner", "train"):
            named.setdefault(e["name"], []).append(sorted(e.get("args", {}).items()))
    facts["trace_json_annotations"] = named
    # annotate_function's spans are named by the function's __qualname__
    facts["trace_json_annotate_function_spans"] = sorted({
        e["name"] for e in data["traceEvents"]
        if e.get("ph") == "X" and e["name"].endswith("annotated") and e["name"][0] != "$"})
    pb = next(os.path.join(tmp, f) for f in files if f.endswith(".xplane.pb"))
    pd = profiler.ProfileData.from_file(pb)
    plane = pd.find_plane_with_name("/host:CPU")
    facts["profile_data_missing_plane"] = pd.find_plane_with_name("/no/such/plane")
    facts["profile_data_annotation_stats"] = {
        ev.name: [list(s) for s in ev.stats] for line in plane.lines for ev in line.events
        if ev.name in ("inner", "train")}
    facts["profile_data_event_fields_consistent"] = all(
        abs(ev.end_ns - ev.start_ns - ev.duration_ns) < 1e-3
        for line in plane.lines for ev in line.events)
    facts["profile_data_empty_xspace_planes"] = len(
        list(profiler.ProfileData.from_serialized_xspace(b"").planes))
    try:
        profiler.ProfileEvent()
    except TypeError as e:
        facts["profile_event_ctor"] = "TypeError"
    opts = profiler.ProfileOptions()
    facts["profile_options_defaults"] = {
        n: getattr(opts, n) for n in ("host_tracer_level", "python_tracer_level", "duration_ms",
                                      "start_timestamp_ns", "enable_hlo_proto",
                                      "include_dataset_ops", "raise_error_on_start_failure",
                                      "repository_path", "session_id",
                                      "advanced_configuration")}
    try:
        opts.host_tracer_level = "high"
    except TypeError:
        facts["profile_options_bad_type"] = "TypeError"
    try:
        profiler.stop_server()
    except Exception as e:
        facts["stop_server_without_start"] = [type(e).__name__, str(e)]

    # device memory profile (x, 100x100 float32, is alive)
    facts["memory_profile_gzip"] = profiler.device_memory_profile()[:2] == b"\x1f\x8b"
    facts["memory_profile"] = _pprof_summary(gzip.decompress(profiler.device_memory_profile()))
    try:
        profiler.device_memory_profile("nosuchbackend")
    except Exception as e:
        facts["memory_profile_bad_backend"] = type(e).__name__
    del x
    return facts


def _fields(b: bytes) -> list:
    out, i = [], 0
    while i < len(b):
        key, i = _varint(b, i)
        if key & 7 == 0:
            v, i = _varint(b, i)
        elif key & 7 == 2:
            n, i = _varint(b, i)
            v, i = b[i:i + n], i + n
        else:
            raise ValueError(f"wire type {key & 7}")
        out.append((key >> 3, v))
    return out


def _varint(b: bytes, i: int):
    result = shift = 0
    while True:
        c = b[i]
        i += 1
        result |= (c & 0x7F) << shift
        shift += 7
        if not c & 0x80:
            return result, i


def _pprof_summary(raw: bytes) -> dict:
    """The parts of a pprof profile the tests compare: sample types, the label keys and
    buffer-sample values (a packed varint list)."""
    top = _fields(raw)
    strings = [v.decode() for f, v in top if f == 6]
    sample_types = [[strings[dict(_fields(v))[1]], strings[dict(_fields(v))[2]]]
                    for f, v in top if f == 1]
    buffers = []
    for f, v in top:
        if f != 2:
            continue
        sample = _fields(v)
        labels = {strings[dict(_fields(l))[1]]: strings[dict(_fields(l))[2]]
                  for g, l in sample if g == 3}
        values = []
        for g, packed in sample:
            if g == 2:
                j = 0
                while j < len(packed):
                    n, j = _varint(packed, j)
                    values.append(n)
        has_location = any(g == 1 for g, _ in sample)
        if labels.get("kind") == "buffer":
            buffers.append({"labels": labels, "values": values, "has_location": has_location})
    return {"string_table_first": strings[0], "sample_types": sample_types,
            "buffers": sorted(buffers, key=lambda b: b["values"])}


def main():
    with tempfile.TemporaryDirectory() as cache:
        scenarios = {
            "cache_disabled": _in_subprocess("disabled", cache),
            "cache_miss": _in_subprocess("cache", cache),
            "cache_hit": _in_subprocess("cache", cache),
        }
    import jax
    golden = {"jax_version": jax.__version__, "scenarios": scenarios,
              "no_counterpart": NO_COUNTERPART, **api_facts()}
    path = os.path.join(HERE, "monitoring.json")
    with open(path, "w") as f:
        json.dump(golden, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--scenario"]:
        print(json.dumps(scenario(sys.argv[2], sys.argv[3])))
    else:
        main()
