"""A paused run continued in another job's folder: the paused run's files copied there as an interrupted run, which
the job then resumes from its checkpoint (harness.run.experiment), so that the continued run's epochs are those of
one run trained straight through, and the paused run stays as it was (a study reads it at its rung).

    source/  run.json (status paused), metrics.parquet (epochs 1..k), checkpoint.npz (after epoch k)
    target/  the same three, run.json saying interrupted with a note naming the source, the rows' run_id the
             target's own, and no MLflow run (the continued run gets its own)

run.json is written last: a fork killed midway leaves no run.json, and is made again.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd

from harness.store.files import atomic_write, read_json, write_json
from harness.store.layout import CHECKPOINT, METRICS_FILE, RUN_FILE


def note(source: Path, epoch: int) -> str:
    return f"continued from {source.parent.name}/{source.name}, paused after epoch {epoch}"


def fork(source: Path, target: Path) -> bool:
    """Copy the paused run in `source` to `target` as an interrupted run of `target`'s own; False (nothing written)
    where `target` already holds a run (forked before, or run), or `source` is no paused run with its checkpoint."""
    source, target = Path(source), Path(target)
    if (target / RUN_FILE).exists() or not (source / RUN_FILE).exists():
        return False
    record = read_json(source / RUN_FILE)
    if record.get("status") != "paused" or not (source / CHECKPOINT).exists():
        return False
    target.mkdir(parents=True, exist_ok=True)
    run_id = f"{target.parent.name}/{target.name}"
    rows = pd.read_parquet(source / METRICS_FILE).assign(run_id=run_id)
    atomic_write(target / METRICS_FILE, lambda tmp: rows.to_parquet(tmp, index=False))
    atomic_write(target / CHECKPOINT, lambda tmp: shutil.copyfile(source / CHECKPOINT, tmp))
    epoch = int(record.get("paused_at_epoch") or record.get("epochs_completed") or 0)
    continued = {key: value for key, value in record.items()  # its own start: its wall time is its own
                 if key not in ("tracking", "paused_at_epoch", "pause", "started_at", "finished_at")}
    write_json(target / RUN_FILE, {**continued, "run_id": run_id, "status": "interrupted",
                                   "notes": [*record.get("notes", []), note(source, epoch)]})
    return True
