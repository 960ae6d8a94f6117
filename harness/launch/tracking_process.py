"""tracking=mlflow in a multirun: the command's tracking process, `python -m harness.launch.tracking_process`, does
all of the MLflow work, so that the command (and every run's process) never imports MLflow. The command starts it
and ends it (harness.launch.tracker); nothing else talks to it.

It makes the sweep's parent run as the runs start; where the command logs the runs as they train (tracking.json's
`live_by: command`: the launcher says its runs do not log themselves) it follows them from their files: every
FOLLOW_SECONDS it looks at the sweep's run.json files (RunWatch) and logs each running run's new epochs, and the
rest of a run once its run.json says it ended. At the sweep's end it checks every run against its files and keeps
the report on the parent run. Measured on the main job (2-core CPU, benchmarks/bench_tracking.py): the same work in
a thread of the command cost more than 5% of the sweep's wall time, most of it importing MLflow (about 4 s of CPU)
while the runs' processes import TensorFlow. Here the process runs at the lowest priority while the runs train
(`tracking.nice`, 19 by default), on the CPU time they leave idle (between runs, the report), and the command
waits for it only at the end.

Each epoch is logged once its checkpoint is written, as a run logging itself does (harness.tracking.live): a run
killed between the two trains that epoch again, which MLflow must not hold twice. When a run ends, the rest (its
last epoch, probes, run.json, status) is logged, and its run.json records its MLflow run; a resumed run continues
the MLflow run tagged with its run_id. One process writes to the store, so runs at once never meet a locked SQLite
database. A tracker that fails is one warning line; the runs go on, and the sweep's end tries again.

The command writes two JSON lines on its stdin: the settings first (with each run.json's modification time before
any run of the command started), then `{"end": [artifacts...]}` at the sweep's end; its stdin closing without the
end means the command died.
"""
from __future__ import annotations

import json
import queue
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from harness.launch.processes import die_with_parent, lower_priority
from harness.run import checkpoint
from harness.store import layout
from harness.store.files import DamagedFile, read_json
from harness.tracking import sync
from harness.tracking.settings import SweepTracking, Tracking, read_sweep

FOLLOW_SECONDS = 2.0  # a running run's file is read at most this often: its epochs since go in one transaction


@dataclass
class _Run:
    run_id: str                       # its MLflow run
    logged: set[int] = field(default_factory=set)
    seen: int | None = None           # metrics.parquet's mtime_ns when last read
    read_at: float = 0.0              # time.monotonic() of that read


class Follower:
    """In the process: logs the runs RunWatch finds running or ended, from their files."""

    def __init__(self, store, sweep: SweepTracking):
        self.store, self.sweep = store, sweep
        self.runs: dict[Path, _Run] = {}

    def follow(self, run_dir: Path) -> None:
        """Log the epochs a running run has checkpointed since the last look (queued: MLflow writes a run's waiting
        epochs in one transaction). The last look's batches are written first, or their error raised: a tracker
        that fails says so while the runs train, not only at the sweep's end."""
        run = self.runs.get(run_dir)
        if run is not None:
            self.store.wait(run.run_id)  # written a buffer (2 s) after they were queued, one look ago
        try:
            seen = (run_dir / layout.METRICS_FILE).stat().st_mtime_ns
        except FileNotFoundError:  # no epoch yet
            return
        if run is not None and (run.seen == seen or time.monotonic() - run.read_at < FOLLOW_SECONDS):
            return
        if run is None:
            try:
                record = read_json(run_dir / layout.RUN_FILE)
            except DamagedFile:  # between two writes: the next poll
                return
            if record is None:
                return
            run_id, logged = sync.open_run(self.store, self.sweep.experiment_id, self.sweep.parent_run_id, record,
                                           self.sweep.uri)
            run = self.runs[run_dir] = _Run(run_id, logged)
            if logged:  # a resumed run's
                self.store.set_status(run_id, "RUNNING")
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
        sync.log_rows(self.store, run.run_id, [row for row in rows if row["epoch"] <= saved], run.logged,
                      queued=True)

    def end(self, run_dir: Path) -> None:
        """A run that ended: the rest of it, from its files (its process is gone, so run.json may be written)."""
        run = self.runs.pop(run_dir, None)
        if run is not None:
            self.store.wait(run.run_id)  # its queued epochs first: the end reads what MLflow holds
        try:
            record = read_json(run_dir / layout.RUN_FILE)
        except DamagedFile:
            return
        if record is not None:
            sync.sync_run(self.store, self.sweep, run_dir, record, None if run is None else run.run_id)

    def wait(self) -> None:
        """What is queued for the runs still followed (an interrupted sweep's)."""
        for run in self.runs.values():
            self.store.wait(run.run_id)


