"""tracking=mlflow in a multirun: a process of the command's own, `python -m harness.launch.tracking_watch`, does all
of the MLflow work, so that the command (and every run's process) never imports MLflow.

It makes the sweep's parent run as the runs start; where the command logs the runs as they train (tracking.json's
`live_by: command`, under the harness launcher) it logs each run from its files, fed by the scheduler's polls; and
at the sweep's end it checks every run against its files and keeps the report on the parent run. Measured on the
main job (2-core CPU, benchmarks/bench_tracking.py): the same work in a thread of the command cost more than 5% of
the sweep's wall time, most of it importing MLflow (about 4 s of CPU) while the runs' processes import TensorFlow.
Here the process runs at the lowest priority while the runs train (`tracking.nice`, 19 by default), on the CPU
time they leave idle (between runs, the report), and the command waits for it only at the end.

Each epoch is logged once its checkpoint is written, as a run logging itself does (harness.tracking.live): a run
killed between the two trains that epoch again, which MLflow must not hold twice. When a run ends, the rest (its
last epoch, probes, run.json, status) is logged, and its run.json records its MLflow run; a resumed run continues
the MLflow run tagged with its run_id. One process writes to the store, so runs at once never meet a locked SQLite
database. A tracker that fails is one warning line; the runs go on, and the sweep's end tries again.

The command talks to it through its stdin, a JSON line each: `{"running": [...], "ended": [...]}` when the
scheduler's runs change, then `{"end": [artifacts...]}`.
"""
from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

from harness.launch.worker import die_with_parent
from harness.run import checkpoint
from harness.store import layout
from harness.store.files import DamagedFile, read_json
from harness.tracking import sync
from harness.tracking.settings import SweepTracking, Tracking, read_sweep

FOLLOW_SECONDS = 2.0  # a running run's file is read at most this often: its epochs since go in one transaction


class Tracker:
    """The command's side: starts the process, tells it what the scheduler sees (`poll`, the scheduler's
    RunWatch), and at the sweep's end hands it the artifacts and waits for it (`end`)."""

    def __init__(self, sweep_dir: Path, tracking: Tracking, live_by: str | None, jobs: int,
                 previous: SweepTracking | None):
        self.sweep_dir, self.tracking, self.live_by = Path(sweep_dir), tracking, live_by
        start = {"tracking": asdict(tracking), "live_by": live_by, "jobs": jobs,
                 "previous": None if previous is None else asdict(previous),
                 "nice": tracking.nice if live_by in ("command", None) else 0}  # runs that log themselves wait for it
        self.process = subprocess.Popen(
            [sys.executable, "-m", "harness.launch.tracking_watch", str(self.sweep_dir), json.dumps(start)],
            stdin=subprocess.PIPE, start_new_session=True, preexec_fn=die_with_parent())  # no Ctrl-C of its own
        os.set_blocking(self.process.stdin.fileno(), False)  # a poll never waits for the process to read
        self.unsent = b""
        self.running: list[str] | None = None

    def poll(self, running: list[Path], ended: list[Path]) -> None:
        """The runs training now, and those that ended since the last poll (sent only when they change)."""
        names = [str(path) for path in running]
        if names != self.running or ended:
            self.running = names
            self._send({"running": names, "ended": [str(path) for path in ended]})

    def end(self, artifacts: list[Path]) -> None:
        """The sweep's end: every run checked in MLflow and `artifacts` on the parent run; returns once the process
        is done (it prints its own warnings)."""
        os.set_blocking(self.process.stdin.fileno(), True)
        self._send({"end": [str(path) for path in artifacts]})
        try:
            self.process.stdin.close()
        except BrokenPipeError:
            pass
        code = self.process.wait()
        _started.pop(self.sweep_dir.resolve(), None)
        if code != 0:
            print(f"harness: warning: tracking: the tracking process ended with exit code {code}; log the sweep "
                  f"with: python -m harness.track {self.sweep_dir}", file=sys.stderr, flush=True)

    def _send(self, message: dict[str, Any]) -> None:
        self.unsent += (json.dumps(message) + "\n").encode()
        try:
            while self.unsent:
                self.unsent = self.unsent[os.write(self.process.stdin.fileno(), self.unsent):]
        except BlockingIOError:  # its pipe is full: the rest goes with the next message
            pass
        except (BrokenPipeError, ValueError):  # it ended (end says how)
            self.unsent = b""


