"""The data package: IDX parsing (real MNIST and broken fakes), TFDS, batches, checkpoints."""
import collections
import gzip
import os
import threading

import numpy as np
import pytest

from data import (CheckpointError, DataFormatError, DataNotFoundError, Preprocess, batches,
                  checkpoint, epoch_permutation, mnist, num_batches)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _mnist_dir():
    for d in (os.environ.get("COREJAX_DATA_DIR"), os.path.join(REPO, "..", "shared", "data",
                                                                  "mnist")):
        if d and mnist.find_idx_files(d, "test") is not None:
            return d
    pytest.skip("real MNIST IDX files not found (set COREJAX_DATA_DIR or provide "
                "../shared/data/mnist)")


@pytest.fixture(scope="module")
def mnist_dir():
    return _mnist_dir()


# --------------------------------------------------------------------------- real MNIST

TRAIN_COUNTS = [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]
TEST_COUNTS = [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]


@pytest.mark.parametrize("split,n,first,counts", [
    ("train", 60000, [5, 0, 4, 1, 9, 2, 1, 3], TRAIN_COUNTS),
    ("test", 10000, [7, 2, 1, 0, 4, 1, 4, 9], TEST_COUNTS),
])
def test_real_mnist(mnist_dir, split, n, first, counts):
    images, labels = mnist.load(split, data_dir=mnist_dir)
    assert images.shape == (n, 28, 28, 1) and images.dtype == np.uint8
    assert labels.shape == (n,) and labels.dtype == np.int32
    assert labels[:8].tolist() == first
    assert np.bincount(labels).tolist() == counts
    assert images.min() == 0 and images.max() == 255


def test_raw_idx_and_env_var(mnist_dir, tmp_path, monkeypatch):
    for name in ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"):
        with gzip.open(os.path.join(mnist_dir, name + ".gz")) as f:
            (tmp_path / name).write_bytes(f.read())
    monkeypatch.setenv("COREJAX_DATA_DIR", str(tmp_path))
    raw = mnist.load("test", source="idx")
    gz = mnist.load("test", data_dir=mnist_dir)
    np.testing.assert_array_equal(raw[0], gz[0])
    np.testing.assert_array_equal(raw[1], gz[1])


# --------------------------------------------------------------------------- broken files

def _idx_bytes(arr, type_byte=0x08, magic=b"\x00\x00"):
    arr = np.asarray(arr)
    header = magic + bytes([type_byte, arr.ndim]) + np.asarray(arr.shape, ">u4").tobytes()
    return header + arr.astype(arr.dtype.newbyteorder(">")).tobytes()


def _write_split(folder, n_images=5, n_labels=5, image_bytes=None, label_bytes=None,
                 gz=True, prefix="t10k"):
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (n_images, 28, 28), dtype=np.uint8)
    labels = rng.integers(0, 10, n_labels, dtype=np.uint8)
    ext = ".gz" if gz else ""
    out = {}
    for kind, idx, data in (("images", "idx3", image_bytes or _idx_bytes(images)),
                            ("labels", "idx1", label_bytes or _idx_bytes(labels))):
        path = folder / f"{prefix}-{kind}-{idx}-ubyte{ext}"
        path.write_bytes(gzip.compress(data) if gz else data)
        out[kind] = path
    return out, images, labels


@pytest.mark.parametrize("gz", [True, False])
def test_fake_split_round_trip(tmp_path, gz):
    _, images, labels = _write_split(tmp_path, gz=gz)
    x, y = mnist.load("test", source="idx", data_dir=str(tmp_path))
    np.testing.assert_array_equal(x[..., 0], images)
    np.testing.assert_array_equal(y, labels)


def test_read_idx_big_endian_int32(tmp_path):
    arr = np.arange(-3, 9, dtype=np.int32).reshape(3, 4)
    path = tmp_path / "ints.idx"
    path.write_bytes(_idx_bytes(arr, type_byte=0x0C))
    out = mnist.read_idx(str(path))
    np.testing.assert_array_equal(out, arr)
    assert out.dtype == np.int32


def _images_bytes(n=5, **kw):
    return _idx_bytes(np.zeros((n, 28, 28), np.uint8), **kw)


