"""The programs tests/test_distributed.py launches with `mpiexec -n N python THIS MODE`.

Each checks itself against one-process results computed in the same process and prints
"OK <mode>" from process 0 when everything matched (a mismatch raises: exit status 1).
"""
import os
import signal
import sys
import time

import numpy as np

import corejax as jax
from corejax import lax

jax.distributed.initialize()
from corejax.experimental import multihost_utils as mh  # noqa: E402

P, RANK = jax.process_count(), jax.process_index()
N_LOCAL = jax.local_device_count()
N = P * N_LOCAL


def collectives():
    """pmap collectives over an axis spanning the processes == vmap(axis_name=) over the
    whole axis in one process (the one-process semantics pmap is tested against)."""
    assert len(jax.devices()) == N and jax.local_devices() == [
        d for d in jax.devices() if d.process_index == RANK]
    x = (np.arange(N * 6, dtype=np.float32).reshape(N, 2, 3) - 5) / 3

    def f(v):
        i = lax.axis_index("i")
        return dict(psum=lax.psum(v, "i"), pmean=lax.pmean(v, "i"), pmax=lax.pmax(v, "i"),
                    pmin=lax.pmin(v * i, "i"), index=i,
                    gather=lax.all_gather(v, "i"), tiled=lax.all_gather(v, "i", tiled=True),
                    permute=lax.ppermute(v, "i", [(k, (k + 1) % N) for k in range(N)]),
                    shift=lax.ppermute(v, "i", [(k, k + 1) for k in range(N - 1)]),
                    scatter=lax.psum_scatter(jax.numpy.ones((N, 3)) * v[0, 0], "i"),
                    to_all=lax.all_to_all(jax.numpy.tile(v[0], (N, 1)) + i, "i", 0, 0),
                    count=lax.psum(1, "i"))

    mine = slice(RANK * N_LOCAL, (RANK + 1) * N_LOCAL)
    got = jax.pmap(f, "i")(x[mine])
    want = jax.vmap(f, axis_name="i")(x)
    for k in want:
        full = mh.process_allgather(np.asarray(got[k]), tiled=True)
        if k == "count":
            np.testing.assert_array_equal(np.asarray(got[k]), N)
            continue
        np.testing.assert_allclose(full, np.asarray(want[k]), rtol=1e-6, err_msg=k)
        assert full.dtype == np.asarray(want[k]).dtype, k

    grad = jax.pmap(jax.grad(lambda v: (lax.psum(v, "i") ** 2).sum()), "i")(x[mine])
    want_grad = jax.vmap(jax.grad(lambda v: (lax.psum(v, "i") ** 2).sum()), axis_name="i")(x)
    np.testing.assert_allclose(mh.process_allgather(np.asarray(grad), tiled=True),
                               np.asarray(want_grad), rtol=1e-6)

    # multihost_utils
    v = np.full((2,), RANK, np.int32)
    np.testing.assert_array_equal(mh.process_allgather(v), np.repeat(np.arange(P), 2).reshape(P, 2))
    np.testing.assert_array_equal(mh.process_allgather(v, tiled=True), np.repeat(np.arange(P), 2))
    np.testing.assert_array_equal(mh.process_allgather(np.float32(RANK), tiled=True),
                                  np.arange(P, dtype=np.float32))
    out = mh.broadcast_one_to_all({"a": np.arange(3.0) + RANK, "b": np.array(RANK == 0)})
    np.testing.assert_array_equal(out["a"], np.arange(3.0))
    assert out["b"].dtype == np.bool_ and bool(out["b"])
    last = mh.broadcast_one_to_all(np.float32(RANK), is_source=RANK == P - 1)
    assert float(last) == P - 1
    mh.sync_global_devices("checkpoint written")
    mh.assert_equal(np.arange(4))
    try:
        mh.assert_equal(np.arange(4) + RANK, "values differ")
    except AssertionError as e:
        assert "values differ" in str(e)
    else:
        raise AssertionError("assert_equal accepted different values")


