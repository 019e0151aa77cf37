"""Mini-batches of an in-memory data set, prepared on a background thread.

`batches(images, labels, batch_size, key=key, epoch=e)` yields `(x, y)` NumPy float32 pairs.
The order of epoch `e` is drawn from `corejax.random.fold_in(key, e)` (see epoch_permutation),
so it depends only on the key and the epoch number: a resumed run sees the same batches.
"""
from __future__ import annotations

import queue
import threading
from typing import NamedTuple

import numpy as np

__all__ = ["Preprocess", "batches", "num_batches", "epoch_permutation", "preprocess_batch",
           "BatchIterator", "part_of"]


class Preprocess(NamedTuple):
    """How raw uint8 images and int labels become model inputs.

    flatten: (N, 28, 28, 1) -> (N, 784). scale: pixels / 255 in [0, 1] (else raw 0..255 as
    float32). one_hot: labels as float32 one-hot rows of that many classes (0 or None: keep the
    int32 labels).
    """
    flatten: bool = True
    scale: bool = True
    one_hot: int | None = 10


def preprocess_batch(images: np.ndarray, labels: np.ndarray, pre: Preprocess = Preprocess()):
    """Applies `pre` to one batch; float32 throughout (never a float64 intermediate)."""
    x = images.reshape(images.shape[0], int(np.prod(images.shape[1:]))) if pre.flatten \
        else images     # (an explicit width: a part of a batch may have no rows)
    x = x.astype(np.float32)
    if pre.scale:
        x /= np.float32(255.0)
    if pre.one_hot:
        y = np.zeros((labels.shape[0], pre.one_hot), dtype=np.float32)
        y[np.arange(labels.shape[0]), labels] = 1.0
    else:
        y = np.asarray(labels, dtype=np.int32)
    return x, y


def num_batches(n: int, batch_size: int, drop_remainder: bool) -> int:
    return n // batch_size if drop_remainder else -(-n // batch_size)


def epoch_permutation(key, epoch: int, n: int) -> np.ndarray:
    """The example order of `epoch`: `random.permutation(random.fold_in(key, epoch), n)`, the
    same order JAX gives for the same key. It depends only on the key and the epoch, so a
    resumed run replays the same order."""
    from corejax import random
    return np.asarray(random.permutation(random.fold_in(key, epoch), n))


_END = object()


class _Raised(NamedTuple):
    error: BaseException


class _Source(NamedTuple):
    images: np.ndarray
    labels: np.ndarray
    order: np.ndarray | None
    batch_size: int
    n: int
    pre: Preprocess | None
    part: tuple | None = None

    def make(self, i: int):
        lo, hi = i * self.batch_size, min((i + 1) * self.batch_size, self.n)
        if self.part is not None:
            lo, hi = part_of(lo, hi, *self.part)
        if self.order is None:
            imgs, labs = self.images[lo:hi], self.labels[lo:hi]
        else:
            idx = self.order[lo:hi]
            imgs, labs = self.images[idx], self.labels[idx]
        if self.pre is None:
            return imgs, labs
        return preprocess_batch(imgs, labs, self.pre)


def _put(q: queue.Queue, stop: threading.Event, item) -> bool:
    while not stop.is_set():
        try:
            q.put(item, timeout=0.05)
            return True
        except queue.Full:
            continue
    return False


def _produce(source: _Source, first: int, total: int, q: queue.Queue, stop: threading.Event):
    # Holds no reference to the BatchIterator, so an abandoned iterator is collected and its
    # __del__ stops this thread.
    try:
        for i in range(first, total):
            if not _put(q, stop, source.make(i)):
                return
        _put(q, stop, _END)
    except BaseException as e:  # noqa: BLE001 - handed to the consumer thread
        _put(q, stop, _Raised(e))


