"""Helper threads running parts of kernels claimed in compiled code (compiler/eager_threads:
native_source, run_native): every part runs exactly once, a call returns only after its parts
are done (a slow part included), concurrent callers (native and Python jobs) stay correct, and
the kernels' split forms (eager and jit) take this path."""
import threading

import numpy as np
import pytest
from numba import types

import corejax.numpy as jnp
import corejax
from corejax.compiler import diskcache, eager_kernels, eager_threads

# each element of o0 gets a0's element added once per run; an element's work grows with a0
# (a slow part is one whose elements hold large values)
COUNTING = '''import numpy as np
from numba import njit


@njit(error_model="numpy", nogil=True, cache=True)
def kernel(p0, p1, n0, a0, o0):
    for i in range(p0, p1):
        acc = 0.0
        for _ in range(np.int64(a0[i])):
            acc += 1.0
        o0[i] += acc
'''
F64 = diskcache.numba_type(np.float64)
PARAMS = ["lo", "hi", ("int", "n0"), ("array", "a0", np.float64, False),
          ("array", "o0", np.float64, False)]


@pytest.fixture(scope="module")
def counting():
    native = eager_kernels.native_kernel(COUNTING, PARAMS, (types.int64, F64, F64))
    assert native is not None
    return native


def _bounds(rng, n):
    k = int(rng.integers(2, 9))
    cuts = np.sort(rng.choice(np.arange(1, n), k - 1, replace=False))
    return np.concatenate([[0], cuts, [n]]).astype(np.int64)


def test_every_part_runs_once(counting):
    rng = np.random.default_rng(0)
    n = 1000
    a = rng.integers(0, 50, n).astype(np.float64)
    o = np.zeros(n)
    runs = 0
    for _ in range(300):
        if eager_kernels.run_native(counting, _bounds(rng, n), (n, a, o), seconds=1.0):
            runs += 1
    assert runs == 300      # one caller, long jobs: the helpers are woken, never held
    np.testing.assert_array_equal(o, runs * a)


def test_a_call_waits_for_a_slow_part(counting):
    """A part that takes far longer than the caller's spin (WAIT_SECONDS) is still done when
    run_native returns, whichever thread ran it."""
    n = 64
    a = np.ones(n)
    a[40:] = 2e6            # some 2e6 additions per element: milliseconds per part
    o = np.zeros(n)
    for _ in range(3):
        assert eager_kernels.run_native(counting, np.array([0, 8, 16, 40, 64], np.int64),
                                        (n, a, o), seconds=1.0)
    np.testing.assert_array_equal(o, 3 * a)


def test_concurrent_callers_native_and_python():
    """Threads posting native jobs and Python jobs (eager_threads.run_parts) at once, many
    times: a native call that finds the helpers held runs nothing and says so (its caller
    runs the kernel itself); every element is counted exactly once per call either way."""
    native = eager_kernels.native_kernel(COUNTING, PARAMS, (types.int64, F64, F64))
    whole, _ = diskcache.load_kernel(COUNTING, (types.int64, types.int64, types.int64, F64, F64))
    errors = []

    def native_caller(seed):
        rng = np.random.default_rng(seed)
        n = 500
        a = rng.integers(0, 20, n).astype(np.float64)
        o = np.zeros(n)
        for _ in range(400):
            seconds = float(rng.choice([0.0, 1.0]))   # short jobs find the helpers asleep
            if not eager_kernels.run_native(native, _bounds(rng, n), (n, a, o), seconds):
                whole(0, n, n, a, o)
        if not np.array_equal(o, 400 * a):
            errors.append(("native", seed))

    def python_caller(seed):
        rng = np.random.default_rng(seed)
        for _ in range(300):
            k = int(rng.integers(2, 9))
            runs = [0] * k

            def task(lo, hi):
                runs[lo] += 1
            eager_threads.run_parts(task, list(range(k + 1)), 2)
            if runs != [1] * k:
                errors.append(("python", runs))

    threads = [threading.Thread(target=native_caller, args=(1,)),
               threading.Thread(target=native_caller, args=(2,)),
               threading.Thread(target=python_caller, args=(3,))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]