def steps():
    """Data-parallel steps over the processes, both ways train.py could take them: the
    explicit gradient allreduce (train_distributed) and a pmap with pmean across processes;
    every process ends with bit-identical parameters, equal (up to summation order) to
    one process's steps on the whole batches."""
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import nn
    import optim
    import train_distributed
    from data.batching import part_of

    model = nn.Sequential([nn.Dense(16), nn.relu, nn.Dense(3)])
    rng = np.random.default_rng(0)
    xs = rng.normal(size=(5, 36, 8)).astype(np.float32)
    ys = rng.integers(0, 3, size=(5, 36))
    params0 = model.init(jax.random.PRNGKey(0), xs[0])
    tx = optim.adam(1e-2)

    def loss_fn(params, x, y):
        return optim.softmax_cross_entropy_with_integer_labels(model.apply(params, x), y).mean()

    @jax.jit
    def one_step(params, state, x, y):
        grads = jax.grad(loss_fn)(params, x, y)
        updates, state = tx.update(grads, state, params)
        return optim.apply_updates(params, updates), state

    # a last batch of one row: process 0's part of it is empty
    batches = list(zip(xs, ys)) + [(xs[0, :1], ys[0, :1])]
    ref, ref_state = params0, tx.init(params0)
    refs = []
    for x, y in batches:
        ref, ref_state = one_step(ref, ref_state, x, y)
        refs.append(ref)

    def fresh():      # the steps consume (donate) the parameters they are given
        params = jax.tree_util.tree_map(lambda p: jax.numpy.asarray(np.array(p)), params0)
        return params, tx.init(params)

    procs = train_distributed.Processes()
    step = procs.data_parallel(jax, loss_fn, tx, optim, mean_loss=True)
    params, state = fresh()
    for x, y in batches:
        lo, hi = part_of(0, x.shape[0], RANK, P)
        params, state, _ = step(params, state, x[lo:hi], y[lo:hi])
        assert procs.last_rows == x.shape[0]
    procs.check_same(params, 0)
    for a, b in zip(jax.tree_util.tree_leaves(params), jax.tree_util.tree_leaves(refs[-1])):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=2e-6)

    def pmap_step(params, state, x, y):
        grads = lax.pmean(jax.grad(loss_fn)(params, x, y), "batch")
        updates, state = tx.update(grads, state, params)
        return optim.apply_updates(params, updates), state

    mapped = jax.pmap(pmap_step, "batch", in_axes=(None, None, 0, 0), out_axes=(None, None))
    params, state = fresh()
    for x, y in zip(xs, ys):
        share = x.shape[0] // P
        mine = slice(RANK * share, (RANK + 1) * share)
        params, state = mapped(params, state, x[mine][None], y[mine][None])
    procs.check_same(params, 0)
    for a, b in zip(jax.tree_util.tree_leaves(params), jax.tree_util.tree_leaves(refs[-2])):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=2e-6)


def kill():
    """Process 1 is killed (SIGKILL) in the middle of a run of collectives."""
    f = jax.pmap(lambda v: lax.psum(v, "i"), "i")
    for step in range(400):
        if RANK == 1 and step == 5:
            with open(os.environ["PID_FILE"], "w") as fh:
                fh.write(str(os.getpid()))
            os.kill(os.getpid(), signal.SIGKILL)
        f(np.ones((N_LOCAL, 100), np.float32))
        time.sleep(0.05)
    raise AssertionError("the run went on without process 1")


def exit_early():
    """Process 1 stops with an error while the others wait for it in a collective."""
    f = jax.pmap(lambda v: lax.psum(v, "i"), "i")
    f(np.ones((N_LOCAL, 3), np.float32))
    if RANK == 1:
        raise SystemExit("process 1 gives up")
    f(np.ones((N_LOCAL, 3), np.float32))
    raise AssertionError("the collective completed without process 1")


def mismatch():
    """Processes reach collectives of different shapes: each reports it, none hangs."""
    f = jax.pmap(lambda v: lax.psum(v, "i"), "i")
    f(np.ones((N_LOCAL, 3 + RANK), np.float32))
    raise AssertionError("the mismatched collective completed")


def thread_guard():
    """thread_guard(True): a collective from another thread raises RuntimeError on every
    process (before communicating), one from the guarding thread runs; off, both run."""
    import threading
    x = np.ones((N_LOCAL, 3), np.float32)
    psum = jax.pmap(lambda v: lax.psum(v, "i"), "i")
    outcomes = []

    def other_thread():
        try:
            psum(x).block_until_ready()
            outcomes.append("ran")
        except RuntimeError as e:
            outcomes.append("raised" if "thread_guard" in str(e) else f"other: {e}")

    with jax.thread_guard(True):
        np.testing.assert_allclose(np.asarray(psum(x)), N)
        t = threading.Thread(target=other_thread)
        t.start()
        t.join()
    t = threading.Thread(target=other_thread)
    t.start()
    t.join()
    assert outcomes == ["raised", "ran"], outcomes
    if RANK == 0:
        print("OK thread_guard")


if __name__ == "__main__":
    mode = sys.argv[1]
    globals()[mode]()
    if RANK == 0:
        print(f"OK {mode} on {P} processes", flush=True)
