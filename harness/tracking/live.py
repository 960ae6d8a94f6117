"""A run logging itself to MLflow while it trains: `start` once the run is placed, `add_epoch` for each metrics row,
`flush` once the epoch's checkpoint is written, `finish` however the run ends (as harness.run.tensorboard_log's
RunBoard).

An epoch goes to MLflow only after its checkpoint: a run killed (kill -9) between the two resumes from the epoch
before and trains this one again, which MLflow must not hold twice. A resumed run continues the MLflow run its
run.json names and first logs the kept epochs MLflow lacks, so every epoch is there once (one value per step).

The tracker never costs a result: the first error (a server gone, a locked or full store) is one
`harness: warning:` line and one note in run.json (`tracking.error`), and the run trains on without it; the
sweep's end logs what is missing from the run's files (harness.tracking.sync).
"""
from __future__ import annotations

import logging
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterable

from harness.tracking import sync
from harness.tracking.settings import SweepTracking, Tracking, read_sweep

log = logging.getLogger(__name__)
READY_TIMEOUT = 120.0  # seconds a run waits for its command to make the sweep's parent run


class RunTracker:
    """The run's MLflow run: a child of its sweep's parent run (tracking.json), or on its own for a single run."""

    def __init__(self, tracking: Tracking, run_dir: Path, record):
        self.tracking, self.run_dir, self.record = tracking, Path(run_dir), record
        self.sweep: SweepTracking | None = None
        self.store = None
        self.run_id: str | None = None
        self.logged: set[int] = set()
        self.pending: list[dict[str, Any]] = []
        self.started = False  # start() ran: whether the run logs itself is decided
        self.active = True    # False once the run does not (or no longer) log itself

    def start(self, kept_rows: Iterable[dict[str, Any]], resume_epoch: int) -> None:
        """Open (or continue) the MLflow run and log the kept epochs it lacks; or, where the sweep's end logs the
        run instead (sweep_of), do nothing from here on."""
        self.started = True
        self.sweep, logs_itself = sweep_of(self.run_dir.parent, self.tracking)
        if not logs_itself:  # nothing to warn of: the command logs it, or has warned, or the sweep's end will
            self.active = False
            return
        if self.sweep is not None:
            self.tracking = self.sweep.tracking

        def start():
            from harness.tracking import mlflow_store

            self.store = mlflow_store.store(self.tracking.uri)
            experiment_id = (self.sweep.experiment_id if self.sweep is not None else
                             self.store.experiment_id(self.tracking.experiment, self.tracking.artifacts))
            parent = None if self.sweep is None else self.sweep.parent_run_id
            self.run_id, self.logged = sync.open_run(self.store, experiment_id, parent, self.record.data,
                                                     self.tracking.uri, resume_epoch=resume_epoch)
            self.record.update(tracking={"uri": self.tracking.uri, "run_id": self.run_id})
            if self.logged:  # a resumed run: RUNNING again
                self.store.set_status(self.run_id, "RUNNING")
                self.store.set_tags(self.run_id, {"harness.status": "running"})
            sync.log_rows(self.store, self.run_id, list(kept_rows), self.logged)

        self._guard(start)

    def add_epoch(self, row: dict[str, Any]) -> None:
        self.pending.append(row)

    def flush(self) -> None:
        """Log the epochs added since the last flush (call once their checkpoint is written)."""
        rows, self.pending = self.pending, []
        self._guard(lambda: sync.log_rows(self.store, self.run_id, rows, self.logged))

    def finish(self) -> None:
        """The last epochs, the probes, run.json and the status, after run.json's final write (a run that failed
        before `start` is opened here, to say so)."""
        if not self.started:
            self.start((), 0)
        self.flush()
        self._guard(lambda: sync.finish_run(self.store, self.run_id, self.run_dir, self.record.data))

    def _guard(self, action: Callable[[], None]) -> None:
        if not self.active:
            return
        try:
            action()
        except Exception as err:
            self.active = False
            reason = sync.describe(err)
            print(f"harness: warning: tracking: {self.tracking.uri} failed ({reason}); the run goes on without it, "
                  f"and the sweep's end (or python -m harness.track {self.run_dir.parent}) logs it from its files",
                  file=sys.stderr, flush=True)
            log.debug("tracking failed", exc_info=True)
            entry = {"uri": self.tracking.uri, "run_id": self.run_id, "error": reason}
            try:
                self.record.update(tracking=entry)
            except OSError:  # run.json's own writes will say so
                pass


class Untracked(RunTracker):
    """A run with tracking off: every call does nothing (and MLflow is never imported)."""

    def __init__(self):
        pass

    def start(self, kept_rows=(), resume_epoch: int = 0) -> None:
        pass

    def add_epoch(self, row: dict[str, Any]) -> None:
        pass

    def flush(self) -> None:
        pass

    def finish(self) -> None:
        pass


def open_tracker(tracking: Tracking | None, run_dir: Path, record) -> RunTracker:
    """The run's tracker (Untracked when tracking is off)."""
    return Untracked() if tracking is None else RunTracker(tracking, run_dir, record)


def sweep_of(sweep_dir: Path, tracking: Tracking, timeout: float = READY_TIMEOUT
             ) -> tuple[SweepTracking | None, bool]:
    """The tracking.json of `sweep_dir` (a run's folder's parent; None: a single run, or a sweep tracked
    elsewhere) and whether its runs log themselves: not under the harness launcher (the command's tracking process
    logs them from their files), nor under SLURM with a SQLite store (the sweep's end does), nor when the command
    could not reach the tracker. Where they do, waits for the command to make the parent run (wait_ready)."""
    sweep = read_sweep(sweep_dir)
    if sweep is None or sweep.uri != tracking.uri:
        return None, True
    if sweep.live_by != "run":  # known before the parent run is made
        return sweep, False
    sweep = wait_ready(sweep_dir, timeout)
    return sweep, sweep is not None and sweep.parent_run_id is not None


def wait_ready(sweep_dir: Path, timeout: float = READY_TIMEOUT) -> SweepTracking | None:
    """tracking.json once the command has made the sweep's parent run (or failed to: `ready`, with an `error`), at
    most `timeout` seconds from now; None if it never was."""
    deadline = time.monotonic() + timeout
    while True:
        sweep = read_sweep(sweep_dir)
        if sweep is not None and sweep.ready:
            return sweep
        if time.monotonic() > deadline:
            return None
        time.sleep(0.1)
