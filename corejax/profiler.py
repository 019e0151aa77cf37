"""Host-side profiling with `jax.profiler`'s names.

While a trace is active (`trace(log_dir)` or `start_trace` / `stop_trace`), corejax records:
  - TraceAnnotation / StepTraceAnnotation / annotate_function spans (any host_tracer_level >= 1)
  - its own work (host_tracer_level >= 2, the default): tracing a jitted function to a Jaxpr
    and compiling it (the monitoring time spans of corejax.monitoring), each execution of a
    compiled program (`jit(<name>)`), and each eagerly dispatched primitive
  - every Python call and return, as `$file:line function` and `$module builtin` spans
    (python_tracer_level >= 1, the default): sys.setprofile in the thread that starts the
    trace and in threads started during it (Python 3.11 cannot reach threads already running)

`stop_trace` writes them to `<log_dir>/plugins/profile/<YYYY_MM_DD_HH_MM_SS>/<host>.trace.json.gz`,
the directory layout of JAX and TensorBoard's profile plugin. JAX writes an XPlane protobuf
(`<host>.xplane.pb`) there too; corejax writes only the Chrome trace-event JSON (the file JAX
writes next to it), which ui.perfetto.dev and chrome://tracing open, and which
`ProfileData.from_file` reads back. Annotation metadata keeps its Python type in the JSON
(JAX writes every value as a string).

Not available: a profiler server for TensorBoard to connect to (`start_server` raises),
subprocess registration (needs that server), device-side (kernel) timelines.
`device_memory_profile` is a gzipped pprof protobuf of the live Arrays (see its docstring).
"""
from __future__ import annotations

import functools
import gzip
import json
import os
import socket
import sys
import threading
import time
from contextlib import contextmanager
from typing import Any, Callable

from corejax import monitoring

__all__ = ["ProfileData", "ProfileEvent", "ProfileOptions", "ProfilePlane",
           "StepTraceAnnotation", "TraceAnnotation", "annotate_function",
           "device_memory_profile", "register_subprocess", "save_device_memory_profile",
           "start_server", "start_trace", "stop_server", "stop_trace", "trace"]


# --- options ---------------------------------------------------------------------------------

def _typed(name: str, kind: type, default):
    def get(self):
        return self._values.get(name, default)

    def set(self, value):
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise TypeError(f"ProfileOptions.{name} must be a {kind.__name__}, got "
                            f"{type(value).__name__}")
        self._values[name] = value
    return property(get, set)


class ProfileOptions:
    """What a trace collects. host_tracer_level: 0 nothing on the host, 1 user annotations,
    2 (default) also corejax's jit tracing, compilation, executions and eager primitives.
    python_tracer_level: 1 (default) records every Python call, 0 none. duration_ms: when
    positive, events starting later than that after start_trace are dropped.
    start_timestamp_ns: when positive, events starting before that time (ns since the epoch)
    are dropped. The other fields are kept for compatibility and have no effect here."""

    host_tracer_level = _typed("host_tracer_level", int, 2)
    python_tracer_level = _typed("python_tracer_level", int, 1)
    duration_ms = _typed("duration_ms", int, 0)
    start_timestamp_ns = _typed("start_timestamp_ns", int, 0)
    enable_hlo_proto = _typed("enable_hlo_proto", bool, True)
    include_dataset_ops = _typed("include_dataset_ops", bool, True)
    raise_error_on_start_failure = _typed("raise_error_on_start_failure", bool, False)
    repository_path = _typed("repository_path", str, "")
    session_id = _typed("session_id", str, "")
    advanced_configuration = _typed("advanced_configuration", dict, {})

    def __init__(self):
        self._values: dict = {}


# --- recording -------------------------------------------------------------------------------

# [the active _Recorder] while a trace runs, else empty: the one test on hot paths
_session: list = []


