"""What any data must be before a run trains on it, checked on what a source reads or returns, so a new source
gets the checks for free. Every refusal is one ConfigError line naming the file, the array or column, what was
found and what is allowed; the command exits 2 before anything runs, and a run started on its own refuses the
same way. Pure numpy: no backend.

- labels: one value per sample; integers, strings, or floats that are whole numbers (0.0, 1.0, ...);
- x and y of each split the same length; at least two classes in training; a validation split that is not empty,
  every class of it in training;
- training and validation samples of one shape; every input value finite (checked in chunks);
- inputs whose largest magnitude exceeds SCALE_LIMIT are allowed, with a note (the run may diverge).
"""
from __future__ import annotations

import numpy as np

from harness.fields import ConfigError

SCALE_LIMIT = 1e6       # a feature larger than this usually means unscaled or corrupt data
CHUNK = 1 << 20         # values per chunk of the finite check: memory stays bounded for a large array


def label_values(labels: np.ndarray, key: str, where: str, array: str) -> np.ndarray:
    """A label array as one value per sample: a column (n, 1) flattened, whole-number floats as integers;
    one-hot or multi-column labels and fractional floats refused."""
    labels = np.asarray(labels)
    if labels.ndim == 2 and labels.shape[1] == 1:
        labels = labels[:, 0]
    if labels.ndim != 1:
        hint = "; one-hot labels? use y.argmax(axis=1)" if labels.ndim == 2 else ""
        raise ConfigError(key, where, f"labels with one value per sample; {array} has shape {labels.shape}{hint}")
    if labels.dtype.kind == "f":
        finite = np.isfinite(labels)
        if not finite.all():
            raise ConfigError(key, where, f"finite labels; {array} has {int((~finite).sum())} NaN or infinite "
                              f"value(s), the first in sample {int(np.flatnonzero(~finite)[0])}")
        whole = labels == np.round(labels)
        if not whole.all():
            first = int(np.flatnonzero(~whole)[0])
            raise ConfigError(key, where, f"integer, string or whole-number labels; {array} has "
                              f"{int((~whole).sum())} fractional value(s), e.g. {float(labels[first])} in sample "
                              f"{first}")
        return labels.astype(np.int64)
    return labels


def same_length(x_len: int, y_len: int, key: str, where: str, names: tuple[str, str]) -> None:
    if x_len != y_len:
        raise ConfigError(key, where, f"{names[0]} and {names[1]} of the same length (one label per sample); "
                          f"{names[0]} has {x_len} samples, {names[1]} {y_len}")


def finite(x: np.ndarray, key: str, where: str, array: str) -> float:
    """Raises on a NaN or infinite value; returns the largest magnitude."""
    x = np.asarray(x)
    if x.dtype.kind in "iub":
        return float(np.abs(x.astype(np.float64)).max()) if x.size else 0.0
    if x.dtype.kind != "f":
        raise ConfigError(key, where, f"numeric input values; {array} holds {x.dtype} values")
    flat = x.reshape(-1)
    largest = 0.0
    per_sample = max(1, flat.size // max(1, len(x)))
    for start in range(0, flat.size, CHUNK):
        chunk = flat[start:start + CHUNK]
        bad = ~np.isfinite(chunk)
        if bad.any():
            nan, inf = int(np.isnan(flat).sum()), int(np.isinf(flat).sum())
            first = (start + int(np.flatnonzero(bad)[0])) // per_sample
            raise ConfigError(key, where, f"finite input values; {array} has {nan} NaN and {inf} infinite "
                              f"value(s), the first in sample {first}")
        if chunk.size:
            largest = max(largest, float(np.abs(chunk).max()))
    return largest


def arrays(data, key: str, where: str) -> str | None:
    """The checks on what a loader returns (an Arrays); a note on the inputs' scale, or None. Samples that are
    files (image paths, decoded per batch) are checked for classes and lengths; their values decode finite."""
    for split in ("train", "val"):
        same_length(len(getattr(data, f"x_{split}")), len(getattr(data, f"y_{split}")), key, where,
                    (f"x_{split}", f"y_{split}"))
    classes = data.classes or [str(k) for k in range(data.num_classes)]
    trained = np.unique(data.y_train)
    if len(trained) < 2:
        only = classes[int(trained[0])] if len(trained) else "none"
        raise ConfigError(key, where, f"training labels of at least two classes; every training label is {only}")
    if len(data.y_val) == 0:
        raise ConfigError(key, where, "a validation split of at least one sample (every result is a validation "
                          "accuracy); the validation split is empty")
    unseen = np.setdiff1d(np.unique(data.y_val), trained)
    if len(unseen):
        count = int(np.isin(data.y_val, unseen).sum())
        raise ConfigError(key, where, f"validation classes that training also has; class "
                          f"{classes[int(unseen[0])]} is in {count} validation sample(s) and no training sample")
    if data.decode is not None:
        return None
    if data.x_train.shape[1:] != data.x_val.shape[1:]:
        raise ConfigError(key, where, f"training and validation samples of one shape; x_train's are "
                          f"{data.x_train.shape[1:]}, x_val's {data.x_val.shape[1:]}")
    largest = max(finite(np.asarray(data.x_train), key, where, "x_train"),
                  finite(np.asarray(data.x_val), key, where, "x_val"))
    if largest > SCALE_LIMIT:
        return (f"{key}={where!r}: the inputs' largest magnitude is {largest:.3g} (over {SCALE_LIMIT:.0e}): "
                "unscaled inputs often make a run diverge as a too-high learning rate would; scale them (e.g. to "
                "[0, 1]) if it does")
    return None
