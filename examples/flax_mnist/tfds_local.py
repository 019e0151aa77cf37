"""A stand-in for the part of tensorflow_datasets the example uses: builder('mnist') reading
the IDX files through data.mnist (folder: $COREJAX_DATA_DIR), as_dataset(split, batch_size=-1)
giving the whole split as {'image': uint8 (N, 28, 28, 1), 'label': int64 (N,)}."""
import numpy as np

from data import mnist


class _MnistBuilder:
    def download_and_prepare(self):
        mnist.load("test")  # fails early, naming the folder, when the files are missing

    def as_dataset(self, split, batch_size=-1):
        if batch_size != -1:
            raise NotImplementedError("as_dataset: only batch_size=-1 (the whole split) is "
                                      "provided by this stand-in.")
        images, labels = mnist.load(split)
        return {"image": images, "label": labels.astype(np.int64)}


def builder(name):
    if name != "mnist":
        raise ValueError(f"tfds_local provides only 'mnist', not {name!r}")
    return _MnistBuilder()


def as_numpy(dataset):
    return dataset