class _Recorder:
    def __init__(self, options: ProfileOptions):
        self.options = options
        self.start_ns = time.perf_counter_ns()
        self.wall_start_ns = time.time_ns()
        # events: (name, category, start_ns, end_ns, thread id, args or None); start and end
        # in perf_counter_ns
        self.events: list = []
        self.thread_names: dict = {}
        self._python_stacks = threading.local()
        self._saved_eval_hook = None
        self.active = True

    def add(self, name, cat, start_ns, end_ns, args=None):
        tid = threading.get_native_id()
        if tid not in self.thread_names:
            t = threading.current_thread()
            self.thread_names[tid] = "python" if t is threading.main_thread() else t.name
        self.events.append((name, cat, start_ns, end_ns, tid, args))

    # corejax's own work
    def on_time_span(self, event, start_time, end_time, **kwargs):
        # monitoring spans are in time.time() seconds: placed on this trace's clock
        offset = self.start_ns - self.wall_start_ns
        fun = kwargs.get("fun_name")
        phase = {monitoring.JAXPR_TRACE_DURATION: "trace",
                 monitoring.BACKEND_COMPILE_DURATION: "compile"}.get(event)
        name = f"{phase} {fun}" if phase and fun else event
        self.add(name, "corejax", int(start_time * 1e9) + offset, int(end_time * 1e9) + offset,
                 {"event": event, **kwargs})

    def execute(self, name: str, exe, args):
        start = time.perf_counter_ns()
        try:
            return exe(*args)
        finally:
            self.add(name, "execute", start, time.perf_counter_ns())

    def _eval_hook(self, apply_primitive):
        def profiled(primitive, args, params):
            start = time.perf_counter_ns()
            try:
                return apply_primitive(primitive, args, params)
            finally:
                name = primitive.name
                if "name" in params and isinstance(params["name"], str):
                    name = f"{name}({params['name']})"
                self.add(name, "primitive", start, time.perf_counter_ns())
        return profiled

    # Python calls
    def _profile(self, frame, event, arg):
        if not self.active:    # the trace stopped (in another thread): leave this thread
            sys.setprofile(None)
            return
        stack = getattr(self._python_stacks, "stack", None)
        if stack is None:
            stack = self._python_stacks.stack = []
        if event == "call":
            code = frame.f_code
            stack.append((f"${os.path.basename(code.co_filename)}:{code.co_firstlineno} "
                          f"{code.co_name}", time.perf_counter_ns()))
        elif event == "c_call":
            module = getattr(arg, "__module__", None) or "<unknown>"
            stack.append((f"${module} {getattr(arg, '__name__', '?')}",
                          time.perf_counter_ns()))
        elif stack and event in ("return", "c_return", "c_exception"):
            name, start = stack.pop()
            self.add(name, "python", start, time.perf_counter_ns())

    def install(self):
        opts = self.options
        if opts.host_tracer_level >= 1:
            _session.append(self)
        if opts.host_tracer_level >= 2:
            monitoring.register_event_time_span_listener(self.on_time_span)
            from corejax import core
            self._saved_eval_hook = core.eval_hooks.apply_primitive
            core.eval_hooks.apply_primitive = self._eval_hook(self._saved_eval_hook)
        if opts.python_tracer_level >= 1:
            threading.setprofile(self._profile)
            sys.setprofile(self._profile)

    def uninstall(self):
        self.active = False
        if self.options.python_tracer_level >= 1:
            sys.setprofile(None)
            threading.setprofile(None)
        if self._saved_eval_hook is not None:
            from corejax import core
            core.eval_hooks.apply_primitive = self._saved_eval_hook
        if self.on_time_span in monitoring._time_span_listeners:
            monitoring.unregister_event_time_span_listener(self.on_time_span)
        _session.clear()

    # the trace file
    def trace_json(self) -> dict:
        opts = self.options
        pid = os.getpid()
        first = self.start_ns
        if opts.start_timestamp_ns > 0:
            first = max(first, opts.start_timestamp_ns - self.wall_start_ns + self.start_ns)
        last = self.start_ns + opts.duration_ms * 1_000_000 if opts.duration_ms > 0 else None
        out = [{"ph": "M", "pid": pid, "name": "process_name", "args": {"name": "/host:CPU"}},
               {"ph": "M", "pid": pid, "name": "process_sort_index",
                "args": {"sort_index": pid}}]
        for i, (tid, name) in enumerate(sorted(self.thread_names.items(),
                                               key=lambda kv: kv[1] != "python")):
            out.append({"ph": "M", "pid": pid, "tid": tid, "name": "thread_name",
                        "args": {"name": name}})
            out.append({"ph": "M", "pid": pid, "tid": tid, "name": "thread_sort_index",
                        "args": {"sort_index": i + 1}})
        for name, cat, start, end, tid, args in sorted(self.events, key=lambda e: e[2]):
            if start < first or (last is not None and start > last):
                continue
            ev = {"ph": "X", "pid": pid, "tid": tid, "ts": (start - self.start_ns) / 1e3,
                  "dur": max(end - start, 0) / 1e3, "name": name, "cat": cat}
            if args:
                ev["args"] = args
            out.append(ev)
        from corejax.version import __version__
        return {"displayTimeUnit": "ns",
                "metadata": {"highres-ticks": True, "corejax_version": __version__,
                             "process_id": pid,
                             "start_time_ns": self.wall_start_ns},
                "traceEvents": out}


