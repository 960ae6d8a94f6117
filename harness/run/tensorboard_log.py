"""TensorBoard event files of one run, in `<run>/tb/`: the per-epoch scalars, and an HParams session (the config as
hyperparameters, the outcome as the session's status) for `tensorboard --logdir sweeps/<sweep-id>`.

TensorBoard reads every event file of a folder, and keeps the first summary metadata it meets for a tag (the
session's end status is such metadata). So each attempt of a run writes the folder anew: a resumed run removes the
earlier attempt's files and writes the epochs it keeps again, which leaves one value per step and one end status.
The HParams dashboard's metrics are the last value of each of the session's scalars: the final epoch's
`accuracy/val_acc`, `accuracy/train_eval_acc` and `accuracy/gap` (train_eval_acc - val_acc) among them.

The files are written with the `tensorboard` package's own record writer and protocol buffers, never
TensorFlow's summary ops, so every backend writes them the same way (a JAX run never loads TensorFlow for them).
"""
from __future__ import annotations

import logging
import math
import numbers
import os
import shutil
import socket
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
                  "interrupted": "STATUS_UNKNOWN", "paused": "STATUS_UNKNOWN"}


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


class EventFile:
    """One TensorBoard event file (TFRecord framing of `Event` protocol buffers), as tf.summary writes it: its name
    holds "tfevents", and its first event names the file format."""

    def __init__(self, folder: Path):
        from tensorboard.compat.proto import event_pb2
        from tensorboard.summary.writer.record_writer import RecordWriter

        folder.mkdir(parents=True, exist_ok=True)
        self._event = event_pb2.Event
        name = f"events.out.tfevents.{int(time.time())}.{socket.gethostname()}.{os.getpid()}.v2"
        self._file = open(folder / name, "wb")
        self._records = RecordWriter(self._file)
        self._write(self._event(wall_time=time.time(), file_version="brain.Event:2"))

    def add(self, summary, step: int) -> None:
        self._write(self._event(wall_time=time.time(), step=int(step), summary=summary))

    def _write(self, event) -> None:
        self._records.write(event.SerializeToString())

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        self._file.close()


class RunBoard:
    """The run's TensorBoard folder: `start` once the run is placed, `add_epoch` for each metrics row, `finish`
    however the run ends."""

    def __init__(self, run_dir: Path, run_id: str, hparams: dict[str, Any]):
        self.path = Path(run_dir) / TB_DIR
        self.run_id, self.hparams = run_id, hyperparameters(hparams)
        self.started_at = time.time()
        self.writer: EventFile | None = None

    def start(self, kept_rows: Iterable[dict[str, Any]] = ()) -> None:
        """A fresh folder with the session's hyperparameters and the epochs a resumed run keeps."""
        from tensorboard.plugins.hparams import summary_v2

        shutil.rmtree(self.path, ignore_errors=True)
        self.writer = EventFile(self.path)
        self.writer.add(summary_v2.hparams_pb(self.hparams, trial_id=self.run_id, start_time_secs=self.started_at),
                        step=0)
        for row in kept_rows:
            self._write(row)
        self.writer.flush()

    def add_epoch(self, row: dict[str, Any]) -> None:
        """One epoch's scalars at step = epoch, on disk when this returns (a live TensorBoard shows them)."""
        self._write(row)
        self.writer.flush()

    def _write(self, row: dict[str, Any]) -> None:
        from tensorboard.compat.proto import summary_pb2

        summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, simple_value=value)
                                             for tag, value in scalars(row).items()])
        self.writer.add(summary, step=int(row["epoch"]))

    def finish(self, status: str) -> None:
        """Write the session's end status and close the files. A run that failed before `start` still gets its
        session (hyperparameters and status). The outcome is run.json's to record: a failure to write here is
        logged, never raised over it."""
        try:
            if self.writer is None:
                self.start()
            self.writer.add(session_end(status), step=0)
            self.writer.close()
        except Exception as err:  # a full disk, ...
            log.warning("TensorBoard: the session's end status (%s) was not written to %s: %s: %s", status, self.path,
                        type(err).__name__, err)


def session_end(status: str):
    """The HParams session-end summary for run.json's `status`, built as tensorboard.plugins.hparams.summary's
    session_end_pb builds it (that module loads TensorFlow; its parts do not)."""
    from tensorboard.compat.proto import summary_pb2
    from tensorboard.plugins.hparams import api_pb2, metadata, plugin_data_pb2

    info = plugin_data_pb2.SessionEndInfo(status=api_pb2.Status.Value(SESSION_STATUS.get(status, "STATUS_UNKNOWN")),
                                          end_time_secs=time.time())
    data = plugin_data_pb2.HParamsPluginData(session_end_info=info)
    summary = summary_pb2.Summary()
    summary.value.add(tag=metadata.SESSION_END_INFO_TAG, metadata=metadata.create_summary_metadata(data),
                      tensor=metadata.NULL_TENSOR)
    return summary
