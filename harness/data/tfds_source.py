"""`dataset=tfds dataset.name=NAME`: a data set from tensorflow-datasets' catalogue, read from its local cache.

The harness never downloads at run time: with the data set missing from the cache (offline, empty cache) the
run is recorded failed with a message saying how to get the files, as for the Keras data sets. The splits are
loaded into memory (as_supervised: image or features, label), so every transform works as on built-in data.
"""
from __future__ import annotations

import os

import numpy as np

from harness.data.builtin import DataUnavailable
from harness.data.transforms import Arrays
from harness.fields import ConfigError


def validate(cfg: dict) -> dict:
    name = cfg.get("name")
    if not isinstance(name, str) or not name or name == "tfds":
        raise ConfigError("dataset.name", name, "the name of a TFDS data set, e.g. dataset.name=mnist")
    values = {}
    for key in ("train_split_name", "val_split_name"):
        if not isinstance(cfg.get(key), str) or not cfg[key]:
            raise ConfigError(f"dataset.{key}", cfg.get(key), "the name of a split of the data set, e.g. train or test")
        values[key] = cfg[key]
    data_dir = cfg.get("data_dir")
    if data_dir is not None and not isinstance(data_dir, str):
        raise ConfigError("dataset.data_dir", data_dir, "null (TFDS's default folder) or a folder")
    return {**values, "data_dir": data_dir}


def _arrays(examples) -> tuple[np.ndarray, np.ndarray]:
    """(inputs, labels) stacked from a split's (input, label) examples."""
    pairs = list(examples)
    if not pairs:
        raise ValueError("the split holds no examples")
    return np.stack([x for x, _ in pairs]), np.array([y for _, y in pairs])


def _data_dir(data_cfg) -> str:
    return data_cfg.data_dir or os.environ.get("TFDS_DATA_DIR", os.path.expanduser("~/tensorflow_datasets"))


def load(data_cfg) -> Arrays:
    import tensorflow_datasets as tfds

    from harness.data.sources import encode_labels

    splits = [data_cfg.train_split_name, data_cfg.val_split_name]
    try:
        builder = tfds.builder(data_cfg.name, data_dir=data_cfg.data_dir)
        train, val = (_arrays(tfds.as_numpy(builder.as_dataset(split=split, as_supervised=True))) for split in splits)
    except Exception as err:  # not in the catalogue, not prepared here, or a split it does not have
        reason = " ".join(str(err).split())[:300]
        raise DataUnavailable(
            f"dataset.name={data_cfg.name} (splits {', '.join(splits)}) could not be read from the TFDS cache "
            f"{_data_dir(data_cfg)} ({type(err).__name__}: {reason}); run `python -c \"import tensorflow_datasets as "
            f"tfds; tfds.load('{data_cfg.name}')\"` on a machine with internet access and copy its folder here, or "
            "use dataset=mnist1d"
        ) from err
    (x_train, y_train), (x_val, y_val) = train, val
    (y_train, y_val), classes = encode_labels(y_train, y_val)
    scale = 255.0 if np.issubdtype(x_train.dtype, np.integer) else 1.0  # images as bytes: to [0, 1]
    x_train, x_val = (np.asarray(x, dtype=np.float32) / scale for x in (x_train, x_val))
    return Arrays(x_train, y_train, x_val, y_val, len(classes), input_shape=x_train.shape[1:], classes=classes)
