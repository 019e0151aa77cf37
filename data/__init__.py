"""Data for training: MNIST from IDX files or tensorflow-datasets, a prefetching batch iterator,
and pytree checkpoints.

    from data import mnist, batches, Preprocess, checkpoint
    images, labels = mnist.load("train", data_dir="path/to/mnist")
    for x, y in batches(images, labels, 128, key=key, epoch=0): ...
    checkpoint.save("ckpt.npz", {"params": params, "step": 7})
"""
from data import checkpoint, mnist
from data.batching import BatchIterator, Preprocess, batches, epoch_permutation, num_batches
from data.errors import CheckpointError, DataFormatError, DataNotFoundError

__all__ = ["mnist", "checkpoint", "batches", "Preprocess", "BatchIterator", "num_batches",
           "epoch_permutation", "DataFormatError", "DataNotFoundError", "CheckpointError"]
