"""TensorBoard event files of one run, in `<run>/tb/`: the per-epoch scalars, and an HParams session (the config as
hyperparameters, the outcome as the session's status) for `tensorboard --logdir sweeps/<sweep-id>`.

TensorBoard reads every event file of a folder, and keeps the first summary metadata it meets for a tag (the
session's end status is such metadata). So each attempt of a run writes the folder anew: a resumed run removes the
earlier attempt's files and writes the epochs it keeps again, which leaves one value per step and one end status.
The HParams dashboard's metrics are the last value of each of the session's scalars: the final epoch's
`accuracy/val_acc`, `accuracy/train_eval_acc` and `accuracy/gap` (train_eval_acc - val_acc) among them.
"""
from __future__ import annotations

import logging
import math
import numbers
import shutil
import time
from pathlib import Path
from typing import Any, Iterable

from harness.store.layout import TB_DIR

log = logging.getLogger(__name__)

# Metrics column -> its tag; the section before the slash groups the Scalars dashboard's cards, and the HParams
# dashboard shows the first five metrics by name at first: the accuracies and the gap.
TAGS = {
    "train_acc": "accuracy/train_acc",
    "train_eval_acc": "accuracy/train_eval_acc",
    "val_acc": "accuracy/val_acc",
    "gap": "accuracy/gap",
    "train_loss": "loss/train_loss",
    "train_eval_loss": "loss/train_eval_loss",
    "val_loss": "loss/val_loss",
    "tune_acc": "accuracy/tune_acc",
    "tune_loss": "loss/tune_loss",
    "lr": "training/lr",
    "samples_per_second": "training/samples_per_second",
    "noise_scale": "probes/noise_scale",
    "grad_norm_sq": "probes/grad_norm_sq",
    "grad_trace_cov": "probes/grad_trace_cov",
    "weight_distance": "probes/weight_distance",
}
# run.json's status -> the HParams session status. TensorBoard has no "aborted": an interrupted run, which the same
# command resumes, has no outcome yet (Unknown, as a run killed before it could say).
SESSION_STATUS = {"completed": "STATUS_SUCCESS", "failed": "STATUS_FAILURE", "diverged": "STATUS_FAILURE",
                  "interrupted": "STATUS_UNKNOWN"}


def scalars(row: dict[str, Any]) -> dict[str, float]:
    """The tags and values TensorBoard gets for one metrics row; missing and non-finite values (a diverged epoch's
    NaN loss) are left out."""
    values = dict(row)
    if _finite(values.get("train_eval_acc")) and _finite(values.get("val_acc")):
        values["gap"] = values["train_eval_acc"] - values["val_acc"]
    return {tag: float(values[column]) for column, tag in TAGS.items() if _finite(values.get(column))}


def hyperparameters(config_columns: dict[str, Any]) -> dict[str, bool | int | float | str]:
    """A run's config columns (runlog.config_columns) as HParams values; None (an unset key) is left out, so a key
    that is a number in some runs stays a number column."""
    return {key: value for key, value in config_columns.items() if isinstance(value, (bool, int, float, str))}


def _finite(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


class RunBoard:
    """The run's TensorBoard folder: `start` once TensorFlow is configured, `add_epoch` for each metrics row,
    `finish` however the run ends."""

    def __init__(self, run_dir: Path, run_id: str, hparams: dict[str, Any]):
        self.path = Path(run_dir) / TB_DIR
        self.run_id, self.hparams = run_id, hyperparameters(hparams)
        self.started_at = time.time()
        self.writer = None

    def start(self, kept_rows: Iterable[dict[str, Any]] = ()) -> None:
        """A fresh folder with the session's hyperparameters and the epochs a resumed run keeps.

        Call after the run placed itself on its devices: a summary writer initialises TensorFlow's runtime, after
        which its CPU threads can no longer be set.
        """
        from tensorboard.plugins.hparams import api as hparams_api

        from harness.backend import tf

        shutil.rmtree(self.path, ignore_errors=True)
        self.writer = tf.summary.create_file_writer(str(self.path))
        with self.writer.as_default():
            hparams_api.hparams(self.hparams, trial_id=self.run_id, start_time_secs=self.started_at)
        for row in kept_rows:
            self._write(row)
        self.writer.flush()

    def add_epoch(self, row: dict[str, Any]) -> None:
        """One epoch's scalars at step = epoch, on disk when this returns (a live TensorBoard shows them)."""
        self._write(row)
        self.writer.flush()

    def _write(self, row: dict[str, Any]) -> None:
        from tensorboard.compat.proto import summary_pb2

        from harness.backend import tf

        # One summary of plain scalar values: one TensorFlow op an epoch, where a tf.summary.scalar per value cost
        # about 0.5 ms each (TensorBoard reads both the same way)
        summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, simple_value=value)
                                             for tag, value in scalars(row).items()])
        with self.writer.as_default():
            tf.summary.experimental.write_raw_pb(summary.SerializeToString(), step=int(row["epoch"]))

    def finish(self, status: str) -> None:
        """Write the session's end status and close the files. A run that failed before `start` still gets its
        session (hyperparameters and status). The outcome is run.json's to record: a failure to write here is
        logged, never raised over it."""
        try:
            if self.writer is None:
                self.start()
            from tensorboard.plugins.hparams import api_pb2
            from tensorboard.plugins.hparams import summary as hparams_summary

            from harness.backend import tf

            end = hparams_summary.session_end_pb(api_pb2.Status.Value(SESSION_STATUS.get(status, "STATUS_UNKNOWN")))
            with self.writer.as_default():
                tf.summary.experimental.write_raw_pb(end.SerializeToString(), step=0)
            self.writer.close()
        except Exception as err:  # TensorFlow that never loaded, a full disk, ...
            log.warning("TensorBoard: the session's end status (%s) was not written to %s: %s: %s", status, self.path,
                        type(err).__name__, err)