# --- annotations -----------------------------------------------------------------------------

class TraceAnnotation:
    """Context manager: the enclosed code is one named span of the active trace, with the
    keyword arguments as its metadata. Costs one list test when no trace is active."""

    __slots__ = ("_name", "_args", "_start", "_category")

    def __init__(self, name: str, /, **kwargs):
        if not isinstance(name, str):
            raise TypeError(f"TraceAnnotation: the name must be a str, got {type(name).__name__}")
        self._name, self._args, self._start = name, kwargs, None
        self._category = "annotation"

    def __enter__(self):
        if _session:
            self._start = time.perf_counter_ns()
        return self

    def __exit__(self, exc_type, exc, tb):
        start, self._start = self._start, None
        if start is not None and _session:
            _session[0].add(self._name, self._category, start, time.perf_counter_ns(),
                            dict(self._args) or None)

    def set_metadata(self, **kwargs) -> None:
        """Adds metadata to this span (recorded when it ends)."""
        self._args = {**self._args, **kwargs}

    @staticmethod
    def is_enabled() -> bool:
        """Whether a trace is recording annotations now."""
        return bool(_session)


class StepTraceAnnotation(TraceAnnotation):
    """A TraceAnnotation marking one step of a loop (pass `step_num=`); its events carry the
    category 'step' in the trace file."""

    __slots__ = ()

    def __init__(self, name: str, **kwargs):
        super().__init__(name, **kwargs)
        self._category = "step"


def annotate_function(func: Callable, name: str | None = None, **decorator_kwargs):
    """`func`, each call of which is a TraceAnnotation named `name` (default: the function's
    qualified name) with metadata `decorator_kwargs`."""
    name = name or getattr(func, "__qualname__", None) or func.__name__

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with TraceAnnotation(name, **decorator_kwargs):
            return func(*args, **kwargs)
    return wrapper


# --- start / stop ----------------------------------------------------------------------------

class _State:
    def __init__(self):
        self.lock = threading.Lock()
        self.recorder: _Recorder | None = None
        self.log_dir: str | None = None
        self.perfetto_trace = False
        self.perfetto_link = False


_state = _State()


def start_trace(log_dir: os.PathLike | str, create_perfetto_link: bool = False,
                create_perfetto_trace: bool = False,
                profiler_options: ProfileOptions | None = None) -> None:
    """Starts recording (see the module docstring); `stop_trace` writes the trace under
    `log_dir`. One trace at a time: a second start raises RuntimeError.
    create_perfetto_trace: also write `perfetto_trace.json.gz` (the trace without its
    metadata, as ui.perfetto.dev wants it). create_perfetto_link: also serve that file on
    127.0.0.1:9001 at stop, print a ui.perfetto.dev link, and block until Perfetto loaded it."""
    with _state.lock:
        if _state.recorder is not None:
            raise RuntimeError("Profile has already been started. Only one profile may be run "
                               "at a time.")
        options = profiler_options if profiler_options is not None else ProfileOptions()
        if not isinstance(options, ProfileOptions):
            raise TypeError("profiler_options must be a corejax.profiler.ProfileOptions, got "
                            f"{type(options).__name__}")
        recorder = _Recorder(options)
        _state.log_dir = os.fspath(log_dir)
        _state.perfetto_trace = create_perfetto_trace or create_perfetto_link
        _state.perfetto_link = create_perfetto_link
        _state.recorder = recorder
        recorder.install()


