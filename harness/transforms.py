"""Transforms of the training split: class imbalance and class-sorted (unshuffled) order.

Pure numpy. Validation data never passes through here.
"""
from __future__ import annotations

import numpy as np


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


def sort_by_class(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Class-sorted order (stable), so consecutive batches hold one class each, as with unshuffled data."""
    order = np.argsort(y, kind="stable")
    return x[order], y[order]


def apply(
    x: np.ndarray, y: np.ndarray, *, imbalance: float, shuffle: bool, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Apply the configured training-split transforms: imbalance first, then class sorting if unshuffled."""
    if imbalance > 0.0:
        x, y = make_imbalanced(x, y, imbalance, np.random.default_rng(seed))
    if not shuffle:
        x, y = sort_by_class(x, y)
    return x, y
