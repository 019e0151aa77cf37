"""Data-parallel MNIST MLP over MPI processes on this machine, and what it predicts for more.

Measures, in one run:
1. the epoch time `python train.py --config configs/mlp.yaml` prints, one epoch, for
   1 process x 2 BLAS threads and for `mpiexec -n 2` x 1 thread each (the same global batches
   of 128, so the same arithmetic split two ways), `--repeats` runs each, medians and ratio;
2. the gradient allreduce of one training step (the MLP's parameters plus loss and row count
   in one float32 buffer, as train_distributed.py sends it), between 2 processes: corejax's
   engine call (with its program-order check, what train.py pays) and MPI's bare Allreduce,
   and a one-float allreduce (the per-call latency); medians over many calls;
3. a model of an epoch on 8 and 64 machines at 10 and 100 Gbit/s, from those measured costs:
   per step, compute = the 1-process step time / N (the global batch split N ways; an upper
   bound on the gain, since 128 / 64 = 2 rows per machine leaves BLAS nothing to do), plus a
   ring allreduce 2 (N - 1) latency + 2 (N - 1) / N * bytes / bandwidth, plus the engine's
   measured per-call overhead. The network latencies are assumptions, printed with the table.

    python bench/bench_mpi.py [--repeats 3] [--data-dir DIR]

Needs the [mpi] extra (mpi4py and MPICH's mpiexec). Prints; asserts nothing.
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STEPS_PER_EPOCH = 469            # ceil(60000 / 128)
# per-message latency of one hop, assumed (not measured here: this machine has no network)
NETWORKS = [("10 Gbit/s Ethernet, TCP", 10e9, 30e-6), ("100 Gbit/s, RDMA", 100e9, 3e-6)]


def mpiexec() -> str:
    found = shutil.which("mpiexec", path=os.path.dirname(sys.executable) + os.pathsep +
                         os.environ.get("PATH", ""))
    if found is None:
        sys.exit("mpiexec not found: pip install -e '.[mpi]'")
    return found


def epoch_seconds(processes: int, threads: int, data_dir: str) -> float:
    """The 'Epoch 0 in X sec' train.py prints, for one epoch of configs/mlp.yaml."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads),
               NUMBA_NUM_THREADS=str(threads), PYTHONUNBUFFERED="1")
    with tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, os.path.join(ROOT, "train.py"), "--config",
               os.path.join(ROOT, "configs", "mlp.yaml"), "--set", "train.epochs=1",
               "--output-dir", out, "--overwrite", "--quiet", "--data-dir", data_dir]
        if processes > 1:
            cmd = [mpiexec(), "-n", str(processes)] + cmd
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT)
    found = re.search(r"Epoch 0 in ([0-9.]+) sec", proc.stdout)
    if proc.returncode != 0 or found is None:
        sys.exit(f"{' '.join(cmd)} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    return float(found.group(1))


def gradient_floats() -> int:
    sizes = [784, 512, 512, 10]
    return sum(m * n + n for m, n in zip(sizes[:-1], sizes[1:])) + 2   # + loss, rows


def allreduce_worker(calls: int) -> None:
    """Run under mpiexec -n 2: times the allreduces; rank 0 prints one line of numbers."""
    import corejax
    from corejax import _mpi
    corejax.distributed.initialize()
    eng = _mpi.engine()
    comm, MPI = eng.comm, eng.MPI
    big = np.ones(gradient_floats(), np.float32)
    one = np.ones(1, np.float32)

    def timed(fn):
        for _ in range(10):
            fn()
        out = []
        for _ in range(calls):
            comm.Barrier()
            t = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t)
        return statistics.median(out)

    engine_big = timed(lambda: eng.allreduce(big, "sum", "gradients"))
    bare_big = timed(lambda: comm.Allreduce(MPI.IN_PLACE, big, MPI.SUM))
    engine_one = timed(lambda: eng.allreduce(one, "sum", "one float"))
    bare_one = timed(lambda: comm.Allreduce(MPI.IN_PLACE, one, MPI.SUM))
    if eng.rank == 0:
        print("ALLREDUCE", engine_big, bare_big, engine_one, bare_one, big.nbytes, flush=True)
    corejax.distributed.shutdown()


