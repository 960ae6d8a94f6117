"""The built-in data sets: MNIST-1D (generated locally), scikit-learn's digits, and Keras's MNIST,
Fashion-MNIST and CIFAR-10 (from the Keras cache). Loaders return float32 arrays with a channel axis."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Callable

import numpy as np

from harness.data.transforms import Arrays
from harness.fields import ConfigError, float_value, int_value
from harness.store.files import atomic_write


class DataUnavailable(RuntimeError):
    """The data set is neither cached nor downloadable; the message says how to get it."""


def validate(cfg: dict, generated: bool, fixed: bool, num_classes: int = 10) -> dict:
    """num_samples, train_split and data_seed of a built-in data set, checked against what it allows."""
    name, num_samples, train_split = cfg["name"], cfg.get("num_samples"), cfg.get("train_split")
    if fixed:
        if num_samples is not None:
            raise ConfigError("dataset.num_samples", num_samples, f"null ({name} has a fixed size)")
        if train_split is not None:
            raise ConfigError("dataset.train_split", train_split, f"null ({name} has a fixed train/test split)")
    else:
        if generated:
            num_samples = int_value(cfg, "num_samples", low=20 * num_classes, name="dataset.num_samples")
        elif num_samples is not None:
            raise ConfigError("dataset.num_samples", num_samples, f"null ({name} has a fixed size)")
        train_split = float_value(cfg, "train_split", name="dataset.train_split")
        if not 0.0 < train_split < 1.0:
            raise ConfigError("dataset.train_split", train_split, "a number in (0, 1)")
    data_seed = int_value(cfg, "data_seed", name="dataset.data_seed")
    return {"num_samples": num_samples, "train_split": train_split, "data_seed": data_seed}


def cache_dir() -> Path:
    """Where generated data is cached: $HARNESS_CACHE, else ~/.cache/harness."""
    return Path(os.environ.get("HARNESS_CACHE", Path.home() / ".cache" / "harness"))


def mnist1d_file(num_samples: int, train_split: float, data_seed: int) -> Path:
    """Where the generated MNIST-1D of these settings is cached (x, y, x_test, y_test as the package makes them)."""
    key = hashlib.sha256(f"mnist1d-v1-{num_samples}-{train_split!r}-{data_seed}".encode()).hexdigest()[:16]
    return cache_dir() / f"mnist1d-{key}.npz"


def load_mnist1d(data_cfg) -> Arrays:
    num_samples, train_split, data_seed = data_cfg.num_samples, data_cfg.train_split, data_cfg.data_seed
    path = mnist1d_file(num_samples, train_split, data_seed)
    if not path.exists():
        from mnist1d.data import get_dataset_args, make_dataset  # generates locally; never get_dataset

        args = get_dataset_args()
        args.num_samples, args.train_split, args.seed = num_samples, train_split, data_seed
        made = make_dataset(args)

        def write(tmp: str) -> None:
            with open(tmp, "wb") as f:
                np.savez(f, x=made["x"], y=made["y"], x_test=made["x_test"], y_test=made["y_test"])

        atomic_write(path, write)
    with np.load(path, allow_pickle=False) as arrays:
        return Arrays(
            x_train=arrays["x"].astype(np.float32)[..., None],
            y_train=arrays["y"].astype(np.int64),
            x_val=arrays["x_test"].astype(np.float32)[..., None],
            y_val=arrays["y_test"].astype(np.int64),
            num_classes=10,
            input_shape=(40, 1),
        )


def load_digits(data_cfg) -> Arrays:
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)[..., None]
    x_train, x_val, y_train, y_val = train_test_split(
        x, digits.target.astype(np.int64), train_size=data_cfg.train_split, random_state=data_cfg.data_seed, stratify=digits.target
    )
    return Arrays(x_train, y_train, x_val, y_val, num_classes=10, input_shape=(8, 8, 1))


def _keras_home() -> str:
    """Keras reads KERAS_HOME once, at import; this is the folder it uses."""
    try:
        from keras.src.backend.config import keras_home

        return keras_home()
    except ImportError:  # a Keras without that private helper
        return os.environ.get("KERAS_HOME", os.path.expanduser("~/.keras"))


def keras_loader(name: str, cache_files: str) -> Callable[..., Arrays]:
    def load(data_cfg) -> Arrays:
        from harness.backend import keras

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
            scale(x_val), y_val.reshape(-1).astype(np.int64), num_classes=10, input_shape=scale(x_val[:1]).shape[1:],
        )

    return load
