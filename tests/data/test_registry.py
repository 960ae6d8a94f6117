import gzip
import os
import subprocess
import sys

import numpy as np
import pytest

from harness.config.schema import DataConfig
from harness.data import registry as data


def test_mnist1d_is_generated_locally_cached_and_reused(data_cache, monkeypatch):
    cfg = DataConfig("mnist1d", num_samples=600, train_split=0.8, data_seed=7)
    arrays = data.load(cfg)
    assert arrays.x_train.shape == (480, 40, 1) and arrays.x_val.shape == (120, 40, 1)
    assert arrays.x_train.dtype == np.float32 and set(np.unique(arrays.y_train)) == set(range(10))
    assert len(arrays.x_train) == data.expected_train_size(cfg)
    assert list(data_cache.glob("mnist1d-*.npz"))

    import mnist1d.data

    monkeypatch.setattr(mnist1d.data, "make_dataset", lambda *a, **k: pytest.fail("regenerated, not cached"))
    again = data.load(cfg)
    assert np.array_equal(again.x_train, arrays.x_train) and np.array_equal(again.y_val, arrays.y_val)


def test_mnist1d_data_seed_changes_the_data():
    a = data.load(DataConfig("mnist1d", 600, 0.8, 1))
    b = data.load(DataConfig("mnist1d", 600, 0.8, 2))
    assert not np.array_equal(a.x_train, b.x_train)


def test_digits_is_split_stratified_with_images_in_0_1():
    cfg = DataConfig("digits", None, 0.8, 42)
    arrays = data.load(cfg)
    assert arrays.x_train.shape[1:] == (8, 8, 1) and len(arrays.x_train) == data.expected_train_size(cfg)
    assert arrays.x_train.min() >= 0 and arrays.x_train.max() <= 1
    assert np.bincount(arrays.y_val).min() >= 30


def _in_fresh_process(code: str, keras_home, cwd):
    """Keras reads KERAS_HOME when it is imported, so each cache test gets its own process."""
    env = {**os.environ, "KERAS_HOME": str(keras_home)}
    return subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=300)


def _write_idx(path, array, magic):
    with gzip.open(path, "wb") as f:
        f.write(magic.to_bytes(4, "big") + b"\0" * (4 * (array.ndim)) + array.astype(np.uint8).tobytes())


LOAD = (
    "import numpy as np; from harness.data import registry as data; from harness.config.schema import DataConfig\n"
    "a = data.load(DataConfig('fashion_mnist', None, None, 42))\n"
    "np.savez('loaded.npz', x_train=a.x_train, y_train=a.y_train, x_val=a.x_val)\n"
)


def test_keras_dataset_is_read_from_the_keras_cache(tmp_path):
    """A tiny archive in the Keras cache format, read through keras.datasets by the real loader."""
    folder = tmp_path / "keras" / "datasets" / "fashion-mnist"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    images = {n: rng.integers(0, 256, (n, 28, 28)) for n in (20, 10)}
    _write_idx(folder / "train-labels-idx1-ubyte.gz", np.arange(20) % 10, 2049)
    _write_idx(folder / "train-images-idx3-ubyte.gz", images[20], 2051)
    _write_idx(folder / "t10k-labels-idx1-ubyte.gz", np.arange(10) % 10, 2049)
    _write_idx(folder / "t10k-images-idx3-ubyte.gz", images[10], 2051)

    proc = _in_fresh_process(LOAD, tmp_path / "keras", tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    with np.load(tmp_path / "loaded.npz") as arrays:
        assert arrays["x_train"].shape == (20, 28, 28, 1) and arrays["x_val"].shape == (10, 28, 28, 1)
        assert np.allclose(arrays["x_train"][..., 0], images[20] / 255.0)
        assert list(arrays["y_train"]) == list(np.arange(20) % 10)


def test_missing_keras_dataset_fails_with_a_way_to_get_it(tmp_path):
    code = (
        "from harness.data import registry as data; from harness.config.schema import DataConfig\n"
        "try:\n    data.load(DataConfig('fashion_mnist', None, None, 42))\n"
        "except data.DataUnavailable as err:\n    print('UNAVAILABLE', err)\n"
    )
    proc = _in_fresh_process(code, tmp_path / "empty-keras-home", tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    line = next(l for l in proc.stdout.splitlines() if l.startswith("UNAVAILABLE"))
    assert "dataset=mnist1d" in line and str(tmp_path / "empty-keras-home") in line
