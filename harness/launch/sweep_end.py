"""What follows a multirun, in the command's process: the sweep-level probes (in a warm worker or a process of
their own, since they load TensorFlow) and the report, written even when the sweep was interrupted."""
from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from harness.store import layout

REPORTS_DIR = Path("reports")  # like sweeps/, relative to where the command runs
WARM, FRESH = "# in a warm run process", "# in a process of its own"  # interpolation.log's first line: where it ran


def interpolate(sweep_dir: Path, worker=None) -> None:
    """The sweep-level probes (the interpolation between batch sizes), in `worker` (a warm harness.launch.worker
    left by the last runs, TensorFlow loaded) or a process of their own, never in the command's (the report does
    not load TensorFlow); skipped when the sweep has no pair of runs or its interpolation is newer than their
    weights. A failure is one line: the report is written without it. While a warm worker computes, this process
    imports what the report will need (prepare_report), which it would otherwise do after."""
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
    if code == -signal.SIGINT or code == 128 + signal.SIGINT:
        raise KeyboardInterrupt
    if code != 0:
        print(f"harness: the interpolation failed (exit {code}, see {log_path}); the report has none. "
              f"Retry: python -m harness.probe {sweep_dir}", file=sys.stderr)


def prepare_report() -> None:
    """Import the report's modules (matplotlib, SciPy's statistics, the templates: about a second on the 2-core
    CPU) ahead of write_report."""
    import harness.report.html  # noqa: F401


def write_report(sweep_dir: Path) -> None:
    from harness.report.html import publish

    publish(sweep_dir, REPORTS_DIR)
