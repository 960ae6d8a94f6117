"""What follows a multirun, in the command's process (`close`): the sweep-level probes (in a warm worker or a
process of their own, since they load TensorFlow), the report, written even when the sweep was interrupted, and
with tracking=mlflow the end of the sweep's tracking process (harness.launch.tracker), handed the report."""
from __future__ import annotations

import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from harness.store import layout, sweep_file
from harness.studies import registry

REPORTS_DIR = Path("reports")  # like sweeps/, relative to where the command runs
WARM, FRESH = "# in a warm run process", "# in a process of its own"  # interpolation.log's first line: where it ran


class Interpolation:
    """The sweep's interpolation as the scheduler's last step (harness.launch.scheduler.Scheduler.run's `then`).

    Started early where it can: the last run of a sweep spends 1.5-3 s (2-core CPU) in its end-of-run probes
    after writing its final weights while the other slots' warm workers sit idle, and the interpolation needs only
    those weights. A run whose final weights are written ends completed (a probe that fails is recorded, not
    raised), so once every running run has written them in this attempt the sweep's pairs are those it will have
    at the end; should one of those runs still fail or be killed, `finish` finds the pairs changed and does it
    again. From the first offer on (a core is free: no run left to start, a slot idle), this process imports what
    the report needs in a background thread (prepare_report), which it would otherwise do after the runs."""

    def __init__(self, sweep_dir: Path):
        self.sweep_dir = Path(sweep_dir)
        self.early = None  # the worker computing it while the last runs end
        self._considered = False
        self._report_imports: threading.Thread | None = None

    def start_early(self, worker, running: dict[Path, float]) -> bool:
        """Start in the idle `worker` if every running run (folder: when this attempt started, time.time()) has
        written its final weights since; whether it started. Decided once: later calls return False."""
        from harness.probes import interpolation

        if self._report_imports is None:
            self._report_imports = threading.Thread(target=prepare_report, name="report-imports", daemon=True)
            self._report_imports.start()
        if self._considered or not all(_written_since(run_dir / layout.FINAL_WEIGHTS, started)
                                       for run_dir, started in running.items()):
            return False
        self._considered = True
        if not interpolation.needs_update(self.sweep_dir, include_running=True):
            return False
        names = ", ".join(sorted(run_dir.name for run_dir in running))
        (self.sweep_dir / layout.INTERPOLATION_LOG).write_text(
            f"{WARM} (pid {worker.process.pid}), started while run {names} wrote its end-of-run probes\n")
        worker.start_interpolation(self.sweep_dir, self.sweep_dir / layout.INTERPOLATION_LOG, include_running=True)
        self.early = worker
        return True

    def finish(self, worker=None) -> None:
        """Once every run has ended: wait for the early start (the report's imports meanwhile), then `interpolate`,
        which does nothing when its result stands, in `worker` (the early one, if it is still fit) or a process of
        its own."""
        if self._report_imports is not None:  # before any import of this thread's: no two threads import at once
            self._report_imports.join()
        if self.early is not None:
            _raise_if_interrupted(self.early.wait(meanwhile=prepare_report))
            worker = self.early
        interpolate(self.sweep_dir, worker if worker is not None and worker.available else None)


def _written_since(path: Path, started: float) -> bool:
    try:
        return path.stat().st_mtime >= started
    except FileNotFoundError:
        return False


def _raise_if_interrupted(code: int) -> None:
    if code == -signal.SIGINT or code == 128 + signal.SIGINT:
        raise KeyboardInterrupt


def interpolate(sweep_dir: Path, worker=None) -> None:
    """The sweep-level probes (the interpolation between batch sizes), in `worker` (a warm harness.launch.worker
    left by the last runs, TensorFlow loaded) or a process of their own, never in the command's (the report does
    not load TensorFlow); skipped when the sweep has no pair of runs or its interpolation is of those pairs and
    newer than their weights. A failure is one line: the report is written without it. While a warm worker
    computes, this process imports what the report will need (prepare_report), which it would otherwise do after."""
    from harness.probes import interpolation

    if not interpolation.needs_update(sweep_dir):
        return
    log_path = sweep_dir / layout.INTERPOLATION_LOG  # TensorFlow's start-up chatter and any traceback, off the console
    if worker is not None:
        log_path.write_text(f"{WARM} (pid {worker.process.pid})\n")
        code = worker.interpolate(sweep_dir, log_path, meanwhile=prepare_report)
    else:
        with open(log_path, "w") as log:
            log.write(f"{FRESH}\n")
            log.flush()
            code = subprocess.run([sys.executable, "-m", "harness.probe", str(sweep_dir)], stdout=log,
                                  stderr=subprocess.STDOUT).returncode
    _raise_if_interrupted(code)
    if code != 0:
        print(f"harness: the interpolation failed (exit {code}, see {log_path}); the report has none. "
              f"Retry: python -m harness.probe {sweep_dir}", file=sys.stderr)


def prepare_report() -> None:
    """Import the report's modules (matplotlib, SciPy's statistics, the templates: about a second on the 2-core
    CPU) ahead of write_report."""
    try:
        import harness.report.html  # noqa: F401
    except ImportError:  # write_report says so
        pass


def write_report(sweep_dir: Path) -> None:
    """The sweep's report; where this machine lacks the report's own libraries (a GPU machine given only what
    runs need, scripts/gpu_smoke.sh jax), one warning line instead: the sweep folder builds it anywhere."""
    try:
        from harness.report.html import publish
    except ModuleNotFoundError as err:
        print(f"harness: warning: no report here: it needs {err.name}, which is not installed; build it where it "
              f"is with: python -m harness.report {sweep_dir}", file=sys.stderr)
        return
    publish(sweep_dir, REPORTS_DIR)


def close(sweep_dir: Path, tracker=None, interrupted: bool = False) -> None:
    """The end of every multirun, in one place, reached after the runs whether they all ended or were interrupted:
    the interpolation (unless interrupted; it does nothing where the launcher already made it), the report (a
    partial one after an interrupt), and with tracking=mlflow the tracking process's end (`tracker`,
    harness.launch.tracker.Tracker), handed the report, the results table and diagnosis.json."""
    if not interrupted:
        interpolate(sweep_dir)
    write_report(sweep_dir)
    if tracker is not None:  # every run in MLflow, whatever the runs could log; the report beside them
        with tempfile.TemporaryDirectory() as scratch:
            tracker.end(sweep_artifacts(sweep_dir, Path(scratch)))


def sweep_artifacts(sweep_dir: Path, scratch: Path, reports_dir: Path = REPORTS_DIR) -> list[Path]:
    """What a sweep's parent run keeps: its report, its results table (written into `scratch`), sweep.json and
    the files its study writes (a diagnosis's diagnosis.json), those that exist."""
    content = sweep_file.read(sweep_dir)
    study = registry.find((content or {}).get("study"), registry.recorded_paths(content))
    paths = [Path(sweep_dir) / layout.SWEEP_FILE, *(Path(sweep_dir) / name for name in study.file_names())] \
        if study is not None else [Path(sweep_dir) / layout.SWEEP_FILE]
    try:
        from harness.report.html import report_path
        from harness.report.results import sweep_results

        paths.append(report_path(sweep_dir, reports_dir))
        table = scratch / "results.csv"
        sweep_results(sweep_dir).to_csv(table, index=False)
        paths.append(table)
    except (ModuleNotFoundError, FileNotFoundError):  # no report's libraries here; no run started
        pass
    return [path for path in paths if path.exists()]
