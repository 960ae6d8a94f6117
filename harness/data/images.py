"""`dataset=images`: one sub-folder per class, as keras.utils.image_dataset_from_directory reads it.

Images stay on disk: a run's x holds file paths, decoded per batch by its input pipeline (harness.data.pipelines), so a
folder larger than memory trains, and the run's transforms (imbalance, train_fraction, class order) act on the
list of files and labels. Counting files per class needs no decoding, so validation checks a batch size
against the training set without reading an image.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from harness.data.sources import path_value, split_indices, val_fraction
from harness.data.transforms import Arrays
from harness.fields import ConfigError, choice, int_value

IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".bmp", ".gif")  # what tf.io.decode_image reads


def validate(cfg: dict) -> dict:
    size = cfg.get("image_size")
    if not (isinstance(size, (list, tuple)) and len(size) == 2
            and all(isinstance(s, int) and not isinstance(s, bool) and s >= 1 for s in size)):
        raise ConfigError("dataset.image_size", size, "[height, width] in pixels, e.g. [32, 32]")
    values = {
        "path": path_value(cfg, "path", "folder"), "val_path": path_value(cfg, "val_path", "folder", required=False),
        "val_fraction": val_fraction(cfg), "image_size": tuple(size),
        "color_mode": choice({"dataset.color_mode": cfg.get("color_mode")}, "dataset.color_mode", ("rgb", "grayscale")),
        "data_seed": int_value(cfg, "data_seed", name="dataset.data_seed"),
    }
    class_files(values["path"], "dataset.path")  # two or more classes with images, or a one-line error
    if values["val_path"] is not None:
        class_files(values["val_path"], "dataset.val_path")
    return values


def class_files(folder: str, key: str) -> dict[str, list[str]]:
    """Class name -> its image files (sorted), for every sub-folder that holds at least one image."""
    classes = {}
    for sub in sorted(p for p in Path(folder).iterdir() if p.is_dir()):
        images = sorted(str(f) for f in sub.rglob("*") if f.suffix.lower() in IMAGE_EXTENSIONS and f.is_file())
        if images:
            classes[sub.name] = images
    if len(classes) < 2:
        raise ConfigError(key, folder, f"a folder with one sub-folder of images per class, at least two classes "
                          f"(found {len(classes)} with {', '.join(IMAGE_EXTENSIONS)} files)")
    return classes


def _image_lists(data_cfg) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[str]]:
    train = class_files(data_cfg.path, "dataset.path")
    names = list(train)
    files = np.array([f for name in names for f in train[name]])
    labels = np.concatenate([np.full(len(train[name]), k, dtype=np.int64) for k, name in enumerate(names)])
    if data_cfg.val_path is None:
        train_idx, val_idx = split_indices(labels, data_cfg.val_fraction, data_cfg.data_seed)
        return files[train_idx], labels[train_idx], files[val_idx], labels[val_idx], names
    val = class_files(data_cfg.val_path, "dataset.val_path")
    unknown = sorted(set(val) - set(names))
    if unknown:
        raise ConfigError("dataset.val_path", data_cfg.val_path, f"class folders that the training folder also has "
                          f"({', '.join(unknown)} is not among {', '.join(names)})")
    val_files = np.array([f for name in names for f in val.get(name, [])])
    val_labels = np.concatenate([np.full(len(val.get(name, [])), k, dtype=np.int64) for k, name in enumerate(names)])
    return files, labels, val_files, val_labels, names


def _image_shape(data_cfg) -> tuple[int, int, int]:
    return (*data_cfg.image_size, 3 if data_cfg.color_mode == "rgb" else 1)


def listed(data_cfg) -> Arrays:
    """The folder's images as a run reads them (paths, decoded per batch), without opening a file."""
    x_train, y_train, x_val, y_val, names = _image_lists(data_cfg)
    return Arrays(x_train, y_train, x_val, y_val, len(names), classes=names, input_shape=_image_shape(data_cfg),
                  decode=("image", data_cfg.image_size, data_cfg.color_mode))


def load(data_cfg):
    arrays = listed(data_cfg)
    check_images(np.concatenate([arrays.x_train, arrays.x_val]))
    return arrays


class CorruptImage(ValueError):
    """An image file that cannot be read; the message names it."""


def check_images(paths: np.ndarray) -> None:
    """Fail before training on the first file that is not a readable image, naming it (Pillow reads the header
    and checks the file's structure without decoding every pixel)."""
    from PIL import Image, UnidentifiedImageError

    for path in paths:
        try:
            with Image.open(path) as image:
                image.verify()  # reads a PNG's chunks and checksums; for a JPEG only its header
            if str(path).lower().endswith((".jpg", ".jpeg")) and not _jpeg_complete(path):
                raise OSError("the JPEG data ends before its end-of-image marker (truncated)")
        except (OSError, UnidentifiedImageError, SyntaxError, ValueError) as err:
            raise CorruptImage(f"{path} is not a readable image ({type(err).__name__}: {err}); remove or replace "
                               "it") from None


def _jpeg_complete(path: str) -> bool:
    """A JPEG ends with the end-of-image marker FF D9 (give or take trailing padding): a cheap check for a file
    cut short, which Pillow's verify() does not read far enough to see."""
    with open(path, "rb") as f:
        f.seek(0, 2)
        f.seek(max(0, f.tell() - 1024))
        return b"\xff\xd9" in f.read()
