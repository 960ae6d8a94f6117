"""The files of one run: metrics.parquet (one row per epoch) and run.json (status and provenance).

Both are rewritten atomically (temp file + rename), so a reader or a killed run never sees half a file.
"""
from __future__ import annotations

import json
import os
import platform
import tempfile
import traceback
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

METRICS_FILE = "metrics.parquet"
RUN_FILE = "run.json"
CHECKPOINT = "checkpoint.npz"  # written by harness.train.Checkpointer after each epoch, removed at the end
SWEEP_FILE = "sweep.json"  # in the sweep folder: every job of the command, written before any of them runs
STATUSES = ("running", "completed", "failed", "diverged", "interrupted")
FINISHED = ("completed", "diverged")  # results: a resumed sweep leaves these runs alone


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _atomic_write(path: Path, write) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_json(path: Path, obj: Any) -> None:
    def write(tmp: str) -> None:
        with open(tmp, "w") as f:
            json.dump(obj, f, indent=2, default=str)
            f.write("\n")

    _atomic_write(path, write)


def read_json(path: Path) -> dict[str, Any] | None:
    """A JSON file's content, or None when there is no such file."""
    try:
        return json.loads(Path(path).read_text())
    except FileNotFoundError:
        return None


def remove_partial_writes(run_dir: Path) -> None:
    """Temporary files of atomic writes cut short by a kill: never read, removed when the run starts again."""
    for partial in [*Path(run_dir).glob(".*.tmp"), *Path(run_dir).glob(f".tmp-{CHECKPOINT}")]:
        partial.unlink(missing_ok=True)


def recorded_config(flat_config: dict[str, Any]) -> dict[str, Any]:
    """A run's flat config as run.json holds it (JSON types: tuples become lists), for comparing with a record."""
    return json.loads(json.dumps(flat_config))


def _peak_memory_mb() -> float | None:
    """This process's peak resident memory so far (Linux reports kilobytes)."""
    try:
        import resource

        return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    except (ImportError, OSError):
        return None


def checkpoint_epoch(run_dir: Path) -> int:
    """Epochs completed by the run's last checkpoint (0 when there is none)."""
    import numpy as np

    path = Path(run_dir) / CHECKPOINT
    if not path.exists():
        return 0
    with np.load(path, allow_pickle=False) as saved:
        return int(saved["epoch"])


class MetricsTable:
    """Accumulates one row per epoch and rewrites metrics.parquet after each.

    `keep_epochs` > 0 continues a resumed run: the first that many rows already on disk are kept.
    """

    def __init__(self, run_dir: Path, keep_epochs: int = 0):
        self.path = Path(run_dir) / METRICS_FILE
        self.rows: list[dict[str, Any]] = []
        if keep_epochs and self.path.exists():
            kept = pd.read_parquet(self.path)
            self.rows = kept[kept["epoch"] <= keep_epochs].to_dict("records")

    def append(self, row: dict[str, Any]) -> None:
        self.rows.append(row)
        frame = pd.DataFrame(self.rows)
        _atomic_write(self.path, lambda tmp: frame.to_parquet(tmp, index=False))


class RunRecord:
    """run.json: written with status `running` at start, and again with the outcome at the end."""

    def __init__(self, run_dir: Path, run_id: str, config: dict[str, Any], overrides: list[str],
                 resumed_from_epoch: int | None = None, previous: dict[str, Any] | None = None):
        self.path = Path(run_dir) / RUN_FILE
        self.data: dict[str, Any] = {
            "run_id": run_id,
            "status": "running",
            "config": config,
            "overrides": list(overrides),
            "started_at": now_iso(),
            "finished_at": None,
            "epochs_completed": resumed_from_epoch or 0,
            "resumed_from_epoch": resumed_from_epoch,
            "error": None,
            "environment": {"python": platform.python_version(), "host": platform.node()},
        }
        if resumed_from_epoch is not None and previous:
            self.data["started_at"] = previous.get("started_at") or self.data["started_at"]
            self.data["resumed_at"] = now_iso()
        write_json(self.path, self.data)

    def update(self, **fields: Any) -> None:
        self.data.update(fields)
        write_json(self.path, self.data)

    def set_environment(self, **fields: Any) -> None:
        self.data["environment"].update(fields)
        write_json(self.path, self.data)

    def finish(self, status: str, error: BaseException | None = None) -> None:
        if status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {status!r}")
        self.data["status"] = status
        self.data["finished_at"] = now_iso()
        self.data["peak_memory_mb"] = _peak_memory_mb()
        if error is not None:
            self.data["error"] = {
                "type": type(error).__name__,
                "message": str(error),
                "traceback": "".join(traceback.format_exception(error)),
            }
        write_json(self.path, self.data)
