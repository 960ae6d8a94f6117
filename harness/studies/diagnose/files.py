"""diagnosis.json, a +study=diagnose sweep's diagnosis in the sweep folder: its fields named once, for the writer
(the report, which assesses the sweep: harness.report.html) and its readers (tracking, benchmarks, a user's
scripts)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.store.files import read_json, write_fields

DIAGNOSIS_FILE = "diagnosis.json"      # in the sweep folder
DATA_CHECKS_FILE = "data_checks.json"  # in the first job's run folder: the data checked for the suspects
FIELDS = {
    "small_batch": "b, the smallest global batch of the command", "large_batch": "B, the largest",
    "headline": "the split in words",
    "drop": "{value, low, high}: v(b) - v(B), mean over the seeds that count, with its 95% interval",
    "parts": "[{name, value, low, high, arm, reading, per_seed}] in ladder order; they sum to the drop",
    "ladder": "the arms in order", "attribution": "ladder or shapley", "seeds": "the seeds complete in every arm",
    "checks": "[{name, statistic, threshold, flagged, detail, ...}]: label_shift, order, feature_shift, capacity",
    "notes": "how to read the parts, and what the runs could not show", "evidence": "the probes beside remains",
    "level": "what both sizes lose to a cause they share (at chance, stale statistics at both), said before the "
             "split; null when neither holds",
    "arm_values": "[{arm, batch, val_acc, val_acc_precise_bn, bn_initial_weight, seeds}]: each arm's levels, mean "
                  "over the seeds that count (null where not measured)",
}


def write(sweep_dir: Path, values: dict[str, Any]) -> None:
    write_fields(Path(sweep_dir) / DIAGNOSIS_FILE, values, FIELDS)


def read(sweep_dir: Path) -> dict[str, Any] | None:
    """The sweep's diagnosis.json, or None without one; raises DamagedFile when it cannot be read."""
    return read_json(Path(sweep_dir) / DIAGNOSIS_FILE)


def read_checks(run_dir: Path) -> dict[str, Any] | None:
    """A run's data_checks.json, or None without one; raises DamagedFile when it cannot be read."""
    return read_json(Path(run_dir) / DATA_CHECKS_FILE)
