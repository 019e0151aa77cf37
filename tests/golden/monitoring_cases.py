"""The monitoring scenario tests/golden/gen_monitoring.py records with JAX and
tests/test_monitoring.py runs with corejax, written once for both: every listener kind
registered, then one jitted function's first and second call."""


def first_and_cached_call(jax, jnp, monitoring, np) -> dict:
    """The listener calls of a jitted function's first and second call (its argument is a NumPy
    array, so nothing compiles before it)."""
    calls: list = []
    monitoring.register_event_listener(
        lambda e, *a, **kw: calls.append(["event", e, len(a), kw]))
    monitoring.register_event_duration_secs_listener(
        lambda e, *a, **kw: calls.append(["duration", e, len(a), kw, type(a[0]).__name__,
                                          a[0] >= 0]))
    monitoring.register_event_time_span_listener(
        lambda e, *a, **kw: calls.append(["time_span", e, len(a), kw, a[0] <= a[1], a[0]]))
    monitoring.register_scalar_listener(
        lambda e, *a, **kw: calls.append(["scalar", e, len(a), kw, type(a[0]).__name__, a[0]]))

    def f(x):
        return jnp.sin(x) * 2 + 1

    jf = jax.jit(f)
    x = np.ones(3, np.float32)
    jf(x).block_until_ready()
    first = list(calls)
    calls.clear()
    jf(x).block_until_ready()
    second = list(calls)
    # a scalar's value is the start time of the span of the same event
    starts = {c[1]: c[5] for c in first if c[0] == "scalar"}
    spans = {c[1]: c[5] for c in first if c[0] == "time_span"}
    for row in first:
        if row[0] in ("scalar", "time_span"):
            row.pop()    # the clock reading itself is not golden
    return {"first_call": first, "cached_call": second,
            "scalar_is_span_start": all(starts[k] == spans.get(k) for k in starts)}


def signature(obj) -> list:
    """[name, kind, repr(default)] of each parameter of `obj`, as the golden file records it."""
    import inspect
    return [[p.name, p.kind.name, None if p.default is p.empty else repr(p.default)]
            for p in inspect.signature(obj).parameters.values()]


def register_twice_then_unregister(monitoring):
    """One listener registered twice, then unregistered one registration at a time between
    events: the events it heard, and the listener (registered no more)."""
    got = []

    def listener(event, **kw):
        got.append([event, kw])
    monitoring.register_event_listener(listener)
    monitoring.register_event_listener(listener)
    monitoring.record_event("/test/a", k="v", n=3)
    monitoring.unregister_event_listener(listener)
    monitoring.record_event("/test/b")
    monitoring.unregister_event_listener(listener)
    monitoring.record_event("/test/c")
    return got, listener
