"""A user's own data written for a test: an .npz file, a folder of images."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from harness.data import sources

COLOURS = {"blue": (20, 40, 230), "green": (30, 220, 40), "red": (235, 30, 25)}


def write_npz(path, labels, features=4, seed=0, **extra):
    """An .npz of x, y: each class a cluster of `features` features around its own centre, so it is learnable."""
    labels = np.asarray(labels)
    codes = np.unique(labels, return_inverse=True)[1].reshape(-1)
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 3, (codes.max() + 1, features))
    x = (centres[codes] + rng.normal(0, 0.3, (len(labels), features))).astype(np.float32)
    np.savez(path, x=x, y=labels, **extra)
    return x


def write_images(root: Path, per_class=30, size=(36, 36), colours=None, suffix=".png", seed=0) -> dict[str, int]:
    """One sub-folder per class of noisy solid-colour images (learnable in an epoch or two); class -> count."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    counts = {}
    for name, colour in (colours or COLOURS).items():
        folder = root / name
        folder.mkdir(parents=True, exist_ok=True)
        n = per_class[name] if isinstance(per_class, dict) else per_class
        for i in range(n):
            pixels = np.clip(np.array(colour) + rng.normal(0, 25, (*size, 3)), 0, 255).astype(np.uint8)
            Image.fromarray(pixels).save(folder / f"{name}_{i:03d}{suffix}")
        counts[name] = n
    return counts


def write_digits(root: Path, per_class=30, size=(32, 32)) -> dict[str, int]:
    """scikit-learn's bundled 8 x 8 digits as an image folder, resized to `size` (keras.applications models take
    32 x 32 and up): one sub-folder per digit, the first `per_class` images of each; class -> count."""
    from PIL import Image
    from sklearn.datasets import load_digits

    digits = load_digits()
    counts = {}
    for label in range(10):
        folder = root / f"digit_{label}"
        folder.mkdir(parents=True, exist_ok=True)
        images = digits.images[digits.target == label][:per_class]
        for i, image in enumerate(images):
            grey = Image.fromarray((image * (255 / 16)).astype(np.uint8)).resize(size[::-1], Image.BILINEAR)
            grey.convert("RGB").save(folder / f"{label}_{i:03d}.png")
        counts[folder.name] = len(images)
    return counts


def expected_train_size(counts: dict[str, int], val_fraction=0.2, seed=42) -> int:
    """The training-set size, from the class counts alone, through the split the data set uses."""
    labels = np.repeat(np.arange(len(counts)), [counts[k] for k in sorted(counts)])
    return len(sources.split_indices(labels, val_fraction, seed)[0])
