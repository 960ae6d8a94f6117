"""Steps to a target on the tuning slice, read from each run's target.json (harness.run.target), counted as MLPerf
and AlgoPerf count time to a result: a run that missed the target, or diverged, never reached it (inf steps), so a
candidate (a learning rate, a recipe) is chosen only where every one of its seeds reached it, and a mean never
averages a miss away. The tuning slice decides; validation is only reported where the runs reached it. A run
stopped short (target_max_samples: a study's race or cap) has no steps either; `stopped_short` says so, and the
study that set the limit says what it means."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from harness.assess.analysis import BATCH
from harness.assess.sweep import Sweep
from harness.store.files import DamagedFile

FINISHED = ("completed", "diverged")  # a diverged run never reaches the target
COLUMNS = ["run_id", "job", BATCH, "peak_lr", "seed", "status", "steps", "samples", "seconds", "resolution",
           "val_acc", "noise_batch", "gram", "stopped_short", "max_samples"]


def runs(sweep: Sweep, df: pd.DataFrame) -> pd.DataFrame:
    """One row per completed or diverged run of `df` with its target.json: its steps and samples to the target
    (None for a run that missed it), the seconds it took (its attempt's: a run resumed counts from its resume), the
    resolution of its checks, val_acc at the target and the gradient noise
    measured there."""
    rows = []
    for record in df.drop_duplicates("run_id").to_dict("records"):
        if record["status"] not in FINISHED:
            continue
        try:
            found = sweep.target(record["job"]) or {}
        except DamagedFile:
            found = {}
        if record["status"] == "completed" and not found:
            continue  # finished before target.json existed, or it was lost: no steps to count
        steps = found.get("steps_to_target") if record["status"] == "completed" else None
        rows.append({"run_id": record["run_id"], "job": record["job"], BATCH: int(record[BATCH]),
                     "peak_lr": float(record["peak_lr"]), "seed": record.get("seed"), "status": record["status"],
                     "steps": steps, "samples": found.get("samples_to_target") if steps is not None else None,
                     "seconds": found.get("seconds_to_target") if steps is not None else None,
                     "resolution": found.get("target_resolution"), "val_acc": found.get("val_acc_at_target"),
                     "noise_batch": found.get("noise_batch"),
                     "gram": np.asarray(found["noise_gram"]) if steps is not None and found.get("noise_gram")
                     else None, "stopped_short": bool(found.get("stopped_short", False)),
                     "max_samples": found.get("target_max_samples")})
    return pd.DataFrame(rows, columns=COLUMNS)


def cells(runs: pd.DataFrame, candidate: str = "peak_lr") -> dict[int, dict]:
    """batch -> candidate (the value of column `candidate`) -> the steps of its seeds, inf where a run never
    reached the target."""
    found: dict[int, dict] = {}
    for (batch, key), cell in runs.groupby([BATCH, candidate]):
        found.setdefault(int(batch), {})[key] = cell["steps"].astype(float).fillna(np.inf).to_numpy()
    return found


def fewest(by_candidate: dict) -> tuple[object, float] | None:
    """(the candidate whose seeds all reached the target in the fewest mean steps, that mean); ties go to the
    smaller candidate; None when no candidate got every seed there."""
    means = {key: float(np.mean(steps)) for key, steps in by_candidate.items()}
    best = min(means, key=lambda key: (means[key], key))
    return (best, means[best]) if math.isfinite(means[best]) else None