def _run_dir(log_dir: str) -> str:
    base = os.path.join(os.path.abspath(log_dir), "plugins", "profile",
                        time.strftime("%Y_%m_%d_%H_%M_%S"))
    path, n = base, 1
    while os.path.exists(path):   # two traces within one second
        path, n = f"{base}_{n}", n + 1
    os.makedirs(path)
    return path


def stop_trace() -> None:
    """Stops the active trace and writes it (RuntimeError when none is active)."""
    with _state.lock:
        recorder = _state.recorder
        if recorder is None:
            raise RuntimeError("No profile started")
        recorder.uninstall()
        _state.recorder = None
        trace_dict = recorder.trace_json()
        run = _run_dir(_state.log_dir)
        with gzip.open(os.path.join(run, f"{socket.gethostname()}.trace.json.gz"), "wt") as f:
            json.dump(trace_dict, f)
        perfetto = None
        if _state.perfetto_trace:
            perfetto = os.path.join(run, "perfetto_trace.json.gz")
            with gzip.open(perfetto, "wt") as f:
                json.dump({k: v for k, v in trace_dict.items() if k != "metadata"}, f)
        link = _state.perfetto_link
    if link:
        _serve_for_perfetto(perfetto)


def _serve_for_perfetto(path: str) -> None:
    """Serves `path` to ui.perfetto.dev (which fetches from 127.0.0.1:9001) until it has."""
    import http.server
    import socketserver
    directory, filename = os.path.split(path)

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=directory, **kwargs)

        def end_headers(self):
            self.send_header("Access-Control-Allow-Origin", "*")
            super().end_headers()

        def do_GET(self):
            self.server.last_path = self.path
            super().do_GET()

    socketserver.TCPServer.allow_reuse_address = True
    with socketserver.TCPServer(("127.0.0.1", 9001), Handler) as httpd:
        print(f"Open URL in browser: https://ui.perfetto.dev/#!/?url=http://127.0.0.1:9001/"
              f"{filename}")
        while getattr(httpd, "last_path", None) != "/" + filename:
            httpd.handle_request()


@contextmanager
def trace(log_dir: os.PathLike | str, create_perfetto_link=False, create_perfetto_trace=False,
          profiler_options: ProfileOptions | None = None):
    """Context manager: `start_trace` on entry, `stop_trace` on exit."""
    start_trace(log_dir, create_perfetto_link, create_perfetto_trace, profiler_options)
    try:
        yield
    finally:
        stop_trace()


# --- profiler server -------------------------------------------------------------------------

def start_server(port: int, requires_backend: bool = True):
    """JAX starts a gRPC profiler server that TensorBoard connects to; corejax has none."""
    raise NotImplementedError(
        "corejax has no profiler server for TensorBoard to connect to (JAX's is part of XLA). "
        "Record a trace in-process instead: `with corejax.profiler.trace(log_dir): ...`, then "
        "open <log_dir>/plugins/profile/<run>/<host>.trace.json.gz in ui.perfetto.dev.")


def stop_server():
    """Raises ValueError: no profiler server is ever running (see start_server)."""
    raise ValueError("No active profiler server.")


def register_subprocess(pid: int, port: int) -> Callable[[], None]:
    """JAX forwards profiling requests to a subprocess's profiler server; corejax has no such
    server, so registration fails with RuntimeError (as JAX's does when it cannot connect)."""
    raise RuntimeError(
        f"Cannot register subprocess {pid} (port {port}): corejax has no profiler server, in "
        "this process or another. Start a trace inside the subprocess itself "
        "(corejax.profiler.trace) to profile it.")


