"""pmap axes that span processes: after corejax.distributed.initialize(), a pmap over this
process's devices is one part of a pmap over every process's (JAX's multi-process pmap).

Each process maps the same number of devices, n; the axis has n * process_count members,
process p's devices being members p*n ... p*n + n-1 (`axis_index` gives that global index).
A collective over the axis meets first among this process's devices (threads, as in a
one-process pmap), then one of them runs it between processes on the host buffers: psum,
pmax and pmin reduce locally and allreduce in place; every other collective (all_gather,
psum_scatter, all_to_all, ppermute, pmean's psum aside) gathers all members' operands from
all processes and evaluates the collective's own batching rule over them, as the one-process
rendezvous does, each device keeping its own result. Every process runs the collectives of
the program in the same order; corejax/_mpi.py checks that before the data moves.
"""
from __future__ import annotations


import numpy as np

from corejax import _mpi, parallel

__all__ = ["spanning", "ProcessRendezvous"]

_REDUCTIONS = {np.add: "sum", np.maximum: "max", np.minimum: "min"}


def spanning(explicit_devices) -> tuple[int, int] | None:
    """(process_count, process_index) when a pmap's axis spans processes: distributed is
    initialized with several processes and the pmap did not name its devices."""
    eng = _mpi.engine()
    if eng is None or eng.size == 1 or explicit_devices is not None:
        return None
    return eng.size, eng.rank


class ProcessRendezvous(parallel._Rendezvous):
    """The meeting point of one pmap call's local devices, extended over processes: the
    interface of parallel._Rendezvous with global member indices."""

    def __init__(self, local: int, offset: int, total: int):
        super().__init__(local)
        self.local, self.offset, self.total = local, offset, total

    def _meet(self, index: int, x, leader_work):
        return self.meet(index - self.offset, x, leader_work)

    def all_reduce(self, index: int, x, ufunc):
        def work(ops):
            out = np.array(ops[0], dtype=np.result_type(x), copy=True)
            for op in ops[1:]:
                ufunc(out, op, out=out)
            return _mpi.engine().allreduce(out, _REDUCTIONS[ufunc], "pmap collective")
        return np.array(self._meet(index, x, work))

    def exchange(self, index: int, x, combine):
        def work(ops):
            mine = np.stack(ops)
            table = _mpi.engine().allgather(mine, "pmap collective")
            return combine(table.reshape((self.total,) + mine.shape[1:]))
        return np.array(self._meet(index, x, work)[index])
