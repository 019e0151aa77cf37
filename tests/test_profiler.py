"""corejax.profiler against what JAX 0.10.2 does (tests/golden/monitoring.json, written by
tests/golden/gen_monitoring.py): API, errors, the trace directory layout and the Chrome
trace-event JSON, ProfileData read-back, and the pprof device memory profile."""
import gc
import gzip
import importlib.util
import json
import os
import socket
import threading

import pytest

import corejax
import corejax.numpy as jnp
from corejax import profiler

HERE = os.path.dirname(__file__)
GOLDEN = json.load(open(os.path.join(HERE, "golden", "monitoring.json")))
# the generator's pprof reader (it imports JAX only inside its scenario functions)
_spec = importlib.util.spec_from_file_location(
    "gen_monitoring", os.path.join(HERE, "golden", "gen_monitoring.py"))
gen_monitoring = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gen_monitoring)


def _quiet_options(**levels):
    opts = profiler.ProfileOptions()
    opts.python_tracer_level = 0
    for k, v in levels.items():
        setattr(opts, k, v)
    return opts


def _trace_files(log_dir) -> list:
    out = []
    for root, _, names in os.walk(log_dir):
        out += [os.path.relpath(os.path.join(root, n), log_dir) for n in names]
    return sorted(out)


def _load(log_dir, file_name=None) -> dict:
    """The trace JSON of the one run under log_dir: <host>.trace.json.gz, or `file_name`."""
    path, = [f for f in _trace_files(log_dir)
             if os.path.basename(f) == (file_name or f"{socket.gethostname()}.trace.json.gz")]
    with gzip.open(os.path.join(log_dir, path)) as f:
        return json.load(f)


def _spans(data) -> list:
    return [e for e in data["traceEvents"] if e.get("ph") == "X"]


@pytest.fixture(autouse=True)
def _no_trace_left():
    yield
    if profiler.TraceAnnotation.is_enabled():
        profiler.stop_trace()


def test_public_names_and_signatures_match_jax():
    assert sorted(profiler.__all__) == GOLDEN["profiler_names"]
    for name, sig in GOLDEN["profiler_signatures"].items():
        assert gen_monitoring.monitoring_cases.signature(getattr(profiler, name)) == sig, name


def test_profile_options_defaults_and_types_match_jax():
    opts = profiler.ProfileOptions()
    got = {n: getattr(opts, n) for n in GOLDEN["profile_options_defaults"]}
    assert got == GOLDEN["profile_options_defaults"]
    with pytest.raises(TypeError):
        opts.host_tracer_level = "high"
    opts.duration_ms = 5
    assert opts.duration_ms == 5 and profiler.ProfileOptions().duration_ms == 0


def test_start_and_stop_errors_match_jax(tmp_path):
    exc, message = GOLDEN["stop_without_start"]
    with pytest.raises(RuntimeError) as info:
        profiler.stop_trace()
    assert type(info.value).__name__ == exc and str(info.value) == message
    profiler.start_trace(tmp_path, profiler_options=_quiet_options())
    exc, message = GOLDEN["start_twice"]
    with pytest.raises(RuntimeError) as info:
        profiler.start_trace(tmp_path)
    assert type(info.value).__name__ == exc and str(info.value) == message
    profiler.stop_trace()
    assert not profiler.TraceAnnotation.is_enabled()


def test_server_functions_fail_honestly():
    exc, message = GOLDEN["stop_server_without_start"]
    with pytest.raises(ValueError) as info:
        profiler.stop_server()
    assert type(info.value).__name__ == exc and str(info.value) == message
    with pytest.raises(NotImplementedError, match="no profiler server"):
        profiler.start_server(9999)
    with pytest.raises(RuntimeError, match="no profiler server"):
        profiler.register_subprocess(12345, 9999)


