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

from harness.store import layout
from harness.studies import registry

REPORTS_DIR = Path("reports")  # like sweeps/, relative to where the command runs
WARM, FRESH = "# in a warm run process", "# in a process of its own"  # interpolation.log's first line: where it ran


class Interpolation:
    """The sweep's interpolation as the scheduler's last step (harness.launch.scheduler.Scheduler.run's `then`).

    Computed pair by pair as the runs end, in a slot no run needs any more: once no run is left to start, an idle
    warm worker computes the pairs of every group none of whose runs still trains, while the last runs train and
    write their end-of-run probes (a run whose final weights are written ends completed: a probe that fails is
    recorded, not raised), and again as more groups end; each round keeps the curves already computed
    (`--only-new`). At the end, `finish` computes what is left, and again any pair that changed (a run that
    still failed or was killed after its weights were written). From the first offer on, this process imports
    what the report needs in a background thread (prepare_report), which it would otherwise do after the runs."""

    def __init__(self, sweep_dir: Path):
        self.sweep_dir = Path(sweep_dir)
        self.early = None  # the worker computing a round while runs still run
        self.rounds = 0    # rounds started before the last run ended
        self.failed = False  # a round failed: no more before the end (finish tries once more and says why)
        self._looked_at = None  # the runs' state when start_early last read the sweep and found nothing to do
        self._report_imports: threading.Thread | None = None

    def start_early(self, worker, running: dict[Path, float]) -> bool:
        """Start a round in the idle `worker` if a pair is ready that interpolation.parquet lacks: both runs have
        written their final weights, and no run of its group still trains (`running`: folder -> when this attempt
        started, time.time(); a run whose final weights are written since then is in its end-of-run probes);
        whether it started. False while a round is under way, and after one failed."""
        from harness.probes import interpolation

        if self._report_imports is None:
            self._report_imports = threading.Thread(target=prepare_report, name="report-imports", daemon=True)
            self._report_imports.start()
        if self.early is not None or self.failed:
            return False
        waiting = sorted(run_dir.name for run_dir, started in running.items()
                         if not _written_since(run_dir / layout.FINAL_WEIGHTS, started))
        # the sweep's files are read again only when a run has ended, written its weights or its run.json since
        # (the scheduler offers at every wake-up, and a sweep of thousands has as many run.json to read)
        state = (sorted(map(str, running)), waiting,
                 [(self.sweep_dir / name / layout.RUN_FILE).exists() for name in waiting])
        if state == self._looked_at:
            return False
        if not interpolation.needs_update(self.sweep_dir, include_running=True, waiting=waiting):
            self._looked_at = state
            return False
        names = ", ".join(sorted(run_dir.name for run_dir in running))
        log_path = self.sweep_dir / layout.INTERPOLATION_LOG
        with open(log_path, "a" if self.rounds else "w") as log:
            log.write(f"{WARM} (pid {worker.process.pid}), started while run {names} ran\n")
        worker.start_interpolation(self.sweep_dir, log_path, ["--include-running", "--only-new",
                                                              *(f"--waiting={name}" for name in waiting)])
        self.early, self.rounds = worker, self.rounds + 1
        return True

    def early_ended(self) -> bool:
        """Whether no round is under way (the last one's worker is free again); a round that failed is done again
        by `finish`."""
        if self.early is not None and (code := self.early.result()) is not None:
            self.early, self.failed, self._looked_at = None, code != 0, None
        return self.early is None

    def finish(self, worker=None) -> None:
        """Once every run has ended: wait for a round under way (the report's imports meanwhile), then
        `interpolate` what is left, which does nothing when the result stands, in `worker` (the early one, if it
        is still fit) or a process of its own."""
        if self._report_imports is not None:  # before any import of this thread's: no two threads import at once
            self._report_imports.join()
        if self.early is not None:
            _raise_if_interrupted(self.early.wait(meanwhile=prepare_report))
            worker, self.early = self.early, None
        interpolate(self.sweep_dir, worker if worker is not None and worker.available else None,
                    append=self.rounds > 0)


def _written_since(path: Path, started: float) -> bool:
    try:
        return path.stat().st_mtime >= started
    except FileNotFoundError:
        return False


def _raise_if_interrupted(code: int) -> None:
    if code == -signal.SIGINT or code == 128 + signal.SIGINT:
        raise KeyboardInterrupt


def interpolate(sweep_dir: Path, worker=None, append: bool = False) -> None:
    """The sweep-level probes (the interpolation between batch sizes), in `worker` (a warm harness.launch.worker
    left by the last runs, TensorFlow loaded) or a process of their own, never in the command's (the report does
    not load TensorFlow); skipped when the sweep has no pair of runs or its interpolation is of those pairs and
    newer than their weights, and only the pairs it lacks are computed. A failure is one line: the report is
    written without it. While a warm worker computes, this process imports what the report will need
    (prepare_report), which it would otherwise do after. `append`: interpolation.log has earlier rounds' output."""
    from harness.probes import interpolation

    if not interpolation.needs_update(sweep_dir):
        return
    log_path = sweep_dir / layout.INTERPOLATION_LOG  # TensorFlow's start-up chatter and any traceback, off the console
    with open(log_path, "a" if append else "w") as log:
        log.write(f"{WARM} (pid {worker.process.pid})\n" if worker is not None else f"{FRESH}\n")
    if worker is not None:
        code = worker.interpolate(sweep_dir, log_path, meanwhile=prepare_report, options=["--only-new"])
    else:
        with open(log_path, "a") as log:
            code = subprocess.run([sys.executable, "-m", "harness.probe", str(sweep_dir), "--only-new"], stdout=log,
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
    from harness.assess.sweep import read as read_sweep

    try:
        sweep = read_sweep(sweep_dir)
    except FileNotFoundError:  # no run started
        sweep = None
    # the study the page found: named in sweep.json or detected (a study that cannot load writes no files)
    study = registry.of_sweep(sweep) if sweep is not None else None
    paths = [Path(sweep_dir) / layout.SWEEP_FILE, *(Path(sweep_dir) / name for name in study.file_names())] \
        if study is not None else [Path(sweep_dir) / layout.SWEEP_FILE]
    try:
        from harness.report.html import report_path
        from harness.report.results import sweep_results

        paths.append(report_path(sweep_dir, reports_dir))
        if sweep is not None:
            table = scratch / "results.csv"
            sweep_results(sweep).to_csv(table, index=False)
            paths.append(table)
    except ModuleNotFoundError:  # no report's libraries here
        pass
    return [path for path in paths if path.exists()]
