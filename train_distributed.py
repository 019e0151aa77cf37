"""train.py across processes: `mpiexec -n N python train.py --config ...` trains
data-parallel over N processes (on one machine or several; see the README's "Training on
several machines").

- Each process reads its part of every global batch (data.batching.part_of: contiguous,
  sizes differing by at most one row), so the global batch, the epoch order and resuming
  mid-epoch are those of a single process, whatever the process count.
- Every step each process computes the gradient of its part; one MPI allreduce sums the
  gradients weighted by rows (and the loss, and the row count) in one float buffer; every
  process then applies the same update to the same parameters. For a mean loss the result
  is the whole batch's mean gradient; for a summed loss, the sum: a single process's step up
  to summation order.
- Process 0 alone prints, writes metrics and checkpoints; it restores a checkpoint and
  sends the state to the others, so the output folder need not be shared. After every
  epoch the processes compare a checksum of their parameters (ProcessesDisagree if they
  differ). Ctrl-C / SIGTERM: the processes agree after each step whether one was signalled,
  so all stop after the same step and process 0 saves it.
"""
from __future__ import annotations

import os
import sys
import zlib

import numpy as np

__all__ = ["setup", "Processes", "ProcessesDisagree"]


class ProcessesDisagree(Exception):
    """The processes of a data-parallel run no longer hold the same parameters."""


def setup():
    """Processes when this process was started by mpiexec with several processes (MPI
    joined, stdout of all but process 0 silenced), else None."""
    from corejax._mpi import launched_processes
    count = launched_processes()
    if count is None or count < 2:
        return None
    import corejax
    if not corejax.distributed.is_initialized():
        corejax.distributed.initialize()
    return Processes()


class Processes:
    """This process's place in a data-parallel run, and the run's collectives."""

    def __init__(self):
        import corejax
        from corejax import _mpi
        self.engine = _mpi.engine()
        self.rank, self.count = corejax.process_index(), corejax.process_count()
        self.is_main = self.rank == 0
        self.part = (self.rank, self.count)
        self.last_rows = 0
        if not self.is_main:
            sys.stdout = open(os.devnull, "w")

    def broadcast(self, tree):
        """Process 0's pytree on every process (Python scalars stay Python scalars)."""
        import corejax
        from corejax.experimental import multihost_utils
        leaves, treedef = corejax.tree_util.tree_flatten(tree)
        sent = multihost_utils.broadcast_one_to_all([np.asarray(x) for x in leaves])
        out = [type(x)(v.item()) if isinstance(x, (bool, int, float)) else
               corejax.numpy.asarray(v) for x, v in zip(leaves, sent)]
        return corejax.tree_util.tree_unflatten(treedef, out)

    def data_parallel(self, jax, loss_fn, tx, optim, mean_loss: bool):
        """train_step(params, opt_state, x, y) on this process's part of a batch, with the
        gradients combined over processes (see the module's docstring); the global row count
        of the step is left in `last_rows`."""
        import functools
        grad_fn = jax.jit(jax.value_and_grad(loss_fn))

        @functools.partial(jax.jit, donate_argnums=(0, 1))
        def update(params, opt_state, grads):
            updates, opt_state = tx.update(grads, opt_state, params)
            return optim.apply_updates(params, updates), opt_state

        def train_step(params, opt_state, x, y):
            rows = x.shape[0]
            leaves, treedef = jax.tree_util.tree_flatten(params)
            if rows:
                loss, grads = grad_fn(params, x, y)
                parts = [np.asarray(g).ravel() for g in jax.tree_util.tree_leaves(grads)]
            else:     # no row of this batch here: nothing to add
                loss, parts = 0.0, [np.zeros(np.size(p), np.asarray(p).dtype) for p in leaves]
            weight = np.float32(rows if mean_loss else 1)
            buf = np.concatenate(parts + [np.array([float(loss), rows], parts[0].dtype)])
            buf[:-1] *= weight
            self.engine.allreduce(buf, "sum", "gradients")
            total = buf[-1]
            self.last_rows = int(total)
            if mean_loss:
                buf[:-1] /= total
            out, at = [], 0
            for p in leaves:
                n = np.size(p)
                out.append(buf[at:at + n].reshape(np.shape(p)))
                at += n
            params, opt_state = update(params, opt_state, jax.tree_util.tree_unflatten(
                treedef, out))
            return params, opt_state, buf[-2]
        return train_step

    def check_same(self, params, epoch: int) -> None:
        """ProcessesDisagree unless every process holds bit-identical parameters."""
        import corejax
        crc = 0
        for leaf in corejax.tree_util.tree_leaves(params):
            crc = zlib.crc32(np.ascontiguousarray(np.asarray(leaf)).tobytes(), crc)
        table = self.engine.allgather(np.array([crc], np.uint32), "parameter checksum")
        sums = table[:, 0]
        if not (sums == sums[0]).all():
            raise ProcessesDisagree(
                f"after epoch {epoch} the processes hold different parameters (checksums "
                + ", ".join(f"process {r}: {int(c):08x}" for r, c in enumerate(sums)) +
                "): every process must run the same code on the same data files; stopping.")

    def agree_signal(self, pending):
        """The signal every process stops on after this step: the highest pending one of
        any process, or None."""
        flag = np.array([0 if pending is None else int(pending)], np.int32)
        agreed = int(self.engine.allreduce(flag, "max", "stop request")[0])
        return agreed or None