# --- reading traces back ---------------------------------------------------------------------

def _no_constructor(cls):
    def __init__(self, *args, **kwargs):
        raise TypeError(f"corejax.profiler.{cls.__name__}: no constructor defined!")
    cls.__init__ = __init__
    return cls


def _make(cls, **fields):
    obj = object.__new__(cls)
    obj.__dict__.update(fields)
    return obj


@_no_constructor
class ProfileEvent:
    """One span: name, start_ns / end_ns / duration_ns (float ns from the trace's start) and
    stats (its metadata, as (key, value) pairs)."""

    def __repr__(self):
        return f"ProfileEvent({self.name!r}, start_ns={self.start_ns}, " \
               f"duration_ns={self.duration_ns})"


@_no_constructor
class ProfileLine:
    """The events of one thread."""

    def __repr__(self):
        return f"ProfileLine({self.name!r}, {len(self.events)} events)"


@_no_constructor
class ProfilePlane:
    """One process's timeline ('/host:CPU') or the trace's metadata ('/host:metadata'):
    name, lines and stats."""

    def __repr__(self):
        return f"ProfilePlane({self.name!r})"


class ProfileData:
    """A recorded trace, read back: `ProfileData.from_file(path)` of a `.trace.json.gz`
    (corejax's, or the one JAX writes next to its `.xplane.pb`). XPlane protobuf
    (`from_serialized_xspace`, `.xplane.pb` files) cannot be read: corejax has no XPlane
    parser, and only an empty serialized XSpace (b'') is accepted."""

    def __init__(self, serialized_xspace: bytes, /):
        if not isinstance(serialized_xspace, (bytes, bytearray)):
            raise TypeError("ProfileData(serialized_xspace): expected bytes, got "
                            f"{type(serialized_xspace).__name__}")
        if serialized_xspace:
            raise NotImplementedError(_NO_XPLANE)
        self._planes: list = []

    @property
    def planes(self):
        return iter(self._planes)

    def find_plane_with_name(self, name: str):
        """The plane named `name`, or None."""
        for p in self._planes:
            if p.name == name:
                return p
        return None

    @staticmethod
    def from_serialized_xspace(serialized_xspace: bytes) -> "ProfileData":
        return ProfileData(serialized_xspace)

    @staticmethod
    def from_text_proto(text: str, /) -> "ProfileData":
        raise NotImplementedError(_NO_XPLANE)

    @staticmethod
    def text_proto_to_serialized_xspace(text: str, /) -> bytes:
        raise NotImplementedError(_NO_XPLANE)

    @staticmethod
    def from_raw_cpp_ptr(capsule) -> "ProfileData":
        raise NotImplementedError("corejax has no C++ profiler session to read an XSpace from")

    @staticmethod
    def from_file(proto_file_path: str) -> "ProfileData":
        """Reads a Chrome trace-event file (`*.trace.json.gz`, or plain `*.json`)."""
        path = os.fspath(proto_file_path)
        if path.endswith(".pb"):
            raise NotImplementedError(_NO_XPLANE + f" ({path}); read the .trace.json.gz "
                                      "written next to it instead.")
        with open(path, "rb") as f:
            raw = f.read()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        return ProfileData._from_trace_json(json.loads(raw))

    @staticmethod
    def _from_trace_json(data: dict) -> "ProfileData":
        out = ProfileData(b"")
        process_names, thread_names = {}, {}
        spans: dict = {}
        for ev in data.get("traceEvents", ()):
            ph, pid, tid = ev.get("ph"), ev.get("pid"), ev.get("tid")
            if ph == "M" and ev.get("name") == "process_name":
                process_names[pid] = ev["args"]["name"]
            elif ph == "M" and ev.get("name") == "thread_name":
                thread_names[(pid, tid)] = ev["args"]["name"]
            elif ph == "X":
                start = float(ev["ts"]) * 1e3
                dur = float(ev.get("dur", 0)) * 1e3
                stats = list((ev.get("args") or {}).items())
                if ev.get("cat") == "step":
                    stats.insert(0, ("_r", 1))
                spans.setdefault(pid, {}).setdefault(tid, []).append(_make(
                    ProfileEvent, name=ev.get("name", ""), start_ns=start, end_ns=start + dur,
                    duration_ns=dur, stats=stats))
        metadata = data.get("metadata") or {}
        meta_stats = [(k, v) for k, v in metadata.items() if k != "highres-ticks"]
        if meta_stats:
            out._planes.append(_make(ProfilePlane, name="/host:metadata", lines=[],
                                     stats=meta_stats))
        for pid in sorted(set(process_names) | set(spans), key=str):
            lines = [_make(ProfileLine, name=thread_names.get((pid, tid), str(tid)),
                           events=events)
                     for tid, events in spans.get(pid, {}).items()]
            out._planes.append(_make(ProfilePlane, name=process_names.get(pid, str(pid)),
                                     lines=lines, stats=[("process_id", pid)]))
        return out


