"""Data sets by name: one dict registry for the built-in data and the user's own (`dataset=<name>`).

Each entry says which `dataset.*` keys it takes, how to check them, how to read the data without TensorFlow
(what validation needs before anything runs: the data's checks (harness.data.validity), training samples per
class to check a batch size, one sample's shape to check a model) and how to load it. Importing this module does
not import TensorFlow.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from harness.data import builtin, images, sources, tfds_source, validity
from harness.data.builtin import DataUnavailable, cache_dir  # noqa: F401  (the names runs and tests use)
from harness.data.transforms import Arrays, fraction_counts, imbalanced_counts, tune_counts
from harness.fields import ConfigError, RegistryEntry, check_keys

BUILTIN_KEYS = ("num_samples", "train_split", "data_seed")


@dataclass(frozen=True)
class DataConfig(RegistryEntry):
    name: str                        # dataset=<name>; for TFDS data, the TFDS data set's name
    num_samples: int | None = None
    train_split: float | None = None
    data_seed: int = 42
    source: str | None = None        # the registry entry that loads it (None: `name`)
    path: str | None = None
    val_path: str | None = None
    val_fraction: float | None = None
    image_size: tuple[int, int] | None = None
    color_mode: str | None = None
    label: str | None = None
    train_split_name: str | None = None
    val_split_name: str | None = None
    data_dir: str | None = None

    def flat(self) -> dict[str, Any]:
        """`dataset` and the `dataset.*` keys of this data set's entry, by their command-line key."""
        return {**self.flat_name("dataset"), **{f"dataset.{k}": getattr(self, k) for k in DATASETS[self.source].keys}}


@dataclass(frozen=True)
class DatasetSpec:
    keys: tuple[str, ...]                  # its dataset.* keys besides `name`
    validate: Callable[[dict], dict]       # raw dataset.* values -> typed DataConfig fields; raises ConfigError
    load: Callable[[Any], Arrays]          # DataConfig -> Arrays
    # DataConfig -> the Arrays a run gets, without TensorFlow (images as paths, unopened); None: only a run can load
    # it (TFDS, Keras's downloads), and a run checks it then
    read: Callable[[Any], Arrays] | None = None
    # DataConfig -> (training samples per class or None, one sample's shape or None) from the data's metadata,
    # checked, where the data itself cannot be read without TensorFlow (TFDS)
    metadata: Callable[[Any], tuple] | None = None
    input_shape: tuple[int, ...] | None = None        # built-in data: one sample's shape, known in advance
    train_class_counts: tuple[int, ...] | None = None  # built-in fixed splits: the published counts


def _builtin(load, input_shape, generated=False, counts=None) -> DatasetSpec:
    check = lambda cfg: builtin.validate(cfg, generated=generated, fixed=counts is not None)  # noqa: E731
    return DatasetSpec(BUILTIN_KEYS, check, load, read=load if counts is None else None, input_shape=input_shape,
                       train_class_counts=counts)


DATASETS: dict[str, DatasetSpec] = {
    "mnist1d": _builtin(builtin.load_mnist1d, (40, 1), generated=True),
    "digits": _builtin(builtin.load_digits, (8, 8, 1)),
    "mnist": _builtin(builtin.keras_loader("mnist", "mnist.npz"), (28, 28, 1),
                      counts=(5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949)),
    "fashion_mnist": _builtin(builtin.keras_loader("fashion_mnist", "fashion-mnist/*.gz"), (28, 28, 1),
                              counts=(6000,) * 10),
    "cifar10": _builtin(builtin.keras_loader("cifar10", "cifar-10-batches-py"), (32, 32, 3),
                        counts=(5000,) * 10),
    "images": DatasetSpec(("path", "val_path", "val_fraction", "image_size", "color_mode", "data_seed"),
                          images.validate, images.load, images.listed),
    "npz": DatasetSpec(("path", "val_fraction", "data_seed"), sources.validate_npz, sources.load_npz,
                       sources.load_npz),
    "table": DatasetSpec(("path", "label", "val_fraction", "data_seed"), sources.validate_table,
                         sources.load_table, sources.load_table),
    "tfds": DatasetSpec(("train_split_name", "val_split_name", "data_dir"), tfds_source.validate,
                        tfds_source.load, metadata=tfds_source.metadata),
}
ALL_KEYS = {"name", "source"} | {key for spec in DATASETS.values() for key in spec.keys}


