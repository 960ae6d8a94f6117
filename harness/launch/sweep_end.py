"""What follows a multirun, in the command's process: the sweep-level probes (in a process of their own, since
they load TensorFlow) and the report, written even when the sweep was interrupted."""
from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from harness.store import layout

REPORTS_DIR = Path("reports")  # like sweeps/, relative to where the command runs


def interpolate(sweep_dir: Path) -> None:
    """The sweep-level probes (the interpolation between batch sizes), in a process of their own since they load
    TensorFlow; skipped when the sweep has no pair of runs or its interpolation is newer than their weights. A
    failure is one line: the report is written without it."""
    from harness.probes import interpolation

    if not interpolation.needs_update(sweep_dir):
        return
    log_path = sweep_dir / layout.INTERPOLATION_LOG  # TensorFlow's start-up chatter and any traceback, off the console
    with open(log_path, "w") as log:
        done = subprocess.run([sys.executable, "-m", "harness.probe", str(sweep_dir)], stdout=log,
                              stderr=subprocess.STDOUT)
    if done.returncode == -signal.SIGINT or done.returncode == 128 + signal.SIGINT:
        raise KeyboardInterrupt
    if done.returncode != 0:
        print(f"harness: the interpolation failed (exit {done.returncode}, see {log_path}); the report has none. "
              f"Retry: python -m harness.probe {sweep_dir}", file=sys.stderr)


def write_report(sweep_dir: Path) -> None:
    from harness.report.html import publish

    publish(sweep_dir, REPORTS_DIR)
