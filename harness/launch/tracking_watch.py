"""tracking=mlflow under the harness launcher: the command logs its runs to MLflow from their files as they train.

The runs' processes never import MLflow (about 3 s of CPU in each warm worker, 4% of the main job on a 2-core
machine): the command imports it once, for the sweep's parent run, and a thread of it follows the runs the
scheduler reports (harness.launch.scheduler's `watch`). Each epoch is logged once its checkpoint is written, as a
run logging itself would (harness.tracking.live): a run killed between the two trains that epoch again, which MLflow
must not hold twice. When a run ends, the rest (its last epoch, probes, run.json, status) is logged, and its
run.json records its MLflow run; a resumed run continues the MLflow run tagged with its run_id. One process writes
to the store, so runs at once never meet a locked SQLite database.

A tracker that fails is one warning line; the runs go on, and the sweep's end logs what is missing.
"""
from __future__ import annotations

import logging
import queue
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness.run import checkpoint
from harness.store import layout
from harness.store.files import DamagedFile, read_json
from harness.tracking import sync
from harness.tracking.live import wait_ready
from harness.tracking.settings import Tracking

log = logging.getLogger(__name__)


FOLLOW_SECONDS = 2.0  # a running run's file is read at most this often: its epochs since go in one transaction


@dataclass
class _Run:
    run_id: str                       # its MLflow run
    logged: set[int] = field(default_factory=set)
    seen: int | None = None           # metrics.parquet's mtime_ns when last read
    read_at: float = 0.0              # time.monotonic() of that read


class Watcher:
    """The thread that logs the sweep's runs as they train; `poll` from the scheduler's loop, `close` at its end."""

    def __init__(self, sweep_dir: Path, tracking: Tracking):
        self.sweep_dir, self.tracking = Path(sweep_dir), tracking
        self.requests: queue.Queue = queue.Queue()
        self.runs: dict[Path, _Run] = {}
        self.failed: str | None = None
        self.thread = threading.Thread(target=self._work, name="tracking-watch", daemon=True)
        self.thread.start()

    def poll(self, running: list[Path], ended: list[Path]) -> None:
        """The runs training now, and those that ended since the last poll."""
        self.requests.put((list(running), list(ended)))

    def close(self) -> None:
        """Log what the last polls reported, then stop."""
        self.requests.put(None)
        self.thread.join()

    def _work(self) -> None:
        sweep = wait_ready(self.sweep_dir)  # the command's parent run
        store = None
        if sweep is not None and sweep.uri == self.tracking.uri and sweep.parent_run_id is not None:
            from harness.tracking import mlflow_store

            store = mlflow_store.store(sweep.uri)
        while True:
            request = self.requests.get()
            ended: list[Path] = []
            running: list[Path] = []
            while request is not None:  # what piled up while the last request was logged: the latest, and every end
                running = request[0]
                ended += request[1]
                try:
                    request = self.requests.get_nowait()
                except queue.Empty:
                    break
            if store is not None and self.failed is None:
                try:
                    for run_dir in ended:
                        self._end(store, sweep, run_dir)
                    for run_dir in running:
                        self._follow(store, sweep, run_dir)
                except Exception as err:  # the runs go on; the sweep's end logs what is missing
                    self.failed = sync.describe(err)
                    print(f"harness: warning: tracking: {sweep.uri} failed while the runs trained ({self.failed}); "
                          "they go on, and the sweep's end tries again", file=sys.stderr, flush=True)
            if request is None:
                if store is not None and self.failed is None:
                    try:  # the runs still followed (an interrupted sweep's): what is queued for them
                        for run in self.runs.values():
                            store.wait(run.run_id)
                    except Exception as err:  # the sweep's end logs what is missing
                        self.failed = sync.describe(err)
                return

    def _follow(self, store, sweep, run_dir: Path) -> None:
        """Log the epochs a running run has checkpointed since the last look (queued: MLflow writes a run's waiting
        epochs in one transaction)."""
        try:
            seen = (run_dir / layout.METRICS_FILE).stat().st_mtime_ns
        except FileNotFoundError:  # no epoch yet
            return
        run = self.runs.get(run_dir)
        if run is not None and (run.seen == seen or time.monotonic() - run.read_at < FOLLOW_SECONDS):
            return
        if run is None:
            try:
                record = read_json(run_dir / layout.RUN_FILE)
            except DamagedFile:  # between two writes: the next poll
                return
            if record is None:
                return
            run_id, logged = sync.open_run(store, sweep.experiment_id, sweep.parent_run_id, record, sweep.uri)
            run = self.runs[run_dir] = _Run(run_id, logged)
            if logged:  # a resumed run's
                store.set_status(run_id, "RUNNING")
        try:
            saved = checkpoint.saved_epoch(run_dir)
        except (OSError, ValueError, KeyError):  # replaced while read: the next poll
            return
        if run.logged and saved <= max(run.logged):
            return  # the epoch is written, its checkpoint not yet: the next poll
        rows = sync.metric_rows(run_dir)
        run.read_at = time.monotonic()
        if rows and rows[-1]["epoch"] <= saved:
            run.seen = seen
        sync.log_rows(store, run.run_id, [row for row in rows if row["epoch"] <= saved], run.logged, queued=True)

    def _end(self, store, sweep, run_dir: Path) -> None:
        """A run that ended: the rest of it, from its files (its process is gone, so run.json may be written)."""
        run = self.runs.pop(run_dir, None)
        if run is not None:
            store.wait(run.run_id)  # its queued epochs first: the end reads what MLflow holds
        try:
            record = read_json(run_dir / layout.RUN_FILE)
        except DamagedFile:
            return
        if record is not None:
            sync.sync_run(store, sweep, run_dir, record, None if run is None else run.run_id)