def config_from_dict(cfg: Any) -> DataConfig:
    """The `dataset` group of a composed config, validated; raises ConfigError."""
    source = cfg.get("source", cfg.get("name")) if isinstance(cfg, dict) else cfg
    if not isinstance(source, str) or source not in DATASETS:
        raise ConfigError("dataset", source, f"one of {', '.join(DATASETS)}")
    spec = DATASETS[source]
    check_keys(cfg, {"name", *(["source"] if "source" in cfg else []), *spec.keys}, "dataset.")
    data_cfg = DataConfig(name=cfg["name"], source=source, **spec.validate(cfg))
    try:
        _survey(data_cfg)
    except ConfigError:
        raise
    except Exception as err:  # generating, reading or splitting the data failed: nothing can run with these
        settings = ", ".join(f"{k}={v}" for k, v in data_cfg.flat().items() if k != "dataset")
        reason = str(err).splitlines()[0] if str(err) else ""
        raise ConfigError("dataset", data_cfg.name, f"settings it can be loaded with ({settings} failed: "
                          f"{type(err).__name__}: {reason})") from None
    return data_cfg


def _checked(data_cfg, data: Arrays) -> str | None:
    """harness.data.validity on what a source returned, its errors naming the file (or the data set)."""
    key, where = ("dataset.path", data_cfg.path) if data_cfg.path else ("dataset", data_cfg.name)
    return validity.arrays(data, key, where)


def load(data_cfg) -> Arrays:
    """Load the data set `data_cfg` (a DataConfig) describes, checked (harness.data.validity)."""
    data = DATASETS[data_cfg.source].load(data_cfg)
    _checked(data_cfg, data)
    return data


@functools.lru_cache(maxsize=None)
def _survey(data_cfg) -> tuple[tuple[int, ...] | None, tuple[int, ...] | None, str | None]:
    """(training samples per class, one sample's shape, a note on the inputs' scale), with the data checked;
    None where only a run can load the data."""
    spec = DATASETS[data_cfg.source]
    if spec.train_class_counts is not None:
        return spec.train_class_counts, spec.input_shape, None
    if spec.read is None:
        return (*spec.metadata(data_cfg), None) if spec.metadata else (None, None, None)
    data = spec.read(data_cfg)
    note = _checked(data_cfg, data)
    counts = tuple(int(n) for n in np.bincount(data.y_train, minlength=data.num_classes))
    return counts, tuple(int(n) for n in (spec.input_shape or data.input_shape)), note


def input_note(data_cfg) -> str | None:
    """What the command warns of and a run records about its inputs (their scale), or None."""
    return _survey(data_cfg)[2]


def train_class_counts(data_cfg) -> np.ndarray | None:
    """Training samples per class before any transform, without downloading or loading TensorFlow (None when
    only loading can tell, as for TFDS data)."""
    counts, _, _ = _survey(data_cfg)
    return None if counts is None else np.array(counts, dtype=np.int64)


def input_shape(data_cfg) -> tuple[int, ...] | None:
    """One sample's shape as the model sees it (None when only loading can tell)."""
    return _survey(data_cfg)[1]


def expected_train_size(data_cfg, imbalance: float = 0.0, train_fraction: float = 1.0,
                        tune_fraction: float = 0.0) -> int | None:
    """The run's training-set size, exactly: the class counts through the same arithmetic as the transforms
    (the tuning slice held out first)."""
    counts = train_class_counts(data_cfg)
    if counts is None:
        return None
    counts = counts - tune_counts(counts, tune_fraction)
    if train_fraction < 1.0:
        counts = fraction_counts(counts, train_fraction)
    if imbalance > 0.0:
        counts = imbalanced_counts(counts, imbalance)
    return int(counts.sum())
