"""A diagnosis's data checks (harness.studies.diagnose.data_checks), run once, in the first job's run process, before it trains:
on the arrays as that run feeds them to the model, after the harness's transforms (the tuning slice held out, a
fraction, class imbalance, class-sorted order), with a deliberate preprocessing mismatch applied to validation as
the run applies it. Image files are checked on a fixed downsampled grayscale copy. The checks go to the run's
data_checks.json; a check that raises is recorded there and never fails the run."""
from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np

from harness.config.schema import RunConfig
from harness.data.batches import epoch_order
from harness.data.decode import decoder
from harness.data.transforms import Arrays
from harness.run.inputs import validation_transform
from harness.store import files
from harness.studies.diagnose.files import DATA_CHECKS_FILE
from harness.studies.diagnose.settings import Settings

log = logging.getLogger(__name__)
GRID = 16         # image files: each image as a grayscale copy of at most GRID x GRID block means
DECODE_BATCH = 256


def check_once(cfg: RunConfig, data_in: Arrays, run_dir: Path, settings: Settings) -> None:
    """Write the checks to data_checks.json, unless an earlier attempt of this run did."""
    path = Path(run_dir) / DATA_CHECKS_FILE
    if path.exists():
        return
    started, error, found = time.perf_counter(), None, []
    try:
        found = [check.as_dict() for check in run_checks(cfg, data_in, settings)]
    except Exception as err:  # a check that cannot run says why in the report; the run trains all the same
        error = f"{type(err).__name__}: {err}"
        log.warning("the data checks failed: %s", error)
    files.write_json(path, {"checks": found, "error": error, "seconds": round(time.perf_counter() - started, 3),
                            "train_samples": len(data_in.y_train), "val_samples": len(data_in.y_val)})


def run_checks(cfg: RunConfig, data_in: Arrays, settings: Settings) -> list:
    """label_shift, order and feature_shift on this run's data (harness.studies.diagnose.data_checks.Check each; capacity needs
    the small batch's runs: assess). scikit-learn loads here, in the one run that checks, not in every run."""
    from harness.studies.diagnose import data_checks

    labels = data_checks.label_shift(data_in.y_train, data_in.y_val, data_in.num_classes, classes=data_in.classes,
                                  threshold=settings.label_shift, p_value=settings.label_shift_p)
    train = cfg.train
    fed = data_in.y_train[epoch_order(len(data_in.y_train), train.shuffle, train.seed, 0)]
    order = data_checks.order(fed, train.shuffle, threshold=settings.order)
    x_train, y_train, x_val, y_val, names = _inputs(cfg, data_in, settings.max_samples)
    shift = data_checks.feature_shift(x_train, y_train, x_val, y_val, threshold=settings.feature_shift,
                                   max_samples=settings.max_samples, seed=train.seed, feature_names=names)
    return [labels, order, shift]


def _inputs(cfg: RunConfig, data_in: Arrays, max_samples: int):
    """(x_train, y_train, x_val, y_val, feature names or None) as the model is fed them; image files decoded."""
    mismatch = validation_transform(cfg, data_in)
    if data_in.decode is None:
        x_val = data_in.x_val if mismatch is None else np.asarray(mismatch(data_in.x_val))
        return data_in.x_train, data_in.y_train, x_val, data_in.y_val, None
    # files: choose the samples first (by path, so the choice depends on the files, not their order), then decode
    train = _chosen(data_in.x_train, max_samples)
    val = _chosen(data_in.x_val, max_samples)
    x_train = _small_gray(data_in.x_train[train], decoder(data_in.decode))
    x_val = _small_gray(data_in.x_val[val], decoder(data_in.decode, mismatch))
    side = x_train.shape[1:]
    names = [f"pixel ({r}, {c}) of {side[0]}x{side[1]}" for r in range(side[0]) for c in range(side[1])]
    return x_train, data_in.y_train[train], x_val, data_in.y_val[val], names


def _chosen(paths: np.ndarray, limit: int) -> np.ndarray:
    order = np.argsort(paths.astype(str), kind="stable")
    return np.sort(np.random.default_rng(0).permutation(order)[:limit]) if len(order) > limit else order


def _small_gray(paths: np.ndarray, decode) -> np.ndarray:
    """(n, h, w) grayscale block means of at most GRID x GRID, decoded in batches."""
    out = []
    for start in range(0, len(paths), DECODE_BATCH):
        images = np.asarray(decode(paths[start:start + DECODE_BATCH]), dtype=np.float32).mean(axis=-1)
        height, width = images.shape[1:]
        step_h, step_w = -(-height // GRID), -(-width // GRID)
        images = images[:, :height - height % step_h, :width - width % step_w]
        out.append(images.reshape(len(images), images.shape[1] // step_h, step_h, -1, step_w).mean(axis=(2, 4)))
    return np.concatenate(out)
