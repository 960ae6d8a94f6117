"""`dataset=tfds dataset.name=NAME`: a data set from tensorflow-datasets' catalogue, read from its local cache.

The harness never downloads at run time: with the data set missing from the cache (offline, empty cache) the
run is recorded failed with a message saying how to get the files, as for the Keras data sets. The splits are
loaded into memory (as_supervised: image or features, label), so every transform works as on built-in data.

Before anything runs, the command checks a prepared data set from the files TFDS wrote beside its shards
(dataset_info.json, features.json: JSON, so no TensorFlow in the command): the splits exist and hold examples,
every shard file is there, the data is supervised, the labels are one class per example with at least two
classes, and the inputs are numbers of one fixed shape. Values (finite, classes present in both splits) need the
records decoded, so a run checks those once it has loaded them (harness.data.validity), as for every source.
"""
from __future__ import annotations

import glob
import json
import os
import re

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


def _info_dir(data_cfg) -> str | None:
    """The folder of the prepared data set `dataset.name` (`name`, `name/config`, `name:version`) names: the
    given version, else the highest one prepared; None if none is."""
    name, _, version = data_cfg.name.partition(":")
    root = os.path.join(_data_dir(data_cfg), *name.split("/"))
    found = [os.path.dirname(f) for f in glob.glob(os.path.join(root, version or "*", "dataset_info.json"))]
    numeric = lambda folder: tuple(int(p) for p in re.findall(r"\d+", os.path.basename(folder)))  # noqa: E731
    return max(found, key=numeric) if found else None


def _split_names(expression: str) -> list[str]:
    """The splits a TFDS split expression reads: `train`, `train[:80%]`, `train+test`."""
    return [part.split("[")[0].strip() for part in expression.split("+")]


def _feature(features: dict, key: str) -> tuple[str, dict]:
    """(kind, its description) of feature `key` in features.json: kind is classLabel, image, tensor, ..."""
    spec = features.get("featuresDict", {}).get("features", {}).get(key, {})
    kinds = [k for k in spec if k not in ("pythonClassName", "description", "docUrls", "valueRange")]
    return (kinds[0], spec[kinds[0]]) if kinds else ("", {})


def metadata(data_cfg) -> tuple[None, tuple[int, ...] | None]:
    """(None: class counts need the records, one sample's shape or None) from a prepared data set's files, the
    checks above made; (None, None) when the data set is not prepared here (the run then says how to get it)."""
    folder = _info_dir(data_cfg)
    if folder is None:
        return None, None
    info_path = os.path.join(folder, "dataset_info.json")
    try:
        with open(info_path) as f:
            info = json.load(f)
        with open(os.path.join(folder, "features.json")) as f:
            features = json.load(f)
    except (OSError, ValueError) as err:
        raise ConfigError("dataset.name", data_cfg.name, f"a prepared TFDS data set; {folder} has no readable "
                          f"dataset_info.json and features.json ({type(err).__name__}: {err})") from None
    splits = {s["name"]: s for s in info.get("splits", [])}
    for key in ("train_split_name", "val_split_name"):
        for split in _split_names(getattr(data_cfg, key)):
            if split not in splits:
                raise ConfigError(f"dataset.{key}", split, f"a split of {info_path}: {', '.join(splits) or 'none'}")
            lengths = [int(n) for n in splits[split].get("shardLengths", [])]
            if not sum(lengths):
                raise ConfigError(f"dataset.{key}", split, f"a split with examples; {info_path} lists none in it")
            shards = glob.glob(os.path.join(folder, f"{info.get('name', '*')}-{split}.*-of-*"))
            if len(shards) < len(lengths):
                raise ConfigError(f"dataset.{key}", split, f"a split whose {len(lengths)} shard file(s) are all "
                                  f"in {folder}; {len(shards)} found (copy the whole folder)")
    keys = [item.get("featureKey") for item in info.get("supervisedKeys", {}).get("tuple", {}).get("items", [])]
    if len(keys) != 2:
        raise ConfigError("dataset.name", data_cfg.name, f"a supervised data set (input, label); {info_path} "
                          "declares no supervised keys")
    kind, label = _feature(features, keys[1])
    if kind == "classLabel" and int(label.get("numClasses", 0)) < 2:
        raise ConfigError("dataset.name", data_cfg.name, f"labels of at least two classes; {info_path}'s label "
                          f"{keys[1]!r} has {int(label.get('numClasses', 0))} class(es)")
    if kind == "tensor" and label.get("shape", {}).get("dimensions"):
        raise ConfigError("dataset.name", data_cfg.name, f"labels with one value per sample; label {keys[1]!r} "
                          f"has shape {tuple(int(d) for d in label['shape']['dimensions'])}")
    kind, inputs = _feature(features, keys[0])
    if kind not in ("image", "tensor") or inputs.get("dtype") in ("string", "bool"):
        raise ConfigError("dataset.name", data_cfg.name, f"numeric inputs (an image or a tensor); input "
                          f"{keys[0]!r} is {kind or 'unknown'} of {inputs.get('dtype', 'unknown')} values")
    shape = tuple(int(d) for d in inputs.get("shape", {}).get("dimensions", []))
    if any(d < 0 for d in shape):
        raise ConfigError("dataset.name", data_cfg.name, f"inputs of one fixed shape (a batch stacks them); input "
                          f"{keys[0]!r} has shape {tuple(d if d >= 0 else None for d in shape)}")
    return None, shape or None


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