@pytest.mark.parametrize("kind,make,message", [
    ("images", lambda: _images_bytes(magic=b"\x08\x03"), "magic number"),
    ("images", lambda: _images_bytes(type_byte=0x07), "data type byte 0x07"),
    ("images", lambda: _images_bytes()[:-100], "truncated"),
    ("images", lambda: _images_bytes()[:10], "truncated inside its header"),
    ("images", lambda: b"\x00\x00", "truncated"),
    ("images", lambda: _images_bytes() + b"\x00" * 7, "7 unexpected trailing bytes"),
    ("images", lambda: _idx_bytes(np.zeros((5, 27, 28), np.uint8)), "(N, 28, 28)"),
    ("images", lambda: _idx_bytes(np.zeros((5, 28, 28), np.int32), type_byte=0x0C),
     "uint8 images"),
    ("labels", lambda: _idx_bytes(np.array([1, 2, 3, 4, 12], np.uint8)), "out of range"),
    ("labels", lambda: _idx_bytes(np.zeros((5, 2), np.uint8)), "1-d uint8 label"),
])
def test_bad_files_raise_naming_the_file(tmp_path, kind, make, message):
    kw = {"image_bytes": make()} if kind == "images" else {"label_bytes": make()}
    paths, _, _ = _write_split(tmp_path, **kw)
    with pytest.raises(DataFormatError) as info:
        mnist.load("test", source="idx", data_dir=str(tmp_path))
    assert message in str(info.value)
    assert str(paths[kind]) in str(info.value)


