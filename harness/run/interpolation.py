"""Sweep-level probes: `python -m harness.probe sweeps/<sweep-id>` writes the sweep's interpolation.parquet.

Keskar et al. 2017, Fig. 3: the training and validation loss and accuracy of f((1 − α)·w_small + α·w_large)
for α from −1 to 2, between the smallest-batch and the largest-batch solution of each pair of runs that agree
on everything else (harness.probes.interpolation). Every weight is interpolated, batch-norm moving statistics too
(Li et al. 2018: the curve is wrong otherwise); an interpolated moving variance below 0 (α outside [0, 1]) is
clipped to 0. Runs at the end of every multirun, in a run process (it loads the backend; the report does not):
on the backend of the sweep's runs, or for a sweep of both, on the one the process already has (a forward pass
of the same weights is the same function on either, up to float rounding).
"""
from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd

from harness.probes import interpolation
from harness.probes.in_run import load_weights
from harness.store import layout
from harness.store.files import atomic_write
from harness.store.layout import FINAL_WEIGHTS

log = logging.getLogger("harness.run.interpolation")
CURVE = ["alpha", "train_loss", "train_acc", "val_loss", "val_acc"]  # a pair's curve: one row per α


def interpolate(sweep_dir: Path, pair: interpolation.Pair, alphas=interpolation.ALPHAS,
                built: dict | None = None) -> pd.DataFrame:
    """The pair's loss and accuracy along the line, one row per α. `built`: models kept from earlier pairs of the
    sweep (model config and data shape -> the model and its compiled inference), reused when this pair's model is
    the same: every weight is set at each α, so a model once built serves every pair (clearing Keras's session,
    building and tracing cost 0.5 s a pair)."""
    from harness.backend import keras, ops
    from harness.config.compose import recorded_run_config
    from harness.models import registry as models
    from harness.run import inputs, measures

    cfg = recorded_run_config(sweep_dir / pair.small_dir)
    data_in = inputs.prepare_data(cfg)
    train_eval, val_inputs = inputs.evaluation_inputs(cfg, data_in)
    train_inputs = [np.asarray(x) for x, _ in train_eval]  # decoded once, read at every α
    val_inputs = [np.asarray(x) for x in val_inputs]
    built = {} if built is None else built
    key = (repr(cfg.model), tuple(data_in.input_shape), data_in.num_classes)
    if key not in built:
        keras.backend.clear_session()
        model = models.build(cfg.model, data_in.input_shape, data_in.num_classes)
        built[key] = (model, ops.inference(model))
    model, forward = built[key]

    def probabilities(batches) -> np.ndarray:
        return np.concatenate([forward(x) for x in batches])

    small, _ = load_weights(sweep_dir / pair.small_dir / FINAL_WEIGHTS)
    large, _ = load_weights(sweep_dir / pair.large_dir / FINAL_WEIGHTS)
    variance = [w.path.endswith("moving_variance") for w in model.weights]
    rows = []
    for alpha in alphas:
        mixed = [(1 - alpha) * s + alpha * w for s, w in zip(small, large)]
        model.set_weights([np.maximum(m, 0) if v else m for m, v in zip(mixed, variance)])
        train_loss, train_acc = measures.classification_metrics(probabilities(train_inputs), data_in.y_train)
        val_loss, val_acc = measures.classification_metrics(probabilities(val_inputs), data_in.y_val)
        rows.append({"alpha": float(alpha), "train_loss": train_loss, "train_acc": train_acc,
                     "val_loss": val_loss, "val_acc": val_acc})
    return _labelled(pd.DataFrame(rows, columns=CURVE), pair)


def _labelled(curve: pd.DataFrame, pair: interpolation.Pair) -> pd.DataFrame:
    """A pair's curve (CURVE's columns) with the columns that say which pair it is, as interpolation.parquet has
    them."""
    frame = curve.reset_index(drop=True)
    frame.insert(0, "pair", pair.label)
    frame.insert(1, "small_run", pair.small["run_id"])
    frame.insert(2, "large_run", pair.large["run_id"])
    frame.insert(3, "small_batch", int(pair.small["config"][interpolation.PAIRED_BY]))
    frame.insert(4, "large_batch", int(pair.large["config"][interpolation.PAIRED_BY]))
    for key, value in pair.keys.items():
        frame[key] = value
    return frame


def write_interpolation(sweep_dir: Path, include_running: bool = False, waiting: Iterable[str] = (),
                        only_new: bool = False) -> Path | None:
    """interpolation.parquet for every pair of the sweep; None (and no file) when the sweep has no pair.
    `include_running`, `waiting`: as harness.probes.interpolation.pairs (runs still in their end-of-run probes
    paired too; the groups of runs still training left out). `only_new`: the curves the file already holds from
    their runs' present weights are kept, not computed again (the launcher computes a sweep's pairs as their
    runs end)."""
    from harness import backend

    sweep_dir = Path(sweep_dir)
    found = interpolation.pairs(sweep_dir, include_running, waiting)
    if not found:
        return None
    kept = _standing_curves(sweep_dir, found) if only_new else {}
    if len(kept) < len(found) and backend.loaded_backend() is None:
        backend.select(found[0].small["config"].get("backend", backend.DEFAULT), cpu_only=True)
    built: dict = {}  # one model for every pair of the same model
    frame = pd.concat([_labelled(kept[key], pair) if (key := interpolation.key(pair)) in kept
                       else interpolate(sweep_dir, pair, built=built) for pair in found], ignore_index=True)
    target = sweep_dir / layout.INTERPOLATION_FILE
    atomic_write(target, lambda tmp: frame.to_parquet(tmp, index=False))
    return target


def _standing_curves(sweep_dir: Path, found: list[interpolation.Pair]) -> dict[tuple[str, str], pd.DataFrame]:
    """The curves (CURVE's columns) interpolation.parquet holds from the present weights of pairs in `found`, by
    pair key."""
    keys = interpolation.standing(sweep_dir, found)
    if not keys:
        return {}
    frame = pd.read_parquet(sweep_dir / layout.INTERPOLATION_FILE)
    return {key: rows[CURVE] for key, rows in frame.groupby(["small_run", "large_run"], sort=False) if key in keys}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.probe", description=__doc__.splitlines()[0])
    parser.add_argument("sweep_dir", type=Path, help="a sweep folder, e.g. sweeps/2026-11-30_12-00-00")
    parser.add_argument("--include-running", action="store_true",
                        help="also pair runs still in their end-of-run probes whose final weights are written "
                             "(how the launcher starts it before the last runs end)")
    parser.add_argument("--waiting", action="append", default=[], metavar="RUN",
                        help="a run folder still training (repeatable): its group's pair is left for later")
    parser.add_argument("--only-new", action="store_true",
                        help="keep the curves interpolation.parquet holds from the runs' present weights; compute "
                             "only the others")
    args = parser.parse_args(argv)
    if not args.sweep_dir.is_dir():
        print(f"harness.probe: error: sweep_dir={str(args.sweep_dir)!r} is not a folder", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="[%(asctime)s][%(name)s][%(levelname)s] - %(message)s")
    if not interpolation.pairs(args.sweep_dir, args.include_running, args.waiting):
        print(f"harness.probe: {args.sweep_dir}: no pair of completed runs with kept weights that differ only in "
              f"batch size: no interpolation", file=sys.stderr)
        return 0
    print(write_interpolation(args.sweep_dir, args.include_running, args.waiting, args.only_new))
    return 0


if __name__ == "__main__":
    sys.exit(main())
