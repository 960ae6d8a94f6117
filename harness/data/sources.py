"""The user's own data: an .npz file or a table (.csv / .parquet); a folder of images is in harness.data.images.

Each source has two functions the data registry (harness.data.registry) calls: `validate` (raw config -> typed
values, one-line ConfigError) and `load` (the arrays a run trains on, without TensorFlow, so the command checks
them too). Labels may be integers, strings or whole-number floats (harness.data.validity); they become 0..K-1 in
sorted order.
"""
from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

from harness.data import validity
from harness.data.transforms import Arrays
from harness.fields import ConfigError, float_value, int_value

NPZ_ARRAYS = (("x_train", "y_train", "x_val", "y_val"), ("x", "y"))
TABLE_SUFFIXES = (".csv", ".parquet")


def path_value(cfg: dict, key: str, kind: str, required: bool = True) -> str | None:
    value = cfg.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value:
        raise ConfigError(f"dataset.{key}", value, f"the path of {kind}")
    path = Path(value).expanduser()
    if not path.exists():
        raise ConfigError(f"dataset.{key}", value, f"the path of an existing {kind} (nothing is there)")
    if (kind == "folder") != path.is_dir():
        raise ConfigError(f"dataset.{key}", value, f"the path of {'a folder' if kind == 'folder' else kind}")
    return str(path.resolve())


def val_fraction(cfg: dict) -> float:
    fraction = float_value(cfg, "val_fraction", name="dataset.val_fraction")
    if not 0.0 < fraction < 1.0:
        raise ConfigError("dataset.val_fraction", fraction, "a number in (0, 1)")
    return fraction


