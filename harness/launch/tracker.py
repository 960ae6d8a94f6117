"""tracking=mlflow in a multirun, the command's side: who logs the runs as they train, and the tracking process
(harness.launch.tracking_process) started before any run and ended at the sweep's end. The command holds the one
Tracker it started; nothing else reaches it.
"""
from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import asdict, replace
from pathlib import Path

from harness.launch.launchers import LauncherTraits
from harness.launch.processes import child_env
from harness.store import layout
from harness.tracking import settings
from harness.tracking.settings import SweepTracking, Tracking


def live_by(launcher: LauncherTraits, tracking: Tracking) -> str | None:
    """Who logs the runs as they train (tracking.json's `live_by`): the command's tracking process, from their
    files, where the launcher's runs do not log themselves (the harness launcher: MLflow is then imported once,
    not in every run's process, about 3 s of CPU each); nobody where runs on other machines would write to a SQLite
    file, often on NFS (the sweep's end logs them); else each run itself."""
    if not launcher.runs_log_themselves:
        return "command"
    if launcher.remote and tracking.local_database:
        return None
    return "run"


def niceness(live_by: str | None, tracking: Tracking) -> int:
    """The tracking process's niceness while the runs train: `tracking.nice` (the lowest priority by default: it
    logs on the CPU time the runs leave idle), except where runs log themselves and wait for its parent run."""
    return tracking.nice if live_by in ("command", None) else 0


class Tracker:
    """The tracking process of one sweep: started by the command before any run, ended (`end`) at the sweep's
    end, when it is handed the artifacts and the command waits for it."""

    def __init__(self, sweep_dir: Path, tracking: Tracking, live_by: str | None, jobs: int,
                 previous: SweepTracking | None):
        self.sweep_dir, self.tracking, self.live_by = Path(sweep_dir), tracking, live_by
        start = {"tracking": asdict(tracking), "live_by": live_by, "jobs": jobs,
                 "previous": None if previous is None else asdict(previous),
                 "nice": niceness(live_by, tracking),
                 # the runs' files before any run of this command starts: a change after that is this command's
                 "before": run_files_before(self.sweep_dir) if live_by == "command" else {}}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "harness.launch.tracking_process", str(self.sweep_dir)],
            stdin=subprocess.PIPE, env=child_env(), start_new_session=True)  # no Ctrl-C of its own
        self._send(start)

    def end(self, artifacts: list[Path]) -> None:
        """The sweep's end: every run checked in MLflow and `artifacts` on the parent run; returns once the process
        is done (it prints its own warnings)."""
        self._send({"end": [str(path) for path in artifacts]})
        try:
            self.process.stdin.close()
        except BrokenPipeError:
            pass
        code = self.process.wait()
        if code != 0:
            print(f"harness: warning: tracking: the tracking process ended with exit code {code}; log the sweep "
                  f"with: python -m harness.track {self.sweep_dir}", file=sys.stderr, flush=True)

    def _send(self, message: dict) -> None:
        try:
            self.process.stdin.write((json.dumps(message) + "\n").encode())
            self.process.stdin.flush()
        except BrokenPipeError:  # it ended already (`end` says how)
            pass


def run_files_before(sweep_dir: Path) -> dict[str, int]:
    """Each run folder's run.json modification time (ns) by folder name, read by the command before any of its runs
    starts: the tracking process takes a run.json that differs from it as this command's (a run that ended before
    the process first looked is still logged as it ends), without comparing a file's time with a clock."""
    return {run_dir.name: (run_dir / layout.RUN_FILE).stat().st_mtime_ns for run_dir in layout.run_dirs(sweep_dir)}


def start(sweep_dir: Path, tracking: Tracking, jobs: int, launcher: LauncherTraits) -> Tracker:
    """The sweep's tracking process, started before any run: it makes the parent run while the runs start
    (tracking.json says `ready: false` until then, and a run that logs itself waits for it), and a tracker that does
    not answer is one warning line (the runs go on, untracked until the end tries again)."""
    previous = settings.read_sweep(sweep_dir)
    who = live_by(launcher, tracking)
    pending = SweepTracking(tracking.uri, tracking.experiment, None, None, who, tracking.artifacts)
    settings.write_sweep(sweep_dir, replace(pending, ready=False))
    return Tracker(sweep_dir, tracking, who, jobs, previous)