_started: dict[Path, Tracker] = {}


def start(sweep_dir: Path, tracking: Tracking, live_by: str | None, jobs: int,
          previous: SweepTracking | None) -> Tracker:
    tracker = _started[Path(sweep_dir).resolve()] = Tracker(sweep_dir, tracking, live_by, jobs, previous)
    return tracker


def started(sweep_dir: Path) -> Tracker | None:
    """The tracking process this command started for `sweep_dir` (a tracking.json an earlier command left does not
    make one)."""
    return _started.get(Path(sweep_dir).resolve())


@dataclass
class _Run:
    run_id: str                       # its MLflow run
    logged: set[int] = field(default_factory=set)
    seen: int | None = None           # metrics.parquet's mtime_ns when last read
    read_at: float = 0.0              # time.monotonic() of that read


class Follower:
    """In the process: logs the runs the command reports, from their files."""

    def __init__(self, store, sweep: SweepTracking):
        self.store, self.sweep = store, sweep
        self.runs: dict[Path, _Run] = {}

    def follow(self, run_dir: Path) -> None:
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


def serve(sweep_dir: Path, start: dict[str, Any], requests: IO[str]) -> int:
    """The process: the parent run, then the command's requests until its `end` (or its stdin closing)."""
    tracking = Tracking(**start["tracking"])
    previous = None if start["previous"] is None else SweepTracking(**start["previous"])
    try:
        sweep = sync.start_sweep(sweep_dir, tracking, live_by=start["live_by"], jobs=start["jobs"], previous=previous)
    except sync.TrackingFailed as err:
        print(f"harness: warning: tracking: {tracking.uri} does not answer ({err}); the runs go on without it, "
              "and the sweep's end tries again", file=sys.stderr, flush=True)
        sweep = None
    follower = None
    if sweep is not None and sweep.live_by == "command":
        from harness.tracking import mlflow_store

        follower = Follower(mlflow_store.store(sweep.uri), sweep)
    lines = _lines(requests)
    running: list[Path] = []
    failed: str | None = None
    while True:
        try:
            request = lines.get(timeout=FOLLOW_SECONDS)
        except queue.Empty:
            request = {"running": [str(path) for path in running], "ended": []}
        if request is None or "end" in request:
            break
        running = [Path(path) for path in request["running"]]
        if follower is not None and failed is None:
            try:
                for run_dir in request["ended"]:
                    follower.end(Path(run_dir))
                for run_dir in running:
                    follower.follow(run_dir)
            except Exception as err:  # the runs go on; the sweep's end logs what is missing
                failed = sync.describe(err)
                print(f"harness: warning: tracking: {sweep.uri} failed while the runs trained ({failed}); they go "
                      "on, and the sweep's end tries again", file=sys.stderr, flush=True)
    if request is None:  # the command died: the runs of this attempt stay as they are, for the next
        return 0
    _nice(0)  # the command waits for the end
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


def _nice(value: int) -> None:
    """This process's niceness, and its autogroup's: where the kernel groups processes by session (Linux's
    autogroup, on by default), the CPU is shared between sessions first, and a process's own niceness counts only
    within its session (this one's own: start_new_session). Raising priority again may be refused to an
    unprivileged process: then it goes on as it is."""
    try:
        os.setpriority(os.PRIO_PROCESS, 0, value)
    except OSError:
        pass
    try:
        Path("/proc/self/autogroup").write_text(str(value))
    except OSError:  # not Linux, or no autogroup
        pass


def main(argv: list[str] | None = None) -> int:
    sweep_dir, start = (sys.argv[1:] if argv is None else argv)
    start = json.loads(start)
    if start["nice"]:
        _nice(start["nice"])
    return serve(Path(sweep_dir), start, sys.stdin)


if __name__ == "__main__":
    sys.exit(main())