def split_indices(labels: np.ndarray, val_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A stratified, seeded split: round(val_fraction x n) of every class (at least one when it has two) go to
    validation; both index arrays sorted."""
    rng = np.random.default_rng(seed)
    train, val = [], []
    for k in np.unique(labels):
        members = rng.permutation(np.flatnonzero(labels == k))
        n_val = min(len(members) - 1, max(1, int(round(len(members) * val_fraction)))) if len(members) > 1 else 0
        val.append(members[:n_val])
        train.append(members[n_val:])
    return np.sort(np.concatenate(train)), np.sort(np.concatenate(val))


def encode_labels(*label_arrays: np.ndarray) -> tuple[list[np.ndarray], list[str]]:
    """Labels of any sortable kind -> 0..K-1 in sorted order of the values; also the class names."""
    classes = np.unique(np.concatenate([np.asarray(a).reshape(-1) for a in label_arrays]))
    return [np.searchsorted(classes, np.asarray(a).reshape(-1)).astype(np.int64) for a in label_arrays], \
        [str(c) for c in classes]


# ---- npz: x_train, y_train, x_val, y_val, or x, y split by val_fraction ----

def validate_npz(cfg: dict) -> dict:
    path = path_value(cfg, "path", "an .npz file")
    try:
        with zipfile.ZipFile(path) as archive:
            names = {Path(n).stem for n in archive.namelist()}
    except zipfile.BadZipFile:
        raise ConfigError("dataset.path", cfg["path"], "an .npz file (np.savez); this one is not a zip archive") from None
    if not any(set(arrays) <= names for arrays in NPZ_ARRAYS):
        raise ConfigError("dataset.path", cfg["path"], "an .npz holding arrays x_train, y_train, x_val, y_val (or x, "
                          f"y, split by dataset.val_fraction); it holds {', '.join(sorted(names)) or 'nothing'}")
    return {"path": path, "val_fraction": val_fraction(cfg), "data_seed": int_value(cfg, "data_seed",
                                                                                      name="dataset.data_seed")}


def _npz_labels(data_cfg) -> tuple[np.ndarray, np.ndarray, list[str], np.ndarray | None, np.ndarray | None]:
    """(y_train, y_val, classes, train rows, val rows); the rows index x, y when the file needs splitting."""
    where = data_cfg.path
    with np.load(where, allow_pickle=False) as arrays:
        pairs = (("x_train", "y_train"), ("x_val", "y_val")) if "x_train" in arrays.files else (("x", "y"),)
        labels = []
        for x_name, y_name in pairs:
            y = validity.label_values(arrays[y_name], "dataset.path", where, y_name)
            validity.same_length(_array_shape(where, x_name)[0], len(y), "dataset.path", where, (x_name, y_name))
            labels.append(y)
    encoded, classes = encode_labels(*labels)
    if len(encoded) == 2:
        return encoded[0], encoded[1], classes, None, None
    train_idx, val_idx = split_indices(encoded[0], data_cfg.val_fraction, data_cfg.data_seed)
    return encoded[0][train_idx], encoded[0][val_idx], classes, train_idx, val_idx


def _with_channel(x: np.ndarray) -> np.ndarray:
    """Samples that are flat vectors (or scalars) get a channel axis, (n, F) -> (n, F, 1), as MNIST-1D has: the
    convnet reads them as 1-D sequences, and MirroredStrategy splits an uneven last batch of them correctly."""
    return x.reshape(len(x), int(np.prod(x.shape[1:])), 1) if x.ndim <= 2 else x  # an empty split too


def _array_shape(path: str, name: str) -> tuple[int, ...]:
    """An array's shape from its header in the .npz, without reading the array."""
    with zipfile.ZipFile(path) as archive:
        with archive.open(f"{name}.npy") as f:
            version = np.lib.format.read_magic(f)
            readers = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
            if version in readers:
                return tuple(readers[version](f)[0])
    with np.load(path, allow_pickle=False) as arrays:  # a newer header format: read the array itself
        return tuple(arrays[name].shape)


def _npz_shape(path: str) -> tuple[int, ...]:
    """A sample's shape as the model sees it, from the header of x_train (or x)."""
    with zipfile.ZipFile(path) as archive:
        name = "x_train" if "x_train.npy" in archive.namelist() else "x"
    shape = _array_shape(path, name)
    return (*shape[1:], 1) if len(shape) <= 2 else tuple(shape[1:])


def load_npz(data_cfg):
    y_train, y_val, classes, train_idx, val_idx = _npz_labels(data_cfg)
    with np.load(data_cfg.path, allow_pickle=False) as arrays:
        raw = {name: arrays[name] for name in (("x_train", "x_val") if train_idx is None else ("x",))}
    for name, x in raw.items():  # before any split, so a bad value is named by its sample in the file
        validity.finite(x, "dataset.path", data_cfg.path, name)
    x_train, x_val = (raw["x_train"], raw["x_val"]) if train_idx is None else (raw["x"][train_idx], raw["x"][val_idx])
    as_samples = lambda x: _with_channel(np.asarray(x, dtype=np.float32))  # noqa: E731
    return Arrays(as_samples(x_train), y_train, as_samples(x_val), y_val, len(classes), classes=classes,
                  input_shape=_npz_shape(data_cfg.path))


# ---- table: .csv or .parquet, one label column, every other column a numeric feature ----

def validate_table(cfg: dict) -> dict:
    path = path_value(cfg, "path", "a .csv or .parquet file")
    if Path(path).suffix.lower() not in TABLE_SUFFIXES:
        raise ConfigError("dataset.path", cfg["path"], "a .csv or .parquet file")
    label = cfg.get("label")
    if not isinstance(label, str) or not label:
        raise ConfigError("dataset.label", label, "the name of the table's label column")
    values = {"path": path, "label": label, "val_fraction": val_fraction(cfg),
              "data_seed": int_value(cfg, "data_seed", name="dataset.data_seed")}
    _read_table(values["path"], label)
    return values


def _read_table(path: str, label: str):
    import pandas as pd

    table = pd.read_parquet(path) if path.lower().endswith(".parquet") else pd.read_csv(path)
    if label not in table.columns:
        raise ConfigError("dataset.label", label, f"a column of {Path(path).name} ({', '.join(map(str, table.columns))})")
    features = table.drop(columns=[label])
    for column in features.columns:
        if not pd.api.types.is_numeric_dtype(features[column]) or pd.api.types.is_bool_dtype(features[column]):
            raise ConfigError("dataset.path", path, f"a table whose feature columns are all numeric; column "
                              f"'{column}' is {features[column].dtype} (encode it, or drop it)")
        if features[column].isna().any():
            raise ConfigError("dataset.path", path, f"a table without missing values; column '{column}' has some")
        infinite = int(np.isinf(features[column].to_numpy(np.float64)).sum())
        if infinite:
            raise ConfigError("dataset.path", path, f"a table of finite values; column '{column}' has {infinite} "
                              "infinite value(s)")
    if len(features.columns) == 0:
        raise ConfigError("dataset.path", path, f"a table with feature columns besides '{label}'")
    return features.to_numpy(np.float32), table[label].to_numpy()


def _table_split(data_cfg):
    x, raw_labels = _read_table(data_cfg.path, data_cfg.label)
    labels = validity.label_values(raw_labels, "dataset.label", data_cfg.label, f"column '{data_cfg.label}'")
    (y,), classes = encode_labels(labels)
    train_idx, val_idx = split_indices(y, data_cfg.val_fraction, data_cfg.data_seed)
    return x, y, train_idx, val_idx, classes


def load_table(data_cfg):
    x, y, train_idx, val_idx, classes = _table_split(data_cfg)
    x = _with_channel(x)
    return Arrays(x[train_idx], y[train_idx], x[val_idx], y[val_idx], len(classes), classes=classes,
                  input_shape=x.shape[1:])
