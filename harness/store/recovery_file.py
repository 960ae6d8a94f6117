"""recovery.json, a +study=recover sweep's reading in the sweep folder: its fields named once, for the writer (the
report, which assesses the sweep: harness.report.html) and its readers (benchmarks, a user's scripts)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.store.files import read_json, write_fields
from harness.store.layout import RECOVERY_FILE

FIELDS = {
    "small_batch": "b, the smallest global batch of the command", "large_batch": "B, the largest",
    "epochs": "E, the command's epochs: every trial trains within them",
    "round": "the last round read: 1, the reference and the search",
    "headline": "the reading in words",
    "drop": "{value, low, high}: v(b) - v(B) as they are on validation, mean over paired seeds, 95% interval",
    "reference": "{b, B}: tune_acc of b and of B as they are, at the search's seed",
    "trials": "[{trial, recipe, status, tune_acc}] in Sobol order (recipe: {key: value}, null keeps the command's)",
    "best": "the trial with the best tune_acc (its index in trials), or null",
    "command": "the best trial's recipe as a command line at B",
    "notes": "how to read it, and what has not run yet",
}


def write(sweep_dir: Path, values: dict[str, Any]) -> None:
    write_fields(Path(sweep_dir) / RECOVERY_FILE, values, FIELDS)


def read(sweep_dir: Path) -> dict[str, Any] | None:
    """The sweep's recovery.json, or None without one; raises DamagedFile when it cannot be read."""
    return read_json(Path(sweep_dir) / RECOVERY_FILE)
