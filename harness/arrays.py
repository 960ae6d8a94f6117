"""What a data source hands a run: training and validation samples with integer labels 0..K-1."""
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