_NO_XPLANE = ("corejax cannot parse XPlane protobuf (XSpace): it writes and reads Chrome "
              "trace-event JSON (<host>.trace.json.gz) only")


# --- device memory profile -------------------------------------------------------------------

def device_memory_profile(backend: str | None = None) -> bytes:
    """A gzipped pprof protocol buffer (profile.proto) of the live Arrays of `backend` (all
    of them when None): one sample per Array, values (allocations: count, space: bytes),
    labels kind='buffer' and device=<its device>. corejax does not record where an Array
    was allocated (JAX keeps a Python stack per buffer), so each sample's one stack frame
    names the buffer's type instead, e.g. `f32[100,100]` in file `<corejax live array>`:
    `pprof -top` then ranks memory by shape and dtype. Compiled programs are not counted."""
    import gzip as _gzip
    from corejax._runtime import live_arrays
    from corejax.array import devices
    devices(backend)   # an unknown backend raises its usual error
    return _gzip.compress(_pprof([(f"{x.dtype.name}{list(x.shape)}".replace(" ", ""),
                                   str(x.device), int(x.nbytes))
                                  for x in live_arrays(backend)]))


def save_device_memory_profile(filename, backend: str | None = None) -> None:
    """Writes `device_memory_profile(backend)` to `filename`."""
    profile = device_memory_profile(backend)
    with open(filename, "wb") as f:
        f.write(profile)


def _varint(n: int) -> bytes:
    out = bytearray()
    n &= (1 << 64) - 1   # negative int64 as its two's complement, as protobuf encodes it
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _field(number: int, value) -> bytes:
    """One protobuf field: an int as a varint, bytes as a length-delimited value."""
    if isinstance(value, int):
        return _varint(number << 3) + _varint(value)
    return _varint(number << 3 | 2) + _varint(len(value)) + bytes(value)


def _packed(number: int, values) -> bytes:
    return _field(number, b"".join(_varint(v) for v in values))


def _pprof(buffers) -> bytes:
    """profile.proto bytes for `buffers`: (type name, device, bytes) each."""
    strings: dict = {"": 0}

    def s(text: str) -> int:
        return strings.setdefault(text, len(strings))

    out = bytearray()
    for kind, unit in (("allocations", "count"), ("space", "bytes")):
        out += _field(1, _field(1, s(kind)) + _field(2, s(unit)))          # sample_type
    function_ids: dict = {}
    filename = s("<corejax live array>")
    for name, device, nbytes in buffers:
        fid = function_ids.get(name)
        if fid is None:
            fid = function_ids[name] = len(function_ids) + 1
            out += _field(5, _field(1, fid) + _field(2, s(name)) + _field(3, s(name)) +
                          _field(4, filename))                                # function
            out += _field(4, _field(1, fid) + _field(4, _field(1, fid)))     # location, line
        labels = _field(3, _field(1, s("kind")) + _field(2, s("buffer"))) + \
            _field(3, _field(1, s("device")) + _field(2, s(device)))
        out += _field(2, _packed(1, [fid]) + _packed(2, [1, nbytes]) + labels)   # sample
    for text in strings:
        out += _field(6, text.encode())                                       # string_table
    return bytes(out)