def test_corrupt_gzip(tmp_path):
    paths, _, _ = _write_split(tmp_path)
    data = paths["images"].read_bytes()
    paths["images"].write_bytes(data[: len(data) // 2])
    with pytest.raises(DataFormatError, match="corrupt or truncated gzip") as info:
        mnist.load("test", source="idx", data_dir=str(tmp_path))
    assert str(paths["images"]) in str(info.value)


def test_mismatched_counts(tmp_path):
    paths, _, _ = _write_split(tmp_path, n_images=5, n_labels=4)
    with pytest.raises(DataFormatError, match="5 images but .* 4 labels") as info:
        mnist.load("test", source="idx", data_dir=str(tmp_path))
    assert str(paths["labels"]) in str(info.value)


def test_missing_folder_and_files(tmp_path, monkeypatch):
    monkeypatch.delenv("COREJAX_DATA_DIR", raising=False)
    with pytest.raises(DataNotFoundError, match="does not exist") as info:
        mnist.load("train", data_dir=str(tmp_path / "nowhere"))
    assert "--data-dir" in str(info.value) and "COREJAX_DATA_DIR" in str(info.value)
    _write_split(tmp_path)          # test split only
    with pytest.raises(DataNotFoundError, match="train-images-idx3-ubyte"):
        mnist.load("train", source="idx", data_dir=str(tmp_path))


def test_auto_without_any_source_says_how(monkeypatch, tmp_path):
    monkeypatch.delenv("COREJAX_DATA_DIR", raising=False)
    monkeypatch.setattr(mnist, "_import_tfds", lambda: None)
    with pytest.raises(DataNotFoundError) as info:
        mnist.load("train")
    msg = str(info.value)
    assert "--data-dir" in msg and "COREJAX_DATA_DIR" in msg and "pip install '.[tfds]'" in msg
    with pytest.raises(DataNotFoundError, match="tensorflow-datasets"):
        mnist.load("test", source="tfds")


def test_bad_split_and_source():
    with pytest.raises(ValueError, match="split 'validation'"):
        mnist.load("validation")
    with pytest.raises(ValueError, match="source 'hub'"):
        mnist.load("train", source="hub")


def test_tfds_mock_data(monkeypatch):
    tfds = pytest.importorskip(
        "tensorflow_datasets",
        reason="the optional extra [tfds] (tensorflow-datasets) is not installed")
    monkeypatch.delenv("COREJAX_DATA_DIR", raising=False)
    with tfds.testing.mock_data(num_examples=12):
        for source in ("tfds", "auto"):
            x, y = mnist.load("train", source=source)
            assert x.shape == (12, 28, 28, 1) and x.dtype == np.uint8
            assert y.shape == (12,) and y.dtype == np.int32
            assert ((0 <= y) & (y < 10)).all()


# --------------------------------------------------------------------------- batches

def _toy(n=1000):
    rng = np.random.default_rng(1)
    return (rng.integers(0, 256, (n, 28, 28, 1), dtype=np.uint8),
            rng.integers(0, 10, n).astype(np.int32))


@pytest.mark.parametrize("drop,count,last", [(True, 7, 128), (False, 8, 104)])
def test_batch_shapes_and_preprocessing(drop, count, last):
    images, labels = _toy()
    out = list(batches(images, labels, 128, shuffle=False, drop_remainder=drop))
    assert len(out) == count == num_batches(1000, 128, drop)
    x, y = out[0]
    assert x.shape == (128, 784) and x.dtype == np.float32
    assert y.shape == (128, 10) and y.dtype == np.float32
    assert out[-1][0].shape[0] == last
    np.testing.assert_array_equal(x, images[:128].reshape(128, -1) / np.float32(255))
    np.testing.assert_array_equal(y.argmax(1), labels[:128])
    assert 0.0 <= x.min() and x.max() <= 1.0
    raw = next(iter(batches(images, labels, 16, shuffle=False,
                            preprocess=Preprocess(flatten=False, scale=False, one_hot=None))))
    assert raw[0].shape == (16, 28, 28, 1) and raw[0].dtype == np.float32
    np.testing.assert_array_equal(raw[0], images[:16])
    assert raw[1].dtype == np.int32


def test_shuffle_is_deterministic_per_key_and_epoch():
    from corejax import random
    images, labels = _toy(300)
    key = random.PRNGKey(0)

    def order(epoch, prefetch=2, key=key):
        return np.concatenate([y.argmax(1) for _, y in batches(
            images, labels, 64, key=key, epoch=epoch, drop_remainder=False, prefetch=prefetch)])

    perm0 = epoch_permutation(key, 0, 300)
    np.testing.assert_array_equal(perm0, random.permutation(random.fold_in(key, 0), 300))
    assert sorted(perm0.tolist()) == list(range(300))
    np.testing.assert_array_equal(order(0), labels[perm0])
    np.testing.assert_array_equal(order(0), order(0, prefetch=0))
    assert not np.array_equal(epoch_permutation(key, 1, 300), perm0)
    assert not np.array_equal(epoch_permutation(random.PRNGKey(1), 0, 300), perm0)


@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("pre", [Preprocess(), Preprocess(flatten=False, scale=False)])
def test_a_data_set_preprocessed_in_bulk_gives_the_same_batches(shuffle, pre):
    """preprocess=None batches arrays preprocessed once, whole (as train.py does): the same
    bits as preprocessing batch by batch, in the same order, for any part and start."""
    from corejax import random
    from data.batching import preprocess_batch
    images, labels = _toy(300)
    whole_x, whole_y = preprocess_batch(images, labels, pre)
    kw = dict(key=random.PRNGKey(3), epoch=2, shuffle=shuffle, drop_remainder=False)
    for extra in ({}, {"start_batch": 2, "prefetch": 0}, {"part": (1, 3)}):
        per_batch = list(batches(images, labels, 64, preprocess=pre, **kw, **extra))
        bulk = list(batches(whole_x, whole_y, 64, preprocess=None, **kw, **extra))
        assert len(bulk) == len(per_batch) > 0
        for (xa, ya), (xb, yb) in zip(per_batch, bulk):
            assert xa.dtype == xb.dtype and ya.dtype == yb.dtype
            np.testing.assert_array_equal(xa.view(np.uint32), xb.view(np.uint32))
            np.testing.assert_array_equal(ya, yb)
    # in the stored order a batch is a view of the arrays: no thread to prepare it ahead
    threads = len(_prefetch_threads())
    it = batches(whole_x, whole_y, 64, shuffle=False, preprocess=None, prefetch=2)
    assert len(_prefetch_threads()) == threads
    assert np.shares_memory(next(it)[0], whole_x)
    it.close()


def test_start_batch_resumes_inside_an_epoch():
    images, labels = _toy(300)
    full = [y for _, y in batches(images, labels, 64, shuffle=False, drop_remainder=False)]
    tail = [y for _, y in batches(images, labels, 64, shuffle=False, drop_remainder=False,
                                  start_batch=2)]
    assert len(tail) == len(full) - 2
    for a, b in zip(full[2:], tail):
        np.testing.assert_array_equal(a, b)


def test_shuffle_needs_a_key():
    images, labels = _toy(10)
    with pytest.raises(ValueError, match="PRNG key"):
        batches(images, labels, 4)


def _prefetch_threads():
    return [t for t in threading.enumerate() if t.name == "batch-prefetch"]


def test_prefetch_is_bounded_and_shuts_down():
    images, labels = _toy(2000)
    before = len(_prefetch_threads())
    it = batches(images, labels, 10, shuffle=False, prefetch=3)
    first = next(it)
    assert first[0].shape == (10, 784)
    assert it._queue.qsize() <= 3
    assert len(_prefetch_threads()) == before + 1
    it.close()
    assert len(_prefetch_threads()) == before
    with pytest.raises(StopIteration):
        next(it)
    with batches(images, labels, 10, shuffle=False) as it2:
        next(it2)
    assert len(_prefetch_threads()) == before


def test_prefetch_propagates_exceptions():
    images, labels = _toy(100)
    labels = labels.copy()
    labels[75] = 99             # one-hot of 99 classes out of 10 fails in the fourth batch
    it = batches(images, labels, 25, shuffle=False)
    got = [next(it) for _ in range(3)]
    assert len(got) == 3
    with pytest.raises(IndexError):
        next(it)
    assert not it._thread


# --------------------------------------------------------------------------- checkpoints

State = collections.namedtuple("State", "count mu")


def _tree():
    import corejax.numpy as jnp
    return {"params": [{"w": np.arange(6, dtype=np.float32).reshape(2, 3),
                        "b": jnp.ones(3, dtype=jnp.float32)}],
            "opt_state": (State(np.int32(3), {"w": np.zeros((2, 3), np.float32)}), None),
            "key": np.array([0, 42], np.uint32), "step": 7, "loss": 0.25, "done": False}


def _assert_same(a, b):
    from corejax import tree_util
    la, ta = tree_util.tree_flatten(a)
    lb, tb = tree_util.tree_flatten(b)
    assert ta == tb
    for x, y in zip(la, lb):
        assert type(x) is type(y) if isinstance(x, (int, float, bool)) else True
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
        assert np.asarray(x).dtype == np.asarray(y).dtype


def test_checkpoint_round_trip(tmp_path):
    path = tmp_path / "ckpt.npz"
    tree = _tree()
    checkpoint.save(path, tree)
    back = checkpoint.restore(path)
    _assert_same(tree, back)
    assert isinstance(back["opt_state"][0], State)
    assert back["step"] == 7 and type(back["step"]) is int
    _assert_same(tree, checkpoint.restore(path, target=tree))
    with np.load(path, allow_pickle=False) as archive:   # plain npz, no pickles
        assert "__tree__" in archive.files


def test_checkpoint_target_mismatch(tmp_path):
    path = tmp_path / "ckpt.npz"
    checkpoint.save(path, _tree())
    other = _tree()
    other["params"][0]["w"] = np.zeros((3, 3), np.float32)
    with pytest.raises(CheckpointError, match=r"\['params'\]\[0\]\['w'\].*\[2, 3\].*\[3, 3\]"):
        checkpoint.restore(path, target=other)
    other = _tree()
    other["extra"] = 1
    with pytest.raises(CheckpointError, match="leaves"):
        checkpoint.restore(path, target=other)


def test_checkpoint_crash_mid_write_keeps_old(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.npz"
    checkpoint.save(path, {"v": np.ones(3)})

    def crash(f, **arrays):
        f.write(b"PK\x03\x04 half a zip")
        raise OSError("disk died")
    monkeypatch.setattr(checkpoint.np, "savez", crash)
    with pytest.raises(OSError, match="disk died"):
        checkpoint.save(path, {"v": np.zeros(3)})
    monkeypatch.undo()
    np.testing.assert_array_equal(checkpoint.restore(path)["v"], np.ones(3))
    assert os.listdir(tmp_path) == ["ckpt.npz"]      # no temporary file left behind

    def no_replace(src, dst):
        raise KeyboardInterrupt
    monkeypatch.setattr(checkpoint.os, "replace", no_replace)
    with pytest.raises(KeyboardInterrupt):
        checkpoint.save(path, {"v": np.zeros(3)})
    monkeypatch.undo()
    np.testing.assert_array_equal(checkpoint.restore(path)["v"], np.ones(3))
    assert os.listdir(tmp_path) == ["ckpt.npz"]


def test_checkpoint_unreadable(tmp_path):
    path = tmp_path / "ckpt.npz"
    path.write_bytes(b"not a zip file")
    with pytest.raises(CheckpointError, match="not a corejax checkpoint: .*npz.*starts with"):
        checkpoint.restore(path)
    path.write_bytes(os.urandom(4096))                   # random bytes: not "pickled data"
    with pytest.raises(CheckpointError, match="not a corejax checkpoint") as info:
        checkpoint.restore(path)
    assert "pickle" not in str(info.value)
    path.write_bytes(b"PK\x03\x04" + b"\0" * 100)        # a broken zip
    with pytest.raises(CheckpointError, match="not a readable corejax checkpoint"):
        checkpoint.restore(path)
    with pytest.raises(FileNotFoundError):
        checkpoint.restore(tmp_path / "missing.npz")


def test_empty_folder_with_a_broken_tfds_names_what_is_missing(tmp_path, monkeypatch):
    from data import mnist

    class BrokenTfds:
        @staticmethod
        def builder(*args, **kwargs):
            raise RuntimeError("not prepared")

        @staticmethod
        def data_source(*args, **kwargs):
            raise ModuleNotFoundError("No module named 'importlib_resources'",
                                      name="importlib_resources")

    monkeypatch.setattr(mnist, "_import_tfds", lambda: BrokenTfds)
    with pytest.raises(mnist.DataNotFoundError) as info:
        mnist.load("train", data_dir=str(tmp_path))
    text = str(info.value)
    assert "has no MNIST IDX files for split 'train'" in text
    assert "train-images-idx3-ubyte" in text and "importlib_resources" in text
    assert "installed but cannot run" in text