class BatchIterator:
    """Iterator over the batches of one epoch; with `prefetch > 0` a daemon thread prepares up
    to `prefetch` batches ahead into a bounded queue. (Batches that are views of the arrays,
    in the stored order with no preprocessing, cost nothing to prepare: no thread then.)

    An exception in the thread is re-raised by `next()`. `close()` (or leaving a `with` block,
    or garbage collection) stops and joins the thread.
    """

    def __init__(self, images, labels, order, batch_size, drop_remainder, pre, prefetch,
                 start_batch=0, part=None):
        if images.shape[0] != labels.shape[0]:
            raise ValueError(f"images and labels differ in length: {images.shape[0]} vs "
                             f"{labels.shape[0]}.")
        if batch_size <= 0:
            raise ValueError(f"batch_size must be positive, got {batch_size}.")
        n = images.shape[0] if order is None else len(order)
        self._source = _Source(images, labels, order, batch_size, n, pre, part)
        self._total = num_batches(n, batch_size, drop_remainder)
        self._next_index = start_batch
        self._stop = threading.Event()
        self._queue = None
        self._thread = None
        if prefetch > 0 and not (pre is None and order is None):
            self._queue = queue.Queue(maxsize=prefetch)
            self._thread = threading.Thread(
                target=_produce, name="batch-prefetch", daemon=True,
                args=(self._source, start_batch, self._total, self._queue, self._stop))
            self._thread.start()

    def __len__(self):
        return self._total

    def __iter__(self):
        return self

    def __next__(self):
        if self._queue is None:
            if self._next_index >= self._total:
                raise StopIteration
            self._next_index += 1
            return self._source.make(self._next_index - 1)
        if self._thread is None:
            raise StopIteration
        item = self._queue.get()
        if item is _END:
            self.close()
            raise StopIteration
        if isinstance(item, _Raised):
            self.close()
            raise item.error
        return item

    def close(self):
        """Stops the prefetch thread (if any) and waits for it."""
        thread, self._thread = getattr(self, "_thread", None), None
        if thread is not None:
            self._stop.set()
            thread.join()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()


def batches(images: np.ndarray, labels: np.ndarray, batch_size: int, *, key=None,
            epoch: int = 0, shuffle: bool = True, drop_remainder: bool = True,
            preprocess: Preprocess | None = Preprocess(), prefetch: int = 2,
            start_batch: int = 0, part: tuple[int, int] | None = None) -> BatchIterator:
    """The batches of one epoch as an iterator of `(x, y)` float32 NumPy pairs.

    shuffle: order by `epoch_permutation(key, epoch, n)` (needs `key`, a corejax PRNG key);
    otherwise the stored order. drop_remainder: leave out a last, smaller batch.
    preprocess: applied to each batch (`preprocess_batch`); None: the arrays are model inputs
    already (a whole data set preprocessed once, in bulk), and a batch is their rows as they
    are: a view of them in the stored order, a copy when shuffled.
    start_batch: skip the first batches (to resume inside an epoch).
    part: (k, count): only part k of `count` near-equal contiguous parts of every batch, in
    order (a data-parallel process's slice of each global batch; see part_of).
    """
    order = None
    if shuffle:
        if key is None:
            raise ValueError("shuffle=True needs a PRNG key: batches(..., key=random.PRNGKey(0)).")
        order = epoch_permutation(key, epoch, images.shape[0])
    if part is not None and not (len(part) == 2 and 0 <= part[0] < part[1]):
        raise ValueError(f"part must be (k, count) with 0 <= k < count, got {part!r}.")
    return BatchIterator(images, labels, order, batch_size, drop_remainder, preprocess,
                         prefetch, start_batch, part)


def part_of(lo: int, hi: int, k: int, count: int) -> tuple[int, int]:
    """Rows [lo, hi) cut into `count` contiguous parts whose sizes differ by at most one:
    the bounds of part k."""
    n = hi - lo
    return lo + n * k // count, lo + n * (k + 1) // count