def test_trace_layout_and_annotations_match_jax(tmp_path):
    assert profiler.TraceAnnotation.is_enabled() == GOLDEN["annotation_enabled_outside"]

    @profiler.annotate_function
    def annotated(v):
        return v + 1

    assert annotated.__name__ == GOLDEN["annotate_function_name"]
    x = jnp.ones((4, 4))
    with profiler.trace(tmp_path, profiler_options=_quiet_options()):
        assert profiler.TraceAnnotation.is_enabled() == GOLDEN["annotation_enabled_inside"]
        for step in range(2):
            with profiler.StepTraceAnnotation("train", step_num=step):
                with profiler.TraceAnnotation("inner", foo="bar", n=3) as t:
                    assert isinstance(t, profiler.TraceAnnotation) == \
                        GOLDEN["annotation_enter_returns_self"]
                    annotated(x).block_until_ready()
    files = _trace_files(tmp_path)
    host = socket.gethostname()
    layout = sorted(f.replace(host, "<host>").split("/")[0:2] +
                    [f.replace(host, "<host>").split("/")[3]] for f in files)
    # JAX writes the same JSON trace next to an XPlane protobuf corejax cannot produce
    assert layout == [f for f in GOLDEN["trace_files"] if not f[-1].endswith(".xplane.pb")]
    data = _load(tmp_path)
    assert sorted(data) == GOLDEN["trace_json_keys"]
    assert data["displayTimeUnit"] == GOLDEN["trace_json_display_time_unit"]
    assert next(e["args"]["name"] for e in data["traceEvents"]
                if e.get("name") == "process_name") == GOLDEN["trace_json_process_name"]
    named = {}
    for e in _spans(data):
        if e["name"] in ("inner", "train"):
            # JAX writes metadata values as strings; corejax keeps their JSON type
            named.setdefault(e["name"], []).append(
                sorted([k, str(v)] for k, v in e.get("args", {}).items()))
    assert named == GOLDEN["trace_json_annotations"]
    qualnames = {e["name"] for e in _spans(data) if e["name"].endswith("annotated")}
    assert len(qualnames) == 1 and len(GOLDEN["trace_json_annotate_function_spans"]) == 1
    assert qualnames.pop().endswith("<locals>.annotated") and \
        GOLDEN["trace_json_annotate_function_spans"][0].endswith("<locals>.annotated")
    for e in _spans(data):
        assert isinstance(e["ts"], float) and e["ts"] >= 0 and e["dur"] >= 0


def test_profile_data_reads_the_trace_back_as_jax_reads_its_own(tmp_path):
    with profiler.trace(tmp_path, profiler_options=_quiet_options()):
        for step in range(2):
            with profiler.StepTraceAnnotation("train", step_num=step):
                with profiler.TraceAnnotation("inner", foo="bar", n=3):
                    pass
    path, = [f for f in _trace_files(tmp_path) if f.endswith(".trace.json.gz")]
    pd = profiler.ProfileData.from_file(os.path.join(tmp_path, path))
    assert pd.find_plane_with_name("/no/such/plane") is GOLDEN["profile_data_missing_plane"]
    plane = pd.find_plane_with_name("/host:CPU")
    events = [ev for line in plane.lines for ev in line.events]
    stats = {ev.name: [list(s) for s in ev.stats] for ev in events}
    assert stats == GOLDEN["profile_data_annotation_stats"]
    assert all(abs(ev.end_ns - ev.start_ns - ev.duration_ns) < 1e-3 for ev in events) == \
        GOLDEN["profile_data_event_fields_consistent"]
    assert [line.name for line in plane.lines] == ["python"]
    assert len(list(profiler.ProfileData.from_serialized_xspace(b"").planes)) == \
        GOLDEN["profile_data_empty_xspace_planes"]
    with pytest.raises(NotImplementedError, match="XPlane"):
        profiler.ProfileData.from_serialized_xspace(b"\x0a\x00")
    with pytest.raises(NotImplementedError, match="XPlane"):
        profiler.ProfileData.from_file(os.path.join(tmp_path, "host.xplane.pb"))
    with pytest.raises(getattr(__import__("builtins"), GOLDEN["profile_event_ctor"])):
        profiler.ProfileEvent()


def test_corejax_work_is_traced(tmp_path):
    def work(x):
        return jnp.exp(x) * 3

    jf = corejax.jit(work)
    x = jnp.ones((8,))
    with profiler.trace(tmp_path, profiler_options=_quiet_options()):
        jf(x).block_until_ready()
        jf(x).block_until_ready()
        jnp.cos(x)
    by_cat = {}
    for e in _spans(_load(tmp_path)):
        by_cat.setdefault(e["cat"], []).append(e)
    assert [e["name"] for e in by_cat["corejax"]] == ["trace work", "compile jit(work)"]
    assert by_cat["corejax"][0]["args"] == {"event": "/jax/core/compile/jaxpr_trace_duration",
                                            "fun_name": "work"}
    assert [e["name"] for e in by_cat["execute"]] == ["jit(work)", "jit(work)"]
    assert "cos" in [e["name"] for e in by_cat["primitive"]]
    # spans nest: the compile ends before the first execution starts
    compile_ = by_cat["corejax"][1]
    assert compile_["ts"] + compile_["dur"] <= by_cat["execute"][0]["ts"] + 1e-3