def test_eager_split_loops_claim_parts_in_compiled_code(monkeypatch):
    """An eager kernel's split call runs its native form (parts sliced from the flat operands,
    a broadcast scalar read whole), with the unsplit bits."""
    helpers = max(1, eager_kernels._helpers())
    monkeypatch.setattr(eager_kernels, "_helpers", lambda: helpers)
    monkeypatch.setattr(eager_kernels, "split_cores", lambda key, n: 4 if n >= 4096 else 1)
    monkeypatch.setattr(eager_threads, "WAKE_SECONDS", 0.0)
    used = []
    real = eager_kernels.run_native
    monkeypatch.setattr(eager_kernels, "run_native",
                        lambda *a: used.append(real(*a)) or used[-1])
    rng = np.random.default_rng(5)
    x = (rng.standard_normal(70_001) * 4).astype(np.float32)
    split = np.asarray(jnp.tanh(x))
    assert used and all(used)       # run natively, not left to this thread
    monkeypatch.setattr(eager_kernels, "split_cores", lambda key, n: 1)
    whole = np.asarray(jnp.tanh(x))
    assert np.array_equal(split.view(np.int32), whole.view(np.int32))
    # a FAST loop with a scalar operand read whole by every part
    monkeypatch.setattr(eager_kernels, "split_cores", lambda key, n: 4 if n >= 4096 else 1)
    used.clear()
    got = np.asarray(jnp.maximum(x, np.float32(0.5)))
    assert used and all(used)
    assert np.array_equal(got, np.maximum(x, np.float32(0.5)))


def test_more_parts_than_a_control_block_holds_are_left_to_the_caller(counting):
    n = 1000
    a, o = np.ones(n), np.zeros(n)
    bounds = np.linspace(0, n, eager_threads.MAX_PARTS + 2).astype(np.int64)
    assert not eager_kernels.run_native(counting, bounds, (n, a, o), seconds=1.0)
    assert not o.any()
    ok = np.linspace(0, n, eager_threads.MAX_PARTS + 1).astype(np.int64)
    assert eager_kernels.run_native(counting, ok, (n, a, o), seconds=1.0)
    np.testing.assert_array_equal(o, a)


def test_short_jobs_do_not_wake_sleeping_helpers(counting):
    """A job predicted shorter than WAKE_SECONDS is left to its caller while the helpers
    sleep (run_native says so and runs nothing); a long one wakes them."""
    import time
    pool = eager_threads._get_pool(max(1, eager_kernels._helpers()))
    deadline = time.monotonic() + 5
    while pool.sleeping < pool.n and time.monotonic() < deadline:
        time.sleep(0.01)
    assert pool.sleeping == pool.n
    n = 64
    a, o = np.ones(n), np.zeros(n)
    bounds = np.array([0, 16, 32, 48, 64], np.int64)
    assert not eager_kernels.run_native(counting, bounds, (n, a, o), seconds=1e-6)
    assert not o.any() and pool.sleeping == pool.n
    assert eager_kernels.run_native(counting, bounds, (n, a, o), seconds=1.0)
    np.testing.assert_array_equal(o, a)


def test_native_source_refuses_more_operands_than_a_control_block_holds():
    many = ["lo", "hi"] + [("array", f"a{j}", np.float32, False)
                           for j in range(eager_threads.CTRL_WORDS)]
    assert eager_threads.native_source(many) is None


def test_jit_groups_run_their_parts_in_compiled_code(monkeypatch):
    """A jitted group big enough for threads runs its parts through native_kernel's form when
    its call site chooses threads, with the one-thread kernel's bits."""
    from corejax._machine import usable_cores
    from corejax.compiler import codegen
    if usable_cores() < 2:
        pytest.skip("one usable core: no threaded variant")
    used = []
    real = eager_kernels.run_native
    monkeypatch.setattr(eager_kernels, "run_native",
                        lambda *a: used.append(1) or real(*a))

    @corejax.jit
    def f(x):
        return 1.05 * jnp.where(x > 0, x, 1.67 * jnp.exp(x) - 1.67)

    x = np.random.default_rng(2).standard_normal(codegen.ADAPTIVE_MIN + 4099).astype(np.float32)
    results = []
    for _ in range(12):     # the site measures both ways, then runs the faster
        results.append(np.asarray(f(x)))
    assert used
    for r in results[1:]:
        assert np.array_equal(r, results[0])


def test_claims_follow_the_posted_job_and_a_late_helper_leaves_the_last_part():
    """claim_part on a control block: parts in order while the job is the posted one; none
    for another job id (a helper that read an older job's runner); a helper that woke to
    the job (LATE) does not start on its last part."""
    ctrl = np.zeros(eager_threads.CTRL_WORDS, np.int64)
    addr = ctrl.ctypes.data
    eager_threads.post_job(addr, 7, 0, np.array([0, 10, 20, 30], np.int64))
    assert eager_threads.claim_part(addr, 6) == -1                  # not the posted job
    assert eager_threads.claim_part(addr, 7) == 0
    assert eager_threads.claim_part(addr, 7 | eager_threads.LATE) == 1
    assert eager_threads.claim_part(addr, 7 | eager_threads.LATE) == -1   # only 2 left
    assert eager_threads.claim_part(addr, 7) == 2
    assert eager_threads.claim_part(addr, 7) == -1
    assert ctrl[eager_threads.SEQ] == 7 and ctrl[eager_threads.DONE] == 0
    for _ in range(3):
        eager_threads.finish_part(addr)
    assert eager_threads.wait_job(addr, 3, 10)