def allreduce_costs(calls: int) -> dict:
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    cmd = [mpiexec(), "-n", "2", sys.executable, os.path.abspath(__file__),
           "--allreduce-worker", str(calls)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("ALLREDUCE")), None)
    if proc.returncode != 0 or line is None:
        sys.exit(f"{' '.join(cmd)} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    engine_big, bare_big, engine_one, bare_one, nbytes = map(float, line.split()[1:])
    return dict(engine_big=engine_big, bare_big=bare_big, engine_one=engine_one,
                bare_one=bare_one, nbytes=nbytes)


def main():
    if "--allreduce-worker" in sys.argv:
        allreduce_worker(int(sys.argv[sys.argv.index("--allreduce-worker") + 1]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--data-dir", default=os.environ.get("COREJAX_DATA_DIR") or
                        os.path.join(ROOT, "..", "shared", "data", "mnist"))
    args = parser.parse_args()

    runs = {"1 process x 2 threads": [], "2 processes x 1 thread": []}
    for _ in range(args.repeats):       # interleaved, so load changes hit both alike
        runs["1 process x 2 threads"].append(epoch_seconds(1, 2, args.data_dir))
        runs["2 processes x 1 thread"].append(epoch_seconds(2, 1, args.data_dir))
    med = {k: statistics.median(v) for k, v in runs.items()}
    print(f"MNIST MLP (configs/mlp.yaml), one epoch of {STEPS_PER_EPOCH} steps, median of "
          f"{args.repeats}:")
    for k, v in runs.items():
        print(f"  {k:24s} {med[k]:6.2f} s   (runs: {', '.join(f'{x:.2f}' for x in v)})")
    one, two = med["1 process x 2 threads"], med["2 processes x 1 thread"]
    print(f"  2 processes / 1 process: {two / one:.2f}x the time")

    c = allreduce_costs(args.calls)
    step_comm = c["engine_big"]
    print(f"\nGradient allreduce between 2 processes on this machine ({c['nbytes'] / 1e6:.2f} MB "
          f"float32 per step), median of {args.calls} calls:")
    print(f"  corejax engine (order check + Iallreduce): {c['engine_big'] * 1e6:8.1f} us")
    print(f"  bare MPI Allreduce:                          {c['bare_big'] * 1e6:8.1f} us")
    print(f"  one float, engine / bare:                    {c['engine_one'] * 1e6:8.1f} / "
          f"{c['bare_one'] * 1e6:.1f} us")
    print(f"  per step: {step_comm * 1e3:.2f} ms of the 2-process step "
          f"({two / STEPS_PER_EPOCH * 1e3:.2f} ms), {STEPS_PER_EPOCH * step_comm:.2f} s per "
          f"epoch; {c['nbytes'] * STEPS_PER_EPOCH / 1e6:.0f} MB sent per process per epoch")

    compute = one / STEPS_PER_EPOCH                   # the whole step on one process
    overhead = max(c["engine_one"] - c["bare_one"], 0.0) + c["engine_one"]
    print("\nModel of one epoch on N machines (one process each, global batch 128 split N "
          "ways):")
    print(f"  compute per step = {compute * 1e3:.2f} ms / N (measured 1-process step; an "
          "upper bound on the gain: 2 rows per machine at N = 64 leave BLAS idle)")
    print(f"  + ring allreduce 2(N-1) x latency + 2(N-1)/N x {c['nbytes'] / 1e6:.2f} MB / "
          f"bandwidth + the engine's measured per-call overhead {overhead * 1e6:.0f} us")
    print(f"  {'network':28s} {'N':>4s} {'compute':>9s} {'allreduce':>10s} {'epoch':>8s} "
          f"{'speed-up':>9s}")
    for name, bits, latency in NETWORKS:
        for n in (2, 8, 64):
            comp = compute / n
            comm = 2 * (n - 1) * latency + 2 * (n - 1) / n * c["nbytes"] * 8 / bits + overhead
            epoch = STEPS_PER_EPOCH * (comp + comm)
            print(f"  {name:28s} {n:4d} {comp * 1e3:7.2f}ms {comm * 1e3:8.2f}ms "
                  f"{epoch:7.2f}s {one / epoch:8.2f}x")
    print("  (latencies assumed: " + ", ".join(f"{n}: {lat * 1e6:.0f} us" for n, _, lat in
                                                NETWORKS) + ")")


if __name__ == "__main__":
    main()
