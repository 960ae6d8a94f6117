"""What a test reads of a real run or sweep: its record, its metrics, the harness processes still running."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pandas as pd

NOT_COMPARED = ["run_id", "epoch_seconds", "samples_per_second"]


def record(run_dir: Path) -> dict:
    return json.loads((run_dir / "run.json").read_text())


def metrics(run_dir: Path) -> pd.DataFrame:
    return pd.read_parquet(run_dir / "metrics.parquet").drop(columns=NOT_COMPARED)


def harness_processes(marker: str) -> list[int]:
    """Live processes whose command line mentions `marker` (a sweep's folder)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and marker in (proc / "cmdline").read_bytes().decode(errors="ignore"):
                found.append(int(proc.name))
        except OSError:
            continue
    return found


def wait_for_epochs(run_dir: Path, epochs: int, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if record(run_dir)["epochs_completed"] >= epochs:
                return
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.2)
    raise AssertionError(f"{run_dir} never reached epoch {epochs}")
