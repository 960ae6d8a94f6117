"""The arrays a data source hands a run (Arrays), and what a study does to them: a held-out tuning slice, a
fraction of the training split, class imbalance, class-sorted (unshuffled) order, and a deliberate
train/validation preprocessing mismatch. Pure numpy.

Only `mismatch_validation` touches validation data, and only when a mismatch is asked for; the tuning slice is
taken from the training split alone.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Arrays:
    x_train: np.ndarray          # samples, or image file paths when `decode` is set
    y_train: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray
    num_classes: int
    input_shape: tuple[int, ...] = ()      # one sample's shape, as the model sees it
    classes: list[str] | None = None       # label k's original name (user data); None: the labels are the names
    decode: tuple | None = None            # ("image", (height, width), color_mode): x holds paths, decoded per batch
    x_tune: np.ndarray | None = None       # the tuning slice held out of the training split (tune_fraction > 0)
    y_tune: np.ndarray | None = None


def imbalanced_counts(class_counts: np.ndarray, fraction: float, dominant: int = 0) -> np.ndarray:
    """How many samples of each class to keep so `dominant` is `fraction` of the kept set.

    The dominant class is kept whole and the others are subsampled evenly; when that is impossible (a fraction
    below the natural one), every other class keeps as many as the smallest of them and the dominant class is
    subsampled instead. Rounding makes the fraction exact to within one sample.
    """
    counts = np.asarray(class_counts, dtype=np.int64)
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"imbalance fraction must be in (0, 1), got {fraction}")
    others = [k for k in range(len(counts)) if k != dominant]
    keep = counts.copy()
    other_total = int(round(counts[dominant] * (1.0 - fraction) / fraction))
    per_other = spread_evenly(other_total, len(others))
    if np.all(per_other <= counts[others]):
        keep[others] = per_other
        return keep
    keep[others] = counts[others].min()
    keep[dominant] = int(round(keep[others].sum() * fraction / (1.0 - fraction)))
    return keep


def spread_evenly(total: int, parts: int) -> np.ndarray:
    base, extra = divmod(total, parts)
    return np.array([base + (i < extra) for i in range(parts)], dtype=np.int64)


def make_imbalanced(
    x: np.ndarray, y: np.ndarray, fraction: float, rng: np.random.Generator, dominant: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Subsample (x, y) so class `dominant` is `fraction` of it; which samples stay is drawn from `rng`."""
    num_classes = int(y.max()) + 1
    keep = imbalanced_counts(np.bincount(y, minlength=num_classes), fraction, dominant)
    chosen = [rng.permutation(np.flatnonzero(y == k))[: keep[k]] for k in range(num_classes)]
    index = np.sort(np.concatenate(chosen))
    return x[index], y[index]


def fraction_counts(class_counts: np.ndarray, fraction: float) -> np.ndarray:
    """How many of each class to keep for `fraction` of the data: the same fraction of every class."""
    return np.maximum(1, np.round(np.asarray(class_counts) * fraction)).astype(np.int64)


def take_fraction(
    x: np.ndarray, y: np.ndarray, fraction: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """A stratified subsample: `fraction` of every class (at least one sample each), drawn from `rng`."""
    num_classes = int(y.max()) + 1
    keep = fraction_counts(np.bincount(y, minlength=num_classes), fraction)
    chosen = [rng.permutation(np.flatnonzero(y == k))[: keep[k]] for k in range(num_classes)]
    index = np.sort(np.concatenate(chosen))
    return x[index], y[index]


TUNE_SEED = 20190101  # the tuning slice's own seed: the same samples held out for every run, whatever its seed


def tune_counts(class_counts: np.ndarray, fraction: float) -> np.ndarray:
    """How many of each class the tuning slice holds: `fraction` of every class, rounded (0 for fraction 0)."""
    return np.round(np.asarray(class_counts, dtype=np.int64) * fraction).astype(np.int64)


def hold_out(x: np.ndarray, y: np.ndarray, fraction: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(x_train, y_train, x_tune, y_tune): a stratified slice of `fraction` of every class, drawn with TUNE_SEED,
    removed from the training split. The two parts partition (x, y): no sample is in both, none is lost."""
    num_classes = int(y.max()) + 1
    keep = tune_counts(np.bincount(y, minlength=num_classes), fraction)
    if not keep.any():
        raise ValueError(f"tune_fraction={fraction} holds out no sample of {len(y)}: use 0, or a larger fraction")
    rng = np.random.default_rng(TUNE_SEED)
    tune = np.zeros(len(y), dtype=bool)
    for k in range(num_classes):
        tune[rng.permutation(np.flatnonzero(y == k))[: keep[k]]] = True
    return x[~tune], y[~tune], x[tune], y[tune]


def mismatch_function(mismatch: str, train_std: float | None = None):
    """Validation preprocessed differently from training, as in the seed note's list of causes: a function of
    the validation inputs (arrays or tensors), or None for no mismatch.

    unscaled: validation is 255x the training scale (a pipeline that divides the training images by 255 and
    forgets the validation ones); shifted: validation is offset by one standard deviation of the training data.
    """
    if mismatch == "none":
        return None
    if mismatch == "unscaled":
        return lambda x: x * np.float32(255.0)
    if mismatch == "shifted":
        return lambda x: x + np.float32(train_std)
    raise ValueError(f"unknown preprocess mismatch {mismatch!r}")


def mismatch_validation(x_val: np.ndarray, x_train: np.ndarray, mismatch: str) -> np.ndarray:
    """`mismatch_function` applied to validation arrays, with the training data's standard deviation."""
    function = mismatch_function(mismatch, float(x_train.std()) if mismatch == "shifted" else None)
    return x_val if function is None else function(x_val)


def sort_by_class(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Class-sorted order (stable), so consecutive batches hold one class each, as with unshuffled data."""
    order = np.argsort(y, kind="stable")
    return x[order], y[order]


def apply(
    x: np.ndarray, y: np.ndarray, *, imbalance: float, shuffle: bool, seed: int, train_fraction: float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """The configured training-split transforms: fraction, then imbalance, then class sorting if unshuffled."""
    rng = np.random.default_rng(seed)
    if train_fraction < 1.0:
        x, y = take_fraction(x, y, train_fraction, rng)
    if imbalance > 0.0:
        x, y = make_imbalanced(x, y, imbalance, rng)
    if not shuffle:
        x, y = sort_by_class(x, y)
    return x, y