class RunWatch:
    """Which of a sweep's runs train now, and which ended since the last look, from their run.json files: a run is
    running while its run.json says so, and ended when its run.json turns from running to a final status (the run's
    own `finally`, or the scheduler's record of a run that died), or first seen final but written since the command
    started (`before`: each run.json's modification time then, harness.launch.tracker.run_files_before). A run.json
    rewritten while final (the tracker's own note of its MLflow run) is not a run ending again; nor is a run that
    started and ended between two looks from an earlier final status: the sweep's end checks those."""

    def __init__(self, sweep_dir: Path, before: dict[str, int]):
        self.sweep_dir, self.before = Path(sweep_dir), before
        self.seen: dict[Path, tuple[int, str | None]] = {}  # run folder: (run.json's mtime_ns, its status)

    def look(self) -> tuple[list[Path], list[Path]]:
        """(the runs running now, those ended since the last look), each in job order."""
        running, ended = [], []
        for run_dir in layout.run_dirs(self.sweep_dir):
            try:
                mtime = (run_dir / layout.RUN_FILE).stat().st_mtime_ns
            except FileNotFoundError:
                continue
            known = self.seen.get(run_dir)
            if known is None or known[0] != mtime:
                try:
                    status = (read_json(run_dir / layout.RUN_FILE) or {}).get("status")
                except DamagedFile:  # between two writes: the next look
                    continue
                self.seen[run_dir] = (mtime, status)
                if status != "running" and (known[1] == "running" if known is not None
                                            else self.before.get(run_dir.name) != mtime):
                    ended.append(run_dir)
            if self.seen[run_dir][1] == "running":
                running.append(run_dir)
        return running, ended


def serve(sweep_dir: Path, start: dict[str, Any], requests: IO[str]) -> int:
    """The process: the parent run, then (where it logs the runs live) the runs followed from their files until
    the command's `end` (or its stdin closing)."""
    tracking = Tracking(**start["tracking"])
    previous = None if start["previous"] is None else SweepTracking(**start["previous"])
    try:
        sweep = sync.start_sweep(sweep_dir, tracking, live_by=start["live_by"], jobs=start["jobs"], previous=previous)
    except sync.TrackingFailed as err:
        print(f"harness: warning: tracking: {tracking.uri} does not answer ({err}); the runs go on without it, "
              "and the sweep's end tries again", file=sys.stderr, flush=True)
        sweep = None
    follower = watch = None
    if sweep is not None and sweep.live_by == "command":
        from harness.tracking import mlflow_store

        follower, watch = Follower(mlflow_store.store(sweep.uri), sweep), RunWatch(sweep_dir, start["before"])
    lines = _lines(requests)
    failed: str | None = None
    while True:
        try:
            request = lines.get(timeout=FOLLOW_SECONDS)
        except queue.Empty:
            request = {}
        if request is None or "end" in request:
            break
        if follower is not None and failed is None:
            try:
                running, ended = watch.look()
                for run_dir in ended:
                    follower.end(run_dir)
                for run_dir in running:
                    follower.follow(run_dir)
            except Exception as err:  # the runs go on; the sweep's end logs what is missing
                failed = sync.describe(err)
                print(f"harness: warning: tracking: {sweep.uri} failed while the runs trained ({failed}); they go "
                      "on, and the sweep's end tries again", file=sys.stderr, flush=True)
    if request is None:  # the command died: the runs of this attempt stay as they are, for the next
        return 0
    lower_priority(0)  # the command waits for the end
    if follower is not None and failed is None:
        try:
            follower.wait()
        except Exception:  # the sweep's end logs what is missing
            pass
    finish(sweep_dir, [Path(path) for path in request["end"]])
    return 0


def finish(sweep_dir: Path, artifacts: list[Path]) -> None:
    """Every run in MLflow with each epoch once and its final status, whatever was logged as they trained; the
    `artifacts` on the parent run, whose status follows its runs'. A tracker that still does not answer is one
    warning line naming the command that logs the sweep later (`python -m harness.track`)."""
    sweep = read_sweep(sweep_dir)
    if sweep is None:
        return
    try:
        result = sync.sync_sweep(sweep_dir, artifacts=artifacts, status=sync.sweep_status(sweep_dir))
    except sync.TrackingFailed as err:
        print(f"harness: warning: tracking: the sweep is not all in {sweep.uri} ({err}); once it answers, log it "
              f"with: python -m harness.track {sweep_dir}", file=sys.stderr, flush=True)
        return
    if result.live_errors:
        print(f"harness: warning: tracking: {len(result.live_errors)} run(s) could not log to {sweep.uri} as they "
              f"trained ({result.live_errors[0]}); logged from their files now", file=sys.stderr, flush=True)


def _lines(stream: IO[str]) -> queue.Queue:
    """The command's requests as they come, read by a thread (None once its stdin closes)."""
    lines: queue.Queue = queue.Queue()

    def read() -> None:
        for line in stream:
            lines.put(json.loads(line))
        lines.put(None)

    threading.Thread(target=read, name="requests", daemon=True).start()
    return lines


def main(argv: list[str] | None = None) -> int:
    [sweep_dir] = sys.argv[1:] if argv is None else argv
    die_with_parent()  # the command started it: it dies with the command
    start = json.loads(sys.stdin.readline())  # the command's first line: the settings, the runs' files before
    if start["nice"]:
        lower_priority(start["nice"])
    return serve(Path(sweep_dir), start, sys.stdin)


if __name__ == "__main__":
    sys.exit(main())
