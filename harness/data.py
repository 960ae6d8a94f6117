"""Datasets by name: a dict registry of loaders that return float32 arrays with a channel axis.

Importing this module does not import TensorFlow (config validation reads `DATASETS` for sizes and names).
"""
from __future__ import annotations

import functools
import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from harness.transforms import fraction_counts, imbalanced_counts


class DataUnavailable(RuntimeError):
    """The data set is neither cached nor downloadable; the message says how to get it."""


@dataclass(frozen=True)
class Arrays:
    x_train: np.ndarray
    y_train: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray
    num_classes: int


@dataclass(frozen=True)
class DatasetSpec:
    load: Callable[..., Arrays]
    num_classes: int
    input_size: int                 # numbers per sample (40 for MNIST-1D), known without loading
    generated: bool = False         # size set by `num_samples` (mnist1d)
    # training samples per class of a fixed split (published counts), so its size needs no download to check
    train_class_counts: tuple[int, ...] | None = None

    @property
    def fixed_size(self) -> int | None:
        """Training-set size of a data set with a fixed split (None when our own split decides it)."""
        return None if self.train_class_counts is None else sum(self.train_class_counts)


def cache_dir() -> Path:
    """Where generated data is cached: $HARNESS_CACHE, else ~/.cache/harness."""
    return Path(os.environ.get("HARNESS_CACHE", Path.home() / ".cache" / "harness"))


def _load_mnist1d(num_samples: int, train_split: float, data_seed: int) -> Arrays:
    key = hashlib.sha256(f"mnist1d-v1-{num_samples}-{train_split!r}-{data_seed}".encode()).hexdigest()[:16]
    path = cache_dir() / f"mnist1d-{key}.npz"
    if not path.exists():
        from mnist1d.data import get_dataset_args, make_dataset  # generates locally; never get_dataset

        args = get_dataset_args()
        args.num_samples, args.train_split, args.seed = num_samples, train_split, data_seed
        made = make_dataset(args)
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".npz", delete=False) as tmp:
            np.savez(tmp, x=made["x"], y=made["y"], x_test=made["x_test"], y_test=made["y_test"])
        os.replace(tmp.name, path)
    with np.load(path, allow_pickle=False) as arrays:
        return Arrays(
            x_train=arrays["x"].astype(np.float32)[..., None],
            y_train=arrays["y"].astype(np.int64),
            x_val=arrays["x_test"].astype(np.float32)[..., None],
            y_val=arrays["y_test"].astype(np.int64),
            num_classes=10,
        )


def _load_digits(num_samples: None, train_split: float, data_seed: int) -> Arrays:
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)[..., None]
    x_train, x_val, y_train, y_val = train_test_split(
        x, digits.target.astype(np.int64), train_size=train_split, random_state=data_seed, stratify=digits.target
    )
    return Arrays(x_train, y_train, x_val, y_val, num_classes=10)


def _keras_home() -> str:
    """Keras reads KERAS_HOME once, at import; this is the folder it uses."""
    try:
        from keras.src.backend.config import keras_home

        return keras_home()
    except ImportError:  # a Keras without that private helper
        return os.environ.get("KERAS_HOME", os.path.expanduser("~/.keras"))


def _keras_loader(name: str, cache_files: str) -> Callable[..., Arrays]:
    def load(num_samples: None, train_split: None, data_seed: int) -> Arrays:
        import keras

        try:
            (x_train, y_train), (x_val, y_val) = getattr(keras.datasets, name).load_data()
        except Exception as err:  # Keras raises a bare Exception on a failed download
            home = _keras_home()
            reason = " ".join(str(err).split())[:200]
            raise DataUnavailable(
                f"dataset={name} is not in the Keras cache ({home}/datasets/{cache_files}) and could not be "
                f"downloaded ({type(err).__name__}: {reason}); run `python -c \"import keras; "
                f"keras.datasets.{name}.load_data()\"` on a machine with internet access and copy "
                f"{home}/datasets here, or use dataset=mnist1d"
            ) from err
        scale = lambda a: (a.astype(np.float32) / 255.0).reshape(a.shape[0], *a.shape[1:3], -1)  # noqa: E731
        return Arrays(
            scale(x_train), y_train.reshape(-1).astype(np.int64),
            scale(x_val), y_val.reshape(-1).astype(np.int64), num_classes=10,
        )

    return load


DATASETS: dict[str, DatasetSpec] = {
    "mnist1d": DatasetSpec(_load_mnist1d, num_classes=10, input_size=40, generated=True),
    "digits": DatasetSpec(_load_digits, num_classes=10, input_size=64),
    "mnist": DatasetSpec(
        _keras_loader("mnist", "mnist.npz"), num_classes=10, input_size=784,
        train_class_counts=(5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949),
    ),
    "fashion_mnist": DatasetSpec(
        _keras_loader("fashion_mnist", "fashion-mnist/*.gz"), num_classes=10, input_size=784,
        train_class_counts=(6000,) * 10,
    ),
    "cifar10": DatasetSpec(
        _keras_loader("cifar10", "cifar-10-batches-py"), num_classes=10, input_size=3072,
        train_class_counts=(5000,) * 10,
    ),
}


def load(data_cfg) -> Arrays:
    """Load the data set named in `data_cfg` (a DataConfig)."""
    spec = DATASETS[data_cfg.name]
    return spec.load(data_cfg.num_samples, data_cfg.train_split, data_cfg.data_seed)


@functools.lru_cache(maxsize=None)
def _local_class_counts(name: str, num_samples: int | None, train_split: float | None, data_seed: int):
    arrays = DATASETS[name].load(num_samples, train_split, data_seed)
    return tuple(int(n) for n in np.bincount(arrays.y_train, minlength=DATASETS[name].num_classes))


def train_class_counts(data_cfg) -> np.ndarray:
    """Training samples per class before any transform: published for a fixed split, else read off the labels
    of the local data (generated MNIST-1D comes from the cache, generated into it the first time; digits ships
    with scikit-learn). Never downloads, never loads TensorFlow."""
    spec = DATASETS[data_cfg.name]
    if spec.train_class_counts is not None:
        return np.array(spec.train_class_counts, dtype=np.int64)
    return np.array(_local_class_counts(data_cfg.name, data_cfg.num_samples, data_cfg.train_split,
                                        data_cfg.data_seed), dtype=np.int64)


def expected_train_size(data_cfg, imbalance: float = 0.0, train_fraction: float = 1.0) -> int:
    """The run's training-set size, exactly: the class counts through the same arithmetic as the transforms."""
    counts = train_class_counts(data_cfg)
    if train_fraction < 1.0:
        counts = fraction_counts(counts, train_fraction)
    if imbalance > 0.0:
        counts = imbalanced_counts(counts, imbalance)
    return int(counts.sum())