def test_a_woken_helper_on_the_posters_cpu_moves_off_it():
    """_Pool._leave_poster_cpu, run by a helper thread just woken: where it finds itself on
    the poster's CPU, its affinity (its own, not the process's) excludes that CPU."""
    import os
    import threading
    import types as pytypes
    if eager_threads._current_cpu() < 0 or len(eager_threads._allowed_cpus()) < 2:
        pytest.skip("needs sched_getcpu and two usable CPUs")
    seen = {}

    def helper():
        cpu = eager_threads._current_cpu()
        eager_threads._Pool._leave_poster_cpu(pytypes.SimpleNamespace(poster_cpu=cpu))
        seen["cpu"], seen["allowed"] = cpu, os.sched_getaffinity(0)

    t = threading.Thread(target=helper)
    t.start()
    t.join()
    assert seen["cpu"] not in seen["allowed"] and seen["allowed"]
    assert os.sched_getaffinity(0) == set(eager_threads._allowed_cpus())   # this thread's


def test_helpers_spin_long_only_while_other_processes_leave_the_cores_idle(monkeypatch):
    """_OthersIdle: the machine's busy time less this process's own, over PERIOD, in cores.
    On 2 cores with this process's 2 threads: others at 0.1 core leave them idle (helpers
    spin QUIET_SPIN_SECONDS); a busy process (a core) does not, whatever this process's own
    spinning adds to the machine's busy time."""
    idle = eager_threads._OthersIdle()
    idle._ok = True
    samples = iter([(0, 0, 0),            # (machine busy, own, all jiffies)
                    (110, 100, 200),      # others busy 10 of 200 jiffies: 0.1 core of 2
                    (300, 200, 400),      # others busy 90 of 200: 0.9 core
                    (500, 400, 600)])     # again 0.1 core... own spins do not count
    monkeypatch.setattr(eager_threads._OthersIdle, "_sample", staticmethod(lambda: next(samples)))
    monkeypatch.setattr(eager_threads._OthersIdle, "PERIOD", 0.0)
    monkeypatch.setattr(eager_threads.os, "cpu_count", lambda: 2)
    assert idle.now(2) is False           # (no period measured yet)
    assert idle.now(2) is True
    assert idle.now(2) is False
    assert idle.now(2) is True
    monkeypatch.setattr(eager_threads._OthersIdle, "PERIOD", 3600.0)
    assert idle.now(2) is True            # (within the period: the last answer)
    broken = eager_threads._OthersIdle()
    broken._ok = False
    assert broken.now(2) is False


def test_rest_sends_spinning_helpers_to_sleep_at_once(monkeypatch):
    """eager_threads.rest (before a product on OpenBLAS's threads): helpers spinning for more
    work, here for as long as a minute, go to sleep now; the next job wakes them."""
    helpers = eager_kernels._helpers()
    if helpers < 1:
        pytest.skip("one core: no helper threads")
    import time
    pool = eager_threads._get_pool(helpers)
    long = eager_threads._rounds(60.0)
    monkeypatch.setattr(pool, "rounds", long)
    monkeypatch.setattr(pool, "quiet_rounds", long)
    ran = np.zeros(8)

    def job(lo, hi):
        ran[lo:hi] += 1

    def settle(asleep, seconds):
        """Whether all helpers are asleep (or all awake) within `seconds`."""
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            if (pool.sleeping == pool.n) == asleep:
                return True
            time.sleep(1e-3)
        return False

    # a Python job: the helpers leave their spin for it and start a minute's spin after
    eager_threads.run_parts(job, [0, 2, 4, 6, 8], helpers)
    assert settle(False, 2.0)
    time.sleep(0.05)
    assert pool.sleeping < pool.n               # (still spinning: no rest yet)
    eager_threads.rest()
    assert settle(True, 2.0)
    eager_threads.run_parts(job, [0, 2, 4, 6, 8], helpers)     # a post wakes them again
    np.testing.assert_array_equal(ran, 2.0)
    monkeypatch.undo()
    eager_threads.rest()                        # (back to their own spins)
