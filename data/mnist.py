"""MNIST as NumPy arrays, from a folder of IDX files or from tensorflow-datasets.

`load(split)` returns `(images, labels)`: uint8 images of shape (N, 28, 28, 1) and int32 labels.
Sources, for `source='auto'` in this order:

1. a folder of the canonical IDX files (gzip-compressed or raw): `data_dir`, else the
   environment variable COREJAX_DATA_DIR;
2. a copy of MNIST that tensorflow-datasets has already prepared;
3. a tensorflow-datasets download (needs network access and the extra `pip install '.[tfds]'`).
"""
from __future__ import annotations

import gzip
import os
import zlib

import numpy as np

from data.errors import DataFormatError, DataNotFoundError

__all__ = ["load", "read_idx", "find_idx_files", "NUM_CLASSES", "IMAGE_SHAPE", "SPLITS",
           "ENV_VAR"]

ENV_VAR = "COREJAX_DATA_DIR"
NUM_CLASSES = 10
IMAGE_SHAPE = (28, 28, 1)
SPLITS = ("train", "test")
_IDX_PREFIX = {"train": "train", "test": "t10k"}
_SPLIT_SIZES = {"train": 60000, "test": 10000}
_SOURCES = ("auto", "idx", "tfds")

# IDX type byte -> big-endian dtype of the payload.
_IDX_DTYPES = {
    0x08: np.dtype(np.uint8),
    0x09: np.dtype(np.int8),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}

_HOW_TO_PROVIDE = (
    "Provide MNIST in one of these ways:\n"
    "  * a folder with train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz,\n"
    "    t10k-images-idx3-ubyte.gz and t10k-labels-idx1-ubyte.gz (gzip or raw): pass it as\n"
    "    --data-dir PATH (train.py), data.dir in the config, or the environment variable\n"
    f"    {ENV_VAR};\n"
    "  * tensorflow-datasets: pip install '.[tfds]' (then MNIST is downloaded on first use, or\n"
    "    read from an already prepared copy in ~/tensorflow_datasets or $TFDS_DATA_DIR).")


def _read_bytes(path: str) -> bytes:
    try:
        if path.endswith(".gz"):
            with gzip.open(path, "rb") as f:
                return f.read()
        with open(path, "rb") as f:
            return f.read()
    except (EOFError, gzip.BadGzipFile, zlib.error) as e:
        raise DataFormatError(
            f"{path}: corrupt or truncated gzip stream ({e}). Download the file again.") from e


def read_idx(path: str) -> np.ndarray:
    """Parses one IDX file (raw or `.gz`) into a read-only array in native byte order.

    The header is checked: two zero bytes, a known type byte, the number of dimensions, one
    big-endian uint32 per dimension; the payload must hold exactly prod(dims) items.
    """
    buf = _read_bytes(path)
    if len(buf) < 4:
        raise DataFormatError(f"{path}: file is truncated: {len(buf)} bytes, shorter than the "
                              "4-byte IDX magic number.")
    if buf[0] != 0 or buf[1] != 0:
        raise DataFormatError(
            f"{path}: bad IDX magic number 0x{buf[:4].hex()}: the first two bytes must be zero. "
            "Is this an IDX file (and, if gzip-compressed, does its name end in .gz)?")
    type_byte, ndim = buf[2], buf[3]
    if type_byte not in _IDX_DTYPES:
        raise DataFormatError(
            f"{path}: unknown IDX data type byte 0x{type_byte:02x}; expected one of "
            + ", ".join(f"0x{t:02x}" for t in _IDX_DTYPES) + ".")
    if ndim == 0:
        raise DataFormatError(f"{path}: IDX header declares 0 dimensions.")
    header_len = 4 + 4 * ndim
    if len(buf) < header_len:
        raise DataFormatError(f"{path}: file is truncated inside its header ({len(buf)} bytes, "
                              f"the header of a {ndim}-d IDX file has {header_len}).")
    dims = tuple(int(d) for d in np.frombuffer(buf, dtype=">u4", count=ndim, offset=4))
    dtype = _IDX_DTYPES[type_byte]
    expected = int(np.prod(dims, dtype=np.int64)) * dtype.itemsize
    got = len(buf) - header_len
    if got < expected:
        raise DataFormatError(
            f"{path}: file is truncated: header declares shape {dims} of {dtype.name} "
            f"({expected} bytes of data) but only {got} bytes follow the header.")
    if got > expected:
        raise DataFormatError(
            f"{path}: {got - expected} unexpected trailing bytes after the {expected} bytes of "
            f"data that the header (shape {dims}) declares.")
    arr = np.frombuffer(buf, dtype=dtype, offset=header_len).reshape(dims)
    if not dtype.isnative and dtype.itemsize > 1:
        arr = arr.astype(dtype.newbyteorder("="))
        arr.flags.writeable = False
    return arr


def find_idx_files(data_dir: str, split: str) -> tuple[str, str] | None:
    """Paths of the (images, labels) IDX files of `split` in `data_dir`, or None if absent.

    Accepts the canonical names with or without `.gz`, and the `name.idx3-ubyte` spelling.
    """
    prefix = _IDX_PREFIX[split]
    found = []
    for kind, idx in (("images", "idx3"), ("labels", "idx1")):
        candidates = [f"{prefix}-{kind}-{idx}-ubyte", f"{prefix}-{kind}.{idx}-ubyte"]
        for name in candidates:
            hit = next((os.path.join(data_dir, name + ext) for ext in (".gz", "")
                        if os.path.isfile(os.path.join(data_dir, name + ext))), None)
            if hit:
                found.append(hit)
                break
        else:
            return None
    return found[0], found[1]