def test_tracer_levels(tmp_path):
    x = jnp.ones((3,))
    with profiler.trace(tmp_path / "user", profiler_options=_quiet_options(host_tracer_level=1)):
        with profiler.TraceAnnotation("mine"):
            jnp.sin(x)
    assert {e["cat"] for e in _spans(_load(tmp_path / "user"))} == {"annotation"}
    with profiler.trace(tmp_path / "none", profiler_options=_quiet_options(host_tracer_level=0)):
        assert not profiler.TraceAnnotation.is_enabled()
        with profiler.TraceAnnotation("mine"):
            jnp.sin(x)
    assert _spans(_load(tmp_path / "none")) == []

    def python_function():
        return sum(range(3))

    with profiler.trace(tmp_path / "python"):      # default options trace Python calls
        python_function()
    names = {e["name"] for e in _spans(_load(tmp_path / "python"))}
    assert any(n.startswith("$test_profiler.py:") and n.endswith(" python_function")
               for n in names)
    assert "$builtins sum" in names
    import sys
    assert sys.getprofile() is None


def test_perfetto_trace_file_has_no_metadata(tmp_path):
    with profiler.trace(tmp_path, create_perfetto_trace=True,
                        profiler_options=_quiet_options()):
        with profiler.TraceAnnotation("x"):
            pass
    names = [os.path.basename(f) for f in _trace_files(tmp_path)]
    assert "perfetto_trace.json.gz" in names
    data = _load(tmp_path, "perfetto_trace.json.gz")
    assert "metadata" not in data and "x" in [e["name"] for e in _spans(data)]


def test_an_exception_inside_trace_still_stops_and_writes(tmp_path):
    with pytest.raises(ZeroDivisionError):
        with profiler.trace(tmp_path, profiler_options=_quiet_options()):
            with profiler.TraceAnnotation("failing"):
                1 / 0
    assert not profiler.TraceAnnotation.is_enabled()
    assert "failing" in [e["name"] for e in _spans(_load(tmp_path))]


def test_set_metadata_and_annotations_outside_a_trace(tmp_path):
    with profiler.TraceAnnotation("ignored", a=1):
        pass                                   # nothing is recording: no error, no event
    with profiler.trace(tmp_path, profiler_options=_quiet_options()):
        with profiler.TraceAnnotation("tagged", a=1) as t:
            t.set_metadata(b="two")
    tagged, = [e for e in _spans(_load(tmp_path)) if e["name"] == "tagged"]
    assert tagged["args"] == {"a": 1, "b": "two"}


def _memory_summary(raw: bytes) -> dict:
    assert raw[:2] == b"\x1f\x8b"
    return gen_monitoring._pprof_summary(gzip.decompress(raw))


def test_device_memory_profile_is_pprof_of_live_arrays_as_jax(tmp_path):
    x = jnp.ones((100, 100), jnp.float32)
    golden = GOLDEN["memory_profile"]
    # The two snapshots below must see the same arrays: no collection of earlier tests'
    # garbage may free one in between (a collection first would cost seconds in a worker
    # that has run thousands of tests; pausing the collector is enough).
    gc.disable()
    try:
        got = _memory_summary(profiler.device_memory_profile())
        live = sum(a.nbytes for a in corejax.live_arrays())
    finally:
        gc.enable()
    assert GOLDEN["memory_profile_gzip"]
    assert got["string_table_first"] == golden["string_table_first"]
    assert got["sample_types"] == golden["sample_types"]
    # the golden's one live buffer, a 100x100 float32 on cpu:0, is among corejax's
    assert golden["buffers"][0] in got["buffers"]
    total = sum(b["values"][1] for b in got["buffers"])
    assert total == live
    path = tmp_path / "memory.prof"
    profiler.save_device_memory_profile(path)
    assert golden["buffers"][0] in _memory_summary(path.read_bytes())["buffers"]
    del x


def test_device_memory_profile_of_an_unknown_backend_raises():
    with pytest.raises(getattr(__import__("builtins"), GOLDEN["memory_profile_bad_backend"])):
        profiler.device_memory_profile("nosuchbackend")


def test_threads_started_during_a_trace_get_their_own_line(tmp_path):
    def worker():
        with profiler.TraceAnnotation("in_worker"):
            sum(range(3))

    with profiler.trace(tmp_path):
        t = threading.Thread(target=worker, name="worker-1")
        t.start()
        t.join()
    path, = [f for f in _trace_files(tmp_path) if f.endswith(".trace.json.gz")]
    pd = profiler.ProfileData.from_file(os.path.join(tmp_path, path))
    lines = {line.name: [ev.name for ev in line.events]
             for line in pd.find_plane_with_name("/host:CPU").lines}
    assert "in_worker" in lines["worker-1"] and "$builtins sum" in lines["worker-1"]
    assert threading.getprofile() is None