def split_file_names(split: str) -> str:
    """The IDX file names a folder must hold for `split` (for messages)."""
    prefix = _IDX_PREFIX[split]
    return (f"{prefix}-images-idx3-ubyte[.gz] and {prefix}-labels-idx1-ubyte[.gz]")


def _check_split(split: str) -> str:
    if split not in SPLITS:
        raise ValueError(f"Unknown MNIST split {split!r}; expected one of {SPLITS}.")
    return split


def _load_idx(data_dir: str, split: str):
    if not os.path.isdir(data_dir):
        raise DataNotFoundError(f"MNIST folder {data_dir!r} does not exist.\n" + _HOW_TO_PROVIDE)
    paths = find_idx_files(data_dir, split)
    if paths is None:
        prefix = _IDX_PREFIX[split]
        raise DataNotFoundError(
            f"MNIST folder {data_dir!r} has no {prefix}-images-idx3-ubyte[.gz] and "
            f"{prefix}-labels-idx1-ubyte[.gz] (the {split!r} split).\n" + _HOW_TO_PROVIDE)
    image_path, label_path = paths
    images = read_idx(image_path)
    labels = read_idx(label_path)
    if images.dtype != np.uint8 or images.ndim != 3 or images.shape[1:] != IMAGE_SHAPE[:2]:
        raise DataFormatError(f"{image_path}: expected uint8 images of shape (N, 28, 28), "
                              f"got {images.dtype.name} {images.shape}.")
    if labels.dtype != np.uint8 or labels.ndim != 1:
        raise DataFormatError(f"{label_path}: expected a 1-d uint8 label vector, got "
                              f"{labels.dtype.name} {labels.shape}.")
    if images.shape[0] != labels.shape[0]:
        raise DataFormatError(
            f"{image_path} holds {images.shape[0]} images but {label_path} holds "
            f"{labels.shape[0]} labels; the two files must come from the same split.")
    if labels.size and labels.max() >= NUM_CLASSES:
        raise DataFormatError(f"{label_path}: label {int(labels.max())} out of range 0..9.")
    return images.reshape(images.shape + (1,)), labels.astype(np.int32)


def _import_tfds():
    try:
        import tensorflow_datasets as tfds
    except ImportError:
        return None
    return tfds


def _tfds_prepared(tfds, data_dir) -> bool:
    try:
        builder = tfds.builder("mnist", data_dir=data_dir,
                               file_format="array_record")
        return builder.is_prepared()
    except Exception:  # noqa: BLE001 - any failure to inspect means "not prepared"
        return False


def _load_tfds(tfds, split: str, data_dir=None, download=True):
    source = tfds.data_source("mnist", split=split, data_dir=data_dir, download=download)
    n = len(source)
    images = np.empty((n,) + IMAGE_SHAPE, dtype=np.uint8)
    labels = np.empty((n,), dtype=np.int32)
    for i in range(n):
        example = source[i]
        images[i] = np.asarray(example["image"], dtype=np.uint8).reshape(IMAGE_SHAPE)
        labels[i] = int(example["label"])
    images.flags.writeable = False
    labels.flags.writeable = False
    return images, labels


def load(split: str, source: str = "auto", data_dir: str | None = None):
    """Loads one MNIST split as `(uint8 images (N, 28, 28, 1), int32 labels (N,))`.

    `source`: 'idx' reads the IDX files in `data_dir` (default: $COREJAX_DATA_DIR); 'tfds' uses
    `tfds.data_source('mnist')` (with `data_dir` as TFDS's data folder); 'auto' tries an IDX
    folder, then an already prepared TFDS copy, then a TFDS download. Raises DataNotFoundError
    (saying how to provide the data) when no source works, DataFormatError for a bad file.
    """
    _check_split(split)
    if source not in _SOURCES:
        raise ValueError(f"Unknown MNIST source {source!r}; expected one of {_SOURCES}.")
    idx_dir = data_dir if data_dir is not None else os.environ.get(ENV_VAR) or None
    if source == "idx":
        if idx_dir is None:
            raise DataNotFoundError("source='idx' needs a folder of IDX files.\n"
                                    + _HOW_TO_PROVIDE)
        return _load_idx(idx_dir, split)
    if source == "tfds":
        tfds = _import_tfds()
        if tfds is None:
            raise DataNotFoundError("source='tfds' needs tensorflow-datasets: "
                                    "pip install '.[tfds]'.")
        return _load_tfds(tfds, split, data_dir=data_dir)
    # auto
    if idx_dir is not None and (not os.path.isdir(idx_dir)
                                or find_idx_files(idx_dir, split) is not None):
        return _load_idx(idx_dir, split)
    where = (f"the folder {idx_dir!r} has no MNIST IDX files for split {split!r} (expected "
             f"{split_file_names(split)})" if idx_dir else "no data folder was given")
    tfds = _import_tfds()
    if tfds is not None:
        if _tfds_prepared(tfds, None):
            return _load_tfds(tfds, split, download=False)
        try:
            return _load_tfds(tfds, split, download=True)
        except Exception as e:  # noqa: BLE001 - report every failure the same way below
            if isinstance(e, ImportError):
                why = (f"tensorflow-datasets is installed but cannot run: it needs the module "
                       f"{getattr(e, 'name', None) or e} (pip install it, or provide the IDX "
                       "files)")
            else:
                why = f"tensorflow-datasets could not download MNIST ({type(e).__name__}: {e})"
            raise DataNotFoundError(f"MNIST not found: {where}, and {why}.\n"
                                    + _HOW_TO_PROVIDE) from e
    raise DataNotFoundError(f"MNIST not found: {where}, and tensorflow-datasets is not "
                            "installed.\n" + _HOW_TO_PROVIDE)
